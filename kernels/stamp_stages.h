// stamp's stages as plain functions over the flat arrays. Each is independent per
// function or per instruction, so the CPU executor runs them on threads and the CUDA
// executor as kernels, with identical results:
//   0. uses     (per function)    where results live: a slot, only rax, or nowhere
//   1. frame    (per function)    slot offsets: stored values and aligned allocas, densest first
//   2. measure  (per instruction) exact byte length and relocation count, every jump rel32
//   3. offsets  (per function)    exclusive scans: instruction, block, relocation offsets
//   2b. relax   (per instruction) jumps measured again against stage 3's long layout,
//               then 3 again (jump, in stamp_emit.h)
//   4. encode   (per instruction) bytes into the function's code, relocation records
#pragma once
#include <algorithm>

#include "flat_ir.h"
#include "portable.h"
#include "stamp_eh.h"
#include "stamp_emit.h"

namespace kiln {

// How many instructions past a load its one user may come for the load to fold into it.
constexpr uint32_t kLoadFoldWindow = 16;

// Users whose templates read a scalar operand only through load_operand (or load_rax),
// before any memory access of their own, so a folded load's memory can be read there.
KILN_HD inline bool reads_scalars_by_load_operand(const FlatInst& in) {
  if (is_operand_only_op(in.op)) return true;
  switch (in.op) {
    case kOpLoad:
    case kOpStore:
    case kOpGep:
    case kOpInsert:
    case kOpCall:
    case kOpInvoke:
    case kOpCondBr:
    case kOpSwitch:
    case kOpRet:
    case kOpOverflow:
      return true;
    default:
      return false;
  }
}

// A load folds into its user (kHomeLoad) when it loads 8 to 64 bits from a frame
// address and its one user, later in its block within kLoadFoldWindow instructions,
// reads that memory itself instead of the load's slot, with only touches_no_memory
// instructions in between: the same value, without the load's code (the load and the
// store to its slot) and without a slot. LLVM's instruction selection at -O0 folds
// such loads into their users too.
KILN_HD inline bool load_folds(const FlatModuleView& m, uint32_t i, const uint32_t* use_count) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpLoad || use_count[i] != 1 || in.width < 8 || in.width > 64 || !is_standard_width(in.width))
    return false;
  if (!is_frame_shape(m, m.operands[in.first_operand])) return false;
  const FlatBlock& b = m.blocks[in.block];
  const uint32_t end = b.first_inst + b.inst_count;
  for (uint32_t j = i + 1; j < end && j <= i + kLoadFoldWindow; ++j) {
    const FlatInst& u = m.insts[j];
    for (uint32_t k = 0; k < u.operand_count; ++k) {
      const FlatOperand& op = m.operands[u.first_operand + k];
      if (op.kind == kOperandValue && op.index == i) return reads_scalars_by_load_operand(u);
    }
    if (!touches_no_memory(u)) return false;
  }
  return false;
}

// An extractvalue of a scalar (of a standard width up to 64 bits) from an aggregate in
// a slot of its own (no phi's: a phi's slot is written again at each entry of its
// block) folds (kHomeField): its uses read the field in place. The aggregate's slot
// holds it for as long as the field is live: that slot is written only where the
// aggregate is defined (an insertvalue takes it over only from an aggregate it alone
// uses), and in SSA form a value defined after the aggregate (the field) is never live
// across the aggregate's next definition. An aggregate (width 0, a slot) always has its
// own slot (kHomeSlot): no other home takes one, so this needs no other home.
KILN_HD inline bool field_folds(const FlatModuleView& m, uint32_t i) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpExtract || in.width == 0 || in.width > 64 || !is_standard_width(in.width)) return false;
  const FlatOperand& src = m.operands[in.first_operand];
  if (src.kind != kOperandValue) return false;
  const FlatInst& a = m.insts[src.index];
  return a.width == 0 && a.slot_size != 0 && a.op != kOpPhi;
}

// Whether instruction j, in i's block (else: no), reads the result of i.
KILN_HD inline bool uses_value(const FlatModuleView& m, uint32_t j, uint32_t i) {
  const FlatBlock& b = m.blocks[m.insts[i].block];
  if (j >= b.first_inst + b.inst_count) return false;
  const FlatInst& u = m.insts[j];
  for (uint32_t k = 0; k < u.operand_count; ++k) {
    const FlatOperand& op = m.operands[u.first_operand + k];
    if (op.kind == kOperandValue && op.index == i) return true;
  }
  return false;
}

