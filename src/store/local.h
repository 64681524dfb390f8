/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.h — the local directory store (internal interface; the public face is kc_cache_*).
 *
 * The front door (cache/cache.c) opens it, hands its backend table (kc_local_backend) to
 * the tiers, which reach it only through that table, and calls the store's own functions
 * for what is not a tier operation: counters and stats shards, gc, clear, compile locks,
 * paths.  bundle/bundle.c reads and writes it for export and import.
 *
 * Layout:  <dir>/v1/<2 hex>/<key hex>.<variant>.kce   entries (256 shards by key byte 0)
 *          <dir>/v1/<2 hex>/stats                       the shard's counters
 *          <dir>/v1/<2 hex>/.tmp.*                      writes in flight (or orphans)
 *          <dir>/v1/quarantine/                         entries that failed validation
 *          <dir>/v1/gc.lock                             held by the one cleaner
 *          <dir>/v1/profiles/                           per-site dynamism profiles (the guard part's)
 *          <dir>/v1/toolkits/                           memos of toolkit header digests (compile/toolkit.c),
 *                                                       spec memos, and layout1-<hash> (local_layout.c)
 *          <dir>/v1/record, record.lock                 the cache's record: toolchains, pins, memos (cache/record.c)
 */
#ifndef KC_STORE_LOCAL_H
#define KC_STORE_LOCAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "kcache/stats.h"
#include "kcache/store.h" /* KC_OPEN_READONLY, KC_OPEN_ALLOW_UNSAFE_DIR, kc_gc_report */
#include "kcache/sys/store.h"
#include "name.h" /* KC_NAME_MAX, kc_store_name */

#define KC_SHARDS 256

typedef struct kc_local kc_local;

/** Flags of kc_local_open (KC_OPEN_READONLY, KC_OPEN_ALLOW_UNSAFE_DIR are honoured). */
int kc_local_open(kc_local **out, const char *dir, uint64_t max_size, unsigned flags);
void kc_local_free(kc_local *l);
/** Change the store's size limit (0: none): the cache's front door sets the directory's recorded limit. */
void kc_local_set_max_size(kc_local *l, uint64_t max_size);

int kc_local_get(kc_local *l, const char *name, void **out, size_t *len);
/** kc_local_get into the caller's `buf` (`cap` bytes) when the entry fits: *out is `buf`, else a buffer to free. */
int kc_local_get_into(kc_local *l, const char *name, void *buf, size_t cap, void **out, size_t *len);
/**
 * Read an entry's bytes for maintenance (verify, export, publish, an import's comparison):
 * like kc_local_get but not a use — its LRU time is left alone, so a scan of the whole
 * cache does not make every entry look just used to the next gc.
 */
int kc_local_read(kc_local *l, const char *name, void **out, size_t *len);
int kc_local_put(kc_local *l, const char *name, const void *data, size_t len);
/** Store bytes that came from elsewhere (a remote, a bundle): [Note: provenance] in local.c. */
int kc_local_put_foreign(kc_local *l, const char *name, const void *data, size_t len);
/** Store bytes that came from elsewhere, recording `origin` with them (a kc_provenance_format text):
 *  [Note: provenance record] in local.c.  A malformed `origin` is not recorded (logged); the bytes are stored. */
int kc_local_put_origin(kc_local *l, const char *name, const void *data, size_t len, const char *origin);
/** Tests: make every provenance xattr call fail with `err` (ENOTSUP: a file system without them); 0: off. */
void kc_local_xattr_fault_(int err);
/** 1 when `name` was written by this cache's own compile, 0 when it came from elsewhere, KC_MISS when absent. */
int kc_local_is_own(kc_local *l, const char *name);

/**
 * A batch of puts made durable together ([Note: batched puts] in local.c): each put writes its
 * object's temporary file (no sync); commit syncs the file system once, renames group by group
 * (kc_local_batch_fence ends a group) with one sync after each, and frees the batch; abort
 * removes the temporaries and frees it.  `mode` and `origin` as kc_local_put / kc_local_put_origin
 * take them ([Note: provenance]; origin NULL: none).  *renamed: how many objects, in put order,
 * are under their names (all on KC_OK; a failed put or commit says why).
 */
typedef struct kc_local_batch kc_local_batch;
int kc_local_batch_begin(kc_local *l, kc_local_batch **out);
int kc_local_batch_put(kc_local_batch *b, const char *name, const void *data, size_t len, unsigned mode,
                       const char *origin);
/** What was put before is renamed and durable before anything put after is renamed. */
void kc_local_batch_fence(kc_local_batch *b);
int kc_local_batch_commit(kc_local_batch *b, size_t *renamed);
void kc_local_batch_abort(kc_local_batch *b);
int kc_local_exists(kc_local *l, const char *name);
int kc_local_remove(kc_local *l, const char *name);
int kc_local_quarantine(kc_local *l, const char *name);
int kc_local_iterate(kc_local *l, kc_store_iter_cb cb, void *ctx);

void kc_local_count(kc_local *l, int shard, kc_stat id, int64_t n);
/** `n` lookups of outcome `o` that took `ns` each: their outcome counted and their time observed, together. */
void kc_local_observe(kc_local *l, int shard, kc_lookup_outcome o, uint64_t ns, int64_t n);
/** The latency histograms summed over the shards and this process's unwritten observations. */
void kc_local_latency(kc_local *l, kc_latency *out);
int kc_local_stats(kc_local *l, kc_stats *out);
int kc_local_stats_zero(kc_local *l);
void kc_local_flush(kc_local *l);

/** Take <shard>/.lock.<name> with flock, without waiting: KC_OK (fd in *fd), KC_EBUSY, or an error. */
int kc_local_trylock(kc_local *l, const char *name, int *fd, char *path, size_t cap);
/** Remove the lock file and release it. */
void kc_local_unlock(int fd, const char *path);

int kc_local_gc(kc_local *l, uint64_t max_size, kc_gc_report *out);
/** kc_local_gc that first evicts every object not used for longer than `older_than_s` seconds (0: none). */
int kc_local_gc_aged(kc_local *l, uint64_t max_size, uint64_t older_than_s, kc_gc_report *out);
int kc_local_clear(kc_local *l);

const char *kc_local_root(const kc_local *l);

/** Whether the store is read-only: opened so (KC_OPEN_READONLY), or its directory refuses writes
 *  (a 0500 directory, a read-only mount: then `found` is set, when not NULL). */
bool kc_local_readonly(const kc_local *l, bool *found);
/** The path of an entry file (buffer of PATH_MAX). */
void kc_local_path(const kc_local *l, const char *name, char *out, size_t cap);
/** The folder of the dynamism profiles, "<dir>/v1/profiles"; KC_EINVAL when it does not fit in `cap`,
 *  KC_EIO when it or v1/ is a symbolic link (never followed: [Note: no links inside], local.c). */
int kc_local_profile_dir(const kc_local *l, char *out, size_t cap);
/** A merge wrote the profile at `path` (its size changed by `added` bytes): counted in the size,
 *  and the automatic cleanup may run ([Note: profiles in the size] in local_profiles.c). */
void kc_local_profile_written_(kc_local *l, const char *path, int64_t added);
/** The folder of the toolkit digest memos, "<dir>/v1/toolkits"; KC_EINVAL when it does not fit, KC_EIO
 *  when it or v1/ is a symbolic link.  With `write` (the caller will create it or write into it),
 *  KC_EREADONLY for a read-only store: a reader still reads the memos, and writes none. */
int kc_local_toolkit_dir(const kc_local *l, bool write, char *out, size_t cap);

/**
 * This store as a backend table (get touches the LRU clock, peek does not).  The table lives
 * in the store, and its free() is kc_local_free: whoever takes the table (the tiers) frees
 * the store through it, and nobody frees it twice.
 */
kc_store_backend *kc_local_backend(kc_local *l);

#endif
