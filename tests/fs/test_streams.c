/* yfs_streams.h: page streams paused between units are handed back only at
 * the unit they are positioned at, carry their charge and dictionary with
 * them, and give way to the store's cap and to demand reservations; a build
 * that needs a later unit of a page in use waits for its stream. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "ix_stream.h"
#include "tfs.h"
#include "yfs_budget.h"
#include "yfs_dicts.h"
#include "yfs_streams.h"

typedef struct opened {
    ix_stream *s;
    void *dict;
    uint64_t read;
    yfs_dict_source src;
    ix_dict_source dicts;
} opened;

/* A stream over entry `page` of the sample opened with opts (NULL: the
 * defaults), its cap reserved for hold, after its first record. */
static void open_stream_with(yfs_mount *m, uint64_t page, const ix_stream_opts *opts,
                             yfs_hold *hold, opened *o)
{
    o->src = (yfs_dict_source){ m->dicts, hold };
    o->dicts = yfs_dicts_source(&o->src);
    o->read = 0;
    pq_error err;
    yfs_budget_reserve(m->budget, ix_stream_cap(), YFS_MEM_DECODED, YFS_DEMAND, hold);
    o->s = ix_stream_open(m->ix, page, &o->dicts, &o->dict, opts, &o->read, &err);
    cr_assert_not_null(o->s, "%s", err.msg);
    ix_record r;
    cr_assert_eq(ix_stream_next(o->s, &r, &err), 1, "%s", err.msg);
    cr_assert(ix_stream_pausable(o->s));
}

static void open_stream(yfs_mount *m, uint64_t page, yfs_hold *hold, opened *o)
{
    open_stream_with(m, page, NULL, hold, o);
}

/* A stream taken back (at unit `at` of `page`, with dict and charged) goes
 * on with the records after the one open_stream_with read before it was
 * paused, to the entry's end; then it is closed, its use ended, its
 * dictionary and charge given back. */
static void read_rest_and_close(yfs_mount *m, yfs_streams *st, opened *o, ix_stream *s,
                                uint32_t page, uint64_t at, void *dict, uint64_t charged,
                                yfs_hold *hold)
{
    uint64_t read = 0;
    ix_dict_source dicts = yfs_dicts_source(&o->src);
    ix_stream_rebind(s, &dicts, &dict, &read);
    ix_record r;
    pq_error err;
    uint32_t more = 0;
    int rc;
    while ((rc = ix_stream_next(s, &r, &err)) == 1)
        more++;
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(more + 1, m->ix->pages[page].records, "it went on with the next record");
    ix_stream_close(s);
    yfs_streams_end(st, page, at);
    if (dict)
        yfs_dicts_put(m->dicts, dict);
    yfs_budget_release(m->budget, charged, YFS_MEM_DECODED, hold);
}

/* yfs_streams_take with the page's first unit 0; a caller that gets no
 * stream gives up streaming the page at once (ends its use). */
static ix_stream *take(yfs_streams *st, uint32_t page, uint64_t unit, yfs_hold *hold,
                       uint64_t *at, void **dict, uint64_t *charged)
{
    ix_stream *s = yfs_streams_take(st, page, unit, 0, hold, at, dict, charged);
    if (!s) {
        cr_assert_eq(*at, 0, "no stream: the caller streams from the first unit");
        yfs_streams_end(st, page, 0);
    }
    return s;
}

