/* fuzz_footer — file metadata parsing on arbitrary bytes.
 *
 * The input is treated as a whole Parquet file: pq_footer_locate on its last
 * 8 bytes, pq_file_meta_parse of the footer, pq_file_leaves, and
 * pq_offset_index_parse of every OffsetIndex the column chunks point to
 * (when it lies inside the input). When the input has no valid tail, it is
 * parsed as a bare FileMetaData and as a bare OffsetIndex instead, so the
 * fuzzer need not discover the framing to reach the parsers. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pq_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read every byte of a string so ASan sees an unterminated one. */
static size_t touch(const char *s)
{
    return s ? strlen(s) : 0;
}

static void check_meta(const uint8_t *file, size_t file_len, const uint8_t *meta,
                       size_t meta_len)
{
    pq_error err;
    pq_file_meta m;
    if (pq_file_meta_parse(meta, meta_len, &m, &err) < 0)
        return;
    volatile size_t sink = touch(m.created_by);
    for (int32_t i = 0; i < m.num_schema; i++)
        sink += touch(m.schema[i].name);

    pq_leaf *leaves;
    int nleaves;
    if (pq_file_leaves(&m, &leaves, &nleaves, &err) == 0) {
        for (int i = 0; i < nleaves; i++) {
            sink += touch(leaves[i].path);
            /* The schema index must point at a primitive element. */
            if (leaves[i].schema_index <= 0 || leaves[i].schema_index >= m.num_schema ||
                m.schema[leaves[i].schema_index].type < 0 || leaves[i].max_def < 0 ||
                leaves[i].max_rep < 0 || leaves[i].max_rep > leaves[i].max_def)
                abort();
        }
        pq_leaves_free(leaves, nleaves);
    }

    for (int32_t g = 0; g < m.num_row_groups; g++) {
        const pq_row_group *rg = &m.row_groups[g];
        for (int32_t c = 0; c < rg->num_columns; c++) {
            const pq_column_meta *cm = &rg->columns[c];
            if (cm->offset_index_offset < 0 || cm->offset_index_length <= 0 || !file ||
                (uint64_t)cm->offset_index_offset > file_len ||
                (uint64_t)cm->offset_index_length > file_len - (uint64_t)cm->offset_index_offset)
                continue;
            pq_offset_index oi;
            if (pq_offset_index_parse(file + cm->offset_index_offset,
                                      (size_t)cm->offset_index_length, &oi, &err) == 0) {
                for (int32_t p = 0; p < oi.count; p++)
                    sink += (size_t)oi.pages[p].compressed_size;
                pq_offset_index_free(&oi);
            }
        }
    }
    (void)sink;
    pq_file_meta_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pq_error err;
    uint64_t off;
    uint32_t len;
    if (size >= 8 && pq_footer_locate(data + size - 8, size, &off, &len, &err) == 0) {
        if (off + len + 8 != size || off < 4)
            abort(); /* the footer must sit between "PAR1" and the tail */
        check_meta(data, size, data + off, len);
        return 0;
    }
    check_meta(NULL, 0, data, size);
    pq_offset_index oi;
    if (pq_offset_index_parse(data, size, &oi, &err) == 0)
        pq_offset_index_free(&oi);
    return 0;
}
