// Batches: several flat modules run through stamp's stages as one. Each module's cut
// output must equal the CPU executor's on that module alone, whatever else shares its
// batch and wherever in the batch it sits.
#include <catch2/catch.hpp>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "bitcode.h"
#include "flat_export.h"
#include "ir_helpers.h"
#include "stamp_batch.h"
#include "stamp_cpu.h"
#include "stamp_output_compare.h"
#include "stamp_stages.h"

using namespace kiln;

namespace {

// Arguments, phis, a switch, a global and a call (symbol relocations), exceptions.
const char* kMixedIr = R"(
target triple = "x86_64-unknown-linux-gnu"
@counter = global i64 0
declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i64)

define i64 @bump(i64 %by, i32 %k) {
entry:
  %old = load i64, ptr @counter
  %new = add i64 %old, %by
  store i64 %new, ptr @counter
  switch i32 %k, label %other [ i32 1, label %one ]
one:
  br label %done
other:
  br label %done
done:
  %r = phi i64 [ %new, %one ], [ %old, %other ]
  ret i64 %r
}

define void @eh(i64 %v) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i64 %v) to label %ok unwind label %lp
ok:
  %x = call i64 @bump(i64 %v, i32 1)
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
)";

const char* kDeclarationsOnlyIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i64 @elsewhere(i64)
)";

const char* kLoopIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i64 @sink(i64)
define i64 @loop(i64 %n, i64 %step) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %body ]
  %done = icmp uge i64 %i, %n
  br i1 %done, label %exit, label %body
body:
  %s = call i64 @sink(i64 %i)
  %acc2 = add i64 %acc, %s
  %next = add i64 %i, %step
  br label %head
exit:
  ret i64 %acc
}
)";

// Arguments whose frame slots differ from those at the same module-wide index in other
// modules (a wrongly rebased argument would read another slot).
const char* kArgsIr = R"(
target triple = "x86_64-unknown-linux-gnu"
define i64 @one(i64 %a) {
  ret i64 %a
}
define i64 @three(i64 %a, i64 %b, i64 %c) {
  %s = add i64 %b, %c
  %t = mul i64 %s, %a
  ret i64 %t
}
)";

// Exception tables with gaps between invokes, two landing pads, a catch-all (typed).
const char* kTablesIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare i32 @__gxx_personality_v0(...)
declare void @may_throw(i64)

define void @two(i64 %v) personality ptr @__gxx_personality_v0 {
entry:
  call void @may_throw(i64 %v)
  invoke void @may_throw(i64 1) to label %next unwind label %lp
next:
  invoke void @may_throw(i64 2) to label %more unwind label %lp2
more:
  invoke void @may_throw(i64 3) to label %ok unwind label %lp2
ok:
  call void @may_throw(i64 4)
  ret void
lp:
  %l = landingpad { ptr, i32 } catch ptr null
  ret void
lp2:
  %l2 = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l2
}

define void @plain(i64 %v) {
  call void @may_throw(i64 %v)
  ret void
}

; A run of invokes with one landing pad, broken by a call between two of them; and a
; table with no invoke, only a call.
define void @broken_run(i64 %v) personality ptr @__gxx_personality_v0 {
entry:
  invoke void @may_throw(i64 1) to label %a unwind label %lp
a:
  call void @may_throw(i64 2)
  invoke void @may_throw(i64 3) to label %b unwind label %lp
b:
  invoke void @may_throw(i64 4) to label %c unwind label %lp
c:
  ret void
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}

define void @calls_only(i64 %v) personality ptr @__gxx_personality_v0 {
  call void @may_throw(i64 %v)
  ret void
}
)";

// A frame with every kind of item (stamp_frame): a large alloca touched once before a
// small one touched often, an over-aligned alloca (its address kept in a slot of its
// own), an aggregate written in place, a field read in place, values with slots.
const char* kFrameIr = R"(
target triple = "x86_64-unknown-linux-gnu"
declare void @use(ptr)
declare i64 @next(i64)

