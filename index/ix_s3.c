/* The S3 store. Why libcurl: it is in Debian (libcurl4-openssl-dev), it
 * signs SigV4 itself (CURLOPT_AWS_SIGV4, 7.75+), keeps connections alive
 * per handle, verifies TLS by default and reports resets and timeouts as
 * distinct codes: what remains here is S3's protocol (URLs, ranges, the
 * listing, error documents) and the retry policy, not HTTP or crypto. */
#include "ix_s3.h"

#include <assert.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ix_s3_parse.h"

#define S3_TRIES 8
#define S3_FIRST_US 50000L
#define S3_MAX_US 2000000L
#define LIST_PAGE_MAX_BYTES (64u << 20) /* a page of 1,000 keys is a few hundred KiB */
#define LIST_MAX_PAGES 1000000
#define ERROR_BODY_MAX 8192
#define CREDENTIALS_FILE_MAX (1u << 20)
#define CONNECT_TIMEOUT_MS 10000L
#define STALL_SECONDS 30L /* a transfer moving no byte this long is cut (a timeout: retried) */
/* libcurl's receive buffer: its default of 16 KiB calls on_body (and recv)
 * at least 64 times per MiB of a ranged GET; 512 KiB lets one call take
 * what the socket holds. One per connection (IDLE_KEEP bounds them). */
#define RECV_BUFFER_BYTES (512L << 10)
/* Connections (threads reading) at most in the mount's passes, against 512
 * reads in flight for files (IX_IO_DEPTH). A cold mount of 1,000 small
 * objects from the local gateway, with 50 ms added per request: 1.3-2.2 s
 * at 512, 1.2-1.6 s at 128, 1.8-2.2 s at 64, 3.8 s at 32; 0.7-1.0 s at all
 * of them without the delay (bench/results/s3.md). */
#define S3_MOUNT_CONNECTIONS 128
/* A streamed page's reads (ix_store.h): 2 MiB a round trip, against 256 KiB
 * for files. Charged like any stream window (pq_stream.h's bound). */
#define S3_STREAM_READ_BYTES ((size_t)2 << 20)

typedef struct s3_object {
    char *key;
    uint64_t size;
    char *etag;          /* quotes stripped; "" if the server sent none */
    int64_t tok_sec, tok_nsec; /* ix_s3_etag_token */
} s3_object;

typedef struct s3_store s3_store;

/* A thread's connection: one libcurl handle, reused by every request the
 * thread makes. When the thread ends it stays open, idle, for the next
 * thread that asks (page streams read ahead on threads of their own, a
 * stream's life long: without this each would open its connections anew,
 * a TLS handshake each over https), up to IDLE_KEEP idle ones. */
typedef struct conn {
    s3_store *s;
    CURL *h;
    int idle; /* no thread has it (guarded by the store's lock) */
} conn;

#define IDLE_KEEP 64

struct s3_store {
    ix_store base;
    char *bucket, *prefix; /* prefix "" or ending in '/' */
    char *base_url;      /* an object's URL is base_url/KEY */
    int path_style;
    char *sigv4;         /* "aws:amz:REGION:s3"; NULL: no_sign */
    char *key_id, *secret, *token_header; /* NULL with no_sign; token_header may be NULL */
    const char *ca_bundle; /* AWS_CA_BUNDLE or NULL */
    s3_object *objects;  /* sorted by key; written once, by list */
    size_t count;
    pthread_key_t conn_key;
    pthread_mutex_t lock; /* guards conns, nconns, conns_cap, nidle, and conn.idle */
    conn **conns;        /* every open connection, idle or not */
    size_t nconns, conns_cap, nidle;
};

/* libcurl, loaded when the first s3:// dataset is opened (dlopen): linked
 * in, it and the 26 libraries it pulls (TLS, HTTP/2, LDAP, Kerberos...)
 * cost every process 5.7 MiB of resident memory at start, local datasets
 * too (youmufs --version: 4.0 MiB without, 9.7 with), which the memory
 * bound of a mount over files (DESIGN.md, invariant 4) has no room for.
 * Written once (pthread_once), read-only after. */
static struct curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*init)(void);
    void (*cleanup)(CURL *h);
    void (*reset)(CURL *h);
    CURLcode (*setopt)(CURL *h, CURLoption option, ...);
    CURLcode (*perform)(CURL *h);
    CURLcode (*getinfo)(CURL *h, CURLINFO info, ...);
    const char *(*strerror)(CURLcode rc);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} api;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_problem[256]; /* why libcurl cannot be used; "" if it can */

