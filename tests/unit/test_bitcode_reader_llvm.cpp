// The direct bitcode reader's module half (lib/stamp/bitcode_reader.cpp) against LLVM's
// own reader: each module is read by both, and the triple, data layout, globals (in
// order, with their linkage, visibility, section, comdat, alignment, ...), their value
// types by shape, variables' initializers and the attributes stamp asks about must
// agree. Hand-written IR covers each record family's edge cases; truncated and
// bit-flipped modules must fail with kExitBadInput or read, never crash.
//   [.corpus] KILN_BITCODE_CORPUS=DIR: every regular file under DIR compared the same way.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/GlobalIFunc.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>
#include <llvm/Support/MemoryBuffer.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bitcode_ir.h"
#include "bitstream_writer.h"
#include "error.h"
#include "fs.h"
#include "ir_helpers.h"

using namespace kiln;

namespace {

std::unique_ptr<llvm::Module> llvm_read(const std::string& bytes, const std::string& name, llvm::LLVMContext& ctx) {
  auto module = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bytes, name), ctx);
  if (!module) FAIL(name << ": LLVM's reader: " << llvm::toString(module.takeError()));
  return std::move(*module);
}

// Fails naming the module and what differs; cheap when it holds.
#undef AGREE  // another file of this unity build defines its own
#define AGREE(cond, what)                    \
  do {                                       \
    if (!(cond)) FAIL(name << ": " << what); \
  } while (0)

struct Comparer {
  const bc::BcModule& m;
  const std::string& name;
  uint64_t constants_compared = 0;

  // The type table entry `id` has the shape of LLVM's `t`; named structs by name (their
  // bodies once, at depth 0, so recursive ones end).
  void type(uint32_t id, llvm::Type* t, int depth = 0) {
    AGREE(id < m.types.size(), "type id " << id << " outside the table");
    const bc::Type& o = m.types[id];
    using K = bc::TypeKind;
    switch (t->getTypeID()) {
      case llvm::Type::VoidTyID:
        AGREE(o.kind == K::kVoid, "type " << id << " not void");
        return;
      case llvm::Type::HalfTyID:
        AGREE(o.kind == K::kHalf, "type " << id << " not half");
        return;
      case llvm::Type::BFloatTyID:
        AGREE(o.kind == K::kBFloat, "type " << id << " not bfloat");
        return;
      case llvm::Type::FloatTyID:
        AGREE(o.kind == K::kFloat, "type " << id << " not float");
        return;
      case llvm::Type::DoubleTyID:
        AGREE(o.kind == K::kDouble, "type " << id << " not double");
        return;
      case llvm::Type::X86_FP80TyID:
        AGREE(o.kind == K::kX86Fp80, "type " << id << " not x86_fp80");
        return;
      case llvm::Type::FP128TyID:
        AGREE(o.kind == K::kFp128, "type " << id << " not fp128");
        return;
      case llvm::Type::PPC_FP128TyID:
        AGREE(o.kind == K::kPpcFp128, "type " << id << " not ppc_fp128");
        return;
      case llvm::Type::LabelTyID:
        AGREE(o.kind == K::kLabel, "type " << id << " not label");
        return;
      case llvm::Type::MetadataTyID:
        AGREE(o.kind == K::kMetadata, "type " << id << " not metadata");
        return;
      case llvm::Type::X86_AMXTyID:
        AGREE(o.kind == K::kX86Amx, "type " << id << " not x86_amx");
        return;
      case llvm::Type::TokenTyID:
        AGREE(o.kind == K::kToken, "type " << id << " not token");
        return;
      case llvm::Type::IntegerTyID:
        AGREE(o.kind == K::kInteger && o.width == t->getIntegerBitWidth(),
              "type " << id << " not i" << t->getIntegerBitWidth());
        return;
      case llvm::Type::PointerTyID:
        AGREE(o.kind == K::kPointer && o.address_space == t->getPointerAddressSpace(), "type " << id << " not ptr");
        return;
      case llvm::Type::FunctionTyID: {
        auto* f = llvm::cast<llvm::FunctionType>(t);
        AGREE(o.kind == K::kFunction && o.vararg == f->isVarArg() && o.elements.size() == f->getNumParams() + 1,
              "type " << id << " not the function type");
        if (depth < 4) {
          type(o.elements[0], f->getReturnType(), depth + 1);
          for (unsigned i = 0; i < f->getNumParams(); ++i) type(o.elements[i + 1], f->getParamType(i), depth + 1);
        }
        return;
      }
      case llvm::Type::StructTyID: {
        auto* s = llvm::cast<llvm::StructType>(t);
        AGREE(o.kind == K::kStruct && o.named == !s->isLiteral() && o.opaque == s->isOpaque(),
              "type " << id << " not the struct");
        if (!s->isLiteral()) AGREE(o.name == s->getName().str(), "struct " << o.name << " is " << s->getName().str());
        if (s->isOpaque() || (!s->isLiteral() && depth > 0) || depth > 6) return;
        AGREE(o.packed == s->isPacked() && o.elements.size() == s->getNumElements(), "struct " << id << " body");
        for (unsigned i = 0; i < s->getNumElements(); ++i) type(o.elements[i], s->getElementType(i), depth + 1);
        return;
      }
      case llvm::Type::ArrayTyID:
        AGREE(o.kind == K::kArray && o.count == t->getArrayNumElements(), "type " << id << " not the array");
        if (depth < 8) type(o.elements[0], t->getArrayElementType(), depth + 1);
        return;
      case llvm::Type::FixedVectorTyID:
      case llvm::Type::ScalableVectorTyID: {
        auto* v = llvm::cast<llvm::VectorType>(t);
        bool scalable = v->getElementCount().isScalable();
        AGREE(o.kind == (scalable ? K::kScalableVector : K::kFixedVector) &&
                  o.count == v->getElementCount().getKnownMinValue(),
              "type " << id << " not the vector");
        type(o.elements[0], v->getElementType(), depth + 1);
        return;
      }
      case llvm::Type::TargetExtTyID:
        AGREE(o.kind == K::kTargetExt && o.name == llvm::cast<llvm::TargetExtType>(t)->getName().str(),
              "type " << id << " not the target type");
        return;
      default:
        FAIL(name << ": an LLVM type the test does not know");
        return;
    }
  }

  static bc::Linkage linkage(llvm::GlobalValue::LinkageTypes l) {
    using L = llvm::GlobalValue;
    switch (l) {
      case L::ExternalLinkage:
        return bc::Linkage::kExternal;
      case L::AvailableExternallyLinkage:
        return bc::Linkage::kAvailableExternally;
      case L::LinkOnceAnyLinkage:
        return bc::Linkage::kLinkOnceAny;
      case L::LinkOnceODRLinkage:
        return bc::Linkage::kLinkOnceOdr;
      case L::WeakAnyLinkage:
        return bc::Linkage::kWeakAny;
      case L::WeakODRLinkage:
        return bc::Linkage::kWeakOdr;
      case L::AppendingLinkage:
        return bc::Linkage::kAppending;
      case L::InternalLinkage:
        return bc::Linkage::kInternal;
      case L::PrivateLinkage:
        return bc::Linkage::kPrivate;
      case L::ExternalWeakLinkage:
        return bc::Linkage::kExternalWeak;
      case L::CommonLinkage:
        return bc::Linkage::kCommon;
    }
    return bc::Linkage::kExternal;
  }

