#include "yfs_budget.h"

#include <assert.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ix_claims.h"
#include "pq_page.h"

/* A mount registers 5; the mounts of a mixture's sources (at most
 * SH_MIX_MAX_SOURCES, 100) share one accountant. */
#define MAX_RECLAIMERS 512

/* A demand reservation waiting for room, in the accountant's FIFO list. */
typedef struct waiter {
    uint64_t bytes;
    pthread_cond_t wake;  /* signalled when it may proceed, or should retry reclaiming */
    struct waiter *next;
} waiter;

struct yfs_budget {
    uint64_t limit;
    yfs_stats *stats;
    struct {
        yfs_reclaim_fn fn;
        yfs_idle_fn idle;
        void *ctx;
    } reclaimers[MAX_RECLAIMERS];
    int num_reclaimers;     /* fixed before the first reservation */
    pthread_mutex_t lock;   /* guards everything below and every hold */
    pthread_condattr_t monotonic; /* waiters' conditions: deadlines are CLOCK_MONOTONIC */
    waiter *first, *last;   /* waiting demand reservations, oldest first */
    uint64_t used, peak;
    uint64_t bytes[YFS_MEM_KINDS], peak_bytes[YFS_MEM_KINDS];
    uint64_t heap_high;     /* the most the heap kinds held since the heap was last trimmed */
    uint64_t blocked;       /* bytes of blocked holds (all their threads waiting) */
    int demand_waiters;
    /* Counts wake() calls: a waiter that saw it move while it ran the
     * reclaimers (without the lock) does not go to sleep, since the signal
     * meant for it may have come before it waited. 8 readers at mem=64M
     * hung for good when a parked page came in just then: every waiter
     * asleep without a deadline, the page never reclaimed. */
    uint64_t changes;
    /* Counts releases and notices (memory freed or gone idle): a patient
     * wait that saw none for YFS_BUDGET_PATIENCE_NS ran out of patience.
     * Not changes: a waiter's own hold turning blocked wakes the others. */
    uint64_t freed;
    uint64_t demand_waits, refused, over_budget, max_over, heap_trims;
};

static const char *const kind_names[YFS_MEM_KINDS] = {
    "segments", "decoded_pages", "raw_pages", "build_arrays", "dictionaries",
    "chunk_buffers", "parked_pages", "plans", "marks", "read_buffers",
};

const char *yfs_mem_kind_name(yfs_mem_kind kind)
{
    return kind_names[kind];
}

yfs_budget *yfs_budget_new(uint64_t limit, yfs_stats *stats)
{
    yfs_budget *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->limit = limit;
    b->stats = stats;
    /* glibc's allocator sets itself up on its first call, unlocked: two
     * threads whose first calls race both count as its arena's, and the
     * second of them to exit aborts ("a->attached_threads > 0"). Under
     * AddressSanitizer malloc and mallopt are its own, and the first call
     * glibc saw was yfs_budget_trim_heap's, from two builds at once (CI
     * aborted so). The accountant is made before the threads that trim. */
    malloc_trim(0);
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_init(&b->monotonic);
    pthread_condattr_setclock(&b->monotonic, CLOCK_MONOTONIC);
    return b;
}

