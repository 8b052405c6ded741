/* yfs_streams.h — page streams paused between the shuffle units they serve.
 *
 * A streamed page (index/ix_stream.h) is cut into units that the plan
 * serves in record order, a few segments apart (shuffle/sh_units.h). A
 * build that framed a unit of such a page pauses the stream here,
 * positioned at the first record of the next unit, and the build that needs
 * that unit continues it: the page is read and decoded once per epoch
 * instead of once per unit, in a MiB or so (what a stream commits to,
 * ix_stream_committed) where parking its framed units would take the
 * page's framed size. Keyed by (page, unit): a stream serves any epoch.
 *
 * Each paused stream is charged to the accountant as YFS_MEM_PARKED for
 * what it holds (ix_stream_bytes: its windows and decoder state, a few
 * hundred KiB, where its cap is 12 MiB: charged at their caps, DuckDB's
 * token streams were closed for room and read again), with the dictionary
 * it holds (in use in the dictionary cache); whoever continues it reserves
 * what it commits to, and grows that charge as it goes (yfs_units.c). The
 * store keeps at most `cap` bytes of them: the one paused longest is closed
 * first. A demand reservation short of room has the oldest let go of their
 * reads ahead (ix_stream_shed: they keep their place) and closes those
 * paused at a unit whose mark is kept (see Marks: resumed from it, the unit
 * costs one round trip more), and, once it has
 * waited out its patience (yfs_budget.h: the builds running free room
 * first), closes them too, oldest first, when that lets it through or when
 * nothing running could make room (whoever needs the unit streams the page
 * again: only the work differs). A stream that passes over units nobody
 * keeps leaves a paused copy of itself at the first of them (yfs_units.c,
 * ix_stream_fork): several paused streams of a page, at different units,
 * are the rule then, and yfs_streams_take hands over the latest at or
 * before the unit asked for. Streams are shed and closed with no
 * lock of the store held (shedding waits for reads in flight; closing gives
 * a dictionary back, which takes the dictionary cache's lock). Thread-safe.
 */
/*
 * Marks. A stream passing a unit's first record leaves a mark there
 * (ix_stream_mark: a few numbers and the value of a list's pending entry)
 * when its page may be marked: the build that needs the unit later resumes
 * from the mark (ix_stream_resume), reading the page's header, levels and
 * the body from the mark's 64 KiB SNAPPY block on, where without one it
 * continues the latest paused stream before the unit (reading and decoding
 * the units between) or streams the page again from its start. A paused
 * stream at the unit itself is taken before a mark. Marks serve any epoch;
 * they are charged as YFS_MEM_MARKS, kept while they take no more than an
 * eighth of the store's cap, and never let go (a few hundred bytes each):
 * the accountant counts them, as plans, with what waiting cannot free
 * (yfs_budget.h). Forgotten for room, they had 8 parts of DuckDB's tokens
 * at 50 ms a read stream 113-119 pages from their start for 28, reading
 * 3.3 GB for 1.3 (bench/results/marks_kept.md).
 * The page pass leaves marks too (index/ix_index.h, ix_unit_mark), kept in
 * the persistent index: a mount puts them here when it starts
 * (yfs_mount_start), the units in index order, as if a stream had passed
 * every unit of those pages.
 */
#ifndef YFS_STREAMS_H
#define YFS_STREAMS_H

#include <stdint.h>

#include "ix_stream.h"
#include "yfs_budget.h"
#include "yfs_dicts.h"
#include "yfs_stats.h"

typedef struct yfs_streams yfs_streams;

/* Registers a reclaimer with budget (before any reservation). */
yfs_streams *yfs_streams_new(yfs_budget *budget, yfs_dicts *dicts, uint64_t cap,
                             yfs_stats *stats);
void yfs_streams_free(yfs_streams *st);
/* Change the cap, before any stream is paused (yfs_pages_set_cap). */
void yfs_streams_set_cap(yfs_streams *st, uint64_t cap);

