/* yfs_mount.h — one mounted dataset: the context every fs/ function hangs
 * off (no globals). It owns the index, the plan cache, the dictionary and
 * segment caches with their workers, and the counters.
 *
 * Lifecycle: yfs_mount_open builds everything but starts no thread, so the
 * caller may still fork (FUSE daemonizes after the index is built, and a
 * fork keeps only the calling thread); yfs_mount_start starts the prefetch
 * workers; yfs_mount_close stops and frees. The read path (yfs_view.h) works
 * on an opened mount with or without FUSE.
 */
#ifndef YFS_MOUNT_H
#define YFS_MOUNT_H

#include "ix_index.h"
#include "sh_plan.h"
#include "yfs_cpu.h"
#include "yfs_latency.h"
#include "yfs_options.h"
#include "yfs_stats.h"

typedef struct yfs_plans yfs_plans;
typedef struct yfs_dicts yfs_dicts;
typedef struct yfs_cache yfs_cache;
typedef struct yfs_pages yfs_pages;
typedef struct yfs_budget yfs_budget;
typedef struct yfs_streams yfs_streams;
typedef struct yfs_wants yfs_wants;
typedef struct yfs_io yfs_io;
typedef struct yfs_mix yfs_mix;

/* The plan's shuffle units (sh_plan.h sh_cut), from the index's cut pages
 * (ix_index.h): cut.first_unit is NULL when no page is cut, and then every
 * page is one unit. The arrays are owned; cut points to them. */
typedef struct yfs_unit_map {
    sh_cut cut;
    uint64_t *first_unit;   /* ix->num_pages + 1 entries */
    uint32_t *unit_records;
    uint64_t *unit_bytes;
} yfs_unit_map;

typedef struct yfs_mount {
    yfs_options opts;
    ix_index *ix;
    sh_params params;
    sh_page *page_summary; /* ix->num_pages entries: the plan's input */
    sh_stored_page *page_storage; /* ix->num_pages entries: the plan's I/O input */
    uint32_t *record_bytes;        /* shuffle=row: framed size of every record (yfs_rows.h) */
    uint64_t *page_first_record;   /* shuffle=row: ix->num_pages+1 record-number starts */
    yfs_budget *budget;    /* every byte held for data (yfs_budget.h) */
    int shares_budget;     /* budget is another mount's (a mixture's source 0 owns it) */
    yfs_mix *mix;          /* a mixture (yfs_mix.h): this mount is its source 0; else NULL */
    uint64_t mem_part;     /* the part of mem= its stores keep (the budgets below): mem=,
                              a mixture's source its share (yfs_mount_set_mem_part) */
    int workers;           /* prefetch workers (yfs_mount_start), and the threads the
                              builds frame with (yfs_segment_framing_threads): threads=,
                              a mixture's source its share of them (yfs_mix.h) */
    yfs_plans *plans;
    yfs_dicts *dicts;
    yfs_cache *cache;
    yfs_io *io;            /* the plan-driven I/O engine (yfs_io.h) */
    yfs_pages *loaded;     /* pages read by chunk loads, waiting to be served */
    yfs_unit_map units;
    yfs_pages *framed;     /* framed units of cut pages, waiting to be served (yfs_units.h) */
    yfs_streams *streams;  /* streams of large pages paused between units (yfs_streams.h) */
    yfs_wants *wants;      /* units running builds wait for, and their blocks (yfs_wants.h) */
    _Atomic int readers;   /* epoch and part files open on it (yfs_view.h), not a mixture's */
    yfs_stats stats;
    yfs_latency read_latency; /* of storage reads at run time */
    yfs_cpu cpu;              /* whether the process keeps its cores busy (yfs_cpu.h) */
    double index_seconds;  /* wall time of the whole mount-time build */
    int log_to_syslog;     /* set once daemonized, before any read */
    struct timespec mounted_at; /* the epoch files' mtime */
} yfs_mount;

