#include "ix_s3_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ix_s3_parse_url(const char *dataset, char **bucket, char **prefix, pq_error *err)
{
    *bucket = *prefix = NULL;
    if (strncmp(dataset, "s3://", 5) != 0)
        return pq_error_set(err, "%s: not an s3:// URL", dataset);
    const char *b = dataset + 5, *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0 || blen > 255)
        return pq_error_set(err, "%s: the bucket name must have 1 to 255 characters", dataset);
    for (size_t i = 0; i < blen; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return pq_error_set(err, "%s: the bucket name may hold letters, digits, '.', '-' "
                                "and '_' only", dataset);
    }
    const char *p = slash ? slash + 1 : "";
    size_t plen = strlen(p);
    for (size_t i = 0; i < plen; i++) {
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return pq_error_set(err, "%s: control character in the prefix", dataset);
        if (p[i] == '/' && (i == 0 || p[i - 1] == '/') )
            return pq_error_set(err, "%s: empty path component in the prefix", dataset);
    }
    if (plen > IX_S3_MAX_KEY)
        return pq_error_set(err, "%s: prefix longer than %d bytes", dataset, IX_S3_MAX_KEY);
    int add_slash = plen > 0 && p[plen - 1] != '/';
    *bucket = strndup(b, blen);
    *prefix = malloc(plen + 2);
    if (!*bucket || !*prefix) {
        free(*bucket);
        free(*prefix);
        *bucket = *prefix = NULL;
        return pq_error_set(err, "out of memory");
    }
    memcpy(*prefix, p, plen);
    if (add_slash)
        (*prefix)[plen++] = '/';
    (*prefix)[plen] = '\0';
    return 0;
}

