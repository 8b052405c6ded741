#include "yfs_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "yfs_io.h"

const char *const yfs_option_names[] = {
    "column", "format", "seed", "epochs", "shuffle", "mem", "buffer", "chunk", "threads",
    "readahead", "io_depth", "kernel_readahead", "rowid", "dtype", "sep", "crc", "cache",
    "endpoint", "region", "no_sign", "even", NULL,
};

void yfs_options_init(yfs_options *o)
{
    memset(o, 0, sizeof *o);
    o->frame.format = IX_FORMAT_JSONL;
    o->epochs = 1;
    o->shuffle = SH_SHUFFLE_PAGE;
    o->mem = 256u << 20;
    o->buffer = 10000;
    o->chunk = YFS_DEFAULT_CHUNK;
    o->readahead = 8;
    o->kernel_readahead = YFS_DEFAULT_KERNEL_READAHEAD;
    /* The persistent index lives in the user's cache directory by default. */
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) {
        if (asprintf(&o->cache_dir, "%s/youmufs", xdg) < 0)
            o->cache_dir = NULL;
    } else if (home && *home) {
        if (asprintf(&o->cache_dir, "%s/.cache/youmufs", home) < 0)
            o->cache_dir = NULL;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* Workers wait on storage as much as they decode: a few more than cores. */
    o->threads = cpus > 0 ? (int)(cpus < 4 ? 4 : cpus) : 4;
}

