#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "ix_internal.h"

/* A footer larger than this is refused rather than allocated: real footers
 * of even very wide, many-row-group files are a few MiB. */
#define MAX_FOOTER_BYTES (256u << 20)
/* Bytes read from a file's end at once: the footer of most files fits. */
#define TAIL_READ_BYTES (16u << 10)

int ix_pread_exact(int fd, const char *name, void *buf, size_t len, uint64_t offset,
                   pq_error *err)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pq_error_set(err, "%s: read of %zu bytes at offset %llu failed: %s", name,
                                len, (unsigned long long)offset, strerror(errno));
        if (n == 0)
            return pq_error_set(err,
                                "%s: file ends before byte %llu (wanted %zu bytes at offset "
                                "%llu); truncated or changed?",
                                name, (unsigned long long)(offset + len), len,
                                (unsigned long long)offset);
        done += (size_t)n;
    }
    return 0;
}

int ix_source_open(ix_source *s, pq_error *err)
{
    s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0)
        return pq_error_set(err, "%s: cannot open: %s", s->name, strerror(errno));
    if (fstat(s->fd, &s->st) != 0)
        return pq_error_set(err, "%s: cannot stat: %s", s->name, strerror(errno));

    /* One read of the file's end usually holds the whole footer. */
    uint64_t size = (uint64_t)s->st.st_size;
    if (size < 12) /* "PAR1", the footer length, "PAR1" */
        return pq_error_set(err, "%s: not a Parquet file: %llu bytes is too short (at least "
                            "12 needed)", s->name, (unsigned long long)size);
    size_t got = size < TAIL_READ_BYTES ? (size_t)size : TAIL_READ_BYTES;
    uint8_t *buf = malloc(got);
    if (!buf)
        return pq_error_set(err, "%s: out of memory", s->name);
    if (ix_pread_exact(s->fd, s->name, buf, got, size - got, err) < 0) {
        free(buf);
        return -1;
    }
    uint64_t meta_offset;
    uint32_t meta_len;
    if (pq_footer_locate(buf + got - 8, size, &meta_offset, &meta_len, err) < 0) {
        free(buf);
        return pq_error_prefix(err, "%s: ", s->name);
    }
    if (meta_len > MAX_FOOTER_BYTES) {
        free(buf);
        return pq_error_set(err, "%s: footer of %u bytes is larger than the %u allowed", s->name,
                            meta_len, MAX_FOOTER_BYTES);
    }
    const uint8_t *meta = buf + got - 8 - meta_len;
    if ((size_t)meta_len + 8 > got) { /* a large footer: read it whole */
        uint8_t *whole = malloc(meta_len ? meta_len : 1);
        if (!whole || ix_pread_exact(s->fd, s->name, whole, meta_len, meta_offset, err) < 0) {
            free(whole);
            free(buf);
            return whole ? -1 : pq_error_set(err, "%s: out of memory for a %u-byte footer",
                                             s->name, meta_len);
        }
        free(buf);
        buf = whole;
        meta = whole;
    }
    s->footer_crc = (uint32_t)crc32(0, meta, meta_len);
    int rc = pq_file_meta_parse(meta, meta_len, &s->meta, err);
    free(buf);
    if (rc < 0)
        return pq_error_prefix(err, "%s: footer: ", s->name);
    if (pq_file_leaves(&s->meta, &s->leaves, &s->num_leaves, err) < 0)
        return pq_error_prefix(err, "%s: schema: ", s->name);
    return 0;
}

void ix_source_release(ix_source *s, int keep_fd)
{
    pq_file_meta_free(&s->meta);
    pq_leaves_free(s->leaves, s->num_leaves);
    s->leaves = NULL;
    s->num_leaves = 0;
    if (!keep_fd && s->fd >= 0) {
        close(s->fd);
        s->fd = -1;
    }
}
