/* yfs_thread.h — starting the mount's own threads (prefetch workers, decode
 * helpers).
 *
 * libfuse ends the mount when SIGTERM, SIGINT, SIGHUP or SIGQUIT is handled
 * by the main thread or one of its workers, which then wake the others. A
 * thread of ours that took the signal instead would mark the session as
 * exiting without waking anyone, and the daemon would hang until the next
 * request. So, as libfuse does for its own workers, our threads start with
 * those signals blocked.
 */
#ifndef YFS_THREAD_H
#define YFS_THREAD_H

#include <pthread.h>

/* pthread_create with default attributes and the signals above blocked in
 * the new thread. Returns pthread_create's result. */
int yfs_thread_create(pthread_t *thread, void *(*run)(void *), void *arg);

#endif
