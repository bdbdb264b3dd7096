// Convolution kernels: im2col and col2im around cuBLAS GEMMs, the output pass with the fused epilogue,
// and direct depthwise convolution, forward beside backward.
//
// Geometry arguments: the input is N x C x H x W, the kernel KH x KW with strides SH, SW, dilations
// DH, DW and top/left padding PT, PL; the output plane is OH x OW. Column matrices are
// (C*KH*KW) x (N*OH*OW): row (c*KH + i)*KW + j, column (n*OH + oh)*OW + ow.

// col[row][column] = x[n][c][oh*SH - PT + i*DH][ow*SW - PL + j*DW], 0 in the padding; stored as C, the
// element type or, for the bfloat16 GEMMs of autocast, bfloat16 bits.
__device__ __forceinline__ void store(T* p, T v) { *p = v; }
__device__ __forceinline__ void store(bfloat16_bits* p, T v) { *p = to_bfloat16((float)v); }

template <typename C>
__device__ void im2col_into(const T* __restrict__ x, C* __restrict__ col, index_t N, index_t Cin, index_t H,
                            index_t W, index_t KH, index_t KW, index_t SH, index_t SW, index_t PT, index_t PL,
                            index_t DH, index_t DW, index_t OH, index_t OW) {
    const index_t L = N * OH * OW;
    GRID_LOOP(idx, Cin * KH * KW * L) {
        const index_t column = idx % L, row = idx / L;
        const index_t ow = column % OW, oh = (column / OW) % OH, n = column / (OW * OH);
        const index_t j = row % KW, i = (row / KW) % KH, c = row / (KW * KH);
        const index_t h = oh * SH - PT + i * DH, w = ow * SW - PL + j * DW;
        store(col + idx, (h >= 0 && h < H && w >= 0 && w < W) ? x[((n * Cin + c) * H + h) * W + w] : (T)0);
    }
}

extern "C" __global__ void im2col(const T* __restrict__ x, T* __restrict__ col, index_t N, index_t C, index_t H,
                                  index_t W, index_t KH, index_t KW, index_t SH, index_t SW, index_t PT,
                                  index_t PL, index_t DH, index_t DW, index_t OH, index_t OW) {
    im2col_into(x, col, N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW);
}

extern "C" __global__ void im2col_bfloat16(const T* __restrict__ x, bfloat16_bits* __restrict__ col, index_t N,
                                           index_t C, index_t H, index_t W, index_t KH, index_t KW, index_t SH,
                                           index_t SW, index_t PT, index_t PL, index_t DH, index_t DW, index_t OH,
                                           index_t OW) {
    im2col_into(x, col, N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW);
}

// The transpose of im2col: every input pixel sums the column entries that read it (no atomics).
extern "C" __global__ void col2im(const T* __restrict__ col, T* __restrict__ x, index_t N, index_t C, index_t H,
                                  index_t W, index_t KH, index_t KW, index_t SH, index_t SW, index_t PT,
                                  index_t PL, index_t DH, index_t DW, index_t OH, index_t OW) {
    const index_t L = N * OH * OW;
    GRID_LOOP(idx, N * C * H * W) {
        const index_t w = idx % W, h = (idx / W) % H, c = (idx / (W * H)) % C, n = idx / (W * H * C);
        A sum = 0;
        for (index_t i = 0; i < KH; ++i) {
            const index_t th = h + PT - i * DH;
            if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
            for (index_t j = 0; j < KW; ++j) {
                const index_t tw = w + PL - j * DW;
                if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
                sum += col[((c * KH + i) * KW + j) * L + (n * OH + th / SH) * OW + tw / SW];
            }
        }
        x[idx] = (T)sum;
    }
}

// out[n][o][l] = act(y * scale[o] + shift[o] + residual[n][o][l]) with y = y[o][n*L + l] when
// cols_layout (a GEMM result), else y[n][o][l]; out may be y itself in the second layout.
// flags: 1 scale, 2 shift, 4 residual (absent arrays are placeholders never read).
// act: 0 none, 1 relu, 2 hardswish, 3 clip to [lo, hi], 4 silu, 5 hardsigmoid, 6 gelu (exact, through erf).
extern "C" __global__ void conv_output(const T* y, T* out, const T* __restrict__ scale,
                                       const T* __restrict__ shift, const T* __restrict__ residual, index_t N,
                                       index_t O, index_t L, index_t cols_layout, index_t flags, index_t act,
                                       A lo, A hi) {
    GRID_LOOP(idx, N * O * L) {
        const index_t l = idx % L, o = (idx / L) % O, n = idx / (L * O);
        A v = cols_layout ? (A)y[(o * N + n) * L + l] : (A)y[idx];
        if (flags & 1) v *= (A)scale[o];
        if (flags & 2) v += (A)shift[o];
        if (flags & 4) v += (A)residual[idx];
        if (act == 1) {
            v = v < (A)0 ? (A)0 : v;
        } else if (act == 2) {
            A gate = v + (A)3;
            gate = gate < (A)0 ? (A)0 : (gate > (A)6 ? (A)6 : gate);
            v = v * gate / (A)6;
        } else if (act == 3) {
            v = v < lo ? lo : (v > hi ? hi : v);
        } else if (act == 4) {
            v = v * ((A)1 / ((A)1 + exp(-v)));
        } else if (act == 5) {
            v = v + (A)3;
            v = (v < (A)0 ? (A)0 : (v > (A)6 ? (A)6 : v)) * ((A)1 / (A)6);
        } else if (act == 6) {
            v = (A)0.5 * v * ((A)1 + erf(v * (A)0.70710678118654752440));
        }
        out[idx] = (T)v;
    }
}

