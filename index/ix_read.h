/* ix_read.h — reading and decoding one page of the index at run time.
 *
 * The read path's only way to the data: preads of byte ranges the index
 * knows (a page, or a run of consecutive pages read at once), then pq_
 * decoding. Every read is checked against what the index saw (ix_index.h,
 * "Change detection"), so a changed source gives an error, never wrong
 * bytes: the file is fstat'ed before and after the pread (ix_check_file:
 * size, mtime, device and inode must be unchanged; a moved ctime costs one
 * footer check per new ctime); while the ctime stays the index's, a page
 * whose CRC is not known yet gets it from these bytes (a C11 atomic, set
 * once); once the ctime differs, every page read is compared with its CRC.
 * A page whose CRC is unknown then is served on the footer check alone (the
 * limit ix_index.h states). Errors name the file and the page's offset.
 * Thread-safe (pread on shared descriptors, atomics for what is learned).
 */
#ifndef IX_READ_H
#define IX_READ_H

#include <stdint.h>

#include "ix_index.h"
#include "pq_page.h"

/* Read [offset, offset+length) of a source file into buf, checked as above.
 * The range holds the global pages [first_page, first_page + num_pages) of
 * that file (each lies inside it; bytes between them are not checked): the
 * pages whose CRCs are learned or compared. The read goes through
 * ix_pread_exact (ix_pread.h): YOUMUFS_READ_DELAY_US delays it as it delays
 * every read of a source (at mount too), and transient errors are retried
 * a bounded number of times. *bytes_read is increased by length. */
int ix_read_range(const ix_index *ix, uint32_t file, uint64_t offset, void *buf, size_t length,
                  uint64_t first_page, uint32_t num_pages, uint64_t *bytes_read, pq_error *err);

/* Load and decode the dictionary page of a chunk (which must have one),
 * checked like a page against ix_chunk.dict_crc. */
int ix_read_dictionary(const ix_index *ix, uint32_t chunk, pq_dictionary *out,
                       uint64_t *bytes_read, pq_error *err);
/* The same, calling sized(ctx, header) once the page is read and its header
 * parsed, before it is decoded (to charge what the decode will take, from
 * the header's sizes, which are the file's: untrusted). Not called when the
 * read or the header fails. */
typedef void (*ix_dict_sized_fn)(void *ctx, const pq_page_header *h);
int ix_read_dictionary_sized(const ix_index *ix, uint32_t chunk, ix_dict_sized_fn sized,
                             void *ctx, pq_dictionary *out, uint64_t *bytes_read,
                             pq_error *err);

/* Where ix_read_page gets a chunk's dictionary when a page turns out to be
 * dictionary-encoded (writers fall back to PLAIN once a dictionary is full,
 * so many pages of a chunk never need it): get() returns it and a handle
 * that the caller of ix_read_page releases once done with the values. */
typedef struct ix_dict_source {
    int (*get)(void *ctx, uint32_t chunk, const pq_dictionary **dict, void **handle,
               pq_error *err);
    void *ctx;
} ix_dict_source;

/* Decode global page `page` from raw, its ix_page.length bytes (header and
 * body) as read from storage; the values do not point into raw. */
int ix_decode_page(const ix_index *ix, uint64_t page, const uint8_t *raw,
                   const ix_dict_source *dicts, pq_page_values *out, void **dict_handle,
                   pq_error *err);

/* Load and decode global page `page`. *dict_handle is set (else NULL) when
 * the page needed its chunk's dictionary. *bytes_read is increased by what
 * was read. */
int ix_read_page(const ix_index *ix, uint64_t page, const ix_dict_source *dicts,
                 pq_page_values *out, void **dict_handle, uint64_t *bytes_read, pq_error *err);

#endif
