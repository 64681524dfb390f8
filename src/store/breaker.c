/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/breaker.c — a remote's circuit breaker ([the one idea] in breaker.h).  Callers: the redis
 * back end (its own), the tiers (a remote tier whose back end keeps none).
 *
 * Must not: make a call itself, or know what a remote is.
 */
#include "breaker.h"

#include "../common/internal.h"

const char *kc_breaker_name(kc_breaker s) {
    return s == KC_BREAKER_CLOSED ? "closed" : s == KC_BREAKER_OPEN ? "open" : "half-open";
}

void kc_brk_init(kc_brk *k, unsigned backoff_ms, unsigned backoff_max_ms, const char *shown) {
    memset(k, 0, sizeof *k);
    pthread_mutex_init(&k->mu, NULL);
    k->backoff_ms = backoff_ms ? backoff_ms : 1000;
    k->backoff_max_ms = backoff_max_ms ? backoff_max_ms : 60000;
    if (k->backoff_max_ms < k->backoff_ms) k->backoff_max_ms = k->backoff_ms;
    k->rng = kc_mono_ns() ^ (uint64_t)(uintptr_t)k;
    k->shown = shown;
}

void kc_brk_destroy(kc_brk *k) { pthread_mutex_destroy(&k->mu); }

int kc_brk_enter(kc_brk *k) {
    pthread_mutex_lock(&k->mu);
    int rc = KC_OK;
    if (k->state == KC_BREAKER_OPEN && kc_mono_ns() >= k->open_until_ns) k->state = KC_BREAKER_HALF_OPEN;
    else if (k->state != KC_BREAKER_CLOSED) rc = KC_EUNAVAILABLE;                       /* open, or a probe is out */
    if (k->state == KC_BREAKER_HALF_OPEN && rc == KC_OK) k->open_until_ns = UINT64_MAX; /* this call probes */
    pthread_mutex_unlock(&k->mu);
    if (rc) return kc_err(rc, "remote %s skipped: circuit breaker open", k->shown);
    return KC_OK;
}

void kc_brk_exit(kc_brk *k, int failed) {
    pthread_mutex_lock(&k->mu);
    if (!failed) {
        if (k->state != KC_BREAKER_CLOSED) kc_log(KC_LOG_REMOTE, "%s: reachable again, breaker closed", k->shown);
        k->state = KC_BREAKER_CLOSED;
        k->failures = 0;
    } else {
        k->failures++;
        double w = k->backoff_ms;
        for (unsigned i = 1; i < k->failures && w < k->backoff_max_ms; i++) w *= 2;
        if (w > k->backoff_max_ms) w = k->backoff_max_ms;
        k->rng = k->rng * 6364136223846793005ull + 1442695040888963407ull;
        w *= 0.75 + 0.5 * (double)(k->rng >> 11) / (double)(1ull << 53);
        k->state = KC_BREAKER_OPEN;
        k->open_until_ns = kc_mono_ns() + (uint64_t)(w * 1e6);
        kc_log(KC_LOG_REMOTE, "%s: breaker open for %.0f ms (failure %u)", k->shown, w, k->failures);
    }
    pthread_mutex_unlock(&k->mu);
}

void kc_brk_state(kc_brk *k, kc_remote_state *out) {
    pthread_mutex_lock(&k->mu);
    out->breaker = k->state;
    out->failures = k->failures;
    out->retry_in_ms = 0;
    uint64_t now = kc_mono_ns();
    if (k->state == KC_BREAKER_OPEN && k->open_until_ns > now)
        out->retry_in_ms = (double)(k->open_until_ns - now) / 1e6;
    pthread_mutex_unlock(&k->mu);
}