// Depthwise: output channel o filters input channel o / M with its own KH x KW kernel (M = O / C).
extern "C" __global__ void depthwise_forward(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                             index_t N, index_t C, index_t H, index_t W, index_t M, index_t KH,
                                             index_t KW, index_t SH, index_t SW, index_t PT, index_t PL,
                                             index_t DH, index_t DW, index_t OH, index_t OW) {
    const index_t O = C * M;
    GRID_LOOP(idx, N * O * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, o = (idx / (OW * OH)) % O, n = idx / (OW * OH * O);
        const T* plane = x + (n * C + o / M) * H * W;
        const T* kernel = w + o * KH * KW;
        A sum = 0;
        for (index_t i = 0; i < KH; ++i) {
            const index_t h = oh * SH - PT + i * DH;
            if (h < 0 || h >= H) continue;
            for (index_t j = 0; j < KW; ++j) {
                const index_t w_ = ow * SW - PL + j * DW;
                if (w_ >= 0 && w_ < W) sum += (A)kernel[i * KW + j] * (A)plane[h * W + w_];
            }
        }
        y[idx] = (T)sum;
    }
}

// Input gradient of the depthwise convolution: every input pixel gathers the outputs it reached.
extern "C" __global__ void depthwise_backward_input(const T* __restrict__ gy, const T* __restrict__ w,
                                                    T* __restrict__ gx, index_t N, index_t C, index_t H,
                                                    index_t W, index_t M, index_t KH, index_t KW, index_t SH,
                                                    index_t SW, index_t PT, index_t PL, index_t DH, index_t DW,
                                                    index_t OH, index_t OW) {
    const index_t O = C * M;
    GRID_LOOP(idx, N * C * H * W) {
        const index_t w_ = idx % W, h = (idx / W) % H, c = (idx / (W * H)) % C, n = idx / (W * H * C);
        A sum = 0;
        for (index_t m = 0; m < M; ++m) {
            const index_t o = c * M + m;
            const T* grad = gy + (n * O + o) * OH * OW;
            for (index_t i = 0; i < KH; ++i) {
                const index_t th = h + PT - i * DH;
                if (th < 0 || th % SH != 0 || th / SH >= OH) continue;
                for (index_t j = 0; j < KW; ++j) {
                    const index_t tw = w_ + PL - j * DW;
                    if (tw < 0 || tw % SW != 0 || tw / SW >= OW) continue;
                    sum += (A)w[(o * KH + i) * KW + j] * (A)grad[(th / SH) * OW + tw / SW];
                }
            }
        }
        gx[idx] = (T)sum;
    }
}

// Weight gradient of the depthwise convolution, in two steps: this kernel sums each output row,
// partial[(o*KH + i)*KW + j][n*OH + oh] = sum over ow of gy[n][o][oh][ow] * x[n][o/M][h][w], and the
// caller sums the partials over (n, oh).
extern "C" __global__ void depthwise_weight_partials(const T* __restrict__ gy, const T* __restrict__ x,
                                                     T* __restrict__ partial, index_t N, index_t C, index_t H,
                                                     index_t W, index_t M, index_t KH, index_t KW, index_t SH,
                                                     index_t SW, index_t PT, index_t PL, index_t DH, index_t DW,
                                                     index_t OH, index_t OW) {
    const index_t O = C * M;
    GRID_LOOP(idx, O * KH * KW * N * OH) {
        const index_t oh = idx % OH, n = (idx / OH) % N, tap = idx / (OH * N);
        const index_t j = tap % KW, i = (tap / KW) % KH, o = tap / (KW * KH);
        const index_t h = oh * SH - PT + i * DH;
        A sum = 0;
        if (h >= 0 && h < H) {
            const T* grad = gy + ((n * O + o) * OH + oh) * OW;
            const T* row = x + ((n * C + o / M) * H + h) * W;
            for (index_t ow = 0; ow < OW; ++ow) {
                const index_t w_ = ow * SW - PL + j * DW;
                if (w_ >= 0 && w_ < W) sum += (A)grad[ow] * (A)row[w_];
            }
        }
        partial[idx] = (T)sum;
    }
}
