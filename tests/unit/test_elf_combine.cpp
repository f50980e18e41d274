// The in-process combiner of relocatable objects (lib/stamp/elf_combine.h): halves of a
// split module made by LLVM and by stamp's writer are combined, compared with what
// ld.lld -r makes of them, linked by GNU ld and lld, and run (C, and C++ throwing across
// the halves); what it does not handle gives a reason, and bad input never crashes it.
#include <catch2/catch.hpp>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backend.h"
#include "backend_llvm.h"
#include "elf_combine.h"
#include "error.h"
#include "fallback.h"
#include "fs.h"
#include "ir_helpers.h"
#include "kiln_config.h"
#include "process.h"
#include "split_module.h"
#include "stamp_object.h"
#include "test_helpers.h"

using namespace kiln;
using namespace kiln_test;

namespace {

const std::string kTag = "0123456789ab";

CombineResult combine(const std::vector<std::string>& objects, std::string_view tag = kTag) {
  std::vector<std::string_view> views(objects.begin(), objects.end());
  return combine_relocatable(views, tag);
}

// What the tests compare of a symbol: where it is defined is said by the kind of its
// section (type and flags), since the section indexes differ between combiners.
struct Symbol {
  std::string name;
  unsigned binding = 0, type = 0, visibility = 0;
  bool defined = false;
  unsigned section_type = 0;
  uint64_t section_flags = 0;
  bool operator<(const Symbol& o) const {
    return std::tie(name, binding, type, visibility, defined, section_type, section_flags) <
        std::tie(o.name, o.binding, o.type, o.visibility, o.defined, o.section_type, o.section_flags);
  }
  bool operator==(const Symbol& o) const { return !(*this < o) && !(o < *this); }
};

std::vector<Symbol> symbols_of(const std::string& bytes) {
  using namespace llvm::object;
  auto object = must(ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "combined.o")));
  auto* elf = llvm::dyn_cast<ELF64LEObjectFile>(object.get());
  if (!elf) throw std::runtime_error("not an ELF64LE object");
  std::vector<Symbol> out;
  for (const ELFSymbolRef& s : elf->symbols()) {
    Symbol sym;
    sym.name = must(s.getName()).str();
    sym.binding = s.getBinding();
    sym.type = s.getELFType();
    sym.visibility = s.getOther() & 3;
    section_iterator section = must(s.getSection());
    sym.defined = section != elf->section_end();
    if (sym.defined) {
      ELFSectionRef sec(*section);
      sym.section_type = sec.getType();
      sym.section_flags = sec.getFlags();
    }
    out.push_back(sym);
  }
  return out;
}

const Symbol* find_symbol(const std::vector<Symbol>& symbols, const std::string& name) {
  for (const Symbol& s : symbols)
    if (s.name == name) return &s;
  return nullptr;
}

size_t sections_named(const std::string& bytes, const std::string& name) {
  auto object = must(llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "combined.o")));
  size_t count = 0;
  for (const llvm::object::SectionRef& s : object->sections()) count += must(s.getName()) == name;
  return count;
}

// Each SHT_GROUP section: its flag word, its signature symbol's name and binding.
struct Group {
  uint32_t flags = 0;
  std::string signature;
  unsigned binding = 0;
  size_t members = 0;
};

std::vector<Group> groups_of(const std::string& bytes) {
  auto file = must(llvm::object::ELF64LEFile::create(llvm::StringRef(bytes)));
  auto sections = must(file.sections());
  const llvm::object::ELF64LE::Shdr* symtab = nullptr;
  for (const auto& s : sections)
    if (s.sh_type == llvm::ELF::SHT_SYMTAB) symtab = &s;
  if (!symtab) throw std::runtime_error("no symbol table");
  auto strtab = must(file.getStringTableForSymtab(*symtab));
  std::vector<Group> out;
  for (const auto& s : sections) {
    if (s.sh_type != llvm::ELF::SHT_GROUP) continue;
    auto words = must(file.getSectionContentsAsArray<llvm::object::ELF64LE::Word>(s));
    const auto* sym = must(file.getEntry<llvm::object::ELF64LE::Sym>(*symtab, s.sh_info));
    out.push_back({words[0], must(sym->getName(strtab)).str(), sym->getBinding(), words.size() - 1});
  }
  return out;
}

