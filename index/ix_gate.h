/* ix_gate.h — the mount's reads kept deep while its decoding stays on the
 * cores.
 *
 * The mount-time passes (footers, the page pass) run on many more threads
 * than there are cores (ix_options.io_depth: most of them wait on storage),
 * and a gate limits what those threads may do at once:
 * - CPU: at most `cpus` threads hold a CPU token. A task takes one before
 *   it decodes and lets it go while it waits on storage (ix_gate_pread), so
 *   reads overlap by the hundred while decoding runs on `cpus` threads, as
 *   before.
 * - Bytes: the buffers the tasks hold for what they read (the page pass's
 *   windows) are charged before they are allocated, at most `bytes` at once;
 *   a request larger than that waits until nothing else is held, then runs
 *   alone.
 * Deadlock-free by construction: a thread waits for bytes holding neither a
 * CPU token nor bytes (ix_gate_take gives back what it held first), and a
 * thread holding a CPU token waits for nothing in the gate. Every function
 * is thread-safe; a NULL gate lets everything through (no limit), so code
 * that runs outside a mount (a single scan) passes NULL.
 */
#ifndef IX_GATE_H
#define IX_GATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ix_store.h"
#include "pq_error.h"

typedef struct ix_gate {
    pthread_mutex_t lock;   /* guards everything below */
    pthread_cond_t cpu_cond;
    pthread_cond_t bytes_cond;
    int cpu_free;           /* CPU tokens not held, 0..cpus */
    int cpus;
    uint64_t bytes_held;    /* charged by ix_gate_take, <= bytes unless one alone holds more */
    uint64_t bytes;
} ix_gate;

/* cpus >= 1 tokens, `bytes` >= 1 of buffers. */
void ix_gate_init(ix_gate *g, int cpus, uint64_t bytes);
/* Every token and byte must be back (asserted). */
void ix_gate_destroy(ix_gate *g);

/* Take a CPU token, waiting for one; let it go. */
void ix_gate_cpu_enter(ix_gate *g);
void ix_gate_cpu_leave(ix_gate *g);

/* Replace the `*held` bytes the caller holds with `want` bytes, waiting for
 * room (give back first: the caller holds nothing while it waits); the
 * caller must not hold a CPU token. Sets *held = want. */
void ix_gate_take(ix_gate *g, uint64_t *held, uint64_t want);
/* Give back the caller's *held bytes; sets *held = 0. */
void ix_gate_give(ix_gate *g, uint64_t *held);

/* ix_store_read by a caller that holds a CPU token: let it go for the read,
 * take one again after. */
int ix_gate_pread(ix_gate *g, ix_store *store, int handle, const char *name, void *buf,
                  size_t len, uint64_t offset, pq_error *err);

#endif
