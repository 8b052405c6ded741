#include "yfs_watch.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* What one line needs of stats.json. */
typedef struct sample {
    double at; /* CLOCK_MONOTONIC seconds */
    uint64_t served, read, page_bytes, built, errors;
    uint64_t in_flight, waiting, mem_waiting, mem_used, mem_limit;
    uint64_t storage_in_flight; /* the I/O engine's reads under way */
    double latency_ms;          /* median of the recent storage reads */
} sample;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

/* Read the mount's stats.json into s; -1 with a message when it cannot. */
static int take_sample(const char *mountpoint, sample *s)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/.youmufs/stats.json", mountpoint) >= (int)sizeof path) {
        fprintf(stderr, "youmufs stats: %s: path too long\n", mountpoint);
        return -1;
    }
    json_error_t jerr;
    json_t *o = json_load_file(path, 0, &jerr);
    if (!o) {
        fprintf(stderr, "youmufs stats: %s: %s (is %s a youmufs mount?)\n", path, jerr.text,
                mountpoint);
        return -1;
    }
    json_t *mem = json_object_get(o, "memory"), *io = json_object_get(o, "io");
    *s = (sample){ .at = now_seconds(),
                   .served = field(o, "bytes_served"),
                   .read = field(o, "bytes_read"),
                   .page_bytes = field(o, "page_bytes"),
                   .built = field(o, "segments_built"),
                   .errors = field(o, "read_errors"),
                   .in_flight = field(o, "reads_in_flight"),
                   .waiting = field(o, "reads_waiting"),
                   .mem_waiting = field(mem, "demand_waiting"),
                   .mem_used = field(mem, "used"),
                   .mem_limit = field(mem, "limit"),
                   .storage_in_flight = field(io, "reads_in_flight"),
                   .latency_ms = json_number_value(json_object_get(io, "read_latency_p50_ms")) };
    json_decref(o);
    return 0;
}

static void sleep_until(double at)
{
    double left = at - now_seconds();
    if (left <= 0)
        return;
    struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* Counters only grow while a mount lives; a smaller one (another mount at
 * the same path) counts as a fresh start. */
static uint64_t delta(uint64_t now, uint64_t before)
{
    return now >= before ? now - before : now;
}

#define HEADER_EVERY 20
#define MIB (1024.0 * 1024.0)

static void print_line(const yfs_watch_opts *o, const sample *a, const sample *b, long line)
{
    double dt = b->at - a->at;
    uint64_t served = delta(b->served, a->served), read = delta(b->read, a->read);
    uint64_t needed = delta(b->page_bytes, a->page_bytes);
    double amplification = needed ? (double)read / (double)needed : 0.0;
    if (o->json) {
        printf("{\"seconds\":%.3f,\"bytes_served\":%llu,\"bytes_read\":%llu,"
               "\"served_mb_s\":%.1f,\"read_mb_s\":%.1f,\"read_amplification\":%.3f,"
               "\"memory_used\":%llu,\"memory_limit\":%llu,\"reads_in_flight\":%llu,"
               "\"reads_waiting\":%llu,\"memory_waiting\":%llu,\"segments_built\":%llu,"
               "\"read_errors\":%llu,\"storage_reads_in_flight\":%llu,"
               "\"read_latency_p50_ms\":%.2f}\n",
               dt, (unsigned long long)served, (unsigned long long)read, served / dt / 1e6,
               read / dt / 1e6, amplification, (unsigned long long)b->mem_used,
               (unsigned long long)b->mem_limit, (unsigned long long)b->in_flight,
               (unsigned long long)b->waiting, (unsigned long long)b->mem_waiting,
               (unsigned long long)delta(b->built, a->built),
               (unsigned long long)delta(b->errors, a->errors),
               (unsigned long long)b->storage_in_flight, b->latency_ms);
    } else {
        if (line % HEADER_EVERY == 0)
            printf("%11s %9s %6s %13s %6s %8s %8s %6s %6s %5s %7s\n", "served MB/s",
                   "read MB/s", "ampl", "mem MiB", "reads", "waiting", "mem-wait", "built",
                   "errors", "io", "io ms");
        char mem[32];
        snprintf(mem, sizeof mem, "%.0f/%.0f", (double)b->mem_used / MIB,
                 (double)b->mem_limit / MIB);
        printf("%11.1f %9.1f %6.2f %13s %6llu %8llu %8llu %6llu %6llu %5llu %7.1f\n",
               served / dt / 1e6, read / dt / 1e6, amplification, mem,
               (unsigned long long)b->in_flight, (unsigned long long)b->waiting,
               (unsigned long long)b->mem_waiting, (unsigned long long)delta(b->built, a->built),
               (unsigned long long)delta(b->errors, a->errors),
               (unsigned long long)b->storage_in_flight, b->latency_ms);
    }
    fflush(stdout);
}

int yfs_watch_run(const yfs_watch_opts *o)
{
    sample before, now;
    if (take_sample(o->mountpoint, &before) < 0)
        return 1;
    for (long line = 0; o->count == 0 || line < o->count; line++) {
        sleep_until(before.at + o->interval);
        if (take_sample(o->mountpoint, &now) < 0)
            return 1;
        print_line(o, &before, &now, line);
        before = now;
    }
    return 0;
}
