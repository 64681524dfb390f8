/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/breaker.h — a remote's circuit breaker (internal; callers: store/redis.c for its own, and
 * store/tiers.c for a remote tier whose back end keeps none, i.e. has no `state` slot).
 *
 * The one idea: an outage costs one failure per back-off window, never a timeout per call.  After
 * a failure every call is refused at once (KC_EUNAVAILABLE) for a window that doubles with each
 * consecutive failure (±25% jitter, so that a fleet does not retry in step); then one call goes
 * through as a probe, and its success closes the breaker.
 *
 * Must not: make a call itself, or know what a remote is.
 */
#ifndef KC_STORE_BREAKER_H
#define KC_STORE_BREAKER_H

#include <pthread.h>
#include <stdint.h>

#include "kcache/store.h"

typedef struct kc_brk {
    pthread_mutex_t mu;
    kc_breaker state;
    uint64_t open_until_ns;
    unsigned failures;
    uint64_t rng;
    unsigned backoff_ms, backoff_max_ms;
    const char *shown; /* the remote's URL as messages show it; borrowed */
} kc_brk;

/** A closed breaker with these windows (0: 1000 and 60000 ms); `shown` is borrowed. */
void kc_brk_init(kc_brk *k, unsigned backoff_ms, unsigned backoff_max_ms, const char *shown);
void kc_brk_destroy(kc_brk *k);
/** Whether a call may go now: KC_OK, or KC_EUNAVAILABLE ("remote <shown> skipped: circuit breaker open"). */
int kc_brk_enter(kc_brk *k);
/** The call that entered ended: `failed` opens (or re-opens) the window, else the breaker closes. */
void kc_brk_exit(kc_brk *k, int failed);
/** The breaker's part of a kc_remote_state (breaker, retry_in_ms, failures). */
void kc_brk_state(kc_brk *k, kc_remote_state *out);

#endif