// Whether first_home may give an instruction of opcode `op` anything but a slot (the
// cases of its switch): stamp_uses asks before it calls, in its loop over every
// instruction (the calls of the others were a third of first_home's cost).
KILN_HD inline bool may_leave_slot(uint16_t op) {
  return op == kOpAlloca || op == kOpGep || op == kOpLoad || op == kOpExtract;
}

// The home stage 0 gives instruction i before it looks at its neighbours and at the
// pool: nowhere (kHomeNone, kHomeLoad, kHomeField) or a slot.
KILN_HD inline uint8_t first_home(const FlatModuleView& m, uint32_t i, const uint32_t* use_count) {
  switch (m.insts[i].op) {  // only these can be anything but a slot (may_leave_slot)
    case kOpAlloca:
    case kOpGep:
      return is_frame_shape(m, value_operand(i)) ? kHomeNone : kHomeSlot;
    case kOpLoad:
      // A load whose value rax holds already (load_forwards) and whose user comes next
      // had better stay in rax (kHomeRax, decided later) than be read from memory again.
      return load_folds(m, i, use_count) && !(load_forwards(m, i) && uses_value(m, next_with_code(m, i), i))
          ? kHomeLoad
          : kHomeSlot;
    case kOpExtract:
      return field_folds(m, i) ? kHomeField : kHomeSlot;
    default:
      return kHomeSlot;
  }
}

// Whether an instruction's result may share its slot with another value (a pooled one,
// a phi's): the templates of all others but these write a scalar result once, after
// reading every operand (a phi is written by copies; these others piecewise). These,
// a bit each: one question, where a switch took a few.
constexpr uint64_t kOwnSlotOps = 1ull << kOpPhi | 1ull << kOpVector | 1ull << kOpOverflow | 1ull << kOpCmpXchg |
    1ull << kOpLandingPad | 1ull << kOpWide | 1ull << kOpInsert;
static_assert(kOpCount <= 64, "kOwnSlotOps holds a bit per opcode");
KILN_HD inline bool result_may_share_slot(uint16_t op) { return op >= 64 || !((kOwnSlotOps >> op) & 1); }

// A value lives in the pool (kHomePool) when it is a scalar of up to 64 bits (not a
// vector, an aggregate or an i128) that would have a slot of its own and every use of
// which comes within kPoolSlots - 1 instructions after it, in its block, by an
// instruction other than a phi (a phi reads its value at the end of a predecessor).
// Value i takes pool slot i mod kPoolSlots (counted in its function). The value before
// it there, i - kPoolSlots or earlier, was last read before i; i reads no value that
// shares its slot; and i writes its slot only after reading its operands (aggregates,
// whose templates write their slot piecewise, never live in the pool). So no two values
// in one pool slot are ever live together. Uses are counted in the window: all of them
// are there when the count equals use_count.
KILN_HD inline bool pooled(const FlatModuleView& m, uint32_t i, const uint32_t* use_count) {
  const FlatInst& in = m.insts[i];
  if (in.width == 0 || in.width > 64 || in.slot_size == 0 || in.slot_size > 8) return false;
  if (!result_may_share_slot(in.op)) return false;
  const uint32_t uses = use_count[i];
  const FlatBlock& b = m.blocks[in.block];
  const uint32_t end = b.first_inst + b.inst_count;
  uint32_t seen = 0;
  for (uint32_t j = i + 1; j < end && j < i + kPoolSlots && seen < uses; ++j) {
    const FlatInst& u = m.insts[j];
    if (u.op == kOpPhi) continue;
    for (uint32_t k = 0; k < u.operand_count; ++k) {
      const FlatOperand& op = m.operands[u.first_operand + k];
      if (op.kind == kOperandValue && op.index == i) ++seen;
    }
  }
  return seen == uses;
}

// The distance below the frame's top (rbp plus the function's frame_bias) of the pool
// slot of instruction i, the function's `at`-th (counted within its function, so that
// a module's code does not depend on the batch it is emitted in): the pool comes right
// after the arguments' slots.
KILN_HD inline int32_t pool_slot(uint32_t args_bytes, uint32_t at) {
  return static_cast<int32_t>(args_bytes + 8 * (1 + at % kPoolSlots));
}

