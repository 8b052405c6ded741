#include "pq_meta.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "pq_thrift.h"

/* Field ids below are those of parquet.thrift (FileMetaData, SchemaElement,
 * RowGroup, ColumnChunk, ColumnMetaData, OffsetIndex, PageLocation). */

int pq_footer_locate(const uint8_t tail[8], uint64_t file_size, uint64_t *meta_offset,
                     uint32_t *meta_len, pq_error *err)
{
    if (file_size < 12)
        return pq_error_set(err, "file is %llu bytes, too short for Parquet (at least 12)",
                            (unsigned long long)file_size);
    if (memcmp(tail + 4, "PARE", 4) == 0)
        return pq_error_set(err, "footer is encrypted (magic PARE); encrypted Parquet files "
                                 "are not supported");
    if (memcmp(tail + 4, "PAR1", 4) != 0)
        return pq_error_set(err,
                            "not a Parquet file: last 4 bytes are %02x %02x %02x %02x, "
                            "expected \"PAR1\"",
                            tail[4], tail[5], tail[6], tail[7]);
    uint32_t len = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                   (uint32_t)tail[3] << 24;
    /* 4 bytes of leading magic + metadata + 4-byte length + 4-byte magic. */
    if (len > file_size - 12)
        return pq_error_set(err, "footer length %u does not fit in a file of %llu bytes", len,
                            (unsigned long long)file_size);
    if (len == 0)
        return pq_error_set(err, "footer length is 0");
    *meta_offset = file_size - 8 - len;
    *meta_len = len;
    return 0;
}

/* Read a field value that must be an int32 enum/count and store it in an int. */
static int read_int(pq_thrift *t, uint8_t ft, int *out, pq_error *err)
{
    int32_t v;
    if (pq_thrift_i32(t, ft, &v, err) < 0)
        return -1;
    *out = v;
    return 0;
}

static int read_string(pq_thrift *t, uint8_t ft, char **out, pq_error *err)
{
    const uint8_t *p;
    uint32_t n;
    if (pq_thrift_binary(t, ft, &p, &n, err) < 0)
        return -1;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return pq_error_set(err, "out of memory for a %u-byte string", n);
    memcpy(s, p, n);
    s[n] = '\0';
    free(*out); /* a repeated field replaces the earlier value */
    *out = s;
    return 0;
}

/* Make room in the array of a list field for `need` elements (need <= the
 * list's count, `max`). The array holds *cap zeroed-or-parsed elements and
 * grows by doubling, never past max, and always exists once called (an
 * empty list is an array of one unused element, so "present" is *arr !=
 * NULL). The count was bounded by the bytes left in pq_thrift_list_begin,
 * but one byte may become a 96-byte struct, so a count is never allocated
 * up front: the array follows the elements that actually parse, so a
 * hostile count costs at most twice the elements parsed before the first
 * bad one (and at least 16). */
static int list_reserve(void **arr, uint32_t *cap, uint32_t need, uint32_t max, size_t elem,
                        const char *what, pq_error *err)
{
    assert(need <= max);
    if (*arr && need <= *cap)
        return 0;
    size_t want = *cap ? (size_t)*cap * 2 : 16;
    if (want > max)
        want = max ? max : 1;
    if (want < need)
        want = need;
    void *grown = realloc(*arr, want * elem);
    if (!grown)
        return pq_error_set(err, "out of memory for %zu %s", want, what);
    memset((char *)grown + (size_t)*cap * elem, 0, (want - *cap) * elem);
    *arr = grown;
    *cap = (uint32_t)want;
    return 0;
}

static int duplicate(pq_thrift *t, const char *what, pq_error *err)
{
    return pq_error_set(err, "%s appears twice (byte %zu)", what, pq_thrift_offset(t));
}

/* Parses one element of a list<struct> into elem (a typed wrapper around the
 * struct's parser). */
typedef int (*element_parser)(pq_thrift *t, void *elem, pq_error *err);

/* A list<struct> field: parses each element into *out, which grows with
 * the elements parsed (list_reserve). *count is raised before each element
 * so that after a failure the free functions see everything allocated. */