define i64 @frame(i64 %a, i64 %b) {
entry:
  %big = alloca [64 x i64], align 8
  %over = alloca [4 x i64], align 32
  %hot = alloca i64, align 8
  %p = getelementptr [64 x i64], ptr %big, i64 0, i64 3
  store i64 %a, ptr %p
  call void @use(ptr %over)
  call void @use(ptr %over)
  store i64 %b, ptr %hot
  %x = load i64, ptr %hot
  %c1 = call i64 @next(i64 %x)
  store i64 %c1, ptr %hot
  %y = load i64, ptr %hot
  %c2 = call i64 @next(i64 %y)
  store i64 %c2, ptr %hot
  %z = load i64, ptr %hot
  %s1 = insertvalue { i64, i64 } undef, i64 %z, 0
  %s2 = insertvalue { i64, i64 } %s1, i64 %c1, 1
  %c3 = call i64 @next(i64 %c2)
  %f = extractvalue { i64, i64 } %s2, 1
  %g = add i64 %f, %c3
  %h = add i64 %g, %c1
  ret i64 %h
}
)";

struct Exported {
  llvm::LLVMContext ctx;
  std::vector<FlatExport> modules;
  void add(const char* ir, const char* name) {
    auto m = parse_bitcode(ctx, kiln_test::bitcode_from_ir(ir), name);
    modules.push_back(export_flat(*m));
  }
};

}  // namespace

TEST_CASE("each module's output from a batch equals its output alone", "[stamp][batch]") {
  Exported e;
  e.add(kMixedIr, "mixed.bc");
  e.add(kDeclarationsOnlyIr, "declarations.bc");
  e.add(kLoopIr, "loop.bc");
  e.add(kiln_test::kAddIr, "add.bc");
  e.add(kArgsIr, "args.bc");
  REQUIRE(e.modules[0].stamp_function_count == 2);
  REQUIRE(e.modules[1].flat.functions.empty());
  std::vector<StampOutput> alone;
  for (const FlatExport& m : e.modules) alone.push_back(run_stamp_cpu(m.flat.view(), 1));

  // Forward, backward, and a module twice: each position shifts every index differently.
  const std::vector<std::vector<size_t>> orders = {{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 0, 1, 3}};
  for (const auto& order : orders) {
    std::vector<FlatModuleView> views;
    for (size_t k : order) views.push_back(e.modules[k].flat.view());
    std::vector<StampOutput> cut = run_stamp_cpu_batch(views.data(), views.size(), 1);
    REQUIRE(cut.size() == order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      INFO("batch position " << k << ", module " << order[k]);
      kiln_test::check_same_output(cut[k], alone[order[k]]);
    }
  }
}

TEST_CASE("a batch's arrays point into their own module's part", "[stamp][batch]") {
  Exported e;
  e.add(kLoopIr, "loop.bc");
  e.add(kMixedIr, "mixed.bc");
  std::vector<FlatModuleView> views = {e.modules[0].flat.view(), e.modules[1].flat.view()};
  StampBatchLayout layout = plan_stamp_batch(views.data(), views.size());
  REQUIRE(layout.function_count() == 3);
  CHECK(layout.first_inst[1] == views[0].inst_count);
  CHECK(layout.bytes % 16 == 0);
  std::vector<uint64_t> storage(layout.bytes / 8 + 2);
  FlatModuleView batch = write_stamp_batch(views.data(), layout, reinterpret_cast<uint8_t*>(storage.data()));
  for (size_t k = 0; k < views.size(); ++k) {
    for (uint32_t o = layout.first_operand[k]; o < layout.first_operand[k + 1]; ++o) {
      const FlatOperand& op = batch.operands[o];
      if (op.kind == kOperandValue) {
        CHECK(op.index >= layout.first_inst[k]);
        CHECK(op.index < layout.first_inst[k + 1]);
      } else if (op.kind == kOperandBlock) {
        CHECK(op.index >= layout.first_block[k]);
        CHECK(op.index < layout.first_block[k + 1]);
      } else if (op.kind == kOperandSymbol) {  // symbols stay the module's own
        CHECK(op.index == views[k].operands[o - layout.first_operand[k]].index);
      }
    }
    for (uint32_t b = layout.first_block[k]; b < layout.first_block[k + 1]; ++b)
      CHECK(batch.blocks[b].function - layout.first_function[k] < views[k].function_count);
  }
}

