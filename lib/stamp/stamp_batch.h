// A batch: several flat modules as one, their arrays back to back in one block of
// memory, so that stamp's stages run over all of them at once (one upload, one launch
// per stage, one download on the GPU) and each module's output is then cut back out.
// Every index into an array (functions, blocks, instructions, operands, arguments) is
// rebased; symbol indices stay each module's own, since a relocation names a symbol
// of the module its function belongs to. The stages' results for a module do not
// depend on what else is in its batch, so a cut output equals run_stamp_cpu's on the
// module alone, byte for byte (tests/unit/test_stamp_batch.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stamp_cpu.h"

namespace kiln {

struct StampBatchLayout {
  size_t modules = 0;
  // Per module and one past the last: where its part of each array starts.
  std::vector<uint32_t> first_function, first_block, first_inst, first_operand, first_arg;
  // The block: functions, blocks, instructions, operands, argument widths, each
  // 16-byte aligned, at these byte offsets; `bytes` in all.
  size_t array_offset[5] = {0, 0, 0, 0, 0};
  size_t bytes = 0;
  uint32_t function_count() const { return first_function.back(); }
  uint32_t inst_count() const { return first_inst.back(); }
};

// Sizes and places the batch. Throws KilnError when it would hold 2^32 or more of
// anything (indices are 32-bit).
StampBatchLayout plan_stamp_batch(const FlatModuleView* modules, size_t count);

// Writes the batch into `block` (layout.bytes bytes, 16-byte aligned: pinned staging
// on the way to a GPU, or host memory) and returns a view of it there.
FlatModuleView write_stamp_batch(const FlatModuleView* modules, const StampBatchLayout& layout, uint8_t* block);

// A view of the stages' output for a batch: host memory, possibly pinned staging.
struct StampOutputView {
  const uint8_t* code;
  const uint32_t *code_start, *code_size;
  const StampReloc* relocs;
  const uint32_t *reloc_start, *reloc_count;
  const uint8_t* lsda;
  const uint32_t *lsda_start, *lsda_size;
  const uint32_t* inst_offset;  // per instruction of the batch, function-relative
};
StampOutputView view_of(const StampOutput& out);

// Module k's output: what run_stamp_cpu would have given for that module alone
// (per-stage times and launch counts are the batch's business and stay zero).
StampOutput cut_stamp_output(const StampOutputView& batch, const StampBatchLayout& layout, size_t k);

// The CPU executor over a batch: plan, write into host memory, run, cut.
std::vector<StampOutput> run_stamp_cpu_batch(const FlatModuleView* modules, size_t count, unsigned threads = 1);

}  // namespace kiln