Test(streams, a_paused_stream_resumes_where_it_stopped)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_streams *st = yfs_streams_new(m->budget, m->dicts, 64u << 20, &m->stats);
    yfs_hold hold = { 0 };
    yfs_hold_enter(m->budget, &hold);
    opened o;
    open_stream(m, 0, &hold, &o);
    uint64_t before = tfs_held(m->budget, YFS_MEM_DECODED);
    uint64_t held = ix_stream_bytes(o.s);
    cr_assert_leq(held, ix_stream_committed(o.s));
    cr_assert_leq(ix_stream_committed(o.s), ix_stream_cap());
    yfs_streams_put(st, 0, 7, o.s, o.dict, ix_stream_cap(), &hold);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_DECODED), before - ix_stream_cap());
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), held, "paused at what it holds");

    void *dict;
    uint64_t charged, at;
    cr_assert_null(take(st, 0, 6, &hold, &at, &dict, &charged), "past unit 6");
    cr_assert_null(take(st, 1, 7, &hold, &at, &dict, &charged), "another page");
    ix_stream *s = take(st, 0, 9, &hold, &at, &dict, &charged);
    cr_assert_eq(s, o.s, "the latest paused at or before unit 9");
    cr_assert_eq(at, 7);
    cr_assert_eq(dict, o.dict);
    cr_assert_eq(charged, held);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), 0);
    cr_assert_null(take(st, 0, 7, &hold, &at, &dict, &charged), "taken once");

    read_rest_and_close(m, st, &o, s, 0, 7, dict, charged, &hold);
    yfs_hold_leave(m->budget, &hold);
    yfs_streams_free(st);
    yfs_mount_close(m);
}

Test(streams, the_cap_closes_the_oldest_and_free_closes_the_rest)
{
    /* what a paused stream holds, from a first mount */
    yfs_mount *probe = tfs_open_sample("column=text", NULL, 256u << 20);
    yfs_hold hold = { 0 };
    yfs_hold_enter(probe->budget, &hold);
    opened p;
    open_stream(probe, 0, &hold, &p);
    uint64_t held = ix_stream_bytes(p.s);
    ix_stream_close(p.s);
    yfs_dicts_put(probe->dicts, p.dict);
    yfs_budget_release(probe->budget, ix_stream_cap(), YFS_MEM_DECODED, &hold);
    yfs_hold_leave(probe->budget, &hold);
    yfs_mount_close(probe);

    /* a mount whose store (a quarter of mem) has room for one of two */
    yfs_mount *m = tfs_open_sample("column=text", NULL, 6 * held);
    yfs_streams *st = m->streams;
    cr_assert(yfs_mount_framed_budget(m) >= held && yfs_mount_framed_budget(m) < 2 * held);
    hold = (yfs_hold){ 0 };
    yfs_hold_enter(m->budget, &hold);
    opened a, b;
    open_stream(m, 0, &hold, &a);
    yfs_streams_put(st, 0, 1, a.s, a.dict, ix_stream_cap(), &hold);
    open_stream(m, 0, &hold, &b); /* the same page: paused at another unit */
    cr_assert_eq(ix_stream_bytes(b.s), held);
    yfs_streams_put(st, 0, 2, b.s, b.dict, ix_stream_cap(), &hold);
    cr_assert_eq(yfs_counter(&m->stats.streams_closed), 1);
    void *dict;
    uint64_t charged, at;
    cr_assert_null(take(st, 0, 1, &hold, &at, &dict, &charged), "the oldest went");
    ix_stream *s = take(st, 0, 2, &hold, &at, &dict, &charged);
    cr_assert(s && at == 2, "the newest stayed");
    yfs_streams_put(st, 0, 2, s, dict, charged, &hold);
    yfs_streams_end(st, 0, 2);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), held);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_DECODED), 0);
    yfs_hold_leave(m->budget, &hold);
    yfs_mount_close(m); /* closes the paused one: the accountant asserts every byte is back */
}

