// The LLVM-free layout, type names and intrinsic lookup (lib/stamp/bitcode_layout.h)
// against LLVM's own: every type of the regex modules and of hand-written IR, turned
// into a BcModule type table, must have LLVM's sizes, alignments, field offsets and
// printed name under several data layout strings; every global LLVM's preferred
// alignment; every intrinsic name (and suffixed and near-miss forms) LLVM's id.
#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bitcode_layout.h"
#include "error.h"

using namespace kiln;

namespace {

// --- llvm::Type trees as a BcModule type table.

struct Converter {
  bc::BcModule m;
  std::map<llvm::Type*, uint32_t> ids;

  uint32_t add(llvm::Type* t) {
    if (auto it = ids.find(t); it != ids.end()) return it->second;
    uint32_t id = static_cast<uint32_t>(m.types.size());
    m.types.emplace_back();
    ids[t] = id;  // before the elements: identified structs by identity
    bc::Type out = shape(t);
    for (llvm::Type* sub : t->subtypes()) out.elements.push_back(add(sub));
    m.types[id] = std::move(out);
    return id;
  }

  static bc::Type shape(llvm::Type* t) {
    bc::Type out;
    switch (t->getTypeID()) {
      case llvm::Type::VoidTyID:
        out.kind = bc::TypeKind::kVoid;
        break;
      case llvm::Type::HalfTyID:
        out.kind = bc::TypeKind::kHalf;
        break;
      case llvm::Type::BFloatTyID:
        out.kind = bc::TypeKind::kBFloat;
        break;
      case llvm::Type::FloatTyID:
        out.kind = bc::TypeKind::kFloat;
        break;
      case llvm::Type::DoubleTyID:
        out.kind = bc::TypeKind::kDouble;
        break;
      case llvm::Type::X86_FP80TyID:
        out.kind = bc::TypeKind::kX86Fp80;
        break;
      case llvm::Type::FP128TyID:
        out.kind = bc::TypeKind::kFp128;
        break;
      case llvm::Type::PPC_FP128TyID:
        out.kind = bc::TypeKind::kPpcFp128;
        break;
      case llvm::Type::LabelTyID:
        out.kind = bc::TypeKind::kLabel;
        break;
      case llvm::Type::MetadataTyID:
        out.kind = bc::TypeKind::kMetadata;
        break;
      case llvm::Type::X86_AMXTyID:
        out.kind = bc::TypeKind::kX86Amx;
        break;
      case llvm::Type::TokenTyID:
        out.kind = bc::TypeKind::kToken;
        break;
      case llvm::Type::IntegerTyID:
        out.kind = bc::TypeKind::kInteger;
        out.width = t->getIntegerBitWidth();
        break;
      case llvm::Type::PointerTyID:
        out.kind = bc::TypeKind::kPointer;
        out.address_space = t->getPointerAddressSpace();
        break;
      case llvm::Type::FunctionTyID:
        out.kind = bc::TypeKind::kFunction;
        out.vararg = llvm::cast<llvm::FunctionType>(t)->isVarArg();
        break;
      case llvm::Type::StructTyID: {
        auto* s = llvm::cast<llvm::StructType>(t);
        out.kind = bc::TypeKind::kStruct;
        out.packed = s->isPacked();
        out.opaque = s->isOpaque();
        out.named = !s->isLiteral();
        if (s->hasName()) out.name = s->getName().str();
        break;
      }
      case llvm::Type::ArrayTyID:
        out.kind = bc::TypeKind::kArray;
        out.count = t->getArrayNumElements();
        break;
      case llvm::Type::FixedVectorTyID:
        out.kind = bc::TypeKind::kFixedVector;
        out.count = llvm::cast<llvm::FixedVectorType>(t)->getNumElements();
        break;
      case llvm::Type::ScalableVectorTyID:
        out.kind = bc::TypeKind::kScalableVector;
        out.count = llvm::cast<llvm::ScalableVectorType>(t)->getMinNumElements();
        break;
      case llvm::Type::TargetExtTyID:
        out.kind = bc::TypeKind::kTargetExt;
        out.name = llvm::cast<llvm::TargetExtType>(t)->getName().str();
        break;
      default:
        FAIL("a type kind the test does not know");
    }
    return out;
  }

