/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tiers.c — the ordered tiers beneath a cache: local first, then remotes
 * ([Note: tiers] in tiers.h).  Only cache/cache.c uses the tiers.
 *
 * The one idea: a list of backend tables (libgit2's odb.c, ccache's storage.cpp), each with its
 * own flags, breaker and counters.  This file keeps the list — adding, freeing, what each tier
 * says of itself (kc_tiers_tier_stats) — and the counting every other tiers file shares; the
 * reads are tiers_read.c's, the writes tiers_write.c's.  A remote's every outcome — hit, miss,
 * timeout, error, skip, drop, MAC rejection — is counted in one place (kc_tiers_count_failure_
 * and its neighbours), so a failing remote costs a miss and a counter, never an error.
 *
 * A remote whose back end keeps no breaker of its own (no `state` slot) gets one here, so that
 * every remote tier has one (breaker.c); a back end that has one (redis) is left to it.
 *
 * Must not: call a backend except through its table, name a concrete backend, or include
 * any header of the front door.
 */
#include "tiers_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../common/internal.h"
#include "registry.h"

#define DEFAULT_QUEUE 256
#define DEFAULT_CLOSE_MS 3000
#define PING_NAME "00000000000000000000000000000000.ping"

int kc_tiers_new(kc_tiers **out, const kc_tiers_config *cfg) {
    *out = NULL;
    if (!cfg || !cfg->count) return kc_err(KC_EINVAL, "kc_tiers_new: no counter sink");
    kc_tiers *t = kc_calloc(1, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "out of memory");
    t->cfg = *cfg;
    if (cfg->trust) t->trust = *cfg->trust;
    else t->trust.mac_key = cfg->mac_key, t->trust.mac_key_len = cfg->mac_key_len;
    if (!t->cfg.queue_cap) t->cfg.queue_cap = DEFAULT_QUEUE;
    t->close_ms = DEFAULT_CLOSE_MS;
    pthread_mutex_init(&t->wmu, NULL);
    pthread_cond_init(&t->wcv, NULL);
    pthread_condattr_t ca; /* widle is waited on with a monotonic deadline (kc_tiers_free) */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->widle, &ca);
    pthread_condattr_destroy(&ca);
    *out = t;
    return KC_OK;
}

static int table_ok(const kc_store_backend *b) {
    if (b->version < 1 || b->version > KC_STORE_BACKEND_VERSION)
        return kc_err(KC_EVERSION, "store backend '%s' has table version %u (this build: 1 to %d)",
                      b->name ? b->name : "?", b->version, KC_STORE_BACKEND_VERSION);
    if (!b->get || !b->put || !b->exists || !b->remove || !b->free)
        return kc_err(KC_EINVAL, "store backend '%s' lacks a required function", b->name ? b->name : "?");
    return KC_OK;
}

/* A new tier of `b` at t->t[at]: its URL as shown (`url` redacted; else the back end's name), its breaker. */
static void tier_init(tier *r, kc_store_backend *b, unsigned flags, const char *url, const kc_remote_limits *lim) {
    memset(r, 0, sizeof *r);
    r->b = b;
    r->flags = flags;
    if (flags & KC_TIER_LOCAL) snprintf(r->shown, sizeof r->shown, "local");
    else if (url) kc_store_redact(url, r->shown, sizeof r->shown);
    else snprintf(r->shown, sizeof r->shown, "%s", b->name ? b->name : "?");
    /* a remote opened from a URL (the registry) without a breaker of its own gets the tiers' */
    r->has_brk = !(flags & KC_TIER_LOCAL) && url && !(b->version >= 2 && b->state);
    if (r->has_brk) kc_brk_init(&r->brk, lim ? lim->backoff_ms : 0, lim ? lim->backoff_max_ms : 0, r->shown);
}