Test(streams, a_demand_short_of_room_closes_paused_streams)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_streams *st = m->streams; /* the mount's: its reclaimer is registered */
    yfs_hold hold = { 0 };
    yfs_hold_enter(m->budget, &hold);
    opened a;
    open_stream(m, 2, &hold, &a);
    yfs_streams_put(st, 2, 1, a.s, a.dict, ix_stream_cap(), &hold);
    uint64_t paused = tfs_held(m->budget, YFS_MEM_PARKED);
    cr_assert_gt(paused, 0);
    /* a demand for the whole budget: the stream's charge and then its
     * dictionary, idle once the stream is closed, must give way */
    uint64_t all = yfs_mount_data_budget(m);
    yfs_budget_reserve(m->budget, all, YFS_MEM_BUILD, YFS_DEMAND, &hold);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), 0, "the paused stream gave way");
    void *dict;
    uint64_t charged, at;
    cr_assert_null(take(st, 2, 1, &hold, &at, &dict, &charged));
    yfs_budget_release(m->budget, all, YFS_MEM_BUILD, &hold);
    yfs_hold_leave(m->budget, &hold);
    yfs_mount_close(m);
}

/* `build` reserves all the room left but `spare` bytes; returns what it
 * reserved, for the caller to release. */
static uint64_t hold_all_but(yfs_mount *m, yfs_hold *build, uint64_t spare)
{
    uint64_t room = yfs_mount_data_budget(m) - yfs_budget_used(m->budget) - spare;
    yfs_budget_reserve(m->budget, room, YFS_MEM_BUILD, YFS_DEMAND, build);
    return room;
}

/* A stream of the sample's entry 2 paused at unit 1 by `build`, which then
 * holds all the room but half what the stream holds (*paused; *room: the
 * build's reservation, for the caller to release). */
static void pause_beside_a_build(yfs_mount *m, yfs_hold *build, uint64_t *paused, uint64_t *room)
{
    opened a;
    open_stream(m, 2, build, &a);
    yfs_streams_put(m->streams, 2, 1, a.s, a.dict, ix_stream_cap(), build);
    *paused = tfs_held(m->budget, YFS_MEM_PARKED);
    cr_assert_gt(*paused, 0);
    *room = hold_all_but(m, build, *paused / 2);
}

typedef struct demand_job {
    yfs_budget *budget;
    uint64_t bytes;
    yfs_hold hold;
    _Atomic int done;
} demand_job;

static void *demand(void *arg)
{
    demand_job *j = arg;
    yfs_hold_enter(j->budget, &j->hold);
    yfs_budget_reserve(j->budget, j->bytes, YFS_MEM_BUILD, YFS_DEMAND, &j->hold);
    atomic_store(&j->done, 1);
    return NULL;
}

/* A paused stream is worth its page's bytes up to where it stopped (a
 * stream closed reads them again: DuckDB's pages of 50 MB, 8 parts at
 * 50 ms a read, read 5.9 x their bytes): a demand short of room waits for
 * the builds running to free room, as for the caches' working sets
 * (yfs_budget.h, Patience), instead of closing it at once. */
Test(streams, a_demand_waits_for_a_running_build_before_closing_paused_streams)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_hold build = { 0 };
    yfs_hold_enter(m->budget, &build);
    /* closing the stream would let the demand of its bytes through */
    uint64_t paused, room;
    pause_beside_a_build(m, &build, &paused, &room);
    demand_job j = { .budget = m->budget, .bytes = paused };
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, demand, &j), 0);
    while (!yfs_budget_demand_waiting(m->budget) && !atomic_load(&j.done))
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), paused, "the paused stream is kept");
    yfs_budget_release(m->budget, room, YFS_MEM_BUILD, &build);
    pthread_join(t, NULL);
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), paused,
                 "the demand went through with the room the build freed");
    yfs_budget_release(m->budget, paused, YFS_MEM_BUILD, &j.hold);
    yfs_hold_leave(m->budget, &j.hold);
    yfs_hold_leave(m->budget, &build);
    yfs_mount_close(m);
}

/* Run demand j on a thread of its own while `build` holds `room`, until
 * *until is set (5 s at most); then the build frees its room (never a hung
 * test) and the demand ends. Returns whether *until was set meanwhile. */
