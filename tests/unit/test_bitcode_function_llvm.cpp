// Function bodies as the direct bitcode reader decodes them (lib/stamp/bitcode_function.cpp)
// against LLVM's own reader: per defined function the block count, per block the
// instruction count, per instruction the opcode, the result type's shape and every
// operand (the same argument, instruction position, global, constant or block), and
// the fields the exporter reads (predicates, alignments, orderings, indices...).
//   [.corpus] KILN_BITCODE_CORPUS=DIR: every *.bc under DIR, with counts of the
//   functions that match, those the reader declines (and why) and those that differ.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "bitcode_ir.h"
#include "bitstream_writer.h"
#include "error.h"
#include "fs.h"
#include "ir_helpers.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

// --- Type shapes, printed alike for both readers.
std::string our_type(const bc::BcModule& m, uint32_t t, int depth = 0) {
  if (t >= m.types.size()) return "<bad type>";
  const bc::Type& ty = m.types[t];
  auto elem = [&](size_t i) { return i < ty.elements.size() ? our_type(m, ty.elements[i], depth + 1) : "?"; };
  switch (ty.kind) {
    case bc::TypeKind::kVoid:
      return "void";
    case bc::TypeKind::kHalf:
      return "half";
    case bc::TypeKind::kBFloat:
      return "bfloat";
    case bc::TypeKind::kFloat:
      return "float";
    case bc::TypeKind::kDouble:
      return "double";
    case bc::TypeKind::kX86Fp80:
      return "x86_fp80";
    case bc::TypeKind::kFp128:
      return "fp128";
    case bc::TypeKind::kPpcFp128:
      return "ppc_fp128";
    case bc::TypeKind::kLabel:
      return "label";
    case bc::TypeKind::kMetadata:
      return "metadata";
    case bc::TypeKind::kX86Amx:
      return "x86_amx";
    case bc::TypeKind::kToken:
      return "token";
    case bc::TypeKind::kInteger:
      return "i" + std::to_string(ty.width);
    case bc::TypeKind::kPointer:
      return ty.address_space ? "ptr addrspace(" + std::to_string(ty.address_space) + ")" : "ptr";
    case bc::TypeKind::kFunction:
      return "fn";
    case bc::TypeKind::kTargetExt:
      return "target(" + ty.name + ")";
    case bc::TypeKind::kArray:
      return "[" + std::to_string(ty.count) + " x " + elem(0) + "]";
    case bc::TypeKind::kFixedVector:
      return "<" + std::to_string(ty.count) + " x " + elem(0) + ">";
    case bc::TypeKind::kScalableVector:
      return "<vscale x " + std::to_string(ty.count) + " x " + elem(0) + ">";
    case bc::TypeKind::kStruct: {
      if (ty.named || depth > 8) return "%" + ty.name;
      std::string s = ty.packed ? "<{" : "{";
      for (size_t i = 0; i < ty.elements.size(); ++i) s += (i ? ", " : "") + elem(i);
      return s + (ty.packed ? "}>" : "}");
    }
  }
  return "?";
}

std::string llvm_type(llvm::Type* ty, int depth = 0) {
  switch (ty->getTypeID()) {
    case llvm::Type::VoidTyID:
      return "void";
    case llvm::Type::HalfTyID:
      return "half";
    case llvm::Type::BFloatTyID:
      return "bfloat";
    case llvm::Type::FloatTyID:
      return "float";
    case llvm::Type::DoubleTyID:
      return "double";
    case llvm::Type::X86_FP80TyID:
      return "x86_fp80";
    case llvm::Type::FP128TyID:
      return "fp128";
    case llvm::Type::PPC_FP128TyID:
      return "ppc_fp128";
    case llvm::Type::LabelTyID:
      return "label";
    case llvm::Type::MetadataTyID:
      return "metadata";
    case llvm::Type::X86_AMXTyID:
      return "x86_amx";
    case llvm::Type::TokenTyID:
      return "token";
    case llvm::Type::IntegerTyID:
      return "i" + std::to_string(ty->getIntegerBitWidth());
    case llvm::Type::PointerTyID: {
      unsigned as = ty->getPointerAddressSpace();
      return as ? "ptr addrspace(" + std::to_string(as) + ")" : "ptr";
    }
    case llvm::Type::FunctionTyID:
      return "fn";
    case llvm::Type::TargetExtTyID:
      return "target(" + llvm::cast<llvm::TargetExtType>(ty)->getName().str() + ")";
    case llvm::Type::ArrayTyID:
      return "[" + std::to_string(ty->getArrayNumElements()) + " x " + llvm_type(ty->getArrayElementType(), depth + 1) +
          "]";
    case llvm::Type::FixedVectorTyID: {
      auto* v = llvm::cast<llvm::FixedVectorType>(ty);
      return "<" + std::to_string(v->getNumElements()) + " x " + llvm_type(v->getElementType(), depth + 1) + ">";
    }
    case llvm::Type::ScalableVectorTyID: {
      auto* v = llvm::cast<llvm::ScalableVectorType>(ty);
      return "<vscale x " + std::to_string(v->getMinNumElements()) + " x " + llvm_type(v->getElementType(), depth + 1) +
          ">";
    }
    case llvm::Type::StructTyID: {
      auto* st = llvm::cast<llvm::StructType>(ty);
      if (!st->isLiteral() || depth > 8) return "%" + st->getName().str();
      std::string s = st->isPacked() ? "<{" : "{";
      for (unsigned i = 0; i < st->getNumElements(); ++i)
        s += (i ? ", " : "") + llvm_type(st->getElementType(i), depth + 1);
      return s + (st->isPacked() ? "}>" : "}");
    }
    default:
      return "?";
  }
}

