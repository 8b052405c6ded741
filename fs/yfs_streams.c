#include "yfs_streams.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Streams in use remembered for yfs_streams_wait (more are simply not
 * waited for), and the longest such a wait lasts. */
#define MAX_IN_USE 64
#define WAIT_MAX_NS (2000ull * 1000u * 1000u)

typedef struct paused {
    uint32_t page;
    uint64_t unit;
    ix_stream *stream;
    void *dict;
    uint64_t bytes; /* charged as YFS_MEM_PARKED to no hold */
} paused;

typedef struct marked {
    uint64_t unit;
    ix_stream_mark m;
    uint64_t bytes; /* charged as YFS_MEM_MARKS to no hold */
} marked;

struct yfs_streams {
    yfs_budget *budget;
    yfs_dicts *dicts;
    uint64_t cap;
    yfs_stats *stats;
    pthread_mutex_t lock; /* guards what follows */
    paused *list;         /* oldest first; few: a paused stream takes MiBs */
    size_t count, room;
    uint64_t bytes;
    pthread_cond_t ended; /* a stream in use was paused or closed */
    struct in_use {
        uint32_t page;
        uint64_t from;
    } busy[MAX_IN_USE];   /* streams in use (builds' framing threads: few) */
    size_t num_busy;
    marked *marks;        /* by unit */
    size_t num_marks, marks_room;
    uint64_t marks_bytes;
};

/* The share of the cap marks may take. */
#define MARKS_SHARE 8

/* Lock held: page's stream from unit `from` is in use (remembered when
 * there is room: see MAX_IN_USE), and no longer. */
static void mark_in_use(yfs_streams *st, uint32_t page, uint64_t from)
{
    if (st->num_busy < MAX_IN_USE)
        st->busy[st->num_busy++] = (struct in_use){ page, from };
}

static void unmark_in_use(yfs_streams *st, uint32_t page, uint64_t from)
{
    for (size_t i = 0; i < st->num_busy; i++) {
        if (st->busy[i].page == page && st->busy[i].from == from) {
            st->busy[i] = st->busy[--st->num_busy];
            return;
        }
    }
}

/* Lock held: room in the list for `more` paused streams. 0 when out of
 * memory. */
static int make_room(yfs_streams *st, size_t more)
{
    if (st->count + more <= st->room)
        return 1;
    size_t room = st->room ? 2 * st->room : 8;
    if (room < st->count + more)
        room = st->count + more;
    paused *grown = realloc(st->list, room * sizeof *grown);
    if (!grown)
        return 0;
    st->list = grown;
    st->room = room;
    return 1;
}

static void close_paused(yfs_streams *st, paused *p)
{
    yfs_count_unused(st->stats, ix_stream_close(p->stream));
    if (p->dict)
        yfs_dicts_put(st->dicts, p->dict);
    yfs_budget_release(st->budget, p->bytes, YFS_MEM_PARKED, NULL);
}

/* Unlink the oldest paused streams until `bytes` more fit under `limit`
 * (lock held); they are copied to out (room for st->count) for the caller
 * to close once the lock is released. Returns how many. */
static size_t unlink_oldest(yfs_streams *st, uint64_t bytes, uint64_t limit, paused *out)
{
    size_t n = 0;
    while (n < st->count && st->bytes + bytes > limit) {
        out[n] = st->list[n];
        st->bytes -= out[n].bytes;
        n++;
    }
    memmove(st->list, st->list + n, (st->count - n) * sizeof *st->list);
    st->count -= n;
    return n;
}

static void close_all(yfs_streams *st, paused *victims, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close_paused(st, &victims[i]);
    yfs_count(&st->stats->streams_closed, n);
}

/* Lock held: where unit's mark is, or would be inserted (*found: it is). */
static size_t mark_slot(const yfs_streams *st, uint64_t unit, int *found)
{
    size_t lo = 0, hi = st->num_marks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->marks[mid].unit < unit)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < st->num_marks && st->marks[lo].unit == unit;
    return lo;
}

/* Whether paused stream p is one to take out of the list, and what taking
 * it frees in *worth (lock held). */
typedef int (*pick_fn)(const yfs_streams *st, const paused *p, const void *ctx,
                       uint64_t *worth);

/* Lock held: the paused streams `pick` picks, oldest first, until what they
 * are worth reaches `need`, leave the list (their bytes leave st->bytes)
 * for *out, malloc'ed (NULL when there is none, or no memory: then none is
 * taken); returns how many. The rest keep their order. */
