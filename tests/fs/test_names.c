/* Epoch file names, inodes and options. */
#include <criterion/criterion.h>
#include <string.h>

#include "yfs_names.h"
#include "yfs_options.h"

Test(names, round_trip_through_name_and_inode)
{
    yfs_name cases[] = { { 0, 0, 0, 0, 0 }, { 7, 0, 0, 0, 0 }, { 3, 2, 8, 0, 0 },
                         { YFS_MAX_EPOCH, 0, 1, 0, 0 },
                         { 1, YFS_MAX_PARTS - 1, YFS_MAX_PARTS, 0, 0 },
                         { 2, 1, 2, 4, 1000 }, { 2, 0, 3, 4, 1000 }, { 2, 1, 2, 4, 0 },
                         { YFS_MAX_EPOCH, 7, 8, YFS_MAX_PARTS, YFS_MAX_GIVEN } };
    yfs_name_table *t = yfs_name_table_new();
    uint64_t inos[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        yfs_name_format(&cases[i], "jsonl", buf, sizeof buf);
        yfs_name n, back;
        cr_assert_eq(yfs_name_parse(buf, "jsonl", &n), 0, "%s", buf);
        cr_assert_eq(memcmp(&n, &cases[i], sizeof n), 0, "%s", buf);
        cr_assert_eq(yfs_name_ino(t, &n, &inos[i]), 0);
        cr_assert_eq(yfs_ino_name(t, inos[i], &back), 0);
        cr_assert_eq(memcmp(&n, &back, sizeof n), 0, "%s", buf);
        for (size_t j = 0; j < i; j++)
            cr_assert_neq(inos[i], inos[j], "%s shares an inode", buf);
        uint64_t again;
        cr_assert_eq(yfs_name_ino(t, &n, &again), 0);
        cr_assert_eq(again, inos[i], "%s: a second lookup gives another inode", buf);
    }
    yfs_name unknown;
    cr_assert_eq(yfs_ino_name(t, (1ull << 63) | (1ull << 62) | 999, &unknown), -1,
                 "a resume inode never handed out");
    yfs_name_table_free(t);
}

Test(names, only_canonical_names_parse)
{
    const char *bad[] = { "epoch-.jsonl", "epoch-01.jsonl", "epoch-1.txt", "epoch-1.jsonl.x",
                          "epoch-1.part-3-of-3.jsonl", "epoch-1.part-0-of-0.jsonl",
                          "epoch-1.part-00-of-2.jsonl", "epoch-4194304.jsonl",
                          "epoch-1.part-1-of-1048576.jsonl", "epoch--1.jsonl", "EPOCH-1.jsonl",
                          "epoch-1.part-1-of-2", "epoch-99999999999999999999999.jsonl",
                          "epoch-1.resume-4-10.jsonl", "epoch-1.resume-0-10.part-0-of-2.jsonl",
                          "epoch-1.resume-4-010.part-0-of-2.jsonl",
                          "epoch-1.resume-4.part-0-of-2.jsonl",
                          "epoch-1.part-0-of-2.resume-4-10.jsonl",
                          "epoch-1.resume-4-281474976710656.part-0-of-2.jsonl" };
    yfs_name n;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(yfs_name_parse(bad[i], "jsonl", &n), -1, "%s parsed", bad[i]);
    cr_assert_eq(yfs_name_parse("epoch-0.part-0-of-1.txt", "txt", &n), 0);
    cr_assert_eq(yfs_ino_name(NULL, 1, &n), -1, "the root is not an epoch file");
}

Test(options, values_are_parsed_strictly)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    cr_assert_eq(yfs_options_apply(&o, "seed=42", &err), 0);
    cr_assert_eq(o.seed, 42);
    cr_assert_eq(yfs_options_apply(&o, "seed=4x", &err), -1);
    cr_assert(strstr(err.msg, "seed"), "%s", err.msg);
    cr_assert_eq(yfs_options_apply(&o, "mem=64M", &err), 0);
    cr_assert_eq(o.mem, 64u << 20);
    cr_assert_eq(yfs_options_apply(&o, "mem=2GiB", &err), 0);
    cr_assert_eq(o.mem, 2ull << 30);
    cr_assert_eq(yfs_options_apply(&o, "mem=12Q", &err), -1);
    cr_assert_eq(yfs_options_apply(&o, "format=len32", &err), 0);
    cr_assert_eq(o.frame.format, IX_FORMAT_LEN32);
    cr_assert_eq(yfs_options_apply(&o, "format=csv", &err), -1);
    cr_assert_eq(yfs_options_apply(&o, "shuffle=none", &err), 0);
    cr_assert_eq(o.shuffle, SH_SHUFFLE_NONE);
    cr_assert_eq(yfs_options_apply(&o, "buffer=0", &err), -1);
    cr_assert_eq(yfs_options_apply(&o, "even=pad", &err), 0);
    cr_assert_eq(o.even, SH_EVEN_PAD);
    cr_assert_eq(yfs_options_apply(&o, "even=drop", &err), 0);
    cr_assert_eq(o.even, SH_EVEN_DROP);
    cr_assert_eq(yfs_options_apply(&o, "even=yes", &err), -1);
    cr_assert(strstr(err.msg, "even"), "%s", err.msg);
    cr_assert_eq(yfs_options_apply(&o, "rowid", &err), 0);
    cr_assert_eq(o.frame.rowid, 1);
    cr_assert_eq(yfs_options_apply(&o, "column", &err), -1, "column needs a value");
    cr_assert_eq(yfs_options_apply(&o, "allow_other", &err), 1, "not ours: for FUSE");
    yfs_options_free(&o);
}

Test(options, lists_split_ours_from_fuse_options)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    char *rest = NULL;
    cr_assert_eq(yfs_options_apply_list(&o, "allow_other,column=a.b,max_threads=4,epochs=3",
                                        &rest, &err), 0);
    cr_assert_str_eq(rest, "allow_other,max_threads=4");
    cr_assert_str_eq(o.column, "a.b");
    cr_assert_eq(o.epochs, 3);
    free(rest);
    yfs_options_free(&o);
}

Test(options, rowid_needs_jsonl)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    char *rest = NULL;
    cr_assert_eq(yfs_options_apply_list(&o, "rowid", &rest, &err), 0);
    cr_assert_eq(yfs_options_check(&o, &err), 0);
    cr_assert_eq(yfs_options_apply_list(&o, "format=len32", &rest, &err), 0);
    cr_assert_eq(yfs_options_check(&o, &err), -1);
    cr_assert(strstr(err.msg, "rowid") && strstr(err.msg, "jsonl"), "%s", err.msg);
    yfs_options_free(&o);
}

Test(options, raw_options)
{
    yfs_options o;
    yfs_options_init(&o);
    pq_error err;
    char *rest = NULL;
    cr_assert_eq(yfs_options_apply_list(&o, "dtype=u16,sep=-1", &rest, &err), 0, "%s", err.msg);
    cr_assert_eq(o.frame.dtype, IX_DT_U16);
    cr_assert(o.frame.has_sep && o.frame.sep == -1);
    cr_assert_eq(yfs_options_check(&o, &err), -1, "dtype needs format=raw");
    cr_assert_eq(yfs_options_apply(&o, "format=raw", &err), 0);
    cr_assert_eq(yfs_options_check(&o, &err), 0, "%s", err.msg);
    cr_assert_eq(yfs_options_apply(&o, "dtype=u128", &err), -1);
    cr_assert_eq(yfs_options_apply(&o, "sep=eos", &err), -1);
    yfs_options_free(&o);
}
