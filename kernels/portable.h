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