// Whether the one use of instruction i's value (use_count 1, result_in_rax) is the
// next instruction with code in its block, which takes it first, from rax. For an i
// that stamp_uses has given kHomeSlot so far, that is all rax_holds(m, home, next, that
// operand) asks, so it is not asked: i comes at most kQuietWindow + 1 before next in
// its block (next_with_code), it is not read in place (kHomeSlot) nor a frame address
// (first_home gave those kHomeNone; no other opcode is one), its template ends with
// it in rax (result_in_rax), and what lies between emits nothing (next_with_code).
KILN_HD inline bool stays_in_rax(const FlatModuleView& m, const uint8_t* home, uint32_t i) {
  const uint32_t next = next_with_code(m, i);
  const FlatBlock& b = m.blocks[m.insts[i].block];
  if (next >= b.first_inst + b.inst_count) return false;
  const int k = rax_operand(m, home, next);
  if (k < 0) return false;
  const FlatOperand& op = m.operands[m.insts[next].first_operand + static_cast<uint32_t>(k)];
  return op.kind == kOperandValue && op.index == i;
}

// Stage 0: where each result lives (ResultHome). A frame address (frame_shape) needs
// no code and no slot: each use recomputes it or addresses memory through it. Nor do a
// load that folds into its user (load_folds) and a field read in place (field_folds).
// A result used once, by the next instruction with code (next_with_code), which takes
// that operand first into rax (rax_operand), never goes to memory, nor does one that
// nothing reads. Of the rest, short-lived scalars share the pool's slots (pooled).
// use_count is scratch (per instruction).
KILN_HD inline void stamp_uses(const FlatModuleView& m, uint32_t fn, uint32_t* use_count, uint8_t* home) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t end = f.first_inst + f.inst_count;
  for (uint32_t i = f.first_inst; i < end; ++i) use_count[i] = 0;
  for (uint32_t i = f.first_inst; i < end; ++i) {
    // The operands and their count read once: use_count's stores may alias them.
    const FlatOperand* ops = m.operands + m.insts[i].first_operand;
    const uint32_t n = m.insts[i].operand_count;
    for (uint32_t k = 0; k < n; ++k)
      if (ops[k].kind == kOperandValue) ++use_count[ops[k].index];
  }
  // One walk, each instruction's home decided whole (as wide_home does): rax_operand
  // and rax_holds of the next instruction read only whether the homes before it are
  // read_in_place, which first_home alone decides, and the instructions between i and
  // the next (not decided yet) emit nothing, which rax_holds says no to whatever
  // their homes.
  for (uint32_t i = f.first_inst; i < end; ++i) {
    const FlatInst& in = m.insts[i];
    // first_home, its frame addresses' case here: most of its calls were for those, and
    // the call cost more than the question.
    uint8_t h = kHomeSlot;
    if (in.op == kOpAlloca || in.op == kOpGep) h = is_frame_shape(m, value_operand(i)) ? kHomeNone : kHomeSlot;
    else if (may_leave_slot(in.op)) h = first_home(m, i, use_count);
    if (h != kHomeSlot) {
      home[i] = h;
      continue;
    }
    home[i] = kHomeSlot;  // what rax_operand below may read
    const uint32_t uses = use_count[i];
    if (uses == 1 && result_in_rax(in) && stays_in_rax(m, home, i)) h = kHomeRax;
    else if (uses == 0 && result_in_rax(in)) h = kHomeUnused;
    else if (pooled(m, i, use_count)) h = kHomePool;
    home[i] = h;
  }
}

// ---- stage 1: the frame --------------------------------------------------------------
// Below the arguments' slots and the pool lie the frame's items: each alloca's memory
// and each value's own slot (kHomeSlot). They are laid out densest first: by accesses
// per byte, then in instruction order. A -O0 function touches a few of them most of
// the time, and those then sit within 8-bit displacements of rbp; in instruction order
// a large alloca pushed everything after it to 32-bit ones (regex's test corpus
// 3.0% less .text, the quick start's example crate 4%).

