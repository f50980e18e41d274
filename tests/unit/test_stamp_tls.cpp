// Differential tests of thread-local storage against llvm: llvm.threadlocal.address of
// variables the module defines (initialised, in .tdata, and zero, in .tbss), local to
// it and exported, and of one the C driver defines; loads, stores and element addresses
// through them, in the main thread and in a second thread, whose copies start from the
// initial image again. stamp writes the general-dynamic sequence (__tls_get_addr) and
// the linker relaxes it as it does llvm's.
#include <catch2/catch.hpp>

#include <string>

#include "differential.h"

namespace {

const char* const kTlsIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@counter = thread_local global i64 5, align 8
@table = internal thread_local global [4 x i32] zeroinitializer, align 4
@image = internal thread_local constant { i32, i8, i64 } { i32 -7, i8 3, i64 1099511627776 }, align 8
@driver_tls = external thread_local global i64, align 8

define i64 @bump(i64 %by) {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @counter)
  %v = load i64, ptr %p, align 8
  %n = add i64 %v, %by
  store i64 %n, ptr %p, align 8
  ret i64 %n
}

define i64 @table_add(i64 %i, i32 %x) {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @table)
  %e = getelementptr [4 x i32], ptr %p, i64 0, i64 %i
  %v = load i32, ptr %e, align 4
  %n = add i32 %v, %x
  store i32 %n, ptr %e, align 4
  %sum0 = load i32, ptr %p, align 4
  %e3 = getelementptr [4 x i32], ptr %p, i64 0, i64 3
  %sum3 = load i32, ptr %e3, align 4
  %s = add i32 %sum0, %sum3
  %w = sext i32 %s to i64
  ret i64 %w
}

define i64 @image_field(i32 %k) {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @image)
  %c = icmp eq i32 %k, 0
  br i1 %c, label %first, label %last
first:
  %a = load i32, ptr %p, align 8
  %aw = sext i32 %a to i64
  ret i64 %aw
last:
  %f = getelementptr { i32, i8, i64 }, ptr %p, i64 0, i32 2
  %b = load i64, ptr %f, align 8
  %m = getelementptr { i32, i8, i64 }, ptr %p, i64 0, i32 1
  %mid = load i8, ptr %m, align 4
  %mw = zext i8 %mid to i64
  %r = add i64 %b, %mw
  ret i64 %r
}

define i64 @driver_value(i64 %add) {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @driver_tls)
  %v = load i64, ptr %p, align 8
  %n = add i64 %v, %add
  store i64 %n, ptr %p, align 8
  ret i64 %v
}

; The same variable's address twice: one thread's copy, the same address.
define i1 @same_address() {
  %p = call ptr @llvm.threadlocal.address.p0(ptr @counter)
  %q = call ptr @llvm.threadlocal.address.p0(ptr @counter)
  %e = icmp eq ptr %p, %q
  ret i1 %e
}

declare ptr @llvm.threadlocal.address.p0(ptr)
)";

const char* const kTlsDriver = R"(
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
int64_t bump(int64_t);
int64_t table_add(int64_t, int32_t);
int64_t image_field(int32_t);
int64_t driver_value(int64_t);
_Bool same_address(void);
__thread int64_t driver_tls = 40;
static void run(const char* who) {  /* one call per statement: C leaves argument order open */
  long long b1 = bump(1), b2 = bump(-10), b3 = bump(1000);
  printf("%s bump %lld %lld %lld\n", who, b1, b2, b3);
  long long t1 = table_add(0, 3), t2 = table_add(3, -9), t3 = table_add(1, 100);
  printf("%s table %lld %lld %lld\n", who, t1, t2, t3);
  long long i1 = image_field(0), i2 = image_field(1);
  printf("%s image %lld %lld\n", who, i1, i2);
  long long d1 = driver_value(2), d2 = driver_value(5);
  printf("%s driver %lld %lld %lld\n", who, d1, d2, (long long)driver_tls);
  printf("%s same %d\n", who, (int)same_address());
}
static void* thread(void* arg) {
  run("thread");
  return arg;
}
int main(void) {
  run("main");
  pthread_t t;
  if (pthread_create(&t, 0, thread, 0) != 0 || pthread_join(t, 0) != 0) return 1;
  run("main again");
  return 0;
}
)";

