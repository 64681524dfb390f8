/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_nvrtc.c — NVRTC through dlopen, for real: cubins for sm_80/sm_90/sm_90a whose ELF
 * symbol tables hold the kernels, PTX for compute_80, templates through name expressions,
 * headers in memory, compile errors with NVRTC's log, option normalisation, the
 * __DATE__/__TIME__ bypass rule, and many compiles at once on the thread pool.
 * Needs the CUDA Toolkit's NVRTC (it comes with the machine), not a GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "common/pool.h"
#include "compile/elf.h"
#include "kcache.h"

static const char *SRC = "#include \"scale.h\"\n"
                         "extern \"C\" __global__ void axpy(float a, const float *x, float *y, int n) {\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  if (i < n) y[i] = a * x[i] + y[i];\n"
                         "}\n"
                         "template <typename T> __global__ void scale(T *x, T s, int n) {\n"
                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "  if (i < n) x[i] = SCALE(x[i], s);\n"
                         "}\n";
static const kc_header_src HDR[] = {{"scale.h", "#define SCALE(a, b) ((a) * (b))\n"}};

static kc_kernel_src kernel(const char *name) {
    static const char *opts[] = {"--std=c++17", "-default-device"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "axpy.cu", SRC, name, HDR, 1, opts, 2, NULL, 0};
    return k;
}

static void test_nvrtc_is_found(void **state) {
    (void)state;
    int rc = kc_nvrtc_available();
    if (rc != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(strncmp(kc_nvrtc_toolchain(), "nvrtc ", 6), 0);
    assert_non_null(strstr(kc_nvrtc_toolchain(), "libnvrtc"));
}

static void test_cubins_hold_their_kernels(void **state) {
    (void)state;
    const char *targets[] = {"sm_80", "sm_90", "sm_90a"};
    for (size_t i = 0; i < 3; i++) {
        kc_kernel_src k = kernel("axpy");
        kc_compiled *c;
        int rc = kc_compile_kernel(&k, targets[i], &c);
        if (rc) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(kc_elf_machine(c->image, c->len), 190); /* EM_CUDA */
        assert_string_equal(c->lowered_name, "axpy");
        assert_int_equal(kc_elf_has_function(c->image, c->len, "axpy"), 1);
        assert_int_equal(kc_elf_has_function(c->image, c->len, "nope"), 0);
        assert_true(c->seconds > 0);
        kc_compiled_free(c);
    }
}

static void test_ptx_and_templates(void **state) {
    (void)state;
    kc_kernel_src k = kernel("scale<float>");
    kc_compiled *c;
    assert_int_equal(kc_compile_kernel(&k, "compute_80", &c), KC_OK);
    assert_int_equal(strncmp(c->lowered_name, "_Z", 2), 0); /* a mangled C++ name */
    assert_non_null(strstr((char *)c->image, ".target sm_80"));
    char entry[256];
    snprintf(entry, sizeof entry, ".entry %s", c->lowered_name);
    assert_non_null(strstr((char *)c->image, entry));
    assert_int_equal(strlen((char *)c->image), c->len);
    kc_compiled *d;
    assert_int_equal(kc_compile_kernel(&k, "sm_90", &d), KC_OK);
    assert_int_equal(kc_elf_has_function(d->image, d->len, c->lowered_name), 1);
    kc_compiled_free(c);
    kc_compiled_free(d);
}

static void test_compile_error_carries_the_log(void **state) {
    (void)state;
    const char *src = "extern \"C\" __global__ void broken(float *x) {\n  x[0] = undefined_name;\n}\n";
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "broken.cu", src, "broken", NULL, 0, NULL, 0, NULL, 0};
    kc_compiled *c;
    assert_int_equal(kc_compile_kernel(&k, "sm_90", &c), KC_ECOMPILE);
    assert_null(c);
    const char *m = kc_error_last()->message;
    assert_non_null(strstr(m, "broken.cu(2)"));
    assert_non_null(strstr(m, "undefined_name"));
}

