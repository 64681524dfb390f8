/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http.c — the HTTP content store: entries as objects on an HTTP server (WebDAV on nginx,
 * bazel-remote) or an S3-compatible object store (SigV4-signed), through libcurl.
 *
 * The one idea: a blob is one object, read with GET, written with PUT, and nothing about a reply is
 * trusted (http_req.c bounds and checks every body; the core verifies every entry's MAC or signature).
 * Graph entries go under an action-cache path and images ("<xxh128>.img", content-addressed) under a
 * content-addressed one: <base>/ac/<name> and <base>/cas/<name>.  With layout=bazel every blob goes
 * to bazel-remote's /ac/<sha256 of the name> (a /cas/ body must hash to its name, which a kcache name
 * is not; bazel-remote is then started with --disable_http_ac_validation).  s3://bucket/prefix signs
 * each request with SigV4 (common/sigv4.c) for path-style or virtual-host-style addressing.
 *
 * 404 is a miss; any other failure is an error that opens the circuit breaker (breaker.c), so an
 * outage costs one deadline and then nothing until the back-off window ends.  Nothing is sent at
 * open: there is no write probe.  An s3:// store takes leases with a conditional create (PUT with
 * If-None-Match: *, an expired lease taken over with If-Match on its ETag); http(s):// stores take none
 * (nginx's WebDAV ignores If-None-Match on PUT).  An s3:// store lists (ListObjectsV2, read with bounds by
 * http_list.c), so kcache gc and purge reach it; http(s):// stores do not (iterate stays NULL).
 * A lease's takeover relies on the wall clocks of the hosts agreeing to well within its length.
 *
 * Callers: the registry (schemes "http", "https", "s3"); the tiers through the table.  Must not:
 * interpret values, follow a redirect, show a password or secret, or wait past a deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../common/crypto.h"
#include "../common/internal.h"
#include "../common/sigv4.h"
#include "../config/aws.h"
#include "breaker.h"
#include "http.h"
#include "http_list.h"
#include "kcache/entry.h"
#include "name.h"
#include "registry.h"

#define PARAM_MAX 1024
#define KC_HTTP_LIST_PAGES_MAX 100000 /* 100 million objects: a listing ends */

typedef struct hb {
    kc_store_backend be;
    int s3, bazel;
    char base[KC_REMOTE_URL_MAX + 1]; /* "http://host:port/prefix" (no '/' at the end), no user info */
    char shown[300];
    char user[128], password[256];
    char ca_file[PARAM_MAX];
    /* s3 */
    char host[300];   /* the Host header: "bucket.s3.region.amazonaws.com" or "127.0.0.1:9000" */
    char path0[600];  /* the path before the object: "/bucket/prefix" (path-style) or "/prefix" */
    char root[80];    /* the bucket's own path: "/bucket" (path-style) or "" */
    char prefix[600]; /* "prefix" (no slashes at either end) or "" */
    char region[64];
    kc_aws_creds creds;
    kc_remote_limits cfg;
    kc_http_pool pool;
    kc_brk brk;
} hb;

/* ---- the URL ---- */

/* The value of query parameter `key` in `q` ("a=1&b=2"), percent-decoding not needed for paths. */
static int param(const char *q, const char *key, char *out, size_t cap) {
    size_t kl = strlen(key);
    for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            const char *v = p + kl + 1, *e = strchr(v, '&');
            size_t n = e ? (size_t)(e - v) : strlen(v);
            if (n >= cap) return kc_err(KC_EINVAL, "the URL's %s= is too long", key);
            memcpy(out, v, n), out[n] = 0;
            return 1;
        }
    }
    return 0;
}

static int check_params(hb *b, const char *q) {
    static const char *const known[] = {"layout", "ca_file", "region", "endpoint", "style", "credentials_file", NULL};
    for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        size_t n = strcspn(p, "=&");
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= strlen(known[i]) == n && strncmp(p, known[i], n) == 0;
        if (!ok)
            return kc_err(KC_EINVAL,
                          "remote %s: unknown parameter '%.*s' (known: layout, ca_file; s3: region, "
                          "endpoint, style, credentials_file)",
                          b->shown, (int)n, p);
    }
    return KC_OK;
}

