/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http_req.c — one HTTP request under a deadline ([the one idea] in http.h).
 *
 * libcurl does the protocol (HTTP/1.1, TLS, keep-alive); this file decides what a reply may be: the
 * handle is told never to follow a redirect and to speak only http and https; the write callback
 * stops the transfer when the body passes the cap; after the transfer the bytes received must equal
 * the Content-Length announced (curl reports a body cut short as CURLE_PARTIAL_FILE).
 *
 * Callers: store/http.c.  Must not: follow a redirect, or sleep past the deadline.
 */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "../common/internal.h"

#define RETRY_FIRST_MS 20
#define RETRY_MAX 6

void kc_http_pool_init(kc_http_pool *p) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

void kc_http_pool_destroy(kc_http_pool *p) {
    for (int i = 0; i < p->n; i++) kc_curl_->easy_cleanup(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
}

static CURL *take(kc_http_pool *p) {
    pthread_mutex_lock(&p->mu);
    CURL *h = p->n ? p->idle[--p->n] : NULL;
    pthread_mutex_unlock(&p->mu);
    return h ? h : kc_curl_->easy_init();
}

static void give(kc_http_pool *p, CURL *h) {
    kc_curl_->easy_reset(h); /* keeps the handle's live connections */
    pthread_mutex_lock(&p->mu);
    if (p->n < KC_HTTP_POOL_MAX) p->idle[p->n++] = h, h = NULL;
    pthread_mutex_unlock(&p->mu);
    if (h) kc_curl_->easy_cleanup(h);
}

typedef struct sink {
    char *data;
    size_t len, alloc;
    uint64_t cap;
    int over;
} sink;

static size_t on_body(char *ptr, size_t size, size_t n, void *ud) {
    sink *s = ud;
    size_t add = size * n;
    if ((uint64_t)s->len + add > s->cap) {
        s->over = 1;
        return 0; /* stops the transfer: CURLE_WRITE_ERROR */
    }
    if (s->len + add + 1 > s->alloc) {
        size_t a = s->alloc ? s->alloc : 4096;
        while (a < s->len + add + 1) a *= 2;
        char *d = realloc(s->data, a);
        if (!d) return 0;
        s->data = d, s->alloc = a;
    }
    memcpy(s->data + s->len, ptr, add);
    s->len += add;
    s->data[s->len] = 0;
    return add;
}

typedef struct source {
    const char *p;
    size_t left;
} source;

static size_t on_upload(char *ptr, size_t size, size_t n, void *ud) {
    source *s = ud;
    size_t k = size * n < s->left ? size * n : s->left;
    memcpy(ptr, s->p, k);
    s->p += k, s->left -= k;
    return k;
}

/* The ETag header, kept (bounded) for a conditional write; every other header is libcurl's. */
static size_t on_header(char *ptr, size_t size, size_t n, void *ud) {
    kc_http_call *c = ud;
    size_t len = size * n;
    if (len > 5 && strncasecmp(ptr, "etag:", 5) == 0) {
        const char *v = ptr + 5, *e = ptr + len;
        while (v < e && (*v == ' ' || *v == '\t')) v++;
        while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ')) e--;
        size_t k = (size_t)(e - v) < sizeof c->etag ? (size_t)(e - v) : 0; /* too long: none */
        memcpy(c->etag, v, k), c->etag[k] = 0;
    }
    return len;
}

static void setup(CURL *h, kc_http_call *c, sink *out, source *in, char *errbuf, uint64_t left_ms) {
    kc_curl_->easy_setopt(h, CURLOPT_URL, c->url);
    kc_curl_->easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    kc_curl_->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    kc_curl_->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    kc_curl_->easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    kc_curl_->easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (c->ca_file) kc_curl_->easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (c->user) kc_curl_->easy_setopt(h, CURLOPT_USERNAME, c->user);
    if (c->password) kc_curl_->easy_setopt(h, CURLOPT_PASSWORD, c->password);
    kc_curl_->easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(left_ms ? left_ms : 1));
    uint64_t cms = c->connect_ms && c->connect_ms < left_ms ? c->connect_ms : left_ms;
    kc_curl_->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(cms ? cms : 1));
    if (strcmp(c->method, "HEAD") != 0) /* a HEAD's Content-Length is the object's size: no body comes */
        kc_curl_->easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->cap);
    kc_curl_->easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    kc_curl_->easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    kc_curl_->easy_setopt(h, CURLOPT_WRITEDATA, out);
    kc_curl_->easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    kc_curl_->easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    kc_curl_->easy_setopt(h, CURLOPT_HEADERDATA, c);
    if (strcmp(c->method, "HEAD") == 0) kc_curl_->easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(c->method, "PUT") == 0) {
        kc_curl_->easy_setopt(h, CURLOPT_UPLOAD, 1L);
        kc_curl_->easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
        kc_curl_->easy_setopt(h, CURLOPT_READDATA, in);
        kc_curl_->easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->body_len);
    } else if (strcmp(c->method, "GET") != 0) kc_curl_->easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
}

