/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/settings.c — a cache's settings: what kc_options says, handed to the configuration part
 * (config/) as its first layer, and what the cache does with the settings it gets back.
 *
 * The one idea: kc_cache_open reads no environment and parses no value; it turns the fields a
 * caller set into text for config/, with the caller's settings by name (kc_options.settings: refused
 * where a field sets the same row), and config/ reads the environment and the files, in order, and
 * checks everything once; the cache then takes typed values from the result: the directory, the limit,
 * the KC_OPEN_* flags, the remote and its limits, the trust files, the HMAC key (read here from
 * its file: a secret, refused when others may read it), and kc_options of every version this build
 * accepts read into its own (kc_cache_options_copy_).  Writing a setting to the cache
 * directory's kcache.conf (kc_cache_config_set) also updates the open cache's own settings.
 *
 * Callers: cache/cache.c (kc_cache_open), the CLI (kc_cache_config_set, kc_cache_config), the
 * graph and compile parts through kc_cache_settings_ (cache/internal.h).
 * Must not: call getenv, or keep a pointer into the caller's kc_options past kc_cache_open.
 */
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../common/api.h"
#include "../common/fs.h"
#include "../common/internal.h"
#include "../config/config.h"
#include "kcache/sign.h"
#include "internal.h"

/* A KC_OPEN_* flag and the setting that is its twin. */
static const struct {
    unsigned flag;
    int id;
} flag_rows[] = {
    {KC_OPEN_DISABLE, KC_CONFIG_disable},
    {KC_OPEN_READONLY, KC_CONFIG_readonly},
    {KC_OPEN_ALLOW_UNSAFE_DIR, KC_CONFIG_allow_unsafe_dir},
    {KC_OPEN_REMOTE_READONLY, KC_CONFIG_remote_readonly},
    {KC_OPEN_REQUIRE_HIT, KC_CONFIG_require_hit},
    {KC_OPEN_STRICT, KC_CONFIG_strict},
};

/* A number kc_options set (non-zero) as text in `buf`, for the options layer. */
static const char *num(unsigned long long n, char *buf, size_t cap) {
    if (!n) return NULL;
    snprintf(buf, cap, "%llu", n);
    return buf;
}

/* The kc_options field that is each row's twin, for an error naming both (kc_options.settings). */
static const char *const field_of[KC_CONFIG_COUNT] = {
    [KC_CONFIG_dir] = "dir",
    [KC_CONFIG_max_size] = "max_size",
    [KC_CONFIG_disable] = "flags' KC_OPEN_DISABLE",
    [KC_CONFIG_readonly] = "flags' KC_OPEN_READONLY",
    [KC_CONFIG_allow_unsafe_dir] = "flags' KC_OPEN_ALLOW_UNSAFE_DIR",
    [KC_CONFIG_remote_readonly] = "flags' KC_OPEN_REMOTE_READONLY",
    [KC_CONFIG_require_hit] = "flags' KC_OPEN_REQUIRE_HIT",
    [KC_CONFIG_strict] = "flags' KC_OPEN_STRICT",
    [KC_CONFIG_remote] = "remote",
    [KC_CONFIG_remote_connect_ms] = "remote_config.connect_ms",
    [KC_CONFIG_remote_deadline_ms] = "remote_config.deadline_ms",
    [KC_CONFIG_remote_backoff_ms] = "remote_config.backoff_ms",
    [KC_CONFIG_remote_ttl] = "remote_config.ttl_s",
    [KC_CONFIG_remote_max_value] = "remote_config.max_value",
    [KC_CONFIG_remote_queue] = "remote_queue",
    [KC_CONFIG_signing_key_file] = "signing_key_file",
    [KC_CONFIG_keyring] = "keyring",
};

/* kc_options.settings over the fields: a setting whose field is set too is refused (one of the two must go;
 * the HMAC key's bytes, kc_options.hmac_key, are the twin of the setting hmac_key_file). */
