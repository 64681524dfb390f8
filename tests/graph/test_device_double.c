/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device_double.c — device facts and large dynamic shared memory through the CUDA
 * driver double (tests/double/, label driver-double: it checks every launch against the
 * device's and the function's limits and records every call, but runs nothing).
 *
 * What it proves: a grid and arguments written over device_sm_count & co launch with each
 * device's own values from ONE entry (two H100s of 132 and 114 SMs: the second is a disk hit,
 * no compile, the same key), bound when the graph is loaded; a step with 100 KiB of dynamic
 * shared memory gets cuFuncSetAttribute once per function and size (the double refuses the
 * launch otherwise), also from several threads at once and inside a cuda_graph capture; what
 * is beyond the device's opt-in limit less the kernel's static shared memory is refused by
 * kcache with an error naming step, kernel, bytes and limit, and nothing reaches the driver;
 * two kernels naming one function share its setting, which one never lowers under the other.
 */
#include <pthread.h>

#include "common/internal.h"
#include "double/double_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0:132,9.0:114", "device_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* How many lines of the call log contain `needle`. */
static size_t log_count(const char *needle) {
    char *log = kcd_call_log();
    size_t n = 0;
    for (const char *q = log; (q = strstr(q, needle)); q++) n++;
    free(log);
    return n;
}

static const char *const SRC =
    "extern \"C\" __global__ void facts(float *y, int sms, int tsm, int tpb, int smem, int optin, int smsm, int warp) {\n"
    "  if (threadIdx.x == 0) y[blockIdx.x] = sms + tsm + tpb + smem + optin + smsm + warp;\n}\n"
    "extern \"C\" __global__ void big(const float *x, float *y, int n) {\n"
    "  extern __shared__ float s[]; int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  s[threadIdx.x] = i < n ? x[i] : 0; __syncthreads(); if (i < n) y[i] = s[threadIdx.x];\n}\n"
    "extern \"C\" __global__ void big_static(const float *x, float *y, int n) {\n"
    "  __shared__ float st[256]; extern __shared__ float s[]; int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  st[threadIdx.x] = 1; s[threadIdx.x] = i < n ? x[i] : 0; __syncthreads();\n"
    "  if (i < n) y[i] = s[threadIdx.x] + st[255 - threadIdx.x];\n}\n";

/* A graph of one step of `kernel` over input x[N] → y[N] with `shared` bytes of dynamic shared memory. */
static kc_graph_desc *big_graph(const char *name, const char *kernel, const char *shared, int cuda_graph) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, name), KC_OK);
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "dev.cu", .source = SRC, .name = kernel};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, sizes), KC_OK);
    const char *grid[3] = {"ceildiv(N, 256)", "1", "1"}, *block[3] = {"256", "1", "1"};
    const char *args[] = {"input:0", "output:0", "e32:N"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, shared, args, 3))
        fail_msg("%s", kc_error_last()->message);
    if (cuda_graph) assert_int_equal(kc_graph_add_wrapper(d, "cuda_graph", 1, "4", 1), KC_OK);
    return d;
}

/* One forward of `g` on device `dev` with N = n; returns its status (outputs released). */
static int forward(kc_graph *g, int dev, int64_t n) {
    assert_int_equal(kc_cuda_push(dev), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {n}, {1}}, out;
    memset(&out, 0, sizeof out);
    assert_int_equal(kc_cuda_malloc(&in.data, (size_t)n * 4, NULL), KC_OK);
    int rc = kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    return rc;
}

/* ---- device facts: one entry, each device's own grid ---- */

static kc_graph_desc *facts_graph(void) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "facts"), KC_OK);
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "dev.cu", .source = SRC, .name = "facts"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, sizes), KC_OK);
    const char *grid[3] = {"device_sm_count * 2", "1", "1"}, *block[3] = {"device_warp_size * 4", "1", "1"};
    const char *args[] = {"output:0",
                          "e32:device_sm_count",
                          "e32:device_max_threads_per_sm",
                          "e32:device_max_threads_per_block",
                          "e32:device_smem_per_block",
                          "e32:device_smem_optin",
                          "e32:device_smem_per_sm",
                          "e32:device_warp_size"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 8)) fail_msg("%s", kc_error_last()->message);
    return d;
}

