#include "yfs_segment.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ix_record.h"
#include "yfs_io.h"
#include "yfs_records.h"
#include "yfs_rows.h"
#include "yfs_thread.h"
#include "yfs_units.h"

/* Rinas: the units of a segment are fetched, decoded and framed by up to
 * this many threads at once (the builder and helpers), each taking the next
 * unit not yet taken, so they finish out of order. The result cannot depend
 * on it: every unit is framed into its own slot, and its records go to the
 * place the plan's record counts give them. */
#define DECODE_THREADS_MAX 4

typedef struct unit_jobs {
    yfs_mount *m;
    yfs_plan *plan;
    yfs_hold *hold;          /* the build's reservations (yfs_budget.h) */
    const sh_segment *seg;
    yfs_unit *units;         /* seg->units slots */
    _Atomic uint32_t next;   /* the next unit to take */
    _Atomic int failed;
    pthread_mutex_t lock;    /* guards err and the deferred units */
    pq_error err;            /* the first failure */
    uint32_t *deferred;      /* units put off (next_unit), to frame last, in segment
                                order; NULL: none are (frame_segment_units says
                                when they may be) */
    uint32_t num_deferred, deferred_taken;
} unit_jobs;

/* The next unit for a framing thread to frame (its slot in *i), or 0 when
 * none is left. A unit whose page's stream another build uses is put off
 * until every other unit is taken: that build frames it into its slot as
 * its stream passes it (yfs_wants.h), and meanwhile this thread frames
 * units of other pages instead of waiting (8 parts of DuckDB's pages, one
 * framing thread to each build: streams of the same pages in use by the
 * builds of the other parts most of the time; only then are units put
 * off: frame_segment_units). */
static int next_unit(unit_jobs *j, uint32_t *i)
{
    for (;;) {
        uint32_t k = atomic_fetch_add(&j->next, 1);
        if (k >= j->seg->units)
            break;
        uint32_t unit = j->plan->plan.unit_order[j->seg->first + k];
        if (!j->deferred || !yfs_unit_stream_busy(j->m, unit)) {
            *i = k;
            return 1;
        }
        pthread_mutex_lock(&j->lock);
        j->deferred[j->num_deferred++] = k;
        pthread_mutex_unlock(&j->lock);
    }
    pthread_mutex_lock(&j->lock);
    int some = j->deferred && j->deferred_taken < j->num_deferred;
    if (some) /* in segment order: a page's units are framed in record order */
        *i = j->deferred[j->deferred_taken++];
    pthread_mutex_unlock(&j->lock);
    return some;
}

static void *frame_units(void *arg)
{
    unit_jobs *j = arg;
    uint32_t i;
    while (!atomic_load(&j->failed) && next_unit(j, &i)) {
        uint32_t unit = j->plan->plan.unit_order[j->seg->first + i];
        pq_error err;
        if (yfs_unit_get(j->m, j->plan, unit, j->hold, &j->units[i], &err) < 0) {
            pthread_mutex_lock(&j->lock);
            if (!atomic_exchange(&j->failed, 1))
                j->err = err;
            pthread_mutex_unlock(&j->lock);
        }
    }
    return NULL;
}

/* A helper thread: entered into the build's hold by the builder, it leaves
 * when done. */
static void *frame_units_helper(void *arg)
{
    unit_jobs *j = arg;
    frame_units(j);
    yfs_hold_leave(j->m->budget, j->hold);
    return NULL;
}

/* The mount's workers (threads=, a mixture's source its share: eight
 * sources of a mixture each starting three helpers per build spent a tenth
 * of an epoch's time creating threads), shared among the readers open when
 * storage answers fast. Then builds are work for the cores, and readers
 * bring their own: each reader builds the segment it waits for while the
 * workers prefetch, and each framing thread holds a decoded page or a
 * stream. 8 parts of DuckDB's tokens, 4 threads to each build, closed
 * paused streams for room and read the data 3 times over (with streams
 * charged at their caps, 12 MiB each, as they were then). Over slow
 * storage the helpers are what keeps a build's reads in flight at once (8
 * parts of 64 KiB pages at 50 ms a read: 230 MB/s with one thread to each
 * build, 414 with 4), so each build has them all
 * (bench/results/framing_threads.md), unless the cores are busy
 * (yfs_cpu.h): then more threads do no more work. Streamed pages keep
 * their own reads in flight (index/ix_ahead.h), and each more thread only
 * holds one more stream (8 parts of DuckDB's tokens at 10 ms, the cores
 * busy decoding: 4 threads to each build closed 180 streams for room and
 * read the files 3 times over, against 49 and twice with the threads
 * shared; DuckDB's text at 50 ms, the cores a third idle, went 20% slower
 * with them shared: bench/results/framing_streams.md). Pages decoded whole
 * are loaded ahead by the I/O engine, and 4 threads to each of 8 builds
 * decoding at once on 2 cores cost CPU per byte: 8 parts at 10 ms used up
 * to 11% more CPU per GB than at 0 ms and served that much less (0.87-0.96
 * of 0 ms; 0.97-1.04 with the threads shared: bench/results/latency_cpu.md,
 * framing_busy.md). */
