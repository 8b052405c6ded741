/* ix_checked.h — reading a source's bytes at run time, checked against what
 * the index saw (ix_read.h states the rules). Shared by ix_read.c, which
 * reads whole pages, and ix_stream.c, which reads an entry in windows;
 * index/ files only.
 */
#ifndef IX_CHECKED_H
#define IX_CHECKED_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ix_index.h"
#include "pq_page.h"

/* Read [offset, offset+length) of `file` between two checks of the file
 * (ix_check_file). *moved: the ctime differed from the index's before or
 * after the read, so the bytes must be compared with the index's CRCs.
 * The read is ix_pread_exact's (delay, retries: ix_pread.h). */
int ix_read_checked(const ix_index *ix, uint32_t file, uint64_t offset, void *buf,
                    size_t length, uint64_t *bytes_read, int *moved, pq_error *err);

/* Whether the bytes read under `moved` must have their CRC taken: to learn
 * it (the ctime is the index's and the slot is 0) or to compare it (the
 * ctime moved and the slot is known). */
int ix_crc_needed(int moved, const _Atomic uint32_t *slot);
/* Settle a CRC slot with `now`, the ix_page_crc of the bytes just read: learn
 * it, or compare it and fail naming the file, `what` and its offset. */
int ix_crc_settle(const ix_file *f, int moved, const _Atomic uint32_t *slot, uint32_t now,
                  const char *what, uint64_t offset, pq_error *err);

/* Whether a data page's values index the chunk's dictionary. */
static inline int ix_uses_dictionary(const pq_page_header *h)
{
    return h->encoding == PQ_ENC_PLAIN_DICTIONARY || h->encoding == PQ_ENC_RLE_DICTIONARY;
}

#endif