  void global(const bc::Global& o, const llvm::GlobalValue& g) {
    std::string n = g.getName().str();
    AGREE(o.name == n, "global " << o.name << " is " << n);
    AGREE(o.linkage == linkage(g.getLinkage()), "linkage of @" << n);
    AGREE(int(o.visibility) == int(g.getVisibility()), "visibility of @" << n);
    AGREE(o.declaration == g.isDeclaration(), "declaration of @" << n);
    AGREE(o.thread_local_ == g.isThreadLocal(), "thread_local of @" << n);
    AGREE(o.dso_local == g.isDSOLocal(), "dso_local of @" << n);
    AGREE(o.unnamed_addr ==
              uint8_t(g.getUnnamedAddr() == llvm::GlobalValue::UnnamedAddr::Global      ? 1
                          : g.getUnnamedAddr() == llvm::GlobalValue::UnnamedAddr::Local ? 2
                                                                                        : 0),
          "unnamed_addr of @" << n);
    AGREE(o.address_space == g.getAddressSpace(), "address space of @" << n);
    type(o.value_type, g.getValueType());
    auto* object = llvm::dyn_cast<llvm::GlobalObject>(&g);
    std::string section = object && object->hasSection() ? object->getSection().str() : "";
    AGREE(o.section == section, "section of @" << n);
    const llvm::Comdat* c = object ? object->getComdat() : nullptr;
    AGREE((o.comdat == bc::kNone) == (c == nullptr), "comdat presence of @" << n);
    if (c) {
      AGREE(o.comdat < m.comdats.size() && m.comdats[o.comdat].name == c->getName().str(), "comdat of @" << n);
      AGREE(m.comdats[o.comdat].selection == uint32_t(c->getSelectionKind()) + 1, "comdat selection of @" << n);
    }
    llvm::MaybeAlign a;
    if (auto* v = llvm::dyn_cast<llvm::GlobalVariable>(&g)) a = v->getAlign();
    if (auto* f = llvm::dyn_cast<llvm::Function>(&g)) a = f->getAlign();
    uint64_t align = a ? a->value() : 0;
    AGREE(o.align == align, "alignment of @" << n);
    AGREE(m.values[&o - m.globals.data()].kind == bc::ValueKind::kGlobal, "value of @" << n);
    if (auto* v = llvm::dyn_cast<llvm::GlobalVariable>(&g)) variable(o, *v);
    if (auto* f = llvm::dyn_cast<llvm::Function>(&g)) function(o, *f);
    if (auto* a = llvm::dyn_cast<llvm::GlobalAlias>(&g)) {
      AGREE(o.kind == bc::GlobalKind::kAlias, "@" << n << " not an alias");
      constant(o.initializer, a->getAliasee());
    }
    if (auto* i = llvm::dyn_cast<llvm::GlobalIFunc>(&g)) {
      AGREE(o.kind == bc::GlobalKind::kIFunc, "@" << n << " not an ifunc");
      constant(o.initializer, i->getResolver());
    }
  }

  void variable(const bc::Global& o, const llvm::GlobalVariable& v) {
    AGREE(o.kind == bc::GlobalKind::kVariable, "@" << o.name << " not a variable");
    AGREE(o.constant == v.isConstant(), "constant of @" << o.name);
    AGREE((o.initializer != bc::kNone) == v.hasInitializer(), "initializer presence of @" << o.name);
    if (v.hasInitializer()) constant(o.initializer, v.getInitializer());
  }

  void function(const bc::Global& o, const llvm::Function& f) {
    std::string n = f.getName().str();
    AGREE(o.kind == bc::GlobalKind::kFunction, "@" << n << " not a function");
    AGREE(o.calling_conv == f.getCallingConv(), "calling convention of @" << n);
    AGREE((o.personality != bc::kNone) == f.hasPersonalityFn(), "personality of @" << n);
    if (f.hasPersonalityFn()) constant(o.personality, f.getPersonalityFn());
    AGREE(o.prefix_or_prologue == (f.hasPrefixData() || f.hasPrologueData()), "prefix/prologue of @" << n);
    AGREE(o.gc == f.hasGC(), "gc of @" << n);
    AGREE((o.body != bc::kNone) == !f.isDeclaration(), "body of @" << n);
    if (o.body != bc::kNone) {
      const bc::BcFunction& fn = m.functions[o.body];
      AGREE(fn.global == uint32_t(&o - m.globals.data()), "body's global of @" << n);
      AGREE(fn.arg_count == f.arg_size(), "argument count of @" << n);
      AGREE(fn.first_arg_value == m.module_value_count, "first argument value of @" << n);
    }
    llvm::AttributeList attrs = f.getAttributes();
    bc::AttrList none;
    const bc::AttrList& a = o.attributes == bc::kNone ? none : m.attribute_lists.at(o.attributes);
    using A = llvm::Attribute;
    AGREE(a.function.has(bc::kAttrNaked) == attrs.hasFnAttr(A::Naked), "naked of @" << n);
    AGREE(a.ret.has(bc::kAttrSExt) == attrs.hasRetAttr(A::SExt), "ret signext of @" << n);
    AGREE(a.ret.has(bc::kAttrZExt) == attrs.hasRetAttr(A::ZExt), "ret zeroext of @" << n);
    for (unsigned i = 0; i < f.arg_size(); ++i) {
      for (auto [ours, theirs] : {std::pair{bc::kAttrSExt, A::SExt},
                                  {bc::kAttrZExt, A::ZExt},
                                  {bc::kAttrByVal, A::ByVal},
                                  {bc::kAttrStructRet, A::StructRet},
                                  {bc::kAttrNest, A::Nest},
                                  {bc::kAttrInAlloca, A::InAlloca},
                                  {bc::kAttrPreallocated, A::Preallocated}})
        AGREE(a.param_has(i, ours) == attrs.hasParamAttr(i, theirs),
              "attribute " << int(ours) << " of parameter " << i << " of @" << n);
    }
  }

