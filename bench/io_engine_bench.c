/* io_engine_bench — the I/O engine's choice, measured (issue 11): a pool of
 * threads doing pread, as fs/yfs_io.c runs chunk loads, against io_uring
 * keeping the same number of reads in flight. Both read the same chunks of
 * the given files, in the same shuffled order (a page-shuffled epoch's
 * chunk loads), into `depth` buffers, and touch every 4 KiB of each.
 *
 * Latency: --latency-us adds that much before every read, the way
 * YOUMUFS_READ_DELAY_US does: a sleep in a pool thread, and for io_uring a
 * timeout hard-linked before the read (no thread waits). --cold drops the
 * files from the page cache first (posix_fadvise DONTNEED: the files are
 * only read, never changed).
 *
 *   io_engine_bench --engine pool|uring --depth N [--chunk BYTES]
 *                   [--latency-us U] [--cold] [--limit BYTES] FILE...
 *
 * Prints one line: engine, depth, latency, cache, MB read, MB/s, CPU
 * seconds (user + system) per GB read. bench/io_engine_bench.py runs the
 * matrix and writes bench/results/io_engine.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct chunk {
    int fd;
    off_t offset;
    size_t len;
} chunk;

typedef struct run {
    chunk *chunks;
    size_t count;
    size_t chunk_bytes;
    int depth;
    long latency_us;
    _Atomic size_t next;      /* pool: the next chunk to read */
    _Atomic uint64_t checksum; /* keeps the reads' bytes observed */
    _Atomic int failed;
} run;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
           (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static uint64_t touch(const uint8_t *buf, size_t len)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < len; i += 4096)
        sum += buf[i];
    return sum;
}

/* Shuffle with a fixed seed (splitmix64): both engines read one order. */
static void shuffle(chunk *c, size_t n)
{
    uint64_t x = 0x5eed;
    for (size_t i = n; i > 1; i--) {
        x += 0x9e3779b97f4a7c15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        size_t j = (size_t)(z % i);
        chunk t = c[i - 1];
        c[i - 1] = c[j];
        c[j] = t;
    }
}

static void *pool_worker(void *arg)
{
    run *r = arg;
    uint8_t *buf = malloc(r->chunk_bytes);
    if (!buf) {
        r->failed = 1;
        return NULL;
    }
    for (size_t i; (i = atomic_fetch_add(&r->next, 1)) < r->count;) {
        const chunk *c = &r->chunks[i];
        if (r->latency_us > 0) {
            struct timespec d = { r->latency_us / 1000000, (r->latency_us % 1000000) * 1000 };
            nanosleep(&d, NULL);
        }
        ssize_t got = pread(c->fd, buf, c->len, c->offset);
        if (got != (ssize_t)c->len) {
            r->failed = 1;
            break;
        }
        atomic_fetch_add(&r->checksum, touch(buf, c->len));
    }
    free(buf);
    return NULL;
}

static int run_pool(run *r)
{
    pthread_t *t = calloc((size_t)r->depth, sizeof *t);
    if (!t)
        return -1;
    int started = 0;
    while (started < r->depth && pthread_create(&t[started], NULL, pool_worker, r) == 0)
        started++;
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    return started == r->depth && !r->failed ? 0 : -1;
}

/* Queue chunk i into slot s: [timeout, hard-linked to] read. */
static int uring_queue(struct io_uring *ring, run *r, size_t i, int s, uint8_t *buf,
                       struct __kernel_timespec *delay)
{
    const chunk *c = &r->chunks[i];
    if (r->latency_us > 0) {
        struct io_uring_sqe *t = io_uring_get_sqe(ring);
        if (!t)
            return -1;
        io_uring_prep_timeout(t, delay, 0, 0);
        io_uring_sqe_set_data64(t, UINT64_MAX); /* not a read: ignored on completion */
        t->flags |= IOSQE_IO_HARDLINK;
    }
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe)
        return -1;
    io_uring_prep_read(sqe, c->fd, buf, (unsigned)c->len, (uint64_t)c->offset);
    io_uring_sqe_set_data64(sqe, ((uint64_t)i << 16) | (uint64_t)s);
    return 0;
}