// --- Opcodes: LLVM's by number to bc::Opcode.
bc::Opcode our_opcode(unsigned op) {
  using I = llvm::Instruction;
  using O = bc::Opcode;
  static const std::unordered_map<unsigned, O> map = {{I::Ret, O::kRet},
                                                      {I::Br, O::kBr},
                                                      {I::Switch, O::kSwitch},
                                                      {I::IndirectBr, O::kIndirectBr},
                                                      {I::Invoke, O::kInvoke},
                                                      {I::Resume, O::kResume},
                                                      {I::Unreachable, O::kUnreachable},
                                                      {I::CleanupRet, O::kCleanupRet},
                                                      {I::CatchRet, O::kCatchRet},
                                                      {I::CatchSwitch, O::kCatchSwitch},
                                                      {I::CallBr, O::kCallBr},
                                                      {I::FNeg, O::kFNeg},
                                                      {I::Add, O::kAdd},
                                                      {I::FAdd, O::kFAdd},
                                                      {I::Sub, O::kSub},
                                                      {I::FSub, O::kFSub},
                                                      {I::Mul, O::kMul},
                                                      {I::FMul, O::kFMul},
                                                      {I::UDiv, O::kUDiv},
                                                      {I::SDiv, O::kSDiv},
                                                      {I::FDiv, O::kFDiv},
                                                      {I::URem, O::kURem},
                                                      {I::SRem, O::kSRem},
                                                      {I::FRem, O::kFRem},
                                                      {I::Shl, O::kShl},
                                                      {I::LShr, O::kLShr},
                                                      {I::AShr, O::kAShr},
                                                      {I::And, O::kAnd},
                                                      {I::Or, O::kOr},
                                                      {I::Xor, O::kXor},
                                                      {I::Alloca, O::kAlloca},
                                                      {I::Load, O::kLoad},
                                                      {I::Store, O::kStore},
                                                      {I::GetElementPtr, O::kGetElementPtr},
                                                      {I::Fence, O::kFence},
                                                      {I::AtomicCmpXchg, O::kAtomicCmpXchg},
                                                      {I::AtomicRMW, O::kAtomicRmw},
                                                      {I::Trunc, O::kTrunc},
                                                      {I::ZExt, O::kZExt},
                                                      {I::SExt, O::kSExt},
                                                      {I::FPToUI, O::kFPToUI},
                                                      {I::FPToSI, O::kFPToSI},
                                                      {I::UIToFP, O::kUIToFP},
                                                      {I::SIToFP, O::kSIToFP},
                                                      {I::FPTrunc, O::kFPTrunc},
                                                      {I::FPExt, O::kFPExt},
                                                      {I::PtrToInt, O::kPtrToInt},
                                                      {I::IntToPtr, O::kIntToPtr},
                                                      {I::BitCast, O::kBitCast},
                                                      {I::AddrSpaceCast, O::kAddrSpaceCast},
                                                      {I::PtrToAddr, O::kPtrToAddr},
                                                      {I::CleanupPad, O::kCleanupPad},
                                                      {I::CatchPad, O::kCatchPad},
                                                      {I::ICmp, O::kICmp},
                                                      {I::FCmp, O::kFCmp},
                                                      {I::PHI, O::kPhi},
                                                      {I::Call, O::kCall},
                                                      {I::Select, O::kSelect},
                                                      {I::VAArg, O::kVAArg},
                                                      {I::ExtractElement, O::kExtractElement},
                                                      {I::InsertElement, O::kInsertElement},
                                                      {I::ShuffleVector, O::kShuffleVector},
                                                      {I::ExtractValue, O::kExtractValue},
                                                      {I::InsertValue, O::kInsertValue},
                                                      {I::LandingPad, O::kLandingPad},
                                                      {I::Freeze, O::kFreeze}};
  auto it = map.find(op);
  return it == map.end() ? bc::Opcode(255) : it->second;
}

// --- Operands, described alike for both readers.
std::string hex_words(const uint64_t* words, size_t n) {
  std::string s;
  char buf[20];
  for (size_t i = n; i-- > 0;) {
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)words[i]);
    s += buf;
  }
  return s;
}

std::string our_constant(const bc::BcModule& m, const bc::Constant& c) {
  std::string ty = our_type(m, c.type);
  switch (c.kind) {
    case bc::ConstKind::kNull:
    case bc::ConstKind::kTokenNone:  // LLVM's isNullValue holds for `none` and target types' zeroinitializer
    case bc::ConstKind::kTargetNone:
      return "null " + ty;
    case bc::ConstKind::kUndef:
      return "undef " + ty;
    case bc::ConstKind::kPoison:
      return "poison " + ty;
    case bc::ConstKind::kInteger: {
      uint32_t width = c.type < m.types.size() ? m.types[c.type].width : 64;
      std::vector<uint64_t> w(c.words.begin(), c.words.end());
      w.resize((width + 63) / 64);
      if (width % 64) w.back() &= (uint64_t(1) << (width % 64)) - 1;
      return "int " + ty + " " + hex_words(w.data(), w.size());
    }
    case bc::ConstKind::kFloat:
      if (ty == "float" || ty == "double")
        return "fp " + ty + " " + hex_words(c.words.data(), std::min<size_t>(1, c.words.size()));
      return "fp " + ty;
    case bc::ConstKind::kAggregate:
      return "aggregate " + ty;
    case bc::ConstKind::kData:
      return "data " + ty;
    case bc::ConstKind::kCast:
    case bc::ConstKind::kBinary:
    case bc::ConstKind::kGep:
      return "expr " + ty;
    case bc::ConstKind::kBlockAddress:
      return "blockaddress";
    case bc::ConstKind::kInlineAsm:
      return "asm";
    default:
      return "constant kind " + std::to_string(int(c.kind));
  }
}

