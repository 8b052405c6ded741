/* yfs_budget.h — the one memory accountant of a mount: every byte the
 * daemon holds for data is reserved here before it is allocated and
 * released when it is freed (invariant 4). The index and what the mount
 * keeps per page or record are counted apart (yfs_mount_index_bytes).
 *
 * Kinds. Each reservation names what the bytes are for, so stats.json shows
 * what holds memory (yfs_budget_snapshot). Bytes may change kind or holder
 * without being freed (yfs_budget_transfer): a chunk's page copy becomes a
 * parked page, a parked page becomes the raw page a build decodes.
 *
 * Modes.
 *   YFS_DEMAND   a read needs it now: waits for room (see below).
 *   YFS_TRY      needed now, but the caller cannot wait (it holds something
 *                others may need): taken when it fits, else refused.
 *   YFS_PREFETCH speculative (prefetch, chunk loads, parked pages): taken
 *                only when it leaves an eighth of the limit free (room for
 *                what running builds reserve as they go) and no demand
 *                reservation is waiting, so prefetch never takes room a
 *                waiting demand read needs;
 *                refused at once otherwise, and the caller goes without
 *                (correctness never depends on memory, only speed does).
 *   YFS_FORCE    never waits, never fails; charged over the limit when it
 *                must (and counted in over_budget). For memory whose owner
 *                cannot wait: plans (charged under the plan cache's lock) and
 *                read buffers (a FUSE request's reply, filled from segments
 *                one at a time: at most one request's bytes per thread).
 * Before refusing or waiting, every mode calls the reclaimers (idle
 * segments, idle dictionaries, parked pages drop what they may for it),
 * but a demand or try reservation only when that lets it through, or when
 * nothing else could make room (see "Patience" below).
 *
 * Holds and the rule against deadlock. A hold (yfs_hold) is one activity
 * that reserves step by step and frees only at its end: a segment build and
 * its helper threads. Its threads enter and leave it (yfs_hold_enter/leave);
 * a hold is BLOCKED when all its threads wait in yfs_budget_reserve. Rule:
 *   a thread waits for room only in yfs_budget_reserve(YFS_DEMAND), and
 *   only while it holds nothing outside its hold that anyone else waits for:
 *   no segment reference, no dictionary in use, no lock. What its hold
 *   holds is counted as blocked while it waits.
 * Room then comes from memory no blocked hold holds: readers finishing with
 * segments, reclaimers, builds that still run. A demand reservation that
 * does not fit proceeds anyway, over the limit, only when no such memory is
 * left: every byte charged is held by blocked holds, is a plan (plans live
 * as long as their files are open), a mark (marks are never let go: a few
 * hundred bytes each, they save reading a page from its start) or a read
 * buffer (its reader keeps it while it waits for the next segment). A
 * reservation that holds nothing yet (a build about to start) goes over
 * only when nothing but plans, marks and read buffers is charged: blocked
 * holds go on by this rule themselves.
 * In particular a request larger than the whole limit proceeds only when
 * nothing else holds memory but plans, marks, read buffers and the
 * requester's own hold; it is counted (over_budget)
 * and runs alone: the next request waits for it. With one such proceeding
 * at a time, waits always end.
 *
 * Patience. Idle memory is dropped only for a reservation it lets through:
 * a reservation that would wait anyway keeps the caches and waits for the
 * builds running to free room (dictionaries dropped for decodes that still
 * could not start were read again inside the one decode that fit: 8 parts
 * of tokens at 50 ms per read served 5 MB/s, one dictionary read at a
 * time). What the reclaimers would drop is asked of their idle functions.
 * The caches are dropped after all when a wait of YFS_BUDGET_PATIENCE_NS
 * passes with nothing freed (idle counts may be short: a paused stream's
 * dictionary goes idle only once the stream is closed), but for the working
 * set a reclaimer keeps while builds still run (the dictionaries used last:
 * dropped at every such wait, 8 parts of tokens at 50 ms a read loaded a
 * dictionary for nearly every page decoded, inside the decode). That goes
 * too after a second such wait: what stuck_for counts may be short as well
 * (32 readers at mem=32M hung for good with it kept). Everything idle goes
 * at once when nothing but idle and stuck memory is charged (nobody running
 * could free room).
 *
 * Thread-safe: one mutex guards the counters and every hold's fields.
 * Reclaimers are called without it; a thread that calls
 * yfs_budget_reserve must not hold a lock a reclaimer takes.
 */
#ifndef YFS_BUDGET_H
#define YFS_BUDGET_H

#include <stdint.h>

#include "pq_column.h"
#include "yfs_stats.h"

