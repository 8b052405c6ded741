/* ix_s3.h — the S3 store (ix_store.h): a dataset s3://BUCKET[/PREFIX] read
 * straight from object storage with libcurl.
 *
 * Where: -o endpoint=URL (ix_store_options) or AWS_ENDPOINT_URL; with an
 * endpoint, path-style addressing (URL/BUCKET/KEY), else the AWS
 * virtual-hosted name https://BUCKET.s3.REGION.amazonaws.com. Region (for
 * signing): -o region= or AWS_REGION / AWS_DEFAULT_REGION, default
 * us-east-1. TLS peers are verified (libcurl's defaults: the system's CA
 * store, or AWS_CA_BUNDLE when set).
 * Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
 * else the profile AWS_PROFILE (default "default") of
 * AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials); none with
 * no_sign. Requests are signed with SigV4 by libcurl (CURLOPT_AWS_SIGV4).
 * Credentials are kept only in the store and handed to libcurl; no message
 * holds one (a server's message that quotes one has it replaced).
 *
 * Listing: ListObjectsV2 under PREFIX, every page (continuation tokens),
 * keys ending in .parquet with no component starting with '.', sorted by
 * key; a key's name is the key without PREFIX. The listing's ETag is each
 * object's change token (ix_s3_etag_token), its size the size.
 * Reads: ranged GETs with If-Match on the listed ETag; the response's
 * Content-Range and ETag are checked too. An object changed since the
 * listing (412, another ETag, a 416 or 404 for a range that existed)
 * fails the read ("changed since mount"), never serves other bytes.
 * Retries: 5xx, 429, 503 SlowDown, connection failures, resets and
 * timeouts count as transient (EAGAIN): the read, or the listing page, is
 * tried again after exponential backoff with jitter (8 tries in all, 50 ms
 * doubling to 2 s). 403, 404, a missing bucket and bad credentials are
 * final: the message names the bucket and key and what the server said.
 * Connections: one libcurl handle per thread that reads, kept for the
 * thread's life (connection reuse); freed when the thread ends or with
 * the store.
 */
#ifndef IX_S3_H
#define IX_S3_H

#include "ix_store.h"

int ix_s3_open(const char *dataset, const ix_store_options *o, ix_store **out, pq_error *err);

#endif
