/* Corruption: truncated footers and random bit flips in real fixtures must
 * give a clean -1 with a message or a successful decode, never a crash,
 * hang, or out-of-bounds access (the ASan build is the judge). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tu.h"

static char **manifest(int *n)
{
    size_t len;
    uint8_t *raw = tu_fixture("MANIFEST", &len);
    cr_assert_not_null(raw);
    char **names = calloc(64, sizeof *names);
    *n = 0;
    char *text = malloc(len + 1);
    memcpy(text, raw, len);
    text[len] = '\0';
    for (char *line = strtok(text, "\n"); line && *n < 64; line = strtok(NULL, "\n")) {
        char name[256];
        if (sscanf(line, "%255s", name) == 1)
            names[(*n)++] = strdup(name);
    }
    free(text);
    free(raw);
    return names;
}

static void free_manifest(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Open and decode every column; the result must be 0, or -1 with a message. */
static int decode_all(const uint8_t *data, size_t len)
{
    tu_file f;
    pq_error err;
    err.msg[0] = '\0';
    if (tu_open(data, len, &f, &err) < 0) {
        cr_assert(err.msg[0], "failure without a message");
        return -1;
    }
    int rc = 0;
    for (int c = 0; c < f.nleaves; c++) {
        err.msg[0] = '\0';
        if (tu_walk_column(&f, c, NULL, NULL, &err) < 0) {
            cr_assert(err.msg[0], "failure without a message");
            rc = -1;
        }
    }
    tu_close(&f);
    return rc;
}

Test(corrupt, every_footer_truncation)
{
    int n;
    char **names = manifest(&n);
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *data = tu_fixture(names[i], &len);
        cr_assert_not_null(data);
        uint64_t off;
        uint32_t mlen;
        pq_error err;
        cr_assert_eq(pq_footer_locate(data + len - 8, len, &off, &mlen, &err), 0);
        for (uint32_t k = 0; k < mlen; k++) {
            uint8_t *copy = malloc(k ? k : 1);
            memcpy(copy, data + off, k);
            pq_file_meta m;
            err.msg[0] = '\0';
            int rc = pq_file_meta_parse(copy, k, &m, &err);
            if (rc == 0)
                pq_file_meta_free(&m); /* a prefix can be a valid struct */
            else
                cr_assert(err.msg[0], "%s: truncation to %u without a message", names[i], k);
            free(copy);
        }
        /* Whole-file truncations through the footer locator. */
        for (size_t cut = 1; cut <= 64 && cut < len; cut++) {
            uint8_t *copy = malloc(len - cut);
            memcpy(copy, data, len - cut);
            decode_all(copy, len - cut);
            free(copy);
        }
        free(data);
    }
    free_manifest(names, n);
}

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void flip_region(const char *name, const uint8_t *data, size_t len, size_t lo, size_t hi,
                        int rounds, uint32_t seed)
{
    uint8_t *copy = malloc(len);
    for (int r = 0; r < rounds; r++) {
        memcpy(copy, data, len);
        int flips = 1 + (int)(next(&seed) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = lo + next(&seed) % (hi - lo);
            copy[at] ^= (uint8_t)(1u << (next(&seed) % 8));
        }
        int rc = decode_all(copy, len);
        cr_assert(rc == 0 || rc == -1, "%s round %d", name, r);
    }
    free(copy);
}

Test(corrupt, random_bit_flips, .timeout = 600)
{
    int n;
    char **names = manifest(&n);
    for (int i = 0; i < n; i++) {
        size_t len;
        uint8_t *data = tu_fixture(names[i], &len);
        cr_assert_not_null(data);
        cr_assert_eq(decode_all(data, len), 0, "%s must decode intact", names[i]);
        uint64_t off;
        uint32_t mlen;
        pq_error err;
        cr_assert_eq(pq_footer_locate(data + len - 8, len, &off, &mlen, &err), 0);
        flip_region(names[i], data, len, 4, (size_t)off, 400, 0x1234567u + (uint32_t)i);
        flip_region(names[i], data, len, (size_t)off, len - 8, 200, 0x89abcdefu + (uint32_t)i);
        free(data);
    }
    free_manifest(names, n);
}
