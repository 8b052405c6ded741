/* ix_stream.h: an entry's records streamed in bounded memory are exactly
 * those of the whole decode (ix_read_page + ix_page_records), on every
 * codec, flat and list columns, nulls, dictionary and v2 pages, read
 * directly or ahead (ix_ahead.h); the memory
 * held stays within the cap; change detection fires on a rewrite. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ix_ahead.h"
#include "ix_index.h"
#include "ix_read.h"
#include "ix_stream.h"
#include "tix.h"

#define FIXTURES YFS_SOURCE_DIR "/tests/decode/fixtures/"

static ix_index *build(const char *dataset, const char *column)
{
    ix_options o = { .dataset = dataset, .column = column, .frame = { IX_FORMAT_JSONL },
                     .threads = 1 };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s: %s", dataset, err.msg);
    return ix;
}

static int same_record(const ix_record *a, const ix_record *b)
{
    if (a->row != b->row || a->levels != b->levels || (!a->defs) != (!b->defs))
        return 0;
    for (uint32_t k = 0; a->defs && k < a->levels; k++)
        if (a->defs[k] != b->defs[k])
            return 0;
    return 1;
}

/* The values of a record: a list's defined entries, or the one value. */
static uint32_t record_values(const ix_index *ix, const ix_record *r)
{
    if (!r->defs)
        return 1;
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->levels; k++)
        n += r->defs[k] == ix->framing.shape.max_def;
    return n;
}

/* Stream every entry of ix with opts and compare with the whole decode,
 * letting go of the reads ahead after every `shed_every`-th record (0:
 * never; *shed counts the sheds that freed something, when not NULL).
 * Returns how many entries streamed (the others are not streamable). */
/* Charging as it goes (ix_stream.h): what the stream open now was granted,
 * through `grant` (reset at each open). */
static size_t granted;

static int grant(void *ctx, size_t more, int may_refuse, pq_error *err)
{
    (void)ctx;
    (void)may_refuse;
    (void)err;
    granted += more;
    return 0;
}

/* ... refusing every read ahead. */
static int grant_no_reads_ahead(void *ctx, size_t more, int may_refuse, pq_error *err)
{
    return may_refuse ? -1 : grant(ctx, more, may_refuse, err);
}

static void assert_same_record(const ix_index *ix, const ix_record *got,
                               const ix_record *want, uint64_t entry, uint32_t k)
{
    cr_assert(same_record(got, want), "entry %llu record %u: levels or row differ",
              (unsigned long long)entry, k);
    uint32_t n = record_values(ix, got);
    for (uint32_t i = 0; i < n; i++) {
        pq_bytes g = pq_value_at(&got->values, i), w = pq_value_at(&want->values, i);
        cr_assert_eq(g.len, w.len);
        cr_assert(g.len == 0 || memcmp(g.ptr, w.ptr, g.len) == 0,
                  "entry %llu record %u value %u differs", (unsigned long long)entry, k, i);
    }
}

/* The records of entry p by the whole decode (ix_read_page +
 * ix_page_records): the oracle of every stream. */
typedef struct whole_entry {
    pq_page_values v;
    void *dict;
    ix_record *recs;
    uint32_t count;
} whole_entry;

static void whole_entry_read(ix_index *ix, uint64_t p, const ix_dict_source *dicts,
                             whole_entry *w)
{
    const ix_page *pg = &ix->pages[p];
    pq_error err;
    uint64_t read = 0;
    uint32_t rows;
    cr_assert_eq(ix_read_page(ix, p, dicts, &w->v, &w->dict, &read, &err), 0, "%s", err.msg);
    w->recs = malloc((pg->records + 1) * sizeof *w->recs);
    cr_assert_eq(ix_page_records(&ix->framing.shape, &w->v, pg->first_row, w->recs, pg->records,
                                 &w->count, &rows, &err), 0, "%s", err.msg);
}

static void whole_entry_free(whole_entry *w)
{
    free(w->recs);
    pq_page_values_free(&w->v);
    tix_free_dictionary(w->dict);
}

static uint64_t compare_shedding(ix_index *ix, const ix_stream_opts *opts, uint32_t shed_every,
                                 uint64_t *shed)
{
    size_t cap = opts && opts->cap ? opts->cap : ix_stream_cap();
    ix_dict_source dicts = { tix_load_dictionary, ix };
    uint64_t streamed = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        pq_error err;
        void *stream_dict;
        uint64_t read = 0;
        whole_entry w;
        whole_entry_read(ix, p, &dicts, &w);
        const ix_record *recs = w.recs;
        uint32_t count = w.count;
        granted = 0;
        ix_stream *s = ix_stream_open(ix, p, &dicts, &stream_dict, opts, &read, &err);
        if (!s) {
            cr_assert(strstr(err.msg, "not streamable"), "entry %llu: %s",
                      (unsigned long long)p, err.msg);
        } else {
            streamed++;
            ix_record r;
            uint32_t k = 0;
            int rc;
            while ((rc = ix_stream_next(s, &r, &err)) == 1) {
                cr_assert_lt(k, count, "entry %llu: more records than the whole decode",
                             (unsigned long long)p);
                assert_same_record(ix, &r, &recs[k], p, k);
                cr_assert_leq(ix_stream_bytes(s), ix_stream_committed(s));
                cr_assert_leq(ix_stream_committed(s), cap);
                if (opts && opts->grow)
                    cr_assert_leq(ix_stream_committed(s), granted, "entry %llu record %u: "
                                  "committed beyond its grant", (unsigned long long)p, k);
                k++;
                if (shed_every && k % shed_every == 0) {
                    size_t held = ix_stream_bytes(s), committed = ix_stream_committed(s);
                    size_t freed = ix_stream_shed(s);
                    cr_assert_eq(ix_stream_bytes(s), held - freed, "shedding frees what it says");
                    cr_assert_eq(ix_stream_sheddable(s), 0);
                    cr_assert_eq(ix_stream_committed(s), committed - freed);
                    *shed += freed > 0;
                }
            }
            cr_assert_eq(rc, 0, "entry %llu: %s", (unsigned long long)p, err.msg);
            cr_assert_eq(k, count, "entry %llu: %u records streamed, %u decoded",
                         (unsigned long long)p, k, count);
            cr_assert_eq(ix_stream_next(s, &r, &err), 0, "the end stays the end");
            ix_stream_close(s);
            tix_free_dictionary(stream_dict);
        }
        whole_entry_free(&w);
    }
    return streamed;
}

