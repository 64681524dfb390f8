/*
 * kcache.c — the front door: kc_cache_open and the entry-level get/put that every other
 * part of the library builds on.
 *
 * The one idea: a caller sees hits and misses, never cache trouble.  An entry read from
 * the store is decoded and fully validated here, and it must be the entry it was asked
 * for (key and variant in its header); anything else is quarantined, counted and reported
 * as KC_MISS.  Configuration is resolved once, at open: options, then KCACHE_* overrides.
 *
 * Must not: do anything on a hit beyond read + validate + count (the hot path).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "common/internal.h"
#include "kcache/cache.h"
#include "store/local.h"
#include "cache_internal.h"
#include "common/fs.h"

struct kc_cache {
    kc_local *local; /* NULL when disabled */
    char dir[PATH_MAX];
    uint64_t max_size;
    int mode;        /* 0 read-write, 1 read-only, 2 disabled */
};

int kc_options_init(kc_options *opts, unsigned version) {
    if (!opts) return kc_err(KC_EINVAL, "kc_options_init: opts is NULL");
    if (version != KC_OPTIONS_VERSION)
        return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)",
                      version, KC_OPTIONS_VERSION);
    kc_options o = KC_OPTIONS_INIT;
    *opts = o;
    return KC_OK;
}

int kc_parse_size(const char *s, uint64_t *out) {
    if (!s || !out) return kc_err(KC_EINVAL, "kc_parse_size: NULL argument");
    const char *p = s;
    while (*p == ' ') p++;
    if (*p < '0' || *p > '9') return kc_err(KC_EINVAL, "not a size: '%s' (e.g. 5G, 500M, 64K)", s);
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    if (errno || end == p || v < 0) return kc_err(KC_EINVAL, "not a size: '%s'", s);
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1 && *end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return kc_err(KC_EINVAL, "not a size: '%s' (e.g. 5G, 500M, 64K)", s);
    double bytes = v * mult;
    if (bytes > 9.2e18) return kc_err(KC_EINVAL, "size '%s' is too large", s);
    *out = (uint64_t)bytes;
    return KC_OK;
}

static int env_flag(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    return !(strcmp(v, "0") == 0 || strcasecmp(v, "false") == 0 || strcasecmp(v, "no") == 0 ||
             strcasecmp(v, "off") == 0);
}

static int default_dir(char *out, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') {
        snprintf(out, cap, "%s/kcache", xdg);
        return KC_OK;
    }
    const char *home = getenv("HOME");
    if (home && home[0] == '/') {
        snprintf(out, cap, "%s/.cache/kcache", home);
        return KC_OK;
    }
    return kc_err(KC_EINVAL, "no cache directory: set KCACHE_DIR, XDG_CACHE_HOME or HOME");
}

int kc_cache_open(kc_cache **out, const kc_options *opts) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_open: out is NULL");
    *out = NULL;
    kc_log_init_from_env();
    kc_options o = KC_OPTIONS_INIT;
    if (opts) {
        if (opts->version != KC_OPTIONS_VERSION)
            return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)",
                          opts->version, KC_OPTIONS_VERSION);
        o = *opts;
    }
    kc_cache *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "kc_cache_open: out of memory");
    int rc = KC_OK;
    const char *dir = o.dir;
    uint64_t max = o.max_size ? o.max_size : KC_DEFAULT_MAX_SIZE;
    unsigned flags = o.flags;
    if (!(flags & KC_OPEN_NO_ENV)) {
        const char *e = getenv("KCACHE_DIR");
        if (e && *e) dir = e;
        e = getenv("KCACHE_MAX_SIZE");
        if (e && *e && (rc = kc_parse_size(e, &max)) != KC_OK) {
            kc_err_prefix(rc, "KCACHE_MAX_SIZE");
            goto fail;
        }
        if (env_flag("KCACHE_DISABLE")) flags |= KC_OPEN_DISABLE;
        if (env_flag("KCACHE_READONLY")) flags |= KC_OPEN_READONLY;
    }
    if (dir && *dir) {
        if (strlen(dir) >= sizeof c->dir) {
            rc = kc_err(KC_EINVAL, "cache directory path is too long");
            goto fail;
        }
        snprintf(c->dir, sizeof c->dir, "%s", dir);
    } else if ((rc = default_dir(c->dir, sizeof c->dir)) != KC_OK) {
        goto fail;
    }
    c->max_size = max;
    c->mode = (flags & KC_OPEN_DISABLE) ? 2 : (flags & KC_OPEN_READONLY) ? 1 : 0;
    if (c->mode != 2 && (rc = kc_local_open(&c->local, c->dir, max, flags)) != KC_OK) goto fail;
    kc_log(KC_LOG_STORE, "opened %s (limit %llu bytes%s)", c->dir, (unsigned long long)max,
           c->mode == 2 ? ", disabled" : c->mode == 1 ? ", read-only" : "");
    *out = c;
    return KC_OK;
