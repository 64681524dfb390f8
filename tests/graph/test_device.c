/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_device.c — device facts in launch expressions (src/graph/device.c, expr.c, desc.c,
 * program.c) without a driver: the reserved names, evaluating with and without a device
 * bound, where they may and may not be used (descriptions, specs with file and place, the
 * strict program decoder), and the check of a description against the known devices of a
 * target that kc_graph_compile runs on a host without a GPU.  Loading and launching through
 * the driver double is test_device_double.c's.
 */
#include "common/internal.h"
#include "graph/graph_internal.h"
#include "graph/program.h"
#include "kcache.h"
#include "helpers.h"

static const char *const SRC = "extern \"C\" __global__ void k(float *y, int n) { if (n) y[0] = 1; }\n";

/* H100 SXM's facts, in device.c's order. */
static const int64_t H100[KC_DEVICE_NFACTS] = {132, 2048, 1024, 49152, 232448, 233472, 32};

static kc_graph_desc *desc_with(const char *grid0, const char *block0, const char *shared, const char *arg,
                                const char *scratch) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "dev"), KC_OK);
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "k.cu", .source = SRC, .name = "k"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, sizes), KC_OK);
    if (scratch && kc_graph_add_scratch(d, KC_PASS_FORWARD, scratch)) fail_msg("%s", kc_error_last()->message);
    const char *grid[3] = {grid0, "1", "1"}, *block[3] = {block0, "1", "1"};
    const char *args[] = {"output:0", arg ? arg : "e32:N"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, shared, args, 2))
        fail_msg("%s", kc_error_last()->message);
    return d;
}

static void test_the_reserved_names(void **state) {
    (void)state;
    static const char *const names[] = {
        "device_sm_count",       "device_max_threads_per_sm", "device_max_threads_per_block",
        "device_smem_per_block", "device_smem_optin",         "device_smem_per_sm",
        "device_warp_size"};
    assert_int_equal(KC_ARRAY_LEN(names), KC_DEVICE_NFACTS);
    for (int i = 0; i < KC_DEVICE_NFACTS; i++) {
        assert_int_equal(kc_device_fact(names[i], strlen(names[i])), i);
        assert_string_equal(kc_device_fact_name(i), names[i]);
    }
    assert_null(kc_device_fact_name(KC_DEVICE_NFACTS));
    assert_int_equal(kc_device_fact("device_sm_counts", 16), -1);
    assert_int_equal(kc_device_fact("device_sm_count", 14), -1); /* a prefix is not the name */
    assert_int_equal(kc_device_fact("device_", 7), -1);
    assert_int_equal(kc_device_fact("N", 1), -1);
}

static void test_expressions_read_the_bound_device(void **state) {
    (void)state;
    const char *names[] = {"N"};
    int64_t vals[] = {1000}, v = 0;
    assert_int_equal(kc_expr_eval_dev("ceildiv(N, device_sm_count) * device_warp_size", names, vals, 1, H100, &v),
                     KC_OK);
    assert_int_equal(v, 8 * 32);
    assert_int_equal(kc_expr_eval_dev("device_smem_optin - device_smem_per_block", names, vals, 1, H100, &v), KC_OK);
    assert_int_equal(v, 232448 - 49152);
    assert_int_equal(kc_expr_eval_dev("device_max_threads_per_sm + device_max_threads_per_block + device_smem_per_sm",
                                      NULL, NULL, 0, H100, &v),
                     KC_OK);
    assert_int_equal(v, 2048 + 1024 + 233472);
    /* No device bound: an error, never a value. */
    assert_int_equal(kc_expr_eval("device_sm_count * 2", names, vals, 1, &v), KC_EEXPR);
    assert_non_null(strstr(kc_error_last()->message, "no device bound"));
    assert_int_equal(kc_expr_eval_dev("device_sm_count", names, vals, 1, NULL, &v), KC_EEXPR);
    /* Checking: accepted, unless refused here; a near name is still unknown. */
    assert_int_equal(kc_expr_check("max(N, device_sm_count)", names, 1), KC_OK);
    assert_int_equal(kc_expr_check_nodev("max(N, device_sm_count)", names, 1), KC_EEXPR);
    assert_non_null(strstr(kc_error_last()->message, "device fact"));
    assert_int_equal(kc_expr_check_nodev("max(N, 2)", names, 1), KC_OK);
    assert_int_equal(kc_expr_check("device_sm_counts", names, 1), KC_EEXPR);
    /* A caller's own symbol of that name wins (the public evaluator takes any names). */
    const char *own[] = {"device_sm_count"};
    int64_t seven[] = {7};
    assert_int_equal(kc_expr_eval("device_sm_count", own, seven, 1, &v), KC_OK);
    assert_int_equal(v, 7);
}

