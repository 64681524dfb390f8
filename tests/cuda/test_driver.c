/*
 * test_driver.c — the CUDA driver part without a GPU: [Note: variant selection] as a
 * table, and the "no driver" status with a clear message (the driver path is pointed at
 * nothing in a child process, so this also holds on a GPU host).
 */
#include "helpers.h"

#include "kcache.h"

static const char *pick(const char *const *v, size_t n, int major, int minor) {
    int i = kc_variant_select(v, n, major, minor);
    return i >= 0 ? v[i] : "MISS";
}

static void test_variant_selection(void **state) {
    (void)state;
    const char *all[] = {"compute_80", "sm_80", "sm_86", "sm_90", "sm_90a", "compute_90", "bogus"};
    assert_string_equal(pick(all, 7, 9, 0), "sm_90a");     /* arch-specific on its own device */
    assert_string_equal(pick(all, 4, 9, 0), "sm_90");      /* exact cubin */
    assert_string_equal(pick(all, 7, 8, 9), "sm_86");      /* X.y, y < Y, highest */
    assert_string_equal(pick(all, 7, 8, 0), "sm_80");
    assert_string_equal(pick(all, 7, 10, 0), "compute_90");/* no cubin of major 10: newest PTX ≤ */
    const char *ptx_only[] = {"compute_80"};
    assert_string_equal(pick(ptx_only, 1, 9, 0), "compute_80");
    assert_string_equal(pick(ptx_only, 1, 7, 5), "MISS");  /* PTX newer than the device */
    const char *a_only[] = {"sm_90a"};
    assert_string_equal(pick(a_only, 1, 9, 0), "sm_90a");
    const char *a_other[] = {"sm_90a", "sm_80"};
    assert_string_equal(pick(a_other, 2, 10, 0), "MISS");  /* sm_90a never runs elsewhere; sm_80 is another major */
    const char *newer[] = {"sm_89"};
    assert_string_equal(pick(newer, 1, 8, 6), "MISS");     /* a newer minor is not compatible */
    const char *fam[] = {"sm_100f"};
    assert_string_equal(pick(fam, 1, 10, 3), "sm_100f");
    assert_string_equal(pick(fam, 1, 11, 0), "MISS");
    assert_string_equal(pick(NULL, 0, 9, 0), "MISS");
    char v[16];
    kc_variant_for_device(9, 0, v);
    assert_string_equal(v, "sm_90");
}

static void test_no_driver_is_a_clear_status(void **state) {
    (void)state;
    if (getenv("KC_TEST_NO_DRIVER")) {
        assert_int_equal(kc_cuda_available(), KC_ENODRIVER);
        assert_non_null(strstr(kc_error_last()->message, "no CUDA driver"));
        assert_non_null(strstr(kc_error_last()->message, "compile-only"));
        assert_int_equal(kc_cuda_device_count(), 0);
        int ma, mi;
        assert_int_equal(kc_cuda_capability(0, &ma, &mi), KC_ENODRIVER);
        kc_module *m;
        assert_int_equal(kc_module_load(&m, 0, "x", 1), KC_ENODRIVER);
        unsigned g[3] = {1, 1, 1};
        assert_int_equal(kc_cuda_launch(NULL, g, g, 0, NULL, NULL), KC_ENODRIVER);
        /* Compile-only still works. */
        kc_kernel_src k = {NULL, "extern \"C\" __global__ void k() {}", "k", NULL, 0, NULL, 0, NULL};
        kc_compiled *c;
        assert_int_equal(kc_compile_kernel(&k, "sm_90", &c), KC_OK);
        kc_compiled_free(c);
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "KC_TEST_NO_DRIVER=1 KCACHE_CUDA_DRIVER=/nonexistent/libcuda.so.1 /proc/%d/exe",
             (int)getpid());
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    if (getenv("KC_TEST_NO_DRIVER")) {
        const struct CMUnitTest only[] = {cmocka_unit_test(test_no_driver_is_a_clear_status)};
        return cmocka_run_group_tests(only, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variant_selection),
        cmocka_unit_test(test_no_driver_is_a_clear_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
