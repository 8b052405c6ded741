/* yfs_wants.h: a unit a build registered is framed once, by whoever claims
 * it first; its owner finds it done, or waits while another frames it; a
 * failed framing gives it back; a second build's block for the same unit is
 * never taken for the first's; unregistering waits for a framing under way. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "yfs_wants.h"

static void sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

Test(wants, a_unit_is_framed_once_by_whoever_claims_it_first)
{
    yfs_wants *w = yfs_wants_new();
    uint8_t mine[4], other[4];
    cr_assert_eq(yfs_wants_add(w, 7, mine), 0);
    cr_assert_eq(yfs_wants_add(w, 7, other), -1, "one block per unit");
    cr_assert_null(yfs_wants_claim(w, 8), "not wanted");

    /* a stream passing unit 7 frames it into the owner's block */
    cr_assert_eq(yfs_wants_claim(w, 7), mine);
    cr_assert_null(yfs_wants_claim(w, 7), "claimed once");
    yfs_wants_end(w, 7, mine, 1);
    cr_assert_eq(yfs_wants_begin(w, 7, mine), 1, "the owner finds it framed");
    cr_assert_eq(yfs_wants_begin(w, 7, other), 0, "another build's block frames itself");
    yfs_wants_remove(w, 7, mine);
    yfs_wants_free(w);
}

Test(wants, a_failed_framing_gives_the_unit_back)
{
    yfs_wants *w = yfs_wants_new();
    uint8_t mine[4];
    yfs_wants_add(w, 3, mine);
    cr_assert_eq(yfs_wants_claim(w, 3), mine);
    yfs_wants_end(w, 3, mine, 0);
    cr_assert_eq(yfs_wants_begin(w, 3, mine), 0, "the owner frames it itself");
    cr_assert_null(yfs_wants_claim(w, 3), "the owner is framing it");
    yfs_wants_end(w, 3, mine, 1);
    yfs_wants_remove(w, 3, mine);
    yfs_wants_free(w);
}

typedef struct job {
    yfs_wants *w;
    uint8_t *block;
    _Atomic int result; /* -1 while waiting */
} job;

static void *owner_begins(void *arg)
{
    job *j = arg;
    atomic_store(&j->result, yfs_wants_begin(j->w, 5, j->block));
    return NULL;
}

static void *owner_removes(void *arg)
{
    job *j = arg;
    yfs_wants_remove(j->w, 5, j->block);
    atomic_store(&j->result, 1);
    return NULL;
}

/* Run fn on unit 5 (FILLING into block) in a thread: it must wait until the
 * framing ends. Returns its result. */
static int waits_for_the_framing(yfs_wants *w, uint8_t *block, void *(*fn)(void *))
{
    job j = { w, block, -1 };
    pthread_t t;
    pthread_create(&t, NULL, fn, &j);
    sleep_ms(50);
    cr_assert_eq(atomic_load(&j.result), -1, "went on while the unit was being framed");
    yfs_wants_end(w, 5, block, 1);
    pthread_join(t, NULL);
    return atomic_load(&j.result);
}

Test(wants, the_owner_and_unregistering_wait_while_another_frames_the_unit)
{
    yfs_wants *w = yfs_wants_new();
    uint8_t mine[4];
    yfs_wants_add(w, 5, mine);
    cr_assert_eq(yfs_wants_claim(w, 5), mine);

    /* the owner, then unregistering, wait for a framing under way */
    cr_assert_eq(waits_for_the_framing(w, mine, owner_begins), 1);
    yfs_wants_remove(w, 5, mine);
    yfs_wants_add(w, 5, mine);
    cr_assert_eq(yfs_wants_claim(w, 5), mine);
    waits_for_the_framing(w, mine, owner_removes);
    cr_assert_null(yfs_wants_claim(w, 5), "unregistered");
    yfs_wants_free(w);
}