static int read_struct_list(pq_thrift *t, uint8_t ft, const char *field, const char *element,
                            size_t elem_size, void **out, int32_t *count, element_parser parse,
                            pq_error *err)
{
    if (*out)
        return duplicate(t, field, err);
    uint8_t et;
    uint32_t n, cap = 0;
    if (pq_thrift_list_begin(t, ft, &et, &n, err) < 0)
        return -1;
    if (et != PQ_TT_STRUCT)
        return pq_error_set(err, "%s is a list of type %u, not structs", field, et);
    if (n > INT32_MAX)
        return pq_error_set(err, "%s has %u elements, more than %d", field, n, INT32_MAX);
    if (list_reserve(out, &cap, n ? 1 : 0, n, elem_size, field, err) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        if (list_reserve(out, &cap, i + 1, n, elem_size, field, err) < 0)
            return -1;
        *count = (int32_t)(i + 1);
        if (parse(t, (char *)*out + (size_t)i * elem_size, err) < 0)
            return pq_error_prefix(err, "%s %u: ", element, i);
    }
    return 0;
}

/* Reads a struct, handing each field to `field`; used for the small
 * structs inside LogicalType. */
/* The logical type's structs: their fields go to field, with the pq_logical. */
static int read_struct(pq_thrift *t, uint8_t ft, pq_thrift_field_fn field, pq_logical *l,
                       pq_error *err)
{
    if (ft != PQ_TT_STRUCT)
        return pq_error_set(err, "logical type at byte %zu: expected a struct, found type %u",
                            pq_thrift_offset(t), ft);
    return pq_thrift_walk(t, field, l, err);
}

static int skip_field(pq_thrift *t, int16_t id, uint8_t ft, void *l, pq_error *err)
{
    (void)id;
    (void)l;
    return pq_thrift_skip(t, ft, err);
}

/* TimeUnit is a union of empty structs: 1 MILLIS, 2 MICROS, 3 NANOS. */
static int time_unit_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_logical *l = ctx;
    if (id >= 1 && id <= 3)
        l->unit = id; /* PQ_UNIT_* follow the union's field ids */
    return read_struct(t, ft, skip_field, l, err);
}

/* TimeType / TimestampType: 1 isAdjustedToUTC, 2 unit. */
static int time_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_logical *l = ctx;
    if (id == 1)
        return pq_thrift_bool(t, ft, &l->utc, err);
    if (id == 2)
        return read_struct(t, ft, time_unit_field, l, err);
    return pq_thrift_skip(t, ft, err);
}

/* DecimalType: 1 scale, 2 precision. */
static int decimal_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_logical *l = ctx;
    if (id == 1)
        return pq_thrift_i32(t, ft, &l->scale, err);
    if (id == 2)
        return pq_thrift_i32(t, ft, &l->precision, err);
    return pq_thrift_skip(t, ft, err);
}

/* IntType: 1 bitWidth (i8), 2 isSigned. */
static int int_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_logical *l = ctx;
    if (id == 1) {
        int32_t width;
        if (pq_thrift_i32(t, ft, &width, err) < 0)
            return -1;
        l->bit_width = width;
        return 0;
    }
    if (id == 2)
        return pq_thrift_bool(t, ft, &l->is_signed, err);
    return pq_thrift_skip(t, ft, err);
}

/* LogicalType is a union: the id of its single field says which one. */
static int logical_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_logical *l = ctx;
    switch (id) {
    case 1: case 4: case 12: l->kind = PQ_LOGICAL_STRING; break; /* STRING, ENUM, JSON */
    case 2: l->kind = PQ_LOGICAL_MAP; break;
    case 3: l->kind = PQ_LOGICAL_LIST; break;
    case 5: l->kind = PQ_LOGICAL_DECIMAL; return read_struct(t, ft, decimal_field, l, err);
    case 6: l->kind = PQ_LOGICAL_DATE; break;
    case 7: l->kind = PQ_LOGICAL_TIME; return read_struct(t, ft, time_field, l, err);
    case 8: l->kind = PQ_LOGICAL_TIMESTAMP; return read_struct(t, ft, time_field, l, err);
    case 10: l->kind = PQ_LOGICAL_INTEGER; return read_struct(t, ft, int_field, l, err);
    case 14: l->kind = PQ_LOGICAL_UUID; break;
    case 15: l->kind = PQ_LOGICAL_FLOAT16; break;
    default: l->kind = PQ_LOGICAL_OTHER; break;
    }
    return pq_thrift_skip(t, ft, err);
}