/* Pause s (ix_stream_pausable) of global page `page`, positioned at the
 * first record of unit `unit`, with the dictionary handle it holds (or
 * NULL). `charged` bytes of YFS_MEM_DECODED in hold are its reservation:
 * ix_stream_bytes(s) of them move to the store, the rest is released.
 * The store owns s from now on. */
void yfs_streams_put(yfs_streams *st, uint32_t page, uint64_t unit, ix_stream *s, void *dict,
                     uint64_t charged, yfs_hold *hold);

/* The stream of `page` paused at the latest unit up to `unit` (*at), handed
 * to the caller with its dictionary handle (*dict) and its charge (*charged
 * bytes, moved to hold as YFS_MEM_DECODED); or NULL, and then the caller is
 * to stream the page from its first unit, `first_unit` (*at). The caller
 * rebinds a stream handed over (ix_stream_rebind) and passes over the units
 * before `unit` (builds running at once ask for a page's units a little out
 * of order).
 *
 * Either way the stream is in use from now on, until the caller pauses it
 * (yfs_streams_put) or closes it (or gives up opening it), and then says so
 * (yfs_streams_end with the unit it started from). A build that needs a
 * later unit of the page waits for a stream in use (yfs_streams_wait)
 * instead of streaming the page again from its start: with 8 readers,
 * builds that each opened their own stream read DuckDB's 100 MB pages 20
 * times per epoch. A thread that uses a stream never waits for another
 * stream, so such waits end; they are bounded in time all the same (then
 * the page is streamed again: only the work differs). yfs_streams_wait
 * returns 1 when it waited and the stream was let go (the unit may be parked
 * now), 0 when no stream of the page before the unit was in use, or after
 * waiting too long. Its caller, a thread of `hold` (entered; NULL: none),
 * counts as waiting meanwhile (yfs_hold_wait_begin): the stream's user may
 * be waiting for room, as a thread of the same build or of another, and
 * with the waiter counted as running, nothing looked blocked, so that
 * demand waited for this wait to time out (at mem=1M, 200 KB of an epoch
 * took 28 s, 2 s at a time). */
ix_stream *yfs_streams_take(yfs_streams *st, uint32_t page, uint64_t unit, uint64_t first_unit,
                            yfs_hold *hold, uint64_t *at, void **dict, uint64_t *charged);
void yfs_streams_end(yfs_streams *st, uint32_t page, uint64_t from);
int yfs_streams_wait(yfs_streams *st, uint32_t page, uint64_t unit, yfs_hold *hold);
/* Keep mark m of unit `unit` (owned by the store from now on: freed when
 * one is kept already, or when there is no room). */
void yfs_streams_mark(yfs_streams *st, uint64_t unit, ix_stream_mark *m);
/* Whether a mark of the unit is kept. */
int yfs_streams_marked(yfs_streams *st, uint64_t unit);
/* 1 and the kept mark's body_offset (ix_stream.h) in *offset, or 0 when the
 * unit has no mark kept. */
int yfs_streams_mark_offset(yfs_streams *st, uint64_t unit, uint64_t *offset);
/* When no paused stream of `page` is at `unit` itself but a mark of the unit
 * is kept: 1, a copy of the mark in *m (the caller frees it) and the unit's
 * stream in use (yfs_streams_end with `unit`), as yfs_streams_take's. Else
 * 0. */
int yfs_streams_take_mark(yfs_streams *st, uint32_t page, uint64_t unit, ix_stream_mark *m);
/* The page's marks [first_unit, end_unit) are forgotten and its paused
 * streams closed: a stream resumed from one failed as not resumable (its
 * SNAPPY copies cross blocks), so whoever needs its units streams it again
 * from its start. */
void yfs_streams_forget_page(yfs_streams *st, uint32_t page, uint64_t first_unit,
                             uint64_t end_unit);
/* Whether yfs_streams_wait would wait now (a stream of `page` positioned at
 * or before `unit` is in use): a build with other units to frame does those
 * first (yfs_segment.c). */
int yfs_streams_busy(yfs_streams *st, uint32_t page, uint64_t unit);

#endif
