#include "flat_export.h"

#include "bitcode_layout.h"  // libm_function
#include "codegen_requests.h"
#include "fallback.h"  // was_private_variable
#include "flat_export_debug.h"
#include "pointer_index.h"
#include "vector_abi.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DebugInfoMetadata.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GetElementPtrTypeIterator.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalIFunc.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kiln {

namespace {

using namespace llvm;

// Widths stamp keeps in a 64-bit slot: integers of these widths, pointers, and
// float/double as their bit patterns (kOpFloat computes on them).
unsigned scalar_width(Type* t) {
  if (t->isPointerTy()) return t->getPointerAddressSpace() == 0 ? 64 : 0;
  if (t->isIntegerTy()) {
    unsigned w = t->getIntegerBitWidth();
    return (w == 1 || (w % 8 == 0 && w <= 64)) ? w : 0;  // i24, i40, i48, i56 included
  }
  if (t->isFloatTy()) return 32;
  if (t->isDoubleTy()) return 64;
  return 0;
}

bool is_int_like(Type* t) { return (t->isIntegerTy() || t->isPointerTy()) && scalar_width(t) != 0; }

// A value's width as an operand: a scalar's, or 128 for i128, which stamp moves in a
// 16-byte slot and computes on with kOpWide (export_wide decides where it may appear).
unsigned operand_width(Type* t) { return t->isIntegerTy(128) ? kWideBits : scalar_width(t); }

// The floating-point types stamp computes on and passes in xmm registers.
bool is_float_or_double(Type* t) { return t->isFloatTy() || t->isDoubleTy(); }

// An aggregate whose leaves are all scalars stamp can move. With wide_leaves, i128
// leaves too: such a value (an i128 overflow intrinsic's {i128, i1}) is moved as bytes
// and taken apart, never passed, returned or materialized as a constant.
bool is_plain_aggregate(Type* t, bool wide_leaves = false) {
  auto leaf = [&](Type* e) {
    return scalar_width(e) || (wide_leaves && e->isIntegerTy(kWideBits)) || is_plain_aggregate(e, wide_leaves);
  };
  if (auto* st = dyn_cast<StructType>(t)) {
    if (st->isOpaque() || st->isPacked()) return false;
    for (Type* e : st->elements())
      if (!leaf(e)) return false;
    return true;
  }
  if (auto* at = dyn_cast<ArrayType>(t)) return leaf(at->getElementType());
  // Fixed vectors of byte-sized elements are moved as bytes (loads, stores, phis);
  // any arithmetic on them is refused.
  if (auto* vt = dyn_cast<FixedVectorType>(t)) {
    Type* e = vt->getElementType();
    return scalar_width(e) >= 8 && (e->isIntegerTy() || e->isPointerTy() || e->isFloatingPointTy());
  }
  return false;
}

// A first-class aggregate LLVM returns in registers leaf by leaf: exactly two
// integer or pointer leaves, the first in rax and the second in rdx. Gives their
// widths and byte offsets.
// An aggregate of exactly two scalar leaves, the first at offset 0, returned in two
// registers (*float_leaves: bit k, leaf k is a float or double, in an xmm register).
bool is_scalar_pair(Type* t, const DataLayout& dl, unsigned* w0, unsigned* w1, uint64_t* off1,
                    unsigned* float_leaves) {
  if (!is_plain_aggregate(t)) return false;
  std::vector<std::pair<unsigned, uint64_t>> leaves;  // width, offset
  unsigned floats = 0;
  bool ok = true;
  std::function<void(Type*, uint64_t)> walk = [&](Type* x, uint64_t base) {
    if (auto* st = dyn_cast<StructType>(x)) {
      const StructLayout* sl = dl.getStructLayout(st);
      for (unsigned i = 0; i < st->getNumElements(); ++i) walk(st->getElementType(i), base + sl->getElementOffset(i));
    } else if (auto* at = dyn_cast<ArrayType>(x)) {
      for (uint64_t i = 0; i < at->getNumElements(); ++i)
        walk(at->getElementType(), base + i * dl.getTypeAllocSize(at->getElementType()));
    } else if (is_int_like(x) || is_float_or_double(x)) {
      if (is_float_or_double(x) && leaves.size() < 2) floats |= 1u << leaves.size();
      leaves.push_back({scalar_width(x), base});
    } else {
      ok = false;
    }
  };
  walk(t, 0);
  if (!ok || leaves.size() != 2 || leaves[0].second != 0) return false;
  *w0 = leaves[0].first;
  *w1 = leaves[1].first;
  *off1 = leaves[1].second;
  *float_leaves = floats;
  return true;
}

uint32_t round8(uint64_t n) { return static_cast<uint32_t>((n + 7) / 8 * 8); }

// The layout stamp computes sizes, offsets and strides with: the x86-64 target's,
// which the llvm back end imposes on every module it emits (the llvm half
// included), not the module's own. A module whose data layout differs (none at
// all, 32-bit pointers, another i128 alignment) would otherwise get stamp code
// that disagrees with llvm's about where things are. A new DataLayout per module:
// one caches struct layouts by StructType address, which must not outlive the
// module's context (a later context may reuse the address for another type).
DataLayout target_data_layout() {
  static const std::string text = Triple("x86_64-unknown-linux-gnu").computeDataLayout();
  return DataLayout(text);
}

// What each function's export works in, kept across a module's functions: a function
// is exported into these, then committed, and only the largest function's arrays are
// ever allocated.
struct FunctionScratch {
  PointerIndex<Instruction> inst_index;
  PointerIndex<BasicBlock> block_index;
  std::vector<FlatInst> insts;
  std::vector<const DILocation*> locations;  // per flat instruction: its !dbg, or null
  std::vector<FlatOperand> operands;
  std::vector<FlatBlock> blocks;
  void clear() {
    inst_index.clear(), block_index.clear();
    insts.clear(), locations.clear(), operands.clear(), blocks.clear();
  }
};

class FunctionExporter {
 public:
  FunctionExporter(const Module& m, const DataLayout& dl, FlatExport& out,
                   std::unordered_map<const GlobalValue*, uint32_t>& symbol_index,
                   std::unordered_map<std::string, uint32_t>& library_index, FlatDebugExporter& debug,
                   FunctionScratch& scratch, const Function& f)
      : m_(m),
        dl_(dl),
        out_(out.flat),
        export_(out),
        symbol_index_(symbol_index),
        library_index_(library_index),
        debug_(debug),
        f_(f),
        inst_index_(scratch.inst_index),
        block_index_(scratch.block_index),
        insts_(scratch.insts),
        locations_(scratch.locations),
        operands_(scratch.operands),
        blocks_(scratch.blocks) {
    scratch.clear();
  }

  std::vector<std::string> reasons;

  // Exports into local arrays; commits them to `out_` only when no reason was found.
  bool run() {
    base_inst_ = static_cast<uint32_t>(out_.insts.size());
    base_block_ = static_cast<uint32_t>(out_.blocks.size());
    base_operand_ = static_cast<uint32_t>(out_.operands.size());
    base_arg_ = static_cast<uint32_t>(out_.arg_widths.size());
    fn_index_ = static_cast<uint32_t>(out_.functions.size());
    check_function();
    // The vector arguments' copies (kVecArgument) come first, then every instruction.
    uint32_t n = static_cast<uint32_t>(vector_args_.size()), b = 0;
    for (const BasicBlock& bb : f_) {
      block_index_.set(&bb, base_block_ + b++);
      for (const Instruction& inst : bb) inst_index_.set(&inst, base_inst_ + n++);
    }
    for (const BasicBlock& bb : f_) {
      FlatBlock fb{base_inst_ + static_cast<uint32_t>(insts_.size()), 0, fn_index_};
      if (bb.hasAddressTaken()) reason("block address taken");
      if (&bb == &f_.getEntryBlock()) export_vector_args();
      for (const Instruction& inst : bb) export_inst(inst);
      fb.inst_count = base_inst_ + static_cast<uint32_t>(insts_.size()) - fb.first_inst;
      blocks_.push_back(fb);
    }
    if (frame_bound(insts_.data(), static_cast<uint32_t>(insts_.size()), static_cast<uint32_t>(f_.arg_size())) >
        static_cast<uint64_t>(kMaxFrameBytes))
      reason("frame larger than 1 GiB");
    if (!reasons.empty()) return false;
    FlatFunction ff{};
    ff.symbol = symbol(&f_);
    ff.first_block = base_block_;
    ff.block_count = static_cast<uint32_t>(blocks_.size());
    ff.first_inst = base_inst_;
    ff.inst_count = static_cast<uint32_t>(insts_.size());
    ff.first_arg = base_arg_;
    ff.arg_count = static_cast<uint32_t>(f_.arg_size());
    ff.flags = fn_flags_;
    ff.float_args = float_args_;
    ff.ret_width = static_cast<uint8_t>(operand_width(f_.getReturnType()));
    ff.ret_leaf_float = ret_leaf_float_;
    ff.ret_leaf0_width = ret_w0_;
    ff.ret_leaf1_width = ret_w1_;
    ff.ret_leaf1_offset = static_cast<uint32_t>(ret_off1_);
    ff.sret_arg = sret_arg_;
    ff.personality = personality_;
    for (const Argument& a : f_.args()) out_.arg_widths.push_back(static_cast<uint8_t>(arg_width(a)));
    out_.functions.push_back(ff);
    out_.blocks.insert(out_.blocks.end(), blocks_.begin(), blocks_.end());
    out_.insts.insert(out_.insts.end(), insts_.begin(), insts_.end());
    out_.operands.insert(out_.operands.end(), operands_.begin(), operands_.end());
    debug_.function(f_, fn_index_, locations_, inst_index_);
    return true;
  }

 private:
  void reason(const std::string& r) {
    if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(r);
  }

  uint32_t symbol(const GlobalValue* gv) {
    auto [it, inserted] = symbol_index_.emplace(gv, static_cast<uint32_t>(export_.symbol_values.size()));
    if (inserted) export_.symbol_values.push_back(gv);
    return it->second;
  }

  // An atomic access stamp compiles: an integer or pointer of 8, 16, 32 or 64 bits,
  // naturally aligned (LLVM calls the libatomic routines otherwise).
  void check_atomic_access(Type* t, uint64_t align) {
    unsigned w = is_int_like(t) ? scalar_width(t) : 0;
    if (!(w == 8 || w == 16 || w == 32 || w == 64)) reason("atomics: on " + type_name(t));
    else if (align < w / 8) reason("atomics: under-aligned");
  }

