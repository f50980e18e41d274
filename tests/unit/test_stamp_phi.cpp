// Phis whose predecessors write them directly (kPhiDirect): which phis the exporters
// mark, that stamp's code for every shape where that would be wrong (a phi read by
// another phi, after its loop however far, or as the branch condition that its own
// copies precede; a switch's edge) and where it is right (nested loops) computes what
// llvm's does, and that a flat file may not mark a phi
// where it is not safe. Also a compare that keeps its flags across a branch's phi
// copies, and the copies that do not let it (a zero's xor, a symbol's offset).
#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <string>

#include "bitcode.h"
#include "differential.h"
#include "flat_export.h"
#include "flat_module.h"
#include "stamp_cpu.h"
#include "stamp_output_compare.h"
#include "stamp_stages.h"

using namespace kiln;
using namespace kiln_test;

namespace {

const char* kPhiShapes = R"(
target triple = "x86_64-unknown-linux-gnu"
@buf = global [4 x i64] [i64 11, i64 22, i64 33, i64 44]

; a and b change places every iteration: each phi is the other's incoming value.
define i64 @swap(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %a = phi i64 [ 1, %entry ], [ %b, %loop ]
  %b = phi i64 [ 10, %entry ], [ %a, %loop ]
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  %r = mul i64 %a, 100
  %s = add i64 %r, %b
  ret i64 %s
}

; i is read after the loop, on the edge the loop's copies do not take.
define i64 @after_loop(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %next = add i64 %i, 3
  %done = icmp uge i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = mul i64 %i, 1000
  %s = add i64 %r, %next
  ret i64 %s
}

; i is read two blocks after the loop: live on the loop's exit edge through mid.
define i64 @after_loop_far(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %next = add i64 %i, 3
  %done = icmp uge i64 %next, %n
  br i1 %done, label %mid, label %loop
mid:
  %t = add i64 %next, 1
  br label %exit
exit:
  %r = mul i64 %i, 1000
  %s = add i64 %r, %t
  ret i64 %s
}

; Nested loops: the outer phis are read in the inner loop and after it, where the
; outer loop's edges do not go; an inner phi takes an outer one as its value.
define i64 @nested(i64 %n) {
entry:
  br label %outer
outer:
  %j = phi i64 [ 0, %entry ], [ %j1, %outer.end ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %outer.end ]
  br label %inner
inner:
  %k = phi i64 [ 0, %outer ], [ %k1, %inner ]
  %acc1 = phi i64 [ %acc, %outer ], [ %acc1.next, %inner ]
  %t = mul i64 %j, %k
  %acc1.next = add i64 %acc1, %t
  %k1 = add i64 %k, 1
  %kmore = icmp ult i64 %k1, %j
  br i1 %kmore, label %inner, label %outer.end
outer.end:
  %acc2 = phi i64 [ %acc1.next, %inner ]
  %j1 = add i64 %j, 1
  %jmore = icmp ult i64 %j1, %n
  br i1 %jmore, label %outer, label %exit
exit:
  ret i64 %acc2
}

; The loop's branch reads go after the copies into the loop's phis.
define i64 @branch_on_phi(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %go = phi i1 [ true, %entry ], [ %more, %loop ]
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %go, label %loop, label %exit
exit:
  ret i64 %i1
}

; The exit's phi takes the loop's phi; the loop's copies come first.
define i64 @phi_of_phi(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 5, %entry ], [ %next, %loop ]
  %next = add i64 %i, 2
  %more = icmp ule i64 %next, %n
  br i1 %more, label %loop, label %exit
exit:
  %last = phi i64 [ %i, %loop ]
  %r = mul i64 %last, 1000
  %s = add i64 %r, %next
  ret i64 %s
}

; A switch's edges: the join's phi keeps its shadow.
define i64 @switch_join(i64 %x) {
entry:
  switch i64 %x, label %other [ i64 1, label %one
                                i64 2, label %join ]
one:
  br label %join
other:
  br label %join
join:
  %v = phi i64 [ 10, %one ], [ 20, %entry ], [ 30, %other ]
  ret i64 %v
}