// Writes the object and links it with `sources` by the compiler driver `driver` (cc,
// c++, clang++ -fuse-ld=lld ...); runs the program and returns what it prints.
std::string link_with(const std::string& dir, const std::string& name, const std::string& driver,
                      const std::vector<std::string>& sources, const std::string& object) {
  const std::string obj = dir + "/" + name + ".o", prog = dir + "/" + name;
  write_file_atomic(obj, object);
  std::string command = driver + " -o " + shell_join({prog}) + " " + shell_join(sources) + " " + shell_join({obj});
  ProcessResult link = shell(command);
  if (link.exit_code != 0) throw std::runtime_error("cannot link " + name + ": " + link.captured_stdout);
  ProcessResult run = shell(shell_join({prog}));
  if (run.exit_code != 0) throw std::runtime_error(name + " exited with " + std::to_string(run.exit_code));
  return run.captured_stdout;
}

// readelf and llvm-readelf read the object without a warning.
// `what`: the readers' options for what to read (all but the relocations and groups
// for an object of 66,000 sections, whose listing alone takes the readers a minute).
void check_readable(const std::string& dir, const std::string& object,
                    const std::vector<std::string>& what = {"-h", "-S", "-s", "-r", "-g"}) {
  write_file_atomic(dir + "/readable.o", object);
  for (std::string reader : {std::string("readelf"), llvm_tool("llvm-readelf")}) {
    std::vector<std::string> argv = {reader};
    argv.insert(argv.end(), what.begin(), what.end());
    argv.insert(argv.end(), {"-W", dir + "/readable.o"});
    ProcessResult r = shell(shell_join(argv));
    INFO(reader << ": " << r.captured_stdout.substr(0, 2000));
    CHECK(r.exit_code == 0);
    for (const char* complaint : {"readelf: Warning", "readelf: warning", "readelf: Error", "readelf: error"})
      CHECK_FALSE(contains(r.captured_stdout, complaint));
  }
}

// The split module of test_fallback.cpp in two halves, both made by LLVM: stamp's
// stand-in has helper, the unnamed function and compute, LLVM's the rest.
struct SplitHalves {
  std::string reference, stamp_object, llvm_object;
};

SplitHalves split_halves(const std::string& dir) {
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  SplitHalves h;
  {
    auto whole = parse_ir(ctx, kSplitIr);
    h.reference = link_and_run(dir, "whole", backend.codegen(*whole, "whole.ll"));
  }
  auto m = parse_ir(ctx, kSplitIr);
  expose_local_symbols(*m, kTag);
  std::vector<bool> marked(m->size(), false);
  for (llvm::Function& f : *m)
    if (f.getName().starts_with("__kiln_anon.")) marked[function_index(*m, &f)] = true;
  marked[function_index(*m, m->getFunction("helper.kiln." + kTag))] = true;
  marked[function_index(*m, m->getFunction("compute"))] = true;
  h.llvm_object = backend.codegen(*fallback_module(*m, marked), "llvm-half");
  h.stamp_object = backend.codegen(*stamp_half_with_llvm(*m, marked), "stamp-half");
  return h;
}

}  // namespace

TEST_CASE("the split module's halves combine in process, link with cc and lld, and run the same", "[elf_combine]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  SplitHalves h = split_halves(dir.path);
  REQUIRE(contains(h.reference, " "));
  for (bool stamp_first : {true, false}) {
    INFO((stamp_first ? "stamp's half first" : "llvm's half first"));
    std::vector<std::string> inputs = {h.stamp_object, h.llvm_object};
    if (!stamp_first) std::swap(inputs[0], inputs[1]);
    CombineResult r = combine(inputs);
    INFO(r.unsupported);
    REQUIRE(r.ok());
    CHECK(r.localized == 8);  // helper, twice, the unnamed function and constant, .str, counter, vtable, the alias
    CHECK(object_problem(r.object).empty());
    check_readable(dir.path, r.object);
    CHECK(link_with(dir.path, "gnu", "cc", {dir.path + "/main.c"}, r.object) == h.reference);
    CHECK(link_with(dir.path, "lld", "cc -fuse-ld=lld", {dir.path + "/main.c"}, r.object) == h.reference);
    // ld.lld -r of the combined object (a later partial link) still works.
    write_file_atomic(dir.path + "/again.o", r.object);
    CHECK(shell(shell_join({llvm_tool("ld.lld"), "-r", "-o", dir.path + "/again2.o", dir.path + "/again.o"})).exit_code ==
          0);
  }
  // Deterministic: the same inputs give the same bytes.
  CHECK(combine({h.stamp_object, h.llvm_object}).object == combine({h.stamp_object, h.llvm_object}).object);
  // Without a tag nothing is made local, and the program is the same.
  CombineResult untagged = combine({h.stamp_object, h.llvm_object}, "");
  REQUIRE(untagged.ok());
  CHECK(untagged.localized == 0);
  CHECK(find_symbol(symbols_of(untagged.object), "helper.kiln." + kTag) != nullptr);
  CHECK(link_with(dir.path, "untagged", "cc", {dir.path + "/main.c"}, untagged.object) == h.reference);
}