  void check_function() {
    if (!stamp_calling_convention(f_.getCallingConv())) reason("calling convention " + std::to_string(f_.getCallingConv()));
    if (f_.isVarArg()) reason("variadic definition");
    if (f_.hasPersonalityFn()) {
      auto* pers = dyn_cast<GlobalValue>(f_.getPersonalityFn()->stripPointerCasts());
      if (!pers) reason("exceptions: personality is not a symbol");
      else {
        fn_flags_ |= kFnHasPersonality;
        personality_ = symbol(pers);
      }
    }
    if (f_.hasComdat()) reason("comdat");
    if (f_.hasPrefixData() || f_.hasPrologueData()) reason("prefix or prologue data");
    if (f_.hasGC()) reason("garbage collector");
    if (f_.hasFnAttribute(Attribute::Naked)) reason("naked function");
    // What LLVM's code generator would add and stamp does not (codegen_requests.h).
    if (f_.hasFnAttribute(Attribute::StackProtect) || f_.hasFnAttribute(Attribute::StackProtectStrong) ||
        f_.hasFnAttribute(Attribute::StackProtectReq))
      reason(kReasonStackProtector);
    for (std::string_view flag : kCfProtectionFlags)
      if (m_.getModuleFlag(flag)) reason(kReasonCfProtection);
    for (std::string_view key : kInstrumentedAttributes)
      if (f_.hasFnAttribute(key)) reason(kReasonInstrumented);
    for (std::string_view key : kPatchableAttributes)
      if (f_.hasFnAttribute(key)) reason(kReasonPatchable);
    if (f_.getAlign() && f_.getAlign()->value() > kStampFunctionAlign) reason(kReasonAlignment);
    if (f_.hasAvailableExternallyLinkage()) reason("available_externally");
    avx_ = target_features_have_avx(f_.getFnAttribute("target-features").getValueAsString());
    may_fuse_ = false;
    for (const char* key : {"target-features", "target-cpu"})
      may_fuse_ |= target_may_fuse_multiply_add(key, f_.getFnAttribute(key).getValueAsString());
    unsigned i = 0, xmm = 0;  // xmm: the vector registers the arguments so far take
    for (const Argument& a : f_.args()) {
      Type* t = a.getType();
      const uint32_t vector_bytes = vector_arg_bytes(vector_lane_width(t), vector_lanes_or_0(t), avx_);
      if (is_float_or_double(t) && i >= kMaxFloatArgs) reason("floating-point argument after the 16th");
      else if (is_float_or_double(t)) float_args_ |= static_cast<uint16_t>(1u << i), ++xmm;
      else if (vector_bytes && (i >= kMaxFloatArgs || xmm >= kVectorArgRegisters))
        reason("vector argument past xmm7 or after the 16th argument");
      else if (vector_bytes) {
        float_args_ |= static_cast<uint16_t>(1u << i);
        vector_arg_index_[&a] = static_cast<uint32_t>(vector_args_.size());
        vector_args_.push_back({xmm++, vector_lane_width(t), vector_lanes(t)});
      } else if (!is_int_like(t) && !t->isIntegerTy(kWideBits)) reason("argument type " + type_name(t));
      if (a.hasByValAttr() || a.hasInAllocaAttr() || a.hasPreallocatedAttr() || a.hasNestAttr())
        reason("byval, inalloca, preallocated or nest argument");
      if (a.hasStructRetAttr()) {
        fn_flags_ |= kFnHasSret;
        sret_arg_ = i;
      }
      ++i;
    }
    Type* r = f_.getReturnType();
    if (!r->isVoidTy()) {
      const uint32_t vector_bytes = vector_arg_bytes(vector_lane_width(r), vector_lanes_or_0(r), avx_);
      if (is_float_or_double(r)) fn_flags_ |= kFnRetFloat;  // in xmm0
      else if (vector_bytes) fn_flags_ |= vector_bytes == 32 ? kFnRetVector256 : kFnRetVector;  // in xmm0 or ymm0
      else if (r->isIntegerTy(kWideBits)) {
        // in rax (low half) and rdx (high half): encode_ret
      } else if (is_int_like(r)) {
        if (f_.hasRetAttribute(Attribute::SExt)) fn_flags_ |= kFnRetSignExt;
      } else if (unsigned w0 = 0, w1 = 0, floats = 0; is_scalar_pair(r, dl_, &w0, &w1, &ret_off1_, &floats)) {
        fn_flags_ |= kFnRetPair;
        ret_leaf_float_ = static_cast<uint8_t>(floats);
        ret_w0_ = static_cast<uint8_t>(w0);
        ret_w1_ = static_cast<uint8_t>(w1);
      } else {
        reason("return type " + type_name(r));
      }
    }
  }

  static std::string type_name(Type* t) {
    std::string s;
    raw_string_ostream os(s);
    t->print(os);
    os.flush();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return s;
  }

  // A vector argument (vector_arg_bytes): the register it comes in and its lanes.
  struct VectorArg {
    uint32_t reg, width, lanes;
  };
  static uint64_t vector_lanes_or_0(Type* t) { return vector_lane_width(t) ? vector_lanes(t) : 0; }
  // arg_widths' entry: a vector argument counts as a double (FlatFunction::float_args).
  uint32_t arg_width(const Argument& a) const {
    return vector_arg_index_.count(&a) ? 64 : operand_width(a.getType());
  }
  // The kVecArgument copy of each vector argument, at the start of the entry block.
  void export_vector_args() {
    for (const VectorArg& va : vector_args_) {
      const uint32_t first_operand = base_operand_ + static_cast<uint32_t>(operands_.size());
      insts_.push_back(vector_argument_copy(base_block_, first_operand, va.reg, va.width, va.lanes));
      locations_.push_back(nullptr);
    }
  }
  // A use of vector argument `a`: its copy's value.
  bool vector_arg_operand(const Argument& a, FlatOperand& op) const {
    auto it = vector_arg_index_.find(&a);
    if (it == vector_arg_index_.end()) return false;
    op.kind = kOperandValue;
    op.index = base_inst_ + it->second;
    return true;
  }

  FlatOperand operand(const Value* v) {
    FlatOperand op{};
    op.width = static_cast<uint8_t>(operand_width(v->getType()));
    if (!op.width && !is_plain_aggregate(v->getType(), true) && !v->getType()->isLabelTy() && !v->getType()->isVoidTy())
      reason("value type " + type_name(v->getType()));
    if (auto* inst = dyn_cast<Instruction>(v)) {
      op.kind = kOperandValue;
      op.index = inst_index_.at(inst);
    } else if (auto* arg = dyn_cast<Argument>(v)) {
      if (!vector_arg_operand(*arg, op)) {
        op.kind = kOperandArg;
        op.index = base_arg_ + arg->getArgNo();
      }
    } else if (auto* bb = dyn_cast<BasicBlock>(v)) {
      op.kind = kOperandBlock;
      op.index = block_index_.at(bb);
    } else if (isa<ConstantInt>(v) || isa<ConstantFP>(v)) {
      scalar_constant(cast<Constant>(v), op);
    } else if (isa<ConstantPointerNull>(v)) {
      op.kind = kOperandConst;
    } else if (isa<UndefValue>(v)) {  // undef and poison
      op.kind = kOperandUndef;
    } else if (isa<ConstantAggregateZero>(v)) {
      op.kind = kOperandZero;
    } else if (auto* gv = dyn_cast<GlobalValue>(v)) {
      if (auto* var = dyn_cast<GlobalVariable>(gv); var && var->isThreadLocal()) reason("thread-local variable");
      op.kind = kOperandSymbol;
      op.index = symbol(gv);
    } else if (auto* ce = dyn_cast<ConstantExpr>(v)) {
      constant_expression(ce, op);
    } else {
      reason("constant " +
             std::string(v->getValueID() == Value::ConstantStructVal || v->getValueID() == Value::ConstantArrayVal
                             ? "aggregate"
                             : "kind " + std::to_string(v->getValueID())));
    }
    return op;
  }

  // An integer or floating-point constant as the 64-bit immediate stamp keeps. Wider
  // ones (i128, x86_fp80, fp128, ppc_fp128) do not fit an immediate: getZExtValue
  // would assert, so they are reasons. A splat ConstantInt/ConstantFP of vector
  // type is one element standing for many: not an immediate either.
  void scalar_constant(const Constant* c, FlatOperand& op) {
    op.kind = kOperandConst;
    if (c->getType()->isVectorTy()) return reason("vector splat constant");
    if (auto* ci = dyn_cast<ConstantInt>(c)) {
      if (ci->getBitWidth() == kWideBits) return wide_constant(ci->getValue(), op);
      if (ci->getBitWidth() > 64) return reason("integer constant wider than 64 bits");
      op.imm = static_cast<int64_t>(ci->getZExtValue());
      return;
    }
    APInt bits = cast<ConstantFP>(c)->getValueAPF().bitcastToAPInt();
    if (bits.getBitWidth() > 64) return reason("floating-point constant wider than 64 bits");
    op.imm = static_cast<int64_t>(bits.getZExtValue());
  }

  // An i128 constant: its low half in imm, its high half in index, which holds the
  // high halves that are a 32-bit number sign-extended (kOperandConst).
  void wide_constant(const APInt& v, FlatOperand& op) {
    int64_t high = static_cast<int64_t>(v.extractBitsAsZExtValue(64, 64));
    if (!wide_immediate_fits(high)) return reason("i128 constant beyond 96 signed bits");
    op.imm = static_cast<int64_t>(v.extractBitsAsZExtValue(64, 0));
    op.index = static_cast<uint32_t>(static_cast<int32_t>(high));
  }

  // Constant expressions stamp folds: a global plus a constant offset, and casts of it.
  void constant_expression(const ConstantExpr* ce, FlatOperand& op) {
    if (auto* gep = dyn_cast<GEPOperator>(ce)) {
      APInt offset(64, 0);
      auto* base = dyn_cast<GlobalValue>(gep->getPointerOperand()->stripPointerCasts());
      if (base && gep->accumulateConstantOffset(dl_, offset) && offset.isSignedIntN(31)) {
        op.kind = kOperandSymbol;
        op.index = symbol(base);
        op.imm = offset.getSExtValue();
        if (auto* var = dyn_cast<GlobalVariable>(base); var && var->isThreadLocal()) reason("thread-local variable");
        return;
      }
      reason("constant expression getelementptr");
      return;
    }
    if (ce->getOpcode() == Instruction::PtrToInt || ce->getOpcode() == Instruction::IntToPtr ||
        ce->getOpcode() == Instruction::BitCast) {
      FlatOperand inner = operand(ce->getOperand(0));
      uint8_t w = op.width;
      op = inner;
      op.width = w;
      if (w != 64 && op.kind == kOperandSymbol) reason("constant expression truncating a pointer");
      return;
    }
    reason(std::string("constant expression ") + ce->getOpcodeName());
  }

  FlatInst& emit(const Instruction& inst, uint16_t op, std::initializer_list<FlatOperand> ops = {}) {
    FlatInst fi{};
    fi.op = op;
    fi.block = block_index_.at(inst.getParent());
    fi.first_operand = base_operand_ + static_cast<uint32_t>(operands_.size());
    fi.operand_count = static_cast<uint32_t>(ops.size());
    for (const auto& o : ops) operands_.push_back(o);
    Type* t = inst.getType();
    fi.width = static_cast<uint8_t>(scalar_width(t));
    if (fi.width) fi.slot_size = 8;
    // A value without a size (a token: llvm.coro.id's in ThinLTO bitcode, which keeps
    // coroutines unsplit) has no slot to give; DataLayout traps on its size.
    else if (t->isSized()) fi.slot_size = round8(dl_.getTypeAllocSize(t));
    else if (!t->isVoidTy()) reason("value type " + type_name(t));
    insts_.push_back(fi);
    locations_.push_back(inst.getDebugLoc().get());
    return insts_.back();
  }
  void add_operand(FlatInst& fi, const FlatOperand& o) {
    operands_.push_back(o);
    fi.operand_count++;
  }

  void export_call(const CallBase& call) {
    if (call.isInlineAsm()) {
      const auto* ia = cast<InlineAsm>(call.getCalledOperand());
      if (isa<CallInst>(call) && call.getType()->isVoidTy() && !call.hasOperandBundles() &&
          stamp_empty_asm(ia->getAsmString(), ia->getConstraintString())) {
        emit(call, kOpNop);
        return;
      }
      return refuse(call, "inline asm");
    }
    const Function* callee = call.getCalledFunction();
    bool invoke = isa<InvokeInst>(call);
    if (callee && callee->isIntrinsic()) {
      if (invoke) return refuse(call, "invoke of intrinsic " + callee->getName().str());
      return export_intrinsic(cast<CallInst>(call), callee);
    }
    if (!stamp_calling_convention(call.getCallingConv()))
      reason("call with calling convention " + std::to_string(call.getCallingConv()));
    if (call.hasOperandBundles()) reason("operand bundles");
    if (auto* ci = dyn_cast<CallInst>(&call); ci && ci->isMustTailCall()) reason("musttail call");
    Type* r = call.getType();
    bool pair = false;
    unsigned w0 = 0, w1 = 0, floats = 0;
    uint64_t off1 = 0;
    const uint32_t ret_vector = vector_arg_bytes(vector_lane_width(r), vector_lanes_or_0(r), avx_);
    if (!r->isVoidTy() && !is_int_like(r) && !r->isIntegerTy(kWideBits) && !is_float_or_double(r) && !ret_vector) {
      if (is_scalar_pair(r, dl_, &w0, &w1, &off1, &floats)) pair = true;
      else reason("call returning " + type_name(r));
    }
    FlatInst& fi = emit(call, invoke ? kOpInvoke : kOpCall, {operand(call.getCalledOperand())});
    size_t at = insts_.size() - 1;
    if (pair) {
      insts_[at].aux32 = w0 | (w1 << 8) | (floats << 16);
      insts_[at].imm = static_cast<int64_t>(off1);
    }
    if (r->isIntegerTy(kWideBits)) insts_[at].width = kWideBits;  // in rax and rdx
    if (call.getFunctionType()->isVarArg()) insts_[at].aux |= kCallVarargs;
    if (is_float_or_double(r)) insts_[at].aux |= kCallRetFloat;  // in xmm0
    if (ret_vector) insts_[at].aux |= ret_vector == 32 ? kCallRetVector256 : kCallRetVector;  // in xmm0 or ymm0
    unsigned xmm = 0;  // the vector registers the arguments so far take
    for (unsigned a = 0; a < call.arg_size(); ++a) {
      const Value* v = call.getArgOperand(a);
      Type* t = v->getType();
      const uint32_t vector_bytes = vector_arg_bytes(vector_lane_width(t), vector_lanes_or_0(t), avx_);
      if (vector_bytes && xmm >= kVectorArgRegisters) reason("vector call argument past xmm7");
      else if (!vector_bytes && !is_int_like(t) && !is_float_or_double(t) && !t->isIntegerTy(kWideBits))
        reason("call argument type " + type_name(t));
      xmm += vector_bytes || is_float_or_double(t);
      if (call.paramHasAttr(a, Attribute::ByVal) || call.paramHasAttr(a, Attribute::InAlloca) ||
          call.paramHasAttr(a, Attribute::Preallocated))
        reason("byval, inalloca or preallocated call argument");
      // A vector's value or zero (its flags name its register class and size).
      FlatOperand o = vector_bytes ? vector_operand(v) : operand(v);
      if (call.paramHasAttr(a, Attribute::SExt)) o.flags |= kOperandSignExt;
      if (is_float_or_double(t)) o.flags |= kOperandFloat;
      if (vector_bytes) o.flags = kOperandFloat | (vector_bytes == 32 ? kOperandVector256 : kOperandVector);
      add_operand(insts_[at], o);
    }
    if (auto* inv = dyn_cast<InvokeInst>(&call)) {
      add_operand(insts_[at], operand(inv->getNormalDest()));
      add_operand(insts_[at], operand(inv->getUnwindDest()));
    }
    (void)fi;
  }

