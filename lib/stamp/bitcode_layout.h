// Sizes, alignments and struct field offsets of a BcModule's types under a data layout
// string (LLVM's DataLayout rules, llvm.org/docs/LangRef.html#data-layout), without
// LLVM; and LLVM's textual names of types and its intrinsic ids by name, which the
// direct exporter needs to say what LLVM's exporter says.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bitcode_ir.h"

namespace kiln::bc {

class Layout {
 public:
  // Parses `text` (a data layout string). Throws KilnError(kExitBadInput) for one it
  // cannot parse.
  explicit Layout(std::string_view text);
  // The x86-64 ELF target's layout, the one lib/flat_export.cpp imposes on every module
  // ("e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128").
  static const std::string& x86_64_text();

  // As llvm::DataLayout's functions of the same names, for type `type` of `m`. Types
  // without a size (void, label, metadata, token, function, opaque struct, scalable
  // vector) are the caller's bug: they throw KilnError(kExitInternal).
  uint64_t size_in_bits(const BcModule& m, uint32_t type) const;
  uint64_t store_size(const BcModule& m, uint32_t type) const;
  uint64_t alloc_size(const BcModule& m, uint32_t type) const;
  uint64_t abi_align(const BcModule& m, uint32_t type) const;
  uint64_t pref_align(const BcModule& m, uint32_t type) const;
  // Byte offset of field `index` of struct type `type` (StructLayout::getElementOffset).
  uint64_t field_offset(const BcModule& m, uint32_t type, uint32_t index) const;
  // DataLayout::getPreferredAlign(GlobalVariable*) for global `g`.
  uint64_t global_preferred_align(const BcModule& m, const Global& g) const;

 private:
  struct StructLayout {
    uint64_t size = 0, align = 1;
    std::vector<uint64_t> offsets;
  };
  const StructLayout& struct_layout(const BcModule& m, uint32_t type) const;
  // ... (the parsed specifications)
  mutable std::unordered_map<uint32_t, StructLayout> structs_;  // by type id: one Layout per module
};

// LLVM's Type::print of `type` (e.g. "i32", "ptr", "{ i64, ptr }", "<4 x i32>",
// "%\"core::fmt::Arguments<'_>\"", "void (i32, ...)").
std::string type_name(const BcModule& m, uint32_t type);

// LLVM's intrinsic ids that the exporter tells apart, by function name as
// Function::getIntrinsicID finds them (the longest known intrinsic name the function's
// name equals or starts with followed by '.'); kNotIntrinsic for a name not starting
// with "llvm." and kUnknownIntrinsic for one LLVM knows but the exporter refuses.
enum class Intrinsic : uint8_t {
  kNotIntrinsic,
  kUnknownIntrinsic,
  kLifetimeStart, kLifetimeEnd, kAssume, kNoaliasScopeDecl, kDoNothing, kSideEffect, kDbgDeclare, kDbgValue,
  kDbgLabel, kExpect, kTrap, kUbsanTrap, kMemcpy, kMemmove, kMemset, kUaddWithOverflow, kSaddWithOverflow,
  kUsubWithOverflow, kSsubWithOverflow, kUmulWithOverflow, kSmulWithOverflow, kIsConstant, kCtpop, kCtlz, kCttz,
  kBswap, kAbs, kUmin, kUmax, kSmin, kSmax, kUaddSat, kUsubSat, kUcmp, kScmp,
};
Intrinsic intrinsic_of(std::string_view function_name);

}  // namespace kiln::bc
