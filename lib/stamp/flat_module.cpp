#include "flat_module.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace kiln {

// Here rather than in flat_export.cpp: what reads flat files links no LLVM.
FlatModuleView FlatModuleData::view() const {
  return FlatModuleView{functions.data(),  static_cast<uint32_t>(functions.size()),
                        blocks.data(),     static_cast<uint32_t>(blocks.size()),
                        insts.data(),      static_cast<uint32_t>(insts.size()),
                        operands.data(),   static_cast<uint32_t>(operands.size()),
                        arg_widths.data(), static_cast<uint32_t>(arg_widths.size())};
}

namespace {

// Each check gives the first defect it finds, or null. The defects are fixed texts:
// read_flat_file puts them after "corrupt flat IR file: ".

// The symbol tables and the per-function tables, and every index of a function,
// block or instruction inside its array.
const char* check_tables(const FlatModuleData& f) {
  for (const UndefinedSymbol& u : f.undefined)
    if (uint8_t(u.binding) > uint8_t(SymbolBinding::weak) ||
        uint8_t(u.visibility) > uint8_t(SymbolVisibility::protected_))
      return "undefined symbol's binding or visibility out of range";
  for (size_t i = 0; i < f.bindings.size(); ++i)
    if (uint8_t(f.bindings[i]) > uint8_t(SymbolBinding::weak)) return "function binding out of range";
  for (size_t i = 0; i < f.visibilities.size(); ++i)
    if (uint8_t(f.visibilities[i]) > uint8_t(SymbolVisibility::protected_)) return "function visibility out of range";
  if (f.bindings.size() != f.functions.size() || f.visibilities.size() != f.functions.size() ||
      f.sections.size() != f.functions.size())
    return "per-function tables disagree";
  for (const auto& fn : f.functions) {
    if (fn.symbol >= f.symbols.size() || uint64_t(fn.first_block) + fn.block_count > f.blocks.size() ||
        uint64_t(fn.first_inst) + fn.inst_count > f.insts.size() ||
        uint64_t(fn.first_arg) + fn.arg_count > f.arg_widths.size())
      return "function out of range";
  }
  // The object names each function once (its ELF writer stops at a second definition).
  std::unordered_set<std::string_view> names;
  for (const auto& fn : f.functions) {
    if (f.symbols[fn.symbol].empty()) return "function without a name";
    if (!names.insert(f.symbols[fn.symbol]).second) return "function defined twice";
  }
  for (const auto& b : f.blocks)
    if (b.function >= f.functions.size() || uint64_t(b.first_inst) + b.inst_count > f.insts.size())
      return "block out of range";
  for (const auto& in : f.insts) {
    if (in.op >= kOpCount || in.block >= f.blocks.size() ||
        uint64_t(in.first_operand) + in.operand_count > f.operands.size())
      return "instruction out of range";
  }
  return nullptr;
}

// A kOpFloat's result and operand widths are the ones its kind computes at (operand
// count and kind checked before).
bool float_widths_fit(const FlatInst& in, const FlatOperand* ops) {
  uint32_t w = in.width, from = ops[0].width;
  switch (in.aux) {
    case kFloatCmp:
      return w == 1 && is_float_width(from) && ops[1].width == from;
    case kFloatExt:
      return w == 64 && from == 32;
    case kFloatTrunc:
      return w == 32 && from == 64;
    case kFloatFromSigned:
    case kFloatFromUnsigned:
      return is_float_width(w) && from >= 1 && from <= 64;
    case kFloatToSigned:
    case kFloatToUnsigned:
    case kFloatToSignedSat:
    case kFloatToUnsignedSat:
      return w >= 1 && w <= 64 && is_float_width(from);
    default:  // arithmetic, negation, absolute value, square root, minimum and maximum, fmuladd
      return is_float_width(w) && from == w && (float_kind_operands(in.aux) < 2 || ops[1].width == w) &&
          (float_kind_operands(in.aux) < 3 || ops[2].width == w);
  }
}

// A kOpVector: a known kind with its operands, lanes that fit its template and its
// slot, and vector operands whose slots hold every lane it reads (operands checked to
// come from the function before).
const char* check_vector(const FlatModuleData& f, const FlatInst& in, const FlatOperand* ops) {
  if (in.aux >= kVecKindCount) return "instruction with an unknown variant";
  const uint32_t lanes = in.aux32, w = in.width;
  if (lanes == 0 || lanes > kMaxVectorLanes) return "vector of more lanes than stamp has a template for";
  if (in.operand_count < vector_operands(in.aux, lanes)) return "instruction with too few operands";
  const uint64_t param = static_cast<uint64_t>(in.imm);
  // The lane width the vector operands have, and how many lanes of it they hold.
  uint32_t from = w, from_lanes = lanes;
  switch (in.aux) {
    case kVecBinary:
    case kVecReduce:
      if (!(param == kOpAdd || param == kOpSub || param == kOpMul || param == kOpAnd || param == kOpOr ||
            param == kOpXor || param == kOpShl || param == kOpLshr || param == kOpAshr) ||
          (in.aux == kVecReduce && (param == kOpSub || param >= kOpShl)))
        return "instruction with an unknown variant";
      break;
    case kVecIcmp:
      if ((param & 0xff) > kPredSle || param >> 16) return "instruction with an unknown variant";
      from = static_cast<uint32_t>(param >> 8);
      if (w != 1) return "vector compare whose lanes are not a mask";
      break;
    case kVecTrunc:
    case kVecZext:
    case kVecSext:
      from = static_cast<uint32_t>(param);
      if (param > 64 || (in.aux == kVecTrunc ? from <= w : from >= w)) return "vector cast between the wrong widths";
      break;
    case kVecMaskToInt:
      from = 1;
      if (w != lanes) return "mask bitcast to an integer of another width";
      break;
    case kVecExtract:
    case kVecInsert:
      if (param >= lanes) return "vector lane out of range";
      break;
    case kVecArgument:
      if (param >= kVectorArgRegisters || w < 8 || !is_vector_arg_bytes(uint64_t(lanes) * vector_lane_bytes(w)))
        return "vector argument of other than 16 or 32 bytes from xmm0 .. xmm7";
      break;
    case kVecShuffleBytes:
      if (param != 0) return "instruction with an unknown variant";
      if (w != 8 || (lanes != 16 && lanes != 32)) return "byte shuffle of other than 16 or 32 bytes";
      break;
    case kVecShuffle:
      if (param == 0 || param > kMaxVectorLanes) return "vector of more lanes than stamp has a template for";
      from_lanes = static_cast<uint32_t>(param);
      for (uint32_t k = 0; k < lanes; ++k)
        if (ops[2 + k].kind != kOperandConst || ops[2 + k].imm < -1 || ops[2 + k].imm >= 2 * int64_t(param))
          return "shuffle lane out of range";
      break;
    default:
      break;
  }
  if ((in.aux != kVecMaskToInt && !is_vector_lane_width(w)) || !is_vector_lane_width(from))
    return "vector lanes of a width stamp has no template for";
  const uint64_t result_bytes = vector_result_is_scalar(in.aux) ? 8 : uint64_t(lanes) * vector_lane_bytes(w);
  if (in.slot_size < result_bytes) return "vector in a short slot";
  const uint32_t vector_ops =
      in.aux == kVecArgument ? 0
      : in.aux == kVecShuffle || in.aux == kVecBinary || in.aux == kVecIcmp || in.aux == kVecShuffleBytes ? 2
                                                                                                         : 1;
  for (uint32_t k = 0; k < vector_ops; ++k) {
    if (ops[k].kind == kOperandValue &&
        f.insts[ops[k].index].slot_size < uint64_t(from_lanes) * vector_lane_bytes(from))
      return "vector operand in a short slot";
    if (ops[k].kind != kOperandValue && ops[k].kind != kOperandZero && ops[k].kind != kOperandUndef)
      return "instruction with operands of the wrong kind";
  }
  return nullptr;
}

// Instruction `in` of block `b` of function `fn`: it has the operands its template
// reads, of the kinds it reads them as, and its values come from its own function.
// The tables are in range (check_tables).
const char* check_instruction(const FlatModuleData& f, size_t fn, uint32_t b, const FlatInst& in) {
  static const uint8_t kMinOperands[kOpCount] = {/*nop*/ 0,
                                                 /*copy*/ 1,
                                                 /*trunc*/ 1,
                                                 /*sext*/ 1,        2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                                 /*icmp*/ 2,
                                                 /*select*/ 3,
                                                 /*alloca*/ 0,
                                                 /*load*/ 1,
                                                 /*store*/ 2,
                                                 /*gep*/ 1,
                                                 /*extract*/ 1,
                                                 /*insert*/ 2,
                                                 /*phi*/ 0,
                                                 /*call*/ 1,
                                                 /*overflow*/ 2,
                                                 /*br*/ 1,
                                                 /*condbr*/ 3,
                                                 /*switch*/ 2,
                                                 /*ret*/ 0,
                                                 /*unreachable*/ 0,
                                                 /*invoke*/ 3,
                                                 /*landingpad*/ 0,
                                                 /*resume*/ 2,
                                                 /*bitop*/ 1,
                                                 /*atomicrmw*/ 2,
                                                 /*cmpxchg*/ 3,
                                                 /*fence*/ 0,
                                                 /*wide*/ 1,
                                                 /*float*/ 1,
                                                 /*vector*/ 0,  // check_vector: by kind
                                                 /*tls address*/ 2};
  const FlatFunction& func = f.functions[fn];
  if (in.block != b) return "instruction outside its block";
  if (in.operand_count < kMinOperands[in.op]) return "instruction with too few operands";
  // An aggregate's byte count sizes its unrolled copy: like a frame, at most
  // 1 GiB, so no instruction's code can wrap a 32-bit offset.
  if ((in.op == kOpLoad || in.op == kOpStore || in.op == kOpExtract || in.op == kOpInsert || in.op == kOpSelect) &&
      in.aux32 > static_cast<uint64_t>(kMaxFrameBytes))
    return "aggregate larger than 1 GiB";
  // A field's offset in its aggregate, added to a slot's 32-bit displacement: inside
  // the same bound, so that the sum cannot wrap (stamp_frame, encode_extract).
  if ((in.op == kOpExtract || in.op == kOpInsert || in.op == kOpOverflow) && (in.imm < 0 || in.imm > kMaxFrameBytes))
    return "aggregate field beyond 1 GiB";
  const FlatOperand* ops = f.operands.data() + in.first_operand;
  for (uint32_t k = 0; k < in.operand_count; ++k)
    if (ops[k].kind == kOperandValue &&
        (ops[k].index < func.first_inst || ops[k].index >= func.first_inst + func.inst_count))
      return "value from outside its function";
  auto is_block = [&](uint32_t k) {
    return ops[k].kind == kOperandBlock && ops[k].index < f.blocks.size() && f.blocks[ops[k].index].function == fn;
  };
  if ((in.op == kOpIcmp && in.aux > kPredSle) || (in.op == kOpOverflow && in.aux > kOvfSmul) ||
      (in.op == kOpBitOp && in.aux > kBitBitreverse) || (in.op == kOpLandingPad && in.aux > kLandingPadEmptyFilter) ||
      (in.op == kOpAtomicRmw && in.aux > kRmwNand) || (in.op == kOpStore && in.aux > kStoreSeqCst) ||
      (in.op == kOpUnreachable && in.aux > kUnreachableAfterNoreturn) ||
      (in.op == kOpWide && (in.aux >= kWideKindCount || (in.aux == kWideIcmp && in.aux32 > kPredSle))))
    return "instruction with an unknown variant";
  if (in.op == kOpWide && in.operand_count < wide_operands(in.aux)) return "instruction with too few operands";
  if (in.op == kOpFloat) {
    if (in.aux >= kFloatKindCount || (in.aux == kFloatCmp && (in.imm < kFcmpFalse || in.imm > kFcmpTrue)))
      return "instruction with an unknown variant";
    if (in.operand_count < float_kind_operands(in.aux)) return "instruction with too few operands";
    if (!float_widths_fit(in, ops)) return "floating point at a width stamp has no template for";
  }
  if (in.op == kOpVector)
    if (const char* defect = check_vector(f, in, ops)) return defect;
  if (in.op == kOpVector && in.aux == kVecArgument) {
    // Its template reads the register the caller passed: only other such copies come
    // before it, in the entry block.
    if (b != func.first_block) return "vector argument copy after the entry block's start";
    for (size_t j = f.blocks[b].first_inst; j < static_cast<size_t>(&in - f.insts.data()); ++j)
      if (f.insts[j].op != kOpVector || f.insts[j].aux != kVecArgument)
        return "vector argument copy after the entry block's start";
  }
  if (in.op == kOpCall || in.op == kOpInvoke) {
    const uint32_t args = in.op == kOpInvoke ? in.operand_count - 2 : in.operand_count;
    for (uint32_t a = 1; a < args; ++a) {
      const FlatOperand& op = ops[a];
      if (!(op.flags & (kOperandVector | kOperandVector256))) continue;
      const uint64_t bytes = op.flags & kOperandVector256 ? 32 : 16;
      if (!(op.flags & kOperandFloat) || (op.flags & kOperandVector && op.flags & kOperandVector256) ||
          (op.kind != kOperandValue && op.kind != kOperandZero && op.kind != kOperandUndef) ||
          (op.kind == kOperandValue && f.insts[op.index].slot_size < bytes))
        return "vector call argument that is not a vector value";
    }
  }
  if (in.op == kOpTlsAddress &&
      (ops[0].kind != kOperandSymbol || ops[1].kind != kOperandSymbol || in.width != 64 || in.slot_size < 8))
    return "thread-local address of other than a symbol";
  if ((in.op == kOpCall || in.op == kOpInvoke) && (in.aux & (kCallRetVector | kCallRetVector256)) &&
      ((in.aux & kCallRetFloat) || in.width || in.slot_size < (in.aux & kCallRetVector256 ? 32u : 16u) ||
       ((in.aux & kCallRetVector) && (in.aux & kCallRetVector256))))
    return "vector call result that is not a vector";
  if (in.op == kOpRet && in.operand_count && (func.flags & (kFnRetVector | kFnRetVector256)) &&
      !(ops[0].kind == kOperandZero || ops[0].kind == kOperandUndef ||
        (ops[0].kind == kOperandValue && f.insts[ops[0].index].slot_size >= (func.flags & kFnRetVector256 ? 32u : 16u))))
    return "vector return of other than a vector";
  if ((in.op == kOpCall || in.op == kOpInvoke) && (in.aux & kCallRetFloat) && !is_float_width(in.width))
    return "floating-point call result that is not a float or double";
  if ((in.op == kOpCall || in.op == kOpInvoke) && in.width == 0 && in.slot_size &&
      ((((in.aux32 >> 16) & 1) && !is_float_width(in.aux32 & 0xff)) ||
       (((in.aux32 >> 16) & 2) && !is_float_width((in.aux32 >> 8) & 0xff)) || (in.aux32 >> 18) != 0))
    return "floating-point call result leaf that is not a float or double";
  if (in.op == kOpWide && is_wide_overflow(in.aux) && (in.imm < 16 || in.imm >= in.slot_size))
    return "overflow flag outside its slot";
  if (in.op == kOpWide && in.aux == kWideFromFloatSat &&
      (!is_float_width(in.aux32) || in.imm < 0 || in.imm > 1 || ops[1].kind != kOperandSymbol))
    return "conversion to i128 from other than a float or double";
  // A 128-bit result is written as 16 bytes (a phi's, then its shadow's unless it has none).
  bool wide_result = in.width == kWideBits || (in.op == kOpWide && wide_result_is_i128(in.aux));
  if (in.op == kOpWide && (in.aux == kWideUcmp || in.aux == kWideScmp) && !(in.width >= 8 && in.width <= 64))
    return "three-way compare at a width stamp has no template for";
  if (wide_result && in.slot_size < (in.op == kOpPhi && !(in.aux & kPhiDirect) ? 32u : 16u))
    return "128-bit value in a short slot";
  if (in.op == kOpBitOp && in.operand_count < bit_op_operands(in.aux)) return "instruction with too few operands";
  if ((in.op == kOpBr && !is_block(0)) || (in.op == kOpCondBr && !(is_block(1) && is_block(2))) ||
      (in.op == kOpSwitch && (!is_block(1) || in.operand_count % 2)) ||
      (in.op == kOpInvoke && !(is_block(in.operand_count - 1) && is_block(in.operand_count - 2))) ||
      (in.op == kOpPhi && in.operand_count % 2) ||
      (in.op == kOpResume && !(ops[0].kind == kOperandValue && ops[1].kind == kOperandSymbol)))
    return "instruction with operands of the wrong kind";
  for (uint32_t k = 2; in.op == kOpSwitch && k < in.operand_count; k += 2)
    if (!is_block(k + 1)) return "switch case without a block";
  for (uint32_t k = 1; in.op == kOpPhi && k < in.operand_count; k += 2)
    if (!is_block(k)) return "phi value without a block";
  return nullptr;
}

// Function `fn`: its flags' indices, its frame, and its blocks and instructions stay
// inside it. The tables are in range (check_tables).
bool is_terminator(uint16_t op) {
  switch (op) {
    case kOpBr:
    case kOpCondBr:
    case kOpSwitch:
    case kOpRet:
    case kOpUnreachable:
    case kOpInvoke:
    case kOpResume:
      return true;
    default:
      return false;
  }
}

// A block is its phis, then other instructions, then its one terminator, as in LLVM:
// control leaves a block only at its end (the phis' liveness, check_phis, follows only
// the terminators' edges; stamp's code would run on into the next block), and a phi
// gets its copies only at the block's head (phi_copies_for stops at the first other).
const char* check_block_shape(const FlatModuleData& f, const FlatBlock& blk) {
  if (blk.inst_count == 0 || !is_terminator(f.insts[blk.first_inst + blk.inst_count - 1].op))
    return "block that does not end in a terminator";
  bool past_phis = false;
  for (uint32_t i = blk.first_inst; i + 1 < blk.first_inst + blk.inst_count; ++i) {
    const uint16_t op = f.insts[i].op;
    // An unreachable may come before: llvm.trap (ud2) is one, and control ends there.
    if (is_terminator(op) && op != kOpUnreachable) return "terminator before the end of its block";
    if (op == kOpPhi && past_phis) return "phi after another instruction of its block";
    past_phis |= op != kOpPhi;
  }
  return nullptr;
}

const char* check_function(const FlatModuleData& f, size_t fn) {
  const FlatFunction& func = f.functions[fn];
  if ((func.flags & kFnHasPersonality) && func.personality >= f.symbols.size()) return "personality out of range";
  if ((func.flags & kFnHasSret) && func.sret_arg >= func.arg_count) return "sret argument out of range";
  if (func.arg_count < kMaxFloatArgs && (func.float_args >> func.arg_count) != 0)
    return "floating-point argument out of range";
  for (uint32_t a = 0; a < func.arg_count && a < kMaxFloatArgs; ++a)
    if (((func.float_args >> a) & 1) && !is_float_width(f.arg_widths[func.first_arg + a]))
      return "floating-point argument that is not a float or double";
  if ((func.flags & kFnRetFloat) && !is_float_width(func.ret_width)) return "floating-point return that is not a float or double";
  if ((func.flags & (kFnRetVector | kFnRetVector256)) &&
      (func.ret_width || (func.flags & (kFnRetFloat | kFnRetPair | kFnHasSret | kFnRetSignExt | kFnRetZeroExt)) ||
       ((func.flags & kFnRetVector) && (func.flags & kFnRetVector256))))
    return "vector return that is not only a vector";
  if (func.ret_leaf_float > 3 || (func.ret_leaf_float && !(func.flags & kFnRetPair)) ||
      ((func.ret_leaf_float & 1) && !is_float_width(func.ret_leaf0_width)) ||
      ((func.ret_leaf_float & 2) && !is_float_width(func.ret_leaf1_width)))
    return "floating-point return leaf that is not a float or double";
  if (frame_bound(f.insts.data() + func.first_inst, func.inst_count, func.arg_count) >
      static_cast<uint64_t>(kMaxFrameBytes))
    return "frame larger than 1 GiB";
  // The function's blocks tile its instructions, in order: stage 3 gives offsets
  // only to instructions inside them, and stage 4 writes every instruction.
  uint64_t next_inst = func.first_inst;
  for (uint32_t b = func.first_block; b < func.first_block + func.block_count; ++b) {
    const FlatBlock& blk = f.blocks[b];
    if (blk.function != fn || blk.first_inst != next_inst ||
        uint64_t(blk.first_inst) + blk.inst_count > uint64_t(func.first_inst) + func.inst_count)
      return "block outside its function";
    next_inst = uint64_t(blk.first_inst) + blk.inst_count;
    for (uint32_t i = blk.first_inst; i < blk.first_inst + blk.inst_count; ++i)
      if (const char* defect = check_instruction(f, fn, b, f.insts[i])) return defect;
    if (const char* defect = check_block_shape(f, blk)) return defect;
  }
  if (next_inst != uint64_t(func.first_inst) + func.inst_count)
    return "instructions outside every block of their function";
  return nullptr;
}

// The DWARF writer knows versions 2 to 5; a module flag can say any number.
constexpr const char* kDwarfVersionDefect = "DWARF version other than 2 to 5";

// A symbol operand's offset either way (check_owners_and_operands).
constexpr int64_t kMaxSymbolOffset = int64_t(1) << 31;

// No block or instruction lies outside the ranges its owner claims, and every
// operand is of a known kind and inside the array its kind indexes.
const char* check_owners_and_operands(const FlatModuleData& f) {
  for (size_t b = 0; b < f.blocks.size(); ++b) {
    const FlatFunction& func = f.functions[f.blocks[b].function];
    if (b < func.first_block || b >= uint64_t(func.first_block) + func.block_count) return "block outside its function";
  }
  for (size_t i = 0; i < f.insts.size(); ++i) {
    const FlatBlock& blk = f.blocks[f.insts[i].block];
    if (i < blk.first_inst || i >= uint64_t(blk.first_inst) + blk.inst_count) return "instruction outside its block";
  }
  for (const auto& op : f.operands) {
    if (op.kind < kOperandValue || op.kind > kOperandZero) return "operand of an unknown kind";
    uint64_t limit = op.kind == kOperandValue ? f.insts.size()
        : op.kind == kOperandArg              ? f.arg_widths.size()
        : op.kind == kOperandSymbol           ? f.symbols.size()
        : op.kind == kOperandBlock            ? f.blocks.size()
                                              : ~0ull;
    if (op.index >= limit) return "operand out of range";
    // A symbol's offset goes into a 32-bit PC-relative relocation, less the bytes of
    // the field after it: beyond 2 GiB no link can place it (and the arithmetic on it
    // could wrap).
    if (op.kind == kOperandSymbol && (op.imm < -kMaxSymbolOffset || op.imm > kMaxSymbolOffset))
      return "symbol offset beyond 2 GiB";
  }
  return nullptr;
}

const char* debug_type_range_defect(const std::vector<FlatDebugType>& types);
const char* debug_type_nesting_defect(const std::vector<FlatDebugType>& types);
const char* debug_type_scope_defect(const std::vector<FlatDebugType>& types);
const char* check_debug_variables(const FlatModuleData& f);

// Parents before their children, and no chain deeper than kMaxDebugNesting; types'
// containment too (a walk over every type) when `types`, else only their indices.
const char* debug_nesting_defect(const FlatDebugInfo& d, bool types) {
  std::vector<uint32_t> depth(d.scopes.size());
  for (size_t s = 0; s < d.scopes.size(); ++s) {
    if (d.scopes[s].parent > s) return "debug scope's parent not before it";
    depth[s] = d.scopes[s].parent ? depth[d.scopes[s].parent - 1] + 1 : 1;
    if (depth[s] > kMaxDebugNesting) return "debug scopes nested too deep";
  }
  depth.assign(d.inline_sites.size(), 0);
  for (size_t s = 0; s < d.inline_sites.size(); ++s) {
    if (d.inline_sites[s].parent > s) return "inline site's parent not before it";
    depth[s] = d.inline_sites[s].parent ? depth[d.inline_sites[s].parent - 1] + 1 : 1;
    if (depth[s] > kMaxDebugNesting) return "inline sites nested too deep";
  }
  depth.assign(d.blocks.size(), 0);
  for (size_t b = 0; b < d.blocks.size(); ++b) {
    if (d.blocks[b].parent > b) return "debug block's parent not before it";
    depth[b] = d.blocks[b].parent ? depth[d.blocks[b].parent - 1] + 1 : 1;
    if (depth[b] > kMaxDebugNesting) return "debug blocks nested too deep";
  }
  return types ? debug_type_nesting_defect(d.types) : debug_type_range_defect(d.types);
}

// No type is declared inside an element (debug_type_is_element: a member, an
// enumerator, a variant part, ...), which has no DIE of its own to nest it in; the
// types' indices checked before.
const char* debug_type_scope_defect(const std::vector<FlatDebugType>& types) {
  for (const FlatDebugType& t : types)
    if (t.parent_type && debug_type_is_element(types[t.parent_type - 1].tag))
      return "debug type declared inside a member";
  return nullptr;
}

const char* debug_type_range_defect(const std::vector<FlatDebugType>& types) {
  for (const FlatDebugType& t : types) {
    if (t.parent_type > types.size() || t.discriminator > types.size()) return "debug type out of range";
    for (uint32_t e : t.elements)
      if (e > types.size()) return "debug type out of range";
  }
  return nullptr;
}

// The DWARF writer writes a type's DIE with the DIEs it contains (debug_type_children)
// inside it, by recursion, and an element shared by several types once in each: the
// containment must have no cycle, nest at most kMaxDebugNesting deep and expand to a
// bounded number of DIEs. An iterative walk, so that the check itself cannot run out
// of stack.
const char* debug_type_nesting_defect(const std::vector<FlatDebugType>& types) {
  if (const char* defect = debug_type_range_defect(types)) return defect;
  const DebugTypeChildren children = debug_type_children(types);
  constexpr uint64_t kMaxDies = 1u << 24;
  enum : uint8_t { kNew, kOpen, kDone };
  std::vector<uint8_t> state(types.size(), kNew);
  std::vector<uint64_t> dies(types.size(), 0);  // DIEs the type's DIE expands to, itself included
  struct Frame {
    uint32_t type, next;
  };
  std::vector<Frame> stack;
  for (uint32_t root = 0; root < types.size(); ++root) {
    if (state[root] != kNew) continue;
    stack.push_back({root, 0}), state[root] = kOpen;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next < children.count(f.type)) {
        const uint32_t c = children.begin(f.type)[f.next++];
        if (state[c] == kOpen) return "debug types contain themselves";
        if (state[c] == kNew) {
          if (stack.size() >= kMaxDebugNesting) return "debug types nested too deep";
          stack.push_back({c, 0}), state[c] = kOpen;
        }
        continue;
      }
      uint64_t n = 1;
      for (const uint32_t* c = children.begin(f.type); c != children.end(f.type); ++c)
        n = std::min(kMaxDies, n + dies[*c]);
      dies[f.type] = n, state[f.type] = kDone;
      stack.pop_back();
    }
  }
  uint64_t total = 0;
  for (uint32_t t = 0; t < types.size(); ++t)
    if (!types[t].parent_type) total = std::min(kMaxDies, total + dies[t]);
  return total >= kMaxDies ? "debug types expand to too many entries" : nullptr;
}

