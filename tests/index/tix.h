/* tix.h — what the index/ unit tests share: a private copy of the bundled
 * sample with an empty cache directory, and a dictionary source that loads
 * each dictionary afresh. */
#ifndef TIX_H
#define TIX_H

#include "ix_read.h"

#define TIX_SAMPLE YFS_SOURCE_DIR "/examples/sample"

/* Size of the path buffers below. */
#define TIX_PATH 512

/* Make a new empty directory "$TMPDIR/yfs-<name>-XXXXXX" (TMPDIR, else
 * /tmp) and write its path to dir (TIX_PATH bytes). */
void tix_temp_dir(char *dir, const char *name);
/* A new directory (tix_temp_dir) holding a copy of the sample's files in
 * dataset, and an empty one in cache (both TIX_PATH bytes). */
void tix_copy_sample(char *dataset, char *cache);
/* rm -rf both directories ("" for none). */
void tix_remove(const char *dataset, const char *cache);

/* ix_dict_source.get over ix_read_dictionary (ctx: the ix_index); the
 * handle is the dictionary, freed by tix_free_dictionary. */
int tix_load_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                        pq_error *err);
void tix_free_dictionary(void *handle);

#endif
