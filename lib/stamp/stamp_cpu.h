// The CPU executor of stamp's stages (kernels/stamp_stages.h): each stage runs over
// its index space (functions or instructions) on `threads` threads.
#pragma once
#include <cstdint>
#include <vector>

#include "flat_ir.h"
#include "stamp_emit.h"

namespace kiln {

struct StampOutput {
  std::vector<uint8_t> code;         // all functions, back to back
  std::vector<uint32_t> code_start;  // per function, into code
  std::vector<uint32_t> code_size;
  std::vector<StampReloc> relocs;     // all functions, back to back
  std::vector<uint32_t> reloc_start;  // per function, into relocs
  std::vector<uint32_t> reloc_count;
  std::vector<uint8_t> lsda;                    // exception tables of functions with a personality
  std::vector<uint32_t> lsda_start, lsda_size;  // per function (size 0: none)
  // Per instruction, where its code starts in its function's: what the line table of
  // stamp's DWARF is made of (stamp_dwarf.h).
  std::vector<uint32_t> inst_offset;
  // The frame stage's layout: per instruction an alloca's memory, per argument its
  // slot, per function the frame's size, as distances below the frame's top. What the
  // DWARF writer places variables by; empty where an executor keeps none (a batch's
  // cut, the GPU's), and the writer lays the frames out again (the same functions).
  std::vector<int32_t> alloca_mem, arg_slot;
  std::vector<uint32_t> frame_size;
  // Per-stage seconds, for receipts and replay reports.
  double frame = 0, measure = 0, offsets = 0, encode = 0, lsda_seconds = 0;
  uint64_t launches = 0;  // stage invocations over an index space
};

// How the per-function stages (uses, frame, offsets) run: a walk per function
// (stamp_stages.h), or the GPU's form, per instruction with scans (stamp_wide.h;
// on one thread here). Both give the same output.
enum class StampForm { per_function, wide };

StampOutput run_stamp_cpu(const FlatModuleView& m, unsigned threads = 1, StampForm form = StampForm::per_function);

}  // namespace kiln
