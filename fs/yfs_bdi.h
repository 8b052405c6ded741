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
 * reply may only lower it, and the kernel applies that reply after
 * whatever was written before. So once the mount answers (a stat of the
 * mount point, which waits for INIT to be done), a thread of ours writes
 * read_ahead_kb of the mount's own backing device, which goes away with the
 * mount. Writing it needs root: otherwise the kernel's window stays, the log
 * says so, and nothing else changes.
 */
#ifndef YFS_BDI_H
#define YFS_BDI_H

#include <stdint.h>

typedef struct yfs_mount yfs_mount;
typedef struct yfs_bdi yfs_bdi;

/* Set the readahead window of the mount at `mountpoint` (absolute) to
 * `bytes`, a multiple of 4 KiB, in a thread of its own, logging to m what
 * it could not do. Call once the session is mounted and after daemonizing
 * (a fork keeps one thread). NULL when bytes is 0 or no thread started
 * (logged). */
yfs_bdi *yfs_bdi_start(yfs_mount *m, const char *mountpoint, uint64_t bytes);

/* Wait for the thread and free. Call after the session is destroyed: a
 * stat the loop never answered then fails at once. NULL is a no-op. */
void yfs_bdi_join(yfs_bdi *b);

#endif
