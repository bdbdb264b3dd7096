// Deformable convolution (DCN v1/v2, torchvision's semantics): the im2col matrix of bilinear samples at
// offset positions, and its adjoints for the input (atomicAdd scatter), the offsets and the mask. The
// matrix is (C * K) x (N * L): row c * K + k is channel c at kernel tap k = i * KW + j, column n * L + l
// is image n at output position l = oy * WO + ox. offset is N x (G * K * 2) x HO x WO with (dy, dx)
// pairs, mask N x (G * K) x HO x WO (ignored when use_mask is 0); G offset groups of C / G channels.

// Geometry shared by every kernel, decoded from a matrix row and column.
struct DeformTap {
    index_t n, c, k, l, g;
    T y, x, m;  // sample position and mask value
};

__device__ __forceinline__ DeformTap deform_tap(index_t row, index_t col, const T* offset, const T* mask,
                                                index_t C, index_t G, index_t KW, index_t K, index_t HO, index_t WO,
                                                index_t sh, index_t sw, index_t ph, index_t pw, index_t dh,
                                                index_t dw, index_t use_mask) {
    DeformTap t;
    const index_t L = HO * WO;
    t.c = row / K; t.k = row % K; t.n = col / L; t.l = col % L;
    t.g = t.c / (C / G);
    const index_t oy = t.l / WO, ox = t.l % WO;
    const index_t pair = ((t.n * G + t.g) * K + t.k) * 2;
    t.y = (T)(oy * sh - ph + (t.k / KW) * dh) + offset[pair * L + t.l];
    t.x = (T)(ox * sw - pw + (t.k % KW) * dw) + offset[(pair + 1) * L + t.l];
    t.m = use_mask ? mask[((t.n * G + t.g) * K + t.k) * L + t.l] : (T)1;
    return t;
}

// A corner's value, 0 off the map.
__device__ __forceinline__ T corner(const T* plane, index_t H, index_t W, index_t y, index_t x) {
    return (y >= 0 && y < H && x >= 0 && x < W) ? plane[y * W + x] : (T)0;
}

// Bilinear sample with zeros outside the map; 0 for a position outside (-1, H) x (-1, W).
__device__ __forceinline__ T deform_sample(const T* plane, index_t H, index_t W, T y, T x) {
    if (y <= (T)-1 || y >= (T)H || x <= (T)-1 || x >= (T)W) return (T)0;
    const index_t y0 = (index_t)floor(y), x0 = (index_t)floor(x);
    const T ly = y - (T)y0, lx = x - (T)x0;
    return ((T)1 - ly) * ((T)1 - lx) * corner(plane, H, W, y0, x0) +
           ((T)1 - ly) * lx * corner(plane, H, W, y0, x0 + 1) +
           ly * ((T)1 - lx) * corner(plane, H, W, y0 + 1, x0) + ly * lx * corner(plane, H, W, y0 + 1, x0 + 1);
}

// The geometry arguments every kernel passes on to deform_tap.
#define DEFORM_GEOMETRY C, G, KW, K, HO, WO, sh, sw, ph, pw, dh, dw, use_mask

// The im2col matrix: masked bilinear samples.
extern "C" __global__ void deform_im2col(const T* __restrict__ x, const T* __restrict__ offset,
                                         const T* __restrict__ mask, T* __restrict__ cols,
                                         index_t N, index_t C, index_t H, index_t W, index_t G,
                                         index_t KW, index_t K, index_t HO, index_t WO, index_t sh, index_t sw,
                                         index_t ph, index_t pw, index_t dh, index_t dw, index_t use_mask) {
    const index_t cols_n = N * HO * WO;
    GRID_LOOP(idx, C * K * cols_n) {
        const DeformTap t = deform_tap(idx / cols_n, idx % cols_n, offset, mask, DEFORM_GEOMETRY);
        cols[idx] = t.m * deform_sample(x + (t.n * C + t.c) * H * W, H, W, t.y, t.x);
    }
}

