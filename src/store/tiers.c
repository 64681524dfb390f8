/*
 * store/tiers.c — the ordered tiers beneath a cache: local first, then remotes
 * ([Note: tiers] in tiers.h).  Only cache/cache.c uses this file.
 *
 * The one idea: a loop over backend tables (libgit2's odb.c, ccache's storage.cpp).  The
 * local tier sits first; the remotes follow in the order they were added.  Every read from
 * a tier is validated here, once, and must be the entry asked for (kc_entry_decode_as); a
 * remote's entry is authenticated before that.  A remote's every outcome — hit, miss,
 * timeout, error, skip, drop, MAC rejection — is counted in one place (count_failure and
 * its neighbours), so a failing remote costs a miss and a counter, never an error.
 *
 * Remote writes go through one background writer thread with a bounded queue: a put
 * returns when the local tier has the entry, and a full queue drops the remote write
 * (counted) rather than block a caller.  Closing waits for the queue at most close_ms
 * (a slow but live remote never opens its breaker, and would otherwise hold an exiting
 * process for queue × deadline), then drops and counts the rest.
 *
 * Must not: call a backend except through its table, name a concrete backend, or include
 * any header of the front door.
 */
#include "tiers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../common/internal.h"
#include "../entry/trust.h"
#include "name.h"

#define MAX_TIERS 8
#define MAX_NAMES 24 /* variants looked up at once in a remote */
#define DEFAULT_QUEUE 256
#define DEFAULT_CLOSE_MS 3000
#define PING_NAME "00000000000000000000000000000000.ping"

typedef struct tier {
    kc_store_backend *b;
    unsigned flags; /* KC_TIER_* */
} tier;

/* One queued remote write. */
typedef struct wjob {
    struct wjob *next;
    kc_store_backend *b; /* the remote it goes to */
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
};

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

int kc_tiers_add(kc_tiers *t, kc_store_backend *b, unsigned flags) {
    if (!t || !b) return kc_err(KC_EINVAL, "kc_tiers_add: NULL argument");
    if (b->version < 1 || b->version > KC_STORE_BACKEND_VERSION)
        return kc_err(KC_EVERSION, "store backend '%s' has table version %u (this build: 1 to %d)",
                      b->name ? b->name : "?", b->version, KC_STORE_BACKEND_VERSION);
    if (!b->get || !b->put || !b->exists || !b->remove || !b->free)
        return kc_err(KC_EINVAL, "store backend '%s' lacks a required function", b->name ? b->name : "?");
    if (t->n == MAX_TIERS) return kc_err(KC_EINVAL, "too many store tiers (%d at most)", MAX_TIERS);
    if (flags & KC_TIER_LOCAL) {
        if (t->local) return kc_err(KC_EINVAL, "a second local tier");
        memmove(&t->t[1], &t->t[0], t->n * sizeof t->t[0]); /* local first */
        t->t[0] = (tier){b, flags};
        t->local = 1;
    } else {
        t->t[t->n] = (tier){b, flags};
    }
    t->n++;
    return KC_OK;
}

void kc_tiers_set_close_ms(kc_tiers *t, unsigned ms) {
    if (t) t->close_ms = ms ? ms : DEFAULT_CLOSE_MS;
}

void kc_tiers_flush(kc_tiers *t) {
    if (!t) return;
    pthread_mutex_lock(&t->wmu);
    while (t->wstarted && (t->whead || t->wbusy)) pthread_cond_wait(&t->widle, &t->wmu);
    pthread_mutex_unlock(&t->wmu);
}

static void count(kc_tiers *t, int shard, kc_stat id);

/* Wait for the queued writes at most close_ms; then stop the writer, and drop (count, free)
 * what it did not take.  The write in flight, if any, ends within its backend's deadline. */
static void writer_close(kc_tiers *t) {
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
        count(t, j->shard, KC_STAT_REMOTE_DROPPED);
        dropped++;
        free(j->data);
        free(j);
    }
    if (dropped)
        kc_log(KC_LOG_REMOTE, "closing: %zu remote writes dropped after waiting %u ms", dropped, t->close_ms);
    pthread_join(t->wthread, NULL);
}

void kc_tiers_free(kc_tiers *t) {
    if (!t) return;
    if (t->wstarted) writer_close(t);
    for (size_t i = t->n; i-- > 0;) t->t[i].b->free(t->t[i].b); /* remotes first, the local tier last */
    pthread_mutex_destroy(&t->wmu);
    pthread_cond_destroy(&t->wcv);
    pthread_cond_destroy(&t->widle);
    free(t);
}

