/* yfs_wants.h: a unit a build registered is framed once, by whoever claims
 * it first; its owner finds it done, or waits while another frames it; a
 * failed framing gives it back; a second build's block for the same unit is
 * never taken for the first's; unregistering waits for a framing under way,
 * and the owner waiting counts as blocked for the accountant. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "yfs_budget.h"
#include "yfs_wants.h"
#include "tfs.h"

Test(wants, a_unit_is_framed_once_by_whoever_claims_it_first)
{
    yfs_wants *w = yfs_wants_new(NULL);
    uint8_t mine[4], other[4];
    cr_assert_eq(yfs_wants_add(w, 7, mine), 0);
    cr_assert_eq(yfs_wants_add(w, 7, other), -1, "one block per unit");
    cr_assert_null(yfs_wants_claim(w, 8), "not wanted");

    /* a stream passing unit 7 frames it into the owner's block */
    cr_assert_eq(yfs_wants_claim(w, 7), mine);
    cr_assert_null(yfs_wants_claim(w, 7), "claimed once");
    yfs_wants_end(w, 7, mine, 1);
    cr_assert_eq(yfs_wants_begin(w, 7, mine, NULL), 1, "the owner finds it framed");
    cr_assert_eq(yfs_wants_begin(w, 7, other, NULL), 0, "another build's block frames itself");
    yfs_wants_remove(w, 7, mine, NULL);
    yfs_wants_free(w);
}

Test(wants, a_failed_framing_gives_the_unit_back)
{
    yfs_wants *w = yfs_wants_new(NULL);
    uint8_t mine[4];
    yfs_wants_add(w, 3, mine);
    cr_assert_eq(yfs_wants_claim(w, 3), mine);
    yfs_wants_end(w, 3, mine, 0);
    cr_assert_eq(yfs_wants_begin(w, 3, mine, NULL), 0, "the owner frames it itself");
    cr_assert_null(yfs_wants_claim(w, 3), "the owner is framing it");
    yfs_wants_end(w, 3, mine, 1);
    yfs_wants_remove(w, 3, mine, NULL);
    yfs_wants_free(w);
}

typedef struct job {
    yfs_wants *w;
    uint8_t *block;
    _Atomic int result; /* -1 while waiting */
    yfs_hold *hold;     /* the owner's build, or NULL */
} job;

static void *owner_begins(void *arg)
{
    job *j = arg;
    atomic_store(&j->result, yfs_wants_begin(j->w, 5, j->block, j->hold));
    return NULL;
}

static void *owner_removes(void *arg)
{
    job *j = arg;
    yfs_wants_remove(j->w, 5, j->block, NULL);
    atomic_store(&j->result, 1);
    return NULL;
}

/* Run fn on unit 5 (FILLING into block) in a thread: it must wait until the
 * framing ends. Returns its result. */
static int waits_for_the_framing(yfs_wants *w, uint8_t *block, void *(*fn)(void *))
{
    job j = { w, block, -1, NULL };
    pthread_t t;
    pthread_create(&t, NULL, fn, &j);
    tfs_sleep_ms(50);
    cr_assert_eq(atomic_load(&j.result), -1, "went on while the unit was being framed");
    yfs_wants_end(w, 5, block, 1);
    pthread_join(t, NULL);
    return atomic_load(&j.result);
}

Test(wants, the_owner_and_unregistering_wait_while_another_frames_the_unit)
{
    yfs_wants *w = yfs_wants_new(NULL);
    uint8_t mine[4];
    yfs_wants_add(w, 5, mine);
    cr_assert_eq(yfs_wants_claim(w, 5), mine);

    /* the owner, then unregistering, wait for a framing under way */
    cr_assert_eq(waits_for_the_framing(w, mine, owner_begins), 1);
    yfs_wants_remove(w, 5, mine, NULL);
    yfs_wants_add(w, 5, mine);
    cr_assert_eq(yfs_wants_claim(w, 5), mine);
    waits_for_the_framing(w, mine, owner_removes);
    cr_assert_null(yfs_wants_claim(w, 5), "unregistered");
    yfs_wants_free(w);
}

typedef struct grower {
    yfs_budget *budget;
    yfs_hold *hold;
    _Atomic int done;
} grower;

/* The framer, out of room, reserves more for its stream (yfs_units.c). */
static void *framer_grows(void *arg)
{
    grower *g = arg;
    yfs_hold_enter(g->budget, g->hold);
    yfs_budget_reserve(g->budget, 10, YFS_MEM_DECODED, YFS_DEMAND, g->hold);
    atomic_store(&g->done, 1);
    yfs_hold_leave(g->budget, g->hold);
    return NULL;
}

/* A stream framing another build's unit grows its charge with the budget
 * full; the other build's owner thread waits for that unit. Nothing could
 * make room: the growth goes through over the limit instead of waiting for
 * the owner's memory (which it would have done for good). */
Test(wants, an_owner_waiting_for_its_unit_counts_as_blocked_for_the_accountant)
{
    yfs_budget *b = yfs_budget_new(100, NULL);
    yfs_wants *w = yfs_wants_new(b);
    yfs_hold framer = { 0 }, owner = { 0 };
    yfs_hold_enter(b, &framer);
    yfs_budget_reserve(b, 60, YFS_MEM_DECODED, YFS_DEMAND, &framer);
    yfs_hold_leave(b, &framer);
    yfs_hold_enter(b, &owner);
    yfs_budget_reserve(b, 40, YFS_MEM_SEGMENTS, YFS_DEMAND, &owner);
    uint8_t mine[4];
    yfs_wants_add(w, 5, mine);
    cr_assert_eq(yfs_wants_claim(w, 5), mine);

    job j = { w, mine, -1, &owner };
    pthread_t waiter, grow;
    pthread_create(&waiter, NULL, owner_begins, &j);
    grower g = { b, &framer, 0 };
    pthread_create(&grow, NULL, framer_grows, &g);
    for (int i = 0; i < 200 && !atomic_load(&g.done); i++)
        tfs_sleep_ms(10);
    cr_assert(atomic_load(&g.done), "the growth waited for memory only it could free");
    yfs_budget_snapshot snap;
    yfs_budget_snapshot_get(b, &snap);
    cr_assert_eq(snap.used, 110);
    cr_assert_geq(snap.over_budget, 1);
    cr_assert_eq(atomic_load(&j.result), -1, "the owner waits while its unit is framed");
    yfs_wants_end(w, 5, mine, 1);
    pthread_join(waiter, NULL);
    pthread_join(grow, NULL);
    cr_assert_eq(atomic_load(&j.result), 1);

    yfs_wants_remove(w, 5, mine, &owner);
    yfs_budget_release(b, 40, YFS_MEM_SEGMENTS, &owner);
    yfs_hold_leave(b, &owner);
    yfs_budget_release(b, 70, YFS_MEM_DECODED, &framer);
    yfs_wants_free(w);
    yfs_budget_free(b);
}
