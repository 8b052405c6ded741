#define FUSE_USE_VERSION 312

#include "yfs_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "yfs_bdi.h"
#include "yfs_budget.h"
#include "yfs_list.h"
#include "yfs_names.h"
#include "yfs_report.h"
#include "yfs_view.h"

/* Epoch files never change while mounted: the kernel may keep attributes,
 * names and pages as long as it likes. */
#define FOREVER 86400.0
#define BLOCK_SIZE (1 << 20)

typedef struct handle handle;

/* The session's state: the mount, the open handles (those the kernel never
 * released, files still open at a lazy unmount, are freed at the end), and
 * the released ones not yet freed.
 *
 * A RELEASE can be processed while a READ of the same handle is still being
 * served on another thread (an interrupted or killed reader). So a released
 * handle is retired, not freed: it is freed once no read is using it and a
 * grace period has passed, which covers a read dispatched before the
 * release that has not yet counted itself in. */
typedef struct session {
    yfs_mount *m;
    yfs_name_table *names; /* inodes of resume names */
    pthread_mutex_t lock; /* guards both lists, the links and active_reads */
    yfs_list open_handles;
    yfs_list retired;     /* oldest first */
} session;

#define RETIRE_GRACE_SECONDS 2

static session *session_of(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

static yfs_mount *mount_of(fuse_req_t req)
{
    return session_of(req)->m;
}

static const char *ext_of(const yfs_mount *m)
{
    return ix_format_ext(m->opts.frame.format);
}

/* Attributes of an inode; -errno if it does not exist. */
static int stat_ino(session *s, fuse_ino_t ino, struct stat *st)
{
    yfs_mount *m = s->m;
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_blksize = BLOCK_SIZE;
    /* The mount time: the same path holds other bytes after a remount with
     * other options, and caches keyed by path and mtime (Hugging Face
     * datasets) must see a change. */
    st->st_mtim = m->mounted_at;
    if (ino == YFS_INO_ROOT || ino == YFS_INO_META_DIR) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2;
        return 0;
    }
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    if (ino == YFS_INO_INDEX_JSON || ino == YFS_INO_STATS_JSON) {
        char *json = ino == YFS_INO_INDEX_JSON ? yfs_index_json(m) : yfs_stats_json(m);
        if (!json)
            return -ENOMEM;
        st->st_size = (off_t)strlen(json);
        free(json);
        return 0;
    }
    yfs_name n;
    if (yfs_ino_name(s->names, ino, &n) < 0)
        return -ENOENT;
    if (n.parts == 0 && !m->mix) {
        st->st_size = (off_t)m->ix->framed_bytes;
    } else {
        yfs_view *v;
        pq_error err;
        if (yfs_view_open(m, &n, &v, &err) < 0) {
            yfs_log(m, "size of inode %llu unknown: %s", (unsigned long long)ino, err.msg);
            return -EIO;
        }
        st->st_size = (off_t)yfs_view_size(v);
        yfs_view_close(v);
    }
    st->st_blocks = (st->st_size + 511) / 512;
    return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    /* Large readahead windows are background requests; the defaults (12/9)
     * stall them. */
    conn->max_background = 64;
    conn->congestion_threshold = 48;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    int rc = stat_ino(session_of(req), ino, &e.attr);
    if (rc < 0) {
        fuse_reply_err(req, -rc);
        return;
    }
    e.ino = ino;
    e.attr_timeout = FOREVER;
    e.entry_timeout = FOREVER;
    fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    yfs_mount *m = mount_of(req);
    yfs_name n;
    uint64_t ino;
    if (parent == YFS_INO_ROOT && strcmp(name, ".youmufs") == 0)
        reply_entry(req, YFS_INO_META_DIR);
    else if (parent == YFS_INO_META_DIR && strcmp(name, "index.json") == 0)
        reply_entry(req, YFS_INO_INDEX_JSON);
    else if (parent == YFS_INO_META_DIR && strcmp(name, "stats.json") == 0)
        reply_entry(req, YFS_INO_STATS_JSON);
    else if (parent != YFS_INO_ROOT || yfs_name_parse(name, ext_of(m), &n) < 0)
        fuse_reply_err(req, ENOENT);
    else if (yfs_name_ino(session_of(req)->names, &n, &ino) == 0)
        reply_entry(req, ino);
    else {
        yfs_log(m, "%s: no inode for it: %d resume names are looked up already (the most "
                "one mount gives inodes to), or out of memory", name, YFS_MAX_RESUME_NAMES);
        fuse_reply_err(req, ENFILE);
    }
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    int rc = stat_ino(session_of(req), ino, &st);
    if (rc < 0)
        fuse_reply_err(req, -rc);
    else
        fuse_reply_attr(req, &st, FOREVER);
}

/* Adds one entry to a readdir reply if it lies at or past `off`. Returns 0 if
 * the buffer is full. */
