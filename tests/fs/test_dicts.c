/* The dictionary cache (yfs_dicts.h) on the sample dataset: one load per
 * chunk while cached, charged at its decoded size in use and idle, idle
 * ones dropped by the cap and by demand reads short of room, referenced
 * ones never. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "yfs_dicts.h"
#include "yfs_mount.h"
#include "tfs.h"

/* The first two chunks with a dictionary. */
static void dict_chunks(const ix_index *ix, uint32_t *c)
{
    int n = 0;
    for (uint32_t i = 0; i < ix->num_chunks && n < 2; i++)
        if (ix->chunks[i].dict_offset >= 0)
            c[n++] = i;
    cr_assert_eq(n, 2, "the sample has dictionary-encoded chunks");
}

Test(dicts, loaded_once_and_charged_in_use_and_idle)
{
    yfs_mount *m = tfs_open_sample("cache=none", NULL, 0);
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(64u << 20, &st);
    yfs_dicts *c = yfs_dicts_new(m->ix, b, 64u << 20, &st);
    uint32_t ch[2];
    dict_chunks(m->ix, ch);
    const pq_dictionary *d1, *d2;
    yfs_dict *h1, *h2;
    pq_error err;
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d1, &h1, &err), 0, "%s", err.msg);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d2, &h2, &err), 0, "%s", err.msg);
    cr_assert_eq(d1, d2);
    cr_assert_eq(yfs_counter(&st.dictionaries_loaded), 1);
    cr_assert_gt(d1->count, 0);
    uint64_t charged = tfs_held(b, YFS_MEM_DICTIONARIES);
    cr_assert_geq(charged, pq_dictionary_bytes(d1), "charged below its decoded size");
    cr_assert_lt(charged, pq_dictionary_bytes(d1) + 256);
    cr_assert_eq(yfs_budget_used(b), charged, "the raw page's charge was not released");
    yfs_dicts_put(c, h1);
    yfs_dicts_put(c, h2);
    cr_assert_eq(tfs_held(b, YFS_MEM_DICTIONARIES), charged, "an idle dictionary is not charged");
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d1, &h1, &err), 0);
    cr_assert_eq(yfs_counter(&st.dictionaries_loaded), 1, "the idle one was not reused");
    yfs_dicts_put(c, h1);
    yfs_dicts_free(c);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
    yfs_mount_close(m);
}

Test(dicts, idle_ones_go_for_the_cap_and_for_demand_reads_in_use_ones_never)
{
    yfs_mount *m = tfs_open_sample("cache=none", NULL, 0);
    uint32_t ch[2];
    dict_chunks(m->ix, ch);
    pq_error err;
    const pq_dictionary *d;
    yfs_dict *h0, *h1;

    /* cap 0: dropped as soon as the last user lets go */
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(64u << 20, &st);
    yfs_dicts *c = yfs_dicts_new(m->ix, b, 0, &st);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d, &h0, &err), 0);
    yfs_dicts_put(c, h0);
    cr_assert_eq(tfs_held(b, YFS_MEM_DICTIONARIES), 0);
    yfs_dicts_free(c);
    yfs_budget_free(b);

    /* a limit holding about the two: a demand read drops the idle one */
    b = yfs_budget_new(64u << 20, &st);
    c = yfs_dicts_new(m->ix, b, 64u << 20, &st);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d, &h0, &err), 0);
    cr_assert_eq(yfs_dicts_get(c, ch[1], NULL, &d, &h1, &err), 0);
    uint64_t both = yfs_budget_used(b);
    yfs_budget_snapshot probe;
    yfs_budget_snapshot_get(b, &probe); /* the peak: loading reserves a bound first */
    yfs_dicts_free(c);
    yfs_budget_free(b);

    /* a cache whose half (kept for patient demand reads) is less than one */
    b = yfs_budget_new(probe.peak, &st);
    c = yfs_dicts_new(m->ix, b, both / 2, &st);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d, &h0, &err), 0);
    cr_assert_eq(yfs_dicts_get(c, ch[1], NULL, &d, &h1, &err), 0);
    uint64_t in_use = yfs_budget_used(b);
    cr_assert_eq(in_use, both);
    /* both in use: nothing to drop, a try is refused */
    uint64_t more = probe.peak - both + 100;
    cr_assert_eq(yfs_budget_reserve(b, more, YFS_MEM_DECODED, YFS_TRY, NULL), -1);
    cr_assert_eq(yfs_budget_used(b), both);
    yfs_dicts_put(c, h0);
    cr_assert_eq(yfs_budget_reserve(b, more, YFS_MEM_DECODED, YFS_DEMAND, NULL), 0);
    cr_assert_lt(tfs_held(b, YFS_MEM_DICTIONARIES), both, "the idle dictionary was kept");
    cr_assert_eq(yfs_counter(&st.memory_waits), 0);
    /* the one in use is still there */
    const pq_dictionary *again;
    yfs_dict *h;
    uint64_t loads = yfs_counter(&st.dictionaries_loaded);
    cr_assert_eq(yfs_dicts_get(c, ch[1], NULL, &again, &h, &err), 0);
    cr_assert_eq(yfs_counter(&st.dictionaries_loaded), loads);
    yfs_dicts_put(c, h);
    yfs_dicts_put(c, h1);
    yfs_budget_release(b, more, YFS_MEM_DECODED, NULL);
    yfs_dicts_free(c);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
    yfs_mount_close(m);
}

