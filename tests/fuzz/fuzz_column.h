/* fuzz_column.h — the column a page fuzz input describes: its first 4 bytes
 * choose the physical type, the levels, the codec and the fixed length (the
 * rest is pages). Shared by fuzz_page.c and fuzz_stream.c, so that one
 * corpus (make_corpus.py) serves both. */
#ifndef FUZZ_COLUMN_H
#define FUZZ_COLUMN_H

#include <stdint.h>

#include "pq_column.h"

#define FUZZ_COLUMN_BYTES 4

static inline pq_column_desc fuzz_column(const uint8_t *data)
{
    return (pq_column_desc){
        .type = data[0] % 8,
        .type_length = data[3],
        .max_def = (int16_t)(data[1] % 3),
        .max_rep = (int16_t)((data[1] / 3) % 2),
        .codec = data[2] % 8,
    };
}

#endif
