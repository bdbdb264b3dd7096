// Included by source.py in every kernel source of the CUDA backend, after the typedefs of T (the
// element type) and A (the type sums are accumulated in).
typedef long long index_t;

// Every index in [0, n) once, whatever the grid: each thread strides by the grid's thread count.
#define GRID_LOOP(i, n) \
    for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (index_t)blockDim.x * gridDim.x)

__device__ __forceinline__ index_t imin(index_t a, index_t b) { return a < b ? a : b; }
__device__ __forceinline__ index_t imax(index_t a, index_t b) { return a > b ? a : b; }

// NVRTC compiles without the C library's headers.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
