/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/config.c — the settings: the one table read, in order, into one typed structure.
 *
 * The one idea: every setting is a row of KC_CONFIG_TABLE (kcache/config.h), and this file is
 * the only reader of the environment in the library.  A value is checked by its row's type
 * (common/env.c's strict grammars) where it is read — an environment variable, a line of a file,
 * a kc_options field — and a bad one is an error naming the variable or FILE:LINE; what the parts
 * receive (config/config.h) is already typed and never checked again.  The layers are applied
 * in order (kc_options over the environment over the cache directory's file over the system file
 * over the default); the directory's file is read once the directory is known (it cannot name
 * itself) and fills what the environment and kc_options left unset — but its size limit wins over
 * every layer (kcache/config.h says why).
 *
 * The process's settings (kc_config_process) are read here once, under a lock, with no cache
 * directory; they also hand the `log` setting to common/log.c (which reads no environment).
 *
 * Callers: cache/cache.c (kc_config_load_ at kc_cache_open), the process-wide loaders (the driver,
 * NVRTC, the toolkit, the loaded-graph table: kc_config_process), the CLI (kcache/config.h).
 * Must not: read the environment for a setting outside its row, log while the process's settings
 * are read (common/log.c asks for them from inside its once), or keep a pointer into the
 * environment (values are copied).
 */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../common/internal.h"
#include "config.h"

#ifndef KC_CONFIG_SYSTEM_FILE
#define KC_CONFIG_SYSTEM_FILE "/etc/kcache.conf" /* a build may name another one (-DKC_CONFIG_SYSTEM_FILE=...) */
#endif

static const kc_config_row rows[KC_CONFIG_COUNT] = {
#define ROW_(name, env, type, file, def, max, part, doc) {#name, env, KC_CONFIG_TYPE_##type, file, def, max, part, doc},
    KC_CONFIG_TABLE(ROW_)
#undef ROW_
};

static const size_t field_at[KC_CONFIG_COUNT] = {
#define AT_(name, env, type, file, def, max, part, doc) offsetof(kc_settings, name),
    KC_CONFIG_TABLE(AT_)
#undef AT_
};

const kc_config_row *kc_config_row_of(int id) { return id >= 0 && id < KC_CONFIG_COUNT ? &rows[id] : NULL; }

int kc_config_find(const char *name) {
    for (int i = 0; name && i < KC_CONFIG_COUNT; i++)
        if (strcmp(rows[i].name, name) == 0 || strcmp(rows[i].env, name) == 0) return i;
    return -1;
}

const char *kc_config_type_name(kc_config_type t) {
    static const char *const names[] = {"bool", "count", "milliseconds", "seconds",
                                        "size", "path",  "string",       "url list"};
    return (unsigned)t < KC_ARRAY_LEN(names) ? names[t] : "?";
}

const char *kc_config_origin_name(kc_config_origin o) {
    static const char *const names[] = {"default", "system file", "cache directory file", "environment", "options"};
    return (unsigned)o < KC_ARRAY_LEN(names) ? names[o] : "?";
}

/* ---- one value ---- */

static int is_string(kc_config_type t) {
    return t == KC_CONFIG_TYPE_PATH || t == KC_CONFIG_TYPE_STRING || t == KC_CONFIG_TYPE_URLS;
}

/* Parse `value` by the row's type into *field (a scratch copy first, so a bad value changes nothing). */
static int parse_into(const kc_config_row *r, void *field, const char *value, const char *name) {
    if (!*value)
        return kc_err(KC_EINVAL, "%s has no value: give a %s, or leave it out", name, kc_config_type_name(r->type));
    bool b = false;
    unsigned long long n = 0;
    double s = 0;
    uint64_t z = 0;
    int rc = KC_OK;
    switch (r->type) {
    case KC_CONFIG_TYPE_BOOL:
        if (!(rc = kc_env_flag(name, value, &b))) memcpy(field, &b, sizeof b);
        break;
    case KC_CONFIG_TYPE_COUNT:
    case KC_CONFIG_TYPE_MS:
        if (!(rc = kc_env_uint(name, value, r->max ? r->max : ULLONG_MAX, &n))) memcpy(field, &n, sizeof n);
        break;
    case KC_CONFIG_TYPE_SECONDS:
        if (!(rc = kc_env_seconds(name, value, (double)r->max, &s))) memcpy(field, &s, sizeof s);
        break;
    default:
        if (!(rc = kc_env_size(name, value, &z))) memcpy(field, &z, sizeof z);
        break;
    }
    return rc;
}

