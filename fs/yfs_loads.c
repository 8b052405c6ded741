#include "yfs_loads.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ix_read.h"
#include "yfs_mount.h"
#include "yfs_pages.h"
#include "yfs_plans.h"
#include "yfs_records.h"
#include "yfs_units.h"

/* A load's states: NOT_STARTED -> (QUEUED ->) LOADING -> DONE; QUEUED may
 * go back to NOT_STARTED (the engine let it go). */
enum { NOT_STARTED = 0, QUEUED, LOADING, DONE };

/* Read [offset, offset+length) of `file` through ix_read_range, counted as
 * a storage read in flight and timed (stats.json's latency figures); *ns
 * (may be NULL) is set to the time it took. */
static int storage_read(yfs_mount *m, uint32_t file, uint64_t offset, void *buf,
                        size_t length, uint64_t first_page, uint32_t pages, uint64_t *ns,
                        pq_error *err)
{
    uint64_t bytes_read = 0, start = yfs_now_ns();
    yfs_count(&m->stats.storage_reads_in_flight, 1);
    int rc = ix_read_range(m->ix, file, offset, buf, length, first_page, pages, &bytes_read, err);
    yfs_uncount(&m->stats.storage_reads_in_flight, 1);
    uint64_t took = yfs_now_ns() - start;
    yfs_latency_note(&m->read_latency, took);
    yfs_count(&m->stats.bytes_read, bytes_read);
    if (ns)
        *ns = took;
    return rc;
}

int yfs_loads_init(yfs_loads *l, uint64_t num_loads, uint64_t num_positions)
{
    l->state = calloc(num_loads ? num_loads : 1, 1);
    l->alone = calloc(num_loads && num_positions ? num_positions : 1, 1);
    l->wanted = calloc(num_loads && num_positions ? num_positions : 1, 1);
    if (!l->state || !l->alone || !l->wanted) {
        free(l->state);
        free(l->alone);
        free(l->wanted);
        l->state = l->alone = l->wanted = NULL;
        return -1;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->finished, NULL);
    return 0;
}

void yfs_loads_destroy(yfs_loads *l)
{
    if (!l->state)
        return;
    pthread_cond_destroy(&l->finished);
    pthread_mutex_destroy(&l->lock);
    free(l->state);
    free(l->alone);
    free(l->wanted);
    l->state = l->alone = l->wanted = NULL;
}

/* Read global page `page` alone into *raw (charged to hold as YFS_MEM_RAW,
 * reserved in `mode`; -1 with *raw NULL and err unset when a YFS_PREFETCH
 * reservation is refused); *waited is set to the time the read took. */
static int read_alone(yfs_mount *m, uint64_t page, yfs_mem_mode mode, yfs_hold *hold,
                      uint8_t **raw, uint32_t *len, uint64_t *waited, pq_error *err)
{
    const ix_index *ix = m->ix;
    const ix_page *p = &ix->pages[page];
    uint32_t file = ix->chunks[ix_locate(ix, page)].file;
    *raw = NULL;
    if (yfs_budget_reserve(m->budget, p->length, YFS_MEM_RAW, mode, hold) < 0)
        return -1;
    *len = p->length;
    *raw = malloc(p->length ? p->length : 1);
    if (!*raw) {
        yfs_budget_release(m->budget, p->length, YFS_MEM_RAW, hold);
        return pq_error_set(err, "%s: out of memory for a %u-byte page", ix->files[file].name,
                            p->length);
    }
    int rc = storage_read(m, file, p->offset, *raw, p->length, page, 1, waited, err);
    if (rc < 0) {
        free(*raw);
        *raw = NULL;
        yfs_budget_release(m->budget, p->length, YFS_MEM_RAW, hold);
        return pq_error_prefix(err, "%s: data page at offset %llu: ", ix->files[file].name,
                               (unsigned long long)p->offset);
    }
    yfs_count(&m->stats.pages_read_alone, 1);
    return 0;
}