/* The one launch since the last reset: grid.x = 2 × SMs, and every fact in its argument. */
static void check_facts_launch(int dev, int64_t sms) {
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l;
    assert_int_equal(kcd_launch_get(0, &l), 0);
    assert_string_equal(l.kernel, "facts");
    assert_int_equal(l.device, dev);
    assert_int_equal(l.grid[0], 2 * sms);
    assert_int_equal(l.block[0], 128);
    static const uint64_t rest[] = {2048, 1024, 48 << 10, 227 << 10, 228 << 10, 32}; /* the double's 9.0 */
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uint64_t)sms);
    for (size_t i = 0; i < KC_ARRAY_LEN(rest); i++) assert_int_equal(kcd_launch_arg_u64(&l, 2 + i), rest[i]);
}

static void test_one_entry_each_devices_grid(void **state) {
    (void)state;
    kc_graph_desc *d = facts_graph();
    kc_graph *g0, *g1;
    kc_graph_info i0 = KC_GRAPH_INFO_INIT, i1 = KC_GRAPH_INFO_INIT;
    uint64_t c0 = kcdt_stat(cache, KC_STAT_COMPILES);
    if (kc_graph_get(cache, d, 0, &g0, &i0)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(i0.source, KC_FROM_COMPILE);
    assert_string_equal(i0.variant, "sm_90");
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), c0 + 1);
    if (kc_graph_get(cache, d, 1, &g1, &i1)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(i1.source, KC_FROM_DISK); /* the same entry: the facts are not in the key */
    assert_string_equal(i1.key, i0.key);
    assert_string_equal(i1.variant, "sm_90");
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), c0 + 1);
    assert_ptr_not_equal(g0, g1);
    kcd_reset();
    assert_int_equal(forward(g0, 0, 1000), KC_OK);
    check_facts_launch(0, 132);
    kcd_reset();
    assert_int_equal(forward(g1, 1, 1000), KC_OK);
    check_facts_launch(1, 114);
    kcdt_no_defects();
    /* Bound at load: a device that changes is seen by the next load, not by the loaded graph. */
    assert_int_equal(kcd_set_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 100), 0);
    kcd_reset();
    assert_int_equal(forward(g1, 1, 1000), KC_OK);
    check_facts_launch(1, 114);
    kc_graph_release(g0);
    kc_graph_release(g1);
    kcdt_unload_all();
    if (kc_graph_get(cache, d, 1, &g1, &i1)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(i1.source, KC_FROM_DISK);
    kcd_reset();
    assert_int_equal(forward(g1, 1, 1000), KC_OK);
    check_facts_launch(1, 100);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), c0 + 1);
    kc_graph_release(g1);
    assert_int_equal(kcd_set_attribute(1, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 114), 0);
    kcdt_no_defects();
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/* ---- large dynamic shared memory ---- */

