/*
 * cache/cache.c — the front door: kc_cache_open and the entry-level get/put that every other
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
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "../common/internal.h"
#include "kcache/cache.h"
#include "../store/local.h"
#include "internal.h"
#include "../common/fs.h"

/* One queued remote write. */
typedef struct wjob {
    struct wjob *next;
    char name[KC_NAME_MAX + 1];
    int shard;
    size_t len;
    void *data;
} wjob;

struct kc_cache {
    kc_local *local; /* NULL when disabled */
    char dir[PATH_MAX];
    uint64_t max_size;
    int mode;        /* 0 read-write, 1 read-only, 2 disabled */
    /* the remote tier ([Note: tiers]) */
    kc_store_backend *remote; /* NULL: none */
    int remote_ro;
    uint8_t *mac_key;
    size_t mac_key_len;
    pthread_mutex_t wmu;
    pthread_cond_t wcv, widle;
    wjob *whead, *wtail;
    size_t wlen, wcap;
    int wbusy, wstop, wstarted;
    pthread_t wthread;
};

int kc_options_init(kc_options *opts, unsigned version) {
    if (!opts) return kc_err(KC_EINVAL, "kc_options_init: opts is NULL");
    if (version != KC_OPTIONS_VERSION && version != 1)
        return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)",
                      version, KC_OPTIONS_VERSION);
    kc_options o = KC_OPTIONS_INIT;
    if (version == 1) memcpy(opts, &o, offsetof(kc_options, remote));
    else *opts = o;
    opts->version = version;
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

static int env_uint(const char *name, unsigned *out) {
    const char *v = getenv(name);
    if (!v || !*v) return KC_OK;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || v[0] == '-' || n > 86400000ul) return kc_err(KC_EINVAL, "%s: not a number: '%s'", name, v);
    *out = (unsigned)n;
    return KC_OK;
}

/* Free a buffer that held a key, overwriting it first. */
static void wipe_free(void *p, size_t len) {
    if (!p) return;
    volatile unsigned char *v = p;
    for (size_t i = 0; i < len; i++) v[i] = 0;
    free(p);
}

/* Remote and HMAC settings from the environment; a key read from KCACHE_HMAC_KEY_FILE (its
 * contents, trailing newlines dropped) is returned in *owned for the caller to free. */
static int remote_env(kc_options *o, void **owned) {
    const char *e = getenv("KCACHE_REMOTE");
    if (e && !((o->flags & KC_OPEN_OPTIONS_WIN) && o->remote)) o->remote = *e ? e : NULL; /* KCACHE_REMOTE= (empty) turns a configured remote off */
    int rc;
    if ((rc = env_uint("KCACHE_REMOTE_CONNECT_MS", &o->remote_config.connect_ms)) ||
        (rc = env_uint("KCACHE_REMOTE_DEADLINE_MS", &o->remote_config.deadline_ms)) ||
        (rc = env_uint("KCACHE_REMOTE_BACKOFF_MS", &o->remote_config.backoff_ms)) ||
        (rc = env_uint("KCACHE_REMOTE_TTL", &o->remote_config.ttl_s)) ||
        (rc = env_uint("KCACHE_REMOTE_QUEUE", &o->remote_queue)))
        return rc;
    e = getenv("KCACHE_REMOTE_MAX_VALUE");
    if (e && *e && (rc = kc_parse_size(e, &o->remote_config.max_value))) return kc_err_prefix(rc, "KCACHE_REMOTE_MAX_VALUE");
    e = getenv("KCACHE_HMAC_KEY");
    if (e && *e) o->hmac_key = e, o->hmac_key_len = strlen(e);
    e = getenv("KCACHE_HMAC_KEY_FILE");
    if (e && *e) {
        void *data;
        size_t len;
        if ((rc = kc_fs_read_file(e, 4096, &data, &len, NULL)))
            return kc_err_prefix(rc == KC_MISS ? KC_EINVAL : rc, "KCACHE_HMAC_KEY_FILE '%s'", e);
        while (len && (((char *)data)[len - 1] == '\n' || ((char *)data)[len - 1] == '\r')) len--;
        *owned = data;
        o->hmac_key = data, o->hmac_key_len = len;
    }
    return KC_OK;
}

