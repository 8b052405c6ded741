/* ix_others_file: the others' values in a file (format in the header). */
#include "ix_others_file.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pq_cursor.h"

static const uint8_t MAGIC[8] = { 'Y', 'F', 'S', 'O', 'T', 'H', 'R', 0 };
#define HEADER_BYTES 64u
#define SPAN_BYTES 24u
#define IO_BYTES (1u << 20)       /* a write or check buffer */
#define ENDS_PENDING (1u << 16)   /* ends kept before they are written */

static uint64_t table_end(uint32_t positions)
{
    return HEADER_BYTES + (uint64_t)positions * SPAN_BYTES;
}

static uint64_t any_words(uint64_t rows)
{
    return rows / 64 + 1;
}

static void le64(uint8_t *to, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        to[b] = (uint8_t)(v >> (8 * b));
}

static void le32(uint8_t *to, uint32_t v)
{
    for (int b = 0; b < 4; b++)
        to[b] = (uint8_t)(v >> (8 * b));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = v << 8 | p[b];
    return v;
}

static int pwrite_all(const ix_others_file *f, const void *buf, size_t len, uint64_t at,
                      pq_error *err)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pwrite(f->fd, (const uint8_t *)buf + done, len - done, (off_t)(at + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return pq_error_set(err, "cannot write %s: %s", f->path,
                                n < 0 ? strerror(errno) : "no progress");
        done += (size_t)n;
    }
    return 0;
}

/* Exactly len bytes at `at`; anything less (the file ends) fails. */
static int pread_all(const ix_others_file *f, void *buf, size_t len, uint64_t at, pq_error *err)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = pread(f->fd, (uint8_t *)buf + done, len - done, (off_t)(at + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return pq_error_set(err, "%s: %s reading %zu bytes at offset %llu", f->path,
                                n < 0 ? strerror(errno) : "short read (truncated?)", len,
                                (unsigned long long)at);
        done += (size_t)n;
    }
    return 0;
}

/* CRC-32 of the file's bytes [from, to). */
static int body_crc(const ix_others_file *f, uint64_t from, uint64_t to, uint32_t *crc,
                    pq_error *err)
{
    uint8_t *buf = malloc(IO_BYTES);
    if (!buf)
        return pq_error_set(err, "out of memory");
    uLong c = crc32(0, NULL, 0);
    int rc = 0;
    for (uint64_t at = from; rc == 0 && at < to;) {
        size_t n = to - at < IO_BYTES ? (size_t)(to - at) : IO_BYTES;
        rc = pread_all(f, buf, n, at, err);
        c = crc32(c, buf, (uInt)n);
        at += n;
    }
    free(buf);
    *crc = (uint32_t)c;
    return rc;
}

/* The header and the table of f's spans, as written at offset 0. */
static void put_header(const ix_others_file *f, uint32_t crc, uint8_t *h)
{
    memset(h, 0, table_end(f->positions));
    memcpy(h, MAGIC, sizeof MAGIC);
    le32(h + 8, IX_OTHERS_FILE_VERSION);
    le32(h + 12, f->positions);
    le64(h + 16, f->rows);
    le64(h + 24, f->digest);
    le64(h + 32, f->size);
    le32(h + 40, crc);
    le32(h + 44, f->crc_checked ? IX_OTHERS_FILE_CRC_CHECKED : 0);
    for (uint32_t p = 0; p < f->positions; p++) {
        uint8_t *s = h + HEADER_BYTES + (size_t)p * SPAN_BYTES;
        le64(s, f->spans[p].ends_at);
        le64(s + 8, f->spans[p].bytes_at);
        le64(s + 16, f->spans[p].bytes_len);
    }
    uint32_t whole = (uint32_t)crc32(crc32(0, h, 60), h + HEADER_BYTES,
                                     (uInt)(f->positions * SPAN_BYTES));
    le32(h + 60, whole);
}

/* Where each position's ends go, and where the bytes start (f->size). */
static int lay_out(ix_others_file *f, uint64_t digest, const uint8_t *has, uint32_t positions,
                   uint64_t rows, pq_error *err)
{
    f->positions = positions;
    f->rows = rows;
    f->digest = digest;
    if (!(f->spans = calloc(positions ? positions : 1, sizeof *f->spans)))
        return pq_error_set(err, "out of memory");
    uint64_t at = table_end(positions) + any_words(rows) * 8;
    for (uint32_t p = 0; p < positions; p++)
        if (has[p]) {
            f->spans[p].ends_at = at;
            at += rows * 8;
        }
    f->size = at;
    return 0;
}