  bc::Global global(llvm::GlobalVariable& g) {
    bc::Global out;
    out.name = g.getName().str();
    out.value_type = add(g.getValueType());
    out.declaration = !g.hasInitializer();
    out.initializer = g.hasInitializer() ? 0 : bc::kNone;
    out.align = g.getAlign() ? g.getAlign()->value() : 0;
    out.section = g.getSection().str();
    out.address_space = g.getAddressSpace();
    return out;
  }
};

// Every type a module names: its values', its instructions' and their parts'.
struct TypeSet {
  std::vector<llvm::Type*> order;
  std::set<llvm::Type*> seen;

  void add(llvm::Type* t) {
    if (!t || !seen.insert(t).second) return;
    order.push_back(t);
    for (llvm::Type* sub : t->subtypes()) add(sub);
  }

  void add_module(llvm::Module& m) {
    for (llvm::StructType* s : m.getIdentifiedStructTypes()) add(s);
    for (llvm::GlobalVariable& g : m.globals()) add(g.getValueType());
    for (llvm::Function& f : m) {
      add(f.getFunctionType());
      for (llvm::Instruction& inst : llvm::instructions(f)) add_instruction(inst);
    }
  }

  void add_instruction(llvm::Instruction& inst) {
    add(inst.getType());
    for (llvm::Value* op : inst.operands()) add(op->getType());
    if (auto* a = llvm::dyn_cast<llvm::AllocaInst>(&inst)) add(a->getAllocatedType());
    if (auto* g = llvm::dyn_cast<llvm::GetElementPtrInst>(&inst)) add(g->getSourceElementType());
    if (auto* c = llvm::dyn_cast<llvm::CallBase>(&inst)) add(c->getFunctionType());
  }
};

std::string llvm_name(llvm::Type* t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t->print(os);
  return s;
}

const std::vector<std::string> kLayouts = {
    bc::Layout::x86_64_text(),
    "",
    "e-m:e-p:32:32-i64:64-n32-S128",
    "e-p:64:64-i128:128-v128:128-a:0:64",
    "E-m:o-p:32:32:32-i1:8:16-i24:32:64-i64:64-f80:32-f16:16:32-v96:32:64-v256:128-a:32:64-p1:16:16:16:8-S64-Fi8-A5-"
    "G1-P0-ni:1-n8:16:32",
    "e-i8:8:32-i16:16:32-i256:64-f128:64-f64:32:64-v64:32-v32:32-p3:128:128:128:64-a:64",
    "e-p:32:64:128-pu1(flat):16:16:32:8-pe5:128:64-p270:32:32-p3(local):8:8-i64:64-f80:64:128-v512:256-a:16:32",
};

struct Counts {
  uint64_t types = 0, sized = 0, values = 0, fields = 0, globals = 0, names = 0, refused = 0;
};

// Fails the test naming the type, the layout and the query; cheap when it holds.
#undef AGREE  // another file of this unity build defines its own
#define AGREE(ours, theirs, what)                                                                                  \
  do {                                                                                                             \
    auto o_ = (ours);                                                                                              \
    auto t_ = (theirs);                                                                                            \
    ++counts.values;                                                                                               \
    if (o_ != t_)                                                                                                  \
      FAIL_CHECK(what << " of " << llvm_name(t) << " under \"" << text << "\": ours " << o_ << ", LLVM's " << t_); \
  } while (0)

bool refuses(const std::function<void()>& f) {
  try {
    f();
  } catch (const KilnError&) {
    return true;
  }
  return false;
}

void compare_type(const bc::Layout& ours, const llvm::DataLayout& dl, const std::string& text, Converter& conv,
                  llvm::Type* t, Counts& counts) {
  uint32_t id = conv.add(t);
  ++counts.types;
  if (!t->isSized() || llvm::isa<llvm::TargetExtType>(t) || t->isScalableTy()) {
    ++counts.refused;
    if (!refuses([&] { ours.size_in_bits(conv.m, id); }) || !refuses([&] { ours.abi_align(conv.m, id); }))
      FAIL_CHECK("ours gives a size or alignment to " << llvm_name(t));
    return;
  }
  ++counts.sized;
  AGREE(ours.size_in_bits(conv.m, id), dl.getTypeSizeInBits(t).getFixedValue(), "size in bits");
  AGREE(ours.store_size(conv.m, id), dl.getTypeStoreSize(t).getFixedValue(), "store size");
  AGREE(ours.alloc_size(conv.m, id), dl.getTypeAllocSize(t).getFixedValue(), "alloc size");
  AGREE(ours.abi_align(conv.m, id), dl.getABITypeAlign(t).value(), "ABI alignment");
  AGREE(ours.pref_align(conv.m, id), dl.getPrefTypeAlign(t).value(), "preferred alignment");
  if (auto* s = llvm::dyn_cast<llvm::StructType>(t)) {
    const llvm::StructLayout* sl = dl.getStructLayout(s);
    for (unsigned i = 0; i < s->getNumElements(); ++i, ++counts.fields)
      AGREE(ours.field_offset(conv.m, id, i), sl->getElementOffset(i).getFixedValue(), "offset of field " << i);
  }
}

void compare_layouts(llvm::Module& module, const std::vector<llvm::Type*>& extra, Counts& counts) {
  TypeSet types;
  types.add_module(module);
  for (llvm::Type* t : extra) types.add(t);
  for (const std::string& text : kLayouts) {
    Converter conv;  // one Layout per module, as the exporter has
    bc::Layout ours(text);
    llvm::DataLayout dl(text);
    for (llvm::Type* t : types.order) compare_type(ours, dl, text, conv, t, counts);
    for (llvm::GlobalVariable& g : module.globals()) {
      if (!g.getValueType()->isSized()) continue;  // LLVM has no answer for an opaque one
      bc::Global ours_g = conv.global(g);
      llvm::Type* t = g.getValueType();
      ++counts.globals;
      AGREE(ours.global_preferred_align(conv.m, ours_g), dl.getPreferredAlign(&g).value(),
            "preferred alignment of @" << g.getName().str());
    }
  }
  Converter conv;
  for (llvm::Type* t : types.order) {
    uint32_t id = conv.add(t);
    auto* s = llvm::dyn_cast<llvm::StructType>(t);
    if (s && !s->isLiteral() && !s->hasName()) continue;  // LLVM prints an address
    ++counts.names;
    std::string ours = bc::type_name(conv.m, id);
    if (ours != llvm_name(t)) FAIL_CHECK("name: ours " << ours << ", LLVM's " << llvm_name(t));
  }
}

std::unique_ptr<llvm::Module> parse_hand_written(llvm::LLVMContext& ctx, const char* text) {
  llvm::SMDiagnostic diag;
  auto module = llvm::parseAssemblyString(text, diag, ctx);
  if (!module) FAIL("hand-written IR: " << diag.getMessage().str() << " at line " << diag.getLineNo());
  return module;
}

const char* const kHandWritten = R"IR(
%"core::fmt::Arguments<'_>" = type { { ptr, i64 }, { ptr, i64 }, { ptr, i64 } }
%"quote\22d" = type { i8, i64 }
%"back\5Cslash" = type { i16 }
%"9lives" = type { i32, i8 }
%"$dollar" = type { i8 }
%"sp ace" = type {}
%"\01ctrl\7F" = type { i24 }
%"utf8\C3\A9" = type { i1 }
%plain.name-x_1 = type { double, i8 }
%opaque = type opaque
%packed = type <{ i8, i32, i16 }>
%packed.empty = type <{}>
%nested = type { i8, %packed, [3 x %"core::fmt::Arguments<'_>"], { i1, i24 }, <4 x i1>, x86_fp80, %"9lives" }
%f80s = type { i8, x86_fp80, fp128, i128, i8 }
%vecs = type { i8, <3 x i32>, i8, <2 x ptr>, i8, <4 x i24>, i8, <8 x float>, <1 x i1>, <7 x i1>, <3 x i1> }
%big = type { i200, i24, i8, i65, i129, i48 }
%ptrs = type { i8, ptr addrspace(1), i8, ptr addrspace(3), ptr addrspace(270), ptr }
%zero = type { i32, [0 x i64], i8 }

@args = global %"core::fmt::Arguments<'_>" zeroinitializer
@quoted = global %"quote\22d" zeroinitializer
@slash = global %"back\5Cslash" zeroinitializer
@lives = global %"9lives" zeroinitializer
@dollar = global %"$dollar" zeroinitializer
@space = global %"sp ace" zeroinitializer
@ctrl = global %"\01ctrl\7F" zeroinitializer
@utf = global %"utf8\C3\A9" zeroinitializer
@plain = global %plain.name-x_1 zeroinitializer
@op = external global %opaque
@pk = global %packed zeroinitializer
@pke = global %packed.empty zeroinitializer
@nest = global %nested zeroinitializer
@f80 = global %f80s zeroinitializer
@vecs = global %vecs zeroinitializer
@big = global %big zeroinitializer
@ptrs = global %ptrs zeroinitializer
@zero = global %zero zeroinitializer
@arr = global [3 x { i64, i8 }] zeroinitializer
@arr2 = global [2 x [3 x %packed]] zeroinitializer
@bytes = global [17 x i8] zeroinitializer
@bytes16 = global [16 x i8] zeroinitializer
@small = global i8 0, align 4
@explicit.low = global [32 x i8] zeroinitializer, align 1
@explicit.low.i64 = global [4 x i64] zeroinitializer, align 2
@explicit.sec = global [32 x i8] zeroinitializer, section "s", align 2
@sec.noalign = global [32 x i8] zeroinitializer, section "s"
@ext = external global [32 x i8]
@ext.al = external global [32 x i8], align 1
@ext.i128 = external global i128
@x80 = global x86_fp80 0xK00000000000000000000
@q128 = global fp128 0xL00000000000000000000000000000000
@ppc = global ppc_fp128 0xM00000000000000000000000000000000
@h = global half 0.0
@bf = global bfloat 0.0
@d = global double 0.0
@i128 = global i128 0
@i200 = global i200 0
@i24 = global i24 0
@i1 = global i1 0
@v3 = global <3 x i32> zeroinitializer
@v4f = global <4 x float> zeroinitializer
@v2p = global <2 x ptr> zeroinitializer
@v16i1 = global <16 x i1> zeroinitializer
@v5i24 = global <5 x i24> zeroinitializer
@as1 = addrspace(1) global ptr addrspace(1) null
@tl = thread_local global i64 0, align 16
@big.al = global [64 x i8] zeroinitializer, align 32

declare void @vf(i32, ...)
declare i32 @only.varargs(...)
declare void @sv(<vscale x 4 x i32>, <vscale x 2 x ptr>)
declare void @md(metadata)
declare token @tk()
declare { i64, ptr } @pair(ptr addrspace(5), [4 x i8], <4 x i32>)
declare ptr @fnptr(ptr)

define void @body(ptr %p) {
  %a = alloca %nested
  %b = alloca [5 x %vecs]
  %g = getelementptr %f80s, ptr %p, i64 1, i32 3
  %l = load { i8, [2 x i16] }, ptr %g
  ret void
}
)IR";