int yfs_page_read(yfs_mount *m, uint64_t page, yfs_hold *hold, uint8_t **raw, uint32_t *len,
                  pq_error *err)
{
    uint64_t waited = 0;
    int rc = read_alone(m, page, YFS_DEMAND, hold, raw, len, &waited, err);
    yfs_count(&m->stats.storage_wait_nanoseconds, waited);
    return rc;
}

/* The byte range of the load's pages in their file, if the index gives them
 * in ascending order (offsets come from the file: a range much longer than
 * its pages is not read whole). Ranges may overlap: an entry whose last row
 * goes on in the next pages covers them too (ix_chunk_scan.c). */
static int chunk_range(const ix_index *ix, const sh_load *load, uint64_t *start, uint64_t *end)
{
    const ix_page *first = &ix->pages[load->first_page];
    uint64_t pages_bytes = 0, prev_offset = first->offset;
    *start = first->offset;
    *end = first->offset;
    for (uint32_t q = load->first_page; q < load->first_page + load->pages; q++) {
        const ix_page *p = &ix->pages[q];
        if (p->offset < prev_offset)
            return -1;
        prev_offset = p->offset;
        if (p->offset + p->length > *end)
            *end = p->offset + p->length;
        pages_bytes += p->length;
    }
    return *end - *start <= 2 * pages_bytes ? 0 : -1;
}

uint64_t yfs_load_bytes(const yfs_mount *m, const sh_plan *plan, uint64_t l)
{
    uint64_t start, end;
    return chunk_range(m->ix, &plan->schedule.loads[l], &start, &end) < 0 ? 0 : end - start;
}

/* Park the page at order position pos (raw[0..len), charged to hold),
 * brought by its load: pinned when a build under way wants it. A page the
 * engine reads alone, or read alone for its build before its load ran (its
 * load was refused memory: l->alone set), is not parked by the load: it is
 * in the store already, taken, or about to be. */
static void park_from_load(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos,
                           uint8_t *raw, uint32_t len, yfs_hold *hold)
{
    pthread_mutex_lock(&l->lock);
    int wanted = l->wanted[pos], elsewhere = l->alone[pos] != NOT_STARTED;
    pthread_mutex_unlock(&l->lock);
    if (elsewhere) {
        free(raw);
        yfs_budget_release(m->budget, len, YFS_MEM_RAW, hold);
        return;
    }
    (wanted ? yfs_pages_put_pinned : yfs_pages_put)(m->loaded, plan->epoch, plan->order[pos],
                                                     pos, raw, len, hold);
}

/* The end of the last byte of pages [from, to] of one run (offsets
 * ascend, lengths come from the file: the furthest end, not the last's). */
static uint64_t pages_end(const ix_index *ix, uint32_t from, uint32_t to)
{
    uint64_t end = 0;
    for (uint32_t q = from; q <= to; q++)
        if (ix->pages[q].offset + ix->pages[q].length > end)
            end = ix->pages[q].offset + ix->pages[q].length;
    return end;
}

/* Whether global page q is one that load l brings for the files open on
 * the mount: served by l (not by another load) and read here. */
static int brings(const yfs_mount *m, const yfs_plan *owner, uint64_t l, uint32_t q)
{
    const sh_schedule *sched = &owner->plan.schedule;
    return sched->source[sched->position[q]] == l && yfs_page_read_here(m, owner, q);
}

/* Which of load l's pages it brings (brings) when it starts: brought[i] for
 * the load's page first_page + i, what it reserves for at once. -1 out of
 * memory. */
static int pages_brought(const yfs_mount *m, const yfs_plan *owner, uint64_t l,
                         uint8_t **brought)
{
    const sh_load *load = &owner->plan.schedule.loads[l];
    if (!(*brought = malloc(load->pages ? load->pages : 1)))
        return -1;
    for (uint32_t i = 0; i < load->pages; i++)
        (*brought)[i] = (uint8_t)brings(m, owner, l, load->first_page + i);
    return 0;
}

