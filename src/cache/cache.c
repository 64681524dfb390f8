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
 * backend except through the tiers (opening the backends, in tiers_assemble, aside, and a
 * site's profile, which is no entry of the directory: kc_cache_remote_profile_*).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "kcache/sys/store.h" /* kc_store_redis_open: the tiers are assembled here */
#include "../store/local.h"
#include "../store/tiers.h"
#include "internal.h"
#include "../common/fs.h"
#include "../config/config.h"

struct kc_cache {
    kc_config *cfg;  /* every setting, read once at open (config/; cache/settings.c hands it kc_options) */
    kc_local *local; /* NULL when disabled; owned by the tiers (their local tier) */
    kc_tiers *tiers; /* local first, then the remote ([Note: tiers] in store/tiers.h) */
    kc_store_backend *remote; /* the remote, borrowed from the tiers: for profiles only */
    int remote_writable;
    char dir[PATH_MAX];
    uint64_t max_size;
    kc_mode mode;
    int require_hit; /* KC_OPEN_REQUIRE_HIT: a lookup must not run NVRTC */
    int strict;      /* KC_OPEN_STRICT: anomalies are errors */
    uint8_t *mac_key;
    size_t mac_key_len;
    kc_signer *signer;   /* KCACHE_SIGNING_KEY_FILE: this cache's compiles are signed */
    kc_keyring *keyring; /* KCACHE_KEYRING: what the remote and bundles must be signed by */
    kc_trust trust;      /* the three together (src/entry/trust.h), lent to the tiers */
    char origin_manifest[512]; /* the manifest a prewarm compiles (ORIGIN "manifest" of what it writes) */
};

int kc_options_init(kc_options *opts, unsigned version) {
    if (!opts) return kc_err(KC_EINVAL, "kc_options_init: opts is NULL");
    if (version != KC_OPTIONS_VERSION && version != 1 && version != 2)
        return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)",
                      version, KC_OPTIONS_VERSION);
    kc_options o = KC_OPTIONS_INIT;
    if (version == 1) memcpy(opts, &o, offsetof(kc_options, remote));
    else if (version == 2) memcpy(opts, &o, offsetof(kc_options, signing_key_file));
    else *opts = o;
    opts->version = version;
    return KC_OK;
}

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

/* The tiers' counter sink: the local directory's stats shards. */
static void count_in_shards(void *ctx, int shard, kc_stat id, int64_t n) {
    kc_cache *c = ctx;
    kc_local_count(c->local, shard, id, n);
}

/*
 * Assemble the tiers: the remote when one is configured, and the local directory (which
 * kc_tiers_add puts first).  A new backend is one more open and kc_tiers_add here; nothing
 * else names a backend.  What was added is the tiers' to free; what failed is freed here.
 */
static int tiers_assemble(kc_cache *c, const kc_options *o, unsigned flags) {
    int rc;
    if (o->remote && *o->remote) {
        kc_store_backend *remote;
        if ((rc = kc_store_redis_open(&remote, o->remote, &o->remote_config)) != KC_OK) return kc_err_prefix(rc, "remote");
        unsigned tf = (flags & KC_OPEN_REMOTE_READONLY) || c->mode != KC_CACHE_READWRITE ? KC_TIER_READONLY : 0;
        if ((rc = kc_tiers_add(c->tiers, remote, tf)) != KC_OK) {
            remote->free(remote);
            return rc;
        }
        c->remote = remote, c->remote_writable = !(tf & KC_TIER_READONLY);
    }
    if ((rc = kc_local_open(&c->local, c->dir, c->max_size, flags)) != KC_OK) return rc;
    bool found_readonly = false; /* a directory that refuses writes is a read-only cache ([Note: store status codes]) */
    if (kc_local_readonly(c->local, &found_readonly) && found_readonly && c->mode == KC_CACHE_READWRITE)
        c->mode = KC_CACHE_READONLY;
    unsigned tf = KC_TIER_LOCAL | (c->mode == KC_CACHE_READONLY ? KC_TIER_READONLY : 0);
    if ((rc = kc_tiers_add(c->tiers, kc_local_backend(c->local), tf)) != KC_OK) {
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

/* kc_options of any accepted version as this build's (the fields an older version lacks: defaults). */
static int options_copy(kc_options *o, const kc_options *opts) {
    kc_options d = KC_OPTIONS_INIT;
    *o = d;
    if (!opts) return KC_OK;
    if (opts->version == 1) memcpy(o, opts, offsetof(kc_options, remote)); /* the fields version 1 had */
    else if (opts->version == KC_OPTIONS_VERSION) *o = *opts;
    else return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)", opts->version,
                       KC_OPTIONS_VERSION);
    o->version = KC_OPTIONS_VERSION;
    /* An empty path is never "the default directory": a caller that means the default leaves
     * dir NULL (`kcache --cache-dir "" clear` once emptied ~/.cache/kcache). */
    if (o->dir && !*o->dir)
        return kc_err(KC_EINVAL, "the cache directory is an empty path: name a directory, or leave it unset for the default");
    return KC_OK;
}

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
    c->require_hit = (*flags & KC_OPEN_REQUIRE_HIT) != 0;
    c->strict = (*flags & KC_OPEN_STRICT) != 0;
    c->mode = (*flags & KC_OPEN_DISABLE) ? KC_CACHE_DISABLED : (*flags & KC_OPEN_READONLY) ? KC_CACHE_READONLY
                                                                                           : KC_CACHE_READWRITE;
    kc_cache_config_remote_(c->cfg, o);
    if (!(rc = kc_cache_config_hmac_(c->cfg, o, &file_key))) rc = take_mac_key(c, o);
    wipe_free(file_key, o->hmac_key_len);
    if (rc) return rc;
    if (o->signing_key_file && (rc = kc_signer_load(&c->signer, o->signing_key_file))) return rc;
    if (o->keyring && (rc = kc_keyring_load(&c->keyring, o->keyring))) return rc;
    return KC_OK;
}