// Built here: what IR text cannot easily hold.
std::vector<llvm::Type*> built_types(llvm::LLVMContext& ctx) {
  std::vector<llvm::Type*> out = {llvm::Type::getLabelTy(ctx), llvm::Type::getX86_AMXTy(ctx),
                                  llvm::TargetExtType::get(ctx, "my.type"),
                                  llvm::StructType::create(ctx, {llvm::Type::getInt8Ty(ctx)}, "1st")};
  for (unsigned w : {1u,  2u,  7u,  8u,  9u,   15u,  16u,  17u,  24u,  31u,  32u,   33u,  48u,
                     63u, 64u, 65u, 96u, 127u, 128u, 129u, 200u, 256u, 257u, 1000u, 4096u}) {
    llvm::Type* i = llvm::IntegerType::get(ctx, w);
    out.push_back(i);
    for (unsigned n : {1u, 2u, 3u, 4u, 5u, 8u, 9u}) out.push_back(llvm::FixedVectorType::get(i, n));
    out.push_back(llvm::ArrayType::get(i, 3));
    out.push_back(llvm::StructType::get(ctx, {llvm::Type::getInt8Ty(ctx), i}));
    out.push_back(llvm::StructType::get(ctx, {llvm::Type::getInt8Ty(ctx), i}, /*isPacked=*/true));
  }
  for (llvm::Type* f : std::vector<llvm::Type*>{llvm::Type::getHalfTy(ctx), llvm::Type::getBFloatTy(ctx),
                                                llvm::Type::getFloatTy(ctx), llvm::Type::getDoubleTy(ctx),
                                                llvm::Type::getX86_FP80Ty(ctx), llvm::Type::getFP128Ty(ctx),
                                                llvm::Type::getPPC_FP128Ty(ctx), llvm::PointerType::get(ctx, 0),
                                                llvm::PointerType::get(ctx, 1), llvm::PointerType::get(ctx, 3)})
    for (unsigned n : {1u, 2u, 3u, 4u, 6u}) out.push_back(llvm::FixedVectorType::get(f, n));
  return out;
}

}  // namespace

