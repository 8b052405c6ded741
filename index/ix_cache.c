#include "ix_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pq_cursor.h"

static const uint8_t MAGIC[8] = { 'Y', 'F', 'S', 'I', 'D', 'X', 0, 0 };
/* A cache file larger than this is not read (a million-page dataset needs ~44 MB). */
#define MAX_CACHE_BYTES (4ull << 30)

struct ix_cache {
    char *path;            /* the cache file; NULL: caching is off */
    char *key;             /* what the cache file is for */
    uint8_t *buf;          /* the cache file's bytes: entry names point into it */
    ix_cache_file *files;  /* sorted by name */
    uint32_t num_files;
    ix_cache_chunk *chunks; /* of all files, in file order */
    ix_page *pages;        /* of all chunks, in chunk order */
    uint64_t *units;       /* the shuffle units of all chunks, in chunk order */
    ix_unit_mark *marks;   /* beside them: the chunks' marks at units (zeros: none), or
                            * NULL when no chunk has any */
    size_t entries_at;     /* where the first entry starts in buf */
    size_t *entry_ends;    /* num_files: where each entry ends in buf (a merge copies them) */
};

/* FNV-1a: a stable name for the cache file of a key. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

void ix_cache_free(ix_cache *c)
{
    if (!c)
        return;
    free(c->files);
    free(c->chunks);
    free(c->pages);
    free(c->units);
    free(c->marks);
    free(c->entry_ends);
    free(c->buf);
    free(c->path);
    free(c->key);
    free(c);
}

/* Checked little-endian reads: any shortfall makes the whole file invalid. */
static int u32(pq_cursor *cur, uint32_t *v)
{
    return pq_cursor_le32(cur, v) ? 0 : -1;
}

static int u64(pq_cursor *cur, uint64_t *v)
{
    return pq_cursor_le64(cur, v) ? 0 : -1;
}

static int i64(pq_cursor *cur, int64_t *v)
{
    uint64_t u;
    if (u64(cur, &u) < 0)
        return -1;
    *v = (int64_t)u;
    return 0;
}

static int bytes(pq_cursor *cur, const uint8_t **p, uint32_t *len)
{
    return u32(cur, len) == 0 && pq_cursor_slice(cur, *len, p) ? 0 : -1;
}

/* Sizes in the file of an entry (without its name), a chunk and a page:
 * counts are checked against the bytes left before anything is trusted. */
#define ENTRY_BYTES 72
#define CHUNK_BYTES 68
#define PAGE_BYTES 32
#define UNIT_BYTES 8

/* strcmp order between two counted names. */
static int name_cmp(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int r = memcmp(a, b, a_len < b_len ? a_len : b_len);
    return r ? r : (a_len > b_len) - (a_len < b_len);
}

/* Where the parse puts what it reads. With NULL arrays it only validates and
 * counts (the first of two passes); the second fills arrays of those sizes,
 * so loading costs three allocations whatever the number of files. */
typedef struct sink {
    ix_cache_file *files;
    ix_cache_chunk *chunks;
    ix_page *pages;
    uint64_t *units;
    ix_unit_mark *marks;    /* beside units */
    size_t *entry_ends;     /* with base: where each entry ends, from base */
    const uint8_t *base;
    size_t num_chunks, num_pages, num_units; /* used so far */
    int any_marks;          /* a chunk so far has marks */
} sink;

/* A mark's pending entry (lists; ix_unit_mark), as put_marks writes it. */
static int pending_of(pq_cursor *cur, ix_unit_mark *m)
{
    uint32_t flags, levels, len;
    const uint8_t *value;
    if (u32(cur, &flags) < 0 || flags > 3 || u32(cur, &levels) < 0 || u32(cur, &len) < 0 ||
        len > IX_UNIT_MARK_VALUE_MAX || !pq_cursor_slice(cur, len, &value))
        return -1;
    m->has_pending = flags & 1;
    m->has_value = (flags >> 1) & 1;
    m->rep = (uint16_t)levels;
    m->def = (uint16_t)(levels >> 16);
    m->value_len = (uint8_t)len;
    if (len)
        memcpy(m->value, value, len);
    return 0;
}

