#include "tfs.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "yfs_view.h"

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

static void read_exactly(yfs_view *v, uint64_t off, size_t len, uint8_t *out)
{
    size_t got;
    pq_error err;
    cr_assert_eq(yfs_view_read(v, off, len, out, &got, &err), 0, "%s", err.msg);
    cr_assert_eq(got, len);
}

void tfs_check_read_backwards(yfs_mount *(*open)(void), uint64_t (*built)(yfs_mount *m))
{
    yfs_mount *m = open();
    yfs_view *v;
    pq_error err;
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0, "%s", err.msg);
    uint64_t size = yfs_view_size(v), half = size / 2;
    uint8_t *whole = malloc(size), *backwards = malloc(size);
    cr_assert(whole && backwards);
    read_exactly(v, 0, size, whole);
    uint64_t in_order = built(m); /* each segment once: memory is ample */
    yfs_view_close(v);
    yfs_mount_close(m);

    m = open();
    cr_assert_eq(yfs_view_open(m, &(yfs_name){ 0 }, &v, &err), 0, "%s", err.msg);
    read_exactly(v, half, size - half, backwards + half);
    uint64_t limit = yfs_budget_limit(m->budget); /* a prefetch asking for all the room */
    if (yfs_budget_reserve(m->budget, limit, YFS_MEM_SEGMENTS, YFS_PREFETCH, NULL) == 0)
        yfs_budget_release(m->budget, limit, YFS_MEM_SEGMENTS, NULL);
    read_exactly(v, 0, half, backwards);
    cr_assert_eq(memcmp(whole, backwards, size), 0, "the bytes differ from a read in order");
    cr_assert_eq(built(m), in_order, "%llu segments built, %llu reading in order",
                 (unsigned long long)built(m), (unsigned long long)in_order);
    yfs_view_close(v);
    yfs_mount_close(m);
    free(whole);
    free(backwards);
}

void tfs_sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}
