/* yfs_view.h — the read path: an epoch file or part file as bytes.
 *
 * A view is one file (epoch k, part i of n; the whole epoch is part 0 of 1).
 * yfs_view_read maps a byte range onto the segments that hold it, building
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

typedef struct yfs_view yfs_view;

/* parts == 0 means the whole epoch. Fails for part >= parts. */
int yfs_view_open(yfs_mount *m, uint64_t epoch, uint64_t part, uint64_t parts, yfs_view **out,
                  pq_error *err);
void yfs_view_close(yfs_view *v);
uint64_t yfs_view_size(const yfs_view *v);

/* A piece of a read: `len` bytes at `data`, valid until released. The
 * bytes are in a segment (seg), or, for the part of a read before a segment
 * boundary, in a copy the extent owns (seg NULL): a reader never holds a
 * segment while it waits for the next to be built, so waiting for memory
 * cannot deadlock. A copy is charged to the accountant as a bounce copy
 * (YFS_FORCE: its reader holds segments and must not wait; at most one
 * request's bytes per reading thread). */
typedef struct yfs_extent {
    yfs_seg *seg;
    const uint8_t *data;
    size_t len;
    size_t charged; /* a copy's bytes charged to the accountant */
} yfs_extent;

#define YFS_MAX_EXTENTS 64

/* Map [offset, offset+size) (clipped to the file) onto at most max extents;
 * *count is how many were filled (0 at or past the end). A read that would
 * need more extents returns a shorter result, which is still correct.
 * On failure no extent is held. */
int yfs_view_read(yfs_view *v, uint64_t offset, size_t size, yfs_extent *ext, int max,
                  int *count, pq_error *err);
/* Give the extents back. Needs only the mount, not the view: a FUSE reply
 * lets the kernel release (close) the file at once, so the view may be gone
 * by the time the reading thread gets here. */
void yfs_extents_release(yfs_mount *m, yfs_extent *ext, int count);

#endif
