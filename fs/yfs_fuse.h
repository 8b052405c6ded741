/* yfs_fuse.h — serving a mount through the FUSE low-level API.
 *
 * The callbacks are thin: names and inodes come from yfs_names, bytes from
 * the read path (yfs_view), JSON from yfs_report. Replies to reads go
 * straight from the segment buffers to the kernel (fuse_reply_iov), no copy.
 */
#ifndef YFS_FUSE_H
#define YFS_FUSE_H

#include "yfs_mount.h"

struct fuse_args;

/* Mount at `mountpoint`, daemonize unless foreground, serve until unmounted
 * or signalled. `args` carries the FUSE options. Returns the exit status. */
int yfs_fuse_run(yfs_mount *m, struct fuse_args *args, const char *mountpoint, int foreground,
                 int single_thread, unsigned max_threads, unsigned max_idle_threads);

#endif