static size_t unlink_picked(yfs_streams *st, pick_fn pick, const void *ctx, uint64_t need,
                            paused **out)
{
    paused *picked = st->count ? malloc(st->count * sizeof *picked) : NULL;
    size_t n = 0, kept = 0;
    uint64_t got = 0;
    for (size_t i = 0; i < st->count; i++) {
        paused p = st->list[i];
        uint64_t worth = 0;
        if (picked && got < need && pick(st, &p, ctx, &worth)) {
            picked[n++] = p;
            got += worth;
            st->bytes -= p.bytes;
        } else {
            st->list[kept++] = p;
        }
    }
    st->count = kept;
    *out = picked;
    return n;
}

/* Lock held: whether paused stream p is at a unit whose mark is kept. Such
 * a stream saves whoever continues it one round trip and the mark's 64 KiB
 * block (a list's levels too) over resuming from the mark, for the few
 * hundred KiB to a MiB it holds (ix_stream_bytes). */
static int at_mark(const yfs_streams *st, const paused *p)
{
    int found;
    mark_slot(st, p->unit, &found);
    return found;
}

/* Lock held: what a demand short of room has the paused streams free: the
 * whole of those at marks, the reads ahead of the others. */
static uint64_t for_demand(const yfs_streams *st)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < st->count; i++) {
        const paused *p = &st->list[i];
        bytes += at_mark(st, p) ? p->bytes : ix_stream_sheddable(p->stream);
    }
    return bytes;
}

static int pick_at_mark(const yfs_streams *st, const paused *p, const void *ctx,
                        uint64_t *worth)
{
    (void)ctx;
    *worth = p->bytes;
    return at_mark(st, p);
}

/* Close the oldest paused streams at marks until `need` bytes are freed;
 * returns the bytes freed, *dicts set when one gave a dictionary back.
 * 8 parts of DuckDB's text at 50 ms a read, mem=256M, kept 29 paused
 * streams, 27 MB, of which their reads ahead were 8: demands waited for
 * room two thirds of the time, and the builds waiting held the streams
 * other builds waited for (yfs_streams_wait). Closed for a demand: 326
 * MB/s where 262 (bench/results/streams_at_marks.md). */
static uint64_t close_at_marks(yfs_streams *st, uint64_t need, int *dicts)
{
    pthread_mutex_lock(&st->lock);
    paused *victims;
    size_t n = unlink_picked(st, pick_at_mark, NULL, need, &victims);
    pthread_mutex_unlock(&st->lock);
    uint64_t freed = 0;
    for (size_t i = 0; i < n; i++) {
        freed += victims[i].bytes;
        *dicts |= victims[i].dict != NULL;
    }
    close_all(st, victims, n);
    free(victims);
    return freed;
}

static int pick_reads_ahead(const yfs_streams *st, const paused *p, const void *ctx,
                            uint64_t *worth)
{
    (void)st;
    (void)ctx;
    *worth = ix_stream_sheddable(p->stream);
    return *worth > 0;
}

/* Let go of the reads ahead of the oldest paused streams that hold some
 * (ix_stream_shed) until `need` bytes are freed; returns the bytes freed.
 * Over slow storage they are most of what a paused stream holds, and a
 * stream shed keeps its place (it reads ahead again when continued, one
 * round trip later) where one closed is streamed again from its page's
 * start: 8 parts of DuckDB's text at 50 ms a read and mem=256M closed 76
 * streams of its 16 pages and read 3.5 GB for its 830 MB.
 * Shedding waits for reads in flight, so it runs without the lock: the
 * streams leave the list meanwhile, marked in use, so that a build that
 * needs one waits for it (yfs_streams_wait) and nobody closes it, and come
 * back in front, the oldest still. */
static uint64_t shed_oldest(yfs_streams *st, uint64_t need)
{
    pthread_mutex_lock(&st->lock);
    paused *shed;
    size_t n = unlink_picked(st, pick_reads_ahead, NULL, need, &shed);
    for (size_t i = 0; i < n; i++)
        mark_in_use(st, shed[i].page, shed[i].unit);
    pthread_mutex_unlock(&st->lock);
    uint64_t freed = 0;
    if (n == 0) {
        free(shed);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = ix_stream_shed(shed[i].stream);
        yfs_budget_release(st->budget, bytes, YFS_MEM_PARKED, NULL);
        shed[i].bytes -= bytes;
        freed += bytes;
    }
    pthread_mutex_lock(&st->lock);
    size_t back = make_room(st, n) ? n : 0; /* else they are closed */
    memmove(st->list + back, st->list, st->count * sizeof *st->list);
    memcpy(st->list, shed, back * sizeof *shed);
    st->count += back;
    for (size_t i = 0; i < n; i++) {
        st->bytes += i < back ? shed[i].bytes : 0;
        unmark_in_use(st, shed[i].page, shed[i].unit);
    }
    pthread_cond_broadcast(&st->ended);
    pthread_mutex_unlock(&st->lock);
    close_all(st, shed + back, n - back);
    free(shed);
    return freed;
}