// The frame offset grows by steps that round up to 8 or 16 bytes. The offset is
// always a multiple of 8, so a step is known by what it adds when the offset so far is
// 0 or 8 modulo 16; steps compose (then), which makes the items' offsets a scan.
struct FrameStep {
  int64_t add_at0, add_at8;
};
KILN_HD inline int64_t apply_step(const FrameStep& s, int64_t offset) {
  return offset + (offset % 16 == 0 ? s.add_at0 : s.add_at8);
}
// `a` then `b`: associative (composition of functions), the identity is {0, 0}.
KILN_HD inline FrameStep then(const FrameStep& a, const FrameStep& b) {
  return FrameStep{apply_step(b, a.add_at0), apply_step(b, 8 + a.add_at8) - 8};
}
struct FrameStepThen {
  KILN_HD FrameStep operator()(const FrameStep& a, const FrameStep& b) const { return then(a, b); }
};

// An insertvalue into an aggregate used by nothing else writes in place: it takes over
// that aggregate's slot (defined earlier in layout, same size, not a phi's). Every later
// use of either is dominated by the insert, so no read of the old aggregate can follow
// the write. Its source is operand 0.
KILN_HD inline bool writes_in_place(const FlatModuleView& m, uint32_t i, const uint32_t* use_count,
                                    const uint8_t* home) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpInsert || !in.slot_size || home[i] != kHomeSlot) return false;
  const FlatOperand& src = m.operands[in.first_operand];
  return src.kind == kOperandValue && src.index < i && use_count[src.index] == 1 && home[src.index] == kHomeSlot &&
      m.insts[src.index].op != kOpPhi && m.insts[src.index].slot_size == in.slot_size;
}

// How far before its block's terminator a value may be for phi_slot_taken to look at it
// (bounds the scan of the block's instructions after it).
constexpr uint32_t kPhiSlotWindow = 64;

// The direct phi (kPhiDirect) whose slot instruction i's value lives in, or ~0u: where
// i's block ends in br or condbr, i's value is the phi's incoming value from that block
// and that phi operand is its one use outside the block, it is otherwise read only
// after it in its block (within kPhiSlotWindow), and the phi is not read after it there
// (nor by any phi of the successors, from this block). Then nothing reads the phi's old
// value once i writes it (the phi is dead on the block's edges to other blocks, which
// is what makes it direct), i reads its operands before writing its result (as a pooled
// value does: the same templates), and the edge's copy into the phi has nothing to do:
// a loop's latch computes the next value in the phi's slot itself.
// The first of phi_slot_taken's questions, which rules out most instructions: its
// callers that loop over every instruction ask it before they call.
KILN_HD inline bool may_take_phi_slot(const FlatInst& in, uint8_t home) {
  return home == kHomeSlot && in.slot_size == 8 && in.width != 0 && in.width <= 64 && in.op != kOpAlloca;
}
KILN_HD inline uint32_t phi_slot_taken(const FlatModuleView& m, uint32_t i, const uint32_t* use_count,
                                       const uint8_t* home) {
  const FlatInst& in = m.insts[i];
  if (!may_take_phi_slot(in, home[i])) return ~0u;
  const FlatBlock& b = m.blocks[in.block];
  const uint32_t end = b.first_inst + b.inst_count;
  if (end - i > kPhiSlotWindow || !result_may_share_slot(in.op)) return ~0u;
  const FlatInst& term = m.insts[end - 1];
  if (term.op != kOpBr && term.op != kOpCondBr) return ~0u;
  // The successors' phis: exactly one operand from this block that is i, of a direct
  // phi, and none that is that phi.
  uint32_t phi = ~0u, phi_uses = 0;
  each_phi_operand_from(m, term, [&](uint32_t q, const FlatOperand& v) {
    if (v.kind == kOperandValue && v.index == i) phi = q, ++phi_uses;
    return true;
  });
  if (phi_uses != 1) return ~0u;
  const FlatInst& target = m.insts[phi];
  if (!(target.aux & kPhiDirect) || target.width != in.width || target.slot_size != 8) return ~0u;
  if (!each_phi_operand_from(m, term, [&](uint32_t, const FlatOperand& v) {  // no successor's phi reads it from here
        return !(v.kind == kOperandValue && v.index == phi);
      }))
    return ~0u;
  // The block after i: reads of i (the rest of its uses) and none of the phi.
  uint32_t local = 0;
  for (uint32_t j = i + 1; j < end; ++j) {
    const FlatInst& u = m.insts[j];
    for (uint32_t k = 0; k < u.operand_count; ++k) {
      const FlatOperand& op = m.operands[u.first_operand + k];
      if (op.kind != kOperandValue) continue;
      if (op.index == phi) return ~0u;
      if (op.index == i) ++local;
    }
  }
  return local + 1 == use_count[i] ? phi : ~0u;
}

