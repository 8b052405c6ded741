/* Building the index of the bundled sample dataset and of broken ones. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ix_index.h"
#include "ix_read.h"
#include "tix.h"

static ix_options opts(const char *dataset, const char *column)
{
    return (ix_options){ .dataset = dataset, .column = column, .frame = { IX_FORMAT_JSONL },
                         .threads = 2 };
}

Test(build, sample_index_is_consistent)
{
    ix_options o = opts(TIX_SAMPLE, NULL);
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), 0, "%s", err.msg);
    cr_assert_str_eq(ix->column.path, "text");
    cr_assert_eq(ix->num_files, 3);
    uint64_t rows = 0, records = 0, framed = 0;
    for (uint64_t p = 0; p < ix->num_pages; p++) {
        const ix_page *pg = &ix->pages[p];
        uint32_t c = ix_locate(ix, p);
        const ix_chunk *ch = &ix->chunks[c];
        /* the layered search lands on the chunk whose page range holds p */
        cr_assert(p >= ch->first_page && p < ch->first_page + ch->num_pages);
        const ix_file *f = &ix->files[ch->file];
        cr_assert(pg->first_row >= f->first_row && pg->first_row < f->first_row + f->num_rows);
        cr_assert_eq(pg->first_row, rows, "pages are in row order");
        rows += pg->rows;
        records += pg->records;
        framed += pg->framed;

        /* the run-time reader agrees with the mount-time pass */
        ix_dict_source dicts = { tix_load_dictionary, ix };
        void *handle;
        uint64_t read = 0;
        pq_page_values v;
        cr_assert_eq(ix_read_page(ix, p, &dicts, &v, &handle, &read, &err), 0, "%s", err.msg);
        cr_assert_eq(v.num_values, pg->records);
        pq_page_values_free(&v);
        tix_free_dictionary(handle);
    }
    cr_assert_eq(rows, ix->num_rows);
    cr_assert_eq(records, ix->num_records);
    cr_assert_eq(framed, ix->framed_bytes);
    cr_assert_lt(records, rows, "the sample has nulls");
    ix_free(ix);
}

Test(build, missing_column_lists_the_columns)
{
    ix_options o = opts(TIX_SAMPLE, "nope");
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), -1);
    cr_assert(strstr(err.msg, "nope") && strstr(err.msg, "text") && strstr(err.msg, "id"),
              "%s", err.msg);
}

Test(build, text_of_a_numeric_column_is_refused_clearly)
{
    ix_options o = opts(TIX_SAMPLE, "id");
    o.frame.format = IX_FORMAT_TEXT;
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), -1);
    cr_assert(strstr(err.msg, "id") && strstr(err.msg, ".parquet") && strstr(err.msg, "jsonl"),
              "%s", err.msg);
}

Test(build, empty_directory_and_missing_path)
{
    char dir[TIX_PATH];
    tix_temp_dir(dir, "empty");
    ix_options o = opts(dir, NULL);
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), -1);
    cr_assert(strstr(err.msg, "no *.parquet files"), "%s", err.msg);
    rmdir(dir);
    o = opts("/nonexistent/dataset", NULL);
    cr_assert_eq(ix_build(&o, &ix, &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent/dataset"), "%s", err.msg);
}

Test(build, truncated_file_names_the_file)
{
    char dir[TIX_PATH];
    tix_temp_dir(dir, "trunc");
    char src[2 * TIX_PATH], dst[2 * TIX_PATH];
    snprintf(src, sizeof src, "%s/part-0.parquet", TIX_SAMPLE);
    snprintf(dst, sizeof dst, "%s/broken.parquet", dir);
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, in); /* the first 4 KiB only */
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    ix_options o = opts(dir, NULL);
    ix_index *ix;
    pq_error err;
    cr_assert_eq(ix_build(&o, &ix, &err), -1);
    cr_assert(strstr(err.msg, "broken.parquet"), "%s", err.msg);
    unlink(dst);
    rmdir(dir);
}
