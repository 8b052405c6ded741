#include "yfs_loads.h"

#include <stdlib.h>
#include <string.h>

#include "ix_read.h"
#include "yfs_mount.h"
#include "yfs_pages.h"

enum { NOT_STARTED = 0, LOADING = 1, DONE = 2 };

int yfs_loads_init(yfs_loads *l, uint64_t num_loads)
{
    l->state = calloc(num_loads ? num_loads : 1, 1);
    if (!l->state)
        return -1;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->finished, NULL);
    return 0;
}

void yfs_loads_destroy(yfs_loads *l)
{
    if (!l->state)
        return;
    pthread_cond_destroy(&l->finished);
    pthread_mutex_destroy(&l->lock);
    free(l->state);
    l->state = NULL;
}

int yfs_page_read(yfs_mount *m, uint64_t page, yfs_hold *hold, uint8_t **raw, uint32_t *len,
                  pq_error *err)
{
    const ix_index *ix = m->ix;
    const ix_page *p = &ix->pages[page];
    uint32_t file = ix->chunks[ix_locate(ix, page)].file;
    uint64_t bytes_read = 0;
    yfs_budget_reserve(m->budget, p->length, YFS_MEM_RAW, YFS_DEMAND, hold);
    *len = p->length;
    *raw = malloc(p->length ? p->length : 1);
    if (!*raw) {
        yfs_budget_release(m->budget, p->length, YFS_MEM_RAW, hold);
        return pq_error_set(err, "%s: out of memory for a %u-byte page", ix->files[file].name,
                            p->length);
    }
    int rc = ix_read_range(ix, file, p->offset, *raw, p->length, page, 1, &bytes_read, err);
    yfs_count(&m->stats.bytes_read, bytes_read);
    if (rc < 0) {
        free(*raw);
        *raw = NULL;
        yfs_budget_release(m->budget, p->length, YFS_MEM_RAW, hold);
        return pq_error_prefix(err, "%s: data page at offset %llu: ", ix->files[file].name,
                               (unsigned long long)p->offset);
    }
    yfs_count(&m->stats.pages_read_alone, 1);
    return 0;
}

/* The byte range of the load's pages in their file, if the index gives them
 * in ascending order (offsets come from the file: a range much longer than
 * its pages is not read whole). Ranges may overlap: an entry whose last row
 * goes on in the next pages covers them too (ix_chunk_scan.c). */
static int chunk_range(const ix_index *ix, const sh_load *load, uint64_t *start, uint64_t *end)
{
    const ix_page *first = &ix->pages[load->first_page];
    uint64_t pages_bytes = 0, prev_offset = first->offset;
    *start = first->offset;
    *end = first->offset;
    for (uint32_t q = load->first_page; q < load->first_page + load->pages; q++) {
        const ix_page *p = &ix->pages[q];
        if (p->offset < prev_offset)
            return -1;
        prev_offset = p->offset;
        if (p->offset + p->length > *end)
            *end = p->offset + p->length;
        pages_bytes += p->length;
    }
    return *end - *start <= 2 * pages_bytes ? 0 : -1;
}

/* Run load l: read its chunk, hand the page at `want` (an order position)
 * to the caller in *raw (charged to hold) and store the other pages it
 * brings. *raw stays NULL when the chunk could not be read whole or the
 * accountant refused the memory. */
static void execute(yfs_mount *m, const sh_plan *plan, uint64_t l, uint64_t want,
                    yfs_hold *hold, uint8_t **raw)
{
    const ix_index *ix = m->ix;
    const sh_schedule *sched = &plan->schedule;
    const sh_load *load = &sched->loads[l];
    uint64_t start, end, bytes_read = 0;
    *raw = NULL;
    if (chunk_range(ix, load, &start, &end) < 0 ||
        yfs_budget_reserve(m->budget, end - start, YFS_MEM_CHUNKS, YFS_PREFETCH, hold) < 0)
        return;
    uint8_t *buf = malloc(end - start ? end - start : 1);
    pq_error ignored; /* the pages are then read alone, which reports the error */
    uint32_t file = ix->chunks[ix_locate(ix, load->first_page)].file;
    int rc = buf ? ix_read_range(ix, file, start, buf, end - start, load->first_page, load->pages,
                                 &bytes_read, &ignored)
                 : -1;
    yfs_count(&m->stats.bytes_read, bytes_read);
    if (rc == 0) {
        yfs_count(&m->stats.chunk_loads, 1);
        for (uint32_t q = load->first_page; q < load->first_page + load->pages; q++) {
            uint32_t pos = sched->position[q];
            if (sched->source[pos] != l)
                continue; /* read, but served by another load */
            const ix_page *p = &ix->pages[q];
            if (yfs_budget_reserve(m->budget, p->length, YFS_MEM_RAW, YFS_PREFETCH, hold) < 0)
                continue;
            uint8_t *copy = malloc(p->length ? p->length : 1);
            if (!copy) {
                yfs_budget_release(m->budget, p->length, YFS_MEM_RAW, hold);
                continue;
            }
            memcpy(copy, buf + (p->offset - start), p->length);
            if (pos == want)
                *raw = copy;
            else
                yfs_pages_put(m->loaded, plan->epoch, q, copy, p->length, hold);
        }
    }
    free(buf);
    yfs_budget_release(m->budget, end - start, YFS_MEM_CHUNKS, hold);
}

int yfs_page_fetch(yfs_mount *m, const sh_plan *sp, yfs_loads *l, uint64_t pos,
                   yfs_hold *hold, uint8_t **raw, uint32_t *len, pq_error *err)
{
    uint32_t page = sp->order[pos];
    if (sp->schedule.num_loads == 0)
        return yfs_page_read(m, page, hold, raw, len, err);

    uint32_t load = sp->schedule.source[pos];
    pthread_mutex_lock(&l->lock);
    while (l->state[load] == LOADING)
        pthread_cond_wait(&l->finished, &l->lock);
    if (l->state[load] == NOT_STARTED) {
        l->state[load] = LOADING;
        pthread_mutex_unlock(&l->lock);
        execute(m, sp, load, pos, hold, raw);
        *len = m->ix->pages[page].length;
        pthread_mutex_lock(&l->lock);
        l->state[load] = DONE;
        pthread_cond_broadcast(&l->finished);
        pthread_mutex_unlock(&l->lock);
    } else {
        pthread_mutex_unlock(&l->lock);
        *raw = yfs_pages_take(m->loaded, sp->epoch, page, hold, len);
    }
    if (!*raw)
        return yfs_page_read(m, page, hold, raw, len, err);
    yfs_count(&m->stats.pages_from_chunks, 1);
    return 0;
}