uint32_t yfs_segment_framing_threads(const yfs_mount *m)
{
    int readers = atomic_load(&m->readers); /* 0 for a mixture's source: counted as one */
    int shared = readers > 1 && (!yfs_latency_slow(&m->read_latency) || yfs_cpu_busy(&m->cpu));
    int share = shared ? (m->workers + readers - 1) / readers : m->workers;
    return (uint32_t)(share < DECODE_THREADS_MAX ? share : DECODE_THREADS_MAX);
}

/* The framed records of the segment's units into units[], in parallel when
 * the mount has threads to spare (yfs_segment_framing_threads). Rinas: each
 * unit into its own slot, so finishing out of order changes nothing. */
static int frame_segment_units(yfs_mount *m, yfs_plan *plan, const sh_segment *seg,
                               yfs_hold *hold, yfs_unit *units, pq_error *err)
{
    /* Units are put off only while readers are open at once over slow
     * storage, where a stream in use is in use for round trips: one
     * reader's builds, 4 threads each, lost 12% on DuckDB's tokens putting
     * them off, and 8 parts of DuckDB's text from the page cache may lose
     * more (227 against 355 MB/s in one run, within noise in others:
     * bench/results/framing_streams.md). deferred is in the build's arrays
     * (yfs_segment_build_bytes). */
    int put_off = m->units.cut.first_unit && atomic_load(&m->readers) > 1 &&
                  yfs_latency_slow(&m->read_latency);
    uint32_t *deferred = put_off ? malloc(seg->units * sizeof *deferred) : NULL;
    unit_jobs j = { .m = m, .plan = plan, .hold = hold, .seg = seg, .units = units,
                    .deferred = deferred };
    atomic_init(&j.next, 0);
    atomic_init(&j.failed, 0);
    pthread_mutex_init(&j.lock, NULL);

    yfs_cpu_sample(&m->cpu);
    uint32_t want = yfs_segment_framing_threads(m);
    pthread_t helper[DECODE_THREADS_MAX];
    uint32_t helpers = 0;
    while (helpers + 1 < want && helpers + 1 < seg->units) {
        yfs_hold_enter(m->budget, hold); /* before it runs: see yfs_budget.h */
        if (yfs_thread_create(&helper[helpers], frame_units_helper, &j) != 0) {
            yfs_hold_leave(m->budget, hold);
            break; /* fewer helpers (even none) only slow the build down */
        }
        helpers++;
    }
    frame_units(&j);
    /* Waiting for helpers is waiting for their room: out of the hold
     * meanwhile, so that helpers that all wait for room count as blocked. */
    yfs_hold_leave(m->budget, hold);
    for (uint32_t h = 0; h < helpers; h++)
        pthread_join(helper[h], NULL);
    yfs_hold_enter(m->budget, hold);

    pthread_mutex_destroy(&j.lock);
    free(deferred);
    if (atomic_load(&j.failed)) {
        *err = j.err;
        return -1;
    }
    return 0;
}

typedef struct record_at {
    uint32_t unit;  /* slot in the build's units */
    uint32_t index; /* the record's index in its unit */
} record_at;

/* Lay the records of units[] out in sh_segment_order: body->at and
 * body->ends. Every record's bytes stay where its unit's block has them. */
static int order_records(yfs_mount *m, const sh_plan *plan, uint64_t s, yfs_body *body,
                         record_at *where, uint32_t *order, pq_error *err)
{
    const sh_segment *seg = &plan->segments[s];
    uint32_t k = 0;
    for (uint32_t i = 0; i < body->num_units; i++)
        for (uint32_t r = 0; r < body->units[i].records && k < seg->records; r++)
            where[k++] = (record_at){ i, r };
    if (k != seg->records)
        return pq_error_set(err, "the segment's units hold %u records, the plan says %u",
                            k, seg->records);
    sh_segment_order(&m->params, plan, s, order);
    uint64_t end = 0;
    for (uint32_t r = 0; r < seg->records; r++) {
        record_at w = where[order[r]];
        const yfs_unit *u = &body->units[w.unit];
        uint64_t start = w.index ? u->ends[w.index - 1] : 0;
        body->at[r] = u->bytes + start;
        end += u->ends[w.index] - start;
        body->ends[r] = end;
    }
    if (end != seg->bytes)
        return pq_error_set(err, "records fill %llu of the %llu bytes indexed at mount (a "
                            "source file changed?)", (unsigned long long)end,
                            (unsigned long long)seg->bytes);
    return 0;
}

/* The tables of a body of `pieces` pieces. */
static uint64_t table_bytes(uint64_t pieces)
{
    return (pieces ? pieces : 1) * (sizeof(const uint8_t *) + sizeof(uint64_t));
}

static int body_tables(yfs_body *body, uint32_t pieces, pq_error *err)
{
    body->pieces = pieces;
    body->at = malloc((pieces ? pieces : 1) * sizeof *body->at);
    body->ends = malloc((pieces ? pieces : 1) * sizeof *body->ends);
    if (!body->at || !body->ends)
        return pq_error_set(err, "out of memory for a segment of %u records", pieces);
    return 0;
}

