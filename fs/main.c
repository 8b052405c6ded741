/* youmufs — command line: mount a Parquet dataset, or write one of the
 * mount's files to stdout without mounting (`youmufs cat`). */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse_lowlevel.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "yfs_fuse.h"
#include "yfs_budget.h"
#include "ix_parallel.h"
#include "yfs_names.h"
#include "yfs_report.h"
#include "yfs_view.h"
#include "yfs_watch.h"

/* index --shard I/N: at most this many shards. */
#define YFS_MAX_SHARDS 65536

static const char USAGE[] =
    "usage: youmufs [-o OPTIONS] [-f] [-d] [-s] DATASET MOUNTPOINT\n"
    "       youmufs cat [-o OPTIONS] DATASET NAME\n"
    "       youmufs index [-o OPTIONS] [--shard I/N] DATASET\n"
    "       youmufs stats [--json] [-n COUNT] [-i SECONDS] MOUNTPOINT\n"
    "       youmufs --help | --version\n"
    "\n"
    "Mounts a Parquet dataset (a directory: every *.parquet below it, sorted by path;\n"
    "one file; s3://BUCKET[/PREFIX]; or a mixture *.json, below) read-only. Each\n"
    "epoch of one column is a file of records in\n"
    "page-shuffled order: epoch-<k>.<ext> (k from 0 to 4194303), and\n"
    "epoch-<k>.part-<i>-of-<n>.<ext> for n disjoint parts (ranks x loader workers;\n"
    "n from 1 to 1048575), and epoch-<k>.resume-<N>-<R>.part-<i>-of-<m>.<ext>:\n"
    "what is left after each of the N parts gave its first R records, dealt into m\n"
    "parts (elastic resume). .youmufs/index.json and stats.json\n"
    "describe the index and the live counters. `cat` writes one such file (NAME as\n"
    "at the mount root) to stdout without mounting. `index` builds the persistent\n"
    "index (cache=) that a mount with the same options finds, without mounting;\n"
    "with --shard I/N only the files of shard I of N (file k in path order is in\n"
    "shard k mod N), merged into the same index: N processes or nodes build it\n"
    "together. `stats` prints a line a second (every -i SECONDS, COUNT lines;\n"
    "default until interrupted) of a mount's live figures: MB/s served and read\n"
    "from storage, read amplification, memory held of mem=, reads in flight and\n"
    "waiting for a segment, reservations waiting for memory, segments built, read\n"
    "errors, storage reads in flight and their median latency; --json: one JSON\n"
    "object per line.\n"
    "\n"
    "youmufs options (-o key=value,...):\n"
    "    column=NAME     field to serve: a top-level field, a dotted path into\n"
    "                    structs, or a leaf path (a name inside a list or map\n"
    "                    serves it); nested values (structs, lists, maps) as JSON;\n"
    "                    default: the only string column\n"
    "                    several joined by ':' (jsonl): column=id:text gives\n"
    "                    {\"id\":..,\"text\":..} per row, a null field null; the\n"
    "                    longest leaf is paged (messages: its content), the rest\n"
    "                    written once to a file beside the persistent index (or a\n"
    "                    temporary one) and read per record: any size, no mem= limit\n"
    "    format=FMT      jsonl (default): {\"<column>\":<value>} per line; strings,\n"
    "                    numbers, dates, lists, structs as JSON\n"
    "                    text: the value, then a newline (refused if a value has one)\n"
    "                    len32: 4-byte little-endian length, then the value\n"
    "                    raw: numbers little-endian back to back (numpy.memmap)\n"
    "    dtype=T         raw: i8 u8 i16 u16 i32 u32 i64 u64 f32 f64 (default: the\n"
    "                    column's own); values that do not fit are refused\n"
    "    sep=N           raw: write N after each record (e.g. an EOS token)\n"
    "    seed=N          base seed of every shuffle (default 0)\n"
    "    epochs=N        epoch files listed at the root (0 to 1000000, default 1);\n"
    "                    any epoch-<k> opens by name\n"
    "    shuffle=MODE    page (default): shuffled pages, rows shuffled per segment\n"
    "                    row: every record shuffled over the whole dataset (a slow\n"
    "                    baseline: sizes every record at mount, reads a page per record)\n"
    "                    none: the natural order\n"
    "    mem=SIZE        memory for data held: segments, loaded pages and\n"
    "                    dictionaries (at least 1M, default 256M); pages too large\n"
    "                    for it are streamed; never changes the bytes; a page held\n"
    "                    whole (a dictionary) or a record over a quarter of it is\n"
    "                    refused, naming the mem= that reads it\n"
    "    buffer=N        records per shuffle segment (1 to 4294967295, default\n"
    "                    10000)\n"
    "    chunk=SIZE      consecutive pages read in one I/O (Redox physical chunk,\n"
    "                    0 to 1G, default 1M); the shuffled order serves pages of\n"
    "                    loaded chunks first (redirection); 0: pages read one by one\n"
    "    threads=N       I/O and decode workers (1 to 256, default: max(4, cores));\n"
    "                    a build decodes with its share among the files open,\n"
    "                    or all of them when storage reads take 1 ms or more\n"
    "                    (streamed pages: while the cores have time to spare)\n"
    "    readahead=N     segments prepared ahead of each reader (0 to 64, default 8;\n"
    "                    0: off), within a quarter of mem each, half for a file\n"
    "                    of streamed pages read alone from slow storage (reads\n"
    "                    of 1 ms or more); several files open over such\n"
    "                    storage share what the chunk reads leave\n"
    "    io_depth=N      chunk reads kept in flight ahead of the readers (1 to 128;\n"
    "                    default 0: starts at 8 and doubles while reads wait on\n"
    "                    storage and memory allows)\n"
    "    kernel_readahead=SIZE  the kernel's readahead window for the mount, its\n"
    "                    largest read request (0 to 64M in 4K pages, default 256K;\n"
    "                    0: the kernel's 128K); needs root, else logged\n"
    "    rowid           jsonl: add the source row's global index as \"_row\"\n"
    "                    (a mixture: also the source's position as \"_source\")\n"
    "    even=MODE       parts of equal record counts: pad (ceil(R/n), repeating the\n"
    "                    epoch's first records), drop (floor(R/n)), off (default)\n"
    "    crc=MODE        check (default): verify page checksums where stored; skip\n"
    "    cache=DIR       persistent index: a re-mount of unchanged files skips the\n"
    "                    page pass; share DIR between nodes (default\n"
    "                    $XDG_CACHE_HOME/youmufs or ~/.cache/youmufs; none: off)\n"
    "    endpoint=URL    s3:// datasets: the S3 server (http:// or https://,\n"
    "                    path-style; default AWS_ENDPOINT_URL, else AWS)\n"
    "    region=R        s3:// datasets: the signing region (default AWS_REGION,\n"
    "                    AWS_DEFAULT_REGION, else us-east-1)\n"
    "    no_sign         s3:// datasets: a public bucket, requests unsigned\n"
    "\n"
    "DATASET s3://BUCKET[/PREFIX]: every *.parquet object under PREFIX/, sorted by\n"
    "key, read with ranged GETs; credentials from AWS_ACCESS_KEY_ID,\n"
    "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, else the profile AWS_PROFILE of\n"
    "~/.aws/credentials; an object changed since mount (ETag) fails its reads.\n"
    "\n"
    "DATASET mix.json: a mixture, {\"sources\": [{\"path\": P, \"weight\": W,\n"
    "\"column\": C}, ...], \"records\": R}: an epoch of R records (default: all the\n"
    "sources' records), source i giving W_i / sum W x R of them (rounded so that\n"
    "they add up to R: largest remainders first), taken from its endless sequence\n"
    "of freshly shuffled passes (fewer: successive epochs cover it; more: it\n"
    "repeats), the sources taking turns in proportion (smooth weighted round\n"
    "robin). Relative paths are from the file's directory; jsonl keys are the\n"
    "mount's column name. Parts, even= and resume files deal each source's share\n"
    "(a source's segments: its share of buffer=); shuffle=row is refused.\n"
    ".youmufs/index.json and stats.json list every source under \"sources\".\n"
    "\n"
    "Mount options: -f (foreground), -d (debug), -s (single-threaded), and the\n"
    "FUSE options (-o allow_other, -o max_threads=N, ...; see below).\n"
    "Examples:\n"
    "    youmufs -o column=text,seed=7,epochs=3 /data/corpus /mnt/corpus\n"
    "    head -n 3 /mnt/corpus/epoch-0.jsonl\n"
    "    youmufs cat -o format=len32 /data/corpus epoch-1.part-0-of-8.len32 > p0.bin\n"
    "    youmufs -o column=input_ids,format=raw,dtype=u16,sep=50256 /data/tok /mnt/tok\n"
    "    fusermount3 -u /mnt/corpus\n";