int kc_cache_open(kc_cache **out, const kc_options *opts) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_open: out is NULL");
    *out = NULL;
    kc_log_init_from_env();
    kc_options o = KC_OPTIONS_INIT;
    if (opts) {
        if (opts->version == 1) memcpy(&o, opts, offsetof(kc_options, remote)); /* the fields version 1 had */
        else if (opts->version == KC_OPTIONS_VERSION) o = *opts;
        else return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)",
                           opts->version, KC_OPTIONS_VERSION);
        o.version = KC_OPTIONS_VERSION;
    }
    kc_cache *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "kc_cache_open: out of memory");
    int rc = KC_OK;
    void *env_key = NULL;
    const char *dir = o.dir;
    uint64_t max = o.max_size ? o.max_size : KC_DEFAULT_MAX_SIZE;
    unsigned flags = o.flags;
    if (!(flags & KC_OPEN_NO_ENV)) {
        int win = (flags & KC_OPEN_OPTIONS_WIN) != 0; /* what the options set beats the environment */
        const char *e = getenv("KCACHE_DIR");
        if (e && *e && !(win && dir && *dir)) dir = e;
        e = getenv("KCACHE_MAX_SIZE");
        if (e && *e && !(win && o.max_size) && (rc = kc_parse_size(e, &max)) != KC_OK) {
            kc_err_prefix(rc, "KCACHE_MAX_SIZE");
            goto fail;
        }
        if (env_flag("KCACHE_DISABLE")) flags |= KC_OPEN_DISABLE;
        if (env_flag("KCACHE_READONLY")) flags |= KC_OPEN_READONLY;
        if (env_flag("KCACHE_ALLOW_UNSAFE_DIR")) flags |= KC_OPEN_ALLOW_UNSAFE_DIR;
        if (env_flag("KCACHE_REMOTE_READONLY")) flags |= KC_OPEN_REMOTE_READONLY;
        if ((rc = remote_env(&o, &env_key))) goto fail;
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
    pthread_mutex_init(&c->wmu, NULL);
    pthread_cond_init(&c->wcv, NULL);
    pthread_cond_init(&c->widle, NULL);
    c->wcap = o.remote_queue ? o.remote_queue : 256;
    c->remote_ro = (flags & KC_OPEN_REMOTE_READONLY) || c->mode != 0;
    if (o.hmac_key) {
        if (o.hmac_key_len < KC_MAC_KEY_MIN) {
            rc = kc_err(KC_EINVAL, "the HMAC key has %zu bytes; at least %d are needed", o.hmac_key_len, KC_MAC_KEY_MIN);
            goto fail;
        }
        if (!(c->mac_key = kc_malloc(o.hmac_key_len))) {
            rc = kc_err(KC_ENOMEM, "out of memory");
            goto fail;
        }
        memcpy(c->mac_key, o.hmac_key, o.hmac_key_len);
        c->mac_key_len = o.hmac_key_len;
    }
    if (c->mode != 2 && o.remote && *o.remote &&
        (rc = kc_store_redis_open(&c->remote, o.remote, &o.remote_config)) != KC_OK) {
        kc_err_prefix(rc, "remote");
        goto fail;
    }
    if (c->mode != 2 && (rc = kc_local_open(&c->local, c->dir, max, flags)) != KC_OK) goto fail;
    kc_log(KC_LOG_STORE, "opened %s (limit %llu bytes%s)", c->dir, (unsigned long long)max,
           c->mode == 2 ? ", disabled" : c->mode == 1 ? ", read-only" : "");
    *out = c;
    wipe_free(env_key, o.hmac_key_len);
    return KC_OK;
fail:
    wipe_free(env_key, o.hmac_key_len);
    if (c->remote) c->remote->free(c->remote);
    free(c->mac_key);
    free(c);
    return rc;
}