TEST_CASE("the combined object defines what ld.lld -r's does, the renamed symbols local under their names",
          "[elf_combine]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  SplitHalves h = split_halves(dir.path);
  const std::string suffix = ".kiln." + kTag;
  auto renamed = [&](const std::string& name) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::vector<Symbol> lld = symbols_of(combine_objects({h.stamp_object, h.llvm_object}, "split"));
  CombineResult r = combine({h.stamp_object, h.llvm_object});
  REQUIRE(r.ok());
  std::vector<Symbol> ours = symbols_of(r.object);

  std::set<Symbol> lld_defined, ours_defined;
  for (const Symbol& s : lld)
    if (s.defined && s.binding != llvm::ELF::STB_LOCAL && !renamed(s.name)) lld_defined.insert(s);
  for (const Symbol& s : ours)
    if (s.defined && s.binding != llvm::ELF::STB_LOCAL) ours_defined.insert(s);
  CHECK(ours_defined == lld_defined);
  CHECK(find_symbol(ours, "compute") != nullptr);
  // Every renamed symbol lld keeps is a local of its original name here, defined in a
  // section of the same kind, with default visibility; no ".kiln." name is left.
  size_t count = 0;
  for (const Symbol& s : lld) {
    if (!renamed(s.name) || s.type == llvm::ELF::STT_SECTION) continue;  // a section symbol: its section's name
    ++count;
    INFO(s.name);
    CHECK(s.visibility == llvm::ELF::STV_HIDDEN);
    const Symbol* local = find_symbol(ours, s.name.substr(0, s.name.size() - suffix.size()));
    REQUIRE(local);
    CHECK(local->binding == llvm::ELF::STB_LOCAL);
    CHECK(local->visibility == llvm::ELF::STV_DEFAULT);
    CHECK(local->defined);
    CHECK(local->type == s.type);
    CHECK(local->section_type == s.section_type);
    CHECK(local->section_flags == s.section_flags);
  }
  CHECK(count == r.localized);
  for (const Symbol& s : ours) CHECK_FALSE(contains(s.name, ".kiln."));
  CHECK(find_symbol(ours, "helper") != nullptr);
  CHECK(find_symbol(ours, "counter") != nullptr);
  CHECK(find_symbol(ours, "__kiln_anon.0") != nullptr);
  // The undefined symbols are the same too (llabs and nothing of the module's own).
  std::set<std::string> lld_undefined, ours_undefined;
  for (const Symbol& s : lld)
    if (!s.defined && s.binding != llvm::ELF::STB_LOCAL) lld_undefined.insert(s.name);
  for (const Symbol& s : ours)
    if (!s.defined && s.binding != llvm::ELF::STB_LOCAL) ours_undefined.insert(s.name);
  CHECK(ours_undefined == lld_undefined);
  CHECK(ours_undefined.count("llabs") == 1);
}

