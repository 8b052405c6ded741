/* The schema's logical annotations and list levels, as pyarrow writes them
 * (fixtures/logical_types.parquet, from make_logical_fixture.py). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pq_meta.h"

static pq_leaf *leaves;
static int count;

static void load(void)
{
    FILE *f = fopen(YFS_SOURCE_DIR "/tests/decode/fixtures/logical_types.parquet", "rb");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    uint8_t *buf = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    uint64_t off;
    uint32_t len;
    pq_error err;
    cr_assert_eq(pq_footer_locate(buf + size - 8, (uint64_t)size, &off, &len, &err), 0);
    pq_file_meta m;
    cr_assert_eq(pq_file_meta_parse(buf + off, len, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(pq_file_leaves(&m, &leaves, &count, &err), 0, "%s", err.msg);
    pq_file_meta_free(&m);
    free(buf);
}

static void unload(void)
{
    pq_leaves_free(leaves, count);
}

static const pq_leaf *leaf(const char *path)
{
    for (int i = 0; i < count; i++)
        if (strcmp(leaves[i].path, path) == 0)
            return &leaves[i];
    cr_assert_fail("no leaf %s", path);
    return NULL;
}

TestSuite(logical, .init = load, .fini = unload);

Test(logical, integers_carry_width_and_sign)
{
    const pq_leaf *u8 = leaf("u8"), *i16 = leaf("i16"), *u64 = leaf("u64");
    cr_assert(u8->logical.kind == PQ_LOGICAL_INTEGER && u8->logical.bit_width == 8 &&
              !u8->logical.is_signed);
    cr_assert(i16->logical.bit_width == 16 && i16->logical.is_signed);
    cr_assert(u64->type == PQ_INT64 && u64->logical.bit_width == 64 && !u64->logical.is_signed);
    cr_assert_eq(leaf("s")->logical.kind, PQ_LOGICAL_STRING);
}

Test(logical, decimal_date_time_timestamp)
{
    const pq_leaf *dec = leaf("dec");
    cr_assert(dec->logical.kind == PQ_LOGICAL_DECIMAL && dec->logical.scale == 2 &&
              dec->logical.precision == 9 && dec->type == PQ_FIXED_LEN_BYTE_ARRAY);
    cr_assert_eq(leaf("date")->logical.kind, PQ_LOGICAL_DATE);
    const pq_leaf *ms = leaf("ts_ms_utc"), *us = leaf("ts_us"), *ns = leaf("ts_ns");
    cr_assert(ms->logical.kind == PQ_LOGICAL_TIMESTAMP && ms->logical.unit == PQ_UNIT_MILLIS &&
              ms->logical.utc);
    cr_assert(us->logical.unit == PQ_UNIT_MICROS && !us->logical.utc);
    cr_assert(ns->logical.unit == PQ_UNIT_NANOS);
    cr_assert(leaf("t_ms")->logical.kind == PQ_LOGICAL_TIME &&
              leaf("t_ms")->logical.unit == PQ_UNIT_MILLIS);
    cr_assert_eq(leaf("t_us")->logical.unit, PQ_UNIT_MICROS);
}

Test(logical, list_levels)
{
    /* optional group ids (LIST) { repeated group list { optional int32 element } } */
    const pq_leaf *ids = leaf("ids.list.element");
    cr_assert(ids->max_def == 3 && ids->max_rep == 1 && ids->rep_def == 2);
    /* required group: one definition level less */
    const pq_leaf *req = leaf("req_ids.list.element");
    cr_assert(req->max_def == 2 && req->max_rep == 1 && req->rep_def == 1);
    cr_assert(leaf("s")->max_rep == 0);
}
