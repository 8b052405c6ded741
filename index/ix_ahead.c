#include "ix_ahead.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ix_checked.h"

enum { EMPTY, READING, FULL };

/* Slot i reads windows i, i + IX_AHEAD_WINDOWS, ... in turn: the consumer
 * empties it, its thread fills it with its next window. */
typedef struct slot {
    struct ix_ahead *a;
    uint8_t *buf;
    uint64_t window;  /* the window it holds, is reading or reads next */
    int state;
    /* the outcome of its read, valid once FULL */
    size_t len;
    int rc, moved;
    uint64_t read;
    pq_error err;
    pthread_t thread;
    int started;
} slot;

struct ix_ahead {
    const ix_index *ix;
    uint32_t file;
    uint64_t offset, length;
    size_t window;
    uint64_t windows;    /* in the range */
    pthread_mutex_t lock; /* guards the slots' state and window, and closing */
    pthread_cond_t change; /* a slot filled or emptied, or closing */
    int closing;
    slot slots[IX_AHEAD_WINDOWS];
    /* the consumer's */
    uint64_t next;       /* window being consumed */
    size_t at;           /* bytes of it consumed */
    int failed;
    pq_error failure;
};

size_t ix_ahead_bytes(size_t window)
{
    return sizeof(ix_ahead) + IX_AHEAD_WINDOWS * window;
}

static void *read_ahead(void *arg)
{
    slot *s = arg;
    ix_ahead *a = s->a;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->closing && (s->state != EMPTY || s->window >= a->windows))
            pthread_cond_wait(&a->change, &a->lock);
        if (a->closing)
            break;
        s->state = READING;
        uint64_t from = s->window * a->window;
        pthread_mutex_unlock(&a->lock);
        /* unlocked: the consumer leaves a slot alone until it is FULL */
        s->len = a->length - from < a->window ? (size_t)(a->length - from) : a->window;
        s->read = 0;
        s->moved = 0;
        s->rc = ix_read_checked(a->ix, a->file, a->offset + from, s->buf, s->len, &s->read,
                                &s->moved, &s->err);
        pthread_mutex_lock(&a->lock);
        s->state = FULL;
        pthread_cond_broadcast(&a->change);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

ix_ahead *ix_ahead_open(const ix_index *ix, uint32_t file, uint64_t offset, uint64_t length,
                        size_t window, pq_error *err)
{
    assert(window > 0);
    ix_ahead *a = calloc(1, sizeof *a);
    if (!a) {
        pq_error_set(err, "out of memory for reads ahead");
        return NULL;
    }
    *a = (ix_ahead){ .ix = ix, .file = file, .offset = offset, .length = length,
                     .window = window, .windows = (length + window - 1) / window };
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->change, NULL);
    for (unsigned i = 0; i < IX_AHEAD_WINDOWS; i++) {
        slot *s = &a->slots[i];
        *s = (slot){ .a = a, .window = i, .state = EMPTY };
        if (!(s->buf = malloc(window))) {
            pq_error_set(err, "out of memory for reads ahead");
            ix_ahead_close(a);
            return NULL;
        }
    }
    for (unsigned i = 0; i < IX_AHEAD_WINDOWS && i < a->windows; i++) {
        slot *s = &a->slots[i];
        if (pthread_create(&s->thread, NULL, read_ahead, s) != 0) {
            pq_error_set(err, "cannot start a thread to read ahead");
            ix_ahead_close(a);
            return NULL;
        }
        s->started = 1;
    }
    return a;
}

int ix_ahead_read(ix_ahead *a, void *dst, size_t n, uint64_t *bytes_read, int *moved,
                  pq_error *err)
{
    uint8_t *out = dst;
    while (n > 0 && !a->failed) {
        assert(a->next < a->windows);
        slot *s = &a->slots[a->next % IX_AHEAD_WINDOWS];
        pthread_mutex_lock(&a->lock);
        while (s->state != FULL)
            pthread_cond_wait(&a->change, &a->lock);
        pthread_mutex_unlock(&a->lock);
        assert(s->window == a->next);
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
        if (a->at == s->len) { /* the slot goes on to its next window */
            pthread_mutex_lock(&a->lock);
            s->window += IX_AHEAD_WINDOWS;
            s->state = EMPTY;
            pthread_cond_broadcast(&a->change);
            pthread_mutex_unlock(&a->lock);
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

void ix_ahead_close(ix_ahead *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->closing = 1;
    pthread_cond_broadcast(&a->change);
    pthread_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < IX_AHEAD_WINDOWS; i++) {
        if (a->slots[i].started)
            pthread_join(a->slots[i].thread, NULL);
        free(a->slots[i].buf);
    }
    pthread_cond_destroy(&a->change);
    pthread_mutex_destroy(&a->lock);
    free(a);
}