// Whether instruction i's result has a slot of its own in the frame (an over-aligned
// alloca's address included: it is computed at run time, encode_inst).
KILN_HD inline bool has_own_slot(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, const uint8_t* home) {
  return m.insts[i].slot_size && home[i] == kHomeSlot && !writes_in_place(m, i, use_count, home) &&
      (!may_take_phi_slot(m.insts[i], home[i]) || phi_slot_taken(m, i, use_count, home) == ~0u);
}

// What instruction `in` adds to the frame: an alloca's memory (rbp is 16-byte
// aligned; beyond that the address is aligned at run time, encode_inst, so the area
// gets align - 16 bytes of slack), then its own slot if it has one (`own`,
// has_own_slot); a value's own slot (8 bytes at a time); or nothing ({0, 0}). The
// item's place is the offset after its step, as a distance below the frame's top (frame_place).
KILN_HD inline FrameStep frame_step(const FlatInst& in, bool own) {
  const int64_t slot = own ? (in.slot_size + 7) / 8 * 8 : 0;
  if (in.op != kOpAlloca) return FrameStep{slot, slot};
  int64_t align = in.imm > 8 ? in.imm : 8;
  int64_t bytes = in.aux32 + (align > 16 ? align - 16 : 0);
  int64_t step = align > 16 ? 16 : align;
  return then(FrameStep{(bytes + step - 1) / step * step, (8 + bytes + step - 1) / step * step - 8},
              FrameStep{slot, slot});
}
KILN_HD inline FrameStep frame_step(const FlatModuleView& m, uint32_t i, const uint32_t* use_count,
                                    const uint8_t* home) {
  return frame_step(m.insts[i], has_own_slot(m, i, use_count, home));
}

// An alloca's memory from `after`, the frame offset after its step: below its own
// slot, if it has one.
KILN_HD inline int64_t frame_memory(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, const uint8_t* home,
                                    int64_t after) {
  return has_own_slot(m, i, use_count, home) ? after - 8 : after;
}
// An item's memory and slot from `after` (`own`: has_own_slot).
KILN_HD inline void frame_place(const FlatModuleView& m, uint32_t i, bool own, int64_t after, int32_t* inst_slot,
                                int32_t* alloca_mem) {
  if (own) inst_slot[i] = static_cast<int32_t>(after);
  if (m.insts[i].op == kOpAlloca) alloca_mem[i] = static_cast<int32_t>(own ? after - 8 : after);
}
KILN_HD inline void frame_place(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, const uint8_t* home,
                                int64_t after, int32_t* inst_slot, int32_t* alloca_mem) {
  frame_place(m, i, has_own_slot(m, i, use_count, home), after, inst_slot, alloca_mem);
}

// The alloca whose memory instruction x's value addresses (frame_shape: the alloca
// itself, or a getelementptr of it by a constant), or ~0u. Each use of x is an access
// of that memory: an alloca's accesses are the use counts of such instructions.
KILN_HD inline uint32_t addressed_alloca(const FlatModuleView& m, uint32_t x) {
  uint32_t alloca_inst = 0;
  int64_t offset = 0;
  const uint16_t op = m.insts[x].op;
  if (op != kOpAlloca && op != kOpGep) return ~0u;
  return frame_shape(m, value_operand(x), &alloca_inst, &offset) ? alloca_inst : ~0u;
}

