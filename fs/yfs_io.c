#include "yfs_io.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "sh_mix.h"
#include "yfs_loads.h"
#include "yfs_mount.h"
#include "yfs_pages.h"
#include "yfs_plans.h"
#include "yfs_thread.h"
#include "yfs_units.h"

/* How often the adaptive depth is reconsidered. */
#define ADAPT_NS (100u * 1000 * 1000)
/* A thread that found no room waits this long before looking again (room
 * comes back when builds take parked pages, which do not signal us). */
#define ROOM_POLL_NS (2u * 1000 * 1000)

/* The readers' windows together cover what they are served during this
 * many p99 storage reads, and each at least WINDOW_MIN framed bytes (see
 * size_windows). */
#define WINDOW_LATENCIES 4
#define WINDOW_MIN (16u << 20)
/* A reader's window is at most this fraction (1/N) of its share of the
 * store of loaded pages. The loads of a window bring pages needed after it
 * too (a redirected chunk's pages are served over a long span of the order,
 * sh_redirect.h), which the store keeps until then: windows of the whole
 * share filled it, and the engine's room for each next load dropped pages
 * that had been loaded, to be read alone later (b's 64 KiB pages from the
 * local S3 server, one reader, per 600 MB: 470-640 pages dropped and
 * 160-220 read alone; with half the share 8-9 and 4-5,
 * bench/results/io_window.md). */
#define WINDOW_STORE_SHARE 2
/* Pages of a refused load queued per call of yfs_loads_queue_wanted. */
#define WANTED_BATCH 64

/* A load of the plan's schedule, or one page read alone (alone = 1). */
typedef struct queued {
    yfs_plan *plan;     /* a reference, held while queued */
    uint32_t load;      /* alone: unused */
    int alone;
    int urgent;         /* for a build under way: never waits for room */
    uint64_t need;      /* the order position of the page it was queued for */
    const void *reader;
} queued;

/* The order position of the last page the entry brings. Dropping parked
 * pages needed before it for its room would trade pages needed sooner for
 * pages needed later: a chunk load brings pages needed over a long span of
 * the order (a redirected chunk's pages, sh_redirect.h). */
static uint64_t queued_last(const queued *q)
{
    return q->alone ? q->need : q->plan->plan.schedule.loads[q->load].last;
}

/* The bytes the entry brings into the store. */
static uint64_t queued_bytes(const yfs_mount *m, const queued *q)
{
    return q->alone ? m->ix->pages[q->plan->plan.order[q->need]].length
                    : yfs_load_bytes(m, &q->plan->plan, q->load);
}

struct yfs_io {
    yfs_mount *m;
    int fixed;               /* io_depth= given */
    pthread_mutex_t lock;    /* guards everything below */
    pthread_cond_t wake;     /* work queued, a load finished, stop */
    int stop;
    int depth;               /* loads allowed in flight */
    int max_depth;           /* what depth may grow to */
    int running;             /* loads in flight */
    int polling;             /* a thread waits for room in the store (the others sleep) */
    uint64_t flight_bytes;   /* their bytes: the store's room is for them too */
    queued *queue;           /* a ring of cap entries, head..head+len */
    size_t head, len, cap;
    const void **readers;    /* those that queued loads and are not forgotten */
    size_t num_readers, readers_cap;
    pthread_t *threads;      /* YFS_IO_DEPTH_MAX slots, started ones first */
    int started;
    /* adaptive depth and windows: the interval since the last decision */
    uint64_t interval_start, wait_ns_at_start, served_at_start;
    uint64_t windows;        /* framed bytes the readers' windows cover together */
    _Atomic uint64_t served; /* framed bytes copied out to readers (yfs_io_served) */
    int room_stopped;        /* memory stopped a load in this interval */
    int backlog;             /* more loads were queued than allowed in flight */
    int urgent_backlog;      /* ... and one of them was for a build under way */
};