// Where the combiner refuses to join the halves (here: a .note.gnu.property in one
// only, as a -fcf-protection build's LLVM half has it), ld.lld -r joins them, and the
// combiner then makes the renamed symbols of lld's one object local under their names
// again: they stayed global NAME.kiln.TAG, in backtraces, perf and nm.
TEST_CASE("halves ld.lld -r joins still get their local symbols back", "[elf_combine]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  SplitHalves h = split_halves(dir.path);
  // An x86 feature property note (IBT and SHSTK), added to LLVM's half only.
  const unsigned char note[] = {4, 0, 0, 0,    16, 0, 0, 0, 5, 0, 0, 0, 'G', 'N', 'U', 0,
                                2, 0, 0, 0xc0, 4,  0, 0, 0, 3, 0, 0, 0, 0,   0,   0,   0};
  write_file_atomic(dir.path + "/note.bin", std::string(reinterpret_cast<const char*>(note), sizeof note));
  write_file_atomic(dir.path + "/llvm-half.o", h.llvm_object);
  ProcessResult added =
      shell(shell_join({llvm_tool("llvm-objcopy"), "--add-section", ".note.gnu.property=" + dir.path + "/note.bin",
                        "--set-section-flags", ".note.gnu.property=alloc,readonly", "--set-section-type",
                        ".note.gnu.property=7", dir.path + "/llvm-half.o"}));
  INFO(added.captured_stdout);
  REQUIRE(added.exit_code == 0);
  const std::string llvm_half = read_file(dir.path + "/llvm-half.o");
  REQUIRE_FALSE(combine({h.stamp_object, llvm_half}).ok());  // the combiner alone refuses
  const std::string joined = combine_objects({h.stamp_object, llvm_half}, "split", kTag, {});
  std::vector<Symbol> symbols = symbols_of(joined);
  for (const Symbol& s : symbols) CHECK_FALSE(contains(s.name, ".kiln."));
  const Symbol* helper = find_symbol(symbols, "helper");
  REQUIRE(helper);
  CHECK(helper->binding == llvm::ELF::STB_LOCAL);
  CHECK(link_with(dir.path, "lld-joined", "cc", {dir.path + "/main.c"}, joined) == h.reference);
}

TEST_CASE("the real stamp back end's split objects are combined in process", "[elf_combine]") {
  // kSplitIr's alias keeps `twice` with LLVM: the module is split, stamp writes its part.
  std::string bitcode = bitcode_from_ir(kSplitIr);
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  std::string reference =
      link_and_run(dir.path, "whole", make_backend("llvm", Profile::fast)->emit(bitcode, "m.bc").object);
  EmitResult r = make_backend("stamp", Profile::fast)->emit(bitcode, "m.bc");
  REQUIRE(r.counts.functions_stamp > 0);
  REQUIRE(r.counts.functions_llvm > 0);
  std::vector<Symbol> symbols = symbols_of(r.object);
  for (const Symbol& s : symbols) CHECK_FALSE(contains(s.name, ".kiln."));  // ld.lld -r would have kept them
  const Symbol* helper = find_symbol(symbols, "helper");
  REQUIRE(helper);
  CHECK(helper->binding == llvm::ELF::STB_LOCAL);
  CHECK(helper->defined);
  CHECK(link_and_run(dir.path, "stamp", r.object) == reference);
}

// A private thread-local variable and a private large-model global, each used by a
// function of stamp's and by one that stays with LLVM. The TLS references keep a symbol
// of type TLS (.Lt), as LLVM's do: a section symbol gets no offset in the TLS block from
// lld (a PIE failed to link; -no-pie read the plain address). The large global's GOT
// load stays a GOT load: a lea could not reach it past 2 GiB.
TEST_CASE("thread-local and large-model private data keep their references as LLVM writes them", "[elf_combine]") {
  const char* ir = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
@t = private thread_local(localexec) global i32 5
@big = private global [4 x i64] [i64 1, i64 2, i64 3, i64 4], code_model "large"
define i32 @get() {
  %v = load i32, ptr @t
  ret i32 %v
}
define void @set(i32 %x) {
  store i32 %x, ptr @t
  ret void
}
define ptr @addr_big() {
  ret ptr @big
}
define i64 @fb() {
  call void asm sideeffect "nop", ""()
  %v = load i64, ptr @big
  ret i64 %v
}
)";
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c",
                    "#include <stdio.h>\nint get(void); void set(int); long fb(void); long *addr_big(void);\n"
                    "int main(void) { set(7); printf(\"%d %ld %ld\\n\", get(), fb(), addr_big()[2]); return 0; }\n");
  EmitResult r = make_backend("stamp", Profile::fast)->emit(bitcode_from_ir(ir), "m.bc");
  REQUIRE(r.counts.functions_stamp > 0);
  REQUIRE(r.counts.functions_llvm > 0);
  write_file_atomic(dir.path + "/m.o", r.object);
  ProcessResult relocs = shell(shell_join({llvm_tool("llvm-readelf"), "-r", "-W", dir.path + "/m.o"}));
  INFO(relocs.captured_stdout);
  CHECK(contains(relocs.captured_stdout, "R_X86_64_TPOFF32"));
  CHECK_FALSE(contains(relocs.captured_stdout, "TPOFF32        0000000000000000 .tdata"));
  std::istringstream lines(relocs.captured_stdout);
  for (std::string line; std::getline(lines, line);)
    if (contains(line, "TPOFF")) CHECK(contains(line, ".Lt"));
  CHECK(contains(relocs.captured_stdout, "R_X86_64_REX_GOTPCRELX"));
  const std::vector<Symbol> symbols = symbols_of(r.object);
  const Symbol* t = find_symbol(symbols, ".Lt");
  REQUIRE(t);
  CHECK(t->type == llvm::ELF::STT_TLS);
  CHECK(link_with(dir.path, "gnu", "cc", {dir.path + "/main.c"}, r.object) == "7 1 3\n");
  CHECK(link_with(dir.path, "lld", "cc -fuse-ld=lld", {dir.path + "/main.c"}, r.object) == "7 1 3\n");
}