int kc_config_set_(kc_config *c, int id, const char *value, kc_config_origin origin, const char *where,
                   const char *name) {
    const kc_config_row *r = kc_config_row_of(id);
    if (!c || !r || !value) return kc_err(KC_EINVAL, "kc_config_set_: bad argument");
    if (!name) name = r->env;
    void *field = (char *)&c->v + field_at[id];
    char *w = where ? strdup(where) : NULL;
    if (where && !w) return kc_err(KC_ENOMEM, "out of memory");
    if (is_string(r->type)) {
        if (strchr(value, '\n')) {
            free(w);
            return kc_err(KC_EINVAL, "%s has a newline in its value", name);
        }
        if (id == KC_CONFIG_log_format && strcmp(value, "text") != 0 && strcmp(value, "json") != 0) {
            free(w);
            return kc_err(KC_EINVAL, "%s is '%.40s': give text or json", name, value);
        }
        char *copy = strdup(value);
        if (!copy) {
            free(w);
            return kc_err(KC_ENOMEM, "out of memory");
        }
        if (c->owned[id]) { /* another thread may be reading the value it replaces: kept until the end */
            struct kc_config_old *o = malloc(sizeof *o);
            if (!o) {
                free(copy), free(w);
                return kc_err(KC_ENOMEM, "out of memory");
            }
            o->s = c->owned[id], o->next = c->retired, c->retired = o;
        }
        c->owned[id] = copy;
        const char *p = copy;
        memcpy(field, &p, sizeof p);
    } else {
        int rc = parse_into(r, field, value, name);
        if (rc) {
            free(w);
            return rc;
        }
    }
    free(c->where[id]);
    c->where[id] = w;
    c->origin[id] = origin;
    return KC_OK;
}

void kc_config_free_(kc_config *c) {
    if (!c) return;
    for (int i = 0; i < KC_CONFIG_COUNT; i++) {
        if (i == KC_CONFIG_hmac_key && c->owned[i]) memset(c->owned[i], 0, strlen(c->owned[i]));
        free(c->owned[i]);
        free(c->where[i]);
    }
    while (c->retired) {
        struct kc_config_old *o = c->retired;
        c->retired = o->next;
        free(o->s);
        free(o);
    }
    free(c);
}

/* Append `len` bytes of `p` to out[*n] (cap bytes in all), cut at the end of `out`, NUL-terminated. */
static void put(char *out, size_t cap, size_t *n, const char *p, size_t len) {
    if (*n + 1 >= cap) return;
    size_t room = cap - 1 - *n;
    if (len > room) len = room;
    memcpy(out + *n, p, len);
    *n += len;
    out[*n] = '\0';
}

/* A URL list as it may be shown: in each URL, its password (what lies between "://" and the last '@',
 * after "user:" when there is one) as "***", as store/registry.c shows a tier's URL.  Every URL of
 * the list on its own: one without a password says nothing of the next. */
static void urls_shown(const char *p, char *out, size_t cap) {
    static const char ws[] = " \t\n\r\v\f";
    size_t n = 0;
    out[0] = '\0'; /* an empty list is shown empty, never as what the buffer held */
    while (*p) {
        size_t sp = strspn(p, ws), tl = strcspn(p + sp, ws);
        put(out, cap, &n, p, sp);
        const char *t = p + sp, *end = t + tl, *s = t, *at = NULL;
        for (const char *q = t; q + 3 <= end; q++)
            if (memcmp(q, "://", 3) == 0) {
                s = q + 3;
                break;
            }
        for (const char *q = s; q < end; q++)
            if (*q == '@') at = q;
        if (!at) {
            put(out, cap, &n, t, tl);
        } else {
            const char *colon = memchr(s, ':', (size_t)(at - s));
            size_t keep = colon ? (size_t)(colon - s) : 0; /* the user name, shown */
            put(out, cap, &n, t, (size_t)(s - t) + keep);
            put(out, cap, &n, ":***", 4);
            put(out, cap, &n, at, (size_t)(end - at));
        }
        p = end;
    }
}