std::string llvm_constant(const llvm::Constant* c) {
  std::string ty = llvm_type(c->getType());
  if (llvm::isa<llvm::PoisonValue>(c)) return "poison " + ty;
  if (llvm::isa<llvm::UndefValue>(c)) return "undef " + ty;
  if (c->isNullValue()) return "null " + ty;
  if (auto* ci = llvm::dyn_cast<llvm::ConstantInt>(c))
    return "int " + ty + " " + hex_words(ci->getValue().getRawData(), ci->getValue().getNumWords());
  if (auto* cf = llvm::dyn_cast<llvm::ConstantFP>(c)) {
    if (ty == "float" || ty == "double") {
      uint64_t bits = cf->getValueAPF().bitcastToAPInt().getZExtValue();
      return "fp " + ty + " " + hex_words(&bits, 1);
    }
    return "fp " + ty;
  }
  if (llvm::isa<llvm::ConstantDataSequential>(c)) return "data " + ty;
  if (llvm::isa<llvm::ConstantAggregate>(c)) return "aggregate " + ty;
  if (llvm::isa<llvm::ConstantExpr>(c)) return "expr " + ty;
  if (llvm::isa<llvm::BlockAddress>(c)) return "blockaddress";
  return "llvm constant " + std::to_string(c->getValueID());
}

std::string our_operand(const bc::BcModule& m, const bc::BcFunction& f, uint32_t id) {
  if (id == bc::kMetadataOperand) return "metadata";
  if (id & bc::kBlockTag) return "bb " + std::to_string(id & ~bc::kBlockTag);
  const bc::ValueRef* v = nullptr;
  if (id < m.module_value_count && id < m.values.size()) v = &m.values[id];
  if (id >= m.module_value_count && id - m.module_value_count < f.values.size())
    v = &f.values[id - m.module_value_count];
  if (!v) return "bad id " + std::to_string(id);
  switch (v->kind) {
    case bc::ValueKind::kArgument:
      return "arg " + std::to_string(v->index);
    case bc::ValueKind::kInstruction:
      return "inst " + std::to_string(v->index);
    case bc::ValueKind::kGlobal:
      return v->index < m.globals.size() ? "@" + std::string(m.globals[v->index].name) : "bad global";
    case bc::ValueKind::kConstant:
      return v->index < m.constants.size() ? our_constant(m, m.constants[v->index]) : "bad constant";
    case bc::ValueKind::kForward:
      return "forward " + std::to_string(id);
  }
  return "?";
}

struct LlvmNumbering {
  std::unordered_map<const llvm::Value*, uint32_t> insts, blocks;
};

std::string llvm_operand(const LlvmNumbering& n, const llvm::Value* v) {
  if (auto* bb = llvm::dyn_cast<llvm::BasicBlock>(v)) return "bb " + std::to_string(n.blocks.at(bb));
  if (auto* a = llvm::dyn_cast<llvm::Argument>(v)) return "arg " + std::to_string(a->getArgNo());
  if (llvm::isa<llvm::Instruction>(v)) return "inst " + std::to_string(n.insts.at(v));
  if (llvm::isa<llvm::MetadataAsValue>(v)) return "metadata";
  if (llvm::isa<llvm::InlineAsm>(v)) return "asm";
  if (auto* g = llvm::dyn_cast<llvm::GlobalValue>(v)) return "@" + g->getName().str();
  if (auto* c = llvm::dyn_cast<llvm::Constant>(v)) return llvm_constant(c);
  return "llvm value " + std::to_string(v->getValueID());
}

// LLVM's operands in bitcode_ir.h's order (see Inst).
std::vector<const llvm::Value*> llvm_operands(const llvm::Instruction& inst) {
  std::vector<const llvm::Value*> ops;
  if (auto* cb = llvm::dyn_cast<llvm::CallBase>(&inst)) {
    for (const llvm::Use& arg : cb->args()) ops.push_back(arg.get());
    ops.push_back(cb->getCalledOperand());
    if (auto* inv = llvm::dyn_cast<llvm::InvokeInst>(&inst)) {
      ops.push_back(inv->getNormalDest());
      ops.push_back(inv->getUnwindDest());
    }
    if (auto* cbr = llvm::dyn_cast<llvm::CallBrInst>(&inst)) {
      ops.push_back(cbr->getDefaultDest());
      for (unsigned i = 0; i < cbr->getNumIndirectDests(); ++i) ops.push_back(cbr->getIndirectDest(i));
    }
  } else if (auto* br = llvm::dyn_cast<llvm::BranchInst>(&inst)) {
    if (br->isConditional()) ops.push_back(br->getCondition());
    for (unsigned i = 0; i < br->getNumSuccessors(); ++i) ops.push_back(br->getSuccessor(i));
  } else if (auto* sw = llvm::dyn_cast<llvm::SwitchInst>(&inst)) {
    ops.push_back(sw->getCondition());
    ops.push_back(sw->getDefaultDest());
    for (auto& c : sw->cases()) {
      ops.push_back(c.getCaseValue());
      ops.push_back(c.getCaseSuccessor());
    }
  } else if (auto* phi = llvm::dyn_cast<llvm::PHINode>(&inst)) {
    for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i) {
      ops.push_back(phi->getIncomingValue(i));
      ops.push_back(phi->getIncomingBlock(i));
    }
  } else {
    for (const llvm::Use& op : inst.operands()) ops.push_back(op.get());
  }
  return ops;
}

