/* pq_column.h — decoding the pages of one column chunk into values.
 *
 * The caller (index/ or fs/) reads a page's bytes, parses its header with
 * pq_page_header_parse and hands the body here; this module decompresses,
 * splits levels from values, and decodes the values. It decides nothing about
 * I/O or caching.
 *
 * Every value, whatever its physical type, comes out as a byte slice
 * (pq_bytes): BYTE_ARRAY values as their bytes, fixed-width types as their
 * little-endian PLAIN bytes (INT32: 4, INT64: 8, INT96: 12, FLOAT: 4,
 * DOUBLE: 8, FIXED_LEN_BYTE_ARRAY: type_length, BOOLEAN: one byte 0 or 1).
 * A page of BYTE_ARRAY or BOOLEAN values holds one slice per value, pointing
 * into storage owned by the pq_page_values or by the pq_dictionary the page
 * was decoded against; they stay valid until both are freed. A page of
 * another fixed-width type holds its values packed back to back in memory it
 * owns (pq_packed_width): a slice per value took 16 bytes beside every
 * 8-byte token, and the copy out of the dictionary 8 more. Read values with
 * pq_page_value or a pq_value_list, never through the layout.
 *
 * Value encodings: PLAIN, PLAIN_DICTIONARY / RLE_DICTIONARY (indices checked
 * against the dictionary size), DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
 * DELTA_BINARY_PACKED (INT32/INT64), BYTE_STREAM_SPLIT, RLE (BOOLEAN).
 * Levels: RLE hybrid (v1: 4-byte length prefix; v2: lengths in the header,
 * never compressed), and the deprecated BIT_PACKED for v1 pages.
 * Unsupported encodings or types fail with a message that names them.
 *
 * Limits: a page may declare at most PQ_MAX_PAGE_VALUES level entries and
 * at most PQ_MAX_PAGE_BYTES uncompressed bytes (the format's own limit), and
 * the decompressors never write past the declared size. These are absolute
 * ceilings, the same for every file, and decode/ decides no policy: the
 * limits that matter for one page are its column chunk's and the memory of
 * the mount reading it: index/ holds every header, at mount and at read, to
 * the chunk's declared uncompressed size and value count, and a page it
 * decodes whole to the mount's mem= (ix_claims.h) before it calls this
 * module. Callers without such a limit (the fuzz targets) set their own. Thread-safe; a pq_dictionary
 * may be shared read-only by several threads decoding pages concurrently.
 */
#ifndef PQ_COLUMN_H
#define PQ_COLUMN_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"
#include "pq_page.h"

#define PQ_MAX_PAGE_VALUES (1u << 26)
/* The format's own limit (PageHeader.uncompressed_page_size is an i32):
 * parquet-testing's large_string_map.brotli.parquet has a dictionary page
 * of 2^30 + 4 bytes. Offsets inside a page stay below 2^31, so int32 and
 * uint32 arithmetic on them cannot wrap. */
#define PQ_MAX_PAGE_BYTES ((size_t)INT32_MAX)
/* DELTA_BYTE_ARRAY values repeat prefixes of the previous value, so a small
 * page can describe huge values (each value the previous one plus a byte):
 * the values of one page may take at most this many bytes once expanded. */
#define PQ_MAX_EXPANDED_PAGE_BYTES ((uint64_t)256 << 20)

typedef struct pq_bytes {
    const uint8_t *ptr;
    uint32_t len;
} pq_bytes;

/* Values in order: slices, or fixed-width values packed back to back. A
 * view: it owns nothing and lives as long as what it points into. */
typedef struct pq_value_list {
    const pq_bytes *slices; /* NULL: packed */
    const uint8_t *packed;  /* value i is packed[i * width .. (i + 1) * width) */
    uint32_t width;
} pq_value_list;

static inline pq_bytes pq_value_at(const pq_value_list *l, uint32_t i)
{
    if (l->slices)
        return l->slices[i];
    return (pq_bytes){ l->packed + (size_t)i * l->width, l->width };
}

/* A list of slices (one or more). */
static inline pq_value_list pq_value_list_of(const pq_bytes *slices)
{
    return (pq_value_list){ slices, NULL, 0 };
}

/* The list from its value `first` on. */
static inline pq_value_list pq_value_list_from(const pq_value_list *l, uint32_t first)
{
    if (l->slices)
        return (pq_value_list){ l->slices + first, NULL, 0 };
    return (pq_value_list){ NULL, l->packed + (size_t)first * l->width, l->width };
}

