// Separable resampling (nearest, linear, bilinear, bicubic): every output position of an axis reads TH
// (rows) or TW (columns) taps, given as source indices and weights computed on the host with torch's
// rounding. The taps of a row are mixed first, then the rows, as torch's kernels do. Planes are
// P = N*C planes of H x W inputs and OH x OW outputs.

extern "C" __global__ void resample_forward(const T* __restrict__ x, T* __restrict__ y,
                                            const index_t* __restrict__ ih, const T* __restrict__ wh,
                                            const index_t* __restrict__ iw, const T* __restrict__ ww, index_t P,
                                            index_t H, index_t W, index_t OH, index_t OW, index_t TH, index_t TW) {
    GRID_LOOP(idx, P * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        const T* in = x + plane * H * W;
        T sum = 0;
        for (index_t a = 0; a < TH; ++a) {
            const T* row = in + ih[oh * TH + a] * W;
            T mixed = 0;
            for (index_t b = 0; b < TW; ++b) mixed += ww[ow * TW + b] * row[iw[ow * TW + b]];
            sum += wh[oh * TH + a] * mixed;
        }
        y[idx] = sum;
    }
}

// The transpose: each output position adds its gradient, weighted, onto the taps it read.
extern "C" __global__ void resample_backward(const T* __restrict__ gy, T* __restrict__ gx,
                                             const index_t* __restrict__ ih, const T* __restrict__ wh,
                                             const index_t* __restrict__ iw, const T* __restrict__ ww, index_t P,
                                             index_t H, index_t W, index_t OH, index_t OW, index_t TH,
                                             index_t TW) {
    GRID_LOOP(idx, P * OH * OW) {
        const index_t ow = idx % OW, oh = (idx / OW) % OH, plane = idx / (OW * OH);
        T* out = gx + plane * H * W;
        const T g = gy[idx];
        for (index_t a = 0; a < TH; ++a) {
            const T gh = wh[oh * TH + a] * g;
            for (index_t b = 0; b < TW; ++b) atomicAdd(out + ih[oh * TH + a] * W + iw[ow * TW + b], ww[ow * TW + b] * gh);
        }
    }
}
