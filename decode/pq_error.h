/* pq_error.h — the one error shape of youmufs.
 *
 * Every fallible function in every layer returns int: 0 on success, -1 on
 * failure, and fills a caller-provided pq_error with a message written for the
 * user: which file, which structure, what was expected and what was found.
 * Lower layers describe the problem ("page header at offset 4096: compressed
 * size 9999 exceeds the 512 bytes left in the column chunk"); upper layers
 * prepend context with pq_error_prefix ("data/a.parquet: row group 3: ").
 *
 * A NULL pq_error pointer is allowed everywhere and means "caller does not
 * want the message". Not thread-shared: each thread uses its own pq_error.
 */
#ifndef PQ_ERROR_H
#define PQ_ERROR_H

#include <stddef.h>

#define PQ_ERROR_MAX 512

typedef struct pq_error {
    char msg[PQ_ERROR_MAX];
} pq_error;

/* Replace the message (printf-style). Always returns -1 so callers can write
 * `return pq_error_set(err, "...")`. */
int pq_error_set(pq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepend context to the current message (printf-style). Returns -1. */
int pq_error_prefix(pq_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