// The debug information is all or nothing, one entry per function and instruction, and
// names only files it lists; the DWARF writer indexes by these without checking again.
const char* check_debug_info(const FlatModuleData& f) {
  const FlatDebugInfo& d = f.debug;
  if (!d.present())
    return d.files.empty() && d.scopes.empty() && d.functions.empty() && d.inlined.empty() && d.inline_sites.empty() &&
            d.locations.empty() && d.blocks.empty() && d.variables.empty() && d.types.empty() && d.globals.empty()
        ? nullptr
        : "debug information without a version";
  if (d.dwarf_version < 2 || d.dwarf_version > 5) return kDwarfVersionDefect;
  if (d.emission == DebugEmission::none) return "debug information of emission kind none";
  if (d.functions.size() != f.functions.size()) return "debug information not one per function";
  if (d.locations.size() != f.insts.size()) return "debug locations not one per instruction";
  for (const auto* list : {&d.functions, &d.inlined})
    for (const FlatDebugFunction& fn : *list) {
      if (fn.file > d.files.size()) return "debug file out of range";
      if (fn.scope > d.scopes.size()) return "debug scope out of range";
      if (fn.type > d.types.size()) return "debug type out of range";
    }
  if (const char* defect = debug_nesting_defect(d, true)) return defect;
  // A site's parent comes before it (no cycles), as the exporters intern them.
  for (size_t s = 0; s < d.inline_sites.size(); ++s) {
    const FlatDebugInlineSite& site = d.inline_sites[s];
    if (site.callee == 0 || site.callee > d.inlined.size()) return "inline site's callee out of range";
    if (site.call_file > d.files.size()) return "debug file out of range";
    if (site.block > d.blocks.size()) return "debug block out of range";
  }
  for (const FlatDebugLocation& l : d.locations) {
    if (l.file > d.files.size()) return "debug file out of range";
    if (l.inline_site > d.inline_sites.size()) return "inline site out of range";
    if (l.block > d.blocks.size()) return "debug block out of range";
  }
  for (const FlatDebugBlock& b : d.blocks)
    if (b.file > d.files.size()) return "debug file out of range";
  for (const FlatDebugType& t : d.types) {
    if (t.file > d.files.size()) return "debug file out of range";
    if (t.scope > d.scopes.size()) return "debug scope out of range";
    if (t.type > d.types.size() || t.containing_type > d.types.size()) return "debug type out of range";
    if (t.flags & ~kDebugTypeFlagMask) return "debug type flags unknown";
  }
  if (const char* defect = debug_type_scope_defect(d.types)) return defect;
  for (const FlatDebugGlobal& g : d.globals) {
    if (g.symbol >= f.symbols.size() || f.symbols[g.symbol].empty()) return "debug global's symbol out of range";
    if (g.file > d.files.size()) return "debug file out of range";
    if (g.scope > d.scopes.size()) return "debug scope out of range";
    if (g.type > d.types.size()) return "debug type out of range";
    if (g.function > f.functions.size() || (g.function && (g.scope || !d.functions[g.function - 1].has_subprogram)))
      return "debug global's function out of range";
  }
  return check_debug_variables(f);
}

