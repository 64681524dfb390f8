/*
 * test_gpu_graphs.c (label gpu) — on a real device: every bundled graph's forward and
 * backward, loaded through the cache, matches a CPU reference in fp32 (relative tolerance
 * 2e-3 on values, 5e-3 on gradients: the kernels use fast exp and a different summation
 * order); a second get is a memory hit; with only PTX stored the graph loads by JIT; on 9.0
 * an sm_90a variant is chosen over sm_90.  Exits 77 (skipped) without a driver.
 */

#include <math.h>
#include <stdio.h>

#include "kcache.h"
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

static void close_enough(const char *what, const float *got, const float *want, size_t n, float rtol) {
    double maxerr = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) maxerr = fmax(maxerr, fabs(got[i] - want[i]));
    if (!(maxerr <= rtol * scale)) fail_msg("%s: max error %.3g against scale %.3g", what, maxerr, scale);
}

static kc_tensor t1(void *d, int64_t a) { kc_tensor t = {d, KC_DTYPE_F32, 1, {a}, {1}}; return t; }
static kc_tensor t2(void *d, int64_t a, int64_t b) { kc_tensor t = {d, KC_DTYPE_F32, 2, {a, b}, {b, 1}}; return t; }

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

static float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
static float gelu_grad(float x) {
    float u = 0.7978845608f * (x + 0.044715f * x * x * x), t = tanhf(u);
    return 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x);
}

static void test_softmax(void **state) {
    (void)state;
    enum { R = 37, C = 1000 };
    unsigned s = 1;
    float *x = malloc(R * C * 4), *gy = malloc(R * C * 4), *y = malloc(R * C * 4), *gx = malloc(R * C * 4);
    for (int i = 0; i < R * C; i++) x[i] = 3 * frand(&s), gy[i] = frand(&s);
    for (int r = 0; r < R; r++) {
        float m = -INFINITY, sum = 0, dot = 0;
        for (int j = 0; j < C; j++) m = fmaxf(m, x[r * C + j]);
        for (int j = 0; j < C; j++) sum += expf(x[r * C + j] - m);
        for (int j = 0; j < C; j++) y[r * C + j] = expf(x[r * C + j] - m) / sum;
        for (int j = 0; j < C; j++) dot += gy[r * C + j] * y[r * C + j];
        for (int j = 0; j < C; j++) gx[r * C + j] = y[r * C + j] * (gy[r * C + j] - dot);
    }
    kc_graph_info info;
    kc_graph *g = get("softmax.json", &info);
    kc_cuda_push(0);
    kc_tensor in = t2(to_dev(x, R * C), R, C), out, gin, gout = t2(to_dev(gy, R * C), R, C);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, &sv, NULL, NULL), KC_OK);
    float *hy = to_host(&out);
    close_enough("softmax forward", hy, y, R * C, 2e-3f);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, &gin, 1, NULL), KC_OK);
    float *hgx = to_host(&gin);
    close_enough("softmax backward", hgx, gx, R * C, 5e-3f);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_tensor_release(&gin, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    /* A second get of the same graph is a memory hit, the same object. */
    kc_graph_info again;
    kc_graph *g2 = get("softmax.json", &again);
    assert_int_equal(again.source, KC_FROM_MEMORY);
    assert_ptr_equal(g, g2);
    kc_graph_release(g2);
    kc_graph_release(g);
    free(x); free(gy); free(y); free(gx); free(hy); free(hgx);
}

static void test_layer_norm(void **state) {
    (void)state;
    enum { R = 19, D = 333 };
    unsigned s = 2;
    float x[R * D], gm[D], bt[D], gy[R * D], y[R * D], gx[R * D], ggm[D] = {0}, gbt[D] = {0};
    for (int i = 0; i < R * D; i++) x[i] = 2 * frand(&s), gy[i] = frand(&s);
    for (int j = 0; j < D; j++) gm[j] = 1 + frand(&s) / 2, bt[j] = frand(&s);
    for (int r = 0; r < R; r++) {
        double mu = 0, var = 0;
        for (int j = 0; j < D; j++) mu += x[r * D + j];
        mu /= D;
        for (int j = 0; j < D; j++) var += (x[r * D + j] - mu) * (x[r * D + j] - mu);
        float rs = 1.f / sqrtf((float)(var / D) + 1e-5f);
        double a = 0, b = 0;
        for (int j = 0; j < D; j++) {
            float xh = (float)(x[r * D + j] - mu) * rs;
            y[r * D + j] = xh * gm[j] + bt[j];
            a += gy[r * D + j] * gm[j];
            b += gy[r * D + j] * gm[j] * xh;
            ggm[j] += gy[r * D + j] * xh;
            gbt[j] += gy[r * D + j];
        }
        a /= D;
        b /= D;
        for (int j = 0; j < D; j++) {
            float xh = (float)(x[r * D + j] - mu) * rs;
            gx[r * D + j] = rs * (float)(gy[r * D + j] * gm[j] - a - xh * b);
        }
    }
    kc_graph_info info;
    kc_graph *g = get("layer_norm.json", &info);
    kc_cuda_push(0);
    kc_tensor in[3] = {t2(to_dev(x, R * D), R, D), t1(to_dev(gm, D), D), t1(to_dev(bt, D), D)};
    kc_tensor out, gin[3], gout = t2(to_dev(gy, R * D), R, D);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, in, 3, &out, 1, &sv, NULL, NULL), KC_OK);
    float *hy = to_host(&out);
    close_enough("layer_norm forward", hy, y, R * D, 2e-3f);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, gin, 3, NULL), KC_OK);
    float *h0 = to_host(&gin[0]), *h1 = to_host(&gin[1]), *h2 = to_host(&gin[2]);
    close_enough("layer_norm dx", h0, gx, R * D, 5e-3f);
    close_enough("layer_norm dgamma", h1, ggm, D, 5e-3f);
    close_enough("layer_norm dbeta", h2, gbt, D, 5e-3f);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    for (int i = 0; i < 3; i++) kc_tensor_release(&gin[i], NULL, NULL), kc_cuda_free(in[i].data, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    free(hy); free(h0); free(h1); free(h2);
}