/* Whether p[0..n) holds only what a URL may carry as it is: RFC 3986's unreserved and reserved
 * characters and '%' (a path's escapes), or with `strict` only unreserved ones and '/'. Never '#': curl
 * would drop all after it (every name one object). */
static int url_safe(const char *p, size_t n, int strict) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-._~/", c);
        if (!strict) ok |= strchr(":[]@!$&'()*+,;=%", c) != NULL;
        if (!ok || !c) return 0;
    }
    return 1;
}

/* "http://[user[:pass]@]host[:port][/path]" (url[0..len): before the query) → b->base (no user info),
 * b->user, b->password (both %XX decoded).  The user information ends at the last '@' (parse_url has
 * refused an '@' only in the query), as the shown form hides all up to it. */
static int parse_http(hb *b, const char *url, size_t len) {
    const char *s = strstr(url, "://") + 3, *end = url + len;
    const char *at, *colon;
    if (kc_store_url_userinfo(s, &at, &colon) > 0) {
        if (kc_store_pct_decode(s, (size_t)((colon ? colon : at) - s), b->user, sizeof b->user) != 0 ||
            (colon && kc_store_pct_decode(colon + 1, (size_t)(at - colon - 1), b->password, sizeof b->password) != 0))
            return kc_err(KC_EINVAL, "remote %s: the user or password is too long or holds a bad %%XX escape",
                          b->shown);
        s = at + 1;
    }
    const char *slash = memchr(s, '/', (size_t)(end - s));
    if (s == (slash ? slash : end)) return kc_err(KC_EINVAL, "remote %s: no host", b->shown);
    if (!url_safe(s, (size_t)(end - s), 0))
        return kc_err(KC_EINVAL,
                      "remote %s: the host or path holds a character a URL cannot carry as it is ('#', a space, "
                      "a quote…): escape it as %%XX",
                      b->shown);
    while (end > s && end[-1] == '/') end--;
    int n = snprintf(b->base, sizeof b->base, "%.*s%.*s", (int)(strstr(url, "://") + 3 - url), url, (int)(end - s), s);
    if (n < 0 || (size_t)n >= sizeof b->base) return kc_err(KC_EINVAL, "remote %s: the URL is too long", b->shown);
    return KC_OK;
}

