/* sh_units.h — sub-page shuffle units: how an epoch mixes pages of many rows.
 *
 * A page-granular order can mix no more pages in a window of W records than
 * W / (records per page) + 1: DuckDB's pages of 10,000 rows leave a
 * 10,000-record window with records of one or two pages, a near-sequential
 * order. So the index cuts a page of many records into units (consecutive
 * slices of its records), and the plan serves units.
 *
 * The unit order keeps the page order (and so the chunk redirection and I/O
 * schedule of sh_redirect.h) and interleaves the units of SH_OPEN_PAGES
 * pages at a time: pages are opened in page order, and each next unit comes
 * from an open page drawn uniformly at random (a seeded draw), taking that
 * page's units in record order; a page whose units are all served closes
 * and the next page of the order takes its place. So a window mixes the
 * units of about SH_OPEN_PAGES pages, and a page's units are served soon
 * after its first (the read path keeps a decoded page for its later units
 * while at most SH_OPEN_PAGES pages are open: redirection at sub-page
 * level). Pure: a function of the page order, the unit counts and the rng.
 */
#ifndef SH_UNITS_H
#define SH_UNITS_H

#include <stdint.h>

#include "sh_random.h"

/* Pages whose units are interleaved at a time. */
#define SH_OPEN_PAGES 8

/* Write the unit order: page_order[0..num_pages) is a permutation of the
 * pages, first_unit[page] (num_pages+1 entries, ascending) the number of
 * the page's first unit, so page p has units first_unit[p] ..
 * first_unit[p+1]-1. unit_order receives first_unit[num_pages] entries.
 * rng NULL keeps every page's units together, in page order (shuffle=none). */
void sh_units_order(const uint32_t *page_order, uint64_t num_pages, const uint64_t *first_unit,
                   sh_rng *rng, uint32_t *unit_order);

#endif