static void test_options_normalize(void **state) {
    (void)state;
    const char *opts[] = {" --std", "c++17", "-default-device", "--default-device", "-DX=1 "};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, NULL, "", "k", NULL, 0, opts, 5, NULL, 0};
    char *n;
    assert_int_equal(kc_options_normalize(&k, &n), KC_OK);
    /* Issue 14: as written (dashes, order, repeats), trimmed; "--std" "c++17" is not joined (NVRTC
     * rejects that split form). Was "-std=c++17\n-default-device\n-DX=1\n" (dashes folded, repeats dropped). */
    assert_string_equal(n, "--std\nc++17\n-default-device\n--default-device\n-DX=1\n");
    kc_free(n);
    const char *arch[] = {"-arch=sm_80"};
    k.options = arch;
    k.noptions = 1;
    assert_int_equal(kc_options_normalize(&k, &n), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "variant"));
    const char *inc[] = {"-I/usr/include/foo"};
    k.options = inc;
    assert_int_equal(kc_options_normalize(&k, &n), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "include folder"));
    k.include_digest = "0123abcd"; /* issue 14: a caller's digest of a folder is no longer trusted (was KC_OK) */
    assert_int_equal(kc_options_normalize(&k, &n), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "include_digest"));
}

static void test_time_macros_are_not_cacheable(void **state) {
    (void)state;
    struct {
        const char *src;
        int cacheable;
    } cases[] = {
        {"__global__ void k() { const char *d = __DATE__; }", 0},
        {"__global__ void k() { const char *d = __TIME__; }", 0},
        {"__global__ void k() { const char *d = __TIMESTAMP__; }", 0},
        {"// __DATE__ in a comment\n__global__ void k() {}", 1},
        {"/* __TIME__ */ __global__ void k() { const char *s = \"__DATE__\"; }", 1},
        {"__global__ void k() { int MY__DATE__X = 0; }", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_kernel_src k = {KC_KERNEL_SRC_VERSION, NULL, cases[i].src, "k", NULL, 0, NULL, 0, NULL, 0};
        const char *why = NULL;
        assert_int_equal(kc_kernel_cacheable(&k, &why), cases[i].cacheable);
        if (!cases[i].cacheable) assert_non_null(strstr(why, "__"));
    }
    kc_header_src h = {"t.h", "#define WHEN __TIME__\n"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, NULL, "#include \"t.h\"\n", "k", &h, 1, NULL, 0, NULL, 0};
    assert_int_equal(kc_kernel_cacheable(&k, NULL), 0);
}

typedef struct par {
    int rc[8];
} par;

static void compile_one(void *ctx, size_t i) {
    par *p = ctx;
    kc_kernel_src k = kernel(i % 2 ? "axpy" : "scale<double>");
    kc_compiled *c;
    p->rc[i] = kc_compile_kernel(&k, i % 3 ? "sm_90" : "sm_80", &c);
    kc_compiled_free(c);
}

static void test_parallel_compiles(void **state) {
    (void)state;
    kc_pool *pool;
    assert_int_equal(kc_pool_new(&pool, 4), KC_OK);
    par p;
    memset(&p, 0xff, sizeof p);
    assert_int_equal(kc_pool_for(pool, 8, compile_one, &p), KC_OK);
    for (int i = 0; i < 8; i++) assert_int_equal(p.rc[i], KC_OK);
    kc_pool_free(pool);
}

static void test_missing_nvrtc(void **state) {
    (void)state;
    /* Only observable in a fresh process: the library is found once. */
    if (getenv("KC_TEST_MISSING_NVRTC")) {
        kc_kernel_src k = kernel("axpy");
        kc_compiled *c;
        assert_int_equal(kc_compile_kernel(&k, "sm_90", &c), KC_ENONVRTC);
        assert_non_null(strstr(kc_error_last()->message, "KCACHE_NVRTC"));
        return;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "KC_TEST_MISSING_NVRTC=1 KCACHE_NVRTC=/nonexistent/libnvrtc.so "
             "CMOCKA_TEST_ABORT=0 /proc/%d/exe >/dev/null 2>&1",
             (int)getpid());
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvrtc_is_found),    cmocka_unit_test(test_cubins_hold_their_kernels),
        cmocka_unit_test(test_ptx_and_templates), cmocka_unit_test(test_compile_error_carries_the_log),
        cmocka_unit_test(test_options_normalize), cmocka_unit_test(test_time_macros_are_not_cacheable),
        cmocka_unit_test(test_parallel_compiles), cmocka_unit_test(test_missing_nvrtc),
    };
    if (getenv("KC_TEST_MISSING_NVRTC")) {
        const struct CMUnitTest only[] = {cmocka_unit_test(test_missing_nvrtc)};
        return cmocka_run_group_tests(only, NULL, NULL);
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