// The order of the frame's items: accesses per byte, densest first, then instruction
// order (the index in the low half makes every key distinct). `accesses` counts the
// uses of an alloca's memory (addressed_alloca); a slot is written once and read at
// each use. Instructions that are not items get the largest key.
// The key of instruction i, `in`, whose slot is its own or not (`own`, has_own_slot)
// and whose value has `uses`.
KILN_HD inline uint64_t frame_key(const FlatInst& in, uint32_t i, bool own, uint32_t uses, uint32_t accesses) {
  const bool is_alloca = in.op == kOpAlloca;
  const FrameStep step = frame_step(in, own);
  if (!is_alloca && step.add_at0 == 0) return ~0ull;
  const uint64_t count = (is_alloca ? accesses : 0) + (own ? uses + 1ull : 0);
  const uint64_t clamped = (count < (1u << 20) ? count : (1u << 20)) * 4096;
  const uint64_t density = step.add_at0 <= 8 ? clamped / 8 : clamped / static_cast<uint64_t>(step.add_at0);
  return (static_cast<uint64_t>(0xFFFFFFFFu - density) << 32) | i;  // density is below 2^32
}
KILN_HD inline uint64_t frame_key(const FlatModuleView& m, uint32_t i, const uint32_t* use_count, const uint8_t* home,
                                  uint32_t accesses) {
  const FlatInst& in = m.insts[i];
  if (in.op != kOpAlloca && (!in.slot_size || home[i] != kHomeSlot)) return ~0ull;  // the common case, quickly
  return frame_key(in, i, has_own_slot(m, i, use_count, home), use_count[i], accesses);
}

// The value whose slot instruction i's lives in, where i's has a slot (kHomeSlot) but
// not its own: writes_in_place's source or phi_slot_taken's phi; else ~0u.
KILN_HD inline uint32_t slot_lender(const FlatModuleView& m, uint32_t i, const uint32_t* use_count,
                                    const uint8_t* home) {
  if (writes_in_place(m, i, use_count, home)) return m.operands[m.insts[i].first_operand].index;
  return may_take_phi_slot(m.insts[i], home[i]) ? phi_slot_taken(m, i, use_count, home) : ~0u;
}
// stamp_frame marks a value that lives in another's slot by -(lender + 1) in inst_slot
// until every slot of its own is placed; a marked value's slot, the lender's, is found
// through the marks (an insertvalue's source may lend one taken over itself, always
// from an earlier value; a phi's slot is its own).
KILN_HD inline int32_t lent_slot_mark(uint32_t lender) { return -static_cast<int32_t>(lender) - 1; }
KILN_HD inline int32_t placed_slot(const int32_t* inst_slot, uint32_t i) {
  int32_t slot = inst_slot[i];
  while (slot < 0) slot = inst_slot[static_cast<uint32_t>(-(slot + 1))];
  return slot;
}

// The arguments' slots, as distances below the frame's top; returns the bytes they take.
KILN_HD inline uint32_t stamp_frame_args(const FlatModuleView& m, uint32_t fn, int32_t* arg_slot) {
  const FlatFunction& f = m.functions[fn];
  uint32_t off = 0;
  for (uint32_t a = 0; a < f.arg_count; ++a) {
    off += arg_slot_bytes(m.arg_widths[f.first_arg + a]);
    arg_slot[f.first_arg + a] = static_cast<int32_t>(off);
  }
  return off;
}

