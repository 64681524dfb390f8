/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_load_calls.c — the driver calls a graph's load makes, counted exactly on the CUDA driver
 * double (label driver-double; the double counts every entry point, context pushes and pops and
 * parameter queries included: kcd_calls).
 *
 * What it proves: a disk hit's load makes one library load per image, one kernel fetch per kernel
 * (cuLibraryGetKernel, cuKernelGetFunction, cuFuncLoad — the last so that an image the device cannot
 * run is refused at load, never at a launch), the driver's parameter check (cuFuncGetParamInfo,
 * one per parameter and one past the last), the device's facts once, one context push and pop for
 * the whole load, and nothing else — for one image of one kernel, one image of three kernels, two
 * images, a PTX image, and one kernel named twice (fetched and checked once; checked again when the
 * entry's two tables for it differ).  Any call added to
 * the load path fails it.  A second get of a graph already loaded makes no load at all (the lookup's
 * capability query only); a launch after the load fetches nothing; a refused image is a counted
 * refusal with no kernel fetched and the context popped.
 */
#include "common/internal.h"
#include "double/double_test.h"
#include "graph/graph_internal.h"
#include "graph/program.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0", "load_calls", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *const SRC = "extern \"C\" __global__ void scale(const float *x, float *y, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i];\n}\n"
                               "extern \"C\" __global__ void shift(const float *x, float *y, int n, float b) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + b;\n}\n"
                               "extern \"C\" __global__ void twice(const float *x, float *y, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + x[i];\n}\n";

/* A graph over x[N] → y[N]: one forward step per name of `kernels` (each its own kernel of SRC, with
 * -DOPT<i> when `own_options`, which makes each its own compile unit and image; `wide_last`: the last step passes N
 * as 8 bytes, which no kernel of SRC takes). */
static kc_graph_desc *graph_of_(const char *name, const char *const *kernels, size_t n, int own_options,
                                int wide_last) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, name), KC_OK);
    static const char *const opts[][1] = {{"-DOPT0"}, {"-DOPT1"}, {"-DOPT2"}};
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, sizes), KC_OK);
    for (size_t i = 0; i < n; i++) {
        kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "calls.cu", .source = SRC, .name = kernels[i]};
        if (own_options) k.options = opts[i], k.noptions = 1;
        int idx = -1;
        if (kc_graph_add_kernel(d, &k, &idx)) fail_msg("%s", kc_error_last()->message);
        const char *grid[3] = {"ceildiv(N, 256)", "1", "1"}, *block[3] = {"256", "1", "1"};
        const char *args3[] = {"input:0", "output:0", wide_last && i == n - 1 ? "e64:N" : "e32:N"};
        const char *args4[] = {"input:0", "output:0", "e32:N", "f32:1.5"};
        int four = strcmp(kernels[i], "shift") == 0;
        if (kc_graph_add_step(d, KC_PASS_FORWARD, idx, grid, block, NULL, four ? args4 : args3, four ? 4 : 3))
            fail_msg("%s", kc_error_last()->message);
    }
    return d;
}

static kc_graph_desc *graph_of(const char *name, const char *const *kernels, size_t n, int own_options) {
    return graph_of_(name, kernels, n, own_options, 0);
}

/* The exact calls since the last kcd_reset: each named count, and nothing else (the total). */
typedef struct want {
    const char *call;
    unsigned long n;
} want;

static void expect_calls(const char *what, const want *w, size_t n) {
    unsigned long sum = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        sum += w[i].n;
        if (kcd_calls(w[i].call) != w[i].n) {
            fprintf(stderr, "%s: %s called %lu times, expected %lu\n", what, w[i].call, kcd_calls(w[i].call), w[i].n);
            bad = 1;
        }
    }
    if (kcd_calls(NULL) != sum) {
        fprintf(stderr, "%s: %lu driver calls in all, expected %lu\n", what, kcd_calls(NULL), sum);
        bad = 1;
    }
    if (bad) {
        char buf[4096];
        kcd_calls_list(buf, sizeof buf);
        fail_msg("%s: the driver calls differ from the minimum; what was called:\n%s", what, buf);
    }
}

