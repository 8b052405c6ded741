/* yfs_names.h — the files at the mount root and their inode numbers.
 *
 *   epoch-<k>.<ext>                  the whole epoch k
 *   epoch-<k>.part-<i>-of-<n>.<ext>  part i of n of epoch k
 *   epoch-<k>.resume-<N>-<R>.part-<i>-of-<n>.<ext>
 *                                    part i of n of what is left of epoch k
 *                                    after each of its N parts gave its first
 *                                    R records (sh_deal.h)
 * Numbers are plain decimal without leading zeros, so every file has exactly
 * one name. Inodes of epochs and parts encode the name: bit 63 set, epoch in
 * bits 40..61, n in bits 20..39 (0 for the whole epoch), i in bits 0..19.
 * Hence the limits: epoch < 2^22, n < 2^20, and N < 2^20, R < 2^48. A resume
 * name does not fit in 64 bits: its inode is bits 63 and 62 set and its
 * number in a table of the resume names looked up so far (yfs_name_table),
 * up to YFS_MAX_RESUME_NAMES of them.
 */
#ifndef YFS_NAMES_H
#define YFS_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define YFS_MAX_EPOCH ((1ull << 22) - 1)
#define YFS_MAX_PARTS ((1ull << 20) - 1)
#define YFS_MAX_GIVEN ((1ull << 48) - 1)
#define YFS_MAX_RESUME_NAMES 65536

/* Fixed inodes. */
enum { YFS_INO_ROOT = 1, YFS_INO_META_DIR = 2, YFS_INO_INDEX_JSON = 3, YFS_INO_STATS_JSON = 4 };

typedef struct yfs_name {
    uint64_t epoch;
    uint64_t part;
    uint64_t parts; /* 0: the whole epoch */
    uint64_t given_parts; /* a resume name: N (>= 1); 0: not a resume name */
    uint64_t given;       /* a resume name: R */
} yfs_name;

/* Parse a file name with extension ext. Returns 0, or -1 if it is not an
 * epoch file name or exceeds the limits. */
int yfs_name_parse(const char *name, const char *ext, yfs_name *out);
/* Format into buf; returns the length (as snprintf). */
int yfs_name_format(const yfs_name *n, const char *ext, char *buf, size_t cap);

/* The inodes of resume names. Thread-safe (one mutex). */
typedef struct yfs_name_table yfs_name_table;
yfs_name_table *yfs_name_table_new(void);
void yfs_name_table_free(yfs_name_table *t);

/* The inode of n (a resume name enters the table; t may be NULL for other
 * names). Returns 0, or -1 when the table is full or out of memory. */
int yfs_name_ino(yfs_name_table *t, const yfs_name *n, uint64_t *ino);
/* Returns 0 and fills n if ino is an epoch file's inode. */
int yfs_ino_name(yfs_name_table *t, uint64_t ino, yfs_name *n);

#endif