int kc_config_get(const kc_config *c, int id, char *out, size_t cap, kc_config_origin *origin, char *where,
                  size_t where_cap) {
    const kc_config_row *r = kc_config_row_of(id);
    if (!c || !r || !out || !cap) return kc_err(KC_EINVAL, "kc_config_get: bad argument");
    const void *field = (const char *)&c->v + field_at[id];
    bool b;
    unsigned long long n;
    double s;
    const char *p;
    switch (r->type) {
    case KC_CONFIG_TYPE_BOOL: memcpy(&b, field, sizeof b), snprintf(out, cap, "%s", b ? "true" : "false"); break;
    case KC_CONFIG_TYPE_SECONDS: memcpy(&s, field, sizeof s), snprintf(out, cap, "%g", s); break;
    case KC_CONFIG_TYPE_COUNT:
    case KC_CONFIG_TYPE_MS:
    case KC_CONFIG_TYPE_SIZE: memcpy(&n, field, sizeof n), snprintf(out, cap, "%llu", n); break;
    default:
        memcpy(&p, field, sizeof p);
        if (r->type == KC_CONFIG_TYPE_URLS) urls_shown(p, out, cap);
        else snprintf(out, cap, "%s", id == KC_CONFIG_hmac_key && *p ? "***" : p);
        break;
    }
    if (origin) *origin = c->origin[id];
    if (where && where_cap) snprintf(where, where_cap, "%s", c->where[id] ? c->where[id] : "");
    return KC_OK;
}

/* ---- the layers ---- */

int kc_config_is_process_(int id) {
    static const int process[] = {
        KC_CONFIG_log,          KC_CONFIG_log_format,   KC_CONFIG_nvrtc,         KC_CONFIG_nvrtc_own_cache,
        KC_CONFIG_cuda_include, KC_CONFIG_cuda_driver,  KC_CONFIG_loaded_graphs, KC_CONFIG_loaded_bytes,
        KC_CONFIG_pch,          KC_CONFIG_pch_max_size, KC_CONFIG_pch_dir};
    for (size_t i = 0; i < KC_ARRAY_LEN(process); i++)
        if (process[i] == id) return 1;
    return 0;
}

int kc_config_dir_file_ok_(int id, const char *where) {
    if (id == KC_CONFIG_dir)
        return kc_err(KC_EINVAL,
                      "%s: the cache directory cannot be set in its own %s (set KCACHE_DIR, --cache-dir, or "
                      "`dir` in the system file)",
                      where, KC_CONFIG_DIR_FILE);
    if (kc_config_is_process_(id))
        return kc_err(KC_EINVAL,
                      "%s: '%s' belongs to the process, not to one cache: set it in the environment (%s) "
                      "or the system file",
                      where, rows[id].name, rows[id].env);
    return KC_OK;
}

/* A file's setting (file.c calls it): the system file's always, the directory's over the layers
 * below it, and its size limit over every layer (kcache/config.h). */
/* ---- a program's settings only tighten the operator's policy ---- */

/* The safety switches, each with its safe value: a setting may turn one to it, never away from what a
 * lower layer (the system file, the directory's file, the environment) chose. */
static const struct guard {
    int id;
    bool safe;
} guards[] = {{KC_CONFIG_readonly, true},        {KC_CONFIG_require_hit, true}, {KC_CONFIG_strict, true},
              {KC_CONFIG_remote_readonly, true}, {KC_CONFIG_disable, true},     {KC_CONFIG_allow_unsafe_dir, false}};

