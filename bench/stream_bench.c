/* stream_bench.c — throughput of pq_stream against the whole-page decoder.
 *
 *   stream_bench [--reps N] FILE.parquet...
 *
 * Every data page of every column of each file (loaded into memory first:
 * no I/O is timed) is decoded twice, single-threaded, one after the other:
 *   whole   pq_page_decode, then a walk over its levels and values;
 *   stream  pq_stream_open (default options, reading the body from memory
 *           in reads of the stream's read_size) and pq_stream_next over all
 *           entries, then pq_stream_close.
 * Both touch every value byte (summed) and every level, and the sums must
 * agree, so nothing can be optimised away and the stream is checked against
 * the whole-page decoder page by page. The walk over the file (page headers,
 * dictionaries) is outside the timed regions.
 *
 * Throughput is MB/s (10^6 bytes) of decompressed page bodies (the pages'
 * uncompressed_size) per second of the thread's CPU time (the machine the
 * figures come from is shared: wall time swung 2-10x between runs, CPU time
 * much less), the median of N (default 3) passes over the file;
 * ratio = stream / whole. Prints one Markdown table row per file (the
 * header first). Pages the stream refuses ("not streamable") are counted
 * and left out of both figures.
 *
 * bench/stream_data.py writes the files of bench/results/stream.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pq_stream.h"
#include "tu.h"

typedef struct sums {
    uint64_t levels; /* sum of rep * 65536 + def over the entries */
    uint64_t bytes;  /* sum of every value byte */
    uint64_t nvalues;
} sums;

typedef struct pass {
    double whole_s, stream_s;
    uint64_t body_bytes; /* decompressed, of the pages streamed */
    uint64_t pages, refused; /* pages streamed (and timed), refused by the stream */
} pass;

typedef struct body_reader {
    const uint8_t *p;
    size_t left;
} body_reader;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t byte_sum(const uint8_t *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += p[i];
    return s;
}

static int read_body(void *ctx, uint8_t *buf, size_t want, size_t *got, pq_error *err)
{
    (void)err;
    body_reader *r = ctx;
    size_t n = want < r->left ? want : r->left;
    memcpy(buf, r->p, n);
    r->p += n;
    r->left -= n;
    *got = n;
    return 0;
}

static int whole(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                 const pq_dictionary *dict, sums *s, pq_error *err)
{
    pq_page_values v;
    if (pq_page_decode(col, h, body, (size_t)h->compressed_size, dict, &v, err) < 0)
        return -1;
    for (uint32_t i = 0; i < v.num_levels; i++)
        s->levels += (uint64_t)(v.rep_levels ? v.rep_levels[i] : 0) * 65536 +
                     (v.def_levels ? v.def_levels[i] : 0);
    for (uint32_t k = 0; k < v.num_values; k++) {
        pq_bytes value = pq_page_value(&v, k);
        s->bytes += byte_sum(value.ptr, value.len);
    }
    s->nvalues += v.num_values;
    pq_page_values_free(&v);
    return 0;
}

/* 1 streamed, 0 refused as not streamable, -1 error. */
static int stream(const pq_column_desc *col, const pq_page_header *h, const uint8_t *body,
                  const pq_dictionary *dict, sums *s, pq_error *err)
{
    body_reader r = { body, (size_t)h->compressed_size };
    pq_stream *st = pq_stream_open(col, h, dict, NULL, read_body, &r, err);
    if (!st)
        return strstr(err->msg, "not streamable") ? 0 : -1;
    pq_stream_entry e;
    int rc;
    while ((rc = pq_stream_next(st, &e, err)) == 1) {
        s->levels += (uint64_t)e.rep * 65536 + e.def;
        if (e.has_value) {
            s->bytes += byte_sum(e.value.ptr, e.value.len);
            s->nvalues++;
        }
    }
    pq_stream_close(st);
    return rc < 0 ? -1 : 1;
}

static int on_page(void *ctx, const pq_leaf *leaf, const pq_column_desc *col,
                   const pq_page_header *h, const uint8_t *body, const pq_dictionary *dict,
                   pq_error *err)
{
    (void)leaf;
    pass *p = ctx;
    sums w = { 0 }, s = { 0 };
    double t0 = now();
    if (whole(col, h, body, dict, &w, err) < 0)
        return -1;
    double t1 = now();
    int rc = stream(col, h, body, dict, &s, err);
    double t2 = now();
    if (rc < 0)
        return -1;
    if (rc == 0) { /* left out of both columns */
        p->refused++;
        return 0;
    }
    p->pages++;
    p->body_bytes += (uint64_t)h->uncompressed_size;
    p->whole_s += t1 - t0;
    p->stream_s += t2 - t1;
    if (w.levels != s.levels || w.bytes != s.bytes || w.nvalues != s.nvalues)
        return pq_error_set(err, "page %llu: the stream's sums differ from the whole-page "
                                 "decoder's",
                            (unsigned long long)(p->pages + p->refused));
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int bench_file(const char *path, int reps)
{
    size_t len;
    uint8_t *data = tu_read(path, &len);
    if (!data) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    tu_file f;
    pq_error err = { "" };
    if (tu_open(data, len, &f, &err) < 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        free(data);
        return -1;
    }
    double whole_mbs[64], stream_mbs[64];
    pass p = { 0 };
    int rc = 0;
    for (int r = 0; r < reps && rc == 0; r++) {
        memset(&p, 0, sizeof p);
        for (int c = 0; c < f.nleaves && rc == 0; c++)
            rc = tu_walk_raw(&f, c, on_page, &p, &err);
        whole_mbs[r] = p.whole_s > 0 ? (double)p.body_bytes / 1e6 / p.whole_s : 0;
        stream_mbs[r] = p.stream_s > 0 ? (double)p.body_bytes / 1e6 / p.stream_s : 0;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
    } else {
        qsort(whole_mbs, (size_t)reps, sizeof(double), cmp_double);
        qsort(stream_mbs, (size_t)reps, sizeof(double), cmp_double);
        const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        printf("| %s | %llu | %.1f | %llu | %.0f | %.0f | %.2f |\n", name,
               (unsigned long long)p.pages, (double)p.body_bytes / 1e6,
               (unsigned long long)p.refused, whole_mbs[reps / 2], stream_mbs[reps / 2],
               stream_mbs[reps / 2] / whole_mbs[reps / 2]);
        fflush(stdout);
    }
    tu_close(&f);
    free(data);
    return rc;
}

int main(int argc, char **argv)
{
    int reps = 3, i = 1;
    if (argc > 2 && strcmp(argv[1], "--reps") == 0) {
        reps = atoi(argv[2]);
        i = 3;
    }
    if (i >= argc || reps < 1 || reps > 64) {
        fprintf(stderr, "usage: stream_bench [--reps N (1-64)] FILE.parquet...\n");
        return 2;
    }
    printf("| file | data pages | decompressed MB | not streamable | whole MB/s | stream MB/s "
           "| stream / whole |\n|---|---|---|---|---|---|---|\n");
    int rc = 0;
    for (; i < argc; i++)
        rc |= bench_file(argv[i], reps) < 0;
    return rc;
}
