#include "yfs_names.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPOCH_FLAG (1ull << 63)
#define RESUME_FLAG (1ull << 62)

struct yfs_name_table {
    pthread_mutex_t lock; /* guards names and count */
    yfs_name *names;      /* room for cap, grown by doubling */
    uint64_t count, cap;
};

/* Canonical decimal: digits, no leading zero unless the number is 0. */
static const char *number(const char *s, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return NULL;
    uint64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return NULL;
    }
    *out = v;
    return s;
}

static const char *literal(const char *s, const char *lit)
{
    size_t n = strlen(lit);
    return strncmp(s, lit, n) == 0 ? s + n : NULL;
}

int yfs_name_parse(const char *name, const char *ext, yfs_name *out)
{
    yfs_name n = { 0, 0, 0, 0, 0 };
    const char *s = literal(name, "epoch-");
    if (!s || !(s = number(s, YFS_MAX_EPOCH, &n.epoch)) || *s++ != '.')
        return -1;
    const char *resume = literal(s, "resume-");
    if (resume && (!(s = number(resume, YFS_MAX_PARTS, &n.given_parts)) || *s++ != '-' ||
                   !(s = number(s, YFS_MAX_GIVEN, &n.given)) || *s++ != '.' ||
                   n.given_parts == 0 || !literal(s, "part-")))
        return -1;
    const char *part = literal(s, "part-");
    if (part) {
        if (!(s = number(part, YFS_MAX_PARTS, &n.part)) || !(s = literal(s, "-of-")) ||
            !(s = number(s, YFS_MAX_PARTS, &n.parts)) || *s++ != '.' || n.parts == 0 ||
            n.part >= n.parts)
            return -1;
    }
    if (strcmp(s, ext) != 0)
        return -1;
    *out = n;
    return 0;
}

int yfs_name_format(const yfs_name *n, const char *ext, char *buf, size_t cap)
{
    if (n->parts == 0)
        return snprintf(buf, cap, "epoch-%llu.%s", (unsigned long long)n->epoch, ext);
    if (n->given_parts)
        return snprintf(buf, cap, "epoch-%llu.resume-%llu-%llu.part-%llu-of-%llu.%s",
                        (unsigned long long)n->epoch, (unsigned long long)n->given_parts,
                        (unsigned long long)n->given, (unsigned long long)n->part,
                        (unsigned long long)n->parts, ext);
    return snprintf(buf, cap, "epoch-%llu.part-%llu-of-%llu.%s", (unsigned long long)n->epoch,
                    (unsigned long long)n->part, (unsigned long long)n->parts, ext);
}

yfs_name_table *yfs_name_table_new(void)
{
    yfs_name_table *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->lock, NULL);
    return t;
}

void yfs_name_table_free(yfs_name_table *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->names);
    free(t);
}

static int same(const yfs_name *a, const yfs_name *b)
{
    return a->epoch == b->epoch && a->part == b->part && a->parts == b->parts &&
           a->given_parts == b->given_parts && a->given == b->given;
}

int yfs_name_ino(yfs_name_table *t, const yfs_name *n, uint64_t *ino)
{
    if (!n->given_parts) {
        *ino = EPOCH_FLAG | n->epoch << 40 | n->parts << 20 | n->part;
        return 0;
    }
    /* A linear search: a job looks up a name or two per rank. */
    pthread_mutex_lock(&t->lock);
    uint64_t k = 0;
    while (k < t->count && !same(&t->names[k], n))
        k++;
    int known = k < t->count;
    if (!known && k < YFS_MAX_RESUME_NAMES) {
        if (t->count == t->cap) {
            uint64_t more = t->cap ? t->cap * 2 : 16;
            yfs_name *grown = realloc(t->names, more * sizeof *grown);
            if (grown) {
                t->names = grown;
                t->cap = more;
            }
        }
        if (t->count < t->cap) {
            t->names[t->count++] = *n;
            known = 1;
        }
    }
    pthread_mutex_unlock(&t->lock);
    if (!known)
        return -1;
    *ino = EPOCH_FLAG | RESUME_FLAG | k;
    return 0;
}

int yfs_ino_name(yfs_name_table *t, uint64_t ino, yfs_name *n)
{
    if (!(ino & EPOCH_FLAG))
        return -1;
    if (ino & RESUME_FLAG) {
        uint64_t k = ino & ~(EPOCH_FLAG | RESUME_FLAG);
        pthread_mutex_lock(&t->lock);
        int known = k < t->count;
        if (known)
            *n = t->names[k];
        pthread_mutex_unlock(&t->lock);
        return known ? 0 : -1;
    }
    n->epoch = (ino >> 40) & YFS_MAX_EPOCH;
    n->parts = (ino >> 20) & YFS_MAX_PARTS;
    n->part = ino & YFS_MAX_PARTS;
    n->given_parts = n->given = 0;
    return 0;
}
