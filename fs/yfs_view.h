/* yfs_view.h — the read path: an epoch file or part file as bytes.
 *
 * A view is one file of the mount root (yfs_names.h): the whole epoch k, a
 * part of it, or a part of what is left of it (elastic resume); its records
 * are dealt as sh_deal.h says, with the mount's even=. Opening a part that
 * cuts a segment (even=, resume) builds that segment through the cache to
 * learn where its records start (sizes are exact before any read).
 * yfs_view_read copies a byte range out of the segments that hold it, building
 * or waiting for each through the segment cache, and asks the cache to
 * prefetch the segments that follow in the same file: the plan says exactly
 * what comes next (NoPFS). Reads at any offset return the same bytes as a
 * sequential read (invariant 3). Works without FUSE: `youmufs cat` and the
 * tests use it directly. A view may be read by several threads at once.
 */
#ifndef YFS_VIEW_H
#define YFS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "yfs_cache.h"
#include "yfs_mount.h"
#include "yfs_names.h"

typedef struct yfs_view yfs_view;

/* The file named n. Fails for part >= parts, or when a segment it needs
 * to lay itself out cannot be built (the error says why). */
int yfs_view_open(yfs_mount *m, const yfs_name *n, yfs_view **out, pq_error *err);
void yfs_view_close(yfs_view *v);
uint64_t yfs_view_size(const yfs_view *v);

/* Copy [offset, offset+size) (clipped to the file) into out; *got is how
 * many bytes (0 at or past the end). The segments the range spans are
 * taken one at a time, each given back before the next is asked for: a
 * reader never holds a segment while it waits for another to be built, so
 * waiting for memory cannot deadlock. out is the caller's, charged by it
 * (YFS_MEM_READS). On failure the bytes in out are not to be used. */
int yfs_view_read(yfs_view *v, uint64_t offset, size_t size, uint8_t *out, size_t *got,
                  pq_error *err);

#endif