uint64_t yfs_segment_held_bytes(const yfs_mount *m, const yfs_plan *plan, uint64_t s)
{
    const sh_segment *seg = &plan->plan.segments[s];
    if (m->params.mode == SH_SHUFFLE_ROW)
        return seg->bytes + table_bytes(1);
    uint64_t held = table_bytes(seg->records) + (uint64_t)(seg->units ? seg->units : 1) *
                                                    sizeof(yfs_unit);
    for (uint32_t i = 0; i < seg->units; i++)
        held += yfs_unit_block_size(m, plan->plan.unit_order[seg->first + i]);
    return held;
}

uint64_t yfs_segment_build_bytes(const yfs_mount *m, const yfs_plan *plan, uint64_t s)
{
    if (m->params.mode == SH_SHUFFLE_ROW)
        return 0; /* yfs_rows.h reserves as it goes */
    const sh_segment *seg = &plan->plan.segments[s];
    /* where[], order[] and the framing threads' deferred units */
    return (uint64_t)(seg->records ? seg->records : 1) * (sizeof(record_at) + sizeof(uint32_t)) +
           (uint64_t)seg->units * sizeof(uint32_t);
}

/* A page-shuffled (or natural-order) segment: frame its units (yfs_units.h)
 * and lay their records out in sh_segment_order. The build holds the framed
 * units, and one decoded page (or page stream) per framing thread. */
static int build_from_units(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold,
                            yfs_body *body, pq_error *err)
{
    const sh_segment *seg = &plan->plan.segments[s];
    uint64_t arrays = yfs_segment_build_bytes(m, plan, s); /* reserved by the caller */
    record_at *where = malloc((seg->records ? seg->records : 1) * sizeof *where);
    uint32_t *order = malloc((seg->records ? seg->records : 1) * sizeof *order);
    body->num_units = seg->units;
    body->units = calloc(seg->units ? seg->units : 1, sizeof *body->units);
    int rc = 0;
    if (!body->units || !where || !order)
        rc = pq_error_set(err, "out of memory for a segment of %u records", seg->records);
    if (rc == 0)
        rc = body_tables(body, seg->records, err);
    if (rc == 0) {
        yfs_units_prepare(m, plan, seg, body->units);
        yfs_io_build_starts(m->io, plan, s);
        rc = frame_segment_units(m, plan, seg, hold, body->units, err);
    }
    if (body->units)
        yfs_units_finish(m, plan, seg, hold, body->units);
    if (rc == 0)
        rc = order_records(m, &plan->plan, s, body, where, order, err);
    free(where);
    free(order);
    yfs_budget_release(m->budget, arrays, YFS_MEM_BUILD, hold);
    return rc;
}

/* A shuffle=row segment, built into one buffer: a body of one piece. */
static int build_rows(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold, yfs_body *body,
                      pq_error *err)
{
    if (body_tables(body, 1, err) < 0 ||
        yfs_rows_build(m, &plan->plan, s, hold, &body->data, err) < 0)
        return -1;
    body->at[0] = body->data;
    body->ends[0] = body->size;
    return 0;
}

int yfs_segment_build(yfs_mount *m, yfs_plan *plan, uint64_t s, yfs_hold *hold, yfs_body *out,
                      pq_error *err)
{
    uint64_t start = yfs_now_ns();
    *out = (yfs_body){ .size = plan->plan.segments[s].bytes };
    int rc = m->params.mode == SH_SHUFFLE_ROW ? build_rows(m, plan, s, hold, out, err)
                                              : build_from_units(m, plan, s, hold, out, err);
    if (rc == 0)
        yfs_count(&m->stats.segments_built, 1);
    else
        yfs_body_free(out);
    yfs_count(&m->stats.build_nanoseconds, yfs_now_ns() - start);
    return rc;
}

void yfs_body_copy(const yfs_body *b, uint64_t offset, uint8_t *out, uint64_t len)
{
    assert(offset + len <= b->size);
    if (len == 0)
        return;
    /* the first piece that ends past offset */
    uint32_t lo = 0, hi = b->pieces;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->ends[mid] > offset)
            hi = mid;
        else
            lo = mid + 1;
    }
    for (uint32_t k = lo; len > 0; k++) {
        assert(k < b->pieces);
        uint64_t begin = k ? b->ends[k - 1] : 0, skip = offset - begin;
        uint64_t n = b->ends[k] - begin - skip;
        if (n > len)
            n = len;
        memcpy(out, b->at[k] + skip, n);
        out += n;
        offset += n;
        len -= n;
    }
}

void yfs_body_free(yfs_body *b)
{
    for (uint32_t i = 0; b->units && i < b->num_units; i++)
        yfs_unit_drop(&b->units[i]);
    free(b->units);
    free(b->at);
    free(b->ends);
    yfs_segment_free(b->data, b->size);
    memset(b, 0, sizeof *b);
}