/* ConvertedType (the pre-LogicalType annotation) as a LogicalType. */
static pq_logical from_converted(int converted, int32_t scale, int32_t precision)
{
    pq_logical l = { 0 };
    switch (converted) {
    case 0: case 4: case 19: l.kind = PQ_LOGICAL_STRING; break; /* UTF8, ENUM, JSON */
    case 1: case 2: l.kind = PQ_LOGICAL_MAP; break;
    case 3: l.kind = PQ_LOGICAL_LIST; break;
    case 5: l = (pq_logical){ .kind = PQ_LOGICAL_DECIMAL, .scale = scale, .precision = precision }; break;
    case 6: l.kind = PQ_LOGICAL_DATE; break;
    /* legacy TIME/TIMESTAMP annotations are UTC-adjusted by definition */
    case 7: l = (pq_logical){ .kind = PQ_LOGICAL_TIME, .unit = PQ_UNIT_MILLIS, .utc = 1 }; break;
    case 8: l = (pq_logical){ .kind = PQ_LOGICAL_TIME, .unit = PQ_UNIT_MICROS, .utc = 1 }; break;
    case 9: l = (pq_logical){ .kind = PQ_LOGICAL_TIMESTAMP, .unit = PQ_UNIT_MILLIS, .utc = 1 }; break;
    case 10: l = (pq_logical){ .kind = PQ_LOGICAL_TIMESTAMP, .unit = PQ_UNIT_MICROS, .utc = 1 }; break;
    case 11: case 12: case 13: case 14: /* UINT_8 .. UINT_64 */
        l = (pq_logical){ .kind = PQ_LOGICAL_INTEGER, .bit_width = 8 << (converted - 11) };
        break;
    case 15: case 16: case 17: case 18: /* INT_8 .. INT_64 */
        l = (pq_logical){ .kind = PQ_LOGICAL_INTEGER, .bit_width = 8 << (converted - 15),
                          .is_signed = 1 };
        break;
    case -1: break;
    default: l.kind = PQ_LOGICAL_OTHER; break;
    }
    return l;
}

/* A SchemaElement's fields, with what comes apart from the element. */
typedef struct schema_walk {
    pq_schema_element *e;
    int converted, have_logical, have_name;
    int32_t scale, precision;
    pq_logical logical;
} schema_walk;

static int schema_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    schema_walk *w = ctx;
    pq_schema_element *e = w->e;
    switch (id) {
    case 1: return read_int(t, ft, &e->type, err);
    case 2: return pq_thrift_i32(t, ft, &e->type_length, err);
    case 3: return read_int(t, ft, &e->repetition, err);
    case 4: w->have_name = 1; return read_string(t, ft, &e->name, err);
    case 5: return pq_thrift_i32(t, ft, &e->num_children, err);
    case 6: return read_int(t, ft, &w->converted, err);
    case 7: return pq_thrift_i32(t, ft, &w->scale, err);
    case 8: return pq_thrift_i32(t, ft, &w->precision, err);
    case 10: w->have_logical = 1; return read_struct(t, ft, logical_field, &w->logical, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

static int parse_schema_element(pq_thrift *t, pq_schema_element *e, pq_error *err)
{
    schema_walk w = { .e = e, .converted = -1 };
    e->type = -1;
    e->repetition = PQ_REQUIRED;
    if (pq_thrift_walk(t, schema_field, &w, err) < 0)
        return -1;
    if (!w.have_name)
        return pq_error_set(err, "has no name (required field 4)");
    if (e->type < -1 || e->type > PQ_FIXED_LEN_BYTE_ARRAY)
        return pq_error_set(err, "\"%s\" has unknown physical type %d", e->name, e->type);
    if (e->repetition < PQ_REQUIRED || e->repetition > PQ_REPEATED)
        return pq_error_set(err, "\"%s\" has unsupported repetition type %d", e->name,
                            e->repetition);
    if (e->num_children < 0)
        return pq_error_set(err, "\"%s\" has %d children", e->name, e->num_children);
    if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0)
        return pq_error_set(err, "\"%s\" is FIXED_LEN_BYTE_ARRAY with type_length %d", e->name,
                            e->type_length);
    if (e->type != PQ_FIXED_LEN_BYTE_ARRAY)
        e->type_length = 0;
    /* A writer that knows LogicalType may leave it empty for types that have
     * none; then the ConvertedType still says what the values mean. */
    e->logical = w.have_logical && w.logical.kind != PQ_LOGICAL_NONE
                     ? w.logical
                     : from_converted(w.converted, w.scale, w.precision);
    return 0;
}

static int schema_element(pq_thrift *t, void *elem, pq_error *err)
{
    return parse_schema_element(t, elem, err);
}

/* ColumnMetaData.encodings as a bit set (encodings are small enum values;
 * unknown ones beyond 31 are ignored). */
static int read_encodings(pq_thrift *t, uint8_t ft, uint32_t *set, pq_error *err)
{
    uint8_t et;
    uint32_t n;
    if (pq_thrift_list_begin(t, ft, &et, &n, err) < 0)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        int32_t e;
        if (pq_thrift_i32(t, et, &e, err) < 0)
            return -1;
        if (e >= 0 && e < 32)
            *set |= 1u << e;
    }
    return 0;
}