  // The constant value `id` is LLVM's `c`: by kind, integer words, data, element count,
  // expression opcode; operands followed a few levels deep.
  void constant(uint32_t id, const llvm::Constant* c, int depth = 0) {
    AGREE(id < m.module_value_count, "constant id " << id << " is no module value");
    const bc::ValueRef& v = m.values[id];
    if (auto* g = llvm::dyn_cast<llvm::GlobalValue>(c)) {
      AGREE(v.kind == bc::ValueKind::kGlobal && m.globals[v.index].name == g->getName().str(),
            "value " << id << " is not @" << g->getName().str());
      return;
    }
    AGREE(v.kind == bc::ValueKind::kConstant && v.index < m.constants.size(), "value " << id << " not a constant");
    const bc::Constant& k = m.constants[v.index];
    ++constants_compared;
    AGREE(k.type == v.type, "constant " << id << "'s type");
    type(k.type, c->getType());
    using CK = bc::ConstKind;
    if (llvm::isa<llvm::PoisonValue>(c)) {
      AGREE(k.kind == CK::kPoison, "constant " << id << " not poison");
    } else if (llvm::isa<llvm::UndefValue>(c)) {
      AGREE(k.kind == CK::kUndef, "constant " << id << " not undef");
    } else if (c->isNullValue() && !llvm::isa<llvm::ConstantExpr>(c)) {
      AGREE(k.kind == CK::kNull || k.kind == CK::kTokenNone || k.kind == CK::kTargetNone,
            "constant " << id << " not null");
    } else if (auto* i = llvm::dyn_cast<llvm::ConstantInt>(c)) {
      const llvm::APInt& a = i->getValue();
      AGREE(k.kind == CK::kInteger && k.words.size() == a.getNumWords(), "constant " << id << " not the integer");
      for (unsigned w = 0; w < a.getNumWords(); ++w)
        AGREE(k.words[w] == a.getRawData()[w], "word " << w << " of integer constant " << id);
    } else if (auto* f = llvm::dyn_cast<llvm::ConstantFP>(c)) {
      llvm::APInt a = f->getValueAPF().bitcastToAPInt();
      AGREE(k.kind == CK::kFloat && k.words.size() == a.getNumWords(), "constant " << id << " not the float");
      for (unsigned w = 0; w < a.getNumWords(); ++w)
        AGREE(k.words[w] == a.getRawData()[w], "word " << w << " of float constant " << id);
    } else if (auto* d = llvm::dyn_cast<llvm::ConstantDataSequential>(c)) {
      AGREE(k.kind == CK::kData && k.element_count() == d->getNumElements() &&
                k.element_bytes == d->getElementByteSize(),
            "constant " << id << " not the data");
      // The bytes are what LLVM's ConstantDataSequential holds, element by element.
      AGREE(k.bytes == std::vector<uint8_t>(d->getRawDataValues().begin(), d->getRawDataValues().end()),
            "bytes of data constant " << id);
      for (unsigned e = 0; e < d->getNumElements(); ++e) {
        uint64_t bits = d->getElementType()->isIntegerTy() ? d->getElementAsInteger(e)
                                                           : d->getElementAsAPFloat(e).bitcastToAPInt().getZExtValue();
        AGREE(k.element(e) == bits, "element " << e << " of data constant " << id);
      }
    } else if (llvm::isa<llvm::ConstantAggregate>(c)) {
      AGREE(k.kind == CK::kAggregate && k.operands.size() == c->getNumOperands(), "constant " << id << " aggregate");
      if (depth < 3)
        for (unsigned e = 0; e < c->getNumOperands(); ++e)
          constant(k.operands[e], llvm::cast<llvm::Constant>(c->getOperand(e)), depth + 1);
    } else if (auto* x = llvm::dyn_cast<llvm::ConstantExpr>(c)) {
      expression(id, k, x, depth);
    } else if (llvm::isa<llvm::BlockAddress>(c)) {
      AGREE(k.kind == CK::kBlockAddress, "constant " << id << " not a blockaddress");
    } else if (llvm::isa<llvm::DSOLocalEquivalent>(c)) {
      AGREE(k.kind == CK::kDsoLocalEquivalent, "constant " << id << " not dso_local_equivalent");
    } else if (llvm::isa<llvm::NoCFIValue>(c)) {
      AGREE(k.kind == CK::kNoCfi, "constant " << id << " not no_cfi");
    } else if (llvm::isa<llvm::ConstantPtrAuth>(c)) {
      AGREE(k.kind == CK::kPtrAuth, "constant " << id << " not ptrauth");
    }
  }

  void expression(uint32_t id, const bc::Constant& k, const llvm::ConstantExpr* x, int depth) {
    using CK = bc::ConstKind;
    if (x->isCast()) {
      AGREE(k.kind == CK::kCast && k.operands.size() == 1, "constant " << id << " not a cast");
    } else if (x->getOpcode() == llvm::Instruction::GetElementPtr) {
      auto* gep = llvm::cast<llvm::GEPOperator>(x);
      AGREE(k.kind == CK::kGep && k.operands.size() == x->getNumOperands(), "constant " << id << " not the gep");
      type(k.source_type, gep->getSourceElementType());
      AGREE(bool(k.flags & 1) == gep->isInBounds(), "inbounds of gep " << id);
    } else if (llvm::Instruction::isBinaryOp(x->getOpcode())) {
      AGREE(k.kind == CK::kBinary && k.operands.size() == 2, "constant " << id << " not the binary op");
    } else {
      AGREE(k.kind == CK::kOther, "constant " << id << " not kOther");
      return;
    }
    if (depth < 3)
      for (unsigned e = 0; e < x->getNumOperands(); ++e)
        constant(k.operands[e], llvm::cast<llvm::Constant>(x->getOperand(e)), depth + 1);
  }
};

struct ReaderTotals {
  uint64_t modules = 0, globals = 0, constants = 0, types = 0;
};

// Reads `bytes` with both readers and compares them.
void compare_with_llvm(const std::string& bytes, const std::string& name, ReaderTotals& totals) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> theirs = llvm_read(bytes, name, ctx);
  bc::BcModule ours = bc::read_bitcode(bytes, name);
  AGREE(ours.declined.empty(), "declined: " << ours.declined);
  AGREE(ours.triple == theirs->getTargetTriple().str(), "triple " << ours.triple);
  AGREE(ours.data_layout == theirs->getDataLayoutStr(), "data layout " << ours.data_layout);
  AGREE(ours.source_filename == theirs->getSourceFileName(), "source file name " << ours.source_filename);
  AGREE(ours.module_asm == !theirs->getModuleInlineAsm().empty(), "module asm");
  std::vector<const llvm::GlobalValue*> globals;
  for (const auto& g : theirs->globals()) globals.push_back(&g);
  for (const auto& g : theirs->functions()) globals.push_back(&g);
  for (const auto& g : theirs->aliases()) globals.push_back(&g);
  for (const auto& g : theirs->ifuncs()) globals.push_back(&g);
  AGREE(ours.globals.size() == globals.size(), ours.globals.size() << " globals, LLVM " << globals.size());
  AGREE(ours.module_value_count == ours.values.size() && ours.values.size() >= globals.size(), "module values");
  Comparer compare{ours, name};
  for (size_t i = 0; i < globals.size(); ++i) compare.global(ours.globals[i], *globals[i]);
  ++totals.modules;
  totals.globals += globals.size();
  totals.constants += compare.constants_compared;
  totals.types += ours.types.size();
}

