/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/cache.c — the front door: kc_cache_open and the entry-level get/put that every other
 * part of the library builds on.
 *
 * The one idea: a caller sees hits and misses, never cache trouble.  Configuration is
 * resolved once, at open (options, then KCACHE_* overrides), and the tiers are assembled
 * there: the local directory store first, then any remote (store/tiers.h, [Note: tiers]).
 * Everything an entry meets on its way in or out — validation, the identity check,
 * quarantine, write-back, the remote writer, the counting of remote outcomes — is the
 * tiers'; this file checks arguments, applies the cache's mode, and calls them.  What is the
 * local directory's own and not a tier operation (stats shards, gc, clear, compile locks,
 * paths) it calls on the local store directly.
 *
 * Who calls it: callers (kcache/cache.h); the graph and bundle parts through internal.h.
 * Must not: do anything on a hit beyond read + validate + count (the hot path), or call a
 * backend except through the tiers (opening the backends, in tiers_assemble, aside, and the
 * remote a site's profile travels to, which is no entry of the directory: kc_cache_profile_remote_).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "../entry/trust.h"
#include "kcache/cache.h"
#include "kcache/sign.h"
#include "kcache/sys/store.h" /* kc_store_backend: the tiers are assembled here */
#include "../store/local.h"
#include "../store/registry.h" /* kc_remotes_parse, kc_store_open_url */
#include "../store/tiers.h"
#include "internal.h"
#include "../common/fs.h"
#include "../config/config.h"

struct kc_cache {
    kc_config *cfg;           /* every setting, read once at open (config/; cache/settings.c hands it kc_options) */
    kc_local *local;          /* NULL when disabled; owned by the tiers (their local tier) */
    kc_tiers *tiers;          /* local first, then the remote ([Note: tiers] in store/tiers.h) */
    kc_store_backend *remote; /* the first remote, borrowed from the tiers: for profiles only */
    int remote_writable;
    char dir[PATH_MAX];
    uint64_t max_size;
    kc_mode mode;
    int require_hit; /* KC_OPEN_REQUIRE_HIT: a lookup must not run NVRTC */
    int strict;      /* KC_OPEN_STRICT: anomalies are errors */
    uint8_t *mac_key;
    size_t mac_key_len;
    kc_signer *signer;             /* KCACHE_SIGNING_KEY_FILE: this cache's compiles are signed */
    kc_keyring *keyring;           /* KCACHE_KEYRING: what the remote and bundles must be signed by */
    kc_trust trust;                /* the three together (src/entry/trust.h), lent to the tiers */
    char origin_manifest[512];     /* the manifest a prewarm compiles (ORIGIN "manifest" of what it writes) */
    kc_cache_attachment *attached; /* a part above's per-handle state (kc_cache_attached_), dropped at close */
};

int kc_parse_size(const char *s, uint64_t *out) {
    if (!s || !out) return kc_err(KC_EINVAL, "kc_parse_size: NULL argument");
    if (!*s) return kc_err(KC_EINVAL, "not a size: '' (e.g. 5G, 500M, 64K)");
    return kc_env_size("", s, out); /* the one size grammar (common/env.c) */
}

/* Free a buffer that held a key, overwriting it first. */
static void wipe_free(void *p, size_t len) {
    if (!p) return;
    volatile unsigned char *v = p;
    for (size_t i = 0; i < len; i++) v[i] = 0;
    free(p);
}

/* A count into the shards; under a lookup outcome's id (kcache/stats.h), lookups of unmeasured time,
 * each also observed as 0 s, so that the latency histogram and the outcome counters agree. */
static void count_or_observe(kc_local *l, int shard, kc_stat id, int64_t n) {
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++)
        if (kc_lookup_outcome_stat((kc_lookup_outcome)o) == id) {
            kc_local_observe(l, shard, (kc_lookup_outcome)o, 0, n);
            return;
        }
    kc_local_count(l, shard, id, n);
}

