// stamp's per-function stages (stamp_stages.h: uses, frame, offsets) recast as work
// per instruction plus scans, so that a GPU spreads a function over many threads. In
// the per-function form one thread walks a whole function, and one large function
// (regex's largest has 16,836 instructions) would keep one GPU thread busy long after
// the rest of the batch is done. Results are identical to the per-function form:
// the CUDA executor runs this form, the CPU executor the other, and the CPU stand-in
// for the GPU (lib/stamp/stamp_gpu_standin.cpp) runs this one on the CPU so that it is
// checked against the CPU executor on machines without a GPU.
//
// The steps, each over instructions (i), blocks (b) or functions (fn):
//   uses:    wide_count_uses (i)                      use counts
//            wide_home (i)                            ResultHome, as stamp_uses decides it
//   frame:   wide_count_accesses (i)                  allocas' accesses
//            wide_frame_key (i), sort of the keys by function     the items' order
//            wide_sorted_step (p), inclusive scan by function with then()
//            wide_frame_inst (i), wide_frame_function (fn)
//   offsets: exclusive sums of sizes and relocation counts over all instructions
//            wide_offsets_inst (i), wide_offsets_block (b), wide_offsets_function (fn)
//   LSDAs:   wide_invoke_key (i), wide_call_at (i), two exclusive max-scans by function
//            wide_run_mark (i), exclusive max-scan by function, wide_run_end (i)
//            wide_lsda_counts (i), two exclusive sums over all instructions
//            wide_lsda_size (fn), exclusive sum over functions
//            wide_lsda_function (fn), wide_lsda_invoke (i)
#pragma once
#include "stamp_stages.h"

