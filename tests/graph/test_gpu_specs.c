/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gpu_specs.c — on a real GPU, what a training step written elsewhere (llm.c) needs of a spec:
 * the built-in <math.h>'s constants (M_PI, INFINITY) in a kernel, a `bool` argument (true and
 * false), a zero step over a sub-range of an in-place input, an output sized by the device's SM
 * count (a grid of one block per SM writing it), and a graph of zero steps only (its range an
 * expression, refused at the call when it is negative).  Exits 77 (skipped) without a CUDA driver;
 * the driver double's test of the same paths is test_spec_double.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "kcache.h"

static const char K_CU[] =
    "#include <math.h>\n"
    "extern \"C\" __global__ void f(float *y, bool on, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = on ? (float)M_PI : -INFINITY;\n"
    "}\n"
    "extern \"C\" __global__ void part(float *p, long long n) {\n"
    "  if (threadIdx.x == 0) { p[blockIdx.x * 2] = (float)(blockIdx.x + 1); p[blockIdx.x * 2 + 1] = (float)gridDim.x; }\n"
    "}\n";
static const char A_TRUE[] =
    "{\"name\": \"gpu_a_true\", \"toolkit_headers\": true,\n"
    " \"kernels\": [{\"id\": \"f\", \"file\": \"k.cu\", \"entry\": \"f\"}, {\"id\": \"part\", \"file\": \"k.cu\", \"entry\": \"part\"}],\n"
    " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],\n"
    " \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}, {\"dtype\": \"f32\", \"sizes\": [\"device_sm_count\", 2]}],\n"
    " \"forward\": [{\"zero\": \"input:0+2\", \"count\": 3},\n"
    "   {\"kernel\": \"f\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1], \"args\": [\"output:0\", \"bool:true\", \"e64:N\"]},\n"
    "   {\"kernel\": \"part\", \"grid\": [\"device_sm_count\", 1, 1], \"block\": [32, 1, 1], \"args\": [\"output:1\", \"e64:N\"]}]}\n";
static const char A_FALSE[] =
    "{\"name\": \"gpu_a_false\", \"toolkit_headers\": true,\n"
    " \"kernels\": [{\"id\": \"f\", \"file\": \"k.cu\", \"entry\": \"f\"}, {\"id\": \"part\", \"file\": \"k.cu\", \"entry\": \"part\"}],\n"
    " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],\n"
    " \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}, {\"dtype\": \"f32\", \"sizes\": [\"device_sm_count\", 2]}],\n"
    " \"forward\": [{\"zero\": \"input:0+2\", \"count\": 3},\n"
    "   {\"kernel\": \"f\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1], \"args\": [\"output:0\", \"bool:false\", \"e64:N\"]},\n"
    "   {\"kernel\": \"part\", \"grid\": [\"device_sm_count\", 1, 1], \"block\": [32, 1, 1], \"args\": [\"output:1\", \"e64:N\"]}]}\n";
static const char C_JSON[] =
    "{\"name\": \"gpu_zero_only\", \"kernels\": [], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],\n"
    " \"forward\": [{\"zero\": \"input:0+1\", \"count\": \"N - 2\"}]}\n";

static void write_file(const char *name, const char *text) {
    if (kct_write(name, text, strlen(text)) != 0) {
        printf("FAIL write %s\n", name);
        exit(1);
    }
}

#define N 1000
static int bad;
#define CHECK(c, ...)                                   \
    do {                                                \
        if (!(c)) {                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
            bad++;                                      \
        }                                               \
    } while (0)
