// stamp's stages as plain functions over the flat arrays. Each is independent per
// function or per instruction, so the CPU executor runs them on threads and the CUDA
// executor as kernels, with identical results:
//   0. uses     (per function)    where results live: a slot, only rax, or nowhere
//   1. frame    (per function)    slot offsets: one slot per stored value, aligned allocas
//   2. measure  (per instruction) exact byte length and relocation count, every jump rel32
//   3. offsets  (per function)    exclusive scans: instruction, block, relocation offsets
//   2b. relax   (per instruction) jumps measured again against stage 3's long layout,
//               then 3 again (jump, in stamp_emit.h)
//   4. encode   (per instruction) bytes into the function's code, relocation records
#pragma once
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

// The home stage 0 gives instruction i before it looks at its neighbours and at the
// pool: nowhere (kHomeNone, kHomeLoad, kHomeField) or a slot.
KILN_HD inline uint8_t first_home(const FlatModuleView& m, uint32_t i, const uint32_t* use_count) {
  switch (m.insts[i].op) {  // only these can be anything but a slot
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
  switch (in.op) {
    case kOpPhi:
    case kOpVector:
    case kOpOverflow:
    case kOpCmpXchg:
    case kOpLandingPad:
    case kOpWide:
    case kOpInsert:
      return false;
    default:
      break;
  }
  if (in.width == 0 || in.width > 64 || in.slot_size == 0 || in.slot_size > 8) return false;
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

// The distance below rbp of the pool slot of instruction i, the function's `at`-th
// (counted within its function, so that a module's code does not depend on the batch it
// is emitted in): the pool comes right after the arguments' slots.
KILN_HD inline int32_t pool_slot(uint32_t args_bytes, uint32_t at) {
  return static_cast<int32_t>(args_bytes + 8 * (1 + at % kPoolSlots));
}

// Stage 0: where each result lives (ResultHome). A frame address (frame_shape) needs
// no code and no slot: each use recomputes it or addresses memory through it. Nor do a
// load that folds into its user (load_folds) and a field read in place (field_folds).
// A result used once, by the next instruction with code (next_with_code), which takes
// that operand first into rax (rax_operand), never goes to memory. Of the rest,
// short-lived scalars share the pool's slots (pooled). use_count is scratch (per
// instruction).
KILN_HD inline void stamp_uses(const FlatModuleView& m, uint32_t fn, uint32_t* use_count, uint8_t* home) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t end = f.first_inst + f.inst_count;
  for (uint32_t i = f.first_inst; i < end; ++i) use_count[i] = 0;
  for (uint32_t i = f.first_inst; i < end; ++i) {
    const FlatInst& in = m.insts[i];
    for (uint32_t k = 0; k < in.operand_count; ++k) {
      const FlatOperand& op = m.operands[in.first_operand + k];
      if (op.kind == kOperandValue) ++use_count[op.index];
    }
  }
  for (uint32_t i = f.first_inst; i < end; ++i) home[i] = first_home(m, i, use_count);
  for (uint32_t i = f.first_inst; i + 1 < end; ++i) {
    if (home[i] != kHomeSlot || use_count[i] != 1 || !result_in_rax(m.insts[i])) continue;
    const uint32_t next = next_with_code(m, i);
    const FlatBlock& b = m.blocks[m.insts[i].block];
    if (next >= b.first_inst + b.inst_count) continue;
    int k = rax_operand(m, home, next);
    if (k < 0) continue;
    const FlatOperand& op = m.operands[m.insts[next].first_operand + static_cast<uint32_t>(k)];
    if (op.kind == kOperandValue && op.index == i && rax_holds(m, home, next, op)) home[i] = kHomeRax;
  }
  for (uint32_t i = f.first_inst; i < end; ++i)
    if (home[i] == kHomeSlot && pooled(m, i, use_count)) home[i] = kHomePool;
}

// Stage 1. Writes inst_slot/alloca_mem for the function's instructions, arg_slot for
// its arguments, and its frame size (a multiple of 16). use_count and home come from
// stage 0. Below the arguments' slots comes the pool, then the allocas' memory, then
// the slots of the values that are not in the pool: on regex's corpus allocas before
// those values give slightly smaller code (more 8-bit displacements) than the other
// way round.
// The first part of stage 1, which the DWARF writer also runs to find variables in
// the frame: arguments' slots, the pool, then allocas' memory (zero for other
// instructions), as distances below rbp. Returns the frame bytes they take.
KILN_HD inline uint32_t stamp_frame_allocas(const FlatModuleView& m, uint32_t fn, int32_t* alloca_mem, int32_t* arg_slot) {
  const FlatFunction& f = m.functions[fn];
  uint32_t off = 0;
  for (uint32_t a = 0; a < f.arg_count; ++a) {
    off += arg_slot_bytes(m.arg_widths[f.first_arg + a]);
    arg_slot[f.first_arg + a] = static_cast<int32_t>(off);
  }
  off += kPoolBytes;  // the pool (pool_slot)
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
    const FlatInst& in = m.insts[i];
    alloca_mem[i] = 0;
    if (in.op == kOpAlloca) {
      // rbp is 16-byte aligned; beyond that the address is aligned at run time
      // (encode_inst), so the area gets align - 16 bytes of slack.
      uint32_t align = in.imm > 8 ? static_cast<uint32_t>(in.imm) : 8;
      uint32_t bytes = in.aux32 + (align > 16 ? align - 16 : 0);
      uint32_t step = align > 16 ? 16 : align;
      off = (off + bytes + step - 1) / step * step;
      alloca_mem[i] = static_cast<int32_t>(off);
    }
  }
  return off;
}