TEST_CASE("bitcode layout: sizes, alignments, offsets and names of hand-written IR are LLVM's", "[bitcode-layout]") {
  llvm::LLVMContext ctx;
  auto module = parse_hand_written(ctx, kHandWritten);
  // An identified struct without a name, which LLVM prints by address or number.
  auto* unnamed = llvm::StructType::create(ctx, {llvm::Type::getInt32Ty(ctx)});
  std::vector<llvm::Type*> extra = built_types(ctx);
  extra.push_back(unnamed);
  Counts counts;
  compare_layouts(*module, extra, counts);
  std::printf(
      "bitcode layout, hand-written: %llu types (%llu sized, %llu refused), %llu values, %llu field offsets, "
      "%llu globals, %llu names\n",
      (unsigned long long)counts.types, (unsigned long long)counts.sized, (unsigned long long)counts.refused,
      (unsigned long long)counts.values, (unsigned long long)counts.fields, (unsigned long long)counts.globals,
      (unsigned long long)counts.names);
  Converter conv;
  CHECK(bc::type_name(conv.m, conv.add(unnamed)) == "%<unnamed> = type { i32 }");
  CHECK(bc::type_name(conv.m, conv.add(llvm::TargetExtType::get(ctx, "my.type"))) == "target(\"my.type\")");
  CHECK(counts.sized > 300);
  // A few of LLVM's answers spelled out (the comparison above checks every one).
  auto name_of = [&](const char* type) {
    return bc::type_name(conv.m, conv.add(llvm::StructType::getTypeByName(ctx, type)));
  };
  CHECK(name_of("core::fmt::Arguments<'_>") ==
        "%\"core::fmt::Arguments<'_>\" = type { { ptr, i64 }, { ptr, i64 }, { ptr, i64 } }");
  CHECK(name_of("quote\"d") == "%\"quote\\22d\" = type { i8, i64 }");
  CHECK(name_of("back\\slash") == "%\"back\\\\slash\" = type { i16 }");
  CHECK(name_of("9lives") == "%\"9lives\" = type { i32, i8 }");
  CHECK(name_of("$dollar") == "%\"$dollar\" = type { i8 }");
  CHECK(name_of("plain.name-x_1") == "%plain.name-x_1 = type { double, i8 }");
  CHECK(name_of("packed") == "%packed = type <{ i8, i32, i16 }>");
  CHECK(name_of("opaque") == "%opaque = type opaque");
  bc::Layout x86(bc::Layout::x86_64_text());
  uint32_t f80 = conv.add(llvm::Type::getX86_FP80Ty(ctx));
  CHECK(
      (x86.size_in_bits(conv.m, f80) == 80 && x86.store_size(conv.m, f80) == 10 && x86.alloc_size(conv.m, f80) == 16));
}