static int run_uring(run *r)
{
    struct io_uring ring;
    if (io_uring_queue_init((unsigned)(2 * r->depth), &ring, 0) < 0)
        return -1;
    uint8_t *bufs = malloc((size_t)r->depth * r->chunk_bytes);
    struct __kernel_timespec delay = { r->latency_us / 1000000,
                                       (r->latency_us % 1000000) * 1000 };
    int rc = bufs ? 0 : -1;
    size_t next = 0, done = 0;
    for (int s = 0; rc == 0 && s < r->depth && next < r->count; s++)
        rc = uring_queue(&ring, r, next++, s, bufs + (size_t)s * r->chunk_bytes, &delay);
    while (rc == 0 && done < r->count) {
        if (io_uring_submit(&ring) < 0) {
            rc = -1;
            break;
        }
        struct io_uring_cqe *cqe;
        if (io_uring_wait_cqe(&ring, &cqe) < 0) {
            rc = -1;
            break;
        }
        /* every completion ready, then one submit for all their successors */
        do {
            uint64_t tag = io_uring_cqe_get_data64(cqe);
            int res = cqe->res;
            io_uring_cqe_seen(&ring, cqe);
            if (tag == UINT64_MAX)
                continue; /* a delay ended (-ETIME) */
            size_t i = (size_t)(tag >> 16);
            int s = (int)(tag & 0xffff);
            if (res != (int)r->chunks[i].len) {
                rc = -1;
                break;
            }
            uint8_t *buf = bufs + (size_t)s * r->chunk_bytes;
            atomic_fetch_add(&r->checksum, touch(buf, r->chunks[i].len));
            done++;
            if (next < r->count)
                rc = uring_queue(&ring, r, next++, s, buf, &delay);
        } while (rc == 0 && io_uring_peek_cqe(&ring, &cqe) == 0);
    }
    free(bufs);
    io_uring_queue_exit(&ring);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: io_engine_bench --engine pool|uring --depth N [--chunk BYTES] "
                    "[--latency-us U] [--cold] [--limit BYTES] FILE...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *engine = NULL;
    long depth = 0, latency_us = 0;
    unsigned long long chunk_bytes = 1 << 20, limit = 0;
    int cold = 0, a = 1;
    for (; a < argc && strncmp(argv[a], "--", 2) == 0; a++) {
        if (!strcmp(argv[a], "--cold"))
            cold = 1;
        else if (a + 1 >= argc)
            return usage();
        else if (!strcmp(argv[a], "--engine"))
            engine = argv[++a];
        else if (!strcmp(argv[a], "--depth"))
            depth = strtol(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--chunk"))
            chunk_bytes = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--latency-us"))
            latency_us = strtol(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--limit"))
            limit = strtoull(argv[++a], NULL, 10);
        else
            return usage();
    }
    int uring = engine && !strcmp(engine, "uring");
    if (!engine || (!uring && strcmp(engine, "pool")) || depth < 1 || depth > 4096 ||
        chunk_bytes < 4096 || chunk_bytes > (1u << 30) || latency_us < 0 || a >= argc)
        return usage();

    run r = { .chunk_bytes = (size_t)chunk_bytes, .depth = (int)depth, .latency_us = latency_us };
    size_t cap = 0;
    for (; a < argc; a++) {
        int fd = open(argv[a], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
            fprintf(stderr, "io_engine_bench: %s: %s\n", argv[a], strerror(errno));
            return 1;
        }
        if (cold)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        for (off_t off = 0; off < st.st_size; off += (off_t)chunk_bytes) {
            if (r.count == cap) {
                cap = cap ? 2 * cap : 1024;
                chunk *grown = realloc(r.chunks, cap * sizeof *grown);
                if (!grown)
                    return 1;
                r.chunks = grown;
            }
            size_t len = (size_t)(st.st_size - off < (off_t)chunk_bytes ? st.st_size - off
                                                                         : (off_t)chunk_bytes);
            r.chunks[r.count++] = (chunk){ fd, off, len };
        }
    }
    shuffle(r.chunks, r.count);
    uint64_t bytes = 0;
    size_t n = 0;
    while (n < r.count && (!limit || bytes < limit))
        bytes += r.chunks[n++].len;
    r.count = n;

    double t0 = now_s(), c0 = cpu_s();
    int rc = uring ? run_uring(&r) : run_pool(&r);
    double secs = now_s() - t0, cpu = cpu_s() - c0;
    if (rc < 0) {
        fprintf(stderr, "io_engine_bench: %s failed\n", engine);
        return 1;
    }
    printf("%s %ld %ld %s %.0f %.1f %.3f %llu\n", engine, depth, latency_us, cold ? "cold" : "warm",
           (double)bytes / 1e6, (double)bytes / 1e6 / secs, cpu / ((double)bytes / 1e9),
           (unsigned long long)(r.checksum & 0xffff));
    free(r.chunks);
    return 0;
}
