#include <criterion/criterion.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "pq_codec.h"
#include "pq_meta.h"

#define N 5000

static uint8_t *sample(void)
{
    uint8_t *p = malloc(N);
    for (int i = 0; i < N; i++)
        p[i] = (uint8_t)(i % 251 < 100 ? 'a' + i % 7 : i * 31);
    return p;
}

/* Decompress with the right size, then one byte short and one byte long. */
static void check_sizes(int codec, const uint8_t *c, size_t clen, const uint8_t *want)
{
    pq_error err;
    uint8_t *out = malloc(N + 1);
    cr_assert_eq(pq_decompress(codec, c, clen, out, N, &err), 0, "%s: %s",
                 pq_codec_name(codec), err.msg);
    cr_assert_eq(memcmp(out, want, N), 0, "%s: wrong bytes", pq_codec_name(codec));
    cr_assert_eq(pq_decompress(codec, c, clen, out, N - 1, &err), -1, "%s: short dst",
                 pq_codec_name(codec));
    cr_assert(strstr(err.msg, pq_codec_name(codec)), "message names the codec: %s", err.msg);
    cr_assert_eq(pq_decompress(codec, c, clen, out, N + 1, &err), -1, "%s: long dst",
                 pq_codec_name(codec));
    cr_assert_eq(pq_decompress(codec, c, clen / 2, out, N, &err), -1, "%s: truncated",
                 pq_codec_name(codec));
    free(out);
}

Test(codec, uncompressed)
{
    uint8_t *in = sample();
    check_sizes(PQ_UNCOMPRESSED, in, N, in);
    free(in);
}

Test(codec, snappy)
{
    uint8_t *in = sample();
    size_t clen = snappy_max_compressed_length(N);
    uint8_t *c = malloc(clen);
    cr_assert_eq(snappy_compress((const char *)in, N, (char *)c, &clen), SNAPPY_OK);
    check_sizes(PQ_SNAPPY, c, clen, in);
    free(c);
    free(in);
}

static size_t deflate_to(const uint8_t *in, size_t n, uint8_t *out, size_t cap, int bits)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

Test(codec, gzip_zlib_and_concatenated_members)
{
    uint8_t *in = sample();
    size_t cap = compressBound(N) + 64;
    uint8_t *c = malloc(2 * cap);
    size_t clen = deflate_to(in, N, c, cap, 15 + 16); /* gzip header */
    check_sizes(PQ_GZIP, c, clen, in);
    clen = deflate_to(in, N, c, cap, 15); /* zlib header */
    check_sizes(PQ_GZIP, c, clen, in);
    /* two gzip members: first 1000 bytes, then the rest */
    size_t a = deflate_to(in, 1000, c, cap, 31);
    size_t b = deflate_to(in + 1000, N - 1000, c + a, cap, 31);
    check_sizes(PQ_GZIP, c, a + b, in);
    free(c);
    free(in);
}

Test(codec, zstd)
{
    uint8_t *in = sample();
    size_t cap = ZSTD_compressBound(N);
    uint8_t *c = malloc(cap);
    size_t clen = ZSTD_compress(c, cap, in, N, 3);
    cr_assert(!ZSTD_isError(clen));
    check_sizes(PQ_ZSTD, c, clen, in);
    free(c);
    free(in);
}

Test(codec, lz4_raw_and_lz4_variants)
{
    uint8_t *in = sample();
    int cap = LZ4_compressBound(N);
    uint8_t *c = malloc((size_t)cap + 64);
    int clen = LZ4_compress_default((const char *)in, (char *)c, N, cap);
    cr_assert_gt(clen, 0);
    check_sizes(PQ_LZ4_RAW, c, (size_t)clen, in);
    /* codec LZ4 given a raw block (old parquet-cpp): accepted by fallback */
    check_sizes(PQ_LZ4, c, (size_t)clen, in);

    /* Hadoop framing with two blocks of [BE ulen][BE clen][block]. */
    uint8_t *h = malloc(2 * (size_t)cap + 64);
    size_t hl = 0;
    const int parts[2][2] = { { 0, 3000 }, { 3000, N - 3000 } };
    for (int k = 0; k < 2; k++) {
        int cl = LZ4_compress_default((const char *)in + parts[k][0], (char *)h + hl + 8,
                                      parts[k][1], cap);
        uint32_t u = (uint32_t)parts[k][1], cc = (uint32_t)cl;
        uint8_t hdr[8] = { u >> 24, u >> 16, u >> 8, u, cc >> 24, cc >> 16, cc >> 8, cc };
        memcpy(h + hl, hdr, 8);
        hl += 8 + (size_t)cl;
    }
    check_sizes(PQ_LZ4, h, hl, in);

    /* LZ4 frame, for writers that used the frame format. */
    size_t fcap = LZ4F_compressFrameBound(N, NULL);
    uint8_t *f = malloc(fcap);
    size_t fl = LZ4F_compressFrame(f, fcap, in, N, NULL);
    cr_assert(!LZ4F_isError(fl));
    check_sizes(PQ_LZ4, f, fl, in);
    free(f);
    free(h);
    free(c);
    free(in);
}

Test(codec, brotli_rejects_garbage)
{
    /* Brotli round trips are covered by the BROTLI fixture (no encoder is
     * linked into the tests); here only the error path. */
    uint8_t junk[32], out[64];
    memset(junk, 0xa5, sizeof junk);
    pq_error err;
    cr_assert_eq(pq_decompress(PQ_BROTLI, junk, sizeof junk, out, sizeof out, &err), -1);
    cr_assert(strstr(err.msg, "BROTLI"), "%s", err.msg);
}

Test(codec, lzo_and_unknown_are_refused)
{
    uint8_t in[4] = { 1, 2, 3, 4 }, out[4];
    pq_error err;
    cr_assert_eq(pq_decompress(PQ_LZO, in, 4, out, 4, &err), -1);
    cr_assert(strstr(err.msg, "LZO"), "%s", err.msg);
    cr_assert_eq(pq_decompress(42, in, 4, out, 4, &err), -1);
    cr_assert(strstr(err.msg, "42"), "%s", err.msg);
    cr_assert_str_eq(pq_codec_name(PQ_ZSTD), "ZSTD");
    cr_assert_str_eq(pq_codec_name(99), "codec 99");
}

Test(codec, random_garbage_never_crashes)
{
    uint8_t junk[300], out[1000];
    uint32_t x = 12345;
    pq_error err;
    int codecs[] = { PQ_SNAPPY, PQ_GZIP, PQ_BROTLI, PQ_ZSTD, PQ_LZ4, PQ_LZ4_RAW };
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < sizeof junk; i++) {
            x = x * 1103515245u + 12345u;
            junk[i] = (uint8_t)(x >> 16);
        }
        for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
            size_t n = 1 + round % sizeof junk;
            int rc = pq_decompress(codecs[k], junk, n, out, sizeof out, &err);
            cr_assert(rc == 0 || rc == -1);
        }
    }
}