/* "s3://bucket[/prefix]" with region=, endpoint=, style= → b->base, b->host, b->path0. */
static int parse_s3(hb *b, const char *url, size_t len, const char *q) {
    const char *s = url + 5, *end = url + len;
    while (end > s && end[-1] == '/') end--;
    const char *slash = memchr(s, '/', (size_t)(end - s));
    int bl = (int)((slash ? slash : end) - s);
    const char *prefix = slash ? slash : end;
    int pl = (int)(end - prefix);
    if (bl == 0 || bl > 63) return kc_err(KC_EINVAL, "remote %s: no bucket (s3://bucket/prefix)", b->shown);
    if (!url_safe(s, (size_t)(end - s), 1))
        return kc_err(KC_EINVAL,
                      "remote %s: the bucket and prefix may hold only letters, digits, '-', '.', '_', '~' and '/'",
                      b->shown);
    char endpoint[PARAM_MAX] = "", style[16] = "";
    if (param(q, "endpoint", endpoint, sizeof endpoint) < 0 || param(q, "style", style, sizeof style) < 0 ||
        param(q, "region", b->region, sizeof b->region) < 0)
        return KC_EINVAL;
    if (!b->region[0]) snprintf(b->region, sizeof b->region, "%s", b->creds.region[0] ? b->creds.region : "us-east-1");
    int path_style = style[0] ? strcmp(style, "path") == 0 : endpoint[0] != 0;
    if (style[0] && !path_style && strcmp(style, "virtual") != 0)
        return kc_err(KC_EINVAL, "remote %s: style=%s (path or virtual)", b->shown, style);
    char scheme[8] = "https";
    const char *auth;
    if (endpoint[0]) {
        const char *sep = strstr(endpoint, "://");
        if (!sep || (strncmp(endpoint, "http://", 7) != 0 && strncmp(endpoint, "https://", 8) != 0))
            return kc_err(KC_EINVAL, "remote %s: endpoint= needs http:// or https://", b->shown);
        snprintf(scheme, sizeof scheme, "%.*s", (int)(sep - endpoint), endpoint);
        auth = sep + 3;
        size_t al = strcspn(auth, "/");
        if (!al) return kc_err(KC_EINVAL, "remote %s: endpoint= has no host", b->shown);
        if (path_style) snprintf(b->host, sizeof b->host, "%.*s", (int)al, auth);
        else snprintf(b->host, sizeof b->host, "%.*s.%.*s", bl, s, (int)al, auth);
    } else if (path_style) snprintf(b->host, sizeof b->host, "s3.%s.amazonaws.com", b->region);
    else snprintf(b->host, sizeof b->host, "%.*s.s3.%s.amazonaws.com", bl, s, b->region);
    if (path_style) snprintf(b->path0, sizeof b->path0, "/%.*s%.*s", bl, s, pl, prefix);
    else snprintf(b->path0, sizeof b->path0, "%.*s", pl, prefix);
    if (path_style) snprintf(b->root, sizeof b->root, "/%.*s", bl, s);
    snprintf(b->prefix, sizeof b->prefix, "%.*s", pl > 0 ? pl - 1 : 0, pl > 0 ? prefix + 1 : "");
    snprintf(b->base, sizeof b->base, "%s://%s%s", scheme, b->host, b->path0);
    return KC_OK;
}

static int parse_url(hb *b, const char *url) {
    const char *qm = strchr(url, '?');
    size_t len = qm ? (size_t)(qm - url) : strlen(url);
    const char *q = qm ? qm + 1 : "";
    const char *auth = strstr(url, "://"), *at, *colon;
    if (kc_store_url_userinfo(auth ? auth + 3 : url, &at, &colon) <
        0) /* nothing of it echoed: it may hold a password */
        return kc_err(KC_EINVAL,
                      "remote %s: an '@' after a '?': a password holding '?' is written %%3F, an '@' in a query "
                      "value %%40",
                      b->shown);
    int rc = check_params(b, q);
    if (rc) return rc;
    char layout[32] = "";
    if (param(q, "layout", layout, sizeof layout) < 0 || param(q, "ca_file", b->ca_file, sizeof b->ca_file) < 0)
        return KC_EINVAL;
    if (layout[0] && strcmp(layout, "bazel") != 0 && strcmp(layout, "default") != 0)
        return kc_err(KC_EINVAL, "remote %s: layout=%s (default or bazel)", b->shown, layout);
    b->bazel = strcmp(layout, "bazel") == 0;
    b->s3 = strncmp(url, "s3://", 5) == 0;
    if (!b->s3) return parse_http(b, url, len);
    char file[PARAM_MAX] = "";
    if (param(q, "credentials_file", file, sizeof file) < 0) return KC_EINVAL;
    rc = kc_config_aws_creds_(file[0] ? file : NULL, 0, &b->creds);
    return rc ? rc : parse_s3(b, url, len, q);
}

/* The URL as shown: the password "***", and the query's values kept (they hold no secret). */
static void url_shown(const char *url, char *out, size_t cap) { kc_store_redact_password(url, out, cap); }

/* ---- requests ---- */

/* The object's path below base: "/ac/<name>", "/cas/<name>.img", or bazel's "/ac/<sha256(name)>". */
static int object_path(hb *b, const char *name, char *out, size_t cap) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    if (b->bazel) {
        char h[65];
        rc = kc_sha256_hex(name, strlen(name), h);
        if (rc) return rc;
        snprintf(out, cap, "/ac/%s", h);
        return KC_OK;
    }
    const char *dot = strchr(name, '.');
    snprintf(out, cap, "/%s/%s", dot && strcmp(dot + 1, "img") == 0 ? "cas" : "ac", name);
    return KC_OK;
}

