// The --version line every kiln tool prints.
#pragma once
#include <llvm/Config/llvm-config.h>

#include <string>

#include "kiln_config.h"

namespace kiln {
inline std::string version_line(const char* tool) {
  return std::string(tool) + " " + KILN_VERSION + " (LLVM " + LLVM_VERSION_STRING + (KILN_HAVE_CUDA ? ", CUDA executor" : "") + ")";
}
}  // namespace kiln
