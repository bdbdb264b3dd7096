// Pooling kernels: one thread per output window (forward), gradients scattered with atomicAdd.
// Planes are NC = N*C planes of H x W inputs and OH x OW outputs; max-pooling indices are flat
// positions h*W + w within the input plane, as torch returns them.

// Max over a window with torch's scan: the running maximum is replaced by a greater value or a NaN,
// so the first maximum wins and NaN propagates; an all -inf window keeps its first in-bounds element.
__device__ __forceinline__ void window_max(const T* plane, index_t W, index_t h0, index_t h1, index_t dh,
                                           index_t w0, index_t w1, index_t dw, T* value, index_t* index) {
    A best = -INFINITY;
    index_t where = h0 * W + w0;
    for (index_t h = h0; h < h1; h += dh) {
        for (index_t w = w0; w < w1; w += dw) {
            const A v = (A)plane[h * W + w];
            if (v > best || v != v) {
                best = v;
                where = h * W + w;
            }
        }
    }
    *value = (T)best;
    *index = where;
}

extern "C" __global__ void max_pool_forward(const T* __restrict__ x, T* __restrict__ y, index_t* __restrict__ indices,
                                            index_t NC, index_t H, index_t W, index_t KH, index_t KW, index_t SH,
                                            index_t SW, index_t PH, index_t PW, index_t DH, index_t DW, index_t OH,
                                            index_t OW) {
    GRID_LOOP(idx, NC * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        index_t h0 = oh * SH - PH, w0 = ow * SW - PW;
        const index_t h1 = imin(h0 + (KH - 1) * DH + 1, H), w1 = imin(w0 + (KW - 1) * DW + 1, W);
        while (h0 < 0) h0 += DH;
        while (w0 < 0) w0 += DW;
        window_max(x + plane * H * W, W, h0, h1, DH, w0, w1, DW, y + idx, indices + idx);
    }
}

// The gradient of max pooling and adaptive max pooling: each output adds its gradient at its argmax.
extern "C" __global__ void max_pool_backward(const T* __restrict__ gy, const index_t* __restrict__ indices,
                                             T* __restrict__ gx, index_t NC, index_t HW, index_t OHW) {
    GRID_LOOP(idx, NC * OHW) {
        const index_t at = indices[idx];
        if (at < HW) atomicAdd(gx + (idx / OHW) * HW + at, gy[idx]);  // a window wholly in the padding: no input
    }
}

// torch's average pooling window of output idx: the input rows [h0, h1) and columns [w0, w1) it sums,
// and its divisor: the window clipped to the padded input with count_include_pad, clipped to the input
// without; divisor > 0 overrides both.
struct AvgWindow {
    index_t plane, h0, h1, w0, w1, count;
};

__device__ __forceinline__ AvgWindow avg_window(index_t idx, index_t H, index_t W, index_t KH, index_t KW, index_t SH,
                                                index_t SW, index_t PH, index_t PW, index_t OH, index_t OW,
                                                index_t count_include_pad, index_t divisor) {
    AvgWindow win;
    const index_t ow = idx % OW, oh = (idx / OW) % OH;
    win.plane = idx / (OW * OH);
    const index_t hs = oh * SH - PH, ws = ow * SW - PW;
    const index_t he = imin(hs + KH, H + PH), we = imin(ws + KW, W + PW);
    win.h0 = imax(hs, 0);
    win.h1 = imin(he, H);
    win.w0 = imax(ws, 0);
    win.w1 = imin(we, W);
    win.count = divisor > 0 ? divisor : (count_include_pad ? (he - hs) * (we - ws) : (win.h1 - win.h0) * (win.w1 - win.w0));
    return win;
}

extern "C" __global__ void avg_pool_forward(const T* __restrict__ x, T* __restrict__ y, index_t NC, index_t H,
                                            index_t W, index_t KH, index_t KW, index_t SH, index_t SW, index_t PH,
                                            index_t PW, index_t OH, index_t OW, index_t count_include_pad,
                                            index_t divisor) {
    GRID_LOOP(idx, NC * OH * OW) {
        const AvgWindow win = avg_window(idx, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad, divisor);
        const T* in = x + win.plane * H * W;
        A sum = 0;
        for (index_t h = win.h0; h < win.h1; ++h)
            for (index_t w = win.w0; w < win.w1; ++w) sum += (A)in[h * W + w];
        y[idx] = (T)(sum / (A)win.count);
    }
}

extern "C" __global__ void avg_pool_backward(const T* __restrict__ gy, T* __restrict__ gx, index_t NC, index_t H,
                                             index_t W, index_t KH, index_t KW, index_t SH, index_t SW, index_t PH,
                                             index_t PW, index_t OH, index_t OW, index_t count_include_pad,
                                             index_t divisor) {
    GRID_LOOP(idx, NC * OH * OW) {
        const AvgWindow win = avg_window(idx, H, W, KH, KW, SH, SW, PH, PW, OH, OW, count_include_pad, divisor);
        const T g = (T)((A)gy[idx] / (A)win.count);
        T* out = gx + win.plane * H * W;
        for (index_t h = win.h0; h < win.h1; ++h)
            for (index_t w = win.w0; w < win.w1; ++w) atomicAdd(out + h * W + w, g);
    }
}

// Adaptive bins: [floor(o*n/out), ceil((o+1)*n/out)).
__device__ __forceinline__ index_t bin_start(index_t o, index_t n, index_t out) { return o * n / out; }
__device__ __forceinline__ index_t bin_end(index_t o, index_t n, index_t out) { return ((o + 1) * n + out - 1) / out; }

extern "C" __global__ void adaptive_avg_pool_forward(const T* __restrict__ x, T* __restrict__ y, index_t NC,
                                                     index_t H, index_t W, index_t OH, index_t OW) {
    GRID_LOOP(idx, NC * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        const index_t h0 = bin_start(oh, H, OH), h1 = bin_end(oh, H, OH);
        const index_t w0 = bin_start(ow, W, OW), w1 = bin_end(ow, W, OW);
        const T* in = x + plane * H * W;
        A sum = 0;
        for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w) sum += (A)in[h * W + w];
        y[idx] = (T)(sum / (A)((h1 - h0) * (w1 - w0)));
    }
}

extern "C" __global__ void adaptive_avg_pool_backward(const T* __restrict__ gy, T* __restrict__ gx, index_t NC,
                                                      index_t H, index_t W, index_t OH, index_t OW) {
    GRID_LOOP(idx, NC * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        const index_t h0 = bin_start(oh, H, OH), h1 = bin_end(oh, H, OH);
        const index_t w0 = bin_start(ow, W, OW), w1 = bin_end(ow, W, OW);
        const T g = (T)((A)gy[idx] / (A)((h1 - h0) * (w1 - w0)));
        T* out = gx + plane * H * W;
        for (index_t h = h0; h < h1; ++h)
            for (index_t w = w0; w < w1; ++w) atomicAdd(out + h * W + w, g);
    }
}

extern "C" __global__ void adaptive_max_pool_forward(const T* __restrict__ x, T* __restrict__ y,
                                                     index_t* __restrict__ indices, index_t NC, index_t H, index_t W,
                                                     index_t OH, index_t OW) {
    GRID_LOOP(idx, NC * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        window_max(x + plane * H * W, W, bin_start(oh, H, OH), bin_end(oh, H, OH), 1, bin_start(ow, W, OW),
                   bin_end(ow, W, OW), 1, y + idx, indices + idx);
    }
}