size_t ix_s3_encode(char *out, size_t cap, const char *s, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/');
        char enc[3] = { (char)c, 0, 0 };
        size_t k = 1;
        if (!plain) {
            enc[0] = '%';
            enc[1] = hex[c >> 4];
            enc[2] = hex[c & 15];
            k = 3;
        }
        for (size_t i = 0; i < k; i++, n++)
            if (cap && n < cap - 1)
                out[n] = enc[i];
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

/* The span [*body, *body + *body_len) of the first element <name> in
 * [p, end), and where it ends (after its close tag). 0 if there is none. */
static int element(const char *p, const char *end, const char *name, const char **body,
                   size_t *body_len, const char **after)
{
    size_t n = strlen(name);
    for (const char *q = p; q < end && (size_t)(end - q) >= n + 2; q++) {
        q = memchr(q, '<', (size_t)(end - q));
        if (!q || (size_t)(end - q) < n + 2)
            return 0;
        if (memcmp(q + 1, name, n) != 0 || q[n + 1] != '>')
            continue;
        const char *start = q + n + 2;
        for (const char *c = start; c < end && (size_t)(end - c) >= n + 3; c++) {
            c = memchr(c, '<', (size_t)(end - c));
            if (!c || (size_t)(end - c) < n + 3)
                return 0;
            if (c[1] == '/' && memcmp(c + 2, name, n) == 0 && c[n + 2] == '>') {
                *body = start;
                *body_len = (size_t)(c - start);
                *after = c + n + 3;
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

/* Append the code point cp as UTF-8 to out (room for 4 bytes checked by the
 * caller). */
static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Decode XML text (named entities, &#N; and &#xN;) into a malloc'ed string
 * of at most max bytes. Refuses control bytes (but tab) and code points
 * that are not characters. NULL with a message on error. */
static char *text(const char *s, size_t len, size_t max, const char *what, pq_error *err)
{
    char *out = malloc(len + 1); /* decoding never lengthens: "&#x10FFFF;" is 10 bytes for 4 */
    if (!out) {
        pq_error_set(err, "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c != '&') {
            if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                goto bad;
            out[n++] = (char)c;
            i++;
            continue;
        }
        const char *semi = memchr(s + i, ';', len - i < 12 ? len - i : 12);
        if (!semi)
            goto bad;
        size_t elen = (size_t)(semi - (s + i)) + 1;
        const char *e = s + i + 1;
        static const struct { const char *name; char c; } named[] = {
            { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' },
        };
        int found = 0;
        for (size_t k = 0; k < sizeof named / sizeof *named; k++)
            if (elen - 1 == strlen(named[k].name) && memcmp(e, named[k].name, elen - 1) == 0) {
                out[n++] = named[k].c;
                found = 1;
            }
        if (!found) {
            if (*e != '#' || elen < 4)
                goto bad;
            int base = e[1] == 'x' ? 16 : 10;
            unsigned long cp = 0;
            const char *d = e + 1 + (base == 16);
            if (d == semi)
                goto bad;
            for (; d < semi; d++) {
                int v = *d >= '0' && *d <= '9' ? *d - '0'
                        : base == 16 && *d >= 'a' && *d <= 'f' ? *d - 'a' + 10
                        : base == 16 && *d >= 'A' && *d <= 'F' ? *d - 'A' + 10
                                                               : -1;
                if (v < 0 || cp > 0x10ffff)
                    goto bad;
                cp = cp * (unsigned long)base + (unsigned long)v;
            }
            if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
                (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r'))
                goto bad;
            n += put_utf8(out + n, cp);
        }
        i += elen;
    }
    if (n > max) {
        free(out);
        pq_error_set(err, "%s longer than %zu bytes", what, max);
        return NULL;
    }
    out[n] = '\0';
    return out;
bad:
    free(out);
    pq_error_set(err, "%s: malformed text (control byte or unknown entity)", what);
    return NULL;
}

/* A decimal uint64 with nothing else (XML whitespace around it allowed). */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
    while (len && (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\n' || s[len - 1] == '\r' ||
                   s[len - 1] == '\t'))
        len--;
    if (len == 0 || len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* The ETag without its surrounding quotes. */
static void strip_quotes(char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
        memmove(s, s + 1, n - 2);
        s[n - 2] = '\0';
    }
}

static int one_object(const char *p, size_t len, ix_s3_listing *out, pq_error *err)
{
    const char *end = p + len, *body, *after;
    size_t blen;
    if (!element(p, end, "Key", &body, &blen, &after))
        return pq_error_set(err, "a Contents entry without a Key");
    char *key = text(body, blen, IX_S3_MAX_KEY, "a key", err);
    if (!key)
        return -1;
    uint64_t size;
    if (!element(p, end, "Size", &body, &blen, &after) || parse_u64(body, blen, &size) < 0) {
        pq_error_set(err, "the Size of key %.200s is missing or not a number", key);
        free(key);
        return -1;
    }
    char *etag = element(p, end, "ETag", &body, &blen, &after)
                     ? text(body, blen, IX_S3_MAX_ETAG, "an ETag", err)
                     : strdup("");
    if (!etag) {
        free(key);
        return err->msg[0] ? -1 : pq_error_set(err, "out of memory");
    }
    strip_quotes(etag);
    if (*key == '\0') {
        free(key);
        free(etag);
        return pq_error_set(err, "an empty key");
    }
    if (out->count == out->cap) {
        size_t cap = out->cap ? out->cap * 2 : 256;
        ix_s3_object *grown = realloc(out->objects, cap * sizeof *grown);
        if (!grown) {
            free(key);
            free(etag);
            return pq_error_set(err, "out of memory listing objects");
        }
        out->objects = grown;
        out->cap = cap;
    }
    out->objects[out->count++] = (ix_s3_object){ key, size, etag };
    return 0;
}

int ix_s3_list_parse(const char *xml, size_t len, ix_s3_listing *out, pq_error *err)
{
    err->msg[0] = '\0';
    const char *end = xml + len, *body, *after;
    size_t blen;
    if (!element(xml, end, "ListBucketResult", &body, &blen, &after)) {
        /* the root has attributes (xmlns): find its close tag alone */
        const char *open = len >= 18 ? strstr(xml, "<ListBucketResult") : NULL;
        if (!open || open >= end || !memmem(open, (size_t)(end - open), "</ListBucketResult>", 19))
            return pq_error_set(err, "the listing is not a ListBucketResult document");
    }
    const char *p = xml;
    for (; element(p, end, "Contents", &body, &blen, &after); p = after)
        if (one_object(body, blen, out, err) < 0)
            return pq_error_prefix(err, "malformed listing: ");
    if (memmem(p, (size_t)(end - p), "<Contents>", 10))
        return pq_error_set(err, "malformed listing: a Contents entry without its end");
    out->truncated = 0;
    free(out->next_token);
    out->next_token = NULL;
    if (element(xml, end, "IsTruncated", &body, &blen, &after))
        out->truncated = blen == 4 && memcmp(body, "true", 4) == 0;
    if (element(xml, end, "NextContinuationToken", &body, &blen, &after) &&
        !(out->next_token = text(body, blen, IX_S3_MAX_TOKEN, "the continuation token", err)))
        return pq_error_prefix(err, "malformed listing: ");
    if (out->truncated && (!out->next_token || !*out->next_token))
        return pq_error_set(err, "malformed listing: truncated, but no continuation token");
    return 0;
}

void ix_s3_listing_free(ix_s3_listing *l)
{
    for (size_t i = 0; i < l->count; i++) {
        free(l->objects[i].key);
        free(l->objects[i].etag);
    }
    free(l->objects);
    free(l->next_token);
    *l = (ix_s3_listing){ 0 };
}

/* Copy the decoded text of <name> into out (cap > 0), printable ASCII only. */
static void printable(const char *xml, size_t len, const char *name, char *out, size_t cap)
{
    const char *body, *after;
    size_t blen;
    pq_error ignored;
    out[0] = '\0';
    if (!element(xml, xml + len, name, &body, &blen, &after))
        return;
    char *t = text(body, blen, 4096, name, &ignored);
    if (!t)
        return;
    size_t n = 0;
    for (const char *c = t; *c && n + 1 < cap; c++)
        out[n++] = (*c >= 0x20 && *c < 0x7f) ? *c : '?';
    out[n] = '\0';
    free(t);
}

void ix_s3_error_parse(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                       size_t msg_cap)
{
    printable(xml, len, "Code", code, code_cap);
    printable(xml, len, "Message", msg, msg_cap);
}

/* The line [p, end) without surrounding blanks. */
static void trim(const char **p, const char **end)
{
    while (*p < *end && (**p == ' ' || **p == '\t'))
        (*p)++;
    while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\r'))
        (*end)--;
}

int ix_s3_profile_parse(const char *text_, const char *profile, char **key_id, char **secret,
                        char **token)
{
    char *found[3] = { NULL, NULL, NULL };
    static const char *const names[3] = { "aws_access_key_id", "aws_secret_access_key",
                                          "aws_session_token" };
    int in = 0, oom = 0;
    for (const char *line = text_; *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        const char *p = line;
        trim(&p, &end);
        if (p < end && *p == '[' && end[-1] == ']') {
            const char *n = p + 1, *ne = end - 1;
            trim(&n, &ne);
            in = (size_t)(ne - n) == strlen(profile) && memcmp(n, profile, (size_t)(ne - n)) == 0;
        } else if (in && p < end && *p != '#' && *p != ';') {
            const char *eq = memchr(p, '=', (size_t)(end - p));
            if (eq) {
                const char *k = p, *ke = eq, *v = eq + 1, *ve = end;
                trim(&k, &ke);
                trim(&v, &ve);
                for (int i = 0; i < 3; i++)
                    if ((size_t)(ke - k) == strlen(names[i]) && memcmp(k, names[i], (size_t)(ke - k)) == 0) {
                        free(found[i]);
                        if (!(found[i] = strndup(v, (size_t)(ve - v))))
                            oom = 1;
                    }
            }
        }
        line = nl ? nl + 1 : end;
    }
    if (oom || !found[0] || !found[1] || !*found[0] || !*found[1]) {
        for (int i = 0; i < 3; i++)
            free(found[i]);
        return oom ? -1 : 0;
    }
    *key_id = found[0];
    *secret = found[1];
    *token = found[2];
    return 1;
}

static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void ix_s3_etag_token(const char *etag, int64_t *sec, int64_t *nsec)
{
    size_t n = strlen(etag);
    if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
        etag++, n -= 2;
    if (n == 0) {
        *sec = *nsec = 0;
        return;
    }
    *sec = (int64_t)(fnv1a(etag, n, 0xcbf29ce484222325ull) >> 2);
    *nsec = (int64_t)(fnv1a(etag, n, 0x84222325cbf29ce4ull) % 1000000000u);
}
