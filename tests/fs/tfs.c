#include "tfs.h"

#include <criterion/criterion.h>

yfs_mount *tfs_open_sample(const char *base, const char *extra, uint64_t mem)
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
    cr_assert_eq(yfs_mount_open(&o, TFS_SAMPLE, 0, &m, &err), 0, "%s", err.msg);
    yfs_options_free(&o);
    return m;
}

uint64_t tfs_held(yfs_budget *b, yfs_mem_kind kind)
{
    yfs_budget_snapshot s;
    yfs_budget_snapshot_get(b, &s);
    return s.bytes[kind];
}