/* The tiers' counter sink: the local directory's stats shards. */
static void count_in_shards(void *ctx, int shard, kc_stat id, int64_t n) {
    kc_cache *c = ctx;
    count_or_observe(c->local, shard, id, n);
}

/*
 * Open every remote of the list (kc_remotes_parse: "URL|attr… URL…") through the back end registered
 * for its scheme (store/registry.c) and add it as the next tier, with its read-only switch (its
 * "read-only" attribute, KC_OPEN_REMOTE_READONLY, or a cache that does not write).  No back end is named
 * here: a new one is its file and its registration.  What was added is the tiers' to free.
 */
static int remotes_assemble(kc_cache *c, const kc_options *o, unsigned flags) {
    kc_remote_spec *specs = kc_calloc(KC_REMOTES_MAX, sizeof *specs);
    if (!specs) return kc_err(KC_ENOMEM, "out of memory");
    size_t n = 0;
    char by[600]; /* "kc_options.settings[0] remote", "KCACHE_REMOTE", "FILE:LINE remote" */
    int rc = kc_remotes_parse(o->remote, &o->remote_config, specs, KC_REMOTES_MAX, &n);
    if (rc) kc_err_prefix(rc, "%s", kc_cache_config_by_(c->cfg, KC_CONFIG_remote, by, sizeof by));
    for (size_t i = 0; i < n && rc == KC_OK; i++) {
        kc_store_backend *b;
        if ((rc = kc_store_open_url(&b, specs[i].url, &specs[i].limits)) != KC_OK) {
            kc_err_prefix(rc, "%s", kc_cache_config_by_(c->cfg, KC_CONFIG_remote, by, sizeof by));
            break;
        }
        unsigned tf = specs[i].readonly || (flags & KC_OPEN_REMOTE_READONLY) || c->mode != KC_CACHE_READWRITE
                          ? KC_TIER_READONLY
                          : 0;
        if ((rc = kc_tiers_add_remote(c->tiers, b, tf, specs[i].url, &specs[i].limits)) != KC_OK) {
            b->free(b);
            break;
        }
        if (!c->remote) c->remote = b, c->remote_writable = !(tf & KC_TIER_READONLY);
    }
    free(specs);
    return rc;
}

/*
 * Assemble the tiers: the remotes of the list, and the local directory (which kc_tiers_add puts
 * first).  What was added is the tiers' to free; what failed is freed here.
 */
static int tiers_assemble(kc_cache *c, const kc_options *o, unsigned flags) {
    int rc;
    if ((rc = kc_local_open(&c->local, c->dir, c->max_size, flags)) != KC_OK) return rc;
    bool found_readonly = false; /* a directory that refuses writes is a read-only cache ([Note: store status codes]) */
    if (kc_local_readonly(c->local, &found_readonly) && found_readonly && c->mode == KC_CACHE_READWRITE)
        c->mode = KC_CACHE_READONLY;
    /* The remotes after the directory: a cache that turned out read-only writes no remote either. */
    if ((rc = remotes_assemble(c, o, flags)) == KC_OK) {
        unsigned tf = KC_TIER_LOCAL | (c->mode == KC_CACHE_READONLY ? KC_TIER_READONLY : 0);
        rc = kc_tiers_add(c->tiers, kc_local_backend(c->local), tf);
    }
    if (rc != KC_OK) { /* not the tiers' yet: freed here */
        kc_local_free(c->local);
        c->local = NULL;
    }
    return rc;
}

void kc_cache_apply_max_size_(kc_cache *c, uint64_t max_size) {
    c->max_size = max_size;
    if (c->local) kc_local_set_max_size(c->local, max_size);
}

const kc_config *kc_cache_config(const kc_cache *c) { return c ? c->cfg : NULL; }
kc_config *kc_cache_config_mut_(kc_cache *c) { return c->cfg; }