/* Whether the load brings page q now: reserved for at its start
 * (brought), or of a part opened since. */
static int brings_now(const yfs_mount *m, const yfs_plan *owner, uint64_t l,
                      const uint8_t *brought, uint32_t q)
{
    const sh_load *load = &owner->plan.schedule.loads[l];
    return brought[q - load->first_page] || brings(m, owner, l, q);
}

/* The pages of the load from page `first` on that one read brings
 * (brings_now): up to *last, which grows while the read's range (the first
 * page's offset to the furthest end) stays within twice the bytes of the
 * pages it brings. Its range in *start, *end. */
static void next_run(const yfs_mount *m, const yfs_plan *owner, uint64_t l,
                     const uint8_t *brought, uint32_t first, uint32_t *last, uint64_t *start,
                     uint64_t *end)
{
    const ix_index *ix = m->ix;
    const sh_load *load = &owner->plan.schedule.loads[l];
    uint64_t bytes = ix->pages[first].length;
    *start = ix->pages[first].offset;
    *end = *start + ix->pages[first].length;
    *last = first;
    for (uint32_t q = first + 1; q < load->first_page + load->pages; q++) {
        if (!brings_now(m, owner, l, brought, q))
            continue;
        uint64_t e = pages_end(ix, *last + 1, q);
        e = e > *end ? e : *end;
        if (e - *start > 2 * (bytes + ix->pages[q].length))
            break;
        bytes += ix->pages[q].length;
        *end = e;
        *last = q;
    }
}

/* Hand out page r of the load, read into buf (from file offset `start`):
 * to the caller in *raw when it is at order position `want`, else parked.
 * A page of a part opened since the load started (not brought) is
 * reserved for first, and skipped when refused. *served counts the bytes
 * reserved for and not yet handed out. */
static void serve(yfs_mount *m, yfs_plan *owner, uint64_t l, uint8_t *brought, uint32_t r,
                  const uint8_t *buf, uint64_t start, uint64_t want, yfs_hold *hold,
                  uint64_t *served, uint8_t **raw)
{
    const sh_schedule *sched = &owner->plan.schedule;
    const sh_load *load = &sched->loads[l];
    const ix_page *p = &m->ix->pages[r];
    if (!brought[r - load->first_page]) {
        if (!brings(m, owner, l, r) ||
            yfs_budget_reserve(m->budget, p->length, YFS_MEM_RAW, YFS_PREFETCH, hold) < 0)
            return; /* read, but served by another load, of no file here, or no room */
        brought[r - load->first_page] = 1;
        *served += p->length;
    }
    uint8_t *copy = malloc(p->length ? p->length : 1);
    if (!copy)
        return;
    assert(*served >= p->length); /* a page brought was reserved for */
    *served -= p->length;         /* its share goes with it */
    memcpy(copy, buf + (p->offset - start), p->length);
    uint32_t pos = sched->position[r];
    if (pos == want)
        *raw = copy;
    else
        park_from_load(m, &owner->plan, &owner->loads, pos, copy, p->length, hold);
}

/* Run load l of owner's plan: read the pages it brings for the files open
 * on the mount, hand the page at `want` (an order position; UINT64_MAX:
 * none) to the caller in *raw (charged to hold) and park the others. A load
 * that brings at least half its chunk's bytes reads the chunk in one I/O;
 * else each run of its pages near each other is read in one (a rank that
 * reads one part of 8 of 64 KiB pages fetched the whole files in chunks,
 * 816 MB for its 205). *raw stays NULL when the chunk could not be read or
 * the accountant refused the memory. Returns 1 when read, 0 when its
 * offsets do not ascend or its reads failed (its pages are read alone,
 * which reports any error), -1 when the accountant refused its memory
 * before it read anything.
 *
 * The pages it brings when it starts are reserved at once, all or nothing:
 * a load that parked only some would leave the others to be read alone,
 * one storage round trip each. Parts opened while it reads add pages read
 * here: each run is taken with them (8 parts of 64 KiB pages opened at once
 * at 50 ms a read: with the runs of the load's start only, 124-322 MB/s
 * against 358-441), and each is reserved for as it is handed out (one
 * handed out unreserved was charged to the hold past what it held: CI's
 * sanitizer run aborted so). A run's buffer is reserved for its read. */