static void curl_init(void)
{
    void *lib = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(curl_problem, sizeof curl_problem, "%s (install libcurl4)", dlerror());
        return;
    }
    /* dlsym's void * to function pointers: POSIX requires it to work. */
#define LOAD(field, symbol)                                                              \
    do {                                                                                 \
        void *f = dlsym(lib, symbol);                                                    \
        if (!f) {                                                                        \
            snprintf(curl_problem, sizeof curl_problem, "%s has no %s", LIBCURL_SONAME,  \
                     symbol);                                                            \
            return;                                                                      \
        }                                                                                \
        memcpy(&api.field, &f, sizeof f);                                                \
    } while (0)
    LOAD(global_init, "curl_global_init");
    LOAD(init, "curl_easy_init");
    LOAD(cleanup, "curl_easy_cleanup");
    LOAD(reset, "curl_easy_reset");
    LOAD(setopt, "curl_easy_setopt");
    LOAD(perform, "curl_easy_perform");
    LOAD(getinfo, "curl_easy_getinfo");
    LOAD(strerror, "curl_easy_strerror");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
#undef LOAD
    CURLcode rc = api.global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        snprintf(curl_problem, sizeof curl_problem, "libcurl does not start: %s",
                 api.strerror(rc));
}

/* ---- connections ---------------------------------------------------- */

static void conn_release(void *p)
{
    conn *c = p;
    s3_store *s = c->s;
    pthread_mutex_lock(&s->lock);
    if (s->nidle < IDLE_KEEP) {
        c->idle = 1;
        s->nidle++;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    for (size_t i = 0; i < s->nconns; i++)
        if (s->conns[i] == c) {
            s->conns[i] = s->conns[--s->nconns];
            break;
        }
    pthread_mutex_unlock(&s->lock);
    api.cleanup(c->h);
    free(c);
}

static conn *thread_conn(s3_store *s)
{
    conn *c = pthread_getspecific(s->conn_key);
    if (c)
        return c;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; s->nidle > 0 && i < s->nconns; i++)
        if (s->conns[i]->idle) {
            c = s->conns[i];
            c->idle = 0;
            s->nidle--;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    if (c) {
        if (pthread_setspecific(s->conn_key, c) == 0)
            return c;
        conn_release(c); /* idle again */
        return NULL;
    }
    if (!(c = calloc(1, sizeof *c)) || !(c->h = api.init())) {
        free(c);
        return NULL;
    }
    c->s = s;
    pthread_mutex_lock(&s->lock);
    int ok = s->nconns < s->conns_cap;
    if (!ok) {
        size_t cap = s->conns_cap ? s->conns_cap * 2 : 16;
        conn **grown = realloc(s->conns, cap * sizeof *grown);
        if ((ok = grown != NULL)) {
            s->conns = grown;
            s->conns_cap = cap;
        }
    }
    if (ok)
        s->conns[s->nconns++] = c;
    pthread_mutex_unlock(&s->lock);
    if (!ok || pthread_setspecific(s->conn_key, c) != 0) {
        if (ok) {
            pthread_setspecific(s->conn_key, NULL);
            conn_release(c);
        } else {
            api.cleanup(c->h);
            free(c);
        }
        return NULL;
    }
    return c;
}

/* ---- one request ---------------------------------------------------- */

typedef struct response {
    CURL *h;
    long status;         /* of the last response head */
    /* a 2xx body: into buf[0..cap) (a range), or a growing buffer (grow) */
    char *buf;
    size_t cap, len;
    int grow;
    int overflow;        /* more body than asked for: the transfer was cut */
    char err_body[ERROR_BODY_MAX]; /* a non-2xx body, cut */
    size_t err_len;
    char etag[IX_S3_MAX_ETAG + 3];
    char content_range[128];
} response;

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    response *r = ud;
    size_t bytes = size * n;
    if (!r->status)
        api.getinfo(r->h, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status < 200 || r->status > 299) {
        size_t room = sizeof r->err_body - 1 - r->err_len;
        size_t k = bytes < room ? bytes : room;
        memcpy(r->err_body + r->err_len, data, k);
        r->err_len += k;
        r->err_body[r->err_len] = '\0';
        return bytes;
    }
    if (bytes > r->cap - r->len) {
        if (!r->grow || r->len + bytes > LIST_PAGE_MAX_BYTES) {
            r->overflow = 1;
            return 0;
        }
        size_t cap = r->cap ? r->cap : 64u << 10;
        while (cap - r->len < bytes)
            cap *= 2;
        char *grown = realloc(r->buf, cap);
        if (!grown) {
            r->overflow = 1;
            return 0;
        }
        r->buf = grown;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, bytes);
    r->len += bytes;
    return bytes;
}

