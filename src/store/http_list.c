/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http_list.c — an S3 ListObjectsV2 page read with bounds ([the one idea] in http_list.h).
 *
 * Each element is found by its literal open tag inside a window of the reply (the whole page for the
 * page's own elements, one <Contents>…</Contents> block for an object's); its value is the bytes up to
 * the matching close tag, with the five XML entities decoded and any other '&' or '<' refused.
 *
 * Callers: store/http.c; the fuzzer.  Must not: read past the window, or accept a value that does not fit.
 */
#include "http_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../common/internal.h"

/* The first `needle` in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *needle) {
    size_t n = strlen(needle);
    return p < end && (size_t)(end - p) >= n ? memmem(p, (size_t)(end - p), needle, n) : NULL;
}

/* The value of <tag>…</tag> in [p, end), decoded into out[cap]: 1 found, 0 absent, KC_ECORRUPT. */
static int element(const char *p, const char *end, const char *tag, char *out, size_t cap) {
    char open[40], close[40];
    snprintf(open, sizeof open, "<%s>", tag), snprintf(close, sizeof close, "</%s>", tag);
    const char *v = find(p, end, open);
    if (!v) return 0;
    v += strlen(open);
    const char *e = find(v, end, close);
    if (!e) return kc_err(KC_ECORRUPT, "s3 listing: <%s> is not closed", tag);
    static const char *const ent[][2] = {
        {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
    size_t o = 0;
    while (v < e) {
        char c = *v;
        size_t adv = 1;
        if (c == '&') {
            c = 0;
            for (size_t i = 0; i < 5 && !c; i++) {
                size_t n = strlen(ent[i][0]);
                if ((size_t)(e - v) >= n && memcmp(v, ent[i][0], n) == 0) c = ent[i][1][0], adv = n;
            }
            if (!c) return kc_err(KC_ECORRUPT, "s3 listing: an unknown entity in <%s>", tag);
        } else if (c == '<' || c == 0) return kc_err(KC_ECORRUPT, "s3 listing: markup inside <%s>", tag);
        if (o + 1 >= cap) return kc_err(KC_ECORRUPT, "s3 listing: <%s> is over %zu bytes", tag, cap - 1);
        out[o++] = c;
        v += adv;
    }
    out[o] = 0;
    return 1;
}

/* "2026-11-28T16:59:50.000Z" → seconds since the epoch; 0 when malformed. */
static int64_t iso_time(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, se;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6 || y < 1970 || y > 9999 || mo < 1 ||
        mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60 || h < 0 || mi < 0 || se < 0)
        return 0;
    tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = se;
    time_t t = timegm(&tm);
    return t < 0 ? 0 : (int64_t)t;
}

static int object(const char *p, const char *end, kc_s3_object_cb cb, void *ctx) {
    char key[KC_S3_KEY_MAX + 1], size[32], when[64];
    int rc = element(p, end, "Key", key, sizeof key);
    if (rc != 1) return rc ? rc : kc_err(KC_ECORRUPT, "s3 listing: an object without <Key>");
    rc = element(p, end, "Size", size, sizeof size);
    if (rc < 0) return rc;
    char *e = NULL;
    unsigned long long n = rc == 1 ? strtoull(size, &e, 10) : 0;
    if (rc == 1 && (e == size || *e || size[0] == '-'))
        return kc_err(KC_ECORRUPT, "s3 listing: <Size> is not a number");
    kc_s3_object o = {key, n, 0};
    rc = element(p, end, "LastModified", when, sizeof when);
    if (rc < 0) return rc;
    if (rc == 1) o.last_modified = iso_time(when);
    return cb(&o, ctx);
}

int kc_s3_list_page(const char *xml, size_t len, kc_s3_object_cb cb, void *ctx, int *truncated, char *next,
                    size_t cap) {
    const char *p = xml, *end = xml + len;
    *truncated = 0;
    if (cap) next[0] = 0;
    if (!find(p, end, "<ListBucketResult")) return kc_err(KC_ECORRUPT, "s3 listing: not a ListBucketResult");
    /* The page's own elements lie outside the objects: look for them before the first <Contents> and
     * after the last one (a key named "<IsTruncated>…" inside an object is only its key). */
    const char *first = find(p, end, "<Contents>"), *tail = p;
    int count = 0, rc = KC_OK;
    for (const char *c = first; c && rc == KC_OK; c = find(c, end, "<Contents>")) {
        const char *ce = find(c, end, "</Contents>");
        if (!ce) return kc_err(KC_ECORRUPT, "s3 listing: <Contents> is not closed");
        if (++count > KC_S3_LIST_MAX)
            return kc_err(KC_ECORRUPT, "s3 listing: over %d objects in a page", KC_S3_LIST_MAX);
        rc = object(c + 10, ce, cb, ctx);
        c = tail = ce + 11;
    }
    if (rc) return rc;
    char t[16];
    const char *head_end = first ? first : end;
    int r1 = element(p, head_end, "IsTruncated", t, sizeof t);
    if (r1 == 0) r1 = element(tail, end, "IsTruncated", t, sizeof t);
    if (r1 < 0) return r1;
    if (r1 == 1 && strcmp(t, "true") == 0) {
        int r2 = element(p, head_end, "NextContinuationToken", next, cap);
        if (r2 == 0) r2 = element(tail, end, "NextContinuationToken", next, cap);
        if (r2 < 0) return r2;
        if (r2 == 0 || !next[0]) return kc_err(KC_ECORRUPT, "s3 listing: truncated without a continuation token");
        *truncated = 1;
    }
    return KC_OK;
}