// A variable's storage is an alloca of its own function or one of its arguments, and
// the variables come in function order.
const char* check_debug_variables(const FlatModuleData& f) {
  const FlatDebugInfo& d = f.debug;
  uint32_t previous = 0;
  for (const FlatDebugVariable& v : d.variables) {
    if (v.function >= f.functions.size() || v.function < previous) return "debug variable's function out of order";
    previous = v.function;
    const FlatFunction& fn = f.functions[v.function];
    if (v.inline_site > d.inline_sites.size()) return "inline site out of range";
    if (v.block > d.blocks.size()) return "debug block out of range";
    if (v.file > d.files.size()) return "debug file out of range";
    if (v.type > d.types.size()) return "debug type out of range";
    if (v.flags & ~kDebugTypeArtificial) return "debug variable flags unknown";
    if (v.storage_kind == kDebugStorageAlloca) {
      if (v.storage < fn.first_inst || v.storage - fn.first_inst >= fn.inst_count || f.insts[v.storage].op != kOpAlloca)
        return "debug variable's alloca not an alloca of its function";
    } else if (v.storage_kind == kDebugStorageArgument) {
      if (v.storage >= fn.arg_count) return "debug variable's argument out of range";
    } else {
      return "debug variable's storage of an unknown kind";
    }
    for (size_t k = 0; k < v.expression.size(); ++k) {
      if (v.expression[k] == kDwarfOpPlusUconst) ++k;
      else if (v.expression[k] != kDwarfOpDeref) return "debug variable's expression has an unknown operation";
      if (k >= v.expression.size()) return "debug variable's expression ends inside an operation";
    }
  }
  return nullptr;
}

}  // namespace