  void export_landing_pad(const LandingPadInst& lp) {
    auto* st = dyn_cast<StructType>(lp.getType());
    if (!st || st->getNumElements() != 2 || !st->getElementType(0)->isPointerTy() ||
        !st->getElementType(1)->isIntegerTy(32))
      reason("landingpad of " + type_name(lp.getType()));
    bool catch_all = false, empty_filter = false;
    for (unsigned c = 0; c < lp.getNumClauses(); ++c) {
      const Constant* clause = lp.getClause(c);
      if (lp.isCatch(c)) {
        if (clause->isNullValue()) catch_all = true;
        else reason("exceptions: catch clause with a type");
      } else {
        auto* at = dyn_cast<ArrayType>(clause->getType());
        if (at && at->getNumElements() == 0) empty_filter = true;
        else reason("exceptions: filter clause with types");
      }
    }
    if (catch_all && empty_filter) reason("exceptions: catch and filter in one landing pad");
    FlatInst& fi = emit(lp, kOpLandingPad);
    fi.aux = catch_all ? kLandingPadCatchAll : empty_filter ? kLandingPadEmptyFilter : kLandingPadCleanup;
    fi.slot_size = 16;
  }

  void export_resume(const ResumeInst& r) {
    FlatOperand resume{};
    resume.kind = kOperandSymbol;
    resume.width = 64;
    resume.index = library_symbol("_Unwind_Resume");
    FlatOperand value = operand(r.getValue());
    if (value.kind != kOperandValue) reason("resume of a constant");
    emit(r, kOpResume, {value, resume});
  }

  void export_intrinsic(const CallInst& call, const Function* callee) {
    switch (Intrinsic::ID id = callee->getIntrinsicID()) {
      case Intrinsic::lifetime_start:
      case Intrinsic::lifetime_end:
      case Intrinsic::assume:
      case Intrinsic::experimental_noalias_scope_decl:
      case Intrinsic::donothing:
      case Intrinsic::sideeffect:
      case Intrinsic::dbg_declare:
      case Intrinsic::dbg_value:
      case Intrinsic::dbg_label:
        emit(call, kOpNop);
        return;
      case Intrinsic::expect:
        emit(call, kOpCopy, {operand(call.getArgOperand(0))});
        return;
      case Intrinsic::threadlocal_address:
        return export_tls_address(call, callee);
      case Intrinsic::trap:
      case Intrinsic::ubsantrap:
        emit(call, kOpUnreachable);
        return;
      case Intrinsic::memcpy:
      case Intrinsic::memmove:
      case Intrinsic::memset:
        return export_memory_intrinsic(call, id);
      case Intrinsic::uadd_with_overflow:
      case Intrinsic::sadd_with_overflow:
      case Intrinsic::usub_with_overflow:
      case Intrinsic::ssub_with_overflow:
      case Intrinsic::umul_with_overflow:
      case Intrinsic::smul_with_overflow:
        return export_overflow_intrinsic(call, id);
      case Intrinsic::is_constant: {  // at run time nothing is a compile-time constant
        FlatOperand zero{};
        zero.kind = kOperandConst;
        zero.width = 1;
        emit(call, kOpCopy, {zero});
        return;
      }
      case Intrinsic::ctpop:
      case Intrinsic::ctlz:
      case Intrinsic::cttz:
      case Intrinsic::bswap:
      case Intrinsic::abs:
      case Intrinsic::umin:
      case Intrinsic::umax:
      case Intrinsic::smin:
      case Intrinsic::smax:
      case Intrinsic::uadd_sat:
      case Intrinsic::usub_sat:
      case Intrinsic::ucmp:
      case Intrinsic::scmp:
      case Intrinsic::sadd_sat:
      case Intrinsic::ssub_sat:
      case Intrinsic::fshl:
      case Intrinsic::fshr:
      case Intrinsic::bitreverse:
        return export_bit_intrinsic(call, callee, id);
      case Intrinsic::fabs:
      case Intrinsic::sqrt:
      case Intrinsic::minnum:
      case Intrinsic::maxnum:
        return export_float_intrinsic(call, callee, id);
      case Intrinsic::fptosi_sat:
      case Intrinsic::fptoui_sat:
        return export_saturating_conversion(call, callee, id == Intrinsic::fptosi_sat);
      case Intrinsic::fmuladd:
        return export_fmuladd(call, callee);
      default:
        if (bc::libm_function(Intrinsic::getBaseName(id).str(), true))
          return export_libm_call(call, "intrinsic " + callee->getName().str(), Intrinsic::getBaseName(id).str());
        return refuse(call, "intrinsic " + callee->getName().str());
    }
  }

  // memcpy, memmove and memset: a call of the C library function, which takes the
  // same first three arguments.
  void export_memory_intrinsic(const CallInst& call, Intrinsic::ID id) {
    const char* name = id == Intrinsic::memcpy ? "memcpy" : id == Intrinsic::memmove ? "memmove" : "memset";
    const size_t at = emit_library_call(call, name);
    for (unsigned a = 0; a < 3; ++a) add_operand(insts_[at], operand(call.getArgOperand(a)));
  }

  // The *.with.overflow intrinsics: the result and its flag, at the offset of the
  // struct's second field.
  void export_overflow_intrinsic(const CallInst& call, Intrinsic::ID id) {
    unsigned w = scalar_width(call.getArgOperand(0)->getType());
    if (!(w == 8 || w == 16 || w == 32 || w == 64))
      reason("overflow intrinsic on " + type_name(call.getArgOperand(0)->getType()));
    FlatInst& fi = emit(call, kOpOverflow, {operand(call.getArgOperand(0)), operand(call.getArgOperand(1))});
    fi.aux = id == Intrinsic::uadd_with_overflow ? kOvfUadd
        : id == Intrinsic::sadd_with_overflow    ? kOvfSadd
        : id == Intrinsic::usub_with_overflow    ? kOvfUsub
        : id == Intrinsic::ssub_with_overflow    ? kOvfSsub
        : id == Intrinsic::umul_with_overflow    ? kOvfUmul
                                                 : kOvfSmul;
    fi.imm = static_cast<int64_t>(dl_.getStructLayout(cast<StructType>(call.getType()))->getElementOffset(1));
    if (fi.slot_size < 8) fi.slot_size = 8;
  }

  // Bit counts, byte swap, abs, min and max, saturating add and subtract, three-way
  // compares and funnel shifts of one integer of 8 to 64 bits: kOpBitOp.
  void export_bit_intrinsic(const CallInst& call, const Function* callee, Intrinsic::ID id) {
    static const std::unordered_map<unsigned, uint8_t> kKinds = {
        {Intrinsic::ctpop, kBitCtpop},      {Intrinsic::ctlz, kBitCtlz},        {Intrinsic::cttz, kBitCttz},
        {Intrinsic::bswap, kBitBswap},      {Intrinsic::abs, kBitAbs},          {Intrinsic::umin, kBitUmin},
        {Intrinsic::umax, kBitUmax},        {Intrinsic::smin, kBitSmin},        {Intrinsic::smax, kBitSmax},
        {Intrinsic::uadd_sat, kBitUaddSat}, {Intrinsic::usub_sat, kBitUsubSat}, {Intrinsic::ucmp, kBitUcmp},
        {Intrinsic::scmp, kBitScmp},        {Intrinsic::sadd_sat, kBitSaddSat}, {Intrinsic::ssub_sat, kBitSsubSat},
        {Intrinsic::fshl, kBitFshl},        {Intrinsic::fshr, kBitFshr},        {Intrinsic::bitreverse, kBitBitreverse}};
    uint8_t kind = kKinds.at(id);
    Type* t = call.getArgOperand(0)->getType();
    if (!t->isIntegerTy() || !bit_op_width(kind, scalar_width(t))) reason("intrinsic " + callee->getName().str());
    FlatInst& fi = emit(call, kOpBitOp, {operand(call.getArgOperand(0))});
    fi.aux = kind;
    size_t at = insts_.size() - 1;
    for (unsigned a = 1; a < bit_op_operands(kind); ++a) add_operand(insts_[at], operand(call.getArgOperand(a)));
  }

  // fabs, sqrt, minnum and maxnum of float or double: kOpFloat.
  void export_float_intrinsic(const CallInst& call, const Function* callee, Intrinsic::ID id) {
    if (!is_float_or_double(call.getType())) reason("intrinsic " + callee->getName().str());
    const uint8_t kind = id == Intrinsic::fabs ? kFloatAbs
                         : id == Intrinsic::sqrt ? kFloatSqrt
                         : id == Intrinsic::minnum ? kFloatMin
                                                   : kFloatMax;
    FlatInst& fi = float_kind_is_binary(kind)
                       ? emit(call, kOpFloat, {operand(call.getArgOperand(0)), operand(call.getArgOperand(1))})
                       : emit(call, kOpFloat, {operand(call.getArgOperand(0))});
    fi.aux = kind;
  }

  // fmuladd of floats or doubles, unfused (kFloatMulAdd) where the target cannot fuse it.
  void export_fmuladd(const CallInst& call, const Function* callee) {
    if (!is_float_or_double(call.getType())) reason("intrinsic " + callee->getName().str());
    if (may_fuse_) reason("intrinsic " + callee->getName().str() + " on a target that may fuse it");
    FlatInst& fi =
        emit(call, kOpFloat,
             {operand(call.getArgOperand(0)), operand(call.getArgOperand(1)), operand(call.getArgOperand(2))});
    fi.aux = kFloatMulAdd;
  }

  // fptosi.sat and fptoui.sat from a float or double to an integer of at most 64 bits.
  void export_saturating_conversion(const CallInst& call, const Function* callee, bool is_signed) {
    Type* from = call.getArgOperand(0)->getType();
    if (!is_float_or_double(from) || !call.getType()->isIntegerTy() || !scalar_width(call.getType()))
      reason("intrinsic " + callee->getName().str());
    FlatInst& fi = emit(call, kOpFloat, {operand(call.getArgOperand(0))});
    fi.aux = is_signed ? kFloatToSignedSat : kFloatToUnsignedSat;
  }

  // A floating-point intrinsic LLVM calls libm for at -O0 (bc::libm_function), or
  // frem (fmod): the same call, float and double arguments in xmm registers.
  void export_libm_call(const Instruction& inst, const std::string& refusal, const std::string& base) {
    Type* t = inst.getType();
    if (!is_float_or_double(t)) return refuse(inst, refusal);
    const size_t at = emit_library_call(inst, bc::libm_function(base, t->isDoubleTy()));
    insts_[at].aux |= kCallRetFloat;
    const unsigned args = isa<CallInst>(inst) ? cast<CallInst>(inst).arg_size() : inst.getNumOperands();
    for (unsigned a = 0; a < args; ++a) {
      const Value* v = inst.getOperand(a);
      FlatOperand o = operand(v);
      if (is_float_or_double(v->getType())) o.flags |= kOperandFloat;
      add_operand(insts_[at], o);
    }
  }

  // llvm.threadlocal.address of a thread-local variable: its address in the running
  // thread (kOpTlsAddress, through __tls_get_addr). Anything else (an alias) is not stamp's.
  void export_tls_address(const CallInst& call, const Function* callee) {
    auto* var = dyn_cast<GlobalVariable>(call.getArgOperand(0));
    if (!var || !var->isThreadLocal()) return refuse(call, "intrinsic " + callee->getName().str());
    FlatOperand address{}, get_addr{};
    address.kind = get_addr.kind = kOperandSymbol;
    address.width = get_addr.width = 64;
    address.index = symbol(var);
    get_addr.index = library_symbol("__tls_get_addr");
    emit(call, kOpTlsAddress, {address, get_addr});
  }

