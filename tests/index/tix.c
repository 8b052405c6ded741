#include "tix.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

void tix_temp_dir(char *dir, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, TIX_PATH, "%s/yfs-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    cr_assert(n > 0 && n < TIX_PATH, "TMPDIR too long");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", dir);
}

void tix_copy_sample(char *dataset, char *cache)
{
    tix_temp_dir(dataset, "dataset");
    tix_temp_dir(cache, "cache");
    char cmd[3 * TIX_PATH];
    snprintf(cmd, sizeof cmd, "cp %s/*.parquet %s/", TIX_SAMPLE, dataset);
    cr_assert_eq(system(cmd), 0);
}

void tix_remove(const char *dataset, const char *cache)
{
    char cmd[3 * TIX_PATH];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dataset, cache);
    cr_assert_eq(system(cmd), 0);
}

int tix_load_dictionary(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
                        pq_error *err)
{
    pq_dictionary *d = malloc(sizeof *d);
    uint64_t read = 0;
    if (!d || ix_read_dictionary(ctx, chunk, d, &read, err) < 0) {
        free(d);
        return -1;
    }
    *dict = d;
    *handle = d;
    return 0;
}

void tix_free_dictionary(void *handle)
{
    if (!handle)
        return;
    pq_dictionary_free(handle);
    free(handle);
}