static int demand_beside_a_build(demand_job *j, yfs_hold *build, uint64_t room,
                                 _Atomic int *until)
{
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, demand, j), 0);
    for (int ms = 0; ms < 5000 && !atomic_load(until); ms++)
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    int set = atomic_load(until);
    yfs_budget_release(j->budget, room, YFS_MEM_BUILD, build);
    pthread_join(t, NULL);
    return set;
}

/* A reclaimer registered after the mount's, so called after theirs: what
 * the paused streams held when a demand first reached the impatient level
 * (yfs_budget.h, Patience). */
typedef struct impatience {
    yfs_budget *budget;
    _Atomic int seen;
    _Atomic uint64_t parked;
} impatience;

static uint64_t note_impatience(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    impatience *i = ctx;
    (void)need;
    (void)asking;
    if (demand == YFS_RECLAIM_IMPATIENT && !atomic_load(&i->seen)) {
        atomic_store(&i->parked, tfs_held(i->budget, YFS_MEM_PARKED));
        atomic_store(&i->seen, 1);
    }
    return 0;
}

static uint64_t nothing_idle(void *ctx, int demand, const yfs_hold *asking)
{
    (void)ctx;
    (void)demand;
    (void)asking;
    return 0;
}

/* Out of patience while a build still runs, a demand closes paused streams
 * only when closing them would let it through: one short of more than they
 * hold waits for the build all the same, and every stream closed would be
 * read and decoded again for nothing (8 parts of DuckDB's tokens at 10 ms
 * a read, segments of 40 MB: 35-60 streams closed an epoch, 3.2-3.8 GB
 * read for 1.7 GB). */
Test(streams, an_impatient_demand_keeps_paused_streams_that_could_not_let_it_through)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    impatience seen = { .budget = m->budget };
    yfs_budget_add_reclaimer(m->budget, note_impatience, nothing_idle, &seen);
    yfs_hold build = { 0 };
    yfs_hold_enter(m->budget, &build);
    uint64_t paused, room;
    pause_beside_a_build(m, &build, &paused, &room);
    /* the demand lacks three and a half times what closing the stream frees */
    demand_job j = { .budget = m->budget, .bytes = 4 * paused };
    cr_assert(demand_beside_a_build(&j, &build, room, &seen.seen),
              "the demand ran out of patience");
    cr_assert_eq(atomic_load(&seen.parked), paused, "the paused stream was kept");
    yfs_budget_release(m->budget, j.bytes, YFS_MEM_BUILD, &j.hold);
    yfs_hold_leave(m->budget, &j.hold);
    yfs_hold_leave(m->budget, &build);
    yfs_mount_close(m);
}

/* ... and closes them when that lets it through while the build still
 * holds its room. */
Test(streams, an_impatient_demand_closes_paused_streams_that_let_it_through)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_hold build = { 0 };
    yfs_hold_enter(m->budget, &build);
    uint64_t paused, room;
    pause_beside_a_build(m, &build, &paused, &room);
    demand_job j = { .budget = m->budget, .bytes = paused };
    cr_assert(demand_beside_a_build(&j, &build, room, &j.done),
              "the demand went through with the build's room still held");
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), 0, "the paused stream gave way");
    cr_assert_eq(yfs_counter(&m->stats.streams_closed), 1);
    yfs_budget_release(m->budget, j.bytes, YFS_MEM_BUILD, &j.hold);
    yfs_hold_leave(m->budget, &j.hold);
    yfs_hold_leave(m->budget, &build);
    yfs_mount_close(m);
}

/* Over slow storage a paused stream holds mostly its reads ahead, and a
 * stream closed is read and decoded again from its page's start (8 parts
 * of DuckDB's text at 50 ms a read closed 76 streams of 16 pages): a
 * demand short of room has the reads ahead let go at once, while a build
 * still runs, and the stream keeps its place, paused, closed by no one. */