TEST_CASE("a comdat keyed on a local symbol keeps its group, signed by the local symbol as natively", "[elf_combine]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
$keyed = comdat any
@keyed_data = internal global i32 3, comdat($keyed)
define internal i32 @keyed() comdat {
  %v = load i32, ptr @keyed_data
  ret i32 %v
}
define i64 @compute(i64 %x) {
  %a = call i32 @keyed()
  %b = sext i32 %a to i64
  %s = add i64 %b, %x
  ret i64 %s
}
)";
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  std::vector<Group> native = groups_of(backend.codegen(*parse_ir(ctx, ir), "native.ll"));
  REQUIRE(native.size() == 1);
  CHECK(native[0].signature == "keyed");

  auto m = parse_ir(ctx, ir);
  expose_local_symbols(*m, kTag);
  std::vector<bool> marked(m->size(), false);
  marked[function_index(*m, m->getFunction("compute"))] = true;
  std::string stamp_object = backend.codegen(*stamp_half_with_llvm(*m, marked), "stamp-half");
  std::string llvm_object = backend.codegen(*fallback_module(*m, marked), "llvm-half");
  CombineResult r = combine({stamp_object, llvm_object});
  INFO(r.unsupported);
  REQUIRE(r.ok());
  std::vector<Group> groups = groups_of(r.object);
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].signature == native[0].signature);
  CHECK(groups[0].binding == native[0].binding);
  CHECK(groups[0].flags == native[0].flags);
  CHECK(groups[0].members == native[0].members);
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);  // compute(3), compute(4)
  CHECK(link_with(dir.path, "keyed", "cc", {dir.path + "/main.c"}, r.object) == "6 7\n");
  CHECK(link_with(dir.path, "keyed-lld", "cc -fuse-ld=lld", {dir.path + "/main.c"}, r.object) == "6 7\n");
}

namespace {

// Two halves of a C++ module as clang emits them, with exceptions thrown across the
// halves both ways: helper (a "renamed local" of half A, hidden NAME.kiln.TAG as the
// split makes it) throws; B's through() calls it without catching, A's catch_through()
// catches it; A's thrower() throws and B's catch_a() catches; an inline function with a
// static (a comdat group in both halves, as are the DW.ref.__gxx_personality_v0 pointers);
// and in each half a function nothing calls, for the linkers' --gc-sections to remove.
const char* kHalfA = R"(#include <stdexcept>
#include <string>
int helper(int) asm("helper.kiln.0123456789ab") __attribute__((visibility("hidden")));
int helper(int x) {
  if (x < 0) throw std::runtime_error("negative " + std::to_string(x));
  return 2 * x;
}
inline int shared_count() { static int n = 0; return ++n; }
int through(int x);
int catch_through(int x) {
  shared_count();
  try {
    return through(x);
  } catch (const std::runtime_error& e) {
    return -static_cast<int>(std::string(e.what()).size());
  }
}
void thrower(int x) { throw std::logic_error("from A " + std::to_string(x)); }
int unused_a(int x) { return helper(x) * 3; }
)";

