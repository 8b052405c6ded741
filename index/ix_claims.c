#include "ix_claims.h"

int ix_page_claims_check(const pq_page_header *h, const ix_chunk_bounds *chunk,
                         pq_error *err)
{
    /* pq_page_header_parse refused negative sizes already. */
    if ((int64_t)h->uncompressed_size > chunk->uncompressed)
        return pq_error_set(err, "claims %d bytes uncompressed, more than the %lld of its whole "
                            "column chunk", h->uncompressed_size,
                            (long long)chunk->uncompressed);
    /* Uncompressed pages too: theirs is a ratio of 1. */
    if ((uint64_t)h->uncompressed_size >
        (uint64_t)h->compressed_size * IX_MAX_COMPRESSION_RATIO + IX_RATIO_SLACK_BYTES)
        return pq_error_set(err, "claims %d bytes from %d compressed (over %dx): refused as a "
                            "decompression bomb", h->uncompressed_size, h->compressed_size,
                            IX_MAX_COMPRESSION_RATIO);
    if (h->type != PQ_PAGE_DICTIONARY && (int64_t)h->num_values > chunk->values)
        return pq_error_set(err, "claims %d values, more than the %lld of its whole column "
                            "chunk", h->num_values, (long long)chunk->values);
    return 0;
}