int kc_cache_open(kc_cache **out, const kc_options *opts) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_open: out is NULL");
    *out = NULL;
    kc_log_init_from_env();
    kc_options o;
    int rc = options_copy(&o, opts);
    if (rc) return rc;
    kc_cache *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "kc_cache_open: out of memory");
    unsigned flags = o.flags;
    if ((rc = open_settings(c, &o, &flags))) goto fail;
    c->trust = (kc_trust){c->mac_key, c->mac_key_len, c->signer, c->keyring};
    kc_tiers_config tc = {o.remote_queue, c->mac_key, c->mac_key_len, count_in_shards, c, &c->trust};
    if ((rc = kc_tiers_new(&c->tiers, &tc)) != KC_OK) goto fail;
    kc_tiers_set_close_ms(c->tiers, (unsigned)c->cfg->v.remote_close_ms);
    if (c->mode != KC_CACHE_DISABLED && (rc = tiers_assemble(c, &o, flags)) != KC_OK) goto fail;
    kc_log(KC_LOG_STORE, "opened %s (limit %llu bytes%s)", c->dir, (unsigned long long)c->max_size,
           c->mode == KC_CACHE_DISABLED ? ", disabled" : c->mode == KC_CACHE_READONLY ? ", read-only" : "");
    *out = c;
    return KC_OK;
fail:
    kc_cache_close(c);
    return rc;
}

void kc_cache_close(kc_cache *c) {
    if (!c) return;
    kc_tiers_free(c->tiers); /* waits for the remote writes (a bounded time), frees the remote, then the local store */
    wipe_free(c->mac_key, c->mac_key_len);
    kc_signer_free(c->signer);
    kc_keyring_free(c->keyring);
    kc_config_free_(c->cfg);
    free(c);
}

const char *kc_cache_dir(const kc_cache *c) { return c->dir; }
kc_local *kc_cache_local_(kc_cache *c) { return c->local; }
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

int kc_cache_toolkit_dir_(const kc_cache *c, char *out, size_t cap) {
    if (!c || !c->local) return KC_MISS;
    return kc_local_toolkit_dir(c->local, out, cap);
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
    rc = kc_cache_get_local_(c, key, variant, out);
    if (rc == KC_OK) {
        kc_local_count(c->local, key->bytes[0], KC_STAT_HITS, 1);
        return KC_OK;
    }
    char why[256];
    snprintf(why, sizeof why, "%s", kc_error_last()->message);
    if (kc_tiers_get_remote(c->tiers, key, &variant, 1, NULL, out, NULL, NULL) == KC_OK) return KC_OK;
    kc_local_count(c->local, key->bytes[0], KC_STAT_MISSES, 1);
    return kc_err(KC_MISS, "%s", why);
}