yfs_io *yfs_io_new(yfs_mount *m, int depth)
{
    assert(depth >= 0 && depth <= YFS_IO_DEPTH_MAX);
    yfs_io *io = calloc(1, sizeof *io);
    if (!io || !(io->threads = calloc(YFS_IO_DEPTH_MAX, sizeof *io->threads))) {
        free(io);
        return NULL;
    }
    io->m = m;
    io->fixed = depth > 0;
    /* Memory does not bound the depth: what loads bring is bounded by the
     * store's room and the accountant. Pages read alone are small, and a
     * build's pages are many: they need the threads. */
    io->max_depth = depth > 0 ? depth : YFS_IO_DEPTH_MAX;
    io->depth = depth > 0 ? depth : YFS_IO_DEPTH_START;
    io->windows = 0; /* until measured: WINDOW_MIN each */
    pthread_mutex_init(&io->lock, NULL);
    pthread_cond_init(&io->wake, NULL);
    return io;
}

void yfs_io_share(yfs_io *io, uint64_t count, uint64_t records)
{
    pthread_mutex_lock(&io->lock);
    assert(io->started == 0);
    io->depth = (int)sh_mix_share_of((uint64_t)io->depth, count, records);
    io->max_depth = (int)sh_mix_share_of((uint64_t)io->max_depth, count, records);
    pthread_mutex_unlock(&io->lock);
}

static void *io_thread(void *arg);

/* Start threads up to the depth (lock held). A thread that cannot be
 * started leaves the depth where the started ones are. */
static int start_threads(yfs_io *io)
{
    while (io->started < io->depth) {
        if (yfs_thread_create(&io->threads[io->started], io_thread, io) != 0) {
            if (io->started > 0)
                io->depth = io->started;
            return -1;
        }
        io->started++;
    }
    return 0;
}

int yfs_io_start(yfs_io *io, pq_error *err)
{
    pthread_mutex_lock(&io->lock);
    io->interval_start = yfs_now_ns();
    int rc = start_threads(io) < 0 && io->started == 0 ? -1 : 0;
    pthread_mutex_unlock(&io->lock);
    return rc < 0 ? pq_error_set(err, "cannot start the I/O threads") : 0;
}

/* Take the queue's first entry (lock held, queue not empty). */
static queued pop(yfs_io *io)
{
    queued q = io->queue[io->head];
    io->head = (io->head + 1) % io->cap;
    io->len--;
    return q;
}

/* Append q, or put it in front (lock held). */
static int push(yfs_io *io, queued q, int front)
{
    if (io->len == io->cap) {
        size_t cap = io->cap ? 2 * io->cap : 256;
        queued *grown = malloc(cap * sizeof *grown);
        if (!grown)
            return -1;
        for (size_t i = 0; i < io->len; i++)
            grown[i] = io->queue[(io->head + i) % io->cap];
        free(io->queue);
        io->queue = grown;
        io->head = 0;
        io->cap = cap;
    }
    if (front)
        io->head = (io->head + io->cap - 1) % io->cap;
    io->queue[front ? io->head : (io->head + io->len) % io->cap] = q;
    io->len++;
    return 0;
}

/* Let a popped entry go: its load leaves the queued state unless it ran,
 * and its plan reference is dropped (lock not held: plans take their own). */
static void let_go(yfs_io *io, queued q, int unqueue)
{
    if (unqueue && q.alone)
        yfs_loads_unqueue_page(&q.plan->loads, q.need);
    else if (unqueue)
        yfs_loads_unqueue(&q.plan->loads, q.load);
    yfs_plans_put(io->m->plans, q.plan);
}

/* Size the readers' windows for the interval ending now (lock held): the
 * bytes they are served while a storage read takes its p99 latency,
 * WINDOW_LATENCIES times over, so that latency x bandwidth is covered as
 * the rate and the latency move (a window that limits the rate still grows:
 * by WINDOW_LATENCIES an interval). Reading further ahead than that gains
 * nothing and costs: at mem=4G, one reader of 64 KiB pages on local disk
 * had the whole store (1 GB) read ahead, and its builds decoded cold
 * copies: 551 MB/s against 601 with the windows (0.7-0.9 x beside a CI
 * run). An interval that served nothing (readers paused) keeps the
 * windows. */
static void size_windows(yfs_io *io, uint64_t now)
{
    uint64_t served = atomic_load_explicit(&io->served, memory_order_relaxed);
    uint64_t bytes = served - io->served_at_start;
    io->served_at_start = served;
    if (bytes == 0)
        return;
    uint64_t p50, p99;
    yfs_latency_get(&io->m->read_latency, &p50, &p99);
    double covered = (double)bytes * (double)p99 / (double)(now - io->interval_start);
    io->windows = covered * WINDOW_LATENCIES < (double)UINT64_MAX / 2
                      ? (uint64_t)(covered * WINDOW_LATENCIES)
                      : UINT64_MAX / 2;
}