void kc_cache_close(kc_cache *c) {
    if (!c) return;
    if (c->wstarted) {
        kc_cache_remote_flush(c);
        pthread_mutex_lock(&c->wmu);
        c->wstop = 1;
        pthread_cond_broadcast(&c->wcv);
        pthread_mutex_unlock(&c->wmu);
        pthread_join(c->wthread, NULL);
    }
    if (c->remote) c->remote->free(c->remote);
    pthread_mutex_destroy(&c->wmu);
    pthread_cond_destroy(&c->wcv);
    pthread_cond_destroy(&c->widle);
    kc_local_free(c->local);
    wipe_free(c->mac_key, c->mac_key_len);
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

/* ---- the remote tier ([Note: tiers]) ---- */

static void remote_count_failure(kc_cache *c, int shard, int rc, int writing) {
    kc_stat id = rc == KC_ETIMEOUT ? KC_STAT_REMOTE_TIMEOUTS
               : rc == KC_EUNAVAILABLE ? (writing ? KC_STAT_REMOTE_DROPPED : KC_STAT_REMOTE_SKIPPED)
               : KC_STAT_REMOTE_ERRORS;
    if (rc != KC_EUNAVAILABLE) kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    kc_local_count(c->local, shard, id, 1);
}

static void *writer_main(void *arg) {
    kc_cache *c = arg;
    pthread_mutex_lock(&c->wmu);
    for (;;) {
        while (!c->whead && !c->wstop) pthread_cond_wait(&c->wcv, &c->wmu);
        if (!c->whead) break; /* stopping, and nothing left */
        wjob *j = c->whead;
        c->whead = j->next;
        if (!c->whead) c->wtail = NULL;
        c->wlen--;
        c->wbusy = 1;
        pthread_mutex_unlock(&c->wmu);
        int rc = c->remote->put(c->remote, j->name, j->data, j->len);
        if (rc == KC_OK) kc_local_count(c->local, j->shard, KC_STAT_REMOTE_PUTS, 1);
        else remote_count_failure(c, j->shard, rc, 1);
        free(j->data);
        free(j);
        pthread_mutex_lock(&c->wmu);
        c->wbusy = 0;
        if (!c->whead) pthread_cond_broadcast(&c->widle);
    }
    pthread_mutex_unlock(&c->wmu);
    return NULL;
}

/* Queue a write of `data` (taken: freed here or by the writer) to the remote. */
static int remote_enqueue(kc_cache *c, const char *name, int shard, void *data, size_t len) {
    wjob *j = kc_malloc(sizeof *j);
    pthread_mutex_lock(&c->wmu);
    int rc = KC_OK;
    if (!j || c->wlen >= c->wcap || c->wstop) {
        rc = kc_err(KC_EBUSY, "remote write queue full (%zu): %s dropped", c->wcap, name);
    } else if (!c->wstarted) {
        if (pthread_create(&c->wthread, NULL, writer_main, c) == 0) c->wstarted = 1;
        else rc = kc_err(KC_ERROR, "cannot start the remote writer: %s", strerror(errno));
    }
    if (rc == KC_OK) {
        j->next = NULL;
        snprintf(j->name, sizeof j->name, "%s", name);
        j->shard = shard;
        j->data = data, j->len = len;
        if (c->wtail) c->wtail->next = j;
        else c->whead = j;
        c->wtail = j;
        c->wlen++;
        pthread_cond_signal(&c->wcv);
    }
    pthread_mutex_unlock(&c->wmu);
    if (rc) {
        free(j);
        free(data);
        kc_local_count(c->local, shard, KC_STAT_REMOTE_DROPPED, 1);
        kc_log(KC_LOG_REMOTE, "%s", kc_error_last()->message);
    }
    return rc;
}

int kc_cache_remote_flush(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_remote_flush: NULL cache");
    pthread_mutex_lock(&c->wmu);
    while (c->wstarted && (c->whead || c->wbusy)) pthread_cond_wait(&c->widle, &c->wmu);
    pthread_mutex_unlock(&c->wmu);
    return KC_OK;
}

int kc_cache_remote_state(kc_cache *c, kc_remote_state *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_remote_state: NULL argument");
    if (!c->remote) return KC_MISS;
    return kc_store_redis_state(c->remote, out);
}

int kc_cache_remote_fetch_(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                           kc_entry **out) {
    *out = NULL;
    if (!c->remote || n == 0) return KC_MISS;
    int shard = key->bytes[0];
    char names[24][KC_NAME_MAX + 1];
    const char *np[24];
    if (n > 24) n = 24;
    for (size_t i = 0; i < n; i++) kc_store_name(key, variants[i], names[i]), np[i] = names[i];
    void *data = NULL;
    size_t len = 0, w = 0;
    int rc = n > 1 && c->remote->get_first ? c->remote->get_first(c->remote, np, n, &w, &data, &len)
                                           : c->remote->get(c->remote, np[0], &data, &len);
    if (rc == KC_MISS) {
        kc_local_count(c->local, shard, KC_STAT_REMOTE_MISSES, 1);
        return KC_MISS;
    }
    if (rc) {
        remote_count_failure(c, shard, rc, 0);
        return KC_MISS;
    }
    /* Authenticate before anything past the fixed header is parsed. */
    if (c->mac_key && (rc = kc_entry_mac_check(data, len, c->mac_key, c->mac_key_len)) != KC_OK) {
        kc_log(KC_LOG_REMOTE, "remote %s rejected: %s", np[w], kc_error_last()->message);
        kc_local_count(c->local, shard, KC_STAT_MAC_REJECTED, 1);
        free(data);
        return KC_MISS;
    }
    kc_entry *e;
    rc = kc_entry_decode(&e, data, len);
    if (rc == KC_OK && (memcmp(kc_entry_key(e)->bytes, key->bytes, 16) != 0 || strcmp(kc_entry_variant(e), variants[w]) != 0)) {
        kc_entry_free(e);
        rc = kc_err(KC_ECORRUPT, "it holds another key or variant than its name");
    }
    if (rc) {
        kc_log(KC_LOG_REMOTE, "remote %s unusable: %s", np[w], kc_error_last()->message);
        kc_local_count(c->local, shard, rc == KC_ECORRUPT ? KC_STAT_CORRUPT : KC_STAT_REMOTE_ERRORS, 1);
        free(data);
        return KC_MISS;
    }
    if (c->mode == 0 && kc_local_put(c->local, np[w], data, len) != KC_OK) /* written back to local */
        kc_log(KC_LOG_STORE, "remote hit %s not kept locally: %s", np[w], kc_error_last()->message);
    free(data);
    kc_local_count(c->local, shard, KC_STAT_REMOTE_HITS, 1);
    if (which) *which = w;
    *out = e;
    return KC_OK;
}

int kc_cache_get_local_(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    *out = NULL;
    if (c->mode == 2) return KC_MISS;
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    int shard = key->bytes[0];
    void *data;
    size_t len;
    int rc = kc_local_get(c->local, name, &data, &len);
    if (rc != KC_OK) {
        if (rc != KC_MISS) {
            /* A cache-side error costs a miss, never a failure. */
            kc_log(KC_LOG_STORE, "get %s: %s", name, kc_error_last()->message);
            kc_local_count(c->local, shard, KC_STAT_STORE_ERRORS, 1);
        }
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
    if (rc == KC_ENOMEM) return kc_err(KC_MISS, "no memory to decode %s", name);
    if (rc != KC_OK) {
        kc_log(KC_LOG_STORE, "%s: %s", name, kc_error_last()->message);
        kc_local_quarantine(c->local, name);
        return kc_err(KC_ECORRUPT, "entry %s was corrupt (quarantined)", name);
    }
    kc_local_count(c->local, shard, KC_STAT_HITS, 1);
    *out = e;
    return KC_OK;
}

int kc_cache_get(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_get: out is NULL");
    *out = NULL;
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (c->mode == 2) return KC_MISS;
    rc = kc_cache_get_local_(c, key, variant, out);
    if (rc == KC_OK) return KC_OK;
    char why[256];
    snprintf(why, sizeof why, "%s", kc_error_last()->message);
    if (c->remote && kc_cache_remote_fetch_(c, key, &variant, 1, NULL, out) == KC_OK) return KC_OK;
    kc_local_count(c->local, key->bytes[0], KC_STAT_MISSES, 1);
    return kc_err(KC_MISS, "%s", why);
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
    if (!rc && c->mac_key) rc = kc_entry_seal(&data, &len, c->mac_key, c->mac_key_len);
    if (rc) {
        free(data);
        return rc;
    }
    rc = kc_local_put(c->local, name, data, len);
    if (rc) kc_err_prefix(rc, "storing %s", name);
    if (c->remote && !c->remote_ro) {
        int erc = remote_enqueue(c, name, kc_entry_key(e)->bytes[0], data, len); /* takes data */
        (void)erc; /* a dropped remote write is counted and logged, not an error */
        return rc;
    }
    free(data);
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
    int rc = kc_local_read(v->c->local, name, &data, &len);
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

const uint8_t *kc_cache_mac_key_(kc_cache *c, size_t *len) {
    *len = c->mac_key_len;
    return c->mac_key;
}

int kc_cache_publish(kc_cache *c, const kc_key *key, const char *variant) {
    int rc = check_kv(c, key, variant);
    if (rc) return rc;
    if (!c->remote) return kc_err(KC_EINVAL, "no remote tier configured (KCACHE_REMOTE)");
    if (c->remote_ro) return kc_err(KC_EREADONLY, "the remote is read-only here");
    char name[KC_NAME_MAX + 1];
    kc_store_name(key, variant, name);
    int shard = key->bytes[0];
    rc = c->remote->exists(c->remote, name);
    if (rc == 1) return 0;
    if (rc < 0) {
        remote_count_failure(c, shard, rc, 1);
        return rc;
    }
    void *data;
    size_t len;
    if ((rc = kc_local_read(c->local, name, &data, &len))) return rc;
    /* The local directory is trusted: an entry stored before the key was set is sealed now. */
    if (c->mac_key && kc_entry_mac_check(data, len, c->mac_key, c->mac_key_len) != KC_OK &&
        (rc = kc_entry_seal(&data, &len, c->mac_key, c->mac_key_len))) {
        free(data);
        return rc;
    }
    rc = remote_enqueue(c, name, shard, data, len);
    return rc ? rc : 1;
}

int kc_cache_remote_ping(kc_cache *c) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_remote_ping: NULL cache");
    if (!c->remote) return KC_MISS;
    int rc = c->remote->exists(c->remote, "00000000000000000000000000000000.ping");
    if (rc < 0) remote_count_failure(c, 0, rc, 0);
    return rc < 0 ? rc : KC_OK;
}