TEST_CASE("bitcode layout: every type and global of the regex modules is LLVM's", "[bitcode-layout]") {
  Counts counts;
  int modules = 0;
  for (const auto& entry : std::filesystem::directory_iterator(KILN_TEST_DATA "/bitstream")) {
    if (entry.path().extension() != ".bc") continue;
    auto buffer = llvm::MemoryBuffer::getFile(entry.path().string());
    REQUIRE(buffer);
    llvm::LLVMContext ctx;
    auto module = llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), ctx);
    if (!module) FAIL(entry.path() << ": " << llvm::toString(module.takeError()));
    compare_layouts(**module, {}, counts);
    ++modules;
  }
  std::printf(
      "bitcode layout, regex: %d modules, %llu types (%llu sized), %llu values, %llu field offsets, "
      "%llu globals, %llu names\n",
      modules, (unsigned long long)counts.types, (unsigned long long)counts.sized, (unsigned long long)counts.values,
      (unsigned long long)counts.fields, (unsigned long long)counts.globals, (unsigned long long)counts.names);
  CHECK(modules >= 3);
  CHECK(counts.globals > 0);
}

TEST_CASE("bitcode layout: sizes past 64 bits and cyclic types are bad input, not a crash", "[bitcode-layout]") {
  bc::BcModule m;
  m.types.resize(4);
  m.types[0].kind = bc::TypeKind::kInteger;
  m.types[0].width = 64;
  m.types[1].kind = bc::TypeKind::kArray;  // [2^62 x i64]: 2^68 bits
  m.types[1].count = uint64_t(1) << 62;
  m.types[1].elements = {0};
  m.types[2].kind = bc::TypeKind::kStruct;  // a struct holding itself, as only a corrupt table can
  m.types[2].named = true;
  m.types[2].name = "loop";
  m.types[2].elements = {0, 2};
  m.types[3].kind = bc::TypeKind::kArray;  // an array of itself
  m.types[3].count = 2;
  m.types[3].elements = {3};
  bc::Layout layout("");
  for (uint32_t type : {1u, 2u, 3u}) {
    try {
      layout.alloc_size(m, type);
      FAIL_CHECK("type " << type << " was given a size");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
    }
  }
  CHECK(layout.size_in_bits(m, 0) == 64);
}

