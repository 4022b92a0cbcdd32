#pragma once
// weft configuration: the only macros of the library (WEFT_*).

#if defined(__CUDACC__)
#  define WEFT_HOST_DEVICE __host__ __device__ inline
#  define WEFT_DEVICE __device__ inline
#else
/// Marks functions usable on host and device; plain `inline` without nvcc.
#  define WEFT_HOST_DEVICE inline
#  define WEFT_DEVICE inline
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