/* The local tier, or NULL; the remotes are t->t[first_remote(t)] … t->t[t->n - 1]. */
static tier *local_tier(kc_tiers *t) { return t && t->local ? &t->t[0] : NULL; }
static size_t first_remote(const kc_tiers *t) { return (size_t)t->local; }

int kc_tiers_has_remote(const kc_tiers *t) { return t && t->n > first_remote(t); }

static int writable_remotes(const kc_tiers *t) {
    int n = 0;
    for (size_t i = first_remote(t); i < t->n; i++) n += !(t->t[i].flags & KC_TIER_READONLY);
    return n;
}

/* ---- counting: every remote outcome ---- */

static void count(kc_tiers *t, int shard, kc_stat id) { t->cfg.count(t->cfg.count_ctx, shard, id, 1); }

/* A remote call failed with `rc`: a timeout, a skip (its breaker is open; a dropped write
 * when writing) or an error; logged unless skipped. */
/* The last remote failure this thread met (a strict lookup turns it into its error). */
static _Thread_local char tl_failure[256];

int kc_tiers_take_failure(char *why, size_t cap) {
    int had = tl_failure[0] != '\0';
    if (had && why && cap) snprintf(why, cap, "%s", tl_failure);
    tl_failure[0] = '\0';
    return had;
}

static void count_failure(kc_tiers *t, int shard, int rc, int writing) {
    if (!writing) snprintf(tl_failure, sizeof tl_failure, "%s", kc_error_last()->message);
    kc_stat id = rc == KC_ETIMEOUT ? KC_STAT_REMOTE_TIMEOUTS
               : rc == KC_EUNAVAILABLE ? (writing ? KC_STAT_REMOTE_DROPPED : KC_STAT_REMOTE_SKIPPED)
               : KC_STAT_REMOTE_ERRORS;
    if (rc != KC_EUNAVAILABLE) kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    count(t, shard, id);
}

/* ---- the background writer ---- */

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
        int rc = j->b->put(j->b, j->name, j->data, j->len);
        if (rc == KC_OK) count(t, j->shard, KC_STAT_REMOTE_PUTS);
        else count_failure(t, j->shard, rc, 1);
        free(j->data);
        free(j);
        pthread_mutex_lock(&t->wmu);
        t->wbusy = 0;
        if (!t->whead) pthread_cond_broadcast(&t->widle);
    }
    pthread_mutex_unlock(&t->wmu);
    return NULL;
}

/* Queue a write of `data` (taken: freed here or by the writer) to remote `b`. */
static int enqueue(kc_tiers *t, kc_store_backend *b, const char *name, int shard, void *data, size_t len) {
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
        j->b = b;
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
        count(t, shard, KC_STAT_REMOTE_DROPPED);
        kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    }
    return rc;
}

/*
 * Queue `data` (taken) for every writable remote i with want[i] set: the last one takes
 * `data` itself, the others a copy (one remote, the usual case: no copy).  The first failure
 * is returned; each is counted and logged.
 */
static int enqueue_all(kc_tiers *t, const int *want, const char *name, int shard, void *data, size_t len) {
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
        int erc = d ? enqueue(t, t->t[i].b, name, shard, d, len)
                    : (count(t, shard, KC_STAT_REMOTE_DROPPED), kc_err(KC_ENOMEM, "%s: no memory to queue it", name));
        if (erc && !rc) rc = erc;
    }
    return rc;
}

int kc_tiers_put(kc_tiers *t, const char *name, int shard, void *data, size_t len) {
    tier *l = local_tier(t);
    int rc = KC_OK;
    if (l && !(l->flags & KC_TIER_READONLY)) {
        rc = l->b->put(l->b, name, data, len);
        if (rc) kc_err_prefix(rc, "storing %s", name);
    }
    int want[MAX_TIERS] = {0};
    /* A host that checks signatures but cannot sign keeps what it compiles local: the fleet would refuse it. */
    int vouched = !kc_trust_checks(&t->trust) || kc_trust_can_vouch(&t->trust);
    for (size_t i = first_remote(t); i < t->n && vouched; i++) want[i] = !(t->t[i].flags & KC_TIER_READONLY);
    (void)enqueue_all(t, want, name, shard, data, len); /* a dropped remote write is counted and logged, not an error */
    return rc;
}