/* Sign an S3 request: the Host, x-amz-* and Authorization headers onto *hdrs. */
static int s3_sign(hb *b, const char *method, const char *objpath, const char *query, const void *body, size_t len,
                   struct curl_slist **hdrs) {
    char ph[65], date[20], path[1200], auth[1024], line[2200];
    int rc = kc_sha256_hex(body ? body : "", body ? len : 0, ph);
    if (!rc) rc = kc_sigv4_uri_encode(objpath, 1, path, sizeof path);
    if (rc) return rc;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    char h_host[320], h_sha[100], h_date[40], h_tok[2100];
    snprintf(h_host, sizeof h_host, "host:%s", b->host);
    snprintf(h_sha, sizeof h_sha, "x-amz-content-sha256:%s", ph);
    snprintf(h_date, sizeof h_date, "x-amz-date:%s", date);
    snprintf(h_tok, sizeof h_tok, "x-amz-security-token:%s", b->creds.session_token);
    const char *h[] = {h_host, h_sha, h_date, h_tok};
    size_t nh = b->creds.session_token[0] ? 4 : 3;
    kc_sigv4_req r = {method, path, query, h, nh, ph, date, b->region, "s3", b->creds.access_key, b->creds.secret_key};
    rc = kc_sigv4_authorization(&r, auth, sizeof auth, NULL);
    if (rc) return rc;
    for (size_t i = 0; i < nh; i++) {
        const char *colon = strchr(h[i], ':');
        snprintf(line, sizeof line, "%.*s: %s", (int)(colon - h[i]), h[i], colon + 1);
        *hdrs = kc_curl_->slist_append(*hdrs, line);
    }
    snprintf(line, sizeof line, "Authorization: %s", auth);
    *hdrs = kc_curl_->slist_append(*hdrs, line);
    kc_wipe(auth, sizeof auth), kc_wipe(line, sizeof line);
    return KC_OK;
}

/* One request for the object at `obj` (below base), under the breaker and one deadline, with `extra`
 * header lines (NULL-terminated, or NULL): KC_OK (2xx, c->data the body), KC_MISS (404) or an error;
 * KC_EBUSY for 412 or 409 (a condition failed: another lease holder, or a change meanwhile). */
static int request_q(hb *b, const char *method, const char *obj, const char *query, const void *body, size_t len,
                     const char *const *extra, kc_http_call *c) {
    char url[KC_REMOTE_URL_MAX + 2048], full[1000];
    memset(c, 0, sizeof *c);
    int rc = kc_brk_enter(&b->brk);
    if (rc) return rc;
    const char *auth = strstr(b->base, "://") + 3;
    int origin = (int)(auth - b->base + (ptrdiff_t)strcspn(auth, "/")); /* "scheme://host:port" */
    if (query) snprintf(url, sizeof url, "%.*s%s%s?%s", origin, b->base, b->root, obj, query);
    else snprintf(url, sizeof url, "%s%s", b->base, obj);
    struct curl_slist *hdrs = kc_curl_->slist_append(NULL, "Expect:");
    if (body) hdrs = kc_curl_->slist_append(hdrs, "Content-Type: application/octet-stream");
    for (size_t i = 0; extra && extra[i]; i++) hdrs = kc_curl_->slist_append(hdrs, extra[i]);
    if (b->s3) {
        snprintf(full, sizeof full, "%s%s", query ? b->root : b->path0, obj);
        rc = s3_sign(b, method, full, query ? query : "", body, len, &hdrs);
    }
    *c = (kc_http_call){method,
                        url,
                        hdrs,
                        body,
                        len,
                        b->cfg.max_value,
                        kc_mono_ns() + (uint64_t)b->cfg.deadline_ms * 1000000,
                        b->cfg.connect_ms,
                        b->ca_file[0] ? b->ca_file : NULL,
                        b->user[0] ? b->user : NULL,
                        b->password[0] || b->user[0] ? b->password : NULL,
                        b->shown,
                        0,
                        NULL,
                        0,
                        0,
                        ""};
    if (!rc) rc = kc_http_perform(&b->pool, c);
    if (!rc && (c->status == 412 || c->status == 409)) /* a condition failed: another holder, or a change */
        rc = kc_err(KC_EBUSY, "%s: %s %s: HTTP %ld (held by another host, or changed meanwhile)", b->shown, method, obj,
                    c->status);
    else if (!rc) rc = kc_http_status_rc(c, method);
    c->url = NULL; /* the local buffer */
    kc_curl_->slist_free_all(hdrs);
    c->headers = NULL;
    kc_brk_exit(&b->brk, rc != KC_OK && rc != KC_MISS && rc != KC_EBUSY);
    if (rc) free(c->data), c->data = NULL;
    return rc;
}

