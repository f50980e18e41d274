// stamp's stages as CUDA kernels: the same stage functions as the CPU executor
// (stamp_stages.h), one thread per instruction, block or function; the stages that
// walk a function on the CPU (uses, frame, offsets) run here in their wide form
// (stamp_wide.h), and so do the LSDAs (exception tables). Included by the CUDA executor (stamp_gpu.cu), which launches
// them. The measure and encode kernels can take instructions grouped by opcode (the executor's CUB sort), so that a
// warp's threads take the same template's branch.
#pragma once
#include "stamp_stages.h"
#include "stamp_wide.h"

namespace kiln {

// Sort keys for ordering instructions by opcode, and the identity permutation.
__global__ void stamp_opcode_keys_kernel(FlatModuleView m, uint16_t* opcode, uint32_t* index) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) opcode[i] = m.insts[i].op, index[i] = i;
}

// The selection of functions that need an LSDA (cub::DeviceSelect::If).
struct HasExceptionTable {
  const FlatFunction* functions;
  __host__ __device__ bool operator()(uint32_t fn) const { return (functions[fn].flags & kFnHasPersonality) != 0; }
};

// This thread's instruction, through `order` (null: thread t takes instruction t), or
// false past the last one.
__device__ inline bool thread_instruction(const FlatModuleView& m, const uint32_t* order, uint32_t* i) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= m.inst_count) return false;
  *i = order ? order[t] : t;
  return true;
}

__global__ void stamp_measure_kernel(FlatModuleView m, const uint32_t* order, StampLayout l, uint32_t* size,
                                     uint32_t* relocs, uint32_t* call_begin, uint32_t* call_end) {
  uint32_t i;
  if (thread_instruction(m, order, &i)) stamp_measure(m, l, i, size, relocs, call_begin, call_end);
}

__global__ void stamp_relax_kernel(FlatModuleView m, StampLayout l, uint32_t* size, uint32_t* relocs,
                                   uint32_t* call_begin, uint32_t* call_end) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) stamp_relax(m, l, i, size, relocs, call_begin, call_end);
}

__global__ void stamp_measure_prologue_kernel(FlatModuleView m, StampLayout l, uint32_t* size) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) stamp_measure_prologue(m, l, fn, size);
}

__global__ void stamp_encode_kernel(FlatModuleView m, const uint32_t* order, StampLayout l, uint8_t* code,
                                    const uint32_t* code_start, StampReloc* relocs, const uint32_t* fn_reloc_start,
                                    const uint32_t* reloc_start) {
  uint32_t i;
  if (!thread_instruction(m, order, &i)) return;
  uint32_t fn = m.blocks[m.insts[i].block].function;
  stamp_encode(m, l, i, code + code_start[fn], relocs + fn_reloc_start[fn], reloc_start);
}

__global__ void stamp_encode_prologue_kernel(FlatModuleView m, StampLayout l, uint8_t* code,
                                             const uint32_t* code_start) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) stamp_encode_prologue(m, l, fn, code + code_start[fn]);
}

// LSDAs in the wide form (stamp_wide.h).
__global__ void wide_invoke_key_kernel(FlatModuleView m, const uint32_t* inst_offset, const uint32_t* call_end,
                                       const uint32_t* block_offset, uint64_t* invoke_key, uint32_t* call_at) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) {
    invoke_key[i] = wide_invoke_key(m, i, inst_offset, call_end, block_offset);
    call_at[i] = wide_call_at(m, i, inst_offset);
  }
}

struct MaxOf {
  __host__ __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};
struct MaxOf64 {
  __host__ __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return a > b ? a : b; }
};

__global__ void wide_run_mark_kernel(FlatModuleView m, const uint64_t* invoke_key, const uint64_t* previous_key,
                                     const uint32_t* last_call, uint32_t* run_mark) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) run_mark[i] = wide_run_mark(i, invoke_key[i], previous_key[i], last_call[i]);
}

// run_end zeroed before.
__global__ void wide_run_end_kernel(FlatModuleView m, const uint64_t* invoke_key, const uint64_t* previous_key,
                                    const uint32_t* last_call, const uint32_t* run_scan, uint32_t* run_end) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_run_end(i, invoke_key[i], previous_key[i], last_call[i], run_scan[i], run_end);
}

// Entry bytes and typed counts, each with one more entry (0) for its exclusive sum's total.
__global__ void wide_lsda_counts_kernel(FlatModuleView m, WideLsdaScans scans, const uint32_t* inst_offset,
                                        const uint32_t* call_begin, uint32_t* bytes, uint32_t* typed) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) bytes[m.inst_count] = typed[m.inst_count] = 0;
  if (i < m.inst_count) wide_lsda_counts(m, i, scans, inst_offset, call_begin, bytes, typed);
}