int kc_tiers_publish(kc_tiers *t, const char *name, int shard) {
    if (!kc_tiers_has_remote(t)) return kc_err(KC_EINVAL, "no remote tier configured (KCACHE_REMOTE)");
    if (!writable_remotes(t)) return kc_err(KC_EREADONLY, "the remote is read-only here");
    int want[MAX_TIERS] = {0}, any = 0;
    for (size_t i = first_remote(t); i < t->n; i++) {
        if (t->t[i].flags & KC_TIER_READONLY) continue;
        kc_store_backend *b = t->t[i].b;
        int rc = b->exists(b, name);
        if (rc == 1) continue;
        if (rc < 0) {
            count_failure(t, shard, rc, 1);
            return rc;
        }
        want[i] = any = 1;
    }
    if (!any) return 0;
    void *data;
    size_t len;
    int rc = kc_tiers_peek(t, name, &data, &len);
    if (rc) return rc;
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
            count(t, shard, KC_STAT_PUBLISH_REFUSED);
            return kc_err(KC_EUNTRUSTED, own != 1 ? "%s: not published: it was fetched or imported without a MAC or signature "
                          "this configuration trusts, and only this cache's own compiles are vouched for (recompile it here, "
                          "or import it signed)" : "%s: not published: this host has a keyring but no signing key "
                          "(KCACHE_SIGNING_KEY_FILE): what it compiles stays local", name);
        }
        if ((rc = kc_trust_vouch(&t->trust, &data, &len))) {
            free(data);
            return rc;
        }
    }
    rc = enqueue_all(t, want, name, shard, data, len);
    return rc ? rc : 1;
}

/* ---- lookups ---- */

/* Move a corrupt entry aside: the tier's quarantine, or remove when it has none. */
static int quarantine(kc_store_backend *b, const char *name) {
    return b->quarantine ? b->quarantine(b, name) : b->remove(b, name);
}

/* The local object's bytes, or KC_MISS (absent; unreadable: counted as a store error). */
static int local_raw(kc_tiers *t, tier *l, const char *name, int shard, void **data, size_t *len) {
    int rc = l->b->get(l->b, name, data, len);
    if (rc == KC_OK || rc == KC_MISS) return rc;
    kc_log(KC_LOG_STORE, "get %s: %s", name, kc_error_last()->message); /* a cache-side error costs a miss */
    count(t, shard, KC_STAT_STORE_ERRORS);
    return kc_err(KC_MISS, "no entry %s", name);
}

int kc_tiers_get_local(kc_tiers *t, const kc_key *key, const char *variant, kc_entry **out) {
    return kc_tiers_get_local_some(t, key, variant, ~0u, out);
}

/* The local object `key`.`variant`, read once: decoded keeping `sections` into *out, or (out NULL)
 * only checked, `*raw_len` its `section`'s raw length (kc_entry_check_stored).  A corrupt one is
 * quarantined: KC_ECORRUPT.  Absent or unreadable: KC_MISS. */
static int local_object(kc_tiers *t, const kc_key *key, const char *variant, unsigned sections, int section,
                        uint64_t *raw_len, kc_entry **out) {
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    tier *l = local_tier(t);
    if (!l) return kc_err(KC_MISS, "no entry %s", name);
    void *data;
    size_t len;
    int rc = local_raw(t, l, name, key->bytes[0], &data, &len);
    if (rc != KC_OK) return kc_err(KC_MISS, "no entry %s", name);
    rc = out ? kc_entry_decode_some(out, data, len, key, variant, sections)
             : kc_entry_check_stored(data, len, key, variant, section, raw_len);
    free(data);
    if (rc == KC_ENOMEM) return kc_err(KC_MISS, "no memory to read %s", name);
    if (rc != KC_OK) {
        kc_log(KC_LOG_STORE, "%s: %s", name, kc_error_last()->message);
        kc_err_prefix(KC_ECORRUPT, "corrupt (quarantined)");
        kc_tiers_refused_(name, "in the local cache", KC_ECORRUPT);
        quarantine(l->b, name);
        return kc_err(KC_ECORRUPT, "entry %s was corrupt (quarantined)", name);
    }
    return KC_OK;
}

int kc_tiers_get_local_some(kc_tiers *t, const kc_key *key, const char *variant, unsigned sections, kc_entry **out) {
    *out = NULL;
    return local_object(t, key, variant, sections, -1, NULL, out);
}

int kc_tiers_check_local(kc_tiers *t, const kc_key *key, const char *variant, int section, uint64_t *raw_len) {
    return local_object(t, key, variant, 0, section, raw_len, NULL);
}

/* Check what a remote gave for `name` (key, variant): authenticated before anything past the
 * fixed header is parsed, then decoded as the entry asked for.  KC_OK with *out; else counted
 * and logged, KC_MISS.  `data` stays the caller's. */
static void backend_url(kc_store_backend *b, char *out, size_t cap);