/* Statistics: only null_count (field 3), which lets pages of a chunk without
 * nulls be sized without their levels. */
static int statistics_field(pq_thrift *t, int16_t id, uint8_t ft, void *null_count,
                            pq_error *err)
{
    return id == 3 ? pq_thrift_i64(t, ft, null_count, err) : pq_thrift_skip(t, ft, err);
}

static int read_null_count(pq_thrift *t, uint8_t ft, int64_t *null_count, pq_error *err)
{
    if (ft != PQ_TT_STRUCT)
        return pq_error_set(err, "Statistics at byte %zu is not a struct", pq_thrift_offset(t));
    return pq_thrift_walk(t, statistics_field, null_count, err);
}

enum { CM_TYPE = 1, CM_CODEC = 2, CM_NUM_VALUES = 4, CM_SIZE = 8, CM_DATA_OFFSET = 16 };

/* What a struct's field callback (pq_thrift_walk) fills, and bits of the
 * fields it saw that the struct's reader checks afterwards. */
typedef struct walk {
    void *out;
    uint32_t seen;
} walk;

/* A ColumnMetaData's fields; seen: the CM_* bits of the required ones. */
static int column_meta_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_column_meta *c = w->out;
    switch (id) {
    case 1: w->seen |= CM_TYPE; return read_int(t, ft, &c->type, err);
    case 2: return read_encodings(t, ft, &c->encodings, err);
    case 4: w->seen |= CM_CODEC; return read_int(t, ft, &c->codec, err);
    case 5: w->seen |= CM_NUM_VALUES; return pq_thrift_i64(t, ft, &c->num_values, err);
    case 6: return pq_thrift_i64(t, ft, &c->total_uncompressed_size, err);
    case 7: w->seen |= CM_SIZE; return pq_thrift_i64(t, ft, &c->total_compressed_size, err);
    case 9: w->seen |= CM_DATA_OFFSET; return pq_thrift_i64(t, ft, &c->data_page_offset, err);
    case 11: return pq_thrift_i64(t, ft, &c->dictionary_page_offset, err);
    case 12: return read_null_count(t, ft, &c->null_count, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

static int parse_column_meta(pq_thrift *t, pq_column_meta *c, pq_error *err)
{
    walk w = { c, 0 };
    c->null_count = -1;
    if (pq_thrift_walk(t, column_meta_field, &w, err) < 0)
        return -1;
    int seen = w.seen;
    static const struct { int bit; const char *name; } req[] = {
        { CM_TYPE, "type (1)" }, { CM_CODEC, "codec (4)" }, { CM_NUM_VALUES, "num_values (5)" },
        { CM_SIZE, "total_compressed_size (7)" }, { CM_DATA_OFFSET, "data_page_offset (9)" },
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!(seen & req[i].bit))
            return pq_error_set(err, "ColumnMetaData lacks required field %s", req[i].name);
    if (c->type < 0 || c->type > PQ_FIXED_LEN_BYTE_ARRAY)
        return pq_error_set(err, "ColumnMetaData has unknown physical type %d", c->type);
    if (c->num_values < 0 || c->total_compressed_size < 0 || c->total_uncompressed_size < 0 ||
        c->data_page_offset < 0)
        return pq_error_set(err,
                            "ColumnMetaData has a negative count or offset (num_values %lld, "
                            "compressed size %lld, data page offset %lld)",
                            (long long)c->num_values, (long long)c->total_compressed_size,
                            (long long)c->data_page_offset);
    /* Some writers store 0 for "no dictionary page"; a real one can never be
     * at offset 0 (the file starts with "PAR1"). Readers treat both alike. */
    if (c->dictionary_page_offset <= 0)
        c->dictionary_page_offset = -1;
    return 0;
}

/* A ColumnChunk's fields; its meta_data (seen: 1) is read into the same
 * struct. */
static int column_chunk_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_column_meta *c = w->out;
    switch (id) {
    case 1: {
        /* Chunk data in another file (summary "_metadata" files): the
         * offsets would point into the wrong file. */
        const uint8_t *p;
        uint32_t n;
        if (pq_thrift_binary(t, ft, &p, &n, err) < 0)
            return -1;
        if (n > 0)
            return pq_error_set(err, "column chunk data is in another file (file_path "
                                     "\"%.*s\"); not supported",
                                (int)(n > 200 ? 200 : n), (const char *)p);
        return 0;
    }
    case 3:
        if (w->seen)
            return duplicate(t, "ColumnChunk.meta_data", err);
        w->seen = 1;
        return parse_column_meta(t, c, err);
    case 4: return pq_thrift_i64(t, ft, &c->offset_index_offset, err);
    case 5: return pq_thrift_i32(t, ft, &c->offset_index_length, err);
    case 6: return pq_thrift_i64(t, ft, &c->column_index_offset, err);
    case 7: return pq_thrift_i32(t, ft, &c->column_index_length, err);
    case 8: c->encrypted = 1; return pq_thrift_skip(t, ft, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

static int parse_column_chunk(pq_thrift *t, pq_column_meta *c, pq_error *err)
{
    walk w = { c, 0 };
    c->dictionary_page_offset = -1;
    c->offset_index_offset = -1;
    c->column_index_offset = -1;
    if (pq_thrift_walk(t, column_chunk_field, &w, err) < 0)
        return -1;
    int have_meta = w.seen;
    if (!have_meta && !c->encrypted)
        return pq_error_set(err, "ColumnChunk has no meta_data (field 3)");
    if (c->offset_index_offset < 0 || c->offset_index_length <= 0) {
        c->offset_index_offset = -1;
        c->offset_index_length = 0;
    }
    if (c->column_index_offset < 0 || c->column_index_length <= 0) {
        c->column_index_offset = -1;
        c->column_index_length = 0;
    }
    return 0;
}

static int column_chunk_element(pq_thrift *t, void *elem, pq_error *err)
{
    return parse_column_chunk(t, elem, err);
}

/* A RowGroup's fields: its column chunks and its row count (seen: 1). */
static int row_group_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_row_group *rg = w->out;
    if (id == 1)
        return read_struct_list(t, ft, "RowGroup.columns", "column chunk", sizeof *rg->columns,
                                (void **)&rg->columns, &rg->num_columns, column_chunk_element,
                                err);
    if (id == 3) {
        w->seen = 1;
        return pq_thrift_i64(t, ft, &rg->num_rows, err);
    }
    return pq_thrift_skip(t, ft, err);
}

static int parse_row_group(pq_thrift *t, pq_row_group *rg, pq_error *err)
{
    walk w = { rg, 0 };
    if (pq_thrift_walk(t, row_group_field, &w, err) < 0)
        return -1;
    int have_rows = w.seen;
    if (!rg->columns)
        return pq_error_set(err, "RowGroup has no columns (field 1)");
    if (!have_rows || rg->num_rows < 0)
        return pq_error_set(err, "RowGroup has no valid num_rows (field 3)");
    return 0;
}

static int row_group_element(pq_thrift *t, void *elem, pq_error *err)
{
    return parse_row_group(t, elem, err);
}

/* FileMetaData's fields: version, schema, row count (seen: 1), row groups,
 * writer. */
static int file_meta_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_file_meta *m = w->out;
    switch (id) {
    case 1: return pq_thrift_i32(t, ft, &m->version, err);
    case 2:
        return read_struct_list(t, ft, "FileMetaData.schema", "schema element",
                                sizeof *m->schema, (void **)&m->schema, &m->num_schema,
                                schema_element, err);
    case 3: w->seen = 1; return pq_thrift_i64(t, ft, &m->num_rows, err);
    case 4:
        return read_struct_list(t, ft, "FileMetaData.row_groups", "row group",
                                sizeof *m->row_groups, (void **)&m->row_groups,
                                &m->num_row_groups, row_group_element, err);
    case 6: return read_string(t, ft, &m->created_by, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

static int parse_file_meta(pq_thrift *t, pq_file_meta *m, pq_error *err)
{
    walk w = { m, 0 };
    if (pq_thrift_walk(t, file_meta_field, &w, err) < 0)
        return -1;
    int have_rows = w.seen;
    if (!m->schema || m->num_schema == 0)
        return pq_error_set(err, "has no schema (field 2)");
    if (!m->row_groups)
        return pq_error_set(err, "has no row_groups (field 4)");
    if (!have_rows || m->num_rows < 0)
        return pq_error_set(err, "has no valid num_rows (field 3)");
    return 0;
}

/* Each row group must hold one chunk per leaf, of the leaf's physical type. */
static int check_row_groups(const pq_file_meta *m, pq_error *err)
{
    pq_leaf *leaves;
    int nleaves;
    if (pq_file_leaves(m, &leaves, &nleaves, err) < 0)
        return -1;
    int rc = 0;
    for (int32_t g = 0; g < m->num_row_groups && rc == 0; g++) {
        const pq_row_group *rg = &m->row_groups[g];
        if (rg->num_columns != nleaves) {
            rc = pq_error_set(err, "row group %d has %d column chunks but the schema has %d "
                                   "leaf columns",
                              g, rg->num_columns, nleaves);
            break;
        }
        for (int c = 0; c < nleaves; c++) {
            if (rg->columns[c].encrypted || rg->columns[c].type == leaves[c].type)
                continue;
            rc = pq_error_set(err, "row group %d column \"%s\": chunk has physical type %d, "
                                   "schema says %d",
                              g, leaves[c].path, rg->columns[c].type, leaves[c].type);
            break;
        }
    }
    pq_leaves_free(leaves, nleaves);
    return rc;
}

int pq_file_meta_parse(const uint8_t *buf, size_t len, pq_file_meta *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    pq_thrift t;
    pq_thrift_init(&t, buf, len);
    if (parse_file_meta(&t, out, err) < 0 || check_row_groups(out, err) < 0) {
        pq_file_meta_free(out);
        return pq_error_prefix(err, "FileMetaData: ");
    }
    return 0;
}

void pq_file_meta_free(pq_file_meta *m)
{
    if (!m)
        return;
    for (int32_t i = 0; i < m->num_schema; i++)
        free(m->schema[i].name);
    free(m->schema);
    for (int32_t i = 0; i < m->num_row_groups; i++)
        free(m->row_groups[i].columns);
    free(m->row_groups);
    free(m->created_by);
    memset(m, 0, sizeof *m);
}

/* A PageLocation's fields; seen: bits of the three (all required). */
static int page_location_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_page_location *loc = w->out;
    switch (id) {
    case 1: w->seen |= 1; return pq_thrift_i64(t, ft, &loc->offset, err);
    case 2: w->seen |= 2; return pq_thrift_i32(t, ft, &loc->compressed_size, err);
    case 3: w->seen |= 4; return pq_thrift_i64(t, ft, &loc->first_row_index, err);
    default: return pq_thrift_skip(t, ft, err);
    }
}

static int parse_page_location(pq_thrift *t, pq_page_location *loc, pq_error *err)
{
    walk w = { loc, 0 };
    if (pq_thrift_walk(t, page_location_field, &w, err) < 0)
        return -1;
    int seen = w.seen;
    if (seen != 7)
        return pq_error_set(err, "lacks a required field (offset, compressed_page_size, "
                                 "first_row_index)");
    if (loc->offset < 0 || loc->compressed_size <= 0 || loc->first_row_index < 0)
        return pq_error_set(err, "has offset %lld, size %d, first row %lld",
                            (long long)loc->offset, loc->compressed_size,
                            (long long)loc->first_row_index);
    return 0;
}

static int page_location_element(pq_thrift *t, void *elem, pq_error *err)
{
    return parse_page_location(t, elem, err);
}

/* A list<i64> field (page index statistics). */
static int read_i64_list(pq_thrift *t, uint8_t ft, int64_t **out, uint32_t *count,
                         const char *what, pq_error *err)
{
    if (*out)
        return duplicate(t, what, err);
    uint8_t et;
    uint32_t n, cap = 0;
    if (pq_thrift_list_begin(t, ft, &et, &n, err) < 0)
        return -1;
    void *arr = NULL;
    int rc = list_reserve(&arr, &cap, n ? 1 : 0, n, sizeof **out, what, err);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = list_reserve(&arr, &cap, i + 1, n, sizeof **out, what, err);
        if (rc == 0 && pq_thrift_i64(t, et, (int64_t *)arr + i, err) < 0)
            rc = pq_error_prefix(err, "%s %u: ", what, i);
    }
    *out = arr; /* the caller's free function frees it, after a failure too */
    if (rc == 0)
        *count = n;
    return rc;
}

/* An OffsetIndex's fields: the page locations (in increasing offset and
 * row order) and their unencoded byte array sizes (seen: how many). */
static int offset_index_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    walk *w = ctx;
    pq_offset_index *oi = w->out;
    if (id == 2)
        return read_i64_list(t, ft, &oi->unencoded_bytes, &w->seen,
                             "unencoded_byte_array_data_bytes", err);
    if (id != 1)
        return pq_thrift_skip(t, ft, err);
    if (read_struct_list(t, ft, "page_locations", "page location", sizeof *oi->pages,
                         (void **)&oi->pages, &oi->count, page_location_element, err) < 0)
        return -1;
    for (int32_t i = 1; i < oi->count; i++)
        if (oi->pages[i].offset <= oi->pages[i - 1].offset ||
            oi->pages[i].first_row_index < oi->pages[i - 1].first_row_index)
            return pq_error_set(err, "page location %d is not after page location %d", i,
                                i - 1);
    return 0;
}

static int parse_offset_index(pq_thrift *t, pq_offset_index *oi, pq_error *err)
{
    walk w = { oi, 0 };
    if (pq_thrift_walk(t, offset_index_field, &w, err) < 0)
        return -1;
    uint32_t unencoded = w.seen;
    if (!oi->pages)
        return pq_error_set(err, "has no page_locations (field 1)");
    if (oi->unencoded_bytes && unencoded != (uint32_t)oi->count)
        return pq_error_set(err, "%u unencoded sizes for %d pages", unencoded, oi->count);
    return 0;
}

int pq_offset_index_parse(const uint8_t *buf, size_t len, pq_offset_index *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    pq_thrift t;
    pq_thrift_init(&t, buf, len);
    if (parse_offset_index(&t, out, err) < 0) {
        pq_offset_index_free(out);
        return pq_error_prefix(err, "OffsetIndex: ");
    }
    return 0;
}

void pq_offset_index_free(pq_offset_index *oi)
{
    if (!oi)
        return;
    free(oi->pages);
    free(oi->unencoded_bytes);
    oi->pages = NULL;
    oi->unencoded_bytes = NULL;
    oi->count = 0;
}

/* A ColumnIndex's fields: only null_counts. */
static int column_index_field(pq_thrift *t, int16_t id, uint8_t ft, void *ctx, pq_error *err)
{
    pq_column_index *ci = ctx;
    if (id != 5)
        return pq_thrift_skip(t, ft, err);
    uint32_t n = 0;
    int rc = read_i64_list(t, ft, &ci->null_counts, &n, "null_counts", err);
    ci->count = (int32_t)n;
    return rc;
}

int pq_column_index_parse(const uint8_t *buf, size_t len, pq_column_index *out, pq_error *err)
{
    memset(out, 0, sizeof *out);
    pq_thrift t;
    pq_thrift_init(&t, buf, len);
    if (pq_thrift_walk(&t, column_index_field, out, err) < 0) {
        pq_column_index_free(out);
        return pq_error_prefix(err, "ColumnIndex: ");
    }
    return 0;
}

void pq_column_index_free(pq_column_index *ci)
{
    if (!ci)
        return;
    free(ci->null_counts);
    ci->null_counts = NULL;
    ci->count = 0;
}
