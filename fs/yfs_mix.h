/* yfs_mix.h — a mounted mixture: one mount per source, sharing source 0's
 * memory accountant, and what every epoch takes of each (sh_mix.h).
 *
 * Source i is mounted with the mixture's options except: column= its own
 * "column" (default the mount's), seed= sh_mix_source_seed(seed, i) (so its
 * epoch p is its pass p), segments cut at its share of buffer=
 * and of the segment byte limit (sh_mix_share_of, set once the counts are
 * known), its share of mem= for its stores (yfs_mount_set_mem_part: the
 * accountant is the mixture's, its limit the whole) and of the I/O engine's
 * depths (yfs_io_share), its share of threads= (sh_mix_share_of, at least
 * one) as prefetch workers and as the threads one of its builds frames with
 * (the sources build about as many segments at once as one dataset, with as
 * many threads),
 * jsonl records keyed by the mount's column name
 * (source 0's field when column= is not given) and, under rowid, carrying
 * "_source": i. Each source's index is built, or found in cache=, as for a
 * mount of that source alone. The mixture's files are read through source
 * 0's mount (yfs_mount.mix), by yfs_mixview.h.
 *
 * Immutable once open; the mounts are thread-safe as any mount.
 */
#ifndef YFS_MIX_H
#define YFS_MIX_H

#include <stdint.h>

#include "yfs_mixture.h"
#include "yfs_mount.h"

struct yfs_mix {
    yfs_mixture file;
    uint64_t seed;      /* the mount's seed= */
    sh_even even;       /* the mount's even= */
    uint64_t buffer;    /* the mount's buffer= (the sources' are shares of it) */
    uint32_t n;
    yfs_mount **sources; /* n; sources[0] owns this mix */
    uint64_t *counts;   /* records of each source in an epoch (sh_mix_counts) */
    uint64_t records;   /* an epoch's records: the sum of counts */
    uint64_t index_bytes; /* of every source's index (yfs_mount_index_bytes) */
    char *key;          /* the jsonl key of every source (their options point to it) */
};

/* Open the mixture file `file` and every source under opts; *out is
 * source 0's mount. Fails with a message naming the file (and the source)
 * when the file is bad, a source cannot be mounted, a source to take
 * records from has none, or the sources' records would not look alike
 * (another format's framing fails as for one dataset). */
int yfs_mix_open(const yfs_options *opts, const char *file, int progress, yfs_mount **out,
                 pq_error *err);
/* Start the other sources' workers (source 0's are started by its mount). */
int yfs_mix_start(yfs_mix *mx, pq_error *err);
/* Close the other sources and free the mix (from yfs_mount_close of source 0). */
void yfs_mix_free(yfs_mix *mx);

#endif