void yfs_options_free(yfs_options *o)
{
    free(o->column);
    free(o->cache_dir);
    free(o->endpoint);
    free(o->region);
    o->column = NULL;
    o->cache_dir = NULL;
    o->endpoint = o->region = NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

const char *yfs_shuffle_name(sh_mode mode)
{
    switch (mode) {
    case SH_SHUFFLE_PAGE: return "page";
    case SH_SHUFFLE_NONE: return "none";
    case SH_SHUFFLE_ROW: return "row";
    }
    return "?";
}

const char *yfs_even_name(sh_even even)
{
    switch (even) {
    case SH_EVEN_OFF: return "off";
    case SH_EVEN_PAD: return "pad";
    case SH_EVEN_DROP: return "drop";
    }
    return "?";
}

int yfs_parse_size(const char *s, uint64_t *out)
{
    if (!*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    int shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'B') /* accept 256MiB, 256MB */
        end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int yfs_options_apply(yfs_options *o, const char *item, pq_error *err)
{
    const char *eq = strchr(item, '=');
    size_t klen = eq ? (size_t)(eq - item) : strlen(item);
    const char *v = eq ? eq + 1 : NULL;
#define KEY(name) (klen == sizeof(name) - 1 && strncmp(item, name, klen) == 0)
    if (KEY("rowid")) {
        if (v)
            return pq_error_set(err, "option rowid takes no value");
        o->frame.rowid = 1;
        return 0;
    }
    if (KEY("no_sign")) {
        if (v)
            return pq_error_set(err, "option no_sign takes no value");
        o->no_sign = 1;
        return 0;
    }
    int ours = KEY("column") || KEY("format") || KEY("seed") || KEY("epochs") ||
               KEY("shuffle") || KEY("mem") || KEY("buffer") || KEY("threads") ||
               KEY("chunk") || KEY("readahead") || KEY("io_depth") || KEY("kernel_readahead") ||
               KEY("dtype") || KEY("sep") || KEY("crc") || KEY("cache") ||
               KEY("endpoint") || KEY("region") || KEY("even");
    if (!ours)
        return 1;
    if (!v || !*v)
        return pq_error_set(err, "option %.*s needs a value (%.*s=...)", (int)klen, item,
                            (int)klen, item);
    uint64_t n;
    if (KEY("column")) {
        free(o->column);
        if (!(o->column = strdup(v)))
            return pq_error_set(err, "out of memory");
    } else if (KEY("format")) {
        if (ix_format_parse(v, &o->frame.format) < 0)
            return pq_error_set(err, "format=%s: expected jsonl, text, len32 or raw", v);
    } else if (KEY("cache")) {
        free(o->cache_dir);
        o->cache_dir = strcmp(v, "none") == 0 ? NULL : strdup(v);
        if (strcmp(v, "none") != 0 && !o->cache_dir)
            return pq_error_set(err, "out of memory");
    } else if (KEY("endpoint") || KEY("region")) {
        /* checked when an s3:// dataset is opened (index/ix_s3.h) */
        char **slot = KEY("endpoint") ? &o->endpoint : &o->region;
        free(*slot);
        if (!(*slot = strdup(v)))
            return pq_error_set(err, "out of memory");
    } else if (KEY("even")) {
        sh_even even;
        for (even = SH_EVEN_OFF; even <= SH_EVEN_DROP; even++)
            if (strcmp(v, yfs_even_name(even)) == 0)
                break;
        if (even > SH_EVEN_DROP)
            return pq_error_set(err, "even=%s: expected off, pad or drop", v);
        o->even = even;
    } else if (KEY("crc")) {
        if (strcmp(v, "check") != 0 && strcmp(v, "skip") != 0)
            return pq_error_set(err, "crc=%s: expected check or skip", v);
        o->skip_crc = strcmp(v, "skip") == 0;
    } else if (KEY("dtype")) {
        if (ix_dtype_parse(v, &o->frame.dtype) < 0)
            return pq_error_set(err, "dtype=%s: expected one of i8 u8 i16 u16 i32 u32 i64 u64 "
                                "f32 f64", v);
    } else if (KEY("sep")) {
        char *end;
        errno = 0;
        long long sep = strtoll(v, &end, 10);
        if (errno || *end || end == v)
            return pq_error_set(err, "sep=%s: expected an integer token (e.g. sep=50256)", v);
        o->frame.sep = sep;
        o->frame.has_sep = 1;
    } else if (KEY("shuffle")) {
        sh_mode mode;
        for (mode = SH_SHUFFLE_PAGE; mode <= SH_SHUFFLE_ROW; mode++)
            if (strcmp(v, yfs_shuffle_name(mode)) == 0)
                break;
        if (mode > SH_SHUFFLE_ROW)
            return pq_error_set(err, "shuffle=%s: expected page, row or none", v);
        o->shuffle = mode;
    } else if (KEY("mem")) {
        if (yfs_parse_size(v, &o->mem) < 0 || o->mem < (1u << 20))
            return pq_error_set(err, "mem=%s: expected a size of at least 1M (e.g. 256M)", v);
    } else if (KEY("chunk")) {
        if (yfs_parse_size(v, &o->chunk) < 0 || o->chunk > (1u << 30))
            return pq_error_set(err, "chunk=%s: expected a size up to 1G (e.g. 1M), or 0 to "
                                "read pages one by one without redirection", v);
    } else if (KEY("readahead")) {
        if (parse_u64(v, &n) < 0 || n > 64)
            return pq_error_set(err, "readahead=%s: expected a number of segments from 0 to 64",
                                v);
        o->readahead = (int)n;
    } else if (KEY("io_depth")) {
        if (parse_u64(v, &n) < 0 || n > YFS_IO_DEPTH_MAX)
            return pq_error_set(err, "io_depth=%s: expected a number of reads in flight from "
                                "1 to %d, or 0 to let it grow by itself", v, YFS_IO_DEPTH_MAX);
        o->io_depth = (int)n;
    } else if (KEY("kernel_readahead")) {
        if (yfs_parse_size(v, &o->kernel_readahead) < 0 ||
            o->kernel_readahead > YFS_MAX_KERNEL_READAHEAD || o->kernel_readahead % 4096 != 0)
            return pq_error_set(err, "kernel_readahead=%s: expected a size from 0 to 64M in "
                                "whole 4K pages (e.g. 1M), or 0 to keep the kernel's", v);
    } else if (KEY("seed")) {
        if (parse_u64(v, &o->seed) < 0)
            return pq_error_set(err, "seed=%s: expected a non-negative integer", v);
    } else if (KEY("epochs")) {
        if (parse_u64(v, &n) < 0 || n > 1000000)
            return pq_error_set(err, "epochs=%s: expected an integer from 0 to 1000000", v);
        o->epochs = n;
    } else if (KEY("buffer")) {
        if (parse_u64(v, &n) < 0 || n < 1 || n > UINT32_MAX)
            return pq_error_set(err, "buffer=%s: expected a positive number of rows", v);
        o->buffer = n;
    } else if (KEY("threads")) {
        if (parse_u64(v, &n) < 0 || n < 1 || n > 256)
            return pq_error_set(err, "threads=%s: expected an integer from 1 to 256", v);
        o->threads = (int)n;
    }
#undef KEY
    return 0;
}

int yfs_options_check(const yfs_options *o, pq_error *err)
{
    const ix_frame_options *f = &o->frame;
    if (f->rowid && f->format != IX_FORMAT_JSONL)
        return pq_error_set(err, "rowid: only format=jsonl can carry the row number "
                            "(format=%s chosen)", ix_format_name(f->format));
    if ((f->dtype != IX_DT_NONE || f->has_sep) && f->format != IX_FORMAT_RAW)
        return pq_error_set(err, "dtype= and sep= apply to format=raw only (format=%s chosen)",
                            ix_format_name(f->format));
    return 0;
}

static int append_item(char **rest, const char *item, size_t len)
{
    size_t old = *rest ? strlen(*rest) : 0;
    char *grown = realloc(*rest, old + len + 2);
    if (!grown)
        return -1;
    if (old)
        grown[old++] = ',';
    memcpy(grown + old, item, len);
    grown[old + len] = '\0';
    *rest = grown;
    return 0;
}

int yfs_options_apply_list(yfs_options *o, const char *list, char **rest, pq_error *err)
{
    char *copy = strdup(list);
    if (!copy)
        return pq_error_set(err, "out of memory");
    int rc = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
         item = strtok_r(NULL, ",", &save)) {
        rc = yfs_options_apply(o, item, err);
        if (rc == 1)
            rc = append_item(rest, item, strlen(item)) < 0 ? pq_error_set(err, "out of memory")
                                                           : 0;
    }
    free(copy);
    return rc;
}