; while (flag): the header branches on its own phi, which only the body's br writes.
define i64 @while_flag(i64 %n) {
entry:
  %start = icmp ne i64 %n, 0
  br label %head
head:
  %f = phi i1 [ %start, %entry ], [ %again, %body ]
  %k = phi i64 [ 0, %entry ], [ %k1, %body ]
  br i1 %f, label %body, label %exit
body:
  %k1 = add i64 %k, 7
  %again = icmp ult i64 %k1, %n
  br label %head
exit:
  ret i64 %k
}

; An i128 and an aggregate through direct phis, and a diamond's join.
define i64 @wide_and_pair(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %join ]
  %w = phi i128 [ 1, %entry ], [ %w2, %join ]
  %p = phi { i64, i32 } [ { i64 1, i32 2 }, %entry ], [ %p2, %join ]
  %w2 = mul i128 %w, 3
  %a = extractvalue { i64, i32 } %p, 0
  %b = extractvalue { i64, i32 } %p, 1
  %odd = and i64 %i, 1
  %is_odd = icmp ne i64 %odd, 0
  br i1 %is_odd, label %then, label %else
then:
  %a.t = add i64 %a, %i
  br label %join
else:
  %a.e = mul i64 %a, 3
  br label %join
join:
  %a2 = phi i64 [ %a.t, %then ], [ %a.e, %else ]
  %b2 = xor i32 %b, 5
  %p1 = insertvalue { i64, i32 } undef, i64 %a2, 0
  %p2 = insertvalue { i64, i32 } %p1, i32 %b2, 1
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  %lo = trunc i128 %w2 to i64
  %hi.w = lshr i128 %w2, 64
  %hi = trunc i128 %hi.w to i64
  %a3 = extractvalue { i64, i32 } %p2, 0
  %b3 = extractvalue { i64, i32 } %p2, 1
  %b4 = zext i32 %b3 to i64
  %r1 = xor i64 %lo, %hi
  %r2 = add i64 %r1, %a3
  %r3 = add i64 %r2, %b4
  ret i64 %r3
}

; The copies before the loop's branch move a zero (xor) and a symbol with an offset
; (an add): the compare's flags do not survive them.
define i64 @flag_clobbers(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %z = phi i64 [ 7, %entry ], [ 0, %loop ]
  %q = phi ptr [ @buf, %entry ], [ getelementptr inbounds (i8, ptr @buf, i64 16), %loop ]
  %v = load i64, ptr %q
  %i1 = add i64 %i, 1
  %zi = add i64 %z, %i1
  %s = add i64 %zi, %v
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  ret i64 %s
}
)";

const char* kDriver = R"(#include <stdio.h>
long swap(long), after_loop(long), after_loop_far(long), nested(long), branch_on_phi(long), phi_of_phi(long),
    switch_join(long), while_flag(long), wide_and_pair(long), flag_clobbers(long);
int main(void) {
  for (long n = 0; n < 9; ++n)
    printf("%ld: %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", n, swap(n), after_loop(n), after_loop_far(n), nested(n),
           branch_on_phi(n), phi_of_phi(n), switch_join(n % 4), while_flag(n * 5), wide_and_pair(n), flag_clobbers(n));
  return 0;
}
)";

// The phis of function `name` in order: D where kPhiDirect, s where it keeps its shadow.
std::string phi_marks(const FlatModuleData& f, const std::string& name) {
  for (const FlatFunction& fn : f.functions) {
    if (f.symbols[fn.symbol] != name) continue;
    std::string marks;
    for (uint32_t i = fn.first_inst; i < fn.first_inst + fn.inst_count; ++i)
      if (f.insts[i].op == kOpPhi) marks += (f.insts[i].aux & kPhiDirect) ? 'D' : 's';
    return marks;
  }
  return "<no function " + name + ">";
}

FlatModuleData exported_shapes() {
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, bitcode_from_ir(kPhiShapes), "phis.bc");
  materialize_aggregate_constants(*module);  // as the stamp back end does before exporting
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 10);
  return flat.flat;
}

}  // namespace