static uint64_t compare_all(ix_index *ix, const ix_stream_opts *opts)
{
    return compare_shedding(ix, opts, 0, NULL);
}

static void check_file(const char *path, const char *column, int want_streamed)
{
    ix_index *ix = build(path, column);
    ix_stream_opts small = { .read_size = 64 }; /* every window boundary */
    /* entries read ahead in windows smaller than their pages and than
     * their headers (ix_ahead.h) */
    ix_stream_opts ahead = { .read_size = 64, .window = 1000, .ahead = 1 };
    /* charged as it goes, never holding more than it was granted, with
     * its reads ahead granted or refused */
    ix_stream_opts charged = { .read_size = 64, .window = 1000, .ahead = 1, .grow = grant };
    ix_stream_opts refused = charged;
    refused.grow = grant_no_reads_ahead;
    uint64_t a = compare_all(ix, NULL), b = compare_all(ix, &small), c = compare_all(ix, &ahead);
    cr_assert_eq(a, b);
    cr_assert_eq(a, c);
    cr_assert_eq(a, compare_all(ix, &charged));
    cr_assert_eq(a, compare_all(ix, &refused));
    if (want_streamed)
        cr_assert_eq(a, ix->num_pages, "%s %s: %llu of %llu entries streamed", path, column,
                     (unsigned long long)a, (unsigned long long)ix->num_pages);
    ix_free(ix);
}

Test(stream, sample_text_with_nulls)
{
    check_file(TIX_SAMPLE, "text", 1);
    check_file(TIX_SAMPLE, "id", 1);
}

Test(stream, every_codec_lists_and_text)
{
    static const char *codecs[] = { "none", "snappy", "gzip", "zstd", "brotli", "lz4" };
    for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "stream_%s.parquet", codecs[i]);
        check_file(path, "ids", 1);
        check_file(path, "text", 1);
        check_file(path, "cat", 1);
    }
}

Test(stream, dictionary_v2_and_list_of_strings)
{
    static const char *files[] = { "gen_dict_v1_snappy", "gen_dict_v2_gzip", "gen_plain_v1_none",
                                   "gen_plain_v2_brotli", "gen_dict_v1_zstd_pageindex" };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s.parquet", files[i]);
        check_file(path, "s", 1);
        check_file(path, "lst", 1);
        check_file(path, "i64", 1);
    }
    /* DELTA encodings do not stream: open says so, the whole decode serves */
    check_file(FIXTURES "gen_delta_v2_none.parquet", "s", 0);
}

Test(stream, a_tight_cap_refuses_instead_of_overrunning)
{
    ix_index *ix = build(FIXTURES "stream_zstd.parquet", "ids");
    ix_stream_opts tiny = { .cap = 64 << 10 };
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, &tiny, &read, &err);
    cr_assert_null(s);
    cr_assert(strstr(err.msg, "not streamable"), "%s", err.msg);
    ix_free(ix);
}

/* A first full pass learns the first entry's CRC; a byte of it flipped,
 * a stream stopped after one record still catches it. */
/* Flip the byte at `at` of the file, keeping its size and mtime: only its
 * ctime moves. */
static void flip_byte(const char *path, uint64_t at)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    FILE *fp = fopen(path, "r+b");
    cr_assert_not_null(fp, "%s", path);
    fseek(fp, (long)at, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, (long)at, SEEK_SET);
    fputc(c ^ 0x55, fp);
    fclose(fp);
    struct timespec times[2] = { st.st_atim, st.st_mtim };
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
}

static void stop_early_after_a_rewrite(const ix_stream_opts *opts)
{
    char dataset[TIX_PATH], cache[TIX_PATH];
    tix_copy_sample(dataset, cache);
    ix_index *ix = build(dataset, "text");
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    cr_assert_gt(ix->pages[0].length, 200, "the entry spans several windows");
    /* a first full pass learns the entry's CRC */
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, opts, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    ix_record r;
    while (ix_stream_next(s, &r, &err) == 1)
        ;
    ix_stream_close(s);
    tix_free_dictionary(dict);
    cr_assert_neq(atomic_load(&ix->pages[0].crc), 0);

    /* flip one byte of the page's body, keeping size and mtime: the ctime
     * moves, the footer is the same, the CRC tells */
    const ix_file *f = &ix->files[ix->chunks[0].file];
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dataset, f->name);
    flip_byte(path, ix->pages[0].offset + ix->pages[0].length - 1);

    s = ix_stream_open(ix, 0, &dicts, &dict, opts, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
    cr_assert_eq(ix_stream_finish(s, &err), -1, "stopping early still compares the CRC");
    cr_assert(strstr(err.msg, "changed since mount"), "%s", err.msg);
    cr_assert(strstr(err.msg, f->name), "%s", err.msg);
    ix_stream_close(s);
    tix_free_dictionary(dict);
    ix_free(ix);
    tix_remove(dataset, cache);
}

Test(stream, stopping_early_then_a_rewrite_is_caught)
{
    stop_early_after_a_rewrite(NULL);
}

Test(stream, stopping_early_then_a_rewrite_is_caught_through_reads_ahead)
{
    ix_stream_opts ahead = { .read_size = 64, .window = 100, .ahead = 1 };
    stop_early_after_a_rewrite(&ahead);
}

/* ix_stream_committed of a stream over ix's first entry, opened with opts,
 * after its first record. */
static size_t bound_after_first_record(ix_index *ix, const ix_stream_opts *opts)
{
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, opts, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    ix_record r;
    cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
    size_t committed = ix_stream_committed(s);
    ix_stream_close(s);
    tix_free_dictionary(dict);
    return committed;
}

/* What a caller charging as it goes reserves for a stream of a list
 * column: what it holds and its page's bound, a small part of the cap it
 * reserved before (12 MiB, of which 3 for a row; yfs_units.c). */
