/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tiers.h — the ordered tiers beneath a cache: the local directory first, then the
 * remotes (internal to the library; only cache/cache.c uses it).  Implemented in three files:
 * tiers.c (the list, counting, state), tiers_read.c (lookups, back-fill), tiers_write.c (the
 * background writer, put, publish), sharing tiers_impl.h.
 *
 * The one idea: a tier is a backend table (kcache/sys/store.h) plus its flags, breaker and
 * counters, and the tiers reach every backend only through that table — a new backend is a
 * new file and its registration by URL scheme (registry.c), never a change here.  What the tiers add
 * to the backends is the policy between them: order, validation of what is read, write-back
 * of a remote hit, one background writer for the remotes, and the counting of every remote
 * outcome.  Counters go to a sink the front door gives (the local store's stats shards).
 *
 * [Note: tiers] Lookups go memory → local directory → remote 1 → remote 2 … (the memory tier is
 * the graph part's; the remotes in the order kc_options.remote lists them).  The local tier is read
 * first, in one read, and a corrupt entry there is quarantined.  A remote hit is authenticated with
 * the HMAC key when there is one — before anything past its fixed header is parsed —, decoded,
 * checked to hold the key and variant it was asked for (kc_entry_decode_as), and only then written
 * back to the faster tiers: the local directory, and (queued) each writable remote before the one
 * that had it.  Each tier has its own read-only switch, counters (kc_tiers_tier_stats) and circuit
 * breaker: the back end's own when it keeps one (redis), else the tiers' (breaker.c).
 * New entries go to the local directory synchronously, then to each writable remote
 * through one background writer with a bounded queue (full: the write is dropped and
 * counted).  A remote miss, error, timeout, skip (its breaker is open) or rejection is a
 * miss plus a counter — never an error to the caller (a rejection is said, and a strict lookup
 * fails with it: kc_tiers_take_refusal); a remote's limits are kc_remote_limits.
 *
 * Must not: name a concrete backend, interpret a backend's errors beyond counting them, or
 * include any header of the front door (those under src/cache/, kcache/cache.h).
 */
#ifndef KC_STORE_TIERS_H
#define KC_STORE_TIERS_H

#include <stddef.h>
#include <stdint.h>

#include "kcache/entry.h"
#include "kcache/key.h"
#include "kcache/stats.h"
#include "kcache/store.h"
#include "kcache/sys/store.h"
#include "name.h"

typedef struct kc_tiers kc_tiers;

/** Flags of one tier (kc_tiers_add). */
#define KC_TIER_LOCAL 0x1u    /**< The local tier: looked up first, and where remote hits are written back. */
#define KC_TIER_READONLY 0x2u /**< Never written: no puts, no write-back, no publish. */

/** Where the tiers count: add `n` to counter `id` of shard `shard` (the key's first byte). */
typedef void (*kc_tiers_count_fn)(void *ctx, int shard, kc_stat id, int64_t n);

/** What the tiers need besides their backends. */
typedef struct kc_tiers_config {
    size_t queue_cap;       /**< Remote writes queued at most (0: 256). */
    const uint8_t *mac_key; /**< HMAC key of remote entries; NULL: none.  Borrowed: outlives the tiers. */
    size_t mac_key_len;
    kc_tiers_count_fn count; /**< Counter sink (required). */
    void *count_ctx;
    /** What vouches for and checks entries (src/entry/trust.h: a MAC key, a signer, a keyring);
     *  NULL: the MAC key above alone.  Borrowed: outlives the tiers. */
    const struct kc_trust *trust;
} kc_tiers_config;

/** Whether this thread met a remote read failure since the last call (then its message into why),
 *  and forget it: a strict lookup (KCACHE_STRICT) turns it into its error. */
int kc_tiers_take_failure(char *why, size_t cap);

/** [Note: refusals are said] (refusal.c): the last entry this thread's reads found and refused since
 *  the last call — its status (KC_EPERM: a signature or MAC that does not vouch for it; KC_ECORRUPT:
 *  corrupt bytes, quarantined when local) and a reason naming the entry, where it came from and why
 *  into `why` — or KC_OK; and forget it.  A lookup names it in its miss reason; a strict one
 *  (KCACHE_STRICT) fails with it. */
int kc_tiers_take_refusal(char *why, size_t cap);
/** Record a refusal of `name` (<key hex>.<variant>) found `where` ("in the local cache", "from <URL>"),
 *  with status `rc` and this thread's last error message as why (refusal.c; the tiers' own). */
void kc_tiers_refused_(const char *name, const char *where, int rc);

/** New, empty tiers. */
int kc_tiers_new(kc_tiers **out, const kc_tiers_config *cfg);

/**
 * Add a backend as a tier.  KC_TIER_LOCAL puts it first (one local tier at most); the others
 * come after it in the order added.  On success the tiers own `b` (freed by kc_tiers_free
 * through b->free); on failure the caller still does.  KC_EVERSION for a table of an unknown
 * version; KC_EINVAL for a second local tier or too many tiers.
 */
int kc_tiers_add(kc_tiers *t, kc_store_backend *b, unsigned flags);

/**
 * Add a remote backend as the next tier, as kc_tiers_add, with `url` (shown in stats and messages with any
 * password hidden; NULL: the backend's name) and its limits (the tiers' breaker, for a backend that keeps
 * none; NULL: the defaults).
 */
int kc_tiers_add_remote(kc_tiers *t, kc_store_backend *b, unsigned flags, const char *url, const kc_remote_limits *lim);

/** How many tiers (the local one at 0 when there is one, then the remotes in order). */
size_t kc_tiers_count(const kc_tiers *t);

/** Tier `i`'s URL, switches, breaker and counters (kc_tier_stats); KC_MISS when there is no tier `i`. */
int kc_tiers_tier_stats(kc_tiers *t, size_t i, kc_tier_stats *out);

/** Tier `i`'s backend (borrowed: the tiers own it) and its KC_TIER_* flags; NULL when there is no tier `i`.
 *  For maintenance that walks a tier itself (cache/purge.c); lookups and writes go through the calls here. */
kc_store_backend *kc_tiers_backend(kc_tiers *t, size_t i, unsigned *flags);

/** How long kc_tiers_free waits for the queued remote writes, in ms (0: the default, 3000). */
void kc_tiers_set_close_ms(kc_tiers *t, unsigned ms);

/**
 * Wait for the remote writes — at most the close bound (kc_tiers_set_close_ms), then the writes still queued are
 * dropped, each counted once as KC_STAT_REMOTE_DROPPED — stop the writer (a write in flight
 * ends within its backend's own deadline), free every backend (remotes first); accepts NULL.
 */
void kc_tiers_free(kc_tiers *t);

/** Whether there is at least one remote tier. */
int kc_tiers_has_remote(const kc_tiers *t);

/**
 * The local tier's entry for `key` and `variant`, validated, in one read: KC_OK (found; the
 * caller counts the lookup's outcome, once it knows it); KC_MISS (absent, or unreadable: counted as a store error); KC_ECORRUPT (it was
 * corrupt or held another key or variant: quarantined and counted).  Counts no miss and
 * asks no remote.
 */
int kc_tiers_get_local(kc_tiers *t, const kc_key *key, const char *variant, kc_entry **out);

/** As kc_tiers_get_local, keeping only `sections` (kc_entry_decode_some: a partial entry). */
int kc_tiers_get_local_some(kc_tiers *t, const kc_key *key, const char *variant, unsigned sections, kc_entry **out);

/** As kc_tiers_get_local, but the object is only checked, not inflated (kc_entry_check_stored):
 *  KC_OK with `*raw_len` the raw length of its `section`; KC_MISS; KC_ECORRUPT (quarantined). */
int kc_tiers_check_local(kc_tiers *t, const kc_key *key, const char *variant, int section, uint64_t *raw_len);

/**
 * Look `key` up in the remote tiers, in order, under the first present of `variants` (one
 * round trip each when the backend has get_first; at most 24 names): authenticated,
 * validated, written back to a writable local tier and counted.  KC_OK with *which (may be
 * NULL) and *out; KC_MISS for anything else (no remote, absent, unreachable, rejected) —
 * the reason is counted and logged.  With `raw` (may be NULL) it is not written back: *raw
 * (malloc'ed) and *raw_len are the bytes fetched, for kc_tiers_put_local once the images the
 * entry refers to are local ([Note: two levels] in kcache/entry.h).
 */
int kc_tiers_get_remote(kc_tiers *t, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                        kc_entry **out, void **raw, size_t *raw_len);

/**
 * Fetch the objects "<keys[i]>.<variant>" (images, unit records) from the remotes: one round trip
 * per remote for all names still missing (the backend's get_many, else one get each); each
 * authenticated and validated as the remote lookup above.  outs[i] (NULL when not found) and
 * raws[i] / raw_lens[i] (the bytes fetched, malloc'ed, for kc_tiers_put_local) are the caller's.
 * Not written back, and counted only when something fails (the lookup counts its own outcome).
 * Returns how many were found.
 */
size_t kc_tiers_get_remote_many(kc_tiers *t, const kc_key *keys, const char *variant, size_t n, kc_entry **outs,
                                void **raws, size_t *raw_lens);

/** Write bytes to the local tier only (a remote's object, written back); KC_EREADONLY when it cannot be. */
int kc_tiers_put_local(kc_tiers *t, const char *name, const void *data, size_t len);

/**
 * Store encoded bytes under `name`: to the local tier now (its result is returned, an error
 * prefixed with "storing <name>"), then queued for every writable remote.  Takes `data`
 * (malloc'ed): freed here or by the writer.  A dropped remote write is counted and logged,
 * not an error.
 */
int kc_tiers_put(kc_tiers *t, const char *name, int shard, void *data, size_t len);

/**
 * Queue a copy of a local entry to the writable remotes that do not have it (one exists()
 * each), sealing it first with the HMAC key when it carries no valid MAC.  1 when queued, 0
 * when every remote had it; KC_EINVAL without a remote, KC_EREADONLY when none is writable,
 * KC_MISS when the entry is not local, or a remote's error (counted).
 */
int kc_tiers_publish(kc_tiers *t, const char *name, int shard);

/** Wait until the background writer has sent (or dropped) every queued write. */
void kc_tiers_flush(kc_tiers *t);

/* ---- leases: one compile per key across the fleet ([Note: leases] in lease.c) ---- */

/** A lease asked for by one lookup. */
typedef struct kc_tiers_lease {
    size_t tier;        /* the remote it was asked of */
    int held;           /* 1: this process holds it (kc_tiers_lease_release after the put) */
    int waited;         /* 1: another holder had it, and this lookup waited */
    int arrived;        /* 1: the entry appeared in the remote while waiting */
    uint64_t waited_us; /* how long it waited */
    uint64_t until_ns;  /* held: when the lease ends (kc_mono_ns) */
    char name[KC_NAME_MAX + 1];
    char holder[80];
} kc_tiers_lease;

/** The lease counters (this process's), in kc_tiers_lease_stats' order. */
enum {
    KC_TIERS_LEASE_TAKEN,
    KC_TIERS_LEASE_WAITS,
    KC_TIERS_LEASE_WAIT_HITS,
    KC_TIERS_LEASE_WAIT_COMPILES,
    KC_TIERS_LEASE_WAIT_US,
    KC_TIERS_LEASE_N
};

/**
 * Before compiling `name`, which missed every tier: a lease on it for `ttl_ms` in the first writable remote
 * with leases.  KC_OK: compile (l->held: then put, then kc_tiers_lease_release); 1: the entry appeared in the
 * remote meanwhile (fetch it, verified as any remote read).  No lease-capable remote, `ttl_ms` 0, a remote
 * error or a wait as long as the lease: KC_OK, not held (compile as without leases).
 */
int kc_tiers_lease_acquire(kc_tiers *t, const char *name, uint64_t ttl_ms, kc_tiers_lease *l);
/** A lookup that waited ended in the entry (`hit`) or in a compile of its own: counted. */
void kc_tiers_lease_waited(kc_tiers *t, const kc_tiers_lease *l, int hit);
/** Release a held lease once the writer's queue is flushed (the put has reached the remote). */
void kc_tiers_lease_release(kc_tiers *t, kc_tiers_lease *l);
/** The lease counters of this process. */
void kc_tiers_lease_stats(kc_tiers *t, uint64_t out[KC_TIERS_LEASE_N]);

/** The first remote's state (its back end's, else the tiers' breaker's); KC_MISS without a remote. */
int kc_tiers_remote_state(kc_tiers *t, kc_remote_state *out);

/** One round trip to each remote: KC_OK, the first failure (counted), or KC_MISS without a remote. */
int kc_tiers_ping(kc_tiers *t);

/* The local tier, through its table (KC_MISS / 0 / KC_OK when there is none). */

/** Whether the local tier holds `name`: 1, 0, or an error. */
int kc_tiers_exists(kc_tiers *t, const char *name);
/** Remove `name` from the local tier; KC_MISS when absent. */
int kc_tiers_remove(kc_tiers *t, const char *name);
/** Read `name` from the local tier without marking it used (maintenance). */
int kc_tiers_peek(kc_tiers *t, const char *name, void **out, size_t *len);
/** Move `name` aside in the local tier (quarantine, or remove when it has none); counted by the tier. */
int kc_tiers_quarantine(kc_tiers *t, const char *name);
/** Visit every entry of the local tier. */
int kc_tiers_iterate(kc_tiers *t, kc_store_iter_cb cb, void *ctx);

#endif
