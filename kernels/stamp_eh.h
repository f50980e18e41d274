// Exception tables: the LSDA (.gcc_except_table) of one function, built from its
// invokes' call positions and landing pads, as compact as LLVM's. Measures when out == nullptr.
//   header:   LPStart omitted; TType (indirect pcrel sdata4) when a catch or filter
//             clause exists; call sites as uleb128
//   calls:    in order, each invoke's call with its landing pad and action, and, before
//             it, the gap since the previous invoke's call with "no landing pad" where a
//             call that may unwind lies in that gap (likewise after the last invoke). A
//             return address in no entry makes the personality terminate, so only calls
//             need an entry: as LLVM leaves them, ranges with no call are left out. An
//             invoke with the previous one's landing pad and no call between them
//             extends that one's entry instead of starting one (a run, as in LLVM's).
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

// A call whose callee may unwind into this frame: every call (intrinsics included, to
// be safe) and a resume (_Unwind_Resume). Invokes have entries of their own; the
// library calls that templates make (memcpy, __udivti3, ...) never unwind.
KILN_HD inline bool may_unwind(const FlatInst& in) { return in.op == kOpCall || in.op == kOpResume; }

// One call-site entry: start, length, landing pad (0: none), action, uleb128 each.
KILN_HD inline uint32_t call_site_size(uint32_t start, uint32_t length, uint32_t pad, uint32_t action) {
  return uleb_size(start) + uleb_size(length) + uleb_size(pad) + uleb_size(action);
}
KILN_HD inline void put_call_site(LsdaWriter& w, uint32_t start, uint32_t length, uint32_t pad, uint32_t action) {
  w.uleb(start), w.uleb(length), w.uleb(pad), w.uleb(action);
}

// An invoke that extends the previous invoke's entry: it has the same landing pad
// (hence the same action) and no call that may unwind lies between their calls.
// `previous_end` is where the previous invoke's call ended (0: none), `last_call` 1 +
// the offset of the latest call before this invoke (0: none).
KILN_HD inline bool joins_run(uint32_t previous_end, uint32_t previous_pad, uint32_t last_call, uint32_t pad) {
  return previous_end != 0 && last_call <= previous_end && previous_pad == pad;
}

// A run's entries (the gap before its first invoke, where a call lies in it, then the
// calls of the run, from `begin` to `end`): their size, written at w when w.out is set.
// `cursor` is where the previous run ended (0: none).
KILN_HD inline uint32_t run_call_sites(uint32_t begin, uint32_t end, uint32_t pad, uint32_t action, uint32_t cursor,
                                       uint32_t last_call, LsdaWriter& w) {
  const bool gap = last_call > cursor;
  if (w.out) {  // the size is what is written
    const uint32_t at = w.pos;
    if (gap) put_call_site(w, cursor, begin - cursor, 0, 0);
    put_call_site(w, begin, end - begin, pad, action);
    return w.pos - at;
  }
  uint32_t size = call_site_size(begin, end - begin, pad, action);
  if (gap) size += call_site_size(cursor, begin - cursor, 0, 0);
  return size;
}

// Invoke i's landing pad: the unwind block's offset, and its action.
KILN_HD inline uint32_t invoke_pad(const FlatModuleView& m, uint32_t i, const uint32_t* block_offset) {
  const FlatInst& in = m.insts[i];
  return block_offset[m.operands[in.first_operand + in.operand_count - 1].index];
}
KILN_HD inline uint32_t invoke_action(const FlatModuleView& m, uint32_t i) {
  const FlatInst& in = m.insts[i];
  return action_of(landing_pad_kind(m, m.operands[in.first_operand + in.operand_count - 1].index));
}

// The header's size, and the header written (when w.out is set), for a call-site
// table of `table` bytes.
KILN_HD inline uint32_t after_ttype_field(uint32_t table, bool typed) {
  return 1 + uleb_size(table) + table + (typed ? 4 + 4 : 0);
}
KILN_HD inline uint32_t lsda_header_size(uint32_t table, bool typed) {
  return 1 + (typed ? 1 + uleb_size(after_ttype_field(table, typed)) : 1) + 1 + uleb_size(table);
}
KILN_HD inline void put_lsda_header(LsdaWriter& w, uint32_t table, bool typed) {
  w.byte(0xff);  // LPStart: the function's start
  if (typed) {
    w.byte(0x9b);  // TType: indirect | pcrel | sdata4
    w.uleb(after_ttype_field(table, typed));  // offset to the end of the type table
  } else {
    w.byte(0xff);
  }
  w.byte(0x01);  // call sites: uleb128
  w.uleb(table);
}
// The action and type tables, after the call sites (typed tables only): 9 bytes.
KILN_HD inline void put_lsda_types(LsdaWriter& w) {
  w.byte(0x01), w.byte(0x00);  // action 1: catch type 1, no next
  w.byte(0x7f), w.byte(0x00);  // action 3: filter -1 (the empty specification), no next
  w.u32(0);                    // type 1: catch-all
  w.byte(0x00);                // TType base; the empty exception specification list
}

