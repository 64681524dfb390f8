/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/config.h — the settings as the library's parts see them: a typed structure, one field
 * per row of KC_CONFIG_TABLE (kcache/config.h), read and checked once by config.c.
 *
 * May include it: every part above common (a part reads the fields of the kc_config it was
 * handed: a cache's, kc_cache_config_(), or the process's, kc_config_process()).  Nothing may
 * write to one but config/ and cache/cache.c (kc_cache_config_set: a value just written to the
 * cache directory's file).  String fields are never NULL ("" when unset) and live as long as the
 * kc_config.
 */
#ifndef KC_CONFIG_INTERNAL_H
#define KC_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kcache/config.h"

/* The C type of each TYPE column. */
#define KC_CFG_CT_BOOL bool
#define KC_CFG_CT_COUNT unsigned long long
#define KC_CFG_CT_MS unsigned long long
#define KC_CFG_CT_SECONDS double
#define KC_CFG_CT_SIZE uint64_t
#define KC_CFG_CT_PATH const char *
#define KC_CFG_CT_STRING const char *
#define KC_CFG_CT_URLS const char *

/** Every setting, typed: `cfg->v.lock_wait` is a double of seconds, `cfg->v.cuda_driver` a path. */
typedef struct kc_settings {
#define KC_CFG_FIELD_(name, env, type, file, def, max, part, doc) KC_CFG_CT_##type name;
    KC_CONFIG_TABLE(KC_CFG_FIELD_)
#undef KC_CFG_FIELD_
} kc_settings;

/* A string value replaced by a later kc_config_set_ (kc_cache_config_set), kept until kc_config_free_. */
struct kc_config_old {
    struct kc_config_old *next;
    char *s;
};

struct kc_config {
    kc_settings v;                            /* the values */
    kc_config_origin origin[KC_CONFIG_COUNT]; /* where each came from */
    char *where[KC_CONFIG_COUNT];             /* "KCACHE_X", "FILE:LINE", "kc_options.settings[i]", NULL */
    char *owned[KC_CONFIG_COUNT];             /* a string field's storage */
    struct kc_config_old *retired;            /* replaced strings: valid until the settings are freed */
    unsigned flags;                           /* what it was read with (KC_CONFIG_NO_ENV, ...) */
};

/** kc_config_load_'s flag: kc_options' values win over the environment (kcache/cache.h's KC_OPEN_OPTIONS_WIN). */
#define KC_CONFIG_OPTIONS_WIN 0x20u
/** kc_config_load_'s flag: read no cache directory file (the process's settings). */
#define KC_CONFIG_NO_DIR_FILE 0x10000u
/** kc_config_load_'s flag: a bad value is said on stderr and leaves that setting as it was (the process's settings). */
#define KC_CONFIG_KEEP_GOING 0x20000u
/** kc_config_load_'s flag: read no system file (the defaults alone, with KC_CONFIG_NO_ENV). */
#define KC_CONFIG_NO_SYSTEM_FILE 0x40000u

/** The name of the cache directory's file. */
#define KC_CONFIG_DIR_FILE "kcache.conf"

/** What kc_options sets, as text per setting (NULL: not set). */
typedef struct kc_config_options {
    const char *value[KC_CONFIG_COUNT];
    unsigned flags; /* KC_CONFIG_NO_ENV, KC_CONFIG_OPTIONS_WIN, KC_CONFIG_NO_DIR_FILE, KC_CONFIG_KEEP_GOING */
    size_t setting[KC_CONFIG_COUNT]; /* 1 + the index in kc_options.settings that gave value[id]; 0: a field */
} kc_config_options;

/**
 * kc_options.settings (`n` strings "name=value") into o->value, each checked before anything is
 * read: the name a row a file may set that belongs to a cache (not `dir`, not the process's, not
 * environment-only), given once, not also set by the kc_options field fields[id] names (NULL: none
 * set); an error (KC_EINVAL) names the index and the name, says what is wrong and what is accepted,
 * and never echoes a value.  The values point into the caller's strings and are parsed by
 * kc_config_load_ (the row's grammar, an error naming the index).  Callers: cache/settings.c.
 */
int kc_config_options_settings_(kc_config_options *o, const char *const *settings, size_t n,
                                const char *const fields[KC_CONFIG_COUNT]);

/**
 * Read every setting (kcache/config.h says in which order), checked; *out is the caller's
 * (kc_config_free_).  An error names the variable or FILE:LINE.  Callers: cache/cache.c.
 */
int kc_config_load_(kc_config **out, const kc_config_options *o);

/* 1 when row `id` belongs to the process, not to one cache (the driver, NVRTC, the toolkit's include
 * folder, the loaded-graph table, the log): read from kc_config_process() only, so a cache
 * directory's file may not set it (it would be shown in force and never used). */
int kc_config_is_process_(int id);

/* KC_EINVAL naming `where` when row `id` may not be set in a cache directory's file; else KC_OK. */
int kc_config_dir_file_ok_(int id, const char *where);

/** Free a kc_config from kc_config_load_; accepts NULL. */
void kc_config_free_(kc_config *c);

/**
 * Check `value` for setting `id` and, when it is good, make it the value with `origin` and
 * `where` (may be NULL); `name` is what an error names.  An empty value of a type that is not a
 * string is an error.  Callers: config/, cache/cache.c (a value just written to the file).
 */
int kc_config_set_(kc_config *c, int id, const char *value, kc_config_origin origin, const char *where,
                   const char *name);

/* ---- config/file.c: configuration files ---- */

/** How a file's settings are applied (file.c calls it for each good line). */
typedef int (*kc_config_apply_fn)(kc_config *c, int id, const char *value, const char *where, void *ctx);

/**
 * Read the configuration file `path` (KC_MISS when absent) and call `apply` for each setting, in
 * order, with "PATH:LINE" as `where`; an unknown key, an environment-only one, or a line that is
 * not `key = value` is an error naming PATH:LINE.  `inside_cache`: the file is in the cache
 * directory (a symbolic link is refused, and a file that another user owns or may write is an
 * error).  Callers: config.c.
 */
int kc_config_file_read_(const char *path, int inside_cache, kc_config *c, kc_config_apply_fn apply, void *ctx);

/**
 * An older directory's v1/record: its "max_size" as the cache directory's setting when its
 * kcache.conf does not name one (the record's toolchain "pin" is read at its use, by
 * cache/toolchain_choice.c).  Best effort: a record that cannot
 * be read is none.  Callers: config.c.
 */
void kc_config_record_read_(const char *dir, kc_config *c, kc_config_apply_fn apply, void *ctx);

#endif
