#include "yfs_names.h"

#include <stdio.h>
#include <string.h>

#define EPOCH_FLAG (1ull << 63)

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
    yfs_name n = { 0, 0, 0 };
    const char *s = literal(name, "epoch-");
    if (!s || !(s = number(s, YFS_MAX_EPOCH, &n.epoch)) || *s++ != '.')
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
    return snprintf(buf, cap, "epoch-%llu.part-%llu-of-%llu.%s", (unsigned long long)n->epoch,
                    (unsigned long long)n->part, (unsigned long long)n->parts, ext);
}

uint64_t yfs_name_ino(const yfs_name *n)
{
    return EPOCH_FLAG | n->epoch << 40 | n->parts << 20 | n->part;
}

int yfs_ino_name(uint64_t ino, yfs_name *n)
{
    if (!(ino & EPOCH_FLAG))
        return -1;
    n->epoch = (ino >> 40) & YFS_MAX_EPOCH;
    n->parts = (ino >> 20) & YFS_MAX_PARTS;
    n->part = ino & YFS_MAX_PARTS;
    return 0;
}
