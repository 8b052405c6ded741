/* yfs_options.h — the filesystem's own -o options (the user contract: the
 * option table of README.md, man/youmufs.1 and --help).
 *
 * Options arrive as "key=value" or "key" items (from -o lists); items that
 * are not youmufs options are reported as such so the caller can hand them to
 * FUSE. Values are parsed strictly: "seed=12x" is an error, not 12.
 */
#ifndef YFS_OPTIONS_H
#define YFS_OPTIONS_H

#include <stdint.h>

#include "ix_frame.h"
#include "pq_error.h"
#include "sh_deal.h"
#include "sh_plan.h"

/* Chosen by measurement: bench/results/epoch_bench.md. */
#define YFS_DEFAULT_CHUNK (1u << 20)
/* Chosen by measurement: bench/results/kernel_readahead.md. */
#define YFS_DEFAULT_KERNEL_READAHEAD (256u << 10)
#define YFS_MAX_KERNEL_READAHEAD (64u << 20)

typedef struct yfs_options {
    char *column;      /* NULL: the dataset's only string column */
    ix_frame_options frame; /* format, rowid, dtype, sep */
    uint64_t seed;
    uint64_t epochs;   /* epoch files listed at the root */
    sh_mode shuffle;
    sh_even even;      /* equal parts (sh_deal.h) */
    uint64_t mem;      /* bytes of decoded data held in memory */
    uint64_t buffer;   /* records per shuffle segment */
    uint64_t chunk;    /* Redox physical chunk bytes; 0: pages read one by one */
    int threads;       /* I/O and decode workers */
    int readahead;     /* segments built ahead of each reader; 0: none */
    int io_depth;      /* chunk loads in flight ahead of the readers; 0: adaptive (yfs_io.h) */
    uint64_t kernel_readahead; /* bytes: the kernel's readahead window for the mount (yfs_bdi.h);
                                  0: the kernel's own */
    int skip_crc;      /* crc=skip: do not verify page checksums */
    char *cache_dir;   /* persistent index directory; NULL: cache=none */
    char *endpoint;    /* s3:// datasets: the server's URL; NULL: AWS_ENDPOINT_URL (index/ix_s3.h) */
    char *region;      /* s3:// datasets: the signing region; NULL: from the environment */
    int no_sign;       /* s3:// datasets: a public bucket, no credentials */
} yfs_options;

/* The option names, for --help and for tests that compare it with the docs. */
extern const char *const yfs_option_names[];

void yfs_options_init(yfs_options *o);
void yfs_options_free(yfs_options *o);

/* Apply one item. Returns 0 if applied, 1 if the key is not a youmufs
 * option, -1 (with a message) if it is but the value is bad. */
int yfs_options_apply(yfs_options *o, const char *item, pq_error *err);

/* Checks that need all options at once (rowid needs format=jsonl; dtype=
 * and sep= need format=raw). Call after the last apply. */
int yfs_options_check(const yfs_options *o, pq_error *err);

/* Apply a comma-separated list; items that are not ours are appended to
 * *rest (comma-separated, malloc'ed, may stay NULL). */
int yfs_options_apply_list(yfs_options *o, const char *list, char **rest, pq_error *err);

/* "256M", "1G", "65536", "64k": binary multiples. -1 on junk or overflow. */
int yfs_parse_size(const char *s, uint64_t *out);
/* The shuffle= value that selects mode. */
const char *yfs_shuffle_name(sh_mode mode);
/* The even= value that selects even. */
const char *yfs_even_name(sh_even even);

#endif
