// Variables private in the bitcode (rustc's anon.HASH.N constants) get no symbol of their
// own in stamp's object, as in LLVM's: references relocate against the section, so that
// debuggers and profilers print no anon.* names. Checked on the whole module (both
// readers) and on a split module, where LLVM's half defines them and stamp's code
// reaches them; each object linked with a C driver and run, the same as LLVM's.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "differential.h"
#include "test_helpers.h"

namespace {

// Private constants read and addressed by the functions and named by another private
// constant's initializer; a private variable written; an internal one, which keeps its
// (local) symbol as in LLVM's object.
const char* const kPrivateIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@anon.p.0 = private unnamed_addr constant <{ [5 x i8] }> <{ [5 x i8] c"hello" }>, align 1
@anon.p.1 = private unnamed_addr constant <{ ptr, [8 x i8] }> <{ ptr getelementptr (i8, ptr @anon.p.0, i64 1), [8 x i8] c"\04\00\00\00\00\00\00\00" }>, align 8
@anon.p.2 = private global i64 40, align 8
@table = internal global [2 x i64] [i64 7, i64 9], align 8

define i64 @byte_at(i64 %i) {
  %p = getelementptr i8, ptr @anon.p.0, i64 %i
  %v = load i8, ptr %p, align 1
  %w = zext i8 %v to i64
  ret i64 %w
}

define ptr @hello() {
  ret ptr @anon.p.0
}

define i64 @tail_byte(i64 %i) {
  %q = load ptr, ptr @anon.p.1, align 8
  %p = getelementptr i8, ptr %q, i64 %i
  %v = load i8, ptr %p, align 1
  %w = zext i8 %v to i64
  %l = getelementptr i8, ptr @anon.p.1, i64 8
  %n = load i64, ptr %l, align 8
  %r = add i64 %w, %n
  ret i64 %r
}

define i64 @bump(i64 %by) {
  %v = load i64, ptr @anon.p.2, align 8
  %n = add i64 %v, %by
  store i64 %n, ptr @anon.p.2, align 8
  %t = getelementptr [2 x i64], ptr @table, i64 0, i64 1
  %x = load i64, ptr %t, align 8
  %r = add i64 %n, %x
  ret i64 %r
}
)";

// A function stamp does not take (a byte swap of an i128), which splits the module; it
// names a private C string too, which LLVM's half puts in a mergeable section.
const char* const kSplitTail = R"(
@anon.p.3 = private unnamed_addr constant [4 x i8] c"abc\00", align 1

define i64 @kept_by_llvm(i64 %x) {
  %a = zext i64 %x to i128
  %m = call i128 @llvm.bswap.i128(i128 %a)
  %s = lshr i128 %m, 64
  %r = trunc i128 %s to i64
  %c = load i8, ptr getelementptr (i8, ptr @anon.p.3, i64 1), align 1
  %cw = zext i8 %c to i64
  %y = add i64 %r, %cw
  %b = call i64 @byte_at(i64 2)
  %z = add i64 %y, %b
  ret i64 %z
}
declare i128 @llvm.bswap.i128(i128)
)";

const char* const kPrivateDriver = R"(
#include <stdint.h>
#include <stdio.h>
int64_t byte_at(int64_t);
const char* hello(void);
int64_t tail_byte(int64_t);
int64_t bump(int64_t);
#ifdef SPLIT
int64_t kept_by_llvm(int64_t);
#endif
int main(void) {
  for (int i = 0; i < 5; ++i) printf("byte %d %lld\n", i, (long long)byte_at(i));
  printf("hello %.5s\n", hello());
  for (int i = 0; i < 4; ++i) printf("tail %d %lld\n", i, (long long)tail_byte(i));
  long long b1 = bump(2), b2 = bump(-50);
  printf("bump %lld %lld\n", b1, b2);
#ifdef SPLIT
  printf("kept %lld\n", (long long)kept_by_llvm(0x0102));
#endif
  return 0;
}
)";

// The names nm lists for a file (locals included; section symbols have none).
std::vector<std::string> symbol_names(const std::string& path) {
  kiln::ProcessResult r = kiln_test::shell("nm " + path);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> names;
  std::istringstream lines(r.captured_stdout);
  for (std::string line; std::getline(lines, line);) names.push_back(line.substr(line.rfind(' ') + 1));
  return names;
}

size_t count_named(const std::vector<std::string>& names, const std::string& prefix) {
  size_t n = 0;
  for (const std::string& name : names) n += name.compare(0, prefix.size(), prefix) == 0;
  return n;
}

// `ir` through `backend`, linked with dir/driver.o and run: its output, and the
// object's and the program's symbol names.
struct PrivateRun {
  std::string output, route;
  std::vector<std::string> object_symbols, program_symbols;
  kiln::EmitCounts counts;
};