std::vector<std::string> files_under(const std::string& dir, bool bc_only) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && (!bc_only || entry.path().extension() == ".bc"))
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

void compare_ir(const char* ir, const std::string& name) {
  ReaderTotals totals;
  compare_with_llvm(kiln_test::bitcode_from_ir(ir), name, totals);
}

bc::BcModule read_ir(const char* ir) { return bc::read_bitcode(kiln_test::bitcode_from_ir(ir), "test.bc"); }

// Every record family's edge cases in one module: odd struct names, packed, opaque and
// recursive structs, wide integers, every float kind, data and strings, every linkage,
// comdat kinds, sections, TLS, address spaces, constant expressions, aliases, ifuncs.
const char* kFamiliesIr =
    R"IR(target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
source_filename = "odd.c"
module asm "nop"

%"struct.odd name\01\22" = type { i32, ptr, [3 x i8] }
%packed = type <{ i8, i64 }>
%opaque = type opaque
%rec = type { ptr, %inner }
%inner = type { i128, <4 x float> }

$cd = comdat any
$cl = comdat largest
$cx = comdat exactmatch
$cn = comdat nodeduplicate
$cs = comdat samesize

@wide = global i128 -170141183460469231731687303715884105728
@wide2 = global i256 12345678901234567890123456789012345678901234567890
@wide3 = global i128 5
@wide4 = global i96 -2
@i1v = global i1 true
@neg = global i64 -1
@min = global i64 -9223372036854775808
@i7 = global i7 -3
@s = global %"struct.odd name\01\22" { i32 5, ptr @s, [3 x i8] c"ab\00" }
@p = internal constant %packed <{ i8 1, i64 2 }>, align 16, section ".mysec"
@o = external global %opaque
@r = private unnamed_addr global %rec zeroinitializer
@v = global <4 x float> <float 1.0, float 2.0, float 3.0, float 4.0>
@vi = global <4 x i32> <i32 1, i32 2, i32 3, i32 4>
@arr = global [2 x %packed] [%packed <{ i8 1, i64 2 }>, %packed <{ i8 3, i64 4 }>]
@str = constant [6 x i8] c"hello\00"
@nostr = constant [3 x i8] c"abc"
@d16 = global [3 x i16] [i16 1, i16 2, i16 -1]
@df = global [2 x double] [double 1.0, double 2.5]
@h = global half 1.5
@bf = global bfloat 2.0
@x = global x86_fp80 0xK4000C000000000000000
@q = global fp128 0xL00000000000000004000000000000000
@d = global double 3.25
@f = global float -0.5
@tls = thread_local global i32 7
@tlsle = thread_local(localexec) global i32 8
@hid = hidden global i32 9
@prot = protected global i32 10
@weak = weak global i32 11
@lo = linkonce_odr global i32 12, comdat($cd)
@wo = weak_odr global i32 13, comdat($cl)
@com = common global i32 0
@ew = extern_weak global i32
@ae = available_externally global i32 14
@cx1 = global i32 1, comdat($cx)
@cn1 = global i32 1, comdat($cn)
@cs1 = global i32 1, comdat($cs)
@as1 = addrspace(1) global i32 15
@lu = local_unnamed_addr global i32 16
@dl = dso_local global i32 17
@gep = global ptr getelementptr inbounds (%"struct.odd name\01\22", ptr @s, i64 0, i32 2, i64 1)
@gep2 = global ptr getelementptr (i8, ptr @s, i64 3)
@pti = global i64 ptrtoint (ptr @s to i64)
@asc = global ptr addrspacecast (ptr addrspace(1) @as1 to ptr)
@sub = global i64 sub (i64 ptrtoint (ptr @s to i64), i64 ptrtoint (ptr @p to i64))
@und = global i32 undef
@poi = global i32 poison
@nul = global ptr null
@app = appending global [1 x ptr] [ptr @fn]
@dsl = global ptr dso_local_equivalent @fn
@ba = global ptr blockaddress(@fn, %bb)
@ncfi = global ptr no_cfi @fn
@ali = alias i32, ptr @hid
@ali2 = internal alias i32, getelementptr (i32, ptr @hid, i64 1)
@ifn = ifunc void (), ptr @resolver

define ptr @resolver() { ret ptr null }
define void @fn() personality ptr @pers {
  br label %bb
bb:
  ret void
}
declare i32 @pers(...)
define internal fastcc zeroext i8 @attrs(ptr byval(%packed) %b, i8 signext %c, ptr nest %d) section ".text.x" comdat($cd) align 32 gc "shadow-stack" {
  ret i8 0
}
define void @ina(ptr inalloca(i32) %e) { ret void }
define void @sr(ptr sret(%packed) %a) { ret void }
define void @naked() naked { unreachable }
define void @pre() prefix i32 1 { ret void }
define void @pro() prologue i8 1 { ret void }
define i32 @va(i32, ...) { ret i32 0 }
declare <vscale x 4 x i32> @sv(<vscale x 4 x i32>)
declare void @tt(target("aarch64.svcount"))
@amxp = global ptr null
define void @amxf(ptr %p) {
  %t = call x86_amx @llvm.x86.tileloadd64.internal(i16 8, i16 8, ptr %p, i64 8)
  ret void
}
declare x86_amx @llvm.x86.tileloadd64.internal(i16, i16, ptr, i64)
declare ppc_fp128 @ppc(ppc_fp128)
)IR";

const bc::Global& global_named(const bc::BcModule& m, const std::string& name) {
  for (const bc::Global& g : m.globals)
    if (g.name == name) return g;
  FAIL("no @" << name);
  throw;
}

const bc::Constant& initializer(const bc::BcModule& m, const std::string& name) {
  const bc::Global& g = global_named(m, name);
  REQUIRE(g.initializer < m.values.size());
  REQUIRE(m.values[g.initializer].kind == bc::ValueKind::kConstant);
  return m.constants.at(m.values[g.initializer].index);
}

// A C file compiled by the clang next to llvm-as, when there is one.
std::string clang_module(const std::string& source, const std::string& dir) {
  std::string clang = KILN_LLVM_AS;
  clang = clang.substr(0, clang.size() - std::string("llvm-as").size()) + "clang";
  if (!std::filesystem::exists(clang)) return {};
  std::string c = dir + "/m.c", bc = dir + "/m.bc";
  std::ofstream(c) << source;
  std::string cmd = "'" + clang + "' -O1 -g -c -emit-llvm -o '" + bc + "' '" + c + "'";
  if (std::system(cmd.c_str()) != 0) return {};
  return read_file(bc);
}

