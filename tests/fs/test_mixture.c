/* Mixture files (yfs_mixture.h): what is read from a good one, and the
 * message for each kind of bad one, which must name the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "yfs_mixture.h"

#include "tfs.h"

Test(mixture, reads_sources_weights_columns_and_records)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"sources\": [{\"path\": \"%s\", \"weight\": 0.7},"
             " {\"path\": \"%s\", \"weight\": 0.3, \"column\": \"content\"}],"
             " \"records\": 1000}", TFS_SAMPLE, TFS_SAMPLE);
    const char *path = tfs_write_mix(text);
    yfs_mixture mx;
    pq_error err = { { 0 } };
    cr_assert_eq(yfs_mixture_load(path, &mx, &err), 0, "%s", err.msg);
    cr_assert_eq(mx.count, 2);
    cr_assert_eq(mx.records, 1000);
    cr_assert_str_eq(mx.sources[0].path, TFS_SAMPLE);
    cr_assert_null(mx.sources[0].column);
    cr_assert_str_eq(mx.sources[1].column, "content");
    /* not whole numbers: fixed point relative to the largest */
    cr_assert_eq(mx.sources[0].share, 1ull << 32);
    cr_assert_eq(mx.sources[1].share, (uint64_t)(0.3 / 0.7 * 4294967296.0 + 0.5));
    yfs_mixture_free(&mx);
    tfs_remove_mix(path);
}

Test(mixture, whole_weights_stay_exact_and_relative_paths_follow_the_file)
{
    /* the sample, as seen from the mixture file's directory */
    char text[2048];
    const char *path = tfs_write_mix("{}");
    char rel[512] = "";
    for (const char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/'))
        strcat(rel, "../");
    strcat(rel, TFS_SAMPLE + 1);
    snprintf(text, sizeof text,
             "{\"sources\": [{\"path\": \"%s\", \"weight\": 5}, {\"path\": \"%s\", \"weight\": 3},"
             " {\"path\": \"%s\", \"weight\": 2}]}", rel, TFS_SAMPLE, rel);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    yfs_mixture mx;
    pq_error err = { { 0 } };
    cr_assert_eq(yfs_mixture_load(path, &mx, &err), 0, "%s", err.msg);
    cr_assert_eq(mx.records, 0);
    cr_assert(mx.sources[0].share == 5 && mx.sources[1].share == 3 && mx.sources[2].share == 2);
    cr_assert_neq(mx.sources[0].path[0], '.');
    cr_assert(strstr(mx.sources[0].path, "/examples/sample"));
    yfs_mixture_free(&mx);
    tfs_remove_mix(path);
}

/* A bad file fails with a message that names it and contains `what`. */
static void refused(const char *text, const char *what)
{
    const char *path = tfs_write_mix(text);
    yfs_mixture mx;
    pq_error err = { { 0 } };
    cr_assert_eq(yfs_mixture_load(path, &mx, &err), -1, "accepted: %s", text);
    cr_assert(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    cr_assert(strstr(err.msg, what), "expected \"%s\" in: %s", what, err.msg);
    yfs_mixture_free(&mx);
    tfs_remove_mix(path);
}

Test(mixture, bad_files_are_refused_with_the_file_named)
{
    refused("{\"sources\": [", "not valid JSON at line 1");
    refused("[1, 2]", "must be a JSON object");
    refused("{\"sources\": []}", "non-empty array");
    refused("{\"source\": []}", "unknown key \"source\"");
    refused("{\"sources\": [{\"weight\": 1}]}", "source 0: \"path\" must be");
    refused("{\"sources\": [{\"path\": \"/nonexistent/yfs\", \"weight\": 1}]}",
            "source 0: path /nonexistent/yfs does not exist");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": 0}]}", "source 0: \"weight\" must be a number > 0, found 0");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": -1}]}", "found -1");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": \"1\"}]}", "\"weight\" must be");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": 1, \"colum\": \"x\"}]}",
            "unknown key \"colum\"");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": 1}], \"records\": 0}",
            "\"records\" must be a whole number > 0");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": 1}], \"records\": 1.5}", "\"records\"");
    refused("{\"sources\": [{\"path\": \"/\", \"weight\": 1e12}, {\"path\": \"/\", \"weight\": 1e-3}]}",
            "too small");
}

Test(mixture, a_missing_file_is_named)
{
    yfs_mixture mx;
    pq_error err = { { 0 } };
    cr_assert_eq(yfs_mixture_load("/nonexistent/mix.json", &mx, &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent/mix.json"), "%s", err.msg);
    yfs_mixture_free(&mx);
}

Test(mixture, only_local_json_files_are_mixtures)
{
    cr_assert(yfs_is_mixture("/data/mix.json"));
    cr_assert(yfs_is_mixture("mix.json"));
    cr_assert_not(yfs_is_mixture("/data/web"));
    cr_assert_not(yfs_is_mixture("/data/a.parquet"));
    cr_assert_not(yfs_is_mixture("s3://bucket/mix.json"));
    cr_assert_not(yfs_is_mixture(".json"));
}