// Fields beyond the operands that the exporter reads; "" when they agree.
std::string compare_fields(const bc::BcModule& m, const bc::BcFunction& f, const bc::Inst& o,
                           const llvm::Instruction& t) {
  auto ord = [](llvm::AtomicOrdering a) { return int(a) == 0 ? 0 : int(a) - (int(a) > 2 ? 1 : 0); };
  if (auto* c = llvm::dyn_cast<llvm::CmpInst>(&t); c && o.aux != unsigned(c->getPredicate())) return "predicate";
  if (auto* a = llvm::dyn_cast<llvm::AllocaInst>(&t)) {
    if (our_type(m, o.source_type) != llvm_type(a->getAllocatedType())) return "allocated type";
    if (o.align && o.align != a->getAlign().value()) return "alloca align";
    if (o.static_alloca_candidate != (t.getParent() == &t.getFunction()->getEntryBlock() && !a->isUsedWithInAlloca()))
      return "static alloca";
  }
  if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&t)) {
    if (o.align != l->getAlign().value() || o.is_volatile != l->isVolatile()) return "load align/volatile";
    if (int(o.ordering) != ord(l->getOrdering())) return "load ordering";
    if (l->isAtomic() && o.single_thread != (l->getSyncScopeID() == llvm::SyncScope::SingleThread)) return "scope";
  }
  if (auto* s = llvm::dyn_cast<llvm::StoreInst>(&t)) {
    if (o.align != s->getAlign().value() || o.is_volatile != s->isVolatile()) return "store align/volatile";
    if (int(o.ordering) != ord(s->getOrdering())) return "store ordering";
  }
  if (auto* x = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&t)) {
    if (int(o.ordering) != ord(x->getSuccessOrdering()) || o.is_volatile != x->isVolatile()) return "cmpxchg";
    if (o.single_thread != (x->getSyncScopeID() == llvm::SyncScope::SingleThread)) return "cmpxchg scope";
  }
  if (auto* r = llvm::dyn_cast<llvm::AtomicRMWInst>(&t)) {
    unsigned op = r->getOperation();
    // The bitcode's code: LLVM's order up to UMin; after it the two orders differ.
    static const unsigned kCodeOf[] = {11, 12, 13, 14, 19, 20, 15, 16, 17, 18};  // FAdd .. USubSat
    unsigned code = op <= llvm::AtomicRMWInst::UMin ? op : kCodeOf[op - llvm::AtomicRMWInst::FAdd];
    if (o.aux != code) return "rmw operation";
    if (int(o.ordering) != ord(r->getOrdering()) || o.is_volatile != r->isVolatile()) return "rmw ordering";
    if (o.single_thread != (r->getSyncScopeID() == llvm::SyncScope::SingleThread)) return "rmw scope";
  }
  if (auto* fe = llvm::dyn_cast<llvm::FenceInst>(&t)) {
    if (int(o.ordering) != ord(fe->getOrdering())) return "fence ordering";
    if (o.single_thread != (fe->getSyncScopeID() == llvm::SyncScope::SingleThread)) return "fence scope";
  }
  if (auto* g = llvm::dyn_cast<llvm::GetElementPtrInst>(&t)) {
    if (our_type(m, o.source_type) != llvm_type(g->getSourceElementType())) return "gep source type";
    if (o.inbounds != g->isInBounds() || o.vector_gep != g->getType()->isVectorTy()) return "gep flags";
  }
  if (auto* cb = llvm::dyn_cast<llvm::CallBase>(&t)) {
    if (our_type(m, o.source_type) != llvm_type(cb->getFunctionType()) || o.calling_conv != cb->getCallingConv())
      return "call type or convention";
    if (o.has_bundles != cb->hasOperandBundles()) return "operand bundles";
    if (o.attributes == bc::kNone && !cb->getAttributes().isEmpty()) return "call attributes";
    if (o.attributes != bc::kNone && o.attributes >= m.attribute_lists.size()) return "call attribute list id";
    using A = llvm::Attribute;
    const std::pair<uint8_t, A::AttrKind> kinds[] = {
        {bc::kAttrByVal, A::ByVal},         {bc::kAttrSExt, A::SExt},         {bc::kAttrZExt, A::ZExt},
        {bc::kAttrStructRet, A::StructRet}, {bc::kAttrInAlloca, A::InAlloca}, {bc::kAttrNest, A::Nest}};
    for (unsigned arg = 0; arg < cb->arg_size(); ++arg)
      for (auto [ours, theirs] : kinds) {
        bool has = o.attributes != bc::kNone && m.attribute_lists[o.attributes].param_has(arg, ours);
        if (has != cb->getAttributes().hasParamAttr(arg, theirs)) return "call parameter attributes";
      }
    if (auto* ci = llvm::dyn_cast<llvm::CallInst>(&t); ci && o.musttail != ci->isMustTailCall()) return "musttail";
  }
  if (auto* cs = llvm::dyn_cast<llvm::CatchSwitchInst>(&t); cs && o.aux != unsigned(cs->hasUnwindDest()))
    return "catchswitch unwind";
  if (auto* lp = llvm::dyn_cast<llvm::LandingPadInst>(&t)) {
    if (o.cleanup != lp->isCleanup()) return "cleanup";
    for (unsigned i = 0; i < lp->getNumClauses(); ++i)
      if (o.first_operand + i >= f.clause_filter.size() || f.clause_filter[o.first_operand + i] != lp->isFilter(i))
        return "clause kind";
  }
  llvm::ArrayRef<unsigned> idx;
  if (auto* ev = llvm::dyn_cast<llvm::ExtractValueInst>(&t)) idx = ev->getIndices();
  if (auto* iv = llvm::dyn_cast<llvm::InsertValueInst>(&t)) idx = iv->getIndices();
  if (!idx.empty()) {
    if (o.index_count != idx.size()) return "index count";
    for (size_t i = 0; i < idx.size(); ++i)
      if (f.indices[o.first_index + i] != idx[i]) return "index";
  }
  return "";
}