// Hand-built modules for what LLVM's writer never writes: IDENTIFICATION (with `epoch`),
// a MODULE block of VERSION `version`, the type records given, then `body`, then a
// STRTAB holding `strtab`.
using Records = std::vector<std::pair<uint64_t, std::vector<uint64_t>>>;
std::string hand_module(const Records& types, const Records& body, uint64_t epoch = 0, uint64_t version = 2,
                        const std::string& strtab = "abcdef") {
  kiln_test::BitWriter w;
  w.enter(13, 5);
  w.unabbrev(1, {'L', 'L', 'V', 'M'});
  w.unabbrev(2, {epoch});
  w.end();
  w.enter(8, 3);
  w.unabbrev(1, {version});
  w.enter(17, 4);
  w.unabbrev(1, {uint64_t(std::count_if(types.begin(), types.end(), [](const auto& r) { return r.first != 19; }))});
  for (const auto& [code, ops] : types) w.unabbrev(code, ops);
  w.end();
  for (const auto& [code, ops] : body) {
    if (code >= 1000) {  // 1000 + block id: enter it; 999: end it
      w.enter(code - 1000, 4);
    } else if (code == 999) {
      w.end();
    } else {
      w.unabbrev(code, ops);
    }
  }
  w.end();
  w.enter(23, 3);
  w.define_abbrev({{true, 0, 1}, {false, 5, 0}});
  w.abbrev_id(4);
  w.blob(strtab);
  w.end();
  return w.bytes();
}

// i32, ptr and i32 (): the types most hand-built modules need.
const Records kBasicTypes = {{7, {32}}, {25, {0}}, {21, {0, 0}}};
constexpr uint64_t kEnd = 999;
constexpr uint64_t kConstants = 1011, kParamAttr = 1009, kFunctionBlock = 1012;

