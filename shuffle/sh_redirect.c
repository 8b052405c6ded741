#include "sh_redirect.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT32_MAX

typedef struct walk {
    const sh_stored_page *pages;
    uint64_t n;
    /* physical chunks */
    uint64_t num_chunks;
    uint32_t *chunk_first, *chunk_pages;
    uint32_t *chunk_of, *slot_of; /* per page */
    /* virtual chunks: num_virtual rows of `slots` cells */
    uint64_t num_virtual, slots;
    uint32_t *cell_page;  /* EMPTY or a loaded, unserved page */
    uint32_t *held;       /* per virtual chunk: pages held */
    uint32_t *held_load;  /* per virtual chunk: the load they came from */
    /* Per virtual chunk, its chunks not read yet, as a compacted array:
     * unread[unread_start[v] .. unread_start[v] + unread_len[v]). */
    uint64_t *unread_start;
    uint32_t *unread_len, *unread, *unread_at;
} walk;

static void walk_free(walk *w)
{
    free(w->chunk_first);
    free(w->chunk_pages);
    free(w->chunk_of);
    free(w->slot_of);
    free(w->cell_page);
    free(w->held);
    free(w->held_load);
    free(w->unread_start);
    free(w->unread_len);
    free(w->unread);
    free(w->unread_at);
}

/* Cut the pages into physical chunks. */
static int cut_chunks(walk *w, uint64_t chunk_bytes)
{
    uint64_t n = w->n ? w->n : 1;
    w->chunk_first = malloc(n * sizeof *w->chunk_first);
    w->chunk_pages = malloc(n * sizeof *w->chunk_pages);
    w->chunk_of = malloc(n * sizeof *w->chunk_of);
    w->slot_of = malloc(n * sizeof *w->slot_of);
    if (!w->chunk_first || !w->chunk_pages || !w->chunk_of || !w->slot_of)
        return -1;
    uint64_t bytes = 0;
    w->slots = 1;
    for (uint64_t p = 0; p < w->n; p++) {
        uint64_t c = w->num_chunks - 1;
        int same_chunk = w->num_chunks > 0 && w->pages[p].run == w->pages[p - 1].run &&
                         bytes + w->pages[p].stored <= chunk_bytes &&
                         w->chunk_pages[c] < SH_CHUNK_MAX_PAGES;
        if (!same_chunk) {
            c = w->num_chunks++;
            w->chunk_first[c] = (uint32_t)p;
            w->chunk_pages[c] = 0;
            bytes = 0;
        }
        bytes += w->pages[p].stored;
        w->chunk_of[p] = (uint32_t)c;
        w->slot_of[p] = w->chunk_pages[c]++;
        if (w->chunk_pages[c] > w->slots)
            w->slots = w->chunk_pages[c];
    }
    return 0;
}

static int make_virtual(walk *w, uint32_t virtual_chunks)
{
    assert(virtual_chunks >= 1);
    uint64_t m = w->num_chunks < virtual_chunks ? w->num_chunks : virtual_chunks;
    w->num_virtual = m ? m : 1;
    uint64_t cells = w->num_virtual * w->slots, chunks = w->num_chunks ? w->num_chunks : 1;
    w->cell_page = malloc(cells * sizeof *w->cell_page);
    w->held = calloc(w->num_virtual, sizeof *w->held);
    w->held_load = calloc(w->num_virtual, sizeof *w->held_load);
    w->unread_start = calloc(w->num_virtual + 1, sizeof *w->unread_start);
    w->unread_len = calloc(w->num_virtual, sizeof *w->unread_len);
    w->unread = malloc(chunks * sizeof *w->unread);
    w->unread_at = malloc(chunks * sizeof *w->unread_at);
    if (!w->cell_page || !w->held || !w->held_load || !w->unread_start || !w->unread_len ||
        !w->unread || !w->unread_at)
        return -1;
    for (uint64_t c = 0; c < cells; c++)
        w->cell_page[c] = EMPTY;
    for (uint64_t c = 0; c < w->num_chunks; c++)
        w->unread_start[c % w->num_virtual + 1]++;
    for (uint64_t v = 0; v < w->num_virtual; v++)
        w->unread_start[v + 1] += w->unread_start[v];
    for (uint64_t c = 0; c < w->num_chunks; c++) {
        uint64_t v = c % w->num_virtual;
        uint32_t at = w->unread_len[v]++;
        w->unread[w->unread_start[v] + at] = (uint32_t)c;
        w->unread_at[c] = at;
    }
    return 0;
}