void yfs_budget_free(yfs_budget *b)
{
    if (!b)
        return;
    assert(b->used == 0 && b->blocked == 0 && b->demand_waiters == 0 && !b->first);
    pthread_condattr_destroy(&b->monotonic);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

void yfs_budget_add_reclaimer(yfs_budget *b, yfs_reclaim_fn fn, yfs_idle_fn idle, void *ctx)
{
    assert(b->num_reclaimers < MAX_RECLAIMERS && b->used == 0);
    b->reclaimers[b->num_reclaimers].fn = fn;
    b->reclaimers[b->num_reclaimers].idle = idle;
    b->reclaimers[b->num_reclaimers].ctx = ctx;
    b->num_reclaimers++;
}

static int is_blocked(const yfs_hold *h)
{
    return h && h->threads > 0 && h->waiting == h->threads;
}

/* Lock held: the hold's bytes change by +add -sub. */
static void hold_adjust(yfs_budget *b, yfs_hold *h, uint64_t add, uint64_t sub)
{
    if (!h)
        return;
    assert(h->bytes + add >= sub);
    if (is_blocked(h))
        b->blocked = b->blocked + add - sub;
    h->bytes = h->bytes + add - sub;
}

/* Lock held: what the kinds that live on the heap hold (all but segments
 * and chunk buffers, which are mapped: yfs_segment_alloc). */
static uint64_t heap_bytes(const yfs_budget *b)
{
    return b->used - b->bytes[YFS_MEM_SEGMENTS] - b->bytes[YFS_MEM_CHUNKS];
}

/* Lock held: after bytes came to a kind. */
static void note_heap_high(yfs_budget *b)
{
    uint64_t heap = heap_bytes(b);
    if (heap > b->heap_high)
        b->heap_high = heap;
}

/* Lock held: charge bytes of kind to hold. */
static void take(yfs_budget *b, uint64_t bytes, yfs_mem_kind kind, yfs_hold *h)
{
    b->used += bytes;
    b->bytes[kind] += bytes;
    if (b->used > b->peak)
        b->peak = b->used;
    if (b->bytes[kind] > b->peak_bytes[kind])
        b->peak_bytes[kind] = b->bytes[kind];
    note_heap_high(b);
    if (b->used > b->limit) {
        b->over_budget++;
        if (b->used - b->limit > b->max_over)
            b->max_over = b->used - b->limit;
    }
    hold_adjust(b, h, bytes, 0);
}

/* Call the reclaimers in the order registered (cheapest loss first) with
 * the lock released, each for what is still missing (lock held on entry and
 * return); returns the earliest retry time one of them gave (0: none). */
/* Speculation stops short of the limit by limit / PREFETCH_HEADROOM: the
 * builds running (a page's raw and decoded bytes, chunk buffers, streams)
 * reserve as they go, and with prefetched segments filling the budget to
 * its last byte each of those reservations dropped a prefetched segment
 * not read yet, built again soon after (8 readers of pyarrow text at
 * mem=512M built 219-243 of the plan's 170 segments; with an eighth kept,
 * 170). */
#define PREFETCH_HEADROOM 8

/* What a reservation in `mode` may fill the budget up to. */
static uint64_t limit_of(const yfs_budget *b, yfs_mem_mode mode)
{
    return mode == YFS_PREFETCH ? b->limit - b->limit / PREFETCH_HEADROOM : b->limit;
}

static int fits(const yfs_budget *b, uint64_t bytes, yfs_mem_mode mode)
{
    return b->used + bytes <= limit_of(b, mode);
}

/* Ask the reclaimers for room for `bytes` in `mode`, up to that mode's
 * limit (a prefetch's, short of the whole: asked for room only past the
 * whole limit, they freed nothing while a prefetch was refused between the
 * two, and idle segments read to the end kept the headroom full for good),
 * at `level` (a yfs_reclaim_fn's `demand`). */
static uint64_t reclaim(yfs_budget *b, uint64_t bytes, yfs_mem_mode mode, int level,
                        const yfs_hold *asking)
{
    uint64_t retry = 0, limit = limit_of(b, mode);
    for (int i = 0; i < b->num_reclaimers && b->used + bytes > limit; i++) {
        uint64_t need = b->used + bytes - limit;
        pthread_mutex_unlock(&b->lock);
        uint64_t at = b->reclaimers[i].fn(b->reclaimers[i].ctx, need, level, asking);
        pthread_mutex_lock(&b->lock);
        if (at && (!retry || at < retry))
            retry = at;
    }
    return retry;
}

/* Bytes that only waiting can free: what blocked holds hold (a blocked
 * hold frees only after its wait), plans (they stay while their files are
 * open), marks (kept for good) and read buffers (their readers wait for the
 * next segment). Lock held. */
static uint64_t stuck_for_good(const yfs_budget *b)
{
    return b->bytes[YFS_MEM_PLANS] + b->bytes[YFS_MEM_MARKS] + b->bytes[YFS_MEM_READS];
}

static uint64_t stuck(const yfs_budget *b)
{
    return b->blocked + stuck_for_good(b);
}

/* What stays charged however long a demand reservation of `hold` waits
 * (lock held). A reservation that holds nothing yet (a build about to
 * start) counts only what is stuck for good: blocked holds go on by the
 * over-the-limit rule themselves, and a new build that went over beside
 * them made every reader's next build go over too (8 readers at mem=64M:
 * 240 MB over). */
static uint64_t stuck_for(const yfs_budget *b, const yfs_hold *hold)
{
    int holds_nothing = !hold || hold->bytes == 0;
    uint64_t blocked = holds_nothing ? stuck_for_good(b) : stuck(b);
    if (hold && !holds_nothing && !is_blocked(hold) && hold->waiting + 1 == hold->threads)
        blocked += hold->bytes; /* this thread is the hold's last runner */
    return blocked;
}

/* What the reclaimers would drop now at `level` for `asking` (see Patience
 * in yfs_budget.h): asked with the lock released, like them. */
static uint64_t idle_now(yfs_budget *b, int level, const yfs_hold *asking)
{
    uint64_t idle = 0;
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->num_reclaimers; i++)
        idle += b->reclaimers[i].idle(b->reclaimers[i].ctx, level, asking);
    pthread_mutex_lock(&b->lock);
    return idle;
}

