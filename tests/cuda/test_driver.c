/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_driver.c — the CUDA driver part without a GPU: the "no driver" status with a clear
 * message (the driver path is pointed at nothing in a child process, so this also holds
 * on a GPU host).  Variant selection is the target part's: tests/target/test_target.c.
 */
#include "helpers.h"

#include "kcache.h"

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
        kc_kernel_src k = {
            KC_KERNEL_SRC_VERSION, NULL, "extern \"C\" __global__ void k() {}", "k", NULL, 0, NULL, 0, NULL, 0};
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
        cmocka_unit_test(test_no_driver_is_a_clear_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
