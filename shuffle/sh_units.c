#include "sh_units.h"

#include <assert.h>
#include <stddef.h>

typedef struct open_page {
    uint64_t next, end; /* its units not yet served */
} open_page;

void sh_units_order(const uint32_t *page_order, uint64_t num_pages, const uint64_t *first_unit,
                   sh_rng *rng, uint32_t *unit_order)
{
    uint64_t out = 0;
    if (!rng) {
        for (uint64_t i = 0; i < num_pages; i++)
            for (uint64_t u = first_unit[page_order[i]]; u < first_unit[page_order[i] + 1]; u++)
                unit_order[out++] = (uint32_t)u;
        return;
    }
    open_page open[SH_OPEN_PAGES];
    uint32_t count = 0;
    uint64_t next_page = 0;
    for (;;) {
        /* Keep SH_OPEN_PAGES pages open while the order has pages left. */
        while (count < SH_OPEN_PAGES && next_page < num_pages) {
            uint32_t p = page_order[next_page++];
            if (first_unit[p] < first_unit[p + 1])
                open[count++] = (open_page){ first_unit[p], first_unit[p + 1] };
        }
        if (count == 0)
            break;
        uint32_t j = (uint32_t)sh_rng_below(rng, count);
        unit_order[out++] = (uint32_t)open[j].next++;
        if (open[j].next == open[j].end)
            open[j] = open[--count]; /* closed: the last open page takes its slot */
    }
    assert(out == first_unit[num_pages]);
}
