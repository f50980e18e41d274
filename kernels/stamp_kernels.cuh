// stamp's stages as CUDA kernels: the same stage functions as the CPU executor
// (stamp_stages.h), one thread per function or per instruction. Included by the CUDA
// executor (stamp_gpu.cu), which launches them. Per-function kernels take their
// function through `order` (null: thread t takes function t): the executor passes the
// functions sorted largest first, so that the threads of a warp have similar loops.
#pragma once
#include "stamp_stages.h"

namespace kiln {

// This thread's function, or false past the last one.
__device__ inline bool thread_function(const FlatModuleView& m, const uint32_t* order, uint32_t* fn) {
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= m.function_count) return false;
  *fn = order ? order[t] : t;
  return true;
}

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

__global__ void stamp_uses_kernel(FlatModuleView m, const uint32_t* order, uint32_t* use_count, uint8_t* home) {
  uint32_t fn;
  if (thread_function(m, order, &fn)) stamp_uses(m, fn, use_count, home);
}

__global__ void stamp_frame_kernel(FlatModuleView m, const uint32_t* order, const uint32_t* use_count, const uint8_t* home,
                                   int32_t* inst_slot, int32_t* alloca_mem, int32_t* arg_slot, uint32_t* frame_size) {
  uint32_t fn;
  if (thread_function(m, order, &fn)) stamp_frame(m, fn, use_count, home, inst_slot, alloca_mem, arg_slot, frame_size);
}

__global__ void stamp_measure_kernel(FlatModuleView m, StampLayout l, uint32_t* size, uint32_t* relocs,
                                     uint32_t* call_begin, uint32_t* call_end) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m.inst_count) stamp_measure(m, l, i, size, relocs, call_begin, call_end);
}

__global__ void stamp_measure_prologue_kernel(FlatModuleView m, StampLayout l, uint32_t* size) {
  uint32_t fn = blockIdx.x * blockDim.x + threadIdx.x;
  if (fn < m.function_count) stamp_measure_prologue(m, l, fn, size);
}

__global__ void stamp_offsets_kernel(FlatModuleView m, const uint32_t* order, const uint32_t* prologue_size,
                                     const uint32_t* size, const uint32_t* relocs, uint32_t* inst_offset,
                                     uint32_t* block_offset, uint32_t* reloc_start, uint32_t* code_size,
                                     uint32_t* reloc_count) {
  uint32_t fn;
  if (thread_function(m, order, &fn))
    stamp_offsets(m, fn, prologue_size, size, relocs, inst_offset, block_offset, reloc_start, code_size, reloc_count);
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

}  // namespace kiln
