/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hiredis_lib.c — hiredis loaded on demand ([Note: hiredis on demand] in src/store/redis_lib.c).
 *
 * The one idea: each case runs in a fresh child process (whether libhiredis is loaded is a fact of
 * the process), and this test does not link libhiredis itself, so "loaded" can only mean the library
 * loaded it.  A warm start loads nothing; the first redis:// remote loads it; a host without it
 * keeps its local hits and gets a clear error, naming the library and not the URL's password, from
 * exactly the redis remote; a hiredis the dynamic linker does not find is looked for in the folder
 * of the one built against.  Needs NVRTC (one compile), no GPU, no server (opening a back end does
 * not connect).
 */
#include <dlfcn.h>
#include <unistd.h>

#include "kcache.h"
#include "kcache/sys/store.h"
#include "store/redis_lib.h"
#include "helpers.h"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "hiredis")

static const char url_with_password[] = "redis://kc:hunter2-secret@127.0.0.1:1/";

static kc_cache *open_here(const char *remote) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.remote = remote;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    return kc_cache_open(&c, &o) == KC_OK ? c : NULL;
}

static int loaded_in_process(void) {
    void *h = dlopen(kc_hiredis_soname_(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* kernels/softmax.json compiled for sm_90 in the cache here: KC_OK, or where it came from in *source. */
static int softmax(kc_cache *c, int *source) {
    char p[512];
    snprintf(p, sizeof p, "%s/softmax.json", KC_KERNELS_DIR);
    kc_graph_desc *d = NULL;
    int rc = kc_graph_desc_load(&d, p);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (!rc) rc = kc_graph_compile(c, d, "sm_90", &info);
    kc_graph_desc_free(d);
    *source = info.source;
    return rc;
}

static int compile_softmax(void) {
    kc_cache *c = open_here(NULL);
    int source, rc = c ? softmax(c, &source) : KC_ERROR;
    if (rc == KC_ENONVRTC) return 77; /* no NVRTC here: the cases are skipped */
    if (rc != KC_OK) return 1;
    kc_cache_close(c);
    return loaded_in_process() ? 2 : 0; /* a compile opens no redis remote either */
}

static int warm_start_then_a_remote(void) {
    if (loaded_in_process()) return 1; /* this test links no libhiredis */
    kc_cache *c = open_here(NULL);
    int source;
    if (!c || softmax(c, &source) != KC_OK || source != KC_FROM_DISK) return 2;
    if (loaded_in_process() || kc_hiredis_) return 3; /* a warm start loads no hiredis */
    kc_cache_close(c);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_OK) return 4;
    if (!loaded_in_process() || !kc_hiredis_) return 5; /* the first redis remote loads it */
    b->free(b);
    return 0;
}

static int have_nvrtc = 1; /* the parent's finding, inherited by each child */

static int without_hiredis(void) {
    kc_hiredis_use_soname_("libkcache-test-no-such-hiredis.so.9", dir);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_EUNAVAILABLE || b) return 1;
    const char *m = kc_error_last()->message;
    if (!strstr(m, "libkcache-test-no-such-hiredis.so.9 could not be loaded")) return 2;
    if (!strstr(m, "apt-get install libhiredis")) return 3;
    if (!strstr(m, "redis://kc:") || strstr(m, "hunter2")) return 4; /* where, never the password */
    if (open_here(url_with_password) || kc_error_last()->code != KC_EUNAVAILABLE) return 5;
    m = kc_error_last()->message; /* the message through kc_cache_open, still without the password */
    if (!strstr(m, "needs hiredis") || strstr(m, "hunter2")) return 6;
    if (!have_nvrtc) return 0;
    kc_cache *c = open_here(NULL);
    int source; /* a local hit needs no hiredis */
    if (!c || softmax(c, &source) != KC_OK || source != KC_FROM_DISK) return 7;
    kc_cache_close(c);
    return 0;
}

/* hiredis under another name, in a folder of its own that the dynamic linker does not search: found
 * there when that is the folder of the hiredis built against (the library's fallback), not without. */
static int beside_the_one_built_against(void) {
    char lib[600];
    snprintf(lib, sizeof lib, "%s/libkcache-test-beside.so.9", dir);
    if (symlink(KC_TEST_HIREDIS_FILE, lib) != 0) return 1;
    kc_hiredis_use_soname_("libkcache-test-beside.so.9", dir);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_OK || !kc_hiredis_) return 2;
    b->free(b);
    return 0;
}