/* A dictionary (offset -1: none) and every page must lie inside the file. */
static int parse_chunk(pq_cursor *cur, uint64_t file_size, sink *s)
{
    uint32_t codec, type_length, dict_length, dict_crc, has_oi, num_pages;
    int64_t dict_offset;
    if (u32(cur, &codec) < 0 || codec > INT32_MAX || u32(cur, &type_length) < 0 ||
        type_length > INT32_MAX || i64(cur, &dict_offset) < 0 || u32(cur, &dict_length) < 0 ||
        u32(cur, &dict_crc) < 0 || u32(cur, &has_oi) < 0 || u32(cur, &num_pages) < 0 ||
        num_pages > cur->left / PAGE_BYTES)
        return -1;
    if (dict_offset == -1 ? dict_length != 0
                          : dict_offset < 0 || (uint64_t)dict_offset > file_size ||
                                dict_length > file_size - (uint64_t)dict_offset)
        return -1;
    ix_page *pages = s->pages ? s->pages + s->num_pages : NULL;
    uint64_t row = 0;
    for (uint32_t k = 0; k < num_pages; k++) {
        ix_page p;
        uint32_t crc;
        if (u64(cur, &p.offset) < 0 || u64(cur, &p.framed) < 0 || u32(cur, &p.length) < 0 ||
            u32(cur, &p.rows) < 0 || u32(cur, &p.records) < 0 || u32(cur, &crc) < 0 ||
            p.records > p.rows || p.offset > file_size || p.length > file_size - p.offset)
            return -1;
        atomic_init(&p.crc, crc);
        p.first_row = row;
        row += p.rows;
        if (pages)
            pages[k] = p;
    }
    /* the shuffle units of its cut entries (checked against them by ix_build) */
    uint32_t cut, num_units;
    if (u32(cur, &cut) < 0 || cut > 1 || u32(cur, &num_units) < 0 ||
        num_units > cur->left / UNIT_BYTES)
        return -1;
    uint64_t *units = s->units ? s->units + s->num_units : NULL;
    for (uint32_t u = 0; u < num_units; u++) {
        uint64_t bytes;
        if (u64(cur, &bytes) < 0)
            return -1;
        if (units)
            units[u] = bytes;
    }
    /* their marks (ix_unit_mark): a resumed stream checks the rest of each */
    uint32_t has_marks;
    if (u32(cur, &has_marks) < 0 || has_marks > 1)
        return -1;
    s->any_marks |= has_marks != 0;
    ix_unit_mark *marks = has_marks && s->marks ? s->marks + s->num_units : NULL;
    for (uint32_t u = 0; has_marks && u < num_units; u++) {
        ix_unit_mark m = { 0 };
        if (u64(cur, &m.body_offset) < 0 || m.body_offset > file_size)
            return -1;
        if (m.body_offset &&
            (u32(cur, &m.rows) < 0 || u32(cur, &m.records) < 0 || u32(cur, &m.at.pos) < 0 ||
             u32(cur, &m.at.seen) < 0 || u32(cur, &m.at.present) < 0 ||
             u64(cur, &m.at.value_at) < 0 || u64(cur, &m.at.restart_c) < 0 ||
             u64(cur, &m.at.restart_u) < 0 || u64(cur, &m.at.body_at) < 0 ||
             pending_of(cur, &m) < 0))
            return -1;
        if (marks)
            marks[u] = m;
    }
    ix_chunk_bounds bounds; /* what its pages may claim (ix_claims.h) */
    if (i64(cur, &bounds.uncompressed) < 0 || bounds.uncompressed < 0 ||
        i64(cur, &bounds.values) < 0 || bounds.values < 0)
        return -1;
    uint32_t dict[3]; /* last: its dictionary page's claims (all 0: not known) */
    for (int k = 0; k < 3; k++)
        if (u32(cur, &dict[k]) < 0 || dict[k] > INT32_MAX)
            return -1;
    if (s->chunks)
        s->chunks[s->num_chunks] = (ix_cache_chunk){
            .codec = (int)codec,
            .type_length = (int32_t)type_length,
            .bounds = bounds,
            .dict_claims = { (int32_t)dict[0], (int32_t)dict[1], (int32_t)dict[2] },
            .dict_offset = dict_offset,
            .dict_length = dict_length,
            .dict_crc = dict_crc,
            .has_offset_index = has_oi != 0,
            .num_pages = num_pages,
            .pages = pages,
            .num_rows = row,
            .cut = (int)cut,
            .num_units = num_units,
            .unit_bytes = units,
            .unit_marks = marks,
        };
    s->num_chunks++;
    s->num_pages += num_pages;
    s->num_units += num_units;
    return 0;
}