/* Read chunk c into its (empty) virtual chunk v as load `load`. */
static void load_chunk(walk *w, uint64_t v, uint32_t c, uint32_t load)
{
    uint32_t *list = w->unread + w->unread_start[v];
    uint32_t last = list[--w->unread_len[v]], at = w->unread_at[c];
    list[at] = last;
    w->unread_at[last] = at;
    for (uint32_t p = w->chunk_first[c]; p < w->chunk_first[c] + w->chunk_pages[c]; p++)
        w->cell_page[v * w->slots + w->slot_of[p]] = p;
    w->held[v] = w->chunk_pages[c];
    w->held_load[v] = load;
}

/* Take the page held in slot o of v, or in the next held slot after it. */
static uint32_t take_page(walk *w, uint64_t v, uint64_t o)
{
    uint32_t *row = w->cell_page + v * w->slots;
    while (row[o] == EMPTY)
        o = o + 1 < w->slots ? o + 1 : 0;
    uint32_t page = row[o];
    row[o] = EMPTY;
    w->held[v]--;
    return page;
}

#define PREFETCH_AHEAD 16

int sh_redirect(const sh_stored_page *pages, uint64_t n, uint64_t chunk_bytes,
                uint32_t virtual_chunks, sh_rng *rng, uint32_t *order, sh_schedule *out)
{
    memset(out, 0, sizeof *out);
    walk w = { .pages = pages, .n = n };
    uint32_t *served = malloc((n ? n : 1) * sizeof *served);
    uint8_t *chunk_read = NULL;
    out->source = malloc((n ? n : 1) * sizeof *out->source);
    out->position = malloc((n ? n : 1) * sizeof *out->position);
    if (!served || !out->source || !out->position || cut_chunks(&w, chunk_bytes) < 0 ||
        make_virtual(&w, virtual_chunks) < 0)
        goto fail;
    out->loads = malloc((w.num_chunks ? w.num_chunks : 1) * sizeof *out->loads);
    chunk_read = calloc(w.num_chunks ? w.num_chunks : 1, 1);
    if (!out->loads || !chunk_read)
        goto fail;

    for (uint64_t i = 0; i < n; i++) {
        /* order is a permutation: chunk_of and slot_of are read at random, and
         * past a few million pages (arrays beyond the caches) every read
         * waited for memory. Fetching a few pages ahead hides that. */
        if (i + PREFETCH_AHEAD < n) {
            __builtin_prefetch(&w.chunk_of[order[i + PREFETCH_AHEAD]]);
            __builtin_prefetch(&w.slot_of[order[i + PREFETCH_AHEAD]]);
        }
        uint32_t requested = order[i], own = w.chunk_of[requested];
        uint64_t v = own % w.num_virtual;
        if (w.held[v] == 0) {
            uint32_t c = own;
            if (chunk_read[own]) { /* f was served already: another unread chunk of v */
                uint32_t len = w.unread_len[v];
                if (len == 0) /* impossible: see the counting argument in the header */
                    goto fail;
                c = w.unread[w.unread_start[v] + (rng ? sh_rng_below(rng, len) : 0)];
            }
            uint32_t load = (uint32_t)out->num_loads++;
            out->loads[load] = (sh_load){ i, i, w.chunk_first[c], w.chunk_pages[c] };
            chunk_read[c] = 1;
            load_chunk(&w, v, c, load);
        }
        uint32_t load = w.held_load[v], page = take_page(&w, v, w.slot_of[requested]);
        served[i] = page;
        out->position[page] = (uint32_t)i;
        out->source[i] = load;
        out->loads[load].last = i;
        out->redirections += page != requested;
    }
    memcpy(order, served, n * sizeof *order);
    free(served);
    free(chunk_read);
    walk_free(&w);
    return 0;
fail:
    free(served);
    free(chunk_read);
    walk_free(&w);
    sh_schedule_free(out);
    return -1;
}

void sh_schedule_free(sh_schedule *s)
{
    free(s->loads);
    free(s->source);
    free(s->position);
    memset(s, 0, sizeof *s);
}