static int add_entry(fuse_req_t req, char *buf, size_t cap, size_t *used, off_t index, off_t off,
                     const char *name, fuse_ino_t ino, mode_t mode)
{
    if (index < off)
        return 1;
    struct stat st = { .st_ino = ino, .st_mode = mode };
    size_t need = fuse_add_direntry(req, buf + *used, cap - *used, name, &st, index + 1);
    if (need > cap - *used)
        return 0;
    *used += need;
    return 1;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    yfs_mount *m = mount_of(req);
    if (ino != YFS_INO_ROOT && ino != YFS_INO_META_DIR) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char *buf = malloc(size);
    if (!buf) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    size_t used = 0;
    /* Directory offsets are entry indices: ".", "..", then the files. */
    int room = add_entry(req, buf, size, &used, 0, off, ".", ino, S_IFDIR) &&
               add_entry(req, buf, size, &used, 1, off, "..", YFS_INO_ROOT, S_IFDIR);
    if (ino == YFS_INO_META_DIR) {
        room = room && add_entry(req, buf, size, &used, 2, off, "index.json",
                                 YFS_INO_INDEX_JSON, S_IFREG) &&
               add_entry(req, buf, size, &used, 3, off, "stats.json", YFS_INO_STATS_JSON,
                         S_IFREG);
    } else {
        room = room && add_entry(req, buf, size, &used, 2, off, ".youmufs", YFS_INO_META_DIR,
                                 S_IFDIR);
        for (uint64_t k = 0; room && k < m->opts.epochs; k++) {
            char name[64];
            yfs_name n = { k, 0, 0, 0, 0 };
            uint64_t ino_k;
            yfs_name_format(&n, ext_of(m), name, sizeof name);
            yfs_name_ino(NULL, &n, &ino_k); /* an epoch's inode needs no table */
            room = add_entry(req, buf, size, &used, (off_t)(3 + k), off, name, ino_k, S_IFREG);
        }
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

/* What an open file handle points to: an epoch view, or a rendered JSON. */
struct handle {
    yfs_view *view;
    char *json;
    size_t json_len;
    yfs_link link;       /* in session.open_handles, or once released in session.retired */
    int active_reads;    /* reads being served from it */
    time_t retired_at;
};

static void handle_free(handle *h)
{
    yfs_view_close(h->view);
    free(h->json);
    free(h);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    yfs_mount *m = mount_of(req);
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
        fuse_reply_err(req, EROFS);
        return;
    }
    handle *h = calloc(1, sizeof *h);
    if (!h) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    yfs_name n;
    pq_error err;
    if (ino == YFS_INO_INDEX_JSON || ino == YFS_INO_STATS_JSON) {
        h->json = ino == YFS_INO_INDEX_JSON ? yfs_index_json(m) : yfs_stats_json(m);
        if (!h->json) {
            free(h);
            fuse_reply_err(req, ENOMEM);
            return;
        }
        h->json_len = strlen(h->json);
        fi->direct_io = 1; /* rendered per open: sizes differ between opens */
    } else if (yfs_ino_name(session_of(req)->names, ino, &n) == 0) {
        if (yfs_view_open(m, &n, &h->view, &err) < 0) {
            yfs_log(m, "open of inode %llu failed: %s", (unsigned long long)ino, err.msg);
            free(h);
            fuse_reply_err(req, EIO);
            return;
        }
        fi->keep_cache = 1;
    } else {
        free(h);
        fuse_reply_err(req, EISDIR);
        return;
    }
    session *s = session_of(req);
    pthread_mutex_lock(&s->lock);
    yfs_list_push(&s->open_handles, &h->link);
    pthread_mutex_unlock(&s->lock);
    fi->fh = (uint64_t)(uintptr_t)h;
    fuse_reply_open(req, fi);
}

static void serve_read(yfs_mount *m, handle *h, fuse_req_t req, fuse_ino_t ino, size_t size,
                       off_t off)
{
    if (h->json) {
        size_t from = (size_t)off < h->json_len ? (size_t)off : h->json_len;
        size_t len = size < h->json_len - from ? size : h->json_len - from;
        fuse_reply_buf(req, h->json + from, len);
        return;
    }
    /* The reply is copied out of the segments into a buffer of the request's
     * size (the kernel asks at most max_read bytes), charged to the
     * accountant while the request is served. */
    yfs_budget_reserve(m->budget, size, YFS_MEM_READS, YFS_FORCE, NULL);
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = 0;
    pq_error err;
    int rc = buf ? yfs_view_read(h->view, (uint64_t)off, size, buf, &got, &err)
                 : pq_error_set(&err, "out of memory for a %zu-byte read", size);
    if (rc < 0) {
        yfs_count(&m->stats.read_errors, 1);
        yfs_log(m, "read of inode %llu at offset %lld failed: %s", (unsigned long long)ino,
                (long long)off, err.msg);
        fuse_reply_err(req, EIO);
    } else {
        fuse_reply_buf(req, (const char *)buf, got);
        yfs_count(&m->stats.bytes_served, got);
    }
    free(buf);
    yfs_budget_release(m->budget, size, YFS_MEM_READS, NULL);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    session *s = session_of(req);
    handle *h = (handle *)(uintptr_t)fi->fh;
    yfs_count(&s->m->stats.read_requests, 1);
    yfs_count(&s->m->stats.reads_in_flight, 1);
    pthread_mutex_lock(&s->lock);
    h->active_reads++;
    pthread_mutex_unlock(&s->lock);
    serve_read(s->m, h, req, ino, size, off);
    pthread_mutex_lock(&s->lock);
    h->active_reads--;
    pthread_mutex_unlock(&s->lock);
    yfs_uncount(&s->m->stats.reads_in_flight, 1);
}

static void free_handles(yfs_list *list)
{
    while (list->head) {
        handle *h = YFS_CONTAINER(list->head, handle, link);
        yfs_list_remove(list, &h->link);
        handle_free(h);
    }
}

/* Free retired handles that no read uses and that were retired long enough
 * ago (lock held). */
static void reclaim(session *s, time_t now)
{
    for (yfs_link *at = s->retired.head; at;) {
        handle *h = YFS_CONTAINER(at, handle, link);
        at = at->next;
        if (h->active_reads == 0 && now - h->retired_at >= RETIRE_GRACE_SECONDS) {
            yfs_list_remove(&s->retired, &h->link);
            handle_free(h);
        }
    }
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    handle *h = (handle *)(uintptr_t)fi->fh;
    session *s = session_of(req);
    time_t now = time(NULL);
    pthread_mutex_lock(&s->lock);
    yfs_list_remove(&s->open_handles, &h->link);
    h->retired_at = now;
    yfs_list_push(&s->retired, &h->link);
    reclaim(s, now);
    pthread_mutex_unlock(&s->lock);
    fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
    (void)ino;
    struct statvfs sv = { .f_bsize = BLOCK_SIZE, .f_frsize = BLOCK_SIZE, .f_namemax = 255 };
    fuse_reply_statfs(req, &sv);
}

/* No handler for anything that would change something (mknod, mkdir,
 * unlink, rmdir, symlink, rename, link, create, setattr, write): the mount
 * is read-only in the kernel (run_mount in main.c passes "ro" after the
 * user's options), which refuses them with EROFS before they reach us. */
static const struct fuse_lowlevel_ops ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .readdir = op_readdir,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .statfs = op_statfs,
};

