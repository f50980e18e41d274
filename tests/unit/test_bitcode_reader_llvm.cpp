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
      AGREE(k.kind == CK::kData && k.words.size() == d->getNumElements(), "constant " << id << " not the data");
      for (unsigned e = 0; e < d->getNumElements(); ++e) {
        uint64_t bits = d->getElementType()->isIntegerTy() ? d->getElementAsInteger(e)
                                                           : d->getElementAsAPFloat(e).bitcastToAPInt().getZExtValue();
        AGREE(k.words[e] == bits, "element " << e << " of data constant " << id);
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

struct Totals {
  uint64_t modules = 0, globals = 0, constants = 0, types = 0;
};

// Reads `bytes` with both readers and compares them.
void compare_with_llvm(const std::string& bytes, const std::string& name, Totals& totals) {
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
  Totals totals;
  compare_with_llvm(kiln_test::bitcode_from_ir(ir), name, totals);
}

bc::BcModule read_ir(const char* ir) { return bc::read_bitcode(kiln_test::bitcode_from_ir(ir), "test.bc"); }

}  // namespace

TEST_CASE("bitcode reader: real modules read as LLVM reads them", "[bitcode-reader]") {
  Totals totals;
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
  Totals totals;
  for (const std::string& path : files_under(dir, false)) compare_with_llvm(read_file(path), path, totals);
  std::printf("bitcode reader: %llu modules, %llu globals, %llu constants, %llu types agree with LLVM\n",
              (unsigned long long)totals.modules, (unsigned long long)totals.globals,
              (unsigned long long)totals.constants, (unsigned long long)totals.types);
}
