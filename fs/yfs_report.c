#include "yfs_report.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    size_t len = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3
               : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (len == 0 || (size_t)(end - p) < len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((b == 0xe0 && p[1] < 0xa0) || (b == 0xed && p[1] >= 0xa0) || /* overlong, surrogate */
        (b == 0xf0 && p[1] < 0x90) || (b == 0xf4 && p[1] >= 0x90))   /* overlong, > U+10FFFF */
        return 0;
    return len;
}

/* A file name as valid UTF-8 for JSON: bytes that are not UTF-8 become
 * U+FFFD (names are bytes; JSON text is UTF-8). Caller frees. */
static char *utf8_name(const char *name)
{
    size_t n = strlen(name);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    const unsigned char *p = (const unsigned char *)name, *end = p + n;
    while (p < end) {
        size_t len = utf8_sequence(p, end);
        if (len) {
            memcpy(o, p, len);
            o += len;
            p += len;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            p++;
        }
    }
    *o = '\0';
    return out;
}

static char *render(json_t *obj)
{
    if (!obj)
        return NULL;
    char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(obj);
    return s;
}

char *yfs_index_json(yfs_mount *m)
{
    const ix_index *ix = m->ix;
    const yfs_options *o = &m->opts;
    json_t *files = json_array();
    for (uint32_t i = 0; files && i < ix->num_files; i++) {
        char *name = utf8_name(ix->files[i].name);
        json_t *entry = json_pack("{s:s?, s:I, s:I, s:I}", "name", name, "bytes",
                                  (json_int_t)ix->files[i].size, "rows",
                                  (json_int_t)ix->files[i].num_rows, "row_groups",
                                  (json_int_t)ix->files[i].num_chunks);
        free(name);
        if (!entry || json_array_append_new(files, entry) < 0) {
            json_decref(files);
            return NULL;
        }
    }
    json_t *options = json_pack(
        "{s:s, s:I, s:I, s:s, s:I, s:I, s:b, s:i}", "format", ix_format_name(o->frame.format), "seed",
        (json_int_t)o->seed, "epochs", (json_int_t)o->epochs, "shuffle",
        o->shuffle == SH_SHUFFLE_NONE ? "none" : "page", "mem", (json_int_t)o->mem, "buffer",
        (json_int_t)o->buffer, "rowid", o->frame.rowid, "threads", o->threads);
    json_t *cache = json_pack("{s:s?, s:I, s:s}", "directory", o->cache_dir, "files_reused",
                              (json_int_t)ix->files_cached, "note", ix->cache_note);
    return render(json_pack(
        "{s:i, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:f, s:f, s:f, s:I}",
        "version", 1, "youmufs", YFS_VERSION, "dataset", ix->dataset, "column",
        ix->column.path, "options", options, "files", (json_int_t)ix->num_files, "row_groups",
        (json_int_t)ix->num_chunks, "pages", (json_int_t)ix->num_pages,
        "offset_index_chunks", (json_int_t)ix->offset_index_chunks,
        "metadata_sized_chunks", (json_int_t)ix->metadata_sized_chunks,
        "header_sized_pages", (json_int_t)ix->header_sized_pages, "rows",
        (json_int_t)ix->num_rows, "records", (json_int_t)ix->num_records, "epoch_bytes",
        (json_int_t)ix->framed_bytes, "bytes_scanned", (json_int_t)ix->bytes_scanned,
        "file_list", files, "persistent_index", cache, "seconds_footers", ix->seconds_footers, "seconds_pages",
        ix->seconds_pages, "seconds_total", m->index_seconds, "index_memory_bytes",
        (json_int_t)ix_memory_bytes(ix)));
}

char *yfs_stats_json(yfs_mount *m)
{
    yfs_stats *s = &m->stats;
    uint64_t build_ns = yfs_counter(&s->build_nanoseconds);
    uint64_t built = yfs_counter(&s->segments_built);
    uint64_t served = yfs_counter(&s->bytes_served);
    uint64_t read = yfs_counter(&s->bytes_read);
    return render(json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
        "bytes_read", (json_int_t)read, "bytes_served", (json_int_t)served, "read_requests",
        (json_int_t)yfs_counter(&s->read_requests), "read_errors",
        (json_int_t)yfs_counter(&s->read_errors), "pages_decoded",
        (json_int_t)yfs_counter(&s->pages_decoded), "dictionaries_loaded",
        (json_int_t)yfs_counter(&s->dictionaries_loaded), "segments_built", (json_int_t)built,
        "segments_prefetched", (json_int_t)yfs_counter(&s->segments_prefetched),
        "segment_hits", (json_int_t)yfs_counter(&s->segment_hits), "segment_waits",
        (json_int_t)yfs_counter(&s->segment_waits), "segment_misses",
        (json_int_t)yfs_counter(&s->segment_misses), "segments_evicted",
        (json_int_t)yfs_counter(&s->segments_evicted), "build_seconds", (double)build_ns / 1e9,
        "read_amplification", served ? (double)read / (double)served : 0.0));
}

void yfs_log(const yfs_mount *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (m->log_to_syslog) {
        vsyslog(LOG_ERR, fmt, ap);
    } else {
        fputs("youmufs: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    va_end(ap);
}
