/* yfs_names.h — the files at the mount root and their inode numbers.
 *
 *   epoch-<k>.<ext>                  the whole epoch k
 *   epoch-<k>.part-<i>-of-<n>.<ext>  part i of n of epoch k
 * Numbers are plain decimal without leading zeros, so every file has exactly
 * one name. Inodes encode the name (no table): bit 63 set, epoch in bits
 * 40..61, n in bits 20..39 (0 for the whole epoch), i in bits 0..19. Hence the
 * limits: epoch < 2^22, n < 2^20.
 */
#ifndef YFS_NAMES_H
#define YFS_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define YFS_MAX_EPOCH ((1ull << 22) - 1)
#define YFS_MAX_PARTS ((1ull << 20) - 1)

/* Fixed inodes. */
enum { YFS_INO_ROOT = 1, YFS_INO_META_DIR = 2, YFS_INO_INDEX_JSON = 3, YFS_INO_STATS_JSON = 4 };

typedef struct yfs_name {
    uint64_t epoch;
    uint64_t part;
    uint64_t parts; /* 0: the whole epoch */
} yfs_name;

/* Parse a file name with extension ext. Returns 0, or -1 if it is not an
 * epoch file name or exceeds the limits. */
int yfs_name_parse(const char *name, const char *ext, yfs_name *out);
/* Format into buf; returns the length (as snprintf). */
int yfs_name_format(const yfs_name *n, const char *ext, char *buf, size_t cap);

uint64_t yfs_name_ino(const yfs_name *n);
/* Returns 0 and fills n if ino is an epoch file's inode. */
int yfs_ino_name(uint64_t ino, yfs_name *n);

#endif
