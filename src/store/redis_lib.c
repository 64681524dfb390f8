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
#include <fcntl.h>
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

/* Whether a file or folder of stat `st` is root's or ours, and writable by no one else. */
static bool owned_safely(const struct stat *st) {
    return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Append to why[] (which n bytes hold), cut at its end. */
static int why_add(int n, const char *fmt, const char *a, const char *b) {
    if (n < 0 || (size_t)n >= sizeof why - 1) return n;
    int m = snprintf(why + n, sizeof why - (size_t)n, fmt, a, b);
    return m < 0 ? n : n + m; /* past the end when cut: the next call writes nothing */
}

/* The file `soname` in `beside_dir`, loaded through descriptors (so that what was checked is what is
 * loaded: a link or folder swapped in between changes nothing) when that folder and the file are
 * root's or ours alone; NULL with why[] told why past its n bytes. */
static void *open_beside(int n) {
    char beside[1024], self[64];
    if (snprintf(beside, sizeof beside, "%s/%s", beside_dir, soname) >= (int)sizeof beside) return NULL;
    int dfd = open(beside_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fd = dfd < 0 ? -1 : openat(dfd, soname, O_RDONLY | O_CLOEXEC);
    struct stat ds, fs;
    void *h = NULL;
    if (fd < 0) { /* not there either: the linker's message says enough */
    } else if (fstat(dfd, &ds) != 0 || fstat(fd, &fs) != 0 || !S_ISREG(fs.st_mode) || !owned_safely(&ds) ||
               !owned_safely(&fs)) {
        why_add(n, "; %s%s is not root's or ours alone: not loaded", beside, "");
    } else {
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        h = dlopen(self, RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        if (e) why_add(n, "; %s: %s", beside, e);
    }
    if (fd >= 0) close(fd);
    if (dfd >= 0) close(dfd);
    return h;
}

/* The soname as the dynamic linker finds it; else the file of that name in the folder of the hiredis
 * found at build time (a prefix of its own: Spack, conda, /opt), where a linked library would have
 * found it by its run path — when that folder and file are root's or ours and no one else may write
 * them (a build folder on another host could be anyone's).  Never another soname: a reply's layout
 * differs between versions. */
static void *open_lib(void) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *e = h ? NULL : dlerror();
    int n = why_add(0, "%s%s", e ? e : "unknown error", "");
    return h || !beside_dir ? h : open_beside(n);
}

/* Whether the library's reader makes of a known reply what kcache reads of it, in the layout of the
 * headers built against (redisReply's fields): a library of the same name but another layout would
 * have every reply misread. */
static bool reply_as_built(const char *wire, bool array) {
    redisReader *r = api.reader_create();
    void *out = NULL;
    bool ok = r && api.reader_feed(r, wire, strlen(wire)) == REDIS_OK && api.reader_get_reply(r, &out) == REDIS_OK;
    const redisReply *a = out;
    if (!array) /* a string's fields lie within the smallest layout: read first, the array's only after */
        ok = ok && a && a->type == REDIS_REPLY_STRING && a->len == 2 && a->str && memcmp(a->str, "ab", 2) == 0;
    else
        ok = ok && a && a->type == REDIS_REPLY_ARRAY && a->elements == 2 &&
             a->element[0]->type == REDIS_REPLY_INTEGER && a->element[0]->integer == 7 &&
             a->element[1]->type == REDIS_REPLY_STRING && a->element[1]->len == 2 &&
             memcmp(a->element[1]->str, "ab", 2) == 0;
    if (out) api.free_reply(out);
    if (r) api.reader_free(r);
    return ok;
}
static bool replies_as_built(void) {
    return reply_as_built("$2\r\nab\r\n", false) && reply_as_built("*2\r\n:7\r\n$2\r\nab\r\n", true);
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
    if (missing || !replies_as_built()) {
        if (missing) snprintf(why, sizeof why, "the library loaded as %s has no %s", soname, missing);
        else
            snprintf(why, sizeof why, "the library loaded as %s does not lay out a reply as the hiredis built against",
                     soname);
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
