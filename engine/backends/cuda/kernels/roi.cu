// RoIAlign and RoIPool (torchvision's semantics), one thread per output bin and channel; gradients
// scattered with atomicAdd. rois are K x 5 rows (image index, x1, y1, x2, y2) in the input's type;
// the input is N x C x H x W, the output K x C x PH x PW. Arithmetic is in T, as torchvision's.

// The box of a RoIAlign bin: start (y, x), bin size (h, w) and sampling grid (gh, gw).
__device__ __forceinline__ void align_box(const T* roi, T scale, index_t PH, index_t PW, index_t sampling,
                                          index_t aligned, T* sy, T* sx, T* bh, T* bw, index_t* gh, index_t* gw) {
    const T offset = aligned ? (T)0.5 : (T)0;
    *sx = roi[1] * scale - offset;
    *sy = roi[2] * scale - offset;
    T width = roi[3] * scale - offset - *sx, height = roi[4] * scale - offset - *sy;
    if (!aligned) {
        width = width > (T)1 ? width : (T)1;
        height = height > (T)1 ? height : (T)1;
    }
    *bh = height / (T)PH;
    *bw = width / (T)PW;
    *gh = sampling > 0 ? sampling : (index_t)ceil(*bh);
    *gw = sampling > 0 ? sampling : (index_t)ceil(*bw);
}

extern "C" __global__ void roi_align_forward(const T* __restrict__ x, const T* __restrict__ rois, T* __restrict__ y,
                                             index_t K, index_t C, index_t H, index_t W, index_t PH, index_t PW,
                                             T scale, index_t sampling, index_t aligned) {
    GRID_LOOP(idx, K * C * PH * PW) {
        const index_t pw = idx % PW, ph = (idx / PW) % PH, c = (idx / (PW * PH)) % C, k = idx / (PW * PH * C);
        const T* roi = rois + k * 5;
        T sy, sx, bh, bw;
        index_t gh, gw;
        align_box(roi, scale, PH, PW, sampling, aligned, &sy, &sx, &bh, &bw, &gh, &gw);
        const T* plane = x + ((index_t)roi[0] * C + c) * H * W;
        const T count = (T)imax(gh * gw, 1);
        T sum = 0;
        for (index_t iy = 0; iy < gh; ++iy) {
            const T yy = sy + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;
            for (index_t ix = 0; ix < gw; ++ix) {
                const T xx = sx + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;
                index_t at[4];
                T weight[4];
                if (bilinear_taps(H, W, yy, xx, at, weight))
                    sum += weight[0] * plane[at[0]] + weight[1] * plane[at[1]] + weight[2] * plane[at[2]] +
                           weight[3] * plane[at[3]];
            }
        }
        y[idx] = sum / count;
    }
}

extern "C" __global__ void roi_align_backward(const T* __restrict__ gy, const T* __restrict__ rois,
                                              T* __restrict__ gx, index_t K, index_t C, index_t H, index_t W,
                                              index_t PH, index_t PW, T scale, index_t sampling, index_t aligned) {
    GRID_LOOP(idx, K * C * PH * PW) {
        const index_t pw = idx % PW, ph = (idx / PW) % PH, c = (idx / (PW * PH)) % C, k = idx / (PW * PH * C);
        const T* roi = rois + k * 5;
        T sy, sx, bh, bw;
        index_t gh, gw;
        align_box(roi, scale, PH, PW, sampling, aligned, &sy, &sx, &bh, &bw, &gh, &gw);
        T* plane = gx + ((index_t)roi[0] * C + c) * H * W;
        const T g = gy[idx] / (T)imax(gh * gw, 1);
        for (index_t iy = 0; iy < gh; ++iy) {
            const T yy = sy + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;
            for (index_t ix = 0; ix < gw; ++ix) {
                const T xx = sx + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;
                index_t at[4];
                T weight[4];
                if (bilinear_taps(H, W, yy, xx, at, weight))
                    for (int t = 0; t < 4; ++t) atomicAdd(plane + at[t], g * weight[t]);
            }
        }
    }
}

// RoIPool: the maximum over each bin's integer window (0 for an empty bin; -max(T) when no value
// beats that, as with NaN); argmax is the flat N*C*H*W index, -1 where none was taken.
extern "C" __global__ void roi_pool_forward(const T* __restrict__ x, const T* __restrict__ rois, T* __restrict__ y,
                                            index_t* __restrict__ argmax, index_t K, index_t C, index_t H,
                                            index_t W, index_t PH, index_t PW, T scale) {
    const T lowest = sizeof(T) == 4 ? (T)-3.402823466e+38f : (T)-1.7976931348623157e+308;
    GRID_LOOP(idx, K * C * PH * PW) {
        const index_t pw = idx % PW, ph = (idx / PW) % PH, c = (idx / (PW * PH)) % C, k = idx / (PW * PH * C);
        const T* roi = rois + k * 5;
        const index_t x1 = (index_t)round(roi[1] * scale), y1 = (index_t)round(roi[2] * scale);
        const index_t x2 = (index_t)round(roi[3] * scale), y2 = (index_t)round(roi[4] * scale);
        const T bh = (T)imax(y2 - y1 + 1, 1) / (T)PH, bw = (T)imax(x2 - x1 + 1, 1) / (T)PW;
        const index_t h0 = imin(imax((index_t)floor((T)ph * bh) + y1, 0), H);
        const index_t h1 = imin(imax((index_t)ceil((T)(ph + 1) * bh) + y1, 0), H);
        const index_t w0 = imin(imax((index_t)floor((T)pw * bw) + x1, 0), W);
        const index_t w1 = imin(imax((index_t)ceil((T)(pw + 1) * bw) + x1, 0), W);
        const index_t base = ((index_t)roi[0] * C + c) * H * W;
        const bool empty = h1 <= h0 || w1 <= w0;
        T best = empty ? (T)0 : lowest;
        index_t where = -1;
        for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w)
                if (x[base + h * W + w] > best) {
                    best = x[base + h * W + w];
                    where = base + h * W + w;
                }
        y[idx] = best;
        argmax[idx] = where;
    }
}

extern "C" __global__ void roi_pool_backward(const T* __restrict__ gy, const index_t* __restrict__ argmax,
                                             T* __restrict__ gx, index_t n) {
    GRID_LOOP(idx, n) {
        if (argmax[idx] >= 0) atomicAdd(gx + argmax[idx], gy[idx]);
    }
}
