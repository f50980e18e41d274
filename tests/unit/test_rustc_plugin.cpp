// kiln's plugin inside rustc (lib/rustc_plugin.cpp), without rustc: the plugin is
// loaded as rustc loads it (-Zllvm-plugins: llvm::PassPlugin::Load, then its callbacks
// registered on a PassBuilder) and runs in LLVM's -O0 pipeline, here against this
// process's LLVM, which is Debian's and not rustc's. What it leaves in a unit must be
// the stamp back end's object for that unit's bitcode, carried so that LLVM's object
// gives it back (kiln_object_payload); a unit stamp cannot take whole is LLVM's, as it
// was. The route through real rustc and cargo is tests/integration/capture_rust.sh's.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstring>

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Plugins/PassPlugin.h>
#include <llvm/Support/SourceMgr.h>

#include <algorithm>
#include <memory>
#include <string>

#include "ar_archive.h"
#include "backend.h"
#include "error.h"
#include "ir_helpers.h"
#include "plugin_payload.h"
#include "stamp_whole.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

// A codegen unit as rustc makes them: private constants (one read through another's
// initializer), an internal function and variable, an aggregate constant stored, calls.
const char* const kUnitIr = R"(
target triple = "x86_64-unknown-linux-gnu"
%pair = type { i64, i64 }
@anon.u.0 = private unnamed_addr constant <{ [5 x i8] }> <{ [5 x i8] c"hello" }>, align 1
@anon.u.1 = private unnamed_addr constant <{ ptr, [8 x i8] }> <{ ptr @anon.u.0, [8 x i8] c"\05\00\00\00\00\00\00\00" }>, align 8
@counter = internal global i64 40, align 8

define internal i64 @helper(i64 %x) {
  %v = load i64, ptr @counter, align 8
  %n = add i64 %v, %x
  store i64 %n, ptr @counter, align 8
  ret i64 %n
}

define i64 @byte_at(i64 %i) {
  %q = load ptr, ptr @anon.u.1, align 8
  %p = getelementptr i8, ptr %q, i64 %i
  %v = load i8, ptr %p, align 1
  %w = zext i8 %v to i64
  %r = call i64 @helper(i64 %w)
  ret i64 %r
}

define void @make_pair(ptr %out) {
  store %pair { i64 3, i64 4 }, ptr %out, align 8
  ret void
}

define ptr @greeting() {
  ret ptr @anon.u.0
}
)";

// The same unit with one function stamp does not take (inline assembly with a template).
std::string unit_with_asm() {
  return std::string(kUnitIr) + R"(
define void @pause() {
  call void asm sideeffect "pause", ""()
  ret void
}
)";
}

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext& ctx, const std::string& ir) {
  llvm::SMDiagnostic diag;
  auto m = llvm::parseAssemblyString(ir, diag, ctx);
  if (!m) FAIL("bad test IR: " << diag.getMessage().str());
  m->setModuleIdentifier("unit.rs-cgu.00");
  return m;
}

std::string bitcode_of(const llvm::Module& m) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return bytes;
}

// rustc's route at opt-level 0 with -Zllvm-plugins=kiln-rustc-plugin.so (`lto`: the
// pre-link pipeline of a ThinLTO build instead).
void run_o0_pipeline_with_plugin(llvm::Module& m, bool lto = false) {
  REQUIRE(::access(KILN_RUSTC_PLUGIN_PATH, R_OK) == 0);
  llvm::Expected<llvm::PassPlugin> plugin = llvm::PassPlugin::Load(KILN_RUSTC_PLUGIN_PATH);
  if (!plugin) FAIL("the plugin does not load: " << llvm::toString(plugin.takeError()));
  llvm::PassBuilder pb;
  plugin->registerPassBuilderCallbacks(pb);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = lto ? pb.buildThinLTOPreLinkDefaultPipeline(llvm::OptimizationLevel::O0)
                                    : pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  mpm.run(m, mam);
}