/* What the decoder needs to know about the column. */
typedef struct pq_column_desc {
    int type;            /* physical type (PQ_BYTE_ARRAY, ...) */
    int32_t type_length; /* FIXED_LEN_BYTE_ARRAY width */
    int16_t max_def;
    int16_t max_rep;
    int codec;           /* PQ_UNCOMPRESSED, PQ_SNAPPY, ... */
} pq_column_desc;

typedef struct pq_dictionary {
    uint32_t count;
    pq_bytes *values;  /* count entries */
    uint8_t *storage;  /* owned: decompressed page (and decoded values) */
    size_t storage_len;
} pq_dictionary;

/* Decode a dictionary page (h->type == PQ_PAGE_DICTIONARY, PLAIN or
 * PLAIN_DICTIONARY encoded). body is the page body: h->compressed_size bytes. */
int pq_dictionary_decode(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                         size_t body_len, pq_dictionary *out, pq_error *err);
void pq_dictionary_free(pq_dictionary *d);
/* Heap bytes held by the dictionary (for memory budgets). */
size_t pq_dictionary_bytes(const pq_dictionary *d);

/* The width in bytes of the column's values when pages hold them packed
 * (every fixed-width type but BOOLEAN), else 0 (slices). */
uint32_t pq_packed_width(const pq_column_desc *col);

typedef struct pq_page_values {
    uint32_t num_levels;  /* level entries in the page (= rows for a flat column) */
    uint32_t num_values;  /* non-null values (entries whose def level == max_def) */
    uint16_t *def_levels; /* num_levels entries, NULL when max_def == 0 */
    uint16_t *rep_levels; /* num_levels entries, NULL when max_rep == 0 */
    /* The num_values values in page order: slices (width 0), or, when width
     * > 0, packed (NULL slices; packed points into storage or extra). */
    pq_bytes *values;
    const uint8_t *packed;
    uint32_t width;
    uint8_t *storage;     /* owned: decompressed body */
    size_t storage_len;
    uint8_t *extra;       /* owned: values materialised (DELTA_BYTE_ARRAY, packed, etc.) */
    size_t extra_len;
} pq_page_values;

static inline pq_value_list pq_page_value_list(const pq_page_values *v)
{
    return (pq_value_list){ v->width ? NULL : v->values, v->packed, v->width };
}

static inline pq_bytes pq_page_value(const pq_page_values *v, uint32_t i)
{
    pq_value_list l = pq_page_value_list(v);
    return pq_value_at(&l, i);
}

/* Decode a data page (v1 or v2). dict is required when the page is
 * dictionary-encoded, else may be NULL. On failure *out is left empty. */
int pq_page_decode(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                   size_t body_len, const pq_dictionary *dict, pq_page_values *out,
                   pq_error *err);
void pq_page_values_free(pq_page_values *v);
/* Copy the bytes of every value into memory the page values own (a new
 * `extra`), so that values decoded from a dictionary outlive it: the caller
 * may then release the dictionary at once instead of holding it as long as
 * the values. Packed values are the page's own already. Fails only when out
 * of memory (v is then unchanged). */
int pq_page_values_own(pq_page_values *v, pq_error *err);
/* Heap bytes held by the page values (for memory budgets). */
size_t pq_page_values_bytes(const pq_page_values *v);

/* Rows that continue on the next page. A data page (v1 without a page
 * index) may begin with the last entries of a row that started on the page
 * before (repetition level > 0) and end with a row that goes on in the next.
 * These two functions re-cut decoded pages along rows: */
/* An entry defines a value when its definition level is max_def (every
 * entry does when the column has no def levels). */
/* Drop the first `entries` level entries (entries <= num_levels) and the
 * values they define, in place. */
void pq_page_values_drop_front(pq_page_values *v, uint32_t entries, int16_t max_def);
/* Append level entries [begin, end) of src (end <= src->num_levels) and the
 * values they define to dst, copying the values' bytes into memory dst owns,
 * so src may be freed at once. dst and src must have the same level arrays
 * (both or neither def and rep). dst stays packed when both are packed (or
 * dst is empty and src packed), else holds slices. Fails only when out of
 * memory or when the result would exceed PQ_MAX_PAGE_VALUES entries (dst is
 * then unchanged). */
int pq_page_values_append(pq_page_values *dst, const pq_page_values *src, uint32_t begin,
                          uint32_t end, int16_t max_def, pq_error *err);

#endif
