/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/lease.c — one compile per key across the fleet: a lease on a missing entry's name in the
 * first writable remote whose back end has leases ([Note: leases] below).
 *
 * The one idea: a lookup that missed every tier asks the remote for a short lease on the name
 * before it compiles.  Taken: it compiles, its put reaches the remote (the writer's queue is
 * flushed first), then it releases.  Busy: it polls the remote for the entry (a growing, jittered
 * interval), taking the lease itself when it comes free, and gives up waiting when its own wait
 * has lasted the lease.  Callers: cache/lease.c (for graph/lookup.c's single flight).
 *
 * Must not: make a lease needed for correctness (any remote error: compile as without leases),
 * read or trust what the remote holds (the caller fetches the entry through the verified read),
 * or wait past the lease.
 *
 * [Note: leases] A lease is a hint: the worst a lost, stolen or expired lease costs is one more
 * compile of the same entry.  No host waits longer than the lease (remote_lease_ms), one remote command
 * deadline and its own compile: each waiter's deadline is its own start plus the lease, whatever happens
 * to the holder, and no call of the wait starts past it (a call under way ends within its deadline).
 * Releasing deletes only the holder's own lease (its token: host name, pid, a random nonce), so a
 * holder whose lease expired while it compiled never deletes the next holder's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../common/internal.h"
#include "tiers_impl.h"

#define POLL_FIRST_MS 10
#define POLL_MAX_MS 500

/* The first writable remote whose table has leases, or t->n when none — or when this host cannot publish
 * what it compiles (a keyring without a signing key: tiers_write.c keeps it local), since its leases would
 * hold the fleet up for entries that never arrive. */
static size_t lease_tier(const kc_tiers *t) {
    if (kc_trust_checks(&t->trust) && !kc_trust_can_vouch(&t->trust)) return t->n;
    for (size_t i = first_remote(t); i < t->n; i++) {
        const tier *r = &t->t[i];
        const kc_store_backend *b = r->b;
        if (!(r->flags & KC_TIER_READONLY) && b->version >= 6 && b->lease_take && b->lease_release)
            return atomic_load_explicit(&r->lease_off, memory_order_relaxed) ? t->n : i;
    }
    return t->n;
}

/* `n` random bytes (the kernel's; else the clock and pid: a nonce need only differ, not be secret). */
static void rnd(void *p, size_t n) {
    if (getrandom(p, n, GRND_NONBLOCK) == (ssize_t)n) return;
    uint64_t x = kc_mono_ns() ^ ((uint64_t)getpid() << 40);
    memcpy(p, &x, n < sizeof x ? n : sizeof x);
}

/* A token unique to this process and attempt: "<host>:<pid>:<nonce>", printable, at most 64 bytes. */
static void holder_token(char *out, size_t cap) {
    char host[33] = "";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++)
        if (*p <= ' ' || *p > '~') *p = '_';
    uint64_t n = 0;
    rnd(&n, sizeof n);
    snprintf(out, cap, "%s:%ld:%016llx", host, (long)getpid(), (unsigned long long)n);
}

/* One call to the leasing tier through its breaker: take (holder set), else release.  A lease the server
 * refused (KC_EPERM: an ACL user without the lease keys or scripting) is no fault of the remote, whose
 * entries still work, but no lease will come from it: leases stay off on that remote for the process. */
static int lease_call(tier *r, const char *name, uint64_t ttl_ms, const char *holder, int take) {
    int rc = kc_tiers_enter_(r);
    if (rc != KC_OK) return rc;
    rc = take ? r->b->lease_take(r->b, name, ttl_ms, holder) : r->b->lease_release(r->b, name, holder);
    kc_tiers_exit_(r, rc == KC_EBUSY || rc == KC_EPERM ? KC_OK : rc);
    if (rc == KC_EPERM && !atomic_exchange(&r->lease_off, 1))
        kc_log(KC_LOG_REMOTE, "%s; leases off on %s for this process", kc_error_last()->message, r->shown);
    return rc;
}

/* Whether `name` is in tier `r` now: 1, 0, or an error. */
static int present(tier *r, const char *name) {
    int rc = kc_tiers_enter_(r);
    if (rc != KC_OK) return rc;
    rc = r->b->exists(r->b, name);
    kc_tiers_exit_(r, rc);
    return rc;
}

