/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gpu_load.c (label gpu) — on a real device: a cubin compiled for the device loads
 * and its kernel resolves; a PTX-only image loads by JIT; an arch-specific sm_XYa cubin
 * loads on X.Y; a kernel the image lacks, and a cubin for another major version, are refused
 * (KC_EREFUSED, which a lookup counts as a miss and answers by compiling) — the cubin at the
 * load or, under the driver's lazy loading, when its kernel is fetched (kc_module_function
 * loads it then: cuFuncLoad), never first at a launch.  Exits 77 (skipped) without a driver.
 */
#include "helpers.h"

#include "kcache.h"

static int major, minor;

static const char *SRC = "extern \"C\" __global__ void fill(float *x, float v, int n) {\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v; }\n";

static void load_target(const char *target, int want) {
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "fill.cu", SRC, "fill", NULL, 0, NULL, 0, NULL, 0};
    kc_compiled *c;
    int rc = kc_compile_kernel(&k, target, &c);
    if (rc) fail_msg("compile %s: %s", target, kc_error_last()->message);
    kc_module *m = NULL;
    void *fn = NULL;
    const char *at = "the load";
    rc = kc_module_load(&m, 0, c->image, c->len + (target[0] == 'c' ? 1 : 0));
    if (rc == KC_OK) at = "the kernel's fetch", rc = kc_module_function(m, c->lowered_name, &fn);
    if (rc != want) fail_msg("%s %s: got %s (%s)", at, target, kc_status_str(rc), kc_error_last()->message);
    if (rc == KC_OK) {
        assert_non_null(fn);
        assert_int_equal(kc_module_function(m, "no_such_kernel", &fn), KC_EREFUSED);
    } else {
        fprintf(stderr, "%s refused at %s: %s\n", target, at, kc_error_last()->message);
    }
    kc_module_free(m);
    kc_compiled_free(c);
}

static void test_cubin_for_this_device(void **state) {
    (void)state;
    char t[16];
    snprintf(t, sizeof t, "sm_%d%d", major, minor);
    load_target(t, KC_OK);
}

static void test_ptx_loads_by_jit(void **state) {
    (void)state;
    load_target("compute_80", KC_OK);
}

static void test_arch_specific_on_its_device(void **state) {
    (void)state;
    if (major < 9) skip();
    char t[16];
    snprintf(t, sizeof t, "sm_%d%da", major, minor);
    load_target(t, KC_OK);
}

static void test_foreign_cubin_is_refused(void **state) {
    (void)state;
    load_target(major == 8 ? "sm_90" : "sm_80", KC_EREFUSED);
}

int main(void) {
    if (kc_cuda_available() != KC_OK) {
        fprintf(stderr, "skipped: %s\n", kc_error_last()->message);
        return KC_SKIP_CODE;
    }
    kc_cuda_capability(0, &major, &minor);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubin_for_this_device),
        cmocka_unit_test(test_ptx_loads_by_jit),
        cmocka_unit_test(test_arch_specific_on_its_device),
        cmocka_unit_test(test_foreign_cubin_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
