/* sh_random.h — the seeded pseudo-random generator behind every shuffle.
 *
 * Plans must be identical on every machine and every build, so the generator
 * is fixed and specified here rather than taken from libc:
 *   - seeds are derived with SplitMix64 (Steele, Lea, Flood 2014) from
 *     (base seed, epoch, purpose, index) by sh_derive_seed;
 *   - the stream is xoshiro256** 1.0 (Blackman, Vigna 2018), its 256-bit state
 *     filled from the derived seed by four SplitMix64 steps;
 *   - bounded integers use Lemire's multiply-shift with rejection, so they are
 *     exactly uniform (no modulo bias);
 *   - permutations are Fisher-Yates, drawing j in [0, i] for i = n-1 down to 1.
 * Pure integer arithmetic: no floating point, no platform dependence.
 */
#ifndef SH_RANDOM_H
#define SH_RANDOM_H

#include <stdint.h>

typedef struct sh_rng {
    uint64_t s[4];
} sh_rng;

/* Seed-derivation purposes, so the same (seed, epoch) never feeds two uses. */
enum {
    SH_PURPOSE_PAGES = 1,
    SH_PURPOSE_ROWS = 2,
    SH_PURPOSE_CHUNKS = 3,
    SH_PURPOSE_RECORDS = 4,
    SH_PURPOSE_UNITS = 5,
    SH_PURPOSE_SOURCES = 6 /* a mixture source's passes (sh_mix.h) */
};

uint64_t sh_derive_seed(uint64_t seed, uint64_t epoch, uint64_t purpose, uint64_t index);
void sh_rng_init(sh_rng *r, uint64_t seed);
uint64_t sh_rng_next(sh_rng *r);
/* Uniform integer in [0, bound) ; bound > 0. */
uint64_t sh_rng_below(sh_rng *r, uint64_t bound);
/* Fisher-Yates shuffle of perm[0..n) in place. */
void sh_permute_u32(sh_rng *r, uint32_t *perm, uint64_t n);

#endif