// The module's object from `backend` linked as a shared library that the driver loads:
// there the linker keeps the general-dynamic sequence and its __tls_get_addr call
// (an executable gets it relaxed to a thread-pointer offset, the sequence rewritten).
std::string run_as_shared_library(const std::string& backend, const std::string& bitcode, const std::string& dir) {
  using namespace kiln;
  auto b = make_backend(backend, Profile::fast);
  EmitResult r = b->emit(bitcode, backend + ".bc");
  const std::string object = dir + "/" + backend + "-shared.o", library = dir + "/lib" + backend + "tls.so";
  write_file_atomic(object, r.object);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-shared", "-o", library, object}, quiet).exit_code == 0);
  REQUIRE(run_process({"cc", "-o", dir + "/" + backend + "-shared", dir + "/driver.o", library,
                       "-Wl,-rpath," + dir},
                      quiet)
              .exit_code == 0);
  ProcessOptions capture;
  capture.capture_stdout = true;
  ProcessResult run = run_process({dir + "/" + backend + "-shared"}, capture);
  REQUIRE(run.exit_code == 0);
  return run.captured_stdout;
}

// The C driver, compiled once into dir/driver.o for both back ends' links.
void compile_driver(const std::string& dir) {
  kiln::write_file_atomic(dir + "/driver.c", kTlsDriver);
  kiln::ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(kiln::run_process({"cc", "-c", "-o", dir + "/driver.o", dir + "/driver.c"}, quiet).exit_code == 0);
}

}  // namespace

TEST_CASE("thread-local variables: their addresses, loads and stores come out the same as llvm's, per thread",
          "[stamp][differential][tls]") {
  // In an executable (the linker relaxes the sequence), with the reader's check.
  kiln_test::expect_same_as_llvm(kTlsIr, kTlsDriver, 5, "tls");
  // In a shared library, where the sequence runs as written.
  kiln_test::ScratchDir dir;
  compile_driver(dir.path);
  const std::string bitcode = kiln_test::bitcode_from_ir(kTlsIr);
  const std::string expected = run_as_shared_library("llvm", bitcode, dir.path);
  CHECK(expected.find("thread bump 6 -4 996") != std::string::npos);  // the thread's own copy, from 5
  CHECK(kiln_test::first_difference(expected, run_as_shared_library("stamp", bitcode, dir.path)) == "");
}

TEST_CASE("thread-local variables of a split module: stamp's code reaches those llvm's half defines", "[stamp][tls]") {
  // One function stamp does not take (a byte swap of an i128) splits the module: its
  // variables, local ones too, are defined in llvm's half, and stamp's accesses name
  // them across the combined object.
  const std::string ir = std::string(kTlsIr) + R"(
define i64 @kept_by_llvm(i64 %x) {
  %a = zext i64 %x to i128
  %m = call i128 @llvm.bswap.i128(i128 %a)
  %s = lshr i128 %m, 64
  %r = trunc i128 %s to i64
  ret i64 %r
}
declare i128 @llvm.bswap.i128(i128)
)";
  kiln_test::ScratchDir dir;
  compile_driver(dir.path);
  const std::string bitcode = kiln_test::bitcode_from_ir(ir);
  kiln::EmitCounts counts;
  const std::string expected = kiln_test::run_with("llvm", bitcode, dir.path + "/driver.o", dir.path, nullptr);
  const std::string actual = kiln_test::run_with("stamp", bitcode, dir.path + "/driver.o", dir.path, &counts);
  CHECK(counts.functions_stamp == 5);
  CHECK(counts.functions_llvm == 1);
  CHECK(kiln_test::first_difference(expected, actual) == "");
  CHECK(kiln_test::first_difference(run_as_shared_library("llvm", bitcode, dir.path),
                                    run_as_shared_library("stamp", bitcode, dir.path)) == "");
}
