/* yfs_stats.h — live counters of a mount, shown in .youmufs/stats.json.
 * Relaxed atomics: each counter is exact, a snapshot of several is not
 * necessarily simultaneous. */
#ifndef YFS_STATS_H
#define YFS_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef struct yfs_stats {
    _Atomic uint64_t bytes_read;        /* from storage: pages and dictionaries */
    _Atomic uint64_t bytes_read_unused; /* ... of them streams read ahead and let go unused */
    _Atomic uint64_t page_bytes;        /* stored bytes of the pages decoded */
    _Atomic uint64_t pages_decoded;
    _Atomic uint64_t pages_streamed;    /* decoded in windows (ix_stream.h), too large to decode whole */
    _Atomic uint64_t streams_resumed;   /* paused page streams continued for their next unit */
    _Atomic uint64_t streams_closed;    /* paused page streams closed unused (room, memory) */
    _Atomic uint64_t streams_forked;    /* paused copies left at units a stream passed over */
    _Atomic uint64_t units_marked;      /* marks kept at units' first records (yfs_streams.h) */
    _Atomic uint64_t streams_from_marks; /* page streams resumed from a unit's mark */
    _Atomic uint64_t chunk_loads;       /* physical chunks read in one I/O */
    _Atomic uint64_t loads_ahead;       /* ... of them by the I/O engine, ahead of the builds */
    _Atomic uint64_t storage_wait_nanoseconds; /* builds waiting for storage: for a load in
                                                  flight, running one, reading a page alone */
    _Atomic uint64_t pages_from_chunks; /* pages served from a chunk load */
    _Atomic uint64_t pages_read_alone;  /* pages read on their own */
    _Atomic uint64_t reads_together;    /* reads of several queued pages of a load at once */
    _Atomic uint64_t pages_read_together; /* ... the pages they brought */
    _Atomic uint64_t loaded_pages_dropped; /* loaded pages dropped for memory */
    _Atomic uint64_t redirections;      /* served pages other than requested, by plans built */
    _Atomic uint64_t decode_nanoseconds; /* decompressing and decoding pages */
    _Atomic uint64_t dictionaries_loaded;
    _Atomic uint64_t segments_built;
    _Atomic uint64_t segments_prefetched; /* built ahead of the reader */
    _Atomic uint64_t segment_hits;      /* a read found its segment ready */
    _Atomic uint64_t segment_waits;     /* ... found it being built, and waited */
    _Atomic uint64_t segment_misses;    /* ... had to build it itself */
    _Atomic uint64_t segments_evicted;
    _Atomic uint64_t memory_waits;      /* demand builds that waited for room in mem */
    _Atomic uint64_t bytes_served;
    _Atomic uint64_t read_requests;
    _Atomic uint64_t read_errors;
    _Atomic uint64_t build_nanoseconds; /* time spent reading, decoding, framing */
    /* Gauges (up and down): */
    _Atomic uint64_t reads_in_flight;   /* read requests being served */
    _Atomic uint64_t reads_waiting;     /* ... waiting for a segment another thread builds */
    _Atomic uint64_t storage_reads_in_flight; /* reads of source files under way */
} yfs_stats;

static inline void yfs_count(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* A stream closed (ix_stream_close's return): what it read ahead and let go
 * unused was read from storage all the same. */
static inline void yfs_count_unused(yfs_stats *s, uint64_t n)
{
    yfs_count(&s->bytes_read, n);
    yfs_count(&s->bytes_read_unused, n);
}

/* CLOCK_MONOTONIC in nanoseconds: for the *_nanoseconds counters, and for
 * deadlines of condition variables set to that clock. */
static inline uint64_t yfs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A gauge going down (up is yfs_count). */
static inline void yfs_uncount(_Atomic uint64_t *gauge, uint64_t n)
{
    atomic_fetch_sub_explicit(gauge, n, memory_order_relaxed);
}

static inline uint64_t yfs_counter(_Atomic uint64_t *counter)
{
    return atomic_load_explicit(counter, memory_order_relaxed);
}

#endif
