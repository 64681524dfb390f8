/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cache_compile_edges.c — kc_cache_compile at its edges: two handles on one directory, one
 * pinning the toolchain in its settings, each get their own choice (and the pin's errors name the
 * setting); arrays NULL with a count, or NULL entries, refused naming the field (also by
 * kc_compile_kernel and kc_options_normalize); a __device__ variable's name expression next to a
 * kernel's (cubin and PTX) has no parameter table and is served again; a disabled cache answers
 * nothing from the memo.  Needs NVRTC (compile-only), no GPU.
 */
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static const char *SRC = "extern \"C\" __global__ void k(float *p) { p[0] = 1.0f; }\n";

static int setup(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "SKIP: no NVRTC: %s\n", kc_error_last()->message);
        exit(KC_SKIP_CODE);
    }
    return kct_open_cache("ccedges", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_cache *open_with(const char *const *settings, size_t n, unsigned flags) {
    kc_cache *c = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir, o.flags = KC_OPEN_NO_ENV | flags, o.settings = settings, o.nsettings = n;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return c;
}

static int compile_rc(kc_cache *c, const kc_kernel_src *k, const char *const *names, size_t n, const char *target,
                      kc_program **p) {
    *p = NULL;
    return kc_cache_compile(c, k, names, n, target, p);
}

/* A pin in one handle's settings is that handle's: the unpinned handle before and after it compiles. */
static void test_pin_per_handle(void **state) {
    (void)state;
    static const char *const pin[] = {"toolchain=build-id:1111111111111111111111111111111111111111"};
    static const char *const bad[] = {"toolchain=nonsense"};
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.source = SRC;
    const char *names[] = {"k"};
    kc_program *p;
    assert_int_equal(compile_rc(cache, &k, names, 1, "sm_80", &p), KC_OK);
    kc_program_free(p);
    kc_cache *pinned = open_with(pin, 1, 0);
    assert_int_equal(compile_rc(pinned, &k, names, 1, "sm_80", &p), KC_ENONVRTC); /* not this NVRTC */
    assert_non_null(strstr(kc_error_last()->message, "kc_options.settings"));
    kc_cache_close(pinned);
    assert_int_equal(compile_rc(cache, &k, names, 1, "sm_80", &p), KC_OK);
    kc_program_free(p);
    kc_cache *b = open_with(bad, 1, 0);
    assert_int_equal(compile_rc(b, &k, names, 1, "sm_80", &p), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "kc_options.settings[0] toolchain"));
    assert_null(strstr(kc_error_last()->message, "KCACHE_TOOLCHAIN"));
    kc_cache_close(b);
}

/* NULL arrays with a count and NULL entries: KC_EINVAL naming the field, never a crash. */
static void test_null_arrays(void **state) {
    (void)state;
    const char *names[] = {"k"};
    kc_header_src hs[1] = {{NULL, "int x;"}}, hs2[1] = {{"h.h", NULL}};
    const char *opts[] = {NULL};
    struct {
        const kc_header_src *h;
        size_t nh;
        const char *const *o;
        size_t no;
        const char *field;
    } cases[] = {
        {NULL, 3, NULL, 0, "headers is NULL"},    {hs, 1, NULL, 0, "headers[0].name"},
        {hs2, 1, NULL, 0, "headers[0].source"},   {NULL, 0, NULL, 2, "options is NULL"},
        {NULL, 0, opts, 1, "options[0] is NULL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_kernel_src k = KC_KERNEL_SRC_INIT;
        k.source = SRC, k.name = "k";
        k.headers = cases[i].h, k.nheaders = cases[i].nh, k.options = cases[i].o, k.noptions = cases[i].no;
        kc_program *p;
        assert_int_equal(compile_rc(cache, &k, names, 1, "sm_80", &p), KC_EINVAL);
        assert_non_null(strstr(kc_error_last()->message, cases[i].field));
        kc_compiled *r = NULL;
        assert_int_equal(kc_compile_kernel(&k, "sm_80", &r), KC_EINVAL);
        assert_non_null(strstr(kc_error_last()->message, cases[i].field));
        char *norm = NULL;
        assert_int_equal(kc_options_normalize(&k, &norm), KC_EINVAL);
        assert_non_null(strstr(kc_error_last()->message, cases[i].field));
    }
}

/* "&N::v" (CuPy's get_global, cuda.core): a symbol with no parameter table, a kernel's table beside it;
 * stored, then served by a new handle (disk) and the memo. */
static void test_device_variable(void **state) {
    (void)state;
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.source = "namespace N { __device__ int v1; __device__ float v2[4]; }\n"
               "extern \"C\" __global__ void k(int *p, int n) { p[0] = N::v1 + n; }\n";
    const char *names[] = {"k", "&N::v1", "N::v2"};
    const char *targets[] = {"sm_80", "compute_80"};
    for (int t = 0; t < 2; t++) {
        for (int round = 0; round < 3; round++) {
            kc_cache *c = round == 1 ? open_with(NULL, 0, 0) : cache;
            kc_program *p;
            if (compile_rc(c, &k, names, 3, targets[t], &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
            int want[] = {KC_LOOKUP_COMPILE, KC_LOOKUP_DISK, KC_LOOKUP_MEMORY};
            assert_int_equal(p->outcome, want[round]);
            assert_int_equal(p->nparams[0], 2);
            assert_int_equal(p->nparams[1], 0);
            assert_int_equal(p->nparams[2], 0);
            assert_non_null(strstr(p->lowered_names[1], "v1"));
            kc_program_free(p);
            if (c != cache) kc_cache_close(c);
        }
    }
}

/* A disabled cache: every call compiles, none is a memory hit. */
static void test_disabled_no_memo(void **state) {
    (void)state;
    kc_cache *c = open_with(NULL, 0, KC_OPEN_DISABLE);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.source = "extern \"C\" __global__ void kd(float *p) { p[0] = 5.0f; }\n";
    const char *names[] = {"kd"};
    for (int i = 0; i < 2; i++) {
        kc_program *p;
        if (compile_rc(c, &k, names, 1, "sm_80", &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(p->outcome, KC_LOOKUP_COMPILE);
        kc_program_free(p);
    }
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pin_per_handle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_null_arrays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled_no_memo, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