void expect_bad(const std::string& file, const std::string& why) {
  try {
    bc::BcModule m = bc::read_bitcode(file, "hand.bc");
    FAIL("read, expected: " << why << (m.declined.empty() ? "" : " (declined: " + m.declined + ")"));
  } catch (const KilnError& e) {
    CAPTURE(e.what());
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find(why) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("bitcode reader: real modules read as LLVM reads them", "[bitcode-reader]") {
  ReaderTotals totals;
  std::vector<std::string> files = files_under(KILN_TEST_DATA "/bitstream", true);
  REQUIRE(files.size() >= 3);
  for (const std::string& path : files) compare_with_llvm(read_file(path), path, totals);
  compare_with_llvm(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "add", totals);
  std::printf("bitcode reader: %llu modules, %llu globals, %llu constants, %llu types agree with LLVM\n",
              (unsigned long long)totals.modules, (unsigned long long)totals.globals,
              (unsigned long long)totals.constants, (unsigned long long)totals.types);
  CHECK(totals.globals > 50);
}

// Hidden; with no corpus named it prints a skip line and passes.
TEST_CASE("bitcode reader: a whole corpus reads as LLVM reads it", "[.corpus]") {
  const char* dir = std::getenv("KILN_BITCODE_CORPUS");
  if (!dir) {
    std::printf("skip - [.corpus] needs KILN_BITCODE_CORPUS=DIR\n");
    return;
  }
  ReaderTotals totals;
  for (const std::string& path : files_under(dir, false)) compare_with_llvm(read_file(path), path, totals);
  std::printf("bitcode reader: %llu modules, %llu globals, %llu constants, %llu types agree with LLVM\n",
              (unsigned long long)totals.modules, (unsigned long long)totals.globals,
              (unsigned long long)totals.constants, (unsigned long long)totals.types);
}

TEST_CASE("bitcode reader: every record family as LLVM reads it", "[bitcode-reader]") {
  compare_ir(kFamiliesIr, "families");
  compare_ir(R"IR(
%t = type { i32 }
define void @only() { ret void })IR",
             "no triple");
}

TEST_CASE("bitcode reader: types", "[bitcode-reader]") {
  bc::BcModule m = read_ir(kFamiliesIr);
  REQUIRE(m.declined.empty());
  const bc::Type& odd = m.types[global_named(m, "s").value_type];
  CHECK(odd.name == "struct.odd name\x01\"");
  CHECK((odd.named && !odd.packed && odd.elements.size() == 3));
  const bc::Type& packed = m.types[global_named(m, "p").value_type];
  CHECK((packed.packed && packed.named && packed.name == "packed"));
  const bc::Type& opaque = m.types[global_named(m, "o").value_type];
  CHECK((opaque.opaque && opaque.named && opaque.elements.empty()));
  const bc::Type& va = m.types[global_named(m, "va").value_type];
  CHECK((va.kind == bc::TypeKind::kFunction && va.vararg && va.elements.size() == 2));
  const bc::Type& sv = m.types[global_named(m, "sv").value_type];
  REQUIRE(sv.kind == bc::TypeKind::kFunction);
  CHECK((m.types[sv.elements[0]].kind == bc::TypeKind::kScalableVector && m.types[sv.elements[0]].count == 4));
  const bc::Type& tt = m.types[global_named(m, "tt").value_type];
  CHECK(
      (m.types[tt.elements[1]].kind == bc::TypeKind::kTargetExt && m.types[tt.elements[1]].name == "aarch64.svcount"));
  CHECK(m.find_integer_type(128) != bc::kNone);
  CHECK(m.find_integer_type(13) == bc::kNone);
  uint32_t f32 = bc::kNone;
  for (uint32_t i = 0; i < m.types.size(); ++i)
    if (m.types[i].kind == bc::TypeKind::kFloat) f32 = i;
  CHECK(m.find_vector_type(f32, 4, false) == global_named(m, "v").value_type);
  CHECK(m.find_vector_type(f32, 4, true) == bc::kNone);
  // The value of a global is a pointer of its address space.
  const bc::Global& as1 = global_named(m, "as1");
  const bc::ValueRef& v = m.values[&as1 - m.globals.data()];
  CHECK((m.types[v.type].kind == bc::TypeKind::kPointer && m.types[v.type].address_space == 1));
}

TEST_CASE("bitcode reader: globals, comdats, sections and the string table", "[bitcode-reader]") {
  bc::BcModule m = read_ir(kFamiliesIr);
  CHECK(m.source_filename == "odd.c");
  CHECK(m.module_asm);
  const bc::Global& p = global_named(m, "p");
  CHECK((p.section == ".mysec" && p.align == 16 && p.constant && p.linkage == bc::Linkage::kInternal && p.dso_local));
  CHECK(global_named(m, "tlsle").thread_local_);
  CHECK(global_named(m, "hid").visibility == bc::Visibility::kHidden);
  CHECK(global_named(m, "prot").visibility == bc::Visibility::kProtected);
  CHECK(global_named(m, "ew").linkage == bc::Linkage::kExternalWeak);
  CHECK(global_named(m, "ew").declaration);
  CHECK(global_named(m, "lu").unnamed_addr == 2);
  CHECK(global_named(m, "r").unnamed_addr == 1);
  const bc::Global& attrs = global_named(m, "attrs");
  CHECK((attrs.section == ".text.x" && attrs.align == 32 && attrs.gc && attrs.calling_conv == 8));
  REQUIRE(attrs.comdat != bc::kNone);
  CHECK(m.comdats[attrs.comdat].name == "cd");
  CHECK(m.comdats[global_named(m, "cs1").comdat].selection == 5);
  CHECK(
      (m.comdats[global_named(m, "wo").comdat].name == "cl" && m.comdats[global_named(m, "wo").comdat].selection == 3));
  CHECK(global_named(m, "fn").personality != bc::kNone);
  CHECK(global_named(m, "pre").prefix_or_prologue);
  CHECK(global_named(m, "pro").prefix_or_prologue);
  CHECK(global_named(m, "ali").kind == bc::GlobalKind::kAlias);
  CHECK(global_named(m, "ifn").kind == bc::GlobalKind::kIFunc);
  const bc::AttrList& a = m.attribute_lists.at(attrs.attributes);
  CHECK((a.param_has(0, bc::kAttrByVal) && a.param_has(1, bc::kAttrSExt) && a.param_has(2, bc::kAttrNest)));
  CHECK(a.ret.has(bc::kAttrZExt));
  CHECK(m.attribute_lists.at(global_named(m, "naked").attributes).function.has(bc::kAttrNaked));
  CHECK(m.attribute_lists.at(global_named(m, "sr").attributes).param_has(0, bc::kAttrStructRet));
  CHECK(m.attribute_lists.at(global_named(m, "ina").attributes).param_has(0, bc::kAttrInAlloca));
  // Bodies pair with definitions in order; arguments follow the module's values.
  for (const bc::BcFunction& f : m.functions) CHECK(f.first_arg_value == m.module_value_count);
  CHECK(m.functions[global_named(m, "va").body].arg_count == 1);
  CHECK_THROWS_AS(bc::value_ref(m, bc::kNone, m.module_value_count), KilnError);
  CHECK(bc::value_ref(m, bc::kNone, 0).kind == bc::ValueKind::kGlobal);
}

TEST_CASE("bitcode reader: constants", "[bitcode-reader]") {
  bc::BcModule m = read_ir(kFamiliesIr);
  CHECK(initializer(m, "wide").words == std::vector<uint64_t>{0, uint64_t(1) << 63});
  CHECK(initializer(m, "wide3").words == std::vector<uint64_t>{5, 0});
  CHECK(initializer(m, "wide4").words == std::vector<uint64_t>{~uint64_t(1), 0xFFFFFFFFu});
  CHECK(initializer(m, "neg").words == std::vector<uint64_t>{~uint64_t(0)});
  CHECK(initializer(m, "min").words == std::vector<uint64_t>{uint64_t(1) << 63});
  CHECK(initializer(m, "i7").words == std::vector<uint64_t>{0x7D});
  CHECK(initializer(m, "i1v").words == std::vector<uint64_t>{1});
  const bc::Constant& str = initializer(m, "str");
  CHECK((str.kind == bc::ConstKind::kData && str.string && str.element_bytes == 1 &&
         str.bytes == std::vector<uint8_t>{'h', 'e', 'l', 'l', 'o', 0} && str.words.empty()));
  const bc::Constant& d16 = initializer(m, "d16");
  CHECK((d16.element_bytes == 2 && d16.bytes == std::vector<uint8_t>{1, 0, 2, 0, 0xFF, 0xFF}));
  CHECK((d16.element_count() == 3 && d16.element(2) == 0xFFFF));
  const bc::Constant& df = initializer(m, "df");
  CHECK((df.element_bytes == 8 && df.element_count() == 2 && df.element(1) == 0x4004000000000000u));
  CHECK(initializer(m, "f").words == std::vector<uint64_t>{0xBF000000u});
  CHECK(initializer(m, "h").words == std::vector<uint64_t>{0x3E00});
  CHECK(initializer(m, "x").words.size() == 2);
  const bc::Constant& gep = initializer(m, "gep");
  CHECK((gep.kind == bc::ConstKind::kGep && (gep.flags & 1) && gep.operands.size() == 4));
  CHECK(m.types[gep.source_type].name == "struct.odd name\x01\"");
  const bc::Constant& pti = initializer(m, "pti");
  CHECK((pti.kind == bc::ConstKind::kCast && pti.opcode == 9));
  CHECK(initializer(m, "asc").opcode == 12);
  const bc::Constant& sub = initializer(m, "sub");
  CHECK((sub.kind == bc::ConstKind::kBinary && sub.opcode == 1));
  CHECK(initializer(m, "und").kind == bc::ConstKind::kUndef);
  CHECK(initializer(m, "poi").kind == bc::ConstKind::kPoison);
  CHECK(initializer(m, "nul").kind == bc::ConstKind::kNull);
  CHECK(initializer(m, "r").kind == bc::ConstKind::kNull);
  CHECK(initializer(m, "ba").kind == bc::ConstKind::kBlockAddress);
  CHECK(initializer(m, "dsl").kind == bc::ConstKind::kDsoLocalEquivalent);
  CHECK(initializer(m, "ncfi").kind == bc::ConstKind::kNoCfi);
  const bc::Constant& arr = initializer(m, "arr");
  CHECK((arr.kind == bc::ConstKind::kAggregate && arr.operands.size() == 2));
}

TEST_CASE("bitcode reader: modules clang writes", "[bitcode-reader]") {
  kiln_test::ScratchDir scratch;
  std::string bytes = clang_module(R"C(
struct big { long a[8]; };
_Thread_local int counter = 3;
static const char *names[] = {"alpha", "beta", 0};
__attribute__((section(".data.kiln"), aligned(64))) int tagged[4] = {1, 2, 3, 4};
__int128 wide = (__int128)1 << 100;
long double ld = 1.5L;
struct big make(struct big b, signed char c, unsigned short s) { b.a[0] = c + s; return b; }
__attribute__((weak)) int weakling(void) { return names[1][0]; }
__attribute__((naked)) void bare(void) { __asm__("ret"); }
int use(void) { return counter + tagged[2] + (int)wide + (int)ld; }
)C",
                                   scratch.path);
  if (bytes.empty()) {
    std::printf("skip - no clang next to llvm-as\n");
    return;
  }
  ReaderTotals totals;
  compare_with_llvm(bytes, "clang", totals);
  CHECK(totals.globals >= 8);
}