// Stage 1 (per function). Writes inst_slot/alloca_mem for the function's
// instructions, arg_slot for its arguments, and its frame size (a multiple of 16).
// use_count and home come from stage 0; keys is scratch (per instruction). Runs on the
// host only: it sorts (the GPU's form, stamp_wide.h, sorts with CUB).
inline void stamp_frame(const FlatModuleView& m, uint32_t fn, const uint32_t* use_count, const uint8_t* home,
                        uint64_t* keys, int32_t* inst_slot, int32_t* alloca_mem, int32_t* arg_slot,
                        uint32_t* frame_size) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t first = f.first_inst, end = f.first_inst + f.inst_count;
  const uint32_t args = stamp_frame_args(m, fn, arg_slot);
  // Each alloca's accesses are counted in its alloca_mem (which placing it overwrites;
  // a value that is no alloca keeps 0 there), so that keys need no clearing and its back
  // is free for the fix-ups below. Only a frame address addresses an alloca
  // (addressed_alloca): the alloca or getelementptr that first_home gave kHomeNone.
  // The items' keys go to the front of the function's range; a value with a slot that
  // is not its own is marked (lent_slot_mark), its lender asked once. The values whose
  // place comes from others' (marked ones, frame addresses but allocas, folded loads and
  // fields) go to the back, for the last loop to visit them alone: an instruction is at
  // most one of the two, so the front never reaches the back. One walk does all three;
  // an alloca's key waits for its accesses (a frame address after it adds to them), its
  // index alone standing in for it (a key's high half is never 0: frame_key).
  std::fill(alloca_mem + first, alloca_mem + end, 0);
  uint32_t items = first, fixups = end;
  bool allocas = false;
  for (uint32_t i = first; i < end; ++i) {
    const FlatInst& in = m.insts[i];
    const uint8_t h = home[i];
    inst_slot[i] = h == kHomePool ? pool_slot(args, i - first) : 0;
    if (h == kHomeNone) {
      int32_t& accesses = alloca_mem[addressed_alloca(m, i)];
      accesses = static_cast<int32_t>(static_cast<uint32_t>(accesses) + use_count[i]);
    }
    const bool is_alloca = in.op == kOpAlloca, slot = in.slot_size && h == kHomeSlot;
    if (is_alloca) {
      keys[items++] = i;
      allocas = true;
      continue;
    }
    if (!slot) {  // the common case, quickly
      if (h == kHomeNone || read_in_place(h)) keys[--fixups] = i;
      continue;
    }
    const uint32_t lender = slot_lender(m, i, use_count, home);
    if (lender != ~0u) {
      inst_slot[i] = lent_slot_mark(lender);
      keys[--fixups] = i;
      continue;
    }
    keys[items++] = frame_key(in, i, true, use_count[i], 0);  // a slot's key is never ~0 (frame_key)
  }
  for (uint32_t k = first; k < items && allocas; ++k) {
    if (keys[k] >> 32) continue;
    const uint32_t i = static_cast<uint32_t>(keys[k]);
    const bool own = m.insts[i].slot_size && home[i] == kHomeSlot;
    keys[k] = frame_key(m.insts[i], i, own, use_count[i], static_cast<uint32_t>(alloca_mem[i]));
  }
  std::sort(keys + first, keys + items);
  int64_t off = args + kPoolBytes;
  for (uint32_t k = first; k < items; ++k) {
    const uint32_t i = static_cast<uint32_t>(keys[k]);
    // A value is an item only with a slot of its own (frame_key): only an alloca is asked.
    const bool is_alloca = m.insts[i].op == kOpAlloca;
    const bool own = !is_alloca || (m.insts[i].slot_size && home[i] == kHomeSlot);
    off = apply_step(frame_step(m.insts[i], own), off);
    frame_place(m, i, own, off, inst_slot, alloca_mem);
    // An alloca that is a frame address (kHomeNone: frame_shape, at offset 0) is addressed
    // where its memory is.
    if (is_alloca && home[i] == kHomeNone) inst_slot[i] = alloca_mem[i];
  }
  // The marked values take their lenders' slots; frame addresses, the memory of folded
  // loads and folded fields their displacement, where a slot's would be (slot_disp).
  // After every slot is placed: a folded field's aggregate may come later in layout.
  // Each depends only on placed slots (placed_slot follows marks to one), so the order
  // of the visits does not matter.
  for (uint32_t k = fixups; k < end; ++k) {
    const uint32_t i = static_cast<uint32_t>(keys[k]);
    uint32_t alloca_inst = 0;
    int64_t offset = 0;
    const FlatInst& in = m.insts[i];
    if (inst_slot[i] < 0) inst_slot[i] = placed_slot(inst_slot, i);
    else if (home[i] == kHomeNone && frame_shape(m, value_operand(i), &alloca_inst, &offset))
      inst_slot[i] = static_cast<int32_t>(alloca_mem[alloca_inst] - offset);
    else if (home[i] == kHomeLoad && frame_shape(m, m.operands[in.first_operand], &alloca_inst, &offset))
      inst_slot[i] = static_cast<int32_t>(alloca_mem[alloca_inst] - offset);
    else if (home[i] == kHomeField)
      inst_slot[i] = placed_slot(inst_slot, m.operands[in.first_operand].index) - static_cast<int32_t>(in.imm);
  }
  frame_size[fn] = static_cast<uint32_t>((off + 15) / 16 * 16);
}

