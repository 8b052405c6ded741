#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ix_internal.h"

/* Directories nested deeper than this are refused (symlink loops). */
#define MAX_DEPTH 64

typedef struct file_list {
    char **paths;
    size_t count, cap;
} file_list;

/* Appends path, which the list now owns (it is freed on failure too). */
static int push(file_list *l, char *path, pq_error *err)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown) {
            free(path);
            return pq_error_set(err, "out of memory listing files");
        }
        l->paths = grown;
        l->cap = cap;
    }
    l->paths[l->count++] = path;
    return 0;
}

static int has_parquet_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 8 && strcmp(name + n - 8, ".parquet") == 0;
}

static int walk(const char *dir, int depth, file_list *l, pq_error *err)
{
    if (depth > MAX_DEPTH)
        return pq_error_set(err, "%s: directories nested more than %d deep (a symlink loop?)",
                            dir, MAX_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return pq_error_set(err, "%s: cannot open directory: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        /* Hidden entries (., .., .git, checksum files) are never data. */
        if (e->d_name[0] == '.')
            continue;
        char *path;
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) {
            rc = pq_error_set(err, "out of memory listing files");
            break;
        }
        /* d_type saves a stat per entry; symlinks and file systems that do
         * not fill it in need one. */
        int is_dir = e->d_type == DT_DIR, is_file = e->d_type == DT_REG;
        struct stat st;
        if (e->d_type == DT_UNKNOWN || e->d_type == DT_LNK) {
            if (stat(path, &st) != 0) {
                rc = pq_error_set(err, "%s: cannot stat: %s", path, strerror(errno));
                free(path);
                break;
            }
            is_dir = S_ISDIR(st.st_mode);
            is_file = S_ISREG(st.st_mode);
        }
        if (is_file && has_parquet_suffix(e->d_name)) {
            rc = push(l, path, err);
            continue;
        }
        if (is_dir)
            rc = walk(path, depth + 1, l, err);
        free(path);
    }
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ix_list_files(const char *dataset, char ***paths, size_t *count, pq_error *err)
{
    file_list l = { 0 };
    struct stat st;
    int rc;
    if (stat(dataset, &st) != 0)
        rc = pq_error_set(err, "%s: %s", dataset, strerror(errno));
    else if (S_ISREG(st.st_mode)) {
        char *path = strdup(dataset);
        rc = path ? push(&l, path, err) : pq_error_set(err, "out of memory listing files");
    }
    else if (S_ISDIR(st.st_mode))
        rc = walk(dataset, 0, &l, err);
    else
        rc = pq_error_set(err, "%s: neither a directory nor a regular file", dataset);

    if (rc == 0 && l.count == 0)
        rc = pq_error_set(err, "%s: no *.parquet files found", dataset);
    if (rc < 0) {
        for (size_t i = 0; i < l.count; i++)
            free(l.paths[i]);
        free(l.paths);
        return -1;
    }
    /* Every path shares the dataset prefix, so sorting full paths sorts the
     * relative ones. */
    qsort(l.paths, l.count, sizeof *l.paths, by_path);
    *paths = l.paths;
    *count = l.count;
    return 0;
}
