/* ix_store.h — where a dataset's objects live, and the one way to them.
 *
 * A store is a directory tree (POSIX: the dataset is a directory or one
 * file) or an S3 bucket (the dataset is s3://BUCKET[/PREFIX]). Everything
 * above it, the index passes at mount and the read path, sees the same
 * four things:
 * - list: the objects under the root ending in .parquet, sorted by byte
 *   order of their path (a directory: every *.parquet below it, hidden
 *   entries skipped; a bucket: every key under PREFIX/, keys with a hidden
 *   component skipped), each with its name relative to the root;
 * - open: a handle on an object and its identity as a struct stat:
 *   st_size, and in st_mtim the change token (POSIX: the mtime; S3: a
 *   fingerprint of the ETag, ix_s3.h), and for POSIX the device, inode and
 *   ctime the change detection of ix_index.h uses (S3: all 0, which never
 *   move: a changed object is refused by the read itself);
 * - read: a byte range of an object, through ix_pread.h (the delay of
 *   YOUMUFS_READ_DELAY_US, retries of transient errors under the store's
 *   policy), failing with a message naming the object and what happened;
 * - close.
 * A store whose change token names the content (strong: an ETag) lets the
 * persistent index recognise an object from its listing alone; a weak one
 * (an mtime) is backed by a read of the footer (ix_sources.c).
 *
 * Thread-safe after ix_store_list: open, stat, read and close may be
 * called from any thread. The S3 store keeps one connection per thread that
 * reads (reused from read to read); no credential is ever written into a
 * message, a log line or anything the index keeps.
 */
#ifndef IX_STORE_H
#define IX_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ix_pread.h"
#include "pq_error.h"

/* Object storage settings (ignored for a path). NULL or 0: from the
 * environment (ix_s3.h). */
typedef struct ix_store_options {
    const char *endpoint; /* URL of the S3 server; with one, path-style addressing */
    const char *region;   /* the signing region */
    int no_sign;          /* public bucket: send no credentials, sign nothing */
} ix_store_options;

typedef struct ix_store ix_store;

/* The operations of one kind of store (the implementations: ix_store_posix.c,
 * ix_s3.c). pread returns like pread(2), with errno EAGAIN, ETIMEDOUT or
 * EINTR for what may pass (ix_pread.h's transient errors) and any other for
 * what will not; it writes what happened into why (a line, for messages). */
typedef struct ix_store_ops {
    int (*list)(ix_store *s, char ***paths, size_t *count, pq_error *err);
    const char *(*name)(const ix_store *s, const char *path);
    int (*open)(ix_store *s, const char *name, int *handle, struct stat *st, pq_error *err);
    int (*stat)(ix_store *s, int handle, struct stat *st);
    ssize_t (*pread)(ix_store *s, int handle, void *buf, size_t len, uint64_t offset,
                     char *why, size_t why_len);
    void (*close)(ix_store *s, int handle);
    void (*free)(ix_store *s);
} ix_store_ops;

/* What every store starts with (the implementations embed it first). */
struct ix_store {
    const ix_store_ops *ops;
    ix_retry_policy retry;
    int strong_token; /* the change token names the content (above) */
    /* Bytes a reader going through one object in order (a streamed page,
     * ix_stream.h) asks for at once; 0: the reader's own default. Each
     * request to an object store costs a round trip, so it asks for more. */
    size_t stream_read_bytes;
    /* Where the objects are served from, beyond the dataset's name: NULL
     * for a path (its real path names it); S3: the server's URL of the
     * bucket (endpoint or AWS host, then the bucket), owned by the store.
     * Part of the persistent index's key: two servers may each hold a
     * bucket and key of that name with the same size and ETag and other
     * bytes. Never holds a credential (endpoints with user information are
     * refused). */
    const char *origin;
    /* Most reads the store wants in flight at once from the mount's passes
     * (ix_io_depth); 0: no bound of its own. Each thread that reads S3
     * holds a connection to the server. */
    int max_reads;
};

/* 1 if dataset names an object store ("s3://..."), else 0. */
int ix_store_is_remote(const char *dataset);

/* The store of `dataset`. S3: parses the URL and finds the credentials
 * (ix_s3.h), sending no request yet. On failure *out is NULL and the
 * message says why (never with a credential in it). */
int ix_store_open(const char *dataset, const ix_store_options *o, ix_store **out,
                  pq_error *err);
void ix_store_free(ix_store *s);

/* The dataset's objects (above): *paths and each string are the caller's
 * (free each, then the array). An empty listing is an error naming the
 * dataset ("no *.parquet files found"). */
int ix_store_list(ix_store *s, const char *dataset, char ***paths, size_t *count,
                  pq_error *err);
/* The name of the object at path relative to the root (points into path). */
const char *ix_store_name(const ix_store *s, const char *path);
/* Open the object `name` (as ix_store_name gives it). Errors name it. */
int ix_store_open_object(ix_store *s, const char *name, int *handle, struct stat *st,
                         pq_error *err);
/* Its identity now (POSIX: fstat; S3: as listed). 0, or -1 with errno set. */
int ix_store_stat(ix_store *s, int handle, struct stat *st);
void ix_store_close(ix_store *s, int handle);

/* Read exactly len bytes at offset of the object open as handle (`name`
 * in messages): sleep YOUMUFS_READ_DELAY_US once, then ix_read_retry
 * under the store's policy. */
int ix_store_read(ix_store *s, int handle, const char *name, void *buf, size_t len,
                  uint64_t offset, pq_error *err);

#endif