namespace {

// Operations whose only effect is their result (LLVM's instruction selection at -O0
// drops such a value when it is unused). Division is one: by zero it is undefined
// behaviour, not a trap LLVM keeps.
bool only_computes(uint16_t op) {
  switch (op) {
    case kOpCopy: case kOpTrunc: case kOpSext: case kOpAdd: case kOpSub: case kOpMul:
    case kOpAnd: case kOpOr: case kOpXor: case kOpShl: case kOpLshr: case kOpAshr:
    case kOpUdiv: case kOpSdiv: case kOpUrem: case kOpSrem: case kOpIcmp: case kOpSelect:
    case kOpGep: case kOpExtract: case kOpInsert: case kOpOverflow: case kOpBitOp:
    case kOpWide: case kOpFloat:
      return true;
    default:
      return false;
  }
}

}  // namespace

uint32_t drop_dead_values(FlatModuleData& flat) {
  std::vector<uint32_t> readers(flat.insts.size(), 0);
  for (const FlatOperand& op : flat.operands)
    if (op.kind == kOperandValue && op.index < readers.size()) ++readers[op.index];
  // Backwards, so that a value read only by dead ones is found dead in the same pass
  // (its readers come after it, except across blocks laid out against dominance,
  // where it simply stays).
  uint32_t dropped = 0;
  for (size_t i = flat.insts.size(); i-- > 0;) {
    FlatInst& in = flat.insts[i];
    if (readers[i] || !only_computes(in.op) || in.slot_size == 0) continue;
    for (uint32_t k = 0; k < in.operand_count; ++k) {
      const FlatOperand& op = flat.operands[in.first_operand + k];
      if (op.kind == kOperandValue && op.index < readers.size()) --readers[op.index];
    }
    const uint32_t block = in.block, first = in.first_operand;
    in = FlatInst{};
    in.op = kOpNop, in.block = block, in.first_operand = first;
    ++dropped;
  }
  return dropped;
}

