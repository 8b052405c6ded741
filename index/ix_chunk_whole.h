/* ix_chunk_whole.h — one leaf's column chunk of one row group, read and
 * decoded whole: every data page's levels and values, joined into one view
 * whose rows the caller assembles (ix_others.c: the columns held beside the
 * paged one). The chunk's bytes are read in one read through the source's
 * store; every page header is held to the chunk's claims (ix_claims.h)
 * before it is decoded; the pages and the dictionary stay alive as long as
 * the view, since values point into them. Untrusted bytes fail with a
 * message naming the page's offset in the chunk. Not thread-safe per
 * object.
 */
#ifndef IX_CHUNK_WHOLE_H
#define IX_CHUNK_WHOLE_H

#include <stdint.h>

#include "ix_internal.h"

typedef struct ix_chunk_whole {
    pq_page_values *pages;
    uint32_t num_pages;
    pq_dictionary dict;
    int has_dict;
    pq_page_values all; /* a view: its arrays owned here, the values' bytes in pages and dict */
} ix_chunk_whole;

/* Leaf `leaf` of s (parsed footer), row group g, into *cv (emptied first;
 * empty for a row group of no rows). Refuses an encrypted chunk, a type
 * other than the schema's, a chunk of more than max compressed bytes (0:
 * no limit; mounts pass mem=), and a page that mem=max cannot hold whole
 * (ix_page_hold_check). *bytes_read grows by the bytes read. */
int ix_chunk_whole_load(ix_chunk_whole *cv, const ix_source *s, int leaf, int32_t g,
                        uint64_t max, uint64_t *bytes_read, pq_error *err);
void ix_chunk_whole_free(ix_chunk_whole *cv);

#endif
