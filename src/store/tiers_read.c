/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tiers_read.c — the tiers' reads: the local tier's validated read, and the remotes' lookups
 * down the list with the back-fill of the faster tiers ([Note: tiers] in tiers.h).
 *
 * The one idea: every read from a tier is validated here, once, and must be the entry asked for
 * (kc_entry_decode_as); a remote's entry is authenticated before that.  Reads go down the list —
 * local, remote 1, remote 2, … — and what a slower tier had is written to the faster ones: the
 * local tier (now, kc_tiers_put_local) and each writable remote before it (queued for the
 * background writer, tiers_write.c), so that the next reader finds it one tier up.
 *
 * Must not: call a backend except through its table, name a concrete backend, or include any
 * header of the front door.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "tiers_impl.h"

#define MAX_NAMES 24           /* variants looked up at once in a remote */
#define LENT_BYTES (16 * 1024) /* the local object's bytes read onto the stack, when they fit */

/* The local object's bytes, in `buf` (`cap` bytes) when they fit there and the back end reads into a
 * buffer it is given, else in one to free; or KC_MISS (absent; unreadable: counted as a store error). */
static int local_raw(kc_tiers *t, tier *l, const char *name, int shard, void *buf, size_t cap, void **data,
                     size_t *len) {
    kc_store_backend *b = l->b;
    int rc = b->version >= 7 && b->get_into ? b->get_into(b, name, buf, cap, data, len) : b->get(b, name, data, len);
    if (rc == KC_OK && *data == buf && *len > cap) /* a back end that says it wrote past the buffer lent */
        rc = kc_err(KC_EIO, "the local back end read %zu bytes into a buffer of %zu", *len, cap);
    if (rc == KC_OK || rc == KC_MISS) return rc;
    kc_log(KC_LOG_STORE, "get %s: %s", name, kc_error_last()->message); /* a cache-side error costs a miss */
    kc_tiers_count_(t, shard, KC_STAT_STORE_ERRORS);
    tier_count(l, TC_ERRORS);
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
    uint8_t lent[LENT_BYTES]; /* a hit's object of under 16 KiB is read, checked and let go without a malloc */
    void *data;
    size_t len;
    int rc = local_raw(t, l, name, key->bytes[0], lent, sizeof lent, &data, &len);
    if (rc == KC_MISS) tier_count(l, TC_MISSES);
    if (rc != KC_OK) return kc_err(KC_MISS, "no entry %s", name);
    rc = out ? kc_entry_decode_some(out, data, len, key, variant, sections)
             : kc_entry_check_stored(data, len, key, variant, section, raw_len);
    if (data != lent) free(data);
    if (rc == KC_ENOMEM) return kc_err(KC_MISS, "no memory to read %s", name);
    if (rc != KC_OK) {
        tier_count(l, TC_ERRORS);
        kc_log(KC_LOG_STORE, "%s: %s", name, kc_error_last()->message);
        kc_err_prefix(KC_ECORRUPT, "corrupt (quarantined)");
        kc_tiers_refused_(name, "in the local cache", KC_ECORRUPT);
        kc_tiers_quarantine(t, name);
        return kc_err(KC_ECORRUPT, "entry %s was corrupt (quarantined)", name);
    }
    tier_count(l, TC_HITS);
    return KC_OK;
}

int kc_tiers_get_local_some(kc_tiers *t, const kc_key *key, const char *variant, unsigned sections, kc_entry **out) {
    *out = NULL;
    return local_object(t, key, variant, sections, -1, NULL, out);
}

int kc_tiers_check_local(kc_tiers *t, const kc_key *key, const char *variant, int section, uint64_t *raw_len) {
    return local_object(t, key, variant, 0, section, raw_len, NULL);
}

/* "from <one remote's URL>", as its state shows it (no password), else its tier's URL. */
static void backend_url(tier *r, char *out, size_t cap) {
    kc_store_backend *b = r->b;
    kc_remote_state rs;
    if (b->version >= 2 && b->state && b->state(b, &rs) == KC_OK) snprintf(out, cap, "from %s", rs.url);
    else if (r->shown[0] && strcmp(r->shown, b->name ? b->name : "?") != 0) snprintf(out, cap, "from %s", r->shown);
    else snprintf(out, cap, "from the remote '%s'", b->name ? b->name : "?");
}