/* Keep "Name: value" of a header line (without CR LF, cut to fit). */
static void keep_header(const char *line, size_t n, const char *name, char *out, size_t cap)
{
    size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    response *r = ud;
    size_t bytes = size * n;
    if (bytes >= 5 && memcmp(data, "HTTP/", 5) == 0) { /* a new response head */
        r->status = 0;
        r->etag[0] = r->content_range[0] = '\0';
    }
    keep_header(data, bytes, "ETag", r->etag, sizeof r->etag);
    keep_header(data, bytes, "Content-Range", r->content_range, sizeof r->content_range);
    return bytes;
}

static CURLcode perform(s3_store *s, CURL *h, const char *url, struct curl_slist *headers,
                        response *r, char *curl_err)
{
    api.reset(h); /* keeps the live connection */
    r->h = h;
    curl_err[0] = '\0';
    api.setopt(h, CURLOPT_URL, url);
    api.setopt(h, CURLOPT_HTTPGET, 1L);
    api.setopt(h, CURLOPT_NOSIGNAL, 1L);
    api.setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    api.setopt(h, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    api.setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    api.setopt(h, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
    api.setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    api.setopt(h, CURLOPT_BUFFERSIZE, RECV_BUFFER_BYTES);
    api.setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    api.setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    api.setopt(h, CURLOPT_WRITEDATA, r);
    api.setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    api.setopt(h, CURLOPT_HEADERDATA, r);
    api.setopt(h, CURLOPT_HTTPHEADER, headers);
    if (s->ca_bundle)
        api.setopt(h, CURLOPT_CAINFO, s->ca_bundle);
    if (s->sigv4) {
        api.setopt(h, CURLOPT_AWS_SIGV4, s->sigv4);
        api.setopt(h, CURLOPT_USERNAME, s->key_id);
        api.setopt(h, CURLOPT_PASSWORD, s->secret);
    }
    CURLcode rc = api.perform(h);
    api.getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    return rc;
}

static int transient_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default:
        return 0;
    }
}

static int transient_status(long status)
{
    return status == 429 || (status >= 500 && status <= 599);
}

/* Replace every occurrence of a credential in buf with "[redacted]": a
 * server's message may quote what it was sent. */
static void scrub(const s3_store *s, char *buf, size_t cap)
{
    const char *secrets[2] = { s->key_id, s->secret };
    static const char mark[] = "[redacted]";
    for (int i = 0; i < 2; i++) {
        size_t n = secrets[i] ? strlen(secrets[i]) : 0;
        char *at;
        while (n && (at = strstr(buf, secrets[i])) != NULL) {
            size_t before = (size_t)(at - buf), rest = strlen(at + n);
            if (before + sizeof mark > cap) { /* no room for the mark: cut the line there */
                *at = '\0';
                break;
            }
            if (before + sizeof mark + rest > cap)
                rest = cap - before - sizeof mark;
            memmove(at + sizeof mark - 1, at + n, rest);
            memcpy(at, mark, sizeof mark - 1);
            at[sizeof mark - 1 + rest] = '\0';
        }
    }
    if (s->token_header) { /* the header is "x-amz-security-token: TOKEN" */
        const char *token = strchr(s->token_header, ' ') + 1;
        char *at;
        while (*token && (at = strstr(buf, token)) != NULL)
            memset(at, '*', strlen(token));
    }
}

/* What a failed request came to, as a line naming the object (key NULL:
 * none, the caller names what it asked for), and the errno that classes it
 * (EAGAIN: try again). */