size_t defined_functions(const llvm::Module& m) {
  size_t n = 0;
  for (const llvm::Function& f : m) n += !f.isDeclaration();
  return n;
}

// The unit of `ir` after rustc's -O0 pipeline with the plugin, which must have emptied
// it whole: nothing is left but the carrier and llvm.used, and LLVM's object for it
// carries stamp's object for the unit as it came (`label` names the files).
std::unique_ptr<llvm::Module> emptied_by_plugin(llvm::LLVMContext& ctx, const std::string& ir,
                                                const std::string& label) {
  auto expected_module = parse(ctx, ir);
  const std::string expected = stamp_whole_module(*expected_module, "0123456789ab").object;
  REQUIRE(!expected.empty());
  auto m = parse(ctx, ir);
  run_o0_pipeline_with_plugin(*m);
  CHECK(m->size() == 0);         // no function, declarations included
  CHECK(m->global_size() == 2);  // kiln.object and llvm.used alone
  // LLVM's code generator writes the emptied unit; the wrapper reads stamp's object back.
  const EmitResult written = make_backend("llvm", Profile::fast)->emit(bitcode_of(*m), label + ".bc");
  std::optional<std::string_view> payload = kiln_object_payload(written.object, label + ".o");
  REQUIRE(payload.has_value());
  CHECK(*payload == expected);
  return m;
}

}  // namespace

TEST_CASE("stamp's object for a module in memory is the stamp back end's for its bitcode", "[plugin]") {
  llvm::LLVMContext ctx;
  auto m = parse(ctx, kUnitIr);
  const EmitResult from_bitcode = make_backend("stamp", Profile::fast)->emit(bitcode_of(*m), "unit.bc");
  REQUIRE(from_bitcode.counts.functions_llvm == 0);
  InMemoryStamp in_memory = stamp_whole_module(*m, "0123456789ab");
  CHECK(in_memory.why.empty());
  CHECK(in_memory.functions == 4);
  CHECK(in_memory.instructions > 0);
  REQUIRE(!in_memory.object.empty());
  CHECK(in_memory.object == from_bitcode.object);
}

TEST_CASE("a unit stamp cannot take whole is left to LLVM as it was", "[plugin]") {
  llvm::LLVMContext ctx;
  auto m = parse(ctx, unit_with_asm());
  InMemoryStamp r = stamp_whole_module(*m, "0123456789ab");
  CHECK(r.object.empty());
  CHECK(kiln_test::contains(r.why, "function pause: "));
  // Not renamed for a split (NAME.kiln.TAG): LLVM writes the unit as rustc made it.
  REQUIRE(m->getFunction("helper") != nullptr);
  CHECK(m->getFunction("helper")->hasInternalLinkage());
  REQUIRE(m->getNamedGlobal("counter") != nullptr);
  CHECK(m->getNamedGlobal("counter")->hasInternalLinkage());
  CHECK(defined_functions(*m) == 5);
}

TEST_CASE("the plugin leaves stamp's object in the unit, and LLVM's object carries it", "[plugin]") {
  llvm::LLVMContext ctx;
  auto m = emptied_by_plugin(ctx, kUnitIr, "unit");
  CHECK(m->getNamedMetadata("llvm.dbg.cu") == nullptr);
  const llvm::GlobalVariable* carried = m->getNamedGlobal("kiln.object");
  REQUIRE(carried != nullptr);
  CHECK(carried->getSection() == kKilnObjectSection);

  SECTION("a unit of an LTO build keeps its functions: LTO optimizes it again with others") {
    auto lto = parse(ctx, kUnitIr);
    run_o0_pipeline_with_plugin(*lto, true);
    CHECK(defined_functions(*lto) == 4);
    CHECK(lto->getNamedGlobal("kiln.object") == nullptr);
  }

  SECTION("a unit with a function stamp cannot take keeps its functions") {
    auto mixed = parse(ctx, unit_with_asm());
    run_o0_pipeline_with_plugin(*mixed);
    CHECK(defined_functions(*mixed) == 5);
    CHECK(mixed->getNamedGlobal("kiln.object") == nullptr);
    const EmitResult native = make_backend("llvm", Profile::fast)->emit(bitcode_of(*mixed), "mixed.bc");
    CHECK(!kiln_object_payload(native.object, "mixed.o").has_value());
  }
}

