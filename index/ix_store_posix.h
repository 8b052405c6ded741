/* ix_store_posix.h — the store of a dataset on a file system (ix_store.h):
 * a directory (every *.parquet below it) or one file. Objects are files
 * opened read-only relative to the dataset directory and kept open by the
 * index; reads are pread(2). */
#ifndef IX_STORE_POSIX_H
#define IX_STORE_POSIX_H

#include <stddef.h>

#include "ix_store.h"

int ix_store_posix_open(const char *dataset, ix_store **out, pq_error *err);

/* ix_files.c: the dataset's Parquet files, sorted by path; a dataset that
 * is a regular file yields just that file. *paths and every string are
 * owned by the caller (free each, then the array); none found is not an
 * error here (ix_store_list's). */
int ix_list_files(const char *dataset, char ***paths, size_t *count, pq_error *err);

#endif