  // A kOpCall of the C library or compiler-rt function `name` for `inst` (its operands
  // still to add); its index in insts_.
  size_t emit_library_call(const Instruction& inst, const char* name) {
    FlatOperand callee_op{};
    callee_op.kind = kOperandSymbol;
    callee_op.width = 64;
    callee_op.index = library_symbol(name);
    emit(inst, kOpCall, {callee_op});
    return insts_.size() - 1;
  }

  // memcpy and friends: the C library function of the same name (a module
  // declaration when there is one, else an undefined symbol by name).
  uint32_t library_symbol(const char* name) {
    if (const Function* fn = m_.getFunction(name)) return symbol(fn);
    auto [it, inserted] = library_index_.emplace(name, static_cast<uint32_t>(export_.symbol_values.size()));
    if (inserted) {
      export_.symbol_values.push_back(nullptr);
      export_.fixed_names.resize(export_.symbol_values.size());
      export_.fixed_names.back() = name;
    }
    return it->second;
  }

  void export_gep(const GetElementPtrInst& gep) {
    if (gep.getType()->isVectorTy()) return refuse(gep, "vector getelementptr");
    FlatInst& fi = emit(gep, kOpGep, {operand(gep.getPointerOperand())});
    size_t at = insts_.size() - 1;
    (void)fi;
    int64_t constant = 0;
    for (auto it = gep_type_begin(&gep), end = gep_type_end(&gep); it != end; ++it) {
      const Value* idx = it.getOperand();
      if (StructType* st = it.getStructTypeOrNull()) {
        constant += static_cast<int64_t>(
            dl_.getStructLayout(st)->getElementOffset(static_cast<unsigned>(cast<ConstantInt>(idx)->getZExtValue())));
        continue;
      }
      int64_t stride = static_cast<int64_t>(it.getSequentialElementStride(dl_));
      if (auto* c = dyn_cast<ConstantInt>(idx)) {
        int64_t term = 0;
        if (c->getBitWidth() > 64) reason("getelementptr index wider than 64 bits");
        // Checked: a wrapped product or sum could look small and pass the 2 GiB test.
        else if (__builtin_mul_overflow(c->getSExtValue(), stride, &term) ||
                 __builtin_add_overflow(constant, term, &constant))
          reason("getelementptr offset beyond 2 GiB");
        continue;
      }
      if (stride > INT32_MAX) reason("getelementptr stride beyond 2 GiB");
      FlatOperand o = operand(idx);
      o.imm = stride;
      add_operand(insts_[at], o);
    }
    if (constant > INT32_MAX || constant < INT32_MIN) reason("getelementptr offset beyond 2 GiB");
    insts_[at].imm = constant;
  }

  uint64_t aggregate_offset(Type* t, ArrayRef<unsigned> indices, Type** field) {
    uint64_t offset = 0;
    for (unsigned idx : indices) {
      if (auto* st = dyn_cast<StructType>(t)) {
        offset += dl_.getStructLayout(st)->getElementOffset(idx);
        t = st->getElementType(idx);
      } else {
        auto* at = cast<ArrayType>(t);
        t = at->getElementType();
        offset += dl_.getTypeAllocSize(t) * idx;
      }
    }
    *field = t;
    return offset;
  }

  // One instruction: the check every operation shares (vectors), then the function
  // of its operation, which finds the reasons against it and emits its flat
  // instruction (a nop when it cannot). One function per operation or family, as in
  // TPDE; the reasons come in the order the checks run.
  void export_inst(const Instruction& inst) {
    if (computes_on_vectors(inst)) return export_vector(inst);
    check_vector_use(inst);
    if (touches_i128(inst)) return export_wide(inst);
    switch (inst.getOpcode()) {
      case Instruction::Alloca:
        return export_alloca(cast<AllocaInst>(inst));
      case Instruction::Load:
        return export_load(cast<LoadInst>(inst));
      case Instruction::Store:
        return export_store(cast<StoreInst>(inst));
      case Instruction::GetElementPtr:
        return export_gep(cast<GetElementPtrInst>(inst));
      case Instruction::Add:
      case Instruction::Sub:
      case Instruction::Mul:
      case Instruction::And:
      case Instruction::Or:
      case Instruction::Xor:
      case Instruction::Shl:
      case Instruction::LShr:
      case Instruction::AShr:
      case Instruction::UDiv:
      case Instruction::SDiv:
      case Instruction::URem:
      case Instruction::SRem:
        return export_binary(inst);
      case Instruction::ICmp:
        return export_icmp(cast<ICmpInst>(inst));
      case Instruction::FAdd:
      case Instruction::FSub:
      case Instruction::FMul:
      case Instruction::FDiv:
      case Instruction::FNeg:
      case Instruction::FCmp:
      case Instruction::FPExt:
      case Instruction::FPTrunc:
      case Instruction::SIToFP:
      case Instruction::UIToFP:
      case Instruction::FPToSI:
      case Instruction::FPToUI:
        return export_float(inst);
      case Instruction::FRem:
        return export_libm_call(inst, "instruction frem", "frem");
      case Instruction::Select:
        return export_select(inst);
      case Instruction::ZExt:
      case Instruction::IntToPtr:
      case Instruction::Freeze:
      case Instruction::BitCast:
      case Instruction::Trunc:
      case Instruction::PtrToInt:
      case Instruction::SExt:
        return export_cast(inst);
      case Instruction::ExtractValue:
        return export_extract_value(cast<ExtractValueInst>(inst));
      case Instruction::InsertValue:
        return export_insert_value(cast<InsertValueInst>(inst));
      case Instruction::PHI:
        return export_phi(cast<PHINode>(inst));
      case Instruction::Call:
      case Instruction::Invoke:
        return export_call(cast<CallBase>(inst));
      case Instruction::Br:
        return export_br(cast<BranchInst>(inst));
      case Instruction::Switch:
        return export_switch(cast<SwitchInst>(inst));
      case Instruction::Ret:
        return export_ret(cast<ReturnInst>(inst));
      case Instruction::Unreachable: {
        // -O0 code from rustc traps on unreachable except right after a call that does
        // not return (TrapUnreachable with NoTrapAfterNoreturn); stamp does the same.
        FlatInst& fi = emit(inst, kOpUnreachable);
        const auto* call = dyn_cast_or_null<CallInst>(inst.getPrevNode());
        if (call && call->doesNotReturn()) fi.aux = kUnreachableAfterNoreturn;
        return;
      }
      case Instruction::LandingPad:
        return export_landing_pad(cast<LandingPadInst>(inst));
      case Instruction::Resume:
        return export_resume(cast<ResumeInst>(inst));
      case Instruction::CleanupPad:
      case Instruction::CatchPad:
      case Instruction::CatchSwitch:
      case Instruction::CleanupRet:
      case Instruction::CatchRet:
        return refuse(inst, "exceptions: " + std::string(inst.getOpcodeName()));
      case Instruction::AtomicRMW:
        return export_atomic_rmw(cast<AtomicRMWInst>(inst));
      case Instruction::AtomicCmpXchg:
        return export_cmpxchg(cast<AtomicCmpXchgInst>(inst));
      case Instruction::Fence:
        return export_fence(cast<FenceInst>(inst));
      default:
        return refuse(inst, std::string("instruction ") + inst.getOpcodeName());
    }
  }

  // --- 128-bit integers: the operations stamp takes on them; every other one that
  // has an i128 result or operand is refused (lib/stamp/direct_export.cpp mirrors it).

  // A call's arguments and result (not its bundles' operands); any other
  // instruction's operands and result; never an alloca's (its count is a number).
  static bool touches_i128(const Instruction& inst) {
    if (isa<AllocaInst>(inst)) return false;
    if (inst.getType()->isIntegerTy(kWideBits)) return true;
    if (auto* call = dyn_cast<CallBase>(&inst)) {
      for (const Value* a : call->args())
        if (a->getType()->isIntegerTy(kWideBits)) return true;
      return false;
    }
    for (const Value* op : inst.operands())
      if (op->getType()->isIntegerTy(kWideBits)) return true;
    return false;
  }

  void export_wide(const Instruction& inst) {
    const std::string refused = std::string("i128 ") + inst.getOpcodeName();
    Type* t = inst.getType();
    bool wide = t->isIntegerTy(kWideBits);
    // The source type of a cast (only casts look at it).
    auto source = [&] { return inst.getOperand(0)->getType(); };
    switch (inst.getOpcode()) {
      case Instruction::Load:
        if (cast<LoadInst>(inst).isAtomic()) return refuse(inst, "i128 atomic load");
        export_load(cast<LoadInst>(inst));
        insts_.back().width = kWideBits;
        return;
      case Instruction::Store:
        if (cast<StoreInst>(inst).isAtomic()) return refuse(inst, "i128 atomic store");
        return export_store(cast<StoreInst>(inst));
      case Instruction::ICmp:
        export_wide_op(inst, kWideIcmp, 2).aux32 = icmp_predicate(cast<ICmpInst>(inst));
        return;
      case Instruction::Trunc:
        if (!source()->isIntegerTy(kWideBits) || !t->isIntegerTy() || !scalar_width(t)) return refuse(inst, refused);
        export_wide_op(inst, kWideTrunc, 1);
        return;
      case Instruction::ZExt:
      case Instruction::SExt:
        if (!wide || !source()->isIntegerTy() || !scalar_width(source())) return refuse(inst, refused);
        export_wide_op(inst, inst.getOpcode() == Instruction::ZExt ? kWideZext : kWideSext, 1).aux32 =
            scalar_width(source());
        return;
      case Instruction::BitCast:
      case Instruction::Freeze:
        if (!wide || !source()->isIntegerTy(kWideBits)) return refuse(inst, refused);
        export_wide_op(inst, kWideCopy, 1);
        return;
      case Instruction::Select:
        if (!wide) return refuse(inst, refused);
        emit(inst, kOpSelect, {operand(inst.getOperand(0)), operand(inst.getOperand(1)), operand(inst.getOperand(2))})
            .width = kWideBits;
        return;
      case Instruction::ExtractValue:  // an i128 field: 16 bytes of the aggregate's slot
        if (!wide) return refuse(inst, refused);
        export_extract_value(cast<ExtractValueInst>(inst));
        insts_.back().width = kWideBits;
        return;
      case Instruction::InsertValue:
        return export_insert_value(cast<InsertValueInst>(inst));
      case Instruction::PHI:
        return export_phi(cast<PHINode>(inst));
      case Instruction::Switch:
        return export_switch(cast<SwitchInst>(inst));
      case Instruction::Ret:
        return export_ret(cast<ReturnInst>(inst));
      case Instruction::Call:
      case Instruction::Invoke:
        return export_wide_call(cast<CallBase>(inst));
      case Instruction::UDiv:
      case Instruction::SDiv:
      case Instruction::URem:
      case Instruction::SRem: {
        const unsigned op = inst.getOpcode();
        return export_wide_division(inst, bc::wide_division_function(op == Instruction::SDiv || op == Instruction::SRem,
                                                                      op == Instruction::URem || op == Instruction::SRem));
      }
      case Instruction::FPToSI:
      case Instruction::FPToUI:
      case Instruction::SIToFP:
      case Instruction::UIToFP:
        return export_wide_conversion(inst);
      default:
        break;
    }
    static const std::unordered_map<unsigned, uint8_t> kBinary = {
        {Instruction::Add, kWideAdd}, {Instruction::Sub, kWideSub},   {Instruction::And, kWideAnd},
        {Instruction::Or, kWideOr},   {Instruction::Xor, kWideXor},   {Instruction::Shl, kWideShl},
        {Instruction::LShr, kWideLshr}, {Instruction::AShr, kWideAshr}, {Instruction::Mul, kWideMul}};
    auto it = kBinary.find(inst.getOpcode());
    if (it == kBinary.end()) return refuse(inst, refused);
    export_wide_op(inst, it->second, 2);
  }

  // i128 division and remainder: a call of compiler-rt's function, as llvm -O0 makes
  // it (both operands and the result in register pairs).
  void export_wide_division(const Instruction& inst, const char* function) {
    if (!inst.getType()->isIntegerTy(kWideBits)) return refuse(inst, std::string("i128 ") + inst.getOpcodeName());
    const size_t at = emit_library_call(inst, function);
    for (unsigned a = 0; a < 2; ++a) add_operand(insts_[at], operand(inst.getOperand(a)));
    insts_[at].width = kWideBits;
  }