static int settings_add(kc_config_options *co, const kc_options *o) {
    const char *fields[KC_CONFIG_COUNT] = {0};
    for (int i = 0; i < KC_CONFIG_COUNT; i++) fields[i] = co->value[i] ? field_of[i] : NULL;
    if (o->hmac_key) fields[KC_CONFIG_hmac_key_file] = "hmac_key";
    return kc_config_options_settings_(co, o->settings, o->nsettings, fields);
}

int kc_cache_config_load_(const kc_options *o, kc_config **out) {
    kc_config_options co = {{0}, o->flags & (KC_OPEN_NO_ENV | KC_OPEN_OPTIONS_WIN), {0}};
    char nums[7][24];
    co.value[KC_CONFIG_dir] = o->dir;
    co.value[KC_CONFIG_max_size] = num(o->max_size, nums[0], sizeof nums[0]);
    for (size_t i = 0; i < KC_ARRAY_LEN(flag_rows); i++)
        if (o->flags & flag_rows[i].flag) co.value[flag_rows[i].id] = "1";
    co.value[KC_CONFIG_remote] = o->remote;
    co.value[KC_CONFIG_remote_connect_ms] = num(o->remote_config.connect_ms, nums[1], sizeof nums[1]);
    co.value[KC_CONFIG_remote_deadline_ms] = num(o->remote_config.deadline_ms, nums[2], sizeof nums[2]);
    co.value[KC_CONFIG_remote_backoff_ms] = num(o->remote_config.backoff_ms, nums[3], sizeof nums[3]);
    co.value[KC_CONFIG_remote_ttl] = num(o->remote_config.ttl_s, nums[4], sizeof nums[4]);
    co.value[KC_CONFIG_remote_max_value] = num(o->remote_config.max_value, nums[5], sizeof nums[5]);
    co.value[KC_CONFIG_remote_queue] = num(o->remote_queue, nums[6], sizeof nums[6]);
    co.value[KC_CONFIG_signing_key_file] = o->signing_key_file;
    co.value[KC_CONFIG_keyring] = o->keyring;
    int rc = settings_add(&co, o);
    return rc ? rc : kc_config_load_(out, &co);
}

unsigned kc_cache_config_flags_(const kc_config *cfg, unsigned flags) {
    const bool *on[] = {&cfg->v.disable,         &cfg->v.readonly,    &cfg->v.allow_unsafe_dir,
                        &cfg->v.remote_readonly, &cfg->v.require_hit, &cfg->v.strict};
    for (size_t i = 0; i < KC_ARRAY_LEN(flag_rows); i++)
        if (*on[i]) flags |= flag_rows[i].flag;
    return flags;
}

void kc_cache_config_remote_(const kc_config *cfg, kc_options *o) {
    o->remote = cfg->v.remote[0] ? cfg->v.remote : NULL;
    o->remote_config.connect_ms = (unsigned)cfg->v.remote_connect_ms;
    o->remote_config.deadline_ms = (unsigned)cfg->v.remote_deadline_ms;
    o->remote_config.backoff_ms = (unsigned)cfg->v.remote_backoff_ms;
    o->remote_config.ttl_s = (unsigned)cfg->v.remote_ttl;
    o->remote_config.max_value = cfg->v.remote_max_value;
    o->remote_queue = (unsigned)cfg->v.remote_queue;
    o->signing_key_file = cfg->v.signing_key_file[0] ? cfg->v.signing_key_file : NULL;
    o->keyring = cfg->v.keyring[0] ? cfg->v.keyring : NULL;
}

const char *kc_cache_config_by_(const kc_config *cfg, int id, char *out, size_t cap) {
    const char *w = cfg->where[id], *env = kc_config_row_of(id)->env, *name = kc_config_row_of(id)->name;
    if (!w || !*w) snprintf(out, cap, "%s", name);
    else snprintf(out, cap, "%.500s%s%s", w, strcmp(w, env) != 0 ? " " : "", strcmp(w, env) != 0 ? name : "");
    return out;
}

