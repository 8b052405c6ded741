#include "yfs_report.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "ix_others.h"
#include "yfs_budget.h"
#include "yfs_io.h"
#include "yfs_mix.h"

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

/* What the index of one dataset (a mount, or a mixture's source) holds. */
static json_t *dataset_json(const yfs_mount *m)
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
    json_t *cache = json_pack("{s:s?, s:I, s:s}", "directory", o->cache_dir, "files_reused",
                              (json_int_t)ix->files_cached, "note", ix->cache_note);
    /* several columns: where the other columns' values are served from */
    const ix_column_set *cs = ix->columns;
    json_t *others = cs ? json_pack("{s:s?, s:b, s:I, s:I, s:s}", "file", cs->file.path,
                                    "reused", cs->reused, "file_bytes",
                                    (json_int_t)cs->file.size, "source_bytes_read",
                                    (json_int_t)cs->bytes_read, "note", cs->note)
                        : json_null();
    return json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:f, s:f, "
        "s:f}",
        "dataset", ix->dataset, "column", ix->column.path, "files", (json_int_t)ix->num_files,
        "row_groups", (json_int_t)ix->num_chunks, "pages", (json_int_t)ix->num_pages,
        "offset_index_chunks", (json_int_t)ix->offset_index_chunks,
        "metadata_sized_chunks", (json_int_t)ix->metadata_sized_chunks,
        "header_sized_pages", (json_int_t)ix->header_sized_pages, "rows",
        (json_int_t)ix->num_rows, "records", (json_int_t)ix->num_records, "epoch_bytes",
        (json_int_t)ix->framed_bytes, "bytes_scanned", (json_int_t)ix->bytes_scanned,
        "file_list", files, "persistent_index", cache, "other_columns", others,
        "seconds_footers", ix->seconds_footers,
        "seconds_pages", ix->seconds_pages, "seconds_total", m->index_seconds);
}

/* A mixture's report: `all` with the list of its sources under "sources"
 * when rc is 0 and that fits in memory, else NULL. Both are consumed. */
static json_t *with_sources(json_t *all, json_t *sources, int rc)
{
    if (rc == 0 && json_object_set(all, "sources", sources) < 0)
        rc = -1;
    json_decref(sources);
    if (rc < 0) {
        json_decref(all);
        return NULL;
    }
    return all;
}

/* Fold x into acc, key by key: numbers add up, lists are joined, objects
 * fold alike, anything else keeps acc's. x is consumed. Returns -1 when out
 * of memory. */
static int fold(json_t *acc, json_t *x)
{
    const char *key;
    json_t *v;
    int rc = x ? 0 : -1;
    json_object_foreach(x, key, v) {
        json_t *a = json_object_get(acc, key);
        if (!a)
            rc |= json_object_set(acc, key, v);
        else if (json_is_integer(a) && json_is_integer(v))
            rc |= json_integer_set(a, json_integer_value(a) + json_integer_value(v));
        else if (json_is_real(a) && json_is_real(v))
            rc |= json_real_set(a, json_real_value(a) + json_real_value(v));
        else if (json_is_array(a) && json_is_array(v))
            rc |= json_array_extend(a, v);
        else if (json_is_object(a) && json_is_object(v))
            rc |= fold(a, json_deep_copy(v));
    }
    json_decref(x);
    return rc < 0 ? -1 : 0;
}

/* A mixture's figures: every source's folded (files, pages, rows add up,
 * the file lists are joined), then what is the mixture's own: its file,
 * the jsonl key, an epoch's records (its size is the epoch file's: known
 * only once it is opened, so null here), and `sources`, each source's own
 * figures with its weight, its records per epoch and its buffer. */
static json_t *mixture_json(const yfs_mix *mx)
{
    json_t *all = json_object(), *sources = json_array();
    int rc = all && sources ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < mx->n; i++) {
        const yfs_mount *s = mx->sources[i];
        json_t *d = dataset_json(s);
        rc = d ? fold(all, json_deep_copy(d)) : -1;
        if (rc == 0 && (json_object_set_new(d, "weight", json_real(mx->file.sources[i].weight)) < 0 ||
                        json_object_set_new(d, "records_per_epoch",
                                            json_integer((json_int_t)mx->counts[i])) < 0 ||
                        json_object_set_new(d, "buffer", json_integer((json_int_t)s->opts.buffer)) < 0))
            rc = -1;
        if (d && rc < 0)
            json_decref(d);
        else if (d && json_array_append_new(sources, d) < 0)
            rc = -1;
    }
    if (rc == 0 && (json_object_set_new(all, "dataset", json_string(mx->file.file)) < 0 ||
                    json_object_set_new(all, "column", json_string(mx->key)) < 0 ||
                    json_object_set_new(all, "records", json_integer((json_int_t)mx->records)) < 0 ||
                    json_object_set_new(all, "epoch_bytes", json_null()) < 0))
        rc = -1;
    return with_sources(all, sources, rc);
}