TEST_CASE("bitcode layout: a layout string is refused exactly when LLVM refuses it", "[bitcode-layout]") {
  const std::vector<std::string> texts = {"",
                                          "e",
                                          "E",
                                          "-",
                                          "e-",
                                          "e--E",
                                          "i8:16",
                                          "i8:8",
                                          "i8:8:16",
                                          "i16:12",
                                          "i0:8",
                                          "i16:8:4",
                                          "i16:16:16:16",
                                          "i16777216:8",
                                          "i16777215:8",
                                          "i64:064",
                                          "i64:+64",
                                          "i64:65536",
                                          "i64:131072",
                                          "i64:32768",
                                          "i64",
                                          "f80:128",
                                          "f80:96",
                                          "v128:128",
                                          "v0:8",
                                          "p:64",
                                          "p:64:64",
                                          "p:64:64:64:64:128",
                                          "p:64:64:64:64:32",
                                          "p:64:64:32",
                                          "p:64:64:64:64:0",
                                          "p0:32:32",
                                          "p16777215:8:8",
                                          "p16777216:8:8",
                                          "p1:0:8",
                                          "p:64:0",
                                          "a8:8",
                                          "a:0",
                                          "a:0:64",
                                          "a0:0:64",
                                          "a1:0:64",
                                          "a:64:32",
                                          "a:8",
                                          "a",
                                          "m:e",
                                          "m:q",
                                          "m:",
                                          "m",
                                          "me",
                                          "m:ee",
                                          "m:a",
                                          "m:l",
                                          "S",
                                          "S0",
                                          "S128",
                                          "S12",
                                          "Fi8",
                                          "Fn16",
                                          "Fx8",
                                          "F",
                                          "Fi",
                                          "Fi0",
                                          "P1",
                                          "P",
                                          "Px",
                                          "A",
                                          "A5",
                                          "G1",
                                          "G16777216",
                                          "n",
                                          "n8:",
                                          "n8:16",
                                          "n0",
                                          "ni:0",
                                          "ni:1",
                                          "ni:1:2",
                                          "ni",
                                          "nix",
                                          "ni:",
                                          "s",
                                          "s0:64",
                                          "sanything",
                                          "x",
                                          "i",
                                          "pe1:64:64",
                                          "pu1:64:64",
                                          "peu1:64:64",
                                          "pu:64:64",
                                          "pe0:64:64",
                                          "pz1:64:64",
                                          "px1:64:64",
                                          "p1(foo):64:64",
                                          "p(foo):64:64",
                                          "p1(P):64:64",
                                          "p1(G):64:64",
                                          "p1(foo):64:64-p2(foo):64:64",
                                          "p1():64:64",
                                          "p1(foo:64:64",
                                          "p1foo:64:64",
                                          "pu(bar)3:64:64",
                                          "p1(a(b)):64:64",
                                          "p-1:64:64",
                                          "p 1:64:64",
                                          "e-p:32:32-i64:64-n32-S128",
                                          bc::Layout::x86_64_text()};
  int agreed = 0;
  for (const std::string& text : texts) {
    auto theirs = llvm::DataLayout::parse(text);
    bool llvm_ok = static_cast<bool>(theirs);
    if (!llvm_ok) llvm::consumeError(theirs.takeError());
    bool ours_ok = !refuses([&] { bc::Layout layout(text); });
    if (ours_ok != llvm_ok)
      FAIL_CHECK("\"" << text << "\": LLVM " << (llvm_ok ? "takes" : "refuses") << " it, ours "
                      << (ours_ok ? "takes" : "refuses") << " it");
    else ++agreed;
  }
  std::printf("bitcode layout: %d of %zu layout strings taken or refused as LLVM does\n", agreed, texts.size());
}

