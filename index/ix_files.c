#include <dirent.h>
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ix_store_posix.h"

/* Directories nested deeper than this are refused. A symlink loop never gets
 * this deep (every directory is listed once, below), only a real tree or a
 * chain of distinct symlinked directories does. */
#define MAX_DEPTH 64

typedef struct file_list {
    char **paths;
    size_t count, cap;
} file_list;

/* A directory already listed, by device and inode, and the path it was
 * listed under (for the warning when it is met again). */
typedef struct seen_dir {
    dev_t dev;
    ino_t ino;
    char *path;
} seen_dir;

typedef struct walk_state {
    file_list *files;
    void *seen; /* tsearch tree of seen_dir */
} walk_state;

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

static int by_dev_ino(const void *a, const void *b)
{
    const seen_dir *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return (x->ino > y->ino) - (x->ino < y->ino);
}

static void free_seen(void *node)
{
    seen_dir *s = node;
    free(s->path);
    free(s);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory entry: its name, then its d_type in the byte after the NUL. */
typedef char *entry;

static void free_entries(entry *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* The visible (not hidden) entries of the open directory d, sorted by name,
 * so that the walk's order, and with it the path under which a directory
 * reachable by two routes is listed, depends only on the tree. */
static int sorted_entries(DIR *d, const char *dir, entry **out, size_t *count, pq_error *err)
{
    entry *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        /* Hidden entries (., .., .git, checksum files) are never data. */
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(e->d_name);
        entry *grown = n < cap ? v : realloc(v, (cap = cap ? cap * 2 : 32) * sizeof *v);
        if (!grown || !(grown[n] = malloc(len + 2))) {
            free_entries(grown ? grown : v, n);
            return pq_error_set(err, "out of memory listing %s", dir);
        }
        v = grown;
        memcpy(v[n], e->d_name, len + 1);
        v[n][len + 1] = (char)e->d_type;
        n++;
    }
    if (errno != 0) {
        int saved = errno;
        free_entries(v, n);
        return pq_error_set(err, "%s: cannot list directory: %s", dir, strerror(saved));
    }
    if (n)
        qsort(v, n, sizeof *v, by_name);
    *out = v;
    *count = n;
    return 0;
}

/* Remembers dir (open as d) as listed. Returns 1 if it is new, 0 if it was
 * listed before (a warning says under which path), -1 on error. */
static int first_visit(walk_state *ws, DIR *d, const char *dir, pq_error *err)
{
    struct stat self;
    if (fstat(dirfd(d), &self) != 0)
        return pq_error_set(err, "%s: cannot stat directory: %s", dir, strerror(errno));
    seen_dir *s = malloc(sizeof *s);
    if (!s || !(s->path = strdup(dir))) {
        free(s);
        return pq_error_set(err, "out of memory listing files");
    }
    s->dev = self.st_dev;
    s->ino = self.st_ino;
    seen_dir **found = tsearch(s, &ws->seen, by_dev_ino);
    if (found && *found == s)
        return 1;
    free_seen(s);
    if (!found)
        return pq_error_set(err, "out of memory listing files");
    fprintf(stderr, "youmufs: warning: %s is %s again (a symlink loop, or a second link to "
                    "one directory); its files are listed once\n", dir, (*found)->path);
    return 0;
}

/* Lists dir (depth levels below the dataset root). Every directory is listed
 * once: one met again (by device and inode) through a symlink, be it a loop
 * back to an ancestor or a second route to the same directory, is skipped
 * with a warning on stderr, so no file is listed twice and no tree of
 * symlinks can make the walk loop or grow exponentially. A symlink to a
 * directory not yet listed (a sibling, or outside the dataset) is followed
 * like a directory. */
static int walk(const char *dir, int depth, walk_state *ws, pq_error *err)
{
    if (depth > MAX_DEPTH)
        return pq_error_set(err, "%s: directories nested more than %d deep", dir, MAX_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return pq_error_set(err, "%s: cannot open directory: %s", dir, strerror(errno));
    entry *names = NULL;
    size_t n = 0;
    int rc = first_visit(ws, d, dir, err);
    if (rc == 1)
        rc = sorted_entries(d, dir, &names, &n, err);
    closedir(d);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = names[i];
        unsigned char type = (unsigned char)name[strlen(name) + 1];
        char *path;
        if (asprintf(&path, "%s/%s", dir, name) < 0) {
            rc = pq_error_set(err, "out of memory listing files");
            break;
        }
        /* d_type saves a stat per entry; symlinks and file systems that do
         * not fill it in need one. */
        int is_dir = type == DT_DIR, is_file = type == DT_REG;
        struct stat st;
        if (type == DT_UNKNOWN || type == DT_LNK) {
            if (stat(path, &st) != 0) {
                rc = pq_error_set(err, "%s: cannot stat: %s", path, strerror(errno));
                free(path);
                break;
            }
            is_dir = S_ISDIR(st.st_mode);
            is_file = S_ISREG(st.st_mode);
        }
        if (is_file && has_parquet_suffix(name)) {
            rc = push(ws->files, path, err);
            continue;
        }
        if (is_dir)
            rc = walk(path, depth + 1, ws, err);
        free(path);
    }
    free_entries(names, n);
    return rc < 0 ? -1 : 0;
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
    else if (S_ISDIR(st.st_mode)) {
        walk_state ws = { .files = &l, .seen = NULL };
        rc = walk(dataset, 0, &ws, err);
        tdestroy(ws.seen, free_seen);
    }
    else
        rc = pq_error_set(err, "%s: neither a directory nor a regular file", dataset);

    if (rc < 0) {
        for (size_t i = 0; i < l.count; i++)
            free(l.paths[i]);
        free(l.paths);
        return -1;
    }
    /* Every path shares the dataset prefix, so sorting full paths sorts the
     * relative ones. */
    if (l.count)
        qsort(l.paths, l.count, sizeof *l.paths, by_name);
    *paths = l.paths;
    *count = l.count;
    return 0;
}
