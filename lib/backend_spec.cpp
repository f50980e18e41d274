// What every back end shares without being made: their names, profiles and environment
// settings, checked, and the shape any back end's object must have. Nothing here links
// LLVM, so that kiln-capture's driver can refuse a bad --backend before the build
// starts without loading LLVM, and the cmd: back end needs none (see backend.h).
#include "backend.h"

#include <cstdlib>
#include <cstring>

#include "backend_cmd.h"
#include "error.h"
#include "selection.h"

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

ReaderChoice reader_choice() {
  const char* env = std::getenv("KILN_READER");
  if (!env || !*env || std::strcmp(env, "direct") == 0) return ReaderChoice::direct;
  if (std::strcmp(env, "llvm") == 0) return ReaderChoice::llvm;
  throw KilnError(kExitUsage, "KILN_READER", std::string("'") + env + "': expected direct or llvm");
}

void set_reader_choice(const std::string& name) {
  if (name != "direct" && name != "llvm")
    throw KilnError(kExitUsage, "--reader", "'" + name + "': expected direct or llvm");
  ::setenv("KILN_READER", name.c_str(), 1);
}

void check_backend_spec(const std::string& spec) {
  // A bad KILN_SELECTION file is the caller's error now, before any module is emitted.
  const Selection* selection = active_selection();
  if (spec.rfind("cmd:", 0) == 0) {
    const std::string command = spec.substr(4);
    if (command.find("{in}") == std::string::npos || command.find("{out}") == std::string::npos)
      throw KilnError(kExitUsage, "", "a cmd: back end needs {in} and {out} in its command: cmd:" + command);
    cmd_timeout_from_environment();
    if (selection && selection->by_name())
      throw KilnError(kExitUsage, selection->path(),
                      "selection by function name needs stamp; cmd: back ends take whole modules");
    return;
  }
  if (spec != "llvm" && spec != "stamp")
    throw KilnError(kExitUsage, "", "unknown back end '" + spec + "' (expected llvm, stamp or 'cmd:TOOL {in} -o {out}')");
  BackendOptions::from_environment();
  if (spec == "stamp") reader_choice();
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
