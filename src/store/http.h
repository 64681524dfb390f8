/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http.h — one HTTP request under a deadline, for the HTTP content store (http.c).
 *
 * The one idea: every reply is hostile until it has been read whole and bounded.  A request runs on a
 * pooled libcurl easy handle (its connections kept alive between calls) under one deadline that covers
 * connecting, retries and the whole body; the body is held to a cap as it arrives; a body cut short or
 * longer or shorter than its Content-Length is an error, never a value; redirects are never followed;
 * 429 and 503 (S3's SlowDown) are retried with jittered, doubling back-off while the deadline allows.
 *
 * Callers: store/http.c.  Must not: interpret a body, follow a redirect, or wait past the deadline.
 */
#ifndef KC_STORE_HTTP_H
#define KC_STORE_HTTP_H

#define CURL_DISABLE_TYPECHECK 1 /* the calls go through kc_curl_, not curl's macros */
#include <curl/curl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define KC_HTTP_POOL_MAX 8

/** libcurl's functions, loaded on demand (http_curl.c): libkcache does not link libcurl. */
typedef struct kc_curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *h);
    void (*easy_reset)(CURL *h);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} kc_curl_api;

/** libcurl, loaded by the first call (thread-safe): NULL, with the reason in kc_error_last()
 *  (KC_EUNAVAILABLE, saying what to install), when it cannot be. */
const kc_curl_api *kc_curl_load(void);
/** Set once kc_curl_load succeeded; every call after an HTTP back end opened goes through it. */
extern const kc_curl_api *kc_curl_;

/** Idle easy handles, reused so that their connections are (curl keeps each handle's alive). */
typedef struct kc_http_pool {
    pthread_mutex_t mu;
    CURL *idle[KC_HTTP_POOL_MAX];
    int n;
} kc_http_pool;

/** One request and what came back. */
typedef struct kc_http_call {
    const char *method; /* "GET", "PUT", "HEAD", "DELETE" */
    const char *url;    /* absolute, no user information */
    struct curl_slist *headers;
    const void *body; /* PUT's */
    size_t body_len;
    uint64_t cap;         /* largest body accepted */
    uint64_t deadline_ns; /* kc_mono_ns() at which the whole call ends */
    unsigned connect_ms;
    const char *ca_file;         /* NULL: the system's store */
    const char *user, *password; /* basic authentication, or NULL */
    const char *shown;           /* the remote as messages show it */
    /* out */
    long status;
    char *data; /* the body (malloc'ed, NUL-terminated), NULL when none */
    size_t len;
    unsigned retries; /* 429/503 answers retried */
    char etag[130];   /* the reply's ETag ("" when none), for a conditional write */
} kc_http_call;

void kc_http_pool_init(kc_http_pool *p);
void kc_http_pool_destroy(kc_http_pool *p);

/** Run `c` (retrying 429/503 while the deadline allows): KC_OK with c->status and the body read
 *  whole; KC_ETIMEOUT, KC_EIO or KC_EINVAL (the body over the cap) with a message naming the remote;
 *  c->data NULL on error.  A final 429/503 is KC_EIO. */
int kc_http_perform(kc_http_pool *p, kc_http_call *c);

/** What a status means for `what` (a message word: "GET", …): 2xx KC_OK, 404 KC_MISS, a redirect,
 *  another 4xx or 5xx an error saying which. */
int kc_http_status_rc(const kc_http_call *c, const char *what);

#endif