  // Conversions between i128 and float or double: compiler-rt's calls, as llvm -O0
  // makes them (the float in xmm0, the i128 in a register pair).
  void export_wide_conversion(const Instruction& inst) {
    const unsigned op = inst.getOpcode();
    const bool to_float = op == Instruction::SIToFP || op == Instruction::UIToFP;
    Type* f = to_float ? inst.getType() : inst.getOperand(0)->getType();
    Type* i = to_float ? inst.getOperand(0)->getType() : inst.getType();
    if (!is_float_or_double(f) || !i->isIntegerTy(kWideBits))
      return refuse(inst, std::string("i128 ") + inst.getOpcodeName());
    const size_t at = emit_library_call(inst, bc::wide_conversion_function(
        to_float, op == Instruction::SIToFP || op == Instruction::FPToSI, f->isDoubleTy()));
    FlatOperand a = operand(inst.getOperand(0));
    if (!to_float) a.flags |= kOperandFloat;
    add_operand(insts_[at], a);
    if (to_float) insts_[at].aux |= kCallRetFloat;
    else insts_[at].width = kWideBits;
  }

  // A kOpWide of `count` operands; its result is 128 bits but for icmp and trunc.
  FlatInst& export_wide_op(const Instruction& inst, uint8_t kind, unsigned count) {
    FlatInst& fi = count == 1 ? emit(inst, kOpWide, {operand(inst.getOperand(0))})
                              : emit(inst, kOpWide, {operand(inst.getOperand(0)), operand(inst.getOperand(1))});
    fi.aux = kind;
    if (inst.getType()->isIntegerTy(kWideBits)) fi.width = kWideBits;
    return fi;
  }

  // A call with i128 arguments (two registers, or 16 aligned bytes on the stack) or
  // an i128 result (in rax and rdx) is an ordinary call.
  void export_wide_call(const CallBase& call) {
    if (call.isInlineAsm()) return refuse(call, "i128 inline asm");
    if (const Function* callee = call.getCalledFunction(); callee && callee->isIntrinsic())
      return export_wide_intrinsic(call, callee->getIntrinsicID());
    export_call(call);
  }

  // The *.with.overflow intrinsics, three-way compares, ctpop and bitreverse on i128
  // operands; every other intrinsic with an i128 is refused.
  void export_wide_intrinsic(const CallBase& call, Intrinsic::ID id) {
    if (id == Intrinsic::fptosi_sat || id == Intrinsic::fptoui_sat)
      return export_wide_saturating_conversion(call, id == Intrinsic::fptosi_sat);
    const int kind = id == Intrinsic::uadd_with_overflow   ? kWideUaddOverflow
                     : id == Intrinsic::sadd_with_overflow ? kWideSaddOverflow
                     : id == Intrinsic::usub_with_overflow ? kWideUsubOverflow
                     : id == Intrinsic::ssub_with_overflow ? kWideSsubOverflow
                     : id == Intrinsic::ucmp               ? kWideUcmp
                     : id == Intrinsic::scmp               ? kWideScmp
                     : id == Intrinsic::ctpop              ? kWideCtpop
                     : id == Intrinsic::bitreverse         ? kWideBitreverse
                     : id == Intrinsic::umul_with_overflow ? kWideUmulOverflow
                     : id == Intrinsic::abs                ? kWideAbs
                     : id == Intrinsic::umin               ? kWideUmin
                     : id == Intrinsic::umax               ? kWideUmax
                     : id == Intrinsic::smin               ? kWideSmin
                     : id == Intrinsic::smax               ? kWideSmax
                                                           : -1;
    const bool three_way = kind == kWideUcmp || kind == kWideScmp;
    Type* r = call.getType();
    if (kind < 0 || !isa<CallInst>(call) || !call.getArgOperand(0)->getType()->isIntegerTy(kWideBits) ||
        (three_way && !(r->isIntegerTy() && scalar_width(r) >= 8)))
      return refuse(call, "i128 intrinsic");
    FlatInst& fi = export_wide_op(call, static_cast<uint8_t>(kind), wide_operands(static_cast<uint32_t>(kind)));
    // {i128, i1}: the flag at the second field's offset.
    if (is_wide_overflow(kind))
      fi.imm = static_cast<int64_t>(dl_.getStructLayout(cast<StructType>(r))->getElementOffset(1));
  }

  // fptosi.sat / fptoui.sat to i128: compiler-rt's conversion of the float or double,
  // clamped (kWideFromFloatSat).
  void export_wide_saturating_conversion(const CallBase& call, bool is_signed) {
    Type* f = call.getArgOperand(0)->getType();
    if (!isa<CallInst>(call) || !is_float_or_double(f) || !call.getType()->isIntegerTy(kWideBits))
      return refuse(call, "i128 intrinsic");
    FlatOperand x = operand(call.getArgOperand(0));
    FlatOperand convert{};
    convert.kind = kOperandSymbol;
    convert.width = 64;
    convert.index = library_symbol(bc::wide_conversion_function(false, is_signed, f->isDoubleTy()));
    FlatInst& fi = emit(call, kOpWide, {x, convert});
    fi.aux = kWideFromFloatSat;
    fi.width = kWideBits;
    fi.aux32 = scalar_width(f);
    fi.imm = is_signed;
  }

  // An operation stamp has no template for: the reason, and a nop in its place.
  void refuse(const Instruction& inst, const std::string& why) {
    reason(why);
    emit(inst, kOpNop);
  }

  // --- Vectors: the lane-by-lane operations of kOpVector (lib/stamp/direct_export.cpp
  // mirrors these). Lanes are i1 (masks) or 8- to 64-bit integers, at most
  // kMaxVectorLanes of them; floating-point lanes fall back.

  // The lane width of a vector type kOpVector computes on, or 0.
  static uint32_t vector_lane_width(Type* t) {
    auto* vt = dyn_cast<FixedVectorType>(t);
    if (!vt || vt->getNumElements() == 0 || vt->getNumElements() > kMaxVectorLanes) return 0;
    Type* e = vt->getElementType();
    return e->isIntegerTy() && is_vector_lane_width(e->getIntegerBitWidth()) ? e->getIntegerBitWidth() : 0;
  }
  static uint32_t vector_lanes(Type* t) { return cast<FixedVectorType>(t)->getNumElements(); }

  // The instructions export_vector takes: the integer operations, compares, casts,
  // element operations and reductions it has kinds for, with a vector result or
  // operand. Every other use of a vector (loads, stores and phis move them) goes the
  // scalar way, whose checks refuse it.
  static bool computes_on_vectors(const Instruction& inst) {
    if (auto* call = dyn_cast<CallInst>(&inst)) return reduction_kind(*call) != 0 || byte_shuffle(*call);
    switch (inst.getOpcode()) {
      case Instruction::Add: case Instruction::Sub: case Instruction::Mul: case Instruction::Shl:
      case Instruction::LShr: case Instruction::AShr: case Instruction::And: case Instruction::Or:
      case Instruction::Xor: case Instruction::ICmp: case Instruction::Trunc: case Instruction::ZExt:
      case Instruction::SExt: case Instruction::BitCast: case Instruction::ExtractElement:
      case Instruction::InsertElement: case Instruction::ShuffleVector:
        break;
      default:
        return false;
    }
    if (inst.getType()->isVectorTy()) return true;
    for (const Value* op : inst.operands())
      if (op->getType()->isVectorTy()) return true;
    return false;
  }
  // The StampOp a llvm.vector.reduce.* call folds with, or 0.
  static uint16_t reduction_kind(const CallInst& call) {
    const Function* f = call.getCalledFunction();
    if (!f) return 0;
    switch (f->getIntrinsicID()) {
      case Intrinsic::vector_reduce_add: return kOpAdd;
      case Intrinsic::vector_reduce_mul: return kOpMul;
      case Intrinsic::vector_reduce_and: return kOpAnd;
      case Intrinsic::vector_reduce_or: return kOpOr;
      case Intrinsic::vector_reduce_xor: return kOpXor;
      default: return 0;
    }
  }

  // A call of pshufb (llvm.x86.ssse3.pshuf.b.128 or llvm.x86.avx2.pshuf.b).
  static bool byte_shuffle(const CallInst& call) {
    const Function* f = call.getCalledFunction();
    return f && (f->getIntrinsicID() == Intrinsic::x86_ssse3_pshuf_b_128 ||
                 f->getIntrinsicID() == Intrinsic::x86_avx2_pshuf_b);
  }

  // A vector operand: a value, or zero, undef or poison (every lane 0). Constants with
  // other lanes were turned into loads (materialize_aggregate_constants), but for masks.
  FlatOperand vector_operand(const Value* v) {
    FlatOperand op{};
    if (auto* inst = dyn_cast<Instruction>(v)) {
      op.kind = kOperandValue;
      op.index = inst_index_.at(inst);
    } else if (isa<UndefValue>(v)) {
      op.kind = kOperandUndef;
    } else if (isa<ConstantAggregateZero>(v)) {
      op.kind = kOperandZero;
    } else if (auto* arg = dyn_cast<Argument>(v); !arg || !vector_arg_operand(*arg, op)) {
      reason(arg ? "vector argument" : "vector constant of " + type_name(v->getType()));
    }
    return op;
  }
  FlatInst& emit_vector(const Instruction& inst, uint8_t kind, std::initializer_list<FlatOperand> ops) {
    FlatInst& fi = emit(inst, kOpVector, ops);
    fi.aux = kind;
    if (uint32_t w = vector_lane_width(inst.getType())) {
      fi.width = static_cast<uint8_t>(w);
      fi.aux32 = vector_lanes(inst.getType());
      fi.slot_size = round8(fi.aux32 * vector_lane_bytes(w));
    }
    return fi;
  }

  void export_vector(const Instruction& inst) {
    Type* t = inst.getType();
    const uint32_t w = vector_lane_width(t);
    auto refuse_vector = [&](const std::string& why) {
      reason("vectors");
      refuse(inst, why);
    };
    if (auto* call = dyn_cast<CallInst>(&inst); call && byte_shuffle(*call)) {  // <N x i8> table, selectors
      const uint32_t lanes = w == 8 ? vector_lanes(t) : 0;
      if (call->arg_size() != 2 || (lanes != 16 && lanes != 32) || call->getArgOperand(0)->getType() != t ||
          call->getArgOperand(1)->getType() != t)
        return refuse_vector("byte shuffle of " + type_name(t));
      FlatOperand table = vector_operand(call->getArgOperand(0));
      FlatOperand selectors = vector_operand(call->getArgOperand(1));
      emit_vector(inst, kVecShuffleBytes, {table, selectors});
      return;
    }
    if (auto* call = dyn_cast<CallInst>(&inst)) {  // llvm.vector.reduce.*
      Type* from = call->getArgOperand(0)->getType();
      const uint32_t lane = vector_lane_width(from);
      if (!lane || lane != scalar_width(t)) return refuse_vector("reduction of " + type_name(from));
      FlatInst& fi = emit_vector(inst, kVecReduce, {vector_operand(call->getArgOperand(0))});
      fi.aux32 = vector_lanes(from);
      fi.imm = reduction_kind(*call);
      return;
    }
    switch (inst.getOpcode()) {
      case Instruction::Add:
      case Instruction::Sub:
      case Instruction::Mul:
      case Instruction::Shl:
      case Instruction::LShr:
      case Instruction::AShr:
      case Instruction::And:
      case Instruction::Or:
      case Instruction::Xor: {
        static const std::unordered_map<unsigned, uint16_t> kOps = {
            {Instruction::Add, kOpAdd}, {Instruction::Sub, kOpSub},   {Instruction::Mul, kOpMul},
            {Instruction::And, kOpAnd}, {Instruction::Or, kOpOr},     {Instruction::Xor, kOpXor},
            {Instruction::Shl, kOpShl}, {Instruction::LShr, kOpLshr}, {Instruction::AShr, kOpAshr}};
        const uint16_t op = kOps.at(inst.getOpcode());
        if (!w || (w == 1 && op != kOpAnd && op != kOpOr && op != kOpXor))
          return refuse_vector("arithmetic on " + type_name(t));
        FlatInst& fi =
            emit_vector(inst, kVecBinary, {vector_operand(inst.getOperand(0)), vector_operand(inst.getOperand(1))});
        fi.imm = op;
        return;
      }
      case Instruction::ICmp: {
        const uint32_t from = vector_lane_width(inst.getOperand(0)->getType());
        if (!w || !from) return refuse_vector("compare of " + type_name(inst.getOperand(0)->getType()));
        FlatInst& fi =
            emit_vector(inst, kVecIcmp, {vector_operand(inst.getOperand(0)), vector_operand(inst.getOperand(1))});
        fi.imm = icmp_predicate(cast<ICmpInst>(inst)) | (from << 8);
        return;
      }
      case Instruction::Trunc:
      case Instruction::ZExt:
      case Instruction::SExt: {
        const uint32_t from = vector_lane_width(inst.getOperand(0)->getType());
        if (!w || !from) return refuse_vector(std::string(inst.getOpcodeName()) + " of " + type_name(t));
        const uint8_t kind = inst.getOpcode() == Instruction::Trunc  ? kVecTrunc
                             : inst.getOpcode() == Instruction::ZExt ? kVecZext
                                                                     : kVecSext;
        FlatInst& fi = emit_vector(inst, kind, {vector_operand(inst.getOperand(0))});
        fi.imm = from;
        return;
      }
      case Instruction::BitCast:
        return export_vector_bitcast(inst);
      case Instruction::ExtractElement: {
        Type* from = inst.getOperand(0)->getType();
        auto* index = dyn_cast<ConstantInt>(inst.getOperand(1));
        const uint32_t lane = vector_lane_width(from);
        if (!lane || lane != scalar_width(t) || !index || index->getZExtValue() >= vector_lanes(from))
          return refuse_vector("instruction extractelement");
        FlatInst& fi = emit_vector(inst, kVecExtract, {vector_operand(inst.getOperand(0))});
        fi.aux32 = vector_lanes(from);
        fi.imm = static_cast<int64_t>(index->getZExtValue());
        return;
      }
      case Instruction::InsertElement: {
        auto* index = dyn_cast<ConstantInt>(inst.getOperand(2));
        if (!w || !index || index->getZExtValue() >= vector_lanes(t)) return refuse_vector("instruction insertelement");
        FlatInst& fi = emit_vector(inst, kVecInsert, {vector_operand(inst.getOperand(0)), operand(inst.getOperand(1))});
        fi.imm = static_cast<int64_t>(index->getZExtValue());
        return;
      }
      case Instruction::ShuffleVector: {
        const auto& shuffle = cast<ShuffleVectorInst>(inst);
        if (!w || vector_lane_width(shuffle.getOperand(0)->getType()) != w)
          return refuse_vector("instruction shufflevector");
        FlatInst& fi =
            emit_vector(inst, kVecShuffle, {vector_operand(shuffle.getOperand(0)), vector_operand(shuffle.getOperand(1))});
        fi.imm = vector_lanes(shuffle.getOperand(0)->getType());
        for (int pick : shuffle.getShuffleMask()) {
          FlatOperand lane{};
          lane.kind = kOperandConst;
          lane.width = 64;
          lane.imm = pick < 0 ? -1 : pick;
          add_operand(insts_.back(), lane);
        }
        return;
      }
      default:  // not taken by computes_on_vectors
        return refuse_vector(std::string("instruction ") + inst.getOpcodeName());
    }
  }

