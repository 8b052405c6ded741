#include "ix_store.h"

#include <stdlib.h>
#include <string.h>

#include "ix_s3.h"
#include "ix_store_posix.h"

int ix_store_is_remote(const char *dataset)
{
    return strncmp(dataset, "s3://", 5) == 0;
}

int ix_store_open(const char *dataset, const ix_store_options *o, ix_store **out,
                  pq_error *err)
{
    *out = NULL;
    return ix_store_is_remote(dataset) ? ix_s3_open(dataset, o, out, err)
                                       : ix_store_posix_open(dataset, out, err);
}

void ix_store_free(ix_store *s)
{
    if (s)
        s->ops->free(s);
}

int ix_store_list(ix_store *s, const char *dataset, char ***paths, size_t *count,
                  pq_error *err)
{
    if (s->ops->list(s, paths, count, err) < 0)
        return -1;
    if (*count == 0) {
        free(*paths);
        *paths = NULL;
        return pq_error_set(err, "%s: no *.parquet files found", dataset);
    }
    return 0;
}

const char *ix_store_name(const ix_store *s, const char *path)
{
    return s->ops->name(s, path);
}

int ix_store_open_object(ix_store *s, const char *name, int *handle, struct stat *st,
                         pq_error *err)
{
    return s->ops->open(s, name, handle, st, err);
}

int ix_store_stat(ix_store *s, int handle, struct stat *st)
{
    return s->ops->stat(s, handle, st);
}

void ix_store_close(ix_store *s, int handle)
{
    s->ops->close(s, handle);
}

/* ix_read_ops over one object of a store. */
typedef struct object_read {
    ix_store *s;
    int handle;
    char why[384];
} object_read;

static ssize_t object_pread(void *ctx, void *buf, size_t len, uint64_t offset)
{
    object_read *r = ctx;
    r->why[0] = '\0';
    return r->s->ops->pread(r->s, r->handle, buf, len, offset, r->why, sizeof r->why);
}

static int64_t object_size(void *ctx)
{
    object_read *r = ctx;
    struct stat st;
    if (r->s->ops->stat(r->s, r->handle, &st) != 0)
        return -1;
    return (int64_t)st.st_size;
}

static const char *object_why(void *ctx)
{
    return ((object_read *)ctx)->why;
}

int ix_store_read(ix_store *s, int handle, const char *name, void *buf, size_t len,
                  uint64_t offset, pq_error *err)
{
    long delay = ix_read_delay_us();
    if (delay)
        ix_sleep_us(delay);
    object_read r = { .s = s, .handle = handle };
    ix_read_ops ops = { object_pread, object_size, &r, object_why };
    return ix_read_retry(&ops, name, buf, len, offset, &s->retry, NULL, err);
}
