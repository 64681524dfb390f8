/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_s3_list.c — libFuzzer target: an S3 ListObjectsV2 page from a hostile server
 * (store/http_list.c, the s3:// back end's iterate for gc and purge).
 *
 * Structure-aware: an input whose first byte is 'X' is the page's raw bytes; any other input is a
 * program the harness expands into a page, one byte per choice — the page's own elements (IsTruncated,
 * NextContinuationToken, KeyCount) before, between or after the objects, each object's Key, Size and
 * LastModified (present, absent, doubled, unclosed, holding an entity, an unknown entity, markup, a
 * value at and past its bound, a negative or non-numeric size, a malformed time), up to past a page's
 * object limit — so the mutations reach each bound rather than the first tag search.  The expanded page
 * is given without a terminating NUL (ASan sees a read past it).
 *
 * Invariants (abort): every key handed out is at most KC_S3_KEY_MAX bytes (decoded: "&lt;" is a '<'
 * there, which the back end's name check refuses); no page
 * gives more than KC_S3_LIST_MAX objects; a truncated page has a non-empty continuation token.  Must
 * not: abort on anything refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"
#include "store/http_list.h"

static int count;

static int on_object(const kc_s3_object *o, void *ctx) {
    (void)ctx;
    if (strlen(o->key) > KC_S3_KEY_MAX) abort();
    if (++count > KC_S3_LIST_MAX) abort();
    return 0;
}

typedef struct out {
    char *p;
    size_t n, cap;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->n + n > o->cap) n = o->cap - o->n;
    memcpy(o->p + o->n, s, n), o->n += n;
}
static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static const char *const values[] = {
    "fleet/ac/0123456789abcdef0123456789abcdef.sm_90",
    "a&amp;b",
    "a&lt;b&gt;",
    "&quot;&apos;",
    "a&bogus;",
    "a&",
    "a<b>c</b>",
    "",
    "123",
    "-1",
    "18446744073709551616",
    "12x",
    "2026-11-28T16:59:50.000Z",
    "2026-13-40T99:99:99Z",
    "true",
    "false",
};
static const char *const tags[] = {"Key", "Size", "LastModified", "IsTruncated", "NextContinuationToken", "KeyCount"};

/* One element from two choice bytes: which tag, which value (or a long one), closed or not. */
static void element(out *o, uint8_t a, uint8_t b) {
    const char *tag = tags[a % 6];
    char t[64];
    snprintf(t, sizeof t, "<%s>", tag);
    puts_(o, t);
    if (b % 8 == 7) { /* a value at or past its bound */
        size_t n = KC_S3_KEY_MAX - 1 + (b >> 3) % 4;
        for (size_t i = 0; i < n; i++) put(o, "k", 1);
    } else puts_(o, values[(b >> 3) % 16]);
    if (!(a & 0x80)) {
        snprintf(t, sizeof t, "</%s>", tag);
        puts_(o, t);
    }
}

static size_t expand(const uint8_t *d, size_t n, out *o) {
    puts_(o, "<?xml version=\"1.0\"?><ListBucketResult>");
    for (size_t i = 0; i + 1 < n; i += 2) {
        uint8_t op = d[i], arg = d[i + 1];
        switch (op % 6) {
        case 0: puts_(o, "<Contents>"); break;
        case 1: puts_(o, "</Contents>"); break;
        case 2: element(o, op >> 3 | (arg & 0x80), arg); break;
        case 3: /* many objects: past the page's limit when arg is large */
            for (int k = 0; k < (arg % 64) * 20; k++) puts_(o, "<Contents><Key>k</Key></Contents>");
            break;
        case 4: element(o, arg % 6, op); break;
        default: put(o, (const char *)&arg, 1); break; /* a raw byte */
        }
    }
    if (n % 2) puts_(o, "</ListBucketResult>");
    return o->n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 20) return 0;
    char *page;
    size_t len;
    if (size && data[0] == 'X') {
        len = size - 1;
        page = malloc(len ? len : 1);
        memcpy(page, data + 1, len);
    } else {
        out o = {malloc(4 << 20), 0, 4 << 20};
        len = expand(data, size, &o);
        page = o.p;
    }
    int truncated = 0;
    char next[KC_S3_KEY_MAX + 1];
    count = 0;
    int rc = kc_s3_list_page(page, len, on_object, NULL, &truncated, next, sizeof next);
    if (rc == KC_OK && truncated && !next[0]) abort();
    free(page);
    return 0;
}