namespace {

bc::Intrinsic expected_intrinsic(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::lifetime_start:
      return bc::Intrinsic::kLifetimeStart;
    case llvm::Intrinsic::lifetime_end:
      return bc::Intrinsic::kLifetimeEnd;
    case llvm::Intrinsic::assume:
      return bc::Intrinsic::kAssume;
    case llvm::Intrinsic::experimental_noalias_scope_decl:
      return bc::Intrinsic::kNoaliasScopeDecl;
    case llvm::Intrinsic::donothing:
      return bc::Intrinsic::kDoNothing;
    case llvm::Intrinsic::sideeffect:
      return bc::Intrinsic::kSideEffect;
    case llvm::Intrinsic::dbg_declare:
      return bc::Intrinsic::kDbgDeclare;
    case llvm::Intrinsic::dbg_value:
      return bc::Intrinsic::kDbgValue;
    case llvm::Intrinsic::dbg_label:
      return bc::Intrinsic::kDbgLabel;
    case llvm::Intrinsic::expect:
      return bc::Intrinsic::kExpect;
    case llvm::Intrinsic::trap:
      return bc::Intrinsic::kTrap;
    case llvm::Intrinsic::ubsantrap:
      return bc::Intrinsic::kUbsanTrap;
    case llvm::Intrinsic::memcpy:
      return bc::Intrinsic::kMemcpy;
    case llvm::Intrinsic::memmove:
      return bc::Intrinsic::kMemmove;
    case llvm::Intrinsic::memset:
      return bc::Intrinsic::kMemset;
    case llvm::Intrinsic::uadd_with_overflow:
      return bc::Intrinsic::kUaddWithOverflow;
    case llvm::Intrinsic::sadd_with_overflow:
      return bc::Intrinsic::kSaddWithOverflow;
    case llvm::Intrinsic::usub_with_overflow:
      return bc::Intrinsic::kUsubWithOverflow;
    case llvm::Intrinsic::ssub_with_overflow:
      return bc::Intrinsic::kSsubWithOverflow;
    case llvm::Intrinsic::umul_with_overflow:
      return bc::Intrinsic::kUmulWithOverflow;
    case llvm::Intrinsic::smul_with_overflow:
      return bc::Intrinsic::kSmulWithOverflow;
    case llvm::Intrinsic::is_constant:
      return bc::Intrinsic::kIsConstant;
    case llvm::Intrinsic::ctpop:
      return bc::Intrinsic::kCtpop;
    case llvm::Intrinsic::ctlz:
      return bc::Intrinsic::kCtlz;
    case llvm::Intrinsic::cttz:
      return bc::Intrinsic::kCttz;
    case llvm::Intrinsic::bswap:
      return bc::Intrinsic::kBswap;
    case llvm::Intrinsic::bitreverse:
      return bc::Intrinsic::kBitreverse;
    case llvm::Intrinsic::abs:
      return bc::Intrinsic::kAbs;
    case llvm::Intrinsic::umin:
      return bc::Intrinsic::kUmin;
    case llvm::Intrinsic::umax:
      return bc::Intrinsic::kUmax;
    case llvm::Intrinsic::smin:
      return bc::Intrinsic::kSmin;
    case llvm::Intrinsic::smax:
      return bc::Intrinsic::kSmax;
    case llvm::Intrinsic::uadd_sat:
      return bc::Intrinsic::kUaddSat;
    case llvm::Intrinsic::usub_sat:
      return bc::Intrinsic::kUsubSat;
    case llvm::Intrinsic::ucmp:
      return bc::Intrinsic::kUcmp;
    case llvm::Intrinsic::scmp:
      return bc::Intrinsic::kScmp;
    case llvm::Intrinsic::sadd_sat:
      return bc::Intrinsic::kSaddSat;
    case llvm::Intrinsic::ssub_sat:
      return bc::Intrinsic::kSsubSat;
    case llvm::Intrinsic::fshl:
      return bc::Intrinsic::kFshl;
    case llvm::Intrinsic::fshr:
      return bc::Intrinsic::kFshr;
    case llvm::Intrinsic::fabs:
      return bc::Intrinsic::kFabs;
    case llvm::Intrinsic::sqrt:
      return bc::Intrinsic::kSqrt;
    case llvm::Intrinsic::fptosi_sat:
      return bc::Intrinsic::kFptosiSat;
    case llvm::Intrinsic::fptoui_sat:
      return bc::Intrinsic::kFptouiSat;
    case llvm::Intrinsic::minnum:
      return bc::Intrinsic::kMinnum;
    case llvm::Intrinsic::fmuladd:
      return bc::Intrinsic::kFmuladd;
    case llvm::Intrinsic::maxnum:
      return bc::Intrinsic::kMaxnum;
    case llvm::Intrinsic::vector_reduce_add:
      return bc::Intrinsic::kVectorReduceAdd;
    case llvm::Intrinsic::vector_reduce_mul:
      return bc::Intrinsic::kVectorReduceMul;
    case llvm::Intrinsic::vector_reduce_and:
      return bc::Intrinsic::kVectorReduceAnd;
    case llvm::Intrinsic::vector_reduce_or:
      return bc::Intrinsic::kVectorReduceOr;
    case llvm::Intrinsic::vector_reduce_xor:
      return bc::Intrinsic::kVectorReduceXor;
    case llvm::Intrinsic::x86_ssse3_pshuf_b_128:
      return bc::Intrinsic::kX86PshufB128;
    case llvm::Intrinsic::x86_avx2_pshuf_b:
      return bc::Intrinsic::kX86PshufB256;
    case llvm::Intrinsic::threadlocal_address:
      return bc::Intrinsic::kThreadlocalAddress;
    case llvm::Intrinsic::ceil:
    case llvm::Intrinsic::copysign:
    case llvm::Intrinsic::cos:
    case llvm::Intrinsic::exp:
    case llvm::Intrinsic::exp2:
    case llvm::Intrinsic::floor:
    case llvm::Intrinsic::fma:
    case llvm::Intrinsic::log:
    case llvm::Intrinsic::log10:
    case llvm::Intrinsic::log2:
    case llvm::Intrinsic::nearbyint:
    case llvm::Intrinsic::pow:
    case llvm::Intrinsic::powi:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::round:
    case llvm::Intrinsic::sin:
    case llvm::Intrinsic::trunc:
      return bc::Intrinsic::kLibmCall;
    default:
      return bc::Intrinsic::kUnknownIntrinsic;
  }
}

