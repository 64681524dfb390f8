/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tiers_write.c — the tiers' writes: put (local now, the writable remotes through one
 * background writer), publish, and the writer itself ([Note: tiers] in tiers.h).
 *
 * The one idea: a put returns when the local tier has the entry; the remotes get it from one
 * background writer thread with a bounded queue, and a full queue drops the remote write (counted)
 * rather than block a caller.  Closing waits for the queue at most close_ms (a slow but live remote
 * never opens its breaker, and would otherwise hold an exiting process for queue × deadline), then
 * drops and counts the rest.  The reads' back-fill of faster remotes (tiers_read.c) queues here too.
 *
 * Must not: call a backend except through its table, name a concrete backend, or include any
 * header of the front door.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../common/internal.h"
#include "tiers_impl.h"

void kc_tiers_flush(kc_tiers *t) {
    if (!t) return;
    pthread_mutex_lock(&t->wmu);
    while (t->wstarted && (t->whead || t->wbusy)) pthread_cond_wait(&t->widle, &t->wmu);
    pthread_mutex_unlock(&t->wmu);
}

int kc_tiers_flush_until(kc_tiers *t, uint64_t deadline_ns) {
    if (!t) return 1;
    struct timespec dl = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    pthread_mutex_lock(&t->wmu);
    while (t->wstarted && (t->whead || t->wbusy)) /* widle's clock is monotonic (tiers.c), as kc_mono_ns is */
        if (pthread_cond_timedwait(&t->widle, &t->wmu, &dl) == ETIMEDOUT) break;
    int busy = t->wstarted && (t->whead || t->wbusy);
    pthread_mutex_unlock(&t->wmu);
    return !busy;
}

/* A queued write not made: counted (globally and on its tier) and freed. */
static void drop(kc_tiers *t, wjob *j) {
    kc_tiers_count_(t, j->shard, KC_STAT_REMOTE_DROPPED);
    tier_count(&t->t[j->tier], TC_WRITE_ERRORS);
    free(j->data);
    free(j);
}

/* Wait for the queued writes at most close_ms; then stop the writer, and drop (count, free)
 * what it did not take.  The write in flight, if any, ends within its backend's deadline. */
void kc_tiers_writer_close_(kc_tiers *t) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += t->close_ms / 1000;
    dl.tv_nsec += (long)(t->close_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&t->wmu);
    while (t->whead || t->wbusy)
        if (pthread_cond_timedwait(&t->widle, &t->wmu, &dl) == ETIMEDOUT) break;
    wjob *rest = t->whead;
    t->whead = t->wtail = NULL;
    t->wlen = 0;
    t->wstop = 1;
    pthread_cond_broadcast(&t->wcv);
    pthread_mutex_unlock(&t->wmu);
    size_t dropped = 0;
    while (rest) {
        wjob *j = rest;
        rest = j->next;
        drop(t, j);
        dropped++;
    }
    if (dropped) kc_log(KC_LOG_REMOTE, "closing: %zu remote writes dropped after waiting %u ms", dropped, t->close_ms);
    pthread_join(t->wthread, NULL);
}

/* One queued write, made. */
static void write_one(kc_tiers *t, wjob *j) {
    tier *r = &t->t[j->tier];
    int rc = kc_tiers_enter_(r);
    if (rc == KC_OK) rc = r->b->put(r->b, j->name, j->data, j->len), kc_tiers_exit_(r, rc);
    if (rc == KC_OK) {
        kc_tiers_count_(t, j->shard, KC_STAT_REMOTE_PUTS);
        tier_count(r, TC_WRITES);
    } else {
        kc_tiers_count_failure_(t, r, j->shard, rc, 1);
    }
    free(j->data);
    free(j);
}

static void *writer_main(void *arg) {
    kc_tiers *t = arg;
    pthread_mutex_lock(&t->wmu);
    for (;;) {
        while (!t->whead && !t->wstop) pthread_cond_wait(&t->wcv, &t->wmu);
        if (!t->whead) break; /* stopping, and nothing left */
        wjob *j = t->whead;
        t->whead = j->next;
        if (!t->whead) t->wtail = NULL;
        t->wlen--;
        t->wbusy = 1;
        pthread_mutex_unlock(&t->wmu);
        write_one(t, j);
        pthread_mutex_lock(&t->wmu);
        t->wbusy = 0;
        if (!t->whead) pthread_cond_broadcast(&t->widle);
    }
    pthread_mutex_unlock(&t->wmu);
    return NULL;
}

/* Queue a write of `data` (taken: freed here or by the writer) to remote tier `ti`. */
static int enqueue(kc_tiers *t, size_t ti, const char *name, int shard, void *data, size_t len) {
    wjob *j = kc_malloc(sizeof *j);
    pthread_mutex_lock(&t->wmu);
    int rc = KC_OK;
    if (!j || t->wlen >= t->cfg.queue_cap || t->wstop) {
        rc = kc_err(KC_EBUSY, "remote write queue full (%zu): %s dropped", t->cfg.queue_cap, name);
    } else if (!t->wstarted) {
        if (pthread_create(&t->wthread, NULL, writer_main, t) == 0) t->wstarted = 1;
        else rc = kc_err(KC_ERROR, "cannot start the remote writer: %s", strerror(errno));
    }
    if (rc == KC_OK) {
        j->next = NULL;
        j->tier = ti;
        snprintf(j->name, sizeof j->name, "%s", name);
        j->shard = shard;
        j->data = data, j->len = len;
        if (t->wtail) t->wtail->next = j;
        else t->whead = j;
        t->wtail = j;
        t->wlen++;
        pthread_cond_signal(&t->wcv);
    }
    pthread_mutex_unlock(&t->wmu);
    if (rc) {
        free(j);
        free(data);
        kc_tiers_count_(t, shard, KC_STAT_REMOTE_DROPPED);
        tier_count(&t->t[ti], TC_WRITE_ERRORS);
        kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    }
    return rc;
}