TEST_CASE("phis are written directly by their predecessors exactly where that is safe", "[stamp][phi]") {
  FlatModuleData f = exported_shapes();
  CHECK(phi_marks(f, "swap") == "Dss");            // i; a and b read each other
  CHECK(phi_marks(f, "after_loop") == "s");        // read after the loop
  CHECK(phi_marks(f, "after_loop_far") == "s");    // read two blocks after it
  CHECK(phi_marks(f, "nested") == "DDDDD");        // no edge of a predecessor leaves one live
  CHECK(phi_marks(f, "branch_on_phi") == "Ds");    // i; go is the condition after its copies
  CHECK(phi_marks(f, "phi_of_phi") == "sD");       // i is the exit phi's value; last
  CHECK(phi_marks(f, "switch_join") == "s");       // a switch's edge
  CHECK(phi_marks(f, "while_flag") == "DD");       // only entry's and the body's br write them
  CHECK(phi_marks(f, "wide_and_pair") == "DDDD");  // i, w, p, and the diamond's a2
  CHECK(phi_marks(f, "flag_clobbers") == "DDD");
  // Direct phis lose their shadows: 8 bytes, 16 for an i128, half an aggregate's slot.
  for (const FlatInst& in : f.insts)
    if (in.op == kOpPhi && (in.aux & kPhiDirect))
      CHECK(in.slot_size == (in.width == kWideBits ? 16u : in.width ? 8u : (in.aux32 + 7) / 8 * 8));
  CHECK(check_flat_module(f) == "");
}

TEST_CASE("direct phis and compares across phi copies compute what llvm's code does", "[stamp][phi][differential]") {
  expect_same_as_llvm(kPhiShapes, kDriver, 10, "phis.bc");
}

TEST_CASE("a flat module that marks a phi direct where it is not safe is refused", "[stamp][phi][flat]") {
  FlatModuleData f = exported_shapes();
  auto phi_of = [&](const std::string& name, size_t nth) -> FlatInst& {
    for (const FlatFunction& fn : f.functions) {
      if (f.symbols[fn.symbol] != name) continue;
      for (uint32_t i = fn.first_inst; i < fn.first_inst + fn.inst_count; ++i)
        if (f.insts[i].op == kOpPhi && nth-- == 0) return f.insts[i];
    }
    FAIL("no such phi");
    return f.insts[0];
  };
  const std::string unsafe = "phi written directly where a predecessor's copies or another block read it";
  for (auto [name, nth] : {std::pair<const char*, size_t>{"after_loop", 0},
                           {"after_loop_far", 0},
                           {"swap", 1},
                           {"branch_on_phi", 1},
                           {"phi_of_phi", 0},
                           {"switch_join", 0}}) {
    FlatModuleData saved = f;
    phi_of(name, nth).aux |= kPhiDirect;
    INFO(name << " phi " << nth);
    CHECK(check_flat_module(f) == unsafe);
    f = saved;
  }
  {  // a value where a phi's block belongs (its copies would read it as a block)
    FlatModuleData saved = f;
    FlatInst& a = phi_of("swap", 1);
    f.operands[a.first_operand + 1] = f.operands[a.first_operand];
    CHECK(check_flat_module(f) == "phi value without a block");
    f = saved;
  }
  FlatInst& i = phi_of("swap", 0);
  i.slot_size = 4;
  CHECK(check_flat_module(f) == "phi in a short slot");
  i.slot_size = 8;
  i.aux = 2;
  CHECK(check_flat_module(f) == "instruction with an unknown variant");
  i.aux = 0;  // staged: its slot holds the value and its shadow
  CHECK(check_flat_module(f) == "phi in a short slot");
  i.slot_size = 16;
  CHECK(check_flat_module(f) == "");
}