#define NO_RECLAIM (-1)

/* How long a demand reservation has waited with nothing freed (see
 * Patience in yfs_budget.h): a stage passes with each YFS_BUDGET_PATIENCE_NS
 * of that. */
enum { OUT_OF_PATIENCE = 0, IMPATIENT = 1, PATIENT = 2 };

/* The level at which a reservation in `mode` (YFS_DEMAND or YFS_TRY) at
 * stage `patience` should have the caches dropped for it, or NO_RECLAIM:
 * everything idle for a demand one that nobody running could make room for,
 * or out of patience; all but the reclaimers' working sets for an impatient
 * one; else what a patient one may drop, when that lets it through. */
static int reclaim_level(yfs_budget *b, uint64_t bytes, yfs_mem_mode mode, const yfs_hold *hold,
                         int patience)
{
    if (mode == YFS_DEMAND) {
        if (patience == OUT_OF_PATIENCE)
            return YFS_RECLAIM_ALL;
        uint64_t idle = idle_now(b, YFS_RECLAIM_ALL, hold);
        if ((b->used > idle ? b->used - idle : 0) <= stuck_for(b, hold))
            return YFS_RECLAIM_ALL;
        if (patience == IMPATIENT)
            return YFS_RECLAIM_IMPATIENT;
    }
    uint64_t idle = idle_now(b, YFS_RECLAIM_DEMAND, hold);
    uint64_t kept = b->used > idle ? b->used - idle : 0;
    return kept + bytes <= limit_of(b, mode) ? YFS_RECLAIM_DEMAND : NO_RECLAIM;
}

/* Lock held: wake the waiters that may now proceed, instead of all of them
 * on every change (8 readers' builds waited ~10^5 times a run, each wait
 * a wakeup that called the reclaimers and went back to sleep):
 *   - every waiter, when nothing but stuck memory is charged (each may then
 *     proceed over the limit, see yfs_budget_reserve);
 *   - else the oldest, which retries the reclaimers (memory may have gone
 *     idle), and, oldest first, every other whose bytes fit in the room
 *     left after those before it. */
static void wake(yfs_budget *b)
{
    b->changes++;
    if (!b->first)
        return;
    int all = b->used <= stuck(b);
    uint64_t room = b->used < b->limit ? b->limit - b->used : 0;
    for (waiter *w = b->first; w; w = w->next) {
        if (all || w == b->first || w->bytes <= room) {
            pthread_cond_signal(&w->wake);
            room -= w->bytes <= room ? w->bytes : room;
        }
    }
}

