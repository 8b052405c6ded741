/* tix.h — what the index/ unit tests share: a private copy of the bundled
 * sample with an empty cache directory, and a dictionary source that loads
 * each dictionary afresh. */
#ifndef TIX_H
#define TIX_H

#include "ix_read.h"

#define TIX_SAMPLE YFS_SOURCE_DIR "/examples/sample"

/* Copy the sample's files into a new directory made from the mkdtemp
 * template `dataset` (at most 63 characters) and make an empty directory
 * from the template `cache`; both are rewritten with the names made. */
void tix_copy_sample(char *dataset, char *cache);
/* rm -rf both directories. */
void tix_remove(const char *dataset, const char *cache);

/* ix_dict_source.get over ix_read_dictionary (ctx: the ix_index); the
 * handle is the dictionary, freed by tix_free_dictionary. */
int tix_load_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                        pq_error *err);
void tix_free_dictionary(void *handle);

#endif