TEST_CASE("the GPU's form of the per-function stages gives the per-function form's output", "[stamp][batch][wide]") {
  Exported e;
  e.add(kMixedIr, "mixed.bc");
  e.add(kLoopIr, "loop.bc");
  e.add(kArgsIr, "args.bc");
  e.add(kiln_test::kAddIr, "add.bc");
  e.add(kFrameIr, "frame.bc");
  e.add(kTablesIr, "tables.bc");
  REQUIRE(e.modules.back().stamp_function_count == 4);
  REQUIRE(!run_stamp_cpu(e.modules.back().flat.view(), 1).lsda.empty());
  for (const FlatExport& m : e.modules)
    kiln_test::check_same_output(run_stamp_cpu(m.flat.view(), 1, StampForm::wide), run_stamp_cpu(m.flat.view(), 1));
  // And over a batch, where every scan runs across module boundaries.
  std::vector<FlatModuleView> views;
  for (const FlatExport& m : e.modules) views.push_back(m.flat.view());
  StampBatchLayout layout = plan_stamp_batch(views.data(), views.size());
  std::vector<uint64_t> storage(layout.bytes / 8 + 2);
  FlatModuleView batch = write_stamp_batch(views.data(), layout, reinterpret_cast<uint8_t*>(storage.data()));
  kiln_test::check_same_output(run_stamp_cpu(batch, 1, StampForm::wide), run_stamp_cpu(batch, 1));
}

// The CPU executor's encode cache (stamp_cpu.cpp): an instruction whose code outgrows
// the room left in the cache (a call with 600 stack arguments, each a 64-bit constant)
// is encoded again, and
// with 300 functions on two threads each worker keeps its own cache; the code and the
// relocations equal the GPU's form, which encodes every instruction twice.
TEST_CASE("the CPU executor's encode cache gives the code of encoding twice", "[stamp][batch][wide]") {
  std::string ir = "target triple = \"x86_64-unknown-linux-gnu\"\ndeclare i64 @sink(i64)\n";
  std::string params, args;
  for (int k = 0; k < 600; ++k) {
    params += std::string(k ? ", " : "") + "i64";
    args += std::string(k ? ", " : "") + "i64 " + std::to_string(0x123456789A0LL + k);
  }
  ir += "declare void @many(" + params + ")\n";
  ir += "define void @copy() {\n  call void @many(" + args + ")\n  ret void\n}\n";
  for (int k = 0; k < 300; ++k) {
    const std::string n = std::to_string(k);
    ir += "define i64 @f" + n + "(i64 %a) {\n  %b = add i64 %a, " + n + "\n  %c = call i64 @sink(i64 %b)\n" +
          "  %d = icmp ult i64 %c, 7\n  br i1 %d, label %small, label %big\nsmall:\n  ret i64 %b\n" +
          "big:\n  %e = call i64 @sink(i64 %c)\n  ret i64 %e\n}\n";
  }
  Exported e;
  e.add(ir.c_str(), "cache.bc");
  const FlatExport& m = e.modules.back();
  REQUIRE(m.stamp_function_count == 301);
  const StampOutput twice = run_stamp_cpu(m.flat.view(), 1, StampForm::wide);
  REQUIRE(twice.code_size[0] > 2 * 4096);  // @copy: its call outgrows the room
  kiln_test::check_same_output(run_stamp_cpu(m.flat.view(), 1), twice);
  kiln_test::check_same_output(run_stamp_cpu(m.flat.view(), 2), twice);
}

