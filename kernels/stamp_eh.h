// Exception tables: the LSDA (.gcc_except_table) of one function, built from its
// invokes' call positions and landing pads. Measures when out == nullptr.
//   header:   LPStart omitted; TType (indirect pcrel sdata4) when a catch or filter
//             clause exists; call sites as udata4
//   calls:    every byte range of the function is covered, in order: each invoke's
//             call instruction with its landing pad and action, and the gaps between
//             them with "no landing pad" (a personality terminates on an uncovered pc)
//   actions:  record 1 = catch-all (type 1), record 3 = empty filter (spec at 0)
//   types:    one entry, 0 (catch-all); then the empty exception specification
#pragma once
#include "flat_ir.h"
#include "portable.h"

namespace kiln {

struct LsdaWriter {
  uint8_t* out;
  uint32_t pos;
  KILN_HD void byte(uint32_t b) {
    if (out) out[pos] = static_cast<uint8_t>(b);
    ++pos;
  }
  KILN_HD void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) byte((v >> (8 * i)) & 0xff);
  }
  KILN_HD void uleb(uint32_t v) {
    do {
      uint32_t b = v & 0x7f;
      v >>= 7;
      byte(v ? (b | 0x80) : b);
    } while (v);
  }
};

KILN_HD inline uint32_t uleb_size(uint32_t v) {
  uint32_t n = 0;
  do {
    v >>= 7;
    ++n;
  } while (v);
  return n;
}

// The landing pad kind of an invoke's unwind block (its first non-phi instruction).
KILN_HD inline uint32_t landing_pad_kind(const FlatModuleView& m, uint32_t block) {
  const FlatBlock& b = m.blocks[block];
  for (uint32_t i = b.first_inst; i < b.first_inst + b.inst_count; ++i)
    if (m.insts[i].op == kOpLandingPad) return m.insts[i].aux;
  return kLandingPadCleanup;
}

KILN_HD inline uint32_t action_of(uint32_t kind) {
  return kind == kLandingPadCatchAll ? 1 : kind == kLandingPadEmptyFilter ? 3 : 0;
}

KILN_HD inline uint32_t stamp_lsda(const FlatModuleView& m, uint32_t fn, const uint32_t* inst_offset,
                                   const uint32_t* block_offset, const uint32_t* call_begin, const uint32_t* call_end,
                                   uint32_t code_size, uint8_t* out) {
  const FlatFunction& f = m.functions[fn];
  bool typed = false;
  uint32_t entries = 0, cursor = 0;
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
    const FlatInst& in = m.insts[i];
    if (in.op == kOpLandingPad && in.aux != kLandingPadCleanup) typed = true;
    if (in.op != kOpInvoke) continue;
    uint32_t begin = inst_offset[i] + call_begin[i];
    entries += begin > cursor ? 2 : 1;
    cursor = inst_offset[i] + call_end[i];
  }
  if (code_size > cursor) ++entries;
  const uint32_t kEntry = 13;  // start, length, landing pad (udata4 each), action (one uleb byte)
  uint32_t table = entries * kEntry;
  uint32_t after_ttype_field = 1 + uleb_size(table) + table + (typed ? 4 + 4 : 0);
  // Measuring needs only the sizes: the header (LPStart, TType and its offset, the
  // call-site encoding and the table's length), the table, the actions and types.
  if (!out) return 3 + (typed ? uleb_size(after_ttype_field) : 0) + uleb_size(table) + table + (typed ? 9 : 0);

  LsdaWriter w{out, 0};
  w.byte(0xff);  // LPStart: the function's start
  if (typed) {
    w.byte(0x9b);               // TType: indirect | pcrel | sdata4
    w.uleb(after_ttype_field);  // offset to the end of the type table
  } else {
    w.byte(0xff);
  }
  w.byte(0x03);  // call sites: udata4
  w.uleb(table);
  cursor = 0;
  for (uint32_t i = f.first_inst; i < f.first_inst + f.inst_count; ++i) {
    const FlatInst& in = m.insts[i];
    if (in.op != kOpInvoke) continue;
    uint32_t begin = inst_offset[i] + call_begin[i], end = inst_offset[i] + call_end[i];
    if (begin > cursor) {  // calls in between unwind on without a landing pad
      w.u32(cursor), w.u32(begin - cursor), w.u32(0), w.byte(0);
    }
    uint32_t unwind = m.operands[in.first_operand + in.operand_count - 1].index;
    w.u32(begin), w.u32(end - begin), w.u32(block_offset[unwind]), w.byte(action_of(landing_pad_kind(m, unwind)));
    cursor = end;
  }
  if (code_size > cursor) w.u32(cursor), w.u32(code_size - cursor), w.u32(0), w.byte(0);
  if (typed) {
    w.byte(0x01), w.byte(0x00);  // action 1: catch type 1, no next
    w.byte(0x7f), w.byte(0x00);  // action 3: filter -1 (the empty specification), no next
    w.u32(0);                    // type 1: catch-all
    w.byte(0x00);                // TType base; the empty exception specification list
  }
  return w.pos;
}

}  // namespace kiln