// "" when function `f` is LLVM's `fn`, else the first difference.
std::string compare_function(const bc::BcModule& m, const bc::BcFunction& f, const llvm::Function& fn) {
  if (f.block_count != fn.size())
    return "block count " + std::to_string(f.block_count) + " vs " + std::to_string(fn.size());
  if (f.block_first.size() != f.block_count) return "block_first size";
  LlvmNumbering n;
  std::vector<const llvm::Instruction*> theirs;
  for (const llvm::BasicBlock& bb : fn) {
    n.blocks[&bb] = uint32_t(n.blocks.size());
    uint32_t first = uint32_t(theirs.size());
    for (const llvm::Instruction& i : bb) {
      n.insts[&i] = uint32_t(theirs.size());
      theirs.push_back(&i);
    }
    uint32_t b = n.blocks[&bb];
    uint32_t end = b + 1 < f.block_count ? f.block_first[b + 1] : uint32_t(f.insts.size());
    if (f.block_first[b] != first || end - f.block_first[b] != bb.size())
      return "block " + std::to_string(b) + " has " + std::to_string(end - f.block_first[b]) + " instructions, LLVM " +
          std::to_string(bb.size());
  }
  if (theirs.size() != f.insts.size()) return "instruction count";
  for (size_t i = 0; i < theirs.size(); ++i) {
    const bc::Inst& o = f.insts[i];
    const llvm::Instruction& t = *theirs[i];
    std::string where = "instruction " + std::to_string(i) + " (" + t.getOpcodeName() + "): ";
    if (o.opcode != our_opcode(t.getOpcode())) return where + "opcode " + std::to_string(int(o.opcode));
    if (our_type(m, o.type) != llvm_type(t.getType()))
      return where + "type " + our_type(m, o.type) + " vs " + llvm_type(t.getType());
    if ((o.value == bc::kNone) != t.getType()->isVoidTy()) return where + "value id";
    std::vector<const llvm::Value*> ops = llvm_operands(t);
    size_t extra = o.opcode == bc::Opcode::kShuffleVector ? 1 : 0;  // the mask, an operand here
    if (o.operand_count != ops.size() + extra)
      return where + "operand count " + std::to_string(o.operand_count) + " vs " + std::to_string(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      std::string a = our_operand(m, f, f.operands[o.first_operand + k]), b = llvm_operand(n, ops[k]);
      if (a != b) return where + "operand " + std::to_string(k) + ": " + a + " vs " + b;
    }
    if (std::string d = compare_fields(m, f, o, t); !d.empty()) return where + d;
  }
  return "";
}

struct Tally {
  uint64_t modules = 0, functions = 0, matched = 0, declined = 0, differ = 0, instructions = 0;
  std::map<std::string, uint64_t> decline_reasons;
  std::vector<std::string> differences;  // the first few
};

// Reads `bytes` with both readers and compares every defined function.
void compare_module(const std::string& bytes, const std::string& name, Tally& tally) {
  llvm::LLVMContext ctx;
  auto buffer = llvm::MemoryBuffer::getMemBuffer(bytes, name, false);
  auto parsed = llvm::parseBitcodeFile(buffer->getMemBufferRef(), ctx);
  if (!parsed) FAIL(name << ": LLVM's reader: " << llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> theirs = std::move(*parsed);
  bc::BcModule ours = bc::read_bitcode(bytes, name);
  ++tally.modules;
  std::unordered_map<std::string, const bc::BcFunction*> by_name;
  for (const bc::BcFunction& f : ours.functions) by_name[std::string(ours.globals.at(f.global).name)] = &f;
  for (const llvm::Function& fn : *theirs) {
    if (fn.isDeclaration()) continue;
    ++tally.functions;
    auto it = by_name.find(fn.getName().str());
    if (it == by_name.end()) {
      ++tally.differ;
      tally.differences.push_back(name + " @" + fn.getName().str() + ": not among ours");
      continue;
    }
    const bc::BcFunction& f = *it->second;
    if (!ours.declined.empty() || !f.declined.empty()) {
      ++tally.declined;
      ++tally.decline_reasons[!ours.declined.empty() ? ours.declined : f.declined];
      continue;
    }
    std::string d = compare_function(ours, f, fn);
    if (d.empty()) {
      ++tally.matched;
      tally.instructions += f.insts.size();
    } else {
      ++tally.differ;
      if (tally.differences.size() < 20) tally.differences.push_back(name + " @" + fn.getName().str() + ": " + d);
    }
  }
}

void print(const Tally& t, const char* what) {
  std::printf("%s: %llu modules, %llu functions: %llu match (%llu instructions), %llu declined, %llu differ\n", what,
              (unsigned long long)t.modules, (unsigned long long)t.functions, (unsigned long long)t.matched,
              (unsigned long long)t.instructions, (unsigned long long)t.declined, (unsigned long long)t.differ);
  for (const auto& [why, count] : t.decline_reasons)
    std::printf("  declined %llu: %s\n", (unsigned long long)count, why.c_str());
  for (const std::string& d : t.differences) std::printf("  differs: %s\n", d.c_str());
}

// Every function of `ir` must match LLVM's, none declined.
void check_ir(const char* ir, const char* what) {
  Tally t;
  compare_module(kiln_test::bitcode_from_ir(ir), what, t);
  print(t, what);
  CHECK(t.functions > 0);
  CHECK(t.differences.empty());
  CHECK(t.decline_reasons.empty());
  REQUIRE(t.matched == t.functions);
}

const char* kArithmeticIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i32 @arith(i32 %a, i32 %b, float %x, double %y, <4 x i32> %v) {
  %1 = add nsw i32 %a, %b
  %2 = sub nuw i32 %1, 7
  %3 = mul i32 %2, %a
  %4 = udiv exact i32 %3, 3
  %5 = sdiv i32 %4, %b
  %6 = urem i32 %5, 5
  %7 = srem i32 %6, %a
  %8 = shl i32 %7, 2
  %9 = lshr i32 %8, 1
  %10 = ashr i32 %9, 1
  %11 = and i32 %10, 255
  %12 = or disjoint i32 %11, 256
  %13 = xor i32 %12, -1
  %f1 = fadd fast float %x, 1.0
  %f2 = fsub float %f1, %x
  %f3 = fmul float %f2, 2.0
  %f4 = fdiv float %f3, 3.0
  %f5 = frem float %f4, 5.0
  %f6 = fneg nnan float %f5
  %c1 = fptosi float %f6 to i32
  %c2 = sitofp i32 %c1 to double
  %c3 = fadd double %c2, %y
  %c4 = fptrunc double %c3 to float
  %c5 = fpext float %c4 to double
  %c6 = fptoui double %c5 to i64
  %c7 = uitofp nneg i64 %c6 to float
  %c8 = trunc nuw i64 %c6 to i16
  %c9 = zext nneg i16 %c8 to i32
  %c10 = sext i16 %c8 to i64
  %p = inttoptr i64 %c10 to ptr
  %p2 = addrspacecast ptr %p to ptr addrspace(1)
  %i = ptrtoint ptr addrspace(1) %p2 to i64
  %bc = bitcast i64 %i to double
  %vv = add <4 x i32> %v, <i32 1, i32 2, i32 3, i32 4>
  %e = extractelement <4 x i32> %vv, i32 0
  %ins = insertelement <4 x i32> %vv, i32 %e, i64 1
  %sh = shufflevector <4 x i32> %ins, <4 x i32> %v, <4 x i32> <i32 0, i32 5, i32 2, i32 7>
  %cmp = icmp samesign ult i32 %13, %c9
  %fc = fcmp nnan olt double %bc, %c5
  %vc = icmp eq <4 x i32> %sh, zeroinitializer
  %both = and i1 %cmp, %fc
  %sel = select i1 %both, i32 %e, i32 %13
  %vsel = select <4 x i1> %vc, <4 x i32> %sh, <4 x i32> %v
  %fsel = select nnan i1 %both, float %f6, float %c7
  %fr = freeze i32 %sel
  %e2 = extractelement <4 x i32> %vsel, i32 3
  %r = add i32 %fr, %e2
  %wide = zext i32 %r to i128
  %big = mul i128 %wide, 170141183460469231731687303715884105727
  %back = trunc i128 %big to i32
  ret i32 %back
}
)";