/* What the index of `dataset` is built with under opts: the same for a mount
 * and for `youmufs index`, so that both find the same persistent index. */
ix_options yfs_index_options(const yfs_options *opts, const char *dataset, int progress);

/* Build the index of `dataset` with `opts` (copied). progress: report
 * mount-time progress on stderr. A mixture file (yfs_mixture.h) opens every
 * source (yfs_mix.h) and returns its source 0, the mount its files are
 * read through. */
int yfs_mount_open(const yfs_options *opts, const char *dataset, int progress, yfs_mount **out,
                   pq_error *err);
/* One dataset (not a mixture file). budget NULL: the mount makes its own
 * accountant; else it shares that one (a mixture's other sources), which
 * must outlive it. */
int yfs_mount_open_source(const yfs_options *opts, const char *dataset, int progress,
                          yfs_budget *budget, yfs_mount **out, pq_error *err);
int yfs_mount_start(yfs_mount *m, pq_error *err);
/* Stop the mount's threads (prefetch workers, I/O engine) and, for a
 * mixture, every source's: builds and loads running finish, nothing is
 * freed. May be called again; yfs_mount_close calls it first. */
void yfs_mount_stop(yfs_mount *m);
void yfs_mount_close(yfs_mount *m);

/* Memory budgets derived from opts.mem. One accountant (m->budget,
 * yfs_budget.h) holds everything held for data, up to yfs_mount_data_budget:
 * mem less yfs_untracked_budget, kept for what no accountant sees (free
 * heap malloc keeps for reuse, which main.c caps at half of that share;
 * FUSE request buffers; thread stacks): three eighths of mem, but no more
 * than 24 MiB and an eighth. test_memory's 8 mixed readers at mem=64M need
 * three eighths (24 MiB); at mem=256M the 8 parts of every shape of the
 * matrix peaked 64-100 MiB below mem with three eighths kept (96 MiB), and
 * the 160 MiB left to data held eight 16 MiB segments and little else:
 * with 56 MiB kept, their builds at 50 ms a read ran 1.2 to 3.4 times as
 * fast. Within it, idle dictionaries are kept up to an
 * eighth of the mount's part of mem (m->mem_part), loaded pages waiting to be
 * served up to a quarter (none with chunk=0); all give way to demand reads
 * (reclaimers), and segments built ahead of readers leave an eighth of the
 * accountant's limit to the builds under way (yfs_budget.h). */
uint64_t yfs_untracked_budget(uint64_t mem);
uint64_t yfs_mount_data_budget(const yfs_mount *m);
uint64_t yfs_mount_dict_budget(const yfs_mount *m);
uint64_t yfs_mount_loaded_budget(const yfs_mount *m);
/* Framed units of cut pages waiting to be served: up to a quarter of the
 * part; streams paused between units as much again. */
uint64_t yfs_mount_framed_budget(const yfs_mount *m);
/* Set the mount's part of mem= and its stores' caps with it, before any
 * thread starts: a mixture's source i keeps its share, so that the sources'
 * stores together keep what one dataset's do (at the whole part each, eight
 * sources' stores could ask for twice the accountant's limit: a mixture of
 * eight files of 64 KiB text pages missed 326 segments an epoch, its readers
 * building them; 10-25 with the shares). */
void yfs_mount_set_mem_part(yfs_mount *m, uint64_t part);

/* Whether the epochs will mix few pages: a segment of `buffer` records
 * holds fewer than 4 shuffle units on average, out of more (pages of up to
 * 2,048 records that are not cut, each record large). Then *note says so
 * and what would help; 0 otherwise. */
int yfs_mount_shuffle_note(const yfs_mount *m, char *note, size_t len);

/* Memory of the index and what the mount keeps beside it for every page or
 * record (the "index" of the memory bound index + mem); a mixture's source
 * 0: of every source. */
uint64_t yfs_mount_index_bytes(const yfs_mount *m);

#endif
