// Counter-based random numbers (Philox4x32-10, Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): the 4 words of block g of a draw are a keyed bijection of the counter (offset + g, 0, 0, 0), the
// key being the seed. The seed and the offset live in device memory (state[0], state[1]) and each draw is
// followed by philox_advance, so a CUDA graph that captured draws draws new numbers in every replay.

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

struct words4 { unsigned int w[4]; };

__device__ __forceinline__ words4 philox(unsigned long long seed, unsigned long long counter) {
    unsigned int c0 = (unsigned int)counter, c1 = (unsigned int)(counter >> 32), c2 = 0u, c3 = 0u;
    unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        const unsigned int hi0 = __umulhi(PHILOX_M0, c0), lo0 = PHILOX_M0 * c0;
        const unsigned int hi1 = __umulhi(PHILOX_M1, c2), lo1 = PHILOX_M1 * c2;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    words4 r = {{c0, c1, c2, c3}};
    return r;
}

// Uniform in [0, 1) from word k (float: 24 bits) or words 2k, 2k+1 (double: 53 bits); VALUES per block.
#define VALUES (sizeof(T) == 8 ? 2 : 4)
__device__ __forceinline__ A unit(const words4& r, int k) {
    if (sizeof(T) == 8)
        return (A)((double)((unsigned long long)(r.w[2 * k] >> 5) * 67108864ull + (r.w[2 * k + 1] >> 6)) *
                   (1.0 / 9007199254740992.0));
    return (A)((float)(r.w[k] >> 8) * (1.0f / 16777216.0f));
}

// out[i] uniform in [0, 1): value k of block i / VALUES.
extern "C" __global__ void philox_uniform(const unsigned long long* __restrict__ state, T* __restrict__ out,
                                          index_t n) {
    GRID_LOOP(g, (n + VALUES - 1) / VALUES) {
        const words4 r = philox(state[0], state[1] + (unsigned long long)g);
        for (int k = 0; k < VALUES && g * VALUES + k < n; ++k) out[g * VALUES + k] = (T)unit(r, k);
    }
}

// out[i] standard normal: Box-Muller on the block's uniforms taken in pairs (u1 in (0, 1]).
extern "C" __global__ void philox_normal(const unsigned long long* __restrict__ state, T* __restrict__ out,
                                         index_t n) {
    GRID_LOOP(g, (n + VALUES - 1) / VALUES) {
        const words4 r = philox(state[0], state[1] + (unsigned long long)g);
        for (int k = 0; k < VALUES; k += 2) {
            const A u1 = (A)1 - unit(r, k), u2 = unit(r, k + 1);
            const A radius = sqrt((A)-2 * log(u1)), angle = (A)6.283185307179586 * u2;
            if (g * VALUES + k < n) out[g * VALUES + k] = (T)(radius * cos(angle));
            if (g * VALUES + k + 1 < n) out[g * VALUES + k + 1] = (T)(radius * sin(angle));
        }
    }
}

// After a draw of `blocks` blocks: the next draw starts past them.
extern "C" __global__ void philox_advance(unsigned long long* state, index_t blocks) {
    GRID_LOOP(i, 1) state[1] += (unsigned long long)blocks;
}