/* The HMAC key (kc_options' bytes, or the settings' key or key file), copied into the cache. */
static int take_mac_key(kc_cache *c, const kc_options *o) {
    if (!o->hmac_key) return KC_OK;
    if (o->hmac_key_len < KC_MAC_KEY_MIN)
        return kc_err(KC_EINVAL, "the HMAC key has %zu bytes; at least %d are needed", o->hmac_key_len, KC_MAC_KEY_MIN);
    if (!(c->mac_key = kc_malloc(o->hmac_key_len))) return kc_err(KC_ENOMEM, "out of memory");
    memcpy(c->mac_key, o->hmac_key, o->hmac_key_len);
    c->mac_key_len = o->hmac_key_len;
    return KC_OK;
}

/* Everything kc_cache_open takes from the settings, before the tiers: dir, limit, mode, trust. */
static int open_settings(kc_cache *c, kc_options *o, unsigned *flags) {
    void *file_key = NULL;
    int rc = kc_cache_config_load_(o, &c->cfg);
    if (rc) return rc;
    const kc_settings *s = &c->cfg->v;
    if (strlen(s->dir) >= sizeof c->dir) return kc_err(KC_EINVAL, "cache directory path is too long");
    snprintf(c->dir, sizeof c->dir, "%s", s->dir);
    c->max_size = s->max_size;
    *flags = kc_cache_config_flags_(c->cfg, o->flags);
    if (*flags & KC_OPEN_INSPECT) *flags |= KC_OPEN_READONLY; /* and more: kcache/cache.h */
    c->require_hit = (*flags & KC_OPEN_REQUIRE_HIT) != 0;
    c->strict = (*flags & KC_OPEN_STRICT) != 0;
    c->mode = (*flags & KC_OPEN_DISABLE)    ? KC_CACHE_DISABLED
              : (*flags & KC_OPEN_READONLY) ? KC_CACHE_READONLY
                                            : KC_CACHE_READWRITE;
    kc_cache_config_remote_(c->cfg, o);
    if (!(rc = kc_cache_config_hmac_(c->cfg, o, &file_key))) rc = take_mac_key(c, o);
    wipe_free(file_key, o->hmac_key_len);
    if (rc) return rc;
    if (o->signing_key_file && (rc = kc_signer_load(&c->signer, o->signing_key_file))) return rc;
    if (o->keyring && (rc = kc_keyring_load(&c->keyring, o->keyring))) return rc;
    return KC_OK;
}

/* The toolkit memo folder of the cache opened last: a spec's load reads its memo there (graph/spec_direct.c). */
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_toolkit_dir[4096];

int kc_cache_last_toolkit_dir_(char *out, size_t cap) {
    pthread_mutex_lock(&last_mu);
    int n = snprintf(out, cap, "%s", last_toolkit_dir);
    pthread_mutex_unlock(&last_mu);
    return n > 0 && (size_t)n < cap ? KC_OK : KC_MISS;
}

static void note_last(const kc_cache *c) {
    char d[sizeof last_toolkit_dir];
    kc_err_saved keep;
    kc_err_save(&keep);
    if (kc_cache_toolkit_dir_(c, false, d, sizeof d) != KC_OK) d[0] = '\0';
    kc_err_restore(&keep);
    pthread_mutex_lock(&last_mu);
    memcpy(last_toolkit_dir, d, sizeof d);
    pthread_mutex_unlock(&last_mu);
}

