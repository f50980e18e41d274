// Flat IR: a module as plain arrays, the only input of stamp's stages. Exported once
// from LLVM IR (lib/flat_export.cpp); stages never see LLVM. Every semantic decision
// that needs LLVM's DataLayout (sizes, field offsets, GEP strides, constant offsets) is
// made by the exporter and stored here as numbers.
#pragma once
#include "portable.h"

namespace kiln {

// stamp's own opcode list (not LLVM's numbering, so the file format is stable).
enum StampOp : uint16_t {
  kOpNop = 0,  // no code: lifetime markers, assume, debug records
  kOpCopy,     // result = op0 (zext, bitcast, freeze, inttoptr, llvm.expect)
  kOpTrunc,    // result = op0 normalised to the result width
  kOpSext,     // result = sign-extend op0 from aux bits
  kOpAdd,
  kOpSub,
  kOpMul,
  kOpAnd,
  kOpOr,
  kOpXor,
  kOpShl,
  kOpLshr,
  kOpAshr,
  kOpUdiv,
  kOpSdiv,
  kOpUrem,
  kOpSrem,
  kOpIcmp,         // aux = predicate (kPred*), operand width in op0.width
  kOpSelect,       // op0 = condition, op1 = true, op2 = false; aux32 bytes for an aggregate
  kOpAlloca,       // result = address of its frame memory (aux32 = size, imm = align)
  kOpLoad,         // result = *op0; width bits, or aux32 bytes for an aggregate
  kOpStore,        // *op1 = op0; width in op0.width, or aux32 bytes for an aggregate
  kOpGep,          // result = op0 + imm + sum(op[i] * op[i].imm) for i >= 1
  kOpExtract,      // result = field of aggregate op0 at byte imm (width, or aux32 bytes)
  kOpInsert,       // result = op0 with op1 stored at byte imm (op1.width, or aux32 bytes)
  kOpPhi,          // pairs (value, block); result slot has a shadow slot after it,
                   // unless aux has kPhiDirect
  kOpCall,         // op0 = callee, then arguments; aux flags kCall*; a two-leaf aggregate
                   // result: aux32 = leaf widths (w0 | w1 << 8), imm = second leaf offset
  kOpOverflow,     // {iN, i1} = op0 (aux: kOvf*) op1, result aggregate; field 1 at imm
  kOpBr,           // op0 = target block
  kOpCondBr,       // op0 = condition, op1 = true block, op2 = false block
  kOpSwitch,       // op0 = value, op1 = default block, then pairs (case const, block)
  kOpRet,          // op0 = value (if any)
  kOpUnreachable,  // ud2
  kOpInvoke,       // like kOpCall, then two more operands: normal block, unwind block
  kOpLandingPad,   // {ptr, i32} from rax and edx; aux = kLandingPad* clause kind
  kOpResume,       // _Unwind_Resume(field 0 of op0)
  kOpBitOp,        // aux = kBit*: one operand (op0, its width in op0.width), two (op0, op1),
                   // or three for the funnel shifts (op0, op1, shift amount op2)
  // Atomics, with x86-64's mapping of the orderings: loads are plain loads, a seq_cst
  // store is a plain store (kOpStore with aux kStoreSeqCst) followed by mfence.
  kOpAtomicRmw,  // result = old *op0; *op0 = old (aux: kRmw*) op1, at op1.width, locked
  kOpCmpXchg,    // {old, i1 ok}: if *op0 == op1 then *op0 = op2; field 1 at imm
  kOpFence,      // aux 1: a seq_cst fence (mfence); 0: no code (acquire/release)
  // 128-bit integers (kWideBits): every operation that computes on one (aux: kWide*).
  // Loads, stores, phis, selects, switches and calls move them as width-128 values
  // in 16-byte slots (low half first) with their own opcodes; a load, store or phi
  // of one has aux32 = 16, as an aggregate of 16 bytes would.
  kOpWide,
  // Floating point (aux: kFloat*) on float (width 32) and double (width 64) values,
  // which are kept as their bit patterns, zero-extended like integers of that width.
  kOpFloat,
  // Vectors (aux: kVec*) of at most kMaxVectorLanes lanes, each an integer of 8, 16,
  // 32 or 64 bits, or an i1 (a mask). A vector lives in its slot as its lanes in
  // order: an integer lane at its width (the vector's memory layout, so loads, stores,
  // phis and selects move vectors as aggregates of aux32 bytes), a mask lane as one
  // byte, 0 or 1 (masks are never loaded or stored). Operands that are vectors are
  // values, or zero, undef or poison (all lanes 0); vector constants are loaded from
  // constant data. Fields: width = the result's lane width (or its scalar width),
  // aux32 = the lane count (vector_lanes), imm = the kind's parameter (VectorKind).
  kOpVector,
  // The address of thread-local variable op0 (a symbol) in the running thread: the
  // general-dynamic sequence (op1: the __tls_get_addr symbol) that linkers relax to
  // the initial- or local-exec one where the variable allows. Result in a slot of 8.
  kOpTlsAddress,
  kOpCount
};

// Copies, casts, integer arithmetic, compares and selects: the opcodes kOpCopy to
// kOpSelect, which compute on their operands alone (no memory, no calls).
KILN_HD inline bool is_operand_only_op(uint32_t op) { return op >= kOpCopy && op <= kOpSelect; }
enum StoreFlags : uint8_t { kStoreSeqCst = 1 };
// A phi's aux: its predecessors write its value into its slot itself, and it has no
// shadow (phis_written_directly, lib/stamp/flat_module.h, says where that is safe).
enum PhiFlags : uint8_t { kPhiDirect = 1 };
enum RmwKind : uint8_t { kRmwXchg, kRmwAdd, kRmwSub, kRmwAnd, kRmwOr, kRmwXor, kRmwNand };

enum IcmpPredicate : uint8_t {
  kPredEq,
  kPredNe,
  kPredUgt,
  kPredUge,
  kPredUlt,
  kPredUle,
  kPredSgt,
  kPredSge,
  kPredSlt,
  kPredSle
};
enum BitOpKind : uint8_t {
  kBitCtpop,
  kBitCtlz,
  kBitCttz,
  kBitBswap,
  kBitAbs,  // one operand
  kBitUmin,
  kBitUmax,
  kBitSmin,
  kBitSmax,
  kBitUaddSat,
  kBitUsubSat,
  kBitUcmp,
  kBitScmp,  // two
  kBitSaddSat,
  kBitSsubSat,  // two
  kBitFshl,
  kBitFshr,       // three
  kBitBitreverse  // one
};
// The operands a kOpBitOp of kind `kind` reads.
KILN_HD inline uint32_t bit_op_operands(uint32_t kind) {
  return kind <= kBitAbs || kind == kBitBitreverse ? 1 : kind < kBitFshl ? 2 : 3;
}
// The integer widths a kOpBitOp of kind `kind` has a template for: 8 to 64 bits in
// steps of 8 (bswap: 16, 32 or 64).
KILN_HD inline bool bit_op_width(uint32_t kind, uint32_t w) {
  if (kind == kBitBswap) return w == 16 || w == 32 || w == 64;
  return w >= 8 && w <= 64 && w % 8 == 0;
}
enum OverflowKind : uint8_t { kOvfUadd, kOvfSadd, kOvfUsub, kOvfSsub, kOvfUmul, kOvfSmul };
// kOpWide's operations. Binary ones take two i128 operands (the shift amount is an
// i128 too: its low half counts); kWideIcmp gives i1 (aux32 = predicate); kWideTrunc
// gives an integer of the instruction's width; kWideZext and kWideSext take an
// integer of aux32 bits; kWideCopy is bitcast and freeze.
enum WideKind : uint8_t {
  kWideCopy,
  kWideTrunc,
  kWideZext,
  kWideSext,
  kWideIcmp,
  kWideAdd,
  kWideSub,
  kWideAnd,
  kWideOr,
  kWideXor,
  kWideShl,
  kWideLshr,
  kWideAshr,
  kWideMul,
  // The *.with.overflow intrinsics at 128 bits: {i128, i1}, the sum or difference in
  // the slot's first 16 bytes and the carry, borrow or signed overflow at byte imm.
  kWideUaddOverflow,
  kWideSaddOverflow,
  kWideUsubOverflow,
  kWideSsubOverflow,
  // llvm.ucmp and llvm.scmp of two i128: -1, 0 or 1 at the instruction's width
  // (8 to 64 bits); llvm.ctpop of one i128.
  kWideUcmp,
  kWideScmp,
  kWideCtpop,
  kWideBitreverse,  // one operand
  kWideUmulOverflow,  // {i128, i1} as the other overflow intrinsics
  kWideAbs,           // one operand (llvm.abs's second, the poison flag, is not read)
  kWideUmin,
  kWideUmax,
  kWideSmin,
  kWideSmax,
  // llvm.fptosi.sat / fptoui.sat to i128: op0 a float or double (aux32 its width), op1
  // the compiler-rt conversion (__fixdfti, __fixunssfti, ...) called on it; imm 1 signed,
  // 0 unsigned. Its result is clamped: NaN to 0, out of range to the nearest bound.
  kWideFromFloatSat,
  kWideKindCount
};
KILN_HD inline bool is_wide_overflow(uint32_t kind) {
  return (kind >= kWideUaddOverflow && kind <= kWideSsubOverflow) || kind == kWideUmulOverflow;
}
// The operands a kOpWide of kind `kind` reads.
KILN_HD inline uint32_t wide_operands(uint32_t kind) {
  return kind < kWideIcmp || kind == kWideCtpop || kind == kWideBitreverse || kind == kWideAbs ? 1 : 2;
}
// Whether its result is an i128 (the others: an integer of the instruction's width, or
// the overflow intrinsics' {i128, i1}, whose first 16 bytes are one).
KILN_HD inline bool wide_result_is_i128(uint32_t kind) {
  return kind != kWideTrunc && kind != kWideIcmp && kind != kWideUcmp && kind != kWideScmp;
}
constexpr uint32_t kWideBits = 128;
// kOpFloat's operations. Arithmetic, negation, absolute value and square root are at
// the instruction's width (32 or 64); kFloatCmp compares op0 and op1 at op0's width
// with LLVM's fcmp predicate in imm (0 false, 1 oeq, ... 15 true: kFcmp*) and gives
// i1; the conversions from an integer read op0 at its width (at most 64), those to an
// integer give the instruction's width (at most 64) from op0's floating-point width.
enum FloatKind : uint8_t {
  kFloatAdd,
  kFloatSub,
  kFloatMul,
  kFloatDiv,
  kFloatNeg,
  kFloatAbs,
  kFloatSqrt,
  kFloatCmp,
  kFloatExt,           // float to double
  kFloatTrunc,         // double to float
  kFloatFromSigned,    // sitofp
  kFloatFromUnsigned,  // uitofp
  kFloatToSigned,      // fptosi
  kFloatToUnsigned,    // fptoui
  // llvm.fptosi.sat and llvm.fptoui.sat: toward zero, then clamped to the result's
  // range; NaN gives 0.
  kFloatToSignedSat,
  kFloatToUnsignedSat,
  // llvm.minnum and llvm.maxnum as llvm -O0 computes them on x86-64: op1 when op0 is
  // NaN, else minsd/maxsd of op1 and op0 (op0 when they compare equal or op1 is NaN).
  kFloatMin,
  kFloatMax,
  // llvm.fmuladd: op0 * op1 + op2, rounded after the product and after the sum (mulsd,
  // then addsd), as llvm -O0 computes it for a target without FMA; where the function's
  // target has FMA, LLVM fuses it (one rounding) and the function is llvm's.
  kFloatMulAdd,
  kFloatKindCount
};
// The kinds that read two operands.
constexpr bool float_kind_is_binary(uint32_t kind) {
  return kind <= kFloatDiv || kind == kFloatCmp || kind == kFloatMin || kind == kFloatMax;
}
// How many operands a kind reads: 1, 2 or 3.
constexpr uint32_t float_kind_operands(uint32_t kind) {
  return kind == kFloatMulAdd ? 3 : float_kind_is_binary(kind) ? 2 : 1;
}
// LLVM's fcmp predicates (FCmpInst's numbering, which bitcode and the IR share).
enum FcmpPredicate : uint8_t {
  kFcmpFalse,
  kFcmpOeq,
  kFcmpOgt,
  kFcmpOge,
  kFcmpOlt,
  kFcmpOle,
  kFcmpOne,
  kFcmpOrd,
  kFcmpUno,
  kFcmpUeq,
  kFcmpUgt,
  kFcmpUge,
  kFcmpUlt,
  kFcmpUle,
  kFcmpUne,
  kFcmpTrue
};
// kOpVector's operations, lane by lane. `N` is aux32, `w` the result's lane width.
enum VectorKind : uint8_t {
  kVecBinary,     // op0 OP op1, N lanes of w; imm = OP, a StampOp: add, sub, mul, and,
                  // or, xor, shl, lshr, ashr (and, or, xor only on masks)
  kVecIcmp,       // op0 cmp op1 -> N mask lanes; imm = predicate | operand lane width << 8
  kVecTrunc,      // N lanes narrowed to w (a mask: bit 0); imm = operand lane width
  kVecZext,       // N lanes widened to w; imm = operand lane width (a mask: 0 or 1)
  kVecSext,       // the same, sign-extended (a mask lane of 1 becomes all ones)
  kVecMaskToInt,  // bitcast <N x i1> to iN: lane k is bit k; w = N (at most 64)
  kVecExtract,    // the scalar lane imm of op0 (N lanes of w)
  kVecInsert,     // op0 (N lanes of w) with lane imm replaced by the scalar op1
  kVecShuffle,    // N lanes of w picked from the 2 * imm lanes of op0 then op1 by
                  // operands 2 .. N + 1: constant lane numbers, or -1 (undef: 0)
  kVecReduce,     // the N lanes of op0 folded from lane 0 by imm, a StampOp (add, mul,
                  // and, or, xor): a scalar of w bits
  kVecShuffleBytes,  // pshufb, N bytes (16 or 32): lane k is 0 where op1's lane k has
                     // bit 7 set, else op0's lane (k & ~15) + (op1's lane k & 15)
  kVecArgument,  // no operands: the vector argument that came in xmm (16 bytes) or ymm
                 // (32) register imm, N lanes of w. The exporters put one per vector
                 // argument at the start of the entry block, before anything that may
                 // use an xmm register, and the argument's uses read it; the argument
                 // itself counts as a double (FlatFunction::float_args) for SysvArgs.
  kVecKindCount
};
constexpr uint32_t kMaxVectorLanes = 64;
// The bytes a lane of `w` bits takes in a vector's slot: a mask lane takes one.
KILN_HD inline uint32_t vector_lane_bytes(uint32_t w) { return w == 1 ? 1 : w / 8; }
KILN_HD inline bool is_vector_lane_width(uint32_t w) { return w == 1 || w == 8 || w == 16 || w == 32 || w == 64; }
// The operands a kOpVector of kind `kind` with `lanes` result lanes reads.
KILN_HD inline uint32_t vector_operands(uint32_t kind, uint32_t lanes) {
  if (kind == kVecShuffle) return 2 + lanes;
  if (kind == kVecArgument) return 0;
  return kind == kVecBinary || kind == kVecIcmp || kind == kVecInsert || kind == kVecShuffleBytes ? 2 : 1;
}
// Whether the kind's result is a scalar (in an 8-byte slot, zero-extended) rather
// than a vector.
KILN_HD inline bool vector_result_is_scalar(uint32_t kind) {
  return kind == kVecMaskToInt || kind == kVecExtract || kind == kVecReduce;
}

// The vector registers the SysV convention passes arguments in: xmm0 .. xmm7.
constexpr uint32_t kVectorArgRegisters = 8;
// The bytes of a vector argument: 16 in an xmm register, 32 in a ymm register.
KILN_HD inline bool is_vector_arg_bytes(uint64_t bytes) { return bytes == 16 || bytes == 32; }

// The floating-point widths kOpFloat computes at.
KILN_HD inline bool is_float_width(uint32_t w) { return w == 32 || w == 64; }
// kCallRetFloat: the callee returns a float or double in xmm0. kCallRetVector,
// kCallRetVector256: a vector of 16 bytes in xmm0, or of 32 in ymm0 (the caller has
// AVX), into the call's slot.
enum CallFlags : uint8_t { kCallVarargs = 1, kCallRetFloat = 2, kCallRetVector = 4, kCallRetVector256 = 8 };
// kOpUnreachable's aux: 0, a trap (ud2); kUnreachableAfterNoreturn, no code at all, as
// LLVM emits none right after a call that does not return.
enum UnreachableFlags : uint8_t { kUnreachableAfterNoreturn = 1 };
// What a landing pad does for the personality (its LSDA action).
enum LandingPadKind : uint8_t { kLandingPadCleanup = 0, kLandingPadCatchAll = 1, kLandingPadEmptyFilter = 2 };

enum OperandKind : uint8_t {
  kOperandValue = 1,  // result of instruction `index` (module-wide index)
  kOperandArg,        // argument `index` (module-wide index into arg_widths)
  kOperandConst,      // integer constant `imm` (already zero-extended to its width); at
                      // width 128: low half `imm`, high half `index` sign-extended
                      // from 32 bits (wider constants are loaded from constant data:
                      // wide_immediate_fits)
  kOperandSymbol,     // address of module symbol `index`, plus `imm`
  kOperandBlock,      // basic block `index` (module-wide index)
  kOperandUndef,      // undef or poison: any value will do
  kOperandZero,       // zeroinitializer of an aggregate (its size is the instruction's aux32)
};
// Whether an i128 constant with this high half fits a kOperandConst; the exporters put
// the others in private constant globals and load them, as they do aggregates.
KILN_HD inline bool wide_immediate_fits(uint64_t high) {
  return static_cast<int64_t>(high) == static_cast<int32_t>(static_cast<uint32_t>(high));
}
// kOperandFloat: a call argument that is a float or double (passed in an xmm register).
// kOperandVector, kOperandVector256: also kOperandFloat, a call argument that is a vector
// of 16 bytes (in an xmm register) or 32 (in a ymm register; the caller has AVX): its
// value's slot, or zero for zero, undef and poison.
enum OperandFlags : uint8_t {
  kOperandSignExt = 1,
  kOperandZeroExt = 2,
  kOperandFloat = 4,
  kOperandVector = 8,
  kOperandVector256 = 16
};

struct FlatOperand {
  uint8_t kind;
  uint8_t width;  // scalar width in bits (1, 8 to 64 in steps of 8, or 128); 0 for aggregates
  uint8_t flags;  // kOperand*Ext, kOperandFloat for call arguments
  uint8_t pad;
  uint32_t index;
  int64_t imm;  // constant, symbol offset, or GEP stride
};

// The high half of a width-128 constant operand.
KILN_HD inline uint64_t wide_const_high(const FlatOperand& op) {
  return static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(op.index)));
}

