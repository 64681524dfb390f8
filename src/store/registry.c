/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/registry.c — remote back ends by URL scheme (kc_store_register, kc_store_open_url).
 *
 * The one idea: SQLite's VFS list.  A back end is a versioned table (kc_store_scheme) registered
 * under its scheme; the library registers its own built-ins (builtins[] below) at first use, and an
 * application may add more before it opens a cache.  The first registration of a scheme wins: a
 * second is refused, so no library takes over another's URLs.  Tables are never unregistered (a
 * cache's tiers hold backends the table opened), so a lookup may hand out the pointer unlocked.
 *
 * The URL pieces every back end reads the same way live here too: the user information's bounds
 * (kc_store_url_userinfo) and %XX escapes (kc_store_pct_decode), beside the core's redaction.
 *
 * Callers: cache/cache.c opens its remotes here (through kc_store_open_url); applications and
 * tests register here.  Must not: open anything itself, or know a back end beyond its table.
 */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>

#include "../common/internal.h"

#define SCHEMES_MAX 32
#define SCHEME_LEN_MAX 31

/* The back ends built into the library: one line each (a new one is its file and its line here). */
static const kc_store_scheme *const builtins[] = {
#ifdef KCACHE_HAVE_REDIS
    &kc_store_redis_scheme,
    &kc_store_rediss_scheme,
    &kc_store_redis_cluster_scheme,
    &kc_store_rediss_cluster_scheme,
#endif
#ifdef KCACHE_HAVE_HTTP
    &kc_store_http_scheme,
    &kc_store_https_scheme,
    &kc_store_s3_scheme,
#endif
    NULL,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const kc_store_scheme *schemes[SCHEMES_MAX];
static size_t nschemes;

static const kc_store_scheme *find_locked(const char *scheme, size_t len) {
    for (size_t i = 0; i < nschemes; i++)
        if (strlen(schemes[i]->scheme) == len && strncmp(schemes[i]->scheme, scheme, len) == 0) return schemes[i];
    return NULL;
}

static int scheme_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > SCHEME_LEN_MAX || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
                 c == '.';
        if (!ok) return 0;
    }
    return 1;
}

static int add(const kc_store_scheme *s) {
    if (!s) return kc_err(KC_EINVAL, "kc_store_register: NULL scheme table");
    if (s->version < 1 || s->version > KC_STORE_SCHEME_VERSION)
        return kc_err(KC_EVERSION, "store scheme table has version %u (this build: 1 to %d)", s->version,
                      KC_STORE_SCHEME_VERSION);
    if (!scheme_ok(s->scheme) || !s->open)
        return kc_err(KC_EINVAL,
                      "kc_store_register: a scheme (letters, digits, '+', '-', '.'; %d bytes at most) "
                      "and an open function are required",
                      SCHEME_LEN_MAX);
    pthread_mutex_lock(&mu);
    int rc = KC_OK;
    if (find_locked(s->scheme, strlen(s->scheme)))
        rc = kc_err(KC_EINVAL, "the store scheme '%s' is registered already", s->scheme);
    else if (nschemes == SCHEMES_MAX) rc = kc_err(KC_EINVAL, "too many store schemes (%d at most)", SCHEMES_MAX);
    else schemes[nschemes++] = s;
    pthread_mutex_unlock(&mu);
    return rc;
}

static void add_builtins(void) {
    for (size_t i = 0; builtins[i]; i++) (void)add(builtins[i]);
}

int kc_store_register(const kc_store_scheme *s) {
    pthread_once(&once, add_builtins);
    return add(s);
}

static const kc_store_scheme *find(const char *scheme, size_t len) {
    pthread_once(&once, add_builtins);
    pthread_mutex_lock(&mu);
    const kc_store_scheme *s = find_locked(scheme, len);
    pthread_mutex_unlock(&mu);
    return s;
}

const kc_store_scheme *kc_store_scheme_find(const char *scheme) { return scheme ? find(scheme, strlen(scheme)) : NULL; }

/* The scheme of `url` (before "://"): its length, 0 when it has none. */
static size_t scheme_len(const char *url) {
    const char *e = strstr(url, "://");
    return e && e > url && (size_t)(e - url) <= SCHEME_LEN_MAX ? (size_t)(e - url) : 0;
}