Test(stream, a_list_stream_charged_as_it_goes_is_granted_far_less_than_its_cap)
{
    ix_index *ix = build(FIXTURES "stream_zstd.parquet", "ids");
    ix_dict_source dicts = { tix_load_dictionary, ix };
    ix_stream_opts charged = { .grow = grant };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    granted = 0;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, &charged, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    ix_record r;
    uint32_t records = 0;
    while (ix_stream_next(s, &r, &err) == 1)
        records++;
    cr_assert_eq(records, ix->pages[0].records);
    cr_assert_gt(granted, sizeof(void *), "it asked before it held");
    cr_assert_lt(granted, ix_stream_cap() / 4, "granted %zu of a cap of %zu", granted,
                 ix_stream_cap());
    ix_stream_close(s);
    tix_free_dictionary(dict);
    ix_free(ix);
}

Test(stream, no_reads_ahead_from_fast_storage)
{
    ix_index *ix = build(FIXTURES "stream_none.parquet", "text");
    ix_stream_opts when_slow = { .window = 100 }, never = { .window = 100, .ahead = -1 };
    cr_assert_eq(bound_after_first_record(ix, &when_slow), bound_after_first_record(ix, &never),
                 "a first read from the page cache is fast: no reads ahead, none counted");
    ix_free(ix);
}

Test(stream, reads_ahead_once_a_read_is_slow)
{
    setenv("YOUMUFS_READ_DELAY_US", "2000", 1); /* read once per process: this test's */
    /* an entry longer than the first read (the header's probe of 64 KiB) */
    ix_index *ix = build(FIXTURES "stream_none.parquet", "text");
    cr_assert_gt(ix->pages[0].length, (64u << 10) + 100);
    ix_stream_opts when_slow = { .window = 100 }, never = { .window = 100, .ahead = -1 };
    size_t slow = bound_after_first_record(ix, &when_slow);
    size_t direct = bound_after_first_record(ix, &never);
    cr_assert_eq(slow, direct + ix_ahead_bytes(100, IX_AHEAD_WINDOWS),
                 "2 ms per read: the stream reads ahead, and counts it (%zu, %zu direct)", slow,
                 direct);
    cr_assert_eq(compare_all(ix, &when_slow), compare_all(ix, &never), "the same records");
    ix_free(ix);
}

/* The deepest the reads ahead of a stream over the first entry went (what
 * ix_stream_shed would let go) as it streamed every record of it, never
 * past what it was granted or its cap. (That reads ahead at any depth give
 * the same records: compare_all with opts of one window.) */
static size_t deepest_reads_ahead(ix_index *ix, const ix_stream_opts *opts)
{
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    granted = 0;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, opts, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    size_t deepest = 0;
    uint32_t records = 0;
    ix_record r;
    int rc;
    while ((rc = ix_stream_next(s, &r, &err)) == 1) {
        records++;
        size_t ahead = ix_stream_sheddable(s);
        deepest = ahead > deepest ? ahead : deepest;
        cr_assert_leq(ix_stream_committed(s), opts->cap ? opts->cap : ix_stream_cap());
        cr_assert_leq(ix_stream_committed(s), granted, "asked before it held");
    }
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_eq(records, ix->pages[0].records);
    ix_stream_close(s);
    tix_free_dictionary(dict);
    return deepest;
}

/* 300 us per read, a stream decodes faster than 4 windows of 256 bytes
 * arrive: it takes more windows each time it waits, up to the most or as
 * far as the cap allows, each granted before it is held. */
Test(stream, a_stream_that_waits_for_its_reads_ahead_deepens_them_as_far_as_it_may)
{
    setenv("YOUMUFS_READ_DELAY_US", "300", 1); /* read once per process: this test's */
    ix_index *ix = build(YFS_SOURCE_DIR "/tests/data/stream/duckdb_tokens.parquet",
                         "input_ids");
    const size_t w = 256;
    /* past the stream's first read (64 KiB, a wait), rounds to the most */
    cr_assert_gt(ix->pages[0].length, (64u << 10) + w * 8 * IX_AHEAD_WINDOWS_MAX);
    ix_stream_opts free_rein = { .read_size = 64, .window = w, .ahead = 1, .grow = grant };
    size_t d = deepest_reads_ahead(ix, &free_rein);
    /* How many times it waits depends on the machine's pace (under the
     * sanitizers on a busy machine, one run stopped at 15 of 16): past the
     * cap below, and never past the most. */
    cr_assert_gt(d, ix_ahead_bytes(w, IX_AHEAD_WINDOWS + 2), "%zu windows",
                 (d - ix_ahead_bytes(w, 0)) / w);
    cr_assert_leq(d, ix_ahead_bytes(w, IX_AHEAD_WINDOWS_MAX), "%zu windows",
                  (d - ix_ahead_bytes(w, 0)) / w);
    ix_stream_opts tight = { .read_size = 64, .window = w, .ahead = 1, .grow = grant,
                             .cap = IX_STREAM_CAP + ix_ahead_bytes(w, IX_AHEAD_WINDOWS + 2) };
    cr_assert_eq(deepest_reads_ahead(ix, &tight), ix_ahead_bytes(w, IX_AHEAD_WINDOWS + 2),
                 "as deep as the cap leaves room for");
    ix_free(ix);
}

/* A stream opened with its entry's first bytes, read by the caller that
 * weighed it (ix_entry_first_header), goes on from there: every record as a
 * stream that reads them itself, every byte of the entry read once. */
