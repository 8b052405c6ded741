#include "tu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pq_page.h"

uint8_t *tu_read(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *len = (size_t)n;
    return buf;
}

uint8_t *tu_fixture(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s%s", TU_FIXTURES, name);
    return tu_read(path, len);
}

int tu_open(const uint8_t *data, size_t len, tu_file *f, pq_error *err)
{
    memset(f, 0, sizeof *f);
    f->data = data;
    f->len = len;
    uint64_t off;
    uint32_t mlen;
    if (len < 8)
        return pq_error_set(err, "file of %zu bytes", len);
    if (pq_footer_locate(data + len - 8, len, &off, &mlen, err) < 0)
        return -1;
    if (pq_file_meta_parse(data + off, mlen, &f->meta, err) < 0)
        return -1;
    if (pq_file_leaves(&f->meta, &f->leaves, &f->nleaves, err) < 0) {
        pq_file_meta_free(&f->meta);
        return -1;
    }
    return 0;
}

void tu_close(tu_file *f)
{
    pq_leaves_free(f->leaves, f->nleaves);
    pq_file_meta_free(&f->meta);
    memset(f, 0, sizeof *f);
}

int tu_find_leaf(const tu_file *f, const char *path)
{
    for (int i = 0; i < f->nleaves; i++)
        if (strcmp(f->leaves[i].path, path) == 0)
            return i;
    return -1;
}

static int walk_chunk(const tu_file *f, const pq_leaf *leaf, const pq_column_meta *cm,
                      tu_raw_fn fn, void *ctx, pq_error *err)
{
    if (cm->encrypted)
        return pq_error_set(err, "encrypted column chunk");
    int64_t start = cm->data_page_offset;
    if (cm->dictionary_page_offset >= 0 && cm->dictionary_page_offset < start)
        start = cm->dictionary_page_offset;
    if (start < 0 || (uint64_t)start > f->len ||
        (uint64_t)cm->total_compressed_size > f->len - (uint64_t)start)
        return pq_error_set(err, "chunk [%lld, +%lld) is outside the file", (long long)start,
                            (long long)cm->total_compressed_size);
    size_t pos = (size_t)start, end = pos + (size_t)cm->total_compressed_size;
    pq_column_desc col = { leaf->type, leaf->type_length, leaf->max_def, leaf->max_rep,
                           cm->codec };
    pq_dictionary dict;
    int have_dict = 0, rc = 0;
    int64_t seen = 0;
    while (rc == 0 && pos < end && seen < cm->num_values) {
        pq_page_header h;
        if (pq_page_header_parse(f->data + pos, end - pos, &h, err) < 0) {
            rc = pq_error_prefix(err, "at %zu: ", pos);
            break;
        }
        size_t body = pos + h.header_len;
        if ((size_t)h.compressed_size > end - body) {
            rc = pq_error_set(err, "page at %zu overruns the chunk", pos);
            break;
        }
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (have_dict)
                rc = pq_error_set(err, "second dictionary page at %zu", pos);
            else if ((rc = pq_dictionary_decode(&col, &h, f->data + body,
                                                (size_t)h.compressed_size, &dict, err)) == 0)
                have_dict = 1;
        } else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2) {
            rc = fn(ctx, leaf, &col, &h, f->data + body, have_dict ? &dict : NULL, err);
            seen += h.num_values;
        }
        pos = body + (size_t)h.compressed_size;
    }
    if (have_dict)
        pq_dictionary_free(&dict);
    return rc;
}

int tu_walk_raw(const tu_file *f, int col, tu_raw_fn fn, void *ctx, pq_error *err)
{
    for (int32_t g = 0; g < f->meta.num_row_groups; g++)
        if (walk_chunk(f, &f->leaves[col], &f->meta.row_groups[g].columns[col], fn, ctx, err) <
            0)
            return pq_error_prefix(err, "row group %d column %s: ", g, f->leaves[col].path);
    return 0;
}

typedef struct decode_ctx {
    tu_page_fn fn;
    void *ctx;
} decode_ctx;

static int decode_page(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                       const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                       pq_error *err)
{
    decode_ctx *d = ctx;
    pq_page_values pv;
    if (pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &pv, err) < 0)
        return -1;
    int rc = d->fn ? d->fn(d->ctx, leaf, &pv) : 0;
    pq_page_values_free(&pv);
    return rc;
}