// A value computed in a loop's latch into its direct phi's slot (phi_slot_taken,
// stamp_stages.h): where it does, and where the phi's old value is still read after
// the value is made (or the value elsewhere), it must not.
namespace {

const char* kSlotShapes = R"(
target triple = "x86_64-unknown-linux-gnu"
; i.next goes into i's slot (the compare reads it after); s.next, read after the loop,
; keeps its own.
define i64 @sum(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  %sq = mul i64 %i, %i
  %s.next = add i64 %s, %sq
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret i64 %s.next
}
; a is read after a.next is made: a.next keeps a slot of its own; k.next goes into k's.
define i64 @old_read_after(i64 %n) {
entry:
  br label %loop
loop:
  %a = phi i64 [ 1, %entry ], [ %a.next, %loop ]
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %a.next = mul i64 %a, 3
  %d = sub i64 %a.next, %a
  %k.next = add i64 %k, %d
  %more = icmp ult i64 %k.next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret i64 %d
}
; t goes into two phis; u is read after the loop.
define i64 @two_phis(i64 %n) {
entry:
  br label %loop
loop:
  %x = phi i64 [ 0, %entry ], [ %t, %body ]
  %y = phi i64 [ 5, %entry ], [ %t, %body ]
  %u = add i64 %x, 1
  %c = icmp ult i64 %u, %n
  br i1 %c, label %body, label %exit
body:
  %t = add i64 %u, %y
  br label %loop
exit:
  %r = add i64 %u, %y
  ret i64 %r
}
; A pointer walk: p.next into p's slot, read by the load before the branch.
define i64 @walk(ptr %p0, i64 %n) {
entry:
  %end = getelementptr i8, ptr %p0, i64 %n
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %p = phi ptr [ %p0, %entry ], [ %p.next, %loop ]
  %h = phi i64 [ 7, %entry ], [ %h.next, %loop ]
  %b = load i8, ptr %p
  %bw = zext i8 %b to i64
  %h3 = mul i64 %h, 31
  %h.next = xor i64 %h3, %bw
  %p.next = getelementptr i8, ptr %p, i64 1
  %done = icmp eq ptr %p.next, %end
  br i1 %done, label %exit, label %loop
exit:
  %r = phi i64 [ 0, %entry ], [ %h.next, %loop ]
  ret i64 %r
}
; The condition of the loop's branch is itself the next value of a phi (an i1), made in
; that phi's slot; i.next is read after the loop.
define i64 @flag_next(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %f = phi i1 [ true, %entry ], [ %f.next, %loop ]
  %fw = zext i1 %f to i64
  %i1 = add i64 %i, %fw
  %i.next = add i64 %i1, 1
  %f.next = icmp ult i64 %i.next, %n
  br i1 %f.next, label %loop, label %exit
exit:
  ret i64 %i.next
}
; p keeps its value through b (its own operand from b), which a's copies must not
; change on the edge a -> b: p is live into b (found in review: a phi's copy of itself
; was taken for no read at all, so p was written directly).
define i64 @self_kept(i64 %n) {
entry:
  br label %h
h:
  %p = phi i64 [ 0, %entry ], [ %v, %a ], [ %p, %b ]
  %k = phi i64 [ 0, %entry ], [ %k1, %a ], [ %k1, %b ]
  %k1 = add i64 %k, 1
  %done = icmp uge i64 %k1, %n
  br i1 %done, label %exit, label %a
a:
  %v = add i64 %p, 10
  %odd = and i64 %k1, 1
  %c = icmp eq i64 %odd, 0
  br i1 %c, label %h, label %b
b:
  br label %h
exit:
  ret i64 %p
}
)";

const char* kSlotDriver = R"(#include <stdio.h>
long sum(long), old_read_after(long), two_phis(long), walk(const unsigned char*, long), flag_next(long),
    self_kept(long);
int main(void) {
  const unsigned char text[] = "stamp takes the latch's value into the phi's slot";
  for (long n = 0; n < 12; ++n)
    printf("%ld: %ld %ld %ld %ld %ld %ld\n", n, sum(n), old_read_after(n * 7), two_phis(n), walk(text, n * 4),
           flag_next(n), self_kept(n));
  return 0;
}
)";

