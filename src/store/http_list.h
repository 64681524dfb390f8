/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http_list.h — one page of an S3 ListObjectsV2 reply, read with bounds (the s3:// back end's
 * iterate, for `kcache gc` and `kcache purge`).
 *
 * The one idea: the XML comes from a server that may be hostile, so it is not parsed as XML: only the
 * few elements kcache needs are looked for, each found inside the reply's length, each value bounded
 * (a key 1024 bytes, a token 1024), at most KC_S3_LIST_MAX objects per page; what does not fit is
 * refused (KC_ECORRUPT), never guessed.
 *
 * Callers: store/http.c; tests/fuzz/fuzz_s3_list.c.  Must not: allocate per object, or read past `len`.
 */
#ifndef KC_STORE_HTTP_LIST_H
#define KC_STORE_HTTP_LIST_H

#include <stddef.h>
#include <stdint.h>

#define KC_S3_LIST_MAX 1000
#define KC_S3_KEY_MAX 1024

/** One object of a page.  Borrowed for the callback's duration. */
typedef struct kc_s3_object {
    const char *key; /* entities decoded */
    uint64_t size;
    int64_t last_modified; /* seconds since the epoch; 0 when absent or malformed */
} kc_s3_object;

/** Called for each <Contents> of a page; a non-zero return stops the walk and is returned. */
typedef int (*kc_s3_object_cb)(const kc_s3_object *o, void *ctx);

/** Read one page: `cb` for each object, *truncated 1 and next[cap] the continuation token when
 *  <IsTruncated>true</IsTruncated> (a truncated page without a token is KC_ECORRUPT).  KC_OK, the
 *  callback's non-zero value, or KC_ECORRUPT naming what was wrong. */
int kc_s3_list_page(const char *xml, size_t len, kc_s3_object_cb cb, void *ctx, int *truncated, char *next, size_t cap);

#endif
