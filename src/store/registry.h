/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/registry.h — remote back ends by URL scheme, and the list of remotes a cache is given
 * (internal half; the public half, kc_store_register, is in kcache/sys/store.h).
 *
 * The one idea: a URL names its back end by its scheme, and the front door opens every remote of
 * the list through the registry, so that no file above the store names a back end.
 *
 * Callers: cache/cache.c (tiers_assemble: kc_remotes_parse, kc_store_open_url); store/tiers.c
 * (kc_store_redact, for a tier's URL as stats show it).
 */
#ifndef KC_STORE_REGISTRY_H
#define KC_STORE_REGISTRY_H

#include <stddef.h>

#include "kcache/store.h"
#include "kcache/sys/store.h"

/** Remotes in one list at most (the tiers hold eight, the local directory one of them). */
#define KC_REMOTES_MAX 7
/** A remote's URL, attributes removed, at most this long. */
#define KC_REMOTE_URL_MAX 1024

/** One remote of a list: its URL and what its attributes say. */
typedef struct kc_remote_spec {
    char url[KC_REMOTE_URL_MAX + 1]; /* without its attributes */
    int readonly;                    /* "|read-only" */
    kc_remote_limits limits;         /* the defaults given, overridden by its attributes */
} kc_remote_spec;

/**
 * Parse a list of remotes: URLs separated by spaces (or tabs, newlines), each optionally followed by
 * attributes "|name" or "|name=value" (ccache's remote_storage syntax): read-only, connect-ms=N,
 * deadline-ms=N, backoff-ms=N, backoff-max-ms=N, max-value=SIZE (bytes, or with a K, M or G suffix),
 * ttl=SECONDS.  KC_OK with out[0..*n); KC_EINVAL naming the remote (its password hidden) and the
 * attribute for an unknown attribute, a bad value, a URL too long or more than `cap` remotes.
 */
int kc_remotes_parse(const char *list, const kc_remote_limits *defaults, kc_remote_spec *out, size_t cap, size_t *n);

/** `url` as messages and stats show it: its scheme's redact, else a password between "://" and the
 *  last '@' (after "user:" when there is one) becomes "***". */
void kc_store_redact(const char *url, char *out, size_t cap);

/** The core's own redaction, for back ends too: a password (what lies between "://" and the last '@',
 *  after "user:" when there is one) becomes "***"; the rest is kept. */
void kc_store_redact_password(const char *url, char *out, size_t cap);

/**
 * The user information of a URL, for the back ends that take one (http.c, redis_url.c): `s` is what
 * follows "scheme://".  It ends at the last '@' before the first '?' (*at; NULL: none), and *colon is
 * the first ':' before that '@' (NULL: none): the user is [s, colon or at), the password (colon, at).
 * 1 when there is user information, 0 when there is none, -1 when an '@' comes only after a '?' —
 * refused by every caller: a password holding '?' or a query's unescaped '@', either way nothing
 * before it may be taken or shown.  Callers: store/http.c, store/redis_url.c.
 */
int kc_store_url_userinfo(const char *s, const char **at, const char **colon);

/** p[0..n) with its %XX escapes decoded into out[cap] (NUL-terminated); -1 when an escape is malformed,
 *  a byte decodes to NUL, or it does not fit.  Callers: store/http.c (user information),
 *  store/redis_url.c (query values). */
int kc_store_pct_decode(const char *p, size_t n, char *out, size_t cap);

#ifdef KCACHE_HAVE_REDIS
/** The redis back end's scheme table (redis.c), registered at first use (registry.c). */
extern const kc_store_scheme kc_store_redis_scheme;
extern const kc_store_scheme kc_store_rediss_scheme; /* the same back end over TLS */
/** The same back end's cluster mode: "redis+cluster://host:port[,host:port...]", over TLS "rediss+cluster://". */
extern const kc_store_scheme kc_store_redis_cluster_scheme;
extern const kc_store_scheme kc_store_rediss_cluster_scheme;
#endif
#ifdef KCACHE_HAVE_HTTP
/** The HTTP content store's schemes (http.c: http, https, s3), registered at first use (registry.c). */
extern const kc_store_scheme kc_store_http_scheme, kc_store_https_scheme, kc_store_s3_scheme;
#endif

#endif
