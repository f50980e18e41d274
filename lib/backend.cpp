#include "backend.h"

#include "backend_cmd.h"
#include "backend_llvm.h"
#include "backend_stamp.h"
#include "error.h"

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

std::unique_ptr<Backend> make_backend(const std::string& spec, Profile profile) {
  if (spec == "llvm") return std::make_unique<LlvmBackend>(profile);
  if (spec.rfind("cmd:", 0) == 0) return std::make_unique<CommandBackend>(spec.substr(4));
  if (spec == "stamp") return std::make_unique<StampBackend>(profile);
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