static int execute(yfs_mount *m, yfs_plan *owner, uint64_t l, uint64_t want, yfs_hold *hold,
                   uint8_t **raw)
{
    const ix_index *ix = m->ix;
    const sh_load *load = &owner->plan.schedule.loads[l];
    uint64_t start, end;
    uint8_t *brought;
    *raw = NULL;
    if (chunk_range(ix, load, &start, &end) < 0 || pages_brought(m, owner, l, &brought) < 0)
        return 0;
    uint64_t served = 0;
    for (uint32_t q = load->first_page; q < load->first_page + load->pages; q++)
        served += brought[q - load->first_page] ? ix->pages[q].length : 0;
    int whole = 2 * served >= end - start;
    if (yfs_budget_reserve(m->budget, served, YFS_MEM_RAW, YFS_PREFETCH, hold) < 0) {
        free(brought);
        return -1;
    }
    pq_error ignored; /* the pages are then read alone, which reports the error */
    uint32_t file = ix->chunks[ix_locate(ix, load->first_page)].file;
    int read = 0, refused = 0;
    for (uint32_t q = load->first_page; q < load->first_page + load->pages; q++) {
        uint32_t last = load->first_page + load->pages - 1;
        if (!whole) {
            if (!brings_now(m, owner, l, brought, q))
                continue;
            next_run(m, owner, l, brought, q, &last, &start, &end);
        }
        if (yfs_budget_reserve(m->budget, end - start, YFS_MEM_CHUNKS, YFS_PREFETCH, hold) < 0) {
            refused = 1;
            break;
        }
        /* Mapped, not malloc'ed: many loads in flight at once left holes
         * in the heap that stayed resident after they were freed. */
        uint8_t *buf = yfs_segment_alloc(end - start);
        int rc = buf ? storage_read(m, file, start, buf, end - start, q, last - q + 1, NULL,
                                    &ignored)
                     : -1;
        for (uint32_t r = q; rc == 0 && r <= last; r++)
            serve(m, owner, l, brought, r, buf, start, want, hold, &served, raw);
        yfs_segment_free(buf, end - start);
        yfs_budget_release(m->budget, end - start, YFS_MEM_CHUNKS, hold);
        read |= rc == 0;
        q = last;
    }
    free(brought);
    if (read)
        yfs_count(&m->stats.chunk_loads, 1);
    yfs_budget_release(m->budget, served, YFS_MEM_RAW, hold); /* what was not handed out */
    return read ? 1 : refused ? -1 : 0;
}

/* The state machines below are one byte each, of a load (l->state) or of
 * a page read alone (l->alone), guarded by l->lock (not held on entry). */

/* *state leaves LOADING for `to`. */
static void finish(yfs_loads *l, uint8_t *state, uint8_t to)
{
    pthread_mutex_lock(&l->lock);
    assert(*state == LOADING);
    *state = to;
    pthread_cond_broadcast(&l->finished);
    pthread_mutex_unlock(&l->lock);
}

/* A queued *state goes to NOT_STARTED (unqueue) or LOADING (to run it):
 * whether it was queued. */
static int take_queued(yfs_loads *l, uint8_t *state, uint8_t to)
{
    pthread_mutex_lock(&l->lock);
    int queued = *state == QUEUED;
    if (queued)
        *state = to;
    pthread_mutex_unlock(&l->lock);
    return queued;
}

