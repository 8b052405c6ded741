/* yfs_cpu.h — whether this process keeps the cores it may run on busy.
 *
 * Over slow storage a build frames its units with every worker, to keep
 * its reads in flight at once (yfs_segment.h). When the cores are busy
 * decoding already (8 parts of DuckDB's token pages, each decoded from a
 * stream), more framing threads do no more work: they hold one more page
 * stream each, and the streams closed for room are read and decoded again.
 * When they are not (DuckDB's text at 50 ms a read: the builds wait on
 * storage), the threads are what fills them. So builds ask this.
 *
 * The share is the process's CPU time over wall time in windows of at
 * least YFS_CPU_WINDOW_NS, divided by the cores of its affinity mask,
 * sampled by whoever asks (yfs_cpu_sample) and kept from the last window
 * that ended. Thread-safe.
 */
#ifndef YFS_CPU_H
#define YFS_CPU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define YFS_CPU_WINDOW_NS (500u * 1000 * 1000)
/* Busy: this share of the cores or more, in percent. */
#define YFS_CPU_BUSY_PERCENT 75u

typedef struct yfs_cpu {
    pthread_mutex_t lock;   /* guards the window's start */
    uint64_t wall0, cpu0;   /* the current window's start; wall0 0: none yet */
    unsigned cores;
    _Atomic int busy;       /* the last window's verdict; 0 before the first */
} yfs_cpu;

/* cores 0: the cores of the process's affinity mask. */
void yfs_cpu_init(yfs_cpu *c, unsigned cores);
void yfs_cpu_destroy(yfs_cpu *c);
/* Note the clocks at wall_ns (monotonic) and cpu_ns (the process's CPU
 * time): a window that lasted YFS_CPU_WINDOW_NS or more ends here and gives
 * the verdict. */
void yfs_cpu_note(yfs_cpu *c, uint64_t wall_ns, uint64_t cpu_ns);
/* yfs_cpu_note with the clocks now. */
void yfs_cpu_sample(yfs_cpu *c);
int yfs_cpu_busy(const yfs_cpu *c);

#endif