Test(stream, a_stream_given_its_entrys_head_reads_on_from_there_with_the_same_records)
{
    static const char *const files[][2] = {
        { FIXTURES "stream_none.parquet", "text" },  /* entries longer than the head */
        { FIXTURES "stream_zstd.parquet", "ids" },
        { YFS_SOURCE_DIR "/tests/data/stream/duckdb_text.parquet", "text" },
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        ix_index *ix = build(files[f][0], files[f][1]);
        ix_dict_source dicts = { tix_load_dictionary, ix };
        for (uint64_t p = 0; p < ix->num_pages; p++) {
            pq_error err;
            pq_page_header h;
            ix_entry_head head;
            uint64_t read = 0, plain_read = 0;
            cr_assert_eq(ix_entry_first_header(ix, p, &h, &head, &read, &err), 0, "%s",
                         err.msg);
            cr_assert_eq(read, head.len);
            ix_stream_opts given = { .head = &head }, own = { 0 };
            void *dict, *plain_dict;
            ix_stream *s = ix_stream_open(ix, p, &dicts, &dict, &given, &read, &err);
            cr_assert_not_null(s, "%s: %s", files[f][0], err.msg);
            cr_assert_null(head.bytes, "taken over");
            ix_stream *plain = ix_stream_open(ix, p, &dicts, &plain_dict, &own, &plain_read,
                                              &err);
            cr_assert_not_null(plain, "%s", err.msg);
            ix_record r, want;
            uint32_t k = 0;
            int rc;
            while ((rc = ix_stream_next(s, &r, &err)) == 1) {
                cr_assert_eq(ix_stream_next(plain, &want, &err), 1, "%s", err.msg);
                assert_same_record(ix, &r, &want, p, k++);
            }
            cr_assert_eq(rc, 0, "%s: %s", files[f][0], err.msg);
            cr_assert_eq(ix_stream_next(plain, &want, &err), 0, "as many records");
            cr_assert_eq(k, ix->pages[p].records);
            cr_assert_eq(read, plain_read, "%s entry %llu: each byte read once", files[f][0],
                         (unsigned long long)p);
            cr_assert_eq(read, ix->pages[p].length);
            ix_stream_close(s);
            ix_stream_close(plain);
            tix_free_dictionary(dict);
            tix_free_dictionary(plain_dict);
        }
        ix_free(ix);
    }
}

/* A stream that let go of its reads ahead (ix_stream_shed, for a paused
 * stream whose room a build needs) goes on where it was, reading ahead
 * again: the same records, every one, whether shed every record or every
 * few, at window boundaries or inside them. */
Test(stream, a_stream_shed_of_its_reads_ahead_goes_on_with_the_same_records)
{
    ix_index *ix = build(FIXTURES "stream_none.parquet", "text");
    ix_stream_opts ahead = { .read_size = 64, .window = 1000, .ahead = 1 };
    uint64_t whole = compare_all(ix, &ahead);
    cr_assert_gt(whole, 0);
    for (uint32_t every = 1; every <= 7; every += 3) {
        uint64_t shed = 0;
        cr_assert_eq(compare_shedding(ix, &ahead, every, &shed), whole);
        cr_assert_gt(shed, 0, "every %u records: the reads ahead were let go", every);
    }
    ix_free(ix);
}

/* Forking (ix_stream_fork). Every entry of the file, forked after its
 * first record, in its middle and before its last: the original goes on to
 * its end, then the fork, and both hand out the whole decode's records from
 * there, the fork vouching for the entry at its end (its CRC carried over).
 * Read directly (`ahead` 0), the fork reads exactly the bytes after the
 * original's place; read ahead in small windows, forks are taken with
 * reads in flight (a window counts as read when first used: the bytes are
 * not compared). Returns how many forks were taken. */
static uint32_t fork_everywhere(const char *path, const char *column, int ahead_on)
{
    ix_index *ix = build(path, column);
    ix_dict_source dicts = { tix_load_dictionary, ix };
    ix_stream_opts ahead = { .read_size = 64, .window = 1000, .ahead = ahead_on ? 1 : -1 };
    uint32_t forks = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        const ix_page *pg = &ix->pages[p];
        pq_error err;
        whole_entry w;
        whole_entry_read(ix, p, &dicts, &w);
        const ix_record *recs = w.recs;
        uint32_t count = w.count;
        const uint32_t ats[] = { 1, count / 2, count > 1 ? count - 1 : 1 };
        for (size_t a = 0; a < sizeof ats / sizeof ats[0] && ats[a] <= count; a++) {
            void *dict, *fork_dict = NULL;
            uint64_t before = 0, after = 0;
            ix_stream *s = ix_stream_open(ix, p, &dicts, &dict, &ahead, &before, &err);
            cr_assert_not_null(s, "%s entry %llu: %s", path, (unsigned long long)p, err.msg);
            ix_record r;
            uint32_t k = 0;
            for (; k < ats[a]; k++) {
                cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
                assert_same_record(ix, &r, &recs[k], p, k);
            }
            uint64_t read_at_fork = before;
            ix_stream *f = ix_stream_fork(s, &err);
            cr_assert_not_null(f, "%s entry %llu record %u: %s", path, (unsigned long long)p, k,
                               err.msg);
            cr_assert_eq(ix_stream_sheddable(f), 0, "a fork holds no reads ahead");
            cr_assert_leq(ix_stream_bytes(f), ix_stream_bytes(s) - ix_stream_sheddable(s));
            ix_stream_rebind(f, &dicts, &fork_dict, &after);
            uint32_t j = k;
            int rc;
            for (; (rc = ix_stream_next(s, &r, &err)) == 1; j++)
                assert_same_record(ix, &r, &recs[j], p, j);
            cr_assert_eq(rc, 0, "%s", err.msg);
            cr_assert_eq(j, count);
            ix_stream_close(s); /* the fork owns nothing of the original's */
            for (j = k; (rc = ix_stream_next(f, &r, &err)) == 1; j++) {
                cr_assert_lt(j, count, "the fork hands out more records than the entry has");
                assert_same_record(ix, &r, &recs[j], p, j);
            }
            cr_assert_eq(rc, 0, "%s entry %llu, fork at %u: %s", path, (unsigned long long)p, k,
                         err.msg);
            cr_assert_eq(j, count, "%s: the fork ends with the entry", path);
            cr_assert(ahead_on || read_at_fork + after == pg->length,
                         "%s entry %llu: the fork read %llu bytes after %llu of %u", path,
                         (unsigned long long)p, (unsigned long long)after,
                         (unsigned long long)read_at_fork, pg->length);
            cr_assert_null(fork_dict);
            ix_stream_close(f);
            tix_free_dictionary(dict);
            forks++;
        }
        whole_entry_free(&w);
    }
    ix_free(ix);
    return forks;
}

