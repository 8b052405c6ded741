/* yfs_plans.h — cache of epoch plans. A plan is computed on first use of an
 * epoch (any of its files) and shared by all readers of that epoch; a few
 * recently used plans are kept. Each plan's arrays (yfs_plan_bytes) are
 * charged to the mount's accountant as YFS_MEM_PLANS while it lives, with
 * YFS_FORCE: a plan is needed to read at all, its size is known only once
 * built, and it is built under the cache's lock, where nothing may wait.
 * Thread-safe (one mutex). */
#ifndef YFS_PLANS_H
#define YFS_PLANS_H

#include <stdatomic.h>
#include <stdint.h>

#include "pq_error.h"
#include "sh_plan.h"
#include "yfs_budget.h"
#include "yfs_loads.h"
#include "yfs_stats.h"

typedef struct yfs_plans yfs_plans;

typedef struct yfs_plan {
    sh_plan plan;
    yfs_loads loads;   /* progress of the plan's I/O schedule */
    _Atomic uint64_t *built; /* a bit per unit: framed into a segment (yfs_plan_mark_built) */
    _Atomic uint64_t *read_here; /* a bit per unit: a file opened on the mount reads it
                                    (yfs_plan_note_part) */
    _Atomic int parts_noted;     /* yfs_plan_note_part was called */
    int refs;          /* guarded by the cache mutex */
    uint64_t last_use; /* guarded by the cache mutex */
} yfs_plan;

/* The inputs (params, pages, cut, stored, record_bytes) must outlive the
 * cache. cut is NULL when no page is cut into units (sh_plan.h); record_bytes
 * (num_records entries) is for shuffle=row only, else NULL. */
yfs_plans *yfs_plans_new(const sh_params *params, const sh_page *pages, const sh_cut *cut,
                         const sh_stored_page *stored, uint64_t num_pages,
                         const uint32_t *record_bytes, uint64_t num_records, yfs_budget *budget,
                         yfs_stats *stats);
void yfs_plans_free(yfs_plans *c);

/* A referenced plan of `epoch`; release with yfs_plans_put. */
int yfs_plans_get(yfs_plans *c, uint64_t epoch, yfs_plan **out, pq_error *err);
void yfs_plans_put(yfs_plans *c, yfs_plan *p);
/* Take another reference on a plan already held. */
void yfs_plans_ref(yfs_plans *c, yfs_plan *p);
/* Heap bytes of a built plan: its arrays, load states and built bits. */
uint64_t yfs_plan_bytes(const yfs_plan *p);

/* Unit `unit` of the plan was framed into a segment: the read path need not
 * keep it for later builds any more (only a segment evicted before it was
 * read needs it again, and then frames it again: only the work differs). */
void yfs_plan_mark_built(yfs_plan *p, uint64_t unit);
int yfs_plan_built(const yfs_plan *p, uint64_t unit);

/* A file of the plan's epoch was opened on this mount and reads `part`:
 * the units of the part's segments are noted as read here (a segment a
 * piece cuts counts whole). Nothing is ever un-noted: a file closed may be
 * opened again. Units no open file reads are not worth framing in passing
 * (yfs_units.c): on a node that reads one part of n (a cluster's ranks,
 * each its own mount), a stream that passed the units of the other parts
 * to reach its own read and decoded n times what the node serves. Only the
 * work differs, never the bytes. A plan whose segments are built with no
 * part noted (a caller that builds them directly) reads every unit.
 * Thread-safe (atomic bits). */
void yfs_plan_note_part(yfs_plan *p, const sh_part *part);
int yfs_plan_read_here(const yfs_plan *p, uint64_t unit);

#endif
