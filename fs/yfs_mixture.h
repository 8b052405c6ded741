/* yfs_mixture.h — a mixture file: DATASET given as a JSON file that names
 * several sources and their weights (README.md, "Mixtures"):
 *
 *   {"sources": [{"path": "/data/web", "weight": 0.7},
 *                {"path": "/data/code", "weight": 0.3, "column": "content"}],
 *    "records": 1000000}
 *
 * "sources" is a non-empty array (at most SH_MIX_MAX_SOURCES); each source
 * has "path" (a directory, a Parquet file or an s3:// URL; a relative path
 * is taken from the mixture file's directory), "weight" (a number > 0) and
 * optionally "column" (default: the mount's column=). "records", optional,
 * is the epoch's record count (a whole number > 0; default: the sum of the
 * sources' records). Any other key is refused, so a misspelt one does not
 * go unnoticed. A local path must exist.
 *
 * Weights become the integers sh_mix_counts takes: whole-number weights
 * below 2^32 as they are, otherwise round(weight / largest x 2^32) (a
 * weight that would round to 0 is refused).
 *
 * Every message starts with the mixture file's name and says what is wrong
 * and where ("mix.json: source 2: weight must be a number > 0, found 0").
 */
#ifndef YFS_MIXTURE_H
#define YFS_MIXTURE_H

#include <stdint.h>

#include "pq_error.h"

typedef struct yfs_mix_source {
    char *path;     /* resolved: relative paths joined to the mixture file's directory */
    char *column;   /* NULL: the mount's column= */
    double weight;  /* as written */
    uint64_t share; /* the weight as an integer (above) */
} yfs_mix_source;

typedef struct yfs_mixture {
    char *file;     /* the mixture file, as given */
    uint32_t count; /* sources, >= 1 */
    yfs_mix_source *sources;
    uint64_t records; /* 0: the sum of the sources' records */
} yfs_mixture;

/* Whether DATASET names a mixture file: a local path ending in ".json". */
int yfs_is_mixture(const char *dataset);

/* Read and check the mixture file `file` into *out (owned: free with
 * yfs_mixture_free, also after a failure). Returns 0, or -1 with a message
 * naming the file. */
int yfs_mixture_load(const char *file, yfs_mixture *out, pq_error *err);
void yfs_mixture_free(yfs_mixture *mx);

#endif