static int describe(const s3_store *s, const char *key, CURLcode rc, const response *r,
                    const char *curl_err, char *why, size_t why_len)
{
    int e;
    if (rc != CURLE_OK) {
        e = transient_curl(rc) ? EAGAIN : EIO;
        snprintf(why, why_len, "%s%s%s%s%s%s", key ? "s3://" : "", key ? s->bucket : "",
                 key ? "/" : "", key ? key : "", key ? ": " : "", api.strerror(rc));
        if (curl_err[0])
            snprintf(why + strlen(why), why_len - strlen(why), ": %s", curl_err);
    } else {
        char code[96], msg[256];
        ix_s3_error_parse(r->err_body, r->err_len, code, sizeof code, msg, sizeof msg);
        e = transient_status(r->status) ? EAGAIN
            : r->status == 403          ? EACCES
            : r->status == 404          ? ENOENT
                                        : EIO;
        snprintf(why, why_len, "%s%s%s%s%sthe server answered %ld%s%s%s%s", key ? "s3://" : "",
                 key ? s->bucket : "", key ? "/" : "", key ? key : "", key ? ": " : "",
                 r->status, code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
    }
    scrub(s, why, why_len);
    return e;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *h, int *oom)
{
    struct curl_slist *grown = api.slist_append(l, h);
    if (!grown)
        *oom = 1;
    return grown ? grown : l;
}

/* The headers every signed request carries: S3 wants the payload's hash,
 * and a GET has none to sign (libcurl 7.88 signs the headers it is given
 * but adds this one only from 8.x on); the session token, if any. An
 * unsigned request (no_sign) carries neither: a server checks a hash it is
 * sent against the body it got, and "UNSIGNED-PAYLOAD" is no hash (the
 * Versity gateway answers 400 XAmzContentSHA256Mismatch). NULL is an empty
 * list. */
static struct curl_slist *common_headers(const s3_store *s, int *oom)
{
    if (!s->sigv4)
        return NULL;
    struct curl_slist *l = add_header(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD", oom);
    return s->token_header ? add_header(l, s->token_header, oom) : l;
}

/* ---- reads ---------------------------------------------------------- */

static char *object_url(const s3_store *s, const char *key)
{
    size_t n = ix_s3_encode(NULL, 0, key, 1);
    size_t base = strlen(s->base_url);
    char *url = malloc(base + 1 + n + 1);
    if (!url)
        return NULL;
    memcpy(url, s->base_url, base);
    url[base] = '/';
    ix_s3_encode(url + base + 1, n + 1, key, 1);
    return url;
}

static int same_etag(const char *header, const char *listed)
{
    size_t n = strlen(header);
    if (n >= 2 && header[0] == '"' && header[n - 1] == '"')
        header++, n -= 2;
    return strlen(listed) == n && memcmp(header, listed, n) == 0;
}

static ssize_t fail(int e)
{
    errno = e;
    return -1;
}

/* Check a 2xx answer to the range [offset, offset + len) of o. 0 if good,
 * else an errno with why set. */
static int check_range(const s3_store *s, const s3_object *o, const response *r,
                       uint64_t offset, size_t len, char *why, size_t why_len)
{
    if (r->etag[0] && o->etag[0] && !same_etag(r->etag, o->etag)) {
        snprintf(why, why_len, "s3://%s/%s: changed since mount (its ETag is no longer the "
                 "one indexed); not served", s->bucket, o->key);
        return EIO;
    }
    if (r->status == 206) {
        unsigned long long first, last, total;
        if (sscanf(r->content_range, "bytes %llu-%llu/%llu", &first, &last, &total) != 3 ||
            first != offset || last < first || total != o->size) {
            snprintf(why, why_len, "s3://%s/%s: the server answered the range %llu-%llu with "
                     "Content-Range \"%.64s\" (object of %llu bytes at mount)", s->bucket,
                     o->key, (unsigned long long)offset, (unsigned long long)(offset + len - 1),
                     r->content_range, (unsigned long long)o->size);
            return total != o->size ? EIO : EAGAIN;
        }
        return 0;
    }
    if (r->status == 200 && offset == 0 && len == o->size)
        return 0; /* the whole object, without a range */
    snprintf(why, why_len, "s3://%s/%s: the server answered a range request with status %ld",
             s->bucket, o->key, r->status);
    return EIO;
}

static ssize_t s3_pread(ix_store *base, int handle, void *buf, size_t len, uint64_t offset,
                        char *why, size_t why_len)
{
    s3_store *s = (s3_store *)base;
    assert(handle >= 0 && (size_t)handle < s->count);
    const s3_object *o = &s->objects[handle];
    if (len == 0 || offset >= o->size)
        return 0;
    if (len > o->size - offset)
        len = (size_t)(o->size - offset);
    conn *c = thread_conn(s);
    char *url = c ? object_url(s, o->key) : NULL;
    char range[64], match[IX_S3_MAX_ETAG + 16];
    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)offset,
             (unsigned long long)(offset + len - 1));
    snprintf(match, sizeof match, "If-Match: \"%s\"", o->etag);
    int oom = !url;
    struct curl_slist *headers = add_header(common_headers(s, &oom), range, &oom);
    if (o->etag[0])
        headers = add_header(headers, match, &oom);
    if (oom) {
        api.slist_free_all(headers);
        free(url);
        snprintf(why, why_len, "out of memory for a request");
        return fail(ENOMEM);
    }
    response *r = malloc(sizeof *r);
    if (!r) {
        api.slist_free_all(headers);
        free(url);
        snprintf(why, why_len, "out of memory for a request");
        return fail(ENOMEM);
    }
    *r = (response){ .buf = buf, .cap = len };
    char curl_err[CURL_ERROR_SIZE];
    CURLcode rc = perform(s, c->h, url, headers, r, curl_err);
    api.slist_free_all(headers);
    free(url);
    int e = 0;
    ssize_t got = -1;
    if (rc == CURLE_WRITE_ERROR && r->overflow) {
        snprintf(why, why_len, "s3://%s/%s: the server sent more than the %zu bytes asked for",
                 s->bucket, o->key, len);
        e = EIO;
    } else if (rc == CURLE_OK && (r->status == 412 || r->status == 416)) {
        snprintf(why, why_len, "s3://%s/%s: changed since mount (the server answered %ld to "
                 "a read of the object as indexed); not served", s->bucket, o->key, r->status);
        e = EIO;
    } else if (rc == CURLE_OK && r->status >= 200 && r->status <= 299) {
        e = check_range(s, o, r, offset, len, why, why_len);
        if (!e && r->len == 0) {
            snprintf(why, why_len, "s3://%s/%s: an empty answer to a read", s->bucket, o->key);
            e = EAGAIN;
        }
        if (!e)
            got = (ssize_t)r->len;
    } else if (r->len > 0 && r->status == 206 && transient_curl(rc) &&
               check_range(s, o, r, offset, len, why, why_len) == 0) {
        got = (ssize_t)r->len; /* cut mid-body: keep what came, ask for the rest */
    } else {
        e = describe(s, o->key, rc, r, curl_err, why, why_len);
    }
    free(r);
    return got >= 0 ? got : fail(e);
}

