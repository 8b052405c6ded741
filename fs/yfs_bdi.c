#include "yfs_bdi.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "yfs_report.h"
#include "yfs_thread.h"

struct yfs_bdi {
    yfs_mount *m;
    char *mountpoint;
    uint64_t bytes;
    pthread_t thread;
};

static void *set_window(void *arg)
{
    yfs_bdi *b = arg;
    struct stat st;
    /* answered by the session's loop once INIT is done */
    if (stat(b->mountpoint, &st) != 0) {
        yfs_log(b->m, "kernel_readahead: %s did not answer (%s); the kernel's readahead "
                "window stays", b->mountpoint, strerror(errno));
        return NULL;
    }
    char path[96];
    snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
             minor(st.st_dev));
    FILE *f = fopen(path, "w");
    int ok = f && fprintf(f, "%llu\n", (unsigned long long)(b->bytes >> 10)) > 0;
    int why = errno;
    if (f && fclose(f) != 0) {
        ok = 0;
        why = errno;
    }
    if (!ok)
        yfs_log(b->m, "kernel_readahead: cannot write %s (%s%s); the kernel's readahead "
                "window stays", path, strerror(why),
                why == EACCES || why == EPERM ? ": it needs root" : "");
    return NULL;
}

yfs_bdi *yfs_bdi_start(yfs_mount *m, const char *mountpoint, uint64_t bytes)
{
    if (bytes == 0)
        return NULL;
    yfs_bdi *b = calloc(1, sizeof *b);
    if (b && (b->mountpoint = strdup(mountpoint)) != NULL) {
        b->m = m;
        b->bytes = bytes;
        if (yfs_thread_create(&b->thread, set_window, b) == 0)
            return b;
    }
    yfs_log(m, "kernel_readahead: out of memory or threads; the kernel's readahead window "
            "stays");
    if (b)
        free(b->mountpoint);
    free(b);
    return NULL;
}

void yfs_bdi_join(yfs_bdi *b)
{
    if (!b)
        return;
    pthread_join(b->thread, NULL);
    free(b->mountpoint);
    free(b);
}