bc::Intrinsic llvm_verdict(const std::string& name) {
  if (name.rfind("llvm.", 0) != 0) return bc::Intrinsic::kNotIntrinsic;
  return expected_intrinsic(llvm::Intrinsic::lookupIntrinsicID(name));
}

}  // namespace

TEST_CASE("bitcode layout: intrinsic ids by name are LLVM's", "[bitcode-layout]") {
  std::vector<std::string> names = {"llvm.",
                                    "llvm",
                                    "",
                                    "lvm.memcpy",
                                    "llvm.memcpy.inlinex",
                                    "llvm.expect.with",
                                    "llvm.expect.with.i1",
                                    "llvm.expect.withx",
                                    "llvm.trap.x",
                                    "llvm.trapx",
                                    "llvm.memcpy.",
                                    "llvm.memcpy..",
                                    "llvm.memcpy.element",
                                    "llvm.x86.sse",
                                    "llvm.memcpy.inline.p0.p0.i64",
                                    "llvm.memset.element.unordered.atomic.p0.i32",
                                    "llvm.uadd.with",
                                    "llvm.uadd.sat.i8",
                                    "llvm.uadd.i8",
                                    "llvm.dbg",
                                    "llvm.dbg.",
                                    "llvm.dbg.value.x",
                                    "llvm.lifetime.start.p0",
                                    "llvm.lifetime",
                                    "llvm.is",
                                    "llvm.is.constant.i32",
                                    "llvm.is.fpclass.f32",
                                    "llvm..memcpy",
                                    "LLVM.memcpy",
                                    std::string("llvm.memcpy\0.p0", 15),
                                    std::string("llvm.memcpy.\0", 13)};
  for (unsigned id = 1; id < llvm::Intrinsic::num_intrinsics; ++id) {
    std::string base = llvm::Intrinsic::getBaseName(id).str();
    for (const char* suffix : {"", ".p0", ".p0.p0.i64", ".i32", "x", ".", ".inline", ".with.probability.i1"})
      names.push_back(base + suffix);
    names.push_back(base.substr(0, base.size() - 1));
    if (size_t dot = base.rfind('.'); dot != std::string::npos) names.push_back(base.substr(0, dot));
  }
  int ours_named = 0;
  for (const std::string& name : names) {
    bc::Intrinsic theirs = llvm_verdict(name);
    bc::Intrinsic ours = bc::intrinsic_of(name);
    if (ours != theirs) FAIL_CHECK("\"" << name << "\": ours " << int(ours) << ", LLVM's " << int(theirs));
    if (theirs > bc::Intrinsic::kUnknownIntrinsic) ++ours_named;
  }
  std::printf("bitcode layout: %zu intrinsic names (%d of them ours) as LLVM looks them up\n", names.size(),
              ours_named);
  CHECK(ours_named > 100);
}
