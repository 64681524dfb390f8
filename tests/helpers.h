/* SPDX-License-Identifier: Apache-2.0 */
/*
 * helpers.h — what the tests share: temporary directories, removing trees, small
 * file helpers, and the skip code.  Header-only so each test stays one file.
 */
#ifndef KC_TEST_HELPERS_H
#define KC_TEST_HELPERS_H

#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static int kct_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/** Remove a tree (like rm -rf). */
static inline void kct_rmtree(const char *path) { nftw(path, kct_rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

/** A fresh private temporary directory; the caller frees the string and the tree. */
static inline char *kct_tmpdir(const char *tag) {
    char tmpl[256];
    const char *base = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/kctest-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

/** The cmocka setup and teardown of a test whose cases each get a fresh private folder in `var`
 *  (made by kct_tmpdir(tag) before a case; removed and freed after it). */
#define KCT_TMPDIR_FIXTURE(var, tag)    \
    static int setup(void **state) {    \
        (void)state;                    \
        var = kct_tmpdir(tag);          \
        return var ? 0 : -1;            \
    }                                   \
    static int teardown(void **state) { \
        (void)state;                    \
        kct_rmtree(var);                \
        free(var);                      \
        var = NULL;                     \
        return 0;                       \
    }

/** Read a whole file into a malloc'ed buffer; NULL if it cannot. */
static inline uint8_t *kct_read(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = b ? (size_t)n : 0;
    return b;
}

static inline int kct_write(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/** Write `text` to dir/rel, making rel's parent folders (0700) first; 0 or -1. */
static inline int kct_put(const char *dir, const char *rel, const char *text) {
    char p[4096];
    int n = snprintf(p, sizeof p, "%s/%s", dir, rel);
    if (n < 0 || (size_t)n >= sizeof p) return -1;
    for (char *q = p + strlen(dir) + 1; (q = strchr(q, '/')); q++) { /* every parent folder */
        *q = '\0';
        mkdir(p, 0700);
        *q = '/';
    }
    return kct_write(p, text, strlen(text));
}

/** Count the files under a directory whose names contain `needle`. */
static size_t kct_count_needle_n;
static const char *kct_count_needle_s;
static int kct_count_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (flag == FTW_F && strstr(p + ftw->base, kct_count_needle_s)) kct_count_needle_n++;
    return 0;
}
static inline size_t kct_count_files(const char *dir, const char *needle) {
    kct_count_needle_n = 0;
    kct_count_needle_s = needle;
    nftw(dir, kct_count_cb, 16, FTW_PHYS);
    return kct_count_needle_n;
}

/** Run `fn` in a child process (for what is a fact of a process: a library loaded, a once-guard):
 *  its exit status (0: every check passed; else the failing check's number), 100 when it died. */
static inline int kct_in_child(int (*fn)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(fn());
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return 100;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/** Graph entries under `dir` ([Note: two levels]: every .kce that is not an image or a unit record). */
static inline size_t kct_count_graphs(const char *dir) {
    return kct_count_files(dir, ".kce") - kct_count_files(dir, ".img.kce") - kct_count_files(dir, ".unit.kce");
}

static uint64_t kct_dir_bytes_n;
static const char *kct_dir_bytes_needle;
static int kct_dir_bytes_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)ftw;
    if (flag == FTW_F && strstr(p, kct_dir_bytes_needle) && !strstr(p, "/quarantine/"))
        kct_dir_bytes_n += (uint64_t)st->st_size;
    return 0;
}

/** Total bytes of the files under `dir` whose path contains `needle` (quarantine excluded). */
static inline uint64_t kct_dir_bytes(const char *dir, const char *needle) {
    kct_dir_bytes_n = 0;
    kct_dir_bytes_needle = needle;
    nftw(dir, kct_dir_bytes_cb, 16, FTW_PHYS);
    return kct_dir_bytes_n;
}

#ifdef KCACHE_H
/** A test key: XXH3 of (label, i) through the real key builder. */
static inline kc_key kct_key(const char *label, int i) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, label, (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_key_builder_free(kb);
    return k;
}

/** A cache in a fresh temporary directory, ignoring the environment (test setup). */
static inline int kct_open_cache(const char *tag, char **dir, kc_cache **cache) {
    *dir = kct_tmpdir(tag);
    if (!*dir) return -1;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = *dir;
    o.flags = KC_OPEN_NO_ENV;
    return kc_cache_open(cache, &o);
}

/** A cache on `dir` (the environment ignored) with the remote `url` (a 2 s deadline) and the trust
 *  given: a signing key file, a keyring, an HMAC key (each may be NULL).  Fails the test if it
 *  cannot be opened. */
static inline kc_cache *kct_open_remote(const char *dir, const char *url, const char *signer, const char *keyring,
                                        const char *mac_key) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = url;
    o.remote_config.deadline_ms = 2000;
    o.signing_key_file = signer;
    o.keyring = keyring;
    if (mac_key) o.hmac_key = mac_key, o.hmac_key_len = strlen(mac_key);
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

/** kernels/<spec> loaded (KC_KERNELS_DIR), with `globals` as its global-state word: a key of its own per case. */
static inline kc_graph_desc *kct_graph(const char *spec, uint64_t globals) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, spec);
    kc_graph_desc *d = NULL;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s: %s", p, kc_error_last()->message);
    kc_graph_set_globals(d, globals);
    return d;
}

/** A cache's counter. */
static inline uint64_t kct_stat(kc_cache *c, kc_stat id) {
    kc_stats s;
    assert_int_equal(kc_cache_stats(c, &s), KC_OK);
    return s.v[id];
}

/** Close it and remove the directory (test teardown). */
static inline int kct_close_cache(char *dir, kc_cache *cache) {
    kc_cache_close(cache);
    kct_rmtree(dir);
    free(dir);
    return 0;
}
#endif

#endif
