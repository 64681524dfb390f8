/*
 * local.h — the local directory store (internal interface; the public face is
 * kc_cache_* and, for the tiered front, kc_local_backend()).
 *
 * Layout:  <dir>/v1/<2 hex>/<key hex>.<variant>.kce   entries (256 shards by key byte 0)
 *          <dir>/v1/<2 hex>/stats                       the shard's counters
 *          <dir>/v1/<2 hex>/.tmp.*                      writes in flight (or orphans)
 *          <dir>/v1/quarantine/                         entries that failed validation
 *          <dir>/v1/gc.lock                             held by the one cleaner
 */
#ifndef KC_STORE_LOCAL_H
#define KC_STORE_LOCAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "kcache/cache.h"
#include "kcache/stats.h"
#include "kcache/sys/store.h"

#define KC_SHARDS 256
/* Longest store name: 32 hex + '.' + variant. */
#define KC_NAME_MAX (KC_KEY_HEX_LEN + 1 + KC_VARIANT_MAX)

typedef struct kc_local kc_local;

/** Flags of kc_local_open (KC_OPEN_READONLY, KC_OPEN_ALLOW_UNSAFE_DIR are honoured). */
int kc_local_open(kc_local **out, const char *dir, uint64_t max_size, unsigned flags);
void kc_local_free(kc_local *l);

/** Validate a store name "<32 lowercase hex>.<variant>"; KC_EINVAL otherwise. */
int kc_store_name_check(const char *name);
/** Compose a store name from a key and variant (buffer of KC_NAME_MAX + 1). */
void kc_store_name(const kc_key *key, const char *variant, char out[KC_NAME_MAX + 1]);
/** The shard of a store name (its first byte). */
int kc_store_name_shard(const char *name);

int kc_local_get(kc_local *l, const char *name, void **out, size_t *len);
/**
 * Read an entry's bytes for maintenance (verify, export, publish, an import's comparison):
 * like kc_local_get but not a use — its LRU time is left alone, so a scan of the whole
 * cache does not make every entry look just used to the next gc.
 */
int kc_local_read(kc_local *l, const char *name, void **out, size_t *len);
int kc_local_put(kc_local *l, const char *name, const void *data, size_t len);
int kc_local_exists(kc_local *l, const char *name);
int kc_local_remove(kc_local *l, const char *name);
int kc_local_quarantine(kc_local *l, const char *name);
int kc_local_iterate(kc_local *l, kc_store_iter_cb cb, void *ctx);

void kc_local_count(kc_local *l, int shard, kc_stat id, int64_t n);
int kc_local_stats(kc_local *l, kc_stats *out);
int kc_local_stats_zero(kc_local *l);
void kc_local_flush(kc_local *l);

/** Take <shard>/.lock.<name> with flock, without waiting: KC_OK (fd in *fd), KC_EBUSY, or an error. */
int kc_local_trylock(kc_local *l, const char *name, int *fd, char *path, size_t cap);
/** Remove the lock file and release it. */
void kc_local_unlock(int fd, const char *path);

int kc_local_gc(kc_local *l, uint64_t max_size, kc_gc_report *out);
int kc_local_clear(kc_local *l);

const char *kc_local_root(const kc_local *l);
/** The path of an entry file (buffer of PATH_MAX). */
void kc_local_path(const kc_local *l, const char *name, char *out, size_t cap);

/** This store as a backend table (owned by the store; do not free it separately). */
kc_store_backend *kc_local_backend(kc_local *l);

#endif