namespace {

// Lists in one array (compressed rows): row r is items[first[r] .. first[r + 1]), so
// that the analysis below allocates once per module rather than once per block or per
// phi.
struct Rows {
  std::vector<uint32_t> first, items;
  // Row r of the result lists each row of `rows` that names r, in their order.
  void transpose(uint32_t n, const Rows& rows) {
    first.assign(n + 1, 0);
    for (uint32_t r : rows.items) ++first[r + 1];
    for (size_t r = 1; r < first.size(); ++r) first[r] += first[r - 1];
    items.resize(rows.items.size());
    for (uint32_t from = 0; from < n; ++from)
      for (const uint32_t* r = rows.begin(from); r != rows.end(from); ++r)
        items[first[*r]++] = from;  // first[r] ends at row r + 1's start
    for (size_t r = n; r > 0; --r) first[r] = first[r - 1];
    first[0] = 0;
  }
  const uint32_t* begin(uint32_t r) const { return items.data() + first[r]; }
  const uint32_t* end(uint32_t r) const { return items.data() + first[r + 1]; }
  size_t size(uint32_t r) const { return first[r + 1] - first[r]; }
};
struct RowRange {
  const uint32_t *b, *e;
  const uint32_t* begin() const { return b; }
  const uint32_t* end() const { return e; }
};

// One function's control flow, with block numbers local to it: each block's successors
// (from its instructions' block operands; a phi's are incoming blocks, not edges) and
// predecessors, in the order the instructions name them, and whether every edge into a
// block is a br's or a condbr's.
struct FunctionEdges {
  Rows succs, preds;
  std::vector<uint8_t> entered_by_branches;
  std::vector<uint32_t> last_from;
  RowRange succ(uint32_t b) const { return {succs.begin(b), succs.end(b)}; }
  RowRange pred(uint32_t b) const { return {preds.begin(b), preds.end(b)}; }
};

// A reader of a phi: instruction `inst`'s operand `operand` reads the phi at `row` (its
// place in the function). Sorted by phi, then in the order they come.
struct PhiUse {
  uint32_t row, inst, operand;
  bool operator<(const PhiUse& o) const {
    return row != o.row ? row < o.row : inst != o.inst ? inst < o.inst : operand < o.operand;
  }
};

// The function's edges and, in the same pass over its operands, the readers of its
// phis (unsorted), which lie in instructions first_phi .. last_phi. Its blocks tile its
// instructions (check_function checks it before check_phis asks; the exporters make
// them so). The successors come in block order, so they are written as rows directly.
void function_edges(const FlatModuleData& flat, const FlatFunction& fn, uint32_t first_phi, uint32_t last_phi,
                    FunctionEdges& g, std::vector<PhiUse>& uses) {
  g.entered_by_branches.assign(fn.block_count, 1);
  g.last_from.assign(fn.block_count, ~0u);  // a block named twice is one edge
  g.succs.first.resize(fn.block_count + 1);
  g.succs.items.clear();
  uses.clear();
  // Locals, as the pushes below could write anything the compiler would read again.
  const uint32_t first_block = fn.first_block, block_count = fn.block_count, phi_span = last_phi - first_phi;
  const FlatInst* insts = flat.insts.data();
  for (uint32_t b = 0; b < block_count; ++b) {
    g.succs.first[b] = static_cast<uint32_t>(g.succs.items.size());
    const FlatBlock& blk = flat.blocks[first_block + b];
    for (uint32_t i = blk.first_inst, end = blk.first_inst + blk.inst_count; i < end; ++i) {
      const FlatInst& in = insts[i];
      const bool phi = in.op == kOpPhi;  // its blocks are incoming ones, not edges
      const FlatOperand* ops = flat.operands.data() + in.first_operand;
      for (uint32_t k = 0, n = in.operand_count; k < n; ++k) {
        const FlatOperand& op = ops[k];
        if (op.kind == kOperandValue) {
          // The span first (inside the function): most values are no phi's, and spare the load.
          if (op.index - first_phi <= phi_span && insts[op.index].op == kOpPhi)
            uses.push_back({op.index - fn.first_inst, i, k});
          continue;
        }
        if (phi || op.kind != kOperandBlock || op.index - first_block >= block_count)
          continue;  // below first_block: wraps
        const uint32_t t = op.index - first_block;
        if (in.op != kOpBr && in.op != kOpCondBr) g.entered_by_branches[t] = 0;  // a switch's or an invoke's edge
        if (g.last_from[t] == b) continue;
        g.last_from[t] = b;
        g.succs.items.push_back(t);
      }
    }
  }
  g.succs.first[fn.block_count] = static_cast<uint32_t>(g.succs.items.size());
  g.preds.transpose(fn.block_count, g.succs);
}

// Blocks visited, over all of a function's phis, before the rest count as not direct:
// the answer stays the same for the same function (exporters and check_phis agree),
// and a function of very many blocks and phis costs a bounded time.
constexpr uint64_t kPhiLivenessSteps = uint64_t(1) << 22;

// The liveness walks of one function's phis, with scratch marks reused from phi to phi
// (and, with the edges and the readers, from function to function).
struct PhiLiveness {
  const FlatModuleData& flat;
  const FlatFunction* fn = nullptr;
  FunctionEdges g;
  // The phis' readers, sorted: few, where rows over every instruction cost a pass
  // over them all.
  std::vector<PhiUse> uses;
  std::vector<uint32_t> live_mark, pred_mark, work;  // live_mark[b] == walk: live on entry
  uint32_t walk = 0;
  uint64_t steps = 0;

