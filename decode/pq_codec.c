#include "pq_codec.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <brotli/decode.h>
#include <lz4.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "pq_cursor.h"
#include "pq_meta.h"

const char *pq_codec_name(int codec)
{
    static _Thread_local char buf[32];
    switch (codec) {
    case PQ_UNCOMPRESSED: return "UNCOMPRESSED";
    case PQ_SNAPPY: return "SNAPPY";
    case PQ_GZIP: return "GZIP";
    case PQ_LZO: return "LZO";
    case PQ_BROTLI: return "BROTLI";
    case PQ_LZ4: return "LZ4";
    case PQ_ZSTD: return "ZSTD";
    case PQ_LZ4_RAW: return "LZ4_RAW";
    default:
        snprintf(buf, sizeof buf, "codec %d", codec);
        return buf;
    }
}

static int size_mismatch(int codec, size_t got, size_t want, pq_error *err)
{
    return pq_error_set(err, "%s: body decompresses to %zu bytes, page header says %zu",
                        pq_codec_name(codec), got, want);
}

static int snappy(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                  pq_error *err)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)src, src_len, &n) != SNAPPY_OK)
        return pq_error_set(err, "SNAPPY: body of %zu bytes has no valid length header",
                            src_len);
    if (n != dst_len)
        return size_mismatch(PQ_SNAPPY, n, dst_len, err);
    if (snappy_uncompress((const char *)src, src_len, (char *)dst, &n) != SNAPPY_OK)
        return pq_error_set(err, "SNAPPY: corrupt body of %zu bytes", src_len);
    return n == dst_len ? 0 : size_mismatch(PQ_SNAPPY, n, dst_len, err);
}

/* GZIP: windowBits 15+32 accepts gzip and zlib headers. Some writers emit
 * several gzip members back to back; each is inflated in turn. */
static int gzip(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                pq_error *err)
{
    if (src_len > UINT_MAX || dst_len > UINT_MAX)
        return pq_error_set(err, "GZIP: page of %zu bytes is too large", src_len);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return pq_error_set(err, "GZIP: cannot initialise zlib");
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)src_len;
    z.next_out = dst;
    z.avail_out = (uInt)dst_len;
    int rc = 0;
    for (;;) {
        int ret = inflate(&z, Z_FINISH);
        if (ret == Z_STREAM_END) {
            if (z.avail_in == 0 || z.avail_out == 0)
                break;
            /* Another member follows. */
            if (inflateReset(&z) != Z_OK) {
                rc = pq_error_set(err, "GZIP: cannot reset zlib");
                break;
            }
            continue;
        }
        if (ret == Z_OK)
            continue; /* progress was made; zlib reports no progress as Z_BUF_ERROR */
        if (ret == Z_BUF_ERROR && z.avail_out == 0) {
            rc = pq_error_set(err, "GZIP: body decompresses to more than %zu bytes", dst_len);
            break;
        }
        rc = pq_error_set(err, "GZIP: corrupt body at input byte %zu: %s",
                          src_len - z.avail_in, z.msg ? z.msg : "truncated stream");
        break;
    }
    size_t produced = dst_len - z.avail_out;
    inflateEnd(&z);
    if (rc == 0 && produced != dst_len)
        rc = size_mismatch(PQ_GZIP, produced, dst_len, err);
    return rc;
}

static int brotli(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                  pq_error *err)
{
    size_t n = dst_len;
    BrotliDecoderResult r = BrotliDecoderDecompress(src_len, src, &n, dst);
    if (r != BROTLI_DECODER_RESULT_SUCCESS)
        return pq_error_set(err, "BROTLI: corrupt body of %zu bytes or larger than %zu bytes",
                            src_len, dst_len);
    return n == dst_len ? 0 : size_mismatch(PQ_BROTLI, n, dst_len, err);
}

static int zstd(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                pq_error *err)
{
    size_t n = ZSTD_decompress(dst, dst_len, src, src_len);
    if (ZSTD_isError(n))
        return pq_error_set(err, "ZSTD: %s (body of %zu bytes, %zu expected out)",
                            ZSTD_getErrorName(n), src_len, dst_len);
    return n == dst_len ? 0 : size_mismatch(PQ_ZSTD, n, dst_len, err);
}