/* Size the windows (size_windows); double the depth when builds waited for
 * storage during the interval while loads were queued beyond the depth and
 * memory did not stop any (lock held). */
static void adapt(yfs_io *io)
{
    uint64_t now = yfs_now_ns();
    if (now - io->interval_start < ADAPT_NS)
        return;
    size_windows(io, now);
    uint64_t waited = yfs_counter(&io->m->stats.storage_wait_nanoseconds);
    io->backlog |= io->len > 0;
    if (!io->fixed && waited > io->wait_ns_at_start &&
        ((io->backlog && !io->room_stopped) || io->urgent_backlog) &&
        io->depth < io->max_depth && !io->stop) { /* stopping: no thread the stop misses */
        io->depth = io->depth * 2 < io->max_depth ? io->depth * 2 : io->max_depth;
        start_threads(io);
    }
    io->interval_start = now;
    io->wait_ns_at_start = waited;
    io->room_stopped = io->backlog = io->urgent_backlog = 0;
}

static void wait_a_little(yfs_io *io)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ROOM_POLL_NS;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&io->wake, &io->lock, &until);
}

/* An urgent load refused memory brought the page it was queued for alone:
 * the other pages of it that builds under way want are queued in front, to
 * be read alone side by side (lock held). */
static void queue_wanted(yfs_io *io, const queued *refused)
{
    uint64_t pos[WANTED_BATCH];
    size_t n;
    do {
        n = yfs_loads_queue_wanted(&refused->plan->plan, &refused->plan->loads, refused->load,
                                   pos, WANTED_BATCH);
        for (size_t i = 0; i < n; i++) {
            queued q = { refused->plan, 0, 1, 1, pos[i], refused->reader };
            yfs_plans_ref(io->m->plans, q.plan);
            if (push(io, q, 1) < 0) {
                let_go(io, q, 1);
                for (size_t j = i + 1; j < n; j++)
                    yfs_loads_unqueue_page(&q.plan->loads, pos[j]);
                return;
            }
        }
    } while (n == WANTED_BATCH);
}

static void *io_thread(void *arg)
{
    yfs_io *io = arg;
    yfs_mount *m = io->m;
    yfs_hold hold = { 0 };
    yfs_hold_enter(m->budget, &hold);
    pthread_mutex_lock(&io->lock);
    while (!io->stop) {
        if (io->len == 0 || io->running >= io->depth || io->polling) {
            io->backlog |= io->len > 0;
            io->urgent_backlog |= io->len > 0 && io->queue[io->head].urgent;
            pthread_cond_wait(&io->wake, &io->lock);
            continue;
        }
        queued q = pop(io);
        if (q.alone && !yfs_loads_page_queued(&q.plan->loads, q.need)) {
            /* read with another page of its load, or by its build: no room
             * to make for it (the plan's reference goes without our lock) */
            pthread_mutex_unlock(&io->lock);
            let_go(io, q, 0);
            pthread_mutex_lock(&io->lock);
            continue;
        }
        uint64_t bytes = queued_bytes(m, &q);
        /* Room in the store for it besides what is in flight, made by
         * dropping parked pages needed after all it brings (the store's
         * mutex is taken under ours, never the reverse); a build under way
         * needs what an urgent one brings at once, whatever the store
         * holds. */
        if (!q.urgent && !yfs_pages_make_room(m->loaded, bytes + io->flight_bytes,
                                              q.plan->plan.epoch, queued_last(&q))) {
            io->room_stopped = 1;
            push(io, q, 1); /* back in front: it was just popped, no allocation */
            io->polling = 1;
            wait_a_little(io);
            io->polling = 0;
            continue;
        }
        io->running++;
        io->flight_bytes += bytes;
        if (io->len > 0 && io->running < io->depth)
            pthread_cond_signal(&io->wake); /* the next one may go too */
        pthread_mutex_unlock(&io->lock);
        int ran = q.alone ? yfs_loads_run_page(m, &q.plan->plan, &q.plan->loads, q.need,
                                                 q.urgent, &hold)
                          : yfs_loads_run(m, q.plan, q.load, q.need, q.urgent, &hold);
        pthread_mutex_lock(&io->lock);
        if (ran < 0 && q.urgent && !q.alone)
            queue_wanted(io, &q);
        pthread_mutex_unlock(&io->lock);
        let_go(io, q, 0); /* ran, taken by a build or refused: not queued any more */
        pthread_mutex_lock(&io->lock);
        io->running--;
        io->flight_bytes -= bytes;
        io->room_stopped |= ran < 0;
        adapt(io);
        pthread_cond_signal(&io->wake); /* a slot is free: one thread takes it */
    }
    pthread_mutex_unlock(&io->lock);
    yfs_hold_leave(m->budget, &hold);
    return NULL;
}