/* Lock held: w joins the end of the waiters' list (once per reservation:
 * it keeps its place while it retries). */
static void enqueue(yfs_budget *b, waiter *w, uint64_t bytes)
{
    *w = (waiter){ .bytes = bytes };
    pthread_cond_init(&w->wake, &b->monotonic);
    if (b->last)
        b->last->next = w;
    else
        b->first = w;
    b->last = w;
}

/* Lock held: w leaves the list, its reservation taken. When it was the
 * oldest, the next oldest retries the reclaimers in its place. */
static void dequeue(yfs_budget *b, waiter *w)
{
    waiter **p = &b->first, *prev = NULL;
    while (*p != w) {
        prev = *p;
        p = &(*p)->next;
    }
    *p = w->next;
    if (b->last == w)
        b->last = prev;
    pthread_cond_destroy(&w->wake);
    if (!prev && b->first)
        pthread_cond_signal(&b->first->wake);
}

/* Lock held: a thread of hold h (may be NULL) starts waiting. */
static void hold_waits(yfs_budget *b, yfs_hold *h)
{
    if (!h)
        return;
    int was = is_blocked(h);
    h->waiting++;
    if (!was && is_blocked(h)) {
        b->blocked += h->bytes;
        wake(b); /* others may now proceed (see header) */
    }
}

/* Lock held: ... and runs again. */
static void hold_resumes(yfs_budget *b, yfs_hold *h)
{
    if (!h)
        return;
    if (is_blocked(h))
        b->blocked -= h->bytes;
    h->waiting--;
}

/* Lock held: wait as demand reservation w (in the list) of hold h, until
 * woken or until retry (CLOCK_MONOTONIC ns, 0: no deadline); not at all
 * when wake() ran since `seen` (see changes). */
static void wait_for_room(yfs_budget *b, waiter *w, yfs_hold *h, uint64_t retry,
                          uint64_t seen)
{
    if (b->changes != seen)
        return; /* something changed since the reclaimers ran: run them again */
    b->demand_waiters++;
    b->demand_waits++;
    hold_waits(b, h);
    if (retry) {
        struct timespec at = { (time_t)(retry / 1000000000u), (long)(retry % 1000000000u) };
        pthread_cond_timedwait(&w->wake, &b->lock, &at);
    } else {
        pthread_cond_wait(&w->wake, &b->lock);
    }
    hold_resumes(b, h);
    b->demand_waiters--;
}