int yfs_loads_queue(yfs_loads *l, uint64_t load)
{
    pthread_mutex_lock(&l->lock);
    int marked = l->state[load] == NOT_STARTED;
    if (marked)
        l->state[load] = QUEUED;
    pthread_mutex_unlock(&l->lock);
    return marked;
}

void yfs_loads_unqueue(yfs_loads *l, uint64_t load)
{
    take_queued(l, &l->state[load], NOT_STARTED);
}

/* The page at pos was read (raw[0..len), charged to hold) or not (raw
 * NULL): park it, and let l->alone[pos] leave LOADING for DONE, or for
 * NOT_STARTED when it was not read (its build reads it then, and reports
 * any error). One step under the lock, the page parked before the state
 * moves: a build waiting for it then finds it in the store. (The store's
 * lock is taken under ours, as in yfs_loads_queue_page, never the reverse.) */
static void settle_alone(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos,
                         uint8_t *raw, uint32_t len, yfs_hold *hold)
{
    pthread_mutex_lock(&l->lock);
    assert(l->alone[pos] == LOADING);
    if (raw)
        (l->wanted[pos] ? yfs_pages_put_pinned : yfs_pages_put)(m->loaded, plan->epoch,
                                                                 plan->order[pos], pos, raw,
                                                                 len, hold);
    l->alone[pos] = raw ? DONE : NOT_STARTED;
    pthread_cond_broadcast(&l->finished);
    pthread_mutex_unlock(&l->lock);
}

/* Read the page at pos alone, reserved in `mode`, and park it; l->alone[pos]
 * (LOADING, set by the caller) becomes DONE, or NOT_STARTED when it was not
 * read. Returns 1 when it was read, -1 otherwise. */
static int read_and_park(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos,
                         yfs_mem_mode mode, yfs_hold *hold)
{
    uint32_t len = 0;
    uint8_t *raw;
    uint64_t ignored_ns;
    pq_error ignored; /* its build reads it again, which reports the error */
    read_alone(m, plan->order[pos], mode, hold, &raw, &len, &ignored_ns, &ignored);
    settle_alone(m, plan, l, pos, raw, len, hold);
    return raw ? 1 : -1;
}

int yfs_loads_run(yfs_mount *m, yfs_plan *owner, uint64_t load, uint64_t pos, int for_build,
                  yfs_hold *hold)
{
    const sh_plan *plan = &owner->plan;
    yfs_loads *l = &owner->loads;
    if (!take_queued(l, &l->state[load], LOADING))
        return 0;
    uint8_t *none;
    int rc = execute(m, owner, load, UINT64_MAX, hold, &none);
    assert(!none);
    if (rc > 0) {
        yfs_count(&m->stats.loads_ahead, 1);
        finish(l, &l->state[load], DONE);
        return 1;
    }
    /* Not readable (its pages are read alone from now on: the engine
     * queues each when its segment comes) or refused (it may run later for
     * its other pages): the page alone, now, in the same step as the load
     * leaves LOADING (a build waiting for the load then waits for the
     * page). */
    pthread_mutex_lock(&l->lock);
    l->state[load] = rc == 0 ? DONE : NOT_STARTED;
    int mine = pos != UINT64_MAX && l->alone[pos] == NOT_STARTED;
    if (mine)
        l->alone[pos] = LOADING;
    pthread_cond_broadcast(&l->finished);
    pthread_mutex_unlock(&l->lock);
    yfs_mem_mode mode = for_build ? YFS_TRY : YFS_PREFETCH;
    return mine ? read_and_park(m, plan, l, pos, mode, hold) : rc == 0 ? 1 : -1;
}

