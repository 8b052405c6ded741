/* ix_stream.h — the records of one index entry, in bounded memory.
 *
 * ix_read_page decodes an entry whole: its raw bytes, the decompressed body
 * and a value slice and levels per entry, several times the page for lists
 * of numbers (about 600 MB for one of DuckDB's 43 MB pages of 15.6 M
 * tokens). An ix_stream hands out the same records one at a time, holding
 * only windows: the entry's bytes are read in order, opts.read_size at a
 * time (each read checked like ix_read_range's: the file is fstat'ed before
 * and after), decoded by pq_stream (decode/pq_stream.h) page after page, and
 * a list row is assembled in an ix_row (ix_row.h), across the pages it goes
 * on in. Everything it holds stays within opts.cap bytes, so a caller
 * reserves cap before opening.
 *
 * The records are those of ix_read_page + ix_page_records for the entry:
 * the same values, rows and row numbers, in page order (tests/index/
 * test_stream.c checks it on every writer's files). What does not stream (a
 * codec, an encoding or a limit pq_stream refuses; a row larger than its
 * share of cap) fails with a message containing "not streamable" or
 * "beyond the stream's window", and the caller decodes the entry whole
 * instead; such a failure may come after records were handed out, so a
 * caller keeps nothing it framed from a stream that failed.
 *
 * Change detection. The entry's CRC (ix_page.crc) covers all its bytes: a
 * stream that read them all learns it, or compares it when the file's ctime
 * moved (ix_read.h). A caller that stops early calls ix_stream_finish, which
 * reads the rest of the entry (without decoding it) when the bytes must be
 * compared, or when the page carries a Parquet CRC that is verified. The
 * records handed out are vouched for only once ix_stream_next returned 0 or
 * ix_stream_finish returned 0. Not thread-safe; streams over distinct
 * entries may run on distinct threads.
 */
#ifndef IX_STREAM_H
#define IX_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "ix_read.h"
#include "ix_record.h"
#include "pq_stream.h"

/* Charging as it goes. A caller may charge a stream at what it commits to
 * rather than at its cap: what it holds, with the current page's stream at
 * its bound (ix_stream_committed: about 1 MiB for a paused stream of
 * DuckDB's tokens, where the cap is 12 MiB plus the reads ahead). It then
 * gives the stream a grow function, which the stream calls with the bytes
 * it is about to commit beyond what it was granted, before it allocates
 * them: at open, at each page it opens (from the page's header:
 * pq_stream_memory_needed), when a page header needs a larger buffer, when
 * the row being assembled grows, and when it starts reading ahead. The
 * function returns 0 once the bytes are the stream's (granted grows by
 * them), or -1 with err set, and then the stream fails with that error;
 * but for reads ahead (may_refuse set) -1 only means no room now: the
 * stream reads on directly and asks again at its next read. Granted never
 * passes the cap. */
typedef int (*ix_stream_grow_fn)(void *ctx, size_t more, int may_refuse, pq_error *err);

/* The first bytes of an entry, read already (ix_entry_first_header) by a
 * caller weighing a stream: a stream opened with them goes on from there,
 * without reading them again (a round trip over slow storage). */
typedef struct ix_entry_head {
    uint8_t *bytes; /* malloc'ed; NULL once a stream took them over */
    size_t len;
    int moved;      /* their read saw the file's ctime move (ix_checked.h) */
} ix_entry_head;

/* Free what a stream did not take over. */
void ix_entry_head_free(ix_entry_head *head);

typedef struct ix_stream_opts {
    size_t cap;       /* everything held, in bytes; default ix_stream_cap() */
    size_t read_size; /* bytes per read; default the store's stream_read_bytes
                       * (ix_store.h), else IX_STREAM_READ_SIZE */
    size_t window;    /* bytes per read ahead; default IX_AHEAD_WINDOW */
    int ahead;        /* 0: read ahead once a read is slow (IX_AHEAD_SLOW_NS);
                       * 1: from the start; -1: never */
    ix_stream_grow_fn grow; /* NULL: the caller reserved cap */
    void *grow_ctx;
    ix_entry_head *head;    /* the entry's first bytes, taken over at open; or NULL */
    uint64_t ahead_until;   /* file offset where reads ahead stop (ix_stream_ahead_until);
                             * 0: the entry's end */
} ix_stream_opts;

/* What a stream holds besides its reads ahead, which it may have only when
 * the cap leaves them room beside this much. */
#define IX_STREAM_CAP ((size_t)12 << 20)
#define IX_STREAM_READ_SIZE ((size_t)256 << 10)

/* Reads ahead. Over storage that answers in milliseconds one read at a time
 * caps a stream at read size / latency; its next windows are then read in
 * parallel (ix_ahead.h). They cost memory, which counts while the stream is
 * paused between units too (fewer paused streams fit in the caller's store,
 * and a stream closed for room is read again), so a stream reads ahead only
 * over slow storage: when its first read (the header's, at open) took
 * IX_AHEAD_SLOW_NS or more (from the page cache or a local SSD it takes well
 * under), it reads the rest of its entry ahead; otherwise it never does.
 * (A caller that knows the storage is slow says so: opts.ahead 1.) It
 * starts IX_AHEAD_WINDOWS deep and takes a quarter more windows (one at
 * least, each asked for with may_refuse) each time it waits for a window in
 * flight, up to IX_AHEAD_WINDOWS_MAX or what the cap leaves; let go
 * (ix_stream_shed), it reads ahead again as deep as it was, or
 * IX_AHEAD_WINDOWS deep when that is refused. They count (ix_stream_bytes,
 * ix_stream_committed) only while open. */