void yfs_io_stop(yfs_io *io)
{
    if (!io)
        return;
    pthread_mutex_lock(&io->lock);
    io->stop = 1;
    pthread_cond_broadcast(&io->wake);
    int started = io->started;
    pthread_mutex_unlock(&io->lock);
    for (int i = 0; i < started; i++)
        pthread_join(io->threads[i], NULL);
    pthread_mutex_lock(&io->lock);
    io->started = 0; /* joined: a second stop joins none */
    pthread_mutex_unlock(&io->lock);
}

void yfs_io_free(yfs_io *io)
{
    if (!io)
        return;
    yfs_io_stop(io);
    while (io->len > 0)
        let_go(io, pop(io), 1);
    free(io->queue);
    free(io->readers);
    free(io->threads);
    pthread_cond_destroy(&io->wake);
    pthread_mutex_destroy(&io->lock);
    free(io);
}

/* Queue the loads of segment s's pages that have not started (lock held).
 * Pages likely streamed in windows (large for mem), and loads not read
 * whole or larger than a quarter of the store, are left to the builds: none
 * is loaded ahead. */
static void queue_segment(yfs_io *io, yfs_plan *plan, uint64_t s, const void *reader,
                          int urgent)
{
    yfs_mount *m = io->m;
    uint64_t largest = yfs_mount_loaded_budget(m) / 4;
    const sh_segment *seg = &plan->plan.segments[s];
    const sh_schedule *sched = &plan->plan.schedule;
    for (uint32_t k = 0; k < seg->units; k++) {
        uint32_t page, i = urgent ? seg->units - 1 - k : k; /* pushed in front: the last first */
        if (!yfs_unit_likely_whole(m, plan->plan.unit_order[seg->first + i], &page))
            continue;
        uint64_t need = sched->position[page];
        if (urgent) { /* its build takes it: kept in the store until then */
            yfs_loads_want(&plan->loads, need);
            yfs_pages_pin(m->loaded, plan->plan.epoch, page);
        }
        queued q = { plan, sched->source[need], 0, urgent, need, reader };
        uint64_t bytes = yfs_load_bytes(m, &plan->plan, q.load);
        if (bytes == 0 || bytes > largest)
            continue;
        /* Its load, or the page alone when the load ran but the store let
         * the page go for one needed sooner. */
        if (!yfs_loads_queue(&plan->loads, q.load) &&
            !(q.alone = yfs_loads_queue_page(m, &plan->plan, &plan->loads, need)))
            continue;
        yfs_plans_ref(m->plans, plan);
        if (push(io, q, urgent) < 0) {
            let_go(io, q, 1);
            return;
        }
    }
}

/* Count `reader` among the active ones (lock held); how many there are. A
 * reader that cannot be recorded (out of memory) counts as one more. */
static size_t note_reader(yfs_io *io, const void *reader)
{
    for (size_t i = 0; i < io->num_readers; i++)
        if (io->readers[i] == reader)
            return io->num_readers;
    if (io->num_readers == io->readers_cap) {
        size_t cap = io->readers_cap ? 2 * io->readers_cap : 16;
        const void **grown = realloc(io->readers, cap * sizeof *grown);
        if (!grown)
            return io->num_readers + 1;
        io->readers = grown;
        io->readers_cap = cap;
    }
    io->readers[io->num_readers++] = reader;
    return io->num_readers;
}