namespace kiln {

KILN_HD inline uint32_t function_of(const FlatModuleView& m, uint32_t i) { return m.blocks[m.insts[i].block].function; }

// Uses: every value operand adds one to its instruction's count (use_count starts at 0).
KILN_HD inline void wide_count_uses(const FlatModuleView& m, uint32_t i, uint32_t* use_count) {
  const FlatInst& in = m.insts[i];
  for (uint32_t k = 0; k < in.operand_count; ++k) {
    const FlatOperand& op = m.operands[in.first_operand + k];
    if (op.kind != kOperandValue) continue;
#if defined(__CUDA_ARCH__)
    atomicAdd(&use_count[op.index], 1u);
#else
    ++use_count[op.index];  // the CPU runs this form on one thread
#endif
  }
}

// Where instruction i's result lives: what stamp_uses decides for it.
KILN_HD inline void wide_home(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, uint8_t* home) {
  uint8_t h = first_home(m, i, use_count);
  // rax_operand and rax_holds look at home only for instruction i, which is known here
  // to be in a slot (another thread may be writing home[i] now): no home for them.
  const FlatBlock& b = m.blocks[m.insts[i].block];
  const uint32_t next = next_with_code(m, i);
  if (h == kHomeSlot && next < b.first_inst + b.inst_count && use_count[i] == 1 && result_in_rax(m.insts[i])) {
    int k = rax_operand(m, nullptr, next);
    if (k >= 0) {
      const FlatOperand& op = m.operands[m.insts[next].first_operand + static_cast<uint32_t>(k)];
      if (op.kind == kOperandValue && op.index == i && rax_holds(m, nullptr, next, op)) h = kHomeRax;
    }
  }
  if (h == kHomeSlot && use_count[i] == 0 && result_in_rax(m.insts[i])) h = kHomeUnused;
  if (h == kHomeSlot && pooled(m, i, use_count)) h = kHomePool;
  home[i] = h;
}

// Accesses: each instruction whose value addresses an alloca's memory adds its use
// count to that alloca's (accesses starts at 0; use_count is complete).
KILN_HD inline void wide_count_accesses(const FlatModuleView& m, uint32_t i, const uint32_t* use_count,
                                        uint32_t* accesses) {
  const uint32_t a = addressed_alloca(m, i);
  if (a == ~0u) return;
#if defined(__CUDA_ARCH__)
  atomicAdd(&accesses[a], use_count[i]);
#else
  accesses[a] += use_count[i];  // the CPU runs this form on one thread
#endif
}

// The frame items in their order: `sorted` holds each function's keys (frame_key)
// sorted within the function's range of instructions. Position p's step, and where
// instruction i's item is in that order.
KILN_HD inline void wide_sorted_step(const FlatModuleView& m, uint32_t p, const uint64_t* sorted,
                                     const uint32_t* use_count, const uint8_t* home, FrameStep* step,
                                     uint32_t* position) {
  if (sorted[p] == ~0ull) {
    step[p] = FrameStep{0, 0};
    return;
  }
  const uint32_t i = static_cast<uint32_t>(sorted[p]);
  step[p] = frame_step(m, i, use_count, home);
  position[i] = p;
}

// What the scans give the frame steps: per frame item, its place in the order
// (position), and per place the steps composed from the function's first place
// through it (frame_scan).
struct WideFrameScans {
  const uint32_t* position;
  const FrameStep* frame_scan;
};

// The argument slots' bytes (a function has few arguments: a loop, not a scan).
KILN_HD inline int64_t wide_args_end(const FlatModuleView& m, const FlatFunction& f) {
  int64_t bytes = 0;
  for (uint32_t a = 0; a < f.arg_count; ++a) bytes += arg_slot_bytes(m.arg_widths[f.first_arg + a]);
  return bytes;
}

// The frame offset after item i's step (frame_place takes it).
KILN_HD inline int64_t wide_item_end(const FlatModuleView& m, const FlatFunction& f, uint32_t i,
                                     const WideFrameScans& s) {
  return apply_step(s.frame_scan[s.position[i]], wide_args_end(m, f) + kPoolBytes);
}

// The slot of instruction i, which has one of its own or shares one (writes_in_place).
KILN_HD inline int32_t wide_own_slot(const FlatModuleView& m, const FlatFunction& f, uint32_t i,
                                     const uint32_t* use_count, const uint8_t* home, const WideFrameScans& s) {
  uint32_t owner = i;  // an in-place insert shares its source's slot, which may be shared in turn
  while (writes_in_place(m, owner, use_count, home)) owner = m.operands[m.insts[owner].first_operand].index;
  return static_cast<int32_t>(wide_item_end(m, f, owner, s));
}

// Instruction i's alloca memory and slot, as stamp_frame lays them out.
KILN_HD inline void wide_frame_inst(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, const uint8_t* home,
                                    const WideFrameScans& s, int32_t* inst_slot, int32_t* alloca_mem) {
  const FlatInst& in = m.insts[i];
  const FlatFunction& f = m.functions[function_of(m, i)];
  inst_slot[i] = alloca_mem[i] = 0;
  if (in.op == kOpAlloca || has_own_slot(m, i, use_count, home))
    frame_place(m, i, use_count, home, wide_item_end(m, f, i, s), inst_slot, alloca_mem);
  if (home[i] == kHomePool) {
    inst_slot[i] = pool_slot(static_cast<uint32_t>(wide_args_end(m, f)), i - f.first_inst);
  } else if (writes_in_place(m, i, use_count, home)) {
    inst_slot[i] = wide_own_slot(m, f, i, use_count, home, s);
  } else if (const uint32_t phi = phi_slot_taken(m, i, use_count, home); phi != ~0u) {
    inst_slot[i] = wide_own_slot(m, f, phi, use_count, home, s);
  } else if (home[i] == kHomeField) {  // the aggregate's slot (field_folds), at the field
    inst_slot[i] =
        wide_own_slot(m, f, m.operands[in.first_operand].index, use_count, home, s) - static_cast<int32_t>(in.imm);
  } else if (home[i] == kHomeNone || home[i] == kHomeLoad) {  // the address, or the folded load's
    uint32_t alloca_inst = 0;
    int64_t offset = 0;
    const FlatOperand where = home[i] == kHomeNone ? value_operand(i) : m.operands[in.first_operand];
    if (frame_shape(m, where, &alloca_inst, &offset))
      inst_slot[i] = static_cast<int32_t>(
          frame_memory(m, alloca_inst, use_count, home, wide_item_end(m, f, alloca_inst, s)) - offset);
  }
}

// Function fn's argument slots and frame size, as stamp_frame lays them out.
KILN_HD inline void wide_frame_function(const FlatModuleView& m, uint32_t fn, const WideFrameScans& s,
                                        int32_t* arg_slot, uint32_t* frame_size) {
  const FlatFunction& f = m.functions[fn];
  const int64_t start = stamp_frame_args(m, fn, arg_slot) + kPoolBytes;
  // The last place's scan composes every item's step (places that hold no item step by {0, 0}).
  const int64_t end = f.inst_count ? apply_step(s.frame_scan[f.first_inst + f.inst_count - 1], start) : start;
  frame_size[fn] = static_cast<uint32_t>((end + 15) / 16 * 16);
}

// Offsets from two exclusive sums over all instructions of the batch (one more entry
// than instructions): size_sum of code bytes, reloc_sum of relocation counts. Within a
// function they differ from stamp_offsets's running sums only by the value at its
// first instruction (unsigned arithmetic: exact even past 2^32).
KILN_HD inline void wide_offsets_inst(const FlatModuleView& m, uint32_t i, const uint32_t* prologue_size,
                                      const uint32_t* size_sum, const uint32_t* reloc_sum, uint32_t* inst_offset,
                                      uint32_t* reloc_start) {
  const uint32_t fn = function_of(m, i), first = m.functions[fn].first_inst;
  inst_offset[i] = prologue_size[fn] + (size_sum[i] - size_sum[first]);
  reloc_start[i] = reloc_sum[i] - reloc_sum[first];
}

KILN_HD inline void wide_offsets_block(const FlatModuleView& m, uint32_t b, const uint32_t* prologue_size,
                                       const uint32_t* size_sum, uint32_t* block_offset) {
  const uint32_t fn = m.blocks[b].function, first = m.functions[fn].first_inst;
  block_offset[b] = prologue_size[fn] + (size_sum[m.blocks[b].first_inst] - size_sum[first]);
}

KILN_HD inline void wide_offsets_function(const FlatModuleView& m, uint32_t fn, const uint32_t* prologue_size,
                                          const uint32_t* size_sum, const uint32_t* reloc_sum, uint32_t* code_size,
                                          uint32_t* reloc_count) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t first = f.first_inst, end = f.first_inst + f.inst_count;
  code_size[fn] = prologue_size[fn] + (size_sum[end] - size_sum[first]);
  reloc_count[fn] = reloc_sum[end] - reloc_sum[first];
}

}  // namespace kiln