namespace {

std::vector<std::string_view> sorted(std::vector<std::string_view> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Each section's name, type, flags and bytes, and each symbol's name, value, size and
// section, as LLVM's object reader sees them in `object`.
std::string reader_view(const std::string& object) {
  using namespace llvm::object;
  auto file = kiln_test::must(ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, "o")));
  auto* elf = llvm::dyn_cast<ELF64LEObjectFile>(file.get());
  REQUIRE(elf != nullptr);
  std::string out;
  for (const ELFSectionRef sec : elf->sections()) {
    out += kiln_test::must(sec.getName()).str() + " " + std::to_string(sec.getType()) + " " + std::to_string(sec.getFlags()) + " ";
    if (sec.getType() != llvm::ELF::SHT_NOBITS) out += kiln_test::must(sec.getContents()).str();
    out += "\n";
  }
  for (const ELFSymbolRef sym : elf->symbols())
    out += kiln_test::must(sym.getName()).str() + " " + std::to_string(kiln_test::must(sym.getValue())) + " " + std::to_string(sym.getSize()) +
           " " + std::to_string(kiln_test::must(sym.getSection()) == elf->section_end() ? -1 : int(kiln_test::must(sym.getSection())->getIndex())) +
           "\n";
  return out;
}

}  // namespace

// The wrapper makes each unit of an rlib stamp's object where it lies (capture_plugin.cpp,
// units_in_place), which needs rustc's index of the carriers to be that of the objects.
TEST_CASE("a carrier defines what it carries, and becomes that object where it lies", "[plugin]") {
  llvm::LLVMContext ctx;
  auto m = emptied_by_plugin(ctx, kUnitIr, "unit");
  const std::string carrier = make_backend("llvm", Profile::fast)->emit(bitcode_of(*m), "unit.bc").object;
  const std::string_view payload = kiln_object_payload(carrier, "unit.o").value();
  CHECK(sorted(archive_symbols(carrier, "carrier")) == sorted(archive_symbols(payload, "payload")));
  CHECK(archive_symbols(payload, "payload").size() == 3);  // byte_at, make_pair, greeting

  std::string unit = carrier;
  const std::vector<FilePatch> patches = payload_in_place(carrier, payload, "unit.o");
  REQUIRE(patches.size() == 2);
  for (const FilePatch& p : patches) unit.replace(p.offset, p.bytes.size(), p.bytes);
  CHECK(unit.size() == carrier.size());
  CHECK(reader_view(unit) == reader_view(std::string(payload)));
  CHECK(archive_symbols(unit, "unit") == archive_symbols(payload, "payload"));
  CHECK(!kiln_object_payload(unit, "unit").has_value());

  SECTION("a unit with extended section numbering is read as well") {
    // As LLVM writes a unit of 0xff00 sections and more: e_shnum 0 and e_shstrndx
    // SHN_XINDEX, section 0's size and link holding them.
    std::string extended = carrier;
    uint64_t shoff = 0;
    uint16_t shnum = 0, shstrndx = 0;
    std::memcpy(&shoff, extended.data() + 40, 8);
    std::memcpy(&shnum, extended.data() + 60, 2);
    std::memcpy(&shstrndx, extended.data() + 62, 2);
    const uint64_t count = shnum;
    const uint32_t link = shstrndx;
    const uint16_t zero = 0, xindex = 0xffff;  // SHN_XINDEX
    std::memcpy(extended.data() + 60, &zero, 2);
    std::memcpy(extended.data() + 62, &xindex, 2);
    std::memcpy(extended.data() + shoff + 32, &count, 8);  // section 0's sh_size
    std::memcpy(extended.data() + shoff + 40, &link, 4);   // section 0's sh_link
    const std::optional<std::string_view> found = kiln_object_payload(extended, "extended.o");
    REQUIRE(found.has_value());
    CHECK(*found == payload);
  }

  SECTION("a payload off an 8-byte boundary is not made a unit in place") {
    const std::string shifted = carrier.substr(0, 68) + std::string(payload);
    CHECK(payload_in_place(shifted, std::string_view(shifted).substr(68), "shifted.o").empty());
  }
  SECTION("what is not an ELF object is named") {
    const std::string junk = carrier.substr(0, 64) + std::string(100, 'x');
    CHECK_THROWS_WITH(payload_in_place(junk, std::string_view(junk).substr(64), "bad.o"),
                      Catch::Contains("bad.o") && Catch::Contains("not a 64-bit little-endian ELF object"));
  }
}