Test(stream, a_fork_goes_on_from_its_place_with_the_same_records)
{
    static const char *const files[][2] = {
        { FIXTURES "stream_none.parquet", "text" },
        { FIXTURES "stream_snappy.parquet", "ids" },
        { FIXTURES "stream_lz4.parquet", "text" },
        /* rows that continue over many pages: forks between pages too */
        { YFS_SOURCE_DIR "/tests/data/stream/legacy_two_level_7.parquet", "ids" },
        { YFS_SOURCE_DIR "/tests/data/stream/legacy_bare_50.parquet", "ids" },
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        cr_assert_gt(fork_everywhere(files[f][0], files[f][1], 0), 0, "%s", files[f][0]);
        cr_assert_gt(fork_everywhere(files[f][0], files[f][1], 1), 0, "%s", files[f][0]);
    }
}

/* What cannot fork says so, and the original goes on untouched. */
static void refuses_to_fork(const char *path, const char *column, const char *why)
{
    ix_index *ix = build(path, column);
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, NULL, &read, &err);
    cr_assert_not_null(s, "%s", err.msg);
    ix_record r;
    cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
    cr_assert_null(ix_stream_fork(s, &err), "%s forked", path);
    cr_assert(strstr(err.msg, "not forkable") && strstr(err.msg, why), "%s: %s", path,
              err.msg);
    uint32_t records = 1;
    while (ix_stream_next(s, &r, &err) == 1)
        records++;
    cr_assert_eq(records, ix->pages[0].records);
    ix_stream_close(s);
    tix_free_dictionary(dict);
    ix_free(ix);
}

Test(stream, a_library_codec_or_a_dictionary_is_not_forked)
{
    refuses_to_fork(FIXTURES "stream_zstd.parquet", "ids", "ZSTD");
    refuses_to_fork(FIXTURES "gen_dict_v1_snappy.parquet", "s", "dictionary");
    refuses_to_fork(YFS_SOURCE_DIR "/tests/data/stream/duckdb_text.parquet", "text",
                    "dictionary");
}

/* ---- marks ---- */

/* Stream every entry, marking it every `stride` records, and resume from
 * each mark (reads ahead on or not): the records after the mark, exactly;
 * a mark taken from a resumed stream resumes too. Returns how many marks
 * resumed; *short_reads counts the resumed streams that read less than
 * half their entry. */
static uint32_t resume_everywhere(const char *path, const char *column, uint32_t stride,
                                  int ahead_on, uint32_t *short_reads)
{
    ix_index *ix = build(path, column);
    ix_dict_source dicts = { tix_load_dictionary, ix };
    ix_stream_opts opts = { .read_size = 4096, .window = 8192, .ahead = ahead_on ? 1 : -1 };
    uint32_t resumed = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        pq_error err;
        whole_entry w;
        whole_entry_read(ix, p, &dicts, &w);
        void *dict;
        uint64_t read = 0;
        ix_stream *s = ix_stream_open(ix, p, &dicts, &dict, &opts, &read, &err);
        cr_assert_not_null(s, "%s entry %llu: %s", path, (unsigned long long)p, err.msg);
        ix_record r;
        for (uint32_t k = 0; k < w.count; k++) {
            cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
            assert_same_record(ix, &r, &w.recs[k], p, k);
            ix_stream_mark m;
            if ((k + 1) % stride != 0 || !ix_stream_mark_here(s, &m))
                continue;
            cr_assert_geq(ix_stream_mark_bytes(&m), sizeof m);
            void *rdict = NULL;
            uint64_t after = 0;
            ix_stream *t = ix_stream_resume(ix, p, &dicts, &rdict, &opts, &m, &after, &err);
            ix_stream_mark_free(&m);
            cr_assert_not_null(t, "%s entry %llu, mark after record %u: %s", path,
                               (unsigned long long)p, k, err.msg);
            uint32_t j = k + 1;
            int rc;
            for (; (rc = ix_stream_next(t, &r, &err)) == 1; j++) {
                cr_assert_lt(j, w.count, "a resumed stream hands out more records");
                assert_same_record(ix, &r, &w.recs[j], p, j);
                ix_stream_mark again; /* halfway: mark the resumed stream, resume that */
                if (j == k + 1 + (w.count - k) / 2 && ix_stream_mark_here(t, &again)) {
                    void *d2 = NULL;
                    uint64_t r2 = 0;
                    ix_stream *u = ix_stream_resume(ix, p, &dicts, &d2, &opts, &again, &r2,
                                                    &err);
                    ix_stream_mark_free(&again);
                    cr_assert_not_null(u, "%s", err.msg);
                    uint32_t i = j + 1;
                    for (; (rc = ix_stream_next(u, &r, &err)) == 1; i++)
                        assert_same_record(ix, &r, &w.recs[i], p, i);
                    cr_assert_eq(rc, 0, "%s", err.msg);
                    cr_assert_eq(i, w.count);
                    ix_stream_close(u);
                    tix_free_dictionary(d2);
                }
            }
            cr_assert_eq(rc, 0, "%s entry %llu, mark after record %u: %s", path,
                         (unsigned long long)p, k, err.msg);
            cr_assert_eq(j, w.count, "%s: the resumed stream ends with the entry", path);
            *short_reads += after < ix->pages[p].length / 2;
            ix_stream_close(t);
            tix_free_dictionary(rdict);
            resumed++;
        }
        ix_stream_close(s);
        tix_free_dictionary(dict);
        whole_entry_free(&w);
    }
    ix_free(ix);
    return resumed;
}

