#include "stamp_cpu.h"

#include <algorithm>
#include <cstring>

#include "error.h"
#include "parallel.h"
#include "stamp_stages.h"
#include "stamp_wide.h"
#include "timeutil.h"

namespace kiln {

namespace {

// Runs body(i, worker) for i in [0, n): inline below 256 items or on one thread, else
// in one contiguous range per thread (kiln's parallel_for_workers, grain n / threads);
// worker (below `threads`) is for bodies that keep something per worker.
template <class Body>
void stage_for_workers(uint32_t n, unsigned threads, Body&& body) {
  if (threads <= 1 || n < 256) {
    for (uint32_t i = 0; i < n; ++i) body(i, 0u);
    return;
  }
  const size_t grain = (size_t(n) + threads - 1) / threads;
  parallel_for_workers(n, threads, grain, [&](size_t i, unsigned worker) { body(static_cast<uint32_t>(i), worker); });
}
// The same for body(i).
template <class Body>
void stage_for(uint32_t n, unsigned threads, Body&& body) {
  stage_for_workers(n, threads, [&](uint32_t i, unsigned) { body(i); });
}

// An instruction of an encode cache (below) not copied as it is (not kept, or with
// jumps to blocks): where its code and relocations begin in the cache and where they
// end (where they began, if it is not kept), and its jumps to blocks, `jump_count` of
// them from `jump_at`.
struct SpecialInst {
  uint32_t inst;
  bool kept;
  uint32_t code_at, code_end, reloc_at, reloc_end, jump_at, jump_count;
};

// What the measure stage encoded, kept for the encode stage (per-function form): each
// instruction's bytes and relocations (offsets from its start), one cache per worker.
// An instruction's code depends on the layout only where it jumps to blocks
// (stamp_emit.h), so it is copied to its place, not encoded a second time: with the
// jumps to blocks it made (StampJumpSite) made again for the final layout, and those
// measured again against the long layout (the relax stage) from where they are, not by
// encoding the instruction again (an invoke's whole call, a branch's phi copies). One
// that outgrew the room left (Emitter's code_room) is encoded again. The GPU's form
// encodes every instruction twice, and those that jump three times.
struct EncodeCache {
  std::vector<uint8_t> code;
  std::vector<StampReloc> relocs;
  std::vector<StampJumpSite> jumps;
  uint32_t code_used = 0, relocs_used = 0, jumps_used = 0;
  // The bytes and relocations measured, kept or not, prologues included: what
  // check_code_size sums.
  uint64_t code_measured = 0, relocs_measured = 0;
  // The special instructions, in order: relax and encode walk these and copy the runs
  // between them, not every instruction; the other instructions' places in the cache
  // need not be kept (a run lies from the end of one special to the next's start).
  std::vector<SpecialInst> special;
};
constexpr uint32_t kCacheRoom = 4096;     // bytes free before each instruction
constexpr uint32_t kCacheRelocRoom = 64;  // relocations free before each instruction
constexpr uint32_t kCacheJumpRoom = 256;  // jumps to blocks free before each instruction (a switch's cases)
// What a cache holds at most (the stages refuse a module of more code, after measuring
// it): the instructions past it are encoded again, and its offsets stay far from 2^32.
constexpr uint32_t kCacheLimit = uint32_t(256) << 20;

// Per function, which worker's cache holds its instructions (relocation offsets there
// are the cache's), where its code (from its prologue, if kept: prologue_kept) and
// relocations begin and end there, and its special instructions in that cache's
// `special` from special_begin to special_end.
struct CachedInsts {
  uint32_t *fn_worker, *code_begin, *code_end, *reloc_begin, *reloc_end, *special_begin, *special_end;
  uint8_t* prologue_kept;
};

template <class T>
void make_room(std::vector<T>& v, uint32_t used, uint32_t room) {
  if (v.size() - used < room) v.resize(std::max<size_t>(2 * v.size(), size_t(used) + room));
}

// Whether encode_inst emits nothing for an instruction, whatever the layout, from its
// home alone: a frame address (kHomeNone: an alloca's or a getelementptr's that
// is_frame_shape, where their templates return), a folded load or field (read_in_place)
// and kOpNop.
bool has_no_code(const FlatInst& in, uint8_t home) {
  return home == kHomeNone || read_in_place(home) || in.op == kOpNop;
}

// Stage 2 (stamp_measure) for function fn's instructions, their code kept in `c`. The
// instructions of a function that are kept one after the other lie one after the
// other in the cache, as they will in the function's code. One call a function, so
// that what the loop keeps (the cache's ends, the arrays) stays in registers: called
// per instruction, passing them took a tenth of the stages' instructions (callgrind).
// One Emitter writes at the cache's own positions (its room the cache's end) from one
// instruction to the next, where one made again for each instruction took a dozen
// stores: relocations come out at their offsets in the cache, and only the jumps'
// positions are made instruction-relative. The templates write only distances
// between positions (but a jump's, which is made again), so the bytes are those of an
// Emitter that starts at 0.
// The function's prologue comes first, its size into prologue_size[fn]: it depends on
// the frame alone (no relocations, no jumps to blocks), so the encode stage copies it.
// True where it is kept (it fits as an instruction must), else it is encoded again.
bool measure_function_into_cache(const FlatModuleView& m, const StampLayout& l, uint32_t fn, EncodeCache& c,
                                 uint32_t* prologue_size, uint32_t* size, uint32_t* relocs, uint32_t* call_begin,
                                 uint32_t* call_end) {
  const FlatFunction& f = m.functions[fn];
  const uint32_t end = f.first_inst + f.inst_count;
  // An argument's move into its slot takes less than kPrologueArgRoom bytes.
  constexpr uint32_t kPrologueArgRoom = 32;
  make_room(c.code, c.code_used, kCacheRoom + kPrologueArgRoom * f.arg_count);
  Emitter e{c.code.data(), c.code_used, c.relocs.data(), c.relocs_used};
  e.jumps = c.jumps.data(), e.jump_count = c.jumps_used;
  // What a kept instruction may reach (the cache's room and kCacheLimit), set with the room.
  uint32_t code_end = 0, relocs_end = 0;
  auto set_room = [&] {
    e.out = c.code.data(), e.relocs = c.relocs.data(), e.jumps = c.jumps.data();
    e.code_room = static_cast<uint32_t>(c.code.size()), e.reloc_room = static_cast<uint32_t>(c.relocs.size());
    e.jump_room = static_cast<uint32_t>(c.jumps.size());
    code_end = std::min(e.code_room, kCacheLimit), relocs_end = std::min(e.reloc_room, kCacheLimit);
  };
  set_room();
  encode_prologue(e, m, l, fn);  // sets e.frame_bias, the function's
  prologue_size[fn] = e.pos - c.code_used;
  uint64_t code_measured = prologue_size[fn], relocs_measured = 0;
  const bool prologue_kept = e.pos <= code_end;
  if (!prologue_kept) e.pos = c.code_used;
  const uint8_t* home = l.home;
  for (uint32_t i = f.first_inst; i < end; ++i) {
    const uint32_t code_used = e.pos, relocs_used = e.reloc_count, jumps_used = e.jump_count;
    // Read before encode_inst: after the call, for all the compiler knows, it may have
    // changed, and it was read again.
    const bool invoke = m.insts[i].op == kOpInvoke;
    // A third of the instructions, which encode_inst would return from at once, are not
    // asked (nor is the room checked for them): a kept instruction of no code.
    if (has_no_code(m.insts[i], home[i])) {
      size[i] = relocs[i] = 0;
      continue;
    }
    if (e.code_room - code_used < kCacheRoom || e.reloc_room - relocs_used < kCacheRelocRoom ||
        e.jump_room - jumps_used < kCacheJumpRoom) {
      make_room(c.code, code_used, kCacheRoom);
      make_room(c.relocs, relocs_used, kCacheRelocRoom);
      make_room(c.jumps, jumps_used, kCacheJumpRoom);
      set_room();
    }
    encode_inst(e, m, l, i);
    const uint32_t n = e.pos - code_used, r = e.reloc_count - relocs_used, k_jumps = e.jump_count - jumps_used;
    size[i] = n;
    relocs[i] = r;
    code_measured += n, relocs_measured += r;
    // Only an invoke's call is asked for (its LSDA entry, function_call_sites), and its
    // template sets where it is (encode_call): the others' are left as they are.
    if (invoke) {
      call_begin[i] = e.call_begin - code_used;  // instruction-relative, as in stamp_measure
      call_end[i] = e.call_end - code_used;
    }
    // Most instructions: kept, in a run. Without jumps the jumps' room holds as it did
    // before the instruction (the room check above), so it is not asked.
    if (!k_jumps && e.pos <= code_end && e.reloc_count <= relocs_end) continue;
    const bool keep = e.pos <= code_end && e.reloc_count <= relocs_end && e.jump_count <= e.jump_room;
    if (!keep) e.pos = code_used, e.reloc_count = relocs_used, e.jump_count = jumps_used;
    c.special.push_back(
        SpecialInst{i, keep, code_used, e.pos, relocs_used, e.reloc_count, jumps_used, keep ? k_jumps : 0});
    for (uint32_t k = jumps_used; k < e.jump_count; ++k) e.jumps[k].pos -= code_used;
  }
  c.code_used = e.pos, c.relocs_used = e.reloc_count, c.jumps_used = e.jump_count;
  c.code_measured += code_measured, c.relocs_measured += relocs_measured;
  return prologue_kept;
}

// The bytes by which a kept jump of an instruction at long_at in the long layout comes
// out shorter than there (jump: rel8 instead of rel32).
uint32_t bytes_saved(const StampLayout& l, const StampJumpSite& s, uint32_t long_at) {
  return jump_is_short(l, s.block, long_at + s.pos) ? long_jump_size(s.cc) - 2 : 0;
}
// Those of the jumps before instruction-relative position `pos` of the long layout.
uint32_t bytes_saved_before(const StampLayout& l, const StampJumpSite* s, uint32_t count, uint32_t long_at,
                            uint32_t pos) {
  uint32_t saved = 0;
  for (uint32_t k = 0; k < count && s[k].pos < pos; ++k) saved += bytes_saved(l, s[k], long_at);
  return saved;
}

// Stage 2b (stamp_relax) for function fn's instructions: a kept one measured again from
// its jumps (a jump that turns rel8 moves what follows it; a jump makes no relocation),
// the others that jump to blocks encoded again. What stamp_relax gives, without encoding.
// Only the function's special instructions: one kept without jumps keeps its size.
void relax_function_from_cache(const FlatModuleView& m, const StampLayout& l, uint32_t fn, const EncodeCache& c,
                               const CachedInsts& at, uint32_t* size, uint32_t* relocs, uint32_t* call_begin,
                               uint32_t* call_end) {
  for (uint32_t k = at.special_begin[fn]; k < at.special_end[fn]; ++k) {
    const SpecialInst& special = c.special[k];
    const uint32_t i = special.inst;
    if (!special.kept) {
      if (jumps_to_blocks(m.insts[i])) stamp_relax(m, l, i, size, relocs, call_begin, call_end);
      continue;
    }
    const StampJumpSite* s = c.jumps.data() + special.jump_at;
    const uint32_t n = special.jump_count, long_at = l.long_inst_offset[i];
    if (m.insts[i].op != kOpInvoke) {  // no call there that is asked for (measure_function_into_cache)
      for (uint32_t k = 0; k < n; ++k) size[i] -= bytes_saved(l, s[k], long_at);
      continue;
    }
    // What bytes_saved_before gives for call_begin, call_end (positions of the long
    // layout until then) and the whole instruction, in one walk over the jumps: each
    // jump asked once, where three walks asked each up to three times. The jumps lie
    // in the order they were made, by position.
    const uint32_t begin = call_begin[i], end = call_end[i];
    uint32_t before_begin = 0, before_end = 0, saved = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t b = bytes_saved(l, s[k], long_at);
      if (s[k].pos < begin) before_begin += b;
      if (s[k].pos < end) before_end += b;
      saved += b;
    }
    call_begin[i] = begin - before_begin;
    call_end[i] = end - before_end;
    size[i] -= saved;
  }
}

// A kept instruction with jumps to blocks into its place: the code between the jumps
// copied, each jump made again (jump, at its place in both layouts), and the
// relocations moved by what the jumps before them saved.
void encode_jumps_from_cache(const StampLayout& l, const SpecialInst& special, const EncodeCache& c, uint32_t size,
                             uint32_t relocs, uint8_t* fn_code, StampReloc* to) {
  const uint32_t i = special.inst;
  const StampJumpSite* s = c.jumps.data() + special.jump_at;
  const uint8_t* from = c.code.data() + special.code_at;
  const uint32_t n = special.jump_count, long_at = l.long_inst_offset[i];
  Emitter e{fn_code, l.inst_offset[i], nullptr, 0};
  uint32_t done = 0;  // bytes of the kept (long) code placed so far
  for (uint32_t k = 0; k < n; ++k) {
    std::memcpy(fn_code + e.pos, from + done, s[k].pos - done);
    e.pos += s[k].pos - done;
    e.set_long_pos(long_at + s[k].pos);
    jump(e, l, s[k].cc, s[k].block);
    done = s[k].pos + long_jump_size(s[k].cc);
  }
  std::memcpy(fn_code + e.pos, from + done, l.inst_offset[i] + size - e.pos);
  for (uint32_t k = 0; k < relocs; ++k) {
    to[k] = c.relocs[special.reloc_at + k];
    const uint32_t pos = to[k].offset - special.code_at;
    to[k].offset = l.inst_offset[i] + pos - bytes_saved_before(l, s, n, long_at, pos);
  }
}

// A run of instructions from `first`, kept one after the other without jumps, copied at
// once with their relocations: the cache's code from code_at to code_end, its
// relocations from reloc_at to reloc_end.
struct CachedRun {
  uint32_t first, code_at, code_end, reloc_at, reloc_end;
};
void copy_run_from_cache(const StampLayout& l, const CachedRun& run, const EncodeCache& c, const uint32_t* reloc_start,
                         uint8_t* fn_code, StampReloc* fn_relocs) {
  std::memcpy(fn_code + l.inst_offset[run.first], c.code.data() + run.code_at, run.code_end - run.code_at);
  const uint32_t delta = l.inst_offset[run.first] - run.code_at;
  const uint32_t from = run.reloc_at, count = run.reloc_end - run.reloc_at;
  StampReloc* to = fn_relocs + reloc_start[run.first];
  for (uint32_t k = 0; k < count; ++k) {
    to[k] = c.relocs[from + k];
    to[k].offset += delta;
  }
}

// Stage 4 (stamp_encode) for function fn: its prologue and each run of kept
// instructions without jumps (those between its special ones) copied at once, those
// with jumps made from the cache, the others (and a prologue not kept) encoded.
void encode_function_from_cache(const FlatModuleView& m, const StampLayout& l, uint32_t fn, const EncodeCache& c,
                                const CachedInsts& at, const uint32_t* prologue_size, const uint32_t* size,
                                const uint32_t* relocs, const uint32_t* reloc_start, uint8_t* fn_code,
                                StampReloc* fn_relocs) {
  const FlatFunction& f = m.functions[fn];
  uint32_t code_at = at.code_begin[fn];
  if (at.prologue_kept[fn]) {  // right before the first instruction, as in the function's code
    std::memcpy(fn_code, c.code.data() + code_at, prologue_size[fn]);
    code_at += prologue_size[fn];
  } else {
    stamp_encode_prologue(m, l, fn, fn_code);
  }
  // The run not placed yet: from the function's first instruction, then from each
  // special one's next.
  CachedRun run{f.first_inst, code_at, 0, at.reloc_begin[fn], 0};
  for (uint32_t k = at.special_begin[fn]; k < at.special_end[fn]; ++k) {
    const SpecialInst& special = c.special[k];
    const uint32_t i = special.inst;
    run.code_end = special.code_at, run.reloc_end = special.reloc_at;
    if (run.first < i) copy_run_from_cache(l, run, c, reloc_start, fn_code, fn_relocs);
    if (!special.kept) stamp_encode(m, l, i, fn_code, fn_relocs, reloc_start);
    else encode_jumps_from_cache(l, special, c, size[i], relocs[i], fn_code, fn_relocs + reloc_start[i]);
    run = CachedRun{i + 1, special.code_end, 0, special.reloc_end, 0};
  }
  run.code_end = at.code_end[fn], run.reloc_end = at.reloc_end[fn];
  if (run.first < f.first_inst + f.inst_count) copy_run_from_cache(l, run, c, reloc_start, fn_code, fn_relocs);
}

// A worker's call-site tables (CallSiteTables), back to back.
struct CallSiteBuffer {
  std::vector<uint8_t> bytes;
  size_t used = 0;
};

// The stages' working arrays. Every stage writes each element it owns before any stage
// reads it, so the arrays are kept per thread across modules and only ever grow:
// no allocation and no zeroing per module once warm.
struct StampScratch {
  std::vector<int32_t> inst_slot, alloca_mem, arg_slot;
  std::vector<uint32_t> frame_size, prologue_size, size, relocs, inst_offset, reloc_start, call_begin, call_end,
      block_offset, use_count, long_inst_offset, long_block_offset;
  std::vector<uint8_t> home;
  std::vector<uint64_t> frame_keys;
  std::vector<FrameStep> frame_scan;
  std::vector<uint32_t> accesses, position, size_sum, reloc_sum, call_at, last_call, run_mark, run_scan, run_end,
      lsda_bytes, lsda_typed, bytes_sum, typed_sum;
  std::vector<uint64_t> invoke_key, previous_key;
  std::vector<uint32_t> lsda_table, lsda_at, lsda_worker;
  std::vector<uint8_t> lsda_typed_fn;
  std::vector<CallSiteBuffer> call_sites;  // per worker
  std::vector<EncodeCache> caches;  // per worker
  std::vector<uint32_t> fn_worker, code_begin, code_end, reloc_begin, reloc_end, special_begin, special_end;
  std::vector<uint8_t> prologue_kept;
};
template <class T>
T* at_least(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace

namespace {

// The uses and frame stages in the GPU's form (stamp_wide.h), on one thread, with the
// scans the CUDA executor makes with CUB done as loops.
void wide_uses_and_frame(const FlatModuleView& m, StampScratch& s, uint32_t* use_count, uint8_t* home,
                         int32_t* inst_slot, int32_t* alloca_mem, int32_t* arg_slot, uint32_t* frame_size) {
  const uint32_t N = m.inst_count;
  std::fill(use_count, use_count + N, 0u);
  for (uint32_t i = 0; i < N; ++i) wide_count_uses(m, i, use_count);
  for (uint32_t i = 0; i < N; ++i) wide_home(m, i, use_count, home);
  uint32_t* accesses = at_least(s.accesses, N);
  std::fill(accesses, accesses + N, 0u);
  for (uint32_t i = 0; i < N; ++i) wide_count_accesses(m, i, use_count, accesses);
  uint64_t* keys = at_least(s.frame_keys, N);
  for (uint32_t i = 0; i < N; ++i) keys[i] = frame_key(m, i, use_count, home, accesses[i]);
  for (uint32_t fn = 0; fn < m.function_count; ++fn) {  // the GPU's segmented sort
    const FlatFunction& f = m.functions[fn];
    std::sort(keys + f.first_inst, keys + f.first_inst + f.inst_count);
  }
  FrameStep* frame_scan = at_least(s.frame_scan, N);
  uint32_t* position = at_least(s.position, N);
  for (uint32_t p = 0; p < N; ++p) wide_sorted_step(m, p, keys, use_count, home, frame_scan, position);
  for (uint32_t p = 1; p < N; ++p)  // an inclusive scan by function
    if (function_of(m, p) == function_of(m, p - 1)) frame_scan[p] = then(frame_scan[p - 1], frame_scan[p]);
  WideFrameScans scans{position, frame_scan};
  for (uint32_t i = 0; i < N; ++i) wide_frame_inst(m, i, use_count, home, scans, inst_slot, alloca_mem);
  for (uint32_t fn = 0; fn < m.function_count; ++fn) wide_frame_function(m, fn, scans, arg_slot, frame_size);
}

void wide_offsets(const FlatModuleView& m, StampScratch& s, const uint32_t* prologue_size, const uint32_t* size,
                  const uint32_t* relocs, uint32_t* inst_offset, uint32_t* block_offset, uint32_t* reloc_start,
                  uint32_t* code_size, uint32_t* reloc_count) {
  const uint32_t N = m.inst_count;
  uint32_t* size_sum = at_least(s.size_sum, size_t(N) + 1);
  uint32_t* reloc_sum = at_least(s.reloc_sum, size_t(N) + 1);
  size_sum[0] = reloc_sum[0] = 0;
  for (uint32_t i = 0; i < N; ++i) size_sum[i + 1] = size_sum[i] + size[i], reloc_sum[i + 1] = reloc_sum[i] + relocs[i];
  for (uint32_t i = 0; i < N; ++i)
    wide_offsets_inst(m, i, prologue_size, size_sum, reloc_sum, inst_offset, reloc_start);
  for (uint32_t b = 0; b < m.block_count; ++b) wide_offsets_block(m, b, prologue_size, size_sum, block_offset);
  for (uint32_t fn = 0; fn < m.function_count; ++fn)
    wide_offsets_function(m, fn, prologue_size, size_sum, reloc_sum, code_size, reloc_count);
}

// Exception tables in the GPU's form: sizes into out.lsda_size, then (after the
// caller's scan) the tables; `write` false measures only.
WideLsdaScans wide_lsda_scans(const FlatModuleView& m, StampScratch& s, const uint32_t* inst_offset,
                              const uint32_t* block_offset, const uint32_t* call_begin, const uint32_t* call_end) {
  const uint32_t N = m.inst_count;
  uint64_t* invoke_key = at_least(s.invoke_key, N);
  uint64_t* previous_key = at_least(s.previous_key, N);
  uint32_t* call_at = at_least(s.call_at, N);
  uint32_t* last_call = at_least(s.last_call, N);
  uint32_t* run_mark = at_least(s.run_mark, N);
  uint32_t* run_scan = at_least(s.run_scan, N);
  uint32_t* run_end = at_least(s.run_end, N);
  uint32_t* bytes = at_least(s.lsda_bytes, N);
  uint32_t* typed = at_least(s.lsda_typed, N);
  uint32_t* bytes_sum = at_least(s.bytes_sum, size_t(N) + 1);
  uint32_t* typed_sum = at_least(s.typed_sum, size_t(N) + 1);
  for (uint32_t i = 0; i < N; ++i) {
    invoke_key[i] = wide_invoke_key(m, i, inst_offset, call_end, block_offset);
    call_at[i] = wide_call_at(m, i, inst_offset);
  }
  auto first_of_function = [&m](uint32_t i) { return i == 0 || function_of(m, i) != function_of(m, i - 1); };
  for (uint32_t i = 0; i < N; ++i) {  // exclusive max-scans by function, from 0
    const bool first = first_of_function(i);
    previous_key[i] = first ? 0 : std::max(previous_key[i - 1], invoke_key[i - 1]);
    last_call[i] = first ? 0 : std::max(last_call[i - 1], call_at[i - 1]);
  }
  for (uint32_t i = 0; i < N; ++i) run_mark[i] = wide_run_mark(i, invoke_key[i], previous_key[i], last_call[i]);
  for (uint32_t i = 0; i < N; ++i) run_scan[i] = first_of_function(i) ? 0 : std::max(run_scan[i - 1], run_mark[i - 1]);
  std::fill(run_end, run_end + N, 0u);
  for (uint32_t i = 0; i < N; ++i) wide_run_end(i, invoke_key[i], previous_key[i], last_call[i], run_scan[i], run_end);
  const WideLsdaScans scans{invoke_key, previous_key, call_at, last_call, run_end, bytes_sum, typed_sum};
  for (uint32_t i = 0; i < N; ++i) wide_lsda_counts(m, i, scans, inst_offset, call_begin, bytes, typed);
  bytes_sum[0] = typed_sum[0] = 0;
  for (uint32_t i = 0; i < N; ++i)
    bytes_sum[i + 1] = bytes_sum[i] + bytes[i], typed_sum[i + 1] = typed_sum[i] + typed[i];
  return scans;
}

// The per-function form's call-site tables, written as they are measured (one walk of
// each function, where measuring and then writing took two) into their worker's
// buffer, then copied into the LSDA between its header and its type table.
struct CallSiteTables {
  uint32_t *table, *at, *worker;         // per function: bytes, where in its worker's buffer, which worker
  uint8_t* typed;                        // per function: whether a catch or filter clause exists
  std::vector<CallSiteBuffer>& buffers;  // per worker
};
// A function's table has at most two entries an invoke (a gap and the call) and one
// after the last, of four ULEB128s each, five bytes at most.
constexpr size_t kCallSiteEntryBytes = 4 * 5;

void write_call_sites(const FlatModuleView& m, uint32_t fn, unsigned worker, const uint32_t* inst_offset,
                      const uint32_t* block_offset, const uint32_t* call_begin, const uint32_t* call_end,
                      uint32_t code_size, CallSiteTables& t) {
  CallSiteBuffer& b = t.buffers[worker];
  const size_t room = kCallSiteEntryBytes * (2 * size_t(m.functions[fn].inst_count) + 1);
  if (b.bytes.size() - b.used < room) b.bytes.resize(std::max(2 * b.bytes.size(), b.used + room));
  LsdaWriter w{b.bytes.data() + b.used, 0};
  bool typed = false;
  t.table[fn] = function_call_sites(m, fn, inst_offset, block_offset, call_begin, call_end, code_size, w, &typed);
  t.typed[fn] = typed;
  t.at[fn] = static_cast<uint32_t>(b.used);
  t.worker[fn] = worker;
  b.used += t.table[fn];
}

// Function fn's LSDA at `out`, what write_stamp_lsda writes: the header, its call-site
// table, the type table; the bytes written.
uint32_t copy_lsda(uint32_t fn, const CallSiteTables& t, uint8_t* out) {
  LsdaWriter w{out, 0};
  put_lsda_header(w, t.table[fn], t.typed[fn]);
  std::memcpy(out + w.pos, t.buffers[t.worker[fn]].bytes.data() + t.at[fn], t.table[fn]);
  w.pos += t.table[fn];
  if (t.typed[fn]) put_lsda_types(w);
  return w.pos;
}

// Exception tables: measured, their starts summed, written (per function with a
// personality), in the chosen form.
void write_exception_tables(const FlatModuleView& m, StampScratch& scratch, StampForm form, unsigned threads,
                            const uint32_t* inst_offset, const uint32_t* block_offset, const uint32_t* call_begin,
                            const uint32_t* call_end, StampOutput& out) {
  const uint32_t F = m.function_count, N = m.inst_count;
  out.lsda_size.assign(F, 0);
  out.lsda_start.assign(F, 0);
  WideLsdaScans lsda_scans{};
  std::vector<CallSiteBuffer>& buffers = scratch.call_sites;
  buffers.resize(std::max<size_t>(buffers.size(), std::max(1u, threads)));
  for (CallSiteBuffer& b : buffers) b.used = 0;
  CallSiteTables tables{at_least(scratch.lsda_table, F), at_least(scratch.lsda_at, F), at_least(scratch.lsda_worker, F),
                        at_least(scratch.lsda_typed_fn, F), buffers};
  if (form == StampForm::wide) {
    lsda_scans = wide_lsda_scans(m, scratch, inst_offset, block_offset, call_begin, call_end);
    for (uint32_t fn = 0; fn < F; ++fn) out.lsda_size[fn] = wide_lsda_size(m, fn, lsda_scans, out.code_size[fn]);
  } else {
    stage_for_workers(F, threads, [&](uint32_t fn, unsigned worker) {
      if (!(m.functions[fn].flags & kFnHasPersonality)) return;
      write_call_sites(m, fn, worker, inst_offset, block_offset, call_begin, call_end, out.code_size[fn], tables);
      out.lsda_size[fn] = lsda_size(tables.table[fn], tables.typed[fn]);
    });
  }
  uint32_t lsda_total = 0;
  for (uint32_t fn = 0; fn < F; ++fn) {
    out.lsda_start[fn] = lsda_total;
    lsda_total += out.lsda_size[fn];
  }
  out.lsda.resize(lsda_total);
  if (form == StampForm::wide) {
    for (uint32_t fn = 0; fn < F; ++fn)
      if (out.lsda_size[fn])
        wide_lsda_function(m, fn, lsda_scans, out.code_size[fn], out.lsda.data() + out.lsda_start[fn]);
    for (uint32_t i = 0; i < N; ++i)
      wide_lsda_invoke(m, i, lsda_scans, inst_offset, call_begin, out.code_size.data(), out.lsda.data(),
                       out.lsda_start.data());
  } else {
    stage_for(F, threads, [&](uint32_t fn) {
      if (out.lsda_size[fn] && copy_lsda(fn, tables, out.lsda.data() + out.lsda_start[fn]) != out.lsda_size[fn])
        throw KilnError(kExitInternal, "", "an exception table came out another size than measured");
    });
  }
}

}  // namespace

// Offsets are 32-bit and the code is one buffer: a module whose measured code (or
// relocation count) would pass kMaxModuleCode is refused before anything is laid
// out, instead of wrapping an offset or asking for gigabytes (a flat IR file with an
// aggregate of 4 GB in one instruction asks for that).
static constexpr uint64_t kMaxModuleCode = uint64_t(256) << 20;

static void check_code_size(uint64_t code, uint64_t reloc_total) {
  if (code > kMaxModuleCode || reloc_total > kMaxModuleCode)
    throw KilnError(kExitBadInput, "", "its code would take more than 256 MiB (" + std::to_string(code) + " bytes)");
}
// The sums of the measured sizes, where the encode caches did not count them.
static void check_code_size(const FlatModuleView& m, const uint32_t* prologue_size, const uint32_t* size,
                            const uint32_t* relocs) {
  uint64_t code = 0, reloc_total = 0;
  for (uint32_t fn = 0; fn < m.function_count; ++fn) code += prologue_size[fn];
  for (uint32_t i = 0; i < m.inst_count; ++i) {
    code += size[i];
    reloc_total += relocs[i];
  }
  check_code_size(code, reloc_total);
}

StampOutput run_stamp_cpu(const FlatModuleView& m, unsigned threads, StampForm form) {
  StampOutput out;
  const uint32_t F = m.function_count, N = m.inst_count;
  thread_local StampScratch scratch;
  int32_t* inst_slot = at_least(scratch.inst_slot, N);
  int32_t* alloca_mem = at_least(scratch.alloca_mem, N);
  int32_t* arg_slot = at_least(scratch.arg_slot, m.arg_count);
  uint32_t* frame_size = at_least(scratch.frame_size, F);
  uint32_t* prologue_size = at_least(scratch.prologue_size, F);
  uint32_t* size = at_least(scratch.size, N);
  uint32_t* relocs = at_least(scratch.relocs, N);
  uint32_t* inst_offset = at_least(scratch.inst_offset, N);
  uint32_t* reloc_start = at_least(scratch.reloc_start, N);
  uint32_t* call_begin = at_least(scratch.call_begin, N);
  uint32_t* call_end = at_least(scratch.call_end, N);
  uint32_t* block_offset = at_least(scratch.block_offset, m.block_count);
  uint32_t* use_count = at_least(scratch.use_count, N);
  uint8_t* home = at_least(scratch.home, N);
  uint64_t* frame_keys = form == StampForm::wide ? nullptr : at_least(scratch.frame_keys, N);
  out.code_size.resize(F);
  out.reloc_count.resize(F);

  Stopwatch clock;
  if (form == StampForm::wide)
    wide_uses_and_frame(m, scratch, use_count, home, inst_slot, alloca_mem, arg_slot, frame_size);
  else
    stage_for(F, threads, [&](uint32_t fn) {
      stamp_uses(m, fn, use_count, home);
      stamp_frame(m, fn, use_count, home, frame_keys, inst_slot, alloca_mem, arg_slot, frame_size);
    });
  out.alloca_mem.assign(alloca_mem, alloca_mem + N);
  out.arg_slot.assign(arg_slot, arg_slot + m.arg_count);
  out.frame_size.assign(frame_size, frame_size + F);
  out.frame = clock.lap();

  StampLayout layout{inst_slot, alloca_mem, arg_slot, frame_size, nullptr, nullptr, home};
  const bool cached = form == StampForm::per_function;
  const CachedInsts at{at_least(scratch.fn_worker, F),   at_least(scratch.code_begin, F),
                       at_least(scratch.code_end, F),    at_least(scratch.reloc_begin, F),
                       at_least(scratch.reloc_end, F),   at_least(scratch.special_begin, F),
                       at_least(scratch.special_end, F), at_least(scratch.prologue_kept, F)};
  // This thread's caches, named here: in a worker's body `scratch` would be the worker
  // thread's own (thread_local), as the other arrays are passed as pointers.
  std::vector<EncodeCache>& caches = scratch.caches;
  if (cached) {
    caches.resize(std::max<size_t>(caches.size(), std::max(1u, threads)));
    for (EncodeCache& c : caches)
      c.code_used = c.relocs_used = c.jumps_used = 0, c.code_measured = c.relocs_measured = 0, c.special.clear();
    stage_for_workers(F, threads, [&](uint32_t fn, unsigned worker) {
      EncodeCache& c = caches[worker];
      at.fn_worker[fn] = worker;
      at.special_begin[fn] = static_cast<uint32_t>(c.special.size());
      at.code_begin[fn] = c.code_used, at.reloc_begin[fn] = c.relocs_used;
      at.prologue_kept[fn] =
          measure_function_into_cache(m, layout, fn, c, prologue_size, size, relocs, call_begin, call_end);
      at.special_end[fn] = static_cast<uint32_t>(c.special.size());
      at.code_end[fn] = c.code_used, at.reloc_end[fn] = c.relocs_used;
    });
  } else {
    stage_for(N, threads, [&](uint32_t i) { stamp_measure(m, layout, i, size, relocs, call_begin, call_end); });
    stage_for(F, threads, [&](uint32_t fn) { stamp_measure_prologue(m, layout, fn, prologue_size); });
  }
  if (cached) {
    uint64_t code = 0, reloc_total = 0;
    for (const EncodeCache& c : caches) code += c.code_measured, reloc_total += c.relocs_measured;
    check_code_size(code, reloc_total);
  } else {
    check_code_size(m, prologue_size, size, relocs);
  }
  out.measure = clock.lap();

  // Offsets twice: of the long layout (every jump rel32), then, with the jumps measured
  // again against it (stamp_relax), the final ones.
  uint32_t* long_inst_offset = at_least(scratch.long_inst_offset, N);
  uint32_t* long_block_offset = at_least(scratch.long_block_offset, m.block_count);
  auto offsets = [&](uint32_t* inst_at, uint32_t* block_at) {
    if (form == StampForm::wide)
      wide_offsets(m, scratch, prologue_size, size, relocs, inst_at, block_at, reloc_start, out.code_size.data(),
                   out.reloc_count.data());
    else
      stage_for(F, threads, [&](uint32_t fn) {
        stamp_offsets<true>(m, fn, prologue_size, size, relocs, inst_at, block_at, reloc_start, out.code_size.data(),
                            out.reloc_count.data());
      });
  };
  layout.long_inst_offset = long_inst_offset;
  layout.long_block_offset = long_block_offset;
  if (cached) {
    // All three per function, while its arrays are at hand: a function's jumps stay in it.
    stage_for(F, threads, [&](uint32_t fn) {
      stamp_offsets<true>(m, fn, prologue_size, size, relocs, long_inst_offset, long_block_offset, reloc_start,
                          out.code_size.data(), out.reloc_count.data());
      relax_function_from_cache(m, layout, fn, caches[at.fn_worker[fn]], at, size, relocs, call_begin, call_end);
      stamp_offsets<false>(m, fn, prologue_size, size, relocs, inst_offset, block_offset, reloc_start,
                           out.code_size.data(), out.reloc_count.data());
    });
  } else {
    offsets(long_inst_offset, long_block_offset);
    stage_for(N, threads, [&](uint32_t i) { stamp_relax(m, layout, i, size, relocs, call_begin, call_end); });
    offsets(inst_offset, block_offset);
  }
  // Exclusive scans over functions place each function's code and relocations.
  out.code_start.resize(F);
  out.reloc_start.resize(F);
  uint32_t code_total = 0, reloc_total = 0;
  for (uint32_t fn = 0; fn < F; ++fn) {
    out.code_start[fn] = code_total;
    out.reloc_start[fn] = reloc_total;
    code_total += out.code_size[fn];
    reloc_total += out.reloc_count[fn];
  }
  out.inst_offset.assign(inst_offset, inst_offset + N);
  out.offsets = clock.lap();

  out.code.resize(code_total);
  out.relocs.resize(reloc_total);
  layout.inst_offset = inst_offset;
  layout.block_offset = block_offset;
  // Instructions find their function through their block.
  if (cached) {
    stage_for(F, threads, [&](uint32_t fn) {
      encode_function_from_cache(m, layout, fn, caches[at.fn_worker[fn]], at, prologue_size, size, relocs, reloc_start,
                                 out.code.data() + out.code_start[fn], out.relocs.data() + out.reloc_start[fn]);
    });
  } else {
    stage_for(N, threads, [&](uint32_t i) {
      uint32_t fn = m.blocks[m.insts[i].block].function;
      stamp_encode(m, layout, i, out.code.data() + out.code_start[fn], out.relocs.data() + out.reloc_start[fn],
                   reloc_start);
    });
    stage_for(F, threads,
              [&](uint32_t fn) { stamp_encode_prologue(m, layout, fn, out.code.data() + out.code_start[fn]); });
  }
  out.encode = clock.lap();

  write_exception_tables(m, scratch, form, threads, inst_offset, block_offset, call_begin, call_end, out);
  out.lsda_seconds = clock.lap();
  out.launches = 10;
  return out;
}

}  // namespace kiln
