#include "yfs_mixture.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sh_mix.h"

int yfs_is_mixture(const char *dataset)
{
    size_t n = strlen(dataset);
    return strncmp(dataset, "s3://", 5) != 0 && n > 5 && strcmp(dataset + n - 5, ".json") == 0;
}

void yfs_mixture_free(yfs_mixture *mx)
{
    for (uint32_t i = 0; mx->sources && i < mx->count; i++) {
        free(mx->sources[i].path);
        free(mx->sources[i].column);
    }
    free(mx->sources);
    free(mx->file);
    *mx = (yfs_mixture){ 0 };
}

/* path as the mixture file means it: relative to the file's directory. */
static char *resolve(const char *file, const char *path)
{
    const char *slash = strrchr(file, '/');
    if (path[0] == '/' || strncmp(path, "s3://", 5) == 0 || !slash)
        return strdup(path);
    size_t dir = (size_t)(slash - file) + 1, n = strlen(path);
    char *out = malloc(dir + n + 1);
    if (out) {
        memcpy(out, file, dir);
        memcpy(out + dir, path, n + 1);
    }
    return out;
}

static int only_keys(json_t *obj, const char *const *keys, pq_error *err)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        (void)value;
        int known = 0;
        for (const char *const *k = keys; *k; k++)
            known |= strcmp(key, *k) == 0;
        if (!known)
            return pq_error_set(err, "unknown key \"%s\"", key);
    }
    return 0;
}

static int load_source(const char *file, json_t *js, yfs_mix_source *s, pq_error *err)
{
    static const char *const keys[] = { "path", "weight", "column", NULL };
    if (!json_is_object(js))
        return pq_error_set(err, "not an object");
    if (only_keys(js, keys, err) < 0)
        return -1;
    json_t *path = json_object_get(js, "path"), *weight = json_object_get(js, "weight"),
           *column = json_object_get(js, "column");
    if (!json_is_string(path) || json_string_length(path) == 0)
        return pq_error_set(err, "\"path\" must be a non-empty string");
    if (!json_is_number(weight))
        return pq_error_set(err, "\"weight\" must be a number > 0");
    s->weight = json_number_value(weight);
    if (!(s->weight > 0) || !isfinite(s->weight))
        return pq_error_set(err, "\"weight\" must be a number > 0, found %g", s->weight);
    if (column && (!json_is_string(column) || json_string_length(column) == 0))
        return pq_error_set(err, "\"column\" must be a non-empty string");
    if (!(s->path = resolve(file, json_string_value(path))) ||
        (column && !(s->column = strdup(json_string_value(column)))))
        return pq_error_set(err, "out of memory");
    struct stat st;
    if (strncmp(s->path, "s3://", 5) != 0 && stat(s->path, &st) != 0)
        return pq_error_set(err, "path %s does not exist", s->path);
    return 0;
}

/* The weights as integers (yfs_mixture.h). */
static int set_shares(yfs_mixture *mx, pq_error *err)
{
    double largest = 0;
    int whole = 1;
    for (uint32_t i = 0; i < mx->count; i++) {
        double w = mx->sources[i].weight;
        largest = w > largest ? w : largest;
        whole &= w == floor(w) && w < 4294967296.0;
    }
    for (uint32_t i = 0; i < mx->count; i++) {
        double w = mx->sources[i].weight;
        mx->sources[i].share = (uint64_t)(whole ? w : llround(w / largest * 4294967296.0));
        if (mx->sources[i].share == 0)
            return pq_error_set(err, "source %u: \"weight\" %g is too small beside %g (less "
                                "than 2^-32 of it)", i, w, largest);
    }
    return 0;
}

/* The top level: an object of "sources" (1 to SH_MIX_MAX_SOURCES) and
 * "records". */
static int check_root(json_t *root, pq_error *err)
{
    static const char *const keys[] = { "sources", "records", NULL };
    if (!json_is_object(root))
        return pq_error_set(err, "must be a JSON object with \"sources\"");
    if (only_keys(root, keys, err) < 0)
        return -1;
    json_t *sources = json_object_get(root, "sources"), *records = json_object_get(root, "records");
    if (!json_is_array(sources) || json_array_size(sources) == 0)
        return pq_error_set(err, "\"sources\" must be a non-empty array");
    if (json_array_size(sources) > SH_MIX_MAX_SOURCES)
        return pq_error_set(err, "%zu sources, more than %d", json_array_size(sources),
                            SH_MIX_MAX_SOURCES);
    if (records && (!json_is_integer(records) || json_integer_value(records) <= 0))
        return pq_error_set(err, "\"records\" must be a whole number > 0");
    return 0;
}

static int load(const char *file, yfs_mixture *mx, pq_error *err)
{
    json_error_t jerr;
    json_t *root = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return jerr.line > 0 ? pq_error_set(err, "not valid JSON at line %d column %d: %s",
                                            jerr.line, jerr.column, jerr.text)
                             : pq_error_set(err, "%s", jerr.text);
    int rc = check_root(root, err);
    json_t *sources = json_object_get(root, "sources"), *records = json_object_get(root, "records");
    if (rc == 0 && !(mx->sources = calloc(json_array_size(sources), sizeof *mx->sources)))
        rc = pq_error_set(err, "out of memory");
    if (rc == 0) {
        mx->records = records ? (uint64_t)json_integer_value(records) : 0;
        /* count grows with every source tried, so a failure frees what was set */
        for (size_t i = 0; rc == 0 && i < json_array_size(sources); i++, mx->count++)
            if (load_source(file, json_array_get(sources, i), &mx->sources[i], err) < 0)
                rc = pq_error_prefix(err, "source %zu: ", i);
    }
    if (rc == 0)
        rc = set_shares(mx, err);
    json_decref(root);
    return rc;
}

int yfs_mixture_load(const char *file, yfs_mixture *out, pq_error *err)
{
    *out = (yfs_mixture){ 0 };
    if (!(out->file = strdup(file)))
        return pq_error_set(err, "out of memory");
    if (load(file, out, err) < 0)
        return pq_error_prefix(err, "%s: ", file);
    return 0;
}