static int parse_entry(pq_cursor *cur, const ix_cache_file *prev, ix_cache_file *e, sink *s)
{
    const uint8_t *name;
    if (bytes(cur, &name, &e->name_len) < 0 || e->name_len == 0 ||
        memchr(name, 0, e->name_len) || u64(cur, &e->size) < 0 ||
        i64(cur, &e->mtime_sec) < 0 || i64(cur, &e->mtime_nsec) < 0 ||
        u32(cur, &e->footer_len) < 0 || u32(cur, &e->footer_crc) < 0 ||
        u64(cur, &e->first_row) < 0 || i64(cur, &e->ctime_ns) < 0 || u64(cur, &e->dev) < 0 ||
        u64(cur, &e->ino) < 0 || u32(cur, &e->num_chunks) < 0 ||
        e->num_chunks > cur->left / CHUNK_BYTES)
        return -1;
    e->name = (const char *)name;
    /* names strictly increase: lookups search them in place */
    if (prev && name_cmp(prev->name, prev->name_len, e->name, e->name_len) >= 0)
        return -1;
    e->chunks = s->chunks ? s->chunks + s->num_chunks : NULL;
    for (uint32_t c = 0; c < e->num_chunks; c++)
        if (parse_chunk(cur, e->size, s) < 0)
            return -1;
    return 0;
}

/* One pass over the n entries after the header. */
static int parse_entries(pq_cursor cur, uint32_t n, sink *s)
{
    ix_cache_file scratch[2];
    for (uint32_t i = 0; i < n; i++) {
        ix_cache_file *e = s->files ? &s->files[i] : &scratch[i % 2];
        const ix_cache_file *prev = i == 0 ? NULL : s->files ? &s->files[i - 1]
                                                             : &scratch[(i - 1) % 2];
        if (parse_entry(&cur, prev, e, s) < 0)
            return -1;
        if (s->entry_ends)
            s->entry_ends[i] = (size_t)(cur.p - s->base);
    }
    return cur.left == 0 ? 0 : -1;
}

/* Parse a whole cache file (c takes buf on success); 0, or -1 with c
 * unchanged. */
static int parse(ix_cache *c, uint8_t *buf, size_t len)
{
    if (len < sizeof MAGIC + 8 || memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return -1;
    uint32_t stored_crc = (uint32_t)buf[len - 4] | (uint32_t)buf[len - 3] << 8 |
                          (uint32_t)buf[len - 2] << 16 | (uint32_t)buf[len - 1] << 24;
    if ((uint32_t)crc32(0, buf, (uInt)(len - 4)) != stored_crc)
        return -1;
    pq_cursor cur = pq_cursor_make(buf + sizeof MAGIC, len - sizeof MAGIC - 4);
    uint32_t version, key_len, n;
    const uint8_t *key;
    if (u32(&cur, &version) < 0 || version != IX_CACHE_VERSION ||
        bytes(&cur, &key, &key_len) < 0 || key_len != strlen(c->key) ||
        memcmp(key, c->key, key_len) != 0 || u32(&cur, &n) < 0 || n > cur.left / ENTRY_BYTES)
        return -1;
    sink count = { 0 };
    if (parse_entries(cur, n, &count) < 0)
        return -1;
    sink fill = {
        .files = malloc((n ? n : 1) * sizeof *fill.files),
        .chunks = malloc((count.num_chunks ? count.num_chunks : 1) * sizeof *fill.chunks),
        .pages = malloc((count.num_pages ? count.num_pages : 1) * sizeof *fill.pages),
        .units = malloc((count.num_units ? count.num_units : 1) * sizeof *fill.units),
        .marks = count.any_marks ? calloc(count.num_units, sizeof *fill.marks) : NULL,
        .entry_ends = malloc((n ? n : 1) * sizeof *fill.entry_ends),
        .base = buf,
    };
    if (!fill.files || !fill.chunks || !fill.pages || !fill.units ||
        (count.any_marks && !fill.marks) || !fill.entry_ends ||
        parse_entries(cur, n, &fill) < 0) {
        free(fill.files);
        free(fill.chunks);
        free(fill.pages);
        free(fill.units);
        free(fill.marks);
        free(fill.entry_ends);
        return -1;
    }
    c->entries_at = (size_t)(cur.p - buf);
    c->entry_ends = fill.entry_ends;
    c->buf = buf;
    c->files = fill.files;
    c->num_files = n;
    c->chunks = fill.chunks;
    c->pages = fill.pages;
    c->units = fill.units;
    c->marks = fill.marks;
    return 0;
}

static void load(ix_cache *c)
{
    int fd = open(c->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= MAX_CACHE_BYTES &&
        (buf = malloc((size_t)st.st_size))) {
        size_t done = 0;
        while (done < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + done, (size_t)st.st_size - done);
            if (r <= 0)
                break;
            done += (size_t)r;
        }
        if (done == (size_t)st.st_size && parse(c, buf, done) == 0)
            buf = NULL; /* now c->buf */
    }
    free(buf);
    close(fd);
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char *path = strdup(dir);
    if (!path)
        return -1;
    int rc = 0;
    for (char *p = path + 1; rc == 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            rc = -1;
        *p = saved;
        if (!saved)
            break;
    }
    free(path);
    return rc;
}

