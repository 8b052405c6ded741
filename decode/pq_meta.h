/* pq_meta.h — Parquet file metadata: the footer's FileMetaData, the schema
 * flattened to leaf columns, and the OffsetIndex.
 *
 * Only the fields youmufs uses are kept; everything else is skipped. All
 * strings and arrays in the structures are owned by the structure and freed
 * by the matching _free function. Parsing is pure (no I/O): the caller hands
 * in the bytes. Counts and offsets are validated for internal consistency
 * (list counts against bytes left, schema tree shape, non-negative sizes);
 * offsets that point into the file are NOT checked against the file size
 * here — the index layer does that because only it knows the size.
 * Thread-safe: no shared state.
 */
#ifndef PQ_META_H
#define PQ_META_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

/* Physical types (parquet.thrift Type). */
enum {
    PQ_BOOLEAN = 0,
    PQ_INT32 = 1,
    PQ_INT64 = 2,
    PQ_INT96 = 3,
    PQ_FLOAT = 4,
    PQ_DOUBLE = 5,
    PQ_BYTE_ARRAY = 6,
    PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

/* Compression codecs (parquet.thrift CompressionCodec). */
enum {
    PQ_UNCOMPRESSED = 0,
    PQ_SNAPPY = 1,
    PQ_GZIP = 2,
    PQ_LZO = 3,
    PQ_BROTLI = 4,
    PQ_LZ4 = 5, /* Hadoop framing, deprecated; see pq_codec.h */
    PQ_ZSTD = 6,
    PQ_LZ4_RAW = 7,
};

/* Field repetition (parquet.thrift FieldRepetitionType). */
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/* What a leaf's values mean, from LogicalType or, for older writers, from
 * ConvertedType (mapped to the equivalent LogicalType). */
enum {
    PQ_LOGICAL_NONE = 0, /* plain physical type (BYTE_ARRAY = binary) */
    PQ_LOGICAL_STRING,   /* STRING / UTF8, ENUM, JSON: UTF-8 text */
    PQ_LOGICAL_INTEGER,  /* INT(bit_width, is_signed) / INT_n, UINT_n */
    PQ_LOGICAL_DECIMAL,  /* DECIMAL(precision, scale) */
    PQ_LOGICAL_DATE,     /* days since 1970-01-01 */
    PQ_LOGICAL_TIME,     /* since midnight, in `unit` */
    PQ_LOGICAL_TIMESTAMP,/* since 1970-01-01T00:00:00, in `unit` */
    PQ_LOGICAL_UUID,
    PQ_LOGICAL_FLOAT16,
    PQ_LOGICAL_LIST,     /* group annotations */
    PQ_LOGICAL_MAP,
    PQ_LOGICAL_OTHER,    /* anything else (BSON, INTERVAL, ...) */
};

enum { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };

typedef struct pq_logical {
    int kind;           /* PQ_LOGICAL_* */
    int32_t scale;      /* DECIMAL */
    int32_t precision;  /* DECIMAL */
    int bit_width;      /* INTEGER: 8, 16, 32 or 64 */
    int is_signed;      /* INTEGER */
    int unit;           /* TIME, TIMESTAMP: PQ_UNIT_* */
    int utc;            /* TIME, TIMESTAMP: isAdjustedToUTC */
} pq_logical;

typedef struct pq_schema_element {
    char *name;          /* NUL-terminated copy */
    int type;            /* physical type, or -1 for a group node */
    int32_t type_length; /* FIXED_LEN_BYTE_ARRAY width, else 0 */
    int repetition;      /* PQ_REQUIRED/OPTIONAL/REPEATED; root: PQ_REQUIRED */
    int32_t num_children;
    pq_logical logical;
} pq_schema_element;

typedef struct pq_column_meta {
    int type;                  /* physical type as stated in the chunk */
    int codec;                 /* PQ_UNCOMPRESSED ... */
    uint32_t encodings;        /* bit (1 << e) set for each Encoding e the chunk lists */
    int64_t null_count;        /* from the chunk's Statistics, -1 when not stated */
    int64_t num_values;        /* level entries in the chunk (incl. nulls) */
    int64_t total_compressed_size;
    int64_t total_uncompressed_size;
    int64_t data_page_offset;
    int64_t dictionary_page_offset; /* -1 when absent */
    int64_t offset_index_offset;    /* -1 when absent */
    int32_t offset_index_length;    /* 0 when absent */
    int64_t column_index_offset;    /* -1 when absent */
    int32_t column_index_length;    /* 0 when absent */
    int encrypted;                  /* chunk has crypto_metadata */
} pq_column_meta;

typedef struct pq_row_group {
    int64_t num_rows;
    int32_t num_columns;
    pq_column_meta *columns; /* num_columns entries, in leaf order */
} pq_row_group;

typedef struct pq_file_meta {
    int32_t version;
    int64_t num_rows;
    int32_t num_schema;
    pq_schema_element *schema; /* depth-first, schema[0] is the root */
    int32_t num_row_groups;
    pq_row_group *row_groups;
    char *created_by; /* NUL-terminated copy, or NULL */
} pq_file_meta;

/* A leaf column: a path from the root to a primitive node. */
typedef struct pq_leaf {
    char *path;        /* dotted path without the root, e.g. "input_ids.list.element" */
    int schema_index;  /* index of the leaf in pq_file_meta.schema */
    int type;          /* physical type */
    int32_t type_length;
    pq_logical logical;
    int16_t max_def;   /* maximum definition level */
    int16_t max_rep;   /* maximum repetition level */
    /* max_rep > 0: definition level of the innermost repeated ancestor (or
     * the leaf itself). An entry with def >= rep_def is an element of the
     * list (a value if def == max_def, else a null element); def ==
     * rep_def - 1 is an empty list; lower is a null list. */
    int16_t rep_def;
    int in_map;        /* under a MAP-annotated group: a key or value of a map */
} pq_leaf;

/* The file tail: the last 8 bytes are a 4-byte little-endian footer length
 * and the magic "PAR1". Given those 8 bytes and the file size, computes where
 * the FileMetaData starts and how long it is. Fails with a clear message on a
 * wrong magic ("PARE" means an encrypted footer: refused as such), a length
 * larger than the file, or a file shorter than 12 bytes. */
int pq_footer_locate(const uint8_t tail[8], uint64_t file_size, uint64_t *meta_offset,
                     uint32_t *meta_len, pq_error *err);

/* Parse FileMetaData from buf[0..len). On failure *out is left empty (no
 * need to free). Validates: schema tree consistent (children counts fit),
 * every row group has exactly as many column chunks as there are leaves. */
int pq_file_meta_parse(const uint8_t *buf, size_t len, pq_file_meta *out, pq_error *err);
void pq_file_meta_free(pq_file_meta *m);

/* Flatten the schema tree into its leaves, in column-chunk order. The
 * returned array (and each path) is owned by the caller: pq_leaves_free.
 * Every leaf copies its ancestors' names into its path, so a hostile schema
 * (long group names over many leaves) is refused once all paths together
 * exceed PQ_MAX_LEAF_PATH_BYTES (real schemas, even of 100k columns, stay far
 * below it). */
#define PQ_MAX_LEAF_PATH_BYTES ((size_t)64 << 20)
int pq_file_leaves(const pq_file_meta *m, pq_leaf **out, int *count, pq_error *err);
void pq_leaves_free(pq_leaf *leaves, int count);

/* OffsetIndex: one location per data page of a column chunk (dictionary
 * pages are not listed). */
typedef struct pq_page_location {
    int64_t offset;            /* file offset of the page header */
    int32_t compressed_size;   /* header + compressed body */
    int64_t first_row_index;   /* row of the page's first value within the row group */
} pq_page_location;

typedef struct pq_offset_index {
    int32_t count;
    pq_page_location *pages;
    /* Per page, the bytes of its BYTE_ARRAY values without length prefixes
     * (SizeStatistics); NULL when the writer did not store them. */
    int64_t *unencoded_bytes;
} pq_offset_index;

int pq_offset_index_parse(const uint8_t *buf, size_t len, pq_offset_index *out, pq_error *err);
void pq_offset_index_free(pq_offset_index *oi);

/* ColumnIndex: only what sizes records, the null count of each data page
 * (NULL when the writer did not store them; "absent" is not "zero"). */
typedef struct pq_column_index {
    int32_t count;
    int64_t *null_counts;
} pq_column_index;

int pq_column_index_parse(const uint8_t *buf, size_t len, pq_column_index *out, pq_error *err);
void pq_column_index_free(pq_column_index *ci);

#endif
