// Dead values (drop_dead_values): an instruction whose result nothing reads and whose
// only effect is that result gets no code, as under LLVM's -O0 instruction selection,
// and so neither does one that fed only such values. What may have another effect
// stays: loads (a volatile one among them), calls, stores, phis. Checked on the flat
// module both exporters make and end to end: the functions run as LLVM's do, including
// a dead division by zero that would trap if it were emitted.
#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <string>

#include "bitcode.h"
#include "differential.h"
#include "flat_export.h"
#include "test_helpers.h"

using namespace kiln;

namespace {

const char* const kDeadIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i64 @side(i64)

define i64 @dead_values(i64 %a, i64 %b, ptr %p) {
entry:
  %unused_compare = icmp ult i64 %a, 100
  %x = add i64 %a, 7
  %y = mul i64 %x, %b
  %z = icmp eq i64 %y, 0
  %q = udiv i64 %a, %b
  %pair = insertvalue { i64, i64 } undef, i64 %a, 0
  %pair2 = insertvalue { i64, i64 } %pair, i64 %b, 1
  %first = extractvalue { i64, i64 } %pair2, 0
  %loaded = load i64, ptr %p, align 8
  %touched = load volatile i64, ptr %p, align 8
  %called = call i64 @side(i64 %a)
  %live = add i64 %a, %called
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %scaled = shl i64 %i, 3
  %next = add i64 %i, 1
  %done = icmp uge i64 %next, 3
  br i1 %done, label %exit, label %loop
exit:
  %result = add i64 %live, %next
  ret i64 %result
}
)";

const char* const kDeadDriver = R"(
#include <stdio.h>
#include <stdint.h>
int64_t dead_values(int64_t a, int64_t b, int64_t* p);
static int calls;
int64_t side(int64_t x) { ++calls; return x * 2; }
int main(void) {
  int64_t cell = 5;
  /* b = 0: the dead division by zero must not run (LLVM emits no code for it). */
  printf("%lld\n", (long long)dead_values(10, 0, &cell));
  printf("%lld\n", (long long)dead_values(-4, 3, &cell));
  printf("calls %d\n", calls);
  return 0;
}
)";

// How many of each stamp opcode the exported function has.
std::map<uint16_t, int> opcode_counts(const FlatModuleData& flat) {
  std::map<uint16_t, int> counts;
  for (const FlatInst& in : flat.insts) ++counts[in.op];
  return counts;
}

}  // namespace

TEST_CASE("dead values get no code; loads, calls and phis stay", "[stamp][dead]") {
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, kiln_test::bitcode_from_ir(kDeadIr), "dead.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 1);
  std::map<uint16_t, int> ops = opcode_counts(flat.flat);
  CHECK(ops[kOpUdiv] == 0);
  CHECK(ops[kOpMul] == 0);
  CHECK(ops[kOpInsert] == 0);
  CHECK(ops[kOpExtract] == 0);
  CHECK(ops[kOpShl] == 0);
  CHECK(ops[kOpIcmp] == 1);  // %done, which the branch reads
  CHECK(ops[kOpAdd] == 3);   // %live, %next, %result (not %x)
  CHECK(ops[kOpLoad] == 2);  // both loads: the flat IR cannot tell the volatile one
  CHECK(ops[kOpCall] == 1);
  CHECK(ops[kOpPhi] == 1);
  // The dropped ones keep their places (and their debug locations' slots).
  CHECK(ops[kOpNop] == 9);
}

TEST_CASE("a function with dead values runs as LLVM's, on both readers", "[stamp][dead]") {
  kiln_test::expect_same_as_llvm(kDeadIr, kDeadDriver, 1, "dead.bc");
}