struct FlatInst {
  uint16_t op;
  uint8_t width;  // result scalar width; 0 for void or aggregate results
  uint8_t aux;    // predicate, source width, overflow kind, call flags
  uint32_t block;
  uint32_t first_operand, operand_count;
  uint32_t slot_size;  // bytes of the result slot (0 for no result)
  uint32_t aux32;      // aggregate byte size for loads, stores, extract, insert; alloca size
  int64_t imm;         // GEP constant offset, field offset, alloca alignment
};

struct FlatBlock {
  uint32_t first_inst, inst_count;
  uint32_t function;  // index into FlatModuleView::functions
};

enum FunctionFlags : uint32_t {
  kFnRetSignExt = 1,
  kFnRetZeroExt = 2,
  kFnHasSret = 4,
  kFnRetPair = 8,
  kFnHasPersonality = 16,
  kFnRetFloat = 32,      // a float or double return, in xmm0
  kFnRetVector = 64,     // a vector return of 16 bytes, in xmm0
  kFnRetVector256 = 128  // a vector return of 32 bytes, in ymm0 (the function has AVX)
};
// Arguments that can be floating point: the first kMaxFloatArgs (FlatFunction::float_args).
constexpr uint32_t kMaxFloatArgs = 16;

struct FlatFunction {
  uint32_t symbol;  // its module symbol
  uint32_t first_block, block_count;
  uint32_t first_inst, inst_count;
  uint32_t first_arg, arg_count;  // into the module's arg_widths
  uint32_t flags;
  uint8_t ret_width;  // 0: void or aggregate; 128: i128, in rax (low) and rdx (high)
  // With kFnRetPair, bit k: leaf k is a float or double, returned in the next of
  // xmm0 and xmm1 (integer leaves take the next of rax and rdx), as LLVM lowers an IR
  // aggregate return leaf by leaf.
  uint8_t ret_leaf_float;
  uint8_t pad[2];
  // A first-class aggregate return of two scalar leaves (LLVM returns each leaf in
  // its own register: integers in rax, then rdx; floats and doubles in xmm0, then
  // xmm1; see ret_leaf_float): their widths and the second leaf's byte offset (the
  // first is at 0).
  uint8_t ret_leaf0_width, ret_leaf1_width;
  // Bit a: argument a is a float or double (in an xmm register, or on the stack in
  // its order among the arguments that do not fit registers). Only the first
  // kMaxFloatArgs arguments can be: the exporters refuse a function with a later one.
  uint16_t float_args;
  uint32_t ret_leaf1_offset;
  uint32_t sret_arg;     // argument holding the sret pointer (with kFnHasSret)
  uint32_t personality;  // module symbol of the personality (with kFnHasPersonality)
};

