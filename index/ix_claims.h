/* ix_claims.h — what a page header may claim, checked before anything is
 * allocated for the page.
 *
 * A page header is untrusted, and its uncompressed size and value count
 * decide what decoding the page allocates. Two kinds of rule:
 *
 * Consistency with the footer (ix_chunk_bounds), for every header:
 *   - uncompressed size <= the chunk's total_uncompressed_size;
 *   - a data page's value count <= the chunk's num_values.
 *
 * Memory, for a page held whole: a dictionary page always; a data page when
 * it is decoded whole rather than streamed (pq_stream.h streams a page in a
 * few windows whatever it claims). What holding it takes follows from the
 * header alone (ix_page_hold_bytes); the read path charges it to the
 * mount's accountant before anything is allocated, and the decompressors
 * never write past the declared size (pq_codec.h). So a page that
 * compresses 640,000:1 (parquet-testing's large_string_map.brotli.parquet:
 * a 1 GiB dictionary page from 1.6 KB of brotli) costs exactly the memory
 * it declares, like any other page of that size; a compression ratio says
 * nothing about memory. What matters is whether the mount has that memory:
 * ix_page_hold_bytes(h) <= ix_hold_max(mem), else the page is refused with
 * a message that names the mem= it would need (ix_mem_needed). The same
 * limit holds for one framed record (ix_chunk_scan.c): a record is built
 * into a segment whole.
 *
 * Why a quarter of mem=. For a page of one huge value (that file: one 1 GiB
 * string per row), the read path may hold at once the decoded page (or
 * dictionary), the value copied out of it for the unit being framed, the
 * segment being built and the segment being read: four times the page.
 * IX_HOLD_SLACK_BYTES is invariant 4's additive slack (16 MiB): it lets a
 * small mount (mem=1M) hold the 1 MiB pages and dictionaries common writers
 * make. That file needs mem=4G: measured at mem=4G, 3.0 GiB of RSS (the
 * bound is 4.4 GiB).
 *
 * One rule for the whole index: the mount's page pass applies it to every
 * header it walks and every page it decodes whole (ix_chunk_scan.c), the
 * loads of other columns to their pages and rows (ix_chunk_rows.c), and the read
 * path to every header it parses (ix_read.c, ix_stream.c), which covers the
 * pages the mount sized without seeing their headers (from the page index,
 * or from the persistent index: a data page that a mount with less mem=
 * than the `index` that built it cannot hold fails there, at read, with EIO
 * and that message logged). A dictionary page whose header the page pass
 * read is kept with its claims (ix_dict_claims), so that a mount from the
 * persistent index holds it to its own mem= at mount, as the page pass
 * would (ix_build.c).
 * The decoder's own ceiling (PQ_MAX_PAGE_BYTES, pq_column.h) is the
 * format's. CPU is not bounded by mem=: a streamed page is decompressed
 * once per read of it, at most its declared size (< 2 GiB). Pure and
 * thread-safe.
 */
#ifndef IX_CLAIMS_H
#define IX_CLAIMS_H

#include <stdint.h>

#include "pq_error.h"
#include "pq_page.h"

/* What the footer declares of a column chunk, as its pages are held to it
 * (kept per chunk in the index and in the persistent index). */
typedef struct ix_chunk_bounds {
    int64_t uncompressed; /* ColumnMetaData.total_uncompressed_size (headers included) */
    int64_t values;       /* ColumnMetaData.num_values: level entries of all its data pages */
} ix_chunk_bounds;

#define IX_HOLD_PARTS 4
#define IX_HOLD_SLACK_BYTES ((uint64_t)16 << 20)

/* Bytes holding the page whole takes, from its header and the column's
 * pq_packed_width (0: slices), and what the read path charges before
 * decoding it (fs/yfs_dicts.c and yfs_decode_bound_page call this): a
 * dictionary, the decompressed page, a byte and a slice per entry; a data
 * page, the decompressed page and per entry two uint16 levels and: packed
 * PLAIN or dictionary values, the value (at least 4 bytes, the levels'
 * uint32 scratch); otherwise a value slice, the scratch, up to 16 bytes the
 * value decoders materialise and the packed copy, and the page again for
 * BYTE_STREAM_SPLIT and DELTA_BYTE_ARRAY. 0 for other page types. */
uint64_t ix_page_hold_bytes(const pq_page_header *h, uint32_t packed_width);

/* The most one page held whole, or one record, may take at a mount of
 * mem= bytes: (mem + IX_HOLD_SLACK_BYTES) / IX_HOLD_PARTS. mem 0: no limit
 * (callers outside a mount: tests, tools). */
uint64_t ix_hold_max(uint64_t mem);

/* The least mem=, in whole MiB, at which `bytes` may be held. */
uint64_t ix_mem_needed(uint64_t bytes);

/* Refuse holding `bytes` (what: "a dictionary page of ...") at mem=:
 * 0 if it fits ix_hold_max(mem), else -1 with a message naming the mem=
 * needed and the mount's. */
int ix_hold_check(uint64_t bytes, uint64_t mem, const char *what, pq_error *err);

/* 0 if the header's claims fit the chunk and, for a dictionary page, the
 * mount's memory (mem: its mem=, 0 for none), else -1 with a message that
 * says which claim and what it exceeds (the caller adds file and offset).
 * A data page's memory is checked where it is decoded whole:
 * ix_page_hold_check. */
int ix_page_claims_check(const pq_page_header *h, const ix_chunk_bounds *chunk, uint64_t mem,
                         pq_error *err);

/* The memory rule for a page about to be decoded whole (any type), of a
 * column of pq_packed_width packed_width. */
int ix_page_hold_check(const pq_page_header *h, uint32_t packed_width, uint64_t mem,
                       pq_error *err);

/* What a column chunk's dictionary page header claims, as the index keeps
 * it (ix_chunk, the persistent index): all 0 when not known (no dictionary,
 * or one the page pass did not parse: a chunk sized from its page index),
 * which holds nothing. */
typedef struct ix_dict_claims {
    int32_t uncompressed; /* the header's uncompressed_size */
    int32_t compressed;   /* its compressed_size */
    int32_t values;       /* its num_values */
} ix_dict_claims;

/* The claims of the dictionary page header h. */
ix_dict_claims ix_dict_claims_of(const pq_page_header *h);
/* ix_page_hold_check of the dictionary page these claims are of: the same
 * rule and message as for its header. */
int ix_dict_claims_check(const ix_dict_claims *d, uint64_t mem, pq_error *err);

#endif