/* ---- the listing ---------------------------------------------------- */

static char *list_url(const s3_store *s, const char *token)
{
    size_t nt = token ? ix_s3_encode(NULL, 0, token, 0) : 0;
    size_t np = ix_s3_encode(NULL, 0, s->prefix, 0);
    size_t n = strlen(s->base_url) + nt + np + 64;
    char *url = malloc(n), *p;
    if (!url)
        return NULL;
    /* The query's parameters in the order SigV4's canonical query sorts them. */
    p = url + sprintf(url, "%s%s?", s->base_url, s->path_style ? "" : "/");
    if (token) {
        p += sprintf(p, "continuation-token=");
        p += ix_s3_encode(p, nt + 1, token, 0);
        *p++ = '&';
    }
    p += sprintf(p, "list-type=2&prefix=");
    ix_s3_encode(p, np + 1, s->prefix, 0);
    return url;
}

/* One page of the listing into l, retried like a read. */
static int list_page(s3_store *s, conn *c, const char *token, ix_s3_listing *l,
                     const char *dataset, pq_error *err)
{
    char *url = list_url(s, token);
    int oom = !url;
    struct curl_slist *headers = common_headers(s, &oom);
    response *r = malloc(sizeof *r);
    if (oom || !r) {
        free(url);
        free(r);
        api.slist_free_all(headers);
        return pq_error_set(err, "out of memory listing %s", dataset);
    }
    char why[512], curl_err[CURL_ERROR_SIZE];
    int rc = -1;
    for (int failed = 0;;) {
        *r = (response){ .grow = 1 };
        CURLcode cc = perform(s, c->h, url, headers, r, curl_err);
        if (cc == CURLE_OK && r->status == 200) {
            rc = ix_s3_list_parse(r->buf, r->len, l, err);
            if (rc < 0)
                pq_error_prefix(err, "%s: ", dataset);
            break;
        }
        int e = cc == CURLE_WRITE_ERROR && r->overflow
                    ? (snprintf(why, sizeof why, "a listing page larger than %u bytes",
                                LIST_PAGE_MAX_BYTES), EIO)
                    : describe(s, NULL, cc, r, curl_err, why, sizeof why);
        free(r->buf);
        r->buf = NULL;
        if (e != EAGAIN || ++failed >= s->base.retry.tries) {
            pq_error_set(err, "%s: cannot list the objects: %s%s", dataset, why,
                         e == EAGAIN ? " (after retries)" : "");
            break;
        }
        ix_sleep_us(ix_retry_wait_us(&s->base.retry, failed));
    }
    free(r->buf);
    free(r);
    free(url);
    api.slist_free_all(headers);
    return rc;
}

