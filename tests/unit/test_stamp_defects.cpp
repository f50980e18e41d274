// Regression tests for stamp/emission defects found by hostile testing (issue 8):
// x32 targets, constants wider than 64 bits, aliases of stamp's functions, and
// extern_weak declarations. Where a program is involved, it is built with both back
// ends, linked with the system linker, run, and must behave the same.
#include <catch2/catch.hpp>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <string>
#include <vector>

#include "backend.h"
#include "bitcode.h"
#include "census.h"
#include "error.h"
#include "flat_export.h"
#include "flat_file.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"

using namespace kiln;

namespace {

// The module's stamp verdict in the census, and its per-function reasons.
const Verdict& stamp_verdict(const ModuleCensus& c) {
  for (const auto& v : c.verdicts)
    if (v.backend == "stamp") return v;
  throw std::runtime_error("no stamp verdict");
}

std::vector<std::string> reasons_of(const ModuleCensus& c, const std::string& fn) {
  for (const auto& f : c.function_verdicts)
    if (f.name == fn) return f.reasons;
  throw std::runtime_error("no function " + fn);
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

struct Run {
  int exit_code = -1;
  std::string out;
};

// Emits `bitcode` with `backend`, links it (with `extra` objects or sources) into a
// program with cc and runs it.
Run build_and_run(const std::string& backend, const std::string& bitcode, const std::string& dir,
                  const std::vector<std::string>& extra = {}, EmitCounts* counts = nullptr) {
  auto b = make_backend(backend, Profile::fast);
  EmitResult r = b->emit(bitcode, backend + ".bc");
  if (counts) *counts = r.counts;
  std::string object = dir + "/" + backend + ".o", program = dir + "/" + backend;
  write_file_atomic(object, r.object);
  std::vector<std::string> argv = {"cc", "-o", program, object};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process(argv, quiet).exit_code == 0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  ProcessResult run = run_process({program}, capture);
  return {run.exit_code, run.captured_stdout};
}

struct SymbolFacts {
  bool found = false, defined = false;
  uint8_t binding = 0, visibility = 0;
};

// The symbol table entry named `name` in an ELF64 relocatable object.
SymbolFacts symbol_in(const std::string& object, const std::string& name) {
  auto buffer = llvm::MemoryBuffer::getMemBuffer(llvm::StringRef(object.data(), object.size()), "o", false);
  auto file = llvm::object::ObjectFile::createObjectFile(buffer->getMemBufferRef());
  if (!file) throw std::runtime_error(llvm::toString(file.takeError()));
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(file->get());
  if (!elf) throw std::runtime_error("not ELF64");
  SymbolFacts facts;
  for (const llvm::object::ELFSymbolRef& s : elf->symbols()) {
    auto n = s.getName();
    if (!n) {
      llvm::consumeError(n.takeError());
      continue;
    }
    if (*n != name) continue;
    facts.found = true;
    facts.binding = s.getBinding();
    facts.visibility = s.getOther() & 0x3;
    auto section = s.getSection();
    if (!section) llvm::consumeError(section.takeError());
    else facts.defined = *section != elf->section_end();
  }
  return facts;
}

const char* kX32Ir = R"(
target datalayout = "e-m:e-p:32:32-p270:32:32-p271:32:32-p272:64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnux32"
define i32 @f(i32 %a) {
  %s = add i32 %a, 1
  ret i32 %s
}
)";

}  // namespace

// Defect 11: x32 bitcode (64-bit code, 32-bit pointers, ELF32) was emitted as ELF64.
TEST_CASE("x32 triples are refused by every back end and by the census", "[stamp_defects]") {
  CHECK(triple_problem("x86_64-unknown-linux-gnux32").find("x32") != std::string::npos);
  CHECK(triple_problem("x86_64-linux-muslx32").find("x32") != std::string::npos);
  CHECK(triple_problem("x86_64-unknown-linux-gnu").empty());
  std::string bitcode = kiln_test::bitcode_from_ir(kX32Ir);
  for (const char* backend : {"llvm", "stamp"}) {
    INFO(backend);
    auto b = make_backend(backend, Profile::fast);
    try {
      b->emit(bitcode, "x32.bc");
      FAIL("x32 bitcode was emitted");
    } catch (const KilnError& e) {
      CHECK(e.code() == kExitBadInput);
      CHECK(std::string(e.what()).find("x32") != std::string::npos);
    }
  }
  ModuleCensus c = census_of_bytes(bitcode, "id", "x32.bc");
  for (const auto& v : c.verdicts) {
    INFO(v.backend);
    CHECK(v.verdict == "rejected");
    REQUIRE(!v.reasons.empty());
    CHECK(v.reasons.front().find("target: ") != std::string::npos);
    CHECK(v.reasons.front().find("x32") != std::string::npos);
  }
}