/* Check what remote `r` gave for `name` (key, variant): authenticated before anything past the
 * fixed header is parsed, then decoded as the entry asked for.  KC_OK with *out; else counted
 * and logged, KC_MISS.  `data` stays the caller's. */
static int remote_accept(kc_tiers *t, tier *r, const char *name, const kc_key *key, const char *variant,
                         const void *data, size_t len, kc_entry **out) {
    int shard = key->bytes[0], rc;
    char url[KC_PROV_SOURCE_MAX + 64];
    if ((rc = kc_trust_check(&t->trust, data, len)) != KC_OK) { /* a MAC, or a signature the keyring trusts */
        kc_log(KC_LOG_REMOTE, "remote %s rejected: %s", name, kc_error_last()->message);
        kc_tiers_count_(t, shard, KC_STAT_MAC_REJECTED);
        tier_count(r, TC_ERRORS);
        backend_url(r, url, sizeof url);
        kc_tiers_refused_(name, url, rc);
        return KC_MISS;
    }
    if ((rc = kc_entry_decode_as(out, data, len, key, variant))) {
        kc_log(KC_LOG_REMOTE, "remote %s unusable: %s", name, kc_error_last()->message);
        kc_tiers_count_(t, shard, rc == KC_ECORRUPT ? KC_STAT_CORRUPT : KC_STAT_REMOTE_ERRORS);
        tier_count(r, TC_ERRORS);
        if (rc != KC_ENOMEM) {
            backend_url(r, url, sizeof url);
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
    tier_count(l, rc == KC_OK ? TC_WRITES : TC_WRITE_ERRORS);
    if (rc != KC_OK) kc_log(KC_LOG_STORE, "remote hit %s not kept locally: %s", name, kc_error_last()->message);
    return rc;
}

/* What remote tier `hit` had is queued for each writable remote before it (a copy each). */
static void backfill_remotes(kc_tiers *t, size_t hit, const char *name, int shard, const void *data, size_t len) {
    int want[MAX_TIERS] = {0}, any = 0;
    for (size_t i = first_remote(t); i < hit; i++) any |= want[i] = !(t->t[i].flags & KC_TIER_READONLY);
    if (!any) return;
    void *copy = kc_malloc(len ? len : 1);
    if (!copy) return; /* a back-fill is an optimisation: without memory there is none */
    memcpy(copy, data, len);
    (void)kc_tiers_enqueue_all_(t, want, name, shard, copy, len); /* a dropped write is counted and logged */
}

/* One lookup of the first present of `n` names (np[i], variants[i]) of `key`. */
typedef struct remote_ask {
    const kc_key *key;
    const char *const *variants, *const *np;
    size_t n;
} remote_ask;

/* What a remote hit hands back: the entry, which name, and (with raw) the bytes for the caller. */
typedef struct remote_found {
    size_t *which;
    kc_entry **out;
    void **raw;
    size_t *raw_len;
} remote_found;

/* Remote tier `i`'s lookup of the first present of the names asked. */
static int remote_get(kc_tiers *t, size_t i, const remote_ask *q, const remote_found *f) {
    tier *r = &t->t[i];
    kc_store_backend *b = r->b;
    int shard = q->key->bytes[0];
    void *data = NULL;
    size_t len = 0, w = 0;
    int rc = kc_tiers_enter_(r);
    if (rc == KC_OK) {
        rc = q->n > 1 && b->get_first ? b->get_first(b, q->np, q->n, &w, &data, &len)
                                      : b->get(b, q->np[0], &data, &len);
        kc_tiers_exit_(r, rc);
    }
    if (rc == KC_MISS) {
        kc_tiers_count_(t, shard, KC_STAT_REMOTE_MISSES);
        tier_count(r, TC_MISSES);
        return KC_MISS;
    }
    if (rc) {
        kc_tiers_count_failure_(t, r, shard, rc, 0);
        return KC_MISS;
    }
    kc_entry *e;
    if (remote_accept(t, r, q->np[w], q->key, q->variants[w], data, len, &e) != KC_OK) {
        free(data);
        return KC_MISS;
    }
    tier_count(r, TC_HITS);
    backfill_remotes(t, i, q->np[w], shard, data, len);
    if (f->raw) { /* the caller writes it back once what it refers to is local ([Note: two levels]) */
        *f->raw = data;
        *f->raw_len = len;
    } else {
        (void)kc_tiers_put_local(t, q->np[w], data, len); /* written back */
        free(data);
        kc_tiers_count_(t, shard, KC_STAT_REMOTE_HITS); /* with raw, the caller counts once it knows the outcome */
    }
    if (f->which) *f->which = w;
    *f->out = e;
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
    remote_ask q = {key, variants, np, n};
    remote_found f = {which, out, raw, raw_len};
    for (size_t i = first_remote(t); i < t->n; i++)
        if (remote_get(t, i, &q, &f) == KC_OK) return KC_OK;
    return KC_MISS;
}

/* Remote tier `r`'s values of the `m` names want[] (its get_many, else one get each) into data[], lens[]. */
static int fetch_many(tier *r, const char **want, size_t m, void **data, size_t *lens) {
    kc_store_backend *b = r->b;
    int rc = kc_tiers_enter_(r);
    if (rc != KC_OK) return rc;
    if (b->version >= 3 && b->get_many) {
        rc = b->get_many(b, want, m, data, lens);
    } else {
        for (size_t k = 0; k < m && rc == KC_OK; k++) {
            int g = b->get(b, want[k], &data[k], &lens[k]);
            if (g != KC_OK && g != KC_MISS) rc = g;
            if (g != KC_OK) data[k] = NULL;
        }
    }
    kc_tiers_exit_(r, rc);
    return rc;
}

/* Buffers of kc_tiers_get_remote_many, one allocation each. */
typedef struct many_bufs {
    char (*names)[KC_NAME_MAX + 1];
    const char **np, **want;
    void **data;
    size_t *lens, *ix;
} many_bufs;

size_t kc_tiers_get_remote_many(kc_tiers *t, const kc_key *keys, const char *variant, size_t n, kc_entry **outs,
                                void **raws, size_t *raw_lens) {
    for (size_t i = 0; i < n; i++) outs[i] = NULL, raws[i] = NULL, raw_lens[i] = 0;
    if (!kc_tiers_has_remote(t) || n == 0) return 0;
    many_bufs m = {kc_calloc(n, sizeof *m.names), kc_calloc(n, sizeof *m.np),   kc_calloc(n, sizeof *m.want),
                   kc_calloc(n, sizeof *m.data),  kc_calloc(n, sizeof *m.lens), kc_calloc(n, sizeof *m.ix)};
    size_t found = 0;
    if (!m.names || !m.np || !m.want || !m.data || !m.lens || !m.ix) goto out;
    for (size_t i = 0; i < n; i++) kc_store_name(&keys[i], variant, m.names[i]), m.np[i] = m.names[i];
    for (size_t ri = first_remote(t); ri < t->n && found < n; ri++) {
        tier *r = &t->t[ri];
        size_t k, c = 0; /* the names still missing, asked of this remote at once */
        for (size_t i = 0; i < n; i++)
            if (!outs[i]) m.ix[c] = i, m.want[c++] = m.np[i];
        int rc = fetch_many(r, m.want, c, m.data, m.lens);
        if (rc != KC_OK) kc_tiers_count_failure_(t, r, keys[m.ix[0]].bytes[0], rc, 0);
        for (k = 0; k < c; k++) {
            size_t i = m.ix[k];
            if (rc == KC_OK && !m.data[k]) tier_count(r, TC_MISSES);
            if (!m.data[k]) continue;
            if (rc == KC_OK &&
                remote_accept(t, r, m.np[i], &keys[i], variant, m.data[k], m.lens[k], &outs[i]) == KC_OK) {
                tier_count(r, TC_HITS);
                backfill_remotes(t, ri, m.np[i], keys[i].bytes[0], m.data[k], m.lens[k]);
                raws[i] = m.data[k], raw_lens[i] = m.lens[k];
                found++;
            } else {
                free(m.data[k]);
            }
            m.data[k] = NULL;
        }
    }
out:
    free(m.names), free(m.np), free(m.want), free(m.data), free(m.lens), free(m.ix);
    return found;
}