static void test_add_mul_gelu(void **state) {
    (void)state;
    enum { N = 5000 };
    unsigned s = 3;
    static float a[N], b[N], c[N], gz[N], z[N], ga[N], gb[N], gc[N];
    for (int i = 0; i < N; i++) {
        a[i] = frand(&s), b[i] = frand(&s), c[i] = 2 * frand(&s), gz[i] = frand(&s);
        float t = a[i] + b[i], u = t * c[i];
        z[i] = gelu(u);
        float gu = gz[i] * gelu_grad(u);
        gc[i] = gu * t;
        ga[i] = gb[i] = gu * c[i];
    }
    kc_graph_info info;
    kc_graph *g = get("add_mul_gelu.json", &info);
    kc_cuda_push(0);
    kc_tensor in[3] = {t1(to_dev(a, N), N), t1(to_dev(b, N), N), t1(to_dev(c, N), N)}, out, gin[3];
    kc_tensor gout = t1(to_dev(gz, N), N);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, in, 3, &out, 1, &sv, NULL, NULL), KC_OK);
    float *hz = to_host(&out);
    close_enough("add_mul_gelu forward", hz, z, N, 2e-3f);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, gin, 3, NULL), KC_OK);
    float *h0 = to_host(&gin[0]), *h1 = to_host(&gin[1]), *h2 = to_host(&gin[2]);
    close_enough("add_mul_gelu da", h0, ga, N, 5e-3f);
    close_enough("add_mul_gelu db", h1, gb, N, 5e-3f);
    close_enough("add_mul_gelu dc", h2, gc, N, 5e-3f);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    for (int i = 0; i < 3; i++) kc_tensor_release(&gin[i], NULL, NULL), kc_cuda_free(in[i].data, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    free(hz); free(h0); free(h1); free(h2);
}

static void test_mlp_block(void **state) {
    (void)state;
    enum { M = 33, K = 256, H = 1024, N = 256 };
    unsigned s = 4;
    float *x = malloc(M * K * 4), *w1 = malloc(K * H * 4), *b1 = malloc(H * 4), *w2 = malloc(H * N * 4), *b2 = malloc(N * 4);
    float *hp = malloc(M * H * 4), *ha = malloc(M * H * 4), *y = malloc(M * N * 4), *gy = malloc(M * N * 4);
    float *dha = malloc(M * H * 4), *dhp = malloc(M * H * 4), *dx = malloc(M * K * 4), *dw1 = calloc(K * H, 4);
    float *db1 = calloc(H, 4), *dw2 = calloc(H * N, 4), *db2 = calloc(N, 4);
    for (int i = 0; i < M * K; i++) x[i] = frand(&s);
    for (int i = 0; i < K * H; i++) w1[i] = frand(&s) / 16;
    for (int i = 0; i < H; i++) b1[i] = frand(&s) / 4;
    for (int i = 0; i < H * N; i++) w2[i] = frand(&s) / 32;
    for (int i = 0; i < N; i++) b2[i] = frand(&s) / 4;
    for (int i = 0; i < M * N; i++) gy[i] = frand(&s);
    for (int m = 0; m < M; m++)
        for (int h = 0; h < H; h++) {
            double acc = b1[h];
            for (int k = 0; k < K; k++) acc += x[m * K + k] * w1[k * H + h];
            hp[m * H + h] = (float)acc;
            ha[m * H + h] = gelu((float)acc);
        }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = b2[n];
            for (int h = 0; h < H; h++) acc += ha[m * H + h] * w2[h * N + n];
            y[m * N + n] = (float)acc;
        }
    for (int m = 0; m < M; m++)
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += gy[m * N + n] * w2[h * N + n];
            dha[m * H + h] = (float)acc;
            dhp[m * H + h] = (float)acc * gelu_grad(hp[m * H + h]);
        }
    for (int h = 0; h < H; h++)
        for (int n = 0; n < N; n++)
            for (int m = 0; m < M; m++) dw2[h * N + n] += ha[m * H + h] * gy[m * N + n];
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) db2[n] += gy[m * N + n];
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            double acc = 0;
            for (int h = 0; h < H; h++) acc += dhp[m * H + h] * w1[k * H + h];
            dx[m * K + k] = (float)acc;
        }
    for (int k = 0; k < K; k++)
        for (int h = 0; h < H; h++)
            for (int m = 0; m < M; m++) dw1[k * H + h] += x[m * K + k] * dhp[m * H + h];
    for (int h = 0; h < H; h++)
        for (int m = 0; m < M; m++) db1[h] += dhp[m * H + h];
    kc_graph_info info;
    kc_graph *g = get("mlp_block.json", &info);
    kc_cuda_push(0);
    kc_tensor in[5] = {t2(to_dev(x, M * K), M, K), t2(to_dev(w1, K * H), K, H), t1(to_dev(b1, H), H),
                       t2(to_dev(w2, H * N), H, N), t1(to_dev(b2, N), N)};
    kc_tensor out, gin[5], gout = t2(to_dev(gy, M * N), M, N);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, in, 5, &out, 1, &sv, NULL, NULL), KC_OK);
    float *hy = to_host(&out);
    close_enough("mlp forward", hy, y, M * N, 2e-3f);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, gin, 5, NULL), KC_OK);
    const float *want[5] = {dx, dw1, db1, dw2, db2};
    const size_t n[5] = {M * K, K * H, H, H * N, N};
    for (int i = 0; i < 5; i++) {
        float *h = to_host(&gin[i]);
        char what[32];
        snprintf(what, sizeof what, "mlp grad_in[%d]", i);
        close_enough(what, h, want[i], n[i], 5e-3f);
        free(h);
        kc_tensor_release(&gin[i], NULL, NULL);
        kc_cuda_free(in[i].data, NULL);
    }
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    free(hy);
    free(x); free(w1); free(b1); free(w2); free(b2); free(hp); free(ha); free(y); free(gy);
    free(dha); free(dhp); free(dx); free(dw1); free(db1); free(dw2); free(db2);
}

