/* ix_index.h — the dataset at mount: its files, the chosen column, and the
 * global page index.
 *
 * ix_build() lists the dataset (a directory: every *.parquet below it, sorted
 * by path; or a single file), reads every footer (in parallel), resolves the
 * column, and builds the global page index: for every data page of the column,
 * in file / row group / page order, where it is, how many rows and records
 * (non-null values) it holds and the exact size of its records in the chosen
 * framing. Page locations come from the OffsetIndex when a chunk has one and
 * from walking the page headers otherwise. Framed sizes need the values, so
 * every page is decoded once at mount (in parallel, with progress on stderr
 * after a second). With a cache directory (ix_cache.h), a file unchanged
 * since an earlier build comes from the persistent index instead: its footer
 * bytes are read to recognise it, but neither parsed nor followed to a page.
 *
 * Global page numbers are the positions in `pages`. ix_locate() maps one to
 * its file and column chunk by layered binary search (files by their first
 * page, then chunks of that file by theirs), as in Youmu's index translation.
 *
 * Change detection. The index keeps every source file open read-only (fd)
 * for the read path and remembers what it saw at mount: size, mtime, device
 * and inode of the descriptor, ctime, the footer's length and CRC-32, and a
 * CRC-32 of every page's raw bytes (ix_page.crc). A source counts as changed
 * when its content may have changed: another size, mtime, device or inode, a
 * footer that no longer matches, or a page whose bytes no longer match its
 * CRC. The ctime alone never fails a read (chmod, chown, touch -a and hard
 * links move it without changing a byte); it only triggers the content
 * checks: while it equals the index's ctime nothing is compared; once it
 * differs the footer is compared once per new ctime (ix_check_file) and every
 * page read is compared with its CRC (ix_read_range, ix_read.h).
 * Limit: a page whose CRC is not known (pages sized from the page index are
 * not read at mount, nor pages sized from their header whose body the page
 * pass's window did not hold; their CRC is learned at their first read while
 * the ctime still equals the index's) can only be checked by the footer when
 * the ctime differs, so a same-size in-place rewrite of such a page with the
 * mtime put back, before the page was ever read, is not seen.
 * A source deleted or renamed over while mounted is still read through the
 * open descriptor: the old inode's bytes, which are the ones indexed.
 *
 * Ownership: ix_build returns a heap index freed by ix_free (which closes the
 * files). After build the index is safe to share across threads and
 * immutable except for three C11 atomics written by readers: ix_page.crc and
 * ix_chunk.dict_crc (set once, from 0, when learned) and
 * ix_file.footer_ok_ctime.
 */
#ifndef IX_INDEX_H
#define IX_INDEX_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ix_claims.h"
#include "ix_frame.h"
#include "ix_store.h"
#include "pq_column.h"
#include "pq_error.h"
#include "pq_meta.h"
#include "pq_stream.h"

typedef struct ix_file {
    char *path;         /* as opened */
    char *name;         /* relative to the dataset root, for messages */
    int fd;             /* its handle in ix_index.store (a descriptor for POSIX) */
    uint64_t size;
    struct timespec mtime; /* the change token (ix_store.h): the mtime, or an ETag's fingerprint */
    uint64_t dev, ino;  /* of the open descriptor, at mount */
    /* A ctime (ns) at which the file held the bytes the index describes: its
     * ctime at mount, or for a file from the persistent index the ctime its
     * entry was made at (IX_CTIME_UNKNOWN if that was another inode). No one
     * can set a ctime back: while it is unchanged, so are the bytes. */
    int64_t ctime_ns;
    /* The last ctime (ns) at which the footer was found unchanged (first: the
     * ctime at mount, when it was read). Written by readers. */
    _Atomic int64_t footer_ok_ctime;
    uint32_t footer_len; /* the FileMetaData's length and CRC-32, as read at mount */
    uint32_t footer_crc;
    uint64_t num_rows;
    uint64_t first_row;  /* global row number of the file's first row */
    uint64_t first_page; /* global page number of the file's first page */
    uint32_t first_chunk;
    uint32_t num_chunks; /* one per row group */
} ix_file;

