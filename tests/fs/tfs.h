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
/* Sleep ms milliseconds (tests that wait for other threads poll). */
void tfs_sleep_ms(long ms);
/* Bytes of `kind` the accountant holds now. */
uint64_t tfs_held(yfs_budget *b, yfs_mem_kind kind);
/* Reads of one file run at once and in any order, and a segment counts as
 * read to its end (the cache may drop it first) only once every byte the
 * file takes of it was copied out (yfs_cache_served). Checked on epoch-0
 * of a mount open() makes: read whole, then, on a new mount, its second
 * half first (as the kernel's readahead may send it: it copies the end of
 * the segments under the middle of the file, not their start), a
 * prefetch's call for all the room (which drops only segments read to their
 * end), then its first half. Fails the test unless the bytes are those read
 * whole and built() counts as many segment builds as reading in order. */
void tfs_check_read_backwards(yfs_mount *(*open)(void), uint64_t (*built)(yfs_mount *m));

#endif
