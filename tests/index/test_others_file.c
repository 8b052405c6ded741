/* ix_others_file: the values beside the paged column, written once, reused
 * only when whole, and never read past what was written. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ix_others_file.h"

#define ROWS 3000u
#define DIGEST 0x5eedull

static const uint8_t HAS[3] = { 1, 0, 1 };

/* Row r's value of position p. */
static void value_of(uint32_t p, uint32_t r, char *out, size_t cap)
{
    if (r % 7 == 3)
        snprintf(out, cap, "null");
    else if (p == 0)
        snprintf(out, cap, "%u", r * 31);
    else
        snprintf(out, cap, "\"%.*s\"", (int)(r % 50), "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
}

/* A file of the values above, built by a mount that checked page CRCs or not. */
static void write_file_checked(const char *path, int crc_checked, uint64_t *any)
{
    pq_error err;
    ix_others_file f;
    cr_assert_eq(ix_others_file_create(&f, path, DIGEST, HAS, 3, ROWS, crc_checked, &err), 0,
                 "%s", err.msg);
    memset(any, 0, (ROWS / 64 + 1) * sizeof *any);
    for (uint32_t p = 0; p < 3; p += 2) {
        ix_others_out out;
        cr_assert_eq(ix_others_out_begin(&out, &f, p, &err), 0, "%s", err.msg);
        for (uint32_t r = 0; r < ROWS; r++) {
            char v[64];
            value_of(p, r, v, sizeof v);
            size_t n = strlen(v);
            memcpy(ix_others_out_room(&out, n, &err), v, n);
            cr_assert_eq(ix_others_out_row(&out, n, &err), 0, "%s", err.msg);
            if (r % 7 != 3)
                any[r / 64] |= 1ull << (r % 64);
        }
        cr_assert_eq(ix_others_out_end(&out, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(ix_others_file_seal(&f, any, &err), 0, "%s", err.msg);
    ix_others_file_close(&f);
}

static void write_file(const char *path, uint64_t *any)
{
    write_file_checked(path, 1, any);
}

static void check_values(const ix_others_file *f)
{
    pq_error err;
    for (uint32_t p = 0; p < 3; p += 2)
        for (uint32_t r = 0; r < ROWS; r += 13) {
            char want[64], got[64];
            uint64_t from, len;
            value_of(p, r, want, sizeof want);
            cr_assert_eq(ix_others_file_value(f, NULL, p, r, &from, &len, NULL, &err), 0, "%s", err.msg);
            cr_assert_eq(len, strlen(want));
            cr_assert_eq(ix_others_file_read(f, p, from, len, (uint8_t *)got, &err), 0, "%s",
                         err.msg);
            cr_assert_eq(memcmp(got, want, len), 0, "p %u row %u", p, r);
        }
}

static char *temp_path(void)
{
    char dir[] = "/tmp/yfs-others-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *path;
    cr_assert_geq(asprintf(&path, "%s/v.others", dir), 0);
    return path;
}

static void remove_path(char *path)
{
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
    free(path);
}

static int open_it(const char *path, uint64_t digest, ix_others_file *f, uint64_t *any,
                   pq_error *err)
{
    return ix_others_file_open(f, path, digest, HAS, 3, ROWS, 1, any, err);
}

Test(others_file, written_then_reused_whole)
{
    char *path = temp_path();
    uint64_t any[ROWS / 64 + 1], back[ROWS / 64 + 1];
    write_file(path, any);
    ix_others_file f;
    pq_error err;
    cr_assert_eq(open_it(path, DIGEST, &f, back, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(any, back, sizeof any), 0);
    check_values(&f);
    ix_others_file_close(&f);
    /* values of other files or columns are not taken */
    cr_assert_eq(open_it(path, DIGEST + 1, &f, back, &err), -1);
    cr_assert(strstr(err.msg, "other files"), "%s", err.msg);
    const uint8_t other[3] = { 1, 1, 0 };
    cr_assert_eq(ix_others_file_open(&f, path, DIGEST, other, 3, ROWS, 1, back, &err), -1);
    remove_path(path);
}

/* A file whose values were read without checking page CRCs (crc=skip)
 * serves mounts that skip them, never one that checks (it rebuilds it); a
 * file built checking them serves both. */
Test(others_file, built_unchecked_serves_only_unchecked_mounts)
{
    uint64_t any[ROWS / 64 + 1], back[ROWS / 64 + 1];
    pq_error err;
    for (int built = 0; built < 2; built++)
        for (int mount = 0; mount < 2; mount++) {
            char *path = temp_path();
            write_file_checked(path, built, any);
            ix_others_file f;
            int rc = ix_others_file_open(&f, path, DIGEST, HAS, 3, ROWS, mount, back, &err);
            if (mount && !built) {
                cr_assert_eq(rc, -1, "an unchecked file served a checking mount");
                cr_assert(strstr(err.msg, "crc=skip"), "%s", err.msg);
            } else {
                cr_assert_eq(rc, 0, "built %d, mount %d: %s", built, mount, err.msg);
                cr_assert_eq(f.crc_checked, built);
                check_values(&f);
                ix_others_file_close(&f);
            }
            remove_path(path);
        }
}

/* Through a window: the same values as record by record, for rows in
 * order, out of order and across window refills; a value larger than the
 * window is left to ix_others_file_read. */
Test(others_file, window_serves_what_reads_serve)
{
    char *path = temp_path();
    uint64_t any[ROWS / 64 + 1];
    write_file(path, any);
    ix_others_file f;
    pq_error err;
    cr_assert_eq(open_it(path, DIGEST, &f, any, &err), 0, "%s", err.msg);
    ix_others_window *w = ix_others_window_new(&f);
    cr_assert_not_null(w);
    uint32_t rows[] = { 0, 1, 2, 63, 64, 65, 200, 199, 5, ROWS - 1, ROWS - 2, 128, 127 };
    for (uint32_t round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof rows / sizeof *rows + (round ? ROWS : 0); i++) {
            uint32_t r = i < sizeof rows / sizeof *rows ? rows[i]
                                                         : (uint32_t)(i - sizeof rows / sizeof *rows);
            for (uint32_t p = 0; p < 3; p += 2) {
                char want[64];
                value_of(p, r, want, sizeof want);
                uint64_t from, len;
                const uint8_t *at;
                cr_assert_eq(ix_others_file_value(&f, w, p, r, &from, &len, &at, &err), 0, "%s",
                             err.msg);
                cr_assert(at && len == strlen(want) && memcmp(at, want, len) == 0,
                          "p %u row %u", p, r);
            }
        }
    ix_others_window_free(w);
    ix_others_file_close(&f);
    remove_path(path);

    /* one row of 10,000 bytes: longer than the window */
    ix_others_file big;
    const uint8_t has[1] = { 1 };
    cr_assert_eq(ix_others_file_create(&big, NULL, 1, has, 1, 1, 1, &err), 0, "%s", err.msg);
    ix_others_out out;
    cr_assert_eq(ix_others_out_begin(&out, &big, 0, &err), 0, "%s", err.msg);
    memset(ix_others_out_room(&out, 10000, &err), 'x', 10000);
    cr_assert_eq(ix_others_out_row(&out, 10000, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_others_out_end(&out, &err), 0, "%s", err.msg);
    uint64_t one[1] = { 1 };
    cr_assert_eq(ix_others_file_seal(&big, one, &err), 0, "%s", err.msg);
    w = ix_others_window_new(&big);
    uint64_t from, len;
    const uint8_t *at = (const uint8_t *)"not null";
    cr_assert_eq(ix_others_file_value(&big, w, 0, 0, &from, &len, &at, &err), 0, "%s", err.msg);
    cr_assert(from == 0 && len == 10000 && at == NULL);
    ix_others_window_free(w);
    ix_others_file_close(&big);
}

/* A file cut short, a byte changed in its header or its body, or a file of
 * something else: refused, saying why. */
Test(others_file, damaged_files_refused)
{
    char *path = temp_path();
    uint64_t any[ROWS / 64 + 1];
    struct { long at; const char *why; } damage[] = {
        { -1, "torn" }, { 17, "header" }, { 100, "header" }, { -200, "values' checksum" },
        { 0, "not a values file" },
    };
    for (size_t d = 0; d < sizeof damage / sizeof *damage; d++) {
        write_file(path, any);
        int fd = open(path, O_RDWR);
        struct stat st;
        cr_assert_eq(fstat(fd, &st), 0);
        if (damage[d].at == -1) {
            cr_assert_eq(ftruncate(fd, st.st_size - 3), 0);
        } else {
            off_t at = damage[d].at < 0 ? st.st_size + damage[d].at : damage[d].at;
            uint8_t b;
            cr_assert_eq(pread(fd, &b, 1, at), 1);
            b ^= 0x41;
            cr_assert_eq(pwrite(fd, &b, 1, at), 1);
        }
        close(fd);
        ix_others_file f;
        pq_error err;
        cr_assert_eq(open_it(path, DIGEST, &f, any, &err), -1, "damage %zu taken", d);
        cr_assert(strstr(err.msg, damage[d].why) && strstr(err.msg, path), "damage %zu: %s", d,
                  err.msg);
    }
    remove_path(path);
}

/* Under an open file, an end changed to point past its column's bytes, and
 * the file cut short: reads fail naming the file, never return bytes. */
Test(others_file, damage_after_open_fails_reads)
{
    char *path = temp_path();
    uint64_t any[ROWS / 64 + 1];
    write_file(path, any);
    ix_others_file f;
    pq_error err;
    cr_assert_eq(open_it(path, DIGEST, &f, any, &err), 0, "%s", err.msg);
    int fd = open(path, O_RDWR);
    uint8_t far[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
    cr_assert_eq(pwrite(fd, far, 8, (off_t)(f.spans[2].ends_at + 10 * 8)), 8);
    uint64_t from, len;
    cr_assert_eq(ix_others_file_value(&f, NULL, 2, 10, &from, &len, NULL, &err), -1);
    cr_assert(strstr(err.msg, "outside") && strstr(err.msg, path), "%s", err.msg);
    cr_assert_eq(ix_others_file_value(&f, NULL, 2, 11, &from, &len, NULL, &err), -1);
    cr_assert_eq(ftruncate(fd, (off_t)f.spans[2].bytes_at + 5), 0);
    close(fd);
    cr_assert_eq(ix_others_file_value(&f, NULL, 2, ROWS - 1, &from, &len, NULL, &err), 0, "%s", err.msg);
    uint8_t buf[64];
    cr_assert_eq(ix_others_file_read(&f, 2, from, len, buf, &err), -1);
    cr_assert(strstr(err.msg, "short read") && strstr(err.msg, path), "%s", err.msg);
    ix_others_file_close(&f);
    remove_path(path);
}

/* Without a name (cache=none) the file is unlinked at once: nothing is left
 * in $TMPDIR, and it serves the values all the same. */
Test(others_file, temporary_file_leaves_nothing)
{
    char dir[] = "/tmp/yfs-others-tmp.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TMPDIR", dir, 1);
    pq_error err;
    ix_others_file f;
    cr_assert_eq(ix_others_file_create(&f, NULL, DIGEST, HAS, 3, 1, 1, &err), 0, "%s", err.msg);
    for (uint32_t p = 0; p < 3; p += 2) {
        ix_others_out out;
        cr_assert_eq(ix_others_out_begin(&out, &f, p, &err), 0, "%s", err.msg);
        memcpy(ix_others_out_room(&out, 2, &err), "42", 2);
        cr_assert_eq(ix_others_out_row(&out, 2, &err), 0, "%s", err.msg);
        cr_assert_eq(ix_others_out_end(&out, &err), 0, "%s", err.msg);
    }
    uint64_t any[1] = { 1 };
    cr_assert_eq(ix_others_file_seal(&f, any, &err), 0, "%s", err.msg);
    cr_assert_eq(rmdir(dir), 0, "the temporary file is still in %s", dir);
    uint64_t from, len;
    uint8_t got[2];
    cr_assert_eq(ix_others_file_value(&f, NULL, 2, 0, &from, &len, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(ix_others_file_read(&f, 2, from, len, got, &err), 0, "%s", err.msg);
    cr_assert_eq(memcmp(got, "42", 2), 0);
    ix_others_file_close(&f);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
}
