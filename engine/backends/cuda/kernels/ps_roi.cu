// Position-sensitive RoIAlign and RoIPool (torchvision's semantics), one thread per output bin and
// channel; gradients scattered with atomicAdd. rois are K x 5 rows (image index, x1, y1, x2, y2) in the
// input's type; the input is N x C x H x W with C = C_out * PH * PW, the output K x C_out x PH x PW, and
// bin (ph, pw) of output channel c reads input channel (c * PH + ph) * PW + pw.

// The bin of a position-sensitive RoIAlign box: the box shifted by half a pixel, never widened; start
// (y, x) of the bin, its size (h, w) and the sampling grid (gh, gw).
__device__ __forceinline__ void ps_align_bin(const T* roi, T scale, index_t ph, index_t pw, index_t PH, index_t PW,
                                             index_t sampling, T* y0, T* x0, T* bh, T* bw, index_t* gh, index_t* gw) {
    const T sx = roi[1] * scale - (T)0.5, sy = roi[2] * scale - (T)0.5;
    *bw = (roi[3] * scale - (T)0.5 - sx) / (T)PW;
    *bh = (roi[4] * scale - (T)0.5 - sy) / (T)PH;
    *y0 = sy + (T)ph * *bh;
    *x0 = sx + (T)pw * *bw;
    *gh = sampling > 0 ? sampling : (index_t)ceil(*bh);
    *gw = sampling > 0 ? sampling : (index_t)ceil(*bw);
}

// Output index -> (box, output channel, bin row, bin column) and the input plane the bin reads.
#define PS_BIN(idx, C_OUT, PH, PW)                                                          \
    const index_t pw = idx % PW, ph = (idx / PW) % PH, c = (idx / (PW * PH)) % C_OUT;   \
    const index_t k = idx / (PW * PH * C_OUT);                                          \
    const T* roi = rois + k * 5;                                                        \
    const index_t plane = (((index_t)roi[0] * C_OUT + c) * PH + ph) * PW + pw

// A bin with no samples divides 0 by 0, as torchvision's.
extern "C" __global__ void ps_roi_align_forward(const T* __restrict__ x, const T* __restrict__ rois,
                                                T* __restrict__ y, index_t K, index_t C_OUT, index_t H, index_t W,
                                                index_t PH, index_t PW, T scale, index_t sampling) {
    GRID_LOOP(idx, K * C_OUT * PH * PW) {
        PS_BIN(idx, C_OUT, PH, PW);
        T y0, x0, bh, bw;
        index_t gh, gw;
        ps_align_bin(roi, scale, ph, pw, PH, PW, sampling, &y0, &x0, &bh, &bw, &gh, &gw);
        const T* in = x + plane * H * W;
        T sum = 0;
        for (index_t iy = 0; iy < gh; ++iy) {
            const T yy = y0 + ((T)iy + (T)0.5) * bh / (T)gh;
            for (index_t ix = 0; ix < gw; ++ix) {
                const T xx = x0 + ((T)ix + (T)0.5) * bw / (T)gw;
                index_t at[4];
                T weight[4];
                if (bilinear_taps(H, W, yy, xx, at, weight))
                    sum += weight[0] * in[at[0]] + weight[1] * in[at[1]] + weight[2] * in[at[2]] +
                           weight[3] * in[at[3]];
            }
        }
        y[idx] = sum / (T)(gh * gw);
    }
}

extern "C" __global__ void ps_roi_align_backward(const T* __restrict__ gy, const T* __restrict__ rois,
                                                 T* __restrict__ gx, index_t K, index_t C_OUT, index_t H,
                                                 index_t W, index_t PH, index_t PW, T scale, index_t sampling) {
    GRID_LOOP(idx, K * C_OUT * PH * PW) {
        PS_BIN(idx, C_OUT, PH, PW);
        T y0, x0, bh, bw;
        index_t gh, gw;
        ps_align_bin(roi, scale, ph, pw, PH, PW, sampling, &y0, &x0, &bh, &bw, &gh, &gw);
        T* out = gx + plane * H * W;
        const T g = gy[idx] / (T)(gh * gw);
        for (index_t iy = 0; iy < gh; ++iy) {
            const T yy = y0 + ((T)iy + (T)0.5) * bh / (T)gh;
            for (index_t ix = 0; ix < gw; ++ix) {
                const T xx = x0 + ((T)ix + (T)0.5) * bw / (T)gw;
                index_t at[4];
                T weight[4];
                if (bilinear_taps(H, W, yy, xx, at, weight))
                    for (int t = 0; t < 4; ++t) atomicAdd(out + at[t], g * weight[t]);
            }
        }
    }
}

// The integer window of a position-sensitive RoIPool bin: the rounded box (at least one pixel), floor
// and ceil bin edges, clipped to [0, h_limit] x [0, w_limit]. torchvision's forward clips to the last
// row/column (H - 1, W - 1), its backward to the map's size (H, W).
__device__ __forceinline__ void ps_pool_window(const T* roi, T scale, index_t ph, index_t pw, index_t PH, index_t PW,
                                               index_t h_limit, index_t w_limit, index_t* h0, index_t* h1,
                                               index_t* w0, index_t* w1) {
    const index_t x1 = (index_t)round(roi[1] * scale), y1 = (index_t)round(roi[2] * scale);
    const index_t x2 = (index_t)round(roi[3] * scale), y2 = (index_t)round(roi[4] * scale);
    const T bh = (T)imax(y2 - y1, 1) / (T)PH, bw = (T)imax(x2 - x1, 1) / (T)PW;
    *h0 = imin(imax((index_t)floor((T)ph * bh) + y1, 0), h_limit);
    *h1 = imin(imax((index_t)ceil((T)(ph + 1) * bh) + y1, 0), h_limit);
    *w0 = imin(imax((index_t)floor((T)pw * bw) + x1, 0), w_limit);
    *w1 = imin(imax((index_t)ceil((T)(pw + 1) * bw) + x1, 0), w_limit);
}

extern "C" __global__ void ps_roi_pool_forward(const T* __restrict__ x, const T* __restrict__ rois,
                                               T* __restrict__ y, index_t K, index_t C_OUT, index_t H, index_t W,
                                               index_t PH, index_t PW, T scale) {
    GRID_LOOP(idx, K * C_OUT * PH * PW) {
        PS_BIN(idx, C_OUT, PH, PW);
        index_t h0, h1, w0, w1;
        ps_pool_window(roi, scale, ph, pw, PH, PW, H - 1, W - 1, &h0, &h1, &w0, &w1);
        const T* in = x + plane * H * W;
        A sum = 0;
        for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w) sum += in[h * W + w];
        y[idx] = (h1 <= h0 || w1 <= w0) ? (T)0 : (T)(sum / (A)((h1 - h0) * (w1 - w0)));
    }
}

extern "C" __global__ void ps_roi_pool_backward(const T* __restrict__ gy, const T* __restrict__ rois,
                                                T* __restrict__ gx, index_t K, index_t C_OUT, index_t H, index_t W,
                                                index_t PH, index_t PW, T scale) {
    GRID_LOOP(idx, K * C_OUT * PH * PW) {
        PS_BIN(idx, C_OUT, PH, PW);
        index_t h0, h1, w0, w1;
        ps_pool_window(roi, scale, ph, pw, PH, PW, H, W, &h0, &h1, &w0, &w1);
        if (h1 <= h0 || w1 <= w0) continue;
        T* out = gx + plane * H * W;
        const T g = gy[idx] / (T)((h1 - h0) * (w1 - w0));
        for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w) atomicAdd(out + h * W + w, g);
    }
}
