/* The memory accountant (yfs_budget.h) on its own: reservations balance,
 * demand waits and wakes (only the waiters a release can let through, and
 * the oldest), prefetch gives way to a waiting demand and leaves an eighth
 * of the limit to running builds, a request
 * larger than the limit runs alone, holds that all wait do not deadlock,
 * reclaimers are asked before anyone waits, but only when what they hold
 * idle lets the reservation through (patience), and counters by kind. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ix_claims.h"
#include "yfs_budget.h"
#include "tfs.h"

static uint64_t kind_bytes(yfs_budget *b, yfs_mem_kind k)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(b, &s);
    return s.bytes[k];
}

static yfs_budget_snapshot snapshot(yfs_budget *b)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(b, &s);
    return s;
}

Test(budget, reservations_balance_and_count_by_kind)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(1000, &st);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    cr_assert_eq(yfs_budget_reserve(b, 100, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    cr_assert_eq(yfs_budget_reserve(b, 200, YFS_MEM_DECODED, YFS_DEMAND, &h), 0);
    cr_assert_eq(yfs_budget_reserve(b, 50, YFS_MEM_RAW, YFS_PREFETCH, &h), 0);
    cr_assert_eq(yfs_budget_reserve(b, 30, YFS_MEM_PLANS, YFS_FORCE, NULL), 0);
    cr_assert_eq(yfs_budget_used(b), 380);
    cr_assert_eq(h.bytes, 250);
    cr_assert_eq(kind_bytes(b, YFS_MEM_DECODED), 200);

    /* a raw page becomes a parked page owned by no hold: same total */
    yfs_budget_transfer(b, 50, YFS_MEM_RAW, &h, YFS_MEM_PARKED, NULL);
    cr_assert_eq(yfs_budget_used(b), 380);
    cr_assert_eq(h.bytes, 200);
    cr_assert_eq(kind_bytes(b, YFS_MEM_RAW), 0);
    cr_assert_eq(kind_bytes(b, YFS_MEM_PARKED), 50);

    /* an estimate settled to the exact size, both ways */
    yfs_budget_settle(b, 200, 120, YFS_MEM_DECODED, &h);
    cr_assert_eq(kind_bytes(b, YFS_MEM_DECODED), 120);
    yfs_budget_settle(b, 120, 150, YFS_MEM_DECODED, &h);
    cr_assert_eq(kind_bytes(b, YFS_MEM_DECODED), 150);
    cr_assert_eq(h.bytes, 150);

    yfs_budget_release(b, 150, YFS_MEM_DECODED, &h);
    yfs_budget_release(b, 50, YFS_MEM_PARKED, NULL);
    yfs_budget_release(b, 30, YFS_MEM_PLANS, NULL);
    yfs_budget_release(b, 100, YFS_MEM_SEGMENTS, NULL);
    yfs_hold_leave(b, &h);
    yfs_budget_snapshot s = snapshot(b);
    cr_assert_eq(s.used, 0);
    cr_assert_eq(s.peak, 380);
    cr_assert_eq(s.peak_bytes[YFS_MEM_DECODED], 200);
    cr_assert_eq(s.peak_bytes[YFS_MEM_PARKED], 50);
    cr_assert_eq(s.over_budget, 0);
    cr_assert_eq(s.demand_waits, 0);
    cr_assert_str_eq(yfs_mem_kind_name(YFS_MEM_DECODED), "decoded_pages");
    yfs_budget_free(b);
}

typedef struct waiter {
    yfs_budget *b;
    uint64_t bytes;
    yfs_hold *hold; /* entered by the waiter itself */
    atomic_int done;
} waiter;

static void *demand(void *arg)
{
    waiter *w = arg;
    if (w->hold)
        yfs_hold_enter(w->b, w->hold);
    yfs_budget_reserve(w->b, w->bytes, YFS_MEM_DECODED, YFS_DEMAND, w->hold);
    atomic_store(&w->done, 1);
    return NULL;
}

static int waiting_now(yfs_budget *b)
{
    for (int i = 0; i < 200 && !yfs_budget_demand_waiting(b); i++)
        tfs_sleep_ms(5);
    return yfs_budget_demand_waiting(b);
}

