#include "sh_mix.h"

#include <assert.h>

#include "sh_random.h"

int sh_mix_counts(const uint64_t *weights, uint32_t n, uint64_t records, uint64_t *counts)
{
    if (n == 0 || n > SH_MIX_MAX_SOURCES)
        return -1;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (weights[i] > UINT64_MAX - total)
            return -1;
        total += weights[i];
    }
    if (total == 0)
        return -1;
    /* The exact share R x w_i / W as a quotient and a remainder. */
    uint64_t given = 0;
    for (uint32_t i = 0; i < n; i++) {
        counts[i] = (uint64_t)((unsigned __int128)records * weights[i] / total);
        given += counts[i];
    }
    /* Each floor is short of its share by less than 1, so fewer than n
     * records are left; each goes to the largest remainder not yet served. */
    assert(given <= records && records - given < n);
    for (uint64_t left = records - given; left > 0; left--) {
        uint32_t best = n;
        uint64_t best_rem = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t rem = (uint64_t)((unsigned __int128)records * weights[i] % total);
            int served = (unsigned __int128)counts[i] * total > (unsigned __int128)records * weights[i];
            if (!served && rem > 0 && (best == n || rem > best_rem)) {
                best = i;
                best_rem = rem;
            }
        }
        assert(best < n); /* a record left means some share has a fraction */
        counts[best]++;
    }
    return 0;
}

uint64_t sh_mix_runs_max(uint64_t size, uint64_t count)
{
    return count == 0 ? 0 : count / size + 2;
}

uint64_t sh_mix_runs(uint64_t size, uint64_t count, uint64_t epoch, sh_mix_run *out)
{
    if (count == 0)
        return 0;
    assert(size > 0);
    unsigned __int128 at = (unsigned __int128)epoch * count;
    uint64_t pass = (uint64_t)(at / size), first = (uint64_t)(at % size), runs = 0;
    for (uint64_t left = count; left > 0; pass++, first = 0) {
        uint64_t take = size - first < left ? size - first : left;
        out[runs++] = (sh_mix_run){ pass, first, first + take };
        left -= take;
    }
    assert(runs <= sh_mix_runs_max(size, count));
    return runs;
}

uint64_t sh_mix_share_of(uint64_t whole, uint64_t count, uint64_t records)
{
    assert(count <= records);
    if (records == 0)
        return whole;
    unsigned __int128 q = ((unsigned __int128)whole * count + records - 1) / records;
    return q > 0 ? (uint64_t)q : 1;
}

uint64_t sh_mix_source_seed(uint64_t seed, uint32_t source)
{
    return sh_derive_seed(seed, 0, SH_PURPOSE_SOURCES, source);
}

int sh_mix_turns_init(sh_mix_turns *t, const uint64_t *counts, uint32_t n, int64_t *credit)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (counts[i] >= (1ull << 62) - total)
            return -1;
        total += counts[i];
        credit[i] = 0;
    }
    *t = (sh_mix_turns){ n, counts, total, credit };
    return 0;
}

uint32_t sh_mix_turns_next(sh_mix_turns *t)
{
    /* The credits add up to 0 between turns, and none falls to -T or
     * below, so none passes 2T < 2^63 either. */
    uint32_t best = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        t->credit[i] += (int64_t)t->counts[i];
        if (t->credit[i] > t->credit[best])
            best = i;
    }
    t->credit[best] -= (int64_t)t->total;
    assert(t->credit[best] > -(int64_t)t->total);
    return best;
}
