/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tiers_impl.h — the tiers' own state, shared by their three files (private to them):
 * tiers.c (the list, counting, state, the local tier's table), tiers_read.c (lookups, back-fill
 * decisions) and tiers_write.c (the background writer, put, publish).  Nothing outside
 * src/store/tiers*.c includes it.
 */
#ifndef KC_STORE_TIERS_IMPL_H
#define KC_STORE_TIERS_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "../entry/trust.h"
#include "breaker.h"
#include "name.h"
#include "tiers.h"

#define MAX_TIERS 8

/* One tier's own counters (kc_tier_stats), this process's. */
typedef enum { TC_HITS, TC_MISSES, TC_ERRORS, TC_SKIPPED, TC_WRITES, TC_WRITE_ERRORS, TC_N } tier_counter;

typedef struct tier {
    kc_store_backend *b;
    unsigned flags;  /* KC_TIER_* */
    char shown[300]; /* its URL as stats show it (no password); "local" for the local tier */
    kc_brk brk;      /* the tiers' breaker, for a remote whose back end keeps none (has_brk) */
    int has_brk;
    _Atomic uint64_t c[TC_N];
    atomic_int lease_off; /* its server refused a lease command (an ACL): no more leases here (store/lease.c) */
} tier;

/* One queued remote write. */
typedef struct wjob {
    struct wjob *next;
    size_t tier; /* the remote it goes to: t->t[tier] */
    char name[KC_NAME_MAX + 1];
    int shard;
    size_t len;
    void *data;
} wjob;

struct kc_tiers {
    tier t[MAX_TIERS]; /* t[0] is the local tier when `local` is set */
    size_t n;
    int local;
    kc_tiers_config cfg;
    kc_trust trust; /* cfg.trust, or the MAC key alone */
    /* the background writer (under wmu) */
    pthread_mutex_t wmu;
    pthread_cond_t wcv, widle;
    wjob *whead, *wtail;
    size_t wlen;
    int wbusy, wstop, wstarted;
    pthread_t wthread;
    unsigned close_ms; /* kc_tiers_free waits at most this long for the queue */
    /* lease.c's counters (kc_tiers_lease_stats) */
    _Atomic uint64_t lease_c[KC_TIERS_LEASE_N];
};

/* The local tier, or NULL; the remotes are t->t[first_remote(t)] … t->t[t->n - 1]. */
static inline tier *local_tier(kc_tiers *t) { return t && t->local ? &t->t[0] : NULL; }
static inline size_t first_remote(const kc_tiers *t) { return (size_t)t->local; }

/* Callers: every tiers*.c. */
void kc_tiers_count_(kc_tiers *t, int shard, kc_stat id);
/* Add 1 to a tier's own counter. */
static inline void tier_count(tier *r, tier_counter id) {
    atomic_fetch_add_explicit(&r->c[id], 1, memory_order_relaxed);
}
/* A remote call failed with `rc`: counted (globally and on the tier), logged unless skipped; a read's failure is
 * this thread's last (kc_tiers_take_failure).  Callers: tiers_read.c, tiers_write.c, tiers.c. */
void kc_tiers_count_failure_(kc_tiers *t, tier *r, int shard, int rc, int writing);
/* Whether a call may go to remote `r` now (its tiers' breaker, when it has one): KC_OK or KC_EUNAVAILABLE;
 * and the call's end (`rc` its result: a failure other than a miss opens the breaker).  Callers: as above. */
int kc_tiers_enter_(tier *r);
void kc_tiers_exit_(tier *r, int rc);
/* Queue `data` (taken) for every remote i with want[i] set (tiers_write.c; callers: tiers_read.c's back-fill). */
int kc_tiers_enqueue_all_(kc_tiers *t, const int *want, const char *name, int shard, void *data, size_t len);
/* Stop the writer, waiting for its queue at most close_ms (tiers_write.c; caller: kc_tiers_free). */
void kc_tiers_writer_close_(kc_tiers *t);

/* Wait for the queued remote writes until `deadline_ns` (kc_mono_ns) at most: 1 drained, 0 not (store/lease.c). */
int kc_tiers_flush_until(kc_tiers *t, uint64_t deadline_ns);

#endif
