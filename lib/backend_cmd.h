// The `cmd:` back end: any external program, run once per module, e.g.
//   cmd:llc-22 -O0 -filetype=obj -relocation-model=pic {in} -o {out}
// so that people writing their own back end can plug it in and compare.
// Each run has a timeout (KILN_CMD_TIMEOUT seconds, default kDefaultCmdTimeout; 0:
// none); past it the command's whole process group is killed and the module fails.
#pragma once
#include "backend.h"

namespace kiln {

inline constexpr double kDefaultCmdTimeout = 600;

// KILN_CMD_TIMEOUT as seconds: unset or empty gives the default, "0" no timeout;
// anything but a non-negative number is KilnError(kExitUsage) naming the variable.
double cmd_timeout_from_environment();
// Environment variable `name` as a number of seconds (0: none), `fallback` when unset or
// empty; anything else is a KilnError(kExitUsage) naming it (KILN_CMD_TIMEOUT, KILN_ITEM_TIMEOUT).
double seconds_from_environment(const char* name, double fallback);

// Why `object` is not a complete, well-formed x86-64 relocatable ELF object: the
// header (ELFCLASS64, little-endian, ET_REL, EM_X86_64, version, sizes) and the
// section header table (in bounds, a null section 0, a string table for the names,
// every section's contents in the file). Empty when it is one.
std::string relocatable_object_problem(std::string_view object);

class CommandBackend : public Backend {
 public:
  // The template as check_backend_spec passed it (make_backend checks it first).
  explicit CommandBackend(std::string command_template);
  std::string name() const override { return "cmd:" + template_; }
  EmitResult emit(std::string_view bitcode, const std::string& label) override;
  double timeout_seconds() const { return timeout_seconds_; }

 private:
  std::string template_;
  double timeout_seconds_;
};

}  // namespace kiln