int kc_cache_open(kc_cache **out, const kc_options *opts) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_open: out is NULL");
    *out = NULL;
    kc_log_init_from_env();
    kc_options o;
    int rc = kc_cache_options_copy_(&o, opts);
    if (rc) return rc;
    kc_cache *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "kc_cache_open: out of memory");
    unsigned flags = o.flags;
    if ((rc = open_settings(c, &o, &flags))) goto fail;
    c->trust = (kc_trust){c->mac_key, c->mac_key_len, c->signer, c->keyring};
    kc_tiers_config tc = {o.remote_queue, c->mac_key, c->mac_key_len, count_in_shards, c, &c->trust};
    if ((rc = kc_tiers_new(&c->tiers, &tc)) != KC_OK) goto fail;
    kc_tiers_set_close_ms(c->tiers, (unsigned)c->cfg->v.remote_close_ms);
    /* Disabled, the directory is not opened — unless to inspect it: KCACHE_DISABLE changes lookups, not
     * what stats, ls and show report about the directory (every lookup still checks the mode). */
    bool open_dir = c->mode != KC_CACHE_DISABLED || (flags & KC_OPEN_INSPECT);
    if (open_dir && (rc = tiers_assemble(c, &o, flags)) != KC_OK) goto fail;
    kc_log(KC_LOG_STORE, "opened %s (limit %llu bytes%s)", c->dir, (unsigned long long)c->max_size,
           c->mode == KC_CACHE_DISABLED   ? ", disabled"
           : c->mode == KC_CACHE_READONLY ? ", read-only"
                                          : "");
    note_last(c);
    *out = c;
    return KC_OK;
fail:
    kc_cache_close(c);
    return rc;
}

void kc_cache_close(kc_cache *c) {
    if (!c) return;
    if (c->attached) c->attached->drop(c->attached);
    kc_tiers_free(c->tiers); /* waits for the remote writes (a bounded time), frees the remote, then the local store */
    wipe_free(c->mac_key, c->mac_key_len);
    kc_signer_free(c->signer);
    kc_keyring_free(c->keyring);
    kc_config_free_(c->cfg);
    free(c);
}

const char *kc_cache_dir(const kc_cache *c) { return c->dir; }
kc_cache_attachment **kc_cache_attached_(kc_cache *c) { return &c->attached; }
kc_local *kc_cache_local_(kc_cache *c) { return c->local; }
kc_tiers *kc_cache_tiers_(kc_cache *c) { return c->tiers; }
uint64_t kc_cache_max_size(const kc_cache *c) { return c->max_size; }
kc_mode kc_cache_mode(const kc_cache *c) { return c->mode; }
const kc_trust *kc_cache_trust_(kc_cache *c) { return &c->trust; }

void kc_cache_set_origin_manifest_(kc_cache *c, const char *path) {
    if (c) snprintf(c->origin_manifest, sizeof c->origin_manifest, "%s", path ? path : "");
}

const char *kc_cache_origin_manifest_(const kc_cache *c) { return c ? c->origin_manifest : ""; }

const uint8_t *kc_cache_mac_key_(kc_cache *c, size_t *len) {
    *len = c->mac_key_len;
    return c->mac_key;
}

int kc_cache_profile_dir(const kc_cache *c, char *out, size_t cap) {
    if (!c || !out || cap == 0) return kc_err(KC_EINVAL, "kc_cache_profile_dir: NULL argument");
    if (!c->local) return kc_err(KC_EREADONLY, "the cache is disabled (KCACHE_DISABLE)");
    return kc_local_profile_dir(c->local, out, cap);
}

int kc_cache_toolkit_dir_(const kc_cache *c, bool write, char *out, size_t cap) {
    if (!c || !c->local) return KC_MISS;
    if (write && c->mode != KC_CACHE_READWRITE) return KC_EREADONLY;
    return kc_local_toolkit_dir(c->local, write, out, cap);
}

static int check_kv(const kc_cache *c, const kc_key *key, const char *variant) {
    if (!c || !key) return kc_err(KC_EINVAL, "NULL cache or key");
    return kc_variant_check(variant);
}

/* ---- get and put, through the tiers ---- */

int kc_cache_require_hit_(const kc_cache *c) { return c && c->require_hit; }
int kc_cache_strict_(const kc_cache *c) { return c && c->strict; }

int kc_cache_get_local_(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    *out = NULL;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    return kc_tiers_get_local(c->tiers, key, variant, out);
}