ix_cache *ix_cache_open(const char *dir, const char *dataset_key, char *warning,
                        size_t warning_cap)
{
    warning[0] = '\0';
    ix_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (!dir)
        return c;
    if (make_dirs(dir) != 0) {
        snprintf(warning, warning_cap, "cache directory %s: %s; the index is not saved", dir,
                 strerror(errno));
        return c;
    }
    if (asprintf(&c->path, "%s/%016llx.yfsidx", dir, (unsigned long long)fnv1a(dataset_key)) < 0)
        c->path = NULL;
    if (!c->path || !(c->key = strdup(dataset_key))) {
        free(c->path);
        c->path = NULL;
        return c;
    }
    load(c);
    return c;
}

const char *ix_cache_path(const ix_cache *c)
{
    return c->path;
}

uint32_t ix_cache_entries(const ix_cache *c)
{
    return c->num_files;
}

/* Why an entry is keyed by the footer's bytes (length and CRC-32, checked by
 * the caller with one read of the footer) and not by inode and ctime, which
 * fstat gives for free: the directory is meant to be shared between nodes,
 * and a node-local copy of the dataset (rsync -t, cp -p) keeps names, sizes
 * and mtimes but not inodes or ctimes, so those would make every entry stale
 * there. The footer holds every chunk's offsets, sizes and codec, so a file
 * rewritten with the same size and mtime but other row groups has other
 * footer bytes. Reading ~1 KiB of footer costs the same one pread as reading
 * only its 8-byte tail; what re-mounts used to spend was the footer's thrift
 * parse and allocations (0.15 s of 0.21 s for 10,000 files,
 * bench/results/remount.md). */
const ix_cache_file *ix_cache_find(const ix_cache *c, const ix_cache_key *key)
{
    size_t len = strlen(key->name);
    uint32_t lo = 0, hi = c->num_files;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const ix_cache_file *e = &c->files[mid];
        int r = name_cmp(e->name, e->name_len, key->name, len);
        if (r == 0)
            return e->size == key->size && e->mtime_sec == key->mtime_sec &&
                           e->mtime_nsec == key->mtime_nsec
                       ? e
                       : NULL;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A growable output buffer. */
typedef struct out {
    uint8_t *p;
    size_t len, cap;
    int failed;
} out;

static void put(out *o, const void *src, size_t n)
{
    if (o->failed)
        return;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 1 << 16;
        while (cap < o->len + n)
            cap *= 2;
        uint8_t *grown = realloc(o->p, cap);
        if (!grown) {
            o->failed = 1;
            return;
        }
        o->p = grown;
        o->cap = cap;
    }
    memcpy(o->p + o->len, src, n);
    o->len += n;
}