namespace {

// Defect 14: x86_fp80 and fp128 constants made the flat export assert (getZExtValue
// on more than 64 bits). Every function here has a constant or count wider than 64
// bits somewhere; `twice` has none and stays stamp's.
const char* kWideConstantsIr = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
define void @set_ld(ptr %p) {
  store x86_fp80 0xK3FFF8000000000000000, ptr %p, align 16
  ret void
}
define void @set_q(ptr %p) {
  store fp128 0xL00000000000000004000800000000000, ptr %p, align 16
  ret void
}
define i64 @wide(i64 %x) {
  %a = zext i64 %x to i128
  %b = add i128 %a, 170141183460469231731687303715884105727
  %c = lshr i128 %b, 64
  %t = trunc i128 %c to i64
  ret i64 %t
}
define i64 @wider(i64 %x) {
  %a = zext i64 %x to i256
  %b = add i256 %a, 57896044618658097711785492504343953926634992332820282019728792003956564819967
  %t = trunc i256 %b to i64
  ret i64 %t
}
define i64 @count128(i64 %x) {
  %m = alloca i64, i128 2, align 8
  store i64 %x, ptr %m
  %v = load i64, ptr %m
  ret i64 %v
}
define i64 @far(ptr %p) {
  %q = getelementptr i64, ptr %p, i64 2305843009213693953
  %v = ptrtoint ptr %q to i64
  %w = ptrtoint ptr %p to i64
  %d = sub i64 %v, %w
  ret i64 %d
}
define i64 @twice(i64 %x) {
  %r = mul i64 %x, 2
  ret i64 %r
}
)";

const char* kWideConstantsDriver = R"(
#include <stdio.h>
#include <string.h>
void set_ld(void*); void set_q(void*); long long wide(long long); long long count128(long long);
long long far(void*); long long twice(long long);
int main(void) {
  long double ld = 0; set_ld(&ld); printf("%Lf\n", ld);
  unsigned char q[16]; memset(q, 0, 16); set_q(q);
  for (int i = 0; i < 16; ++i) printf("%02x", q[i]);
  printf("\n%lld %lld %lld %lld\n", wide(5), count128(11), far(q), twice(21));
  return 0;
}
)";

}  // namespace

TEST_CASE("constants wider than 64 bits fall back per function with a reason", "[stamp_defects]") {
  std::string bitcode = kiln_test::bitcode_from_ir(kWideConstantsIr);
  ModuleCensus c = census_of_bytes(bitcode, "id", "wide.bc");
  CHECK(stamp_verdict(c).verdict == "partial");
  CHECK(has(reasons_of(c, "set_ld"), "floating-point constant wider than 64 bits"));
  CHECK(has(reasons_of(c, "set_q"), "floating-point constant wider than 64 bits"));
  // i128 constants are stamp's (beyond 96 signed bits loaded from constant data, issue
  // 12); wider integers' not.
  CHECK(reasons_of(c, "wide").empty());
  CHECK(has(reasons_of(c, "wider"), "integer constant wider than 64 bits"));
  CHECK(has(reasons_of(c, "count128"), "alloca larger than 1 GiB") == false);
  CHECK(has(reasons_of(c, "far"), "getelementptr offset beyond 2 GiB"));
  CHECK(reasons_of(c, "twice").empty());
  bool counted = false;
  for (const auto& r : stamp_verdict(c).reasons)
    if (r == "floating-point constant wider than 64 bits (2 functions)") counted = true;
  CHECK(counted);

  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", kWideConstantsDriver);
  Run expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c"});
  EmitCounts counts;
  Run actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c"}, &counts);
  CHECK(expected.exit_code == 0);
  CHECK(expected.out.find("1.000000\n") == 0);
  CHECK(actual.exit_code == expected.exit_code);
  CHECK(actual.out == expected.out);
  CHECK(counts.functions_stamp >= 3);  // twice, count128, wide
}

