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

// bfloat16 as its 16 bits: the upper half of a float's bits, rounded to nearest even (as PyTorch and
// cuda_bf16.h round); a NaN stays a quiet NaN of the same sign.
typedef unsigned short bfloat16_bits;
__device__ __forceinline__ bfloat16_bits to_bfloat16(float v) {
    const unsigned int u = __float_as_uint(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bfloat16_bits)((u >> 16) | 0x40u);
    return (bfloat16_bits)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
