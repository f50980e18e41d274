#include "backend.h"

#include "backend_cmd.h"
#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"
#include "hash.h"
#include "selection.h"

#include <cstdlib>
#include <cstring>

namespace kiln {

Profile parse_profile(const std::string& name) {
  if (name == "fast") return Profile::fast;
  if (name == "balanced") return Profile::balanced;
  if (name == "release") return Profile::release;
  throw KilnError(kExitUsage, "", "unknown profile '" + name + "' (expected fast, balanced or release)");
}

const char* profile_name(Profile p) {
  switch (p) {
    case Profile::fast:
      return "fast";
    case Profile::balanced:
      return "balanced";
    case Profile::release:
      return "release";
  }
  return "?";
}

BackendOptions BackendOptions::from_environment() {
  BackendOptions options;
  const char* env = std::getenv("KILN_VERIFY");
  if (!env || !*env || std::strcmp(env, "1") == 0) return options;
  if (std::strcmp(env, "0") != 0)
    throw KilnError(kExitUsage, "KILN_VERIFY", std::string("'") + env + "': expected 0 or 1");
  options.verify = false;
  return options;
}

void set_verify_choice(bool verify) { ::setenv("KILN_VERIFY", verify ? "1" : "0", 1); }

namespace {

// A cmd: back end under a selection (kiln-selection(5)): it takes whole modules, so a
// module goes to it when any line could select something in it, else to llvm.
class SelectedModulesBackend : public Backend {
 public:
  SelectedModulesBackend(std::unique_ptr<Backend> candidate, std::unique_ptr<Backend> trusted,
                         const Selection& selection)
      : candidate_(std::move(candidate)), trusted_(std::move(trusted)), selection_(selection) {}
  std::string name() const override { return candidate_->name(); }
  EmitResult emit(std::string_view bitcode, const std::string& label) override {
    const std::string id = xxh3_128_hex(bitcode);
    EmitResult r = (selection_.selects_module(id) ? candidate_ : trusted_)->emit(bitcode, label);
    r.selection = selection_.digest_for(id);
    return r;
  }

 private:
  std::unique_ptr<Backend> candidate_, trusted_;
  const Selection& selection_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile) {
  return make_backend(spec, profile, BackendOptions::from_environment());
}

std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile, const BackendOptions& options) {
  // A bad KILN_SELECTION file is the caller's error now, before any module is emitted.
  const Selection* selection = active_selection();
  if (spec == "llvm") return std::make_unique<LlvmBackend>(profile, options);
  if (spec.rfind("cmd:", 0) == 0) {
    auto command = std::make_unique<CommandBackend>(spec.substr(4));
    if (!selection) return command;
    if (selection->by_name())
      throw KilnError(kExitUsage, selection->path(),
                      "selection by function name needs stamp; cmd: back ends take whole modules");
    return std::make_unique<SelectedModulesBackend>(std::move(command), std::make_unique<LlvmBackend>(profile, options),
                                                    *selection);
  }
  if (spec == "stamp") return std::make_unique<StampBackend>(profile, options);
  throw KilnError(kExitUsage, "", "unknown back end '" + spec + "' (expected llvm, stamp or 'cmd:TOOL {in} -o {out}')");
}

std::string object_problem(std::string_view o) {
  if (o.size() < 64 ||
      o.substr(0, 4) !=
          "\x7f"
          "ELF")
    return "output is not an ELF file";
  if (o[4] != 2) return "output is not a 64-bit ELF file";
  if (o[5] != 1) return "output is not little-endian";
  auto u16 = [&](size_t off) {
    return static_cast<unsigned>(static_cast<unsigned char>(o[off])) |
        (static_cast<unsigned>(static_cast<unsigned char>(o[off + 1])) << 8);
  };
  if (u16(16) != 1) return "output is not a relocatable object (ET_REL)";
  if (u16(18) != 62) return "output is not an x86-64 object";
  return "";
}

}  // namespace kiln