  // A bitcast from or to a vector: a mask to the integer of its lanes, or a vector of
  // integer lanes to one of the same size (its bytes, as an aggregate copy).
  void export_vector_bitcast(const Instruction& inst) {
    Type* from = inst.getOperand(0)->getType();
    Type* t = inst.getType();
    const uint32_t lane = vector_lane_width(from);
    if (lane == 1 && scalar_width(t) == vector_lanes(from) && t->isIntegerTy()) {
      FlatInst& fi = emit_vector(inst, kVecMaskToInt, {vector_operand(inst.getOperand(0))});
      fi.aux32 = vector_lanes(from);
      return;
    }
    const uint32_t to = vector_lane_width(t);
    if (lane >= 8 && to >= 8 && dl_.getTypeAllocSize(from) == dl_.getTypeAllocSize(t)) {
      FlatInst& fi = emit(inst, kOpExtract, {vector_operand(inst.getOperand(0))});
      fi.aux32 = static_cast<uint32_t>(dl_.getTypeAllocSize(t));
      return;
    }
    reason("vectors");
    refuse(inst, "bitcast of " + type_name(from));
  }

  // Vector values may be loaded, stored and carried through phis as bytes; every
  // other use of them that export_vector does not take (calls, selects) is refused.
  void check_vector_use(const Instruction& inst) {
    bool moves_only = isa<LoadInst>(inst) || isa<StoreInst>(inst) || isa<PHINode>(inst);
    if (moves_only) return;
    // A call of a function (not an intrinsic, not inline asm): export_call takes or
    // refuses each vector argument itself.
    if (auto* call = dyn_cast<CallBase>(&inst);
        call && !call->isInlineAsm() && !(call->getCalledFunction() && call->getCalledFunction()->isIntrinsic())) {
      Type* t = inst.getType();
      if (t->isVectorTy() && !vector_arg_bytes(vector_lane_width(t), vector_lanes_or_0(t), avx_)) reason("vectors");
      return;
    }
    if (isa<ReturnInst>(inst) && (fn_flags_ & (kFnRetVector | kFnRetVector256))) return;  // in xmm0 or ymm0
    for (const Value* op : inst.operands())
      if (op->getType()->isVectorTy()) reason("vectors");
    if (inst.getType()->isVectorTy()) reason("vectors");
  }

  // --- Memory: alloca, load, store (getelementptr is export_gep above).

  void export_alloca(const AllocaInst& a) {
    auto* count = dyn_cast<ConstantInt>(a.getArraySize());
    if (!a.isStaticAlloca() || !count) reason("dynamic alloca");
    if (a.getAlign().value() > 4096) reason("alloca aligned beyond 4096 bytes");
    FlatInst& fi = emit(a, kOpAlloca);
    // A count beyond 2^30 (or any count wider than 64 bits) is too large anyway;
    // the product below must not overflow into something small.
    uint64_t elems = !count ? 1 : count->getValue().getActiveBits() <= 31 ? count->getZExtValue() : (1ull << 31);
    uint64_t elem_size = dl_.getTypeAllocSize(a.getAllocatedType());
    uint64_t size = elem_size > (1ull << 31) ? (1ull << 31) : elem_size * elems;
    if (size > (1u << 30)) reason("alloca larger than 1 GiB");
    fi.aux32 = static_cast<uint32_t>(size);
    fi.imm = static_cast<int64_t>(a.getAlign().value());
  }

  void export_load(const LoadInst& l) {
    if (l.isAtomic()) check_atomic_access(l.getType(), l.getAlign().value());
    if (l.getPointerAddressSpace() != 0) reason("address spaces");
    FlatInst& fi = emit(l, kOpLoad, {operand(l.getPointerOperand())});
    if (!fi.width) fi.aux32 = static_cast<uint32_t>(dl_.getTypeStoreSize(l.getType()));
  }

  void export_store(const StoreInst& s) {
    if (s.isAtomic()) check_atomic_access(s.getValueOperand()->getType(), s.getAlign().value());
    if (s.getPointerAddressSpace() != 0) reason("address spaces");
    FlatInst& fi = emit(s, kOpStore, {operand(s.getValueOperand()), operand(s.getPointerOperand())});
    if (s.isAtomic() && s.getOrdering() == AtomicOrdering::SequentiallyConsistent &&
        s.getSyncScopeID() != SyncScope::SingleThread)
      fi.aux = kStoreSeqCst;
    if (!scalar_width(s.getValueOperand()->getType()))
      fi.aux32 = static_cast<uint32_t>(dl_.getTypeStoreSize(s.getValueOperand()->getType()));
  }

  // --- Integer arithmetic, compares, selects and casts.

  void export_binary(const Instruction& inst) {
    static const std::unordered_map<unsigned, uint16_t> kOps = {
        {Instruction::Add, kOpAdd},   {Instruction::Sub, kOpSub},   {Instruction::Mul, kOpMul},
        {Instruction::And, kOpAnd},   {Instruction::Or, kOpOr},     {Instruction::Xor, kOpXor},
        {Instruction::Shl, kOpShl},   {Instruction::LShr, kOpLshr}, {Instruction::AShr, kOpAshr},
        {Instruction::UDiv, kOpUdiv}, {Instruction::SDiv, kOpSdiv}, {Instruction::URem, kOpUrem},
        {Instruction::SRem, kOpSrem}};
    if (!inst.getType()->isIntegerTy()) reason("arithmetic on " + type_name(inst.getType()));
    emit(inst, kOps.at(inst.getOpcode()), {operand(inst.getOperand(0)), operand(inst.getOperand(1))});
  }

  static uint8_t icmp_predicate(const ICmpInst& c) {
    static const uint8_t kPred[] = {kPredEq,  kPredNe,  kPredUgt, kPredUge, kPredUlt,
                                    kPredUle, kPredSgt, kPredSge, kPredSlt, kPredSle};
    return kPred[c.getPredicate() - CmpInst::FIRST_ICMP_PREDICATE];
  }
  void export_icmp(const ICmpInst& c) {
    FlatInst& fi = emit(c, kOpIcmp, {operand(c.getOperand(0)), operand(c.getOperand(1))});
    fi.aux = icmp_predicate(c);
  }

  // --- Floating point: arithmetic, compares and conversions on float and double
  // (kOpFloat); half, fp128, x86_fp80 and integers wider than 64 bits fall back.
  void export_float(const Instruction& inst) {
    static const std::unordered_map<unsigned, uint8_t> kKinds = {
        {Instruction::FAdd, kFloatAdd},          {Instruction::FSub, kFloatSub},
        {Instruction::FMul, kFloatMul},          {Instruction::FDiv, kFloatDiv},
        {Instruction::FNeg, kFloatNeg},          {Instruction::FCmp, kFloatCmp},
        {Instruction::FPExt, kFloatExt},         {Instruction::FPTrunc, kFloatTrunc},
        {Instruction::SIToFP, kFloatFromSigned}, {Instruction::UIToFP, kFloatFromUnsigned},
        {Instruction::FPToSI, kFloatToSigned},   {Instruction::FPToUI, kFloatToUnsigned}};
    uint8_t kind = kKinds.at(inst.getOpcode());
    Type* from = inst.getOperand(0)->getType();
    Type* to = inst.getType();
    bool fits = false;
    switch (kind) {
      case kFloatFromSigned:
      case kFloatFromUnsigned:
        fits = is_float_or_double(to) && from->isIntegerTy() && scalar_width(from);
        break;
      case kFloatToSigned:
      case kFloatToUnsigned:
        fits = is_float_or_double(from) && to->isIntegerTy() && scalar_width(to);
        break;
      case kFloatCmp:
        fits = is_float_or_double(from);
        break;
      default:  // arithmetic keeps its type; fpext and fptrunc go between float and double
        fits = is_float_or_double(from) && is_float_or_double(to);
        break;
    }
    if (!fits) reason(std::string(inst.getOpcodeName()) + " of " + type_name(from) + " to " + type_name(to));
    FlatInst& fi = inst.getNumOperands() == 2 ? emit(inst, kOpFloat, {operand(inst.getOperand(0)), operand(inst.getOperand(1))})
                                              : emit(inst, kOpFloat, {operand(inst.getOperand(0))});
    fi.aux = kind;
    if (auto* c = dyn_cast<FCmpInst>(&inst)) fi.imm = c->getPredicate();
  }

  // A select of a scalar, or of a struct or array of scalars (Rust's {ptr, i64} and
  // Option-like pairs), which is copied piece by piece.
  void export_select(const Instruction& inst) {
    Type* t = inst.getType();
    bool aggregate = (t->isStructTy() || t->isArrayTy()) && is_plain_aggregate(t);
    if (!scalar_width(t) && !aggregate) reason("select of " + type_name(t));
    FlatInst& fi =
        emit(inst, kOpSelect, {operand(inst.getOperand(0)), operand(inst.getOperand(1)), operand(inst.getOperand(2))});
    if (aggregate) fi.aux32 = static_cast<uint32_t>(dl_.getTypeAllocSize(t));
  }

  // Casts between scalars: a copy (zext, inttoptr, freeze, bitcast), a truncation
  // (trunc, ptrtoint) or a sign extension.
  void export_cast(const Instruction& inst) {
    switch (inst.getOpcode()) {
      case Instruction::BitCast: {
        Type* from = inst.getOperand(0)->getType();
        if (scalar_width(from) != scalar_width(inst.getType()) || !scalar_width(from))
          reason("bitcast of " + type_name(from));
        emit(inst, kOpCopy, {operand(inst.getOperand(0))});
        return;
      }
      case Instruction::Trunc:
      case Instruction::PtrToInt:
        emit(inst, kOpTrunc, {operand(inst.getOperand(0))});
        return;
      case Instruction::SExt: {
        FlatInst& fi = emit(inst, kOpSext, {operand(inst.getOperand(0))});
        fi.aux = static_cast<uint8_t>(scalar_width(inst.getOperand(0)->getType()));
        return;
      }
      default:  // zext, inttoptr, freeze
        if (!scalar_width(inst.getType()))
          reason(std::string(inst.getOpcodeName()) + " of " + type_name(inst.getType()));
        emit(inst, kOpCopy, {operand(inst.getOperand(0))});
        return;
    }
  }

  // --- Aggregates and phis.

