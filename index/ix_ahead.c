#include "ix_ahead.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ix_checked.h"

enum { EMPTY, READING, FULL };

/* A slot reads one window at a time: when EMPTY, its thread takes the
 * range's next window not yet taken (ix_ahead.issued), reads it, and the
 * slot is FULL until the consumer empties it. So the windows in flight or
 * read are always [next, issued): at most depth of them, each in one slot. */
typedef struct slot {
    struct ix_ahead *a;
    uint8_t *buf;
    uint64_t window;  /* the window it holds or is reading (not EMPTY) */
    int state;
    /* the outcome of its read, valid once FULL */
    size_t len;
    int rc, moved;
    uint64_t read;
    pq_error err;
    pthread_t thread;
    pthread_cond_t emptied; /* its thread waits here: the slot emptied, the range
                             * extended, or closing */
} slot;

struct ix_ahead {
    const ix_index *ix;
    uint32_t file;
    uint64_t offset;
    uint64_t length;     /* guarded by lock: the consumer extends it (ix_ahead_extend) */
    size_t window;
    uint64_t windows;    /* in the range; guarded by lock, like length */
    pthread_mutex_t lock; /* guards the slots' state and window, issued and closing */
    /* A slot filled: the consumer waits here. Each wake-up goes to the one
     * thread it concerns: with one condition for all, every window read or
     * consumed woke every idle slot's thread (one reader of DuckDB's text at
     * 50 ms: the daemon switched contexts 28 thousand times an epoch, 18
     * thousand so, 12.7 thousand at 0 ms). */
    pthread_cond_t filled;
    int closing;
    uint64_t issued;     /* windows taken by a slot so far */
    unsigned depth;      /* slots started; only the consumer changes it */
    slot slots[IX_AHEAD_WINDOWS_MAX];
    /* the consumer's */
    uint64_t next;       /* window being consumed */
    slot *current;       /* the slot holding it, once found */
    size_t at;           /* bytes of it consumed */
    int failed;
    pq_error failure;
};

size_t ix_ahead_bytes(size_t window, unsigned depth)
{
    return sizeof(ix_ahead) + depth * window;
}

static void *read_ahead(void *arg)
{
    slot *s = arg;
    ix_ahead *a = s->a;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->closing && (s->state != EMPTY || a->issued >= a->windows))
            pthread_cond_wait(&s->emptied, &a->lock);
        if (a->closing)
            break;
        s->state = READING;
        s->window = a->issued++;
        uint64_t from = s->window * a->window;
        s->len = a->length - from < a->window ? (size_t)(a->length - from) : a->window;
        pthread_mutex_unlock(&a->lock);
        /* unlocked: the consumer leaves a slot alone until it is FULL */
        s->read = 0;
        s->moved = 0;
        s->rc = ix_read_checked(a->ix, a->file, a->offset + from, s->buf, s->len, &s->read,
                                &s->moved, &s->err);
        pthread_mutex_lock(&a->lock);
        s->state = FULL;
        pthread_cond_signal(&a->filled);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* Start slot a->depth: its buffer and its thread. */
static int add_slot(ix_ahead *a)
{
    assert(a->depth < IX_AHEAD_WINDOWS_MAX);
    slot *s = &a->slots[a->depth];
    *s = (slot){ .a = a, .state = EMPTY };
    if (!(s->buf = malloc(a->window)))
        return -1;
    pthread_cond_init(&s->emptied, NULL);
    if (pthread_create(&s->thread, NULL, read_ahead, s) != 0) {
        pthread_cond_destroy(&s->emptied);
        free(s->buf);
        return -1;
    }
    a->depth++;
    return 0;
}