void yfs_io_served(yfs_io *io, uint64_t bytes)
{
    atomic_fetch_add_explicit(&io->served, bytes, memory_order_relaxed);
}

void yfs_io_reader_at(yfs_io *io, yfs_plan *plan, const sh_part *part, uint64_t from,
                      const void *reader)
{
    if (plan->plan.schedule.num_loads == 0 || from >= part->count)
        return;
    const sh_segment *at = &plan->plan.segments[sh_part_segment(part, from)];
    if (at->units == 0)
        return;
    uint32_t page = yfs_unit_page(io->m, plan->plan.unit_order[at->first]);
    yfs_pages_reader_at(io->m->loaded, reader, plan->plan.epoch,
                        plan->plan.schedule.position[page]);
}

void yfs_io_ahead(yfs_io *io, yfs_plan *plan, const sh_part *part, uint64_t from,
                  const void *reader, uint64_t *next, int in_order)
{
    if (plan->plan.schedule.num_loads == 0 || from >= part->count)
        return;
    yfs_io_reader_at(io, plan, part, from, reader);
    if (!in_order) { /* a jump: the window starts again where it reads next in order */
        pthread_mutex_lock(&io->lock);
        *next = 0;
        pthread_mutex_unlock(&io->lock);
        return;
    }
    /* The window: the segments the builds prefetch (their workers would
     * otherwise run the loads themselves as they start), then beyond them
     * part of the reader's share of the store of loaded pages, in framed
     * bytes (WINDOW_STORE_SHARE): a reader queueing the whole store would
     * fill it with pages it needs later than the other readers need theirs,
     * and stop the engine for room while their builds read on their own. */
    uint64_t far = from + (uint64_t)io->m->opts.readahead;
    if (far >= part->count)
        far = part->count - 1;
    pthread_mutex_lock(&io->lock);
    size_t readers = note_reader(io, reader);
    uint64_t window = yfs_mount_loaded_budget(io->m) / readers / WINDOW_STORE_SHARE;
    uint64_t needed = io->windows / readers > WINDOW_MIN ? io->windows / readers : WINDOW_MIN;
    window = needed < window ? needed : window;
    uint64_t j = *next > from ? *next : from;
    size_t before = io->len;
    for (; j < part->count && (j <= far || part->offsets[j] - part->offsets[far] < window); j++)
        queue_segment(io, plan, sh_part_segment(part, j), reader, 0);
    if (io->len > before)
        pthread_cond_broadcast(&io->wake);
    *next = j;
    pthread_mutex_unlock(&io->lock);
}

void yfs_io_build_starts(yfs_io *io, yfs_plan *plan, uint64_t s)
{
    if (plan->plan.schedule.num_loads == 0)
        return;
    pthread_mutex_lock(&io->lock);
    size_t before = io->len;
    queue_segment(io, plan, s, NULL, 1);
    if (io->len > before)
        pthread_cond_broadcast(&io->wake);
    pthread_mutex_unlock(&io->lock);
}

void yfs_io_forget(yfs_io *io, const void *reader)
{
    queued *gone = NULL;
    size_t n = 0;
    pthread_mutex_lock(&io->lock);
    /* Keep the others in order; collect the reader's to let go unlocked. */
    size_t kept = 0, len = io->len;
    gone = malloc((len ? len : 1) * sizeof *gone);
    for (size_t i = 0; i < len; i++) {
        queued q = io->queue[(io->head + i) % io->cap];
        if (q.reader == reader && gone)
            gone[n++] = q;
        else
            io->queue[(io->head + kept++) % io->cap] = q;
    }
    io->len = kept;
    for (size_t i = 0; i < io->num_readers; i++)
        if (io->readers[i] == reader) {
            io->readers[i] = io->readers[--io->num_readers];
            break;
        }
    pthread_mutex_unlock(&io->lock);
    yfs_pages_reader_gone(io->m->loaded, reader);
    for (size_t i = 0; i < n; i++)
        let_go(io, gone[i], 1);
    free(gone);
}

void yfs_io_report_get(yfs_io *io, yfs_io_report *out)
{
    pthread_mutex_lock(&io->lock);
    *out = (yfs_io_report){ .depth = io->depth, .fixed = io->fixed, .queued = io->len };
    pthread_mutex_unlock(&io->lock);
}