int kc_cache_peek(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_peek: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == KC_CACHE_DISABLED) return KC_MISS;
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

int kc_cache_publish(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_tiers_publish(c->tiers, name, key->bytes[0]);
}

/* ---- site profiles: their format, their files, their locked merge ---- */

/*
 * [Note: profile format] A profile is the text
 *
 *   kcache-profile 1\n  site <name>\n  { input <i> <mask>\n }
 *
 * (i decimal, in increasing order; mask lowercase hex, non-zero, below 1 << KC_MAX_RANK), filed
 * as "<profile dir>/<XXH3-64 of the name, 16 hex>.profile".  The one written form is also the
 * only one accepted from outside (a bundle, a remote): the bytes must equal what profile_format
 * makes of what they say, so there is one spelling of each profile and nothing else gets in.
 * A local file is read leniently (profile_read), as it always was.
 */

/* The canonical bytes of a profile into buf (KC_CACHE_PROFILE_MAX + 1); their length. */
size_t kc_cache_profile_format_(const char *name, const uint32_t *masks, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "kcache-profile 1\nsite %s\n", name);
    for (int i = 0; i < KC_CACHE_PROFILE_INPUTS && n > 0 && (size_t)n < cap; i++)
        if (masks[i]) n += snprintf(buf + n, cap - (size_t)n, "input %d %x\n", i, masks[i]);
    return n > 0 && (size_t)n < cap ? (size_t)n : cap;
}

/* Parse untrusted profile bytes strictly ([Note: profile format]): the site's name into site
 * (KC_CACHE_PROFILE_NAME_MAX + 1), its masks ORed into masks (may be NULL).  KC_ECORRUPT with the reason. */
int kc_cache_profile_parse_(const void *data, size_t len, char *site, uint32_t *masks) {
    static const char head[] = "kcache-profile 1\nsite ";
    char buf[KC_CACHE_PROFILE_MAX + 1], canon[KC_CACHE_PROFILE_MAX + 1];
    if (!data || len > KC_CACHE_PROFILE_MAX)
        return kc_err(KC_ECORRUPT, "profile: %zu bytes, over the %d-byte cap", len, KC_CACHE_PROFILE_MAX);
    if (memchr(data, 0, len)) return kc_err(KC_ECORRUPT, "profile: a NUL byte");
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (strncmp(buf, head, sizeof head - 1) != 0) return kc_err(KC_ECORRUPT, "profile: not a kcache profile (version 1)");
    char *p = buf + sizeof head - 1, *nl = strchr(p, '\n');
    if (!nl || nl == p || nl - p > KC_CACHE_PROFILE_NAME_MAX) return kc_err(KC_ECORRUPT, "profile: its site name (1..%d bytes)", KC_CACHE_PROFILE_NAME_MAX);
    memcpy(site, p, (size_t)(nl - p));
    site[nl - p] = '\0';
    uint32_t m[KC_CACHE_PROFILE_INPUTS] = {0};
    for (p = nl + 1; *p; p = nl + 1) {
        unsigned i, mask;
        char extra;
        if (!(nl = strchr(p, '\n'))) return kc_err(KC_ECORRUPT, "profile: its last line does not end");
        *nl = '\0';
        if (sscanf(p, "input %u %x%c", &i, &mask, &extra) != 2 || i >= KC_CACHE_PROFILE_INPUTS || !mask || mask >> KC_MAX_RANK)
            return kc_err(KC_ECORRUPT, "profile: line '%.40s' is not 'input <0..%d> <mask of %d bits>'", p,
                          KC_CACHE_PROFILE_INPUTS - 1, KC_MAX_RANK);
        m[i] |= mask;
    }
    size_t n = kc_cache_profile_format_(site, m, canon, sizeof canon);
    if (n != len || memcmp(canon, data, len) != 0)
        return kc_err(KC_ECORRUPT, "profile: not in its one written form (order, spelling, an input twice)");
    for (int i = 0; masks && i < KC_CACHE_PROFILE_INPUTS; i++) masks[i] |= m[i];
    return KC_OK;
}

/* OR the masks a profile's text says into masks[], read leniently (as a local file always was):
 * every "input <i> <mask>" line after a "kcache-profile 1" line. */