ix_ahead *ix_ahead_open(const ix_index *ix, uint32_t file, uint64_t offset, uint64_t length,
                        size_t window, unsigned depth, pq_error *err)
{
    assert(window > 0 && depth >= 1 && depth <= IX_AHEAD_WINDOWS_MAX);
    ix_ahead *a = calloc(1, sizeof *a);
    if (!a) {
        pq_error_set(err, "out of memory for reads ahead");
        return NULL;
    }
    *a = (ix_ahead){ .ix = ix, .file = file, .offset = offset, .length = length,
                     .window = window, .windows = (length + window - 1) / window };
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->filled, NULL);
    while (a->depth < depth && a->depth < a->windows)
        if (add_slot(a) < 0) {
            pq_error_set(err, "out of memory or threads for reads ahead");
            ix_ahead_close(a);
            return NULL;
        }
    return a;
}

int ix_ahead_deepen(ix_ahead *a)
{
    if (a->depth >= IX_AHEAD_WINDOWS_MAX || a->next + a->depth >= a->windows)
        return -1;
    return add_slot(a);
}

int ix_ahead_extend(ix_ahead *a, uint64_t length)
{
    if (length <= a->length || a->length % a->window != 0)
        return -1;
    pthread_mutex_lock(&a->lock);
    a->length = length;
    a->windows = (length + a->window - 1) / a->window;
    for (unsigned i = 0; i < a->depth; i++) /* idle slots take the new windows */
        if (a->slots[i].state == EMPTY)
            pthread_cond_signal(&a->slots[i].emptied);
    pthread_mutex_unlock(&a->lock);
    return 0;
}

unsigned ix_ahead_depth(const ix_ahead *a)
{
    return a->depth;
}

/* The slot holding window a->next, FULL: waits for it, and sets *waited
 * when that is not the range's first window (which every consumer waits
 * for: that wait says nothing about the depth). */
static slot *window_read(ix_ahead *a, int *waited)
{
    slot *found = NULL;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        assert(a->issued - a->next <= a->depth);
        for (unsigned i = 0; i < a->depth && !found; i++)
            if (a->slots[i].state != EMPTY && a->slots[i].window == a->next)
                found = &a->slots[i];
        if (found && found->state == FULL)
            break;
        *waited |= a->next > 0;
        pthread_cond_wait(&a->filled, &a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

int ix_ahead_read(ix_ahead *a, void *dst, size_t n, uint64_t *bytes_read, int *moved,
                  int *waited, pq_error *err)
{
    uint8_t *out = dst;
    while (n > 0 && !a->failed) {
        assert(a->next < a->windows);
        if (!a->current)
            a->current = window_read(a, waited);
        slot *s = a->current;
        assert(s->window == a->next && s->state == FULL);
        if (s->rc < 0) {
            a->failed = 1;
            a->failure = s->err;
            break;
        }
        if (a->at == 0)
            *bytes_read += s->read;
        *moved |= s->moved;
        size_t take = s->len - a->at < n ? s->len - a->at : n;
        memcpy(out, s->buf + a->at, take);
        out += take;
        n -= take;
        a->at += take;
        if (a->at == s->len) { /* the slot takes the next window not taken */
            pthread_mutex_lock(&a->lock);
            s->state = EMPTY;
            pthread_cond_signal(&s->emptied);
            pthread_mutex_unlock(&a->lock);
            a->current = NULL;
            a->next++;
            a->at = 0;
        }
    }
    if (a->failed) {
        *err = a->failure;
        return -1;
    }
    return 0;
}

uint64_t ix_ahead_close(ix_ahead *a)
{
    if (!a)
        return 0;
    pthread_mutex_lock(&a->lock);
    a->closing = 1;
    for (unsigned i = 0; i < a->depth; i++)
        pthread_cond_signal(&a->slots[i].emptied);
    pthread_mutex_unlock(&a->lock);
    uint64_t unused = 0;
    for (unsigned i = 0; i < a->depth; i++) {
        slot *s = &a->slots[i];
        pthread_join(s->thread, NULL);
        /* joined: a read in progress finished (FULL); the window being
         * consumed was counted when its first byte was taken */
        if (s->state == FULL && s != a->current)
            unused += s->read;
        pthread_cond_destroy(&s->emptied);
        free(s->buf);
    }
    pthread_cond_destroy(&a->filled);
    pthread_mutex_destroy(&a->lock);
    free(a);
    return unused;
}