KILN_HD inline void stamp_frame(const FlatModuleView& m, uint32_t fn, const uint32_t* use_count, const uint8_t* home,
                                int32_t* inst_slot, int32_t* alloca_mem, int32_t* arg_slot, uint32_t* frame_size) {
  const FlatFunction& f = m.functions[fn];
  uint32_t off = stamp_frame_allocas(m, fn, alloca_mem, arg_slot);
  const uint32_t args = f.arg_count ? static_cast<uint32_t>(arg_slot[f.first_arg + f.arg_count - 1]) : 0;
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
    const FlatInst& in = m.insts[i];
    inst_slot[i] = 0;
    if (home[i] == kHomePool) {
      inst_slot[i] = pool_slot(args, i - f.first_inst);
      continue;
    }
    if (in.slot_size && home[i] == kHomeSlot) {
      // An insertvalue into an aggregate used by nothing else writes in place: it
      // takes over that aggregate's slot (defined earlier in layout, same size, not a
      // phi's). Every later use of either is dominated by the insert, so no read of
      // the old aggregate can follow the write.
      if (in.op == kOpInsert) {
        const FlatOperand& src = m.operands[in.first_operand];
        if (src.kind == kOperandValue && src.index < i && use_count[src.index] == 1 && home[src.index] == kHomeSlot &&
            m.insts[src.index].op != kOpPhi && m.insts[src.index].slot_size == in.slot_size) {
          inst_slot[i] = inst_slot[src.index];
          continue;
        }
      }
      off = (off + in.slot_size + 7) / 8 * 8;
      inst_slot[i] = static_cast<int32_t>(off);
    }
  }
  // Frame addresses, the memory of folded loads and folded fields: their displacement,
  // where a slot's would be (slot_disp).
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
    uint32_t alloca_inst = 0;
    int64_t offset = 0;
    if (home[i] == kHomeNone && frame_shape(m, value_operand(i), &alloca_inst, &offset))
      inst_slot[i] = static_cast<int32_t>(alloca_mem[alloca_inst] - offset);
    else if (home[i] == kHomeLoad && frame_shape(m, m.operands[m.insts[i].first_operand], &alloca_inst, &offset))
      inst_slot[i] = static_cast<int32_t>(alloca_mem[alloca_inst] - offset);
    else if (home[i] == kHomeField)  // the aggregate may come later in layout: this pass
      inst_slot[i] = inst_slot[m.operands[m.insts[i].first_operand].index] - static_cast<int32_t>(m.insts[i].imm);
  }
  frame_size[fn] = (off + 15) / 16 * 16;
}

// Stage 2 (per instruction): bytes and relocations.
KILN_HD inline void stamp_measure(const FlatModuleView& m, const StampLayout& l, uint32_t i, uint32_t* size,
                                  uint32_t* relocs, uint32_t* call_begin, uint32_t* call_end) {
  Emitter e{nullptr, 0, nullptr, 0};
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
  e.long_pos = l.long_inst_offset[i];
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
KILN_HD inline void stamp_offsets(const FlatModuleView& m, uint32_t fn, const uint32_t* prologue_size,
                                  const uint32_t* size, const uint32_t* relocs, uint32_t* inst_offset,
                                  uint32_t* block_offset, uint32_t* reloc_start, uint32_t* code_size,
                                  uint32_t* reloc_count) {
  const FlatFunction& f = m.functions[fn];
  uint32_t pos = prologue_size[fn], rel = 0;
  for (uint32_t b = f.first_block; b < f.first_block + f.block_count; ++b) {
    block_offset[b] = pos;
    const FlatBlock& blk = m.blocks[b];
    for (uint32_t i = blk.first_inst; i < blk.first_inst + blk.inst_count; ++i) {
      inst_offset[i] = pos;
      reloc_start[i] = rel;
      pos += size[i];
      rel += relocs[i];
    }
  }
  code_size[fn] = pos;
  reloc_count[fn] = rel;
}

// Stage 4 (per instruction, and the prologue per function).
KILN_HD inline void stamp_encode(const FlatModuleView& m, const StampLayout& l, uint32_t i, uint8_t* fn_code,
                                 StampReloc* fn_relocs, const uint32_t* reloc_start) {
  Emitter e{fn_code, l.inst_offset[i], fn_relocs + reloc_start[i], 0};
  e.long_pos = l.long_inst_offset ? l.long_inst_offset[i] : 0;
  encode_inst(e, m, l, i);
}

KILN_HD inline void stamp_encode_prologue(const FlatModuleView& m, const StampLayout& l, uint32_t fn,
                                          uint8_t* fn_code) {
  Emitter e{fn_code, 0, nullptr, 0};
  encode_prologue(e, m, l, fn);
}

}  // namespace kiln