TEST_CASE("bitcode reader: truncated and bit-flipped modules fail as bad input or read", "[bitcode-reader]") {
  std::vector<std::string> sources = {read_file(KILN_TEST_DATA "/bitstream/regex-4k.bc"),
                                      kiln_test::bitcode_from_ir(kFamiliesIr)};
  uint64_t state = 0x9E3779B97F4A7C15ull, read = 0, refused = 0;
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  for (const std::string& original : sources) {
    for (int i = 0; i < 400; ++i) {
      std::string file = original;
      if (i % 4 == 0) {
        file.resize(next() % file.size());
      } else {
        for (int flips = 1 + i % 3; flips > 0; --flips) file[next() % file.size()] ^= char(1u << (next() % 8));
      }
      try {
        bc::BcModule m = bc::read_bitcode(file, "mutant");
        ++read;
      } catch (const KilnError& e) {
        CAPTURE(i, e.what());
        REQUIRE(e.code() == kExitBadInput);
        ++refused;
      }
    }
  }
  std::printf("bitcode reader: %llu mutants read, %llu refused as bad input\n", (unsigned long long)read,
              (unsigned long long)refused);
}

TEST_CASE("bitcode reader: hostile records fail as bad input", "[bitcode-reader]") {
  CHECK_THROWS_AS(bc::read_bitcode(std::string("BC\xC0\xDE", 4), "empty"), KilnError);
  try {
    bc::read_bitcode(std::string("not bitcode at all"), "foreign");
    FAIL("read a foreign file");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
  }
}

TEST_CASE("bitcode reader: hand-built modules read", "[bitcode-reader]") {
  // A variable @abc = global i32 5 and a declaration @def of i32 ().
  bc::BcModule m = bc::read_bitcode(hand_module(kBasicTypes,
                                                {{7, {0, 3, 0, 3, 3, 0, 0, 0}},
                                                 {8, {3, 3, 2, 0, 1, 0, 0, 0, 0, 0}},
                                                 {kConstants, {}},
                                                 {1, {0}},
                                                 {4, {10}},
                                                 {kEnd, {}}}),
                                    "hand.bc");
  REQUIRE(m.declined.empty());
  REQUIRE(m.globals.size() == 2);
  CHECK((m.globals[0].name == "abc" && m.globals[1].name == "def" && m.globals[1].declaration));
  CHECK(m.module_value_count == 3);
  CHECK(m.constants.at(0).words == std::vector<uint64_t>{5});
  CHECK(m.values[m.globals[0].initializer].kind == bc::ValueKind::kConstant);
}

TEST_CASE("bitcode reader: data constants keep their elements as the bytes memory holds", "[bitcode-reader]") {
  // Types 3 on: i8, i16, i64, i24, [4 x i8], [2 x i16], <2 x i32>, [2 x i64], [2 x i24],
  // [2 x double].
  Records types = kBasicTypes;
  for (const auto& t : Records{{7, {8}},
                               {7, {16}},
                               {7, {64}},
                               {7, {24}},
                               {11, {4, 3}},
                               {11, {2, 4}},
                               {12, {2, 0}},
                               {11, {2, 5}},
                               {11, {2, 6}},
                               {4, {}},
                               {11, {2, 12}}})
    types.push_back(t);
  bc::BcModule m = bc::read_bitcode(hand_module(types,
                                                {{kConstants, {}},
                                                 {1, {7}},
                                                 {8, {'a', 'b', 'c', 0x1FF}},
                                                 {9, {'x', 'y', 'z'}},
                                                 {22, {1, 2, 3, 0x104}},
                                                 {1, {8}},
                                                 {22, {1, 0x1FFFF}},
                                                 {1, {9}},
                                                 {22, {0xFFFFFFFF, 7}},
                                                 {1, {10}},
                                                 {22, {~uint64_t(0), 5}},
                                                 {1, {13}},
                                                 {22, {0x3FF0000000000000u, 0}},
                                                 {kEnd, {}}}),
                                    "data.bc");
  REQUIRE(m.declined.empty());
  REQUIRE(m.constants.size() == 7);
  using Bytes = std::vector<uint8_t>;
  // A STRING operand keeps its low byte, as LLVM keeps it.
  CHECK((m.constants[0].string && m.constants[0].bytes == Bytes{'a', 'b', 'c', 0xFF}));
  CHECK((m.constants[1].string && m.constants[1].bytes == Bytes{'x', 'y', 'z', 0}));
  CHECK((!m.constants[2].string && m.constants[2].bytes == Bytes{1, 2, 3, 4}));
  CHECK((m.constants[3].element_bytes == 2 && m.constants[3].bytes == Bytes{1, 0, 0xFF, 0xFF}));
  CHECK((m.constants[4].element_bytes == 4 && m.constants[4].bytes == Bytes{0xFF, 0xFF, 0xFF, 0xFF, 7, 0, 0, 0}));
  CHECK((m.constants[5].element_count() == 2 && m.constants[5].element(0) == ~uint64_t(0) &&
         m.constants[5].element(1) == 5));
  CHECK((m.constants[6].element_bytes == 8 && m.constants[6].element(0) == 0x3FF0000000000000u));
  for (const bc::Constant& k : m.constants) CHECK((k.kind == bc::ConstKind::kData && k.words.empty()));

  // Each count is checked as it was when the elements were words.
  auto bad = [&](const Records& body, const std::string& why) {
    Records all = {{kConstants, {}}};
    all.insert(all.end(), body.begin(), body.end());
    all.push_back({kEnd, {}});
    expect_bad(hand_module(types, all), why);
  };
  bad({{1, {8}}, {22, {1}}}, "data constant of the wrong element count");
  bad({{1, {8}}, {22, {1, 2, 3}}}, "data constant of the wrong element count");
  bad({{1, {8}}, {22, {}}}, "short data constant record");
  bad({{1, {11}}, {22, {1, 2}}}, "data constant of an element type that has none");
  bad({{1, {7}}, {8, {'a'}}}, "string constant of the wrong length");
  bad({{1, {7}}, {9, {'a', 'b', 'c', 'd'}}}, "string constant of the wrong length");
  bad({{1, {8}}, {8, {'a', 'b'}}}, "string constant of a type other than an i8 array");
  bad({{1, {9}}, {9, {'a'}}}, "string constant of a type other than an i8 array");
  bad({{1, {3}}, {22, {1}}}, "data constant of a non-aggregate type");
}

TEST_CASE("bitcode reader: what it does not model declines", "[bitcode-reader]") {
  CHECK(bc::read_bitcode(hand_module({{7, {32}}, {8, {0}}}, {}), "typed.bc").declined.find("typed pointers") !=
        std::string::npos);
  CHECK(bc::read_bitcode(hand_module({{17, {}}}, {}), "mmx.bc").declined.find("x86_mmx") != std::string::npos);
  CHECK(bc::read_bitcode(hand_module(kBasicTypes, {}, 0, 1), "v1.bc").declined.find("module version 1") !=
        std::string::npos);
  CHECK(bc::read_bitcode(hand_module({{7, {32}}, {40, {}}}, {}), "newer.bc").declined.find("type record 40") !=
        std::string::npos);
  CHECK(bc::read_bitcode(hand_module({{7, {2048}}}, {{kConstants, {}}, {1, {0}}, {4, {2}}, {kEnd, {}}}), "wide.bc")
            .declined.find("wider than 1024") != std::string::npos);
}