  explicit PhiLiveness(const FlatModuleData& f) : flat(f) {}

  // Prepares the walks of `function`'s phis, all in instructions first_phi .. last_phi:
  // its edges, and the readers of each of its instructions that is a phi (row: the
  // instruction's place in the function).
  void start(const FlatFunction& function, uint32_t first_phi, uint32_t last_phi) {
    fn = &function;
    function_edges(flat, function, first_phi, last_phi, g, uses);
    std::sort(uses.begin(), uses.end());
    // The marks compare with `walk`, which only grows: stale marks of an earlier
    // function are below it, so they need no clearing, only room.
    if (live_mark.size() < function.block_count) live_mark.resize(function.block_count, 0);
    if (pred_mark.size() < function.block_count) pred_mark.resize(function.block_count, 0);
    steps = 0;
  }

  // Whether phi x (instruction `x`, in local block `home`) may be written directly: see
  // phis_written_directly.
  bool may_be_direct(uint32_t x, uint32_t home) {
    if (!g.entered_by_branches[home] || steps > kPhiLivenessSteps) return false;
    ++walk;
    for (uint32_t p : g.pred(home)) pred_mark[p] = walk;
    auto is_pred = [&](uint32_t b) { return pred_mark[b] == walk; };
    // The blocks where x's value from before is still to be read (live on entry),
    // from its readers back along the edges, never above x's own block (its definition).
    work.clear();
    auto live_in = [&](uint32_t b) {
      if (b != home && live_mark[b] != walk) live_mark[b] = walk, work.push_back(b);
    };
    const uint32_t row = x - fn->first_inst;
    auto use = std::lower_bound(uses.begin(), uses.end(), PhiUse{row, 0, 0});
    for (; use != uses.end() && use->row == row; ++use) {
      const uint32_t u = use->inst, k = use->operand;
      const FlatInst& in = flat.insts[u];
      const uint32_t at = in.block - fn->first_block;
      if (in.op != kOpPhi) {
        // A conditional branch reads its condition after the copies into its successors.
        if (in.op == kOpCondBr && k == 0 && is_pred(at)) return false;
        live_in(at);
        continue;
      }
      if (k % 2 || k + 1 >= in.operand_count) return false;  // not a value's place (check_instruction refuses it)
      const FlatOperand& from = flat.operands[in.first_operand + k + 1];
      if (from.kind != kOperandBlock || from.index < fn->first_block) return false;
      const uint32_t q = from.index - fn->first_block;
      if (q >= fn->block_count) return false;
      // Its own value again from q: a copy to itself, which keeps its slot only if
      // nothing wrote the slot before q's end, so it is live through q as any read is.
      if (u != x && is_pred(q)) return false;  // read by copies beside its own
      live_in(q);                              // read at q's end: live through q
    }
    while (!work.empty()) {
      const uint32_t b = work.back();
      work.pop_back();
      steps += 1 + g.preds.size(b);
      if (steps > kPhiLivenessSteps) return false;
      for (uint32_t p : g.pred(b)) live_in(p);
    }
    // Every edge out of a predecessor to another block leaves x dead.
    for (uint32_t p : g.pred(home))
      for (uint32_t s : g.succ(p))
        if (s != home && live_mark[s] == walk) return false;
    return true;
  }
};

}  // namespace