/* 1 when a setting's value `next` of row `id` loosens the lower layer's value `low` (both as accepted). */
static int loosens(int id, const char *low, const char *next) {
    for (size_t i = 0; i < KC_ARRAY_LEN(guards); i++) {
        if (guards[i].id != id) continue;
        bool a = !guards[i].safe, b;
        if (kc_env_flag(rows[id].name, low, &a) != KC_OK) return kc_error_clear(), 0;
        b = a; /* empty: left as it is */
        if (kc_env_flag(rows[id].name, next, &b) != KC_OK) return kc_error_clear(), 0;
        return a == guards[i].safe && b != guards[i].safe;
    }
    if (id == KC_CONFIG_keyring || id == KC_CONFIG_hmac_key_file) return *low && strcmp(low, next) != 0;
    return 0;
}

static int refuse_loosening(int id, const char *setting, kc_config_origin from, const char *by) {
    return kc_err(KC_EINVAL,
                  "%s: '%s' would loosen what the %s%s%s%s set: a program's settings can only tighten the "
                  "operator's policy (or leave it) — remove the setting, or change it where it is set",
                  setting, rows[id].name, kc_config_origin_name(from), by ? " (" : "", by ? by : "", by ? ")" : "");
}

/* The value row `id` holds now, as a setting would write it ("1"/"0" for a switch). */
static void value_now(const kc_config *c, int id, char *out, size_t cap) {
    if (kc_config_get(c, id, out, cap, NULL, NULL, 0) != KC_OK) out[0] = '\0', kc_error_clear();
}

static int apply_file(kc_config *c, int id, const char *value, const char *where, void *ctx) {
    kc_config_origin o = *(const kc_config_origin *)ctx;
    int rc;
    if (o == KC_ORIGIN_DIR_FILE && (rc = kc_config_dir_file_ok_(id, where))) return rc;
    const char *by = c->where[id];
    if (o == KC_ORIGIN_DIR_FILE && c->origin[id] == KC_ORIGIN_OPTIONS && by &&
        !strncmp(by, "kc_options.settings", 19)) {
        char now[4200];
        value_now(c, id, now, sizeof now);
        if (loosens(id, value, now)) return refuse_loosening(id, by, o, where);
    }
    if (o == KC_ORIGIN_DIR_FILE && c->origin[id] > KC_ORIGIN_DIR_FILE && id != KC_CONFIG_max_size) return KC_OK;
    char name[PATH_MAX + 200];
    snprintf(name, sizeof name, "%s: %s", where, rows[id].name);
    rc = kc_config_set_(c, id, value, o, where, name);
    if (rc && (c->flags & KC_CONFIG_KEEP_GOING)) {
        if (kc_config_is_process_(id)) /* a cache's setting is said by the open that refuses it */
            fprintf(stderr, "kcache: %s; %s keeps its default\n", kc_error_last()->message, rows[id].name);
        rc = KC_OK;
    }
    return rc;
}

/* The environment variable of row `id`: NULL when unset, or empty and empty means unset. */
static int env_value(const kc_config *c, int id, const char **out) {
    *out = NULL;
    if (c->flags & KC_CONFIG_NO_ENV) return KC_OK;
    const char *e = getenv(rows[id].env);
    if (!e) return KC_OK;
    if (!*e && (id == KC_CONFIG_dir || id == KC_CONFIG_hmac_key_file))
        return kc_err(KC_EINVAL, "%s is set but empty: name a %s, or unset it%s", rows[id].env,
                      id == KC_CONFIG_dir ? "directory" : "key file", id == KC_CONFIG_dir ? " for the default" : "");
    if (!*e && id != KC_CONFIG_remote) return KC_OK; /* KCACHE_REMOTE= (empty) turns a configured remote off */
    *out = e;
    return KC_OK;
}

static int apply_env(kc_config *c, int id) {
    const char *e;
    int rc = env_value(c, id, &e);
    if (!rc && e) rc = kc_config_set_(c, id, e, KC_ORIGIN_ENVIRONMENT, rows[id].env, NULL);
    if (rc && (c->flags & KC_CONFIG_KEEP_GOING)) {
        if (kc_config_is_process_(id)) /* a cache's setting is said by the open that refuses it */
            fprintf(stderr, "kcache: %s; %s keeps its default\n", kc_error_last()->message, rows[id].name);
        rc = KC_OK;
    }
    return rc;
}