typedef struct ix_chunk {
    uint32_t file;
    uint32_t row_group;
    pq_column_desc desc;
    int64_t dict_offset;  /* file offset of the dictionary page header, -1 if none */
    uint32_t dict_length; /* header + body */
    ix_dict_claims dict_claims; /* its header's, when the page pass read it (ix_claims.h) */
    ix_chunk_bounds bounds; /* what its pages may claim: checked at every read (ix_claims.h) */
    _Atomic uint32_t dict_crc; /* of the dictionary page's bytes, as ix_page.crc */
    int has_offset_index;
    int cut;              /* its entries of many records are cut into units (above) */
    uint64_t first_row;
    uint64_t first_page;
    uint32_t num_pages;
} ix_chunk;

typedef struct ix_page {
    uint64_t offset;    /* file offset of the page header */
    uint64_t first_row; /* global row number of the page's first row */
    uint64_t framed;    /* bytes of the page's records in the mount's framing */
    uint32_t length;    /* header + compressed body */
    uint32_t rows;
    uint32_t records;   /* records: non-null rows */
    /* ix_page_crc of the page's raw bytes [offset, offset+length), or 0: not
     * known yet. Computed by the page pass for the pages it reads; learned at
     * the first read for the others (ix_read.h). In the struct's tail padding:
     * the page entry stays 40 bytes. */
    _Atomic uint32_t crc;
} ix_page;

/* Shuffle units (shuffle/sh_units.h). An entry of more than IX_CUT_RECORDS
 * records, in a chunk whose entries' record sizes are known (ix_chunk.cut:
 * measured by the page pass, or all alike), is cut into ix_units_of(entry)
 * units of consecutive records, split as evenly as possible
 * (ix_unit_first_record); ix_index.unit_bytes holds the framed bytes of
 * every unit of every cut entry, in entry order. The rule is fixed (not
 * derived from options), so a persistent index serves every mount. The read
 * path frames a unit from its page decoded whole, or streamed when the page
 * is large (ix_stream.h), parking the page's other units as memory allows;
 * a unit that was not parked streams its page again (fs/yfs_units.h). */
#define IX_CUT_RECORDS 2048
#define IX_UNIT_RECORDS 512

static inline uint32_t ix_units_of(const ix_page *p)
{
    return p->records > IX_CUT_RECORDS ? (p->records + IX_UNIT_RECORDS - 1) / IX_UNIT_RECORDS
                                       : 1;
}

/* Where a stream resumes at the first record of a unit (ix_stream.h, marks),
 * left by the page pass: at every unit but the first of each cut entry whose
 * rows start in a page streamed at mount (large pages: DuckDB's, of 25-125
 * MB), where pq_stream could mark it. A node that reads one part of n then
 * reads its units' bytes from the first epoch on, where without them it
 * streamed every page from its start to reach its units.
 *
 * A list's mark is taken once the entry that starts the unit's first row
 * is read (repetition level 0: only then is the row before it complete),
 * as a stream's own marks are (ix_stream_mark's pending entry): that entry
 * is kept here, its value inline when it has at most IX_UNIT_MARK_VALUE_MAX
 * bytes (a token's 8; a longer one leaves the unit without a mark). */
#define IX_UNIT_MARK_VALUE_MAX 16

typedef struct ix_unit_mark {
    uint64_t body_offset;   /* the mark's SNAPPY block in the file; 0: no mark */
    uint32_t rows, records; /* of the entry, before the mark */
    pq_stream_mark at;
    uint8_t has_pending;    /* lists: the entry read already, below */
    uint8_t has_value;
    uint8_t value_len;      /* <= IX_UNIT_MARK_VALUE_MAX */
    uint16_t rep, def;
    uint8_t value[IX_UNIT_MARK_VALUE_MAX];
} ix_unit_mark;

/* The first record of unit k (k <= units: k == units gives records). */
static inline uint32_t ix_unit_first_record(uint32_t records, uint32_t units, uint32_t k)
{
    return (uint32_t)((uint64_t)records * k / units);
}


/* Reads in flight at mount at most, by default: blocking reads, one per
 * thread, the threads added only while reads wait (ix_parallel_for_growing).
 * 512 reads a first mount of 10,000 small files with 50 ms per read in about
 * 2 s, where 256 took 4 (bench/results/mount_latency.md). */
#define IX_IO_DEPTH 512

