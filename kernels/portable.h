// Lets stage code compile both as ordinary C++ (CPU threads) and as CUDA device code.
// Stage functions: no virtual calls, no allocation, no std containers, no exceptions.
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define KILN_HD __host__ __device__
#define KILN_ALWAYS_INLINE __forceinline__
#else
#define KILN_HD
#define KILN_ALWAYS_INLINE __attribute__((always_inline)) inline
#endif
// Kept out of line on the CPU: the templates encode_inst dispatches to, so that what
// each keeps in registers is saved and restored in it alone, not in the dispatch for
// every instruction. Device code is left to nvcc.
#if defined(__CUDA_ARCH__) || !defined(__GNUC__)
#define KILN_CPU_NOINLINE
#else
#define KILN_CPU_NOINLINE __attribute__((noinline))
#endif
