// Stack probes: a frame larger than a page is taken a page at a time (kernels/
// stamp_emit.h probe_frame), so a function whose frame is larger than what is left of
// a thread's stack faults on the guard page below it, as LLVM's probed code does,
// instead of writing into the memory that lies beyond the guard.
#include <catch2/catch.hpp>

#include <string>

#include "backend.h"
#include "differential.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"
#include "scratch_dir.h"

namespace {

// rustc puts "probe-stack"="inline-asm" on every function; LLVM probes such frames.
const char* const kBigFrameIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @big(i64 %i) #0 {
  %a = alloca [262144 x i8], align 16
  %p = getelementptr [262144 x i8], ptr %a, i64 0, i64 %i
  store i8 7, ptr %p
  %v = load i8, ptr %p
  %w = zext i8 %v to i64
  %r = add i64 %w, %i
  ret i64 %r
}
define i64 @small(i64 %i) #0 {
  %a = alloca [5000 x i8], align 16
  %p = getelementptr [5000 x i8], ptr %a, i64 0, i64 %i
  store i8 3, ptr %p
  %v = load i8, ptr %p
  %w = zext i8 %v to i64
  ret i64 %w
}
attributes #0 = { "probe-stack"="inline-asm" }
)";

// Without an argument: big's and small's results on the main thread. With one: big on a
// thread whose 64 KiB stack lies above a guard page and, below that, a megabyte of
// memory that the program checks afterwards.
const char* const kGuardDriver = R"(
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
int64_t big(int64_t);
int64_t small(int64_t);
static void* run(void* arg) { printf("%lld\n", (long long)big(5)); fflush(stdout); return arg; }
int main(int argc, char** argv) {
  (void)argv;
  if (argc < 2) {
    long long a = big(1), b = big(262143), c = small(4999);
    printf("%lld %lld %lld\n", a, b, c);
    return 0;
  }
  const size_t below = 1 << 20, guard = 4096, stack = 64 * 1024;
  char* m = mmap(0, below + guard + stack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 3;
  memset(m, 0x5a, below);
  if (mprotect(m + below, guard, PROT_NONE) != 0) return 3;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, m + below + guard, stack);
  pthread_t t;
  if (pthread_create(&t, &attr, run, 0) != 0 || pthread_join(t, 0) != 0) return 3;
  for (size_t k = 0; k < below; ++k)
    if (m[k] != 0x5a) { printf("the memory below the guard page was written\n"); return 2; }
  return 0;
}
)";

}  // namespace

TEST_CASE("a frame larger than a page is probed page by page, faulting on a thread's guard page", "[stamp][probe]") {
  using namespace kiln;
  using namespace kiln_test;
  ScratchDir dir;
  write_file_atomic(dir.path + "/driver.c", kGuardDriver);
  ProcessOptions quiet;
  quiet.quiet = true;
  REQUIRE(run_process({"cc", "-c", "-o", dir.path + "/driver.o", dir.path + "/driver.c"}, quiet).exit_code == 0);
  const std::string bitcode = bitcode_from_ir(kBigFrameIr);
  for (const std::string backend : {"llvm", "stamp"}) {
    INFO(backend);
    EmitCounts counts;
    const std::string out = run_with(backend, bitcode, dir.path + "/driver.o", dir.path, &counts);
    CHECK(out == "8 262150 3\n");  // both frames work on a stack with room for them
    if (backend == "stamp") CHECK(counts.functions_stamp == 2);
    ProcessOptions capture;
    capture.capture_stdout = true;
    ProcessResult r = run_process({dir.path + "/" + backend, "guard"}, capture);
    INFO(r.captured_stdout);
    CHECK(r.signaled);
    CHECK(r.exit_code == 128 + 11);  // SIGSEGV on the guard page, nothing written below it
  }
}
