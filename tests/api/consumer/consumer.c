/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c — a runtime's first program against the INSTALLED kcache (tests/api/test_consumer.sh):
 * built as C11 and, through consumer.cpp, as C++11, both with -pedantic -Wall -Wextra -Werror, once
 * through find_package(kcache) and once through pkg-config.  It fills every struct it hands kcache
 * with an _INIT macro (and, in C, designated initialisers), checks that the headers and the library
 * agree on the version, that a struct never initialised is refused, then describes a graph, gets it
 * on the installed driver double (KCACHE_CUDA_DRIVER) and runs it, and checks through the double's
 * control API (kcache/cuda_double.h, no <cuda.h>) that it launched once and that nothing leaked.
 * argv[1]: an empty cache directory.  Exit 0, 77 (skipped: no NVRTC here), or 1 with the reason.
 */
#include <kcache.h>
#include <kcache/cuda_double.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond, what)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "consumer: %s failed (%s)\n", what, kc_error_last()->message); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

static const char *const SRC = "extern \"C\" __global__ void scale(const float *x, float *y, int n) {\n"
                               "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "    if (i < n) y[i] = 2.0f * x[i];\n"
                               "}\n";

static int describe(kc_graph_desc **out) {
    kc_graph_desc *d = NULL;
    CHECK(kc_graph_desc_new(&d, "scale") == KC_OK, "kc_graph_desc_new");
    *out = d;
#ifdef __cplusplus
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "scale.cu";
    k.source = SRC;
    k.name = "scale";
#else
    kc_kernel_src k = {.version = KC_KERNEL_SRC_VERSION, .file = "scale.cu", .source = SRC, .name = "scale"};
#endif
    int ki = -1;
    CHECK(kc_graph_add_kernel(d, &k, &ki) == KC_OK, "kc_graph_add_kernel");
    const char *const sizes[1] = {"N"};
    CHECK(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0) == KC_OK, "kc_graph_add_input");
    CHECK(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, sizes) == KC_OK, "kc_graph_add_tensor");
    const char *const grid[3] = {"ceildiv(N, 128)", "1", "1"}, *const block[3] = {"128", "1", "1"};
    const char *const args[3] = {"input:0", "output:0", "e32:N"};
    CHECK(kc_graph_add_step(d, KC_PASS_FORWARD, ki, grid, block, NULL, args, 3) == KC_OK, "kc_graph_add_step");
    return 0;
}

/* Forward once on device 0 of the double: one launch of "scale", its output released. */
static int run(kc_graph *g) {
    CHECK(kc_cuda_push(0) == KC_OK, "kc_cuda_push");
    kc_tensor in = KC_TENSOR_INIT, out = KC_TENSOR_INIT;
    in.dtype = KC_DTYPE_F32;
    in.rank = 1;
    in.sizes[0] = 1000;
    in.strides[0] = 1;
    CHECK(kc_cuda_malloc(&in.data, 4000, NULL) == KC_OK, "kc_cuda_malloc");
    kcd_reset();
    CHECK(kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL) == KC_OK, "kc_graph_forward");
    CHECK(kcd_launch_count() == 1, "one launch");
    kcd_launch l;
    CHECK(kcd_launch_get(0, &l) == 0 && strcmp(l.kernel, "scale") == 0 && l.grid[0] == 8, "the launch of scale");
    CHECK(out.rank == 1 && out.sizes[0] == 1000, "the output's shape");
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    return 0;
}

/* The loaded-graph table: the released graph stays loaded, unreferenced; the budget is read back,
 * set to 0 (unloading it) and restored. */
static int table(void) {
    kc_loaded_stats ls = KC_LOADED_STATS_INIT;
    CHECK(kc_graph_loaded_stats(&ls) == KC_OK, "kc_graph_loaded_stats");
    CHECK(ls.graphs == 1 && ls.in_use == 0 && ls.unreferenced == 1, "one unreferenced graph loaded");
    size_t max_graphs = 0, max_bytes = 0;
    kc_graph_loaded_budget_get(&max_graphs, &max_bytes);
    CHECK(max_graphs == ls.max_graphs && max_bytes == ls.max_bytes, "the budget read back");
    kc_graph_loaded_budget(0, 0);
    CHECK(kc_graph_loaded_stats(&ls) == KC_OK && ls.graphs == 0 && ls.unloads == 1, "unloaded at budget 0");
    kc_graph_loaded_budget(max_graphs, max_bytes);
    size_t g2 = 0, b2 = 0;
    kc_graph_loaded_budget_get(&g2, &b2);
    CHECK(g2 == max_graphs && b2 == max_bytes, "the budget restored");
    char leaks[512];
    CHECK(kcd_leaks(leaks, sizeof leaks) == 0, leaks);
    return 0;
}

