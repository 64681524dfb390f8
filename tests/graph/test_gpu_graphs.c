/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gpu_graphs.c (label gpu) — on a real device: every bundled graph's forward and
 * backward, loaded through the cache, matches a CPU reference in fp32 (tools/kcache/check.c:
 * relative tolerance 2e-3 on values, 5e-3 on gradients; 1e-2 and 2e-2 where the outputs are bf16,
 * rmsnorm_bf16) — the training-step graphs too:
 * AdamW's in-place parameters and moments, linear's gradients accumulated into the caller's
 * buffers, global_norm's atomic sum into a zeroed output, attn_softmax's 64 KiB rows; a second
 * get is a memory hit; cuda_graph replays give bit-identical results to direct launches, across
 * shapes and past its shape limit; philox is reproducible for a seed and offset; with only PTX
 * stored the graph loads by JIT; on 9.0 an sm_90a variant is chosen over sm_90.  Exits 77
 * (skipped) without a driver.
 */

#include <math.h>
#include <stdio.h>

#include "kcache.h"
#include "check.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;
static int major, minor;

static float frand(unsigned *s) { return (float)((rand_r(s) % 20001) - 10000) / 10000.0f; }

static void *to_dev(const float *h, size_t n) {
    void *d;
    assert_int_equal(kc_cuda_malloc(&d, n * 4, NULL), KC_OK);
    assert_int_equal(kc_cuda_copy_to_device(d, h, n * 4), KC_OK);
    return d;
}

static float *to_host(const kc_tensor *t) {
    size_t n = 1;
    for (int r = 0; r < t->rank; r++) n *= (size_t)t->sizes[r];
    float *h = malloc(n * 4 + 4);
    assert_int_equal(kc_cuda_synchronize(), KC_OK);
    assert_int_equal(kc_cuda_copy_to_host(h, t->data, n * 4), KC_OK);
    return h;
}

static kc_tensor t1(void *d, int64_t a) {
    kc_tensor t = {d, KC_DTYPE_F32, 1, {a}, {1}};
    return t;
}
static kc_tensor t2(void *d, int64_t a, int64_t b) {
    kc_tensor t = {d, KC_DTYPE_F32, 2, {a, b}, {b, 1}};
    return t;
}

static kc_graph *get(const char *spec, kc_graph_info *info) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, spec);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, p), KC_OK);
    kc_graph *g;
    int rc = kc_graph_get(cache, d, 0, &g, info);
    if (rc) fail_msg("%s: %s", spec, kc_error_last()->message);
    kc_graph_desc_free(d);
    return g;
}

/* Every graph of kernels/ against its CPU reference (tools/kcache/check.c, shared with `kcache demo`). */
static void check_graph(const char *spec, const char *name) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(spec, &info);
    char msg[512];
    int rc = kcc_check(g, 0, name, msg, sizeof msg);
    if (rc != KC_OK) fail_msg("%s: %s", name, msg);
    /* A second get of the same graph is a memory hit, the same object. */
    kc_graph_info again = KC_GRAPH_INFO_INIT;
    kc_graph *g2 = get(spec, &again);
    assert_int_equal(again.source, KC_FROM_MEMORY);
    assert_ptr_equal(g, g2);
    kc_graph_release(g2);
    kc_graph_release(g);
}

static void test_softmax(void **state) {
    (void)state;
    check_graph("softmax.json", "softmax");
}
static void test_layer_norm(void **state) {
    (void)state;
    check_graph("layer_norm.json", "layer_norm");
}
static void test_add_mul_gelu(void **state) {
    (void)state;
    check_graph("add_mul_gelu.json", "add_mul_gelu");
}
static void test_mlp_block(void **state) {
    (void)state;
    check_graph("mlp_block.json", "mlp_block");
}
static void test_softmax_xent(void **state) {
    (void)state;
    check_graph("softmax_xent.json", "softmax_xent");
}
static void test_dropout(void **state) {
    (void)state;
    check_graph("dropout.json", "dropout");
}
/* The training-step graphs (issue 17): a runtime scale in 64 KiB of shared memory, an atomic sum into a zeroed
 * output, an in-place optimizer step, a backward accumulating into the caller's gradients. */