const char* kMemoryIr = R"(
target triple = "x86_64-unknown-linux-gnu"
%pair = type { i32, [4 x i64] }
@g = global i32 0
define i64 @mem(ptr %p, i64 %n, i1 %c) {
entry:
  %a = alloca i32, align 4
  %arr = alloca i64, i64 %n, align 16
  %s = alloca %pair, align 8
  %inalloca = alloca inalloca i32
  store i32 5, ptr %a, align 4
  store volatile i32 6, ptr @g, align 4
  %v = load i32, ptr %a, align 4
  %vv = load volatile i64, ptr %p, align 8
  %f = getelementptr inbounds %pair, ptr %s, i32 0, i32 1, i64 2
  %f2 = getelementptr i8, ptr %p, i64 %n
  %f3 = getelementptr nuw i64, ptr %arr, i64 1
  %vg = getelementptr i32, ptr %p, <2 x i64> <i64 0, i64 1>
  %at = load atomic i64, ptr %p seq_cst, align 8
  store atomic i64 %at, ptr %f release, align 8
  %at2 = load atomic volatile i32, ptr @g syncscope("singlethread") acquire, align 4
  %x = cmpxchg ptr %p, i64 0, i64 1 acq_rel monotonic
  %xw = cmpxchg weak volatile ptr %p, i64 1, i64 2 syncscope("singlethread") seq_cst seq_cst, align 16
  %ok = extractvalue { i64, i1 } %x, 1
  %old = atomicrmw add ptr %p, i64 1 seq_cst
  %old2 = atomicrmw volatile xchg ptr %f2, i64 3 syncscope("singlethread") monotonic, align 8
  %old3 = atomicrmw fadd ptr %p, double 1.0 monotonic
  %old4 = atomicrmw umin ptr %f3, i64 9 release
  fence acquire
  fence syncscope("singlethread") seq_cst
  br i1 %c, label %more, label %exit
more:
  %late = alloca i8, align 1
  store i8 1, ptr %late
  br label %exit
exit:
  %sum = add i64 %old, %old2
  ret i64 %sum
}
)";

const char* kControlFlowIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@ti = external constant ptr
declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i32)
define i32 @flow(i32 %x, ptr %addr) personality ptr @__gxx_personality_v0 {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %latch ]
  %acc = phi i32 [ %x, %entry ], [ %acc2, %latch ]
  %d = phi double [ 0.0, %entry ], [ %d2, %latch ]
  switch i32 %i, label %latch [ i32 1, label %one
                                i32 5, label %five
                                i32 0, label %latch ]
one:
  invoke void @may_throw(i32 %i) to label %latch unwind label %lpad
five:
  indirectbr ptr %addr, [label %latch, label %done]
latch:
  %acc2 = add i32 %acc, %i
  %next = add i32 %i, 1
  %d2 = fadd double %d, 1.0
  %c = icmp ult i32 %next, 10
  br i1 %c, label %loop, label %done
done:
  %r = phi i32 [ %acc2, %latch ], [ 0, %five ]
  ret i32 %r
lpad:
  %lp = landingpad { ptr, i32 } cleanup catch ptr @ti filter [1 x ptr] [ptr @ti]
  resume { ptr, i32 } %lp
dead:
  unreachable
}
define void @forward(i1 %c) {
entry:
  br label %b
b:
  %p = phi i32 [ 1, %entry ], [ %q, %b ]
  %q = add i32 %p, 1
  br i1 %c, label %b, label %e
e:
  ret void
}
)";

// Windows' funclet exception handling.
const char* kFuncletIr = R"(
target triple = "x86_64-pc-windows-msvc"
declare i32 @__CxxFrameHandler3(...)
declare void @may_throw()
define void @funclets() personality ptr @__CxxFrameHandler3 {
entry:
  invoke void @may_throw() to label %next unwind label %dispatch
next:
  invoke void @may_throw() to label %cont unwind label %dispatch2
dispatch:
  %cs = catchswitch within none [label %handler, label %handler2] unwind label %cleanup
handler:
  %cp = catchpad within %cs [ptr null, i32 64, ptr null]
  catchret from %cp to label %cont
handler2:
  %cp2 = catchpad within %cs []
  catchret from %cp2 to label %cont
cleanup:
  %cl = cleanuppad within none []
  cleanupret from %cl unwind to caller
dispatch2:
  %cs2 = catchswitch within none [label %handler3] unwind to caller
handler3:
  %cp3 = catchpad within %cs2 [ptr null]
  invoke void @may_throw() [ "funclet"(token %cp3) ] to label %done3 unwind label %inner.bb
done3:
  catchret from %cp3 to label %cont
inner.bb:
  %inner = cleanuppad within %cp3 [i32 1]
  cleanupret from %inner unwind label %dispatch3
dispatch3:
  %cs3 = catchswitch within %cp3 [label %handler4] unwind to caller
handler4:
  %cp4 = catchpad within %cs3 []
  catchret from %cp4 to label %cont
cont:
  ret void
}
)";

