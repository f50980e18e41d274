// The --version line every kiln tool prints (no LLVM header: kiln-capture links none).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "kiln_config.h"

namespace kiln {
inline std::string version_line(const char* tool) {
  return std::string(tool) + " " + KILN_VERSION + " (LLVM " + KILN_LLVM_VERSION +
      (KILN_HAVE_CUDA ? ", CUDA kernels built" : "") + ")";
}
// Help and --version print as CLI11 formats them; any command-line error becomes
// one line "TOOL: error: ..." and kiln's documented code 2 (CLI11's own codes start
// at 100).
inline int cli_exit(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);
  std::fprintf(stderr, "%s: error: %s (see --help)\n", app.get_name().c_str(), e.what());
  return 2;
}
}  // namespace kiln
