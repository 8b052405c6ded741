/* ix_s3_parse.h — the pure parts of the S3 store (ix_s3.h): the dataset's
 * URL, URI encoding for signed requests, the ListObjectsV2 and error
 * documents, the shared credentials file, and an ETag's change token.
 * No I/O, no state; every function is thread-safe.
 *
 * Everything a server sends is untrusted: the XML parser here is a small
 * purpose-built one for S3's flat documents (elements without attributes
 * inside the root, text with the five named entities and numeric character
 * references). It looks for an element by its exact open and close tags
 * inside the parent's span, never reads outside the buffer it is given,
 * bounds every field it keeps (keys IX_S3_MAX_KEY bytes, ETags and codes
 * IX_S3_MAX_ETAG, tokens IX_S3_MAX_TOKEN), parses sizes strictly (decimal
 * digits, no overflow), and refuses a document that is not what S3 sends
 * (a Contents without Key or Size, a key with a NUL or control byte, an
 * unknown entity) with a message saying what was wrong.
 */
#ifndef IX_S3_PARSE_H
#define IX_S3_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "pq_error.h"

#define IX_S3_MAX_KEY 4096   /* S3's own limit is 1024 bytes */
#define IX_S3_MAX_ETAG 256
#define IX_S3_MAX_TOKEN 8192

/* s3://BUCKET[/PREFIX]: *bucket (1 to 255 of [A-Za-z0-9._-]) and *prefix,
 * "" or ending in one '/' (s3://b/data lists the keys under data/), both
 * malloc'ed. Refuses an empty bucket, other characters, control bytes and
 * "//" in the prefix. */
int ix_s3_parse_url(const char *dataset, char **bucket, char **prefix, pq_error *err);

/* The URI encoding SigV4 signs: every byte but A-Z a-z 0-9 - _ . ~ (and '/'
 * when keep_slash) as %XX with upper-case hex. Writes at most cap bytes
 * with a NUL (cap > 0) and returns the length the whole encoding needs. */
size_t ix_s3_encode(char *out, size_t cap, const char *s, int keep_slash);

typedef struct ix_s3_object {
    char *key;  /* decoded; malloc'ed */
    uint64_t size;
    char *etag; /* decoded, quotes stripped; malloc'ed, "" if the server sent none */
} ix_s3_object;

typedef struct ix_s3_listing {
    ix_s3_object *objects;
    size_t count, cap;
    int truncated;      /* IsTruncated was true: ask again with next_token */
    char *next_token;   /* NextContinuationToken (malloc'ed), NULL if none */
} ix_s3_listing;

/* Parse one ListObjectsV2 response page and append its objects to *out (in
 * the document's order); sets truncated and next_token from this page (a
 * truncated page without a token is an error). On error *out keeps what
 * earlier pages gave. */
int ix_s3_list_parse(const char *xml, size_t len, ix_s3_listing *out, pq_error *err);
void ix_s3_listing_free(ix_s3_listing *l);

/* An S3 error document's Code and Message, decoded, made printable (other
 * bytes become '?') and cut to fit; "" for what is missing or malformed. */
void ix_s3_error_parse(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                       size_t msg_cap);

/* The keys of [profile] in an AWS shared credentials file's text (INI:
 * "key = value" lines; '#' and ';' comments). Returns 1 if the profile
 * has aws_access_key_id and aws_secret_access_key (each malloc'ed, and the
 * session token if any, else NULL), 0 if not (nothing set), -1 out of memory. */
int ix_s3_profile_parse(const char *text, const char *profile, char **key_id, char **secret,
                        char **token);

/* An ETag as the change token ix_store.h keeps in st_mtim: two independent
 * 64-bit FNV-1a hashes of it (quotes stripped), as seconds (62 bits) and
 * nanoseconds (below 10^9). "" gives 0, 0. */
void ix_s3_etag_token(const char *etag, int64_t *sec, int64_t *nsec);

#endif