// The opcodes function_call_sites looks at (may_unwind's, invokes, landing pads), as bits.
constexpr uint64_t kCallSiteOps = 1ull << kOpCall | 1ull << kOpResume | 1ull << kOpInvoke | 1ull << kOpLandingPad;
static_assert(kOpCount <= 64, "kCallSiteOps holds a bit per opcode");

// The function's call sites (their bytes), written at w when w.out is set; *typed says
// whether a catch or filter clause exists.
KILN_HD inline uint32_t function_call_sites(const FlatModuleView& m, uint32_t fn, const uint32_t* inst_offset,
                                            const uint32_t* block_offset, const uint32_t* call_begin,
                                            const uint32_t* call_end, uint32_t code_size, LsdaWriter& w,
                                            bool* typed) {
  const FlatFunction& f = m.functions[fn];
  uint32_t table = 0, cursor = 0, last_call = 0;
  // The open run: its first invoke's call start, its last one's end, its pad and action,
  // and the calls before it as they were when it began.
  uint32_t run_begin = 0, run_end = 0, run_pad = 0, run_action = 0, run_cursor = 0, run_last_call = 0;
  // The bounds read once and `typed` set once, after the loop: a store through a bool*
  // may alias anything, so the loop read them again for every instruction.
  const uint32_t first = f.first_inst, stop = f.first_inst + f.inst_count;
  const FlatInst* insts = m.insts;
  bool any_typed = false;
  for (uint32_t i = first; i < stop; ++i) {
    const FlatInst& in = insts[i];
    if (!((kCallSiteOps >> in.op) & 1)) continue;  // most instructions: one question
    any_typed |= in.op == kOpLandingPad && in.aux != kLandingPadCleanup;
    if (may_unwind(in)) last_call = inst_offset[i] + 1;
    if (in.op != kOpInvoke) continue;
    const uint32_t begin = inst_offset[i] + call_begin[i], end = inst_offset[i] + call_end[i];
    const uint32_t pad = invoke_pad(m, i, block_offset);
    if (!joins_run(run_end, run_pad, last_call, pad)) {
      if (run_end) table += run_call_sites(run_begin, run_end, run_pad, run_action, run_cursor, run_last_call, w);
      run_begin = begin, run_pad = pad, run_action = invoke_action(m, i), run_cursor = cursor,
      run_last_call = last_call;
    }
    run_end = cursor = end;
  }
  if (any_typed) *typed = true;
  if (run_end) table += run_call_sites(run_begin, run_end, run_pad, run_action, run_cursor, run_last_call, w);
  if (last_call > cursor) {  // calls after the last invoke unwind on without a landing pad
    table += call_site_size(cursor, code_size - cursor, 0, 0);
    if (w.out) put_call_site(w, cursor, code_size - cursor, 0, 0);
  }
  return table;
}

// A whole LSDA's size, from its call-site table's bytes.
KILN_HD inline uint32_t lsda_size(uint32_t table, bool typed) {
  return lsda_header_size(table, typed) + table + (typed ? 9 : 0);
}

// Function fn's call-site table: its bytes, and (*typed) whether a catch or filter
// clause exists. Measured once, so that writing (write_stamp_lsda) walks the function
// once more only.
KILN_HD inline uint32_t stamp_lsda_table(const FlatModuleView& m, uint32_t fn, const uint32_t* inst_offset,
                                         const uint32_t* block_offset, const uint32_t* call_begin,
                                         const uint32_t* call_end, uint32_t code_size, bool* typed) {
  LsdaWriter measure{nullptr, 0};
  *typed = false;
  return function_call_sites(m, fn, inst_offset, block_offset, call_begin, call_end, code_size, measure, typed);
}

// Function fn's LSDA written at out, its table measured already; the bytes written.
KILN_HD inline uint32_t write_stamp_lsda(const FlatModuleView& m, uint32_t fn, const uint32_t* inst_offset,
                                         const uint32_t* block_offset, const uint32_t* call_begin,
                                         const uint32_t* call_end, uint32_t code_size, uint32_t table, bool typed,
                                         uint8_t* out) {
  LsdaWriter w{out, 0};
  put_lsda_header(w, table, typed);
  bool seen = false;
  function_call_sites(m, fn, inst_offset, block_offset, call_begin, call_end, code_size, w, &seen);
  if (typed) put_lsda_types(w);
  return w.pos;
}

}  // namespace kiln