int tu_walk_column(const tu_file *f, int col, tu_page_fn fn, void *ctx, pq_error *err)
{
    decode_ctx d = { fn, ctx };
    return tu_walk_raw(f, col, decode_page, &d, err);
}

int tu_expect_load(const char *name, tu_expect *e)
{
    memset(e, 0, sizeof *e);
    size_t len;
    uint8_t *raw = tu_fixture(name, &len);
    if (!raw)
        return -1;
    e->buf = realloc(raw, len + 1);
    e->buf[len] = '\0';
    size_t nlines = 0;
    for (size_t i = 0; i < len; i++)
        nlines += e->buf[i] == '\n';
    char **lines = malloc((nlines + 1) * sizeof *lines);
    size_t n = 0;
    for (char *p = e->buf; *p;) {
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        lines[n++] = p;
        p = nl + 1;
    }
    e->cols = calloc(n + 1, sizeof *e->cols);
    for (size_t i = 0; i < n;) {
        tu_expect_col *c = &e->cols[e->ncols++];
        char *hdr = lines[i];
        /* "column <path> <mode> <count>"; paths have no spaces. */
        c->path = strchr(hdr, ' ') + 1;
        c->mode = strchr(c->path, ' ');
        *c->mode++ = '\0';
        char *cnt = strchr(c->mode, ' ');
        *cnt++ = '\0';
        c->count = strtoul(cnt, NULL, 10);
        c->lines = malloc((c->count + 1) * sizeof *c->lines);
        memcpy(c->lines, lines + i + 1, c->count * sizeof *c->lines);
        i += 1 + c->count;
    }
    free(lines);
    return 0;
}

void tu_expect_free(tu_expect *e)
{
    for (int i = 0; i < e->ncols; i++)
        free(e->cols[i].lines);
    free(e->cols);
    free(e->buf);
    memset(e, 0, sizeof *e);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int tu_line_equals(const char *line, const uint8_t *p, size_t n)
{
    size_t k = 0;
    if (line[0] == '#') {
        for (const char *s = line + 1; *s; s += 2, k++)
            if (k >= n || hexval(s[0]) * 16 + hexval(s[1]) != p[k])
                return 0;
        return k == n;
    }
    if (line[0] != '=')
        return 0;
    for (const char *s = line + 1; *s; k++) {
        int b;
        if (s[0] == '\\' && s[1] == 'x') {
            b = hexval(s[2]) * 16 + hexval(s[3]);
            s += 4;
        } else {
            b = (unsigned char)*s++;
        }
        if (k >= n || b != p[k])
            return 0;
    }
    return k == n;
}

void tw_init(tw *w)
{
    memset(w, 0, sizeof *w);
    w->depth = 1;
}

void tw_byte(tw *w, uint8_t b)
{
    if (w->len < sizeof w->buf)
        w->buf[w->len++] = b;
}

void tw_uleb(tw *w, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        tw_byte(w, b | (v ? 0x80 : 0));
    } while (v);
}

void tw_zigzag(tw *w, int64_t v)
{
    tw_uleb(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void tw_field(tw *w, int16_t id, uint8_t type)
{
    int16_t *last = &w->last[w->depth - 1];
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        tw_byte(w, (uint8_t)(delta << 4 | type));
    } else {
        tw_byte(w, type);
        tw_zigzag(w, id);
    }
    *last = id;
}

void tw_begin(tw *w)
{
    w->last[w->depth++] = 0;
}

void tw_end(tw *w)
{
    tw_byte(w, 0);
    w->depth--;
}

void tw_binary(tw *w, const char *s)
{
    size_t n = strlen(s);
    tw_uleb(w, n);
    for (size_t i = 0; i < n; i++)
        tw_byte(w, (uint8_t)s[i]);
}

void tw_list(tw *w, uint8_t elem_type, uint32_t n)
{
    if (n < 15) {
        tw_byte(w, (uint8_t)(n << 4 | elem_type));
    } else {
        tw_byte(w, (uint8_t)(0xf0 | elem_type));
        tw_uleb(w, n);
    }
}

void tw_i32f(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, 5);
    tw_zigzag(w, v);
}

void tw_i64f(tw *w, int16_t id, int64_t v)
{
    tw_field(w, id, 6);
    tw_zigzag(w, v);
}
