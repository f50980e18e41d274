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
  // cannot parse (what LLVM 22's DataLayout::parse refuses).
  explicit Layout(std::string_view text);
  // The x86-64 ELF target's layout, the one lib/flat_export.cpp imposes on every module
  // ("e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128").
  static const std::string& x86_64_text();

  // As llvm::DataLayout's functions of the same names, for type `type` of `m`. Types
  // without a size (void, label, metadata, token, function, opaque struct, scalable
  // vector, target extension type) are the caller's bug: they throw
  // KilnError(kExitInternal). A size past 64 bits, or types nested over 1000 deep (a
  // cycle in a corrupt table), throws KilnError(kExitBadInput).
  uint64_t size_in_bits(const BcModule& m, uint32_t type) const;
  uint64_t store_size(const BcModule& m, uint32_t type) const;
  uint64_t alloc_size(const BcModule& m, uint32_t type) const;
  uint64_t abi_align(const BcModule& m, uint32_t type) const;
  uint64_t pref_align(const BcModule& m, uint32_t type) const;
  // Byte offset of field `index` of struct type `type` (StructLayout::getElementOffset).
  uint64_t field_offset(const BcModule& m, uint32_t type, uint32_t index) const;
  // DataLayout::getPreferredAlign(GlobalVariable*) for global `g`.
  uint64_t global_preferred_align(const BcModule& m, const Global& g) const;
  // The same for a global variable of `value_type` with alignment `align` (0: none),
  // a section or not, defined or not, without a Global to describe it.
  uint64_t global_preferred_align(const BcModule& m, uint32_t value_type, uint64_t align, bool has_section,
                                  bool has_initializer) const;

 private:
  struct StructLayout {
    uint64_t size = 0, align = 1;
    std::vector<uint64_t> offsets;
  };
  // A primitive (i, f, v) specification; alignments in bytes.
  struct Primitive {
    uint32_t bits = 0;
    uint64_t abi = 1, pref = 1;
  };
  // A pointer specification (p[flags][n][(name)]:size:abi[:pref[:idx]]).
  struct Pointer {
    uint32_t address_space = 0, bits = 64;
    uint64_t abi = 8, pref = 8;
    uint32_t index_bits = 64;
  };
  const StructLayout& struct_layout(const BcModule& m, uint32_t type, int depth) const;
  uint64_t size_bits(const BcModule& m, uint32_t type, int depth) const;
  uint64_t compute_size_bits(const BcModule& m, uint32_t type, int depth) const;
  uint64_t alloc_bytes(const BcModule& m, uint32_t type, int depth) const;
  uint64_t alignment(const BcModule& m, uint32_t type, bool abi, int depth) const;
  uint64_t compute_alignment(const BcModule& m, uint32_t type, bool abi, int depth) const;
  uint64_t integer_align(uint32_t bits, bool abi) const;
  const Pointer& pointer(uint32_t address_space) const;
  void parse_spec(std::string_view spec, std::vector<std::string>& names);
  void parse_pointer(std::string_view spec, std::vector<std::string>& names);

  std::vector<Primitive> ints_, floats_, vectors_;              // each sorted by bits
  std::vector<Pointer> pointers_;                               // sorted by address space; [0] is address space 0
  uint64_t struct_abi_ = 1, struct_pref_ = 8;                   // the a spec (LLVM's default a:8:64)
  mutable std::unordered_map<uint32_t, StructLayout> structs_;  // by type id: one Layout per module
  // alloc_size by type id (0: not yet known; no sized type allocates 0 bytes but {} and
  // [0 x T], which are cheap to compute again). One Layout per module, as structs_.
  mutable std::vector<uint64_t> alloc_sizes_;
  // size_bits and alignment by type id (~0: not yet known), as alloc_sizes_.
  mutable std::vector<uint64_t> size_bits_, abi_aligns_, pref_aligns_;
};

// LLVM's Type::print of `type` (e.g. "i32", "ptr", "{ i64, ptr }", "<4 x i32>",
// "void (i32, ...)"). As Type::print does, an identified struct at the top is followed
// by its body ("%\"core::fmt::Arguments<'_>\" = type { ptr, i64 }", "%T = type opaque");
// nested ones print as their name alone. An identified struct without a name prints
// "%<unnamed>" (LLVM's own %N or %"type 0x..." cannot be known here). Target extension
// types print their name alone (the reader keeps no parameters).
std::string type_name(const BcModule& m, uint32_t type);

// LLVM's intrinsic ids that the exporter tells apart, by function name as
// Function::getIntrinsicID finds them (the longest known intrinsic name the function's
// name equals or starts with followed by '.'); kNotIntrinsic for a name not starting
// with "llvm." and kUnknownIntrinsic for one LLVM knows but the exporter refuses.
enum class Intrinsic : uint8_t {
  kNotIntrinsic,
  kUnknownIntrinsic,
  kLifetimeStart,
  kLifetimeEnd,
  kAssume,
  kNoaliasScopeDecl,
  kDoNothing,
  kSideEffect,
  kDbgDeclare,
  kDbgValue,
  kDbgLabel,
  kExpect,
  kTrap,
  kUbsanTrap,
  kMemcpy,
  kMemmove,
  kMemset,
  kUaddWithOverflow,
  kSaddWithOverflow,
  kUsubWithOverflow,
  kSsubWithOverflow,
  kUmulWithOverflow,
  kSmulWithOverflow,
  kIsConstant,
  kCtpop,
  kCtlz,
  kCttz,
  kBswap,
  kAbs,
  kUmin,
  kUmax,
  kSmin,
  kSmax,
  kUaddSat,
  kUsubSat,
  kUcmp,
  kScmp,
  kSaddSat,
  kSsubSat,
  kFshl,
  kFshr,
  kFabs,
  kSqrt,
  kFptosiSat,
  kFptouiSat,
  kMinnum,
  kMaxnum,
  kFmuladd,
  kBitreverse,
  kVectorReduceAdd,
  kVectorReduceMul,
  kVectorReduceAnd,
  kVectorReduceOr,
  kVectorReduceXor,
  kX86PshufB128,
  kX86PshufB256,
  kThreadlocalAddress,
  kLibmCall,  // one of libm_function's: a call of the C function
};
Intrinsic intrinsic_of(std::string_view function_name);
// The intrinsic's name without type suffixes ("llvm.floor" for "llvm.floor.f64"), as
// intrinsic_of found it; "" for a name it does not know.
std::string_view intrinsic_base(std::string_view function_name);
// The C function LLVM calls at -O0 on x86-64 (no SSE4.1, no FMA) for a floating-point
// intrinsic by its base name, and that stamp calls the same way: floor or floorf,
// __powidf2 or __powisf2, ...; nullptr for any other. Also "frem" (fmod, fmodf).
const char* libm_function(std::string_view base, bool is_double);
// Every C function libm_function names (the exporters look their declarations up).
bool is_libm_function(std::string_view name);
// The compiler-rt functions llvm -O0 calls on x86-64 for an i128 udiv, sdiv, urem or
// srem (__udivti3, __divti3, __umodti3, __modti3), and for conversions between i128
// and float or double (__fixdfti, __fixunssfti, __floattidf, __floatuntisf, ...).
const char* wide_division_function(bool is_signed, bool is_remainder);
const char* wide_conversion_function(bool to_float, bool is_signed, bool is_double);
// Whether a name is one of those (the exporters look their declarations up).
bool is_compiler_rt_function(std::string_view name);

}  // namespace kiln::bc
