/* ix_chunks_ahead: column chunks read ahead many at once (ix_chunks_ahead.h). */
#include <stdatomic.h>
#include <stdlib.h>

#include "ix_chunk_rows.h"
#include "ix_chunks_ahead.h"
#include "ix_parallel.h"

typedef struct ahead {
    ix_chunk_ref *refs;
    size_t *take;            /* the refs to read, in list order */
    _Atomic uint64_t read;   /* bytes read by the tasks */
} ahead;

static int read_one(void *ctx, size_t index, pq_error *err)
{
    ahead *a = ctx;
    ix_chunk_ref *r = &a->refs[a->take[index]];
    uint64_t begin, len;
    if (ix_chunk_range(r->s, r->leaf, r->g, &begin, &len, err) < 0)
        return pq_error_prefix(err, "%s: row group %d: ", r->s->name, r->g);
    uint8_t *buf = malloc(len ? (size_t)len : 1);
    if (!buf)
        return pq_error_set(err, "%s: out of memory for a %llu-byte column chunk", r->s->name,
                            (unsigned long long)len);
    if (ix_store_read(r->s->store, r->s->fd, r->s->name, buf, (size_t)len, begin, err) < 0) {
        free(buf);
        return -1;
    }
    atomic_fetch_add(&a->read, len);
    r->bytes = buf;
    return 0;
}

int ix_chunks_read_ahead(ix_chunk_ref *refs, size_t n, uint64_t budget, int threads,
                         int io_depth, uint64_t *bytes_read, pq_error *err)
{
    ahead a = { .refs = refs, .take = malloc((n ? n : 1) * sizeof *a.take) };
    if (!a.take)
        return pq_error_set(err, "out of memory");
    size_t count = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t begin, len;
        pq_error ignored; /* a range outside the file fails where its reader opens */
        if (ix_chunk_range(refs[i].s, refs[i].leaf, refs[i].g, &begin, &len, &ignored) < 0 ||
            len == 0 || len > IX_CHUNK_ROWS_READ_BYTES)
            continue;
        if (len > budget - sum)
            break;
        sum += len;
        a.take[count++] = i;
    }
    atomic_init(&a.read, 0);
    int rc = count ? ix_parallel_for_growing(count, threads, io_depth, read_one, &a, NULL, err)
                   : 0;
    *bytes_read += atomic_load(&a.read);
    free(a.take);
    return rc;
}

void ix_chunks_free(ix_chunk_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(refs[i].bytes);
        refs[i].bytes = NULL;
    }
}