const char* kHalfB = R"(#include <stdexcept>
#include <string>
int helper(int) asm("helper.kiln.0123456789ab") __attribute__((visibility("hidden")));
inline int shared_count() { static int n = 0; return ++n; }
void thrower(int x);
int through(int x) { return helper(x) + 1; }
int catch_a(int x) {
  try {
    thrower(x);
  } catch (const std::logic_error& e) {
    return static_cast<int>(std::string(e.what()).size()) + shared_count() * 100;
  }
  return 0;
}
int unused_b(int x) {
  try {
    thrower(x);
  } catch (...) {
    return 1;
  }
  return 0;
}
)";

const char* kCppMain = R"(#include <cstdio>
int catch_through(int);
int catch_a(int);
int through(int);
int main() {
  int first = catch_through(5), second = catch_through(-12), third = catch_a(7);  // in this order
  std::printf("%d %d %d", first, second, third);
  try {
    through(-1);
  } catch (...) {
    std::printf(" uncaught-in-halves");
  }
  std::printf("\n");
  return 0;
}
)";

// What llvm-dwarfdump --verify concludes: "No errors." or its count of each error.
std::string dwarf_verdict(const std::string& file) {
  std::string out = shell(shell_join({llvm_tool("llvm-dwarfdump"), "--verify", file})).captured_stdout;
  if (contains(out, "\nNo errors.")) return "No errors.";
  size_t at = out.find("Aggregated error counts");
  return at == std::string::npos ? out : out.substr(at);
}

std::string compile_cpp(const std::string& dir, const std::string& name, const char* source, bool debug) {
  write_file_atomic(dir + "/" + name + ".cpp", source);
  std::vector<std::string> argv = {"clang++-22",
                                   "-c",
                                   "-O1",
                                   "-fPIC",
                                   "-fexceptions",
                                   "-ffunction-sections",
                                   "-fdata-sections",
                                   "-o",
                                   dir + "/" + name + ".o",
                                   dir + "/" + name + ".cpp"};
  if (debug) argv.push_back("-g");
  ProcessResult r = shell(shell_join(argv));
  if (r.exit_code != 0) throw std::runtime_error("clang++-22 failed: " + r.captured_stdout);
  return read_file(dir + "/" + name + ".o");
}

}  // namespace

TEST_CASE("C++ exceptions thrown across the combined halves are caught, with GNU ld and lld", "[elf_combine]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.cpp", kCppMain);
  // catch_through(5) = 11; catch_through(-12) = -len("negative -12"); catch_a(7) =
  // len("from A 7") + 100 * (shared_count's third call).
  const std::string expected = "11 -12 308 uncaught-in-halves\n";
  // Debug information: none; in half A only, as in kiln's split (LLVM's part alone has
  // DWARF), where the combined object itself must verify; in both halves, where the
  // object holds two sets of .debug_* sections that the linkers concatenate, so the
  // linked programs are what verifies.
  enum Debug { none, first_half, both_halves };
  for (Debug debug : {none, first_half, both_halves}) {
    INFO("debug " << debug);
    std::string a = compile_cpp(dir.path, "a", kHalfA, debug != none);
    std::string b = compile_cpp(dir.path, "b", kHalfB, debug == both_halves);
    CombineResult r = combine({a, b});
    INFO(r.unsupported);
    REQUIRE(r.ok());
    CHECK(r.localized == 1);
    const std::vector<Symbol> symbols = symbols_of(r.object);  // outlives the pointer into it
    const Symbol* helper = find_symbol(symbols, "helper");
    REQUIRE(helper);
    CHECK(helper->binding == llvm::ELF::STB_LOCAL);
    check_readable(dir.path, r.object);
    // One .eh_frame: GNU ld marks the FDEs of only one .eh_frame per object for
    // --gc-sections (and keeps all that any other refers to).
    CHECK(sections_named(r.object, ".eh_frame") == 1);
    // main.cpp without -g: g++'s DWARF 5 next to clang's does not verify even unsplit.
    CHECK(link_with(dir.path, "gnu", "c++", {dir.path + "/main.cpp"}, r.object) == expected);
    CHECK(link_with(dir.path, "lld", "clang++-22 -fuse-ld=lld", {dir.path + "/main.cpp"}, r.object) == expected);
    for (std::string driver : {"c++ -Wl,--gc-sections", "clang++-22 -fuse-ld=lld -Wl,--gc-sections"}) {
      INFO(driver);
      CHECK(link_with(dir.path, "gc", driver, {dir.path + "/main.cpp"}, r.object) == expected);
      ProcessResult nm = shell(shell_join({"nm", dir.path + "/gc"}));
      CHECK(contains(nm.captured_stdout, "catch_through"));
      CHECK_FALSE(contains(nm.captured_stdout, "unused_a"));
      CHECK_FALSE(contains(nm.captured_stdout, "unused_b"));
    }
    if (debug == none) continue;
    // The debug information is as consistent as without the split: the programs linked
    // from the halves as they are verify alike (not cleanly: GNU ld 2.40 mangles clang's
    // .debug_str_offsets, and lld points the DWARF of B's discarded copies of A's
    // inline functions at 0), and the combined object with one half's DWARF (as in
    // kiln's split, where stamp's part has none) verifies as that half does: cleanly.
    // With DWARF in both halves, GNU ld finds no kept copy for a discarded comdat of
    // the same object and points its DWARF at 0 as lld does: not compared.
    for (const char* name : {"gnu", "lld"}) {
      if (debug == both_halves && std::string(name) == "gnu") continue;
      INFO(name);
      std::string driver = std::string(name) == "gnu" ? "c++" : "clang++-22 -fuse-ld=lld";
      std::string base = dir.path + "/unsplit-" + name;
      REQUIRE(shell(driver + " -o " + shell_join({base, dir.path + "/main.cpp", dir.path + "/a.o", dir.path + "/b.o"}))
                  .exit_code == 0);
      CHECK(dwarf_verdict(dir.path + "/" + name) == dwarf_verdict(base));
    }
    if (debug == first_half) CHECK(dwarf_verdict(dir.path + "/gnu.o") == "No errors.");
  }
}

