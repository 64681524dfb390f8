/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_lib.c — hiredis, opened on demand (redis_lib.h).
 *
 * [Note: hiredis on demand] Linking libhiredis costs every process that links kcache about 0.1 ms
 * before main (measured: an empty main with and without -lhiredis, 0.90 against 0.99 ms, medians
 * of 2000 spawns), a tenth of a bundled warm start's whole time over its floor, for a back end
 * most processes never open.  As libcrypto is ([Note: libcrypto on demand], common/crypto.c), it
 * is not linked: the first redis:// remote (kc_store_redis_open) dlopens the soname of the hiredis
 * version the library was built against (HIREDIS_SONAME in its headers) under a once-guard and
 * looks up the seven functions the back end calls.  A host without it keeps its local hits and
 * every other remote; a redis:// remote is refused at open, saying which library to install.
 *
 * Callers: redis.c, redis_conn.c (kc_hiredis_load), every redis*.c that frees a reply, redis_io.c
 * (formatting, the reader).  Must not: load anything before a redis remote is opened.
 */
#include "redis_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/internal.h"

#define KC_STR_(x) #x
#define KC_STR(x) KC_STR_(x)
#ifdef HIREDIS_SONAME
#define KC_HIREDIS_SOVER KC_STR(HIREDIS_SONAME)
#else /* hiredis before 0.14 named its soname by major.minor */
#define KC_HIREDIS_SOVER KC_STR(HIREDIS_MAJOR) "." KC_STR(HIREDIS_MINOR)
#endif
#define KC_LIBHIREDIS "libhiredis.so." KC_HIREDIS_SOVER

const kc_hiredis_api *kc_hiredis_;
static kc_hiredis_api api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *soname = KC_LIBHIREDIS; /* kc_hiredis_use_soname_: the tests' other library */
#ifdef KC_HIREDIS_DIR
static const char *beside_dir = KC_HIREDIS_DIR;
#else
static const char *beside_dir;
#endif
static char why[512];

/* Whether `path` (followed) is root's or ours, and writable by no one else. */
static bool owned_safely(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* The soname as the dynamic linker finds it; else the file of that name in the folder of the hiredis
 * found at build time (a prefix of its own: Spack, conda, /opt), where a linked library would have
 * found it by its run path — when that folder and file are root's or ours and no one else may write
 * them (a build folder on another host could be anyone's).  Never another soname: a reply's layout
 * differs between versions. */
static void *open_lib(void) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *e = h ? NULL : dlerror();
    int n = snprintf(why, sizeof why, "%s", e ? e : "unknown error");
    char beside[1024];
    if (h || !beside_dir || snprintf(beside, sizeof beside, "%s/%s", beside_dir, soname) >= (int)sizeof beside)
        return h;
    if (access(beside, F_OK) != 0) return NULL; /* not there either: the linker's message says enough */
    if (!owned_safely(beside_dir) || !owned_safely(beside)) {
        snprintf(why + n, sizeof why - (size_t)n, "; %s is not root's or ours alone: not loaded", beside);
        return NULL;
    }
    h = dlopen(beside, RTLD_NOW | RTLD_LOCAL);
    e = h ? NULL : dlerror();
    if (e) snprintf(why + n, sizeof why - (size_t)n, "; %s", e);
    return h;
}

static void load(void) {
    void *h = open_lib();
    if (!h) return;
    const kc_dl_sym fns[] = {
        {(void **)&api.format_argv, "redisFormatCommandArgv"}, {(void **)&api.free_command, "redisFreeCommand"},
        {(void **)&api.reader_create, "redisReaderCreate"},    {(void **)&api.reader_free, "redisReaderFree"},
        {(void **)&api.reader_feed, "redisReaderFeed"},        {(void **)&api.reader_get_reply, "redisReaderGetReply"},
        {(void **)&api.free_reply, "freeReplyObject"},
    };
    const char *missing = kc_dl_table(h, fns, sizeof fns / sizeof fns[0]);
    if (missing) {
        snprintf(why, sizeof why, "the library loaded as %s has no %s", soname, missing);
        dlclose(h);
        return;
    }
    __atomic_store_n(&kc_hiredis_, &api, __ATOMIC_RELEASE); /* the handle stays open for the process */
}

const kc_hiredis_api *kc_hiredis_load(void) {
    const kc_hiredis_api *a = __atomic_load_n(&kc_hiredis_, __ATOMIC_ACQUIRE);
    if (a) return a;
    pthread_once(&once, load);
    a = __atomic_load_n(&kc_hiredis_, __ATOMIC_ACQUIRE);
    if (!a)
        kc_err(KC_EUNAVAILABLE,
               "the redis back end needs hiredis: %s could not be loaded (%s): install it (apt-get install "
               "libhiredis%s)",
               soname, why, KC_HIREDIS_SOVER);
    return a;
}

const char *kc_hiredis_soname_(void) { return KC_LIBHIREDIS; }

const char *kc_hiredis_dir_(void) {
#ifdef KC_HIREDIS_DIR
    return KC_HIREDIS_DIR;
#else
    return NULL;
#endif
}

void kc_hiredis_use_soname_(const char *name, const char *dir) {
    soname = name;
    beside_dir = dir;
}
