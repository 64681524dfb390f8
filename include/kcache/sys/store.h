/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/sys/store.h — the interface for store backend authors (weaker stability promise
 * than the caller API; check `version`).
 *
 * A backend is a versioned table of functions over opaque named blobs (SQLite's VFS,
 * libgit2's odb backends).  Names are "<32 hex key>.<variant>"; values are encoded
 * entries, which the core validates — a backend never interprets them.  The core calls a
 * backend only through this table, from the tiers (local first, then remotes, in the order
 * they were added), and counts a remote backend's failures as misses.  A remote back end is
 * found by its URL's scheme among those registered (kc_store_register, below).
 * Every function must be safe to call from many threads at once.
 */
#ifndef KCACHE_SYS_STORE_H
#define KCACHE_SYS_STORE_H

#include "../common.h"
#include "../store.h" /* kc_remote_limits, kc_remote_state */

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Version of kc_store_backend described here.  Version 2 added the optional `peek` and
 * `state` slots at the end, version 3 `get_many`, 4 `put_foreign`/`is_own`, 5 `put_origin`, 6 the
 * leases, 7 `get_into`; tables of earlier versions (without them) are still accepted, and the core reads a slot
 * only from a table whose version has it.
 */
#define KC_STORE_BACKEND_VERSION 7

/** One stored blob, for iterate.  Borrowed for the callback's duration. */
typedef struct kc_store_item {
    const char *name; /**< "<key hex>.<variant>" */
    uint64_t bytes;
    int64_t last_used; /**< Seconds since the epoch; 0 if unknown. */
    const char *path;  /**< A file path for file-backed stores, else NULL. */
} kc_store_item;

/** Callback of iterate; a non-zero return stops the walk and is returned by iterate. */
typedef int (*kc_store_iter_cb)(const kc_store_item *item, void *ctx);

typedef struct kc_store_backend kc_store_backend;

/** The table of functions a backend provides.  Unused optional slots are NULL. */
struct kc_store_backend {
    unsigned version; /**< KC_STORE_BACKEND_VERSION */
    const char *name; /**< "local", "redis", … */
    /** Read a blob: KC_OK with *out (freed by the core with free()), or KC_MISS. */
    int (*get)(kc_store_backend *b, const char *name, void **out, size_t *out_len);
    /** Write a blob atomically, replacing any earlier one. */
    int (*put)(kc_store_backend *b, const char *name, const void *data, size_t len);
    /** 1 when present, 0 when not, else an error. */
    int (*exists)(kc_store_backend *b, const char *name);
    /** Remove; KC_MISS when absent. */
    int (*remove)(kc_store_backend *b, const char *name);
    /** Mark as recently used (optional). */
    int (*touch)(kc_store_backend *b, const char *name);
    /** Visit every blob (optional for remotes). */
    int (*iterate)(kc_store_backend *b, kc_store_iter_cb cb, void *ctx);
    /** Move a blob that failed validation aside (optional: remove is used instead). */
    int (*quarantine)(kc_store_backend *b, const char *name);
    /** Release the backend. */
    void (*free)(kc_store_backend *b);
    /** The backend's own state. */
    void *ctx;
    /**
     * Optional: the first of `n` names that is present, in one round trip (a remote's
     * lookup of a device's candidate variants).  KC_OK with *which, *out, *out_len; KC_MISS.
     */
    int (*get_first)(kc_store_backend *b, const char *const *names, size_t n, size_t *which, void **out,
                     size_t *out_len);
    /* version 2 */
    /**
     * Optional: read a blob like get, but not as a use — it is not marked recently used
     * (maintenance reads: publish, verify, export), so a scan of the whole store does not
     * make every blob look just used to an eviction.  NULL: get is used instead.
     */
    int (*peek)(kc_store_backend *b, const char *name, void **out, size_t *out_len);
    /** Optional: what a remote backend says of itself (URL, breaker); NULL: it says nothing. */
    int (*state)(kc_store_backend *b, kc_remote_state *out);
    /* version 3 */
    /**
     * Optional: read `n` blobs in one round trip (a graph's images, [Note: two levels] in
     * kcache/entry.h).  KC_OK with out[i] (freed by the core with free()) and out_len[i] for each
     * present name, out[i] NULL for an absent one; an error fails the whole call and leaves every
     * out[i] NULL.  NULL: get is called once per name.
     */
    int (*get_many)(kc_store_backend *b, const char *const *names, size_t n, void **out, size_t *out_len);
    /* version 4: provenance, for a local tier ([Note: provenance] in src/store/local.c) */
    /** Optional: write like put, marking the blob as come from elsewhere (a remote, a bundle). */
    int (*put_foreign)(kc_store_backend *b, const char *name, const void *data, size_t len);
    /**
     * Optional: 1 when the blob was written by put (this cache's own compile), 0 when by
     * put_foreign, KC_MISS when absent.  NULL: never own — publishing then seals nothing that
     * arrived without a MAC under the current key.
     */
    int (*is_own)(kc_store_backend *b, const char *name);
    /* version 5: where a foreign blob came from ([Note: provenance record] in src/store/local.c) */
    /**
     * Optional: write like put_foreign, recording `origin` (a kc_provenance_format text: "fetched
     * <url> verified=<verifier>", "imported <bundle> verified=<verifier>") with the blob.  NULL:
     * put_foreign is used, and nothing but the mode says where the blob came from.
     */
    int (*put_origin)(kc_store_backend *b, const char *name, const void *data, size_t len, const char *origin);
    /* version 6: one compile per key across the fleet (leases) */
    /**
     * Optional: take a lease on `name` for `ttl_ms` milliseconds as `holder` (a token unique to this
     * process and attempt, at most 64 printable bytes), so that other hosts wait for the blob instead of
     * compiling it too.  KC_OK: taken; KC_EBUSY: another holder has it; any other error: none was taken
     * (the caller compiles as without leases).  A lease is never needed for correctness: it only saves work.
     */
    int (*lease_take)(kc_store_backend *b, const char *name, uint64_t ttl_ms, const char *holder);
    /** Optional: release the lease on `name` if `holder` still has it (KC_OK), else leave it (KC_MISS). */
    int (*lease_release)(kc_store_backend *b, const char *name, const char *holder);
    /* version 7: a hit without an allocation */
    /**
     * Optional: read a blob like get, into the core's `buf` (`cap` bytes) when it fits: KC_OK with *out
     * == buf, or with *out a buffer of the backend's (freed by the core with free()) when it does not;
     * KC_MISS.  `buf` is the core's, valid only for the call.  The core calls it only for the local
     * tier (kcache's own directory), whose hits' bytes it checks and lets go at once; NULL: get is used.
     */
    int (*get_into)(kc_store_backend *b, const char *name, void *buf, size_t cap, void **out, size_t *out_len);
};

/* ---- provenance records ---- */

/** Where a local file's bytes came from. */
typedef enum kc_provenance_kind {
    KC_PROV_UNKNOWN = 0, /**< Come from elsewhere (mode 0400), no readable record of where. */
    KC_PROV_COMPILED,    /**< This cache compiled it (mode 0600: the mode decides, never the record). */
    KC_PROV_FETCHED,     /**< Fetched from a remote. */
    KC_PROV_IMPORTED     /**< Imported from a bundle. */
} kc_provenance_kind;

#define KC_PROV_SOURCE_MAX 200
#define KC_PROV_VERIFIER_MAX 40

/** A local file's provenance: its mode, and the record written with its bytes. */
typedef struct kc_provenance {
    kc_provenance_kind kind;
    int recorded;    /**< 1: a well-formed record was read (and agrees with the mode); 0: none. */
    int unavailable; /**< 1: the file system keeps no record (it refuses user extended attributes). */
    char source[KC_PROV_SOURCE_MAX + 1];     /**< The remote's URL (no password) or the bundle's file name; "" */
    char verifier[KC_PROV_VERIFIER_MAX + 1]; /**< "ed25519:<key id>", "mac:<key id>", "none"; "" when unknown */
    int64_t created;                         /**< Seconds since the epoch when recorded; 0 when unknown */
} kc_provenance;

/**
 * The provenance of the local entry file `path` (a kc_cache_item's path): KC_OK with *out, KC_MISS
 * when it is absent.  The mode decides compiled or not; a record that is malformed, or claims
 * "compiled" for a file of mode 0400, is ignored (kind KC_PROV_UNKNOWN, recorded 0).  The record is
 * what this host saw when it stored the bytes: it never makes them trusted (publishing re-checks).
 */
KC_API int kc_provenance_read(const char *path, kc_provenance *out);

/**
 * The `origin` text of put_origin: "<kind> <source> verified=<verifier>" (kind KC_PROV_FETCHED or
 * KC_PROV_IMPORTED; the source's spaces and control characters written '_', cut at KC_PROV_SOURCE_MAX;
 * `verifier` NULL or "": "none").  `cap` of KC_PROV_SOURCE_MAX + 64 always suffices.
 */
KC_API void kc_provenance_format(char *out, size_t cap, kc_provenance_kind kind, const char *source,
                                 const char *verifier);

/** "compiled", "fetched", "imported" or "unknown"; static. */
KC_API const char *kc_provenance_kind_name(kc_provenance_kind k);

/* ---- back ends by URL scheme ---- */

/** Version of kc_store_scheme described here. */
#define KC_STORE_SCHEME_VERSION 1

/**
 * A remote back end, registered under its URL scheme (SQLite's sqlite3_vfs_register, libgit2's odb
 * back ends): how a URL "<scheme>://…" in kc_options.remote / KCACHE_REMOTE becomes a backend table.
 * The table is the caller's and must outlive every cache opened after it was registered (a static).
 */
typedef struct kc_store_scheme {
    unsigned version;   /**< KC_STORE_SCHEME_VERSION */
    const char *scheme; /**< "redis", "mem", …: letters, digits, '+', '-', '.'; at most 31 bytes. */
    /**
     * Open a backend for `url` (the whole URL, scheme included, attributes removed) under `limits` (never
     * NULL; 0 fields: the back end's defaults).  Nothing need connect yet.  KC_OK with *out, or an error
     * with a message that never shows a password (*out NULL).
     */
    int (*open)(kc_store_backend **out, const char *url, const kc_remote_limits *limits);
    /**
     * Optional: `url` as messages and stats may show it (a password as "***"); NULL: the core hides what
     * lies between "://" and the last '@' after "user:" itself.
     */
    void (*redact)(const char *url, char *out, size_t cap);
} kc_store_scheme;

/**
 * Register a back end for its scheme; thread-safe, effective for caches opened afterwards.  A scheme
 * already registered is refused (KC_EINVAL, naming it): the first registration wins, so a library
 * cannot silently take over another's URLs (the built-in "redis" included).  KC_EVERSION for a table
 * of an unknown version; KC_EINVAL for a malformed scheme or a table without `open`.  `s` is borrowed.
 */
KC_API int kc_store_register(const kc_store_scheme *s);

/** The back end registered for `scheme` (without "://"), or NULL; thread-safe. */
KC_API const kc_store_scheme *kc_store_scheme_find(const char *scheme);

/**
 * Open `url` through the back end registered for its scheme.  KC_EINVAL for a URL without a scheme or
 * one no back end serves; "redis" in a build without hiredis names the rebuild it needs.
 */
KC_API int kc_store_open_url(kc_store_backend **out, const char *url, const kc_remote_limits *limits);

/* ---- the redis backend (registered as "redis" when the build has hiredis) ---- */

/**
 * Open the redis backend for `url`: redis://[[user]:password@]host:port[/db][?password_file=PATH]
 * (host a name or an IPv4/IPv6 address in brackets; port default 6379; db default 0), or
 * rediss://… over TLS (also ca_file=, ca_dir=, cert=, key=, sni=; docs/fleet.md).  Values are stored under
 * "kcache:v1:<name>".  Nothing connects until first use.  Errors and timeouts are
 * KC_EIO / KC_ETIMEOUT; after one the backend answers KC_EUNAVAILABLE at once for a
 * back-off window (the circuit breaker), then lets one call through to probe.  Its limits,
 * kc_remote_limits, are in kcache/store.h.  `*out` is NULL on failure.  In a build without
 * hiredis: KC_EUNAVAILABLE ("this build has no redis back end").
 */
KC_API int kc_store_redis_open(kc_store_backend **out, const char *url, const kc_remote_limits *cfg);

/** The state of a backend from kc_store_redis_open; KC_EINVAL for another backend. */
KC_API int kc_store_redis_state(kc_store_backend *b, kc_remote_state *out);

#ifdef __cplusplus
}
#endif
#endif
