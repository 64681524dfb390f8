/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_train_double.c — the bundled kernels of a training step (kernels/adamw.json,
 * linear.json, global_norm.json, attn_softmax.json) through the CUDA driver double
 * (tests/double/, label driver-double: it checks every launch against the kernel's parameter
 * table and the device's limits, really performs copies and memsets on host shadows, and
 * records every call, but runs no kernel — this proves how the graphs are launched, never
 * their numbers; the gpu tests compare those with tools/kcache/check.c's references).
 *
 * What it proves, on two H100-like devices of one variant (9.0, 132 and 114 SMs):
 *   - adamw: params, m and v are the caller's own pointers in the launch, the output IS the
 *     parameters, every hyper-parameter's bytes are the call's, the grid is each device's SM
 *     count × blocks per SM from one entry; two calls with different learning rates are one
 *     compile and two hits (memory, then disk in a fresh table) with different lr bytes;
 *   - linear: backward adds into the caller's dW and db (their pointers in the launches,
 *     nothing allocated for them, dx fresh, the null bias), and refuses a call without them;
 *   - global_norm: a cuMemsetD8Async of the output's 4 bytes comes before the kernel that
 *     atomically adds into it (and the bytes are zero), grid from the SM count;
 *   - attn_softmax: a 64 KiB row raises the kernel's dynamic shared memory limit once before
 *     its launch; a row beyond the device's opt-in maximum is refused before the driver.
 * tools/kcache/check.c's runner for these graphs (bf16 uploads, runtime-argument values, in-place
 * inputs read back, the caller's accumulating buffers) runs through the double to its comparison
 * without a defect — the double runs no kernel, so the comparison itself must fail there.
 * And nothing leaks.
 */

#include "check.h"
#include "common/internal.h"
#include "double/double_test.h"

static char *dir;
static kc_cache *cache;

enum { DEV_A, DEV_B }; /* 9.0 with 132 SMs, 9.0 with 114 SMs */
static const int64_t sms[] = {132, 114};

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0:132,9.0:114", "train_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* The call log's 1-based line number of the first line containing every needle given (0: none). */
static unsigned long long line_of(const char *a, const char *b) {
    char *log = kcd_call_log();
    unsigned long long n = 0, found = 0;
    for (char *p = log; *p && !found;) {
        char *e = strchr(p, '\n');
        if (e) *e = 0;
        n++;
        if (strstr(p, a) && (!b || strstr(p, b))) found = n;
        p = e ? e + 1 : p + strlen(p);
    }
    free(log);
    return found;
}

static size_t log_count(const char *needle) {
    char *log = kcd_call_log();
    size_t n = 0;
    for (const char *q = log; (q = strstr(q, needle)); q++) n++;
    free(log);
    return n;
}

static kcd_launch launch(size_t i) {
    kcd_launch l;
    assert_int_equal(kcd_launch_get(i, &l), 0);
    return l;
}

static uint64_t ptr(const void *p) { return (uint64_t)(uintptr_t)p; }

static float arg_f32(const kcd_launch *l, size_t i) {
    float f;
    assert_int_equal(kcd_launch_arg(l, i, &f, sizeof f), 4);
    return f;
}

static kc_tensor vec(kc_dtype dt, int64_t n) {
    kc_tensor t = {NULL, dt, 1, {n}, {1}};
    size_t es = dt == KC_DTYPE_BF16 ? 2 : 4;
    assert_int_equal(kc_cuda_malloc(&t.data, (size_t)n * es, NULL), KC_OK);
    return t;
}

static kc_tensor mat(int64_t r, int64_t c) {
    kc_tensor t = {NULL, KC_DTYPE_F32, 2, {r, c}, {c, 1}};
    assert_int_equal(kc_cuda_malloc(&t.data, (size_t)(r * c) * 4, NULL), KC_OK);
    return t;
}

