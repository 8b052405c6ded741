#include "yfs_cpu.h"

#include <sched.h>
#include <time.h>

static unsigned affinity_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? (unsigned)n : 1;
}

void yfs_cpu_init(yfs_cpu *c, unsigned cores)
{
    pthread_mutex_init(&c->lock, NULL);
    c->wall0 = c->cpu0 = 0;
    c->cores = cores ? cores : affinity_cores();
    atomic_init(&c->busy, 0);
}

void yfs_cpu_destroy(yfs_cpu *c)
{
    pthread_mutex_destroy(&c->lock);
}

void yfs_cpu_note(yfs_cpu *c, uint64_t wall_ns, uint64_t cpu_ns)
{
    pthread_mutex_lock(&c->lock);
    if (c->wall0 == 0 || wall_ns < c->wall0 || cpu_ns < c->cpu0) {
        c->wall0 = wall_ns;
        c->cpu0 = cpu_ns;
    } else if (wall_ns - c->wall0 >= YFS_CPU_WINDOW_NS) {
        /* cpu / (wall x cores) >= percent / 100, without overflow for years */
        uint64_t wall = wall_ns - c->wall0, cpu = cpu_ns - c->cpu0;
        int busy = (double)cpu * 100.0 >= (double)wall * c->cores * YFS_CPU_BUSY_PERCENT;
        atomic_store(&c->busy, busy);
        c->wall0 = wall_ns;
        c->cpu0 = cpu_ns;
    }
    pthread_mutex_unlock(&c->lock);
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void yfs_cpu_sample(yfs_cpu *c)
{
    yfs_cpu_note(c, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_PROCESS_CPUTIME_ID));
}

int yfs_cpu_busy(const yfs_cpu *c)
{
    return atomic_load(&c->busy);
}