/* Receive and answer the kernel's first request, INIT, here rather than in
 * the loop: once the reply is written the kernel has applied it, so what is
 * set next (the readahead window, yfs_bdi.h) is not undone by it. 1 when
 * answered; 0 when the session ended first (unmounted, or a signal asked
 * to exit); a negative errno on failure. */
static int answer_init(struct fuse_session *se)
{
    struct fuse_buf buf = { 0 };
    int rc;
    do
        rc = fuse_session_receive_buf(se, &buf);
    while (rc == -EINTR && !fuse_session_exited(se));
    if (rc > 0)
        fuse_session_process_buf(se, &buf);
    free(buf.mem);
    return rc > 0 ? 1 : rc == -EINTR ? 0 : rc;
}

int yfs_fuse_run(yfs_mount *m, struct fuse_args *args, const char *mountpoint, int foreground,
                 int single_thread, unsigned max_threads, unsigned max_idle_threads)
{
    session s = { .m = m, .names = yfs_name_table_new() };
    pthread_mutex_init(&s.lock, NULL);
    struct fuse_session *se = s.names ? fuse_session_new(args, &ops, sizeof ops, &s) : NULL;
    int status = 1;
    if (!se)
        goto handles;
    if (fuse_set_signal_handlers(se) != 0)
        goto destroy;
    if (fuse_session_mount(se, mountpoint) != 0)
        goto remove_handlers;
    if (fuse_daemonize(foreground) != 0)
        goto unmount;
    m->log_to_syslog = !foreground;
    /* Threads only now: daemonizing forks, and a fork keeps one thread. */
    pq_error err;
    if (yfs_mount_start(m, &err) < 0) {
        yfs_log(m, "%s", err.msg);
        goto unmount;
    }
    int init = answer_init(se);
    if (init <= 0) {
        status = init < 0;
        goto unmount;
    }
    yfs_bdi_set(m, mountpoint, m->opts.kernel_readahead);
    /* The loops return 0 on unmount, the signal number after SIGTERM/SIGINT
     * (a clean shutdown too), and a negative errno on failure. */
    if (single_thread) {
        status = fuse_session_loop(se) < 0;
    } else {
        struct fuse_loop_config *cfg = fuse_loop_cfg_create();
        if (cfg) {
            fuse_loop_cfg_set_max_threads(cfg, max_threads);
            fuse_loop_cfg_set_idle_threads(cfg, max_idle_threads);
            status = fuse_session_loop_mt(se, cfg) < 0;
            fuse_loop_cfg_destroy(cfg);
        }
    }
unmount:
    fuse_session_unmount(se);
remove_handlers:
    fuse_remove_signal_handlers(se);
destroy:
    fuse_session_destroy(se);
handles:
    /* The session has ended: no read is running. */
    free_handles(&s.open_handles);
    free_handles(&s.retired);
    yfs_name_table_free(s.names);
    pthread_mutex_destroy(&s.lock);
    return status;
}