#define IX_AHEAD_SLOW_NS (1000u * 1000)

/* The default cap: IX_STREAM_CAP and the reads ahead. What a caller
 * reserves. */
size_t ix_stream_cap(void);

typedef struct ix_stream ix_stream;

/* Open a stream over entry `page` of the index and read its first page
 * header. The chunk's dictionary is taken through dicts when a page needs
 * it; *dict_handle is then set (else NULL) and stays in use until
 * ix_stream_close, after which the caller gives it back. opts may be NULL.
 * *bytes_read grows by every byte read. NULL on failure, with err naming
 * the file and the offset. */
ix_stream *ix_stream_open(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                          void **dict_handle, const ix_stream_opts *opts, uint64_t *bytes_read,
                          pq_error *err);

/* The header of the entry's first page, read on its own (at most
 * IX_STREAM_HEADER_PEEK bytes, checked like every read): for a caller
 * weighing a whole decode against a stream before reserving either. A
 * header that does not parse there fails as "not streamable". The bytes
 * read are kept in *head (head NULL: let go) for the stream opened next. */
#define IX_STREAM_HEADER_PEEK ((size_t)64 << 10)
int ix_entry_first_header(const ix_index *ix, uint64_t page, pq_page_header *h,
                          ix_entry_head *head, uint64_t *bytes_read, pq_error *err);

/* The next record: 1 and *rec (valid until the next call), 0 once the
 * entry's records are all out (their count, rows and bytes checked against
 * the index), or -1 with err naming the file and the entry's offset. */
int ix_stream_next(ix_stream *s, ix_record *rec, pq_error *err);

/* For a caller that stops before ix_stream_next returned 0: read what must
 * be read to vouch for the records handed out (above). 0 or -1. */
int ix_stream_finish(ix_stream *s, pq_error *err);

/* Bytes held now (<= ix_stream_committed). */
size_t ix_stream_bytes(const ix_stream *s);

/* How long the stream's first read of storage that it made itself took, in
 * ns (0: none yet, or every read so far was read ahead): a resumed stream's
 * is its page's header, the caller's measure of the storage's latency. */
uint64_t ix_stream_first_read_ns(const ix_stream *s);

/* Pausing. A stream may stop between records and be continued later, by
 * another thread, when the records handed out are vouched for already: no
 * read saw the file's ctime move and no Parquet page CRC is still pending
 * (ix_stream_pausable returns 1). Whoever continues it gives it their own
 * dictionary source, handle slot (holding the handle the stream took, if
 * any) and byte counter. */
int ix_stream_pausable(const ix_stream *s);
void ix_stream_rebind(ix_stream *s, const ix_dict_source *dicts, void **dict_handle,
                      uint64_t *bytes_read);

/* Forking. A copy of a stream paused between records (ix_stream_pausable),
 * to come back to this place of the entry later while s goes on: whoever
 * frames the records s passes over without keeping them continues the
 * copy instead of streaming the entry again from its start (DuckDB's pages
 * of 25 MB: the copy reads from here, its CRC and counts carried over, so
 * that it vouches for the entry as s would). The copy is paused: it holds
 * what s holds but its reads ahead (ix_stream_bytes: a few hundred KiB),
 * reads ahead again from its place when continued, and is continued only
 * after ix_stream_rebind and ix_stream_charge. Not forkable (NULL, err
 * says "not forkable"): a stream that may not pause, one holding a
 * dictionary (its handle is one caller's), one in the middle of a row, or
 * a page compressed by a library decoder (pq_stream_fork). */
ix_stream *ix_stream_fork(const ix_stream *s, pq_error *err);

/* Marks. Where a fork holds the stream's windows (a few hundred KiB), a mark
 * is a few numbers (decode/pq_stream.h: pq_stream_mark) and the entry that
 * starts the next row of a list, taken between records: a stream resumed
 * from it reads the marked page's header and level bytes again, then the
 * page's body only from the 64 KiB block of its mark on (SNAPPY as every
 * writer checked writes it; UNCOMPRESSED from the mark's byte), and hands
 * out the records the marked stream would have handed out next; told that
 * storage is slow (opts->ahead 1), it reads ahead from the mark's
 * body_offset at once, beside its read of the header and levels. A page of
 * DuckDB's (25 MB to 125 MB) is so read from the unit a build needs, where a
 * stream with no paused copy near it reads the page from its start.
 *
 * Only a page of PLAIN values of a type other than BOOLEAN, compressed by
 * SNAPPY or not at all, with no Parquet page CRC to verify, is marked; and
 * only a stream that may pause (ix_stream_pausable), not in the middle of a
 * row nor before its entry's first row, whose pending entry's value has at
 * most IX_STREAM_MARK_VALUE_MAX bytes. A resumed stream reads part of the
 * entry: it learns no CRC, and when a read saw the file's ctime move while
 * the entry's CRC is known (a chmod), it reads the whole entry again to
 * compare it when it vouches for its records (ix_stream_finish, or its
 * last record). A page whose SNAPPY copies cross its blocks (the format
 * allows it; no writer checked does) fails in the resumed stream as "not
 * resumable": the caller streams the entry from its start instead
 * (pq_stream_resume_instead). */