int kc_cache_get_local_some_(kc_cache *c, const kc_key *key, const char *variant, unsigned sections, kc_entry **out) {
    *out = NULL;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    return kc_tiers_get_local_some(c->tiers, key, variant, sections, out);
}

int kc_cache_check_local_(kc_cache *c, const kc_key *key, const char *variant, int section, uint64_t *raw_len) {
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    return kc_tiers_check_local(c->tiers, key, variant, section, raw_len);
}

int kc_cache_remote_fetch_(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                           kc_entry **out, void **raw, size_t *raw_len) {
    *out = NULL;
    if (raw) *raw = NULL;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    return kc_tiers_get_remote(c->tiers, key, variants, n, which, out, raw, raw_len);
}

size_t kc_cache_remote_objects_(kc_cache *c, const kc_key *keys, const char *variant, size_t n, kc_entry **outs,
                                void **raws, size_t *raw_lens) {
    if (c->mode == KC_CACHE_DISABLED) {
        for (size_t i = 0; i < n; i++) outs[i] = NULL, raws[i] = NULL, raw_lens[i] = 0;
        return 0;
    }
    return kc_tiers_get_remote_many(c->tiers, keys, variant, n, outs, raws, raw_lens);
}

int kc_cache_keep_local_(kc_cache *c, const kc_key *key, const char *variant, const void *data, size_t len) {
    if (c->mode != KC_CACHE_READWRITE) return KC_EREADONLY;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_tiers_put_local(c->tiers, name, data, len);
}

int kc_cache_get(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_get: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    uint64_t t0 = kc_mono_ns(); /* each lookup is one latency observation, with its outcome */
    rc = kc_cache_get_local_(c, key, variant, out);
    if (rc == KC_OK) {
        kc_cache_count_lookup_(c, key, KC_LOOKUP_DISK, t0);
        return KC_OK;
    }
    char why[256];
    snprintf(why, sizeof why, "%s", kc_error_last()->message);
    void *raw = NULL;
    size_t raw_len = 0;
    if (kc_tiers_get_remote(c->tiers, key, &variant, 1, NULL, out, &raw, &raw_len) == KC_OK) {
        (void)kc_cache_keep_local_(c, key, variant, raw, raw_len); /* written back, then counted with its time */
        free(raw);
        kc_cache_count_lookup_(c, key, KC_LOOKUP_REMOTE, t0);
        return KC_OK;
    }
    kc_cache_count_lookup_(c, key, KC_LOOKUP_COMPILE, t0);
    return kc_err(KC_MISS, "%s", why);
}

int kc_cache_peek(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_peek: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (!c->local) return KC_MISS; /* disabled (opened to inspect, a disabled cache's directory is read) */
    char name[KC_NAME_MAX + 1], path[PATH_MAX];
    kc_store_name(key, variant, name);
    kc_local_path(c->local, name, path, sizeof path);
    void *data;
    size_t len;
    rc = kc_fs_read_file(path, KC_ENTRY_MAX_BYTES, &data, &len, NULL);
    if (rc) return rc;
    rc = kc_entry_decode_as(out, data, len, key, variant);
    free(data);
    return rc;
}

int kc_cache_put(kc_cache *c, const kc_entry *e) {
    if (!c || !e) return kc_err(KC_EINVAL, "kc_cache_put: NULL argument");
    if (c->mode == KC_CACHE_DISABLED) return kc_err(KC_EREADONLY, "the cache is disabled (KCACHE_DISABLE)");
    char name[KC_NAME_MAX + 1];
    kc_store_name(kc_entry_key(e), kc_entry_variant(e), name);
    if (c->mode == KC_CACHE_READONLY) {
        kc_local_count(c->local, kc_entry_key(e)->bytes[0], KC_STAT_READONLY_SKIPS, 1);
        return kc_err(KC_EREADONLY, "the cache '%s' is read-only", c->dir);
    }
    void *data;
    size_t len;
    int rc = kc_entry_encode(e, &data, &len);
    if (!rc) rc = kc_trust_vouch(&c->trust, &data, &len); /* signed (a signer) or sealed (a MAC key) */
    if (rc) {
        free(data);
        return rc;
    }
    return kc_tiers_put(c->tiers, name, kc_entry_key(e)->bytes[0], data, len); /* takes data */
}