int kc_tiers_add_remote(kc_tiers *t, kc_store_backend *b, unsigned flags, const char *url,
                        const kc_remote_limits *lim) {
    if (!t || !b) return kc_err(KC_EINVAL, "kc_tiers_add: NULL argument");
    int rc = table_ok(b);
    if (rc) return rc;
    if (t->n == MAX_TIERS) return kc_err(KC_EINVAL, "too many store tiers (%d at most)", MAX_TIERS);
    if (flags & KC_TIER_LOCAL) {
        if (t->local) return kc_err(KC_EINVAL, "a second local tier");
        memmove(&t->t[1], &t->t[0], t->n * sizeof t->t[0]); /* local first */
        for (size_t i = 1; i <= t->n; i++) { /* a moved breaker (unused yet) is made anew where it now lies */
            kc_brk *k = &t->t[i].brk;
            if (t->t[i].has_brk) kc_brk_init(k, k->backoff_ms, k->backoff_max_ms, t->t[i].shown);
        }
        tier_init(&t->t[0], b, flags, NULL, NULL);
        t->local = 1;
    } else {
        tier_init(&t->t[t->n], b, flags, url, lim);
    }
    t->n++;
    return KC_OK;
}

int kc_tiers_add(kc_tiers *t, kc_store_backend *b, unsigned flags) {
    return kc_tiers_add_remote(t, b, flags, NULL, NULL);
}

void kc_tiers_set_close_ms(kc_tiers *t, unsigned ms) {
    if (t) t->close_ms = ms ? ms : DEFAULT_CLOSE_MS;
}

void kc_tiers_free(kc_tiers *t) {
    if (!t) return;
    if (t->wstarted) kc_tiers_writer_close_(t);
    for (size_t i = t->n; i-- > 0;) { /* remotes first, the local tier last */
        t->t[i].b->free(t->t[i].b);
        if (t->t[i].has_brk) kc_brk_destroy(&t->t[i].brk);
    }
    pthread_mutex_destroy(&t->wmu);
    pthread_cond_destroy(&t->wcv);
    pthread_cond_destroy(&t->widle);
    free(t);
}

int kc_tiers_has_remote(const kc_tiers *t) { return t && t->n > first_remote(t); }

/* ---- counting: every remote outcome ---- */

void kc_tiers_count_(kc_tiers *t, int shard, kc_stat id) { t->cfg.count(t->cfg.count_ctx, shard, id, 1); }

/* The last remote failure this thread met (a strict lookup turns it into its error). */
static _Thread_local char tl_failure[256];

int kc_tiers_take_failure(char *why, size_t cap) {
    int had = tl_failure[0] != '\0';
    if (had && why && cap) snprintf(why, cap, "%s", tl_failure);
    tl_failure[0] = '\0';
    return had;
}

/* A remote call failed with `rc`: a timeout, a skip (its breaker is open; a dropped write
 * when writing) or an error; logged unless skipped. */
void kc_tiers_count_failure_(kc_tiers *t, tier *r, int shard, int rc, int writing) {
    if (!writing) snprintf(tl_failure, sizeof tl_failure, "%s", kc_error_last()->message);
    kc_stat id = rc == KC_ETIMEOUT       ? KC_STAT_REMOTE_TIMEOUTS
                 : rc == KC_EUNAVAILABLE ? (writing ? KC_STAT_REMOTE_DROPPED : KC_STAT_REMOTE_SKIPPED)
                                         : KC_STAT_REMOTE_ERRORS;
    if (rc != KC_EUNAVAILABLE) kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    kc_tiers_count_(t, shard, id);
    if (r) tier_count(r, writing ? TC_WRITE_ERRORS : rc == KC_EUNAVAILABLE ? TC_SKIPPED : TC_ERRORS);
}

int kc_tiers_enter_(tier *r) { return r->has_brk ? kc_brk_enter(&r->brk) : KC_OK; }

/* After a call kc_tiers_enter_ let through: its outcome moves the breaker, whatever it is (a back
 * end's own KC_EUNAVAILABLE, an HTTP 503, is a failure; leaving a probe unanswered would keep the
 * breaker half-open, and the tier skipped, for the rest of the process). */
void kc_tiers_exit_(tier *r, int rc) {
    if (r->has_brk) kc_brk_exit(&r->brk, rc < 0 && rc != KC_MISS);
}

/* ---- the remotes' state ---- */

