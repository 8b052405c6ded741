/* sh_mix.h — a weighted mixture of sources: how many records of each source
 * an epoch holds, which ones, and in which order the sources take turns.
 *
 * Counts (sh_mix_counts). An epoch of R records gives source i a share of
 * R x w_i / W records (W the sum of the weights). Each count is that share
 * rounded down or up so that the counts add up to exactly R: every source
 * first gets the share rounded down, and the R - (sum of those) records left
 * go one each to the sources with the largest remainders (R x w_i mod W),
 * the lower source number first on a tie (Hamilton's largest remainder
 * method). Weights are integers (a mixture file's weights are taken to fixed
 * point by the caller), so the rule is exact integer arithmetic.
 *
 * Which records (sh_mix_runs). A source of N records contributing c records
 * per epoch reads an endless sequence of passes: pass p holds its N records
 * in the order of pass p (the source's own shuffled epoch p under the seed
 * sh_mix_source_seed, so every pass has a fresh order). Epoch e takes
 * positions [e x c, (e+1) x c) of that sequence. With c < N successive
 * epochs take successive slices of a pass, so ceil(N / c) epochs cover the
 * source; with c > N an epoch holds whole passes, each in its own order.
 *
 * Turns (sh_mix_turns). The sources' records are interleaved by the smooth
 * weighted round robin: before turn t every source's credit grows by its
 * count, the source with the most credit (the lower number on a tie) takes
 * the turn and pays the total T. Source i takes exactly c_i of T turns, and
 * after any t turns it has taken within 1 of t x c_i / T (tests/shuffle/
 * test_mix.c checks this), so every window of w turns holds it w x c_i / T
 * times, within 2.
 *
 * Pure: no I/O, no clock, no floating point. Reentrant.
 */
#ifndef SH_MIX_H
#define SH_MIX_H

#include <stdint.h>

/* Sources a mixture may have (each is a mount with its own workers,
 * sharing one memory budget). */
#define SH_MIX_MAX_SOURCES 100

/* counts[0..n) of an epoch of `records` records over sources of
 * weights[0..n) (above). Returns 0, or -1 when n is 0 or more than
 * SH_MIX_MAX_SOURCES or the weights add up to 0 (or overflow 64 bits). */
int sh_mix_counts(const uint64_t *weights, uint32_t n, uint64_t records, uint64_t *counts);

/* A run of consecutive records of one pass of a source. */
typedef struct sh_mix_run {
    uint64_t pass;
    uint64_t first; /* first record, counted in the pass's order */
    uint64_t end;   /* one past the last (first < end <= size) */
} sh_mix_run;

/* How many runs sh_mix_runs writes at most for a source of `size` records
 * contributing `count` per epoch: count / size + 2 (0 when count is 0). */
uint64_t sh_mix_runs_max(uint64_t size, uint64_t count);

/* The records epoch `epoch` takes from a source of `size` records that
 * contributes `count` per epoch (above), as runs in sequence order, written
 * to out (room for sh_mix_runs_max entries). Returns the number of runs;
 * their lengths add up to count. size must be > 0 unless count is 0. */
uint64_t sh_mix_runs(uint64_t size, uint64_t count, uint64_t epoch, sh_mix_run *out);

/* A source's share of a per-segment limit `whole` (buffer='s records, or
 * the framed bytes a segment may hold) when it gives `count` of an epoch's
 * `records`: ceil(whole x count / records), at least 1 (whole when records
 * is 0). A source's segments are cut at these shares of the mixture's
 * limits, so a window of `buffer` records of the mixture spans about one
 * segment of every source, as a window of one dataset spans one segment: a
 * mixture's reader holds and prepares ahead about what a single dataset's
 * reader does (with every source at the whole limits, eight sources held
 * eight segments, and no room was left to prepare any ahead). */
uint64_t sh_mix_share_of(uint64_t whole, uint64_t count, uint64_t records);

/* The seed of source `source`'s passes: its pass p is the source's epoch p
 * under this seed. */
uint64_t sh_mix_source_seed(uint64_t seed, uint32_t source);

/* The turn order of sources with counts[0..n): the caller provides
 * credit[0..n), which the turns own until the last turn. */
typedef struct sh_mix_turns {
    uint32_t n;
    const uint64_t *counts;
    uint64_t total; /* sum of counts (< 2^62) */
    int64_t *credit;
} sh_mix_turns;

/* Returns 0, or -1 when the counts add up to 2^62 or more. */
int sh_mix_turns_init(sh_mix_turns *t, const uint64_t *counts, uint32_t n, int64_t *credit);
/* The source that takes the next turn. At most `total` calls; O(n) each. */
uint32_t sh_mix_turns_next(sh_mix_turns *t);

#endif
