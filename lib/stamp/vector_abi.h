// Which vector arguments stamp passes in registers, decided alike by both exporters
// (lib/flat_export.cpp through LLVM, direct_export.cpp from the bitcode), whose flat
// output must be the same byte for byte.
#pragma once
#include <cstdint>
#include <string_view>

#include "flat_ir.h"

namespace kiln {

// Whether a function's "target-features" give it AVX, so that LLVM passes its 32-byte
// vectors in ymm registers: some +avx feature (avx2, avx512f and the rest imply avx)
// and no -avx one. A target-cpu with AVX and no such feature is not seen, nor what a
// -avx feature would leave: the function's 32-byte vectors then fall back, which is
// safe either way.
inline bool target_features_have_avx(std::string_view features) {
  return features.find("+avx") != std::string_view::npos && features.find("-avx") == std::string_view::npos;
}

// Whether LLVM may fuse llvm.fmuladd into one FMA instruction (one rounding) in a
// function with this string attribute: "target-features" with fma, fma4, an avx512 or
// an avx10 feature turned on, or a "target-cpu" other than the generic x86-64 ones (a named CPU
// may have FMA without listing it; an empty value is no attribute). Such a function's
// fmuladd is llvm's.
inline bool target_may_fuse_multiply_add(std::string_view key, std::string_view value) {
  if (key == "target-features")
    return value.find("+fma") != std::string_view::npos || value.find("+avx512") != std::string_view::npos ||
        value.find("+avx10") != std::string_view::npos;
  if (key == "target-cpu") return !value.empty() && value != "x86-64" && value != "x86-64-v2" && value != "generic";
  return false;
}

// The bytes of a vector of `lanes` integer lanes of `lane_width` bits (0: not such a
// vector) if stamp passes it in a vector register: 16 (xmm), or 32 (ymm, only with
// AVX); else 0.
inline uint32_t vector_arg_bytes(uint32_t lane_width, uint64_t lanes, bool avx) {
  if (lane_width < 8) return 0;  // masks: LLVM packs <N x i1> otherwise
  const uint64_t bytes = lanes * lane_width / 8;
  return bytes == 16 || (bytes == 32 && avx) ? static_cast<uint32_t>(bytes) : 0;
}

// The copy (kVecArgument) of a vector argument that came in vector register `reg`,
// `lanes` lanes of `width` bits, for the entry block `block`; it has no operands, so
// `first_operand` is where the function's operands stand when it is made.
inline FlatInst vector_argument_copy(uint32_t block, uint32_t first_operand, uint32_t reg, uint32_t width,
                                     uint32_t lanes) {
  FlatInst fi{};
  fi.op = kOpVector;
  fi.aux = kVecArgument;
  fi.block = block;
  fi.first_operand = first_operand;
  fi.width = static_cast<uint8_t>(width);
  fi.aux32 = lanes;
  fi.imm = reg;
  fi.slot_size = lanes * vector_lane_bytes(width);
  return fi;
}

}  // namespace kiln