static void put_u32(out *o, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put(o, b, 4);
}

static void put_u64(out *o, uint64_t v)
{
    put_u32(o, (uint32_t)v);
    put_u32(o, (uint32_t)(v >> 32));
}

static void put_bytes(out *o, const char *s)
{
    put_u32(o, (uint32_t)strlen(s));
    put(o, s, strlen(s));
}

static void put_header(out *o, const char *key, uint32_t num_files)
{
    put(o, MAGIC, sizeof MAGIC);
    put_u32(o, IX_CACHE_VERSION);
    put_bytes(o, key);
    put_u32(o, num_files);
}

/* A chunk's marks at its units (ix_unit_mark; NULL: none): a flag, then
 * per unit its body offset (0: no mark) and, after one that is not 0, the
 * rest of the mark. */
static void put_marks(out *o, const ix_unit_mark *marks, uint64_t units)
{
    int any = 0;
    for (uint64_t u = 0; marks && u < units && !any; u++)
        any = marks[u].body_offset != 0;
    put_u32(o, (uint32_t)any);
    for (uint64_t u = 0; any && u < units; u++) {
        const ix_unit_mark *m = &marks[u];
        put_u64(o, m->body_offset);
        if (!m->body_offset)
            continue;
        put_u32(o, m->rows);
        put_u32(o, m->records);
        put_u32(o, m->at.pos);
        put_u32(o, m->at.seen);
        put_u32(o, m->at.present);
        put_u64(o, m->at.value_at);
        put_u64(o, m->at.restart_c);
        put_u64(o, m->at.restart_u);
        put_u64(o, m->at.body_at);
        put_u32(o, (uint32_t)m->has_pending | (uint32_t)m->has_value << 1);
        put_u32(o, (uint32_t)m->rep | (uint32_t)m->def << 16);
        put_u32(o, m->value_len);
        put(o, m->value, m->value_len);
    }
}

/* The entry of the index's file i (its key k); *unit: where its chunks'
 * units start in ix->unit_bytes (the chunks' units follow each other). */
static void put_file(out *o, const ix_index *ix, uint32_t i, const ix_cache_key *k,
                     uint64_t *unit)
{
    const ix_file *f = &ix->files[i];
    put_bytes(o, k->name);
    put_u64(o, k->size);
    put_u64(o, (uint64_t)k->mtime_sec);
    put_u64(o, (uint64_t)k->mtime_nsec);
    put_u32(o, k->footer_len);
    put_u32(o, k->footer_crc);
    put_u64(o, k->first_row);
    put_u64(o, (uint64_t)k->ctime_ns);
    put_u64(o, k->dev);
    put_u64(o, k->ino);
    put_u32(o, f->num_chunks);
    for (uint32_t ci = f->first_chunk; ci < f->first_chunk + f->num_chunks; ci++) {
        const ix_chunk *ch = &ix->chunks[ci];
        put_u32(o, (uint32_t)ch->desc.codec);
        put_u32(o, (uint32_t)ch->desc.type_length);
        put_u64(o, (uint64_t)ch->dict_offset);
        put_u32(o, ch->dict_length);
        put_u32(o, atomic_load_explicit(&ch->dict_crc, memory_order_relaxed));
        put_u32(o, (uint32_t)ch->has_offset_index);
        put_u32(o, ch->num_pages);
        for (uint64_t p = ch->first_page; p < ch->first_page + ch->num_pages; p++) {
            const ix_page *pg = &ix->pages[p];
            put_u64(o, pg->offset);
            put_u64(o, pg->framed);
            put_u32(o, pg->length);
            put_u32(o, pg->rows);
            put_u32(o, pg->records);
            put_u32(o, atomic_load_explicit(&pg->crc, memory_order_relaxed));
        }
        uint64_t units = 0;
        for (uint64_t p = ch->first_page; ch->cut && p < ch->first_page + ch->num_pages; p++) {
            uint32_t count = ix_units_of(&ix->pages[p]);
            units += count > 1 ? count : 0;
        }
        put_u32(o, (uint32_t)ch->cut);
        put_u32(o, (uint32_t)units);
        for (uint64_t u = 0; u < units; u++)
            put_u64(o, ix->unit_bytes[*unit + u]);
        put_marks(o, ix->unit_marks ? ix->unit_marks + *unit : NULL, units);
        *unit += units;
        put_u64(o, (uint64_t)ch->bounds.uncompressed);
        put_u64(o, (uint64_t)ch->bounds.values);
        put_u32(o, (uint32_t)ch->dict_claims.uncompressed);
        put_u32(o, (uint32_t)ch->dict_claims.compressed);
        put_u32(o, (uint32_t)ch->dict_claims.values);
    }
}