static void test_where_a_description_may_use_them(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "bad"), KC_OK);
    /* Not an input's size symbol. */
    const char *fact[] = {"device_sm_count"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, fact, NULL, 0), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "device_sm_count") || !strstr(m, "device fact")) fail_msg("%s", m);
    /* Nor in an input's stride. */
    const char *n[] = {"N"}, *st[] = {"device_warp_size"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, n, st, 0), KC_EEXPR);
    assert_non_null(strstr(kc_error_last()->message, "input stride"));
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, n, NULL, 0), KC_OK);
    /* An output's size (per-SM partial results: evaluated on the device it is loaded on), a saved tensor's, scratch,
     * grid, block, shared memory and e32/e64 may. */
    const char *osz[] = {"N * device_sm_count"};
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, osz), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_SAVED, KC_DTYPE_F32, 1, osz), KC_OK);
    assert_int_equal(kc_graph_add_scratch(d, KC_PASS_FORWARD, "device_sm_count * 4"), KC_OK);
    kc_graph_desc_free(d);
    d = desc_with("device_sm_count * 2", "device_warp_size * 4", "device_smem_optin", "e64:device_smem_per_sm", NULL);
    kc_graph_desc_free(d);
}

static void test_a_spec_names_the_place(void **state) {
    (void)state;
    char *dir = kct_tmpdir("devspec");
    assert_non_null(dir);
    char p[512];
    snprintf(p, sizeof p, "%s/k.cu", dir);
    assert_int_equal(kct_write(p, SRC, strlen(SRC)), 0);
    static const struct {
        const char *inputs, *outputs, *place;
    } cases[] = {
        {"[\"N\", \"device_warp_size\"]", "[\"N\"]", "inputs[0]"},
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(cases); i++) {
        char json[1024];
        snprintf(
            json, sizeof json,
            "{\"name\": \"g\", \"kernels\": [{\"id\": \"k\", \"file\": \"k.cu\", \"entry\": \"k\"}],\n"
            " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": %s}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": %s}],\n"
            " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\", \"e32:N\"]}]}\n",
            cases[i].inputs, cases[i].outputs);
        snprintf(p, sizeof p, "%s/g.json", dir);
        assert_int_equal(kct_write(p, json, strlen(json)), 0);
        kc_graph_desc *d = NULL;
        assert_int_not_equal(kc_graph_desc_load(&d, p), KC_OK);
        assert_null(d);
        const char *m = kc_error_last()->message;
        char want[600];
        snprintf(want, sizeof want, "%s: %s", p, cases[i].place);
        if (!strstr(m, want) || !strstr(m, "device fact")) fail_msg("case %zu: %s", i, m);
    }
    kct_rmtree(dir);
    free(dir);
}

/* A program whose symbol is a device fact (bytes patched in after encoding) is corrupt. */
static void test_the_decoder_refuses_a_fact_as_symbol(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "patched"), KC_OK);
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "k.cu", .source = SRC, .name = "k"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"device_warp_sizf"}; /* as long as device_warp_size */
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[3] = {"device_sm_count", "1", "1"}, *block[3] = {"32", "1", "1"}, *args[] = {"input:0", "e32:1"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    assert_false(b.failed);
    kc_lprog *p = NULL;
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_OK);
    /* Bound: the grid is the device's; unbound: an error. */
    unsigned g[3], bl[3], sh;
    int64_t syms[1] = {10};
    assert_int_equal(kc_program_dims(p, 0, syms, g, bl, &sh), KC_EEXPR);
    p->dev = H100;
    assert_int_equal(kc_program_dims(p, 0, syms, g, bl, &sh), KC_OK);
    assert_int_equal(g[0], 132);
    kc_lprog_free(p);
    size_t hits = 0;
    for (size_t i = 0; i + 16 <= b.len; i++)
        if (memcmp(b.data + i, "device_warp_sizf", 16) == 0) b.data[i + 15] = 'e', hits++;
    assert_true(hits >= 2); /* the symbol and the input's size */
    p = (kc_lprog *)0x1;
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_ECORRUPT);
    assert_null(p);
    assert_non_null(strstr(kc_error_last()->message, "device fact"));
    kc_buf_free(&b);
    kc_graph_desc_free(d);
}

/* ---- the known devices: what a host without a GPU refuses ---- */

static void expect(const char *target, kc_graph_desc *d, int ok, const char *needle) {
    kc_target t;
    assert_int_equal(kc_target_parse(target, &t), KC_OK); /* parsed at the boundary, as the lookup does */
    int rc = kc_device_check_desc(d, &t);
    if (ok && rc) fail_msg("%s: refused: %s", target, kc_error_last()->message);
    if (!ok) {
        if (rc != KC_ECOMPILE) fail_msg("%s: accepted (rc %d)", target, rc);
        const char *m = kc_error_last()->message;
        if (!strstr(m, "graph 'dev'") || !strstr(m, "forward") || !strstr(m, target) || (needle && !strstr(m, needle)))
            fail_msg("%s: the message does not say what (%s): %s", target, needle ? needle : "", m);
    }
    kc_graph_desc_free(d);
}

