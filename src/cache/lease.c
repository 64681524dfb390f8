/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/lease.c — the front door's side of one compile per key across the fleet: a lookup that
 * missed every tier leases its entry's name in the remote before it compiles ([Note: leases] in
 * store/lease.c), and the public reader of the lease counters (kc_cache_lease_stats).
 *
 * The one idea: the graph part's single flight (graph/lookup.c) already lets one thread of one
 * directory compile a key at a time; under that lock it asks here for the fleet's lease, so one
 * process asks once however many of its threads wait for the key.  Callers: graph/lookup.c, the
 * public API.  Must not: fail a lookup (a lease only saves work), or count a lookup's outcome
 * (the caller counts the one it tells).
 */
#include <assert.h>
#include <string.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "../store/name.h"
#include "../store/tiers.h"
#include "internal.h"

static_assert(sizeof(kc_tiers_lease) <= sizeof(((kc_cache_lease *)0)->u.b), "kc_cache_lease holds a kc_tiers_lease");

static kc_tiers_lease *of(kc_cache_lease *l) { return (kc_tiers_lease *)(void *)l->u.b; }

int kc_cache_lease_begin_(kc_cache *c, const kc_key *key, const char *variant, kc_cache_lease *l) {
    memset(l, 0, sizeof *l);
    uint64_t ms = kc_cache_settings_(c)->remote_lease_ms;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    kc_err_saved keep; /* the lease's own failures are logged, never the lookup's error */
    kc_err_save(&keep);
    int rc = kc_tiers_lease_acquire(kc_cache_tiers_(c), name, ms, of(l));
    kc_err_restore(&keep);
    return rc == 1 ? 1 : KC_OK;
}

void kc_cache_lease_end_(kc_cache *c, kc_cache_lease *l, int hit) {
    kc_err_saved keep;
    kc_err_save(&keep);
    kc_tiers_lease_waited(kc_cache_tiers_(c), of(l), hit);
    kc_tiers_lease_release(kc_cache_tiers_(c), of(l));
    kc_err_restore(&keep);
}

int kc_cache_lease_stats(kc_cache *c, kc_lease_stats *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_lease_stats: NULL argument");
    int rc = kc_api_version("kc_cache_lease_stats", "kc_lease_stats", "KC_LEASE_STATS_INIT", out->version,
                            KC_LEASE_STATS_VERSION);
    if (rc) return rc;
    uint64_t v[KC_TIERS_LEASE_N];
    kc_tiers_lease_stats(kc_cache_tiers_(c), v);
    kc_lease_stats full = KC_LEASE_STATS_INIT; /* [Note: versioned structs]: copied out as far as out's version */
    full.taken = v[KC_TIERS_LEASE_TAKEN], full.waits = v[KC_TIERS_LEASE_WAITS];
    full.wait_hits = v[KC_TIERS_LEASE_WAIT_HITS], full.wait_compiles = v[KC_TIERS_LEASE_WAIT_COMPILES];
    full.wait_us = v[KC_TIERS_LEASE_WAIT_US];
    kc_api_copy_out(out, &full, sizeof full, out->version);
    return KC_OK;
}