int yfs_loads_queue_page(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos)
{
    uint32_t page = plan->order[pos];
    pthread_mutex_lock(&l->lock);
    int marked = l->state[plan->schedule.source[pos]] == DONE && l->alone[pos] == NOT_STARTED &&
                 !yfs_pages_holds(m->loaded, plan->epoch, page);
    if (marked)
        l->alone[pos] = QUEUED;
    pthread_mutex_unlock(&l->lock);
    return marked;
}

size_t yfs_loads_queue_wanted(const sh_plan *plan, yfs_loads *l, uint64_t load, uint64_t *pos,
                              size_t max)
{
    const sh_schedule *sched = &plan->schedule;
    const sh_load *ld = &sched->loads[load];
    size_t n = 0;
    pthread_mutex_lock(&l->lock);
    for (uint32_t q = ld->first_page; l->state[load] == NOT_STARTED && n < max &&
                                      q < ld->first_page + ld->pages; q++) {
        uint32_t p = sched->position[q];
        if (sched->source[p] == load && l->wanted[p] && l->alone[p] == NOT_STARTED) {
            l->alone[p] = QUEUED;
            pos[n++] = p;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return n;
}

void yfs_loads_want(yfs_loads *l, uint64_t pos)
{
    pthread_mutex_lock(&l->lock);
    l->wanted[pos] = 1;
    pthread_mutex_unlock(&l->lock);
}

void yfs_loads_unqueue_page(yfs_loads *l, uint64_t pos)
{
    take_queued(l, &l->alone[pos], NOT_STARTED);
}

int yfs_loads_page_queued(yfs_loads *l, uint64_t pos)
{
    pthread_mutex_lock(&l->lock);
    int queued = l->alone[pos] == QUEUED;
    pthread_mutex_unlock(&l->lock);
    return queued;
}

/* Take, besides pos (LOADING already), the pages of its load the engine has
 * queued to read alone that lie near it on storage (lock not held): they
 * go LOADING, and `group` gets pos and them, in storage order; returns how
 * many. A page joins while the group's range (from its first page's offset
 * to the furthest end of the pages between) stays within twice the group's
 * bytes, as a chunk load's (chunk_range), and YFS_LOADS_TOGETHER_MAX pages:
 * the side that widens the range least first. The range lies within the
 * load's, so it is never more than the load would have read. */
static size_t take_together(const ix_index *ix, const sh_plan *plan, yfs_loads *l,
                            uint64_t pos, uint64_t group[YFS_LOADS_TOGETHER_MAX])
{
    const sh_schedule *sched = &plan->schedule;
    uint32_t load = sched->source[pos];
    const sh_load *ld = &sched->loads[load];
    uint64_t start, end;
    group[0] = pos;
    if (chunk_range(ix, ld, &start, &end) < 0)
        return 1; /* offsets do not ascend: the page alone */
    /* The load's pages queued alone, and pos's, in page order (storage
     * order); `at` is pos's among them. */
    uint32_t cand[SH_CHUNK_MAX_PAGES];
    size_t n = 0, at = 0;
    pthread_mutex_lock(&l->lock);
    for (uint32_t q = ld->first_page; q < ld->first_page + ld->pages; q++) {
        uint32_t p = sched->position[q];
        if (p == pos)
            at = n;
        if (p == pos || (sched->source[p] == load && l->alone[p] == QUEUED))
            cand[n++] = q;
    }
    assert(n > at && cand[at] == plan->order[pos]);
    size_t lo = at, hi = at; /* the group: cand[lo..hi] */
    uint64_t bytes = ix->pages[cand[at]].length;
    end = ix->pages[cand[at]].offset + ix->pages[cand[at]].length;
    while (hi - lo + 1 < YFS_LOADS_TOGETHER_MAX && (lo > 0 || hi + 1 < n)) {
        /* the range with the page before, or after, the group */
        uint64_t end_before = lo > 0 ? pages_end(ix, cand[lo - 1], cand[lo] - 1) : 0;
        uint64_t end_after = hi + 1 < n ? pages_end(ix, cand[hi] + 1, cand[hi + 1]) : 0;
        uint64_t span_before = lo > 0 ? (end_before > end ? end_before : end) -
                                            ix->pages[cand[lo - 1]].offset
                                      : UINT64_MAX;
        uint64_t span_after = hi + 1 < n ? (end_after > end ? end_after : end) -
                                               ix->pages[cand[lo]].offset
                                         : UINT64_MAX;
        int before = span_before <= span_after;
        uint32_t joins = before ? cand[lo - 1] : cand[hi + 1];
        uint64_t span = before ? span_before : span_after;
        if (span > 2 * (bytes + ix->pages[joins].length))
            break;
        bytes += ix->pages[joins].length;
        if (before)
            lo--;
        else
            hi++;
        end = ix->pages[cand[lo]].offset + span;
    }
    for (size_t i = lo; i <= hi; i++) {
        uint32_t p = sched->position[cand[i]];
        if (p != pos)
            l->alone[p] = LOADING;
        group[i - lo] = p;
    }
    pthread_mutex_unlock(&l->lock);
    return hi - lo + 1;
}

/* Read the pages of `group` (n > 1, LOADING, in storage order, pos among
 * them) in one storage read and park them: pos's page reserved in `mode`,
 * the others as a prefetch, with the range's buffer (in pos's mode); all or
 * none. Returns 1 when they were read and parked (their states DONE); 0
 * when memory was refused: the others go back to QUEUED (their entries in
 * the engine's queue read them alone in turn; one whose reader the engine
 * forgot meanwhile stays QUEUED with no entry, and its build reads it as
 * any page not parked), pos stays LOADING for the caller; -1 when the read
 * failed: every page of the group goes to NOT_STARTED (their builds read
 * them and report the error). */
static int read_together(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos,
                         const uint64_t *group, size_t n, yfs_mem_mode mode, yfs_hold *hold)
{
    const ix_index *ix = m->ix;
    uint32_t first = plan->order[group[0]], last = plan->order[group[n - 1]];
    uint64_t start = ix->pages[first].offset;
    uint64_t length = pages_end(ix, first, last) - start, others = 0;
    for (size_t i = 0; i < n; i++)
        if (group[i] != pos)
            others += ix->pages[plan->order[group[i]]].length;
    uint32_t mine = ix->pages[plan->order[pos]].length;
    /* what is reserved: 1 the range's buffer, 2 and pos's page, 3 and the others */
    int reserved = yfs_budget_reserve(m->budget, length, YFS_MEM_CHUNKS, mode, hold) == 0;
    reserved += reserved == 1 &&
                yfs_budget_reserve(m->budget, mine, YFS_MEM_RAW, mode, hold) == 0;
    reserved += reserved == 2 &&
                yfs_budget_reserve(m->budget, others, YFS_MEM_RAW, YFS_PREFETCH, hold) == 0;
    uint8_t *buf = reserved == 3 ? yfs_segment_alloc(length) : NULL;
    int refused = !buf; /* no room (or no mapping): the others go back to QUEUED */
    pq_error ignored; /* the pages' builds read them again, which reports the error */
    uint32_t file = ix->chunks[ix_locate(ix, first)].file;
    int rc = buf ? storage_read(m, file, start, buf, length, first, last - first + 1, NULL,
                                &ignored)
                 : -1;
    uint8_t *copies[YFS_LOADS_TOGETHER_MAX] = { 0 };
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const ix_page *p = &ix->pages[plan->order[group[i]]];
        if (!(copies[i] = malloc(p->length ? p->length : 1)))
            rc = -1;
        else
            memcpy(copies[i], buf + (p->offset - start), p->length);
    }
    if (buf)
        yfs_segment_free(buf, length);
    if (reserved >= 1)
        yfs_budget_release(m->budget, length, YFS_MEM_CHUNKS, hold);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            free(copies[i]);
        if (reserved >= 2)
            yfs_budget_release(m->budget, mine, YFS_MEM_RAW, hold);
        if (reserved == 3)
            yfs_budget_release(m->budget, others, YFS_MEM_RAW, hold);
        pthread_mutex_lock(&l->lock);
        for (size_t i = 0; i < n; i++)
            if (group[i] != pos || !refused)
                l->alone[group[i]] = refused ? QUEUED : NOT_STARTED;
        pthread_cond_broadcast(&l->finished);
        pthread_mutex_unlock(&l->lock);
        return refused ? 0 : -1;
    }
    yfs_count(&m->stats.reads_together, 1);
    yfs_count(&m->stats.pages_read_together, n);
    for (size_t i = 0; i < n; i++)
        settle_alone(m, plan, l, group[i], copies[i], ix->pages[plan->order[group[i]]].length,
                     hold);
    return 1;
}