static kc_graph *get(kc_graph_desc *d, int dev, kc_graph_info *info) {
    kc_graph *g;
    if (kc_graph_get(cache, d, dev, &g, info)) fail_msg("%s", kc_error_last()->message);
    return g;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- AdamW: in place, per-call hyper-parameters, the grid from the SM count ---- */

enum { AW_N = 1 << 20 }; /* 4096 blocks of 256 would cover it: the SM count decides */

/* One AdamW step with learning rate lr on device dev; checks its one launch. */
static void adamw_call(kc_graph *g, int dev, float lr, uint32_t step) {
    assert_int_equal(kc_cuda_push(dev), KC_OK);
    kc_tensor in[4] = {vec(KC_DTYPE_F32, AW_N), vec(KC_DTYPE_BF16, AW_N), vec(KC_DTYPE_F32, AW_N),
                       vec(KC_DTYPE_F32, AW_N)};
    kc_tensor out;
    memset(&out, 0, sizeof out);
    kc_value v[6] = {{KC_ARG_F32, {.f32 = lr}},    {KC_ARG_F32, {.f32 = 0.9f}}, {KC_ARG_F32, {.f32 = 0.95f}},
                     {KC_ARG_F32, {.f32 = 1e-8f}}, {KC_ARG_F32, {.f32 = 0.1f}}, {KC_ARG_U32, {.u32 = step}}};
    kcd_reset();
    if (kc_graph_forward_args(g, in, 4, &out, 1, NULL, NULL, NULL, NULL, v, 6))
        fail_msg("%s", kc_error_last()->message);
    /* The output is the parameters, the caller's own tensor. */
    assert_ptr_equal(out.data, in[0].data);
    assert_int_equal(kc_graph_output_alias(g, 0), 0);
    assert_int_equal(log_count("cuMemAlloc"), 0); /* nothing allocated: every tensor is the caller's */
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l = launch(0);
    if (!strstr(l.kernel, "adamw_step")) fail_msg("launched %s", l.kernel);
    assert_int_equal(l.device, dev);
    assert_int_equal(l.grid[0], (unsigned)min64(sms[dev] * (2048 / 256), (AW_N + 255) / 256));
    assert_int_equal(l.block[0], 256);
    assert_int_equal(l.nparams, 11);
    for (int i = 0; i < 4; i++) assert_int_equal(kcd_launch_arg_u64(&l, (size_t)i), ptr(in[i].data)); /* in place */
    assert_int_equal(kcd_launch_arg_u64(&l, 4), AW_N);
    for (int i = 0; i < 5; i++) assert_true(arg_f32(&l, 5 + (size_t)i) == v[i].v.f32);
    assert_int_equal(kcd_launch_arg_u64(&l, 10), step);
    for (int i = 0; i < 4; i++) kc_cuda_free(in[i].data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
}

static void test_adamw_in_place_one_compile_two_hits(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("adamw.json");
    uint64_t compiles0 = kcdt_stat(cache, KC_STAT_COMPILES);
    kc_graph_info i1 = KC_GRAPH_INFO_INIT, i2 = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, DEV_A, &i1);
    assert_int_equal(i1.source, KC_FROM_COMPILE);
    adamw_call(g, DEV_A, 3e-4f, 1);
    kc_graph_release(g);
    /* Another learning rate: the same graph from memory, then from disk after the table empties. */
    g = get(d, DEV_A, &i2);
    assert_int_equal(i2.source, KC_FROM_MEMORY);
    assert_string_equal(i2.key, i1.key);
    adamw_call(g, DEV_A, 1e-3f, 2);
    kc_graph_release(g);
    kcdt_unload_all();
    g = get(d, DEV_A, &i2);
    assert_int_equal(i2.source, KC_FROM_DISK);
    adamw_call(g, DEV_A, 5e-5f, 3);
    kc_graph_release(g);
    /* The other device of the variant: the same entry, its own grid. */
    g = get(d, DEV_B, &i2);
    assert_int_equal(i2.source, KC_FROM_DISK);
    assert_string_equal(i2.key, i1.key);
    adamw_call(g, DEV_B, 2e-4f, 4);
    kc_graph_release(g);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), compiles0 + 1);
    /* A value of the wrong type (a float step) is refused before any launch. */
    g = get(d, DEV_A, &i2);
    assert_int_equal(kc_cuda_push(DEV_A), KC_OK);
    kc_tensor in[4] = {vec(KC_DTYPE_F32, 64), vec(KC_DTYPE_BF16, 64), vec(KC_DTYPE_F32, 64), vec(KC_DTYPE_F32, 64)},
              out;
    kc_value v[6] = {{KC_ARG_F32, {.f32 = 1}}, {KC_ARG_F32, {.f32 = 1}}, {KC_ARG_F32, {.f32 = 1}},
                     {KC_ARG_F32, {.f32 = 1}}, {KC_ARG_F32, {.f32 = 1}}, {KC_ARG_F32, {.f32 = 1}}};
    kcd_reset();
    assert_int_equal(kc_graph_forward_args(g, in, 4, &out, 1, NULL, NULL, NULL, NULL, v, 6), KC_EINVAL);
    if (!strstr(kc_error_last()->message, "step")) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 0);
    for (int i = 0; i < 4; i++) kc_cuda_free(in[i].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/* ---- linear: backward accumulates into the caller's dW and db ---- */

static void test_linear_backward_accumulates_into_callers_buffers(void **state) {
    (void)state;
    enum { M = 40, K = 70, N = 50 };
    kc_graph_desc *d = kcdt_load("linear.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, DEV_A, &info);
    assert_int_equal(kc_cuda_push(DEV_A), KC_OK);
    kc_tensor in[3] = {mat(M, K), mat(N, K), vec(KC_DTYPE_F32, N)}, out, gout;
    memset(&out, 0, sizeof out);
    kc_saved *sv = NULL;
    kcd_reset();
    if (kc_graph_forward(g, in, 3, &out, 1, &sv, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l = launch(0);
    assert_int_equal(l.grid[0], (N + 15) / 16);
    assert_int_equal(l.grid[1], (M + 15) / 16);
    for (int i = 0; i < 3; i++) assert_int_equal(kcd_launch_arg_u64(&l, (size_t)i), ptr(in[i].data));
    assert_int_equal(kcd_launch_arg_u64(&l, 3), ptr(out.data));
    assert_int_equal(kcd_launch_arg_u64(&l, 4), M);
    assert_int_equal(kcd_launch_arg_u64(&l, 5), N);
    assert_int_equal(kcd_launch_arg_u64(&l, 6), K);
    gout = mat(M, N);

    /* Without the caller's buffers for dW and db: refused, nothing launched. */
    kc_tensor gin[3];
    memset(gin, 0, sizeof gin);
    kcd_reset();
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, gin, 3, NULL), KC_EINVAL);
    assert_int_equal(kcd_launch_count(), 0);

    /* With them (as a trainer holds them across micro-batches): twice, into the same buffers. */
    kc_tensor dw = mat(N, K), db = vec(KC_DTYPE_F32, N);
    for (int micro = 0; micro < 2; micro++) {
        memset(gin, 0, sizeof gin);
        gin[1] = dw;
        gin[2] = db;
        kcd_reset();
        if (kc_graph_backward(g, sv, &gout, 1, gin, 3, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_ptr_equal(gin[1].data, dw.data); /* the caller's, untouched */
        assert_ptr_equal(gin[2].data, db.data);
        assert_non_null(gin[0].data); /* dx: allocated by backward */
        assert_int_equal(gin[0].sizes[0], M);
        assert_int_equal(gin[0].sizes[1], K);
        assert_int_equal(log_count("cuMemsetD"), 0); /* accumulating gradients are never zeroed */
        assert_int_equal(kcd_launch_count(), 3);
        kcd_launch x = launch(0), w = launch(1), b = launch(2);
        if (!strstr(x.kernel, "linear_gemm") || !strstr(w.kernel, "linear_gemm") ||
            strcmp(b.kernel, "linear_bias_grad"))
            fail_msg("launched %s, %s, %s", x.kernel, w.kernel, b.kernel);
        /* dx = dy W: fresh. */
        assert_int_equal(kcd_launch_arg_u64(&x, 0), ptr(gout.data));
        assert_int_equal(kcd_launch_arg_u64(&x, 1), ptr(in[1].data));
        assert_int_equal(kcd_launch_arg_u64(&x, 2), 0); /* null: no bias */
        assert_int_equal(kcd_launch_arg_u64(&x, 3), ptr(gin[0].data));
        assert_int_equal(x.grid[0], (K + 15) / 16);
        assert_int_equal(x.grid[1], (M + 15) / 16);
        /* dW += dy^T x into the caller's dW. */
        assert_int_equal(kcd_launch_arg_u64(&w, 0), ptr(gout.data));
        assert_int_equal(kcd_launch_arg_u64(&w, 1), ptr(in[0].data));
        assert_int_equal(kcd_launch_arg_u64(&w, 2), 0);
        assert_int_equal(kcd_launch_arg_u64(&w, 3), ptr(dw.data));
        assert_int_equal(kcd_launch_arg_u64(&w, 4), N);
        assert_int_equal(kcd_launch_arg_u64(&w, 5), K);
        assert_int_equal(kcd_launch_arg_u64(&w, 6), M);
        /* db += column sums of dy into the caller's db. */
        assert_int_equal(kcd_launch_arg_u64(&b, 0), ptr(gout.data));
        assert_int_equal(kcd_launch_arg_u64(&b, 1), ptr(db.data));
        assert_int_equal(kcd_launch_arg_u64(&b, 2), M);
        assert_int_equal(kcd_launch_arg_u64(&b, 3), N);
        kc_tensor_release(&gin[0], NULL, NULL);
    }
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(dw.data, NULL);
    kc_cuda_free(db.data, NULL);
    kc_cuda_free(gout.data, NULL);
    for (int i = 0; i < 3; i++) kc_cuda_free(in[i].data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* ---- global_norm: the output zeroed before the atomic kernel ---- */

static void test_global_norm_zeroes_its_output_first(void **state) {
    (void)state;
    enum { N = 3000000 };
    kc_graph_desc *d = kcdt_load("global_norm.json");
    for (int dev = DEV_A; dev <= DEV_B; dev++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        kc_graph *g = get(d, dev, &info);
        assert_int_equal(kc_cuda_push(dev), KC_OK);
        kc_tensor in = vec(KC_DTYPE_BF16, N), out;
        memset(&out, 0, sizeof out);
        kcd_reset();
        if (kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(kcd_launch_count(), 1);
        kcd_launch l = launch(0);
        if (!strstr(l.kernel, "global_norm_squared")) fail_msg("launched %s", l.kernel);
        assert_int_equal(l.grid[0], (unsigned)min64(sms[dev] * (2048 / 512), (N + 511) / 512));
        assert_int_equal(l.block[0], 512);
        assert_int_equal(kcd_launch_arg_u64(&l, 0), ptr(out.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 1), ptr(in.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 2), N);
        /* One memset of the output's 4 bytes, before the kernel that adds into it. */
        char at[64];
        snprintf(at, sizeof at, "%#llx = 0 x 4 (4 bytes)", (unsigned long long)ptr(out.data));
        assert_int_equal(log_count("cuMemsetD"), 1);
        unsigned long long zero = line_of("cuMemsetD8Async", at);
        if (!zero || zero >= l.seq) {
            char *log = kcd_call_log();
            fail_msg("no zeroing of the output before the launch (line %llu, launch %llu):\n%s", zero, l.seq, log);
        }
        float host = 1.f;
        assert_int_equal(kc_cuda_copy_to_host(&host, out.data, 4), KC_OK);
        assert_true(host == 0.f); /* the double runs no kernel: what is there is the memset's */
        kc_tensor_release(&out, NULL, NULL);
        kc_cuda_free(in.data, NULL);
        kc_cuda_pop();
        kcdt_no_defects();
        kc_graph_release(g);
    }
    kc_graph_desc_free(d);
}

/* ---- attn_softmax: a row in more than 48 KiB of dynamic shared memory ---- */

/* Forward (and, if `bwd`, backward) of attn_softmax on [R, C] with scale s; returns forward's status. */
static int attn_call(kc_graph *g, int64_t R, int64_t C, float s, int bwd) {
    assert_int_equal(kc_cuda_push(DEV_A), KC_OK);
    kc_tensor in = mat(R, C), out, gout, gin;
    memset(&out, 0, sizeof out);
    kc_saved *sv = NULL;
    kc_value v = {KC_ARG_F32, {.f32 = s}};
    kcd_reset();
    int rc = kc_graph_forward_args(g, &in, 1, &out, 1, bwd ? &sv : NULL, NULL, NULL, NULL, &v, 1);
    if (rc == KC_OK) {
        assert_int_equal(kcd_launch_count(), 1);
        kcd_launch l = launch(0);
        if (!strstr(l.kernel, "attn_softmax_fwd")) fail_msg("launched %s", l.kernel);
        assert_int_equal(l.grid[0], R);
        assert_int_equal(l.block[0], 512);
        assert_int_equal(l.shared, C * 4);
        assert_int_equal(kcd_launch_arg_u64(&l, 0), ptr(in.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 1), ptr(out.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 2), C);
        assert_true(arg_f32(&l, 3) == s);
    }
    if (rc == KC_OK && bwd) {
        gout = mat(R, C);
        memset(&gin, 0, sizeof gin);
        kcd_reset();
        if (kc_graph_backward(g, sv, &gout, 1, &gin, 1, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(kcd_launch_count(), 1);
        kcd_launch l = launch(0);
        if (!strstr(l.kernel, "attn_softmax_bwd")) fail_msg("launched %s", l.kernel);
        assert_int_equal(l.shared, C * 4);
        assert_int_equal(kcd_launch_arg_u64(&l, 0), ptr(gout.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 1), ptr(out.data)); /* the forward's output */
        assert_int_equal(kcd_launch_arg_u64(&l, 2), ptr(gin.data));
        assert_int_equal(kcd_launch_arg_u64(&l, 3), C);
        assert_true(arg_f32(&l, 4) == s); /* the forward's value */
        kc_tensor_release(&gin, NULL, NULL);
        kc_cuda_free(gout.data, NULL);
    }
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    return rc;
}

static void test_attn_softmax_row_in_large_shared_memory(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("attn_softmax.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, DEV_A, &info);
    /* 64 KiB per row: the attribute is raised before the launch, once per function and size. */
    if (attn_call(g, 3, 16384, 0.125f, 0)) fail_msg("%s", kc_error_last()->message);
    unsigned long long set = line_of("cuFuncSetAttribute", "MAX_DYNAMIC_SHARED_SIZE_BYTES=65536");
    if (!set || set >= launch(0).seq || !line_of("cuFuncSetAttribute", "attn_softmax_fwd")) {
        char *log = kcd_call_log();
        fail_msg("no 64 KiB attribute on attn_softmax_fwd before its launch:\n%s", log);
    }
    /* Again with backward: the forward's function is set already; the backward's gets its own. */
    if (attn_call(g, 5, 16384, 0.5f, 1)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(log_count("cuFuncSetAttribute"), 1); /* the log since the backward began */
    set = line_of("cuFuncSetAttribute", "attn_softmax_bwd");
    if (!set || set >= launch(0).seq) {
        char *log = kcd_call_log();
        fail_msg("no attribute on attn_softmax_bwd before its launch:\n%s", log);
    }
    /* A short row (32 KiB) and a long one near the limit (228000 bytes) launch. */
    assert_int_equal(attn_call(g, 2, 8192, 0.5f, 0), KC_OK);
    assert_int_equal(attn_call(g, 2, 57000, 0.5f, 0), KC_OK);
    /* A row beyond the 9.0 device's opt-in maximum (232448): refused before the driver. */
    assert_int_equal(attn_call(g, 2, 60000, 0.5f, 0), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "240000") || !strstr(m, "232448"))
        fail_msg("the refusal does not name the bytes and the limit: %s", m);
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuLaunchKernel"), 0);
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* ---- the GPU tests' runner, up to its comparison ---- */

static void test_check_runner_reaches_the_comparison(void **state) {
    (void)state;
    const char *names[] = {"attn_softmax", "global_norm", "adamw", "linear"};
    for (size_t i = 0; i < KC_ARRAY_LEN(names); i++) {
        char spec[64], msg[512];
        snprintf(spec, sizeof spec, "%s.json", names[i]);
        assert_true(kcc_has_reference(names[i]));
        kc_graph_desc *d = kcdt_load(spec);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        kc_graph *g = get(d, DEV_A, &info);
        kcd_reset();
        int rc = kcc_check(g, DEV_A, names[i], msg, sizeof msg);
        /* No kernel ran, so no output can match: a mismatch, never a failed call. */
        if (rc != KC_ECORRUPT) fail_msg("%s: %d, %s", names[i], rc, msg);
        if (!strstr(msg, "max error")) fail_msg("%s: %s", names[i], msg);
        assert_true(kcd_launch_count() >= 1);
        kcdt_no_defects();
        kc_graph_release(g);
        kc_graph_desc_free(d);
    }
}

/* Last: nothing the library made is still alive in the driver. */
static void test_nothing_leaks(void **state) {
    (void)state;
    kcdt_unload_all();
    kcdt_no_leaks("at the end");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_in_place_one_compile_two_hits),
        cmocka_unit_test(test_linear_backward_accumulates_into_callers_buffers),
        cmocka_unit_test(test_global_norm_zeroes_its_output_first),
        cmocka_unit_test(test_attn_softmax_row_in_large_shared_memory),
        cmocka_unit_test(test_check_runner_reaches_the_comparison),
        cmocka_unit_test(test_nothing_leaks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
