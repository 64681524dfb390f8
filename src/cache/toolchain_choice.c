/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolchain_choice.c — which toolchain's entries a cache's lookups use, decided without
 * loading NVRTC, and what a host may compile.
 *
 * The one idea: the toolchain part of a key is an identity, and a host needs no compiler to
 * know it.  In order: a pin (the `toolchain` setting: KCACHE_TOOLCHAIN, then the cache
 * directory's kcache.conf or the system file; then the "pin" an older kcache wrote in the
 * record); this host's NVRTC,
 * identified from its file (compile/toolchain.c) — with a read-write cache the identity is
 * memoised in the record under the file's device, inode, size, mtime and ctime, so a warm
 * process opens no libnvrtc* file at all (ccache's compiler_check=mtime, made stricter);
 * and on a host without NVRTC, the toolchain the record says stored the entries ("toolchain.
 * <id>", written when a compile stores an entry and by import) — only when it names exactly
 * one: with several, which one is the caller's to say (a pin), never ours to guess.
 *
 * Record fields (record.c has the grammar):
 *   pin=<id>                         the pinned toolchain (an older `kcache toolchain --pin`; the
 *                                    pin is written to kcache.conf's `toolchain` now)
 *   toolchain.<id>=<META string>     a toolchain whose entries were stored here
 *   nvrtc.file.<16 hex>=<dev> <ino> <size> <mtime_ns> <ctime_ns> <id> <path>
 *                                    the memo of a library file's identity (16 hex: XXH3-64
 *                                    of the path); at most MEMO_MAX of them, oldest dropped
 *
 * A pinned or recorded identity never reaches a compiler that is not that toolchain: a miss
 * compiles only when the local NVRTC is the toolchain the key names
 * (kc_cache_toolchain_can_compile_), so an entry is always stored under its compiler's name.
 *
 * Callers: graph/graph_key.c (the key), graph/lookup.c (may a miss compile; what was
 * stored), bundle/bundle.c (what was imported), the CLI (`kcache toolchain`).
 * Must not: dlopen NVRTC; fail a lookup because the record is unreadable (it is then empty).
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "../common/internal.h"
#include "internal.h"
#include "record.h"

#define MEMO_PREFIX "nvrtc.file."
#define MEMO_MAX 16
#define TC_PREFIX "toolchain."

static const char *how_of(kc_toolchain_from f) {
    switch (f) {
    case KC_TOOLCHAIN_PIN_ENV: return "pinned by KCACHE_TOOLCHAIN";
    case KC_TOOLCHAIN_PIN: return "pinned in the cache's record";
    case KC_TOOLCHAIN_LOCAL: return "this host's NVRTC";
    case KC_TOOLCHAIN_RECORDED: return "recorded in the cache; no NVRTC on this host";
    }
    return "?";
}

/* ---- the process's memo: one choice per cache directory ("" for no cache) ---- */

typedef struct memo {
    char dir[PATH_MAX]; /* the directory, the pin's layer and the pin (memo_find's key) */
    kc_toolchain_choice choice;
} memo;
static memo memos[8];
static size_t nmemo, next_memo;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *dir_of(kc_cache *c) {
    return c && kc_cache_mode(c) != KC_CACHE_DISABLED && kc_cache_local_(c) ? kc_local_root(kc_cache_local_(c)) : "";
}

/* The memo's key "<dir>\n<layer>\n<pin>" into mkey[PATH_MAX] by copies (every lookup forms it; snprintf
 * cost a hit a thousand instructions); "" when it does not fit: never a key a choice is stored under. */
static void memo_key(char *mkey, const char *dir, kc_config_origin from, const char *pin) {
    size_t dl = strlen(dir), pl = strlen(pin);
    char layer[12], *l = layer + sizeof layer; /* the layer in decimal, as "%d" wrote it */
    unsigned v = (unsigned)from < 1000000u ? (unsigned)from : 0u;
    do *--l = (char)('0' + v % 10), v /= 10;
    while (v);
    size_t ll = (size_t)(layer + sizeof layer - l);
    if ((unsigned)from >= 1000000u || dl + ll + pl + 3 > PATH_MAX) {
        mkey[0] = '\0';
        return;
    }
    char *p = mkey;
    memcpy(p, dir, dl), p += dl, *p++ = '\n';
    memcpy(p, l, ll), p += ll, *p++ = '\n';
    memcpy(p, pin, pl + 1);
}

static int memo_find(const char *dir, kc_toolchain_choice *out) {
    int found = 0;
    pthread_mutex_lock(&memo_mu);
    for (size_t i = 0; i < nmemo && i < KC_ARRAY_LEN(memos) && !found; i++)
        if (strcmp(memos[i].dir, dir) == 0) *out = memos[i].choice, found = 1;
    pthread_mutex_unlock(&memo_mu);
    return found;
}

static void memo_put(const char *dir, const kc_toolchain_choice *ch) {
    if (strlen(dir) >= PATH_MAX) return;
    pthread_mutex_lock(&memo_mu);
    memo *m = nmemo < KC_ARRAY_LEN(memos) ? &memos[nmemo++] : &memos[next_memo++ % KC_ARRAY_LEN(memos)];
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->choice = *ch;
    pthread_mutex_unlock(&memo_mu);
}

static int choose(kc_toolchain_choice *out, const char *id, kc_toolchain_from from) {
    if (strlen(id) >= sizeof out->id) return kc_err(KC_EINVAL, "toolchain identity too long");
    snprintf(out->id, sizeof out->id, "%s", id);
    out->from = from;
    out->how = how_of(from);
    return KC_OK;
}

/* ---- this host's NVRTC, through the record's memo ---- */

static void memo_name(const char *path, char name[sizeof MEMO_PREFIX + 16]) {
    snprintf(name, sizeof MEMO_PREFIX + 16, MEMO_PREFIX "%016llx", (unsigned long long)XXH3_64bits(path, strlen(path)));
}

/* The identity the record's memo holds for `path` as it is now (stat), or 0. */
static int memo_lookup(const kc_record *r, const char *path, char id[KC_TOOLCHAIN_ID_MAX]) {
    char name[sizeof MEMO_PREFIX + 16];
    memo_name(path, name);
    const char *v = kc_record_find_(r, name);
    struct stat st;
    if (!v || stat(path, &st) != 0) return 0;
    unsigned long long dev, ino, size;
    long long mt, ct;
    int used = 0;
    char mid[KC_TOOLCHAIN_ID_MAX];
    if (sscanf(v, "%llu %llu %llu %lld %lld %143s %n", &dev, &ino, &size, &mt, &ct, mid, &used) != 6 || !used ||
        strcmp(v + used, path) != 0 || kc_toolchain_id_check(mid) != KC_OK)
        return 0;
    if (dev != (unsigned long long)st.st_dev || ino != (unsigned long long)st.st_ino ||
        size != (unsigned long long)st.st_size ||
        mt != (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec ||
        ct != (long long)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec)
        return 0;
    memcpy(id, mid, sizeof mid);
    return 1;
}

static void memo_write(kc_cache *c, const kc_toolchain *t) {
    if (!c || kc_cache_mode(c) != KC_CACHE_READWRITE || strchr(t->path, '\n')) return;
    char name[sizeof MEMO_PREFIX + 16], value[KC_TOOLCHAIN_ID_MAX + 4200];
    memo_name(t->path, name);
    snprintf(value, sizeof value, "%llu %llu %llu %lld %lld %s %s", t->dev, t->ino, t->size, t->mtime_ns, t->ctime_ns,
             t->id, t->path);
    if (kc_record_set_(c, name, value, MEMO_PREFIX, MEMO_MAX) != KC_OK)
        kc_log(KC_LOG_STORE, "toolchain memo not written: %s", kc_error_last()->message);
}

/* This host's identity: KC_OK, or KC_ENONVRTC with the reason in why. */
static int local_id(kc_cache *c, const kc_record *r, char id[KC_TOOLCHAIN_ID_MAX], char *why, size_t wcap) {
    kc_toolchain t;
    char path[PATH_MAX];
    int rc = kc_toolchain_locate(path, sizeof path);
    if (rc == KC_OK && r && memo_lookup(r, path, id)) return KC_OK;
    if (rc == KC_OK) rc = kc_toolchain_local(&t); /* the located file, opened once per process */
    if (rc == KC_OK) {
        memcpy(id, t.id, KC_TOOLCHAIN_ID_MAX);
        memo_write(c, &t);
        return KC_OK;
    }
    snprintf(why, wcap, "%s", kc_error_last()->message);
    return KC_ENONVRTC;
}

/* No NVRTC here: the one toolchain the record (NULL: none) says stored the entries, or why not. */
static int recorded_choice(const kc_record *r, const char *dir, const char *why, kc_toolchain_choice *out) {
    size_t n = 0, first = 0;
    int rc;
    kc_buf list = {0};
    for (size_t i = 0; r && i < r->n; i++)
        if (strncmp(r->name[i], TC_PREFIX, strlen(TC_PREFIX)) == 0 &&
            kc_toolchain_id_check(r->name[i] + strlen(TC_PREFIX)) == KC_OK) {
            if (!n++) first = i;
            if (n <= 4) kc_buf_printf(&list, "%s%s", n > 1 ? ", " : "", r->name[i] + strlen(TC_PREFIX));
        }
    if (n == 1) rc = choose(out, r->name[first] + strlen(TC_PREFIX), KC_TOOLCHAIN_RECORDED);
    else if (n == 0)
        rc = kc_err(KC_ENONVRTC,
                    "%s; and %s%s%s: set KCACHE_NVRTC to NVRTC's library, or pin the toolchain that "
                    "stored the entries with KCACHE_TOOLCHAIN=<id> (kcache toolchain prints it where they were made)",
                    why, *dir ? "the cache '" : "no cache records a toolchain", dir,
                    *dir ? "' records no toolchain whose entries to use" : "");
    else
        rc = kc_err(KC_ENONVRTC,
                    "%s; and the cache '%s' records %zu toolchains (%s%s): kcache does not guess whose "
                    "entries to use — pin one with KCACHE_TOOLCHAIN=<id> or `kcache toolchain --pin <id>`",
                    why, dir, n, list.failed || !list.data ? "" : (const char *)list.data, n > 4 ? ", …" : "");
    kc_buf_free(&list);
    return rc;
}

int kc_cache_toolchain(kc_cache *c, kc_toolchain_choice *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_cache_toolchain: NULL argument");
    memset(out, 0, sizeof *out);
    const char *dir = dir_of(c);
    int rc;
    const kc_config *cfg = c ? kc_cache_config(c) : kc_config_process();
    kc_config_origin from = cfg->origin[KC_CONFIG_toolchain]; /* the environment (or options) first, then a file */
    /* The memo's key: the directory and this handle's pin and its layer (two handles on one
     * directory may pin differently: each gets its own choice, never the other's). */
    char mkey[PATH_MAX];
    memo_key(mkey, dir, from, cfg->v.toolchain);
    if (mkey[0] && memo_find(mkey, out)) return KC_OK;
    const char *env = from >= KC_ORIGIN_ENVIRONMENT ? cfg->v.toolchain : "";
    if (env && *env) {
        /* who pinned it, as errors name it: the variable, or "kc_options.settings[0] toolchain" */
        const char *w = cfg->where[KC_CONFIG_toolchain];
        char by[200];
        snprintf(by, sizeof by, "%.150s%s", from == KC_ORIGIN_OPTIONS && w ? w : "KCACHE_TOOLCHAIN",
                 from == KC_ORIGIN_OPTIONS && w ? " toolchain" : "");
        if ((rc = kc_toolchain_id_check(env))) return kc_err_prefix(rc, "%s", by);
        rc = choose(out, env, KC_TOOLCHAIN_PIN_ENV);
        if (!rc && from == KC_ORIGIN_OPTIONS) out->how = "pinned by the setting toolchain (kc_options.settings)";
        if (!rc && mkey[0]) memo_put(mkey, out);
        return rc;
    }
    kc_record r;
    int have = *dir && kc_record_load_(c, &r) == KC_OK; /* an unreadable record is an empty one */
    /* kcache.conf's (or the system file's) pin, then the one an older kcache kept in the record */
    const char *pin = cfg->v.toolchain[0] ? cfg->v.toolchain : have ? kc_record_find_(&r, "pin") : NULL;
    char id[KC_TOOLCHAIN_ID_MAX], why[1400] = "";
    if (pin) {
        rc = kc_toolchain_id_check(pin) ? kc_err(KC_EINVAL,
                                                 "the cache '%s' pins '%.200s', which is not a toolchain identity "
                                                 "(kcache toolchain --unpin)",
                                                 dir, pin)
                                        : choose(out, pin, KC_TOOLCHAIN_PIN);
    } else if (local_id(c, have ? &r : NULL, id, why, sizeof why) == KC_OK) {
        rc = choose(out, id, KC_TOOLCHAIN_LOCAL);
    } else { /* no NVRTC here: the toolchain that stored the entries, if the record names one */
        rc = recorded_choice(have ? &r : NULL, dir, why, out);
    }
    if (have) kc_record_free_(&r);
    if (!rc && mkey[0]) memo_put(mkey, out);
    return rc;
}

int kc_cache_toolchain_can_compile_(const kc_toolchain_choice *choice) {
    kc_toolchain t;
    if (kc_toolchain_local(&t) != KC_OK)
        return kc_err(KC_ENONVRTC, "not in the cache, and compiling needs NVRTC: %s", kc_error_last()->message);
    if (strcmp(t.id, choice->id) != 0)
        return kc_err(KC_ENONVRTC,
                      "keys use the toolchain %s (%s), but this host's NVRTC is %s (%s): it cannot compile "
                      "entries for that toolchain (unpin it — KCACHE_TOOLCHAIN, kcache toolchain --unpin — to compile "
                      "with this NVRTC)",
                      choice->id, choice->how, t.id, t.path);
    return KC_OK;
}

/* ---- what stored entries here ---- */

static struct {
    char dir[PATH_MAX];
    char id[KC_TOOLCHAIN_ID_MAX];
} noted[16];
static size_t nnoted;

void kc_cache_toolchain_note_(kc_cache *c, const char *meta) {
    char id[KC_TOOLCHAIN_ID_MAX], name[sizeof TC_PREFIX + KC_TOOLCHAIN_ID_MAX];
    const char *dir = dir_of(c);
    if (!*dir || !meta || kc_cache_mode(c) != KC_CACHE_READWRITE || kc_toolchain_id_of_meta(meta, id) != KC_OK) return;
    pthread_mutex_lock(&memo_mu);
    int seen = 0;
    for (size_t i = 0; i < nnoted && i < KC_ARRAY_LEN(noted) && !seen; i++)
        seen = strcmp(noted[i].dir, dir) == 0 && strcmp(noted[i].id, id) == 0;
    pthread_mutex_unlock(&memo_mu);
    if (seen) return;
    snprintf(name, sizeof name, TC_PREFIX "%s", id);
    kc_record r;
    int have = kc_record_load_(c, &r) == KC_OK, present = have && kc_record_find_(&r, name);
    if (have) kc_record_free_(&r);
    if (!present && kc_record_set_(c, name, meta, NULL, 0) != KC_OK) {
        kc_log(KC_LOG_STORE, "the toolchain of stored entries was not recorded: %s", kc_error_last()->message);
        return;
    }
    pthread_mutex_lock(&memo_mu);
    size_t k = nnoted++ % KC_ARRAY_LEN(noted);
    snprintf(noted[k].dir, sizeof noted[k].dir, "%s", dir);
    memcpy(noted[k].id, id, sizeof id);
    pthread_mutex_unlock(&memo_mu);
}

/* ---- the toolkit headers that stored entries used ---- */

void kc_cache_toolkit_note_(kc_cache *c, const char *meta) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[33]; /* the last digest recorded by this process (most processes have one) */
    const char *h = meta ? strstr(meta, " headers ") : NULL;
    if (!h || kc_cache_mode(c) != KC_CACHE_READWRITE) return;
    h += 9;
    if (strlen(h) != 32 || strspn(h, "0123456789abcdef") != 32) return;
    pthread_mutex_lock(&mu);
    int seen = strcmp(last, h) == 0;
    pthread_mutex_unlock(&mu);
    if (seen) return;
    char name[sizeof KC_TOOLKIT_RECORD_PREFIX + 33];
    snprintf(name, sizeof name, KC_TOOLKIT_RECORD_PREFIX "%s", h);
    kc_record r;
    int have = kc_record_load_(c, &r) == KC_OK, present = have && kc_record_find_(&r, name);
    if (have) kc_record_free_(&r);
    if (!present && kc_record_set_(c, name, "1", NULL, 0) != KC_OK) {
        kc_log(KC_LOG_STORE, "the toolkit headers of stored entries were not recorded: %s", kc_error_last()->message);
        return;
    }
    pthread_mutex_lock(&mu);
    memcpy(last, h, 33);
    pthread_mutex_unlock(&mu);
}