// A vector of i1 (or of any element narrower than its allocation) is packed bit by
// bit in memory; writing it element per allocation size overran the global's bytes.
TEST_CASE("packed vector initializers leave the globals to llvm and come out the same", "[stamp_defects]") {
  const char* ir = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
@bits = global <8 x i1> <i1 true, i1 false, i1 true, i1 true, i1 false, i1 false, i1 false, i1 true>
@tri = global <4 x i24> <i24 1, i24 2, i24 3, i24 4>
define i64 @probe() {
  %b = load i8, ptr @bits
  %b64 = zext i8 %b to i64
  %t = getelementptr i8, ptr @tri, i64 3
  %x = load i24, ptr %t
  %x64 = zext i24 %x to i64
  %s = shl i64 %x64, 8
  %r = or i64 %s, %b64
  ret i64 %r
}
)";
  std::string bitcode = kiln_test::bitcode_from_ir(ir);
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c",
                    "#include <stdio.h>\nlong long probe(void);\n"
                    "int main(void) { printf(\"%llx\\n\", probe()); return 0; }\n");
  Run expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c"});
  EmitCounts counts;
  Run actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c"}, &counts);
  CHECK(expected.out == "28d\n");
  CHECK(actual.out == expected.out);
  CHECK(counts.functions_stamp == 1);
}

namespace {

// Defect 15: an alias of a function stamp compiled left the llvm half with an alias
// to a declaration, which does not verify. `f` is aliased directly, the C++
// constructor pair (C1 an alias of C2) outside a comdat, `g` through a constant
// expression, and `resolve` is an ifunc's resolver.
const char* kAliasIr = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
@counter = global i64 0
@a = alias void (), ptr @f
@_ZN1SC1Ev = unnamed_addr alias void (ptr), ptr @_ZN1SC2Ev
@g_alias = alias i8, getelementptr (i8, ptr @g, i64 0)
@pick = ifunc i64 (i64), ptr @resolve
define void @f() {
  %v = load i64, ptr @counter
  %n = add i64 %v, 1
  store i64 %n, ptr @counter
  ret void
}
define void @_ZN1SC2Ev(ptr %this) unnamed_addr {
  store i64 77, ptr %this
  ret void
}
define i64 @g(i64 %x) {
  %r = add i64 %x, 1000
  ret i64 %r
}
define internal i64 @impl(i64 %x) {
  %r = mul i64 %x, 3
  ret i64 %r
}
define ptr @resolve() {
  ret ptr @impl
}
define i64 @run() {
  call void @a()
  call void @f()
  call void @a()
  %s = alloca i64
  call void @_ZN1SC1Ev(ptr %s)
  %sv = load i64, ptr %s
  %c = load i64, ptr @counter
  %g = call i64 @g_alias(i64 %c)
  %p = call i64 @pick(i64 %sv)
  %t = add i64 %g, %p
  ret i64 %t
}
)";

}  // namespace

TEST_CASE("functions that aliases or ifuncs point to stay llvm's, and the program runs the same", "[stamp_defects]") {
  std::string bitcode = kiln_test::bitcode_from_ir(kAliasIr);
  ModuleCensus c = census_of_bytes(bitcode, "id", "alias.bc");
  CHECK(stamp_verdict(c).verdict == "partial");
  CHECK(reasons_of(c, "f") == std::vector<std::string>{"target of an alias"});
  CHECK(reasons_of(c, "_ZN1SC2Ev") == std::vector<std::string>{"target of an alias"});
  CHECK(reasons_of(c, "g") == std::vector<std::string>{"target of an alias"});
  CHECK(reasons_of(c, "resolve") == std::vector<std::string>{"ifunc resolver"});
  CHECK(reasons_of(c, "impl").empty());
  CHECK(reasons_of(c, "run").empty());

  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c",
                    "#include <stdio.h>\nlong long run(void);\n"
                    "int main(void) { printf(\"%lld\\n\", run()); return 0; }\n");
  Run expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c"});
  EmitCounts counts;
  Run actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c"}, &counts);
  CHECK(expected.out == "1234\n");  // g(3) = 1003, pick(77) = 231
  CHECK(actual.exit_code == expected.exit_code);
  CHECK(actual.out == expected.out);
  CHECK(counts.functions_stamp == 2);  // impl and run
  CHECK(counts.functions_llvm == 4);
}