/* A key the dataset holds: PREFIX, then a name ending in .parquet with no
 * component starting with '.' (hidden, as in a directory). */
static int wanted(const s3_store *s, const char *key)
{
    size_t pl = strlen(s->prefix), n = strlen(key);
    if (strncmp(key, s->prefix, pl) != 0 || n <= pl + 8 || strcmp(key + n - 8, ".parquet") != 0)
        return 0;
    for (const char *c = key + pl; c; c = strchr(c, '/')) {
        if (*c == '/')
            c++;
        if (*c == '.' || *c == '\0')
            return 0;
    }
    return 1;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const s3_object *)a)->key, ((const s3_object *)b)->key);
}

static int s3_list(ix_store *base, char ***paths, size_t *count, pq_error *err)
{
    s3_store *s = (s3_store *)base;
    char dataset[600];
    snprintf(dataset, sizeof dataset, "s3://%s/%s", s->bucket, s->prefix);
    conn *c = thread_conn(s);
    if (!c)
        return pq_error_set(err, "out of memory for a connection");
    ix_s3_listing l = { 0 };
    char *token = NULL;
    int rc = 0;
    for (int page = 0; rc == 0; page++) {
        if (page >= LIST_MAX_PAGES) {
            rc = pq_error_set(err, "%s: the listing goes on past %d pages", dataset, page);
            break;
        }
        rc = list_page(s, c, token, &l, dataset, err);
        if (rc < 0 || !l.truncated)
            break;
        if (token && strcmp(token, l.next_token) == 0) {
            rc = pq_error_set(err, "%s: the server gave the same continuation token twice",
                              dataset);
            break;
        }
        free(token);
        token = l.next_token;
        l.next_token = NULL;
    }
    free(token);
    size_t kept = 0;
    s3_object *objects = rc == 0 ? calloc(l.count ? l.count : 1, sizeof *objects) : NULL;
    if (rc == 0 && !objects)
        rc = pq_error_set(err, "out of memory listing %s", dataset);
    int weak = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        ix_s3_object *o = &l.objects[i];
        if (!wanted(s, o->key))
            continue;
        objects[kept] = (s3_object){ o->key, o->size, o->etag, 0, 0 };
        ix_s3_etag_token(o->etag, &objects[kept].tok_sec, &objects[kept].tok_nsec);
        weak |= o->etag[0] == '\0';
        o->key = o->etag = NULL; /* now the store's */
        kept++;
    }
    ix_s3_listing_free(&l);
    if (rc == 0 && kept)
        qsort(objects, kept, sizeof *objects, by_key);
    for (size_t i = 1; rc == 0 && i < kept; i++)
        if (strcmp(objects[i - 1].key, objects[i].key) == 0)
            rc = pq_error_set(err, "%s: the listing names %s twice", dataset, objects[i].key);
    char **out = rc == 0 ? calloc(kept ? kept : 1, sizeof *out) : NULL;
    if (rc == 0 && !out)
        rc = pq_error_set(err, "out of memory listing %s", dataset);
    for (size_t i = 0; rc == 0 && i < kept; i++)
        if (!(out[i] = strdup(objects[i].key)))
            rc = pq_error_set(err, "out of memory listing %s", dataset);
    if (rc < 0) {
        for (size_t i = 0; out && i < kept; i++)
            free(out[i]);
        free(out);
        for (size_t i = 0; objects && i < kept; i++) {
            free(objects[i].key);
            free(objects[i].etag);
        }
        free(objects);
        return -1;
    }
    s->objects = objects;
    s->count = kept;
    s->base.strong_token = !weak;
    *paths = out;
    *count = kept;
    return 0;
}

