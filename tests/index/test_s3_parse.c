/* ix_s3_parse: the S3 store's URL, encoding, listing and error documents, credentials file
 * and change token, against hand-written documents of what S3 and its peers send, and the
 * malformed ones a hostile or broken server could. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ix_s3_parse.h"

static const char *LIST_HEAD =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Name>b</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>";

static int parse(const char *body, ix_s3_listing *l, pq_error *err)
{
    char *doc;
    cr_assert(asprintf(&doc, "%s%s</ListBucketResult>", LIST_HEAD, body) > 0);
    int rc = ix_s3_list_parse(doc, strlen(doc), l, err);
    free(doc);
    return rc;
}

Test(s3_parse, url_bucket_and_prefix)
{
    char *b, *p;
    pq_error err;
    cr_assert_eq(ix_s3_parse_url("s3://my-bucket.1/data/train", &b, &p, &err), 0, "%s", err.msg);
    cr_assert_str_eq(b, "my-bucket.1");
    cr_assert_str_eq(p, "data/train/");
    free(b);
    free(p);
    cr_assert_eq(ix_s3_parse_url("s3://bkt", &b, &p, &err), 0);
    cr_assert_str_eq(p, "");
    free(b);
    free(p);
    cr_assert_eq(ix_s3_parse_url("s3://bkt/x/", &b, &p, &err), 0);
    cr_assert_str_eq(p, "x/");
    free(b);
    free(p);
    const char *bad[] = { "s3://", "s3:///x", "s3://b@d/x", "s3://b//x", "s3://b/x//y",
                          "s3://b/a\nb", "http://b/x" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(ix_s3_parse_url(bad[i], &b, &p, &err), -1, "%s accepted", bad[i]);
        cr_assert_null(b);
        cr_assert_null(p);
    }
}

Test(s3_parse, encode_as_sigv4_wants)
{
    char out[64];
    cr_assert_eq(ix_s3_encode(out, sizeof out, "a b/c+d=~_.-", 1), 18);
    cr_assert_str_eq(out, "a%20b/c%2Bd%3D~_.-");
    ix_s3_encode(out, sizeof out, "a/b", 0);
    cr_assert_str_eq(out, "a%2Fb");
    ix_s3_encode(out, sizeof out, "\xc3\xa9", 1);
    cr_assert_str_eq(out, "%C3%A9");
    /* cut to fit, the length needed still returned */
    cr_assert_eq(ix_s3_encode(out, 4, "abcdef", 0), 6);
    cr_assert_str_eq(out, "abc");
}

Test(s3_parse, listing_with_entities_and_continuation)
{
    ix_s3_listing l = { 0 };
    pq_error err;
    cr_assert_eq(parse("<IsTruncated>true</IsTruncated>"
                       "<Contents><Key>data/a&amp;b &#233;.parquet</Key>"
                       "<LastModified>2026-01-01T00:00:00Z</LastModified>"
                       "<ETag>&#34;0123abcd&#34;</ETag><Size>12345</Size>"
                       "<StorageClass>STANDARD</StorageClass></Contents>"
                       "<Contents><Key>data/x.parquet</Key><Size>0</Size>"
                       "<ETag>&quot;e-2&quot;</ETag><Owner><ID>o</ID></Owner></Contents>"
                       "<NextContinuationToken>tok+/=&lt;</NextContinuationToken>",
                       &l, &err),
                 0, "%s", err.msg);
    cr_assert_eq(l.count, 2);
    cr_assert_str_eq(l.objects[0].key, "data/a&b \xc3\xa9.parquet");
    cr_assert_eq(l.objects[0].size, 12345);
    cr_assert_str_eq(l.objects[0].etag, "0123abcd");
    cr_assert_str_eq(l.objects[1].etag, "e-2");
    cr_assert_eq(l.truncated, 1);
    cr_assert_str_eq(l.next_token, "tok+/=<");
    /* the last page appends and clears the token */
    cr_assert_eq(parse("<IsTruncated>false</IsTruncated><Contents><Key>data/y.parquet</Key>"
                       "<Size>7</Size></Contents>", &l, &err), 0, "%s", err.msg);
    cr_assert_eq(l.count, 3);
    cr_assert_str_eq(l.objects[2].etag, "");
    cr_assert_eq(l.truncated, 0);
    cr_assert_null(l.next_token);
    ix_s3_listing_free(&l);
}