// Stage 2 (per instruction): bytes and relocations.
KILN_HD inline void stamp_measure(const FlatModuleView& m, const StampLayout& l, uint32_t i, uint32_t* size,
                                  uint32_t* relocs, uint32_t* call_begin, uint32_t* call_end) {
  Emitter e{nullptr, 0, nullptr, 0};
  e.frame_bias = frame_bias_of(m, l, i);
  encode_inst(e, m, l, i);
  size[i] = e.pos;
  relocs[i] = e.reloc_count;
  call_begin[i] = e.call_begin;  // instruction-relative; used by invokes' LSDA entries
  call_end[i] = e.call_end;
}

// Whether instruction i's template jumps to blocks (jump): the only templates whose
// size depends on the layout.
KILN_HD inline bool jumps_to_blocks(const FlatInst& in) {
  return in.op == kOpBr || in.op == kOpCondBr || in.op == kOpSwitch || in.op == kOpInvoke;
}

// Stage 2b (per instruction): an instruction that jumps to blocks measured again, with
// l.long_inst_offset and l.long_block_offset the offsets of the long layout that
// stages 2 and 3 made; others keep their size.
KILN_HD inline void stamp_relax(const FlatModuleView& m, const StampLayout& l, uint32_t i, uint32_t* size,
                                uint32_t* relocs, uint32_t* call_begin, uint32_t* call_end) {
  if (!jumps_to_blocks(m.insts[i])) return;
  Emitter e{nullptr, 0, nullptr, 0};
  e.frame_bias = frame_bias_of(m, l, i);
  e.set_long_pos(l.long_inst_offset[i]);
  encode_inst(e, m, l, i);
  size[i] = e.pos;
  relocs[i] = e.reloc_count;
  call_begin[i] = e.call_begin;
  call_end[i] = e.call_end;
}

KILN_HD inline void stamp_measure_prologue(const FlatModuleView& m, const StampLayout& l, uint32_t fn, uint32_t* size) {
  Emitter e{nullptr, 0, nullptr, 0};
  encode_prologue(e, m, l, fn);
  size[fn] = e.pos;
}

// Stage 3 (per function): exclusive scans of the sizes inside the function. Offsets
// are function-relative; reloc_start is module-wide (functions keep theirs apart
// through fn_reloc_start, filled by the executor's scan over functions).
// kRelocs false: the code's offsets alone, what the second pass needs, as relax changes
// no instruction's relocation count (a jump makes none).
template <bool kRelocs>
KILN_HD inline void stamp_offsets(const FlatModuleView& m, uint32_t fn, const uint32_t* prologue_size,
                                  const uint32_t* size, const uint32_t* relocs, uint32_t* inst_offset,
                                  uint32_t* block_offset, uint32_t* reloc_start, uint32_t* code_size,
                                  uint32_t* reloc_count) {
  const FlatFunction& f = m.functions[fn];
  uint32_t pos = prologue_size[fn], rel = 0;
  for (uint32_t b = f.first_block; b < f.first_block + f.block_count; ++b) {
    block_offset[b] = pos;
    const FlatBlock& blk = m.blocks[b];
    const uint32_t block_end = blk.first_inst + blk.inst_count;  // read once: the stores may alias it
    for (uint32_t i = blk.first_inst; i < block_end; ++i) {
      inst_offset[i] = pos;
      pos += size[i];
      if (kRelocs) reloc_start[i] = rel, rel += relocs[i];
    }
  }
  code_size[fn] = pos;
  if (kRelocs) reloc_count[fn] = rel;
}

// Stage 4 (per instruction, and the prologue per function).
KILN_HD inline void stamp_encode(const FlatModuleView& m, const StampLayout& l, uint32_t i, uint8_t* fn_code,
                                 StampReloc* fn_relocs, const uint32_t* reloc_start) {
  Emitter e{fn_code, l.inst_offset[i], fn_relocs + reloc_start[i], 0};
  e.frame_bias = frame_bias_of(m, l, i);
  e.set_long_pos(l.long_inst_offset ? l.long_inst_offset[i] : 0);
  encode_inst(e, m, l, i);
}

KILN_HD inline void stamp_encode_prologue(const FlatModuleView& m, const StampLayout& l, uint32_t fn,
                                          uint8_t* fn_code) {
  Emitter e{fn_code, 0, nullptr, 0};
  encode_prologue(e, m, l, fn);
}

}  // namespace kiln