typedef struct ix_options {
    const char *dataset;
    const char *column;  /* NULL: the dataset's only string column */
    ix_frame_options frame;
    int threads;         /* >= 1: decode workers at mount (CPU) */
    int io_depth;        /* reads in flight at mount (footers, page indexes, the page
                          * pass: ix_gate.h), >= threads; 0: IX_IO_DEPTH */
    int progress;        /* report progress on stderr after a second */
    int skip_crc;        /* do not verify page CRCs (they are verified where present) */
    uint64_t stream_page_bytes; /* the page pass streams pages whose whole decode would take
                                 * more (ix_scan_chunk); 0: 16 MiB */
    uint64_t mem;          /* the mount's mem=: a page held whole, or a record, may take at
                            * most ix_hold_max(mem) (ix_claims.h); 0: no limit */
    const char *cache_dir; /* persistent index directory (ix_cache.h), NULL for none */
    ix_store_options store; /* an object store's endpoint, region, signing (ix_store.h) */
    /* shards > 1: index only the files of shard `shard` (file k, in path
     * order, is in shard k mod shards) and merge them into the persistent
     * index (`youmufs index --shard`); the index built is of those files
     * alone, with their global row numbers, and is not for mounting. */
    uint32_t shard, shards;
} ix_options;

typedef struct ix_index {
    char *dataset;
    ix_store *store;     /* where the files live (ix_store.h); owned */
    pq_leaf column;      /* the resolved leaf (path, type, levels); several columns: the primary */
    ix_framing framing;
    struct ix_column_set *columns; /* several columns (ix_others.h), else NULL; owned */
    int verify_crc;      /* check page CRCs when reading */
    uint64_t mem;        /* ix_options.mem: what pages read whole may hold (ix_claims.h) */

    uint32_t num_files;
    ix_file *files;
    uint32_t num_chunks;
    ix_chunk *chunks;
    uint64_t num_pages;
    ix_page *pages;

    uint64_t num_rows;
    uint64_t num_records;
    uint64_t framed_bytes;   /* sum of pages[].framed: the whole epoch's size */
    uint64_t num_units;
    uint64_t *unit_bytes;    /* the shuffle units of cut entries, in entry order (above) */
    ix_unit_mark *unit_marks; /* num_units entries, unit_bytes' order; NULL: none made */
    uint64_t bytes_scanned;  /* bytes read from storage while building */
    int offset_index_chunks; /* chunks whose pages came from an OffsetIndex */
    int metadata_sized_chunks; /* ... and whose sizes came from it too: no page decoded */
    uint64_t header_sized_pages; /* pages sized from their header alone, not decoded */
    uint64_t streamed_pages; /* pages decoded entry by entry at mount, not whole */
    double seconds_footers;  /* wall time to list files and read footers */
    double seconds_pages;    /* wall time of the page pass */
    uint32_t files_cached;   /* files whose pages came from the persistent index */
    char cache_note[PQ_ERROR_MAX]; /* why the persistent index was not used or saved, or "" */
} ix_index;

int ix_build(const ix_options *opts, ix_index **out, pq_error *err);
/* The reads ix_build keeps in flight: opts->io_depth, else IX_IO_DEPTH or
 * the store's max_reads (ix_store.h) if lower; at least opts->threads. */
int ix_io_depth(const ix_options *opts, const ix_store *store);
void ix_free(ix_index *ix);

/* Layered binary search: the chunk (and through it the file) holding global
 * page `page` (< num_pages). */
uint32_t ix_locate(const ix_index *ix, uint64_t page);

/* Whether the file may still hold the bytes the index describes (fstat of
 * its descriptor, and one read of its footer per new ctime): 0 if its ctime
 * is the index's (nothing else to check); 1 if the ctime moved but size,
 * mtime, device, inode and footer are unchanged (pages read must then be
 * compared with their CRCs); -1 with a message naming the file ("changed
 * since mount") otherwise. Thread-safe. */
int ix_check_file(const ix_index *ix, uint32_t file, pq_error *err);

/* ctime_ns of a file when no ctime at which it held the indexed bytes is known. */
#define IX_CTIME_UNKNOWN INT64_MIN

/* st_ctim as ns, the form ix_file keeps it in. */
int64_t ix_ctime_ns(const struct timespec *t);

/* The CRC-32 (zlib's crc32) of len bytes as ix_page.crc keeps it: 0 means
 * "not known", so a CRC of 0 is kept as 1 (one more collision in 2^32). */
uint32_t ix_page_crc(const uint8_t *bytes, size_t len);

/* Heap bytes of the index (for memory accounting and index.json). */
uint64_t ix_memory_bytes(const ix_index *ix);

#endif