fail:
    free(c);
    return rc;
}

void kc_cache_close(kc_cache *c) {
    if (!c) return;
    kc_local_free(c->local);
    free(c);
}

const char *kc_cache_dir(const kc_cache *c) { return c->dir; }
kc_local *kc_cache_local_(kc_cache *c) { return c->local; }
uint64_t kc_cache_max_size(const kc_cache *c) { return c->max_size; }
int kc_cache_mode(const kc_cache *c) { return c->mode; }

static int check_kv(const kc_cache *c, const kc_key *key, const char *variant) {
    if (!c || !key) return kc_err(KC_EINVAL, "NULL cache or key");
    return kc_variant_check(variant);
}

int kc_cache_get(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_get: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == 2) return KC_MISS;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    int shard = key->bytes[0];
    void *data;
    size_t len;
    rc = kc_local_get(c->local, name, &data, &len);
    if (rc != KC_OK) {
        if (rc != KC_MISS) {
            /* A cache-side error costs a miss, never a failure. */
            kc_log(KC_LOG_STORE, "get %s: %s", name, kc_error_last()->message);
            kc_local_count(c->local, shard, KC_STAT_STORE_ERRORS, 1);
        }
        kc_local_count(c->local, shard, KC_STAT_MISSES, 1);
        return kc_err(KC_MISS, "no entry %s", name);
    }
    kc_entry *e;
    rc = kc_entry_decode(&e, data, len);
    free(data);
    if (rc == KC_OK && (memcmp(kc_entry_key(e)->bytes, key->bytes, 16) != 0 ||
                        strcmp(kc_entry_variant(e), variant) != 0)) {
        kc_entry_free(e);
        rc = kc_err(KC_ECORRUPT, "corrupt entry: it holds another key or variant than its name");
    }
    if (rc != KC_OK) {
        if (rc == KC_ENOMEM) {
            kc_local_count(c->local, shard, KC_STAT_MISSES, 1);
            return kc_err(KC_MISS, "no memory to decode %s", name);
        }
        kc_log(KC_LOG_STORE, "%s: %s", name, kc_error_last()->message);
        kc_local_quarantine(c->local, name);
        kc_local_count(c->local, shard, KC_STAT_MISSES, 1);
        return kc_err(KC_MISS, "entry %s was corrupt (quarantined)", name);
    }
    kc_local_count(c->local, shard, KC_STAT_HITS, 1);
    *out = e;
    return KC_OK;
}

int kc_cache_peek(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_peek: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == 2) return KC_MISS;
    char name[KC_NAME_MAX + 1], path[PATH_MAX];
    kc_store_name(key, variant, name);
    kc_local_path(c->local, name, path, sizeof path);
    void *data;
    size_t len;
    rc = kc_fs_read_file(path, KC_ENTRY_MAX_BYTES, &data, &len, NULL);
    if (rc) return rc;
    kc_entry *e;
    rc = kc_entry_decode(&e, data, len);
    free(data);
    if (rc) return rc;
    if (memcmp(kc_entry_key(e)->bytes, key->bytes, 16) != 0 || strcmp(kc_entry_variant(e), variant) != 0) {
        kc_entry_free(e);
        return kc_err(KC_ECORRUPT, "corrupt entry: it holds another key or variant than its name");
    }
    *out = e;
    return KC_OK;
}