/*
 * Queue `data` (taken) for every writable remote i with want[i] set: the last one takes
 * `data` itself, the others a copy (one remote, the usual case: no copy).  The first failure
 * is returned; each is counted and logged.
 */
int kc_tiers_enqueue_all_(kc_tiers *t, const int *want, const char *name, int shard, void *data, size_t len) {
    size_t last = t->n;
    for (size_t i = first_remote(t); i < t->n; i++)
        if (want[i]) last = i;
    if (last == t->n) {
        free(data);
        return KC_OK;
    }
    int rc = KC_OK;
    for (size_t i = first_remote(t); i <= last; i++) {
        if (!want[i]) continue;
        void *d = data;
        if (i != last && (d = kc_malloc(len ? len : 1)) != NULL) memcpy(d, data, len);
        int erc = d ? enqueue(t, i, name, shard, d, len)
                    : (kc_tiers_count_(t, shard, KC_STAT_REMOTE_DROPPED), tier_count(&t->t[i], TC_WRITE_ERRORS),
                       kc_err(KC_ENOMEM, "%s: no memory to queue it", name));
        if (erc && !rc) rc = erc;
    }
    return rc;
}

int kc_tiers_put(kc_tiers *t, const char *name, int shard, void *data, size_t len) {
    tier *l = local_tier(t);
    int rc = KC_OK;
    if (l && !(l->flags & KC_TIER_READONLY)) {
        rc = l->b->put(l->b, name, data, len);
        tier_count(l, rc == KC_OK ? TC_WRITES : TC_WRITE_ERRORS);
        if (rc) kc_err_prefix(rc, "storing %s", name);
    }
    int want[MAX_TIERS] = {0};
    /* A host that checks signatures but cannot sign keeps what it compiles local: the fleet would refuse it. */
    int vouched = !kc_trust_checks(&t->trust) || kc_trust_can_vouch(&t->trust);
    for (size_t i = first_remote(t); i < t->n && vouched; i++) want[i] = !(t->t[i].flags & KC_TIER_READONLY);
    (void)kc_tiers_enqueue_all_(t, want, name, shard, data, len); /* a dropped remote write is counted and logged */
    return rc;
}

static int writable_remotes(const kc_tiers *t) {
    int n = 0;
    for (size_t i = first_remote(t); i < t->n; i++) n += !(t->t[i].flags & KC_TIER_READONLY);
    return n;
}

/* Which writable remotes lack `name` (one exists() each) into want[]: 1 when any, 0 when none, or the
 * first failure (counted). */
static int remotes_lacking(kc_tiers *t, const char *name, int shard, int *want) {
    int any = 0;
    for (size_t i = first_remote(t); i < t->n; i++) {
        tier *r = &t->t[i];
        if (r->flags & KC_TIER_READONLY) continue;
        int rc = kc_tiers_enter_(r);
        if (rc == KC_OK) rc = r->b->exists(r->b, name), kc_tiers_exit_(r, rc);
        if (rc == 1) continue;
        if (rc < 0) {
            kc_tiers_count_failure_(t, r, shard, rc, 1);
            return rc;
        }
        want[i] = any = 1;
    }
    return any;
}

int kc_tiers_publish(kc_tiers *t, const char *name, int shard) {
    if (!kc_tiers_has_remote(t)) return kc_err(KC_EINVAL, "no remote tier configured (KCACHE_REMOTE)");
    if (!writable_remotes(t)) return kc_err(KC_EREADONLY, "the remote is read-only here");
    int want[MAX_TIERS] = {0};
    int rc = remotes_lacking(t, name, shard, want);
    if (rc <= 0) return rc;
    void *data;
    size_t len;
    if ((rc = kc_tiers_peek(t, name, &data, &len))) return rc;
    /* Sealing or signing vouches for the bytes: only this cache's own compiles are vouched for
     * now (an entry stored before the key was set).  Bytes fetched or imported without what this
     * configuration requires (a MAC under its key, a signature its keyring trusts) are refused,
     * never laundered into vouched-for ones ([Note: provenance] in local.c); and a host with a
     * keyring but no signing key vouches for nothing: what it compiles stays local. */
    if (kc_trust_checks(&t->trust) && kc_trust_check(&t->trust, data, len) != KC_OK) {
        tier *l = local_tier(t);
        int own = l && l->b->version >= 4 && l->b->is_own ? l->b->is_own(l->b, name) : 0;
        if (own != 1 || !kc_trust_can_vouch(&t->trust)) {
            free(data);
            kc_tiers_count_(t, shard, KC_STAT_PUBLISH_REFUSED);
            return kc_err(
                KC_EUNTRUSTED,
                own != 1
                    ? "%s: not published: it was fetched or imported without a MAC or signature "
                      "this configuration trusts, and only this cache's own compiles are vouched for (recompile it here, "
                      "or import it signed)"
                    : "%s: not published: this host has a keyring but no signing key "
                      "(KCACHE_SIGNING_KEY_FILE): what it compiles stays local",
                name);
        }
        if ((rc = kc_trust_vouch(&t->trust, &data, &len))) {
            free(data);
            return rc;
        }
    }
    rc = kc_tiers_enqueue_all_(t, want, name, shard, data, len);
    return rc ? rc : 1;
}