int yfs_loads_run_page(yfs_mount *m, const sh_plan *plan, yfs_loads *l, uint64_t pos,
                       int for_build, yfs_hold *hold)
{
    if (!take_queued(l, &l->alone[pos], LOADING))
        return 0;
    yfs_mem_mode mode = for_build ? YFS_TRY : YFS_PREFETCH;
    uint64_t group[YFS_LOADS_TOGETHER_MAX];
    size_t n = take_together(m->ix, plan, l, pos, group);
    int rc = n > 1 ? read_together(m, plan, l, pos, group, n, mode, hold) : 0;
    return rc != 0 ? rc : read_and_park(m, plan, l, pos, mode, hold);
}

int yfs_page_fetch(yfs_mount *m, yfs_plan *owner, uint64_t pos, yfs_hold *hold, uint8_t **raw,
                   uint32_t *len, pq_error *err)
{
    const sh_plan *sp = &owner->plan;
    yfs_loads *l = &owner->loads;
    uint32_t page = sp->order[pos];
    if (sp->schedule.num_loads == 0)
        return yfs_page_read(m, page, hold, raw, len, err);

    uint32_t load = sp->schedule.source[pos];
    uint64_t waiting_since = 0; /* set once this build waits for storage */
    pthread_mutex_lock(&l->lock);
    if (l->state[load] == LOADING || l->alone[pos] == LOADING)
        waiting_since = yfs_now_ns();
    while (l->state[load] == LOADING || l->alone[pos] == LOADING)
        pthread_cond_wait(&l->finished, &l->lock);
    if (l->state[load] != DONE && l->alone[pos] != DONE) {
        l->state[load] = LOADING; /* a queued load is the engine's no more */
        l->wanted[pos] = 0;       /* the load hands this build its page */
        l->alone[pos] = DONE;     /* or this build reads it alone: the engine does not */
        pthread_mutex_unlock(&l->lock);
        if (!waiting_since)
            waiting_since = yfs_now_ns();
        /* Refused for memory, it may run later for the pages it serves
         * after this one (read alone now): else each would be read alone. */
        int ran = execute(m, owner, load, pos, hold, raw);
        *len = m->ix->pages[page].length;
        finish(l, &l->state[load], ran < 0 ? NOT_STARTED : DONE);
    } else {
        /* Brought by its load, or read alone (by the engine, or for this
         * build while its load waited for memory): parked, if still. */
        l->alone[pos] = DONE; /* the engine reads it no more */
        l->wanted[pos] = 0;   /* this build takes it */
        pthread_mutex_unlock(&l->lock);
        *raw = yfs_pages_take(m->loaded, sp->epoch, page, hold, len);
    }
    if (waiting_since)
        yfs_count(&m->stats.storage_wait_nanoseconds, yfs_now_ns() - waiting_since);
    if (!*raw)
        return yfs_page_read(m, page, hold, raw, len, err);
    yfs_count(&m->stats.pages_from_chunks, 1);
    return 0;
}
