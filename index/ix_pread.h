/* ix_pread.h — what storage may do to a read, for every read of a source's
 * bytes, at mount and at run time (footers, page indexes, page headers, the
 * page pass, the read path), whatever the store (ix_store.h: ix_store_read
 * is the one read, and it goes through here):
 * - Slow storage, simulated: the environment variable YOUMUFS_READ_DELAY_US
 *   (microseconds, 1 to 10,000,000; read once per process) is slept once
 *   per ix_pread_exact call, before its first attempt, so benchmarks see
 *   what a mount and an epoch cost when every read waits that long.
 * - Transient errors, retried: EINTR, EAGAIN, ETIMEDOUT and ESTALE, and a
 *   short read (the file ends, for the read, before the file's end as its
 *   size says: a stale view of a remote file), are tried again after a
 *   backoff that doubles from IX_RETRY_FIRST_US up to IX_RETRY_MAX_US, at
 *   most IX_RETRY_TRIES attempts in all; then the read fails with a message
 *   naming the file, the offset, the length and the last error. A read that
 *   returns part of what was asked goes on from where it stopped (progress,
 *   not an error). Any other error, and a read at or past the real end of
 *   the file (truncated), fails at once.
 * The read path turns a failed read into EIO and a log line; the mount
 * into its error message.
 *
 * Thread-safe: no state but the delay, read once (pthread_once).
 */
#ifndef IX_PREAD_H
#define IX_PREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pq_error.h"

#define IX_RETRY_TRIES 5
#define IX_RETRY_FIRST_US 10000L
#define IX_RETRY_MAX_US 1000000L

/* Where ix_read_retry reads: pread() returns like pread(2) (bytes read, 0 at
 * the end, -1 with errno set); size() returns the file's current size in
 * bytes, or -1 (with errno set) if it cannot tell: a read that ends early
 * then counts as a transient short read. why (may be NULL) describes the
 * last failed pread for the message, where strerror(errno) says too little
 * (what a server answered); NULL or "" falls back to strerror. */
typedef struct ix_read_ops {
    ssize_t (*pread)(void *ctx, void *buf, size_t len, uint64_t offset);
    int64_t (*size)(void *ctx);
    void *ctx;
    const char *(*why)(void *ctx);
} ix_read_ops;

/* How many attempts a read gets in all (>= 1), and the waits between them:
 * first_us, doubling, at most max_us; with jitter, each wait is drawn
 * uniformly from [wait/2, wait] so that many readers failing together do
 * not come back together. */
typedef struct ix_retry_policy {
    int tries;
    long first_us;
    long max_us;
    int jitter;
} ix_retry_policy;

/* The policy of local files: IX_RETRY_TRIES, _FIRST_US, _MAX_US, no jitter. */
extern const ix_retry_policy ix_retry_default;

/* The wait before attempt `failed` + 1, after `failed` (>= 1) attempts that
 * failed transiently, under policy. Thread-safe. */
long ix_retry_wait_us(const ix_retry_policy *policy, int failed);

/* Sleep us microseconds (resumed after signals). */
void ix_sleep_us(long us);

/* Read exactly len bytes at offset through ops, retrying transient errors as
 * above under `policy`. On failure the message names `name`, the length,
 * the offset and what happened. *tries_used (if not NULL) is set to the
 * number of attempts that failed transiently. Sleeps no delay itself. */
int ix_read_retry(const ix_read_ops *ops, const char *name, void *buf, size_t len,
                  uint64_t offset, const ix_retry_policy *policy, int *tries_used,
                  pq_error *err);

/* The delay YOUMUFS_READ_DELAY_US asks for, in microseconds (0: none):
 * ix_store_read sleeps it once per read, before the first attempt. */
long ix_read_delay_us(void);

#endif