/* What the command line asked for. */
typedef struct command {
    int cat;                /* `youmufs cat` */
    int index;              /* `youmufs index` */
    uint32_t shard, shards; /* index --shard I/N (shards 0: every file) */
    int help, version;
    yfs_options opts;
    char *fuse_opts;        /* -o items that are not ours, for FUSE */
    const char *positional[2];
    int num_positional;
    struct fuse_args fuse_args; /* flags passed through to FUSE */
} command;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("youmufs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'youmufs --help'.\n", stderr);
    va_end(ap);
    return 2;
}

/* Returns 0, or an exit status. */
static int parse(int argc, char **argv, command *c)
{
    int i = 1;
    if (argc > 1 && strcmp(argv[1], "cat") == 0) {
        c->cat = 1;
        i = 2;
    } else if (argc > 1 && strcmp(argv[1], "index") == 0) {
        c->index = 1;
        i = 2;
    }
    const char *sub = c->cat ? "cat" : c->index ? "index" : NULL;
    fuse_opt_add_arg(&c->fuse_args, argv[0]);
    for (; i < argc; i++) {
        const char *a = argv[i];
        pq_error err;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            c->help = 1;
        } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            c->version = 1;
        } else if (strncmp(a, "-o", 2) == 0) {
            const char *list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!list)
                return usage_error("-o needs a list of options");
            if (yfs_options_apply_list(&c->opts, list, &c->fuse_opts, &err) < 0)
                return usage_error("%s", err.msg);
        } else if (c->index && strcmp(a, "--shard") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            unsigned long part, parts;
            int used = 0;
            if (sscanf(v, "%lu/%lu%n", &part, &parts, &used) != 2 || v[used] || parts == 0 ||
                part >= parts || parts > YFS_MAX_SHARDS)
                return usage_error("--shard %s: expected I/N with 0 <= I < N <= %d", v,
                                   YFS_MAX_SHARDS);
            c->shard = (uint32_t)part;
            c->shards = (uint32_t)parts;
        } else if (a[0] == '-' && a[1]) {
            if (sub)
                return usage_error("%s does not take %s", sub, a);
            fuse_opt_add_arg(&c->fuse_args, a);
        } else if (c->num_positional < (c->index ? 1 : 2)) {
            c->positional[c->num_positional++] = a;
        } else {
            return usage_error("unexpected argument %s", a);
        }
    }
    if (c->help || c->version)
        return 0;
    pq_error err;
    if (yfs_options_check(&c->opts, &err) < 0)
        return usage_error("%s", err.msg);
    if (sub && c->fuse_opts)
        return usage_error("unknown option(s) for %s: %s", sub, c->fuse_opts);
    if (c->index)
        return c->num_positional == 1 ? 0 : usage_error("index needs DATASET");
    if (c->num_positional < 2)
        return usage_error("%s", c->cat ? "cat needs DATASET and NAME" : "needs DATASET and MOUNTPOINT");
    return 0;
}