typedef struct demand_read {
    yfs_budget *b;
    uint64_t bytes;
} demand_read;

static void *reserve_on_demand(void *arg)
{
    demand_read *r = arg;
    yfs_budget_reserve(r->b, r->bytes, YFS_MEM_DECODED, YFS_DEMAND, NULL);
    return NULL;
}

/* Idle dictionaries up to half the cache outlast a demand read short of
 * room while something running frees room (the decodes of a shuffled epoch
 * come back to the same chunks: dropped for each, tokens re-read each one
 * inside a decode); when nothing else can, they go after the patience. */
Test(dicts, recent_idle_ones_outlast_a_patient_demand_read)
{
    yfs_mount *m = tfs_open_sample("cache=none", NULL, 0);
    uint32_t ch[2];
    dict_chunks(m->ix, ch);
    pq_error err;
    const pq_dictionary *d;
    yfs_dict *h;
    yfs_stats st = { 0 };
    yfs_budget *b = yfs_budget_new(64u << 20, &st);
    yfs_dicts *c = yfs_dicts_new(m->ix, b, 64u << 20, &st);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d, &h, &err), 0, "%s", err.msg);
    yfs_dicts_put(c, h);
    uint64_t dict = yfs_budget_used(b);
    cr_assert_gt(dict, 0);

    /* a build holds the rest; a demand read needs what the dictionary
     * holds: it waits, and gets the build's memory when that goes */
    uint64_t build = yfs_budget_limit(b) - dict;
    cr_assert_eq(yfs_budget_reserve(b, build, YFS_MEM_DECODED, YFS_FORCE, NULL), 0);
    demand_read r = { b, dict };
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, reserve_on_demand, &r), 0);
    tfs_sleep_ms(YFS_BUDGET_PATIENCE_NS / 1000000 / 4);
    yfs_budget_release(b, build, YFS_MEM_DECODED, NULL);
    pthread_join(t, NULL);
    cr_assert_eq(yfs_counter(&st.memory_waits), 1);
    cr_assert_eq(tfs_held(b, YFS_MEM_DICTIONARIES), dict, "the idle dictionary was dropped");
    uint64_t loads = yfs_counter(&st.dictionaries_loaded);
    cr_assert_eq(yfs_dicts_get(c, ch[0], NULL, &d, &h, &err), 0, "%s", err.msg);
    cr_assert_eq(yfs_counter(&st.dictionaries_loaded), loads, "read again");
    yfs_dicts_put(c, h);
    yfs_budget_release(b, dict, YFS_MEM_DECODED, NULL);

    /* nothing else to free: the read proceeds once out of patience, the
     * dictionary dropped for it (never a wait without end) */
    cr_assert_eq(yfs_budget_reserve(b, build, YFS_MEM_PLANS, YFS_FORCE, NULL), 0);
    cr_assert_eq(yfs_budget_reserve(b, dict, YFS_MEM_DECODED, YFS_DEMAND, NULL), 0);
    cr_assert_eq(tfs_held(b, YFS_MEM_DICTIONARIES), 0);
    yfs_budget_release(b, dict, YFS_MEM_DECODED, NULL);
    yfs_budget_release(b, build, YFS_MEM_PLANS, NULL);
    yfs_dicts_free(c);
    cr_assert_eq(yfs_budget_used(b), 0);
    yfs_budget_free(b);
    yfs_mount_close(m);
}
