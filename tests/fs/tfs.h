/* tfs.h — what the fs/ unit tests share: the bundled sample dataset opened
 * as a mount without FUSE, and the accountant's bytes of one kind. */
#ifndef TFS_H
#define TFS_H

#include <stdint.h>

#include "yfs_budget.h"
#include "yfs_mount.h"

#define TFS_SAMPLE YFS_SOURCE_DIR "/examples/sample"

/* `dataset` (a directory, file or mixture file) mounted (not started: no
 * prefetch workers) with the options of the comma-separated lists `base`
 * then `extra` (either may be NULL), and mem bytes of memory if mem is not
 * 0 (below the 1M that mem= accepts, for tests of eviction); fails the test
 * on any error. Close with yfs_mount_close. */
yfs_mount *tfs_open(const char *dataset, const char *base, const char *extra, uint64_t mem);
/* The same of the sample. */
yfs_mount *tfs_open_sample(const char *base, const char *extra, uint64_t mem);
/* Write text to mix.json in a fresh temp directory; returns its path (a
 * static buffer). tfs_remove_mix removes both. */
const char *tfs_write_mix(const char *text);
void tfs_remove_mix(const char *path);
/* Bytes of `kind` the accountant holds now. */
uint64_t tfs_held(yfs_budget *b, yfs_mem_kind kind);

#endif