/* Writes the bytes of the file `name` of the mount to stdout. */
static int write_all(const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int cat_json(yfs_mount *m, const char *name)
{
    char *json = strcmp(name, ".youmufs/index.json") == 0   ? yfs_index_json(m)
                 : strcmp(name, ".youmufs/stats.json") == 0 ? yfs_stats_json(m)
                                                            : NULL;
    if (!json)
        return -1;
    int rc = write_all(json, strlen(json));
    free(json);
    return rc < 0 ? 1 : 0;
}

static int run_cat(yfs_mount *m, const char *name)
{
    int rc = cat_json(m, name);
    if (rc >= 0)
        return rc;
    yfs_name n;
    if (yfs_name_parse(name, ix_format_ext(m->opts.frame.format), &n) < 0) {
        fprintf(stderr, "youmufs: %s: no such file at the mount root (expected epoch-<k>.%s, "
                "epoch-<k>.part-<i>-of-<n>.%s, epoch-<k>.resume-<N>-<R>.part-<i>-of-<n>.%s or "
                ".youmufs/index.json)\n", name, ix_format_ext(m->opts.frame.format),
                ix_format_ext(m->opts.frame.format), ix_format_ext(m->opts.frame.format));
        return 1;
    }
    pq_error err;
    yfs_view *v;
    if (yfs_mount_start(m, &err) < 0 || yfs_view_open(m, &n, &v, &err) < 0) {
        fprintf(stderr, "youmufs: %s\n", err.msg);
        return 1;
    }
    /* One buffer for the whole copy, charged like a FUSE reply's. */
    const size_t step = 1u << 20;
    yfs_budget_reserve(m->budget, step, YFS_MEM_READS, YFS_FORCE, NULL);
    uint8_t *buf = malloc(step);
    uint64_t off = 0, size = yfs_view_size(v);
    rc = buf ? 0 : 1;
    if (!buf)
        fprintf(stderr, "youmufs: out of memory\n");
    while (off < size && rc == 0) {
        size_t got;
        if (yfs_view_read(v, off, step, buf, &got, &err) < 0) {
            fprintf(stderr, "youmufs: %s\n", err.msg);
            rc = 1;
        } else if (write_all(buf, got) < 0) {
            fprintf(stderr, "youmufs: writing to stdout: %s\n", strerror(errno));
            rc = 1;
        }
        off += got;
    }
    free(buf);
    yfs_budget_release(m->budget, step, YFS_MEM_READS, NULL);
    yfs_view_close(v);
    return rc;
}

/* `youmufs index`: the persistent index of the dataset (or of one shard of
 * its files, merged into it), built as a mount would build it. */
static int run_index(const command *c)
{
    const char *dataset = c->positional[0];
    if (!c->opts.cache_dir) {
        fprintf(stderr, "youmufs: index: cache=none leaves nowhere to save the index\n");
        return 1;
    }
    ix_options io = yfs_index_options(&c->opts, dataset, 1);
    io.shard = c->shard;
    io.shards = c->shards;
    double start = ix_now();
    ix_index *ix;
    pq_error err;
    if (ix_build(&io, &ix, &err) < 0) {
        fprintf(stderr, "youmufs: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    if (ix->cache_note[0]) {
        fprintf(stderr, "youmufs: %s\n", ix->cache_note);
        rc = 1;
    }
    char shard[64] = "";
    if (c->shards > 1)
        snprintf(shard, sizeof shard, "shard %u of %u: ", c->shard, c->shards);
    printf("youmufs: %s%u files (%u from the persistent index, %u read now), %llu pages in "
           "%.1f s; %s %s\n",
           shard, ix->num_files, ix->files_cached, ix->num_files - ix->files_cached,
           (unsigned long long)ix->num_pages, ix_now() - start,
           rc ? "not saved in" : "saved in", c->opts.cache_dir);
    ix_free(ix);
    return rc;
}

/* "-o fsname=<dataset>" with libfuse's escapes for ',' and '\\'. */
static char *fsname_option(const char *dataset)
{
    size_t n = strlen(dataset);
    char *opt = malloc(sizeof "fsname=" + 2 * n);
    if (!opt)
        return NULL;
    char *p = opt + sprintf(opt, "fsname=");
    for (; *dataset; dataset++) {
        if (*dataset == ',' || *dataset == '\\')
            *p++ = '\\';
        *p++ = *dataset;
    }
    *p = '\0';
    return opt;
}

#define YFS_FUSE_THREADS "64"
#define YFS_FUSE_IDLE_THREADS "10"

static int run_mount(yfs_mount *m, command *c)
{
    /* The source shows as the dataset, the type as fuse.youmufs; the user's
     * FUSE options may change that, but not what follows them: read-only in
     * the kernel too (writes fail with EROFS before reaching us) and kernel
     * permission checks, whatever mount(8) or fstab pass (they pass "rw"). */
    char *fsname = fsname_option(c->positional[0]);
    if (fsname) {
        fuse_opt_add_arg(&c->fuse_args, "-o");
        fuse_opt_add_arg(&c->fuse_args, fsname);
        free(fsname);
    }
    fuse_opt_add_arg(&c->fuse_args, "-osubtype=youmufs");
    /* A read may wait in its FUSE thread for room in mem= (yfs_cache.h)
     * while the requests that would make room, other readers finishing their
     * segments, queue behind it. With libfuse's default of 10 threads, 8
     * part readers in mem=64M stalled each other until segments went stale
     * (epoch-4g: 164 s, against 18 s with 64 threads). A waiting thread holds
     * no memory. Threads beyond YFS_FUSE_IDLE_THREADS end once idle (libfuse
     * otherwise keeps every thread it ever started: a 45-minute soak ended
     * with 16 more threads than it began with). The user's own options come
     * later and win. */
    fuse_opt_add_arg(&c->fuse_args, "-omax_threads=" YFS_FUSE_THREADS);
    fuse_opt_add_arg(&c->fuse_args, "-omax_idle_threads=" YFS_FUSE_IDLE_THREADS);
    if (c->fuse_opts) {
        fuse_opt_add_arg(&c->fuse_args, "-o");
        fuse_opt_add_arg(&c->fuse_args, c->fuse_opts);
    }
    fuse_opt_add_arg(&c->fuse_args, "-oro,default_permissions");
    fuse_opt_add_arg(&c->fuse_args, c->positional[1]);
    struct fuse_cmdline_opts fo;
    memset(&fo, 0, sizeof fo);
    if (fuse_parse_cmdline(&c->fuse_args, &fo) != 0)
        return 2;
    if (!fo.mountpoint) {
        fprintf(stderr, "youmufs: no mount point\n");
        return 2;
    }
    int rc = yfs_fuse_run(m, &c->fuse_args, fo.mountpoint, fo.foreground, fo.singlethread,
                          fo.max_threads, fo.max_idle_threads);
    free(fo.mountpoint);
    return rc;
}

/* Decoded pages and record lists are up to MiBs each and come and go all the
 * time (segment buffers are mapped on their own, yfs_records.c). One arena, a
 * fixed mmap threshold above their size and a trim threshold of a few of them
 * make freed buffers be reused from the free lists. Mmapping each afresh
 * costs a page fault per 4 KiB (sys time 0.9 s -> 5 s for a 2.3 GB epoch); a
 * fixed mmap threshold alone also freezes the trim threshold at 128 KiB, so
 * the heap shrinks and refaults on every page (PLAIN decode 4x slower,
 * bench/results/decode.md); glibc's defaults (a threshold that grows, an
 * arena per thread) let freed buffers pile up as resident memory. The free
 * memory kept at the top of the heap is resident too: it is held to the
 * share of mem= left untracked; free memory inside the heap is handed back
 * when readers wait for room (yfs_cache.c). */
static void tune_malloc(uint64_t mem)
{
    uint64_t keep = yfs_untracked_budget(mem) / 2; /* the rest: FUSE buffers, stacks */
    if (keep > (32u << 20))
        keep = 32u << 20;
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, (int)keep);
}

/* Every source file stays open for the life of the mount (a file replaced
 * under the mount then keeps serving its old bytes or fails cleanly). Many
 * systems start processes with a soft limit of 1024 descriptors and a much
 * higher hard limit, so a dataset of a few thousand files needs the soft
 * limit raised to the hard one; a dataset beyond the hard limit fails to open
 * with a message naming the file and "Too many open files". */
static void raise_open_file_limit(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &lim);
    }
}