/* What tier `r` says of itself: the back end's state, else the tiers' breaker. */
static int tier_state(tier *r, kc_remote_state *out) {
    kc_store_backend *b = r->b;
    if (b->version >= 2 && b->state) return b->state(b, out);
    if (!r->has_brk) return kc_err(KC_EINVAL, "the remote backend '%s' reports no state", b->name ? b->name : "?");
    memset(out, 0, sizeof *out);
    snprintf(out->url, sizeof out->url, "%s", r->shown);
    kc_brk_state(&r->brk, out);
    return KC_OK;
}

int kc_tiers_remote_state(kc_tiers *t, kc_remote_state *out) {
    if (!kc_tiers_has_remote(t)) return KC_MISS;
    return tier_state(&t->t[first_remote(t)], out);
}

size_t kc_tiers_count(const kc_tiers *t) { return t ? t->n : 0; }

int kc_tiers_tier_stats(kc_tiers *t, size_t i, kc_tier_stats *out) {
    if (!t || i >= t->n) return kc_err(KC_MISS, "no tier %zu", i);
    tier *r = &t->t[i];
    kc_tier_stats s = KC_TIER_STATS_INIT;
    snprintf(s.url, sizeof s.url, "%s", r->shown);
    s.remote = !(r->flags & KC_TIER_LOCAL);
    s.readonly = (r->flags & KC_TIER_READONLY) != 0;
    kc_remote_state rs;
    if (s.remote && tier_state(r, &rs) == KC_OK) {
        snprintf(s.url, sizeof s.url, "%s", rs.url);
        s.breaker = rs.breaker, s.retry_in_ms = rs.retry_in_ms, s.failures = rs.failures;
    }
    uint64_t *v[TC_N] = {&s.hits, &s.misses, &s.errors, &s.skipped, &s.writes, &s.write_errors};
    for (int k = 0; k < TC_N; k++) *v[k] = atomic_load_explicit(&r->c[k], memory_order_relaxed);
    *out = s;
    return KC_OK;
}

kc_store_backend *kc_tiers_backend(kc_tiers *t, size_t i, unsigned *flags) {
    if (!t || i >= t->n) return NULL;
    if (flags) *flags = t->t[i].flags;
    return t->t[i].b;
}

int kc_tiers_ping(kc_tiers *t) {
    if (!kc_tiers_has_remote(t)) return KC_MISS;
    int first = KC_OK; /* every remote is asked, so that each breaker says what its remote is like now */
    char why[512] = "";
    for (size_t i = first_remote(t); i < t->n; i++) {
        tier *r = &t->t[i];
        int rc = kc_tiers_enter_(r);
        if (rc == KC_OK) rc = r->b->exists(r->b, PING_NAME), kc_tiers_exit_(r, rc);
        if (rc < 0) {
            kc_tiers_count_failure_(t, r, 0, rc, 0);
            if (first == KC_OK) first = rc, snprintf(why, sizeof why, "%s", kc_error_last()->message);
        }
    }
    return first == KC_OK ? KC_OK : kc_err(first, "%s", why);
}

/* ---- the local tier, through its table ---- */

int kc_tiers_exists(kc_tiers *t, const char *name) {
    tier *l = local_tier(t);
    return l ? l->b->exists(l->b, name) : 0;
}

int kc_tiers_remove(kc_tiers *t, const char *name) {
    tier *l = local_tier(t);
    return l ? l->b->remove(l->b, name) : KC_MISS;
}

int kc_tiers_peek(kc_tiers *t, const char *name, void **out, size_t *len) {
    *out = NULL;
    tier *l = local_tier(t);
    if (!l) return KC_MISS;
    kc_store_backend *b = l->b;
    return b->version >= 2 && b->peek ? b->peek(b, name, out, len) : b->get(b, name, out, len);
}

int kc_tiers_quarantine(kc_tiers *t, const char *name) {
    tier *l = local_tier(t);
    if (!l) return KC_OK;
    return l->b->quarantine ? l->b->quarantine(l->b, name) : l->b->remove(l->b, name);
}

int kc_tiers_iterate(kc_tiers *t, kc_store_iter_cb cb, void *ctx) {
    tier *l = local_tier(t);
    if (!l || !l->b->iterate) return KC_OK;
    return l->b->iterate(l->b, cb, ctx);
}
