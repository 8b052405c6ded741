#include "yfs_wants.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "yfs_budget.h"

enum { WANTED, FILLING, FILLED };

typedef struct want {
    uint32_t unit;
    int state;
    void *slot;
} want;

struct yfs_wants {
    pthread_mutex_t lock;  /* guards what follows */
    pthread_cond_t ended;  /* an entry left FILLING */
    want *list;            /* the units of the builds running: a few hundred at most */
    size_t count, room;
    yfs_budget *budget;    /* told of the waits below, or NULL */
};

yfs_wants *yfs_wants_new(yfs_budget *budget)
{
    yfs_wants *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->budget = budget;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->ended, NULL);
    return w;
}

void yfs_wants_free(yfs_wants *w)
{
    if (!w)
        return;
    assert(w->count == 0);
    free(w->list);
    pthread_cond_destroy(&w->ended);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* Lock held. */
static want *find(yfs_wants *w, uint32_t unit)
{
    for (size_t i = 0; i < w->count; i++)
        if (w->list[i].unit == unit)
            return &w->list[i];
    return NULL;
}

int yfs_wants_add(yfs_wants *w, uint32_t unit, void *slot)
{
    int rc = -1;
    pthread_mutex_lock(&w->lock);
    if (!find(w, unit)) {
        if (w->count == w->room) {
            size_t room = w->room ? 2 * w->room : 64;
            want *grown = realloc(w->list, room * sizeof *grown);
            if (grown) {
                w->list = grown;
                w->room = room;
            }
        }
        if (w->count < w->room) {
            w->list[w->count++] = (want){ unit, WANTED, slot };
            rc = 0;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* Lock held: wait for another's framing to end, blocked for the
 * accountant meanwhile (yfs_hold_wait_begin). */
static void wait_for_framing(yfs_wants *w, yfs_hold *hold)
{
    if (w->budget)
        yfs_hold_wait_begin(w->budget, hold);
    pthread_cond_wait(&w->ended, &w->lock);
    if (w->budget)
        yfs_hold_wait_end(w->budget, hold);
}

void yfs_wants_remove(yfs_wants *w, uint32_t unit, const void *slot, yfs_hold *hold)
{
    pthread_mutex_lock(&w->lock);
    want *e;
    while ((e = find(w, unit)) && e->slot == slot && e->state == FILLING)
        wait_for_framing(w, hold);
    if (e && e->slot == slot)
        *e = w->list[--w->count];
    pthread_mutex_unlock(&w->lock);
}

void *yfs_wants_claim(yfs_wants *w, uint32_t unit)
{
    void *slot = NULL;
    pthread_mutex_lock(&w->lock);
    want *e = find(w, unit);
    if (e && e->state == WANTED) {
        e->state = FILLING;
        slot = e->slot;
    }
    pthread_mutex_unlock(&w->lock);
    return slot;
}

int yfs_wants_waiting(yfs_wants *w, uint32_t unit)
{
    pthread_mutex_lock(&w->lock);
    want *e = find(w, unit);
    int waiting = e && e->state == WANTED;
    pthread_mutex_unlock(&w->lock);
    return waiting;
}

int yfs_wants_begin(yfs_wants *w, uint32_t unit, const void *slot, yfs_hold *hold)
{
    pthread_mutex_lock(&w->lock);
    want *e;
    while ((e = find(w, unit)) && e->slot == slot && e->state == FILLING)
        wait_for_framing(w, hold);
    if (e && e->slot != slot)
        e = NULL; /* another build's: this one frames its own */
    int filled = e && e->state == FILLED;
    if (e && e->state == WANTED)
        e->state = FILLING;
    pthread_mutex_unlock(&w->lock);
    return filled;
}

void yfs_wants_end(yfs_wants *w, uint32_t unit, const void *slot, int ok)
{
    pthread_mutex_lock(&w->lock);
    want *e = find(w, unit);
    if (e && e->slot == slot) {
        assert(e->state == FILLING);
        e->state = ok ? FILLED : WANTED;
        pthread_cond_broadcast(&w->ended);
    }
    pthread_mutex_unlock(&w->lock);
}