Test(streams, a_demand_short_of_room_sheds_the_reads_ahead_of_paused_streams)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_hold build = { 0 };
    yfs_hold_enter(m->budget, &build);
    uint32_t page = 0; /* the longest entry, read ahead in windows of a tenth of it */
    for (uint32_t p = 1; p < m->ix->num_pages; p++)
        if (m->ix->pages[p].length > m->ix->pages[page].length)
            page = p;
    /* as if a read had been slow; small reads, so that most of it is read ahead */
    ix_stream_opts ahead = { .read_size = 64, .window = m->ix->pages[page].length / 10,
                             .ahead = 1 };
    opened a;
    open_stream_with(m, page, &ahead, &build, &a);
    uint64_t reads_ahead = ix_stream_sheddable(a.s);
    cr_assert_gt(reads_ahead, 0);
    yfs_streams_put(m->streams, page, 1, a.s, a.dict, ix_stream_cap(), &build);
    uint64_t paused = tfs_held(m->budget, YFS_MEM_PARKED);
    cr_assert_gt(paused, reads_ahead);
    /* a running build holds all the room but half the reads ahead */
    uint64_t room = hold_all_but(m, &build, reads_ahead / 2);
    demand_job j = { .budget = m->budget, .bytes = reads_ahead };
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, demand, &j), 0);
    for (int ms = 0; ms < 2000 && !atomic_load(&j.done); ms++)
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    int through = atomic_load(&j.done);
    yfs_budget_release(m->budget, room, YFS_MEM_BUILD, &build); /* never a hung test */
    pthread_join(t, NULL);
    cr_assert(through, "the demand waited for the build instead of the reads ahead");
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), paused - reads_ahead);
    cr_assert_eq(yfs_counter(&m->stats.streams_closed), 0);

    void *dict;
    uint64_t charged, at;
    ix_stream *s = take(m->streams, page, 1, &build, &at, &dict, &charged);
    cr_assert(s == a.s && at == 1, "still paused where it stopped");
    cr_assert_eq(charged, paused - reads_ahead);
    read_rest_and_close(m, m->streams, &a, s, page, 1, dict, charged, &build);
    yfs_budget_release(m->budget, reads_ahead, YFS_MEM_BUILD, &j.hold);
    yfs_hold_leave(m->budget, &j.hold);
    yfs_hold_leave(m->budget, &build);
    yfs_mount_close(m);
}

/* A mount of one text page compressed with SNAPPY (its streams may be
 * marked), hold entered, a stream over the page (*a) after its first record
 * and its mark kept as unit 1's; *marks: what the mark is charged. */
static yfs_mount *open_marked_stream(yfs_hold *hold, opened *a, uint64_t *marks)
{
    yfs_mount *m = tfs_open(YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet",
                            "column=text,cache=none", NULL, 64u << 20);
    yfs_hold_enter(m->budget, hold);
    open_stream(m, 0, hold, a);
    ix_stream_mark mark;
    cr_assert(ix_stream_mark_here(a->s, &mark));
    yfs_streams_mark(m->streams, 1, &mark);
    cr_assert(yfs_streams_marked(m->streams, 1));
    *marks = tfs_held(m->budget, YFS_MEM_MARKS);
    cr_assert_gt(*marks, 0);
    return m;
}

/* A stream paused at a unit whose mark is kept saves whoever continues it
 * only a round trip over resuming from the mark: a demand short of room
 * closes it at once, while a build still runs, where it waits for the build
 * before closing a stream paused at a unit with no mark (above); the mark
 * stays. */
