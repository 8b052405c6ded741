#include "ix_claims.h"

#include <stdio.h>

#include "pq_column.h"

uint64_t ix_page_hold_bytes(const pq_page_header *h, uint32_t packed_width)
{
    if (h->uncompressed_size < 0 || h->num_values < 0)
        return 0; /* the decoder refuses it */
    uint64_t ulen = (uint64_t)h->uncompressed_size, n = (uint64_t)h->num_values;
    if (h->type == PQ_PAGE_DICTIONARY)
        return ulen + n * (1 + sizeof(pq_bytes));
    if (h->type != PQ_PAGE_DATA && h->type != PQ_PAGE_DATA_V2)
        return 0;
    /* value slice, rep and def levels, their uint32 scratch, and up to 16
     * bytes the value decoders materialise per value; BYTE_STREAM_SPLIT and
     * DELTA_BYTE_ARRAY materialise about the page again */
    uint64_t levels = 2 * sizeof(uint16_t), w = packed_width;
    if (w && (h->encoding == PQ_ENC_PLAIN || h->encoding == PQ_ENC_PLAIN_DICTIONARY ||
              h->encoding == PQ_ENC_RLE_DICTIONARY))
        /* packed values (their memory the levels' scratch first) */
        return ulen + n * (levels + (w > sizeof(uint32_t) ? w : sizeof(uint32_t)));
    uint64_t per_entry = sizeof(pq_bytes) + levels + sizeof(uint32_t) + 16;
    uint64_t materialised =
        h->encoding == PQ_ENC_BYTE_STREAM_SPLIT || h->encoding == PQ_ENC_DELTA_BYTE_ARRAY ? ulen
                                                                                          : 0;
    /* other encodings decode to slices, then pack them */
    return ulen + materialised + n * (per_entry + w);
}

uint64_t ix_hold_max(uint64_t mem)
{
    return mem ? (mem + IX_HOLD_SLACK_BYTES) / IX_HOLD_PARTS : UINT64_MAX;
}

uint64_t ix_mem_needed(uint64_t bytes)
{
    uint64_t mib = (uint64_t)1 << 20;
    uint64_t need = bytes > UINT64_MAX / IX_HOLD_PARTS ? UINT64_MAX : bytes * IX_HOLD_PARTS;
    need = need > IX_HOLD_SLACK_BYTES ? need - IX_HOLD_SLACK_BYTES : 0;
    need = (need + mib - 1) / mib * mib;
    return need < mib ? mib : need;
}

/* mem= as the user would write it: "4G", "768M", else bytes. */
static void mem_text(uint64_t mem, char *out, size_t len)
{
    if (mem && mem % ((uint64_t)1 << 30) == 0)
        snprintf(out, len, "%lluG", (unsigned long long)(mem >> 30));
    else if (mem && mem % ((uint64_t)1 << 20) == 0)
        snprintf(out, len, "%lluM", (unsigned long long)(mem >> 20));
    else
        snprintf(out, len, "%llu", (unsigned long long)mem);
}

int ix_hold_check(uint64_t bytes, uint64_t mem, const char *what, pq_error *err)
{
    if (bytes <= ix_hold_max(mem))
        return 0;
    char need[32], have[32];
    mem_text(ix_mem_needed(bytes), need, sizeof need);
    mem_text(mem, have, sizeof have);
    return pq_error_set(err, "%s: holding it takes %llu bytes, more than mem=%s allows (a "
                        "quarter of it, %llu bytes): it needs mem=%s or more",
                        what, (unsigned long long)bytes, have,
                        (unsigned long long)ix_hold_max(mem), need);
}

int ix_page_hold_check(const pq_page_header *h, uint32_t packed_width, uint64_t mem,
                       pq_error *err)
{
    char what[128];
    snprintf(what, sizeof what, "a %s page of %d bytes uncompressed (%d compressed)",
             h->type == PQ_PAGE_DICTIONARY ? "dictionary" : "data", h->uncompressed_size,
             h->compressed_size);
    return ix_hold_check(ix_page_hold_bytes(h, packed_width), mem, what, err);
}

ix_dict_claims ix_dict_claims_of(const pq_page_header *h)
{
    return (ix_dict_claims){ h->uncompressed_size, h->compressed_size, h->num_values };
}

int ix_dict_claims_check(const ix_dict_claims *d, uint64_t mem, pq_error *err)
{
    pq_page_header h = { .type = PQ_PAGE_DICTIONARY, .uncompressed_size = d->uncompressed,
                         .compressed_size = d->compressed, .num_values = d->values };
    return ix_page_hold_check(&h, 0, mem, err);
}

int ix_page_claims_check(const pq_page_header *h, const ix_chunk_bounds *chunk, uint64_t mem,
                         pq_error *err)
{
    /* pq_page_header_parse refused negative sizes already. */
    if ((int64_t)h->uncompressed_size > chunk->uncompressed)
        return pq_error_set(err, "claims %d bytes uncompressed, more than the %lld of its whole "
                            "column chunk", h->uncompressed_size,
                            (long long)chunk->uncompressed);
    if (h->type != PQ_PAGE_DICTIONARY && (int64_t)h->num_values > chunk->values)
        return pq_error_set(err, "claims %d values, more than the %lld of its whole column "
                            "chunk", h->num_values, (long long)chunk->values);
    if (h->type == PQ_PAGE_DICTIONARY)
        return ix_page_hold_check(h, 0, mem, err);
    return 0;
}