static void test_softmax_xent(void **state) {
    (void)state;
    enum { N = 64, C = 500 };
    unsigned s = 5;
    float *x = malloc(N * C * 4), *p = malloc(N * C * 4), *gx = malloc(N * C * 4), loss = 0, gl = 1.5f;
    int lab[N];
    for (int i = 0; i < N * C; i++) x[i] = 3 * frand(&s);
    for (int r = 0; r < N; r++) {
        lab[r] = rand_r(&s) % C;
        float m = -INFINITY, sum = 0;
        for (int j = 0; j < C; j++) m = fmaxf(m, x[r * C + j]);
        for (int j = 0; j < C; j++) sum += expf(x[r * C + j] - m);
        for (int j = 0; j < C; j++) p[r * C + j] = expf(x[r * C + j] - m) / sum;
        loss += -(x[r * C + lab[r]] - m - logf(sum)) / N;
        for (int j = 0; j < C; j++) gx[r * C + j] = (p[r * C + j] - (j == lab[r])) * gl / N;
    }
    kc_graph_info info;
    kc_graph *g = get("softmax_xent.json", &info);
    kc_cuda_push(0);
    void *dl;
    assert_int_equal(kc_cuda_malloc(&dl, sizeof lab, NULL), KC_OK);
    assert_int_equal(kc_cuda_copy_to_device(dl, lab, sizeof lab), KC_OK);
    kc_tensor in[2] = {t2(to_dev(x, N * C), N, C), {dl, KC_DTYPE_I32, 1, {N}, {1}}}, out, gin[2];
    kc_tensor gout = t1(to_dev(&gl, 1), 1);
    kc_saved *sv;
    assert_int_equal(kc_graph_forward(g, in, 2, &out, 1, &sv, NULL, NULL), KC_OK);
    float *hl = to_host(&out);
    close_enough("xent loss", hl, &loss, 1, 2e-3f);
    assert_int_equal(kc_graph_backward(g, sv, &gout, 1, gin, 2, NULL), KC_OK);
    float *hg = to_host(&gin[0]);
    close_enough("xent dlogits", hg, gx, N * C, 5e-3f);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    for (int i = 0; i < 2; i++) kc_tensor_release(&gin[i], NULL, NULL), kc_cuda_free(in[i].data, NULL);
    kc_cuda_free(gout.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    free(x); free(p); free(gx); free(hl); free(hg);
}

static void test_philox_dropout_is_reproducible(void **state) {
    (void)state;
    enum { N = 100000 };
    unsigned s = 6;
    static float x[N], gy[N];
    for (int i = 0; i < N; i++) x[i] = frand(&s), gy[i] = frand(&s);
    kc_graph_info info;
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
    free(h1); free(h2); free(h3); free(hg);
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
    kc_graph_info info;
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
    kc_graph_info info;
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
        cmocka_unit_test(test_philox_dropout_is_reproducible),
        cmocka_unit_test(test_ptx_only_loads_by_jit),
        cmocka_unit_test(test_arch_specific_chosen_on_its_device),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
