/* yfs_mixview.h — the read path of a mixture's files (yfs_mix.h).
 *
 * A file of mixture epoch e (the whole epoch, or part j of n) is laid out
 * from what it takes of each source, its share:
 *   1. source i gives the runs sh_mix_runs says epoch e takes of its
 *      endless sequence of passes (pass p: the source's epoch-p plan, whole
 *      segments in plan order), cut to pieces (sh_epoch_slice);
 *   2. for part j of n those pieces are dealt as the parts of one dataset
 *      are (sh_deal_one, with even=), source by source: so with even=pad or
 *      drop every part holds the same count of every source. A resumed part
 *      (epoch-K.resume-N-R.part-j-of-n) follows sh_deal.h's rule source by
 *      source: part p of N gave, of source i, the records its first R turns
 *      took (the turns over that part's counts, sh_deal_count); source i's
 *      parts without those, joined in part order (sh_resume_left), are
 *      dealt into the n parts with even=. So the N parts' first R records
 *      plus the n parts are the epoch's records (even=off: exactly);
 *   3. the shares are interleaved by the turns of sh_mix_turns over their
 *      record counts: position t of the file is the next record of the
 *      source that takes turn t.
 * The file's positions are grouped into blocks of about 1 MiB of the file
 * (256 to 4096 positions, from the file's mean record size). Where a
 * block starts in bytes is the sum, over sources, of where its next record
 * starts in its share: whole segments' sizes come from the plans, a record
 * inside a segment from the built segment. So st_size needs only the
 * segments a share cuts at its ends (built at open), and a block's offset
 * the one segment per source it starts in; offsets are learned as blocks
 * are read (a sequential reader builds nothing more than it reads) and a
 * read far ahead finds its block by galloping from the last read's block
 * and bisecting the last step, building the segments at the probes. A block is served by laying out its records (the sizes of its
 * records, from their built segments) and copying each source's records
 * into place, one segment held at a time. Reads of one file run at once:
 * offsets are learned without a lock (each is the same whoever learns it),
 * and a read shares the layout of its block with the other reads of that
 * block or lays it out in one of a few layouts of the file.
 *
 * After each read every source is prepared ahead from where its next
 * records are, as a plain file's reader (yfs_ahead.h, over its share's
 * part, its allowance the source's share, the segment it is in not
 * counted); the file's first read first asks for every source's first
 * segment at once.
 *
 * Memory: the turns' checkpoints (16 bytes per source and 8 per block: at
 * most 530 KiB for a million records of 8 sources, 136 bytes per MiB of
 * the file above 256 bytes a record) live as long as the file is open and
 * are charged as a plan's (YFS_MEM_PLANS); a layout of one block is 20
 * bytes a position (at most 80 KiB): the first is a constant of the open file,
 * the others (up to 3, only for reads at once) are charged as plans.
 *
 * Thread-safe: reads of one view may run at once.
 */
#ifndef YFS_MIXVIEW_H
#define YFS_MIXVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "yfs_mix.h"
#include "yfs_names.h"

typedef struct yfs_mixview yfs_mixview;

/* The file named n of the mixture. Fails when a segment it needs cannot be
 * built. */
int yfs_mixview_open(yfs_mix *mx, const yfs_name *n, yfs_mixview **out, pq_error *err);
void yfs_mixview_close(yfs_mixview *v);
uint64_t yfs_mixview_size(const yfs_mixview *v);
/* As yfs_view_read. */
int yfs_mixview_read(yfs_mixview *v, uint64_t offset, size_t size, uint8_t *out, size_t *got,
                     pq_error *err);

#endif