TEST_CASE("objects with more than 65279 sections combine with extended numbering", "[elf_combine]") {
  // stamp's writer: f0 returns 0, each fN returns f(N-1) + 1, two sections a function.
  const int count = 33000;
  std::vector<StampFunction> fs;
  fs.push_back({});
  fs.back().name = "f0";
  fs.back().code = stamp_framed({0x31, 0xC0});
  for (int i = 1; i < count; ++i) {
    StampFunction f;
    const bool renamed = i % 2 && i != count - 1;  // the last one is main's to call
    f.name = "f" + std::to_string(i) + (renamed ? ".kiln." + kTag : "");
    f.visibility = renamed ? SymbolVisibility::hidden : SymbolVisibility::default_;
    f.code = stamp_framed({0xE8, 0, 0, 0, 0, 0x83, 0xC0, 0x01});
    f.relocations = {{kFramedBody + 1, kRelocPlt32, fs.back().name, -4}};
    fs.push_back(f);
  }
  std::string many = write_stamp_object(fs, "many.c");
  // The other input calls the last function and holds main.
  ScratchDir dir;
  const std::string last = "f" + std::to_string(count - 1);
  write_file_atomic(dir.path + "/main.c",
                    "#include <stdio.h>\nint " + last + "(void);\nint main(void) { printf(\"%d\\n\", " + last +
                        "()); return 0; }\n");
  REQUIRE(shell(shell_join({"clang-22", "-c", "-fPIC", "-ffunction-sections", "-o", dir.path + "/main.o",
                            dir.path + "/main.c"}))
              .exit_code == 0);
  std::string main_object = read_file(dir.path + "/main.o");
  for (bool many_first : {true, false}) {
    INFO((many_first ? "the big object first" : "the big object last"));
    CombineResult r = many_first ? combine({many, main_object}) : combine({main_object, many});
    INFO(r.unsupported);
    REQUIRE(r.ok());
    CHECK(r.localized == count / 2 - 1);
    // Each order is read and linked once (GNU ld takes half a minute on it): with GNU
    // ld the one, with lld the other.
    check_readable(dir.path, r.object, {"-h", "-S", "-s"});
    const char* driver = many_first ? "cc" : "cc -fuse-ld=lld";
    INFO(driver);
    CHECK(link_with(dir.path, "many", driver, {}, r.object) == std::to_string(count - 1) + "\n");
  }
}