Test(budget, demand_waits_for_room_and_wakes_on_release)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(100, &st);
    cr_assert_eq(yfs_budget_reserve(b, 80, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    waiter w = { b, 50, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    cr_assert(waiting_now(b), "the demand did not wait");
    tfs_sleep_ms(50);
    cr_assert_eq(atomic_load(&w.done), 0, "took room that was not there");
    cr_assert_eq(yfs_budget_used(b), 80);

    /* prefetch never takes room a waiting demand needs, even when it fits */
    cr_assert_eq(yfs_budget_reserve(b, 10, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL), -1);
    /* a try fits and may be taken: it is not speculative */
    cr_assert_eq(yfs_budget_reserve(b, 10, YFS_MEM_RAW, YFS_TRY, NULL), 0);
    yfs_budget_release(b, 10, YFS_MEM_RAW, NULL);

    yfs_budget_release(b, 80, YFS_MEM_SEGMENTS, NULL);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&w.done), 1);
    cr_assert_eq(yfs_budget_used(b), 50);
    cr_assert_eq(yfs_counter(&st.memory_waits), 1);
    /* no demand waits any more: prefetch may take what leaves an eighth of
     * the limit free (88 of 100), nothing more; demand and try the rest */
    cr_assert_eq(yfs_budget_reserve(b, 38, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL), 0);
    cr_assert_eq(yfs_budget_reserve(b, 1, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL), -1);
    cr_assert_eq(yfs_budget_reserve(b, 12, YFS_MEM_SEGMENTS, YFS_TRY, NULL), 0);
    cr_assert_eq(yfs_budget_reserve(b, 1, YFS_MEM_SEGMENTS, YFS_TRY, NULL), -1);
    yfs_budget_snapshot s = snapshot(b);
    cr_assert_eq(s.prefetch_refused, 3);
    cr_assert_eq(s.over_budget, 0);
    yfs_budget_release(b, 50, YFS_MEM_SEGMENTS, NULL);
    yfs_budget_release(b, 50, YFS_MEM_DECODED, NULL);
    yfs_budget_free(b);
}

/* A release wakes the waiters it can let through, and the oldest (it retries
 * the reclaimers), not every waiter: 8 readers' builds woke ~10^5 times a
 * run, each wakeup a reclaim for nothing. */