static int apply_options(kc_config *c, const kc_config_options *o, int id) {
    if (!o || !o->value[id]) return KC_OK;
    char name[96], where[48];
    if (!o->setting[id]) {
        snprintf(name, sizeof name, "the options' %s", rows[id].name);
        return kc_config_set_(c, id, o->value[id], KC_ORIGIN_OPTIONS, NULL, name);
    }
    snprintf(where, sizeof where, "kc_options.settings[%zu]", o->setting[id] - 1);
    snprintf(name, sizeof name, "%s %s", where, rows[id].name);
    char now[4200];
    if (c->origin[id] > KC_ORIGIN_DEFAULT && (value_now(c, id, now, sizeof now), loosens(id, now, o->value[id])))
        return refuse_loosening(id, where, c->origin[id], c->where[id]);
    return kc_config_set_(c, id, o->value[id], KC_ORIGIN_OPTIONS, where, name);
}

/* ---- kc_options.settings ---- */

/* Why row `id` cannot be one of kc_options.settings; NULL when it can. */
static const char *not_a_setting(int id) {
    if (id == KC_CONFIG_dir) return "the cache directory is kc_options.dir, not a setting";
    if (id == KC_CONFIG_hmac_key)
        return "a secret is not a setting: give the key's bytes in kc_options.hmac_key, or a file holding "
               "them in the setting hmac_key_file";
    if (!rows[id].in_file) return "it is read from its environment variable only";
    if (kc_config_is_process_(id))
        return "it belongs to the process, not to one cache: set it in the environment or the system file";
    return NULL;
}

/* The row a mistyped name means ("max-size", "MAX_SIZE", "KCACHE_MAX_SIZE", " max_size") when it is
 * one settings accept, else -1: only to suggest it (a setting's name is the row's exactly). */
static int nearest_name(const char *name, size_t len) {
    char k[64];
    while (len && (*name == ' ' || *name == '\t')) name++, len--;
    while (len && (name[len - 1] == ' ' || name[len - 1] == '\t')) len--;
    if (len > 7 && strncasecmp(name, "KCACHE_", 7) == 0) name += 7, len -= 7;
    if (len >= sizeof k) return -1;
    for (size_t i = 0; i < len; i++) k[i] = name[i] == '-' ? '_' : (char)tolower((unsigned char)name[i]);
    k[len] = '\0';
    for (int i = 0; i < KC_CONFIG_COUNT; i++)
        if (strcmp(rows[i].name, k) == 0) return not_a_setting(i) ? -1 : i;
    return -1;
}

/* The row named exactly by name[0..len), or -1. */
static int row_named(const char *name, size_t len) {
    for (int i = 0; i < KC_CONFIG_COUNT; i++)
        if (strlen(rows[i].name) == len && memcmp(rows[i].name, name, len) == 0) return i;
    return -1;
}

