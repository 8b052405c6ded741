/* decode_bench.c — single-threaded decode throughput of one column.
 *
 *   decode_bench DATASET COLUMN REPS [--format jsonl|text|len32]
 *                [--malloc daemon|glibc] [--json]
 *
 * 1. Index pass: ix_build with threads=1, timed once. ix_build decodes every
 *    page once to size the records, so this is itself a full decode (plus
 *    framing); it is reported separately from the decode pass.
 * 2. Decode pass, REPS times (best and median reported): every page of the
 *    column in index order through ix_read_page (pread of the page, header
 *    parse, decompression, levels, values), with the chunk's dictionary read
 *    by ix_read_dictionary the first time one of its pages needs it and kept
 *    while that chunk's pages are decoded, as the read path does. Every value
 *    is touched: its length, first and last byte are summed (0 for an empty
 *    value), so nothing can be optimised away and the sums can be checked
 *    against pyarrow's (bench/decode_bench.py computes the same three).
 *
 * --malloc: daemon (default) tunes malloc as fs/main.c tunes the daemon's
 * (one arena, 64 MiB mmap threshold, 32 MiB trim threshold: without the
 * last, setting the mmap threshold freezes glibc's trim threshold at 128 KiB
 * and every freed page buffer is faulted in again), so the decoder allocates
 * as it does in a mount; glibc keeps glibc's defaults.
 *
 * Wall time is the measure; the best CPU time (user + sys of the process) is
 * reported too, as a check when other work shares the machine.
 *
 * Throughput is values/s and MB/s of value bytes (10^6 bytes of the values
 * themselves, not of the Parquet file). --json prints one JSON object on
 * stdout for bench/decode.sh; otherwise a human-readable summary.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ix_index.h"
#include "ix_read.h"

typedef struct sums {
    uint64_t values;
    uint64_t bytes;
    uint64_t first;
    uint64_t last;
    uint64_t read; /* bytes read from the files (pages and dictionaries) */
} sums;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void touch(const pq_page_values *v, sums *s)
{
    uint64_t bytes = 0, first = 0, last = 0;
    for (uint32_t k = 0; k < v->num_values; k++) {
        pq_bytes value = pq_page_value(v, k);
        const pq_bytes *b = &value;
        bytes += b->len;
        if (b->len) {
            first += b->ptr[0];
            last += b->ptr[b->len - 1];
        }
    }
    s->values += v->num_values;
    s->bytes += bytes;
    s->first += first;
    s->last += last;
}

/* The last chunk's dictionary, loaded when a page needs it. */
typedef struct kept_dict {
    const ix_index *ix;
    uint32_t chunk;
    pq_dictionary dict;
    uint64_t *read;
} kept_dict;

static int keep_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                           pq_error *err)
{
    kept_dict *k = ctx;
    if (k->chunk != chunk) {
        if (k->chunk != UINT32_MAX)
            pq_dictionary_free(&k->dict);
        k->chunk = UINT32_MAX;
        if (ix_read_dictionary(k->ix, chunk, &k->dict, k->read, err) < 0)
            return -1;
        k->chunk = chunk;
    }
    *dict = &k->dict;
    *handle = NULL; /* kept here, not released per page */
    return 0;
}

/* One decode pass over every page of the column. */
static int decode_all(const ix_index *ix, sums *s, pq_error *err)
{
    memset(s, 0, sizeof *s);
    /* One dictionary kept: the chunk's pages come in order, as a reader's would. */
    kept_dict kept = { .ix = ix, .chunk = UINT32_MAX, .read = &s->read };
    ix_dict_source dicts = { keep_dictionary, &kept };
    int rc = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        pq_page_values v;
        void *handle;
        if (ix_read_page(ix, p, &dicts, &v, &handle, &s->read, err) < 0) {
            rc = -1;
            break;
        }
        touch(&v, s);
        pq_page_values_free(&v);
    }
    if (kept.chunk != UINT32_MAX)
        pq_dictionary_free(&kept.dict);
    return rc;
}