Test(streams, a_demand_short_of_room_closes_streams_paused_at_marks)
{
    yfs_hold build = { 0 };
    opened a;
    uint64_t marks;
    yfs_mount *m = open_marked_stream(&build, &a, &marks);
    yfs_streams_put(m->streams, 0, 1, a.s, a.dict, ix_stream_cap(), &build);
    uint64_t paused = tfs_held(m->budget, YFS_MEM_PARKED);
    cr_assert_gt(paused, 0);
    uint64_t room = hold_all_but(m, &build, paused / 2);
    uint64_t waits = yfs_counter(&m->stats.memory_waits);
    demand_job j = { .budget = m->budget, .bytes = paused };
    cr_assert(demand_beside_a_build(&j, &build, room, &j.done),
              "the demand went through with the build's room still held");
    cr_assert_eq(yfs_counter(&m->stats.memory_waits), waits,
                 "it went through at once, without waiting out its patience");
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_PARKED), 0, "the stream went");
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_MARKS), marks, "the mark stayed");
    cr_assert_eq(yfs_counter(&m->stats.streams_closed), 1);
    void *dict;
    uint64_t charged, at;
    cr_assert_null(take(m->streams, 0, 1, &build, &at, &dict, &charged));
    cr_assert(yfs_streams_marked(m->streams, 1));
    yfs_budget_release(m->budget, j.bytes, YFS_MEM_BUILD, &j.hold);
    yfs_hold_leave(m->budget, &j.hold);
    yfs_hold_leave(m->budget, &build);
    yfs_mount_close(m);
}

/* Marks are never let go: forgotten for room, 8 parts of DuckDB's tokens at
 * 50 ms a read streamed four times as many pages from their start. The
 * accountant counts them with what waiting cannot free, so a demand that
 * nothing else could make room for goes over the limit beside them. */
Test(streams, a_demand_nothing_could_make_room_for_keeps_the_marks)
{
    yfs_hold hold = { 0 };
    opened a;
    uint64_t marks;
    yfs_mount *m = open_marked_stream(&hold, &a, &marks);
    ix_stream_close(a.s);
    yfs_budget_release(m->budget, ix_stream_cap(), YFS_MEM_DECODED, &hold);
    cr_assert_eq(yfs_budget_used(m->budget), marks, "nothing but the mark is charged");
    uint64_t all = yfs_mount_data_budget(m);
    yfs_budget_reserve(m->budget, all, YFS_MEM_BUILD, YFS_DEMAND, &hold);
    cr_assert(yfs_streams_marked(m->streams, 1), "the mark was kept");
    cr_assert_eq(tfs_held(m->budget, YFS_MEM_MARKS), marks);
    yfs_budget_snapshot snap;
    yfs_budget_snapshot_get(m->budget, &snap);
    cr_assert_eq(snap.over_budget, 1, "the demand went over the limit beside it");
    yfs_budget_release(m->budget, all, YFS_MEM_BUILD, &hold);
    yfs_hold_leave(m->budget, &hold);
    yfs_mount_close(m);
}

typedef struct wait_job {
    yfs_streams *st;
    uint32_t page;
    uint64_t unit;
    _Atomic int result; /* -1 while waiting */
    yfs_budget *budget; /* with hold: the waiter is hold's thread */
    yfs_hold *hold;
} wait_job;

static void *wait_for(void *arg)
{
    wait_job *j = arg;
    if (j->hold)
        yfs_hold_enter(j->budget, j->hold);
    atomic_store(&j->result, yfs_streams_wait(j->st, j->page, j->unit, j->hold));
    if (j->hold)
        yfs_hold_leave(j->budget, j->hold);
    return NULL;
}

/* A build that needs a later unit of a page another build streams waits
 * until that stream is let go (yfs_streams_busy says so beforehand); one
 * that needs an earlier unit, or a unit of another page, does not wait. */