/* The same in a folder that others may write: not loaded, and said so. */
static int not_from_a_folder_others_write(void) {
    char d[600], lib[700];
    snprintf(d, sizeof d, "%s/open", dir);
    snprintf(lib, sizeof lib, "%s/libkcache-test-beside.so.9", d);
    if (mkdir(d, 0700) != 0 || chmod(d, 0777) != 0 || symlink(KC_TEST_HIREDIS_FILE, lib) != 0) return 1;
    kc_hiredis_use_soname_("libkcache-test-beside.so.9", d);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_EUNAVAILABLE || b || kc_hiredis_) return 2;
    return strstr(kc_error_last()->message, "is not root's or ours alone") ? 0 : 3;
}

/* A copy of `from` at `to` (mode 0600). */
static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = in && out ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, in)) > 0) rc = fwrite(buf, 1, n, out) == n ? 0 : -1;
    if (in) fclose(in);
    if (out && fclose(out) != 0) rc = -1;
    return rc;
}

/* The same in a folder of ours, but a file that others may write (a copy, not a link to root's). */
static int not_a_file_others_write(void) {
    char d[600], lib[700];
    snprintf(d, sizeof d, "%s/grp", dir);
    snprintf(lib, sizeof lib, "%s/libkcache-test-beside.so.9", d);
    if (mkdir(d, 0700) != 0 || copy_file(KC_TEST_HIREDIS_FILE, lib) != 0 || chmod(lib, 0664) != 0) return 1;
    kc_hiredis_use_soname_("libkcache-test-beside.so.9", d);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_EUNAVAILABLE || b || kc_hiredis_) return 2;
    return strstr(kc_error_last()->message, "is not root's or ours alone") ? 0 : 3;
}

/* A name whose linker's message fills the error's buffer, found beside and not a library: the
 * message is cut, never written past (ASan watches). */
static int a_long_name(void) {
    char rel[1024] = "", p[1200];
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(rel);
        snprintf(rel + n, sizeof rel - n, "%s%0200d", i ? "/" : "", i);
        snprintf(p, sizeof p, "%s/%s", dir, rel);
        if (mkdir(p, 0700) != 0) return 1;
    }
    size_t n = strlen(rel);
    snprintf(rel + n, sizeof rel - n, "/libkcache-test-long.so.9");
    if (kct_put(dir, rel, "not a library\n") != 0) return 2;
    static char name[1024];
    snprintf(name, sizeof name, "%s", rel);
    kc_hiredis_use_soname_(name, dir);
    kc_store_backend *b = NULL;
    if (kc_store_open_url(&b, url_with_password, NULL) != KC_EUNAVAILABLE || b || kc_hiredis_) return 3;
    return strstr(kc_error_last()->message, "could not be loaded") ? 0 : 4;
}

static int nowhere_else(void) {
    char lib[600];
    snprintf(lib, sizeof lib, "%s/libkcache-test-beside.so.9", dir);
    if (symlink(KC_TEST_HIREDIS_FILE, lib) != 0 && errno != EEXIST) return 1;
    kc_hiredis_use_soname_("libkcache-test-beside.so.9", NULL);
    kc_store_backend *b = NULL;
    return kc_store_open_url(&b, url_with_password, NULL) == KC_EUNAVAILABLE && !b && !kc_hiredis_ ? 0 : 2;
}

static void test_a_warm_start_loads_no_hiredis(void **state) {
    (void)state;
    int rc = kct_in_child(compile_softmax);
    if (rc == 77) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(kct_in_child(warm_start_then_a_remote), 0);
}

static void test_without_hiredis_only_a_redis_remote_fails(void **state) {
    (void)state;
    int rc = kct_in_child(compile_softmax);
    have_nvrtc = rc != 77; /* without NVRTC, all but the local hit */
    assert_true(rc == 0 || rc == 77);
    assert_int_equal(kct_in_child(without_hiredis), 0);
}

static void test_found_in_the_folder_built_against(void **state) {
    (void)state;
    assert_non_null(kc_hiredis_dir_());
    assert_string_equal(kc_hiredis_dir_(), KC_TEST_HIREDIS_DIR); /* the folder the build found it in */
    const char *file = KC_TEST_HIREDIS_FILE;
    size_t n = strlen(file);
    if (n > 2 && !strcmp(file + n - 2, ".a")) skip(); /* a static hiredis: nothing to load */
    assert_int_equal(kct_in_child(beside_the_one_built_against), 0);
    assert_int_equal(kct_in_child(not_from_a_folder_others_write), 0);
    assert_int_equal(kct_in_child(not_a_file_others_write), 0);
    assert_int_equal(kct_in_child(a_long_name), 0);
    assert_int_equal(kct_in_child(nowhere_else), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_warm_start_loads_no_hiredis, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_hiredis_only_a_redis_remote_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_found_in_the_folder_built_against, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