int yfs_budget_reserve(yfs_budget *b, uint64_t bytes, yfs_mem_kind kind, yfs_mem_mode mode,
                       yfs_hold *hold)
{
    assert(kind < YFS_MEM_KINDS);
    pthread_mutex_lock(&b->lock);
    assert(mode != YFS_DEMAND || !hold || hold->threads > 0); /* hold fields: under the lock */
    waiter self;
    int queued = 0, patience = PATIENT;
    uint64_t patience_end = 0, freed = 0; /* the stage's wait running, and what it saw */
    for (;;) {
        int blocked_out = mode == YFS_PREFETCH && b->demand_waiters > 0;
        if (!blocked_out && fits(b, bytes, mode))
            break;
        if (blocked_out) {
            b->refused++;
            pthread_mutex_unlock(&b->lock);
            return -1;
        }
        uint64_t seen = b->changes;
        int level = mode == YFS_PREFETCH ? 0
                    : mode == YFS_FORCE  ? YFS_RECLAIM_DEMAND
                                         : reclaim_level(b, bytes, mode, hold, patience);
        int reclaimed = level != NO_RECLAIM;
        uint64_t retry = reclaimed ? reclaim(b, bytes, mode, level, hold) : 0;
        /* waiting out a stage of patience: until something is freed, or
         * the stage passes */
        int timed = !reclaimed || level == YFS_RECLAIM_IMPATIENT;
        if (timed) {
            if (!patience_end || b->freed != freed) { /* (re)started by what was freed */
                patience_end = yfs_now_ns() + YFS_BUDGET_PATIENCE_NS;
                freed = b->freed;
            }
            retry = retry && retry < patience_end ? retry : patience_end;
        }
        if (fits(b, bytes, mode) && !(mode == YFS_PREFETCH && b->demand_waiters > 0))
            break;
        if (mode == YFS_FORCE)
            break;
        if (mode != YFS_DEMAND) {
            b->refused++;
            pthread_mutex_unlock(&b->lock);
            return -1;
        }
        /* Could anything not blocked free room (see stuck_for)? */
        if (reclaimed && b->used <= stuck_for(b, hold))
            break; /* nothing else can make room: proceed, over the limit, alone */
        if (!queued) {
            if (b->stats)
                yfs_count(&b->stats->memory_waits, 1);
            enqueue(b, &self, bytes);
            queued = 1;
        }
        wait_for_room(b, &self, hold, retry, seen);
        /* a stage passes while nothing is freed: nobody is making room */
        if (timed && b->freed == freed && yfs_now_ns() >= patience_end) {
            patience--;
            patience_end = 0;
        }
    }
    if (queued)
        dequeue(b, &self);
    take(b, bytes, kind, hold);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

void yfs_budget_release(yfs_budget *b, uint64_t bytes, yfs_mem_kind kind, yfs_hold *hold)
{
    if (bytes == 0)
        return;
    pthread_mutex_lock(&b->lock);
    assert(b->bytes[kind] >= bytes && b->used >= bytes);
    b->used -= bytes;
    b->bytes[kind] -= bytes;
    hold_adjust(b, hold, 0, bytes);
    b->freed++;
    wake(b);
    pthread_mutex_unlock(&b->lock);
}

void yfs_budget_trim_heap(yfs_budget *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t heap = heap_bytes(b), mapped = b->used - heap;
    assert(b->heap_high >= heap);
    int due = b->demand_waiters > 0 ||
              (b->heap_high + mapped > b->limit + b->limit / 8 &&
               b->heap_high - heap >= b->limit / 16);
    if (due) {
        b->heap_high = heap;
        b->heap_trims++;
    }
    pthread_mutex_unlock(&b->lock);
    if (due)
        malloc_trim(0);
}

void yfs_budget_transfer(yfs_budget *b, uint64_t bytes, yfs_mem_kind from, yfs_hold *from_hold,
                         yfs_mem_kind to, yfs_hold *to_hold)
{
    if (bytes == 0)
        return;
    pthread_mutex_lock(&b->lock);
    assert(b->bytes[from] >= bytes);
    b->bytes[from] -= bytes;
    b->bytes[to] += bytes;
    if (b->bytes[to] > b->peak_bytes[to])
        b->peak_bytes[to] = b->bytes[to];
    note_heap_high(b);
    hold_adjust(b, from_hold, 0, bytes);
    hold_adjust(b, to_hold, bytes, 0);
    wake(b); /* bytes may have left a blocked hold */
    pthread_mutex_unlock(&b->lock);
}

void yfs_budget_settle(yfs_budget *b, uint64_t reserved, uint64_t exact, yfs_mem_kind kind,
                       yfs_hold *hold)
{
    if (exact < reserved)
        yfs_budget_release(b, reserved - exact, kind, hold);
    else if (exact > reserved)
        yfs_budget_reserve(b, exact - reserved, kind, YFS_FORCE, hold);
}

void yfs_hold_enter(yfs_budget *b, yfs_hold *h)
{
    pthread_mutex_lock(&b->lock);
    if (is_blocked(h))
        b->blocked -= h->bytes;
    h->threads++;
    pthread_mutex_unlock(&b->lock);
}

void yfs_hold_wait_begin(yfs_budget *b, yfs_hold *h)
{
    pthread_mutex_lock(&b->lock);
    assert(!h || h->threads > h->waiting);
    hold_waits(b, h);
    pthread_mutex_unlock(&b->lock);
}

void yfs_hold_wait_end(yfs_budget *b, yfs_hold *h)
{
    pthread_mutex_lock(&b->lock);
    hold_resumes(b, h);
    pthread_mutex_unlock(&b->lock);
}

void yfs_hold_leave(yfs_budget *b, yfs_hold *h)
{
    pthread_mutex_lock(&b->lock);
    assert(h->threads > h->waiting);
    h->threads--;
    if (is_blocked(h)) {
        b->blocked += h->bytes;
        wake(b);
    }
    pthread_mutex_unlock(&b->lock);
}

uint64_t yfs_budget_shortfall(yfs_budget *b, uint64_t bytes)
{
    pthread_mutex_lock(&b->lock);
    uint64_t missing = fits(b, bytes, YFS_DEMAND) ? 0 : b->used + bytes - b->limit;
    pthread_mutex_unlock(&b->lock);
    return missing;
}

int yfs_budget_demand_waiting(yfs_budget *b)
{
    pthread_mutex_lock(&b->lock);
    int n = b->demand_waiters;
    pthread_mutex_unlock(&b->lock);
    return n > 0;
}

void yfs_budget_notify(yfs_budget *b)
{
    pthread_mutex_lock(&b->lock);
    b->freed++;
    wake(b);
    pthread_mutex_unlock(&b->lock);
}

uint64_t yfs_budget_prefetch_limit(const yfs_budget *b)
{
    return limit_of(b, YFS_PREFETCH);
}

uint64_t yfs_budget_limit(const yfs_budget *b)
{
    return b->limit;
}

uint64_t yfs_budget_used(yfs_budget *b)
{
    pthread_mutex_lock(&b->lock);
    uint64_t used = b->used;
    pthread_mutex_unlock(&b->lock);
    return used;
}

void yfs_budget_snapshot_get(yfs_budget *b, yfs_budget_snapshot *out)
{
    pthread_mutex_lock(&b->lock);
    out->limit = b->limit;
    out->used = b->used;
    out->peak = b->peak;
    for (int k = 0; k < YFS_MEM_KINDS; k++) {
        out->bytes[k] = b->bytes[k];
        out->peak_bytes[k] = b->peak_bytes[k];
    }
    out->demand_waits = b->demand_waits;
    out->demand_waiting = (uint64_t)b->demand_waiters;
    out->prefetch_refused = b->refused;
    out->over_budget = b->over_budget;
    out->max_over_bytes = b->max_over;
    out->heap_trims = b->heap_trims;
    pthread_mutex_unlock(&b->lock);
}

/* The index's one formula (ix_page_hold_bytes), which it limits pages by:
 * a DELTA_BYTE_ARRAY page that expands beyond it is charged once decoded
 * (yfs_budget_settle). */
uint64_t yfs_decode_bound_page(const pq_page_header *h, uint32_t packed_width)
{
    if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2)
        return 0;
    return ix_page_hold_bytes(h, packed_width);
}

uint64_t yfs_decode_bound(const uint8_t *raw, uint64_t len, uint32_t packed_width)
{
    uint64_t bound = 0, at = 0, pages = 0, entries = 0;
    while (at < len) {
        pq_page_header h;
        pq_error ignored;
        if (pq_page_header_parse(raw + at, (size_t)(len - at), &h, &ignored) < 0 ||
            h.compressed_size < 0 || h.uncompressed_size < 0)
            break;
        uint64_t page = yfs_decode_bound_page(&h, packed_width);
        bound += page;
        pages += page > 0;
        entries += page > 0 && h.num_values > 0 ? (uint64_t)h.num_values : 0;
        at += h.header_len + (uint64_t)h.compressed_size;
    }
    /* pages joined along a row: packed values are copied into one run */
    return bound + (pages > 1 ? entries * packed_width : 0);
}
