#include <catch2/catch.hpp>

#include "backend.h"
#include "emit.h"
#include "error.h"
#include "fs.h"
#include "ir_helpers.h"
#include "process.h"

using namespace kiln;
using kiln_test::ScratchDir;

static const char* kMainIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@fmt = private constant [17 x i8] c"add(40, 2) = %ld\0A"
@message = global ptr @fmt
declare i32 @printf(ptr, ...)
declare i64 @add(i64, i64)
define i32 @main() {
  %s = call i64 @add(i64 40, i64 2)
  %f = load ptr, ptr @message
  %r = call i32 (ptr, ...) @printf(ptr %f, i64 %s)
  ret i32 0
}
)";

TEST_CASE("the llvm back end emits x86-64 objects that link and run", "[emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/add.bc", kiln_test::bitcode_from_ir(kiln_test::kAddIr));
  write_file_atomic(dir.path + "/main.bc", kiln_test::bitcode_from_ir(kMainIr));
  for (const char* p : {"fast", "balanced", "release"}) {
    auto a = emit_file(dir.path + "/add.bc", dir.path + "/add.o", "llvm", parse_profile(p));
    auto m = emit_file(dir.path + "/main.bc", dir.path + "/main.o", "llvm", parse_profile(p));
    CHECK(object_problem(read_file(dir.path + "/add.o")).empty());
    CHECK(a.result.counts.functions_llvm == 1);
    CHECK(a.receipt.find("\"backend\":\"llvm\"") != std::string::npos);
    CHECK(a.receipt.find(std::string("\"profile\":\"") + p + "\"") != std::string::npos);
    ProcessOptions quiet;
    quiet.capture_stdout = true;
    auto link = run_process({"cc", "-o", dir.path + "/prog", dir.path + "/main.o", dir.path + "/add.o"}, quiet);
    REQUIRE(link.exit_code == 0);
    auto run = run_process({dir.path + "/prog"}, quiet);
    CHECK(run.exit_code == 0);
    CHECK(run.captured_stdout == "add(40, 2) = 42\n");
  }
}

TEST_CASE("emission is deterministic: the same bitcode gives the same bytes", "[emit]") {
  std::string bc = kiln_test::bitcode_from_ir(kMainIr);
  auto one = make_backend("llvm", Profile::fast)->emit(bc, "main.bc");
  auto two = make_backend("llvm", Profile::fast)->emit(bc, "main.bc");
  CHECK(one.object == two.object);
}

TEST_CASE("a cmd: back end runs an external code generator per module", "[emit]") {
  std::string llc = std::string(KILN_LLVM_AS);
  llc.replace(llc.rfind("llvm-as"), 7, "llc");
  auto backend = make_backend("cmd:" + llc + " -O0 -filetype=obj -relocation-model=pic {in} -o {out}", Profile::fast);
  auto r = backend->emit(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "add.bc");
  CHECK(object_problem(r.object).empty());
  // A command that writes no object, or not an object, is an error naming the input.
  auto broken = make_backend("cmd:cp {in} {out}", Profile::fast);
  try {
    broken->emit(kiln_test::bitcode_from_ir(kiln_test::kAddIr), "add.bc");
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(std::string(e.what()).find("add.bc") != std::string::npos);
    CHECK(std::string(e.what()).find("not an ELF") != std::string::npos);
  }
  CHECK_THROWS_AS(make_backend("cmd:llc", Profile::fast), KilnError);
  CHECK_THROWS_AS(make_backend("nonsense", Profile::fast), KilnError);
}

TEST_CASE("bad input to emit fails before anything is written", "[emit]") {
  ScratchDir dir;
  write_file_atomic(dir.path + "/junk.bc", "junk");
  write_file_atomic(dir.path + "/out.o", "previous object");
  CHECK_THROWS_AS(emit_file(dir.path + "/junk.bc", dir.path + "/out.o", "llvm", Profile::fast), KilnError);
  CHECK(read_file(dir.path + "/out.o") == "previous object");
  write_file_atomic(dir.path + "/arm.bc", kiln_test::bitcode_from_ir("target triple = \"aarch64-unknown-linux-gnu\"\n"
                                                                      "define void @f() {\n  ret void\n}\n"));
  try {
    emit_file(dir.path + "/arm.bc", dir.path + "/out.o", "llvm", Profile::fast);
    FAIL("expected an error");
  } catch (const KilnError& e) {
    CHECK(e.code() == kExitBadInput);
    CHECK(std::string(e.what()).find("not x86-64") != std::string::npos);
  }
  CHECK(read_file(dir.path + "/out.o") == "previous object");
}