int kc_cache_config_hmac_(const kc_config *cfg, kc_options *o, void **owned) {
    *owned = NULL;
    if (o->hmac_key) return KC_OK; /* the options' key wins over the environment's and the files' */
    if (cfg->v.hmac_key[0]) o->hmac_key = cfg->v.hmac_key, o->hmac_key_len = strlen(cfg->v.hmac_key);
    const char *e = cfg->v.hmac_key_file;
    if (!*e) return KC_OK;
    /* What set it, as errors name it: the variable, or "kc_options.settings[2] hmac_key_file", "FILE:LINE hmac_key_file". */
    const char *w = cfg->where[KC_CONFIG_hmac_key_file], *env = kc_config_row_of(KC_CONFIG_hmac_key_file)->env;
    char by[4200];
    snprintf(by, sizeof by, "%s%s", w && strcmp(w, env) != 0 ? w : env,
             w && strcmp(w, env) != 0 ? " hmac_key_file" : "");
    void *data;
    size_t len;
    struct stat st;
    int rc;
    if ((rc = kc_fs_read_input(e, 4096, &data, &len, &st)) == KC_MISS)
        return kc_err(KC_EINVAL, "%s names '%s', which does not exist", by, e);
    if (rc) return kc_err_prefix(rc, "%s '%s'", by, e);
    /* Whoever can read the key can seal entries every host runs; whoever can write it picks
     * the key.  Refused, not warned about (ssh's rule for private keys): others may neither
     * read nor write it, the group may at most read it (a Kubernetes secret with fsGroup). */
    if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) {
        free(data);
        return kc_err(KC_EPERM,
                      "%s '%s' can be read or written by others (mode %03o): whoever "
                      "reads the key can seal entries; chmod 600 it (a Kubernetes secret: defaultMode 0400)",
                      by, e, (unsigned)(st.st_mode & 0777));
    }
    while (len && (((char *)data)[len - 1] == '\n' || ((char *)data)[len - 1] == '\r')) len--;
    *owned = data;
    o->hmac_key = data, o->hmac_key_len = len;
    return KC_OK;
}

const kc_settings *kc_cache_settings_(const kc_cache *c) {
    const kc_config *cfg = c ? kc_cache_config(c) : NULL;
    return cfg ? &cfg->v : &kc_config_process()->v;
}

int kc_cache_config_set(kc_cache *c, const char *key, const char *value) {
    if (!c || !key) return kc_err(KC_EINVAL, "kc_cache_config_set: NULL argument");
    int id = kc_config_find(key);
    if (id < 0 || strcmp(kc_config_row_of(id)->name, key) != 0)
        return kc_err(KC_EINVAL, "unknown key '%.100s' (`kcache config` lists the keys)", key);
    int rc = kc_config_dir_file_ok_(id, kc_cache_dir(c));
    if (rc) return rc;
    if (kc_cache_mode(c) != KC_CACHE_READWRITE)
        return kc_err(KC_EREADONLY,
                      "the cache '%s' is read-only or disabled: its " KC_CONFIG_DIR_FILE " is not written",
                      kc_cache_dir(c));
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/" KC_CONFIG_DIR_FILE, kc_cache_dir(c)) >= (int)sizeof path)
        return kc_err(KC_EINVAL, "the cache directory's path is too long");
    rc = kc_config_file_set(path, key, value);
    if (rc) return rc;
    kc_config *cfg = kc_cache_config_mut_(c);
    if (value && (cfg->origin[id] <= KC_ORIGIN_DIR_FILE || id == KC_CONFIG_max_size))
        rc = kc_config_set_(cfg, id, value, KC_ORIGIN_DIR_FILE, path, key);
    else if (!value && cfg->origin[id] == KC_ORIGIN_DIR_FILE)
        rc = kc_config_set_(cfg, id, kc_config_row_of(id)->def, KC_ORIGIN_DEFAULT, NULL, key);
    if (!rc && id == KC_CONFIG_max_size) kc_cache_apply_max_size_(c, cfg->v.max_size);
    return rc;
}