char *yfs_index_json(yfs_mount *m)
{
    const yfs_options *o = &m->opts;
    /* a mixture's sources run under their own seed and buffer: the mount's are the mix's */
    uint64_t seed = m->mix ? m->mix->seed : o->seed, buffer = m->mix ? m->mix->buffer : o->buffer;
    json_t *options = json_pack(
        "{s:s, s:I, s:I, s:s, s:I, s:I, s:I, s:b, s:i, s:i, s:i, s:I, s:s}", "format",
        ix_format_name(o->frame.format), "seed", (json_int_t)seed, "epochs",
        (json_int_t)o->epochs, "shuffle", yfs_shuffle_name(o->shuffle), "mem",
        (json_int_t)o->mem, "buffer", (json_int_t)buffer, "chunk", (json_int_t)o->chunk,
        "rowid", o->frame.rowid, "threads", o->threads, "readahead", o->readahead,
        "io_depth", o->io_depth, "kernel_readahead", (json_int_t)o->kernel_readahead, "even",
        yfs_even_name(o->even));
    json_t *top = json_pack("{s:i, s:s, s:o, s:I}", "version", 1, "youmufs", YFS_VERSION,
                            "options", options, "index_memory_bytes",
                            (json_int_t)yfs_mount_index_bytes(m));
    if (!top || fold(top, m->mix ? mixture_json(m->mix) : dataset_json(m)) < 0) {
        json_decref(top);
        return NULL;
    }
    return render(top);
}

/* What the accountant holds, by kind (yfs_budget.h): "bytes" now, "peak"
 * since mount. */
static json_t *memory_json(yfs_mount *m)
{
    yfs_budget_snapshot b;
    yfs_budget_snapshot_get(m->budget, &b);
    json_t *kinds = json_object();
    for (int k = 0; kinds && k < YFS_MEM_KINDS; k++) {
        json_t *kind = json_pack("{s:I, s:I}", "bytes", (json_int_t)b.bytes[k], "peak",
                                 (json_int_t)b.peak_bytes[k]);
        if (!kind || json_object_set_new(kinds, yfs_mem_kind_name((yfs_mem_kind)k), kind) < 0) {
            json_decref(kinds);
            return NULL;
        }
    }
    return json_pack("{s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "limit",
                     (json_int_t)b.limit,
                     "used", (json_int_t)b.used, "peak", (json_int_t)b.peak, "kinds", kinds,
                     "demand_waits", (json_int_t)b.demand_waits, "demand_waiting",
                     (json_int_t)b.demand_waiting, "prefetch_refused",
                     (json_int_t)b.prefetch_refused, "over_budget", (json_int_t)b.over_budget,
                     "max_over_bytes", (json_int_t)b.max_over_bytes, "heap_trims",
                     (json_int_t)b.heap_trims);
}

/* The I/O engine (yfs_io.h): its depth, queue and reads in flight, the
 * latency of storage reads, and how long builds waited for storage. */
static json_t *io_json(yfs_mount *m)
{
    yfs_io_report r;
    yfs_io_report_get(m->io, &r);
    uint64_t p50, p99;
    yfs_latency_get(&m->read_latency, &p50, &p99);
    yfs_stats *s = &m->stats;
    return json_pack("{s:i, s:b, s:I, s:I, s:I, s:f, s:f, s:f}", "depth", r.depth,
                     "depth_fixed", r.fixed, "queued_loads", (json_int_t)r.queued,
                     "reads_in_flight", (json_int_t)yfs_counter(&s->storage_reads_in_flight),
                     "loads_ahead", (json_int_t)yfs_counter(&s->loads_ahead),
                     "read_latency_p50_ms", (double)p50 / 1e6, "read_latency_p99_ms",
                     (double)p99 / 1e6,
                     "storage_wait_seconds",
                     (double)yfs_counter(&s->storage_wait_nanoseconds) / 1e9);
}

