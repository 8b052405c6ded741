#include "yfs_dicts.h"

#include <pthread.h>
#include <stdlib.h>

#include "ix_read.h"

struct yfs_dict {
    uint32_t chunk;
    pq_dictionary dict;
    size_t bytes;
    int refs;              /* guarded by the cache lock, like the links */
    yfs_dict *prev, *next; /* LRU list of unreferenced entries */
};

struct yfs_dicts {
    const ix_index *ix;
    uint64_t budget;
    yfs_stats *stats;
    pthread_mutex_t lock;  /* guards everything below */
    yfs_dict **by_chunk;   /* ix->num_chunks slots */
    yfs_dict *lru_head, *lru_tail; /* head: least recently used */
    uint64_t idle_bytes;   /* bytes of unreferenced entries */
};

yfs_dicts *yfs_dicts_new(const ix_index *ix, uint64_t budget, yfs_stats *stats)
{
    yfs_dicts *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->by_chunk = calloc(ix->num_chunks ? ix->num_chunks : 1, sizeof *c->by_chunk);
    if (!c->by_chunk) {
        free(c);
        return NULL;
    }
    c->ix = ix;
    c->budget = budget;
    c->stats = stats;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void entry_free(yfs_dict *d)
{
    pq_dictionary_free(&d->dict);
    free(d);
}

void yfs_dicts_free(yfs_dicts *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->ix->num_chunks; i++)
        if (c->by_chunk[i])
            entry_free(c->by_chunk[i]);
    free(c->by_chunk);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static void lru_unlink(yfs_dicts *c, yfs_dict *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        c->lru_head = d->next;
    if (d->next)
        d->next->prev = d->prev;
    else
        c->lru_tail = d->prev;
    d->prev = d->next = NULL;
    c->idle_bytes -= d->bytes;
}

/* Drop least recently used idle dictionaries until within budget. */
static void trim(yfs_dicts *c)
{
    while (c->idle_bytes > c->budget && c->lru_head) {
        yfs_dict *d = c->lru_head;
        lru_unlink(c, d);
        c->by_chunk[d->chunk] = NULL;
        entry_free(d);
    }
}

int yfs_dicts_get(yfs_dicts *c, uint32_t chunk, const pq_dictionary **dict, yfs_dict **handle,
                  pq_error *err)
{
    pthread_mutex_lock(&c->lock);
    yfs_dict *d = c->by_chunk[chunk];
    if (d) {
        if (d->refs++ == 0)
            lru_unlink(c, d);
        pthread_mutex_unlock(&c->lock);
        *dict = &d->dict;
        *handle = d;
        return 0;
    }
    pthread_mutex_unlock(&c->lock);

    /* Load without the lock; if another thread loaded the same dictionary
     * meanwhile, keep theirs. */
    yfs_dict *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return pq_error_set(err, "out of memory for a dictionary");
    uint64_t bytes_read = 0;
    if (ix_read_dictionary(c->ix, chunk, &fresh->dict, &bytes_read, err) < 0) {
        free(fresh);
        return -1;
    }
    yfs_count(&c->stats->bytes_read, bytes_read);
    yfs_count(&c->stats->dictionaries_loaded, 1);
    fresh->chunk = chunk;
    fresh->bytes = pq_dictionary_bytes(&fresh->dict) + sizeof *fresh;

    pthread_mutex_lock(&c->lock);
    d = c->by_chunk[chunk];
    if (d) {
        if (d->refs++ == 0)
            lru_unlink(c, d);
    } else {
        d = c->by_chunk[chunk] = fresh;
        d->refs = 1;
        fresh = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (fresh)
        entry_free(fresh);
    *dict = &d->dict;
    *handle = d;
    return 0;
}

void yfs_dicts_put(yfs_dicts *c, yfs_dict *d)
{
    pthread_mutex_lock(&c->lock);
    if (--d->refs == 0) {
        d->prev = c->lru_tail;
        d->next = NULL;
        if (c->lru_tail)
            c->lru_tail->next = d;
        else
            c->lru_head = d;
        c->lru_tail = d;
        c->idle_bytes += d->bytes;
        trim(c);
    }
    pthread_mutex_unlock(&c->lock);
}
