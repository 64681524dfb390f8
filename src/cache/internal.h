/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/internal.h — what parts above the cache need of a kc_cache (not for callers): the
 * graph part (its lookups) and bundle/bundle.c (export and import).
 *
 * The one idea: the parts above reach the tiers only through these few functions of the
 * front door, never store/tiers.h itself; they may use the local store (store/local.h) for
 * what bundles need of the directory.  The guard part uses the local store, the trust and the
 * remote its profiles travel to (src/guard/profile*.c).
 */
#ifndef KC_CACHE_INTERNAL_H
#define KC_CACHE_INTERNAL_H

#include "kcache/cache.h"
#include "../store/local.h"
#include "../config/config.h"

/** The cache's local store; NULL when the cache is disabled. */
kc_local *kc_cache_local_(kc_cache *c);
/** The cache's tiers, local first, then the remotes (cache/lease.c; cache/purge.c, for a walk of each). */
struct kc_tiers;
struct kc_tiers *kc_cache_tiers_(kc_cache *c);

/** One lookup's lease ([Note: leases] in store/lease.c): what kc_cache_lease_begin_ asked for. */
typedef struct kc_cache_lease {
    union {
        unsigned char b[512]; /* a kc_tiers_lease (store/tiers.h), which the parts above never name */
        uint64_t align_;
    } u;
} kc_cache_lease;
/**
 * Before compiling `key`.`variant`, which missed every tier: lease it in the remote (remote_lease_ms).
 * KC_OK: compile, then kc_cache_lease_end_; 1: the entry arrived in the remote while waiting (fetch it:
 * a remote hit when it is taken), then kc_cache_lease_end_.  Never an error: a lease only saves work.
 */
int kc_cache_lease_begin_(kc_cache *c, const kc_key *key, const char *variant, kc_cache_lease *l);
/** After the compile's put (or the fetch): `hit` when the lookup was served the entry; releases a held lease. */
void kc_cache_lease_end_(kc_cache *c, kc_cache_lease *l, int hit);

/** A lookup that began at `t0_ns` (kc_mono_ns) ended with outcome `o`: its outcome counted and its
 *  time observed together (kcache/stats.h), so the latency histogram and the counters agree.  The
 *  one way a lookup counts its outcome (cache/metrics.c). */
void kc_cache_count_lookup_(kc_cache *c, const kc_key *key, kc_lookup_outcome o, uint64_t t0_ns);

/**
 * Look `key` up in the remote tier under the first present of `variants` (one round trip):
 * authenticated (with an HMAC key), validated and counted.  KC_OK with *which and *out; KC_MISS
 * for anything else (no remote, absent, unreachable, rejected) — the reason is counted and
 * logged.  Written back to the local directory (unless the cache is read-only) — or, with `raw`,
 * handed back as *raw (malloc'ed) / *raw_len for kc_cache_keep_local_ once the entry's images
 * are local ([Note: two levels] in kcache/entry.h).
 */
int kc_cache_remote_fetch_(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                           kc_entry **out, void **raw, size_t *raw_len);

/**
 * Fetch the objects "<keys[i]>.<variant>" (images, unit records) from the remote tier in one
 * round trip per remote, each authenticated and validated: outs[i] (NULL when not found) and the
 * bytes fetched, raws[i] / raw_lens[i] (malloc'ed), are the caller's.  Not written back; counts
 * only failures.  Returns how many were found.
 */
size_t kc_cache_remote_objects_(kc_cache *c, const kc_key *keys, const char *variant, size_t n, kc_entry **outs,
                                void **raws, size_t *raw_lens);

/** Write bytes fetched from a remote to the local directory only; KC_EREADONLY when it is not writable. */
int kc_cache_keep_local_(kc_cache *c, const kc_key *key, const char *variant, const void *data, size_t len);

/**
 * The local directory's entry, validated, in one read (no exists() first): KC_OK (found; the
 * caller counts the lookup's outcome); KC_MISS (absent, or unreadable: counted as a store error); KC_ECORRUPT (it
 * was corrupt: quarantined and counted).  Counts no miss and asks no remote: the caller
 * decides what a miss is.
 */
int kc_cache_get_local_(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out);
/* As kc_cache_get_local_, keeping only `sections` (kc_tiers_get_local_some). */
int kc_cache_get_local_some_(kc_cache *c, const kc_key *key, const char *variant, unsigned sections, kc_entry **out);
/* The local object only checked, not inflated (kc_tiers_check_local). */
int kc_cache_check_local_(kc_cache *c, const kc_key *key, const char *variant, int section, uint64_t *raw_len);

/** 1 when the cache was opened must-hit (KC_OPEN_REQUIRE_HIT, KCACHE_REQUIRE_HIT=1): no NVRTC on a lookup. */
int kc_cache_require_hit_(const kc_cache *c);
/** 1 when the cache was opened strict (KC_OPEN_STRICT, KCACHE_STRICT=1): anomalies are errors. */
int kc_cache_strict_(const kc_cache *c);

/** Where the toolkit digest memos live ("<dir>/v1/toolkits"); KC_MISS for a disabled cache.  With
 *  `write` (to write a memo or a direct manifest there), KC_EREADONLY for a read-only cache: it reads
 *  the memos and manifests there, and never creates the folder or writes into it. */
int kc_cache_toolkit_dir_(const kc_cache *c, bool write, char *out, size_t cap);
/** The toolkit memo folder of the cache this process opened last (into out; KC_MISS when none), for a
 *  spec's load, which has no cache handle ([Note: spec direct mode] in graph/spec_direct.c). */
int kc_cache_last_toolkit_dir_(char *out, size_t cap);

