#include "ix_read.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "ix_internal.h"
#include "pq_page.h"

int ix_check_file(const ix_index *ix, uint32_t file, pq_error *err)
{
    const ix_file *f = &ix->files[file];
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return pq_error_set(err, "%s: cannot stat the open file", f->name);
    if ((uint64_t)st.st_size != f->size || st.st_mtim.tv_sec != f->mtime.tv_sec ||
        st.st_mtim.tv_nsec != f->mtime.tv_nsec || st.st_ctim.tv_sec != f->ctime.tv_sec ||
        st.st_ctim.tv_nsec != f->ctime.tv_nsec)
        return pq_error_set(err, "%s: changed since mount (size %llu -> %llu); its pages are "
                            "not served", f->name, (unsigned long long)f->size,
                            (unsigned long long)st.st_size);
    return 0;
}

/* Read the page at [offset, offset+length) of the chunk's file, parse its
 * header and hand header and body to `decode`. */
static int load(const ix_index *ix, uint32_t chunk, uint64_t offset, uint32_t length,
                uint64_t *bytes_read, pq_page_header *h, uint8_t **raw, pq_error *err)
{
    const ix_file *f = &ix->files[ix->chunks[chunk].file];
    if (ix_check_file(ix, ix->chunks[chunk].file, err) < 0)
        return -1;
    *raw = malloc(length ? length : 1);
    if (!*raw)
        return pq_error_set(err, "%s: out of memory for a %u-byte page", f->name, length);
    if (ix_pread_exact(f->fd, f->name, *raw, length, offset, err) < 0)
        goto fail;
    *bytes_read += length;
    if (pq_page_header_parse(*raw, length, h, err) < 0)
        goto fail;
    if (h->header_len + (uint64_t)h->compressed_size != length) {
        pq_error_set(err, "header and body take %llu bytes, the index says %u (file changed?)",
                     (unsigned long long)(h->header_len + (uint64_t)h->compressed_size), length);
        goto fail;
    }
    if (ix->verify_crc &&
        pq_page_check_crc(h, *raw + h->header_len, (size_t)h->compressed_size, err) < 0)
        goto fail;
    return 0;
fail:
    free(*raw);
    *raw = NULL;
    return pq_error_prefix(err, "%s: page at offset %llu: ", f->name,
                           (unsigned long long)offset);
}

int ix_read_dictionary(const ix_index *ix, uint32_t chunk, pq_dictionary *out,
                       uint64_t *bytes_read, pq_error *err)
{
    const ix_chunk *c = &ix->chunks[chunk];
    pq_page_header h;
    uint8_t *raw;
    if (load(ix, chunk, (uint64_t)c->dict_offset, c->dict_length, bytes_read, &h, &raw, err) < 0)
        return -1;
    int rc = pq_dictionary_decode(&c->desc, &h, raw + h.header_len, (size_t)h.compressed_size,
                                  out, err);
    free(raw);
    if (rc < 0)
        return pq_error_prefix(err, "%s: dictionary page at offset %lld: ",
                               ix->files[c->file].name, (long long)c->dict_offset);
    return 0;
}

static int uses_dictionary(const pq_page_header *h)
{
    return h->encoding == PQ_ENC_PLAIN_DICTIONARY || h->encoding == PQ_ENC_RLE_DICTIONARY;
}

int ix_read_page(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                 pq_page_values *out, void **dict_handle, uint64_t *bytes_read, pq_error *err)
{
    *dict_handle = NULL;
    const ix_page *p = &ix->pages[page];
    uint32_t chunk = ix_locate(ix, page);
    const ix_chunk *c = &ix->chunks[chunk];
    pq_page_header h;
    uint8_t *raw;
    if (load(ix, chunk, p->offset, p->length, bytes_read, &h, &raw, err) < 0)
        return -1;
    const pq_dictionary *dict = NULL;
    int rc = 0;
    if (uses_dictionary(&h)) {
        if (c->dict_offset < 0)
            rc = pq_error_set(err, "dictionary-encoded, but the chunk has no dictionary page");
        else
            rc = dicts->get(dicts->ctx, chunk, &dict, dict_handle, err);
    }
    if (rc == 0)
        rc = pq_page_decode(&c->desc, &h, raw + h.header_len, (size_t)h.compressed_size, dict,
                            out, err);
    free(raw);
    if (rc < 0)
        return pq_error_prefix(err, "%s: data page at offset %llu: ", ix->files[c->file].name,
                               (unsigned long long)p->offset);
    return 0;
}