/* One attempt: KC_OK with c->status and the body, or an error. */
static int attempt(CURL *h, kc_http_call *c, sink *out, uint64_t left_ms) {
    char errbuf[CURL_ERROR_SIZE] = "";
    source in = {c->body, c->body_len};
    setup(h, c, out, &in, errbuf, left_ms);
    CURLcode cc = kc_curl_->easy_perform(h);
    if (out->over || cc == CURLE_FILESIZE_EXCEEDED)
        return kc_err(KC_EINVAL, "%s: %s %s: the reply's body is over the value cap (%llu bytes)", c->shown, c->method,
                      c->url, (unsigned long long)c->cap);
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return kc_err(KC_ETIMEOUT, "%s: %s %s: no complete reply within the deadline (%s)", c->shown, c->method, c->url,
                      errbuf[0] ? errbuf : kc_curl_->easy_strerror(cc));
    if (cc != CURLE_OK)
        return kc_err(KC_EIO, "%s: %s %s: %s (check the server and the URL)", c->shown, c->method, c->url,
                      errbuf[0] ? errbuf : kc_curl_->easy_strerror(cc));
    kc_curl_->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);
    curl_off_t cl = -1;
    kc_curl_->easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    if (strcmp(c->method, "HEAD") != 0 && cl >= 0 && (uint64_t)cl != (uint64_t)out->len)
        return kc_err(KC_EIO, "%s: %s %s: the reply's body is %zu bytes, its Content-Length says %lld", c->shown,
                      c->method, c->url, out->len, (long long)cl);
    return KC_OK;
}

static uint64_t jitter(uint64_t ms) {
    uint64_t r = kc_mono_ns() * 6364136223846793005ull + 1442695040888963407ull;
    return ms / 2 + (r >> 33) % (ms + 1); /* [ms/2, ms*3/2] */
}

int kc_http_perform(kc_http_pool *p, kc_http_call *c) {
    c->status = 0, c->data = NULL, c->len = 0, c->retries = 0, c->etag[0] = 0;
    CURL *h = take(p);
    if (!h) return kc_err(KC_ENOMEM, "%s: cannot make an HTTP handle", c->shown);
    uint64_t wait_ms = RETRY_FIRST_MS;
    int rc;
    for (;;) {
        uint64_t now = kc_mono_ns();
        if (now >= c->deadline_ns) {
            rc = kc_err(KC_ETIMEOUT, "%s: %s %s: the deadline passed", c->shown, c->method, c->url);
            break;
        }
        sink out = {NULL, 0, 0, c->cap, 0};
        rc = attempt(h, c, &out, (c->deadline_ns - now + 999999) / 1000000);
        if (rc == KC_OK && (c->status == 429 || c->status == 503) && c->retries < RETRY_MAX) {
            uint64_t w = jitter(wait_ms);
            free(out.data);
            if (kc_mono_ns() + w * 1000000 >= c->deadline_ns) {
                rc = kc_err(KC_EIO,
                            "%s: %s %s: HTTP %ld (throttled) after %u retries, and the deadline leaves no "
                            "time for another",
                            c->shown, c->method, c->url, c->status, c->retries);
                break;
            }
            struct timespec ts = {(time_t)(w / 1000), (long)(w % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            c->retries++, wait_ms *= 2;
            continue;
        }
        if (rc == KC_OK) c->data = out.data, c->len = out.len;
        else free(out.data);
        break;
    }
    give(p, h);
    return rc;
}

int kc_http_status_rc(const kc_http_call *c, const char *what) {
    long s = c->status;
    if (s >= 200 && s < 300) return KC_OK;
    if (s == 404) return KC_MISS;
    if (s >= 300 && s < 400)
        return kc_err(KC_EIO, "%s: %s %s: HTTP %ld, a redirect, refused (give the store's final URL)", c->shown, what,
                      c->url, s);
    if (s == 401 || s == 403)
        return kc_err(KC_EIO, "%s: %s %s: HTTP %ld, refused (check the credentials and the store's permissions)",
                      c->shown, what, c->url, s);
    return kc_err(KC_EIO, "%s: %s %s: HTTP %ld%s", c->shown, what, c->url, s,
                  s == 429 || s == 503 ? " (throttled; retried until the deadline)" : "");
}