static void test_attn_softmax(void **state) {
    (void)state;
    check_graph("attn_softmax.json", "attn_softmax");
}
static void test_global_norm(void **state) {
    (void)state;
    check_graph("global_norm.json", "global_norm");
}
static void test_adamw(void **state) {
    (void)state;
    check_graph("adamw.json", "adamw");
}
static void test_linear(void **state) {
    (void)state;
    check_graph("linear.json", "linear");
}
static void test_rmsnorm_bf16(void **state) {
    (void)state;
    check_graph("rmsnorm_bf16.json", "rmsnorm_bf16");
}

/* Forward (and backward) of softmax for R rows through `g`; results in host memory. */
static void softmax_run(kc_graph *g, int R, unsigned seed, float **y, float **gx) {
    enum { C = 777 };
    float *x = malloc(sizeof(float) * R * C), *gy = malloc(sizeof(float) * R * C);
    for (int i = 0; i < R * C; i++) x[i] = 3 * frand(&seed), gy[i] = frand(&seed);
    kc_tensor in = t2(to_dev(x, (size_t)R * C), R, C), out, gin, gout = t2(to_dev(gy, (size_t)R * C), R, C);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, &sv, NULL, NULL), KC_OK);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.sizes[0], R);
    /* softmax backward reads the output only: the input may go (a replay copied it in). */
    kc_cuda_free(in.data, NULL);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, &gin, 1, NULL), KC_OK);
    *y = to_host(&out);
    *gx = to_host(&gin);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_tensor_release(&gin, NULL, NULL);
    kc_cuda_free(gout.data, NULL);
    free(x);
    free(gy);
}

