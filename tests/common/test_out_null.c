/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_out_null.c — a failed call leaves NULL in `*out` (issue 19): a caller that frees what
 * `*out` holds after an error must never free a stale pointer.  Each case pre-sets `*out`
 * to a sentinel, makes the call fail, and checks NULL — on the argument checks that used
 * to return before `*out` was cleared (kc_compile_kernel, kc_compile_names,
 * kc_wrapper_chain_build, kc_store_redis_open, kc_site_new, kc_cache_open) and on later
 * failures of the same functions; and the argument checks of the entry, description, graph,
 * key and driver calls.
 */
#include "kcache.h"
#include "kcache/sys/store.h"
#include "helpers.h"

#define SENTINEL ((void *)(uintptr_t)0xdeadbeef)

static void test_compile(void **state) {
    (void)state;
    kc_compiled *c = SENTINEL;
    assert_int_not_equal(kc_compile_kernel(NULL, "sm_80", &c), KC_OK);
    assert_null(c);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.source = "extern \"C\" __global__ void f() {}";
    c = SENTINEL; /* no name */
    assert_int_equal(kc_compile_kernel(&k, "sm_80", &c), KC_EINVAL);
    assert_null(c);
    k.name = "f";
    c = SENTINEL; /* no target */
    assert_int_equal(kc_compile_kernel(&k, NULL, &c), KC_EINVAL);
    assert_null(c);
    c = SENTINEL; /* a target that does not parse (or no NVRTC here): fails after the argument checks */
    assert_int_not_equal(kc_compile_kernel(&k, "not-a-target", &c), KC_OK);
    assert_null(c);
    const char *names[] = {"f"};
    kc_kernel_src nosrc = KC_KERNEL_SRC_INIT;
    c = SENTINEL; /* no source */
    assert_int_equal(kc_compile_names(&nosrc, names, 1, "sm_80", &c), KC_EINVAL);
    assert_null(c);
    c = SENTINEL; /* no names */
    assert_int_equal(kc_compile_names(&k, names, 0, "sm_80", &c), KC_EINVAL);
    assert_null(c);
}

static int base_call(void *ctx, kc_forward_call *fc) {
    (void)ctx;
    (void)fc;
    return KC_OK;
}

static void test_wrapper_chain(void **state) {
    (void)state;
    kc_callable base = {base_call, NULL};
    kc_wrapper_chain *ch = SENTINEL;
    assert_int_equal(kc_wrapper_chain_build(&ch, NULL, &base), KC_EINVAL);
    assert_null(ch);
    kc_entry *e = NULL;
    kc_key key = kct_key("out-null", 1);
    assert_int_equal(kc_entry_new(&e, &key, "v"), KC_OK);
    ch = SENTINEL;
    assert_int_equal(kc_wrapper_chain_build(&ch, e, NULL), KC_EINVAL);
    assert_null(ch);
    kc_entry_free(e);
}

static void test_redis_open(void **state) {
    (void)state;
    kc_store_backend *b = SENTINEL;
    assert_int_equal(kc_store_redis_open(&b, NULL, NULL), KC_EINVAL);
    assert_null(b);
    b = SENTINEL; /* a URL that does not parse */
    assert_int_not_equal(kc_store_redis_open(&b, "ftp://nowhere", NULL), KC_OK);
    assert_null(b);
}

static void test_site_and_cache(void **state) {
    (void)state;
    kc_site *s = SENTINEL;
    assert_int_equal(kc_site_new(&s, NULL, NULL, NULL), KC_EINVAL);
    assert_null(s);
    kc_cache *c = SENTINEL;
    kc_options o = KC_OPTIONS_INIT;
    o.version = 999;
    assert_int_not_equal(kc_cache_open(&c, &o), KC_OK);
    assert_null(c);
}

/* The argument checks of the entry, description, graph, key, option and driver calls (each used
 * to return before clearing *out); the driver calls fail here for want of a driver, or of an image. */
static void test_argument_checks(void **state) {
    (void)state;
    kc_key k = {{0}};
    kc_entry *e = SENTINEL;
    assert_int_equal(kc_entry_new(&e, NULL, "sm_90"), KC_EINVAL);
    assert_null(e);
    e = SENTINEL;
    assert_int_equal(kc_entry_decode(&e, NULL, 4), KC_EINVAL);
    assert_null(e);
    void *buf = SENTINEL;
    size_t len = 7;
    assert_int_equal(kc_entry_encode(NULL, &buf, &len), KC_EINVAL);
    assert_null(buf);
    assert_int_equal(len, 0);
    kc_image_ref ref;
    memset(&ref, 0, sizeof ref);
    e = SENTINEL;
    assert_int_equal(kc_image_entry_new(&e, &ref, NULL), KC_EINVAL);
    assert_null(e);
    kc_image_ref *refs = SENTINEL;
    size_t n = 3;
    assert_int_equal(kc_entry_images(NULL, &refs, &n), KC_EINVAL);
    assert_null(refs);
    assert_int_equal(n, 0);
    e = SENTINEL;
    assert_int_equal(kc_unit_entry_new(&e, &k, &ref, NULL, NULL, 0), KC_EINVAL);
    assert_null(e);
    kc_graph_desc *d = SENTINEL;
    assert_int_equal(kc_graph_desc_load(&d, NULL), KC_EINVAL);
    assert_null(d);
    d = SENTINEL;
    assert_int_equal(kc_graph_desc_specialize(&d, NULL, NULL, 0, NULL, 0, NULL), KC_EINVAL);
    assert_null(d);
    kc_graph *g = SENTINEL;
    assert_int_not_equal(kc_graph_get(NULL, NULL, 0, &g, NULL), KC_OK);
    assert_null(g);
    char *dbg = SENTINEL;
    assert_int_equal(kc_key_debug(NULL, &dbg), KC_EINVAL);
    assert_null(dbg);
    kc_module *m = SENTINEL;
    assert_int_not_equal(kc_module_load(&m, 0, NULL, 0), KC_OK);
    assert_null(m);
    void *p = SENTINEL;
    if (kc_cuda_available() != KC_OK) { /* no driver: the allocation fails, and says so in *out too */
        assert_int_not_equal(kc_cuda_malloc(&p, 16, NULL), KC_OK);
        assert_null(p);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile),    cmocka_unit_test(test_argument_checks), cmocka_unit_test(test_wrapper_chain),
        cmocka_unit_test(test_redis_open), cmocka_unit_test(test_site_and_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