namespace {

// Defect 16: stamp wrote extern_weak declarations as strong undefined symbols. The
// module references a weak function and a weak variable in code, and the weak
// variable from an initializer (stamp writes the globals itself when it compiles
// every function); `wd` and `wdata` are weak definitions a C file overrides.
const char* kWeakIr = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
declare extern_weak i32 @w()
@wv = extern_weak global i32
@pw = global ptr @wv
@wdata = weak global i32 3
define weak i32 @wd() {
  ret i32 1
}
define i32 @probe() {
entry:
  %has = icmp ne ptr @w, null
  br i1 %has, label %call, label %data
call:
  %r = call i32 @w()
  br label %data
data:
  %fr = phi i32 [ %r, %call ], [ -1, %entry ]
  %p = load ptr, ptr @pw
  %hasv = icmp ne ptr %p, null
  br i1 %hasv, label %load, label %done
load:
  %v = load i32, ptr %p
  br label %done
done:
  %vr = phi i32 [ %v, %load ], [ -100, %data ]
  %dv = load i32, ptr @wdata
  %dr = call i32 @wd()
  %s1 = mul i32 %fr, 1000
  %s2 = add i32 %s1, %vr
  %s3 = mul i32 %dv, 10
  %s4 = add i32 %s2, %s3
  %s5 = mul i32 %dr, 100000
  %s6 = add i32 %s4, %s5
  ret i32 %s6
}
)";

const char* kWeakDriver =
    "#include <stdio.h>\nint probe(void);\nint main(void) { printf(\"%d\\n\", probe()); return 0; }\n";
const char* kWeakDefinitions = "int w(void) { return 7; }\nint wv = 5;\nint wdata = 4;\nint wd(void) { return 2; }\n";

}  // namespace

TEST_CASE("extern_weak declarations are weak undefined symbols; weak definitions stay weak", "[stamp_defects]") {
  // With every function stamp's (the globals written by stamp too) and with one
  // function left to llvm, whose half is combined with stamp's.
  std::string fallback_fn =
      "define <2 x double> @half(<2 x double> %x) {\n  %r = fadd <2 x double> %x, %x\n  ret <2 x double> %r\n}\n";
  for (bool whole : {true, false}) {
    INFO((whole ? "stamp writes every symbol" : "one function falls back"));
    std::string ir = std::string(kWeakIr) + (whole ? "" : fallback_fn);
    std::string bitcode = kiln_test::bitcode_from_ir(ir);
    auto stamp = make_backend("stamp", Profile::fast);
    EmitResult r = stamp->emit(bitcode, "weak.bc");
    CHECK(r.counts.functions_llvm == (whole ? 0u : 1u));
    for (const char* name : {"w", "wv"}) {
      INFO(name);
      SymbolFacts s = symbol_in(r.object, name);
      CHECK(s.found);
      CHECK_FALSE(s.defined);
      CHECK(s.binding == llvm::ELF::STB_WEAK);
    }
    for (const char* name : {"wd", "wdata"}) {
      INFO(name);
      SymbolFacts s = symbol_in(r.object, name);
      CHECK(s.defined);
      CHECK(s.binding == llvm::ELF::STB_WEAK);
    }

    kiln_test::ScratchDir dir;
    write_file_atomic(dir.path + "/driver.c", kWeakDriver);
    write_file_atomic(dir.path + "/defs.c", kWeakDefinitions);
    // Nothing defines the weak symbols: null, and the weak definitions stand.
    Run expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c"});
    Run actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c"});
    CHECK(expected.out == "98930\n");  // 1*100000 - 1000 - 100 + 3*10
    CHECK(actual.exit_code == expected.exit_code);
    CHECK(actual.out == expected.out);
    // A C file defines them all: the weak declarations bind, the strong definitions win.
    expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c", dir.path + "/defs.c"});
    actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c", dir.path + "/defs.c"});
    CHECK(expected.out == "207045\n");  // 2*100000 + 7*1000 + 5 + 4*10
    CHECK(actual.exit_code == expected.exit_code);
    CHECK(actual.out == expected.out);
  }
}

