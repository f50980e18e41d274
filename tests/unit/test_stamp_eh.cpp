// stamp's exception tables against llvm's: C++ functions whose calls unwind from
// every place a call-site table distinguishes (before the first invoke, between two
// invokes, after the last, inside invokes with cleanups and with catch-alls) are
// compiled by clang to bitcode, emitted by both back ends, linked with the same C++
// main and run; both programs must print the same. A call that may unwind and has no
// entry in stamp's table ends the program in std::terminate instead.
#include <catch2/catch.hpp>

#include <string>

#include "backend.h"
#include "fs.h"
#include "process.h"
#include "test_helpers.h"

using namespace kiln;
using namespace kiln_test;

namespace {

// Every call to may_throw can throw; a Guard alive across a call makes it an invoke
// with a cleanup, a call with none alive stays a plain call.
const char* kEhFunctions = R"(
struct Guard { int id; ~Guard(); };
int may_throw(int x);
void note(int x);
int mixed(int x) {
  int a = may_throw(x);                    // a plain call before the first invoke
  { Guard g{1}; a += may_throw(x - 10); }  // an invoke with a cleanup
  a += may_throw(x - 20);                  // a plain call between two invokes
  { Guard g{2}; a += may_throw(x - 30); }  // the same cleanup's shape again
  note(a);                                 // more plain calls after the last invoke
  return a + may_throw(x - 40);
}
int one_pad(int x) {
  Guard g{3};  // one cleanup for every call: adjacent invokes, the same landing pad
  int a = may_throw(x);
  a += may_throw(x - 1);
  a += may_throw(x - 2);
  return a;
}
int caught(int x) {
  try {
    return mixed(x) + one_pad(x);
  } catch (...) {
    return -1;
  }
}
int no_invokes(int x) { return may_throw(x) + may_throw(x - 5); }
)";

// A cleanup that only resumes: after the invoke, no call but _Unwind_Resume's, which
// the personality also looks up (the unwinder asks it again for the resuming frame).
const char* kEhResume = R"(
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"
declare i32 @__gxx_personality_v0(...)
declare i32 @_Z9may_throwi(i32)
define i32 @resumes(i32 %x) personality ptr @__gxx_personality_v0 {
entry:
  %r = invoke i32 @_Z9may_throwi(i32 %x) to label %ok unwind label %pad
ok:
  ret i32 %r
pad:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
; Two invokes with the same landing pad and a plain call between them: the call must
; unwind past this frame without running the cleanup (which prints "note -99").
declare void @_Z4notei(i32)
define i32 @same_pad(i32 %x) personality ptr @__gxx_personality_v0 {
entry:
  %a = invoke i32 @_Z9may_throwi(i32 %x) to label %b1 unwind label %pad
b1:
  %x2 = sub i32 %x, 10
  %b = call i32 @_Z9may_throwi(i32 %x2)
  %x3 = sub i32 %x, 20
  %c = invoke i32 @_Z9may_throwi(i32 %x3) to label %b2 unwind label %pad
b2:
  %s = add i32 %a, %b
  %t = add i32 %s, %c
  ret i32 %t
pad:
  %l = landingpad { ptr, i32 } cleanup
  call void @_Z4notei(i32 -99)
  resume { ptr, i32 } %l
}
)";

const char* kEhMain = R"(
#include <cstdio>
#include <initializer_list>
struct Guard { int id; ~Guard(); };
Guard::~Guard() { std::printf("~%d ", id); }
int may_throw(int x) {
  if (x < 0) throw x;
  return x;
}
void note(int x) { std::printf("note %d ", x); }
int mixed(int); int one_pad(int); int caught(int); int no_invokes(int);
extern "C" int resumes(int);
extern "C" int same_pad(int);
template <class F> void run(const char* name, F f, int x) {
  try {
    std::printf("%s(%d) = %d\n", name, x, f(x));
  } catch (int e) {
    std::printf("%s(%d) threw %d\n", name, x, e);
  }
}
int main() {
  for (int x : {-1, 5, 15, 25, 35, 45, 1, 2}) {
    run("mixed", mixed, x);
    run("one_pad", one_pad, x);
    run("caught", caught, x);
    run("no_invokes", no_invokes, x);
    run("resumes", resumes, x);
    run("same_pad", same_pad, x);
  }
}
)";

}  // namespace

TEST_CASE("exceptions unwind through stamp's frames from every kind of call site as through llvm's", "[stamp_eh]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/f.cpp", kEhFunctions);
  write_file_atomic(dir.path + "/main.cpp", kEhMain);
  write_file_atomic(dir.path + "/r.ll", kEhResume);
  REQUIRE(shell(shell_join({KILN_LLVM_AS, "-o", dir.path + "/r.bc", dir.path + "/r.ll"})).exit_code == 0);
  REQUIRE(shell(shell_join({"clang++-22", "-O0", "-c", "-emit-llvm", "-o", dir.path + "/f.bc", dir.path + "/f.cpp"}))
              .exit_code == 0);
  REQUIRE(shell(shell_join({"clang++-22", "-O0", "-c", "-o", dir.path + "/main.o", dir.path + "/main.cpp"}))
              .exit_code == 0);
  const std::string bitcode = read_file(dir.path + "/f.bc"), resume_bitcode = read_file(dir.path + "/r.bc");
  std::string outputs[2];
  const char* backends[2] = {"llvm", "stamp"};
  for (int k = 0; k < 2; ++k) {
    INFO(backends[k]);
    EmitResult r = make_backend(backends[k], Profile::fast)->emit(bitcode, "f.bc");
    if (k == 1) {
      CHECK(r.counts.functions_llvm == 0);  // stamp compiled every function, its tables included
      CHECK(r.counts.functions_stamp >= 4);
    }
    EmitResult resume = make_backend(backends[k], Profile::fast)->emit(resume_bitcode, "r.bc");
    if (k == 1) CHECK(resume.counts.functions_llvm == 0);
    const std::string object = dir.path + "/" + backends[k] + ".o", program = dir.path + "/" + backends[k];
    write_file_atomic(object, r.object);
    write_file_atomic(object + ".r.o", resume.object);
    ProcessResult link =
        shell(shell_join({"clang++-22", "-o", program, dir.path + "/main.o", object, object + ".r.o"}));
    INFO(link.captured_stdout);
    REQUIRE(link.exit_code == 0);
    ProcessResult run = shell(shell_join({program}));
    CHECK(run.exit_code == 0);
    outputs[k] = run.captured_stdout;
  }
  CHECK(outputs[1] == outputs[0]);
  // What the program prints, so that a table that catches nothing cannot pass unseen.
  CHECK(outputs[0].find("mixed(-1) threw -1") != std::string::npos);
  CHECK(outputs[0].find("mixed(25) threw -5") != std::string::npos);  // the call between the invokes
  CHECK(outputs[0].find("mixed(45) = ") != std::string::npos);
  CHECK(outputs[0].find("caught(15) = -1") != std::string::npos);
  CHECK(outputs[0].find("no_invokes(2) threw -3") != std::string::npos);
  CHECK(outputs[0].find("resumes(-1) threw -1") != std::string::npos);
  CHECK(outputs[0].find("same_pad(5) threw -5") != std::string::npos);  // no cleanup for the plain call
  CHECK(outputs[0].find("note -99 same_pad(15) threw -5") != std::string::npos);
}