/* Every _INIT compiles here, C and C++, -Wextra -Werror: none may leave a field unnamed. */
static int inits(void) {
    kc_header_src h = KC_HEADER_SRC_INIT;
    kc_tensor_meta m = KC_TENSOR_META_INIT;
    kc_call call = KC_CALL_INIT;
    kc_value v = KC_VALUE_INIT;
    kc_allocator a = KC_ALLOCATOR_INIT;
    kc_bundle_filter f = KC_BUNDLE_FILTER_INIT;
    kc_bundle_covers cov = KC_BUNDLE_COVERS_INIT;
    kc_bundle_report br = KC_BUNDLE_REPORT_INIT;
    kc_gc_report gr = KC_GC_REPORT_INIT;
    kc_verify_report vr = KC_VERIFY_REPORT_INIT;
    kc_signature_report sr = KC_SIGNATURE_REPORT_INIT;
    kc_graph_tensor_desc td = KC_GRAPH_TENSOR_DESC_INIT;
    static kc_explain x = KC_EXPLAIN_INIT;
    kc_redis_config rc = KC_REDIS_CONFIG_INIT;
    kc_site_options so = KC_SITE_OPTIONS_INIT;
    kc_site_info si = KC_SITE_INFO_INIT;
    kc_prewarm_options po = KC_PREWARM_OPTIONS_INIT;
    kc_key key = KC_KEY_INIT;
    kc_dim dim = KC_DIM_INIT;
    kc_rng_state rng = KC_RNG_STATE_INIT;
    kc_callable cb = KC_CALLABLE_INIT;
    kc_wrapper w = KC_WRAPPER_INIT;
    kc_forward_call fc = KC_FORWARD_CALL_INIT;
    return h.name == NULL && m.rank == 0 && call.inputs == NULL && v.type == KC_ARG_F32 && a.alloc == NULL &&
                   f.nkeys == 0 && cov.ngraphs == 0 && br.version == KC_BUNDLE_REPORT_VERSION &&
                   gr.version == KC_GC_REPORT_VERSION && vr.version == KC_VERIFY_REPORT_VERSION &&
                   sr.version == KC_SIGNATURE_REPORT_VERSION && td.version == KC_GRAPH_TENSOR_DESC_VERSION &&
                   x.version == KC_EXPLAIN_VERSION && rc.ttl_s == 0 && so.version == KC_SITE_OPTIONS_VERSION &&
                   si.version == KC_SITE_INFO_VERSION && po.version == KC_PREWARM_OPTIONS_VERSION &&
                   key.bytes[0] == 0 && dim.sym == NULL && rng.seed == 0 && cb.call == NULL && w.wrap == NULL &&
                   fc.graph == NULL
               ? 0
               : 1;
}

int main(int argc, char **argv) {
    CHECK(argc == 2, "usage: consumer CACHE_DIR");
    CHECK(inits() == 0, "the _INIT macros");
    CHECK(kc_version_number() == KC_VERSION_NUMBER && strcmp(kc_version(), KC_VERSION_STRING) == 0,
          "the headers and the library are one version");
    if (kc_nvrtc_available() != KC_OK) {
        printf("consumer: skipped, no NVRTC: %s\n", kc_error_last()->message);
        return 77;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = argv[1];
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    CHECK(kc_cache_open(&c, &o) == KC_OK, "kc_cache_open");
    kc_graph_desc *d = NULL;
    if (describe(&d)) return 1;
    kc_graph *g = NULL;
    kc_graph_info never = KC_GRAPH_INFO_INIT;
    never.version = 0; /* as a struct nobody initialised: refused before anything is looked up */
    CHECK(kc_graph_get(c, d, 0, &g, &never) == KC_EVERSION && g == NULL, "a kc_graph_info of version 0 refused");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    CHECK(kc_graph_get(c, d, 0, &g, &info) == KC_OK, "kc_graph_get");
    CHECK(info.version == KC_GRAPH_INFO_VERSION && info.source == KC_FROM_COMPILE && strcmp(info.variant, "sm_90") == 0,
          "compiled for sm_90");
    if (run(g)) return 1;
    kc_graph_release(g);
    if (table()) return 1;
    kc_graph_desc_free(d);
    kc_cache_close(c);
    printf("consumer: ok (kcache %s)\n", kc_version());
    return 0;
}
