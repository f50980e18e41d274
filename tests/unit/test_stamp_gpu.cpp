// The CUDA executor against the CPU executor (the oracle): identical arrays for
// modules with loops, phis, switches, calls, aggregates and exception handling, alone
// and in batches. Without a usable GPU (CI, most machines) the CUDA test is left out
// of a default run and reported as skipped (test_main.cpp); asked for by its tag
// [gpu-device], it fails, saying why. The same checks run on the GPU stand-in always.
#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "flat_export.h"
#include "ir_helpers.h"
#include "stamp_cpu.h"
#include "stamp_gpu.h"
#include "stamp_output_compare.h"

using namespace kiln;

namespace {

const char* kGpuIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i64)
declare i64 @sink(i64)

define i64 @loop(i64 %n) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %body ]
  %done = icmp uge i64 %i, %n
  br i1 %done, label %exit, label %body
body:
  %sq = mul i64 %i, %i
  %acc2 = add i64 %acc, %sq
  %next = add i64 %i, 1
  br label %head
exit:
  ret i64 %acc
}

define i32 @pick(i32 %k) {
  %slot = alloca [4 x i32], align 4
  switch i32 %k, label %other [ i32 1, label %one
                                i32 7, label %seven ]
one:
  ret i32 10
seven:
  ret i32 70
other:
  %p = getelementptr inbounds [4 x i32], ptr %slot, i64 0, i64 2
  store i32 %k, ptr %p, align 4
  %v = load i32, ptr %p, align 4
  ret i32 %v
}

define { i64, i32 } @agg(i64 %a, i32 %b) {
  %x = insertvalue { i64, i32 } undef, i64 %a, 0
  %y = insertvalue { i64, i32 } %x, i32 %b, 1
  %r = call i64 @sink(i64 %a)
  %z = insertvalue { i64, i32 } %y, i64 %r, 0
  ret { i64, i32 } %z
}

define void @eh(i64 %v) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i64 %v) to label %ok unwind label %lp
ok:
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
)";

// Runs the module alone (twice: the second run reuses every buffer) and in a batch,
// in both instruction orders, on `gpu`; every output must equal the CPU executor's.
void check_against_cpu(StampGpuExecutor& gpu) {
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kGpuIr), "gpu.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 4);
  StampOutput cpu = run_stamp_cpu(flat.flat.view(), 1);
  REQUIRE(!cpu.code.empty());
  REQUIRE(!cpu.lsda.empty());
  for (int round = 0; round < 2; ++round) {
    kiln_test::check_same_output(gpu.run(flat.flat.view()), cpu);
    CHECK(gpu.last_times().launches >= 10);
  }
  // A batch: the module three times, with a module without functions between.
  auto empty =
      parse_bitcode(ctx, kiln_test::bitcode_from_ir("target triple = \"x86_64-unknown-linux-gnu\"\ndeclare void @f()"),
                    "empty.bc");
  FlatExport none = export_flat(*empty);
  std::vector<FlatModuleView> batch = {flat.flat.view(), none.flat.view(), flat.flat.view(), flat.flat.view()};
  for (bool by_opcode : {true, false}) {
    gpu.set_order_by_opcode(by_opcode);
    std::vector<StampOutput> cut = gpu.run_batch(batch.data(), batch.size());
    REQUIRE(cut.size() == 4);
    CHECK(cut[1].code.empty());
    for (size_t k : {0, 2, 3}) kiln_test::check_same_output(cut[k], cpu);
    CHECK(gpu.last_times().modules == 4);
  }
  // Nothing at all to do.
  CHECK(gpu.run_batch(batch.data() + 1, 1).size() == 1);
}

}  // namespace

namespace kiln_test {
std::string gpu_device_unavailable() {
  std::string why;
  if (open_stamp_gpu(0, &why)) return "";
  return why.empty() ? "no usable GPU (the executor gave no reason)" : why;
}
}  // namespace kiln_test

TEST_CASE("the CUDA executor's output equals the CPU executor's", "[stamp][gpu][gpu-device]") {
  std::string why;
  std::unique_ptr<StampGpuExecutor> gpu = open_stamp_gpu(0, &why);
  if (!gpu) FAIL("no usable GPU for the CUDA executor: " << why);
  check_against_cpu(*gpu);
}

TEST_CASE("the GPU stand-in (for tests without a GPU) keeps the executor's contract", "[stamp][gpu]") {
  std::unique_ptr<StampGpuExecutor> standin = open_stamp_gpu_standin();
  CHECK(standin->device_name().find("stand-in") != std::string::npos);
  check_against_cpu(*standin);
}
