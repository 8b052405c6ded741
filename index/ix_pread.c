#include "ix_pread.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const ix_retry_policy ix_retry_default = { IX_RETRY_TRIES, IX_RETRY_FIRST_US, IX_RETRY_MAX_US, 0 };

static long read_delay_us;
static pthread_once_t read_delay_once = PTHREAD_ONCE_INIT;

static void read_delay_init(void)
{
    const char *v = getenv("YOUMUFS_READ_DELAY_US");
    char *end;
    long us = v ? strtol(v, &end, 10) : 0;
    read_delay_us = v && *v && !*end && us > 0 && us <= 10000000 ? us : 0;
}

long ix_read_delay_us(void)
{
    pthread_once(&read_delay_once, read_delay_init);
    return read_delay_us;
}

void ix_sleep_us(long us)
{
    struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

long ix_retry_wait_us(const ix_retry_policy *policy, int failed)
{
    assert(failed >= 1);
    long wait = policy->first_us;
    for (int i = 1; i < failed && wait < policy->max_us; i++)
        wait = wait > policy->max_us / 2 ? policy->max_us : wait * 2;
    if (!policy->jitter || wait < 2)
        return wait;
    /* A draw per wait: the clock's nanoseconds mixed with the stack
     * address (per thread) through splitmix64's finaliser. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t x = (uint64_t)now.tv_nsec ^ ((uint64_t)(uintptr_t)&now << 16) ^ (uint64_t)failed;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return wait / 2 + (long)(x % (uint64_t)(wait - wait / 2 + 1));
}

static int transient(int e)
{
    return e == EINTR || e == EAGAIN || e == ETIMEDOUT || e == ESTALE;
}

int ix_read_retry(const ix_read_ops *ops, const char *name, void *buf, size_t len,
                  uint64_t offset, const ix_retry_policy *policy, int *tries_used,
                  pq_error *err)
{
    assert(policy->tries >= 1 && policy->first_us >= 0 && policy->max_us >= policy->first_us);
    size_t done = 0;
    int failed = 0;          /* attempts that failed transiently */
    char what[512] = "";     /* the last transient failure, for the message */
    while (done < len) {
        uint64_t at = offset + done;
        ssize_t n = ops->pread(ops->ctx, (char *)buf + done, len - done, at);
        if (n > 0) {
            assert((size_t)n <= len - done);
            done += (size_t)n;
            continue;
        }
        int e = errno;
        const char *said = n < 0 && ops->why ? ops->why(ops->ctx) : NULL;
        if (!said || !*said)
            said = strerror(e);
        if (n < 0 && !transient(e)) {
            if (tries_used)
                *tries_used = failed;
            return pq_error_set(err, "%s: read of %zu bytes at offset %llu failed: %s", name,
                                len, (unsigned long long)offset, said);
        }
        if (n == 0) {
            /* The end, for this read: the real one (truncated), or a short
             * read of a file whose size says there is more. */
            int64_t size = ops->size(ops->ctx);
            if (size >= 0 && (uint64_t)size <= at) {
                if (tries_used)
                    *tries_used = failed;
                return pq_error_set(err,
                                    "%s: file ends before byte %llu (wanted %zu bytes at offset "
                                    "%llu); truncated or changed?",
                                    name, (unsigned long long)(offset + len), len,
                                    (unsigned long long)offset);
            }
            if (size < 0)
                snprintf(what, sizeof what, "short read at offset %llu, and the file's size "
                         "cannot be read: %s", (unsigned long long)at, strerror(errno));
            else
                snprintf(what, sizeof what, "short read: no byte at offset %llu of a "
                         "%lld-byte file", (unsigned long long)at, (long long)size);
        } else {
            snprintf(what, sizeof what, "%s", said);
        }
        if (++failed >= policy->tries)
            break;
        ix_sleep_us(ix_retry_wait_us(policy, failed));
    }
    if (tries_used)
        *tries_used = failed;
    if (done == len)
        return 0;
    return pq_error_set(err, "%s: read of %zu bytes at offset %llu failed after %d tries: %s",
                        name, len, (unsigned long long)offset, failed, what);
}