  void export_extract_value(const ExtractValueInst& ev) {
    Type* field = nullptr;
    uint64_t offset = aggregate_offset(ev.getAggregateOperand()->getType(), ev.getIndices(), &field);
    FlatInst& fi = emit(ev, kOpExtract, {operand(ev.getAggregateOperand())});
    fi.imm = static_cast<int64_t>(offset);
    if (!fi.width) fi.aux32 = static_cast<uint32_t>(dl_.getTypeAllocSize(field));
  }

  void export_insert_value(const InsertValueInst& iv) {
    Type* field = nullptr;
    uint64_t offset = aggregate_offset(iv.getType(), iv.getIndices(), &field);
    FlatInst& fi = emit(iv, kOpInsert, {operand(iv.getAggregateOperand()), operand(iv.getInsertedValueOperand())});
    fi.imm = static_cast<int64_t>(offset);
    if (!scalar_width(field)) fi.aux32 = static_cast<uint32_t>(dl_.getTypeAllocSize(field));
  }

  void export_phi(const PHINode& phi) {
    FlatInst& fi = emit(phi, kOpPhi);
    size_t at = insts_.size() - 1;
    (void)fi;
    if (scalar_width(phi.getType())) {
      insts_[at].slot_size = 16;  // value, then its shadow
    } else if (phi.getType()->isIntegerTy(kWideBits)) {
      insts_[at].width = kWideBits;
      insts_[at].aux32 = 16;
      insts_[at].slot_size = 32;  // value, then its shadow
    } else {                      // an aggregate: value, then its shadow, each rounded to 8 bytes
      uint32_t bytes = static_cast<uint32_t>(dl_.getTypeAllocSize(phi.getType()));
      insts_[at].aux32 = bytes;
      insts_[at].slot_size = 2 * round8(bytes);
    }
    for (unsigned k = 0; k < phi.getNumIncomingValues(); ++k) {
      add_operand(insts_[at], operand(phi.getIncomingValue(k)));
      add_operand(insts_[at], operand(phi.getIncomingBlock(k)));
    }
  }

  // --- Control flow (calls, invokes, landing pads and resume are above).

  void export_br(const BranchInst& br) {
    if (br.isUnconditional()) emit(br, kOpBr, {operand(br.getSuccessor(0))});
    else emit(br, kOpCondBr, {operand(br.getCondition()), operand(br.getSuccessor(0)), operand(br.getSuccessor(1))});
  }

  void export_switch(const SwitchInst& sw) {
    FlatInst& fi = emit(sw, kOpSwitch, {operand(sw.getCondition()), operand(sw.getDefaultDest())});
    size_t at = insts_.size() - 1;
    (void)fi;
    for (auto& c : sw.cases()) {
      add_operand(insts_[at], operand(c.getCaseValue()));
      add_operand(insts_[at], operand(c.getCaseSuccessor()));
    }
  }

  void export_ret(const ReturnInst& r) {
    if (r.getReturnValue()) emit(r, kOpRet, {operand(r.getReturnValue())});
    else emit(r, kOpRet);
  }

  // --- Atomics (atomic loads and stores are export_load and export_store).

  void export_atomic_rmw(const AtomicRMWInst& rmw) {
    check_atomic_access(rmw.getValOperand()->getType(), rmw.getAlign().value());
    if (rmw.getPointerAddressSpace() != 0) reason("address spaces");
    FlatInst& fi = emit(rmw, kOpAtomicRmw, {operand(rmw.getPointerOperand()), operand(rmw.getValOperand())});
    switch (rmw.getOperation()) {
      case AtomicRMWInst::Xchg:
        fi.aux = kRmwXchg;
        break;
      case AtomicRMWInst::Add:
        fi.aux = kRmwAdd;
        break;
      case AtomicRMWInst::Sub:
        fi.aux = kRmwSub;
        break;
      case AtomicRMWInst::And:
        fi.aux = kRmwAnd;
        break;
      case AtomicRMWInst::Or:
        fi.aux = kRmwOr;
        break;
      case AtomicRMWInst::Xor:
        fi.aux = kRmwXor;
        break;
      case AtomicRMWInst::Nand:
        fi.aux = kRmwNand;
        break;
      default:
        reason("atomics: atomicrmw " + AtomicRMWInst::getOperationName(rmw.getOperation()).str());
    }
  }

  void export_cmpxchg(const AtomicCmpXchgInst& cx) {
    check_atomic_access(cx.getCompareOperand()->getType(), cx.getAlign().value());
    if (cx.getPointerAddressSpace() != 0) reason("address spaces");
    FlatInst& fi =
        emit(cx, kOpCmpXchg,
             {operand(cx.getPointerOperand()), operand(cx.getCompareOperand()), operand(cx.getNewValOperand())});
    fi.imm = static_cast<int64_t>(dl_.getStructLayout(cast<StructType>(cx.getType()))->getElementOffset(1));
    if (fi.slot_size < 8) fi.slot_size = 8;
  }

  void export_fence(const FenceInst& f) {
    FlatInst& fi = emit(f, kOpFence);
    // x86-64 orders everything but a store before a later load: only seq_cst needs code.
    fi.aux = f.getOrdering() == AtomicOrdering::SequentiallyConsistent && f.getSyncScopeID() != SyncScope::SingleThread;
  }

  const Module& m_;
  const DataLayout& dl_;
  FlatModuleData& out_;
  FlatExport& export_;  // the symbols' LLVM values, resolved to names at the end
  std::unordered_map<const GlobalValue*, uint32_t>& symbol_index_;
  std::unordered_map<std::string, uint32_t>& library_index_;
  FlatDebugExporter& debug_;
  const Function& f_;
  // The function's own arrays (FunctionScratch's).
  PointerIndex<Instruction>& inst_index_;
  PointerIndex<BasicBlock>& block_index_;
  std::vector<FlatInst>& insts_;
  std::vector<const DILocation*>& locations_;
  std::vector<FlatOperand>& operands_;
  std::vector<FlatBlock>& blocks_;
  uint32_t base_inst_ = 0, base_block_ = 0, base_operand_ = 0, base_arg_ = 0, fn_index_ = 0;
  uint32_t fn_flags_ = 0, sret_arg_ = 0, personality_ = 0;
  uint16_t float_args_ = 0;
  bool avx_ = false;  // the function's target-features give it AVX (target_features_have_avx)
  bool may_fuse_ = false;  // its target may fuse fmuladd (target_may_fuse_multiply_add)
  std::vector<VectorArg> vector_args_;
  std::unordered_map<const Argument*, uint32_t> vector_arg_index_;
  uint8_t ret_leaf_float_ = 0;
  uint64_t ret_off1_ = 0;
  uint8_t ret_w0_ = 0, ret_w1_ = 0;
};

bool reserved_name_or_empty(const GlobalValue& gv) { return !gv.hasName() || gv.getName().starts_with("llvm."); }

SymbolBinding binding_of(const GlobalValue& gv) {
  if (gv.hasLocalLinkage()) return SymbolBinding::local;
  if (gv.hasWeakLinkage() || gv.hasLinkOnceLinkage() || gv.hasExternalWeakLinkage()) return SymbolBinding::weak;
  return SymbolBinding::global;
}

SymbolVisibility visibility_of(const GlobalValue& gv) {
  if (gv.hasHiddenVisibility()) return SymbolVisibility::hidden;
  if (gv.hasProtectedVisibility()) return SymbolVisibility::protected_;
  return SymbolVisibility::default_;
}

}  // namespace

namespace {

// Writes constant `c` into bytes at `offset`; addresses become R_X86_64_64
// relocations. Returns why not when the constant is beyond it.
std::string lower_constant(const llvm::Constant* c, const llvm::DataLayout& dl, std::vector<uint8_t>& bytes,
                           uint64_t offset, std::vector<StampNamedReloc>& relocs) {
  using namespace llvm;
  if (isa<UndefValue>(c) || isa<ConstantAggregateZero>(c) || isa<ConstantPointerNull>(c)) return "";
  // Every write below stays inside the global's bytes: a layout this code gets wrong
  // must give a reason, never a write past the buffer.
  if (offset > bytes.size() || dl.getTypeStoreSize(c->getType()) > bytes.size() - offset)
    return "global initializer: constant outside its global";
  if (auto* vt = dyn_cast<VectorType>(c->getType())) {
    // Vectors are packed bit by bit: elements narrower than their allocation (i1,
    // i24, x86_fp80, ...) do not sit at multiples of the allocation size. And a
    // vector-typed ConstantInt/ConstantFP is a splat that one immediate does not fill.
    Type* e = vt->getElementType();
    if (isa<ConstantInt>(c) || isa<ConstantFP>(c)) return "global initializer: vector splat constant";
    if (dl.getTypeSizeInBits(e) != 8 * dl.getTypeAllocSize(e))
      return "global initializer: vector of " + std::to_string(dl.getTypeSizeInBits(e).getFixedValue()) +
          "-bit elements";
  }
  auto put_apint = [&](const APInt& v) {
    uint64_t n = dl.getTypeStoreSize(c->getType());
    for (uint64_t i = 0; i < n && i * 8 < v.getBitWidth(); ++i)
      bytes[offset + i] =
          static_cast<uint8_t>(v.extractBitsAsZExtValue(std::min<unsigned>(8, v.getBitWidth() - i * 8), i * 8));
  };
  if (auto* ci = dyn_cast<ConstantInt>(c)) return put_apint(ci->getValue()), "";
  if (auto* fp = dyn_cast<ConstantFP>(c)) return put_apint(fp->getValueAPF().bitcastToAPInt()), "";
  if (auto* seq = dyn_cast<ConstantDataSequential>(c)) {
    StringRef raw = seq->getRawDataValues();
    std::copy(raw.begin(), raw.end(), bytes.begin() + offset);
    return "";
  }
  if (auto* st = dyn_cast<ConstantStruct>(c)) {
    const StructLayout* sl = dl.getStructLayout(st->getType());
    for (unsigned i = 0; i < st->getNumOperands(); ++i) {
      std::string why = lower_constant(st->getOperand(i), dl, bytes, offset + sl->getElementOffset(i), relocs);
      if (!why.empty()) return why;
    }
    return "";
  }
  if (isa<ConstantArray>(c) || isa<ConstantVector>(c)) {
    Type* elem = isa<ConstantArray>(c) ? cast<ArrayType>(c->getType())->getElementType()
                                       : cast<FixedVectorType>(c->getType())->getElementType();
    uint64_t stride = dl.getTypeAllocSize(elem);
    for (unsigned i = 0; i < c->getNumOperands(); ++i) {
      std::string why = lower_constant(cast<Constant>(c->getOperand(i)), dl, bytes, offset + i * stride, relocs);
      if (!why.empty()) return why;
    }
    return "";
  }
  // A pointer made from an integer (Rust's dangling NonNull in statics): its bits.
  if (auto* ce = dyn_cast<ConstantExpr>(c); ce && ce->getOpcode() == Instruction::IntToPtr) {
    auto* ci = dyn_cast<ConstantInt>(ce->getOperand(0));
    if (ci && dl.getTypeStoreSize(c->getType()) == 8) {
      uint64_t v = ci->getValue().zextOrTrunc(64).getZExtValue();
      for (unsigned i = 0; i < 8; ++i) bytes[offset + i] = static_cast<uint8_t>(v >> (8 * i));
      return "";
    }
  }
  // An address: a global plus a constant offset, possibly cast to a 64-bit integer.
  const Constant* base = c;
  APInt delta(64, 0);
  if (auto* ce = dyn_cast<ConstantExpr>(c);
      ce && ce->getOpcode() == Instruction::PtrToInt && dl.getTypeStoreSize(ce->getType()) == 8)
    base = ce->getOperand(0);
  if (auto* gep = dyn_cast<GEPOperator>(base)) {
    if (!gep->accumulateConstantOffset(dl, delta)) return "global initializer: getelementptr with a variable offset";
    base = cast<Constant>(gep->getPointerOperand());
  }
  base = base->stripPointerCasts();
  if (auto* gv = dyn_cast<GlobalValue>(base)) {
    if (dl.getTypeStoreSize(c->getType()) != 8) return "global initializer: address narrower than 64 bits";
    if (gv->isThreadLocal()) return "global initializer: address of a thread-local variable";
    relocs.push_back({static_cast<uint32_t>(offset), kReloc64, gv->getName().str(), delta.getSExtValue()});
    return "";
  }
  if (auto* ce = dyn_cast<ConstantExpr>(c))
    return std::string("global initializer: constant expression ") + ce->getOpcodeName();
  return "global initializer: constant kind " + std::to_string(c->getValueID());
}

}  // namespace

