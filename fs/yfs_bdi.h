/* yfs_bdi.h — the kernel's readahead window for the mount (kernel_readahead=).
 *
 * The kernel reads a FUSE file through the page cache in requests no larger
 * than the readahead window of the mount's backing device (read_ahead_kb
 * under /sys/class/bdi/MAJOR:MINOR, 128 KiB unless raised), with about two
 * in flight per sequential reader. Every request costs the daemon a fixed
 * price (a wake-up, finding the segments it spans, the reply), so at 128 KiB
 * that price is paid eight times per MiB, and a mixture's requests, which
 * gather records of every source, pay it most. The default, 256 KiB, read
 * pyarrow text 3-8% faster and its mixtures 2-11% faster; 1 MiB more so, but
 * a mixture of DuckDB files (pages streamed under memory pressure) then
 * re-read a third of its bytes (bench/results/kernel_readahead.md).
 *
 * The window can only be raised from outside the FUSE protocol: the INIT
 * reply may only lower it (the kernel keeps the smaller of the two), and
 * the kernel applies that reply when the daemon writes it. So the session
 * answers INIT first, on its own (yfs_fuse.c), and only then, before it
 * serves anything else, the window is written in read_ahead_kb of the
 * mount's own backing device, which goes away with the mount. The device
 * comes from /proc/self/mountinfo, not from a stat of the mount point: a
 * stat would wait for the session's answer, and while it waits it holds
 * the mount, so an unmount at that moment failed with EBUSY. Writing the
 * window needs root: otherwise the kernel's window stays, the log says so,
 * and nothing else changes.
 */
#ifndef YFS_BDI_H
#define YFS_BDI_H

#include <stdint.h>

typedef struct yfs_mount yfs_mount;

/* Set the readahead window of the FUSE mount at `mountpoint` (absolute, as
 * the kernel lists it) to `bytes`, a multiple of 4 KiB, logging to m what it
 * could not do. Call once the session has answered INIT. 0 bytes: nothing. */
void yfs_bdi_set(yfs_mount *m, const char *mountpoint, uint64_t bytes);

#endif