static void test_cuda_graph_replay_matches_direct(void **state) {
    (void)state;
    kc_graph_desc *plain, *captured;
    assert_int_equal(kc_graph_desc_load(&plain, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    assert_int_equal(kc_graph_desc_load(&captured, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    assert_int_equal(kc_graph_add_wrapper(captured, "cuda_graph", 1, "2", 1), KC_OK); /* at most 2 shapes */
    kc_graph *g, *cg;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_get(cache, plain, 0, &g, &info), KC_OK);
    assert_int_equal(kc_graph_get(cache, captured, 0, &cg, &info), KC_OK);
    assert_ptr_not_equal(g, cg);
    kc_cuda_push(0);
    /* Rows 64 (capture, then two replays with new data), 5 (a second capture), 9 (over the limit: direct). */
    const int rows[] = {64, 64, 64, 5, 64, 9};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        float *y1, *g1, *y2, *g2;
        softmax_run(g, rows[i], 100 + (unsigned)i, &y1, &g1);
        softmax_run(cg, rows[i], 100 + (unsigned)i, &y2, &g2);
        assert_memory_equal(y1, y2, sizeof(float) * (size_t)rows[i] * 777); /* the same kernels: bit-identical */
        assert_memory_equal(g1, g2, sizeof(float) * (size_t)rows[i] * 777);
        free(y1), free(g1), free(y2), free(g2);
    }
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_release(cg);
    kc_graph_desc_free(plain);
    kc_graph_desc_free(captured);
}

static void test_philox_dropout_is_reproducible(void **state) {
    (void)state;
    enum { N = 100000 };
    unsigned s = 6;
    static float x[N], gy[N];
    /* x in [1, 3]: the mask is read off the output, where a kept 0 would look dropped. */
    for (int i = 0; i < N; i++) x[i] = 2 + frand(&s), gy[i] = frand(&s);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get("dropout.json", &info);
    kc_cuda_push(0);
    kc_tensor in = t1(to_dev(x, N), N), o1, o2, o3, gin, gout = t1(to_dev(gy, N), N);
    kc_rng_state a = {1234, 0}, b = {1234, 0}, other = {99, 0};
    kc_saved *sv;
    assert_int_equal(kc_graph_forward_rng(g, &in, 1, &o1, 1, &sv, NULL, NULL, &a), KC_OK);
    assert_int_equal(kc_graph_forward_rng(g, &in, 1, &o2, 1, NULL, NULL, NULL, &b), KC_OK);
    assert_int_equal(kc_graph_forward_rng(g, &in, 1, &o3, 1, NULL, NULL, NULL, &other), KC_OK);
    assert_int_equal(a.offset, 16777216);
    float *h1 = to_host(&o1), *h2 = to_host(&o2), *h3 = to_host(&o3);
    assert_memory_equal(h1, h2, N * 4); /* same seed and offset: the same mask */
    int kept = 0, differ = 0;
    for (int i = 0; i < N; i++) {
        kept += h1[i] != 0;
        differ += (h1[i] != 0) != (h3[i] != 0);
        if (h1[i] != 0 && fabsf(h1[i] - 2 * x[i]) > 1e-6f) fail_msg("kept element %d not scaled", i);
    }
    assert_true(kept > N * 0.48 && kept < N * 0.52);
    assert_true(differ > N / 4);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, &gin, 1, NULL), KC_OK);
    float *hg = to_host(&gin);
    for (int i = 0; i < N; i++)
        if (fabsf(hg[i] - (h1[i] != 0 ? 2 * gy[i] : 0.f)) > 1e-6f) fail_msg("gradient %d uses another mask", i);
    assert_int_equal(kc_graph_forward(g, &in, 1, &o3, 1, NULL, NULL, NULL), KC_EINVAL); /* no RNG state */
    kc_saved_free(sv, NULL);
    kc_tensor_release(&o1, NULL, NULL);
    kc_tensor_release(&o2, NULL, NULL);
    kc_tensor_release(&gin, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    free(h1);
    free(h2);
    free(h3);
    free(hg);
}

/* Variant selection through kc_graph_get: a distinct globals word gives each case its own key. */
static kc_graph_desc *softmax_with_globals(uint64_t globals) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    kc_graph_set_globals(d, globals);
    return d;
}

static void test_ptx_only_loads_by_jit(void **state) {
    (void)state;
    kc_graph_desc *d = softmax_with_globals(0x51);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "compute_80", &info), KC_OK);
    kc_graph *g;
    assert_int_equal(kc_graph_get(cache, d, 0, &g, &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_string_equal(info.variant, "compute_80");
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

static void test_arch_specific_chosen_on_its_device(void **state) {
    (void)state;
    if (!(major == 9 && minor == 0)) skip();
    kc_graph_desc *d = softmax_with_globals(0x90a);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90a", &info), KC_OK);
    kc_graph *g;
    assert_int_equal(kc_graph_get(cache, d, 0, &g, &info), KC_OK);
    assert_string_equal(info.variant, "sm_90a");
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

static int setup(void **state) {
    (void)state;
    return kct_open_cache("gpu", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

int main(void) {
    if (kc_cuda_available() != KC_OK) {
        fprintf(stderr, "skipped: %s\n", kc_error_last()->message);
        return KC_SKIP_CODE;
    }
    kc_cuda_capability(0, &major, &minor);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layer_norm),
        cmocka_unit_test(test_add_mul_gelu),
        cmocka_unit_test(test_mlp_block),
        cmocka_unit_test(test_softmax_xent),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_attn_softmax),
        cmocka_unit_test(test_global_norm),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_rmsnorm_bf16),
        cmocka_unit_test(test_cuda_graph_replay_matches_direct),
        cmocka_unit_test(test_philox_dropout_is_reproducible),
        cmocka_unit_test(test_ptx_only_loads_by_jit),
        cmocka_unit_test(test_arch_specific_chosen_on_its_device),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