namespace {

// Each phi that may be written directly, by its instruction index, in order.
template <class Found>
void for_each_direct_phi(const FlatModuleData& flat, Found&& found) {
  PhiLiveness liveness(flat);
  std::vector<uint32_t> phis;
  for (const FlatFunction& fn : flat.functions) {
    const uint64_t block_end = uint64_t(fn.first_block) + fn.block_count;
    const uint64_t inst_end = uint64_t(fn.first_inst) + fn.inst_count;
    if (block_end > flat.blocks.size() || inst_end > flat.insts.size()) continue;  // check_tables refuses it
    // The function's phis in their blocks (few), and the span of instructions all its
    // phis lie in.
    phis.clear();
    uint64_t first_phi = inst_end, last_phi = 0;
    for (uint64_t x = fn.first_inst; x < inst_end; ++x) {
      const FlatInst& phi = flat.insts[x];
      if (phi.op != kOpPhi) continue;
      if (first_phi == inst_end) first_phi = x;
      last_phi = x;
      if (phi.block >= fn.first_block && phi.block < block_end) phis.push_back(static_cast<uint32_t>(x));
    }
    if (first_phi == inst_end) continue;
    liveness.start(fn, static_cast<uint32_t>(first_phi), static_cast<uint32_t>(last_phi));
    for (uint32_t x : phis)
      if (liveness.may_be_direct(x, flat.insts[x].block - fn.first_block)) found(x);
  }
}

}  // namespace

