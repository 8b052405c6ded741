#include "yfs_mix.h"

#include <stdlib.h>
#include <string.h>

#include "sh_mix.h"
#include "yfs_io.h"

/* Source i's options (yfs_mix.h). key: the jsonl key of every source. */
static yfs_options source_options(const yfs_options *opts, const yfs_mix_source *src, uint32_t i,
                                  const char *key)
{
    yfs_options o = *opts;
    o.column = src->column ? src->column : opts->column;
    o.seed = sh_mix_source_seed(opts->seed, i);
    o.frame.key = key;
    o.frame.has_source = 1;
    o.frame.source = i;
    return o;
}

/* Several columns (column=a:b) are framed under their own field names, not
 * under the mount's key: so where any source serves several, every source
 * must serve the same ones, or records of different sources would not look
 * alike. One column each may differ (its key is the mount's). */
static int check_columns(const yfs_mix *mx, const yfs_options *opts, pq_error *err)
{
    const yfs_mixture *f = &mx->file;
    const char *first = f->sources[0].column ? f->sources[0].column : opts->column;
    int several = 0;
    for (uint32_t i = 0; i < mx->n; i++) {
        const char *c = f->sources[i].column ? f->sources[i].column : opts->column;
        several |= c && strchr(c, ':') != NULL;
    }
    for (uint32_t i = 1; several && i < mx->n; i++) {
        const char *c = f->sources[i].column ? f->sources[i].column : opts->column;
        if (!first || !c || strcmp(first, c) != 0)
            return pq_error_set(err, "source %u serves column %s and source 0 %s: with several "
                                "columns (a:b) every source must serve the same ones (their "
                                "fields keep their own names in jsonl, so the records of "
                                "different sources would not look alike)",
                                i, c ? c : "(the only string column)",
                                first ? first : "(the only string column)");
    }
    return 0;
}

static int open_sources(yfs_mix *mx, const yfs_options *opts, int progress, pq_error *err)
{
    yfs_mixture *f = &mx->file;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < mx->n; i++) {
        yfs_options o = source_options(opts, &f->sources[i], i, mx->key);
        yfs_budget *shared = i ? mx->sources[0]->budget : NULL;
        if (yfs_mount_open_source(&o, f->sources[i].path, progress, shared, &mx->sources[i],
                                  err) < 0)
            rc = pq_error_prefix(err, "source %u (%s): ", i, f->sources[i].path);
        else if (i == 0 && !(mx->key = strdup(opts->column ? opts->column
                                                      : mx->sources[0]->ix->framing.nest.key)))
            rc = pq_error_set(err, "out of memory");
    }
    return rc;
}

static int set_counts(yfs_mix *mx, pq_error *err)
{
    uint64_t *shares = malloc(mx->n * sizeof *shares);
    if (!shares)
        return pq_error_set(err, "out of memory");
    uint64_t total = 0;
    for (uint32_t i = 0; i < mx->n; i++) {
        shares[i] = mx->file.sources[i].share;
        total += mx->sources[i]->ix->num_records;
        mx->index_bytes += yfs_mount_index_bytes(mx->sources[i]);
    }
    mx->records = mx->file.records ? mx->file.records : total;
    int rc = sh_mix_counts(shares, mx->n, mx->records, mx->counts);
    free(shares);
    if (rc < 0)
        return pq_error_set(err, "the weights add up to nothing");
    for (uint32_t i = 0; i < mx->n; i++) {
        yfs_mount *m = mx->sources[i];
        if (mx->counts[i] > 0 && m->ix->num_records == 0)
            return pq_error_set(err, "source %u (%s) has no records, and an epoch takes %llu of it",
                                i, mx->file.sources[i].path, (unsigned long long)mx->counts[i]);
        /* no plan is built yet: they all see these limits */
        m->opts.buffer = sh_mix_share_of(mx->buffer, mx->counts[i], mx->records);
        m->params.buffer_rows = m->opts.buffer;
        /* not started yet (yfs_mix_start) */
        m->workers = (int)sh_mix_share_of((uint64_t)m->opts.threads, mx->counts[i], mx->records);
        m->params.max_segment_bytes =
            sh_mix_share_of(m->params.max_segment_bytes, mx->counts[i], mx->records);
        yfs_mount_set_mem_part(m, sh_mix_share_of(m->opts.mem, mx->counts[i], mx->records));
        yfs_io_share(m->io, mx->counts[i], mx->records);
        /* Loaded pages wait in virtual chunks for their turn: at the whole
         * number every source could hold what a dataset does, and a source
         * of fewer chunks than that redirected nothing (eight one-file
         * sources of 64 KiB pages: a chunk's pages served over the whole
         * epoch, dropped from the store and read again alone). */
        m->params.virtual_chunks = (uint32_t)sh_mix_share_of(m->params.virtual_chunks,
                                                             mx->counts[i], mx->records);
    }
    return 0;
}

int yfs_mix_open(const yfs_options *opts, const char *file, int progress, yfs_mount **out,
                 pq_error *err)
{
    if (opts->shuffle == SH_SHUFFLE_ROW)
        return pq_error_set(err, "%s: shuffle=row is not served for mixtures (it would size "
                            "every record of every source at mount); use shuffle=page or none",
                            file);
    yfs_mix *mx = calloc(1, sizeof *mx);
    if (!mx)
        return pq_error_set(err, "out of memory");
    if (yfs_mixture_load(file, &mx->file, err) < 0) {
        yfs_mixture_free(&mx->file);
        free(mx);
        return -1;
    }
    mx->seed = opts->seed;
    mx->even = opts->even;
    mx->buffer = opts->buffer;
    mx->n = mx->file.count;
    mx->sources = calloc(mx->n, sizeof *mx->sources);
    mx->counts = calloc(mx->n, sizeof *mx->counts);
    int rc = mx->sources && mx->counts ? check_columns(mx, opts, err)
                                       : pq_error_set(err, "out of memory");
    if (rc == 0)
        rc = open_sources(mx, opts, progress, err);
    if (rc == 0)
        rc = set_counts(mx, err);
    if (rc < 0 || !mx->sources[0]) {
        pq_error_prefix(err, "%s: ", file);
        if (mx->sources && mx->sources[0]) {
            mx->sources[0]->mix = mx; /* closes the others, then itself */
            yfs_mount_close(mx->sources[0]);
        } else {
            yfs_mix_free(mx);
        }
        return -1;
    }
    mx->sources[0]->mix = mx;
    *out = mx->sources[0];
    return 0;
}

int yfs_mix_start(yfs_mix *mx, pq_error *err)
{
    for (uint32_t i = 1; i < mx->n; i++)
        if (yfs_mount_start(mx->sources[i], err) < 0)
            return pq_error_prefix(err, "source %u: ", i);
    return 0;
}

void yfs_mix_free(yfs_mix *mx)
{
    if (!mx)
        return;
    for (uint32_t i = mx->n; mx->sources && i-- > 1;)
        yfs_mount_close(mx->sources[i]);
    free(mx->sources);
    free(mx->counts);
    free(mx->key);
    yfs_mixture_free(&mx->file);
    free(mx);
}