static void test_the_known_devices_of_a_target(void **state) {
    (void)state;
    /* Shared memory: a constant above every opt-in maximum of the target's devices. */
    expect("sm_90", desc_with("1", "32", "300000", NULL, NULL), 0, "232448");
    expect("sm_90", desc_with("1", "32", "232448", NULL, NULL), 1, NULL);
    expect("sm_90a", desc_with("1", "32", "232449", NULL, NULL), 0, "kernel 'k'");
    expect("sm_80", desc_with("1", "32", "166912", NULL, NULL), 1, NULL); /* A100's 163 KiB */
    expect("sm_80", desc_with("1", "32", "166913", NULL, NULL), 0, "166912");
    expect("sm_89", desc_with("1", "32", "166912", NULL, NULL), 0, "101376"); /* L4, L40S: 99 KiB */
    expect("sm_86", desc_with("1", "32", "166912", NULL, NULL), 1, NULL);     /* Orin (8.7) loads sm_86 */
    expect("sm_120", desc_with("1", "32", "110000", NULL, NULL), 0, "step 0");
    expect("sm_100f", desc_with("1", "32", "232448", NULL, NULL), 1, NULL);
    expect("compute_80", desc_with("1", "32", "200000", NULL, NULL), 1, NULL); /* an H100 loads compute_80 */
    expect("compute_90", desc_with("1", "32", "240000", NULL, NULL), 0, NULL);
    expect("sm_75", desc_with("1", "32", "65537", NULL, NULL), 0, "T4");
    /* In terms of the facts: fits everywhere, or nowhere. */
    expect("sm_80", desc_with("1", "32", "device_smem_optin", NULL, NULL), 1, NULL);
    expect("sm_80", desc_with("1", "32", "device_smem_optin + 1", NULL, NULL), 0, NULL);
    /* A size symbol: known only at the call, nothing to check here. */
    expect("sm_90", desc_with("1", "32", "N * 1000000", NULL, NULL), 1, NULL);
    /* Block and grid limits, division by zero, 32 bits, a negative scratch size. */
    expect("sm_90", desc_with("1", "device_warp_size * 64", NULL, NULL, NULL), 0, "block.x");
    expect("sm_90", desc_with("1", "device_warp_size * 32", NULL, NULL, NULL), 1, NULL);
    expect("sm_90", desc_with("floordiv(1024, device_warp_size - 32)", "32", NULL, NULL, NULL), 0, "division by zero");
    expect("sm_90", desc_with("-1", "32", NULL, NULL, NULL), 0, "grid.x");
    expect("sm_90", desc_with("ceildiv(N, device_sm_count)", "32", NULL, NULL, NULL), 1, NULL);
    expect("sm_90", desc_with("1", "32", NULL, "e32:device_sm_count * 100000000", NULL), 0, "32 bits");
    expect("sm_90", desc_with("1", "32", NULL, "e64:device_sm_count * 100000000", NULL), 1, NULL);
    expect("sm_90", desc_with("1", "32", NULL, NULL, "device_sm_count - 1000"), 0, "scratch 0");
    /* A target no known device loads: nothing to check against. */
    expect("sm_99", desc_with("1", "32", "300000", NULL, NULL), 1, NULL);
}

/* kc_graph_compile refuses before compiling: a compile error, nothing stored. */
static void test_compile_refuses_before_nvrtc(void **state) {
    (void)state;
    char *dir;
    kc_cache *c;
    assert_int_equal(kct_open_cache("devcompile", &dir, &c), 0);
    kc_graph_desc *d = desc_with("1", "32", "300000", NULL, NULL);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(c, d, "sm_90", &info);
    if (rc == KC_ENONVRTC) { /* no NVRTC here: the key cannot be computed, nothing to see */
        kc_graph_desc_free(d);
        kct_close_cache(dir, c);
        skip();
    }
    assert_int_equal(rc, KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "opt-in"));
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_COMPILES], 0);
    assert_int_equal(kct_count_files(dir, ".sm_90"), 0);
    kc_graph_desc_free(d);
    kct_close_cache(dir, c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_reserved_names),
        cmocka_unit_test(test_expressions_read_the_bound_device),
        cmocka_unit_test(test_where_a_description_may_use_them),
        cmocka_unit_test(test_a_spec_names_the_place),
        cmocka_unit_test(test_the_decoder_refuses_a_fact_as_symbol),
        cmocka_unit_test(test_the_known_devices_of_a_target),
        cmocka_unit_test(test_compile_refuses_before_nvrtc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
