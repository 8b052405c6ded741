#include "ix_gate.h"

#include <assert.h>

#include "ix_store.h"

void ix_gate_init(ix_gate *g, int cpus, uint64_t bytes)
{
    assert(cpus >= 1 && bytes >= 1);
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cpu_cond, NULL);
    pthread_cond_init(&g->bytes_cond, NULL);
    g->cpu_free = g->cpus = cpus;
    g->bytes_held = 0;
    g->bytes = bytes;
}

void ix_gate_destroy(ix_gate *g)
{
    assert(g->cpu_free == g->cpus && g->bytes_held == 0);
    pthread_cond_destroy(&g->bytes_cond);
    pthread_cond_destroy(&g->cpu_cond);
    pthread_mutex_destroy(&g->lock);
}

void ix_gate_cpu_enter(ix_gate *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    while (g->cpu_free == 0)
        pthread_cond_wait(&g->cpu_cond, &g->lock);
    g->cpu_free--;
    pthread_mutex_unlock(&g->lock);
}

void ix_gate_cpu_leave(ix_gate *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    assert(g->cpu_free < g->cpus); /* the caller held one */
    g->cpu_free++;
    pthread_cond_signal(&g->cpu_cond); /* one token: one waiter can use it */
    pthread_mutex_unlock(&g->lock);
}

void ix_gate_take(ix_gate *g, uint64_t *held, uint64_t want)
{
    if (!g) {
        *held = want;
        return;
    }
    pthread_mutex_lock(&g->lock);
    assert(g->bytes_held >= *held);
    g->bytes_held -= *held;
    *held = 0;
    pthread_cond_broadcast(&g->bytes_cond);
    /* Room for it, or nothing else held (a request over the whole budget
     * then runs alone). */
    while (g->bytes_held > 0 && g->bytes_held + want > g->bytes)
        pthread_cond_wait(&g->bytes_cond, &g->lock);
    g->bytes_held += want;
    *held = want;
    pthread_mutex_unlock(&g->lock);
}

void ix_gate_give(ix_gate *g, uint64_t *held)
{
    if (g && *held) {
        pthread_mutex_lock(&g->lock);
        assert(g->bytes_held >= *held);
        g->bytes_held -= *held;
        pthread_cond_broadcast(&g->bytes_cond);
        pthread_mutex_unlock(&g->lock);
    }
    *held = 0;
}

int ix_gate_pread(ix_gate *g, ix_store *store, int handle, const char *name, void *buf,
                  size_t len, uint64_t offset, pq_error *err)
{
    ix_gate_cpu_leave(g);
    int rc = ix_store_read(store, handle, name, buf, len, offset, err);
    ix_gate_cpu_enter(g);
    return rc;
}