/* ---- objects -------------------------------------------------------- */

static const char *s3_name(const ix_store *base, const char *path)
{
    return path + strlen(((const s3_store *)base)->prefix);
}

typedef struct name_key {
    const char *name;
    size_t prefix_len;
} name_key;

static int by_name(const void *k, const void *elem)
{
    const name_key *nk = k;
    return strcmp(nk->name, ((const s3_object *)elem)->key + nk->prefix_len);
}

static void fill_stat(const s3_object *o, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = (off_t)o->size;
    st->st_mtim.tv_sec = (time_t)o->tok_sec;
    st->st_mtim.tv_nsec = (long)o->tok_nsec;
}

static int s3_open_object(ix_store *base, const char *name, int *handle, struct stat *st,
                          pq_error *err)
{
    s3_store *s = (s3_store *)base;
    name_key k = { name, strlen(s->prefix) };
    const s3_object *o = bsearch(&k, s->objects, s->count, sizeof *s->objects, by_name);
    *handle = -1;
    if (!o)
        return pq_error_set(err, "s3://%s/%s%s: not in the listing", s->bucket, s->prefix,
                            name);
    if (o->size > (uint64_t)INT64_MAX)
        return pq_error_set(err, "s3://%s/%s: a size of %llu bytes is too large", s->bucket,
                            o->key, (unsigned long long)o->size);
    *handle = (int)(o - s->objects);
    fill_stat(o, st);
    return 0;
}

static int s3_stat(ix_store *base, int handle, struct stat *st)
{
    s3_store *s = (s3_store *)base;
    assert(handle >= 0 && (size_t)handle < s->count);
    fill_stat(&s->objects[handle], st);
    return 0;
}

static void s3_close(ix_store *base, int handle)
{
    (void)base;
    (void)handle; /* an object holds nothing open */
}

static void s3_free(ix_store *base)
{
    s3_store *s = (s3_store *)base;
    /* Every thread that read is done (the index is freed after its readers);
     * a thread still ending may be in conn_release: the lock orders it. */
    pthread_key_delete(s->conn_key); /* no thread starts conn_release after this */
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nconns; i++) {
        api.cleanup(s->conns[i]->h);
        free(s->conns[i]);
    }
    free(s->conns);
    s->conns = NULL;
    s->nconns = 0;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_destroy(&s->lock);
    for (size_t i = 0; i < s->count; i++) {
        free(s->objects[i].key);
        free(s->objects[i].etag);
    }
    free(s->objects);
    free(s->bucket);
    free(s->prefix);
    free(s->base_url);
    free(s->sigv4);
    free(s->key_id);
    free(s->secret);
    free(s->token_header);
    free(s);
}

static const ix_store_ops s3_ops = {
    s3_list, s3_name, s3_open_object, s3_stat, s3_pread, s3_close, s3_free,
};

/* ---- opening -------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* An endpoint URL: http(s)://HOST[:PORT][/PATH], no user info (credentials
 * never travel in a URL), query or fragment, no blank or control byte. */
static int check_endpoint(const char *url, pq_error *err)
{
    const char *host = strncmp(url, "http://", 7) == 0    ? url + 7
                       : strncmp(url, "https://", 8) == 0 ? url + 8
                                                          : NULL;
    if (!host || !*host || *host == '/')
        return pq_error_set(err, "endpoint %.200s: expected http://HOST[:PORT] or "
                            "https://HOST[:PORT]", url);
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '?' || *c == '#')
            return pq_error_set(err, "endpoint %.200s: blank, control byte, '?' or '#' in the "
                                "URL", url);
    const char *slash = strchr(host, '/');
    const char *at = strchr(host, '@');
    if (at && (!slash || at < slash))
        return pq_error_set(err, "endpoint: user information in the URL is refused "
                            "(credentials come from the AWS_* variables or ~/.aws/credentials)");
    return 0;
}

static int check_region(const char *r, pq_error *err)
{
    size_t n = strlen(r);
    if (n == 0 || n > 64)
        return pq_error_set(err, "region %.80s: expected 1 to 64 characters", r);
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return pq_error_set(err, "region %.80s: expected lower-case letters, digits and "
                                "'-'", r);
    return 0;
}

/* Credentials from the environment, else the profile of the shared
 * credentials file. 0 and all set, or -1 with a message naming where they
 * were looked for (never what they are). */