/*
 * A disk hit with its load of a graph of `images` images and `kernels` distinct functions whose
 * parameters number `params` in all: the lookup's capability (cuDeviceGet and two attributes),
 * the device's facts (cuDeviceGet and seven attributes), one push and pop, one library load per
 * image, three calls per kernel (get the kernel, its function, load it), and the parameter check.
 */
static void expect_load(const char *what, unsigned long images, unsigned long kernels, unsigned long params) {
    const want w[] = {
        {"cuDeviceGet", 2},
        {"cuDeviceGetAttribute", 2 + 7},
        {"cuCtxPushCurrent_v2", 1},
        {"cuCtxPopCurrent_v2", 1},
        {"cuLibraryLoadData", images},
        {"cuLibraryGetKernel", kernels},
        {"cuKernelGetFunction", kernels},
        {"cuFuncLoad", kernels},
        {"cuFuncGetParamInfo", params + kernels}, /* each parameter, and one past the last */
    };
    expect_calls(what, w, KC_ARRAY_LEN(w));
}

/* Compile `d` for `target`, empty the loaded table, then get it (a disk hit with its load) with the calls
 * counted; the graph is returned (the caller releases it). */
static kc_graph *disk_hit(kc_graph_desc *d, const char *target, int units) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, target, &info)) fail_msg("%s", kc_error_last()->message);
    if (info.units != units)
        fail_msg("%s: %d units (%d compiled), source %d", target, info.units, info.units_compiled, (int)info.source);
    kcdt_unload_all();
    kcd_reset();
    kc_graph *g = NULL;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_string_equal(info.variant, target);
    return g;
}

/* One forward of `g` with N = n on device 0; its status. */
static int forward(kc_graph *g, int64_t n) {
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {n}, {1}}, out;
    memset(&out, 0, sizeof out);
    assert_int_equal(kc_cuda_malloc(&in.data, (size_t)n * 4, NULL), KC_OK);
    int rc = kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    return rc;
}

/* The first load of the process retains the primary context: done here, so the cases count loads only. */
static void warm_up(void) {
    static int done;
    if (done) return;
    const char *k[] = {"twice"}; /* a graph no case compiles (the name is not in the key) */
    kc_graph_desc *d = graph_of("warm", k, 1, 0);
    kc_graph_release(disk_hit(d, "sm_90", 1));
    kc_graph_desc_free(d);
    done = 1;
}

static void test_one_image_one_kernel(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale"};
    kc_graph_desc *d = graph_of("one", k, 1, 0);
    kc_graph *g = disk_hit(d, "sm_90", 1);
    expect_load("one image, one kernel", 1, 1, 3);
    /* A launch fetches nothing: everything was resolved at load. */
    kcd_reset();
    assert_int_equal(forward(g, 1000), KC_OK);
    assert_int_equal(kcd_launch_count(), 1);
    assert_int_equal(kcd_calls("cuLibraryLoadData") + kcd_calls("cuLibraryGetKernel") +
                         kcd_calls("cuKernelGetFunction") + kcd_calls("cuFuncLoad") + kcd_calls("cuFuncGetParamInfo"),
                     0);
    kc_graph_release(g);
    /* A second get in this process: the loaded graph, no load (the lookup's capability query only). */
    kcd_reset();
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_MEMORY);
    const want again[] = {{"cuDeviceGet", 1}, {"cuDeviceGetAttribute", 2}};
    expect_calls("a second get of a loaded graph", again, KC_ARRAY_LEN(again));
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