// The global objects llvm.used names (collectUsedGlobalVariables without the compiler's
// list, which would assert on an initializer that is no array): LLVM gives their
// sections SHF_GNU_RETAIN, which keeps --gc-sections from dropping them.
static std::unordered_set<const llvm::GlobalObject*> retained_objects(const llvm::Module& module) {
  std::unordered_set<const llvm::GlobalObject*> retained;
  const llvm::GlobalVariable* list = module.getGlobalVariable("llvm.used");
  auto* elements =
      list && list->hasInitializer() ? llvm::dyn_cast<llvm::ConstantArray>(list->getInitializer()) : nullptr;
  if (!elements) return retained;
  for (const llvm::Use& element : elements->operands())
    if (auto* object = llvm::dyn_cast<llvm::GlobalObject>(element->stripPointerCasts())) retained.insert(object);
  return retained;
}

std::string export_globals(const llvm::Module& module, std::vector<StampData>& out) {
  using namespace llvm;
  const DataLayout dl = target_data_layout();
  const auto retained = retained_objects(module);
  if (!module.getModuleInlineAsm().empty()) return "module inline asm";
  if (!module.alias_empty()) return "aliases";
  if (!module.ifunc_empty()) return "ifuncs";
  for (const GlobalVariable& g : module.globals()) {
    if (g.isDeclaration()) continue;
    if (g.hasAppendingLinkage()) {
      // llvm.used and llvm.compiler.used only keep symbols alive inside LLVM.
      if (g.getName() == "llvm.used" || g.getName() == "llvm.compiler.used") continue;
      return "global " + g.getName().str() + " (appending linkage)";
    }
    if (g.getName().starts_with("llvm.")) return "global " + g.getName().str();
    if (g.hasComdat()) return "global in a comdat";
    if (g.hasCommonLinkage()) return "common symbol";
    StampData d;
    d.name = g.getName().str();
    d.binding = g.hasLocalLinkage()                      ? SymbolBinding::local
        : (g.hasWeakLinkage() || g.hasLinkOnceLinkage()) ? SymbolBinding::weak
                                                         : SymbolBinding::global;
    d.visibility = g.hasHiddenVisibility() ? SymbolVisibility::hidden
        : g.hasProtectedVisibility()       ? SymbolVisibility::protected_
                                           : SymbolVisibility::default_;
    d.was_private = g.hasPrivateLinkage() || was_private_variable(g);  // exposed, or not (no functions)
    d.retain = retained.count(&g) != 0;
    d.size = dl.getTypeAllocSize(g.getValueType());
    d.align = static_cast<uint32_t>(dl.getPreferredAlign(&g).value());
    const Constant* init = g.getInitializer();
    d.zero = !g.isConstant() && init->isNullValue() && (!g.hasSection() || is_bss_section_name(g.getSection()));
    if (!d.zero) {
      d.bytes.assign(d.size, 0);
      std::string why = lower_constant(init, dl, d.bytes, 0, d.relocations);
      if (!why.empty()) return why;
    }
    // A thread-local variable is each thread's copy of its initial image: always writable.
    d.tls = g.isThreadLocal();
    d.writable = !g.isConstant() || d.tls;
    std::string kind = d.tls ? (d.zero ? ".tbss." : ".tdata.")
        : d.zero             ? ".bss."
        : d.writable         ? ".data."
        : d.relocations.empty() ? ".rodata."
                                : ".data.rel.ro.";
    d.section = g.hasSection() ? g.getSection().str() : kind + d.name;
    if (g.hasSection()) d.writable = d.writable || !d.relocations.empty();
    if (!d.relocations.empty()) d.writable = true;  // relocated at load time in PIC code
    out.push_back(std::move(d));
  }
  return "";
}

size_t materialize_aggregate_constants(llvm::Module& module) {
  using namespace llvm;
  size_t count = 0;
  std::unordered_map<const Constant*, GlobalVariable*> pool;
  for (Function& f : module) {
    for (BasicBlock& bb : f) {
      for (Instruction& inst : bb) {
        if (isa<LandingPadInst>(inst) || isa<SwitchInst>(inst)) continue;
        // Intrinsics keep their constant operands (an immarg must stay one), but for
        // i128 constants wider than an immediate (no immarg is one) and pshufb's
        // vectors, which stamp computes on as values.
        auto* call = dyn_cast<CallBase>(&inst);
        const bool keeps_constants = call && call->getCalledFunction() &&
                                     call->getCalledFunction()->isIntrinsic() &&
                                     call->getIntrinsicID() != Intrinsic::x86_ssse3_pshuf_b_128 &&
                                     call->getIntrinsicID() != Intrinsic::x86_avx2_pshuf_b;
        for (unsigned k = 0; k < inst.getNumOperands(); ++k) {
          auto* c = dyn_cast<Constant>(inst.getOperand(k));
          if (!c) continue;
          // An i128 constant that no immediate holds is loaded like an aggregate.
          auto* ci = dyn_cast<ConstantInt>(c);
          const bool wide = ci && ci->getBitWidth() == kWideBits &&
                            !wide_immediate_fits(ci->getValue().extractBitsAsZExtValue(64, 64));
          if (!wide && keeps_constants) continue;
          if (!wide && !(isa<ConstantStruct>(c) || isa<ConstantArray>(c) || isa<ConstantDataSequential>(c) ||
                         isa<ConstantVector>(c)))
            continue;
          if (!wide && !is_plain_aggregate(c->getType())) continue;
          GlobalVariable*& g = pool[c];
          if (!g) {
            g = new GlobalVariable(module, c->getType(), true, GlobalValue::PrivateLinkage, c, "__kiln_const");
            g->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
          }
          // A phi's value must be ready at the end of its incoming block.
          Instruction* where = &inst;
          if (auto* phi = dyn_cast<PHINode>(&inst)) where = phi->getIncomingBlock(k)->getTerminator();
          auto* load = new LoadInst(c->getType(), g, "kiln.const", where->getIterator());
          inst.setOperand(k, load);
          ++count;
        }
      }
    }
  }
  return count;
}

void FlatExport::resolve_symbol_names() {
  std::vector<std::string>& symbols = flat.symbols;
  symbols.clear();
  for (size_t i = 0; i < symbol_values.size(); ++i)
    symbols.push_back(symbol_values[i] ? symbol_values[i]->getName().str() : fixed_names[i]);
  // Renaming (expose_local_symbols) changes linkage and visibility too.
  for (size_t fn = 0; fn < flat.functions.size(); ++fn) {
    const llvm::GlobalValue* gv = symbol_values[flat.functions[fn].symbol];
    flat.bindings[fn] = binding_of(*gv);
    flat.visibilities[fn] = visibility_of(*gv);
  }
}

// Functions that must stay definitions in the llvm half: an alias must point to a
// definition in its own object, and so must an ifunc's resolver (the verifier
// refuses the llvm half otherwise, and the symbols could not be emitted apart from
// their target). stamp leaves these functions to llvm, with a reason.
static std::unordered_map<const llvm::Function*, std::string> pinned_to_llvm(const llvm::Module& module) {
  std::unordered_map<const llvm::Function*, std::string> pinned;
  // The verifier wants every global named anywhere in an aliasee expression defined
  // (through other aliases too), not only the base object: walk them all.
  std::set<const llvm::Constant*> seen;
  std::function<void(const llvm::Constant*)> walk = [&](const llvm::Constant* c) {
    if (!seen.insert(c).second) return;
    if (auto* f = llvm::dyn_cast<llvm::Function>(c)) pinned.emplace(f, "target of an alias");
    else if (auto* a = llvm::dyn_cast<llvm::GlobalAlias>(c)) walk(a->getAliasee());
    else if (!llvm::isa<llvm::GlobalValue>(c))
      for (const llvm::Use& u : c->operands()) walk(llvm::cast<llvm::Constant>(u.get()));
  };
  for (const llvm::GlobalAlias& a : module.aliases()) walk(a.getAliasee());
  for (const llvm::GlobalIFunc& i : module.ifuncs())
    if (const llvm::Function* f = i.getResolverFunction()) pinned.emplace(f, "ifunc resolver");
  return pinned;
}

// The module's compile unit, as flat_debug.h says; absent when there is none to write.
static FlatDebugInfo debug_unit(const llvm::Module& module) {
  FlatDebugInfo d;
  auto units = module.debug_compile_units();
  if (units.empty()) return d;
  const llvm::DICompileUnit* cu = *units.begin();
  // debug_compile_units() passes over NoDebug units: this one is full or line tables.
  d.emission = cu->getEmissionKind() == llvm::DICompileUnit::FullDebug ? DebugEmission::full : DebugEmission::line_tables;
  unsigned version = module.getDwarfVersion();
  d.dwarf_version = version ? version : 4;
  const llvm::DISourceLanguageName language = cu->getSourceLanguage();
  d.language = language.hasVersionedName() ? 0 : language.getName();
  d.producer = cu->getProducer().str();
  if (const llvm::DIFile* file = cu->getFile()) {
    d.name = file->getFilename().str();
    d.directory = file->getDirectory().str();
  }
  return d;
}

namespace {

FlatExport export_functions(const llvm::Module& module, const FunctionFilter& selected) {
  FlatExport out;
  out.flat.debug = debug_unit(module);
  const llvm::DataLayout dl = target_data_layout();
  std::unordered_map<const llvm::GlobalValue*, uint32_t> symbol_index;
  std::unordered_map<std::string, uint32_t> library_index;
  const auto pinned = pinned_to_llvm(module);
  const auto retained = retained_objects(module);
  FlatDebugExporter debug(out.flat.debug);
  FunctionScratch scratch;
  for (const llvm::Function& f : module) {
    bool stamp = false;
    if (!f.isDeclaration()) {
      FunctionExporter ex(module, dl, out, symbol_index, library_index, debug, scratch, f);
      // A reason found before run() stops the commit like any other; run() still
      // finds and reports all the others.
      if (auto it = pinned.find(&f); it != pinned.end()) ex.reasons.push_back(it->second);
      if (retained.count(&f)) ex.reasons.push_back(kReasonRetained);
      if (selected && !selected(f.getName().str())) ex.reasons.push_back(kNotSelected);
      stamp = ex.run();
      FunctionVerdict v;
      v.name = f.getName().str();
      // The function as it came: loads that materialize_aggregate_constants added
      // are not counted.
      v.instructions = 0;
      for (const llvm::BasicBlock& bb : f)
        for (const llvm::Instruction& inst : bb)
          if (!inst.getName().starts_with("kiln.const")) ++v.instructions;
      v.reasons = std::move(ex.reasons);
      out.verdicts.push_back(std::move(v));
      if (stamp) {
        out.flat.bindings.push_back(binding_of(f));
        out.flat.visibilities.push_back(visibility_of(f));
        out.flat.sections.push_back(f.hasSection() ? f.getSection().str() : std::string());
        out.stamp_function_count++;
      }
    }
    out.emitted_by_stamp.push_back(stamp);
  }
  // The global variables' debug information, after every function (flat_debug.h).
  for (const llvm::GlobalVariable& g : module.globals()) {
    const std::vector<const llvm::DIGlobalVariable*> kept = debug.kept_globals(g);
    if (kept.empty()) continue;
    auto [it, inserted] = symbol_index.emplace(&g, static_cast<uint32_t>(out.symbol_values.size()));
    if (inserted) out.symbol_values.push_back(&g);
    for (const llvm::DIGlobalVariable* var : kept) debug.global(var, it->second);
  }
  // Declarations are never renamed (expose_local_symbols renames definitions only),
  // so their names can be taken now.
  for (const llvm::GlobalValue& gv : module.global_values()) {
    if (!gv.isDeclaration() || (!gv.hasExternalWeakLinkage() && gv.hasDefaultVisibility()) ||
        reserved_name_or_empty(gv))
      continue;
    out.flat.undefined.push_back({gv.getName().str(), binding_of(gv), visibility_of(gv)});
  }
  drop_dead_values(out.flat);
  write_phis_directly(out.flat);
  out.resolve_symbol_names();
  return out;
}

}  // namespace

FlatExport export_flat(const llvm::Module& module, const FunctionFilter& selected) {
  FlatExport out = export_functions(module, selected);
  // stamp's DWARF writer nests each type's entry in the entries of the types that
  // contain it, and writes versions 2 to 5: with debug types that contain themselves or
  // another version (a malformed module's, which LLVM's parser reads all the same) every
  // function falls back, with that reason.
  if (const char* defect = check_debug_exported(out.flat.debug)) {
    out = export_functions(module, [](const std::string&) { return false; });
    out.flat.debug = {};  // no function of stamp's to describe, and its header may be the defect
    for (FunctionVerdict& v : out.verdicts) v.reasons = {std::string("debug information: ") + defect};
  }
  return out;
}

}  // namespace kiln