static void init(ix_others_file *f)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

/* Whether the table read into f matches the layout `want` (whose bytes
 * start at bytes_from) and lies inside size bytes, positions in order. */
static int table_fits(const ix_others_file *f, const ix_others_file *want, uint64_t size)
{
    uint64_t bytes_from = want->size;
    for (uint32_t p = 0; p < f->positions; p++) {
        const ix_others_span *s = &f->spans[p];
        if (s->ends_at != want->spans[p].ends_at)
            return 0;
        if (!s->ends_at) {
            if (s->bytes_at || s->bytes_len)
                return 0;
            continue;
        }
        if (s->bytes_at < bytes_from || s->bytes_at > size || s->bytes_len > size - s->bytes_at)
            return 0;
        bytes_from = s->bytes_at + s->bytes_len;
    }
    return 1;
}

/* f's header against what is wanted; fills f->spans from the table. */
static int check_header(ix_others_file *f, const ix_others_file *want, uint64_t size,
                        uint32_t *crc, pq_error *err)
{
    uint64_t n = table_end(f->positions);
    uint8_t *h = malloc(n);
    if (!h)
        return pq_error_set(err, "out of memory");
    int rc = size < n ? pq_error_set(err, "%s: %llu bytes, shorter than its header", f->path,
                                     (unsigned long long)size)
                      : pread_all(f, h, n, 0, err);
    if (rc == 0) {
        /* n bytes were read: every field below is inside them */
        pq_cursor cur = pq_cursor_make(h + sizeof MAGIC, n - sizeof MAGIC);
        uint32_t version = 0, positions = 0, whole = 0, flags = 0, pad = 0;
        uint64_t rows = 0, digest = 0, claimed = 0;
        pq_cursor_le32(&cur, &version);
        pq_cursor_le32(&cur, &positions);
        pq_cursor_le64(&cur, &rows);
        pq_cursor_le64(&cur, &digest);
        pq_cursor_le64(&cur, &claimed);
        pq_cursor_le32(&cur, crc);
        pq_cursor_le32(&cur, &flags);
        for (int k = 0; k < 3; k++) /* 12 zero bytes */
            pq_cursor_le32(&cur, &pad);
        f->crc_checked = (flags & IX_OTHERS_FILE_CRC_CHECKED) != 0;
        pq_cursor_le32(&cur, &whole);
        for (uint32_t p = 0; p < f->positions; p++) {
            ix_others_span *sp = &f->spans[p];
            pq_cursor_le64(&cur, &sp->ends_at);
            pq_cursor_le64(&cur, &sp->bytes_at);
            pq_cursor_le64(&cur, &sp->bytes_len);
        }
        uint32_t computed = (uint32_t)crc32(crc32(0, h, 60), h + HEADER_BYTES,
                                            (uInt)(f->positions * SPAN_BYTES));
        if (memcmp(h, MAGIC, sizeof MAGIC) != 0 || version != IX_OTHERS_FILE_VERSION)
            rc = pq_error_set(err, "%s: not a values file of this version", f->path);
        else if (whole != computed)
            rc = pq_error_set(err, "%s: its header's checksum is wrong", f->path);
        else if (positions != f->positions || rows != f->rows || digest != f->digest)
            rc = pq_error_set(err, "%s: of other files or columns", f->path);
        else if (want->crc_checked && !f->crc_checked)
            rc = pq_error_set(err, "%s: built by a crc=skip mount, its pages' CRCs not "
                              "checked", f->path);
        else if (claimed != size)
            rc = pq_error_set(err, "%s: %llu bytes where its header says %llu (torn?)",
                              f->path, (unsigned long long)size, (unsigned long long)claimed);
        else if (!table_fits(f, want, size))
            rc = pq_error_set(err, "%s: its table does not fit the file", f->path);
    }
    free(h);
    return rc;
}

static int read_any(const ix_others_file *f, uint64_t *any, pq_error *err)
{
    uint8_t *buf = malloc(IO_BYTES);
    if (!buf)
        return pq_error_set(err, "out of memory");
    uint64_t words = any_words(f->rows), at = table_end(f->positions);
    int rc = 0;
    for (uint64_t w = 0; rc == 0 && w < words;) {
        uint64_t n = words - w < IO_BYTES / 8 ? words - w : IO_BYTES / 8;
        rc = pread_all(f, buf, (size_t)n * 8, at + w * 8, err);
        for (uint64_t k = 0; rc == 0 && k < n; k++)
            any[w + k] = get64(buf + k * 8);
        w += n;
    }
    free(buf);
    return rc;
}