// The bytes of an argument's slot in the frame: 16 for an i128 (low half first), 8 for
// any other.
KILN_HD inline uint32_t arg_slot_bytes(uint32_t width) { return width == kWideBits ? 16 : 8; }

// The largest frame stamp lays out, so that every frame displacement fits 32 bits.
constexpr int64_t kMaxFrameBytes = int64_t(1) << 30;

// An upper bound of the frame stamp_frame lays out for a function: its arguments, a
// slot per result and every alloca with its alignment slack.
KILN_HD inline uint64_t frame_bound(const FlatInst* insts, uint32_t inst_count, uint32_t arg_count) {
  uint64_t bytes = 16ull * arg_count + 16;  // an i128 argument's slot is 16 bytes (arg_slot_bytes)
  for (uint32_t i = 0; i < inst_count; ++i) {
    const FlatInst& in = insts[i];
    bytes += in.slot_size + 8ull;
    if (in.op == kOpAlloca) bytes += in.aux32 + static_cast<uint64_t>(in.imm > 0 ? in.imm : 0) + 16;
  }
  return bytes;
}

// A read-only view of a flat module's arrays (owned elsewhere: a FlatModuleData on
// the host, or device buffers).
struct FlatModuleView {
  const FlatFunction* functions;
  uint32_t function_count;
  const FlatBlock* blocks;
  uint32_t block_count;
  const FlatInst* insts;
  uint32_t inst_count;
  const FlatOperand* operands;
  uint32_t operand_count;
  const uint8_t* arg_widths;
  uint32_t arg_count;
};

}  // namespace kiln