// stamp_frame's layout (stamp_stages.h): every item inside the frame, none overlapping
// another or the arguments' slots and the pool, allocas aligned as asked (up to 16:
// rbp's alignment; beyond, at run time within the slack), and the densest items
// nearest rbp, so that a small alloca used often gets an 8-bit displacement even after
// a large one used once.
TEST_CASE("the frame puts its densest items nearest rbp, none overlapping", "[stamp][frame]") {
  Exported e;
  e.add(kFrameIr, "frame.bc");
  e.add(kMixedIr, "mixed.bc");
  e.add(kLoopIr, "loop.bc");
  e.add(kArgsIr, "args.bc");
  e.add(kTablesIr, "tables.bc");
  size_t items_checked = 0;
  for (const FlatExport& x : e.modules) {
    const FlatModuleView m = x.flat.view();
    const uint32_t n = m.inst_count;
    std::vector<uint32_t> use_count(n);
    std::vector<uint8_t> home(n);
    std::vector<uint64_t> keys(n);
    std::vector<int32_t> inst_slot(n), alloca_mem(n), arg_slot(m.arg_count + 1);
    std::vector<uint32_t> frame_size(m.function_count);
    for (uint32_t fn = 0; fn < m.function_count; ++fn) {
      const FlatFunction& f = m.functions[fn];
      if (!f.inst_count) continue;
      stamp_uses(m, fn, use_count.data(), home.data());
      stamp_frame(m, fn, use_count.data(), home.data(), keys.data(), inst_slot.data(), alloca_mem.data(),
                  arg_slot.data(), frame_size.data());
      // Byte ranges as distances below rbp: [top, top + bytes) is [rbp - top, rbp - top + bytes).
      struct Range {
        int64_t top, bytes;
      };
      std::vector<Range> ranges;
      const int64_t reserved = (f.arg_count ? arg_slot[f.first_arg + f.arg_count - 1] : 0) + kPoolBytes;
      ranges.push_back({reserved, reserved});
      for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
        const FlatInst& in = m.insts[i];
        if (in.op == kOpAlloca) {
          const int64_t align = in.imm > 8 ? in.imm : 8;
          const int64_t bytes = in.aux32 + (align > 16 ? align - 16 : 0);
          CHECK(alloca_mem[i] % (align > 16 ? 16 : align) == 0);
          ranges.push_back({alloca_mem[i], bytes});
        }
        if (has_own_slot(m, i, use_count.data(), home.data()))
          ranges.push_back({inst_slot[i], (in.slot_size + 7) / 8 * 8});
      }
      std::sort(ranges.begin(), ranges.end(),
                [](const Range& a, const Range& b) { return a.top - a.bytes < b.top - b.bytes; });
      for (size_t k = 0; k < ranges.size(); ++k) {
        INFO("function " << fn << " range " << k);
        CHECK(ranges[k].top <= static_cast<int64_t>(frame_size[fn]));
        CHECK(ranges[k].top - ranges[k].bytes >= 0);
        if (k) CHECK(ranges[k - 1].top <= ranges[k].top - ranges[k].bytes);  // no overlap
      }
      items_checked += ranges.size();
    }
  }
  CHECK(items_checked > 20);

  // In @frame: %big (512 bytes, one access) comes first in the code, %hot (8 bytes, six
  // accesses) last; %hot sits within 128 bytes of rbp, %big beyond it.
  const FlatModuleView m = e.modules[0].flat.view();
  std::vector<uint32_t> allocas;
  for (uint32_t i = 0; i < m.inst_count; ++i)
    if (m.insts[i].op == kOpAlloca) allocas.push_back(i);
  REQUIRE(allocas.size() == 3);
  std::vector<uint32_t> use_count(m.inst_count);
  std::vector<uint8_t> home(m.inst_count);
  std::vector<uint64_t> keys(m.inst_count);
  std::vector<int32_t> inst_slot(m.inst_count), alloca_mem(m.inst_count), arg_slot(m.arg_count + 1);
  std::vector<uint32_t> frame_size(m.function_count);
  stamp_uses(m, 0, use_count.data(), home.data());
  stamp_frame(m, 0, use_count.data(), home.data(), keys.data(), inst_slot.data(), alloca_mem.data(), arg_slot.data(),
              frame_size.data());
  CHECK(alloca_mem[allocas[2]] <= 128);
  CHECK(alloca_mem[allocas[0]] > alloca_mem[allocas[2]]);
  CHECK(home[allocas[1]] == kHomeSlot);  // the over-aligned alloca's address has a slot of its own
  CHECK(inst_slot[allocas[1]] == alloca_mem[allocas[1]] + 8);
  CHECK(frame_size[0] >= 512 + 32 + 8);
}

// In a frame of more than 128 bytes rbp sits kFrameBias bytes below the frame's top
// (stamp_emit.h), so an 8-bit displacement reaches places 1 to 240 bytes below the
// top, not 1 to 128; a smaller frame keeps rbp at its top.
TEST_CASE("frame places up to 240 bytes below the frame's top take 8-bit displacements", "[stamp][frame]") {
  CHECK(frame_bias(128) == 0);
  CHECK(frame_bias(144) == kFrameBias);
  auto load_size = [](int32_t disp) {
    Emitter e{nullptr, 0, nullptr, 0};
    e.frame_bias = frame_bias(256);
    load64(e, RAX, disp);  // mov rax, [frame top + disp]
    return e.pos;
  };
  CHECK(load_size(-8) == 4);
  CHECK(load_size(-128) == 4);
  CHECK(load_size(-200) == 4);
  CHECK(load_size(-240) == 4);
  CHECK(load_size(-241) == 7);
  CHECK(load_size(16) == 7);  // the caller's stack arguments, above the top
  std::vector<uint8_t> code(8);
  Emitter e{code.data(), 0, nullptr, 0};
  e.frame_bias = frame_bias(256);
  load64(e, RAX, -200);
  CHECK(std::vector<uint8_t>(code.begin(), code.begin() + 4) == std::vector<uint8_t>{0x48, 0x8B, 0x45, 0xA8});
  Emitter plain{nullptr, 0, nullptr, 0};
  load64(plain, RAX, -200);
  CHECK(plain.pos == 7);
}