// The names of the values of function `name` whose slot is a phi's, in order.
std::string values_in_phi_slots(const FlatModuleData& f, const std::string& name) {
  FlatModuleView m = f.view();
  std::vector<uint32_t> use_count(f.insts.size());
  std::vector<uint8_t> home(f.insts.size());
  std::string taken;
  for (uint32_t fn = 0; fn < f.functions.size(); ++fn) {
    if (f.symbols[f.functions[fn].symbol] != name) continue;
    stamp_uses(m, fn, use_count.data(), home.data());
    const FlatFunction& func = f.functions[fn];
    for (uint32_t i = func.first_inst; i < func.first_inst + func.inst_count; ++i) {
      const uint32_t phi = phi_slot_taken(m, i, use_count.data(), home.data());
      if (phi != ~0u) taken += std::to_string(i - func.first_inst) + ">" + std::to_string(phi - func.first_inst) + " ";
    }
  }
  return taken;
}

}  // namespace

TEST_CASE("a latch's value lives in its direct phi's slot exactly where nothing reads the phi after it",
          "[stamp][phi]") {
  llvm::LLVMContext ctx;
  auto module = parse_bitcode(ctx, bitcode_from_ir(kSlotShapes), "slots.bc");
  FlatExport flat = export_flat(*module);
  REQUIRE(flat.stamp_function_count == 6);
  const FlatModuleData& f = flat.flat;
  // Instructions by their place in the function (entry's br is 0).
  CHECK(values_in_phi_slots(f, "sum") == "5>1 ");             // i.next into i; s.next read after the loop
  CHECK(values_in_phi_slots(f, "old_read_after") == "5>2 ");  // k.next alone: a is read after a.next
  CHECK(values_in_phi_slots(f, "two_phis") == "");            // t into two phis, u read after the loop
  CHECK(values_in_phi_slots(f, "walk") == "9>3 ");            // p.next into p; h.next is the exit phi's too
  CHECK(values_in_phi_slots(f, "flag_next") == "6>2 ");       // f.next into f; i.next read after the loop
  CHECK(phi_marks(f, "self_kept") == "sD");                   // p is live into b, where a's copies go before the jump
  FlatModuleData marked = f;                                  // and a flat file that claims p direct is refused
  for (const FlatFunction& fn : marked.functions)
    if (marked.symbols[fn.symbol] == "self_kept")
      for (uint32_t i = fn.first_inst; i < fn.first_inst + fn.inst_count; ++i)
        if (marked.insts[i].op == kOpPhi) {
          marked.insts[i].aux |= kPhiDirect, marked.insts[i].slot_size /= 2;
          break;
        }
  CHECK(check_flat_module(marked) == "phi written directly where a predecessor's copies or another block read it");
  // Block shapes, which the phis' liveness relies on (only terminators' edges leave a
  // block; phis come first): a block whose last two instructions swap places, and one
  // whose second phi comes after its first other instruction.
  const FlatFunction* sum_fn = nullptr;
  for (const FlatFunction& fn : f.functions)
    if (f.symbols[fn.symbol] == "sum") sum_fn = &fn;
  REQUIRE(sum_fn);
  const FlatBlock& loop = f.blocks[sum_fn->first_block + 1];  // i, s, sq, s.next, i.next, more, condbr
  REQUIRE(f.insts[loop.first_inst + 1].op == kOpPhi);
  REQUIRE(f.insts[loop.first_inst + loop.inst_count - 1].op == kOpCondBr);
  FlatModuleData unended = f;
  std::swap(unended.insts[loop.first_inst + loop.inst_count - 1], unended.insts[loop.first_inst + loop.inst_count - 2]);
  CHECK(check_flat_module(unended) == "block that does not end in a terminator");
  FlatModuleData late_phi = f;
  std::swap(late_phi.insts[loop.first_inst + 1], late_phi.insts[loop.first_inst + 2]);
  CHECK(check_flat_module(late_phi) == "phi after another instruction of its block");
  // The GPU's form of the frame stage (stamp_wide.h) places them the same.
  kiln_test::check_same_output(run_stamp_cpu(f.view(), 1, StampForm::wide), run_stamp_cpu(f.view(), 1));
}

TEST_CASE("latch values in their phis' slots compute what llvm's code does", "[stamp][phi][differential]") {
  expect_same_as_llvm(kSlotShapes, kSlotDriver, 6, "slots.bc");
}
