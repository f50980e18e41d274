// The --version line every kiln tool prints.
#pragma once
#include <CLI/CLI.hpp>
#include <llvm/Config/llvm-config.h>

#include <string>

#include "kiln_config.h"

namespace kiln {
inline std::string version_line(const char* tool) {
  return std::string(tool) + " " + KILN_VERSION + " (LLVM " + LLVM_VERSION_STRING + (KILN_HAVE_CUDA ? ", CUDA executor" : "") + ")";
}
// CLI11 prints help, version or the parse error; kiln's documented code for any
// command-line error is 2 (CLI11's own codes start at 100).
inline int cli_exit(const CLI::App& app, const CLI::ParseError& e) {
  int code = app.exit(e);
  return code == 0 ? 0 : 2;
}
}  // namespace kiln