namespace kiln {

// LSDAs (stamp_eh.h) per instruction. A function's call-site table lists, in order,
// each run of invokes (stamp_eh.h) and, where a call lies in it, the gap before it;
// with three max-scans, a scatter and two sums over instructions every invoke knows
// whether it starts a run, where the run ends, and where its entries go:
//   invoke_key:   an invoke's call end (function-relative) << 32 | its landing pad, 0 for
//                 other instructions; its exclusive max-scan by function is the previous
//                 invoke's (offsets grow within a function): where a gap would begin,
//                 and the pad a run continues with
//   call_at:      1 + the offset of a call that may unwind, 0 for other instructions;
//                 its exclusive max-scan by function is the latest call before, which
//                 lies in the gap when it is past the previous invoke's end
//   run_mark:     i + 1 for an invoke that starts a run, 0 for others; its exclusive
//                 max-scan by function names the run a joining invoke belongs to
//   run_end:      per run (at its first invoke's index): the max of its calls' ends
//   bytes:        a run's entries' bytes (its calls, and the gap before it), exclusive sum
//   typed:        1 per landing pad with a catch or filter clause, exclusive sum
KILN_HD inline bool wide_has_table(const FlatModuleView& m, uint32_t i) {
  return (m.functions[function_of(m, i)].flags & kFnHasPersonality) != 0;
}

KILN_HD inline uint64_t wide_invoke_key(const FlatModuleView& m, uint32_t i, const uint32_t* inst_offset,
                                        const uint32_t* call_end, const uint32_t* block_offset) {
  if (m.insts[i].op != kOpInvoke || !wide_has_table(m, i)) return 0;
  return (uint64_t(inst_offset[i] + call_end[i]) << 32) | invoke_pad(m, i, block_offset);
}
KILN_HD inline uint32_t key_end(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
KILN_HD inline uint32_t key_pad(uint64_t key) { return static_cast<uint32_t>(key); }

KILN_HD inline uint32_t wide_call_at(const FlatModuleView& m, uint32_t i, const uint32_t* inst_offset) {
  return may_unwind(m.insts[i]) && wide_has_table(m, i) ? inst_offset[i] + 1 : 0;
}

// Whether invoke i (invoke_key nonzero) joins the previous invoke's run.
KILN_HD inline bool wide_joins_run(uint64_t invoke_key, uint64_t previous_key, uint32_t last_call) {
  return joins_run(key_end(previous_key), key_pad(previous_key), last_call, key_pad(invoke_key));
}

KILN_HD inline uint32_t wide_run_mark(uint32_t i, uint64_t invoke_key, uint64_t previous_key, uint32_t last_call) {
  return invoke_key && !wide_joins_run(invoke_key, previous_key, last_call) ? i + 1 : 0;
}

// Adds invoke i's call end to its run's end (run_end starts at 0; `run_mark` is the
// exclusive max-scan of the marks).
KILN_HD inline void wide_run_end(uint32_t i, uint64_t invoke_key, uint64_t previous_key, uint32_t last_call,
                                 uint32_t run_mark, uint32_t* run_end) {
  if (!invoke_key) return;
  const uint32_t first = wide_joins_run(invoke_key, previous_key, last_call) ? run_mark - 1 : i;
#if defined(__CUDA_ARCH__)
  atomicMax(&run_end[first], key_end(invoke_key));
#else
  run_end[first] = key_end(invoke_key) > run_end[first] ? key_end(invoke_key) : run_end[first];
#endif
}

struct WideLsdaScans {
  const uint64_t* invoke_key;
  const uint64_t* previous_key;  // exclusive max-scan of invoke_key by function
  const uint32_t* call_at;
  const uint32_t* last_call;  // exclusive max-scan of call_at by function
  const uint32_t* run_end;    // at each run's first invoke
  const uint32_t* bytes_sum;  // exclusive sums over all instructions, one more entry
  const uint32_t* typed_sum;
};

// Entry bytes and typed count of instruction i; at a run's first invoke, the run's
// entries, else none.
KILN_HD inline void wide_lsda_counts(const FlatModuleView& m, uint32_t i, const WideLsdaScans& s,
                                     const uint32_t* inst_offset, const uint32_t* call_begin, uint32_t* bytes,
                                     uint32_t* typed) {
  const FlatInst& in = m.insts[i];
  const uint64_t key = s.invoke_key[i];
  LsdaWriter measure{nullptr, 0};
  bytes[i] = key && !wide_joins_run(key, s.previous_key[i], s.last_call[i])
      ? run_call_sites(inst_offset[i] + call_begin[i], s.run_end[i], key_pad(key), invoke_action(m, i),
                       key_end(s.previous_key[i]), s.last_call[i], measure)
      : 0;
  typed[i] = wide_has_table(m, i) && in.op == kOpLandingPad && in.aux != kLandingPadCleanup ? 1 : 0;
}

// A function's table: its shape, as write_stamp_lsda lays it out.
struct LsdaShape {
  uint32_t runs;      // the runs' entries' bytes
  uint32_t last_end;  // where the last invoke's call ends (0: none)
  bool tail;          // an entry after the last invoke: a call lies there
  bool typed;
  uint32_t table, header, size;
};
KILN_HD inline LsdaShape wide_lsda_shape(const FlatModuleView& m, uint32_t fn, const WideLsdaScans& s,
                                         uint32_t code_size) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t first = f.first_inst, end = f.first_inst + f.inst_count;
  LsdaShape l{};
  uint32_t last_call = 0;
  if (f.inst_count) {
    const uint64_t key = s.invoke_key[end - 1] > s.previous_key[end - 1] ? s.invoke_key[end - 1] : s.previous_key[end - 1];
    l.last_end = key_end(key);
    last_call = s.call_at[end - 1] > s.last_call[end - 1] ? s.call_at[end - 1] : s.last_call[end - 1];
  }
  l.runs = s.bytes_sum[end] - s.bytes_sum[first];
  l.tail = last_call > l.last_end;
  l.typed = s.typed_sum[end] != s.typed_sum[first];
  l.table = l.runs + (l.tail ? call_site_size(l.last_end, code_size - l.last_end, 0, 0) : 0);
  l.header = lsda_header_size(l.table, l.typed);
  l.size = lsda_size(l.table, l.typed);
  return l;
}

KILN_HD inline uint32_t wide_lsda_size(const FlatModuleView& m, uint32_t fn, const WideLsdaScans& s,
                                       uint32_t code_size) {
  return (m.functions[fn].flags & kFnHasPersonality) ? wide_lsda_shape(m, fn, s, code_size).size : 0;
}

// The header, the entry after the last invoke, and the action and type tables.
KILN_HD inline void wide_lsda_function(const FlatModuleView& m, uint32_t fn, const WideLsdaScans& s, uint32_t code_size,
                                       uint8_t* out) {
  if (!(m.functions[fn].flags & kFnHasPersonality)) return;
  const LsdaShape l = wide_lsda_shape(m, fn, s, code_size);
  LsdaWriter w{out, 0};
  put_lsda_header(w, l.table, l.typed);
  w.pos = l.header + l.runs;
  if (l.tail) put_call_site(w, l.last_end, code_size - l.last_end, 0, 0);
  if (l.typed) put_lsda_types(w);
}

// A run's entries, written by its first invoke: the gap before it (where a call lies
// in it) and the run's calls.
KILN_HD inline void wide_lsda_invoke(const FlatModuleView& m, uint32_t i, const WideLsdaScans& s,
                                     const uint32_t* inst_offset, const uint32_t* call_begin,
                                     const uint32_t* code_size, uint8_t* lsda, const uint32_t* lsda_start) {
  const uint64_t key = s.invoke_key[i];
  if (!key || wide_joins_run(key, s.previous_key[i], s.last_call[i])) return;
  const uint32_t fn = function_of(m, i), first = m.functions[fn].first_inst;
  const LsdaShape l = wide_lsda_shape(m, fn, s, code_size[fn]);
  LsdaWriter w{lsda + lsda_start[fn], l.header + (s.bytes_sum[i] - s.bytes_sum[first])};
  run_call_sites(inst_offset[i] + call_begin[i], s.run_end[i], key_pad(key), invoke_action(m, i),
                 key_end(s.previous_key[i]), s.last_call[i], w);
}

}  // namespace kiln
