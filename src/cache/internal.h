/*
 * cache/internal.h — what parts above the cache need of a kc_cache (not for callers): the
 * graph part (its lookups) and bundle/bundle.c (export and import).
 *
 * The one idea: the parts above reach the tiers only through these few functions of the
 * front door, never store/tiers.h itself; they may use the local store (store/local.h) for
 * what bundles need of the directory.
 */
#ifndef KC_CACHE_INTERNAL_H
#define KC_CACHE_INTERNAL_H

#include "kcache/cache.h"
#include "../store/local.h"

/** The cache's local store; NULL when the cache is disabled. */
kc_local *kc_cache_local_(kc_cache *c);

/**
 * Look `key` up in the remote tier under the first present of `variants` (one round trip):
 * authenticated (with an HMAC key), validated, written back to the local directory (unless
 * the cache is read-only) and counted.  KC_OK with *which and *out; KC_MISS for anything
 * else (no remote, absent, unreachable, rejected) — the reason is counted and logged.
 */
int kc_cache_remote_fetch_(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                           kc_entry **out);

/**
 * The local directory's entry, validated, in one read (no exists() first): KC_OK (a hit,
 * counted); KC_MISS (absent, or unreadable: counted as a store error); KC_ECORRUPT (it
 * was corrupt: quarantined and counted).  Counts no miss and asks no remote: the caller
 * decides what a miss is.
 */
int kc_cache_get_local_(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out);

/** Where the toolkit digest memos live ("<dir>/v1/toolkits"); KC_MISS for a disabled cache. */
int kc_cache_toolkit_dir_(const kc_cache *c, char *out, size_t cap);

/** The HMAC key of the cache (NULL when entries are not authenticated). */
const uint8_t *kc_cache_mac_key_(kc_cache *c, size_t *len);

#endif