Test(streams, a_later_unit_waits_for_the_stream_in_use)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_streams *st = m->streams;
    yfs_hold hold = { 0 };
    void *dict;
    uint64_t charged, at;
    /* nothing paused: the caller is to stream page 0 from unit 2 */
    cr_assert_null(yfs_streams_take(st, 0, 4, 2, &hold, &at, &dict, &charged));
    cr_assert_eq(at, 2);
    cr_assert_eq(yfs_streams_wait(st, 0, 1, NULL), 0, "unit 1 comes before the stream in use");
    cr_assert_eq(yfs_streams_wait(st, 1, 5, NULL), 0, "another page");
    cr_assert(yfs_streams_busy(st, 0, 5), "a build framing unit 5 now would wait");
    cr_assert(yfs_streams_busy(st, 0, 2));
    cr_assert_not(yfs_streams_busy(st, 0, 1));
    cr_assert_not(yfs_streams_busy(st, 1, 5));

    wait_job j = { st, 0, 5, -1, NULL, NULL };
    pthread_t t;
    pthread_create(&t, NULL, wait_for, &j);
    struct timespec pause = { 0, 50 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    cr_assert_eq(atomic_load(&j.result), -1, "went on while the page's stream was in use");
    yfs_streams_end(st, 0, 2);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&j.result), 1);
    cr_assert_not(yfs_streams_busy(st, 0, 5), "let go");
    yfs_mount_close(m);
}

/* A build waiting for a stream in use counts as blocked (yfs_hold_wait_begin)
 * while the stream's user waits for room: with nothing but the two builds
 * charged, that demand goes through at once, over the limit, instead of
 * waiting for the stream wait to time out (2 s; at mem=1M, 200 KB of an
 * epoch took 28 s). */
Test(streams, a_build_waiting_for_a_stream_counts_as_blocked)
{
    yfs_mount *m = tfs_open_sample("column=text", NULL, 64u << 20);
    yfs_streams *st = m->streams;
    yfs_hold waiter = { 0 };
    void *dict;
    uint64_t charged, at;
    /* a build streams page 0 from unit 2 ... */
    cr_assert_null(yfs_streams_take(st, 0, 2, 2, NULL, &at, &dict, &charged));
    /* ... another, holding most of the room, waits for that stream ... */
    uint64_t room = yfs_mount_data_budget(m) - yfs_budget_used(m->budget);
    yfs_budget_reserve(m->budget, room - (1u << 20), YFS_MEM_BUILD, YFS_DEMAND, NULL);
    /* (room - 1 MiB + the block below + 2 MiB: over the limit by 1 MiB and the block) */
    yfs_budget_transfer(m->budget, room - (1u << 20), YFS_MEM_BUILD, NULL, YFS_MEM_BUILD,
                        &waiter);
    wait_job w = { st, 0, 5, -1, m->budget, &waiter };
    pthread_t tw;
    cr_assert_eq(pthread_create(&tw, NULL, wait_for, &w), 0);
    /* ... while the first, holding the block it frames into, grows its
     * stream past the room left */
    demand_job d = { .budget = m->budget, .bytes = 2u << 20 };
    const uint64_t block = 64u << 10;
    yfs_budget_reserve(m->budget, block, YFS_MEM_BUILD, YFS_DEMAND, NULL);
    yfs_budget_transfer(m->budget, block, YFS_MEM_BUILD, NULL, YFS_MEM_BUILD, &d.hold);
    pthread_t td;
    cr_assert_eq(pthread_create(&td, NULL, demand, &d), 0);
    for (int ms = 0; ms < 1000 && !atomic_load(&d.done); ms++)
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    int through = atomic_load(&d.done), still_waiting = atomic_load(&w.result) == -1;
    /* never a hung test: the room the waiter holds, and the stream, go */
    yfs_budget_release(m->budget, room - (1u << 20), YFS_MEM_BUILD, &waiter);
    yfs_streams_end(st, 0, 2);
    pthread_join(td, NULL);
    pthread_join(tw, NULL);
    cr_assert(through, "the demand waited for the stream wait to time out");
    cr_assert(still_waiting, "the stream wait ended first: nothing was shown");
    cr_assert_eq(atomic_load(&w.result), 1, "let go when the stream was");
    yfs_budget_release(m->budget, d.bytes + block, YFS_MEM_BUILD, &d.hold);
    yfs_hold_leave(m->budget, &d.hold);
    yfs_mount_close(m);
}