// Over the selected functions (those with a personality): `selected` of them, their
// count on the device (written by the selection, so no copy to the host is needed).
__global__ void wide_lsda_size_kernel(FlatModuleView m, const uint32_t* selected, const uint32_t* selected_count,
                                      WideLsdaScans scans, const uint32_t* code_size, uint32_t* lsda_size) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= *selected_count) return;
  uint32_t fn = selected[t];
  lsda_size[fn] = wide_lsda_size(m, fn, scans, code_size[fn]);
}

__global__ void wide_lsda_function_kernel(FlatModuleView m, const uint32_t* selected, const uint32_t* selected_count,
                                          WideLsdaScans scans, const uint32_t* code_size, uint8_t* lsda,
                                          const uint32_t* lsda_start) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= *selected_count) return;
  uint32_t fn = selected[t];
  wide_lsda_function(m, fn, scans, code_size[fn], lsda + lsda_start[fn]);
}

__global__ void wide_lsda_invoke_kernel(FlatModuleView m, WideLsdaScans scans, const uint32_t* inst_offset,
                                        const uint32_t* call_begin, const uint32_t* code_size, uint8_t* lsda,
                                        const uint32_t* lsda_start) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_lsda_invoke(m, i, scans, inst_offset, call_begin, code_size, lsda, lsda_start);
}

// The per-function stages in their wide form (stamp_wide.h): one thread per
// instruction, block or function, with CUB scans between.
__global__ void wide_function_of_kernel(FlatModuleView m, uint32_t* fn_of) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) fn_of[i] = function_of(m, i);
}

__global__ void wide_count_uses_kernel(FlatModuleView m, uint32_t* use_count) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_count_uses(m, i, use_count);
}

__global__ void wide_home_kernel(FlatModuleView m, const uint32_t* use_count, uint8_t* home) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_home(m, i, use_count, home);
}

__global__ void wide_count_accesses_kernel(FlatModuleView m, const uint32_t* use_count, uint32_t* accesses) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_count_accesses(m, i, use_count, accesses);
}

// Each instruction's frame key (frame_key), and each function's range of them, the
// segments of the sort.
__global__ void wide_frame_key_kernel(FlatModuleView m, const uint32_t* use_count, const uint8_t* home,
                                      const uint32_t* accesses, uint64_t* keys) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) keys[i] = frame_key(m, i, use_count, home, accesses[i]);
}
__global__ void wide_function_range_kernel(FlatModuleView m, uint32_t* begin, uint32_t* end) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn >= m.function_count) return;
  begin[fn] = m.functions[fn].first_inst;
  end[fn] = m.functions[fn].first_inst + m.functions[fn].inst_count;
}

__global__ void wide_sorted_step_kernel(FlatModuleView m, const uint64_t* sorted, const uint32_t* use_count,
                                        const uint8_t* home, FrameStep* step, uint32_t* position) {
  uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < m.inst_count) wide_sorted_step(m, p, sorted, use_count, home, step, position);
}

__global__ void wide_frame_inst_kernel(FlatModuleView m, const uint32_t* use_count, const uint8_t* home,
                                       WideFrameScans scans, int32_t* inst_slot, int32_t* alloca_mem) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_frame_inst(m, i, use_count, home, scans, inst_slot, alloca_mem);
}

__global__ void wide_frame_function_kernel(FlatModuleView m, WideFrameScans scans, int32_t* arg_slot,
                                           uint32_t* frame_size) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) wide_frame_function(m, fn, scans, arg_slot, frame_size);
}

__global__ void wide_offsets_inst_kernel(FlatModuleView m, const uint32_t* prologue_size, const uint32_t* size_sum,
                                         const uint32_t* reloc_sum, uint32_t* inst_offset, uint32_t* reloc_start) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) wide_offsets_inst(m, i, prologue_size, size_sum, reloc_sum, inst_offset, reloc_start);
}

__global__ void wide_offsets_block_kernel(FlatModuleView m, const uint32_t* prologue_size, const uint32_t* size_sum,
                                          uint32_t* block_offset) {
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < m.block_count) wide_offsets_block(m, b, prologue_size, size_sum, block_offset);
}

__global__ void wide_offsets_function_kernel(FlatModuleView m, const uint32_t* prologue_size, const uint32_t* size_sum,
                                             const uint32_t* reloc_sum, uint32_t* code_size, uint32_t* reloc_count) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) wide_offsets_function(m, fn, prologue_size, size_sum, reloc_sum, code_size, reloc_count);
}

}  // namespace kiln