void kc_store_redact(const char *url, char *out, size_t cap) {
    size_t sl = scheme_len(url);
    const kc_store_scheme *sc = sl ? find(url, sl) : NULL;
    if (sc && sc->redact) {
        sc->redact(url, out, cap);
        return;
    }
    kc_store_redact_password(url, out, cap);
}

void kc_store_redact_password(const char *url, char *out, size_t cap) {
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    const char *at = strrchr(s, '@');
    if (!at) {
        snprintf(out, cap, "%s", url);
        return;
    }
    const char *colon = memchr(s, ':', (size_t)(at - s));
    int keep = colon && colon > s ? (int)(colon - s) : 0; /* the user name, shown */
    snprintf(out, cap, "%.*s%.*s:***%s", (int)(s - url), url, keep, s, at);
}

int kc_store_url_userinfo(const char *s, const char **at, const char **colon) {
    const char *q = strchr(s, '?'), *a = NULL;
    for (const char *p = s; *p && (!q || p < q); p++)
        if (*p == '@') a = p;
    *at = a;
    *colon = a ? memchr(s, ':', (size_t)(a - s)) : NULL;
    if (!a && q && strchr(q, '@')) return -1;
    return a != NULL;
}

int kc_store_pct_decode(const char *p, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '%') {
            int hi = i + 1 < n ? kc_hexval(p[i + 1]) : -1, lo = i + 2 < n ? kc_hexval(p[i + 2]) : -1;
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi * 16 + lo), i += 2;
        }
        if (c == '\0' || o + 1 >= cap) return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int kc_store_open_url(kc_store_backend **out, const char *url, const kc_remote_limits *limits) {
    if (out) *out = NULL;
    if (!out || !url) return kc_err(KC_EINVAL, "kc_store_open_url: NULL argument");
    char shown[600];
    kc_store_redact(url, shown, sizeof shown);
    size_t sl = scheme_len(url);
    if (!sl) return kc_err(KC_EINVAL, "remote '%s': not a URL (scheme://…)", shown);
    const kc_store_scheme *sc = find(url, sl);
    if (!sc && (sl == 5 || sl == 6) && strncmp(url, "rediss", sl) == 0)
        return kc_err(KC_EINVAL,
                      "remote '%s': this build has no redis back end: rebuild with hiredis "
                      "(libhiredis-dev; cmake -DKCACHE_WITH_REDIS=ON)",
                      shown);
    if (!sc && ((sl == 4 && strncmp(url, "http", 4) == 0) || (sl == 5 && strncmp(url, "https", 5) == 0) ||
                (sl == 2 && strncmp(url, "s3", 2) == 0)))
        return kc_err(KC_EINVAL,
                      "remote '%s': this build has no HTTP back end: rebuild with libcurl "
                      "(libcurl4-openssl-dev; cmake -DKCACHE_WITH_HTTP=ON)",
                      shown);
    if (!sc) return kc_err(KC_EINVAL, "remote '%s': no back end is registered for '%.*s://'", shown, (int)sl, url);
    kc_remote_limits none = KC_REMOTE_LIMITS_INIT;
    int rc = sc->open(out, url, limits ? limits : &none);
    if (rc == KC_OK && !*out) rc = kc_err(KC_ERROR, "remote '%s': its back end opened nothing", shown);
    if (rc != KC_OK && *out) (*out)->free(*out), *out = NULL;
    return rc;
}

#ifndef KCACHE_HAVE_REDIS
/* A build without hiredis keeps the redis calls of the API: they say what is missing. */
int kc_store_redis_open(kc_store_backend **out, const char *url, const kc_remote_limits *cfg) {
    (void)cfg;
    if (out) *out = NULL;
    if (!out || !url) return kc_err(KC_EINVAL, "kc_store_redis_open: NULL argument");
    return kc_err(KC_EUNAVAILABLE,
                  "this build has no redis back end: rebuild with hiredis (cmake -DKCACHE_WITH_REDIS=ON)");
}

int kc_store_redis_state(kc_store_backend *b, kc_remote_state *out) {
    (void)b, (void)out;
    return kc_err(KC_EINVAL, "kc_store_redis_state: not a redis backend (this build has none)");
}
#endif