int kc_cache_put(kc_cache *c, const kc_entry *e) {
    if (!c || !e) return kc_err(KC_EINVAL, "kc_cache_put: NULL argument");
    if (c->mode == 2) return kc_err(KC_EREADONLY, "the cache is disabled (KCACHE_DISABLE)");
    char name[KC_NAME_MAX + 1];
    kc_store_name(kc_entry_key(e), kc_entry_variant(e), name);
    if (c->mode == 1) {
        kc_local_count(c->local, kc_entry_key(e)->bytes[0], KC_STAT_READONLY_SKIPS, 1);
        return kc_err(KC_EREADONLY, "the cache '%s' is read-only", c->dir);
    }
    void *data;
    size_t len;
    int rc = kc_entry_encode(e, &data, &len);
    if (rc) return rc;
    rc = kc_local_put(c->local, name, data, len);
    free(data);
    if (rc) kc_err_prefix(rc, "storing %s", name);
    return rc;
}

int kc_cache_exists(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == 2) return 0;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_local_exists(c->local, name);
}

int kc_cache_remove(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == 2) return KC_MISS;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    return kc_local_remove(c->local, name);
}

struct kc_lock {
    int fd;
    char path[PATH_MAX];
};

int kc_cache_trylock(kc_cache *c, const kc_key *key, const char *variant, kc_lock **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_trylock: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode != 0) return KC_OK;
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
    return kc_local_iterate(c->local, foreach_item, &f);
}

typedef struct verify_ctx {
    kc_cache *c;
    kc_verify_report r;
} verify_ctx;

static int verify_item(const kc_cache_item *it, void *ctx) {
    verify_ctx *v = ctx;
    v->r.checked++;
    kc_entry *e;
    /* Read and validate here (not kc_cache_get) to tell a corrupt entry from a vanished one. */
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    void *data;
    size_t len;
    int rc = kc_local_get(v->c->local, name, &data, &len);
    if (rc == KC_MISS) return 0; /* removed since the listing */
    if (rc == KC_OK) {
        rc = kc_entry_decode(&e, data, len);
        free(data);
        if (rc == KC_OK) {
            if (memcmp(kc_entry_key(e)->bytes, it->key.bytes, 16) != 0 ||
                strcmp(kc_entry_variant(e), it->variant) != 0)
                rc = kc_err(KC_ECORRUPT, "entry holds another key or variant than its name");
            kc_entry_free(e);
        }
    }
    if (rc == KC_OK) {
        v->r.ok++;
    } else if (rc == KC_ECORRUPT) {
        v->r.corrupt++;
        kc_log(KC_LOG_STORE, "verify %s: %s", name, kc_error_last()->message);
        if (v->c->mode == 0 && kc_local_quarantine(v->c->local, name) == KC_OK) v->r.quarantined++;
    }
    return 0;
}

int kc_cache_verify(kc_cache *c, kc_verify_report *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_verify: NULL argument");
    verify_ctx v = {c, {0, 0, 0, 0}};
    int rc = kc_cache_foreach(c, verify_item, &v);
    *out = v.r;
    return rc;
}

int kc_cache_gc(kc_cache *c, uint64_t max_size, kc_gc_report *out) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_gc: NULL cache");
    if (out) memset(out, 0, sizeof *out);
    if (!c->local) return KC_OK;
    return kc_local_gc(c->local, max_size, out);
}

int kc_cache_clear(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_clear: NULL cache");
    return c->local ? kc_local_clear(c->local) : KC_OK;
}
