/* sh_redirect.h — Redox chunk redirection: turns a page permutation into the
 * epoch's page order plus the I/O schedule that reads it in large chunks.
 *
 * Physical chunks: the pages of one run (one column chunk: consecutive on
 * storage) are cut, in index order, into chunks of at most `chunk_bytes`
 * stored bytes (a chunk holds at least one page and at most
 * SH_CHUNK_MAX_PAGES). A page's slot is its position within its chunk.
 *
 * Virtual chunks: `virtual_chunks` of them (SH_VIRTUAL_CHUNKS unless a
 * mixture gives a source its share, sh_mix.h), no more than there are
 * physical chunks; physical chunk c maps to virtual chunk c mod their
 * number. A virtual chunk holds the loaded, not yet served pages of at most
 * one physical chunk, one per slot.
 *
 * The walk takes the requests in permutation order. A request for page f
 * (virtual chunk v, slot o):
 *   - if v holds pages, one of them is served instead of f (a redirection
 *     when it is not f): the page in slot o if there is one, else the next
 *     held slot after o, cyclically;
 *   - otherwise a physical chunk of v not loaded yet is read in one I/O (f's
 *     own chunk if f is unserved, else a seeded draw among v's unread
 *     chunks), all its pages enter v, and one is served as above.
 * A request for v always finds a page: v's requests and v's pages are
 * equally many, and while v is empty every page served so far from v's
 * chunks was a request to v. Hence every page is served exactly once
 * (invariant 1), and every physical chunk is read exactly once.
 *
 * Redox redirects only to a page of the same slot and refills an empty slot
 * by reading a whole chunk of which only some pages enter free slots; the
 * rest is read again later. Redirecting to any held slot of the virtual
 * chunk keeps both of Redox's rules (all reads batched; each page loaded
 * once) with no wasted reads: a chunk is read only when its virtual chunk
 * is empty. (Measured on 20,000 shuffled pages in 1 MiB chunks: same-slot
 * redirection needed a load per 4 pages and read most pages several times.)
 *
 * The number of virtual chunks is never derived from mem=: the order must
 * be the same on every rank of a cluster, whatever memory each node gives
 * the read path. The read path keeps up to virtual_chunks * chunk_bytes of
 * loaded pages when memory allows; correctness never depends on it. A
 * dataset of no more physical chunks than virtual ones redirects nothing:
 * each chunk's pages wait in their own virtual chunk for requests spread
 * over the whole epoch.
 */
#ifndef SH_REDIRECT_H
#define SH_REDIRECT_H

#include <stdint.h>

#include "sh_random.h"

#define SH_VIRTUAL_CHUNKS 64
#define SH_CHUNK_MAX_PAGES 256

/* Per-page storage facts, in global page order. */
typedef struct sh_stored_page {
    uint32_t stored; /* bytes on storage (header + compressed body; a page's, as the index
                        keeps it, fits 32 bits); 32 bits keep the entry at 8 bytes, which the
                        mount keeps per page beside the index */
    uint32_t run;    /* pages of one run are consecutive on storage; runs ascend */
} sh_stored_page;

/* One I/O of the schedule: the physical chunk [first_page, first_page+pages)
 * read at once, when the order reaches `position`. It brings the pages whose
 * source is this load (all of the chunk's pages, with sh_redirect). */
typedef struct sh_load {
    uint64_t position;  /* order position of the request that triggers it */
    uint64_t last;      /* order position of the last page it brings */
    uint32_t first_page;
    uint32_t pages;
} sh_load;

typedef struct sh_schedule {
    uint64_t num_loads;
    sh_load *loads;      /* ascending position */
    uint32_t *source;    /* per order position: the load that brings the page */
    uint32_t *position;  /* per page: its order position (the inverse of the order) */
    uint64_t redirections; /* positions that serve another page than requested */
} sh_schedule;

/* Rewrite order[0..n) (a permutation of pages, the requests) into the
 * redirected order and fill *out. chunk_bytes >= 1, virtual_chunks >= 1. rng draws the candidate
 * chunks; with rng NULL a request always loads its own page's chunk, so a
 * natural order stays natural (its loads are the chunks in storage order).
 * Returns 0, or -1 on allocation failure (order is then unchanged). */
int sh_redirect(const sh_stored_page *pages, uint64_t n, uint64_t chunk_bytes,
                uint32_t virtual_chunks, sh_rng *rng, uint32_t *order, sh_schedule *out);
void sh_schedule_free(sh_schedule *s);

#endif
