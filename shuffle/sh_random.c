#include "sh_random.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t sh_derive_seed(uint64_t seed, uint64_t epoch, uint64_t purpose, uint64_t index)
{
    /* Chain the inputs through SplitMix64 so that nearby tuples give
     * unrelated seeds. */
    uint64_t state = seed;
    uint64_t h = splitmix64(&state);
    state = h ^ epoch;
    h = splitmix64(&state);
    state = h ^ purpose;
    h = splitmix64(&state);
    state = h ^ index;
    return splitmix64(&state);
}

void sh_rng_init(sh_rng *r, uint64_t seed)
{
    uint64_t state = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&state);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sh_rng_next(sh_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t sh_rng_below(sh_rng *r, uint64_t bound)
{
    /* Lemire 2019: the high 64 bits of x * bound are uniform in [0, bound)
     * once the low bits are outside the biased zone. */
    unsigned __int128 m = (unsigned __int128)sh_rng_next(r) * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (unsigned __int128)sh_rng_next(r) * bound;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

void sh_permute_u32(sh_rng *r, uint32_t *perm, uint64_t n)
{
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = sh_rng_below(r, i);
        uint32_t tmp = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = tmp;
    }
}