/* A demand read short of room (yfs_budget.h): the paused streams' reads
 * ahead go first (shed_oldest), then the streams paused at marks
 * (close_at_marks: they save one round trip). Out of patience, the other
 * paused streams are closed too: a paused stream saves reading and
 * decoding its page up to where it
 * stopped, so it is closed only once the builds running freed nothing for
 * a while (8 parts of DuckDB's text at 50 ms a read, mem=256M: 152 streams
 * of its 16 pages an epoch when closed at once, about 110 so; at 0 ms 408
 * MB/s against 290), and then, while a build still runs (impatient), only
 * when the streams hold what the demand still lacks: a demand for a 40 MB
 * segment would wait for the builds all the same, and its streams closed
 * for it are read again for nothing (8 parts of DuckDB's tokens at 10 ms a
 * read: 33-56 streams closed an epoch instead of 57-67, 42-48 MB/s instead
 * of 29-37, bench/results/stream_copies.md; 8 parts of DuckDB's text from
 * S3 lost 10-20% with it, a trade not yet resolved). Once nothing running
 * could make room they go as needed. A stream closed gives its dictionary back to the
 * cache, idle now: the returned time (now) has the waiter call the
 * reclaimers again, so that the dictionary cache's drops it too. */
static uint64_t reclaim(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    yfs_streams *st = ctx;
    (void)asking; /* the same for every activity */
    if (demand < YFS_RECLAIM_DEMAND)
        return 0;
    int dicts = 0;
    uint64_t freed = shed_oldest(st, need);
    if (freed < need)
        freed += close_at_marks(st, need - freed, &dicts);
    if (demand < YFS_RECLAIM_IMPATIENT || freed >= need)
        return dicts ? yfs_now_ns() : 0;
    uint64_t lacking = need - freed;
    pthread_mutex_lock(&st->lock);
    /* impatient: not when closing them all would not let it through */
    int close = demand > YFS_RECLAIM_IMPATIENT || st->bytes >= lacking;
    paused *victims = close && st->count ? malloc(st->count * sizeof *victims) : NULL;
    size_t n = 0;
    if (victims)
        n = unlink_oldest(st, 0, st->bytes > lacking ? st->bytes - lacking : 0, victims);
    pthread_mutex_unlock(&st->lock);
    for (size_t i = 0; i < n; i++)
        dicts |= victims[i].dict != NULL;
    close_all(st, victims, n);
    free(victims);
    return dicts ? yfs_now_ns() : 0;
}

/* What reclaim frees: for a demand read, the paused streams' reads ahead
 * and the streams paused at marks (for_demand); out of patience, every
 * paused stream (their dictionaries, idle once closed, are the dictionary
 * cache's to count). */
static uint64_t idle(void *ctx, int demand, const yfs_hold *asking)
{
    yfs_streams *st = ctx;
    (void)asking; /* the same for every activity */
    if (demand < YFS_RECLAIM_DEMAND)
        return 0;
    pthread_mutex_lock(&st->lock);
    uint64_t bytes = demand < YFS_RECLAIM_IMPATIENT ? for_demand(st) : st->bytes;
    pthread_mutex_unlock(&st->lock);
    return bytes;
}

yfs_streams *yfs_streams_new(yfs_budget *budget, yfs_dicts *dicts, uint64_t cap,
                             yfs_stats *stats)
{
    yfs_streams *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->budget = budget;
    st->dicts = dicts;
    st->cap = cap;
    st->stats = stats;
    pthread_mutex_init(&st->lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&st->ended, &monotonic);
    pthread_condattr_destroy(&monotonic);
    yfs_budget_add_reclaimer(budget, reclaim, idle, st);
    return st;
}

void yfs_streams_set_cap(yfs_streams *st, uint64_t cap)
{
    pthread_mutex_lock(&st->lock);
    assert(st->count == 0);
    st->cap = cap;
    pthread_mutex_unlock(&st->lock);
}