int ix_others_file_open(ix_others_file *f, const char *path, uint64_t digest,
                        const uint8_t *has, uint32_t positions, uint64_t rows, int crc_checked,
                        uint64_t *any, pq_error *err)
{
    ix_others_file want;
    init(&want);
    init(f);
    want.crc_checked = crc_checked;
    struct stat st;
    uint32_t crc = 0, computed = 0;
    int rc = lay_out(&want, digest, has, positions, rows, err);
    if (rc == 0 && !(f->path = strdup(path)))
        rc = pq_error_set(err, "out of memory");
    if (rc == 0 && lay_out(f, digest, has, positions, rows, err) < 0)
        rc = -1;
    if (rc == 0 && ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(f->fd, &st) != 0))
        rc = pq_error_set(err, "%s: %s", path, strerror(errno));
    if (rc == 0)
        rc = check_header(f, &want, (uint64_t)st.st_size, &crc, err);
    if (rc == 0)
        f->size = (uint64_t)st.st_size;
    if (rc == 0)
        rc = body_crc(f, table_end(positions), f->size, &computed, err);
    if (rc == 0 && computed != crc)
        rc = pq_error_set(err, "%s: its values' checksum is wrong (corrupt)", path);
    if (rc == 0)
        rc = read_any(f, any, err);
    ix_others_file_close(&want);
    if (rc < 0)
        ix_others_file_close(f);
    return rc;
}

/* An unlinked temporary file in $TMPDIR or /tmp. */
static int create_unlinked(ix_others_file *f, pq_error *err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char *name;
    if (asprintf(&name, "%s/youmufs-values.XXXXXX", dir) < 0)
        return pq_error_set(err, "out of memory");
    f->fd = mkstemp(name);
    if (f->fd >= 0)
        unlink(name);
    free(name);
    if (f->fd < 0)
        return pq_error_set(err, "cannot make a temporary file in %s for the values of the "
                            "other columns: %s", dir, strerror(errno));
    if (asprintf(&f->path, "a temporary file in %s", dir) < 0) {
        f->path = NULL;
        return pq_error_set(err, "out of memory");
    }
    return 0;
}

int ix_others_file_create(ix_others_file *f, const char *path, uint64_t digest,
                          const uint8_t *has, uint32_t positions, uint64_t rows,
                          int crc_checked, pq_error *err)
{
    init(f);
    f->crc_checked = crc_checked != 0;
    int rc = lay_out(f, digest, has, positions, rows, err);
    if (rc == 0 && path) {
        if (asprintf(&f->temp, "%s.XXXXXX", path) < 0 || !(f->final = strdup(path)) ||
            !(f->path = strdup(path))) {
            rc = pq_error_set(err, "out of memory");
        } else if ((f->fd = mkstemp(f->temp)) < 0) {
            free(f->temp);
            free(f->final);
            free(f->path);
            f->temp = f->final = f->path = NULL;
        }
    }
    if (rc == 0 && f->fd < 0)
        rc = create_unlinked(f, err);
    if (rc < 0)
        ix_others_file_close(f);
    return rc;
}

int ix_others_out_begin(ix_others_out *o, ix_others_file *f, uint32_t p, pq_error *err)
{
    assert(p < f->positions && f->spans[p].ends_at);
    memset(o, 0, sizeof *o);
    o->f = f;
    o->p = p;
    f->spans[p].bytes_at = f->size;
    o->cap = IO_BYTES;
    o->buf = malloc(o->cap);
    o->ends = malloc(ENDS_PENDING * sizeof *o->ends);
    if (!o->buf || !o->ends) {
        ix_others_out_drop(o);
        return pq_error_set(err, "out of memory");
    }
    return 0;
}

static int flush_bytes(ix_others_out *o, pq_error *err)
{
    const ix_others_span *s = &o->f->spans[o->p];
    int rc = pwrite_all(o->f, o->buf, o->used, s->bytes_at + o->end - o->used, err);
    o->used = 0;
    return rc;
}