// The input's gradient: each matrix entry's gradient, masked, onto its sample's corners.
extern "C" __global__ void deform_col2im(const T* __restrict__ grad_cols, const T* __restrict__ offset,
                                         const T* __restrict__ mask, T* __restrict__ gx,
                                         index_t N, index_t C, index_t H, index_t W, index_t G,
                                         index_t KW, index_t K, index_t HO, index_t WO, index_t sh, index_t sw,
                                         index_t ph, index_t pw, index_t dh, index_t dw, index_t use_mask) {
    const index_t cols_n = N * HO * WO;
    GRID_LOOP(idx, C * K * cols_n) {
        const DeformTap t = deform_tap(idx / cols_n, idx % cols_n, offset, mask, DEFORM_GEOMETRY);
        if (t.y <= (T)-1 || t.y >= (T)H || t.x <= (T)-1 || t.x >= (T)W) continue;
        const T g = t.m * grad_cols[idx];
        const index_t y0 = (index_t)floor(t.y), x0 = (index_t)floor(t.x);
        const T ly = t.y - (T)y0, lx = t.x - (T)x0;
        T* plane = gx + (t.n * C + t.c) * H * W;
        for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
                const index_t yy = y0 + dy, xx = x0 + dx;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                const T weight = (dy ? ly : (T)1 - ly) * (dx ? lx : (T)1 - lx);
                atomicAdd(plane + yy * W + xx, g * weight);
            }
    }
}

// The offsets' and the mask's gradients, one thread per (image, group, tap, position): the derivatives
// of the bilinear weights (and the unmasked sample for the mask) summed over the group's channels. As
// torchvision's, a sample exactly on row (column) -1 has the y (x) derivative of row (column) 0; a sample
// further out has no corner on the map and no gradient.
extern "C" __global__ void deform_col2coord(const T* __restrict__ x, const T* __restrict__ grad_cols,
                                            const T* __restrict__ offset, const T* __restrict__ mask,
                                            T* __restrict__ grad_offset, T* __restrict__ grad_mask,
                                            index_t N, index_t C, index_t H, index_t W, index_t G,
                                            index_t KW, index_t K, index_t HO, index_t WO, index_t sh, index_t sw,
                                            index_t ph, index_t pw, index_t dh, index_t dw, index_t use_mask) {
    const index_t L = HO * WO, cols_n = N * L, per_group = C / G;
    GRID_LOOP(idx, N * G * K * L) {
        const index_t l = idx % L, k = (idx / L) % K, g = (idx / (L * K)) % G, n = idx / (L * K * G);
        A d_y = 0, d_x = 0, d_m = 0;
        for (index_t c = g * per_group; c < (g + 1) * per_group; ++c) {
            const index_t row = c * K + k, col = n * L + l;
            const DeformTap t = deform_tap(row, col, offset, mask, DEFORM_GEOMETRY);
            const T* plane = x + (n * C + c) * H * W;
            const index_t y0 = (index_t)floor(t.y), x0 = (index_t)floor(t.x);
            const T ly = t.y - (T)y0, lx = t.x - (T)x0;
            const T v00 = corner(plane, H, W, y0, x0), v01 = corner(plane, H, W, y0, x0 + 1);
            const T v10 = corner(plane, H, W, y0 + 1, x0), v11 = corner(plane, H, W, y0 + 1, x0 + 1);
            const T g_col = grad_cols[row * cols_n + col];
            d_y += g_col * t.m * (((T)1 - lx) * (v10 - v00) + lx * (v11 - v01));
            d_x += g_col * t.m * (((T)1 - ly) * (v01 - v00) + ly * (v11 - v10));
            d_m += g_col * (((T)1 - ly) * ((T)1 - lx) * v00 + ((T)1 - ly) * lx * v01 + ly * ((T)1 - lx) * v10 +
                            ly * lx * v11);
        }
        const index_t pair = ((n * G + g) * K + k) * 2;
        grad_offset[pair * L + l] = (T)d_y;
        grad_offset[(pair + 1) * L + l] = (T)d_x;
        if (use_mask) grad_mask[((n * G + g) * K + k) * L + l] = (T)d_m;
    }
}
