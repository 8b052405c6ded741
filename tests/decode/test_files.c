/* End to end: decode every column chunk of the fixtures and compare with the
 * values pyarrow read when make_fixtures.py wrote the .expect files. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tu.h"

typedef struct check {
    const tu_expect_col *exp;
    size_t next;     /* next expected line */
    char why[512];   /* first mismatch */
} check;

static int mismatch(check *c, const char *fmt, const char *a, const char *b)
{
    snprintf(c->why, sizeof c->why, fmt, c->exp->path, c->next, a, b);
    return -1;
}

/* BYTE_ARRAY decimal: big-endian two's complement, as a decimal string. */
static void decimal_text(const pq_bytes *v, char *out, size_t cap)
{
    int64_t x = v->len && (v->ptr[0] & 0x80) ? -1 : 0;
    for (uint32_t i = 0; i < v->len; i++)
        x = (int64_t)((uint64_t)x << 8 | v->ptr[i]);
    snprintf(out, cap, "%" PRId64, x);
}

static int check_value(check *c, const pq_bytes *v)
{
    const char *line = c->exp->lines[c->next];
    if (strcmp(c->exp->mode, "decimal") == 0) {
        char txt[32];
        decimal_text(v, txt, sizeof txt);
        if (strcmp(txt, line) != 0)
            return mismatch(c, "%s entry %zu: expected %s, decoded %s", line, txt);
    } else if (!tu_line_equals(line, v->ptr, v->len)) {
        char got[64];
        snprintf(got, sizeof got, "%u bytes", v->len);
        return mismatch(c, "%s entry %zu: expected %s, decoded %s", line, got);
    }
    c->next++;
    return 0;
}

static int on_page(void *ctx, const pq_leaf *leaf, const pq_page_values *pv)
{
    check *c = ctx;
    int flat = strcmp(c->exp->mode, "leaf") != 0;
    uint32_t k = 0;
    if (!flat) {
        for (; k < pv->num_values; k++) {
            if (c->next >= c->exp->count)
                return mismatch(c, "%s entry %zu: %s%s", "more values than expected", "");
            pq_bytes v = pq_page_value(pv, k);
            if (check_value(c, &v) < 0)
                return -1;
        }
        return 0;
    }
    for (uint32_t i = 0; i < pv->num_levels; i++) {
        if (c->next >= c->exp->count)
            return mismatch(c, "%s entry %zu: %s%s", "more rows than expected", "");
        int present = !pv->def_levels || pv->def_levels[i] == leaf->max_def;
        if (!present) {
            if (strcmp(c->exp->lines[c->next], "-") != 0)
                return mismatch(c, "%s entry %zu: expected %s, decoded %s",
                                c->exp->lines[c->next], "null");
            c->next++;
            continue;
        }
        if (strcmp(c->exp->lines[c->next], "-") == 0)
            return mismatch(c, "%s entry %zu: expected %s, decoded %s", "null", "a value");
        pq_bytes v = pq_page_value(pv, k++);
        if (check_value(c, &v) < 0)
            return -1;
    }
    cr_assert_eq(k, pv->num_values, "%s: page has %u values, levels say %u", c->exp->path,
                 pv->num_values, k);
    return 0;
}

static void check_fixture(const char *parquet, const char *expect)
{
    tu_expect e;
    cr_assert_eq(tu_expect_load(expect, &e), 0, "cannot load %s", expect);
    size_t len;
    uint8_t *data = tu_fixture(parquet, &len);
    cr_assert_not_null(data, "cannot read %s", parquet);
    tu_file f;
    pq_error err = { "" };
    cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s: %s", parquet, err.msg);
    cr_assert_gt(e.ncols, 0, "%s checks no column", expect);
    for (int i = 0; i < e.ncols; i++) {
        int col = tu_find_leaf(&f, e.cols[i].path);
        cr_assert_geq(col, 0, "%s: no leaf %s", parquet, e.cols[i].path);
        check c = { &e.cols[i], 0, "" };
        int rc = tu_walk_column(&f, col, on_page, &c, &err);
        cr_assert_eq(rc, 0, "%s: %s", parquet, c.why[0] ? c.why : err.msg);
        cr_assert_eq(c.next, e.cols[i].count, "%s: column %s decoded %zu entries, expected %zu",
                     parquet, e.cols[i].path, c.next, e.cols[i].count);
    }
    tu_close(&f);
    free(data);
    tu_expect_free(&e);
}

Test(files, every_fixture_matches_pyarrow)
{
    size_t len;
    uint8_t *manifest = tu_fixture("MANIFEST", &len);
    cr_assert_not_null(manifest, "fixtures missing: run tests/decode/make_fixtures.py");
    char *text = malloc(len + 1);
    memcpy(text, manifest, len);
    text[len] = '\0';
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char parquet[256], expect[256];
        cr_assert_eq(sscanf(line, "%255s %255s", parquet, expect), 2);
        check_fixture(parquet, expect);
        n++;
    }
    cr_assert_geq(n, 20, "only %d fixtures in MANIFEST", n);
    free(text);
    free(manifest);
}

/* pyarrow writes 'lz4' as LZ4_RAW; the parquet-testing copies cover codec 5. */
Test(files, codecs_are_what_the_fixtures_claim)
{
    static const struct { const char *file; int codec; } want[] = {
        { "gen_plain_v1_none.parquet", PQ_UNCOMPRESSED },
        { "gen_dict_v1_snappy.parquet", PQ_SNAPPY },
        { "gen_dict_v2_gzip.parquet", PQ_GZIP },
        { "gen_plain_v2_brotli.parquet", PQ_BROTLI },
        { "gen_dict_v1_zstd_pageindex.parquet", PQ_ZSTD },
        { "gen_plain_v2_lz4.parquet", PQ_LZ4_RAW },
        { "hadoop_lz4_compressed.parquet", PQ_LZ4 },
        { "non_hadoop_lz4_compressed.parquet", PQ_LZ4 },
        { "concatenated_gzip_members.parquet", PQ_GZIP },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        size_t len;
        uint8_t *data = tu_fixture(want[i].file, &len);
        cr_assert_not_null(data);
        tu_file f;
        pq_error err;
        cr_assert_eq(tu_open(data, len, &f, &err), 0, "%s", err.msg);
        cr_expect_eq(f.meta.row_groups[0].columns[0].codec, want[i].codec, "%s: codec %d",
                     want[i].file, f.meta.row_groups[0].columns[0].codec);
        tu_close(&f);
        free(data);
    }
}