/* The pending ends, little-endian, over their own array. */
static int flush_ends(ix_others_out *o, pq_error *err)
{
    const ix_others_span *s = &o->f->spans[o->p];
    uint8_t *as_bytes = (uint8_t *)o->ends;
    for (size_t k = 0; k < o->num_ends; k++)
        le64(as_bytes + k * 8, o->ends[k]);
    int rc = pwrite_all(o->f, o->ends, o->num_ends * 8, s->ends_at + (o->row - o->num_ends) * 8,
                        err);
    o->num_ends = 0;
    return rc;
}

uint8_t *ix_others_out_room(ix_others_out *o, size_t n, pq_error *err)
{
    if (o->used + n > o->cap && flush_bytes(o, err) < 0)
        return NULL;
    if (n > o->cap) {
        uint8_t *grown = realloc(o->buf, n);
        if (!grown) {
            pq_error_set(err, "out of memory for a value of %zu bytes", n);
            return NULL;
        }
        o->buf = grown;
        o->cap = n;
    }
    return o->buf + o->used;
}

int ix_others_out_row(ix_others_out *o, size_t n, pq_error *err)
{
    assert(o->used + n <= o->cap && o->row < o->f->rows);
    o->used += n;
    o->end += n;
    o->ends[o->num_ends++] = o->end;
    o->row++;
    return o->num_ends == ENDS_PENDING ? flush_ends(o, err) : 0;
}

int ix_others_out_end(ix_others_out *o, pq_error *err)
{
    int rc = flush_bytes(o, err);
    if (rc == 0)
        rc = flush_ends(o, err);
    if (rc == 0 && o->row != o->f->rows)
        rc = pq_error_set(err, "%llu rows of values where the dataset has %llu",
                          (unsigned long long)o->row, (unsigned long long)o->f->rows);
    if (rc == 0) {
        o->f->spans[o->p].bytes_len = o->end;
        o->f->size = o->f->spans[o->p].bytes_at + o->end;
    }
    ix_others_out_drop(o);
    return rc;
}

void ix_others_out_drop(ix_others_out *o)
{
    free(o->buf);
    free(o->ends);
    o->buf = NULL;
    o->ends = NULL;
}

static int write_any(ix_others_file *f, const uint64_t *any, pq_error *err)
{
    uint8_t *buf = malloc(IO_BYTES);
    if (!buf)
        return pq_error_set(err, "out of memory");
    uint64_t words = any_words(f->rows), at = table_end(f->positions);
    int rc = 0;
    for (uint64_t w = 0; rc == 0 && w < words;) {
        uint64_t n = words - w < IO_BYTES / 8 ? words - w : IO_BYTES / 8;
        for (uint64_t k = 0; k < n; k++)
            le64(buf + k * 8, any[w + k]);
        rc = pwrite_all(f, buf, (size_t)n * 8, at + w * 8, err);
        w += n;
    }
    free(buf);
    return rc;
}

int ix_others_file_seal(ix_others_file *f, const uint64_t *any, pq_error *err)
{
    uint64_t n = table_end(f->positions);
    uint8_t *h = malloc(n);
    uint32_t crc = 0;
    int rc = h ? write_any(f, any, err) : pq_error_set(err, "out of memory");
    if (rc == 0 && ftruncate(f->fd, (off_t)f->size) != 0)
        rc = pq_error_set(err, "cannot size %s: %s", f->path, strerror(errno));
    if (rc == 0)
        rc = body_crc(f, n, f->size, &crc, err);
    if (rc == 0) {
        put_header(f, crc, h);
        rc = pwrite_all(f, h, n, 0, err);
    }
    free(h);
    if (rc < 0 || !f->temp)
        return rc;
    /* named only once whole: a reader sees the old file or this one */
    if (fchmod(f->fd, 0644) != 0 || fsync(f->fd) != 0 || rename(f->temp, f->final) != 0)
        unlink(f->temp);
    free(f->temp);
    free(f->final);
    f->temp = f->final = NULL;
    return 0;
}

/* Position p's ends of `count` rows from `row` (and, before them, where
 * row starts) into ends[0 .. count]: ends[k + 1] is where row + k ends. */
static int read_ends(const ix_others_file *f, uint32_t p, uint64_t row, uint64_t count,
                     uint64_t *ends, pq_error *err)
{
    const ix_others_span *s = &f->spans[p];
    uint64_t *to = row ? ends : ends + 1, n = row ? count + 1 : count;
    ends[0] = 0;
    if (pread_all(f, to, (size_t)n * 8, s->ends_at + (row ? row - 1 : 0) * 8, err) < 0)
        return -1;
    for (uint64_t k = 0; k < n; k++)
        to[k] = get64((const uint8_t *)&to[k]); /* little-endian in the file */
    return 0;
}