#define IX_STREAM_MARK_VALUE_MAX ((uint32_t)64 << 10)
typedef struct ix_stream_mark {
    uint64_t page_offset;   /* the marked page's header, in the file */
    uint64_t body_offset;   /* where a stream resumed here reads its values from, in the
                             * file (the SNAPPY block of the mark): the records before
                             * the mark end in the bytes before it or in that block */
    unsigned page_no;       /* its place in the entry (0: the first) */
    uint32_t rows, records; /* handed out before the mark */
    pq_stream_mark at;
    int has_pending;        /* lists: the first entry of the next row, read already */
    uint16_t rep, def;
    int has_value;
    uint32_t value_len;
    uint8_t *value;         /* owned: value_len bytes */
} ix_stream_mark;
/* 1 and *m filled (free it with ix_stream_mark_free) when s can be marked
 * where it stands (above), else 0 (out of memory too). */
int ix_stream_mark_here(const ix_stream *s, ix_stream_mark *m);
void ix_stream_mark_free(ix_stream_mark *m);
/* What a mark holds. */
size_t ix_stream_mark_bytes(const ix_stream_mark *m);
/* A copy of a mark (its own value): 0, or -1 out of memory. */
int ix_stream_mark_copy(ix_stream_mark *to, const ix_stream_mark *from);
/* The mark the page pass left at the index's unit `unit` (ix_unit_mark; in
 * ix_index.unit_bytes' order) of entry `page`: 1 and *m (free it with
 * ix_stream_mark_free, or hand it on), or 0 when it left none there (or out
 * of memory for a list's pending value). */
int ix_unit_mark_get(const ix_index *ix, uint64_t page, uint64_t unit, ix_stream_mark *m);
/* A stream over entry `page` (as ix_stream_open's, without opts->head)
 * positioned at mark m, taken from a stream over the same entry; the mark's
 * value moves to the stream (free m all the same). NULL on failure, err
 * naming the file and the entry's offset; a failure of a resumed stream
 * that pq_stream_resume_instead says "not resumable" of leaves the entry
 * valid as far as is known: stream it from its start instead. */
ix_stream *ix_stream_resume(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                            void **dict_handle, const ix_stream_opts *opts, ix_stream_mark *m,
                            uint64_t *bytes_read, pq_error *err);

/* What the stream may hold without asking for more (see Charging): what
 * it holds, with its page's stream at its bound (tighter once the page's
 * levels are known); <= cap, and <= granted while a grow function is
 * set. */
size_t ix_stream_committed(const ix_stream *s);
/* Charge the stream as it goes from now on: `granted` (at least
 * ix_stream_committed) bytes are reserved for it, and grow asks for more;
 * grow NULL: the caller keeps the cap reserved, or does not run the stream
 * (a paused stream, which whoever continues charges anew). */
void ix_stream_charge(ix_stream *s, ix_stream_grow_fn grow, void *ctx, size_t granted);

/* Let go of the reads ahead (their windows and threads: most of what a
 * paused stream over slow storage holds), keeping the stream's place: it
 * reads ahead again from there at its next read, one round trip later,
 * where a stream closed instead is read and decoded again from the entry's
 * start. Waits for a read ahead in progress. Returns the bytes freed
 * (ix_stream_bytes before, less after: ix_stream_committed drops by as
 * much); 0 when it held no reads ahead. */
size_t ix_stream_shed(ix_stream *s);
/* What ix_stream_shed would free now. */
size_t ix_stream_sheddable(const ix_stream *s);
/* Reads ahead stop at file offset `offset` (0: at the entry's end),
 * rounded up to whole windows, where a caller knows its stream pauses (the
 * start of the next unit it keeps nowhere: ix_stream_mark.body_offset; the
 * end of the next unit it frames): reading ahead past it fetches bytes the
 * stream is let go before using, and a paused stream holds them. Reads
 * ahead open already are not cut, but go on to a later stop without a
 * break. A stream that reads on past the stop reads the bytes before it
 * from its reads ahead, then reads ahead again from there (to a later stop
 * set meanwhile, else to the entry's end; a round trip later): only the
 * pace differs. */
void ix_stream_ahead_until(ix_stream *s, uint64_t offset);

/* Release everything. Returns the bytes the stream read from storage ahead
 * and let go without using them (reads ahead shed, stopped or closed before
 * their end): never in *bytes_read, which counts what the stream consumed,
 * so a caller that reports what was read from storage adds them. NULL: 0. */
uint64_t ix_stream_close(ix_stream *s);

#endif