/* `youmufs stats [--json] [-n COUNT] [-i SECONDS] MOUNTPOINT` */
static int run_stats(int argc, char **argv)
{
    yfs_watch_opts o = { .interval = 1.0 };
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(USAGE, stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            o.json = 1;
        } else if ((strcmp(a, "-n") == 0 || strcmp(a, "-i") == 0) && i + 1 < argc) {
            const char *v = argv[++i];
            errno = 0;
            if (a[1] == 'n')
                o.count = strtol(v, &end, 10);
            else
                o.interval = strtod(v, &end);
            if (errno || end == v || *end || (a[1] == 'n' ? o.count < 0 : !(o.interval >= 0.01 &&
                                                                           o.interval <= 3600)))
                return usage_error("stats %s %s: expected %s", a, v,
                                   a[1] == 'n' ? "a count of lines (0: no end)"
                                               : "seconds from 0.01 to 3600");
        } else if (a[0] == '-' && a[1]) {
            return usage_error("stats does not take %s", a);
        } else if (!o.mountpoint) {
            o.mountpoint = a;
        } else {
            return usage_error("unexpected argument %s", a);
        }
    }
    if (!o.mountpoint)
        return usage_error("stats needs MOUNTPOINT");
    return yfs_watch_run(&o);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "stats") == 0)
        return run_stats(argc, argv);
    command c;
    memset(&c, 0, sizeof c);
    yfs_options_init(&c.opts);
    int rc = parse(argc, argv, &c);
    tune_malloc(c.opts.mem);
    raise_open_file_limit();
    if (rc == 0 && c.help) {
        fputs(USAGE, stdout);
        if (!c.cat && !c.index) {
            printf("\nFUSE options:\n");
            fflush(stdout);
            fuse_cmdline_help();
            fuse_lowlevel_help();
        }
    } else if (rc == 0 && c.version) {
        printf("youmufs %s (libfuse %s)\n", YFS_VERSION, fuse_pkgversion());
    } else if (rc == 0 && c.index) {
        rc = run_index(&c);
    } else if (rc == 0) {
        yfs_mount *m;
        pq_error err;
        if (yfs_mount_open(&c.opts, c.positional[0], 1, &m, &err) < 0) {
            fprintf(stderr, "youmufs: %s\n", err.msg);
            rc = 1;
        } else {
            if (m->ix->cache_note[0])
                fprintf(stderr, "youmufs: warning: %s\n", m->ix->cache_note);
            char note[512];
            if (yfs_mount_shuffle_note(m, note, sizeof note))
                fprintf(stderr, "youmufs: warning: %s\n", note);
            rc = c.cat ? run_cat(m, c.positional[1]) : run_mount(m, &c);
            yfs_mount_close(m);
        }
    }
    fuse_opt_free_args(&c.fuse_args);
    free(c.fuse_opts);
    yfs_options_free(&c.opts);
    return rc;
}