void yfs_streams_free(yfs_streams *st)
{
    if (!st)
        return;
    close_all(st, st->list, st->count);
    free(st->list);
    for (size_t i = 0; i < st->num_marks; i++)
        ix_stream_mark_free(&st->marks[i].m);
    yfs_budget_release(st->budget, st->marks_bytes, YFS_MEM_MARKS, NULL);
    free(st->marks);
    assert(st->num_busy == 0);
    pthread_cond_destroy(&st->ended);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void yfs_streams_put(yfs_streams *st, uint32_t page, uint64_t unit, ix_stream *s, void *dict,
                     uint64_t charged, yfs_hold *hold)
{
    uint64_t bytes = ix_stream_bytes(s);
    assert(bytes <= charged); /* what it holds is within its charge */
    yfs_budget_release(st->budget, charged - bytes, YFS_MEM_DECODED, hold);
    /* Over the cap, the paused streams' reads ahead go before any of them
     * is closed: 8 parts of DuckDB's tokens at 50 ms a read filled the
     * store with a dozen streams holding 4 MiB of windows each and closed
     * 150-190 an epoch, each read again from its page's start. */
    pthread_mutex_lock(&st->lock);
    uint64_t over = st->bytes + bytes > st->cap ? st->bytes + bytes - st->cap : 0;
    pthread_mutex_unlock(&st->lock);
    if (over)
        shed_oldest(st, over);
    paused p = { page, unit, s, dict, bytes };
    pthread_mutex_lock(&st->lock);
    paused *victims = malloc((st->count + 1) * sizeof *victims);
    size_t n = 0;
    int kept = bytes <= st->cap && victims && make_room(st, 1);
    if (kept) {
        n = unlink_oldest(st, bytes, st->cap, victims);
        yfs_budget_transfer(st->budget, bytes, YFS_MEM_DECODED, hold, YFS_MEM_PARKED, NULL);
        st->list[st->count++] = p;
        st->bytes += bytes;
    }
    pthread_mutex_unlock(&st->lock);
    if (!kept) {
        yfs_count_unused(st->stats, ix_stream_close(s));
        if (dict)
            yfs_dicts_put(st->dicts, dict);
        yfs_budget_release(st->budget, bytes, YFS_MEM_DECODED, hold);
        n = 0;
        yfs_count(&st->stats->streams_closed, 1);
    }
    close_all(st, victims, n);
    free(victims);
}

ix_stream *yfs_streams_take(yfs_streams *st, uint32_t page, uint64_t unit, uint64_t first_unit,
                            yfs_hold *hold, uint64_t *at, void **dict, uint64_t *charged)
{
    ix_stream *s = NULL;
    pthread_mutex_lock(&st->lock);
    size_t best = st->count;
    for (size_t i = 0; i < st->count; i++) {
        const paused *p = &st->list[i];
        if (p->page == page && p->unit <= unit && (best == st->count || p->unit > st->list[best].unit))
            best = i;
    }
    *at = first_unit;
    if (best < st->count) {
        paused *p = &st->list[best];
        s = p->stream;
        *at = p->unit;
        *dict = p->dict;
        *charged = p->bytes;
        st->bytes -= p->bytes;
        yfs_budget_transfer(st->budget, p->bytes, YFS_MEM_PARKED, NULL, YFS_MEM_DECODED, hold);
        memmove(p, p + 1, (st->count - best - 1) * sizeof *p);
        st->count--;
    }
    mark_in_use(st, page, *at);
    pthread_mutex_unlock(&st->lock);
    if (s)
        yfs_count(&st->stats->streams_resumed, 1);
    return s;
}

void yfs_streams_end(yfs_streams *st, uint32_t page, uint64_t from)
{
    pthread_mutex_lock(&st->lock);
    unmark_in_use(st, page, from);
    pthread_cond_broadcast(&st->ended);
    pthread_mutex_unlock(&st->lock);
}

/* ---- marks ---- */

int yfs_streams_marked(yfs_streams *st, uint64_t unit)
{
    int found;
    pthread_mutex_lock(&st->lock);
    mark_slot(st, unit, &found);
    pthread_mutex_unlock(&st->lock);
    return found;
}

int yfs_streams_mark_offset(yfs_streams *st, uint64_t unit, uint64_t *offset)
{
    int found;
    pthread_mutex_lock(&st->lock);
    size_t at = mark_slot(st, unit, &found);
    if (found)
        *offset = st->marks[at].m.body_offset;
    pthread_mutex_unlock(&st->lock);
    return found;
}

void yfs_streams_mark(yfs_streams *st, uint64_t unit, ix_stream_mark *m)
{
    uint64_t bytes = ix_stream_mark_bytes(m);
    /* reserved with no lock of the store held: its reclaimer takes it */
    int charged = yfs_budget_reserve(st->budget, bytes, YFS_MEM_MARKS, YFS_TRY, NULL) == 0;
    int found = 1;
    pthread_mutex_lock(&st->lock);
    size_t at = mark_slot(st, unit, &found);
    int kept = charged && !found && st->marks_bytes + bytes <= st->cap / MARKS_SHARE;
    if (kept && st->num_marks == st->marks_room) {
        size_t room = st->marks_room ? 2 * st->marks_room : 64;
        marked *grown = realloc(st->marks, room * sizeof *grown);
        kept = grown != NULL;
        if (grown) {
            st->marks = grown;
            st->marks_room = room;
        }
    }
    if (kept) {
        memmove(st->marks + at + 1, st->marks + at, (st->num_marks - at) * sizeof *st->marks);
        st->marks[at] = (marked){ unit, *m, bytes };
        st->num_marks++;
        st->marks_bytes += bytes;
    }
    pthread_mutex_unlock(&st->lock);
    if (kept) {
        yfs_count(&st->stats->units_marked, 1);
        return;
    }
    ix_stream_mark_free(m);
    if (charged)
        yfs_budget_release(st->budget, bytes, YFS_MEM_MARKS, NULL);
}

int yfs_streams_take_mark(yfs_streams *st, uint32_t page, uint64_t unit, ix_stream_mark *m)
{
    int found;
    pthread_mutex_lock(&st->lock);
    size_t at = mark_slot(st, unit, &found);
    for (size_t i = 0; found && i < st->count; i++)
        found = !(st->list[i].page == page && st->list[i].unit == unit);
    found = found && ix_stream_mark_copy(m, &st->marks[at].m) == 0;
    if (found)
        mark_in_use(st, page, unit);
    pthread_mutex_unlock(&st->lock);
    return found;
}

static int pick_page(const yfs_streams *st, const paused *p, const void *page, uint64_t *worth)
{
    (void)st;
    *worth = 0; /* every one of the page's */
    return p->page == *(const uint32_t *)page;
}

void yfs_streams_forget_page(yfs_streams *st, uint32_t page, uint64_t first_unit,
                             uint64_t end_unit)
{
    pthread_mutex_lock(&st->lock);
    int found;
    size_t from = mark_slot(st, first_unit, &found), to = mark_slot(st, end_unit, &found);
    uint64_t bytes = 0;
    for (size_t i = from; i < to; i++) {
        bytes += st->marks[i].bytes;
        ix_stream_mark_free(&st->marks[i].m);
    }
    memmove(st->marks + from, st->marks + to, (st->num_marks - to) * sizeof *st->marks);
    st->num_marks -= to - from;
    st->marks_bytes -= bytes;
    paused *victims;
    size_t n = unlink_picked(st, pick_page, &page, UINT64_MAX, &victims);
    pthread_mutex_unlock(&st->lock);
    yfs_budget_release(st->budget, bytes, YFS_MEM_MARKS, NULL);
    close_all(st, victims, n);
    free(victims);
}

/* Lock held: whether a stream of page positioned at or before unit is in use. */
static int in_use_before(const yfs_streams *st, uint32_t page, uint64_t unit)
{
    for (size_t i = 0; i < st->num_busy; i++)
        if (st->busy[i].page == page && st->busy[i].from <= unit)
            return 1;
    return 0;
}

int yfs_streams_busy(yfs_streams *st, uint32_t page, uint64_t unit)
{
    pthread_mutex_lock(&st->lock);
    int busy = in_use_before(st, page, unit);
    pthread_mutex_unlock(&st->lock);
    return busy;
}

int yfs_streams_wait(yfs_streams *st, uint32_t page, uint64_t unit, yfs_hold *hold)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t deadline = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + WAIT_MAX_NS;
    struct timespec at = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
    pthread_mutex_lock(&st->lock);
    if (!in_use_before(st, page, unit)) {
        pthread_mutex_unlock(&st->lock);
        return 0; /* nothing to wait for: the hold is not counted as waiting */
    }
    /* the budget's lock under this one, as in yfs_streams_put */
    yfs_hold_wait_begin(st->budget, hold);
    int waited = 0;
    while (in_use_before(st, page, unit)) {
        if (pthread_cond_timedwait(&st->ended, &st->lock, &at) != 0) {
            waited = 0; /* too long: the caller streams the page itself */
            break;
        }
        waited = 1;
    }
    pthread_mutex_unlock(&st->lock);
    yfs_hold_wait_end(st->budget, hold);
    return waited;
}