Test(budget, a_release_wakes_only_the_waiters_it_can_let_through)
{
    enum { WAITERS = 4, STEPS = 50 };
    yfs_budget *b = yfs_budget_new(STEPS, NULL);
    cr_assert_eq(yfs_budget_reserve(b, STEPS, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    waiter w[WAITERS];
    pthread_t t[WAITERS];
    for (int i = 0; i < WAITERS; i++) {
        w[i] = (waiter){ b, STEPS, NULL, 0 };
        pthread_create(&t[i], NULL, demand, &w[i]);
    }
    for (int i = 0; i < 200 && snapshot(b).demand_waits < WAITERS; i++)
        tfs_sleep_ms(5);
    cr_assert_eq(snapshot(b).demand_waits, WAITERS);

    /* None of these releases lets anyone through. */
    for (int i = 0; i + 1 < STEPS; i++) {
        yfs_budget_release(b, 1, YFS_MEM_SEGMENTS, NULL);
        tfs_sleep_ms(1);
    }
    uint64_t wakeups = snapshot(b).demand_waits - WAITERS;
    cr_assert_leq(wakeups, 2 * (STEPS - 1),
                  "%llu wakeups for %d releases that let nobody through (all woken: ~%d)",
                  (unsigned long long)wakeups, STEPS - 1, WAITERS * (STEPS - 1));
    for (int i = 0; i < WAITERS; i++)
        cr_assert_eq(atomic_load(&w[i].done), 0);

    /* Each release that lets one through lets exactly one through. */
    yfs_budget_release(b, 1, YFS_MEM_SEGMENTS, NULL);
    for (int k = 1; k <= WAITERS; k++) {
        int done = 0;
        for (int i = 0; i < 200; i++) {
            done = 0;
            for (int j = 0; j < WAITERS; j++)
                done += atomic_load(&w[j].done);
            if (done >= k)
                break;
            tfs_sleep_ms(5);
        }
        tfs_sleep_ms(5);
        done = 0;
        for (int j = 0; j < WAITERS; j++)
            done += atomic_load(&w[j].done);
        cr_assert_eq(done, k);
        cr_assert_eq(yfs_budget_used(b), STEPS);
        yfs_budget_release(b, STEPS, YFS_MEM_DECODED, NULL);
    }
    for (int i = 0; i < WAITERS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(snapshot(b).over_budget, 0);
    yfs_budget_free(b);
}

Test(budget, a_request_larger_than_the_limit_runs_alone)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    /* nothing else holds memory: it proceeds, and is counted */
    cr_assert_eq(yfs_budget_reserve(b, 150, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    yfs_budget_snapshot s = snapshot(b);
    cr_assert_eq(s.over_budget, 1);
    cr_assert_eq(s.max_over_bytes, 50);
    /* the next request waits for it, even a small one */
    waiter w = { b, 10, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    cr_assert(waiting_now(b));
    cr_assert_eq(atomic_load(&w.done), 0);
    yfs_budget_release(b, 150, YFS_MEM_SEGMENTS, NULL);
    pthread_join(t, NULL);
    yfs_budget_release(b, 10, YFS_MEM_DECODED, NULL);

    /* with something else held it waits until that is released */
    cr_assert_eq(yfs_budget_reserve(b, 20, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    waiter big = { b, 150, NULL, 0 };
    pthread_create(&t, NULL, demand, &big);
    cr_assert(waiting_now(b));
    tfs_sleep_ms(30);
    cr_assert_eq(atomic_load(&big.done), 0, "an oversize request ran beside other memory");
    yfs_budget_release(b, 20, YFS_MEM_SEGMENTS, NULL);
    pthread_join(t, NULL);
    cr_assert_eq(yfs_budget_used(b), 150);
    yfs_budget_release(b, 150, YFS_MEM_DECODED, NULL);
    /* plans and read buffers do not hold it back: they stay while their
     * files are open and while their readers wait */
    yfs_budget_reserve(b, 30, YFS_MEM_PLANS, YFS_FORCE, NULL);
    yfs_budget_reserve(b, 20, YFS_MEM_READS, YFS_FORCE, NULL);
    cr_assert_eq(yfs_budget_reserve(b, 150, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    yfs_budget_release(b, 150, YFS_MEM_SEGMENTS, NULL);
    yfs_budget_release(b, 20, YFS_MEM_READS, NULL);
    yfs_budget_release(b, 30, YFS_MEM_PLANS, NULL);
    yfs_budget_free(b);
}

/* Two builds each hold part of the budget and each need more than is
 * left: when both wait, nothing could ever make room, so one goes ahead
 * (over the limit); its release lets the other through. */
/* Two builds of a budget of 100 that hold 60 and 30, no thread in them:
 * the waiters of the tests enter them again. */
static void two_builds(yfs_budget *b, yfs_hold *h1, yfs_hold *h2)
{
    yfs_hold_enter(b, h1);
    yfs_hold_enter(b, h2);
    yfs_budget_reserve(b, 60, YFS_MEM_DECODED, YFS_DEMAND, h1);
    yfs_budget_reserve(b, 30, YFS_MEM_DECODED, YFS_DEMAND, h2);
    yfs_hold_leave(b, h1);
    yfs_hold_leave(b, h2);
}

Test(budget, holds_that_all_wait_do_not_deadlock)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    yfs_hold h1 = { 0 }, h2 = { 0 };
    two_builds(b, &h1, &h2);

    waiter w1 = { b, 50, &h1, 0 };
    pthread_t t1, t2;
    pthread_create(&t1, NULL, demand, &w1);
    cr_assert(waiting_now(b));
    tfs_sleep_ms(30);
    cr_assert_eq(atomic_load(&w1.done), 0, "went ahead while another build still ran");

    waiter w2 = { b, 50, &h2, 0 };
    pthread_create(&t2, NULL, demand, &w2);
    for (int i = 0; i < 400 && !atomic_load(&w1.done) && !atomic_load(&w2.done); i++)
        tfs_sleep_ms(5);
    cr_assert(atomic_load(&w1.done) + atomic_load(&w2.done) == 1,
              "exactly one of two blocked builds goes ahead");
    waiter *ahead = atomic_load(&w1.done) ? &w1 : &w2, *other = ahead == &w1 ? &w2 : &w1;
    cr_assert_eq(yfs_budget_used(b), 140);
    cr_assert_geq(snapshot(b).over_budget, 1);

    /* the one ahead finishes: frees everything and leaves */
    yfs_budget_release(b, ahead->hold->bytes, YFS_MEM_DECODED, ahead->hold);
    yfs_hold_leave(b, ahead->hold);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    cr_assert_eq(atomic_load(&other->done), 1);
    yfs_budget_release(b, other->hold->bytes, YFS_MEM_DECODED, other->hold);
    yfs_hold_leave(b, other->hold);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
}

/* A build that holds nothing yet waits while blocked builds hold memory:
 * one blocked build goes on over the limit, the new one only once room is
 * back (new builds that went over beside blocked ones stacked up a segment
 * per reader over the limit: 240 MB at mem=64M with 8 readers). */
Test(budget, a_new_build_never_goes_over_beside_blocked_ones)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    yfs_hold h1 = { 0 }, h2 = { 0 }, fresh = { 0 };
    two_builds(b, &h1, &h2);

    waiter w1 = { b, 50, &h1, 0 }, wf = { b, 20, &fresh, 0 }, w2 = { b, 50, &h2, 0 };
    pthread_t t1, tf, t2;
    pthread_create(&t1, NULL, demand, &w1);
    cr_assert(waiting_now(b));
    pthread_create(&tf, NULL, demand, &wf);
    tfs_sleep_ms(30);
    pthread_create(&t2, NULL, demand, &w2); /* now every hold waits */
    for (int i = 0; i < 400 && !atomic_load(&w1.done) && !atomic_load(&w2.done); i++)
        tfs_sleep_ms(5);
    tfs_sleep_ms(30);
    cr_assert_eq(atomic_load(&w1.done) + atomic_load(&w2.done), 1,
                 "exactly one of two blocked builds goes ahead (%d %d %d, used %llu)",
                 atomic_load(&w1.done), atomic_load(&w2.done), atomic_load(&wf.done),
                 (unsigned long long)yfs_budget_used(b));
    cr_assert_eq(atomic_load(&wf.done), 0, "a new build went over beside blocked ones");
    cr_assert_eq(yfs_budget_used(b), 140);

    waiter *ahead = atomic_load(&w1.done) ? &w1 : &w2, *other = ahead == &w1 ? &w2 : &w1;
    yfs_budget_release(b, ahead->hold->bytes, YFS_MEM_DECODED, ahead->hold);
    yfs_hold_leave(b, ahead->hold);
    /* then the other two, one after the other (whichever the room lets
     * through first) */
    waiter *rest[2] = { other, &wf };
    for (int left = 2; left > 0; left--) {
        waiter *done = NULL;
        for (int i = 0; i < 400 && !done; i++) {
            for (int k = 0; k < 2 && !done; k++)
                if (rest[k] && atomic_load(&rest[k]->done))
                    done = rest[k];
            if (!done)
                tfs_sleep_ms(5);
        }
        cr_assert(done, "a waiter was left waiting with room back");
        yfs_budget_release(b, done->hold->bytes, YFS_MEM_DECODED, done->hold);
        yfs_hold_leave(b, done->hold);
        rest[done == rest[0] ? 0 : 1] = NULL;
    }
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_join(tf, NULL);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
}

/* A build with a helper thread: while the helper still runs, the builder's
 * wait is not a deadlock, so it waits for the helper's release. */
Test(budget, a_hold_waits_while_one_of_its_threads_runs)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);                /* the helper, running */
    yfs_budget_reserve(b, 90, YFS_MEM_DECODED, YFS_DEMAND, &h);
    waiter w = { b, 50, &h, 0 };          /* the builder */
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    cr_assert(waiting_now(b));
    tfs_sleep_ms(30);
    cr_assert_eq(atomic_load(&w.done), 0);
    yfs_budget_release(b, 60, YFS_MEM_DECODED, &h); /* the helper's page is done */
    pthread_join(t, NULL);
    cr_assert_eq(snapshot(b).over_budget, 0);
    yfs_budget_release(b, 80, YFS_MEM_DECODED, &h);
    yfs_hold_leave(b, &h);
    yfs_hold_leave(b, &h);
    yfs_budget_free(b);
}

/* A reclaimer holding idle memory: asked before anyone waits or is
 * refused, for what is missing; not asked for what fits. It drops only at
 * `least` (a yfs_reclaim_fn's `demand`) or above, and records the levels it
 * is asked at and the hold that asked last, of its reclaim and its count. */
typedef struct idle_store {
    yfs_budget *b;
    uint64_t idle;
    uint64_t asked, calls;
    int least;
    int levels[64];
    const yfs_hold *reclaim_asking, *count_asking;
} idle_store;

static uint64_t drop_idle(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    idle_store *s = ctx;
    s->reclaim_asking = asking;
    if (s->calls < 64)
        s->levels[s->calls] = demand;
    s->calls++;
    s->asked = need;
    if (demand < s->least)
        return 0;
    uint64_t n = need < s->idle ? need : s->idle;
    s->idle -= n;
    yfs_budget_release(s->b, n, YFS_MEM_PARKED, NULL);
    return 0;
}

static uint64_t count_idle(void *ctx, int demand, const yfs_hold *asking)
{
    idle_store *s = ctx;
    s->count_asking = asking;
    return demand < s->least ? 0 : s->idle;
}

Test(budget, reclaimers_free_idle_memory_before_anyone_waits)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    idle_store s = { .b = b, .idle = 70, .least = YFS_RECLAIM_DEMAND };
    yfs_budget_add_reclaimer(b, drop_idle, count_idle, &s);
    yfs_budget_reserve(b, 70, YFS_MEM_PARKED, YFS_PREFETCH, NULL);
    cr_assert_eq(yfs_budget_reserve(b, 30, YFS_MEM_RAW, YFS_DEMAND, NULL), 0);
    cr_assert_eq(s.calls, 0, "asked while it fit");
    /* a prefetch may not drop what only demand may */
    cr_assert_eq(yfs_budget_reserve(b, 20, YFS_MEM_RAW, YFS_PREFETCH, NULL), -1);
    cr_assert_eq(s.idle, 70);
    cr_assert_eq(yfs_budget_reserve(b, 20, YFS_MEM_RAW, YFS_DEMAND, NULL), 0);
    cr_assert_eq(s.asked, 20);
    cr_assert_eq(s.idle, 50);
    cr_assert_eq(yfs_budget_used(b), 100);
    cr_assert_eq(snapshot(b).demand_waits, 0);
    yfs_budget_release(b, 50, YFS_MEM_RAW, NULL);
    yfs_budget_release(b, 50, YFS_MEM_PARKED, NULL);
    yfs_budget_free(b);
}

/* The reclaimers learn whose reservation asks (the segment cache keeps for
 * a prefetch's build what its reader needs sooner): the hold, or NULL. */
Test(budget, reclaimers_are_told_the_hold_that_asks)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    idle_store s = { .b = b, .idle = 70, .least = YFS_RECLAIM_DEMAND };
    yfs_budget_add_reclaimer(b, drop_idle, count_idle, &s);
    yfs_budget_reserve(b, 70, YFS_MEM_PARKED, YFS_PREFETCH, NULL);
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    cr_assert_eq(yfs_budget_reserve(b, 40, YFS_MEM_RAW, YFS_DEMAND, &h), 0);
    cr_assert_eq(s.reclaim_asking, &h);
    cr_assert_eq(s.count_asking, &h);
    cr_assert_eq(yfs_budget_reserve(b, 10, YFS_MEM_RAW, YFS_TRY, NULL), 0);
    cr_assert_null(s.reclaim_asking);
    cr_assert_null(s.count_asking);
    yfs_budget_release(b, 40, YFS_MEM_RAW, &h);
    yfs_hold_leave(b, &h);
    yfs_budget_release(b, 10, YFS_MEM_RAW, NULL);
    yfs_budget_release(b, s.idle, YFS_MEM_PARKED, NULL);
    yfs_budget_free(b);
}

/* Forced charges never wait and never fail; over the limit they count. */
Test(budget, forced_charges_are_counted_over_the_limit)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    yfs_budget_reserve(b, 90, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL);
    cr_assert_eq(yfs_budget_reserve(b, 40, YFS_MEM_READS, YFS_FORCE, NULL), 0);
    yfs_budget_snapshot s = snapshot(b);
    cr_assert_eq(s.over_budget, 1);
    cr_assert_eq(s.max_over_bytes, 30);
    cr_assert_eq(s.bytes[YFS_MEM_READS], 40);
    yfs_budget_release(b, 40, YFS_MEM_READS, NULL);
    yfs_budget_release(b, 90, YFS_MEM_SEGMENTS, NULL);
    yfs_budget_free(b);
}

/* Memory that becomes reclaimable while a waiter runs the reclaimers
 * (without the accountant's lock) is reclaimed for it: the wakeup it missed
 * does not leave it asleep for good. Nothing is idle at first and nobody
 * running frees room, so the waiter runs out of patience
 * (YFS_BUDGET_PATIENCE_NS) and calls the reclaimers. */
typedef struct late_store {
    yfs_budget *b;
    int calls;
    uint64_t parked; /* reclaimable */
} late_store;

static uint64_t reclaim_late(void *ctx, uint64_t need, int demand, const yfs_hold *asking)
{
    late_store *s = ctx;
    (void)need;
    (void)demand;
    (void)asking;
    if (s->calls++ == 0) { /* meanwhile another thread parks the 60 (and wakes) */
        yfs_budget_transfer(s->b, 60, YFS_MEM_SEGMENTS, NULL, YFS_MEM_PARKED, NULL);
        s->parked = 60;
        return 0;
    }
    yfs_budget_release(s->b, s->parked, YFS_MEM_PARKED, NULL);
    s->parked = 0;
    return 0;
}

static uint64_t count_late(void *ctx, int demand, const yfs_hold *asking)
{
    (void)demand;
    (void)asking;
    return ((late_store *)ctx)->parked;
}

Test(budget, memory_parked_while_the_reclaimers_run_is_not_missed)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    late_store s = { b, 0, 0 };
    yfs_budget_add_reclaimer(b, reclaim_late, count_late, &s);
    yfs_budget_reserve(b, 60, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL);
    waiter w = { b, 50, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    for (int i = 0; i < 200 && !atomic_load(&w.done); i++)
        tfs_sleep_ms(5);
    cr_assert(atomic_load(&w.done), "the waiter slept through memory it could reclaim");
    pthread_join(t, NULL);
    cr_assert_eq(s.calls, 2);
    cr_assert_eq(yfs_budget_used(b), 50);
    yfs_budget_release(b, 50, YFS_MEM_DECODED, NULL);
    yfs_budget_free(b);
}

/* Patience: a demand reservation that the idle memory cannot let through
 * keeps it and waits for the running work to free room; when nobody
 * running could (all else is its own blocked hold), it drops the idle
 * memory at once and goes on. */
Test(budget, idle_memory_is_dropped_only_when_that_lets_a_reservation_through)
{
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(100, &st);
    idle_store s = { .b = b, .idle = 30, .least = YFS_RECLAIM_DEMAND };
    yfs_budget_add_reclaimer(b, drop_idle, count_idle, &s);
    yfs_budget_reserve(b, 30, YFS_MEM_PARKED, YFS_PREFETCH, NULL);
    cr_assert_eq(yfs_budget_reserve(b, 50, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);

    /* 60 more: 30 idle would not make room, 50 running will */
    waiter w = { b, 60, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    cr_assert(waiting_now(b), "the demand did not wait");
    tfs_sleep_ms(YFS_BUDGET_PATIENCE_NS / 2000000);
    cr_assert_eq(s.calls, 0, "idle memory dropped for a reservation that waits anyway");
    cr_assert_eq(atomic_load(&w.done), 0);
    /* a try that the idle memory cannot let through leaves it too */
    cr_assert_eq(yfs_budget_reserve(b, 60, YFS_MEM_RAW, YFS_TRY, NULL), -1);
    cr_assert_eq(s.calls, 0);
    yfs_budget_release(b, 50, YFS_MEM_SEGMENTS, NULL);
    pthread_join(t, NULL);
    cr_assert_eq(s.idle, 30, "the room freed was enough: the idle memory stays");
    yfs_budget_release(b, 60, YFS_MEM_DECODED, NULL);

    /* a hold whose only thread asks for more than the room and the idle
     * memory: nobody else could make room, so it drops the idle 30 and
     * goes over the limit, without waiting */
    yfs_hold h = { 0 };
    yfs_hold_enter(b, &h);
    yfs_budget_reserve(b, 50, YFS_MEM_SEGMENTS, YFS_DEMAND, &h);
    uint64_t waits = snapshot(b).demand_waits;
    cr_assert_eq(yfs_budget_reserve(b, 60, YFS_MEM_DECODED, YFS_DEMAND, &h), 0);
    cr_assert_eq(snapshot(b).demand_waits, waits);
    cr_assert_eq(s.idle, 0);
    cr_assert_eq(yfs_budget_used(b), 110);
    yfs_budget_release(b, 60, YFS_MEM_DECODED, &h);
    yfs_budget_release(b, 50, YFS_MEM_SEGMENTS, &h);
    yfs_hold_leave(b, &h);
    yfs_budget_free(b);
}

/* The heap keeps what its kinds once held; the mapped kinds come on top.
 * A trim is due only when that sum passes the limit by an eighth and the
 * heap has at least a sixteenth of the limit free; after it, the heap's
 * high-water mark starts again from what its kinds hold. */
Test(budget, the_heap_is_trimmed_only_when_its_free_memory_would_pass_the_bound)
{
    yfs_budget *b = yfs_budget_new(1600, NULL);
    cr_assert_eq(yfs_budget_reserve(b, 900, YFS_MEM_DECODED, YFS_DEMAND, NULL), 0);
    yfs_budget_release(b, 800, YFS_MEM_DECODED, NULL);
    /* Heap high 900, holding 100; mapped 0: 900 <= 1800, no trim. */
    yfs_budget_trim_heap(b);
    cr_assert_eq(snapshot(b).heap_trims, 0);
    /* Mapped 900: 900 + 900 = 1800, not past 1600 + 200. */
    cr_assert_eq(yfs_budget_reserve(b, 900, YFS_MEM_SEGMENTS, YFS_DEMAND, NULL), 0);
    yfs_budget_trim_heap(b);
    cr_assert_eq(snapshot(b).heap_trims, 0);
    /* Mapped 1000: 900 + 1000 passes 1800, and 800 free in the heap: trimmed. */
    cr_assert_eq(yfs_budget_reserve(b, 100, YFS_MEM_CHUNKS, YFS_DEMAND, NULL), 0);
    yfs_budget_trim_heap(b);
    cr_assert_eq(snapshot(b).heap_trims, 1);
    /* The high-water mark is now 100: not due again. */
    yfs_budget_trim_heap(b);
    cr_assert_eq(snapshot(b).heap_trims, 1);
    /* A transfer onto the heap raises the mark (a chunk's bytes become a
     * parked page); freed again, it leaves only 50 free: below a sixteenth
     * (100), so no trim though the sum passes the bound. */
    yfs_budget_transfer(b, 50, YFS_MEM_CHUNKS, NULL, YFS_MEM_PARKED, NULL);
    yfs_budget_reserve(b, 800, YFS_MEM_SEGMENTS, YFS_FORCE, NULL);
    yfs_budget_release(b, 50, YFS_MEM_PARKED, NULL);
    yfs_budget_trim_heap(b);
    cr_assert_eq(snapshot(b).heap_trims, 1);
    yfs_budget_release(b, 100, YFS_MEM_DECODED, NULL);
    yfs_budget_release(b, 1700, YFS_MEM_SEGMENTS, NULL);
    yfs_budget_release(b, 50, YFS_MEM_CHUNKS, NULL);
    yfs_budget_free(b);
}

/* What index/ holds a page decoded whole to (ix_claims.h: refused at mount
 * past a quarter of mem=) is what the read path charges for it. */
Test(budget, the_index_limits_a_page_by_what_the_read_path_charges)
{
    const int types[] = { PQ_PAGE_DATA, PQ_PAGE_DATA_V2, PQ_PAGE_DICTIONARY, PQ_PAGE_INDEX };
    const int encodings[] = { PQ_ENC_PLAIN, PQ_ENC_RLE_DICTIONARY, PQ_ENC_BYTE_STREAM_SPLIT,
                              PQ_ENC_DELTA_BYTE_ARRAY, PQ_ENC_DELTA_BINARY_PACKED };
    const int32_t sizes[] = { 0, 1, 1 << 20, INT32_MAX };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t e = 0; e < sizeof encodings / sizeof encodings[0]; e++)
            for (size_t u = 0; u < sizeof sizes / sizeof sizes[0]; u++)
                for (size_t n = 0; n < sizeof sizes / sizeof sizes[0]; n++) {
                    pq_page_header h = { .type = types[t], .encoding = encodings[e],
                                         .uncompressed_size = sizes[u],
                                         .num_values = sizes[n] };
                    for (uint32_t width = 0; width <= 12; width += 4) {
                        if (types[t] == PQ_PAGE_DICTIONARY)
                            cr_assert_eq(ix_page_hold_bytes(&h, width),
                                         (uint64_t)sizes[u] +
                                             (uint64_t)sizes[n] * (1 + sizeof(pq_bytes)));
                        else
                            cr_assert_eq(ix_page_hold_bytes(&h, width),
                                         yfs_decode_bound_page(&h, width));
                    }
                }
}

/* A reclaimer that keeps a working set (the dictionaries used last) while
 * builds still run: a wait out of patience does not take it, a second one
 * does, and a reservation nobody running could make room for takes it at
 * once. */
Test(budget, a_working_set_outlives_patience_but_not_a_stuck_wait)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    idle_store k = { .b = b, .idle = 30, .least = YFS_RECLAIM_ALL };
    yfs_budget_add_reclaimer(b, drop_idle, count_idle, &k);
    yfs_budget_reserve(b, 30, YFS_MEM_PARKED, YFS_DEMAND, NULL);
    yfs_hold running = { 0 }; /* a build that still runs, and never frees its 60 */
    yfs_hold_enter(b, &running);
    yfs_budget_reserve(b, 60, YFS_MEM_SEGMENTS, YFS_DEMAND, &running);
    waiter w = { b, 20, NULL, 0 };
    pthread_t t;
    pthread_create(&t, NULL, demand, &w);
    pthread_join(t, NULL); /* out of patience twice: the working set gave the room */
    uint64_t asked = k.calls < 64 ? k.calls : 64, all = 0;
    while (all < asked && k.levels[all] != YFS_RECLAIM_ALL)
        all++;
    cr_assert_lt(all, asked, "never asked for everything");
    cr_assert(all > 0 && k.levels[all - 1] == YFS_RECLAIM_IMPATIENT,
              "the working set was asked for at the first wait out of patience");
    cr_assert_eq(k.idle, 20);
    yfs_budget_release(b, 20, YFS_MEM_DECODED, NULL);
    yfs_budget_release(b, 60, YFS_MEM_SEGMENTS, &running);
    yfs_hold_leave(b, &running);
    /* nothing runs: the working set goes at once, with no wait */
    uint64_t waits = snapshot(b).demand_waits;
    cr_assert_eq(yfs_budget_reserve(b, 90, YFS_MEM_DECODED, YFS_DEMAND, NULL), 0);
    cr_assert_eq(snapshot(b).demand_waits, waits);
    cr_assert_eq(k.idle, 10);
    yfs_budget_release(b, 90, YFS_MEM_DECODED, NULL);
    yfs_budget_release(b, 10, YFS_MEM_PARKED, NULL);
    yfs_budget_free(b);
}