/** Read `name` from the local directory without marking it used (maintenance: verify, export). */
int kc_cache_peek_raw_(kc_cache *c, const char *name, void **out, size_t *len);
/** Move `name` aside in the local directory (quarantine); KC_EREADONLY unless the cache is writable. */
int kc_cache_quarantine_(kc_cache *c, const char *name);
/** Remove `name` from the local directory; KC_EREADONLY unless the cache is writable; KC_MISS when absent. */
int kc_cache_remove_name_(kc_cache *c, const char *name);

/**
 * The remote a site's profile is read from (`writable`: and written to), borrowed from the tiers: NULL
 * when there is none, or the cache's mode forbids it ([Note: profiles in the remote] in
 * src/guard/profile_remote.c).  Callers: guard/profile_remote.c.
 */
struct kc_store_backend;
struct kc_store_backend *kc_cache_profile_remote_(kc_cache *c, int writable);

/** The HMAC key of the cache (NULL when entries are not authenticated). */
const uint8_t *kc_cache_mac_key_(kc_cache *c, size_t *len);
/** What vouches for and checks entries here (src/entry/trust.h): a MAC key, a signer, a keyring. */
const struct kc_trust *kc_cache_trust_(kc_cache *c);
/** The manifest a prewarm compiles now (recorded in what it writes: ORIGIN "manifest"); "" none.  Not
 *  per thread: a cache prewarming two manifests at once records the last one set. */
void kc_cache_set_origin_manifest_(kc_cache *c, const char *path);
const char *kc_cache_origin_manifest_(const kc_cache *c);

/** A part above's per-handle state (the single-source compile's memo, graph/progmemo.c): it begins
 *  with how it is freed, which kc_cache_close calls. */
typedef struct kc_cache_attachment {
    void (*drop)(struct kc_cache_attachment *a);
} kc_cache_attachment;
/** The handle's one attachment slot (NULL until a part sets it; one user, which sets it atomically). */
kc_cache_attachment **kc_cache_attached_(kc_cache *c);

/* ---- settings (cache/settings.c, cache.c) ---- */
/** The cache's settings, typed (the process's for a NULL cache).  Callers: graph/ (lock wait, the
 *  toolkit-headers pin), cache/toolchain_choice.c. */
const kc_settings *kc_cache_settings_(const kc_cache *c);
/** The cache's settings, to change one just written to its file.  Callers: cache/settings.c. */
kc_config *kc_cache_config_mut_(kc_cache *c);
/** Apply a new size limit to the open cache.  Callers: cache/settings.c. */
void kc_cache_apply_max_size_(kc_cache *c, uint64_t max_size);
/** kc_options as the settings' first layer, read with the rest (config/).  Callers: cache.c. */
int kc_cache_config_load_(const kc_options *o, kc_config **out);

/* A caller's kc_options of any version this build accepts (1 to KC_OPTIONS_VERSION) as this build's, in
 * `o`: the fields an older version lacks take their defaults; an empty dir is KC_EINVAL (settings.c). */
int kc_cache_options_copy_(kc_options *o, const kc_options *opts);
/** `flags` with the KC_OPEN_* flag of each boolean setting that is on.  Callers: cache.c. */
unsigned kc_cache_config_flags_(const kc_config *cfg, unsigned flags);
/** The remote, its limits and the trust files from the settings into `o`.  Callers: cache.c. */
void kc_cache_config_remote_(const kc_config *cfg, kc_options *o);
/** The HMAC key from the settings (or its file: *owned, freed by the caller) into `o`.  Callers: cache.c. */
int kc_cache_config_hmac_(const kc_config *cfg, kc_options *o, void **owned);
/** What set row `id`, as errors name it: its variable ("KCACHE_REMOTE"), "kc_options.settings[0] remote",
 *  "FILE:LINE remote", or the row's name (a default or a kc_options field); returns out. */
const char *kc_cache_config_by_(const kc_config *cfg, int id, char *out, size_t cap);

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_cache_attached_               internal.h  Callers: graph
 *   kc_cache_check_local_            internal.h  Callers: graph
 *   kc_cache_count_lookup_           internal.h  Callers: graph
 *   kc_cache_get_local_              internal.h  Callers: graph
 *   kc_cache_get_local_some_         internal.h  Callers: graph
 *   kc_cache_keep_local_             internal.h  Callers: graph
 *   kc_cache_last_toolkit_dir_       internal.h  Callers: graph
 *   kc_cache_lease_begin_            internal.h  Callers: graph
 *   kc_cache_lease_end_              internal.h  Callers: graph
 *   kc_cache_local_                  internal.h  Callers: bundle, guard
 *   kc_cache_origin_manifest_        internal.h  Callers: graph
 *   kc_cache_profile_remote_         internal.h  Callers: guard
 *   kc_cache_remote_fetch_           internal.h  Callers: graph
 *   kc_cache_remote_objects_         internal.h  Callers: graph
 *   kc_cache_require_hit_            internal.h  Callers: graph
 *   kc_cache_set_origin_manifest_    internal.h  Callers: prewarm
 *   kc_cache_settings_               internal.h  Callers: graph
 *   kc_cache_strict_                 internal.h  Callers: graph
 *   kc_cache_toolchain_can_compile_  record.h    Callers: graph
 *   kc_cache_toolchain_note_         record.h    Callers: bundle, graph
 *   kc_cache_toolkit_dir_            internal.h  Callers: graph
 *   kc_cache_toolkit_note_           record.h    Callers: bundle, graph
 *   kc_cache_trust_                  internal.h  Callers: bundle, graph, guard
 *   kc_record_free_                  record.h    Callers: graph
 *   kc_record_load_                  record.h    Callers: graph
 * ---- end of the index ---- */

#endif