static int request_at(hb *b, const char *method, const char *obj, const void *body, size_t len,
                      const char *const *extra, kc_http_call *c) {
    return request_q(b, method, obj, NULL, body, len, extra, c);
}

/* One request for blob `name` (request_at at its object's path). */
static int request(hb *b, const char *method, const char *name, const void *body, size_t len, kc_http_call *c) {
    char obj[200];
    memset(c, 0, sizeof *c);
    int rc = object_path(b, name, obj, sizeof obj);
    return rc ? rc : request_at(b, method, obj, body, len, NULL, c);
}

static int h_get(kc_store_backend *be, const char *name, void **out, size_t *out_len) {
    kc_http_call c;
    *out = NULL, *out_len = 0;
    int rc = request(be->ctx, "GET", name, NULL, 0, &c);
    if (rc) return rc;
    *out = c.data, *out_len = c.len;
    if (!*out) *out = kc_malloc(1); /* an empty body: the core refuses it as an entry */
    return *out ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
}

static int h_put(kc_store_backend *be, const char *name, const void *data, size_t len) {
    hb *b = be->ctx;
    if ((uint64_t)len > b->cfg.max_value)
        return kc_err(KC_EINVAL, "%s: %zu bytes is over the value cap (%llu)", b->shown, len,
                      (unsigned long long)b->cfg.max_value);
    kc_http_call c;
    int rc = request(b, "PUT", name, data ? data : "", len, &c);
    free(c.data);
    return rc == KC_MISS ? kc_err(KC_EIO, "%s: PUT %s: HTTP 404 (does the server accept PUT there?)", b->shown, name)
                         : rc;
}

static int h_exists(kc_store_backend *be, const char *name) {
    kc_http_call c;
    int rc = request(be->ctx, "HEAD", name, NULL, 0, &c);
    free(c.data);
    return rc == KC_OK ? 1 : rc == KC_MISS ? 0 : rc;
}

static int h_remove(kc_store_backend *be, const char *name) {
    kc_http_call c;
    int rc = request(be->ctx, "DELETE", name, NULL, 0, &c);
    free(c.data);
    return rc;
}

/* ---- leases (s3:// only: a conditional create, PUT with If-None-Match: *) ---- */

