// Rounding to bfloat16 for autocast's GEMMs: out[i] = the bfloat16 bits nearest x[i].
extern "C" __global__ void to_bfloat16_bits(const T* __restrict__ x, bfloat16_bits* __restrict__ out, index_t n) {
    GRID_LOOP(idx, n) {
        out[idx] = to_bfloat16((float)x[idx]);
    }
}
