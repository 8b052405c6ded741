#include "ix_read.h"

#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "ix_checked.h"
#include "ix_internal.h"
#include "ix_record.h"
#include "pq_page.h"

int64_t ix_ctime_ns(const struct timespec *t)
{
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

uint32_t ix_page_crc(const uint8_t *bytes, size_t len)
{
    uint32_t crc = (uint32_t)crc32(0, bytes, (uInt)len);
    return crc ? crc : 1;
}

/* The index is shared as const; what readers learn lives in C11 atomics of
 * objects the index allocated (never const ones), so dropping the qualifier
 * to write them is defined. */
static _Atomic uint32_t *learned_u32(const _Atomic uint32_t *slot)
{
    return (_Atomic uint32_t *)slot;
}

static _Atomic int64_t *learned_i64(const _Atomic int64_t *slot)
{
    return (_Atomic int64_t *)slot;
}

static int fstat_same_file(const ix_index *ix, const ix_file *f, struct stat *st,
                           pq_error *err)
{
    if (ix_store_stat(ix->store, f->fd, st) != 0)
        return pq_error_set(err, "%s: cannot stat the open file: %s", f->name, strerror(errno));
    if ((uint64_t)st->st_size != f->size || st->st_mtim.tv_sec != f->mtime.tv_sec ||
        st->st_mtim.tv_nsec != f->mtime.tv_nsec || (uint64_t)st->st_dev != f->dev ||
        (uint64_t)st->st_ino != f->ino)
        return pq_error_set(err, "%s: changed since mount (size %llu -> %llu%s); its pages are "
                            "not served", f->name, (unsigned long long)f->size,
                            (unsigned long long)st->st_size,
                            (uint64_t)st->st_size == f->size ? ", mtime or inode changed" : "");
    return 0;
}

int ix_check_file(const ix_index *ix, uint32_t file, pq_error *err)
{
    const ix_file *f = &ix->files[file];
    struct stat st;
    if (fstat_same_file(ix, f, &st, err) < 0)
        return -1;
    int64_t ctime = ix_ctime_ns(&st.st_ctim);
    if (ctime == f->ctime_ns)
        return 0;
    _Atomic int64_t *footer_ok = learned_i64(&f->footer_ok_ctime);
    if (atomic_load_explicit(footer_ok, memory_order_relaxed) == ctime)
        return 1;
    /* The ctime moved (chmod, chown, a link, or a write): one footer read
     * tells a rewrite from a metadata change, once per new ctime. */
    if (!ix_footer_is(ix->store, f->fd, f->name, f->size, f->footer_len, f->footer_crc))
        return pq_error_set(err, "%s: changed since mount (its footer is not the one indexed); "
                            "its pages are not served", f->name);
    struct stat after;
    if (fstat_same_file(ix, f, &after, err) < 0)
        return -1;
    /* Only a footer read wholly at this ctime vouches for it. */
    if (ix_ctime_ns(&after.st_ctim) == ctime)
        atomic_store_explicit(footer_ok, ctime, memory_order_relaxed);
    return 1;
}

int ix_read_checked(const ix_index *ix, uint32_t file, uint64_t offset, void *buf,
                    size_t length, uint64_t *bytes_read, int *moved, pq_error *err)
{
    const ix_file *f = &ix->files[file];
    int before = ix_check_file(ix, file, err);
    if (before < 0)
        return -1;
    if (ix_store_read(ix->store, f->fd, f->name, buf, length, offset, err) < 0)
        return -1;
    *bytes_read += length;
    int after = ix_check_file(ix, file, err);
    if (after < 0)
        return -1;
    *moved = before || after;
    return 0;
}

int ix_crc_needed(int moved, const _Atomic uint32_t *slot)
{
    uint32_t known = atomic_load_explicit(slot, memory_order_relaxed);
    return moved ? known != 0 : known == 0;
}

int ix_crc_settle(const ix_file *f, int moved, const _Atomic uint32_t *slot, uint32_t now,
                  const char *what, uint64_t offset, pq_error *err)
{
    _Atomic uint32_t *crc = learned_u32(slot);
    uint32_t known = atomic_load_explicit(crc, memory_order_relaxed);
    if (!moved) {
        uint32_t unknown = 0;
        if (!known) /* two readers learning at once learn the same bytes */
            atomic_compare_exchange_strong_explicit(crc, &unknown, now, memory_order_relaxed,
                                                    memory_order_relaxed);
        return 0;
    }
    if (!known || now == known)
        return 0; /* unknown: the footer check is all there is (ix_index.h) */
    return pq_error_set(err, "%s: changed since mount: the %s at offset %llu no longer has "
                        "the bytes indexed (CRC-32 %08x, now %08x); not served", f->name, what,
                        (unsigned long long)offset, known, now);
}

/* The bytes of one page (or dictionary page) just read against its CRC
 * slot, computing their CRC only when it is learned or compared. */
static int check_crc(const ix_file *f, int moved, const _Atomic uint32_t *slot,
                     const uint8_t *bytes, uint32_t length, const char *what, uint64_t offset,
                     pq_error *err)
{
    if (!ix_crc_needed(moved, slot))
        return 0;
    return ix_crc_settle(f, moved, slot, ix_page_crc(bytes, length), what, offset, err);
}

int ix_read_range(const ix_index *ix, uint32_t file, uint64_t offset, void *buf, size_t length,
                  uint64_t first_page, uint32_t num_pages, uint64_t *bytes_read, pq_error *err)
{
    assert(num_pages == 0 || (first_page + num_pages <= ix->num_pages &&
                              ix->chunks[ix_locate(ix, first_page)].file == file &&
                              ix->chunks[ix_locate(ix, first_page + num_pages - 1)].file == file));
    int moved;
    if (ix_read_checked(ix, file, offset, buf, length, bytes_read, &moved, err) < 0)
        return -1;
    for (uint64_t q = first_page; q < first_page + num_pages; q++) {
        const ix_page *p = &ix->pages[q];
        assert(p->offset >= offset && p->offset + p->length <= offset + length);
        if (check_crc(&ix->files[file], moved, &p->crc, (const uint8_t *)buf + (p->offset - offset),
                      p->length, "data page", p->offset, err) < 0)
            return -1;
    }
    return 0;
}

/* Parse the header of the page of chunk c at the start of raw[0..length),
 * hold its claims to the chunk's (ix_claims.h: the mount never saw the
 * headers of pages sized from the page index or the persistent index), and
 * check that its body lies within (it fills it exactly unless `partial`: a
 * row continued on the next pages), and the CRC, when verified. */
static int parse_page(const ix_index *ix, const ix_chunk *c, const uint8_t *raw,
                      uint64_t length, int partial, pq_page_header *h, pq_error *err)
{
    if (pq_page_header_parse(raw, length, h, err) < 0 ||
        ix_page_claims_check(h, &c->bounds, ix->mem, err) < 0)
        return -1;
    uint64_t total = h->header_len + (uint64_t)h->compressed_size;
    if (partial ? total > length : total != length)
        return pq_error_set(err, "header and body take %llu bytes, the index says %llu (file "
                            "changed?)", (unsigned long long)total, (unsigned long long)length);
    if (ix->verify_crc &&
        pq_page_check_crc(h, raw + h->header_len, (size_t)h->compressed_size, err) < 0)
        return -1;
    return 0;
}

int ix_read_dictionary(const ix_index *ix, uint32_t chunk, pq_dictionary *out,
                       uint64_t *bytes_read, pq_error *err)
{
    return ix_read_dictionary_sized(ix, chunk, NULL, NULL, out, bytes_read, err);
}

int ix_read_dictionary_sized(const ix_index *ix, uint32_t chunk, ix_dict_sized_fn sized,
                             void *ctx, pq_dictionary *out, uint64_t *bytes_read,
                             pq_error *err)
{
    const ix_chunk *c = &ix->chunks[chunk];
    uint8_t *raw = malloc(c->dict_length ? c->dict_length : 1);
    pq_page_header h;
    int rc = raw ? 0 : pq_error_set(err, "out of memory for a %u-byte page", c->dict_length);
    int moved;
    if (rc == 0)
        rc = ix_read_checked(ix, c->file, (uint64_t)c->dict_offset, raw, c->dict_length,
                             bytes_read, &moved, err);
    if (rc == 0)
        rc = check_crc(&ix->files[c->file], moved, &c->dict_crc, raw, c->dict_length,
                       "dictionary page", (uint64_t)c->dict_offset, err);
    if (rc == 0)
        rc = parse_page(ix, c, raw, c->dict_length, 0, &h, err);
    if (rc == 0 && sized)
        sized(ctx, &h);
    if (rc == 0)
        rc = pq_dictionary_decode(&c->desc, &h, raw + h.header_len, (size_t)h.compressed_size,
                                  out, err);
    free(raw);
    if (rc < 0)
        return pq_error_prefix(err, "%s: dictionary page at offset %lld: ",
                               ix->files[c->file].name, (long long)c->dict_offset);
    return 0;
}

/* Decode the data page at the start of raw[0..length), fetching the chunk's
 * dictionary through `dicts` the first time a page needs it. *used is set
 * to the page's header and body bytes. */
static int decode_one(const ix_index *ix, uint32_t chunk, const uint8_t *raw, uint64_t length,
                      int partial, const ix_dict_source *dicts, const pq_dictionary **dict,
                      void **dict_handle, pq_page_values *out, uint64_t *used, pq_error *err)
{
    const ix_chunk *c = &ix->chunks[chunk];
    pq_page_header h;
    if (parse_page(ix, c, raw, length, partial, &h, err) < 0)
        return -1;
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
        return pq_error_set(err, "not a data page (page type %d; file changed?)", h.type);
    if (ix_page_hold_check(&h, pq_packed_width(&c->desc), ix->mem, err) < 0) /* decoded whole: ix_claims.h */
        return -1;
    if (ix_uses_dictionary(&h) && !*dict) {
        if (c->dict_offset < 0)
            return pq_error_set(err, "dictionary-encoded, but the chunk has no dictionary page");
        if (dicts->get(dicts->ctx, chunk, dict, dict_handle, err) < 0)
            return -1;
    }
    *used = h.header_len + (uint64_t)h.compressed_size;
    return pq_page_decode(&c->desc, &h, raw + h.header_len, (size_t)h.compressed_size,
                          ix_uses_dictionary(&h) ? *dict : NULL, out, err);
}

/* An index entry of a repeated column holds the rows that start in its
 * first page; its last row may go on in the pages after it, up to the end
 * of its byte range (ix_chunk_scan.c). Join them into one set of values
 * that starts and ends at row boundaries. */
static int join_rows(const ix_index *ix, uint32_t chunk, const uint8_t *raw, uint64_t length,
                     uint64_t first_len, const ix_dict_source *dicts, const pq_dictionary **dict,
                     void **dict_handle, pq_page_values *out, pq_error *err)
{
    int16_t max_def = ix->chunks[chunk].desc.max_def;
    uint32_t start = ix_row_start(out, 0);
    if (start == out->num_levels)
        return pq_error_set(err, "no row starts in the page (file changed?)");
    pq_page_values_drop_front(out, start, max_def);
    for (uint64_t at = first_len; at < length;) {
        pq_page_values next;
        uint64_t used;
        if (decode_one(ix, chunk, raw + at, length - at, 1, dicts, dict, dict_handle, &next,
                       &used, err) < 0)
            return pq_error_prefix(err, "continued at offset +%llu: ", (unsigned long long)at);
        at += used;
        /* Only the range's last page may start a row (the chunk's last
         * page need not: its last row ends with the chunk). */
        uint32_t end = ix_row_start(&next, 0);
        int rc = end < next.num_levels && at < length
                     ? pq_error_set(err, "a row starts before the end of the range the index "
                                    "gives (file changed?)")
                     : pq_page_values_append(out, &next, 0, end, max_def, err);
        pq_page_values_free(&next);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int ix_decode_page(const ix_index *ix, uint64_t page, const uint8_t *raw,
                   const ix_dict_source *dicts, pq_page_values *out, void **dict_handle,
                   pq_error *err)
{
    *dict_handle = NULL;
    const ix_page *p = &ix->pages[page];
    uint32_t chunk = ix_locate(ix, page);
    const ix_chunk *c = &ix->chunks[chunk];
    int repeated = c->desc.max_rep > 0;
    const pq_dictionary *dict = NULL;
    uint64_t used;
    int rc = decode_one(ix, chunk, raw, p->length, repeated, dicts, &dict, dict_handle, out,
                        &used, err);
    if (rc == 0 && repeated) {
        rc = join_rows(ix, chunk, raw, p->length, used, dicts, &dict, dict_handle, out, err);
        if (rc < 0)
            pq_page_values_free(out);
    }
    if (rc < 0)
        return pq_error_prefix(err, "%s: data page at offset %llu: ", ix->files[c->file].name,
                               (unsigned long long)p->offset);
    return 0;
}

int ix_read_page(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                 pq_page_values *out, void **dict_handle, uint64_t *bytes_read, pq_error *err)
{
    *dict_handle = NULL;
    const ix_page *p = &ix->pages[page];
    uint32_t file = ix->chunks[ix_locate(ix, page)].file;
    uint8_t *raw = malloc(p->length ? p->length : 1);
    if (!raw)
        return pq_error_set(err, "%s: out of memory for a %u-byte page", ix->files[file].name,
                            p->length);
    int rc = ix_read_range(ix, file, p->offset, raw, p->length, page, 1, bytes_read, err);
    if (rc < 0)
        pq_error_prefix(err, "%s: data page at offset %llu: ", ix->files[file].name,
                        (unsigned long long)p->offset);
    else
        rc = ix_decode_page(ix, page, raw, dicts, out, dict_handle, err);
    free(raw);
    return rc;
}
