/* yfs_wants.h — the units running builds want, and the slots they will be
 * framed into.
 *
 * A build reserves the blocks of the units of its segment before it frames
 * any (yfs_units.h), and registers their slots here (an opaque pointer:
 * yfs_units.h's yfs_unit, whose block whoever frames it first allocates).
 * Whoever decodes or streams a page frames every registered unit of that
 * page it passes straight into its build's slot, at no memory cost: a stream of one
 * of DuckDB's 100 MB pages serves the units several builds wait for in one
 * pass, where parking them (a copy each, room permitting) or streaming the
 * page again from its start for each was the alternative.
 *
 * A unit's entry is WANTED until someone begins to frame it (FILLING), then
 * FILLED; a framing that fails puts it back to WANTED. The owner takes it
 * over like anyone else (yfs_wants_begin) and waits while another frames
 * it. Framing waits for CPU, file reads and, at times, room for a stream
 * to go on (yfs_units.c): such a wait counts as its hold waiting for the
 * accountant (yfs_hold_wait_begin), so the accountant lets the framer
 * through once nothing else could make room, and the wait ends. Keyed by unit (a unit's framed bytes do not depend on the
 * epoch): a unit a second build wants at the same time is not registered
 * again, and that build frames it itself. Thread-safe (one mutex).
 */
#ifndef YFS_WANTS_H
#define YFS_WANTS_H

#include <stdint.h>

#include "yfs_budget.h"

typedef struct yfs_wants yfs_wants;

/* budget (may be NULL) is told of the waits for another's framing. */
yfs_wants *yfs_wants_new(yfs_budget *budget);
/* No entry may be left (asserted). */
void yfs_wants_free(yfs_wants *w);

/* Register slot for unit (the caller's until yfs_wants_remove). Returns 0,
 * or -1 when the unit is registered already (or out of memory). */
int yfs_wants_add(yfs_wants *w, uint32_t unit, void *slot);
/* Unregister (once no one frames into the slot, waiting for it as a
 * thread of hold, entered; NULL: none). */
void yfs_wants_remove(yfs_wants *w, uint32_t unit, const void *slot, yfs_hold *hold);

/* Someone else's unit passing by: its slot, now FILLING for the caller
 * (who alone may touch it until yfs_wants_end), or NULL when it is not
 * WANTED. */
void *yfs_wants_claim(yfs_wants *w, uint32_t unit);
/* Whether a running build waits for the unit to be framed (its slot is
 * registered and nobody frames it yet): what yfs_wants_claim would claim. */
int yfs_wants_waiting(yfs_wants *w, uint32_t unit);
/* The owner's own unit, to be framed into slot: 1 when it is FILLED
 * already (nothing to do), else 0 and the caller frames it (FILLING for it
 * if registered), waiting first while another frames it. */
int yfs_wants_begin(yfs_wants *w, uint32_t unit, const void *slot, yfs_hold *hold);
/* The caller's framing of unit into slot (claimed or begun) is over:
 * FILLED when ok, else WANTED again. No-op when slot is not registered
 * for unit. */
void yfs_wants_end(yfs_wants *w, uint32_t unit, const void *slot, int ok);

#endif
