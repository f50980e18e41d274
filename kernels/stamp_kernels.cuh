// stamp's stages as CUDA kernels: the same stage functions as the CPU executor
// (stamp_stages.h), one thread per instruction, block or function; the stages that
// walk a function on the CPU (uses, frame, offsets) run here in their wide form
// (stamp_wide.h). Included by the CUDA executor (stamp_gpu.cu), which launches them.
// The exception-table kernels, which still walk a function each, take the selected
// functions in the executor's order: largest first, so that a warp's threads have
// loops of similar length.
#pragma once
#include "stamp_stages.h"
#include "stamp_wide.h"

namespace kiln {

// Sort keys for ordering functions: instruction counts, and the identity permutation.
__global__ void stamp_function_sizes_kernel(FlatModuleView m, uint32_t* size, uint32_t* index) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) size[fn] = m.functions[fn].inst_count, index[fn] = fn;
}

// The selection of functions that need an exception table (cub::DeviceSelect::If).
struct HasExceptionTable {
  const FlatFunction* functions;
  __host__ __device__ bool operator()(uint32_t fn) const { return (functions[fn].flags & kFnHasPersonality) != 0; }
};

__global__ void stamp_measure_kernel(FlatModuleView m, StampLayout l, uint32_t* size, uint32_t* relocs,
                                     uint32_t* call_begin, uint32_t* call_end) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) stamp_measure(m, l, i, size, relocs, call_begin, call_end);
}

__global__ void stamp_measure_prologue_kernel(FlatModuleView m, StampLayout l, uint32_t* size) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) stamp_measure_prologue(m, l, fn, size);
}

__global__ void stamp_encode_kernel(FlatModuleView m, StampLayout l, uint8_t* code, const uint32_t* code_start,
                                    StampReloc* relocs, const uint32_t* fn_reloc_start, const uint32_t* reloc_start) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m.inst_count) return;
  uint32_t fn = m.blocks[m.insts[i].block].function;
  stamp_encode(m, l, i, code + code_start[fn], relocs + fn_reloc_start[fn], reloc_start);
}

__global__ void stamp_encode_prologue_kernel(FlatModuleView m, StampLayout l, uint8_t* code, const uint32_t* code_start) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) stamp_encode_prologue(m, l, fn, code + code_start[fn]);
}

// Over the selected functions (those with a personality): `selected` of them, their
// count on the device (written by the selection, so no copy to the host is needed).
__global__ void stamp_lsda_kernel(FlatModuleView m, const uint32_t* selected, const uint32_t* selected_count,
                                  const uint32_t* inst_offset, const uint32_t* block_offset, const uint32_t* call_begin,
                                  const uint32_t* call_end, const uint32_t* code_size, uint8_t* lsda,
                                  const uint32_t* lsda_start, uint32_t* lsda_size) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= *selected_count) return;
  uint32_t fn = selected[t];
  uint32_t n = stamp_lsda(m, fn, inst_offset, block_offset, call_begin, call_end, code_size[fn],
                          lsda ? lsda + lsda_start[fn] : nullptr);
  if (lsda_size) lsda_size[fn] = n;
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

// Each instruction's alloca step and slot bytes; slot_bytes has one more entry (0), so
// that its exclusive sum ends with the total.
__global__ void wide_frame_steps_kernel(FlatModuleView m, const uint32_t* use_count, const uint8_t* home,
                                        FrameStep* alloca_step, uint32_t* slot_bytes) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) slot_bytes[m.inst_count] = 0;
  if (i >= m.inst_count) return;
  alloca_step[i] = wide_alloca_step(m, i);
  slot_bytes[i] = wide_slot_bytes(m, i, use_count, home);
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