/* One mount's counters, derived figures and I/O engine. */
static json_t *counters_json(yfs_mount *m)
{
    yfs_stats *s = &m->stats;
    const struct {
        const char *name;
        _Atomic uint64_t *counter;
    } counters[] = {
        { "bytes_read", &s->bytes_read },
        { "bytes_read_unused", &s->bytes_read_unused },
        { "bytes_served", &s->bytes_served },
        { "read_requests", &s->read_requests },
        { "read_errors", &s->read_errors },
        { "pages_decoded", &s->pages_decoded },
        { "pages_streamed", &s->pages_streamed },
        { "streams_resumed", &s->streams_resumed },
        { "streams_closed", &s->streams_closed },
        { "streams_forked", &s->streams_forked },
        { "units_marked", &s->units_marked },
        { "streams_from_marks", &s->streams_from_marks },
        { "page_bytes", &s->page_bytes },
        { "chunk_loads", &s->chunk_loads },
        { "pages_from_chunks", &s->pages_from_chunks },
        { "pages_read_alone", &s->pages_read_alone },
        { "reads_together", &s->reads_together },
        { "pages_read_together", &s->pages_read_together },
        { "loaded_pages_dropped", &s->loaded_pages_dropped },
        { "redirections", &s->redirections },
        { "dictionaries_loaded", &s->dictionaries_loaded },
        { "segments_built", &s->segments_built },
        { "segments_prefetched", &s->segments_prefetched },
        { "segment_hits", &s->segment_hits },
        { "segment_waits", &s->segment_waits },
        { "segment_misses", &s->segment_misses },
        { "segments_evicted", &s->segments_evicted },
        { "memory_waits", &s->memory_waits },
        { "reads_in_flight", &s->reads_in_flight },
        { "reads_waiting", &s->reads_waiting },
    };
    json_t *o = json_object();
    for (size_t i = 0; o && i < sizeof counters / sizeof *counters; i++)
        if (json_object_set_new(o, counters[i].name,
                                json_integer((json_int_t)yfs_counter(counters[i].counter))) < 0) {
            json_decref(o);
            return NULL;
        }
    if (o && (json_object_set_new(o, "build_seconds",
                                  json_real((double)yfs_counter(&s->build_nanoseconds) / 1e9)) < 0 ||
              json_object_set_new(o, "decode_seconds",
                                  json_real((double)yfs_counter(&s->decode_nanoseconds) / 1e9)) < 0 ||
              json_object_set_new(o, "io", io_json(m)) < 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Bytes read from storage per stored byte of the pages decoded: 1 when
 * every byte read was used once, more when chunk loads read pages they did
 * not bring, pages were read again, or streams let reads ahead go unused. */
static int set_amplification(json_t *o)
{
    json_int_t read = json_integer_value(json_object_get(o, "bytes_read"));
    json_int_t needed = json_integer_value(json_object_get(o, "page_bytes"));
    return json_object_set_new(o, "read_amplification",
                               json_real(needed ? (double)read / (double)needed : 0.0));
}

/* A mixture's: every source's counters added up (reads are counted by
 * source 0, whose mount serves the files), storage latencies the slowest
 * source's, and `sources`, each source's own counters and engine. */
static json_t *mixture_stats(yfs_mix *mx)
{
    json_t *all = json_object(), *sources = json_array();
    int rc = all && sources ? 0 : -1;
    double p50 = 0, p99 = 0;
    for (uint32_t i = 0; rc == 0 && i < mx->n; i++) {
        json_t *c = counters_json(mx->sources[i]);
        if (!c || set_amplification(c) < 0 || json_array_append(sources, c) < 0) {
            json_decref(c);
            rc = -1;
            break;
        }
        json_t *io = json_object_get(c, "io");
        double a = json_real_value(json_object_get(io, "read_latency_p50_ms"));
        double b = json_real_value(json_object_get(io, "read_latency_p99_ms"));
        p50 = a > p50 ? a : p50;
        p99 = b > p99 ? b : p99;
        rc = fold(all, json_deep_copy(c));
        json_decref(c);
    }
    json_t *io = json_object_get(all, "io");
    if (rc == 0 && (set_amplification(all) < 0 || !io ||
                    json_object_set_new(io, "read_latency_p50_ms", json_real(p50)) < 0 ||
                    json_object_set_new(io, "read_latency_p99_ms", json_real(p99)) < 0))
        rc = -1;
    return with_sources(all, sources, rc);
}

char *yfs_stats_json(yfs_mount *m)
{
    json_t *o = m->mix ? mixture_stats(m->mix) : counters_json(m);
    if (o && ((!m->mix && set_amplification(o) < 0) ||
              json_object_set_new(o, "memory", memory_json(m)) < 0)) {
        json_decref(o);
        return NULL;
    }
    return render(o);
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
