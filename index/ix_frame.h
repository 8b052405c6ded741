/* ix_frame.h — how one record is written into an epoch file (the framings of
 * DESIGN.md). The index uses it at mount to compute every page's exact framed
 * size (so st_size is exact before any read); the read path uses it to write
 * the records. Both go through the same two functions, so size and bytes
 * cannot disagree: ix_frame_write writes exactly ix_frame_size bytes.
 *
 *   jsonl  {"<column>":"<value>"}\n, or {"<column>":"<value>","_row":<row>}\n
 *          with rowid. The value is a JSON string: `"` and `\` are escaped,
 *          control bytes below 0x20 become \n \r \t \b \f or \u00XX, all
 *          other bytes are copied (UTF-8 stays UTF-8). For a binary column
 *          (BYTE_ARRAY without a string annotation) bytes >= 0x80 are written
 *          as \u0080..\u00ff, so a reader recovers the bytes with
 *          value.encode("latin-1").
 *   text   value bytes, then \n (the caller must refuse values containing \n).
 *   len32  4-byte little-endian length, then the value bytes.
 *
 * A framing is immutable after ix_framing_init and may be shared by threads.
 */
#ifndef IX_FRAME_H
#define IX_FRAME_H

#include <stddef.h>
#include <stdint.h>

typedef enum ix_format { IX_FORMAT_JSONL = 0, IX_FORMAT_TEXT, IX_FORMAT_LEN32 } ix_format;

typedef struct ix_framing {
    ix_format format;
    int rowid;       /* jsonl: append "_row" */
    int binary;      /* jsonl: escape bytes >= 0x80 (binary column) */
    char *prefix;    /* jsonl: {"<escaped column>": */
    size_t prefix_len;
} ix_framing;

/* Parse "jsonl" | "text" | "len32". Returns -1 for anything else. */
int ix_format_parse(const char *name, ix_format *out);
/* File extension of a format: "jsonl", "txt", "len32". */
const char *ix_format_ext(ix_format format);

/* column: the key written in jsonl records. Returns -1 on allocation failure. */
int ix_framing_init(ix_framing *f, ix_format format, int rowid, int binary, const char *column);
void ix_framing_free(ix_framing *f);

/* Exact number of bytes ix_frame_write produces for this record. */
size_t ix_frame_size(const ix_framing *f, const uint8_t *value, uint32_t len, uint64_t row);
/* An upper bound of ix_frame_size for any value of `len` bytes and any row:
 * cheap, for bounds checks that should not rescan the value. */
size_t ix_frame_size_bound(const ix_framing *f, uint32_t len);
/* Write the record at out (which has ix_frame_size bytes of room); returns
 * the end of what was written. */
uint8_t *ix_frame_write(const ix_framing *f, const uint8_t *value, uint32_t len, uint64_t row,
                        uint8_t *out);

#endif