int kc_cache_exists(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == KC_CACHE_DISABLED) return 0;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_tiers_exists(c->tiers, name);
}

int kc_cache_remove(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_tiers_remove(c->tiers, name);
}

/* ---- the remote tier ([Note: tiers] in store/tiers.h) ---- */

int kc_cache_remote_flush(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_remote_flush: NULL cache");
    kc_tiers_flush(c->tiers);
    return KC_OK;
}

int kc_cache_remote_state(kc_cache *c, kc_remote_state *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_remote_state: NULL argument");
    return kc_tiers_remote_state(c->tiers, out);
}

size_t kc_cache_tier_count(kc_cache *c) { return c ? kc_tiers_count(c->tiers) : 0; }

int kc_cache_tier_stats(kc_cache *c, size_t i, kc_tier_stats *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_tier_stats: NULL argument");
    int rc = kc_api_version("kc_cache_tier_stats", "kc_tier_stats", "KC_TIER_STATS_INIT", out->version,
                            KC_TIER_STATS_VERSION);
    if (rc) return rc;
    kc_tier_stats full = KC_TIER_STATS_INIT; /* [Note: versioned structs] */
    if ((rc = kc_tiers_tier_stats(c->tiers, i, &full)) != KC_OK) return rc;
    kc_api_copy_out(out, &full, sizeof full, out->version);
    return KC_OK;
}

int kc_cache_tier_state(kc_cache *c, size_t i, kc_remote_state *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_tier_state: NULL argument");
    kc_tier_stats s = KC_TIER_STATS_INIT;
    int rc = kc_tiers_tier_stats(c->tiers, i, &s);
    if (rc) return rc;
    if (!s.remote) return kc_err(KC_MISS, "tier %zu is the local directory, no remote", i);
    memset(out, 0, sizeof *out);
    snprintf(out->url, sizeof out->url, "%s", s.url);
    out->breaker = s.breaker, out->retry_in_ms = s.retry_in_ms, out->failures = s.failures;
    return KC_OK;
}

int kc_cache_publish(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_tiers_publish(c->tiers, name, key->bytes[0]);
}

/* ---- the remote a site's profile travels to ([Note: profiles in the remote] in src/guard/profile_remote.c) ---- */

kc_store_backend *kc_cache_profile_remote_(kc_cache *c, int writable) {
    int ok = c && c->remote && c->mode != KC_CACHE_DISABLED &&
             (!writable || (c->remote_writable && c->mode == KC_CACHE_READWRITE));
    return ok ? c->remote : NULL;
}

int kc_cache_remote_ping(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_remote_ping: NULL cache");
    return kc_tiers_ping(c->tiers);
}

/* ---- the local directory's own: locks, counters, walks, maintenance ---- */

struct kc_lock {
    int fd;
    char path[PATH_MAX];
};

int kc_cache_trylock(kc_cache *c, const kc_key *key, const char *variant, kc_lock **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_trylock: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode != KC_CACHE_READWRITE) return KC_OK;
    kc_lock *lk = kc_calloc(1, sizeof *lk);
    if (!lk) return kc_err(KC_ENOMEM, "out of memory");
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    rc = kc_local_trylock(c->local, name, &lk->fd, lk->path, sizeof lk->path);
    if (rc) {
        free(lk);
        return rc;
    }
    *out = lk;
    return KC_OK;
}

void kc_cache_unlock(kc_lock *lk) {
    if (!lk) return;
    kc_local_unlock(lk->fd, lk->path);
    free(lk);
}