static kc_graph *get(kc_cache *c, const char *spec) {
    kc_graph_desc *d;
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_desc_load(&d, spec)) {
        printf("FAIL load %s: %s\n", spec, kc_error_last()->message);
        exit(1);
    }
    if (kc_graph_get(c, d, 0, &g, &info)) {
        printf("FAIL get %s: %s\n", spec, kc_error_last()->message);
        exit(1);
    }
    printf("%s: source %d variant %s (%s)\n", spec, info.source, info.variant, info.miss_reason);
    kc_graph_desc_free(d);
    return g;
}
int main(void) {
    if (kc_cuda_available() != KC_OK) {
        fprintf(stderr, "skipped: %s\n", kc_error_last()->message);
        return KC_SKIP_CODE;
    }
    char *dir = kct_tmpdir("gpuspecs");
    if (!dir || chdir(dir) != 0) return 1;
    write_file("k.cu", K_CU);
    write_file("a_true.json", A_TRUE);
    write_file("a_false.json", A_FALSE);
    write_file("c.json", C_JSON);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = "cache";
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) {
        printf("FAIL open: %s\n", kc_error_last()->message);
        return 1;
    }
    if (kc_cuda_push(0)) {
        printf("FAIL push: %s\n", kc_error_last()->message);
        return 1;
    }
    static float host[N], y[N], back[N];
    for (int b = 0; b < 2; b++) {
        kc_graph *g = get(c, b ? "a_false.json" : "a_true.json");
        kc_tensor in = {NULL, KC_DTYPE_F32, 1, {N}, {1}}, out[2];
        memset(out, 0, sizeof out);
        for (int i = 0; i < N; i++) host[i] = 7.f;
        CHECK(!kc_cuda_malloc(&in.data, sizeof host, NULL), "malloc");
        CHECK(!kc_cuda_copy_to_device(in.data, host, sizeof host), "copy");
        int rc = kc_graph_forward(g, &in, 1, out, 2, NULL, NULL, NULL);
        CHECK(rc == 0, "forward: %s", kc_error_last()->message);
        CHECK(!kc_cuda_synchronize(), "sync: %s", kc_error_last()->message);
        CHECK(!kc_cuda_copy_to_host(back, in.data, sizeof back), "copy back");
        for (int i = 0; i < N; i++) CHECK(back[i] == ((i >= 2 && i < 5) ? 0.f : 7.f), "x[%d] = %g", i, back[i]);
        CHECK(!kc_cuda_copy_to_host(y, out[0].data, sizeof y), "copy y");
        for (int i = 0; i < N; i++) CHECK(b ? (isinf(y[i]) && y[i] < 0) : y[i] == (float)M_PI, "y[%d] = %g", i, y[i]);
        int64_t sms = out[1].sizes[0];
        printf("output 1: [%lld, %lld]\n", (long long)sms, (long long)out[1].sizes[1]);
        CHECK(sms > 0 && sms < 1000 && out[1].sizes[1] == 2, "shape");
        float *p = calloc((size_t)sms * 2, sizeof *p);
        CHECK(!kc_cuda_copy_to_host(p, out[1].data, (size_t)sms * 8), "copy p");
        for (int64_t i = 0; i < sms; i++)
            CHECK(p[i * 2] == (float)(i + 1) && p[i * 2 + 1] == (float)sms, "p[%lld] = %g %g", (long long)i, p[i * 2],
                  p[i * 2 + 1]);
        free(p);
        kc_tensor_release(&out[0], NULL, NULL);
        kc_tensor_release(&out[1], NULL, NULL);
        kc_cuda_free(in.data, NULL);
        kc_graph_release(g);
    }
    kc_graph *g = get(c, "c.json");
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {N}, {1}};
    for (int i = 0; i < N; i++) host[i] = 7.f;
    CHECK(!kc_cuda_malloc(&in.data, sizeof host, NULL), "malloc");
    CHECK(!kc_cuda_copy_to_device(in.data, host, sizeof host), "copy");
    CHECK(kc_graph_forward(g, &in, 1, NULL, 0, NULL, NULL, NULL) == 0, "zero-only forward: %s",
          kc_error_last()->message);
    CHECK(!kc_cuda_synchronize(), "sync");
    CHECK(!kc_cuda_copy_to_host(back, in.data, sizeof back), "copy back");
    for (int i = 0; i < N; i++)
        CHECK(back[i] == ((i >= 1 && i < N - 1) ? 0.f : 7.f), "zero-only x[%d] = %g", i, back[i]);
    in.sizes[0] = 1; /* N - 2 = -1: refused before anything runs */
    CHECK(kc_graph_forward(g, &in, 1, NULL, 0, NULL, NULL, NULL) == KC_EINVAL, "N=1 accepted");
    printf("N=1: %s\n", kc_error_last()->message);
    kc_cuda_free(in.data, NULL);
    kc_graph_release(g);
    kc_cuda_pop();
    kc_cache_close(c);
    printf(bad ? "GPU CHECK FAILED (%d)\n" : "GPU CHECK OK\n", bad);
    kct_rmtree(dir);
    free(dir);
    return bad != 0;
}