/* Sleep about `ms` (±25 %), never past `deadline` (kc_mono_ns). */
static void nap(unsigned ms, uint64_t deadline) {
    uint8_t j = 0;
    rnd(&j, 1);
    uint64_t ns = (uint64_t)ms * 1000000ull * (192 + (j % 128)) / 256; /* 0.75 … 1.25 */
    uint64_t now = kc_mono_ns();
    if (now >= deadline) return;
    if (ns > deadline - now) ns = deadline - now;
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static void lease_count(kc_tiers *t, int id, uint64_t n) {
    atomic_fetch_add_explicit(&t->lease_c[id], n, memory_order_relaxed);
}

int kc_tiers_lease_acquire(kc_tiers *t, const char *name, uint64_t ttl_ms, kc_tiers_lease *l) {
    memset(l, 0, sizeof *l);
    size_t ti = t && ttl_ms ? lease_tier(t) : (t ? t->n : 0);
    if (!t || ti == t->n) return KC_MISS;
    tier *r = &t->t[ti];
    l->tier = ti;
    snprintf(l->name, sizeof l->name, "%s", name);
    holder_token(l->holder, sizeof l->holder);
    uint64_t t0 = kc_mono_ns(), deadline = t0 + ttl_ms * 1000000ull;
    unsigned every = POLL_FIRST_MS;
    for (int round = 0;; round++) {
        if (round && kc_mono_ns() >= deadline) { /* checked before each call: none starts past the lease */
            kc_log(KC_LOG_REMOTE, "lease %s: waited %llu ms (the lease) without the entry; compiling", name,
                   (unsigned long long)ttl_ms);
            break;
        }
        int rc = lease_call(r, name, ttl_ms, l->holder, 1);
        if (rc == KC_OK && present(r, name) == 1) { /* its holder stored it and let go since the miss */
            (void)lease_call(r, name, 0, l->holder, 0);
            l->arrived = 1;
            break;
        }
        if (rc == KC_OK) {
            l->held = 1;
            l->until_ns = kc_mono_ns() + ttl_ms * 1000000ull;
            lease_count(t, KC_TIERS_LEASE_TAKEN, 1);
            kc_log(KC_LOG_REMOTE, "lease %s taken on %s for %llu ms%s", name, r->shown, (unsigned long long)ttl_ms,
                   round ? " (the last holder's ended without the entry)" : "");
            break;
        }
        if (rc != KC_EBUSY) {
            kc_log(KC_LOG_REMOTE, "lease %s: %s; compiling without a lease", name, kc_error_last()->message);
            break;
        }
        if (!round) {
            l->waited = 1;
            lease_count(t, KC_TIERS_LEASE_WAITS, 1);
            kc_log(KC_LOG_REMOTE, "lease %s held by another host: waiting up to %llu ms for its entry", name,
                   (unsigned long long)ttl_ms);
        }
        int p = kc_mono_ns() < deadline ? present(r, name) : 0;
        if (p == 1) {
            l->arrived = 1;
            break;
        }
        if (p < 0) {
            kc_log(KC_LOG_REMOTE, "lease %s: %s; compiling without a lease", name, kc_error_last()->message);
            break;
        }
        nap(every, deadline);
        every = every * 3 / 2 > POLL_MAX_MS ? POLL_MAX_MS : every * 3 / 2;
    }
    l->waited_us = l->waited ? (kc_mono_ns() - t0) / 1000 : 0;
    if (l->waited) lease_count(t, KC_TIERS_LEASE_WAIT_US, l->waited_us);
    return l->arrived ? 1 : KC_OK;
}

void kc_tiers_lease_waited(kc_tiers *t, const kc_tiers_lease *l, int hit) {
    if (t && l->waited) lease_count(t, hit ? KC_TIERS_LEASE_WAIT_HITS : KC_TIERS_LEASE_WAIT_COMPILES, 1);
}

void kc_tiers_lease_release(kc_tiers *t, kc_tiers_lease *l) {
    if (!t || !l->held) return;
    l->held = 0;
    /* the entry reaches the remote before the waiters are let go — waited for until the lease ends, no longer
     * (after it, the waiters compile anyway; a queue of other writes to a slow remote must not hold this one) */
    if (!kc_tiers_flush_until(t, l->until_ns))
        kc_log(KC_LOG_REMOTE, "lease %s: its entry's write still queued at the lease's end; released", l->name);
    int rc = lease_call(&t->t[l->tier], l->name, 0, l->holder, 0);
    if (rc == KC_MISS) kc_log(KC_LOG_REMOTE, "lease %s had expired before its release", l->name);
    else if (rc != KC_OK) kc_log(KC_LOG_REMOTE, "lease %s: release: %s", l->name, kc_error_last()->message);
}

void kc_tiers_lease_stats(kc_tiers *t, uint64_t out[KC_TIERS_LEASE_N]) {
    for (int i = 0; i < KC_TIERS_LEASE_N; i++)
        out[i] = t ? atomic_load_explicit(&t->lease_c[i], memory_order_relaxed) : 0;
}
