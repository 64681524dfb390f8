/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crypto.c — libcrypto loaded on demand ([Note: libcrypto on demand] in src/common/crypto.c).
 *
 * The one idea: each case runs in a fresh child process (whether libcrypto is loaded is a fact
 * of the process), and this test does not link libcrypto itself, so "loaded" can only mean the
 * library loaded it.  A warm start — a cache opened, a graph found compile-only — loads nothing;
 * the first SHA-256 loads it; a host without it gets clear errors from exactly the calls that
 * need it and keeps its local hits.  Needs NVRTC (one compile), no GPU.
 */
#include <dlfcn.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/internal.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "crypto")

static kc_cache *open_here(void) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    return kc_cache_open(&c, &o) == KC_OK ? c : NULL;
}

static int loaded_in_process(void) {
    void *h = dlopen(kc_crypto_soname_(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* The cache here and kernels/softmax.json: 0, or -1 when either could not be had. */
static int cache_and_softmax(kc_cache **c, kc_graph_desc **d) {
    char p[512];
    snprintf(p, sizeof p, "%s/softmax.json", KC_KERNELS_DIR);
    *d = NULL;
    *c = open_here();
    return *c && kc_graph_desc_load(d, p) == KC_OK ? 0 : -1;
}

static int compile_softmax(void) {
    kc_cache *c;
    kc_graph_desc *d;
    if (cache_and_softmax(&c, &d)) return 1;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(c, d, "sm_90", &info) != KC_OK) return 2;
    if (!kc_crypto_loaded()) return 3; /* an image reference's SHA-256 was written */
    kc_graph_desc_free(d);
    kc_cache_close(c);
    return 0;
}

static int warm_start(void) {
    if (loaded_in_process()) return 1; /* this test links no libcrypto */
    kc_cache *c;
    kc_graph_desc *d;
    if (cache_and_softmax(&c, &d)) return 2;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(c, d, "sm_90", &info) != KC_OK || info.source != KC_FROM_DISK) return 3;
    if (kc_crypto_loaded() || loaded_in_process()) return 4; /* a warm start loads no libcrypto */
    kc_image_ref r;
    static const char bytes[] = "an image";
    if (kc_image_ref_make(&r, "sm_90", 0, bytes, sizeof bytes) != KC_OK) return 5;
    if (!kc_crypto_loaded() || !loaded_in_process()) return 6; /* the first SHA-256 loads it */
    kc_graph_desc_free(d);
    kc_cache_close(c);
    return 0;
}

static int without_libcrypto(void) {
    kc_crypto_use_soname_("libkcache-test-no-such-crypto.so.9");
    kc_cache *c;
    kc_graph_desc *d;
    if (cache_and_softmax(&c, &d)) return 1;
    kc_graph_info info = KC_GRAPH_INFO_INIT; /* a local hit needs no cryptography */
    if (kc_graph_compile(c, d, "sm_90", &info) != KC_OK || info.source != KC_FROM_DISK) return 2;
    kc_image_ref r;
    static const char bytes[] = "an image";
    if (kc_image_ref_make(&r, "sm_90", 0, bytes, sizeof bytes) != KC_ERROR) return 3;
    if (!strstr(kc_error_last()->message, "libkcache-test-no-such-crypto.so.9 could not be loaded")) return 4;
    uint8_t key[32] = {1};
    static const uint8_t junk[200] = {0};
    if (kc_entry_mac_check(junk, sizeof junk, key, sizeof key) == KC_OK) return 5;
    char prefix[4200], id[17];
    snprintf(prefix, sizeof prefix, "%s/k", dir);
    if (kc_sign_keygen(prefix, id) != KC_ERROR || !strstr(kc_error_last()->message, "could not be loaded")) return 6;
    kc_graph_desc_free(d);
    kc_cache_close(c);
    return 0;
}

static void test_a_warm_start_loads_no_libcrypto(void **state) {
    (void)state;
    assert_int_equal(kct_in_child(compile_softmax), 0);
    assert_int_equal(kct_in_child(warm_start), 0);
}

static void test_without_libcrypto_only_its_calls_fail(void **state) {
    (void)state;
    assert_int_equal(kct_in_child(compile_softmax), 0);
    assert_int_equal(kct_in_child(without_libcrypto), 0);
}

/* The lookup every library opened on demand shares: all slots set, or the first missing name and none. */
static void test_dl_table(void **state) {
    (void)state;
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(libc);
    void *a = NULL, *b = NULL;
    kc_dl_sym all[] = {{&a, "malloc"}, {&b, "free"}};
    assert_null(kc_dl_table(libc, all, 2));
    assert_non_null(a);
    assert_non_null(b);
    kc_dl_sym one_missing[] = {{&a, "malloc"}, {&b, "kcache_test_no_such_function"}};
    assert_string_equal(kc_dl_table(libc, one_missing, 2), "kcache_test_no_such_function");
    assert_null(a); /* none set when one is missing */
    dlclose(libc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_warm_start_loads_no_libcrypto, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_libcrypto_only_its_calls_fail, setup, teardown),
        cmocka_unit_test(test_dl_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