static int find_credentials(s3_store *s, const char *dataset, pq_error *err)
{
    const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    const char *token = env("AWS_SESSION_TOKEN");
    char *file_token = NULL;
    if (id || secret) {
        if (!id || !secret)
            return pq_error_set(err, "%s: %s is set but %s is not", dataset,
                                id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
        s->key_id = strdup(id);
        s->secret = strdup(secret);
    } else {
        const char *profile = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
        char *path = NULL;
        if (env("AWS_SHARED_CREDENTIALS_FILE"))
            path = strdup(env("AWS_SHARED_CREDENTIALS_FILE"));
        else if (env("HOME") && asprintf(&path, "%s/.aws/credentials", env("HOME")) < 0)
            path = NULL;
        FILE *f = path ? fopen(path, "re") : NULL;
        char *text = f ? malloc(CREDENTIALS_FILE_MAX + 1) : NULL;
        int found = 0;
        if (text) {
            size_t n = fread(text, 1, CREDENTIALS_FILE_MAX, f);
            text[n] = '\0';
            found = ix_s3_profile_parse(text, profile, &s->key_id, &s->secret, &file_token);
            free(text);
        }
        if (f)
            fclose(f);
        if (found <= 0) {
            pq_error_set(err, "%s: no credentials: set AWS_ACCESS_KEY_ID and "
                         "AWS_SECRET_ACCESS_KEY, or give profile [%.64s] keys in %.300s, or "
                         "mount with -o no_sign for a public bucket", dataset, profile,
                         path ? path : "~/.aws/credentials");
            free(path);
            return -1;
        }
        free(path);
        token = file_token;
    }
    if (token && asprintf(&s->token_header, "x-amz-security-token: %s", token) < 0)
        s->token_header = NULL;
    int oom = !s->key_id || !s->secret || (token && !s->token_header);
    free(file_token);
    return oom ? pq_error_set(err, "out of memory") : 0;
}

int ix_s3_open(const char *dataset, const ix_store_options *o, ix_store **out, pq_error *err)
{
    *out = NULL;
    pthread_once(&curl_once, curl_init);
    if (curl_problem[0])
        return pq_error_set(err, "%s: s3:// datasets need libcurl: %s", dataset, curl_problem);
    s3_store *s = calloc(1, sizeof *s);
    if (!s)
        return pq_error_set(err, "out of memory");
    s->base = (ix_store){ &s3_ops, { S3_TRIES, S3_FIRST_US, S3_MAX_US, 1 }, 1,
                          S3_STREAM_READ_BYTES, NULL /* base_url, once made */,
                          S3_MOUNT_CONNECTIONS };
    pthread_mutex_init(&s->lock, NULL);
    if (pthread_key_create(&s->conn_key, conn_release) != 0) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return pq_error_set(err, "no thread-specific key left for connections");
    }
    const char *endpoint = o && o->endpoint ? o->endpoint : env("AWS_ENDPOINT_URL");
    const char *region = o && o->region   ? o->region
                         : env("AWS_REGION") ? env("AWS_REGION")
                         : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
                                                     : "us-east-1";
    s->ca_bundle = env("AWS_CA_BUNDLE");
    int rc = ix_s3_parse_url(dataset, &s->bucket, &s->prefix, err);
    if (rc == 0 && endpoint)
        rc = check_endpoint(endpoint, err);
    if (rc == 0)
        rc = check_region(region, err);
    if (rc == 0 && !(o && o->no_sign)) {
        rc = find_credentials(s, dataset, err);
        if (rc == 0 && asprintf(&s->sigv4, "aws:amz:%s:s3", region) < 0)
            rc = pq_error_set(err, "out of memory");
    }
    if (rc == 0) {
        s->path_style = endpoint != NULL;
        int n = endpoint ? asprintf(&s->base_url, "%.*s/%s",
                                    (int)(strlen(endpoint) - (endpoint[strlen(endpoint) - 1] == '/')),
                                    endpoint, s->bucket)
                         : asprintf(&s->base_url, "https://%s.s3.%s.amazonaws.com", s->bucket,
                                    region);
        if (n < 0) {
            s->base_url = NULL;
            rc = pq_error_set(err, "out of memory");
        }
    }
    if (rc < 0) {
        s3_free(&s->base);
        return -1;
    }
    s->base.origin = s->base_url;
    *out = &s->base;
    return 0;
}
