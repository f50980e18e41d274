// kiln-rustc-wrapper: the program that `kiln-capture --route plugin` has cargo run as
// RUSTC_WRAPPER (and rustc run as its linker, named kiln-linker). It links no LLVM, so
// that each of a build's rustc calls starts in about 1.4 ms instead of 3.6 ms (LLVM's
// relocations and static constructors); the other routes' wrapper is kiln-capture
// itself. See kiln-capture(1).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "capture.h"
#include "capture_rustc.h"
#include "error.h"
#include "fs.h"
#include "kiln_config.h"

static int body(int argc, char** argv) {
  using namespace kiln;
  if (basename_of(argv[0]) == kLinkerWrapperName) return linker_wrapper_main(argc, argv);
  const char* role = std::getenv(kEnvRole);
  if (role && std::strcmp(role, "rustc") == 0 && argc >= 2) return plugin_wrapper_main(argc, argv);
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("kiln-rustc-wrapper %s\n", KILN_VERSION);
    return kExitOk;
  }
  std::fprintf(argc == 2 && std::strcmp(argv[1], "--help") == 0 ? stdout : stderr,
               "kiln-rustc-wrapper: the rustc wrapper of `kiln-capture --route plugin`: cargo runs it as\n"
               "RUSTC_WRAPPER and rustc as its linker (kiln-linker); not run by hand. See kiln-capture(1).\n");
  return argc == 2 && std::strcmp(argv[1], "--help") == 0 ? kExitOk : kExitUsage;
}

int main(int argc, char** argv) { return kiln::run_tool("kiln-rustc-wrapper", body, argc, argv); }