static int lz4_block(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    if (src_len > INT_MAX || dst_len > INT_MAX)
        return -1;
    int n = LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
    return n >= 0 && (size_t)n == dst_len ? 0 : -1;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Hadoop's BlockCompressorStream framing: blocks of [4-byte BE uncompressed
 * length] followed by one or more [4-byte BE compressed length][LZ4 block]
 * chunks that together inflate to that length. */
static int lz4_hadoop(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    if (dst_len > INT_MAX)
        return -1;
    pq_cursor c = pq_cursor_make(src, src_len);
    size_t out = 0;
    while (c.left > 0) {
        const uint8_t *p;
        if (!pq_cursor_slice(&c, 4, &p))
            return -1;
        uint32_t block = be32(p);
        if (block > dst_len - out)
            return -1;
        size_t block_end = out + block;
        while (out < block_end) {
            if (!pq_cursor_slice(&c, 4, &p))
                return -1;
            uint32_t clen = be32(p);
            if (clen == 0 || clen > INT_MAX || !pq_cursor_slice(&c, clen, &p))
                return -1;
            int n = LZ4_decompress_safe((const char *)p, (char *)dst + out, (int)clen,
                                        (int)(block_end - out));
            if (n <= 0)
                return -1;
            out += (size_t)n;
        }
    }
    return out == dst_len ? 0 : -1;
}

static int lz4_frame(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    LZ4F_dctx *ctx;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION)))
        return -1;
    size_t in = 0, out = 0, hint = 1;
    while (in < src_len) {
        size_t in_n = src_len - in, out_n = dst_len - out;
        hint = LZ4F_decompress(ctx, dst + out, &out_n, src + in, &in_n, NULL);
        if (LZ4F_isError(hint) || (in_n == 0 && out_n == 0))
            break;
        in += in_n;
        out += out_n;
    }
    LZ4F_freeDecompressionContext(ctx);
    return in == src_len && out == dst_len && hint == 0 ? 0 : -1;
}

/* LZ4 (codec 5) is ambiguous in practice: parquet-mr wrote the Hadoop
 * framing, older parquet-cpp wrote a raw block, some writers an LZ4 frame.
 * Try each; all must produce exactly dst_len bytes. */
static int lz4_any(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                   pq_error *err)
{
    if (lz4_hadoop(src, src_len, dst, dst_len) == 0 || lz4_block(src, src_len, dst, dst_len) == 0 ||
        lz4_frame(src, src_len, dst, dst_len) == 0)
        return 0;
    return pq_error_set(err,
                        "LZ4: body of %zu bytes is not a valid Hadoop-framed, raw or framed "
                        "LZ4 stream of %zu bytes",
                        src_len, dst_len);
}

int pq_decompress(int codec, const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len,
                  pq_error *err)
{
    if (dst_len == 0 && src_len == 0)
        return 0; /* an empty section, e.g. a v2 page whose values are all null */
    switch (codec) {
    case PQ_UNCOMPRESSED:
        if (src_len != dst_len)
            return pq_error_set(err, "UNCOMPRESSED: body is %zu bytes, page header says %zu",
                                src_len, dst_len);
        if (dst_len)
            memcpy(dst, src, dst_len);
        return 0;
    case PQ_SNAPPY: return snappy(src, src_len, dst, dst_len, err);
    case PQ_GZIP: return gzip(src, src_len, dst, dst_len, err);
    case PQ_BROTLI: return brotli(src, src_len, dst, dst_len, err);
    case PQ_ZSTD: return zstd(src, src_len, dst, dst_len, err);
    case PQ_LZ4: return lz4_any(src, src_len, dst, dst_len, err);
    case PQ_LZ4_RAW:
        if (lz4_block(src, src_len, dst, dst_len) < 0)
            return pq_error_set(err, "LZ4_RAW: body of %zu bytes is corrupt or does not "
                                     "decompress to exactly %zu bytes",
                                src_len, dst_len);
        return 0;
    case PQ_LZO:
        return pq_error_set(err, "LZO compression is not supported (no free decoder is "
                                 "linked); rewrite the file with ZSTD or SNAPPY");
    default:
        return pq_error_set(err, "unknown compression codec %d", codec);
    }
}