PrivateRun run_private(const std::string& backend, const std::string& ir, const std::string& dir) {
  using namespace kiln;
  EmitResult r = make_backend(backend, Profile::fast)->emit(kiln_test::bitcode_from_ir(ir), backend + ".bc");
  PrivateRun run;
  run.counts = r.counts;
  run.route = r.reader.route;
  const std::string object = dir + "/" + backend + ".o", program = dir + "/" + backend;
  write_file_atomic(object, r.object);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-o", program, dir + "/driver.o", object}, quiet).exit_code == 0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  ProcessResult ran = run_process({program}, capture);
  REQUIRE(ran.exit_code == 0);
  run.output = ran.captured_stdout;
  run.object_symbols = symbol_names(object);
  run.program_symbols = symbol_names(program);
  return run;
}

// The C driver (calling kept_by_llvm too when `split`), compiled into dir/driver.o.
void compile_private_driver(const std::string& dir, bool split) {
  kiln::write_file_atomic(dir + "/driver.c", kPrivateDriver);
  kiln::ProcessOptions quiet;
  quiet.quiet = true;
  std::vector<std::string> argv = {"cc", "-c", "-o", dir + "/driver.o", dir + "/driver.c"};
  if (split) argv.push_back("-DSPLIT");
  REQUIRE(kiln::run_process(argv, quiet).exit_code == 0);
}

}  // namespace

TEST_CASE("private variables get no symbol in stamp's whole-module object, on both readers", "[stamp][private]") {
  kiln_test::ScratchDir dir;
  compile_private_driver(dir.path, false);
  PrivateRun llvm = run_private("llvm", kPrivateIr, dir.path);
  REQUIRE(kiln_test::contains(llvm.output, "hello hello"));
  CHECK(count_named(llvm.object_symbols, "anon.p.") == 0);
  for (const char* reader : {"direct", "llvm"}) {
    INFO("reader " << reader);
    kiln_test::ScopedEnv env("KILN_READER", reader);
    PrivateRun stamp = run_private("stamp", kPrivateIr, dir.path);
    CHECK(stamp.route == reader);
    CHECK(stamp.counts.functions_stamp == 4);
    CHECK(stamp.counts.functions_llvm == 0);
    CHECK(kiln_test::first_difference(llvm.output, stamp.output) == "");
    CHECK(count_named(stamp.object_symbols, "anon.p.") == 0);
    CHECK(count_named(stamp.object_symbols, ".Lanon.p.") == 0);
    CHECK(count_named(stamp.program_symbols, "anon.p.") == 0);
    CHECK(count_named(stamp.object_symbols, "table") == 1);  // internal: a local symbol, as LLVM's
  }
  // Both readers mark the same variables private.
  kiln::ReaderComparison reader = kiln::compare_reader(kiln_test::bitcode_from_ir(kPrivateIr), "private");
  INFO(kiln::outcome_name(reader.outcome) << ": " << reader.detail);
  CHECK(reader.outcome == kiln::ReaderComparison::kIdentical);
}

TEST_CASE("private variables of a split module: stamp's code reaches LLVM's half's, and no symbol is left",
          "[stamp][private]") {
  const std::string ir = std::string(kPrivateIr) + kSplitTail;
  kiln_test::ScratchDir dir;
  compile_private_driver(dir.path, true);
  PrivateRun llvm = run_private("llvm", ir, dir.path);
  REQUIRE(kiln_test::contains(llvm.output, "kept "));
  // Without the verifier (as in kiln-capture's builds) the direct reader splits the
  // module itself; with it, LLVM's route does.
  kiln_test::ScopedEnv no_verify("KILN_VERIFY", "0");
  for (const char* reader : {"direct", "llvm"}) {
    INFO("reader " << reader);
    kiln_test::ScopedEnv env("KILN_READER", reader);
    PrivateRun stamp = run_private("stamp", ir, dir.path);
    CHECK(stamp.route == (std::string(reader) == "direct" ? "split" : "llvm"));
    CHECK(stamp.counts.functions_stamp == 4);
    CHECK(stamp.counts.functions_llvm == 1);
    CHECK(kiln_test::first_difference(llvm.output, stamp.output) == "");
    CHECK(count_named(stamp.object_symbols, "anon.p.") == 0);
    // The C string in a mergeable section keeps a .L symbol, as in LLVM's object; the
    // linker drops it.
    CHECK(count_named(stamp.object_symbols, ".Lanon.p.") == count_named(llvm.object_symbols, ".Lanon.p."));
    CHECK(count_named(stamp.program_symbols, "anon.p.") == 0);
    CHECK(count_named(stamp.program_symbols, ".Lanon.p.") == 0);
  }
}