int kc_cache_set_max_size(kc_cache *c, uint64_t max_size) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_set_max_size: NULL cache");
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)max_size);
    return kc_cache_config_set(c, "max_size", v);
}

/* ---- kc_options of every version ---- */

/* kc_options as version 3 laid it out (the remote's limits then kc_redis_config, the same fields), kept so
 * that a caller compiled against it is read field by field, whatever version 4 and later become. */
typedef struct kc_options_v3 {
    unsigned version;
    const char *dir;
    uint64_t max_size;
    unsigned flags;
    const char *remote; /* version 2 */
    kc_redis_config remote_config;
    unsigned remote_queue;
    const void *hmac_key;
    size_t hmac_key_len;
    const char *signing_key_file; /* version 3 */
    const char *keyring;
} kc_options_v3;

/* kc_options' size at version 4: every field before the settings (appended at version 5). */
#define KC_OPTIONS_V4_SIZE offsetof(kc_options, settings)

/* A caller's options of any version this build accepts into `o` (KC_OPTIONS_INIT, then the fields the
 * caller's version has), or KC_EVERSION.  Version 1 lacks the remote fields, version 2 the signatures,
 * version 4 the settings. */
static int options_read(const kc_options *opts, kc_options *o) {
    kc_options d = KC_OPTIONS_INIT;
    *o = d;
    if (!opts) return KC_OK;
    unsigned v = opts->version;
    if (v == KC_OPTIONS_VERSION) {
        *o = *opts;
        return KC_OK;
    }
    if (v == 4) { /* the fields before the settings, and not one byte more of the caller's */
        memcpy(o, opts, KC_OPTIONS_V4_SIZE);
        return KC_OK;
    }
    if (v < 1 || v > 3)
        return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)", v, KC_OPTIONS_VERSION);
    const kc_options_v3 *p = (const void *)opts;
    o->dir = p->dir, o->max_size = p->max_size, o->flags = p->flags;
    if (v >= 2) {
        o->remote = p->remote, o->remote_config = p->remote_config, o->remote_queue = p->remote_queue;
        o->hmac_key = p->hmac_key, o->hmac_key_len = p->hmac_key_len;
    }
    if (v >= 3) o->signing_key_file = p->signing_key_file, o->keyring = p->keyring;
    return KC_OK;
}

int kc_options_init(kc_options *opts, unsigned version) {
    if (!opts) return kc_err(KC_EINVAL, "kc_options_init: opts is NULL");
    if (version < 1 || version > KC_OPTIONS_VERSION)
        return kc_err(KC_EVERSION, "kc_options version %u is not supported (this build: %d)", version,
                      KC_OPTIONS_VERSION);
    kc_options o = KC_OPTIONS_INIT;
    if (version == 1) memcpy(opts, &o, offsetof(kc_options_v3, remote));
    else if (version == 2) memcpy(opts, &o, offsetof(kc_options_v3, signing_key_file));
    else if (version == 3) memcpy(opts, &o, sizeof(kc_options_v3));
    else if (version == 4) memcpy(opts, &o, KC_OPTIONS_V4_SIZE);
    else *opts = o;
    opts->version = version;
    return KC_OK;
}

/* kc_options of any accepted version as this build's (the fields an older version lacks: defaults). */
int kc_cache_options_copy_(kc_options *o, const kc_options *opts) {
    int rc = options_read(opts, o);
    if (rc) return rc;
    o->version = KC_OPTIONS_VERSION;
    /* An empty path is never "the default directory": a caller that means the default leaves
     * dir NULL (`kcache --cache-dir "" clear` once emptied ~/.cache/kcache). */
    if (o->dir && !*o->dir)
        return kc_err(KC_EINVAL,
                      "the cache directory is an empty path: name a directory, or leave it unset for the default");
    return KC_OK;
}