static void profile_masks_of(const char *p, size_t len, uint32_t *masks) {
    int ok = 0;
    for (const char *end = p + len, *nl; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        char line[128];
        size_t n = (size_t)(nl - p);
        if (n == 0 || n >= sizeof line) continue;
        memcpy(line, p, n);
        line[n] = '\0';
        unsigned i, mask;
        if (strcmp(line, "kcache-profile 1") == 0) ok = 1;
        else if (ok && sscanf(line, "input %u %x", &i, &mask) == 2 && i < KC_CACHE_PROFILE_INPUTS) masks[i] |= mask;
    }
}

/* OR the masks of the profile file at `path` into masks[]; 0 when read (or absent: nothing). */
void kc_cache_profile_read_(const char *path, uint32_t *masks) {
    void *data;
    size_t len;
    if (kc_fs_read_file(path, 65536, &data, &len, NULL) != KC_OK) {
        kc_error_clear(); /* absent or unreadable: nothing learned */
        return;
    }
    profile_masks_of(data, len, masks);
    free(data);
}

/* Where the profile of site `name` lives in a profile directory; 0 when the path does not fit. */
int kc_cache_profile_path_of_(const char *pdir, const char *name, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%016llx.profile", pdir, (unsigned long long)XXH3_64bits(name, strlen(name)));
    return n > 0 && (size_t)n < cap;
}

/*
 * Merge on write: under an flock of "<path>.lock", read what other processes wrote, join it to
 * masks[] (which gets the union) and, when that changes the file (or there is none), replace it
 * atomically — so no process's dimension is lost to another's write (a plain write is
 * last-writer-wins).  The site's save, a bundle's import and a remote's profile all come here.
 * *changed (may be NULL): 1 when the file was (dry_run: would be) written.
 */
int kc_cache_profile_merge_file_(const char *path, const char *name, uint32_t *masks, int flags, int *changed,
                                 kc_local *counted) {
    int dry_run = flags & KC_PROFILE_DRY;
    char dir[PATH_MAX], lock[PATH_MAX + 8];
    if (changed) *changed = 0;
    snprintf(dir, sizeof dir, "%s", path);
    char *base = strrchr(dir, '/');
    *base++ = '\0';
    int rc = KC_OK, fd = -1;
    if (!dry_run) {
        /* One of 256 stripe locks, by the file's first two hex digits ([Note: profiles in the size]
         * in src/store/local_profiles.c): no lock file per profile.  The folder is made when missing. */
        snprintf(lock, sizeof lock, "%s/.lock.%.2s", dir, base);
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == ENOENT) {
            if ((rc = kc_fs_mkdirs(dir, 0700)) != KC_OK) return rc;
            fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        }
        if (fd < 0) return kc_err_errno(errno, "profile: opening '%s'", lock);
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) {
                rc = kc_err_errno(errno, "profile: locking '%s'", lock);
                close(fd);
                return rc;
            }
    }
    void *old = NULL;
    size_t olen = 0;
    if (kc_fs_read_file(path, 65536, &old, &olen, NULL) != KC_OK) old = NULL, olen = 0, kc_error_clear();
    if (old) profile_masks_of(old, olen, masks);
    char buf[KC_CACHE_PROFILE_MAX + 1];
    size_t n = kc_cache_profile_format_(name, masks, buf, sizeof buf);
    int differs = !old || olen != n || memcmp(old, buf, n) != 0;
    free(old);
    if (differs && !dry_run)
        rc = flags & KC_PROFILE_LAZY ? kc_fs_write_replace(path, buf, n) : kc_fs_write_atomic(path, buf, n);
    if (changed) *changed = differs && !rc;
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    if (differs && !dry_run && !rc) kc_local_profile_written_(counted, path, (int64_t)n - (int64_t)olen);
    return rc;
}

int kc_cache_profile_merge_at_(kc_cache *cache, const char *pdir, const void *data, size_t len, int flags, int *changed) {
    if (changed) *changed = 0;
    if (!cache) return kc_err(KC_EINVAL, "kc_site_profile_merge: cache is NULL");
    char site[KC_CACHE_PROFILE_NAME_MAX + 1], path[PATH_MAX];
    uint32_t m[KC_CACHE_PROFILE_INPUTS] = {0};
    int rc = kc_cache_profile_parse_(data, len, site, m);
    if (rc) return rc;
    if (!(flags & KC_PROFILE_DRY) && kc_cache_mode(cache) != KC_CACHE_READWRITE)
        return kc_err(KC_EREADONLY, "the cache is read-only or disabled: profile of %s not merged", site);
    if (!kc_cache_profile_path_of_(pdir, site, path, sizeof path)) return kc_err(KC_EINVAL, "profile: the path is too long");
    return kc_cache_profile_merge_file_(path, site, m, flags, changed, cache->local);
}