static void usage(void)
{
    fprintf(stderr, "usage: decode_bench DATASET COLUMN REPS [--format jsonl|text|len32] "
                    "[--malloc daemon|glibc] [--json]\n");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        usage();
        return 2;
    }
    const char *dataset = argv[1], *column = argv[2];
    int reps = atoi(argv[3]);
    int json = 0;
    const char *malloc_mode = "daemon";
    ix_format format = IX_FORMAT_JSONL;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--malloc") == 0 && i + 1 < argc) {
            malloc_mode = argv[++i];
            if (strcmp(malloc_mode, "daemon") != 0 &&
                strcmp(malloc_mode, "glibc") != 0) {
                usage();
                return 2;
            }
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (ix_format_parse(argv[++i], &format) < 0) {
                fprintf(stderr, "decode_bench: unknown format %s\n", argv[i]);
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    if (reps < 1) {
        usage();
        return 2;
    }

    if (strcmp(malloc_mode, "daemon") == 0) { /* as fs/main.c */
        mallopt(M_ARENA_MAX, 1);
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 32 << 20);
    }

    pq_error err = {{0}};
    ix_options opts = {.dataset = dataset, .column = column, .frame = {.format = format}, .threads = 1};
    ix_index *ix = NULL;
    double t0 = now();
    if (ix_build(&opts, &ix, &err) < 0) {
        fprintf(stderr, "decode_bench: %s\n", err.msg);
        return 1;
    }
    double index_s = now() - t0;

    double *times = calloc((size_t)reps, sizeof *times);
    double *cpu = calloc((size_t)reps, sizeof *cpu);
    if (!times || !cpu) {
        free(times);
        free(cpu);
        ix_free(ix);
        return 1;
    }
    sums s, first_sums;
    for (int r = 0; r < reps; r++) {
        double c0 = cpu_now();
        t0 = now();
        if (decode_all(ix, &s, &err) < 0) {
            fprintf(stderr, "decode_bench: %s\n", err.msg);
            free(times);
            ix_free(ix);
            return 1;
        }
        times[r] = now() - t0;
        cpu[r] = cpu_now() - c0;
        if (r == 0)
            first_sums = s;
        else if (memcmp(&s, &first_sums, sizeof s) != 0) {
            fprintf(stderr, "decode_bench: pass %d gave different sums\n", r);
            free(times);
            ix_free(ix);
            return 1;
        }
    }
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    qsort(cpu, (size_t)reps, sizeof *cpu, cmp_double);
    double best = times[0], median = times[reps / 2], best_cpu = cpu[0];
    free(cpu);
    if (s.values != ix->num_records) {
        fprintf(stderr, "decode_bench: decoded %llu values, the index says %llu\n",
                (unsigned long long)s.values, (unsigned long long)ix->num_records);
        free(times);
        ix_free(ix);
        return 1;
    }

    if (json) {
        printf("{\"files\": %u, \"chunks\": %u, \"pages\": %llu, \"values\": %llu, "
               "\"value_bytes\": %llu, \"sum_first\": %llu, \"sum_last\": %llu, "
               "\"bytes_read\": %llu, \"reps\": %d, \"best_s\": %.6f, \"median_s\": %.6f, "
               "\"best_cpu_s\": %.6f, "
               "\"index_s\": %.6f, \"index_footers_s\": %.6f, \"index_pages_s\": %.6f, "
               "\"malloc\": \"%s\"}\n",
               ix->num_files, ix->num_chunks, (unsigned long long)ix->num_pages,
               (unsigned long long)s.values, (unsigned long long)s.bytes,
               (unsigned long long)s.first, (unsigned long long)s.last,
               (unsigned long long)s.read, reps, best, median, best_cpu, index_s, ix->seconds_footers,
               ix->seconds_pages, malloc_mode);
    } else {
        printf("%s column %s: %u files, %u chunks, %llu pages, %llu values, %.1f MB of values\n",
               dataset, column, ix->num_files, ix->num_chunks, (unsigned long long)ix->num_pages,
               (unsigned long long)s.values, (double)s.bytes / 1e6);
        printf("malloc: %s\n", malloc_mode);
        printf("index pass (ix_build, threads=1): %.3f s (footers %.3f s, pages %.3f s)\n",
               index_s, ix->seconds_footers, ix->seconds_pages);
        printf("decode pass, best of %d: %.3f s (median %.3f s, best CPU time %.3f s), "
               "%.2f M values/s, %.0f MB/s\n",
               reps, best, median, best_cpu, (double)s.values / best / 1e6, (double)s.bytes / best / 1e6);
        printf("sums: len %llu first %llu last %llu\n", (unsigned long long)s.bytes,
               (unsigned long long)s.first, (unsigned long long)s.last);
    }
    free(times);
    ix_free(ix);
    return 0;
}