int kc_config_options_settings_(kc_config_options *o, const char *const *settings, size_t n,
                                const char *const fields[KC_CONFIG_COUNT]) {
    if (n && !settings)
        return kc_err(KC_EINVAL, "kc_options.settings is NULL and nsettings is %zu: give the array, or 0", n);
    for (size_t i = 0; i < n; i++) {
        const char *s = settings[i], *eq = s ? strchr(s, '=') : NULL;
        if (!s) return kc_err(KC_EINVAL, "kc_options.settings[%zu] is NULL: give \"name=value\" strings", i);
        if (!eq) /* not shown: a string without its name may be a secret */
            return kc_err(KC_EINVAL,
                          "kc_options.settings[%zu] has no '=': give \"name=value\" (a name "
                          "`kcache config` lists, e.g. \"max_size=2G\")",
                          i);
        size_t len = (size_t)(eq - s);
        int id = row_named(s, len), near = id < 0 ? nearest_name(s, len) : -1;
        if (id < 0)
            return kc_err(KC_EINVAL,
                          "kc_options.settings[%zu]: unknown setting '%.*s'%s%s%s: give a name "
                          "`kcache config` lists (docs/configuration.md)",
                          i, (int)(len < 100 ? len : 100), s, near < 0 ? "" : " (did you mean '",
                          near < 0 ? "" : rows[near].name, near < 0 ? "" : "'?)");
        const char *why = not_a_setting(id);
        if (why)
            return kc_err(KC_EINVAL, "kc_options.settings[%zu]: '%s' cannot be set in kc_options.settings: %s", i,
                          rows[id].name, why);
        if (o->setting[id])
            return kc_err(KC_EINVAL,
                          "kc_options.settings[%zu]: '%s' is already given by kc_options.settings[%zu]: "
                          "give each setting once",
                          i, rows[id].name, o->setting[id] - 1);
        if (fields && fields[id])
            return kc_err(KC_EINVAL,
                          "kc_options.settings[%zu] '%s' and kc_options.%s both set it: keep one of the "
                          "two",
                          i, rows[id].name, fields[id]);
        o->value[id] = eq + 1;
        o->setting[id] = i + 1;
    }
    return KC_OK;
}

/* The environment, then kc_options over it (a field set wins; a flag set is never turned off). */
static int apply_env_and_options(kc_config *c, const kc_config_options *o, int id) {
    int rc;
    if (id == KC_CONFIG_dir && o && o->value[id]) return apply_options(c, o, id); /* KCACHE_DIR, even empty: moot */
    if ((rc = apply_env(c, id))) return rc;
    return apply_options(c, o, id);
}

/* The default directory: $XDG_CACHE_HOME/kcache, else $HOME/.cache/kcache (absolute ones only). */
static int default_dir(kc_config *c) {
    char d[PATH_MAX];
    if (c->v.xdg_cache_home[0] == '/') snprintf(d, sizeof d, "%s/kcache", c->v.xdg_cache_home);
    else if (c->v.home[0] == '/') snprintf(d, sizeof d, "%s/.cache/kcache", c->v.home);
    else if (c->flags & KC_CONFIG_NO_ENV)
        return kc_err(KC_EINVAL, "no cache directory: opened without the environment (KC_OPEN_NO_ENV), so HOME "
                                 "and XDG_CACHE_HOME are not read: name the directory in kc_options.dir");
    else return kc_err(KC_EINVAL, "no cache directory: set KCACHE_DIR, XDG_CACHE_HOME or HOME");
    return kc_config_set_(c, KC_CONFIG_dir, d, KC_ORIGIN_DEFAULT, NULL, NULL);
}

static int read_system_file(kc_config *c) {
    /* A cache opened without the environment is hermetic: the host's system file is not read either
     * (its directory's own file is: it holds what the directory records).  The process's settings
     * under kc_config_process_init(KC_CONFIG_NO_ENV) still read it. */
    int cache_no_env = (c->flags & KC_CONFIG_NO_ENV) && !(c->flags & KC_CONFIG_NO_DIR_FILE);
    if ((c->flags & KC_CONFIG_NO_SYSTEM_FILE) || cache_no_env) return KC_OK;
    const char *e = c->flags & KC_CONFIG_NO_ENV ? NULL : getenv(rows[KC_CONFIG_config_system].env);
    int rc;
    const char *var = rows[KC_CONFIG_config_system].env;
    if (e && *e && (rc = kc_config_set_(c, KC_CONFIG_config_system, e, KC_ORIGIN_ENVIRONMENT, var, NULL))) return rc;
    kc_config_origin o = KC_ORIGIN_SYSTEM_FILE;
    rc = kc_config_file_read_(c->v.config_system, 0, c, apply_file, &o);
    return rc == KC_MISS ? KC_OK : rc;
}

static int read_dir_file(kc_config *c) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", c->v.dir, KC_CONFIG_DIR_FILE) >= (int)sizeof path)
        return kc_err(KC_EINVAL, "cache directory path is too long");
    kc_config_origin o = KC_ORIGIN_DIR_FILE;
    int rc = kc_config_file_read_(path, 1, c, apply_file, &o);
    if (rc && rc != KC_MISS) return rc;
    kc_config_record_read_(c->v.dir, c, apply_file, &o);
    return KC_OK;
}