std::vector<uint8_t> phis_written_directly(const FlatModuleData& flat) {
  std::vector<uint8_t> direct(flat.insts.size(), 0);
  for_each_direct_phi(flat, [&](uint64_t x) { direct[x] = 1; });
  return direct;
}

uint32_t write_phis_directly(FlatModuleData& flat) {
  // The phis are marked after the walks, which read the instructions; a list of the
  // few found, where an array of a byte per instruction was made and scanned.
  std::vector<uint32_t> direct;
  for_each_direct_phi(flat, [&](uint64_t x) { direct.push_back(static_cast<uint32_t>(x)); });
  for (uint32_t i : direct) {
    FlatInst& phi = flat.insts[i];
    phi.aux |= kPhiDirect;
    phi.slot_size /= 2;  // the value without its shadow (the exporters make both halves the same size)
  }
  return static_cast<uint32_t>(direct.size());
}

const char* check_debug_nesting(const FlatDebugInfo& debug) { return debug_nesting_defect(debug, true); }
const char* check_debug_exported(const FlatDebugInfo& debug) {
  if (debug.present() && (debug.dwarf_version < 2 || debug.dwarf_version > 5)) return kDwarfVersionDefect;
  if (const char* defect = debug_type_nesting_defect(debug.types)) return defect;
  return debug_type_scope_defect(debug.types);
}
const char* check_debug_scope_nesting(const FlatDebugInfo& debug) { return debug_nesting_defect(debug, false); }

namespace {

// Each phi's slot holds its value and, unless its predecessors write it directly, its
// shadow; kPhiDirect only where that is safe (a file that claims it elsewhere would make
// stamp read a value a predecessor already overwrote).
const char* check_phis(const FlatModuleData& f) {
  std::vector<uint8_t> direct;
  for (size_t i = 0; i < f.insts.size(); ++i) {
    const FlatInst& in = f.insts[i];
    if (in.op != kOpPhi) continue;
    if (in.aux & ~kPhiDirect) return "instruction with an unknown variant";
    const bool is_direct = in.aux & kPhiDirect;
    const uint64_t value = in.width == 0 ? (uint64_t(in.aux32) + 7) / 8 * 8 : in.width == kWideBits ? 16 : 8;
    if (in.slot_size < (is_direct ? 1 : 2) * value) return "phi in a short slot";
    if (!is_direct) continue;
    if (direct.empty()) direct = phis_written_directly(f);
    if (!direct[i]) return "phi written directly where a predecessor's copies or another block read it";
  }
  return nullptr;
}

}  // namespace

std::string check_flat_module(const FlatModuleData& flat) {
  // In this order: each check relies on the indices the ones before it checked.
  const char* defect = check_tables(flat);
  for (size_t fn = 0; !defect && fn < flat.functions.size(); ++fn) defect = check_function(flat, fn);
  if (!defect) defect = check_owners_and_operands(flat);
  if (!defect) defect = check_phis(flat);
  if (!defect) defect = check_debug_info(flat);
  return defect ? defect : "";
}

}  // namespace kiln