const char* kCallsIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@fmt = private constant [4 x i8] c"%d\0A\00"
declare i32 @printf(ptr, ...)
declare i32 @tail2(i32)
declare void @callee(ptr byval(i32), i32 signext)
declare double @llvm.experimental.constrained.fadd.f64(double, double, metadata, metadata)
declare double @llvm.fabs.f64(double)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
define i32 @musttail(i32 %x) {
  %r = musttail call i32 @tail2(i32 %x)
  ret i32 %r
}
define i32 @calls(i32 %x, ptr %fp, double %d) strictfp {
  %1 = call i32 (ptr, ...) @printf(ptr @fmt, i32 %x, double %d)
  %2 = call fastcc i32 %fp(i32 %x) #0
  %3 = call double @llvm.experimental.constrained.fadd.f64(double %d, double 1.0, metadata !"round.dynamic", metadata !"fpexcept.strict") strictfp
  %4 = tail call i32 @tail2(i32 %x) [ "deopt"(i32 %x, i64 1) ]
  call void @callee(ptr byval(i32) %fp, i32 signext 3)
  %5 = notail call nnan double @llvm.fabs.f64(double %3)
  %6 = call i32 asm sideeffect "mov $1, $0", "=r,r"(i32 %x)
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %fp, ptr @fmt, i64 4, i1 false)
  %7 = call cc 10 i32 @tail2(i32 %6)
  ret i32 %1
}
attributes #0 = { nounwind }
)";

const char* kAggregateIr = R"(
target triple = "x86_64-unknown-linux-gnu"
%s = type { i32, { i64, [2 x float] } }
define float @agg(%s %a, [3 x i32] %arr) {
  %x = extractvalue %s %a, 1, 1, 0
  %y = insertvalue %s %a, i32 7, 0
  %z = insertvalue %s %y, float %x, 1, 1, 1
  %q = extractvalue [3 x i32] %arr, 2
  %t = insertvalue { i32, float } undef, i32 %q, 0
  %u = insertvalue { i32, float } %t, float %x, 1
  %r = extractvalue { i32, float } %u, 1
  %w = extractvalue %s %z, 1
  %k = extractvalue { i64, [2 x float] } %w, 1
  %m = insertvalue [3 x i32] poison, i32 %q, 1
  ret float %r
}
@g2 = global i32 0
define void @local_constants(ptr %p, i32 %a, i32 %b) {
  store { i32, ptr, [2 x i16] } { i32 12345, ptr @g2, [2 x i16] [i16 3, i16 4] }, ptr %p
  ret void
}
define i32 @va(ptr %ap) {
  %v = va_arg ptr %ap, i32
  ret i32 %v
}
)";

// asm goto, between two plain functions.
const char* kCallBrIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i32 @before(i32 %x) {
  ret i32 %x
}
define i32 @cb(i32 %x) {
entry:
  %r = callbr i32 asm "", "=r,r,!i,!i"(i32 %x) to label %ok [label %other, label %ok]
ok:
  ret i32 %r
other:
  ret i32 0
}
define i32 @after(i32 %x) {
  %y = add i32 %x, 1
  ret i32 %y
}
)";

// A hand-built module for what LLVM's writer never writes: types i32, ptr, i32 (i32),
// void, i1; one function @a of type i32 (i32) whose body holds `body` (records by code;
// 1000 + id enters a nested block, 999 ends it). Its argument is value 1, so the first
// instruction's value is 2.
using Records = std::vector<std::pair<uint64_t, std::vector<uint64_t>>>;
std::string hand_function(const Records& body) {
  kiln_test::BitWriter w;
  w.enter(13, 5);
  w.unabbrev(1, {'L', 'L', 'V', 'M'});
  w.unabbrev(2, {0});
  w.end();
  w.enter(8, 3);
  w.unabbrev(1, {2});
  w.enter(17, 4);
  Records types = {{7, {32}}, {25, {0}}, {21, {0, 0, 0}}, {2, {}}, {7, {1}}};
  w.unabbrev(1, {types.size()});
  for (const auto& [code, ops] : types) w.unabbrev(code, ops);
  w.end();
  w.unabbrev(8, {0, 1, 2, 0, 0, 0, 0, 0, 0, 0});  // FUNCTION @a, a definition
  w.enter(12, 4);
  for (const auto& [code, ops] : body) {
    if (code >= 1000) w.enter(code - 1000, 4);
    else if (code == 999) w.end();
    else w.unabbrev(code, ops);
  }
  w.end();
  w.end();
  w.enter(23, 3);
  w.define_abbrev({{true, 0, 1}, {false, 5, 0}});
  w.abbrev_id(4);
  w.blob("abcdef");
  w.end();
  return w.bytes();
}

void expect_bad_body(const Records& body, const std::string& why) {
  try {
    bc::BcModule m = bc::read_bitcode(hand_function(body), "hand.bc");
    FAIL("read, expected: " << why << " (declined: " << m.functions.at(0).declined << ")");
  } catch (const KilnError& e) {
    CAPTURE(e.what());
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find(why) != std::string::npos);
  }
}

// Hidden tests run where test_main.cpp narrows the run; with no corpus named they pass.
const char* function_corpus_dir() {
  const char* dir = std::getenv("KILN_BITCODE_CORPUS");
  if (!dir) std::printf("skip - [.corpus] bitcode functions need KILN_BITCODE_CORPUS=DIR\n");
  return dir;
}

}  // namespace