TEST_CASE("bitcode reader: hostile modules fail as bad input, naming why", "[bitcode-reader]") {
  expect_bad(hand_module(kBasicTypes, {}, 1), "newer bitcode epoch 1");
  // Types: a struct holding itself, a forward reference to a non-struct, too deep a nest.
  expect_bad(hand_module({{7, {32}}, {19, {'a'}}, {20, {0, 1}}}, {}), "contains itself");
  expect_bad(hand_module({{11, {2, 1}}, {7, {8}}}, {}), "not a named struct");
  Records deep = {{7, {8}}};
  for (uint64_t i = 0; i < 300; ++i) deep.push_back({11, {2, i}});
  expect_bad(hand_module(deep, {}), "nested deeper");
  expect_bad(hand_module({{7, {0}}}, {}), "integer type width");
  // Globals: every index checked.
  expect_bad(hand_module(kBasicTypes, {{7, {0, 1, 7, 2, 0, 0, 0, 0}}}), "outside the table");
  expect_bad(hand_module(kBasicTypes, {{7, {1, 100, 0, 2, 0, 0, 0, 0}}}), "string table");
  expect_bad(hand_module(kBasicTypes, {{7, {0, 1, 0, 2, 0, 0, 0, 3}}}), "section index");
  expect_bad(hand_module(kBasicTypes, {{7, {0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}}}), "comdat id");
  expect_bad(hand_module(kBasicTypes, {{7, {0, 1, 0, 2, 50, 0, 0, 0}}}), "no module value");
  expect_bad(hand_module(kBasicTypes, {{7, {0, 1, 0, 2, 0, 0, 40, 0}}}), "alignment exponent");
  expect_bad(hand_module(kBasicTypes, {{8, {0, 1, 2, 0, 1, 0, 9, 0, 0, 0}}}), "attribute list");
  expect_bad(hand_module(kBasicTypes, {{8, {0, 1, 0, 0, 1, 0, 0, 0, 0, 0}}}), "non-function type");
  expect_bad(
      hand_module(
          kBasicTypes,
          {{8, {0, 1, 2, 0, 1, 0, 0, 0, 0, 0}}, {kFunctionBlock, {}}, {kEnd, {}}, {kFunctionBlock, {}}, {kEnd, {}}}),
      "more function bodies");
  expect_bad(hand_module(kBasicTypes,
                         {{8, {0, 1, 2, 0, 0, 0, 0, 0, 0, 0}},
                          {kFunctionBlock, {}},
                          {kEnd, {}},
                          {8, {0, 1, 2, 0, 1, 0, 0, 0, 0, 0}}}),
             "after a function body");
  // Constants.
  expect_bad(hand_module(kBasicTypes, {{kConstants, {}}, {1, {77}}, {kEnd, {}}}), "outside the table");
  expect_bad(hand_module(kBasicTypes, {{kConstants, {}}, {1, {0}}, {8, {'h', 'i'}}, {kEnd, {}}}), "string constant");
  expect_bad(hand_module(kBasicTypes, {{kConstants, {}}, {1, {1}}, {11, {9, 0, 99}}, {kEnd, {}}}), "is no value");
  expect_bad(hand_module(kBasicTypes, {{kConstants, {}}, {1, {0}}, {22, {1, 2}}, {kEnd, {}}}), "non-aggregate");
  expect_bad(hand_module({{7, {32}}, {25, {0}}, {11, {2, 0}}},
                         {{kConstants, {}}, {1, {0}}, {4, {2}}, {1, {1}}, {2, {}}, {1, {2}}, {7, {0, 1}}, {kEnd, {}}}),
             "aggregate constant element 1");
  expect_bad(hand_module(kBasicTypes,
                         {{7, {0, 1, 1, 3, 2, 0, 0, 0}}, {kConstants, {}}, {1, {0}}, {4, {20}}, {kEnd, {}}}),
             "of another type");
  // Attributes.
  expect_bad(hand_module(kBasicTypes, {{kParamAttr, {}}, {2, {5}}, {kEnd, {}}}), "unknown group");
  expect_bad(hand_module(kBasicTypes, {{1010, {}}, {3, {1, 0xFFFFFFFF, 3, 'a'}}, {kEnd, {}}}), "terminating 0");
  expect_bad(hand_module(kBasicTypes, {{1010, {}}, {3, {1, 0xFFFFFFFF, 9, 1}}, {kEnd, {}}}), "unknown encoding");
}

TEST_CASE("bitcode reader: a file of two modules is refused, as LLVM's parseBitcodeFile refuses it",
          "[bitcode-reader]") {
  kiln_test::ScratchDir scratch;
  std::string one = scratch.path + "/one.bc", both = scratch.path + "/both.bc";
  std::ofstream(one, std::ios::binary) << kiln_test::bitcode_from_ir(kiln_test::kAddIr);
  std::string tool = KILN_LLVM_AS;
  tool = tool.substr(0, tool.size() - std::string("llvm-as").size()) + "llvm-cat";
  REQUIRE(std::system((tool + " -b -o '" + both + "' '" + one + "' '" + one + "'").c_str()) == 0);
  expect_bad(read_file(both), "a second module");
  REQUIRE(bc::read_bitcode(read_file(one), one).globals.size() == 1);
}

TEST_CASE("bitcode reader: a module rustc writes", "[bitcode-reader]") {
  kiln_test::ScratchDir scratch;
  std::string rs = scratch.path + "/m.rs", bc = scratch.path + "/m.bc";
  std::ofstream(rs) << R"RS(
use std::collections::HashMap;
pub static TABLE: [u16; 5] = [1, 2, 3, 5, 8];
thread_local!(static COUNT: std::cell::Cell<u32> = std::cell::Cell::new(0));
#[repr(C)] pub struct Pair { pub a: u8, pub b: i128 }
#[no_mangle] pub extern "C" fn pair(p: Pair) -> i128 { p.b + p.a as i128 }
pub fn words(s: &str) -> HashMap<String, usize> {
  let mut m = HashMap::new();
  for w in s.split_whitespace() { *m.entry(w.to_string()).or_insert(0) += 1; }
  COUNT.with(|c| c.set(c.get() + 1));
  m
}
pub fn boxed(x: u64) -> Box<dyn Fn(u64) -> u64> { Box::new(move |y| x * y + TABLE[2] as u64) }
)RS";
  std::string cmd = "rustc --crate-type=lib -O --emit=llvm-bc -o '" + bc + "' '" + rs + "' 2>&1";
  if (std::system(("command -v rustc >/dev/null 2>&1 && " + cmd).c_str()) != 0) {
    std::printf("skip - no rustc that writes LLVM 22 bitcode\n");
    return;
  }
  ReaderTotals totals;
  compare_with_llvm(read_file(bc), "rustc", totals);
  CHECK(totals.globals >= 10);
}