void kc_cache_count(kc_cache *c, const kc_key *key, kc_stat id, uint64_t n) {
    if (!c || !c->local) return;
    count_or_observe(c->local, key ? key->bytes[0] : 0, id, (int64_t)n);
}

int kc_cache_stats(kc_cache *c, kc_stats *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_stats: NULL argument");
    if (!c->local) {
        memset(out, 0, sizeof *out);
        return KC_OK;
    }
    return kc_local_stats(c->local, out);
}

int kc_cache_stats_zero(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_stats_zero: NULL argument");
    return c->local ? kc_local_stats_zero(c->local) : KC_OK;
}

typedef struct foreach_ctx {
    kc_cache_item_cb cb;
    void *ctx;
} foreach_ctx;

static int foreach_item(const kc_store_item *it, void *ctx) {
    foreach_ctx *f = ctx;
    kc_cache_item ci;
    char hex[KC_KEY_HEX_LEN + 1];
    memcpy(hex, it->name, KC_KEY_HEX_LEN);
    hex[KC_KEY_HEX_LEN] = '\0';
    if (kc_key_from_hex(&ci.key, hex) != KC_OK) return 0;
    ci.variant = it->name + KC_KEY_HEX_LEN + 1;
    ci.bytes = it->bytes;
    ci.last_used = it->last_used;
    ci.path = it->path;
    return f->cb(&ci, f->ctx);
}

int kc_cache_foreach(kc_cache *c, kc_cache_item_cb cb, void *ctx) {
    if (!c || !cb) return kc_err(KC_EINVAL, "kc_cache_foreach: NULL argument");
    if (!c->local) return KC_OK;
    foreach_ctx f = {cb, ctx};
    return kc_tiers_iterate(c->tiers, foreach_item, &f);
}

int kc_cache_peek_raw_(kc_cache *c, const char *name, void **out, size_t *len) {
    *out = NULL;
    if (!c->local) return KC_MISS;
    return kc_tiers_peek(c->tiers, name, out, len);
}

int kc_cache_quarantine_(kc_cache *c, const char *name) {
    if (c->mode != KC_CACHE_READWRITE) return KC_EREADONLY;
    return kc_tiers_quarantine(c->tiers, name);
}

int kc_cache_remove_name_(kc_cache *c, const char *name) {
    if (c->mode != KC_CACHE_READWRITE) return KC_EREADONLY;
    return kc_tiers_remove(c->tiers, name);
}

int kc_cache_gc(kc_cache *c, uint64_t max_size, kc_gc_report *out) {
    kc_gc_options o = KC_GC_OPTIONS_INIT;
    o.max_size = max_size;
    return kc_cache_gc_ext(c, &o, out);
}

int kc_cache_gc_ext(kc_cache *c, const kc_gc_options *opts, kc_gc_report *out) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_gc: NULL cache");
    kc_gc_options o = KC_GC_OPTIONS_INIT;
    int rc = opts ? kc_api_version("kc_cache_gc_ext", "kc_gc_options", "KC_GC_OPTIONS_INIT", opts->version,
                                   KC_GC_OPTIONS_VERSION)
                  : KC_OK;
    if (rc == KC_OK && out)
        rc = kc_api_version("kc_cache_gc", "kc_gc_report", "KC_GC_REPORT_INIT", out->version, KC_GC_REPORT_VERSION);
    if (rc) return rc;
    if (opts) o = *opts; /* one version so far: every field is there */
    kc_gc_report full =
        KC_GC_REPORT_INIT; /* [Note: versioned structs]: filled here, copied out as far as out's version */
    if (c->local) rc = kc_local_gc_aged(c->local, o.max_size, o.older_than_s, &full);
    if (out) kc_api_copy_out(out, &full, sizeof full, out->version);
    return rc;
}

int kc_cache_clear(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_clear: NULL cache");
    return c->local ? kc_local_clear(c->local) : KC_OK;
}