static void test_100_kib_sets_the_attribute_once(void **state) {
    (void)state;
    kc_graph_desc *d = big_graph("big100", "big", "102400", 0);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    if (forward(g, 0, 1000)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(log_count("cuFuncSetAttribute big MAX_DYNAMIC_SHARED_SIZE_BYTES=102400"), 1);
    char *log = kcd_call_log();
    const char *set = strstr(log, "cuFuncSetAttribute big"), *launch = strstr(log, "cuLaunchKernel");
    if (!set || !launch || set > launch) fail_msg("no attribute set before the launch:\n%s", log);
    free(log);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l;
    kcd_launch_get(0, &l);
    assert_int_equal(l.shared, 102400);
    /* Once per function and size: the next calls launch without asking again. */
    kcd_reset();
    for (int i = 0; i < 3; i++) assert_int_equal(forward(g, 0, 1000), KC_OK);
    assert_int_equal(log_count("cuFuncSetAttribute"), 0);
    assert_int_equal(kcd_launch_count(), 3);
    kcdt_no_defects();
    kc_graph_release(g);
    /* The other device's function is another function: set there too, once. */
    if (kc_graph_get(cache, d, 1, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    assert_int_equal(forward(g, 1, 1000), KC_OK);
    assert_int_equal(forward(g, 1, 1000), KC_OK);
    assert_int_equal(log_count("cuFuncSetAttribute big MAX_DYNAMIC_SHARED_SIZE_BYTES=102400"), 1);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

static void test_beyond_the_limit_is_refused_before_the_driver(void **state) {
    (void)state;
    /* Symbolic, so that no compile-time check can see it: 4 bytes per element. */
    kc_graph_desc *d = big_graph("big_n", "big", "N * 4", 0);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    assert_int_equal(forward(g, 0, 76800), KC_EINVAL); /* 300 KiB */
    const char *m = kc_error_last()->message;
    if (!strstr(m, "forward step 0") || !strstr(m, "'big'") || !strstr(m, "307200") || !strstr(m, "232448"))
        fail_msg("the refusal does not name step, kernel, bytes and limit: %s", m);
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuLaunchKernel"), 0);
    assert_int_equal(log_count("cuFuncSetAttribute"), 0);
    kcdt_no_defects();
    /* The same graph at 100 KiB, and at exactly the limit. */
    assert_int_equal(forward(g, 0, 25600), KC_OK);
    assert_int_equal(forward(g, 0, 232448 / 4), KC_OK);
    assert_int_equal(kcd_launch_count(), 2);
    assert_int_equal(log_count("cuFuncSetAttribute big MAX_DYNAMIC_SHARED_SIZE_BYTES="), 2);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);

    /* The limit is the opt-in maximum less the kernel's static shared memory (1 KiB here). */
    d = big_graph("big_static", "big_static", "device_smem_optin", 0);
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    assert_int_equal(forward(g, 0, 1000), KC_EINVAL);
    m = kc_error_last()->message;
    if (!strstr(m, "'big_static'") || !strstr(m, "232448") || !strstr(m, "231424") || !strstr(m, "static 1024"))
        fail_msg("the refusal does not count the static shared memory: %s", m);
    assert_int_equal(kcd_launch_count(), 0);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    d = big_graph("big_static_fits", "big_static", "device_smem_optin - 1024", 0);
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    if (forward(g, 0, 1000)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(log_count("cuFuncSetAttribute big_static MAX_DYNAMIC_SHARED_SIZE_BYTES=231424"), 1);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/* A pass fails whole or runs whole: a first step that fits and a second asking too much launch nothing. */
static void test_a_later_step_refused_launches_no_earlier_one(void **state) {
    (void)state;
    kc_graph_desc *d = big_graph("two_steps", "big", "1024", 0);
    const char *grid[3] = {"ceildiv(N, 256)", "1", "1"}, *block[3] = {"256", "1", "1"};
    const char *args[] = {"output:0", "output:0", "e32:N"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, "N * 4", args, 3))
        fail_msg("%s", kc_error_last()->message);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    assert_int_equal(forward(g, 0, 76800), KC_EINVAL); /* step 1 asks 300 KiB */
    if (!strstr(kc_error_last()->message, "forward step 1")) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 0); /* step 0 did not run either */
    assert_int_equal(forward(g, 0, 1024), KC_OK);
    assert_int_equal(kcd_launch_count(), 2);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/*
 * Two kernels of one graph naming one function share its handle, so they share its setting: kernel 0 reads the
 * function's maximum (48 KiB) first, kernel 1 raises it to 100 KiB, then kernel 0 asks 60 KiB — more than it read,
 * less than the function now allows.  Setting 60 KiB would lower the function under kernel 1's 100 KiB, whose next
 * launch the driver (the double) refuses; the setting is kept per handle and only ever raised.
 */
static void test_two_kernels_of_one_function_never_lower_it(void **state) {
    (void)state;
    kc_graph_desc *d = big_graph("one_function", "big", "N * 4", 0); /* kernel 0, step 0 */
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "dev.cu", .source = SRC, .name = "big"};
    int k1 = -1;
    assert_int_equal(kc_graph_add_kernel(d, &k, &k1), KC_OK);
    assert_int_equal(k1, 1); /* the same function, another kernel of the graph */
    const char *grid[3] = {"ceildiv(N, 256)", "1", "1"}, *block[3] = {"256", "1", "1"};
    const char *args[] = {"input:0", "output:0", "e32:N"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, k1, grid, block, "102400", args, 3))
        fail_msg("%s", kc_error_last()->message);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    if (forward(g, 0, 256)) fail_msg("first forward: %s", kc_error_last()->message);    /* 1 KiB, then 100 KiB */
    if (forward(g, 0, 15360)) fail_msg("second forward: %s", kc_error_last()->message); /* 60 KiB, then 100 KiB */
    if (forward(g, 0, 256)) fail_msg("third forward: %s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 6);
    assert_int_equal(log_count("cuFuncSetAttribute big MAX_DYNAMIC_SHARED_SIZE_BYTES=102400"), 1);
    assert_int_equal(log_count("cuFuncSetAttribute"), 1); /* never 61440: that would lower it */
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

static void test_inside_a_cuda_graph_capture(void **state) {
    (void)state;
    kc_graph_desc *d = big_graph("big_cg", "big", "N * 4", 1);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    for (int call = 0; call < 3; call++)
        if (forward(g, 0, 25600)) fail_msg("call %d: %s", call, kc_error_last()->message);
    assert_int_equal(log_count("cuStreamBeginCapture"), 1);
    assert_int_equal(log_count("cuGraphLaunch"), 3);
    assert_int_equal(log_count("cuFuncSetAttribute big MAX_DYNAMIC_SHARED_SIZE_BYTES=102400"), 1);
    size_t captured = 0, replayed = 0;
    for (size_t i = 0; i < kcd_launch_count(); i++) {
        kcd_launch l;
        kcd_launch_get(i, &l);
        assert_int_equal(l.shared, 102400);
        captured += l.captured, replayed += l.replayed;
    }
    assert_int_equal(captured, 1);
    assert_int_equal(replayed, 3);
    kcdt_no_defects();
    /* Beyond the limit: refused inside the capture, and again directly; nothing launched. */
    kcd_reset();
    assert_int_equal(forward(g, 0, 76800), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "307200"));
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuGraphLaunch"), 0);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/* ---- several threads launch one loaded graph: the attribute is set once ---- */

typedef struct racer {
    kc_graph *g;
    int failures;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    for (int i = 0; i < 10; i++) {
        if (kc_cuda_push(0) != KC_OK) {
            r->failures++;
            continue;
        }
        kc_tensor in = {NULL, KC_DTYPE_F32, 1, {1000}, {1}}, out;
        memset(&out, 0, sizeof out);
        if (kc_cuda_malloc(&in.data, 4000, NULL) != KC_OK ||
            kc_graph_forward(r->g, &in, 1, &out, 1, NULL, NULL, NULL) != KC_OK)
            r->failures++;
        kc_tensor_release(&out, NULL, NULL);
        kc_cuda_free(in.data, NULL);
        kc_cuda_pop();
    }
    return NULL;
}

static void test_threads_set_the_attribute_once(void **state) {
    (void)state;
    kc_graph_desc *d = big_graph("big_race", "big", "110000", 0);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    kcd_reset();
    enum { T = 4 };
    pthread_t th[T];
    racer r[T];
    for (int i = 0; i < T; i++) {
        r[i] = (racer){g, 0};
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].failures, 0);
    }
    assert_int_equal(kcd_launch_count(), T * 10);
    assert_int_equal(log_count("cuFuncSetAttribute"), 1);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

static void test_nothing_leaks(void **state) {
    (void)state;
    kcdt_unload_all();
    kcdt_no_leaks("at the end");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_entry_each_devices_grid),
        cmocka_unit_test(test_100_kib_sets_the_attribute_once),
        cmocka_unit_test(test_beyond_the_limit_is_refused_before_the_driver),
        cmocka_unit_test(test_a_later_step_refused_launches_no_earlier_one),
        cmocka_unit_test(test_two_kernels_of_one_function_never_lower_it),
        cmocka_unit_test(test_inside_a_cuda_graph_capture),
        cmocka_unit_test(test_threads_set_the_attribute_once),
        cmocka_unit_test(test_nothing_leaks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