typedef enum yfs_mem_kind {
    YFS_MEM_SEGMENTS,     /* framed segment buffers, built or being built */
    YFS_MEM_DECODED,      /* decoded pages: storage, values, levels, copies */
    YFS_MEM_RAW,          /* raw (compressed) pages a build is about to decode */
    YFS_MEM_BUILD,        /* a build's record lists and order arrays */
    YFS_MEM_DICTIONARIES, /* decoded dictionaries, in use and idle */
    YFS_MEM_CHUNKS,       /* chunk-load buffers (one I/O of several pages) */
    YFS_MEM_PARKED,       /* loaded pages waiting for the segment that serves them */
    YFS_MEM_PLANS,        /* epoch plans (their arrays) */
    YFS_MEM_MARKS,        /* marks of units' first records (yfs_streams.h), kept for good */
    YFS_MEM_READS,        /* read buffers: a request's bytes copied out of segments */
    YFS_MEM_KINDS
} yfs_mem_kind;

typedef enum yfs_mem_mode { YFS_DEMAND, YFS_TRY, YFS_PREFETCH, YFS_FORCE } yfs_mem_mode;

typedef struct yfs_budget yfs_budget;

/* One activity's reservations (see above). Zero-initialise it; fields are
 * the accountant's (guarded by its mutex). */
typedef struct yfs_hold {
    uint64_t bytes; /* reserved through this hold and not yet released or handed on */
    int threads;    /* threads that entered */
    int waiting;    /* of those, waiting in yfs_budget_reserve */
} yfs_hold;

/* A reclaimer frees idle memory for a reservation short of `need` bytes
 * (releasing it through yfs_budget_release), made for `asking` (the
 * reservation's hold: NULL when it has none; a reclaimer may keep for
 * later what that activity is ahead of), and returns the CLOCK_MONOTONIC
 * time (ns) at which it may free more than it could now (idle memory going
 * stale), or 0. `demand` is 0 for YFS_PREFETCH reservations: free only what
 * is worthless then; YFS_RECLAIM_DEMAND for a demand (or try) reservation;
 * YFS_RECLAIM_IMPATIENT for a demand reservation out of patience while
 * others still run (see Patience): everything idle but the reclaimer's
 * working set; YFS_RECLAIM_ALL when nothing running could make room, or
 * after a second wait for nothing: everything idle must go. Called without the accountant's lock, possibly
 * by several threads at once. */
#define YFS_RECLAIM_DEMAND 1
#define YFS_RECLAIM_IMPATIENT 2
#define YFS_RECLAIM_ALL 3
typedef uint64_t (*yfs_reclaim_fn)(void *ctx, uint64_t need, int demand,
                                   const yfs_hold *asking);
/* Its count: the bytes the reclaimer would free now at level `demand` (a
 * YFS_RECLAIM_* level) for a reservation of `asking` of unbounded need,
 * without freeing them. Called without the accountant's lock. */
typedef uint64_t (*yfs_idle_fn)(void *ctx, int demand, const yfs_hold *asking);

/* How long a reservation that may wait keeps the caches (see Patience). */
#define YFS_BUDGET_PATIENCE_NS (100u * 1000u * 1000u)

/* An accountant of `limit` bytes. stats (may be NULL): memory_waits counts
 * demand reservations that waited. NULL when out of memory. */
yfs_budget *yfs_budget_new(uint64_t limit, yfs_stats *stats);
/* Every byte must have been released (asserted). */
void yfs_budget_free(yfs_budget *b);
/* Register a reclaimer and its count (at most 512; before any reservation
 * is made). */
void yfs_budget_add_reclaimer(yfs_budget *b, yfs_reclaim_fn fn, yfs_idle_fn idle, void *ctx);

/* Reserve `bytes` of `kind` for `hold` (NULL: the caller holds nothing and
 * the bytes belong to no activity). Returns 0 when reserved, -1 when refused
 * (YFS_TRY, YFS_PREFETCH only). A YFS_DEMAND caller with a hold must have
 * entered it. */
int yfs_budget_reserve(yfs_budget *b, uint64_t bytes, yfs_mem_kind kind, yfs_mem_mode mode,
                       yfs_hold *hold);
void yfs_budget_release(yfs_budget *b, uint64_t bytes, yfs_mem_kind kind, yfs_hold *hold);
/* Bytes already reserved change kind and/or holder (either hold may be
 * NULL); nothing is allocated or freed. */
void yfs_budget_transfer(yfs_budget *b, uint64_t bytes, yfs_mem_kind from, yfs_hold *from_hold,
                         yfs_mem_kind to, yfs_hold *to_hold);
