#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ix_internal.h"

/* A footer larger than this is refused rather than allocated: real footers
 * of even very wide, many-row-group files are a few MiB. */
#define MAX_FOOTER_BYTES (256u << 20)
/* Bytes read from a file's end at once, into a buffer on the stack: the
 * footer of most files fits. */
#define TAIL_READ_BYTES (16u << 10)

int ix_source_open(ix_source *s, pq_error *err)
{
    return ix_store_open_object(s->store, s->name, &s->fd, &s->st, err);
}

int ix_footer_is(ix_store *store, int handle, const char *name, uint64_t size,
                 uint32_t footer_len, uint32_t footer_crc)
{
    size_t want = (size_t)footer_len + 8; /* the footer, its length, "PAR1" */
    if (footer_len > MAX_FOOTER_BYTES || want > size)
        return 0;
    /* what the file's last 8 bytes must be: the footer's length, "PAR1" */
    const uint8_t end[8] = { (uint8_t)footer_len, (uint8_t)(footer_len >> 8),
                             (uint8_t)(footer_len >> 16), (uint8_t)(footer_len >> 24),
                             'P', 'A', 'R', '1' };
    uint8_t small[TAIL_READ_BYTES];
    uint8_t *buf = want <= sizeof small ? small : malloc(want);
    pq_error ignored;
    int same = buf && ix_store_read(store, handle, name, buf, want, size - want, &ignored) == 0 &&
               memcmp(buf + footer_len, end, sizeof end) == 0 &&
               (uint32_t)crc32(0, buf, footer_len) == footer_crc;
    if (buf != small)
        free(buf);
    return same;
}

/* Parse the footer's meta_len bytes at meta into s. */
static int parse_footer(ix_source *s, const uint8_t *meta, uint32_t meta_len, pq_error *err)
{
    s->footer_len = meta_len;
    s->footer_crc = (uint32_t)crc32(0, meta, meta_len);
    if (pq_file_meta_parse(meta, meta_len, &s->meta, err) < 0)
        return pq_error_prefix(err, "%s: footer: ", s->name);
    if (pq_file_leaves(&s->meta, &s->leaves, &s->num_leaves, err) < 0)
        return pq_error_prefix(err, "%s: schema: ", s->name);
    s->has_footer = 1;
    return 0;
}

int ix_source_read_footer(ix_source *s, ix_gate *gate, pq_error *err)
{
    /* One read of the file's end usually holds the whole footer. */
    uint64_t size = (uint64_t)s->st.st_size;
    if (size < 12) /* "PAR1", the footer length, "PAR1" */
        return pq_error_set(err, "%s: not a Parquet file: %llu bytes is too short (at least "
                            "12 needed)", s->name, (unsigned long long)size);
    uint8_t tail[TAIL_READ_BYTES];
    size_t got = size < sizeof tail ? (size_t)size : sizeof tail;
    if (ix_store_read(s->store, s->fd, s->name, tail, got, size - got, err) < 0)
        return -1;
    uint64_t meta_offset;
    uint32_t meta_len;
    if (pq_footer_locate(tail + got - 8, size, &meta_offset, &meta_len, err) < 0)
        return pq_error_prefix(err, "%s: ", s->name);
    if (meta_len > MAX_FOOTER_BYTES)
        return pq_error_set(err, "%s: footer of %u bytes is larger than the %u allowed", s->name,
                            meta_len, MAX_FOOTER_BYTES);
    const uint8_t *meta = tail + got - 8 - meta_len;
    uint8_t *whole = NULL;
    uint64_t charged = 0;
    int rc = 0;
    if ((size_t)meta_len + 8 > got) { /* a large footer: read it whole */
        ix_gate_take(gate, &charged, meta_len);
        if (!(whole = malloc(meta_len)))
            rc = pq_error_set(err, "%s: out of memory for a %u-byte footer", s->name,
                              meta_len);
        else
            rc = ix_store_read(s->store, s->fd, s->name, whole, meta_len, meta_offset, err);
        meta = whole;
    }
    if (rc == 0) {
        ix_gate_cpu_enter(gate);
        rc = parse_footer(s, meta, meta_len, err);
        ix_gate_cpu_leave(gate);
    }
    free(whole);
    ix_gate_give(gate, &charged);
    return rc;
}

void ix_source_release(ix_source *s)
{
    pq_file_meta_free(&s->meta);
    s->has_footer = 0;
    pq_leaves_free(s->leaves, s->num_leaves);
    s->leaves = NULL;
    s->num_leaves = 0;
    if (s->fd >= 0) {
        ix_store_close(s->store, s->fd);
        s->fd = -1;
    }
}
