#include "tfs.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

yfs_mount *tfs_open(const char *dataset, const char *base, const char *extra, uint64_t mem)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    char *rest = NULL;
    const char *lists[2] = { base, extra };
    for (int i = 0; i < 2; i++)
        if (lists[i])
            cr_assert_eq(yfs_options_apply_list(&o, lists[i], &rest, &err), 0, "%s", err.msg);
    if (mem)
        o.mem = mem;
    yfs_mount *m;
    cr_assert_eq(yfs_mount_open(&o, dataset, 0, &m, &err), 0, "%s", err.msg);
    yfs_options_free(&o);
    return m;
}

yfs_mount *tfs_open_sample(const char *base, const char *extra, uint64_t mem)
{
    return tfs_open(TFS_SAMPLE, base, extra, mem);
}

const char *tfs_write_mix(const char *text)
{
    static char path[256];
    char dir[] = "/tmp/yfs-mix-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/mix.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

void tfs_remove_mix(const char *path)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s", path);
    unlink(path);
    *strrchr(dir, '/') = 0;
    rmdir(dir);
}

uint64_t tfs_held(yfs_budget *b, yfs_mem_kind kind)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(b, &s);
    return s.bytes[kind];
}