/* A reservation of `reserved` bytes whose exact size turned out to be
 * `exact`: the difference is released, or, when the estimate was short,
 * charged with YFS_FORCE (counted over budget only if it goes over). */
void yfs_budget_settle(yfs_budget *b, uint64_t reserved, uint64_t exact, yfs_mem_kind kind,
                       yfs_hold *hold);

void yfs_hold_enter(yfs_budget *b, yfs_hold *h);
/* A thread leaves; the hold may still hold bytes (handed on later). */
void yfs_hold_leave(yfs_budget *b, yfs_hold *h);
/* A thread of hold h (entered; NULL: none) waits outside the accountant for
 * something only other holds' progress ends: a unit another build frames
 * into its slot (yfs_wants.h). It counts as waiting, like a demand
 * reservation, from begin to end: while that build waits for room itself
 * (a stream growing its charge: yfs_units.c), the memory of both is
 * blocked, and the rule above lets it through once nothing else could
 * make room. */
void yfs_hold_wait_begin(yfs_budget *b, yfs_hold *h);
void yfs_hold_wait_end(yfs_budget *b, yfs_hold *h);

/* How many bytes are missing for `bytes` more to fit under the limit right
 * now (0: they fit). A hint for callers that free their own memory first. */
uint64_t yfs_budget_shortfall(yfs_budget *b, uint64_t bytes);
/* Hand the heap's free memory back to the system (malloc_trim) when it is
 * due. Memory freed in the middle of the heap stays resident for malloc to
 * reuse, so the heap holds about the most its kinds ever held (everything
 * but segments and chunk buffers, which are mapped), and the mapped kinds
 * come on top of that: 8 readers at mem=64M peaked at 86 MiB, 52 with a
 * trim after every build. A trim makes the next use of those pages fault
 * them in again (0.73-0.93 of the throughput when done after every build),
 * so it is due only when a demand reservation waits for room, or when the
 * heap's high-water mark plus the mapped kinds passes the limit by an
 * eighth with at least a sixteenth of the limit free in the heap. Called
 * by builds when they have freed their working memory, without locks. */
void yfs_budget_trim_heap(yfs_budget *b);
/* Whether a demand reservation is waiting for room. */
int yfs_budget_demand_waiting(yfs_budget *b);
/* Memory became reclaimable (a segment went idle): waiters retry. */
void yfs_budget_notify(yfs_budget *b);
uint64_t yfs_budget_limit(const yfs_budget *b);
/* What YFS_PREFETCH reservations may fill the budget up to (the limit less
 * the eighth kept for builds under way). */
uint64_t yfs_budget_prefetch_limit(const yfs_budget *b);
uint64_t yfs_budget_used(yfs_budget *b);

typedef struct yfs_budget_snapshot {
    uint64_t limit, used, peak;
    uint64_t bytes[YFS_MEM_KINDS], peak_bytes[YFS_MEM_KINDS];
    uint64_t demand_waits;      /* demand reservations that waited */
    uint64_t demand_waiting;    /* ... waiting now */
    uint64_t prefetch_refused;  /* prefetch (and try) reservations refused */
    uint64_t over_budget;       /* reservations that went over the limit */
    uint64_t max_over_bytes;    /* the most used went over the limit by */
    uint64_t heap_trims;        /* times yfs_budget_trim_heap handed the heap back */
} yfs_budget_snapshot;

void yfs_budget_snapshot_get(yfs_budget *b, yfs_budget_snapshot *out);
/* "segments", "decoded_pages", ... (the names stats.json uses). */
const char *yfs_mem_kind_name(yfs_mem_kind kind);

/* Upper bound of the heap bytes that decoding the data page(s) in raw[0..len)
 * of a column of pq_packed_width packed_width allocates at once
 * (decompressed storage, values packed or slices, level arrays and their
 * scratch, values materialised by the encoding, a dictionary-index array),
 * computed from the page headers alone by walking them: a raw run may hold
 * several pages (a row continued on the next page), whose packed values are
 * then copied into one run. Packed values are the page's own; values copied
 * out of a dictionary as slices (pq_page_values_own, byte arrays) are not
 * included (their size is known only after decoding: the caller reserves
 * them then). Headers that do not parse end the walk (the decoder reports
 * them). */
uint64_t yfs_decode_bound(const uint8_t *raw, uint64_t len, uint32_t packed_width);
/* The same for one page, from its parsed header (0 for a page that is not a
 * data page). */
uint64_t yfs_decode_bound_page(const pq_page_header *h, uint32_t packed_width);

#endif