static void test_one_image_three_kernels(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale", "shift", "twice"};
    kc_graph_desc *d = graph_of("three", k, 3, 0);
    kc_graph *g = disk_hit(d, "sm_90", 1);
    expect_load("one image, three kernels", 1, 3, 3 + 4 + 3);
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

static void test_two_images(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale", "shift"};
    kc_graph_desc *d = graph_of("two", k, 2, 1);
    kc_graph *g = disk_hit(d, "sm_90", 2);
    expect_load("two images", 2, 2, 3 + 4);
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

static void test_ptx_image(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale", "shift"};
    kc_graph_desc *d = graph_of("ptx", k, 2, 0);
    kc_graph *g = disk_hit(d, "compute_90", 1); /* the only variant stored: the driver JIT-compiles it */
    expect_load("a PTX image", 1, 2, 3 + 4);
    kcd_reset();
    assert_int_equal(forward(g, 1000), KC_OK);
    assert_int_equal(kcd_calls("cuFuncLoad") + kcd_calls("cuLibraryGetKernel"), 0);
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

/* The same function named by two kernels of one graph: fetched, loaded and checked once. */
static void test_one_function_named_twice(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale", "scale"};
    kc_graph_desc *d = graph_of("twice_named", k, 2, 0);
    kc_graph *g = disk_hit(d, "sm_90", 1);
    expect_load("one function named by two kernels", 1, 1, 3);
    kcd_reset();
    assert_int_equal(forward(g, 1000), KC_OK);
    assert_int_equal(kcd_launch_count(), 2);
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

/* One function named by two kernels whose tables in the entry differ (a tampered PARAMS section, the programs made to
 * agree with it): the second table is checked with the driver too, and refused — sharing the fetch never shares a
 * check the tables do not share. */
static void test_one_function_two_tables_both_checked(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"scale", "scale"};
    kc_graph_desc *d = graph_of("twice_named", k, 2, 0), *wide = graph_of_("twice_named", k, 2, 0, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kc_key key;
    kc_key_from_hex(&key, info.key);
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &key, "sm_90", &e), KC_OK);
    assert_int_equal(kc_entry_resolve(cache, e), KC_OK);
    kc_params *t;
    assert_int_equal(kc_abi_decode(e, 2, &t), KC_OK);
    assert_int_equal(t[1].n, 3);
    t[1].v[2].size = 8; /* n: 4 bytes at 16 to the driver, 8 in the entry */
    t[1].total = 24;
    kc_buf pb = {0}, fb = {0};
    kc_abi_encode(&pb, t, 2);
    kc_program_encode(wide, KC_PASS_FORWARD, &fb);
    assert_false(pb.failed || fb.failed);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_PARAMS, pb.data, pb.len), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, fb.data, fb.len), KC_OK);
    kc_graph *g = NULL;
    kcd_reset();
    assert_int_equal(kc_graph_load(e, &key, 0, &g), KC_EREFUSED);
    assert_null(g);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "parameter 2 is 4 bytes at offset 16 to the driver, 8 at 16 in the entry"))
        fail_msg("the refusal does not name the parameter: %s", m);
    assert_int_equal(kcd_calls("cuCtxPushCurrent_v2"), kcd_calls("cuCtxPopCurrent_v2"));
    kc_buf_free(&pb), kc_buf_free(&fb);
    kc_abi_free(t, 2);
    kc_entry_free(e);
    kc_graph_desc_free(wide);
    kc_graph_desc_free(d);
    kcdt_no_leaks("after a refused table");
}

/* An image the device cannot run: refused at load (a counted refusal), nothing fetched from it, the context
 * popped, and no launch ever reaches the driver. */
static void test_refused_at_load(void **state) {
    (void)state;
    warm_up();
    const char *k[] = {"shift"}; /* a graph no other case loads */
    kc_graph_desc *d = graph_of("refused", k, 1, 0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kcdt_unload_all();
    kcd_reset();
    kcd_refuse("*", CUDA_ERROR_NO_BINARY_FOR_GPU);
    uint64_t refused0 = kcdt_stat(cache, KC_STAT_LOAD_REFUSED);
    kc_graph *g = NULL;
    assert_int_equal(kc_graph_get(cache, d, 0, &g, &info), KC_EREFUSED);
    assert_null(g);
    assert_true(kcdt_stat(cache, KC_STAT_LOAD_REFUSED) >= refused0 + 1);
    assert_true(kcd_calls("cuLibraryLoadData") >= 1);
    assert_int_equal(kcd_calls("cuLibraryGetKernel") + kcd_calls("cuKernelGetFunction") + kcd_calls("cuFuncLoad"), 0);
    assert_int_equal(kcd_calls("cuCtxPushCurrent_v2"), kcd_calls("cuCtxPopCurrent_v2"));
    assert_int_equal(kcd_launch_count(), 0);
    kcd_reset();
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_leaks("after a refused load");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_image_one_kernel),
        cmocka_unit_test(test_one_image_three_kernels),
        cmocka_unit_test(test_two_images),
        cmocka_unit_test(test_ptx_image),
        cmocka_unit_test(test_one_function_named_twice),
        cmocka_unit_test(test_one_function_two_tables_both_checked),
        cmocka_unit_test(test_refused_at_load),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
