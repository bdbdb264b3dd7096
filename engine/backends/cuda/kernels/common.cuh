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

// The bilinear sample of a plane at (y, x), as RoIAlign and its position-sensitive form take it: 0 outside
// [-1, H] x [-1, W]; coordinates clamped to the plane, the last row/column repeated. Gives the four corners and
// their weights.
__device__ __forceinline__ bool bilinear_taps(index_t H, index_t W, T y, T x, index_t* at, T* weight) {
    if (y < (T)-1 || y > (T)H || x < (T)-1 || x > (T)W) return false;
    if (y <= (T)0) y = 0;
    if (x <= (T)0) x = 0;
    index_t y0 = (index_t)y, x0 = (index_t)x, y1, x1;
    if (y0 >= H - 1) { y1 = y0 = H - 1; y = (T)y0; } else { y1 = y0 + 1; }
    if (x0 >= W - 1) { x1 = x0 = W - 1; x = (T)x0; } else { x1 = x0 + 1; }
    const T ly = y - (T)y0, lx = x - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;
    at[0] = y0 * W + x0; at[1] = y0 * W + x1; at[2] = y1 * W + x0; at[3] = y1 * W + x1;
    weight[0] = hy * hx; weight[1] = hy * lx; weight[2] = ly * hx; weight[3] = ly * lx;
    return true;
}