static int remote_accept(kc_tiers *t, kc_store_backend *b, const char *name, const kc_key *key, const char *variant,
                         const void *data, size_t len, kc_entry **out) {
    int shard = key->bytes[0], rc;
    char url[KC_PROV_SOURCE_MAX + 64];
    if ((rc = kc_trust_check(&t->trust, data, len)) != KC_OK) { /* a MAC, or a signature the keyring trusts */
        kc_log(KC_LOG_REMOTE, "remote %s rejected: %s", name, kc_error_last()->message);
        count(t, shard, KC_STAT_MAC_REJECTED);
        backend_url(b, url, sizeof url);
        kc_tiers_refused_(name, url, rc);
        return KC_MISS;
    }
    if ((rc = kc_entry_decode_as(out, data, len, key, variant))) {
        kc_log(KC_LOG_REMOTE, "remote %s unusable: %s", name, kc_error_last()->message);
        count(t, shard, rc == KC_ECORRUPT ? KC_STAT_CORRUPT : KC_STAT_REMOTE_ERRORS);
        if (rc != KC_ENOMEM) {
            backend_url(b, url, sizeof url);
            kc_err_prefix(KC_ECORRUPT, "corrupt");
            kc_tiers_refused_(name, url, KC_ECORRUPT);
        }
        return KC_MISS;
    }
    return KC_OK;
}

/* The URL of the remote a fetched entry came from, as its state shows it (no password): the first
 * remote that says; "-" when none does.  With several remotes a record names the first
 * ([Note: provenance record] in src/store/local.c). */
static void remote_url(kc_tiers *t, char *out, size_t cap) {
    snprintf(out, cap, "-");
    for (size_t i = first_remote(t); i < t->n; i++) {
        kc_store_backend *b = t->t[i].b;
        kc_remote_state rs;
        if (b->version >= 2 && b->state && b->state(b, &rs) == KC_OK) {
            snprintf(out, cap, "%s", rs.url);
            return;
        }
    }
}

/* "from <one remote's URL>", as its state shows it (no password), else its backend's name. */
static void backend_url(kc_store_backend *b, char *out, size_t cap) {
    kc_remote_state rs;
    if (b->version >= 2 && b->state && b->state(b, &rs) == KC_OK) snprintf(out, cap, "from %s", rs.url);
    else snprintf(out, cap, "from the remote '%s'", b->name ? b->name : "?");
}

int kc_tiers_put_local(kc_tiers *t, const char *name, const void *data, size_t len) {
    tier *l = local_tier(t);
    if (!l || (l->flags & KC_TIER_READONLY)) return KC_EREADONLY;
    /* A remote's bytes are not this cache's own: [Note: provenance] (src/store/local.c); the record says
     * which remote and what verified them (the bytes given here are ones remote_accept took). */
    kc_store_backend *b = l->b;
    int rc;
    if (b->version >= 5 && b->put_origin) {
        char url[KC_PROV_SOURCE_MAX + 1], who[KC_TRUST_WHO_MAX], origin[KC_PROV_SOURCE_MAX + 64];
        remote_url(t, url, sizeof url);
        kc_trust_verifier(&t->trust, data, len, who);
        kc_provenance_format(origin, sizeof origin, KC_PROV_FETCHED, url, who);
        rc = b->put_origin(b, name, data, len, origin);
    } else {
        rc = b->version >= 4 && b->put_foreign ? b->put_foreign(b, name, data, len) : b->put(b, name, data, len);
    }
    if (rc != KC_OK) kc_log(KC_LOG_STORE, "remote hit %s not kept locally: %s", name, kc_error_last()->message);
    return rc;
}

/* One remote's lookup of the first present of `np` (variants[i] named np[i]). */
static int remote_get(kc_tiers *t, kc_store_backend *b, const kc_key *key, const char *const *variants,
                      const char *const *np, size_t n, size_t *which, kc_entry **out, void **raw, size_t *raw_len) {
    int shard = key->bytes[0];
    void *data = NULL;
    size_t len = 0, w = 0;
    int rc = n > 1 && b->get_first ? b->get_first(b, np, n, &w, &data, &len) : b->get(b, np[0], &data, &len);
    if (rc == KC_MISS) {
        count(t, shard, KC_STAT_REMOTE_MISSES);
        return KC_MISS;
    }
    if (rc) {
        count_failure(t, shard, rc, 0);
        return KC_MISS;
    }
    kc_entry *e;
    if (remote_accept(t, b, np[w], key, variants[w], data, len, &e) != KC_OK) {
        free(data);
        return KC_MISS;
    }
    if (raw) { /* the caller writes it back once what it refers to is local ([Note: two levels]) */
        *raw = data;
        *raw_len = len;
    } else {
        (void)kc_tiers_put_local(t, np[w], data, len); /* written back */
        free(data);
        count(t, shard, KC_STAT_REMOTE_HITS); /* with raw, the caller counts once it knows the outcome */
    }
    if (which) *which = w;
    *out = e;
    return KC_OK;
}