TEST_CASE("bitcode functions: the regex modules read as LLVM reads them", "[bitcode-function]") {
  Tally t;
  std::vector<std::string> files = kiln_test::bitcode_files_under(KILN_TEST_DATA "/bitstream");
  REQUIRE(files.size() >= 3);
  for (const std::string& path : files) compare_module(read_file(path), path, t);
  print(t, "bitcode functions (tests/data/bitstream)");
  CHECK(t.differences.empty());
  REQUIRE(t.matched + t.declined == t.functions);
  REQUIRE(t.matched > 0);
}

TEST_CASE("bitcode functions: arithmetic, casts, vectors, comparisons and select", "[bitcode-function]") {
  check_ir(kArithmeticIr, "arithmetic");
}

TEST_CASE("bitcode functions: alloca, load, store, gep, atomics and fences", "[bitcode-function]") {
  check_ir(kMemoryIr, "memory");
}

TEST_CASE("bitcode functions: branches, switch, phi with forward references, invoke, landingpad",
          "[bitcode-function]") {
  check_ir(kControlFlowIr, "control flow");
}

TEST_CASE("bitcode functions: funclet pads, catchswitch, catchret and cleanupret", "[bitcode-function]") {
  check_ir(kFuncletIr, "funclets");
}

TEST_CASE("bitcode functions: calls with attributes, varargs, musttail, bundles, metadata arguments",
          "[bitcode-function]") {
  check_ir(kCallsIr, "calls");
}

TEST_CASE("bitcode functions: extractvalue, insertvalue and va_arg", "[bitcode-function]") {
  check_ir(kAggregateIr, "aggregates");
}

TEST_CASE("bitcode functions: a corpus read as LLVM reads it", "[.corpus]") {
  const char* dir = function_corpus_dir();
  if (!dir) return;
  Tally t;
  for (const std::string& path : kiln_test::bitcode_files_under(dir)) compare_module(read_file(path), path, t);
  print(t, "bitcode functions (corpus)");
  CHECK(t.differences.empty());
}

TEST_CASE("bitcode functions: callbr (asm goto)", "[bitcode-function]") { check_ir(kCallBrIr, "callbr"); }

// Random bit flips in real modules: each read either succeeds or fails as bad input
// (exit 3), and a function either decodes or is declined; nothing else escapes.
TEST_CASE("bitcode functions: corrupt modules fail as bad input", "[bitcode-function]") {
  uint64_t state = 0x9E3779B97F4A7C15u, read = 0, refused = 0;
  auto next = [&] { return state = state * 6364136223846793005u + 1442695040888963407u, state >> 33; };
  for (const std::string& path : kiln_test::bitcode_files_under(KILN_TEST_DATA "/bitstream")) {
    std::string original = read_file(path);
    for (int round = 0; round < 300; ++round) {
      std::string bytes = original;
      for (int k = 0, flips = 1 + int(next() % 4); k < flips; ++k)
        bytes[8 + next() % (bytes.size() - 8)] ^= char(1u << (next() % 8));
      try {
        bc::read_bitcode(bytes, path);
        ++read;
      } catch (const KilnError& e) {
        if (e.code() != kExitBadInput) FAIL(path << " round " << round << ": " << e.what());
        ++refused;
      }
    }
  }
  std::printf("bitcode functions: %llu corrupt modules read, %llu refused as bad input\n", (unsigned long long)read,
              (unsigned long long)refused);
  REQUIRE(read + refused == 900);
}

TEST_CASE("bitcode functions: hostile bodies fail as bad input, naming why", "[bitcode-function]") {
  // The builder itself: add the argument to itself, return the sum.
  bc::BcModule m = bc::read_bitcode(hand_function({{1, {1}}, {2, {1, 1, 0}}, {10, {1}}}), "hand.bc");
  REQUIRE(m.functions.size() == 1);
  const bc::BcFunction& f = m.functions[0];
  REQUIRE(f.declined.empty());
  REQUIRE(f.insts.size() == 2);
  CHECK((f.insts[0].opcode == bc::Opcode::kAdd && f.insts[0].value == 2 && f.operands[0] == 1));
  CHECK((f.insts[1].opcode == bc::Opcode::kRet && f.operands[f.insts[1].first_operand] == 2));
  // A record the reader does not know declines the function, and the module reads on.
  bc::BcModule d = bc::read_bitcode(hand_function({{1, {1}}, {53, {7}}, {10, {1}}}), "hand.bc");
  CHECK(d.functions.at(0).declined == "reader: function record 53");
  expect_bad_body({{1, {0}}}, "invalid declareblocks");
  expect_bad_body({{2, {1, 1, 0}}, {1, {1}}}, "outside any declared block");
  expect_bad_body({{1, {1}}, {10, {0, 0}}}, "value 2 is never defined");
  expect_bad_body({{1, {1}}, {11, {5}}}, "block id 5 out of range");
  expect_bad_body({{1, {2}}, {10, {1}}}, "block 1 has no terminator");
  expect_bad_body({{1, {1}}, {55, {0}}, {10, {1}}}, "no consumer");
  expect_bad_body({{1, {1}}, {20, {1, 0, 40, 0}}}, "alignment exponent 40");
  expect_bad_body({{1, {1}}, {47, {0, 0, 1000000}}}, "landingpad clause count");
  expect_bad_body({{1, {1}}, {2, {1, 1}}}, "too short");
  expect_bad_body({{1, {1}}, {2, {1, 1, 13}}}, "invalid binary operator 13");
  expect_bad_body({{1, {1}}, {3, {1, 77, 0}}}, "type id 77 out of range");
  expect_bad_body({{1, {2}}, {10, {0, 0}}, {10, {0, 4}}}, "used with two types");
  expect_bad_body({{1, {1}}, {16, {4, 2, 0}}, {10, {1}}}, "value 1 has the wrong type");  // an i32 in an i1 phi
}
