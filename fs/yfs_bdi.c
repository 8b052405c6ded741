#include "yfs_bdi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yfs_report.h"

/* mountinfo writes a space, a tab, a newline and a backslash in a path as
 * \040, \011, \012 and \134: undo it in place. */
static void unescape_octal(char *s)
{
    char *out = s;
    for (; *s; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

/* The device (major:minor) of the FUSE mount at `mountpoint`: the last one
 * listed there, the mount on top. 0 when none is. A mountinfo line reads
 * "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE ...". */
static int find_device(const char *mountpoint, unsigned *major, unsigned *minor)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return 0;
    int found = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        unsigned maj, mnr;
        char *save = NULL;
        char *id = strtok_r(line, " ", &save);
        char *parent = id ? strtok_r(NULL, " ", &save) : NULL;
        char *dev = parent ? strtok_r(NULL, " ", &save) : NULL;
        char *root = dev ? strtok_r(NULL, " ", &save) : NULL;
        char *point = root ? strtok_r(NULL, " ", &save) : NULL;
        if (!point || sscanf(dev, "%u:%u", &maj, &mnr) != 2)
            continue;
        char *type = NULL;
        for (char *field; (field = strtok_r(NULL, " ", &save)) != NULL;)
            if (strcmp(field, "-") == 0) {
                type = strtok_r(NULL, " ", &save);
                break;
            }
        unescape_octal(point);
        if (type && strncmp(type, "fuse", 4) == 0 && strcmp(point, mountpoint) == 0) {
            *major = maj;
            *minor = mnr;
            found = 1;
        }
    }
    free(line);
    fclose(f);
    return found;
}

void yfs_bdi_set(yfs_mount *m, const char *mountpoint, uint64_t bytes)
{
    if (bytes == 0)
        return;
    unsigned major, minor;
    if (!find_device(mountpoint, &major, &minor)) {
        yfs_log(m, "kernel_readahead: %s is not listed as a FUSE mount in /proc/self/mountinfo; "
                "the kernel's readahead window stays", mountpoint);
        return;
    }
    char path[96];
    snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "%llu\n", (unsigned long long)(bytes >> 10)) > 0;
    int why = errno;
    if (f && fclose(f) != 0) {
        ok = 0;
        why = errno;
    }
    if (!ok)
        yfs_log(m, "kernel_readahead: cannot write %s (%s%s); the kernel's readahead "
                "window stays", path, strerror(why),
                why == EACCES || why == EPERM ? ": it needs root" : "");
}
