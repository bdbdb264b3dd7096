// Greedy non-maximum suppression over boxes sorted by decreasing score, in two steps: the overlap mask
// (bit k of word j of row i: box 64*j + k comes after box i and overlaps it by IoU > threshold, both of
// the same class), then one block walks the boxes in order, keeping a box no kept box has suppressed.

extern "C" __global__ void nms_mask(const T* __restrict__ boxes, const index_t* __restrict__ classes,
                                    unsigned long long* __restrict__ mask, index_t n, index_t words,
                                    double threshold) {
    GRID_LOOP(idx, n * words) {
        const index_t word = idx % words, i = idx / words;
        const T* a = boxes + i * 4;
        const T area_a = (a[2] - a[0]) * (a[3] - a[1]);
        unsigned long long bits = 0;
        for (index_t bit = 0; bit < 64; ++bit) {
            const index_t k = word * 64 + bit;
            if (k <= i || k >= n || classes[k] != classes[i]) continue;
            const T* b = boxes + k * 4;
            const T w = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]);
            const T h = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]);
            const T inter = (w > (T)0 ? w : (T)0) * (h > (T)0 ? h : (T)0);
            const T iou = inter / (area_a + (b[2] - b[0]) * (b[3] - b[1]) - inter);
            if ((double)iou > threshold) bits |= 1ULL << bit;
        }
        mask[idx] = bits;
    }
}

// Launched as one block; removed (words entries) starts at zero. Bit i of removed is final before
// step i: only rows of earlier boxes set it, and row i never does.
extern "C" __global__ void nms_keep(const unsigned long long* __restrict__ mask, unsigned long long* removed,
                                    unsigned char* __restrict__ keep, index_t n, index_t words) {
    for (index_t i = 0; i < n; ++i) {
        __syncthreads();
        const bool alive = !((removed[i / 64] >> (i % 64)) & 1ULL);
        if (threadIdx.x == 0) keep[i] = alive;
        if (alive)
            for (index_t w = threadIdx.x; w < words; w += blockDim.x) removed[w] |= mask[i * words + w];
    }
}
