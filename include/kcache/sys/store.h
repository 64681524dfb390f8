/*
 * kcache/sys/store.h — the interface for store backend authors (weaker stability promise
 * than the caller API; check `version`).
 *
 * A backend is a versioned table of functions over opaque named blobs (SQLite's VFS,
 * libgit2's odb backends).  Names are "<32 hex key>.<variant>"; values are encoded
 * entries, which the core validates — a backend never interprets them.  The core calls a
 * backend only through small wrappers, and counts a remote backend's failures as misses.
 * Every function must be safe to call from many threads at once.
 */
#ifndef KCACHE_SYS_STORE_H
#define KCACHE_SYS_STORE_H

#include "../common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of kc_store_backend described here. */
#define KC_STORE_BACKEND_VERSION 1

/** One stored blob, for iterate.  Borrowed for the callback's duration. */
typedef struct kc_store_item {
    const char *name;   /**< "<key hex>.<variant>" */
    uint64_t bytes;
    int64_t last_used;  /**< Seconds since the epoch; 0 if unknown. */
    const char *path;   /**< A file path for file-backed stores, else NULL. */
} kc_store_item;

/** Callback of iterate; a non-zero return stops the walk and is returned by iterate. */
typedef int (*kc_store_iter_cb)(const kc_store_item *item, void *ctx);

typedef struct kc_store_backend kc_store_backend;

/** The table of functions a backend provides.  Unused optional slots are NULL. */
struct kc_store_backend {
    unsigned version;      /**< KC_STORE_BACKEND_VERSION */
    const char *name;      /**< "local", "redis", … */
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
};

#ifdef __cplusplus
}
#endif
#endif