// A module's own data layout may disagree with the x86-64 target's (32-bit pointers
// under a plain x86-64 triple, no layout at all): the llvm back end imposes the
// target's, so stamp must compute sizes, offsets and strides with it too, or its
// code and llvm's (and the globals the llvm half lays out) disagree.
TEST_CASE("stamp lays out with the target's data layout, as llvm does, whatever the module says", "[stamp_defects]") {
  const char* body = R"(
target triple = "x86_64-unknown-linux-gnu"
@gs = global { i8, i64, i128, ptr } { i8 1, i64 2, i128 3, ptr @gs }
define i64 @offsets(ptr %p) {
  %a = getelementptr ptr, ptr %p, i64 1
  %b = getelementptr { i8, i128 }, ptr %p, i64 0, i32 1
  %c = getelementptr { i8, i64 }, ptr %p, i64 0, i32 1
  %d = getelementptr x86_fp80, ptr %p, i64 1
  %base = ptrtoint ptr %p to i64
  %ai = ptrtoint ptr %a to i64
  %bi = ptrtoint ptr %b to i64
  %ci = ptrtoint ptr %c to i64
  %di = ptrtoint ptr %d to i64
  %ao = sub i64 %ai, %base
  %bo = sub i64 %bi, %base
  %co = sub i64 %ci, %base
  %do = sub i64 %di, %base
  %b100 = mul i64 %bo, 100
  %c10k = mul i64 %co, 10000
  %d1m = mul i64 %do, 1000000
  %s1 = add i64 %ao, %b100
  %s2 = add i64 %s1, %c10k
  %s3 = add i64 %s2, %d1m
  %q = getelementptr i8, ptr @gs, i64 16
  %low = load i64, ptr %q
  %r = getelementptr i8, ptr @gs, i64 32
  %self = load ptr, ptr %r
  %same = icmp eq ptr %self, @gs
  %same64 = zext i1 %same to i64
  %l = mul i64 %low, 1000000000
  %t = add i64 %s3, %l
  %u = mul i64 %same64, 10000000000
  %v = add i64 %t, %u
  ret i64 %v
}
)";
  kiln_test::ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c",
                    "#include <stdio.h>\nlong long offsets(void*);\n"
                    "int main(void) { char b[64]; printf(\"%lld\\n\", offsets(b)); return 0; }\n");
  for (const char* layout : {"e-m:e-p:32:32-i64:32-i128:64-f80:32-n8:16:32-S32", ""}) {
    INFO("module data layout '" << layout << "'");
    std::string ir = (*layout ? "target datalayout = \"" + std::string(layout) + "\"\n" : std::string()) + body;
    std::string bitcode = kiln_test::bitcode_from_ir(ir);
    Run expected = build_and_run("llvm", bitcode, dir.path, {dir.path + "/driver.c"});
    EmitCounts counts;
    Run actual = build_and_run("stamp", bitcode, dir.path, {dir.path + "/driver.c"}, &counts);
    // ptr 8, {i8, i128} 16, {i8, i64} 8, x86_fp80 16; the i128 at 16, the pointer at 32.
    CHECK(expected.out == "13016081608\n");
    CHECK(actual.out == expected.out);
    CHECK(counts.functions_stamp == 1);
  }
}

// The same through a flat IR file (kiln-flat(5) version 3): an object emitted from the
// file, as kiln-replay-flat and the GPU machine emit it, keeps the weak declarations.
TEST_CASE("a flat IR file carries extern_weak and hidden declarations to the object", "[stamp_defects][flat]") {
  const char* ir = R"(
target triple = "x86_64-unknown-linux-gnu"
declare extern_weak i32 @w()
declare hidden i32 @h()
define i32 @probe() {
entry:
  %has = icmp ne ptr @w, null
  br i1 %has, label %call, label %done
call:
  %r = call i32 @w()
  br label %done
done:
  %v = phi i32 [ %r, %call ], [ -1, %entry ]
  %x = call i32 @h()
  %s = add i32 %v, %x
  ret i32 %s
}
)";
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(ir), "weak.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 1);
  flat.resolve_symbol_names();
  std::string file = write_flat_file(flat.flat, "weak.ll");
  FlatModuleData back = read_flat_file(file, "weak.flat");
  std::string object = emit_flat_module(back, "weak.ll");
  SymbolFacts w = symbol_in(object, "w"), h = symbol_in(object, "h");
  CHECK(w.found);
  CHECK_FALSE(w.defined);
  CHECK(w.binding == llvm::ELF::STB_WEAK);
  CHECK(h.found);
  CHECK(h.visibility == llvm::ELF::STV_HIDDEN);
  // A binding byte out of range is refused, not handed to the ELF writer.
  std::string bad = file;
  bad[bad.size() - 2] = 9;  // the last undefined symbol's binding
  CHECK_THROWS_AS(read_flat_file(bad, "bad.flat"), KilnError);
}
