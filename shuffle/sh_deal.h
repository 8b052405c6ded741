/* sh_deal.h — which records of an epoch each part file holds: parts, equal
 * parts (even=) and elastic resume.
 *
 * A stream is a list of pieces (sh_plan.h: runs of consecutive records of
 * one plan segment, in the segment's serving order). The
 * epoch is the stream of its segments, whole, in plan order.
 *
 * Dealing a stream into n parts (sh_deal_one):
 *   1. piece p goes to part p mod n (the epoch's part i of n: segments i,
 *      i+n, i+2n, ..., as in sh_plan.h);
 *   2. even=off stops there. Otherwise, with R the stream's records, every
 *      part is made to hold q records, q = floor(R / n) (drop) or
 *      ceil(R / n) (pad): each part keeps its first q records; the records
 *      past q of all parts (part 0's first, in their order) form the spare
 *      list, and for pad the first n*q - R records of the stream (from its
 *      start again when the stream is shorter) are appended to it, as
 *      PyTorch's DistributedSampler pads; the parts short of q, in part
 *      order, take what they lack from the front of the spare list. With
 *      drop, the end of the spare list (R - n*q records) is left out.
 *
 * Elastic resume (sh_resume): the epoch dealt into n parts (with even=), each
 * part without its first r records, those rests joined in part order, dealt
 * into m parts (with the same even=). What the n parts gave before plus the
 * m parts after is the epoch (even=off: exactly its records).
 *
 * Pure: a function of the plan's segment record counts and the arguments.
 * Reentrant; the caller owns every returned list (sh_pieces_free).
 */
#ifndef SH_DEAL_H
#define SH_DEAL_H

#include <stdint.h>

#include "sh_plan.h"

typedef enum sh_even { SH_EVEN_OFF = 0, SH_EVEN_PAD = 1, SH_EVEN_DROP = 2 } sh_even;

typedef struct sh_pieces {
    sh_piece *v;
    uint64_t n, cap;
    uint64_t records; /* sum of end - first */
} sh_pieces;

void sh_pieces_free(sh_pieces *l);
/* Append a piece. Returns 0, or -1 on allocation failure. */
int sh_pieces_push(sh_pieces *l, sh_piece p);

/* Append the records [first, end) of the epoch of `plan` (every segment in
 * plan order) to out, as pieces whose segment numbers carry `tag` (or-ed
 * in: a mixture tells its passes apart by it, yfs_mixview.h). end must not
 * pass the plan's records. Returns 0, or -1 on allocation failure. */
int sh_epoch_slice(const sh_plan *plan, uint64_t first, uint64_t end, uint64_t tag,
                   sh_pieces *out);

/* The epoch of `plan`: every segment, whole, in plan order. -1: no memory. */
int sh_epoch_stream(const sh_plan *plan, sh_pieces *out);

/* Part `part` of `stream` dealt into `parts` parts (part < parts), into
 * *out (initialised here). Takes time O(stream + parts) and memory for the
 * spare list and the part, not for every part. Returns 0, or -1 on
 * allocation failure. */
int sh_deal_one(const sh_pieces *stream, uint64_t part, uint64_t parts, sh_even even,
                sh_pieces *out);

/* The records of `part` of `parts` of the epoch of `plan` (part < parts). */
int sh_deal_part(const sh_plan *plan, uint64_t part, uint64_t parts, sh_even even,
                 sh_pieces *out);

/* Records part `part` of `parts` of `stream` holds when dealt with `even`
 * (sh_deal_one's part.records), in time O(stream / parts) and no memory. */
uint64_t sh_deal_count(const sh_pieces *stream, uint64_t part, uint64_t parts, sh_even even);

/* What is left of `stream` dealt into `given_parts` parts (with even=)
 * after each part p gave its first given[p] records: the rests joined in
 * part order, into *left (initialised here). sh_resume_part deals it into
 * the resumed parts; a mixture does so source by source (yfs_mixview.h).
 * Returns 0, or -1 on allocation failure. */
int sh_resume_left(const sh_pieces *stream, uint64_t given_parts, const uint64_t *given,
                   sh_even even, sh_pieces *left);

/* Part `part` of `parts` of what is left of the epoch after each of its
 * `given_parts` parts gave its first `given` records (part < parts,
 * given_parts >= 1). */
int sh_resume_part(const sh_plan *plan, uint64_t given_parts, uint64_t given, uint64_t part,
                   uint64_t parts, sh_even even, sh_pieces *out);

#endif
