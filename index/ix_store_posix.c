#include "ix_store_posix.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Below this many files the descriptor table is not grown ahead. */
#define RESERVE_MIN_FILES 256

typedef struct posix_store {
    ix_store base;
    char *root;
    size_t root_len;
    int dir_fd; /* the dataset directory (names are relative to it), or AT_FDCWD */
} posix_store;

/* Opening n files one after another grows the process's descriptor table by
 * doublings, and each growth in a multi-threaded process waits for an RCU
 * grace period: 10,000 files kept open took 50-60 ms longer than with the
 * table grown ahead. Asking once for a descriptor above them all grows it in
 * one step (with no wait while the process is single-threaded). Best effort:
 * a descriptor limit that refuses it is met, as before, by the opens. */
static void reserve_descriptors(int fd, size_t n)
{
    if (fd < 0 || n < RESERVE_MIN_FILES || n > (size_t)(INT_MAX - fd))
        return;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, fd + (int)n);
    if (high >= 0)
        close(high);
}

static int posix_list(ix_store *base, char ***paths, size_t *count, pq_error *err)
{
    posix_store *s = (posix_store *)base;
    if (ix_list_files(s->root, paths, count, err) < 0)
        return -1;
    reserve_descriptors(s->dir_fd, *count);
    return 0;
}

/* Files are opened by their name relative to the dataset directory: one
 * path component to resolve instead of the whole path. */
static const char *posix_name(const ix_store *base, const char *path)
{
    const posix_store *s = (const posix_store *)base;
    if (s->dir_fd < 0)
        return path;
    return path + s->root_len + (path[s->root_len] == '/');
}

static int posix_open_object(ix_store *base, const char *name, int *handle, struct stat *st,
                             pq_error *err)
{
    posix_store *s = (posix_store *)base;
    int fd = openat(s->dir_fd, name, O_RDONLY | O_CLOEXEC);
    *handle = fd;
    if (fd < 0)
        return pq_error_set(err, "%s: cannot open: %s", name, strerror(errno));
    if (fstat(fd, st) != 0)
        return pq_error_set(err, "%s: cannot stat: %s", name, strerror(errno));
    return 0;
}

static int posix_stat(ix_store *base, int handle, struct stat *st)
{
    (void)base;
    return fstat(handle, st);
}

static ssize_t posix_pread(ix_store *base, int handle, void *buf, size_t len, uint64_t offset,
                           char *why, size_t why_len)
{
    (void)base;
    (void)why;
    (void)why_len; /* strerror(errno) says it all */
    return pread(handle, buf, len, (off_t)offset);
}

static void posix_close(ix_store *base, int handle)
{
    (void)base;
    if (handle >= 0)
        close(handle);
}

static void posix_free(ix_store *base)
{
    posix_store *s = (posix_store *)base;
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    free(s->root);
    free(s);
}

static const ix_store_ops posix_ops = {
    posix_list, posix_name, posix_open_object, posix_stat, posix_pread, posix_close, posix_free,
};

int ix_store_posix_open(const char *dataset, ix_store **out, pq_error *err)
{
    posix_store *s = calloc(1, sizeof *s);
    if (!s || !(s->root = strdup(dataset))) {
        free(s);
        return pq_error_set(err, "out of memory");
    }
    s->base = (ix_store){ &posix_ops, ix_retry_default, 0, 0, NULL, 0 };
    s->root_len = strlen(dataset);
    int fd = open(dataset, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    s->dir_fd = fd >= 0 ? fd : AT_FDCWD;
    *out = &s->base;
    return 0;
}