int kc_config_load_(kc_config **out, const kc_config_options *o) {
    *out = NULL;
    kc_config *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "out of memory");
    c->flags = o ? o->flags : 0;
    int rc = KC_OK;
    for (int i = 0; i < KC_CONFIG_COUNT && !rc; i++)
        rc = kc_config_set_(c, i, rows[i].def, KC_ORIGIN_DEFAULT, NULL, rows[i].name);
    for (int i = 0; i < KC_CONFIG_COUNT && !rc; i++)
        if (!rows[i].in_file && i != KC_CONFIG_config_system) rc = apply_env(c, i);
    if (!rc) rc = read_system_file(c);
    int process = (c->flags & KC_CONFIG_NO_DIR_FILE) != 0; /* the process's settings: no directory */
    for (int i = 0; i < KC_CONFIG_COUNT && !rc; i++)
        if (rows[i].in_file && !(process && i == KC_CONFIG_dir)) rc = apply_env_and_options(c, o, i);
    if (!rc && !process && !c->v.dir[0]) rc = default_dir(c);
    if (!rc && !process) rc = read_dir_file(c);
    if (rc) {
        kc_config_free_(c);
        return rc;
    }
    *out = c;
    return KC_OK;
}

/* ---- the process's settings ---- */

static pthread_mutex_t proc_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_config *proc;

/* Read the process's settings (locked); rc is the first bad value's, the settings are read anyway. */
static int proc_read_locked(unsigned flags) {
    kc_config_options o = {{0}, flags | KC_CONFIG_NO_DIR_FILE, {0}};
    int rc = kc_config_load_(&proc, &o);
    if (rc) { /* a bad line of the system file (or no memory): the defaults alone */
        o.flags |= KC_CONFIG_NO_ENV | KC_CONFIG_NO_SYSTEM_FILE;
        o.flags &= ~KC_CONFIG_KEEP_GOING;
        fprintf(stderr, "kcache: %s; the process's settings keep their defaults\n", kc_error_last()->message);
        if (kc_config_load_(&proc, &o) != KC_OK) { /* out of memory: every string empty, every number 0 */
            static kc_config empty;
            static const char *const blank = "";
            for (int i = 0; i < KC_CONFIG_COUNT; i++)
                if (is_string(rows[i].type)) memcpy((char *)&empty.v + field_at[i], &blank, sizeof blank);
            proc = &empty;
        }
    }
    kc_log_set_format_(strcmp(proc->v.log_format, "json") == 0); /* before the mask: no line in the old format */
    kc_log_configure_default_(proc->v.log);
    return rc;
}

const kc_config *kc_config_process(void) {
    pthread_mutex_lock(&proc_mu);
    if (!proc) proc_read_locked(KC_CONFIG_KEEP_GOING);
    const kc_config *c = proc;
    pthread_mutex_unlock(&proc_mu);
    return c;
}

int kc_config_process_init(unsigned flags) {
    pthread_mutex_lock(&proc_mu);
    int rc = proc ? kc_err(KC_EBUSY, "the process's settings were already read")
                  : proc_read_locked((flags & KC_CONFIG_NO_ENV) | KC_CONFIG_KEEP_GOING);
    pthread_mutex_unlock(&proc_mu);
    return rc;
}

/* common/log.c asks for the process's settings through this at its first log line. */
static void log_reader(void) { (void)kc_config_process(); }

/* A forked child is a process of its own: it reads its settings (its environment) at its own first
 * use.  What the parent read stays allocated: a loader already run in the parent keeps pointing at it. */
static void forked_child(void) {
    pthread_mutex_init(&proc_mu, NULL);
    proc = NULL;
}

__attribute__((constructor)) static void register_readers(void) {
    kc_log_set_reader_(log_reader);
    pthread_atfork(NULL, NULL, forked_child);
}