int kc_tiers_get_remote(kc_tiers *t, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                        kc_entry **out, void **raw, size_t *raw_len) {
    *out = NULL;
    if (raw) *raw = NULL;
    if (!kc_tiers_has_remote(t) || n == 0) return KC_MISS;
    char names[MAX_NAMES][KC_NAME_MAX + 1];
    const char *np[MAX_NAMES];
    if (n > MAX_NAMES) n = MAX_NAMES;
    for (size_t i = 0; i < n; i++) kc_store_name(key, variants[i], names[i]), np[i] = names[i];
    for (size_t i = first_remote(t); i < t->n; i++)
        if (remote_get(t, t->t[i].b, key, variants, np, n, which, out, raw, raw_len) == KC_OK) return KC_OK;
    return KC_MISS;
}

size_t kc_tiers_get_remote_many(kc_tiers *t, const kc_key *keys, const char *variant, size_t n, kc_entry **outs,
                                void **raws, size_t *raw_lens) {
    for (size_t i = 0; i < n; i++) outs[i] = NULL, raws[i] = NULL, raw_lens[i] = 0;
    if (!kc_tiers_has_remote(t) || n == 0) return 0;
    char (*names)[KC_NAME_MAX + 1] = kc_calloc(n, sizeof *names);
    const char **np = kc_calloc(n, sizeof *np), **want = kc_calloc(n, sizeof *want);
    void **data = kc_calloc(n, sizeof *data);
    size_t *lens = kc_calloc(n, sizeof *lens), *ix = kc_calloc(n, sizeof *ix), found = 0;
    if (!names || !np || !want || !data || !lens || !ix) goto out;
    for (size_t i = 0; i < n; i++) kc_store_name(&keys[i], variant, names[i]), np[i] = names[i];
    for (size_t r = first_remote(t); r < t->n && found < n; r++) {
        kc_store_backend *b = t->t[r].b;
        size_t m = 0; /* the names still missing, asked of this remote at once */
        for (size_t i = 0; i < n; i++)
            if (!outs[i]) ix[m] = i, want[m++] = np[i];
        int rc = KC_OK;
        if (b->version >= 3 && b->get_many) {
            rc = b->get_many(b, want, m, data, lens);
        } else {
            for (size_t k = 0; k < m && rc == KC_OK; k++) {
                int g = b->get(b, want[k], &data[k], &lens[k]);
                if (g != KC_OK && g != KC_MISS) rc = g;
                if (g != KC_OK) data[k] = NULL;
            }
        }
        if (rc != KC_OK) count_failure(t, keys[ix[0]].bytes[0], rc, 0);
        for (size_t k = 0; k < m; k++) {
            if (!data[k]) continue;
            size_t i = ix[k];
            if (rc == KC_OK && remote_accept(t, b, np[i], &keys[i], variant, data[k], lens[k], &outs[i]) == KC_OK) {
                raws[i] = data[k], raw_lens[i] = lens[k];
                found++;
            } else {
                free(data[k]);
            }
            data[k] = NULL;
        }
    }
out:
    free(names), free(np), free(want), free(data), free(lens), free(ix);
    return found;
}

/* ---- the remotes' state ---- */

int kc_tiers_remote_state(kc_tiers *t, kc_remote_state *out) {
    if (!kc_tiers_has_remote(t)) return KC_MISS;
    kc_store_backend *b = t->t[first_remote(t)].b;
    if (b->version >= 2 && b->state) return b->state(b, out);
    return kc_err(KC_EINVAL, "the remote backend '%s' reports no state", b->name ? b->name : "?");
}

int kc_tiers_ping(kc_tiers *t) {
    if (!kc_tiers_has_remote(t)) return KC_MISS;
    for (size_t i = first_remote(t); i < t->n; i++) {
        kc_store_backend *b = t->t[i].b;
        int rc = b->exists(b, PING_NAME);
        if (rc < 0) {
            count_failure(t, 0, rc, 0);
            return rc;
        }
    }
    return KC_OK;
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
    return l ? quarantine(l->b, name) : KC_OK;
}

int kc_tiers_iterate(kc_tiers *t, kc_store_iter_cb cb, void *ctx) {
    tier *l = local_tier(t);
    if (!l || !l->b->iterate) return KC_OK;
    return l->b->iterate(l->b, cb, ctx);
}