/* A lease object, "<base>/lease/<name>", holds "kcache-lease 1 <expiry, ms since the epoch> <holder>". */
static int lease_parse(const kc_http_call *c, long long *expiry, char *holder, size_t cap) {
    char h[80];
    if (!c->data || c->len > 200 || sscanf(c->data, "kcache-lease 1 %lld %79s", expiry, h) != 2 || strlen(h) >= cap)
        return KC_ECORRUPT;
    snprintf(holder, cap, "%s", h);
    return KC_OK;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int h_lease_take(kc_store_backend *be, const char *name, uint64_t ttl_ms, const char *holder) {
    hb *b = be->ctx;
    char obj[200], body[200], ifm[160];
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    if (!holder || !*holder || strlen(holder) > 64 || strpbrk(holder, " \t\r\n"))
        return kc_err(KC_EINVAL, "%s: a lease holder is 1 to 64 printable bytes without spaces", b->shown);
    snprintf(obj, sizeof obj, "/lease/%s", name);
    int n = snprintf(body, sizeof body, "kcache-lease 1 %lld %s\n", now_ms() + (long long)ttl_ms, holder);
    const char *create[] = {"If-None-Match: *", NULL};
    kc_http_call c;
    rc = request_at(b, "PUT", obj, body, (size_t)n, create, &c);
    free(c.data);
    if (rc != KC_EBUSY) return rc;
    /* Held: by a live holder (busy), or expired (taken over if nobody else changed it meanwhile). */
    rc = request_at(b, "GET", obj, NULL, 0, NULL, &c);
    if (rc == KC_MISS) return KC_EBUSY; /* released just now: the next poll finds the blob or takes it */
    if (rc) return rc;
    long long expiry = 0;
    char who[80];
    int prc = lease_parse(&c, &expiry, who, sizeof who);
    snprintf(ifm, sizeof ifm, "If-Match: %s", c.etag);
    int have_etag = c.etag[0] != 0;
    free(c.data);
    if (prc == KC_OK && expiry > now_ms()) return KC_EBUSY;
    if (!have_etag) return KC_EBUSY; /* cannot take it over safely */
    const char *over[] = {ifm, NULL};
    rc = request_at(b, "PUT", obj, body, (size_t)n, over, &c);
    free(c.data);
    return rc;
}

static int h_lease_release(kc_store_backend *be, const char *name, const char *holder) {
    hb *b = be->ctx;
    char obj[200], who[80];
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    snprintf(obj, sizeof obj, "/lease/%s", name);
    kc_http_call c;
    rc = request_at(b, "GET", obj, NULL, 0, NULL, &c);
    if (rc) return rc;
    long long expiry;
    int mine = lease_parse(&c, &expiry, who, sizeof who) == KC_OK && holder && strcmp(who, holder) == 0;
    free(c.data);
    if (!mine) return KC_MISS;
    rc = request_at(b, "DELETE", obj, NULL, 0, NULL, &c);
    free(c.data);
    return rc;
}

/* ---- listing (s3:// only: ListObjectsV2), for kcache gc and purge ---- */

typedef struct list_ctx {
    hb *b;
    kc_store_iter_cb cb;
    void *ctx;
} list_ctx;

/* One listed object: a blob of ours ("<prefix>/ac/<name>", "<prefix>/cas/<name>") goes to the callback;
 * anything else in the bucket (leases, other tools' objects) is passed over. */
static int on_object(const kc_s3_object *o, void *ud) {
    list_ctx *l = ud;
    const char *k = o->key;
    size_t pl = strlen(l->b->prefix);
    if (pl) {
        if (strncmp(k, l->b->prefix, pl) != 0 || k[pl] != '/') return 0;
        k += pl + 1;
    }
    const char *name = strncmp(k, "ac/", 3) == 0 ? k + 3 : strncmp(k, "cas/", 4) == 0 ? k + 4 : NULL;
    if (!name || kc_store_name_check(name) != KC_OK) return 0;
    kc_store_item it = {name, o->size, o->last_modified, NULL};
    return l->cb(&it, l->ctx);
}

static int h_iterate(kc_store_backend *be, kc_store_iter_cb cb, void *ctx) {
    hb *b = be->ctx;
    char token[KC_S3_KEY_MAX + 1] = "", sent[KC_S3_KEY_MAX + 1], etok[3 * KC_S3_KEY_MAX + 1], pfx[620], epfx[1900],
                               q[4096];
    snprintf(pfx, sizeof pfx, "%s%s", b->prefix, b->prefix[0] ? "/" : "");
    int rc = kc_sigv4_uri_encode(pfx, 0, epfx, sizeof epfx);
    list_ctx l = {b, cb, ctx};
    for (int page = 0; rc == KC_OK; page++) {
        int truncated = 0;
        if (page >= KC_HTTP_LIST_PAGES_MAX) {
            rc = kc_err(KC_ECORRUPT, "%s: listing: over %d pages (%d objects each); the bucket is too large to list",
                        b->shown, KC_HTTP_LIST_PAGES_MAX, KC_S3_LIST_MAX);
            break;
        }
        memcpy(sent, token, sizeof sent);
        if (token[0]) rc = kc_sigv4_uri_encode(token, 0, etok, sizeof etok);
        if (rc) break;
        /* The canonical query: its parameters sorted by name. */
        snprintf(q, sizeof q, "%s%s%slist-type=2&max-keys=%d&prefix=%s", token[0] ? "continuation-token=" : "",
                 token[0] ? etok : "", token[0] ? "&" : "", KC_S3_LIST_MAX, epfx);
        kc_http_call c;
        rc = request_q(b, "GET", b->root[0] ? "" : "/", q, NULL, 0, NULL, &c); /* "/bucket" or "/" */
        if (rc == KC_MISS) rc = kc_err(KC_EIO, "%s: listing: HTTP 404 (does the bucket exist?)", b->shown);
        if (rc) break;
        rc = kc_s3_list_page(c.data ? c.data : "", c.len, on_object, &l, &truncated, token, sizeof token);
        free(c.data);
        if (rc || !truncated) break;
        if (strcmp(token, sent) == 0) /* a server repeating itself would be listed forever */
            rc = kc_err(KC_ECORRUPT,
                        "%s: listing: the server sent back the continuation token it was given "
                        "(a broken S3 server?)",
                        b->shown);
    }
    return rc;
}

static int h_state(kc_store_backend *be, kc_remote_state *out) {
    hb *b = be->ctx;
    memset(out, 0, sizeof *out);
    snprintf(out->url, sizeof out->url, "%s", b->shown);
    kc_brk_state(&b->brk, out);
    return KC_OK;
}

static void h_free(kc_store_backend *be) {
    hb *b = be->ctx;
    kc_http_pool_destroy(&b->pool);
    kc_brk_destroy(&b->brk);
    kc_wipe(b, sizeof *b);
    free(b);
}

static int h_open(kc_store_backend **out, const char *url, const kc_remote_limits *cfg) {
    *out = NULL;
    if (!kc_curl_load()) return KC_EUNAVAILABLE;
    hb *b = kc_calloc(1, sizeof *b);
    if (!b) return kc_err(KC_ENOMEM, "out of memory");
    url_shown(url, b->shown, sizeof b->shown);
    int rc = parse_url(b, url);
    if (rc) {
        kc_wipe(b, sizeof *b);
        free(b);
        return rc;
    }
    b->cfg = *cfg;
    if (!b->cfg.connect_ms) b->cfg.connect_ms = 1000;
    if (!b->cfg.deadline_ms) b->cfg.deadline_ms = 5000;
    if (!b->cfg.max_value) b->cfg.max_value = 64ull << 20;
    if (b->cfg.max_value > KC_ENTRY_MAX_BYTES) b->cfg.max_value = KC_ENTRY_MAX_BYTES;
    kc_brk_init(&b->brk, b->cfg.backoff_ms, b->cfg.backoff_max_ms, b->shown);
    kc_http_pool_init(&b->pool);
    b->be.version = KC_STORE_BACKEND_VERSION;
    b->be.name = b->s3 ? "s3" : "http";
    b->be.get = h_get;
    b->be.put = h_put;
    b->be.exists = h_exists;
    b->be.remove = h_remove;
    b->be.free = h_free;
    b->be.state = h_state;
    if (b->s3) b->be.lease_take = h_lease_take, b->be.lease_release = h_lease_release;
    if (b->s3 && !b->bazel) b->be.iterate = h_iterate;
    b->be.ctx = b;
    *out = &b->be;
    return KC_OK;
}

/* The schemes, registered by the library at first use (registry.c's builtins). */
const kc_store_scheme kc_store_http_scheme = {KC_STORE_SCHEME_VERSION, "http", h_open, url_shown};
const kc_store_scheme kc_store_https_scheme = {KC_STORE_SCHEME_VERSION, "https", h_open, url_shown};
const kc_store_scheme kc_store_s3_scheme = {KC_STORE_SCHEME_VERSION, "s3", h_open, url_shown};
