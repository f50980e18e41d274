// kiln-capture-llvm: kiln-capture's half that links LLVM, which kiln-capture installs
// and runs; not run by hand. The bitcode route's compiler wrappers: cargo runs it as
// RUSTC_WRAPPER (KILN_CAPTURE_ROLE=rustc), make and the cc crate as CC and CXX (links
// named kiln-cc and kiln-c++); and `kiln-capture add`. It links LLVM statically: it
// starts for every compiler call of a build, in about 6 ms more than the compiler
// alone where libLLVM.so would take 17. See kiln-capture-llvm(1).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture.h"
#include "capture_args.h"
#include "error.h"
#include "fs.h"
#include "isolate.h"
#include "kiln_config.h"

static int usage(bool asked) {
  std::fprintf(asked ? stdout : stderr,
               "kiln-capture-llvm: kiln-capture's compiler wrappers for its bitcode route (cargo's RUSTC_WRAPPER,\n"
               "kiln-cc, kiln-c++) and `kiln-capture add`; kiln-capture runs it, not a person.\n"
               "  kiln-capture-llvm add -o CORPUS FILE.bc...   (what kiln-capture add runs)\n"
               "See kiln-capture-llvm(1) and kiln-capture(1).\n");
  return asked ? kiln::kExitOk : kiln::kExitUsage;
}

static int body(int argc, char** argv) {
  using namespace kiln;
  const std::string self = basename_of(argv[0]);
  if (self == "kiln-cc") return cc_wrapper_main(argc, argv, false);
  if (self == "kiln-c++") return cc_wrapper_main(argc, argv, true);
  const char* role = std::getenv(kEnvRole);
  // As cargo's RUSTC_WRAPPER its first argument is rustc's path, or, for a workspace
  // member, a RUSTC_WORKSPACE_WRAPPER's followed by rustc's (read_wrapper_line); anything
  // else (a `kiln-capture add` run inside a captured build, whose environment this is) is not.
  const bool rustc_line = argc >= 2 &&
      (std::string(argv[1]).find("rustc") != std::string::npos || (argc >= 3 && rustc_program_name(argv[2])));
  if (role && std::strcmp(role, "rustc") == 0 && rustc_line) return rustc_wrapper_main(argc, argv);
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("kiln-capture-llvm %s (LLVM %s)\n", KILN_VERSION, KILN_LLVM_VERSION);
    return kExitOk;
  }
  if (argc == 2 && std::strcmp(argv[1], "--help") == 0) return usage(true);
  if (argc >= 5 && std::strcmp(argv[1], "add") == 0 && std::strcmp(argv[2], "-o") == 0) {
    std::vector<std::string> files(argv + 4, argv + argc);
    size_t added = capture_add(argv[3], files);
    std::printf("%zu new module(s) in %s\n", added, argv[3]);
    return kExitOk;
  }
  return usage(false);
}

int main(int argc, char** argv) {
  // The wrappers emit objects with LLVM: its fatal errors are one line and exit 3.
  kiln::install_llvm_fatal_handlers();
  // Its errors speak as kiln-capture, the program the user ran (`add`, the build).
  return kiln::run_tool("kiln-capture", body, argc, argv);
}