typedef struct window_pos {
    uint64_t first, count;  /* rows [first, first + count) have their ends here */
    uint64_t ends[IX_OTHERS_WINDOW_ROWS + 1]; /* as read_ends */
    uint64_t bytes_from;    /* bytes[0 .. bytes_len) are the position's from bytes_from */
    uint64_t bytes_len;
    uint8_t bytes[IX_OTHERS_WINDOW_BYTES];
} window_pos;

struct ix_others_window {
    const ix_others_file *f;
    window_pos pos[];       /* one per position */
};

uint64_t ix_others_window_bytes(uint32_t positions)
{
    return sizeof(ix_others_window) + (uint64_t)positions * sizeof(window_pos);
}

ix_others_window *ix_others_window_new(const ix_others_file *f)
{
    ix_others_window *w = malloc(ix_others_window_bytes(f->positions));
    if (!w)
        return NULL;
    w->f = f;
    for (uint32_t p = 0; p < f->positions; p++)
        w->pos[p].count = w->pos[p].bytes_from = w->pos[p].bytes_len = 0;
    return w;
}

void ix_others_window_free(ix_others_window *w)
{
    free(w);
}

/* Where row's bytes are in the window, moving it to them when the value
 * fits in one; NULL when it does not. from..from+len is inside the column. */
static const uint8_t *window_bytes(const ix_others_file *f, window_pos *wp, uint32_t p,
                                   uint64_t from, uint64_t len, pq_error *err, int *failed)
{
    if (len > IX_OTHERS_WINDOW_BYTES)
        return NULL;
    if (from < wp->bytes_from || from + len > wp->bytes_from + wp->bytes_len) {
        uint64_t left = f->spans[p].bytes_len - from;
        wp->bytes_from = from;
        wp->bytes_len = left < IX_OTHERS_WINDOW_BYTES ? left : IX_OTHERS_WINDOW_BYTES;
        if (ix_others_file_read(f, p, from, wp->bytes_len, wp->bytes, err) < 0) {
            wp->bytes_len = 0;
            *failed = 1;
            return NULL;
        }
    }
    return wp->bytes + (from - wp->bytes_from);
}

int ix_others_file_value(const ix_others_file *f, ix_others_window *w, uint32_t p,
                         uint64_t row, uint64_t *from, uint64_t *len, const uint8_t **at,
                         pq_error *err)
{
    assert(p < f->positions && f->spans[p].ends_at && row < f->rows && (!w || w->f == f));
    uint64_t one[2], *ends = one;
    if (w) {
        window_pos *wp = &w->pos[p];
        if (!(wp->count && row >= wp->first && row - wp->first < wp->count)) {
            uint64_t count = f->rows - row;
            wp->count = 0;
            if (count > IX_OTHERS_WINDOW_ROWS)
                count = IX_OTHERS_WINDOW_ROWS;
            if (read_ends(f, p, row, count, wp->ends, err) < 0)
                return -1;
            wp->first = row;
            wp->count = count;
        }
        ends = wp->ends + (row - wp->first);
    } else if (read_ends(f, p, row, 1, one, err) < 0) {
        return -1;
    }
    *from = ends[0];
    uint64_t to = ends[1];
    if (*from > to || to > f->spans[p].bytes_len)
        return pq_error_set(err, "%s: row %llu's value at %llu..%llu is outside the %llu bytes "
                            "of its column (corrupt)", f->path, (unsigned long long)row,
                            (unsigned long long)*from, (unsigned long long)to,
                            (unsigned long long)f->spans[p].bytes_len);
    *len = to - *from;
    if (at) {
        int failed = 0;
        *at = w ? window_bytes(f, &w->pos[p], p, *from, *len, err, &failed) : NULL;
        if (failed)
            return -1;
    }
    return 0;
}

int ix_others_file_read(const ix_others_file *f, uint32_t p, uint64_t from, uint64_t len,
                        uint8_t *to, pq_error *err)
{
    const ix_others_span *s = &f->spans[p];
    assert(from <= s->bytes_len && len <= s->bytes_len - from);
    return pread_all(f, to, (size_t)len, s->bytes_at + from, err);
}

void ix_others_file_close(ix_others_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->temp)
        unlink(f->temp);
    free(f->temp);
    free(f->final);
    free(f->path);
    free(f->spans);
    init(f);
}