int kc_cache_profile_merge_(kc_cache *cache, const void *data, size_t len, int flags, int *changed) {
    char pdir[PATH_MAX];
    if (changed) *changed = 0;
    if (!cache) return kc_err(KC_EINVAL, "kc_site_profile_merge: cache is NULL");
    int rc = kc_cache_profile_dir(cache, pdir, sizeof pdir);
    return rc ? rc : kc_cache_profile_merge_at_(cache, pdir, data, len, flags, changed);
}

static int profile_by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int kc_cache_profile_foreach_(kc_cache *cache, int (*cb)(const void *data, size_t len, void *ctx), void *ctx) {
    if (!cache || !cb) return kc_err(KC_EINVAL, "kc_site_profile_foreach: NULL argument");
    char pdir[PATH_MAX];
    if (kc_cache_mode(cache) == KC_CACHE_DISABLED || kc_cache_profile_dir(cache, pdir, sizeof pdir) != KC_OK) {
        kc_error_clear();
        return KC_OK; /* no directory: no profiles */
    }
    DIR *d = opendir(pdir);
    if (!d) return errno == ENOENT ? KC_OK : kc_err_errno(errno, "profile: reading '%s'", pdir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = KC_OK;
    for (struct dirent *de; (de = readdir(d)) != NULL && !rc;) {
        const char *nm = de->d_name;
        if (strlen(nm) != 24 || strcmp(nm + 16, ".profile") != 0 || strspn(nm, "0123456789abcdef") != 16) continue;
        if (n == cap) {
            char **p = kc_realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *p);
            if (!p) { rc = kc_err(KC_ENOMEM, "out of memory"); break; }
            names = p;
        }
        if (!(names[n] = kc_malloc(25))) rc = kc_err(KC_ENOMEM, "out of memory");
        else memcpy(names[n++], nm, 25);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, profile_by_name);
    for (size_t i = 0; i < n && !rc; i++) {
        char path[PATH_MAX], want[PATH_MAX], site[KC_CACHE_PROFILE_NAME_MAX + 1];
        void *data;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", pdir, names[i]);
        if (kc_fs_read_file(path, KC_CACHE_PROFILE_MAX, &data, &len, NULL) != KC_OK) {
            kc_log(KC_LOG_STORE, "profile %s left out: %s", path, kc_error_last()->message);
            kc_error_clear();
            continue;
        }
        if (kc_cache_profile_parse_(data, len, site, NULL) != KC_OK || !kc_cache_profile_path_of_(pdir, site, want, sizeof want) ||
            strcmp(want, path) != 0) {
            kc_log(KC_LOG_STORE, "profile %s left out: not a sound profile filed under its site's name", path);
            kc_error_clear();
        } else {
            rc = cb(data, len, ctx);
        }
        free(data);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* ---- a site's profile in the remote ([Note: profiles in the remote] in src/guard/site.c) ---- */

#define PROFILE_VARIANT "profile"
#define PROFILE_ENTRY_MAX 16384 /* an entry holding at most a profile's cap, with room for its header and META */

/* The key of site `site`'s profile: a hash of a domain no other key is made of. */
static void profile_key(const char *site, kc_key *out) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "kcache site profile%c%s", 0, site);
    XXH128_hash_t h = XXH3_128bits(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    XXH128_canonical_t cn;
    XXH128_canonicalFromHash(&cn, h);
    memcpy(out->bytes, cn.digest, 16);
}

/* A profile call to the remote failed with `rc`: counted as the tiers count theirs, logged. */
static void profile_failure(kc_cache *c, const kc_key *key, int rc, int writing) {
    kc_stat id = rc == KC_ETIMEOUT ? KC_STAT_REMOTE_TIMEOUTS
               : rc == KC_EUNAVAILABLE ? (writing ? KC_STAT_REMOTE_DROPPED : KC_STAT_REMOTE_SKIPPED)
               : KC_STAT_REMOTE_ERRORS;
    if (rc != KC_EUNAVAILABLE) kc_log(KC_LOG_REMOTE, "profile: %s", kc_error_last()->message);
    kc_cache_count(c, key, id, 1);
}

int kc_cache_remote_profile_ok_(kc_cache *c, int writable) {
    return c && c->remote && c->mode != KC_CACHE_DISABLED && (!writable || (c->remote_writable && c->mode == KC_CACHE_READWRITE));
}

int kc_cache_remote_profile_get_(kc_cache *c, const char *site, size_t cap, void **out, size_t *len) {
    *out = NULL, *len = 0;
    if (!kc_cache_remote_profile_ok_(c, 0) || !site) return KC_MISS;
    kc_key key;
    profile_key(site, &key);
    char name[KC_NAME_MAX + 1];
    kc_store_name(&key, PROFILE_VARIANT, name);
    void *data = NULL;
    size_t dlen = 0;
    int rc = c->remote->get(c->remote, name, &data, &dlen);
    if (rc == KC_MISS) return KC_MISS;
    if (rc) {
        profile_failure(c, &key, rc, 0);
        return kc_err(KC_MISS, "profile of %s: the remote failed", site);
    }
    kc_entry *e = NULL;
    const void *p;
    size_t plen = 0;
    if (dlen > PROFILE_ENTRY_MAX) rc = kc_err(KC_ECORRUPT, "%zu bytes, over the %d-byte cap", dlen, PROFILE_ENTRY_MAX);
    else if ((rc = kc_trust_check(&c->trust, data, dlen)) != KC_OK)
        kc_cache_count(c, &key, KC_STAT_MAC_REJECTED, 1);
    else if ((rc = kc_entry_decode_as(&e, data, dlen, &key, PROFILE_VARIANT)) == KC_OK &&
             (rc = kc_entry_section(e, KC_SECTION_RUNTIME_META, &p, &plen)) == KC_OK && plen > cap)
        rc = kc_err(KC_ECORRUPT, "%zu bytes, over the %zu-byte cap", plen, cap);
    if (rc == KC_OK && !(*out = kc_malloc(plen ? plen : 1))) rc = kc_err(KC_ENOMEM, "out of memory");
    if (rc == KC_OK) memcpy(*out, p, plen), *len = plen;
    else if (rc != KC_EUNTRUSTED) kc_cache_count(c, &key, KC_STAT_CORRUPT, 1);
    if (rc) kc_log(KC_LOG_REMOTE, "remote profile %s (%s) rejected: %s", name, site, kc_error_last()->message);
    kc_entry_free(e);
    free(data);
    return rc ? kc_err(KC_MISS, "profile of %s: the remote's is refused", site) : KC_OK;
}

int kc_cache_remote_profile_put_(kc_cache *c, const char *site, const void *data, size_t len) {
    if (!kc_cache_remote_profile_ok_(c, 1) || !site) return kc_err(KC_EREADONLY, "no writable remote for profiles");
    kc_key key;
    profile_key(site, &key);
    char name[KC_NAME_MAX + 1];
    kc_store_name(&key, PROFILE_VARIANT, name);
    kc_entry *e = NULL;
    void *bytes = NULL;
    size_t blen = 0;
    int rc = kc_entry_new(&e, &key, PROFILE_VARIANT);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, data, len);
    if (!rc) rc = kc_entry_encode(e, &bytes, &blen);
    if (!rc) rc = kc_trust_vouch(&c->trust, &bytes, &blen);
    kc_entry_free(e);
    if (!rc) {
        rc = c->remote->put(c->remote, name, bytes, blen);
        if (rc == KC_OK) kc_cache_count(c, &key, KC_STAT_REMOTE_PUTS, 1);
        else profile_failure(c, &key, rc, 1);
    }
    free(bytes);
    return rc;
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
    kc_local_count(c->local, key ? key->bytes[0] : 0, id, (int64_t)n);
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
    if (!c) return kc_err(KC_EINVAL, "kc_cache_gc: NULL cache");
    int rc = out ? kc_api_version("kc_cache_gc", "kc_gc_report", "KC_GC_REPORT_INIT", out->version, KC_GC_REPORT_VERSION)
                 : KC_OK;
    if (rc) return rc;
    kc_gc_report full = KC_GC_REPORT_INIT; /* [Note: versioned structs]: filled here, copied out as far as out's version */
    if (c->local) rc = kc_local_gc(c->local, max_size, &full);
    if (out) kc_api_copy_out(out, &full, sizeof full, out->version);
    return rc;
}

int kc_cache_clear(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_clear: NULL cache");
    return c->local ? kc_local_clear(c->local) : KC_OK;
}
