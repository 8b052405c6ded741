#include "pq_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pq_error_set(pq_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int pq_error_prefix(pq_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char prefix[PQ_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Join by hand: snprintf("%s%s") trips -Werror=format-truncation, and
     * truncating the end of an over-long message is what we want. */
    size_t plen = strlen(prefix);
    size_t mlen = strnlen(err->msg, sizeof err->msg - 1);
    if (plen + mlen > sizeof err->msg - 1)
        mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
    return -1;
}