/* The index's files (keys[i] for file i), and with `keep` the entries of
 * keep whose names the index has not, copied as they are: both in name
 * order, so the result is too. */
static void put_index(out *o, const char *key, const ix_index *ix, const ix_cache_key *keys,
                      const ix_cache *keep)
{
    uint32_t kept = keep ? keep->num_files : 0, n = 0;
    put_header(o, key, 0);
    size_t count_at = o->len - 4; /* the file count, set once the entries are written */
    uint64_t unit = 0;
    for (uint32_t i = 0, j = 0; i < ix->num_files || j < kept; n++) {
        const ix_cache_file *e = j < kept ? &keep->files[j] : NULL;
        int r = i == ix->num_files ? 1
                : !e ? -1
                     : name_cmp(keys[i].name, strlen(keys[i].name), e->name, e->name_len);
        if (r <= 0) {
            put_file(o, ix, i, &keys[i], &unit);
            i++;
            j += r == 0;
        } else {
            size_t from = j ? keep->entry_ends[j - 1] : keep->entries_at;
            put(o, keep->buf + from, keep->entry_ends[j] - from);
            j++;
        }
    }
    if (!o->failed)
        for (int b = 0; b < 4; b++)
            o->p[count_at + (size_t)b] = (uint8_t)(n >> (8 * b));
    put_u32(o, o->failed ? 0 : (uint32_t)crc32(0, o->p, (uInt)o->len));
}

/* Write o's bytes to a temporary file beside path, synced, and rename it
 * over path: readers see the old file or the new one, never a torn one. */
static int replace_file(const char *path, const out *o, pq_error *err)
{
    char *tmp;
    if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
        return pq_error_set(err, "out of memory");
    int fd = mkstemp(tmp);
    int rc = fd < 0 ? -1 : 0;
    for (size_t done = 0; rc == 0 && done < o->len;) {
        ssize_t n = write(fd, o->p + done, o->len - done);
        if (n < 0 && errno != EINTR)
            rc = -1;
        else if (n > 0)
            done += (size_t)n;
    }
    if (rc == 0 && (fchmod(fd, 0644) != 0 || fsync(fd) != 0))
        rc = -1;
    if (fd >= 0 && close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc < 0) {
        pq_error_set(err, "cannot write the index cache %s: %s", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp);
    }
    free(tmp);
    return rc;
}

int ix_cache_save(ix_cache *c, const ix_index *ix, const ix_cache_key *keys, int merge,
                  pq_error *err)
{
    if (!c->path)
        return 0;
    /* Writers of one cache file take turns (flock on a lock file beside
     * it), so that a merge reads what the writer before it wrote. */
    char *lock_path;
    if (asprintf(&lock_path, "%s.lock", c->path) < 0)
        return pq_error_set(err, "out of memory");
    int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(lock_path);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        pq_error_set(err, "cannot lock the index cache %s: %s", c->path, strerror(errno));
        if (lock >= 0)
            close(lock);
        return -1;
    }
    ix_cache *now = NULL;
    if (merge && (now = calloc(1, sizeof *now))) {
        now->path = c->path; /* borrowed for load() */
        now->key = c->key;
        load(now);
    }
    int rc = 0;
    if (merge && !now) {
        rc = pq_error_set(err, "out of memory");
    } else {
        out o = { 0 };
        put_index(&o, c->key, ix, keys, now);
        rc = o.failed ? pq_error_set(err, "out of memory writing the index cache")
                      : replace_file(c->path, &o, err);
        free(o.p);
    }
    if (now) {
        now->path = now->key = NULL;
        ix_cache_free(now);
    }
    close(lock); /* and with it the lock */
    return rc;
}