Test(s3_parse, malformed_listings_are_refused_with_a_reason)
{
    static const struct { const char *body, *why; } bad[] = {
        { "<Contents><Size>1</Size></Contents>", "without a Key" },
        { "<Contents><Key>k</Key></Contents>", "Size" },
        { "<Contents><Key>k</Key><Size>-1</Size></Contents>", "Size" },
        { "<Contents><Key>k</Key><Size>12a</Size></Contents>", "Size" },
        { "<Contents><Key>k</Key><Size>99999999999999999999</Size></Contents>", "Size" },
        { "<Contents><Key>a\x01" "b</Key><Size>1</Size></Contents>", "malformed text" },
        { "<Contents><Key>a&nbsp;b</Key><Size>1</Size></Contents>", "malformed text" },
        { "<Contents><Key>a&#0;b</Key><Size>1</Size></Contents>", "malformed text" },
        { "<Contents><Key>a&#xD800;b</Key><Size>1</Size></Contents>", "malformed text" },
        { "<Contents><Key>a&#99999999999;b</Key><Size>1</Size></Contents>", "malformed text" },
        { "<Contents><Key></Key><Size>1</Size></Contents>", "empty key" },
        { "<IsTruncated>true</IsTruncated>", "no continuation token" },
        { "<Contents><Key>k</Key><Size>1", "without its end" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ix_s3_listing l = { 0 };
        pq_error err = { "" };
        cr_assert_eq(parse(bad[i].body, &l, &err), -1, "accepted: %s", bad[i].body);
        cr_assert(strstr(err.msg, bad[i].why), "%s: %s", bad[i].body, err.msg);
        ix_s3_listing_free(&l);
    }
    /* a key past the bound */
    size_t n = IX_S3_MAX_KEY + 1;
    char *body = malloc(n + 64), *p = body;
    p += sprintf(p, "<Contents><Key>");
    memset(p, 'k', n);
    p += n;
    sprintf(p, "</Key><Size>1</Size></Contents>");
    ix_s3_listing l = { 0 };
    pq_error err;
    cr_assert_eq(parse(body, &l, &err), -1);
    cr_assert(strstr(err.msg, "longer than"), "%s", err.msg);
    ix_s3_listing_free(&l);
    free(body);
    /* not a listing at all */
    const char *html = "<html><body>hello</body></html>";
    cr_assert_eq(ix_s3_list_parse(html, strlen(html), &l, &err), -1);
    cr_assert(strstr(err.msg, "not a ListBucketResult"), "%s", err.msg);
    /* a cut buffer is never read past its end */
    const char *cut = "<ListBucketResult><Contents><Key>abc";
    cr_assert_eq(ix_s3_list_parse(cut, strlen(cut) - 2, &l, &err), -1);
    ix_s3_listing_free(&l);
}

Test(s3_parse, error_document_code_and_message)
{
    const char *doc = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please "
                      "reduce &amp; retry\x01</Message><RequestId>x</RequestId></Error>";
    char code[16], msg[64];
    ix_s3_error_parse(doc, strlen(doc), code, sizeof code, msg, sizeof msg);
    cr_assert_str_eq(code, "SlowDown");
    cr_assert_str_eq(msg, ""); /* a control byte: malformed, so nothing is kept */
    const char *ok = "<Error><Code>AccessDenied</Code><Message>Access \xc3\xa9 Denied</Message>"
                     "</Error>";
    ix_s3_error_parse(ok, strlen(ok), code, sizeof code, msg, sizeof msg);
    cr_assert_str_eq(code, "AccessDenied");
    cr_assert_str_eq(msg, "Access ?? Denied");
    char tiny[6];
    ix_s3_error_parse(ok, strlen(ok), tiny, sizeof tiny, msg, sizeof msg);
    cr_assert_str_eq(tiny, "Acces");
    ix_s3_error_parse("garbage", 7, code, sizeof code, msg, sizeof msg);
    cr_assert_str_eq(code, "");
    cr_assert_str_eq(msg, "");
}

Test(s3_parse, credentials_profile)
{
    const char *text = "# comment\n[default]\naws_access_key_id = AKDEF\n"
                       "aws_secret_access_key=SKDEF\r\n\n[ work ]\n; note\n"
                       "aws_access_key_id=AKW\naws_secret_access_key = SK W \n"
                       "aws_session_token = TOK\n[empty]\naws_access_key_id=AKE\n";
    char *id, *secret, *token;
    cr_assert_eq(ix_s3_profile_parse(text, "default", &id, &secret, &token), 1);
    cr_assert_str_eq(id, "AKDEF");
    cr_assert_str_eq(secret, "SKDEF");
    cr_assert_null(token);
    free(id);
    free(secret);
    cr_assert_eq(ix_s3_profile_parse(text, "work", &id, &secret, &token), 1);
    cr_assert_str_eq(secret, "SK W");
    cr_assert_str_eq(token, "TOK");
    free(id);
    free(secret);
    free(token);
    cr_assert_eq(ix_s3_profile_parse(text, "empty", &id, &secret, &token), 0);
    cr_assert_eq(ix_s3_profile_parse(text, "missing", &id, &secret, &token), 0);
}

Test(s3_parse, etag_token_is_the_etag_alone)
{
    int64_t s1, n1, s2, n2, s3, n3;
    ix_s3_etag_token("\"abc\"", &s1, &n1);
    ix_s3_etag_token("abc", &s2, &n2);
    ix_s3_etag_token("abd", &s3, &n3);
    cr_assert(s1 == s2 && n1 == n2);
    cr_assert(s1 != s3 || n1 != n3);
    cr_assert(s1 >= 0 && n1 >= 0 && n1 < 1000000000);
    ix_s3_etag_token("", &s1, &n1);
    cr_assert(s1 == 0 && n1 == 0);
}