Test(stream, a_stream_resumed_from_a_mark_hands_out_the_records_after_it)
{
    static const struct { const char *path, *column; uint32_t stride; } files[] = {
        { FIXTURES "stream_none.parquet", "text", 3 },
        { FIXTURES "stream_snappy.parquet", "ids", 3 },
        { FIXTURES "stream_snappy.parquet", "text", 3 },
        /* rows that continue over many pages: marks on the entry's later pages */
        { YFS_SOURCE_DIR "/tests/data/stream/legacy_two_level_7.parquet", "ids", 1 },
        { YFS_SOURCE_DIR "/tests/data/stream/legacy_bare_50.parquet", "ids", 1 },
        /* pages of about 1 MiB: the resumed streams read from their mark's block */
        { YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet", "text", 97 },
        { YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet", "ids", 97 },
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        for (int ahead = 0; ahead < 2; ahead++) {
            uint32_t short_reads = 0;
            uint32_t n = resume_everywhere(files[f].path, files[f].column, files[f].stride,
                                           ahead, &short_reads);
            cr_assert_gt(n, 0, "%s %s: no mark resumed", files[f].path, files[f].column);
            if (strstr(files[f].path, "big_pages"))
                cr_assert_gt(short_reads, n / 4, "%s %s: %u of %u resumed streams read less "
                             "than half their entry", files[f].path, files[f].column,
                             short_reads, n);
        }
    }
}

Test(stream, a_library_codec_or_a_dictionary_is_not_marked)
{
    static const char *const files[][2] = {
        { FIXTURES "stream_zstd.parquet", "ids" },
        { FIXTURES "gen_dict_v1_snappy.parquet", "s" },
        { YFS_SOURCE_DIR "/tests/data/stream/duckdb_text.parquet", "text" },
    };
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        uint32_t short_reads = 0;
        cr_assert_eq(resume_everywhere(files[f][0], files[f][1], 1, 0, &short_reads), 0, "%s",
                     files[f][0]);
    }
}

/* After a chmod (the ctime moves) an entry whose CRC is known is compared
 * from its start. A stream that takes no CRC (resumed from a mark, or opened
 * at the entry's start once the CRC was known) reads the entry whole again
 * to vouch for its records, which pass when the bytes are the same and fail
 * naming the file when they are not. Until something moves, such a stream
 * reads the entry's bytes once. */
static void vouch_after_ctime_moved(int flip, int resume)
{
    char dataset[TIX_PATH], cache[TIX_PATH];
    tix_temp_dir(dataset, "marks");
    cache[0] = '\0';
    char path[TIX_PATH + 32];
    snprintf(path, sizeof path, "%s/big.parquet", dataset);
    FILE *in = fopen(YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet", "rb");
    cr_assert_not_null(in);
    static uint8_t bytes[1 << 20];
    size_t len = fread(bytes, 1, sizeof bytes, in);
    fclose(in);
    FILE *out = fopen(path, "wb");
    cr_assert_eq(fwrite(bytes, 1, len, out), len);
    fclose(out);
    ix_index *ix = build(dataset, "text");
    ix_dict_source dicts = { tix_load_dictionary, ix };
    pq_error err;
    void *dict;
    uint64_t read = 0;
    ix_record r;
    ix_stream *s = ix_stream_open(ix, 0, &dicts, &dict, NULL, &read, &err); /* learns the CRC */
    cr_assert_not_null(s, "%s", err.msg);
    while (ix_stream_next(s, &r, &err) == 1)
        ;
    ix_stream_close(s);
    cr_assert_neq(atomic_load(&ix->pages[0].crc), 0);
    read = 0;
    s = ix_stream_open(ix, 0, &dicts, &dict, NULL, &read, &err);
    uint32_t k = 0;
    if (resume) {
        for (; k < ix->pages[0].records - 50; k++)
            cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
    } else {
        while (ix_stream_next(s, &r, &err) == 1)
            ;
        cr_assert_eq(read, ix->pages[0].length, "nothing moved: the entry is read once");
    }
    ix_stream_mark m;
    cr_assert_eq(ix_stream_mark_here(s, &m), resume);
    ix_stream_close(s);
    if (flip) { /* a byte before the mark, size and mtime kept: only the CRC tells */
        flip_byte(path, ix->pages[0].offset + 100);
    } else {
        cr_assert_eq(chmod(path, 0444), 0);
    }
    uint64_t after = 0;
    ix_stream *t = resume ? ix_stream_resume(ix, 0, &dicts, &dict, NULL, &m, &after, &err)
                          : ix_stream_open(ix, 0, &dicts, &dict, NULL, &after, &err);
    if (resume)
        ix_stream_mark_free(&m);
    int rc = -1;
    if (t) { /* a stream from the start may see the flipped byte at open */
        while ((rc = ix_stream_next(t, &r, &err)) == 1)
            k++;
        ix_stream_close(t);
    }
    if (flip) {
        cr_assert_eq(rc, -1, "a stream vouched for a changed entry");
        cr_assert(strstr(err.msg, "big.parquet"), "%s", err.msg);
        cr_assert(!resume || strstr(err.msg, "changed since mount"), "%s", err.msg);
        cr_assert(!resume || after > ix->pages[0].length, "the entry was read again");
    } else {
        cr_assert_eq(rc, 0, "%s", err.msg);
        cr_assert_eq(k, ix->pages[0].records);
        cr_assert_gt(after, ix->pages[0].length, "the entry was read again to compare it");
    }
    ix_free(ix);
    tix_remove(dataset, cache);
}

Test(stream, a_resumed_stream_compares_an_entry_after_a_chmod)
{
    vouch_after_ctime_moved(0, 1);
}

Test(stream, a_resumed_stream_catches_a_changed_byte_before_its_mark)
{
    vouch_after_ctime_moved(1, 1);
}

Test(stream, a_stream_that_knew_the_crc_reads_once_and_compares_again_after_a_chmod)
{
    vouch_after_ctime_moved(0, 0);
}

Test(stream, a_stream_that_knew_the_crc_catches_a_changed_byte)
{
    vouch_after_ctime_moved(1, 0);
}

/* The records of entry p from a stream opened with opts, from its start or
 * (m not NULL) resumed at m after record `after`, against w. */
static void same_records_from(ix_index *ix, uint64_t p, const ix_dict_source *dicts,
                              const ix_stream_opts *opts, ix_stream_mark *m, uint32_t after,
                              const whole_entry *w)
{
    pq_error err;
    void *dict = NULL;
    uint64_t read = 0;
    ix_stream *s = m ? ix_stream_resume(ix, p, dicts, &dict, opts, m, &read, &err)
                     : ix_stream_open(ix, p, dicts, &dict, opts, &read, &err);
    cr_assert_not_null(s, "entry %llu: %s", (unsigned long long)p, err.msg);
    ix_record r;
    uint32_t k = m ? after : 0;
    int rc;
    for (; (rc = ix_stream_next(s, &r, &err)) == 1; k++) {
        cr_assert_lt(k, w->count);
        assert_same_record(ix, &r, &w->recs[k], p, k);
    }
    cr_assert_eq(rc, 0, "entry %llu: %s", (unsigned long long)p, err.msg);
    cr_assert_eq(k, w->count);
    ix_stream_close(s);
    tix_free_dictionary(dict);
}

/* A stream told to stop reading ahead at an offset of its entry
 * (ix_stream_ahead_until: where its caller expects to pause) reads on past
 * it all the same, with the same records: stops inside the first window,
 * a few windows in, halfway, and stops moved on as it reads; opened at the
 * entry's start or resumed from a mark (whose reads ahead open with its
 * header probe), on text, numbers, and rows that continue over many
 * pages. */
Test(stream, a_stream_that_stops_reading_ahead_reads_on_with_the_same_records)
{
    static const struct { const char *path, *column; } files[] = {
        { FIXTURES "stream_none.parquet", "text" },
        { YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet", "text" },
        { YFS_SOURCE_DIR "/tests/data/stream/snappy_big_pages.parquet", "ids" },
        { YFS_SOURCE_DIR "/tests/data/stream/legacy_two_level_7.parquet", "ids" },
    };
    const size_t window = 8192;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        ix_index *ix = build(files[f].path, files[f].column);
        ix_dict_source dicts = { tix_load_dictionary, ix };
        uint32_t resumed = 0;
        for (uint64_t p = 0; p < ix->num_pages; p++) {
            whole_entry w;
            whole_entry_read(ix, p, &dicts, &w);
            const ix_page *e = &ix->pages[p];
            const uint64_t deltas[] = { 1, window / 2, 3 * window, e->length / 2 };
            for (size_t d = 0; d < sizeof deltas / sizeof *deltas; d++) {
                ix_stream_opts opts = { .read_size = 4096, .window = window, .ahead = 1,
                                        .ahead_until = e->offset + deltas[d] };
                same_records_from(ix, p, &dicts, &opts, NULL, 0, &w);
            }
            /* a stop moved on as the stream goes (as a build frames one unit
             * after another: fs/yfs_units.c), before or after the stream
             * reaches it: the reads ahead go on without a break, or open
             * again past it */
            for (size_t d = 0; d < 2; d++) {
                const uint64_t step = d ? window / 3 : e->length / 8 + 1;
                ix_stream_opts opts = { .read_size = 4096, .window = window, .ahead = 1,
                                        .ahead_until = e->offset + step };
                pq_error err;
                void *dict = NULL;
                uint64_t read = 0;
                ix_stream *s = ix_stream_open(ix, p, &dicts, &dict, &opts, &read, &err);
                cr_assert_not_null(s, "%s", err.msg);
                ix_record r;
                uint32_t k = 0;
                int rc;
                for (; (rc = ix_stream_next(s, &r, &err)) == 1; k++) {
                    cr_assert_lt(k, w.count);
                    assert_same_record(ix, &r, &w.recs[k], p, k);
                    if (k % 7 == 6)
                        ix_stream_ahead_until(s, e->offset + step * (2 + k / 7));
                }
                cr_assert_eq(rc, 0, "entry %llu: %s", (unsigned long long)p, err.msg);
                cr_assert_eq(k, w.count);
                ix_stream_close(s);
                tix_free_dictionary(dict);
            }
            /* a mark halfway, resumed with stops just past its body offset */
            pq_error err;
            void *dict = NULL;
            uint64_t read = 0;
            ix_stream_opts plain = { .read_size = 4096, .window = window, .ahead = -1 };
            ix_stream *s = ix_stream_open(ix, p, &dicts, &dict, &plain, &read, &err);
            cr_assert_not_null(s, "%s", err.msg);
            ix_record r;
            uint32_t k = 0;
            for (; k < w.count / 2; k++)
                cr_assert_eq(ix_stream_next(s, &r, &err), 1, "%s", err.msg);
            ix_stream_mark m;
            if (ix_stream_mark_here(s, &m)) {
                cr_assert_geq(m.body_offset, m.page_offset);
                cr_assert_leq(m.body_offset, e->offset + e->length);
                for (size_t d = 0; d < 3; d++) {
                    ix_stream_mark copy;
                    cr_assert_eq(ix_stream_mark_copy(&copy, &m), 0);
                    ix_stream_opts opts = { .read_size = 4096, .window = window, .ahead = 1,
                                            .ahead_until = m.body_offset + deltas[d] };
                    same_records_from(ix, p, &dicts, &opts, &copy, k, &w);
                    ix_stream_mark_free(&copy);
                }
                ix_stream_mark_free(&m);
                resumed++;
            }
            ix_stream_close(s);
            tix_free_dictionary(dict);
            whole_entry_free(&w);
        }
        if (!strstr(files[f].path, "stream_none"))
            cr_assert_gt(resumed, 0, "%s %s: no mark resumed", files[f].path, files[f].column);
        ix_free(ix);
    }
}

/* The page pass leaves a mark at the first record of every unit but the
 * first of a flat page it streams and cuts into units (ix_unit_mark): a
 * node reading one part of n resumes its units there from the first epoch
 * on. A stream resumed from each hands out the records of the whole
 * decode from the unit's first on; the persistent index keeps the marks
 * (a second build loads them). So do a list column's, DuckDB's tokens,
 * whose rows go on from page to page. */
static ix_index *build_streaming(const char *dataset, const char *column, const char *cache)
{
    ix_options o = { .dataset = dataset, .column = column, .frame = { IX_FORMAT_JSONL },
                     .threads = 1, .stream_page_bytes = 1, .cache_dir = cache };
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s: %s", dataset, err.msg);
    return ix;
}

/* Every unit mark of ix resumed, its records checked against the whole
 * decode's; with last_reads_little, each entry's last unit reads under half
 * its entry (SNAPPY pages: the mark's block is near the end; uncompressed v1
 * lists read every page's levels at open, so they need not). */
static uint64_t resume_at_unit_marks(ix_index *ix, int last_reads_little)
{
    ix_dict_source dicts = { tix_load_dictionary, ix };
    ix_stream_opts opts = { .read_size = 4096, .window = 8192, .ahead = 1 };
    uint64_t unit = 0, resumed = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        uint32_t units = ix_units_of(&ix->pages[p]);
        cr_assert(ix->chunks[ix_locate(ix, p)].cut);
        if (units == 1)
            continue;
        whole_entry w;
        whole_entry_read(ix, p, &dicts, &w);
        for (uint32_t k = 0; k < units; k++) {
            ix_stream_mark m;
            int has = ix_unit_mark_get(ix, p, unit + k, &m);
            cr_assert_eq(has, k > 0, "entry %llu, unit %u: a mark %s", (unsigned long long)p, k,
                         k ? "is missing" : "at the entry's start");
            if (!has)
                continue;
            uint32_t first = ix_unit_first_record(ix->pages[p].records, units, k);
            cr_assert_eq(m.records, first);
            pq_error err;
            void *dict = NULL;
            uint64_t read = 0;
            ix_stream *s = ix_stream_resume(ix, p, &dicts, &dict, &opts, &m, &read, &err);
            cr_assert_not_null(s, "entry %llu, unit %u: %s", (unsigned long long)p, k, err.msg);
            ix_record r;
            uint32_t j = first;
            int rc;
            for (; (rc = ix_stream_next(s, &r, &err)) == 1; j++) {
                cr_assert_lt(j, w.count);
                assert_same_record(ix, &r, &w.recs[j], p, j);
            }
            cr_assert_eq(rc, 0, "%s", err.msg);
            cr_assert_eq(j, w.count);
            if (last_reads_little && k == units - 1) /* its mark's block is near the end */
                cr_assert_lt(read, ix->pages[p].length / 2, "entry %llu: the last unit's stream "
                             "read %llu of %u bytes", (unsigned long long)p,
                             (unsigned long long)read, ix->pages[p].length);
            ix_stream_close(s);
            tix_free_dictionary(dict);
            resumed++;
        }
        whole_entry_free(&w);
        unit += units;
    }
    cr_assert_eq(unit, ix->num_units);
    return resumed;
}

static void list_marks_resume(const char *path, const char *column, int last_reads_little);

Test(stream, the_page_pass_marks_the_units_it_cuts_and_a_stream_resumes_at_each)
{
    const char *path = YFS_SOURCE_DIR "/tests/data/stream/snappy_cut_pages.parquet";
    char cache[TIX_PATH];
    tix_temp_dir(cache, "unit-marks");
    ix_index *first = build_streaming(path, "text", cache);
    cr_assert_eq(first->files_cached, 0);
    cr_assert_not_null(first->unit_marks);
    cr_assert_eq(resume_at_unit_marks(first, 1), 2 * 16, "two pages of 17 units each");
    ix_index *again = build_streaming(path, "text", cache);
    cr_assert_eq(again->files_cached, again->num_files, "the persistent index was not used");
    cr_assert_eq(again->num_units, first->num_units);
    cr_assert_not_null(again->unit_marks);
    for (uint64_t u = 0; u < first->num_units; u++) { /* field by field: not the padding */
        const ix_unit_mark *a = &first->unit_marks[u], *b = &again->unit_marks[u];
        cr_assert(a->body_offset == b->body_offset && a->rows == b->rows &&
                      a->records == b->records && a->at.pos == b->at.pos &&
                      a->at.seen == b->at.seen && a->at.present == b->at.present &&
                      a->at.value_at == b->at.value_at && a->at.restart_c == b->at.restart_c &&
                      a->at.restart_u == b->at.restart_u && a->at.body_at == b->at.body_at,
                  "unit %llu: the mark loaded is not the one made", (unsigned long long)u);
    }
    cr_assert_eq(resume_at_unit_marks(again, 1), resume_at_unit_marks(first, 1));
    ix_free(first);
    ix_free(again);
    tix_remove("", cache);

    /* lists whose rows go on in the next page: DuckDB's tokens (SNAPPY, its
     * default), and a two-level list cut every 16,001 entries */
    list_marks_resume(YFS_SOURCE_DIR "/tests/data/stream/duckdb_snappy_tokens.parquet",
                      "input_ids", 1);
    list_marks_resume(YFS_SOURCE_DIR "/tests/data/stream/legacy_two_level_cut.parquet", "ids", 0);
}

/* The page pass's marks at the units of a list column's pages, and their
 * copies in the persistent index, each resumed. */
static void list_marks_resume(const char *path, const char *column, int last_reads_little)
{
    char cache[TIX_PATH];
    tix_temp_dir(cache, "unit-marks");
    ix_index *made = build_streaming(path, column, cache);
    cr_assert_not_null(made->unit_marks, "%s", path);
    uint64_t resumed = resume_at_unit_marks(made, last_reads_little);
    cr_log_info("%s: %llu list units resumed from the page pass's marks", path,
                (unsigned long long)resumed);
    cr_assert_gt(resumed, 0);
    ix_index *loaded = build_streaming(path, column, cache);
    cr_assert_eq(loaded->files_cached, loaded->num_files, "the persistent index was not used");
    for (uint64_t u = 0; u < made->num_units; u++) {
        const ix_unit_mark *a = &made->unit_marks[u], *b = &loaded->unit_marks[u];
        cr_assert(a->body_offset == b->body_offset && a->has_pending == b->has_pending &&
                      a->has_value == b->has_value && a->rep == b->rep && a->def == b->def &&
                      a->value_len == b->value_len &&
                      memcmp(a->value, b->value, a->value_len) == 0,
                  "unit %llu: the list's mark loaded is not the one made", (unsigned long long)u);
        cr_assert(!a->body_offset || a->has_pending, "a list's mark holds the row's first entry");
    }
    cr_assert_eq(resume_at_unit_marks(loaded, last_reads_little), resumed);
    ix_free(made);
    ix_free(loaded);
    tix_remove("", cache);
}
