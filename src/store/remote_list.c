/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/remote_list.c — the list of remotes a cache is given (kc_options.remote, KCACHE_REMOTE):
 * "URL[|attribute…] URL…", ccache's remote_storage syntax.
 *
 * The one idea: one table of attributes (name, what it sets, its kind) read by one loop, so that a
 * new attribute is one row.  The list is parsed whole before anything is opened: a typo in the last
 * remote fails the open, never half of it.  Caller: cache/cache.c (tiers_assemble).
 *
 * Must not: open a remote, or know a back end (an attribute means the same for every one).
 */
#include "registry.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"

typedef enum { A_FLAG, A_MS, A_SIZE } attr_kind;

typedef struct attr {
    const char *name;
    attr_kind kind;
    size_t off; /* in kc_remote_limits (A_MS, A_SIZE) */
} attr;

/* Every attribute a remote's URL may carry; a new one is a row. */
static const attr attrs[] = {
    {"read-only", A_FLAG, 0},
    {"connect-ms", A_MS, offsetof(kc_remote_limits, connect_ms)},
    {"deadline-ms", A_MS, offsetof(kc_remote_limits, deadline_ms)},
    {"backoff-ms", A_MS, offsetof(kc_remote_limits, backoff_ms)},
    {"backoff-max-ms", A_MS, offsetof(kc_remote_limits, backoff_max_ms)},
    {"max-value", A_SIZE, offsetof(kc_remote_limits, max_value)},
    {"ttl", A_MS, offsetof(kc_remote_limits, ttl_s)}, /* seconds, an unsigned like the others */
};

/* A number with an optional K, M or G suffix (binary; only for sizes): KC_OK with *out. */
static int number(const char *v, size_t n, int size, uint64_t max, uint64_t *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return KC_EINVAL;
    memcpy(buf, v, n);
    buf[n] = '\0';
    if (buf[0] < '0' || buf[0] > '9') return KC_EINVAL;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(buf, &end, 10);
    unsigned shift = 0;
    static const char units[] = "kKmMgG"; /* 2^10, 2^20, 2^30 */
    const char *u = size && *end ? strchr(units, *end) : NULL;
    if (size && *end) shift = u ? (unsigned)(u - units) / 2 * 10 + 10 : 99, end++;
    if (errno || *end || shift == 99 || (shift && x > (max >> shift)) || (x << shift) > max) return KC_EINVAL;
    *out = (uint64_t)x << shift;
    return KC_OK;
}

/* Apply one attribute "name[=value]" (n bytes at a) to `r`. */
static int apply(kc_remote_spec *r, const char *a, size_t n) {
    const char *eq = memchr(a, '=', n);
    size_t nl = eq ? (size_t)(eq - a) : n;
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        const attr *t = &attrs[i];
        if (strlen(t->name) != nl || strncmp(t->name, a, nl) != 0) continue;
        if (t->kind == A_FLAG) {
            if (eq) return KC_EINVAL;
            r->readonly = 1;
            return KC_OK;
        }
        uint64_t v;
        if (!eq || number(eq + 1, n - nl - 1, t->kind == A_SIZE, t->kind == A_SIZE ? UINT64_MAX : UINT32_MAX, &v))
            return KC_EINVAL;
        char *field = (char *)&r->limits + t->off;
        if (t->kind == A_SIZE) memcpy(field, &v, sizeof v);
        else {
            unsigned u = (unsigned)v;
            memcpy(field, &u, sizeof u);
        }
        return KC_OK;
    }
    return KC_EINVAL;
}

/* One remote "URL|attr|attr" (n bytes at p) into *r. */
static int one(const char *p, size_t n, const kc_remote_limits *defaults, kc_remote_spec *r) {
    memset(r, 0, sizeof *r);
    r->limits = *defaults;
    const char *bar = memchr(p, '|', n);
    size_t ul = bar ? (size_t)(bar - p) : n;
    char shown[KC_REMOTE_URL_MAX + 64];
    if (ul > KC_REMOTE_URL_MAX) return kc_err(KC_EINVAL, "remote URL of %zu bytes: %d at most", ul, KC_REMOTE_URL_MAX);
    memcpy(r->url, p, ul);
    r->url[ul] = '\0';
    if (ul == 0) return kc_err(KC_EINVAL, "remote list: an attribute without a URL ('%.*s')", (int)n, p);
    while (bar) {
        const char *a = bar + 1, *end = p + n;
        bar = memchr(a, '|', (size_t)(end - a));
        size_t al = (size_t)((bar ? bar : end) - a);
        if (apply(r, a, al) != KC_OK) {
            kc_store_redact(r->url, shown, sizeof shown);
            return kc_err(KC_EINVAL,
                          "remote '%s': bad attribute '%.*s' (read-only, connect-ms=N, deadline-ms=N, "
                          "backoff-ms=N, backoff-max-ms=N, max-value=SIZE, ttl=SECONDS)",
                          shown, (int)al, a);
        }
    }
    return KC_OK;
}

int kc_remotes_parse(const char *list, const kc_remote_limits *defaults, kc_remote_spec *out, size_t cap, size_t *n) {
    *n = 0;
    kc_remote_limits none = KC_REMOTE_LIMITS_INIT;
    if (!defaults) defaults = &none;
    const char *p = list ? list : "";
    static const char ws[] = " \t\r\n";
    for (;;) {
        p += strspn(p, ws);
        if (!*p) return KC_OK;
        size_t len = strcspn(p, ws);
        if (*n == cap) return kc_err(KC_EINVAL, "too many remotes (%zu at most)", cap);
        int rc = one(p, len, defaults, &out[*n]);
        if (rc) return rc;
        (*n)++;
        p += len;
    }
}