// A table of pointers to the unit's globals (as regex-syntax's Unicode tables are):
// its constants stay behind when the globals' initializers are dropped, and must go
// before the globals do (empty_module; replacing the globals' uses in them instead
// took 0.1 s on one unit of regex-syntax).
TEST_CASE("a unit whose table points at its globals is emptied whole", "[plugin]") {
  std::string ir = "target triple = \"x86_64-unknown-linux-gnu\"\n";
  const int kEntries = 300;
  for (int k = 0; k < kEntries; ++k)
    ir += "@name." + std::to_string(k) + " = private unnamed_addr constant [3 x i8] c\"abc\", align 1\n";
  ir += "@table = internal constant [" + std::to_string(kEntries) + " x { ptr, i64 }] [";
  for (int k = 0; k < kEntries; ++k)
    ir += (k ? ", " : "") + std::string("{ ptr, i64 } { ptr @name.") + std::to_string(k) + ", i64 3 }";
  ir += "], align 8\n"
        "define i64 @entry_length(i64 %i) {\n"
        "  %p = getelementptr inbounds [" + std::to_string(kEntries) +
        " x { ptr, i64 }], ptr @table, i64 0, i64 %i, i32 1\n"
        "  %n = load i64, ptr %p, align 8\n  ret i64 %n\n}\n";
  llvm::LLVMContext ctx;
  emptied_by_plugin(ctx, ir, "table");
}

TEST_CASE("kiln_object_payload gives the carried bytes and names what is not an ELF object", "[plugin]") {
  const std::string ir = std::string(kiln_test::kAddIr) +
      "@kiln.object = private constant [4 x i8] c\"abcd\", section \".kiln.object\", align 16\n"
      "@llvm.used = appending global [1 x ptr] [ptr @kiln.object], section \"llvm.metadata\"\n";
  const std::string carrier = make_backend("llvm", Profile::fast)->emit(kiln_test::bitcode_from_ir(ir), "c.bc").object;
  std::optional<std::string_view> payload = kiln_object_payload(carrier, "c.o");
  REQUIRE(payload.has_value());
  CHECK(*payload == "abcd");

  const std::string plain =
      make_backend("llvm", Profile::fast)->emit(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "a.bc").object;
  CHECK(!kiln_object_payload(plain, "a.o").has_value());

  CHECK_THROWS_WITH(kiln_object_payload("not an object at all, but long enough to be one's header......", "x.o"),
                    Catch::Contains("x.o") && Catch::Contains("not a 64-bit little-endian ELF object"));
  // The header of a real object without its section table.
  CHECK_THROWS_WITH(kiln_object_payload(std::string_view(carrier).substr(0, 64), "cut.o"),
                    Catch::Contains("cut.o") && Catch::Contains("section table lies outside the file"));
}