TEST_CASE("what the combiner does not handle gives a reason, not an exception", "[elf_combine]") {
  LlvmBackend backend(Profile::fast);
  llvm::LLVMContext ctx;
  auto object_of = [&](const char* ir) { return backend.codegen(*parse_ir(ctx, ir), "u.ll"); };
  const std::string f1 = object_of("target triple = \"x86_64-unknown-linux-gnu\"\ndefine i32 @f() {\n  ret i32 1\n}\n");
  const std::string f2 = object_of("target triple = \"x86_64-unknown-linux-gnu\"\ndefine i32 @f() {\n  ret i32 2\n}\n");
  const std::string weak_f =
      object_of("target triple = \"x86_64-unknown-linux-gnu\"\ndefine weak i32 @f() {\n  ret i32 3\n}\n");
  const std::string common = object_of("target triple = \"x86_64-unknown-linux-gnu\"\n@c = common global i32 0\n");
  auto reason = [](const CombineResult& r) {
    CHECK_FALSE(r.ok());
    CHECK(r.object.empty());
    CHECK(r.unsupported.rfind("unsupported: ", 0) == 0);
    return r.unsupported;
  };
  CHECK(contains(reason(combine({f1, f2})), "duplicate definition of f"));
  CHECK(contains(reason(combine({f1, "this is not an object file"})), "input 1: not an ELF file"));
  CHECK(contains(reason(combine({})), "no objects"));
  std::string exec = f1;
  exec[16] = llvm::ELF::ET_EXEC;  // e_type
  CHECK(contains(reason(combine({f1, exec})), "not a relocatable object"));
  std::string arm = f1;
  arm[18] = static_cast<char>(llvm::ELF::EM_AARCH64);  // e_machine
  CHECK(contains(reason(combine({arm, f1})), "input 0: not an x86-64 object"));
  std::string elf32 = f1;
  elf32[llvm::ELF::EI_CLASS] = llvm::ELF::ELFCLASS32;
  CHECK(contains(reason(combine({elf32})), "not a little-endian ELF64"));
  CHECK(contains(reason(combine({common, common})), "COMMON symbol c"));
  // An object that asks for an executable stack: the combined object has one
  // .note.GNU-stack, which could not say both.
  ScratchDir scratch;
  write_file_atomic(scratch.path + "/exec.s", ".text\n.globl g\ng:\n  ret\n.section .note.GNU-stack,\"x\",@progbits\n");
  REQUIRE(shell(shell_join({"clang-22", "-c", "-o", scratch.path + "/exec.o", scratch.path + "/exec.s"})).exit_code ==
          0);
  CHECK(contains(reason(combine({f1, read_file(scratch.path + "/exec.o")})), ".note.GNU-stack unlike input 0's"));
  // A strong and a weak definition: the strong one is kept; COMMON alone is kept.
  CombineResult strong = combine({weak_f, f2});
  REQUIRE(strong.ok());
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c",
                    "#include <stdio.h>\nint f(void);\nint main(void) { printf(\"%d\\n\", f()); return 0; }\n");
  CHECK(link_with(dir.path, "strong", "cc", {dir.path + "/main.c"}, strong.object) == "2\n");
  CHECK(combine({common, f1}).ok());
}

TEST_CASE("truncated and corrupted objects give a reason, never a crash", "[elf_combine]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/main.c", kMainC);
  SplitHalves h = split_halves(dir.path);
  // Every truncation of either input, at a stride that covers the headers byte by byte.
  for (int which = 0; which < 2; ++which) {
    const std::string& whole = which ? h.llvm_object : h.stamp_object;
    for (size_t size = 0; size < whole.size(); size += size < 128 ? 1 : 7) {
      std::string cut = whole.substr(0, size);
      CombineResult r = which ? combine({h.stamp_object, cut}) : combine({cut, h.llvm_object});
      CHECK((r.ok() || r.unsupported.rfind("unsupported: ", 0) == 0));
    }
  }
  // Random byte changes (a fixed seed: the same mutants every run).
  std::mt19937 random(12345);
  size_t ok = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string a = h.stamp_object, b = h.llvm_object;
    std::string& target = round % 2 ? a : b;
    int changes = 1 + static_cast<int>(random() % 8);
    for (int c = 0; c < changes; ++c) target[random() % target.size()] = static_cast<char>(random());
    CombineResult r = combine({a, b});
    (r.ok() ? ok : refused)++;
    if (!r.ok()) CHECK(r.unsupported.rfind("unsupported: ", 0) == 0);
  }
  CHECK(ok + refused == 3000);
}
