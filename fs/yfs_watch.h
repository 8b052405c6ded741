/* yfs_watch.h — `youmufs stats MOUNTPOINT`: a live view of a mount, one line
 * per interval like `vmstat 1`, from its .youmufs/stats.json (so it works on
 * any mount the caller can read, started by anyone, and needs no socket).
 *
 * Each line covers the interval since the one before (the first, the first
 * interval after the command started): MB/s served to readers and read from storage (10^6 bytes),
 * read amplification over the interval (bytes read per stored byte of the
 * pages decoded), memory held of mem= (the accountant's bytes, MiB), read
 * requests in flight and those waiting for a segment another thread builds,
 * memory reservations waiting for room, segments built, read errors. With
 * json, the same as one JSON object per line (JSON Lines), with the counters
 * of the interval under their stats.json names.
 */
#ifndef YFS_WATCH_H
#define YFS_WATCH_H

typedef struct yfs_watch_opts {
    const char *mountpoint;
    double interval;  /* seconds between lines (> 0) */
    long count;       /* lines to print; 0: until interrupted or the mount goes */
    int json;
} yfs_watch_opts;

/* Prints lines to stdout; returns the exit status: 0, or 1 (with a message
 * on stderr) when stats.json cannot be read or parsed, at the start or after
 * the mount went away. */
int yfs_watch_run(const yfs_watch_opts *o);

#endif
