/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_explain.c — explain names the component that changed: for each single-component
 * change from a stored graph (an option, an input size, the arch, the source) the nearest
 * stored entry is found and the change is named; a hit has no differences; explain counts
 * nothing; a changed header is named by kernel and file; of a graph stored under several variants,
 * the nearest is the one asked for.
 */
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("explain", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_graph_desc *make(const char *src, const char *opt, const char *size) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "x");
    const char *opts[] = {opt};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", src, "k", NULL, 0, opts, opt ? 1 : 0, NULL, 0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {size, "N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 2, sizes, NULL, 1), KC_OK);
    const char *grid[] = {"ceildiv(N, 128)", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

static const char *SRC = "extern \"C\" __global__ void k(float *x, int n) { if (n < 0) x[0] = 1; }\n";

static int has(const kc_explain *x, const char *name) {
    for (size_t i = 0; i < x->ndiffs; i++)
        if (strcmp(x->diffs[i], name) == 0) return 1;
    return 0;
}

static void expect(const kc_graph_desc *d, const char *variant, const char *const *want, size_t n,
                   const char *unwanted) {
    kc_explain *x = malloc(sizeof *x);
    assert_non_null(x);
    x->version = KC_EXPLAIN_VERSION;
    assert_int_equal(kc_graph_explain(cache, d, variant, x), KC_OK);
    assert_int_equal(x->hit, 0);
    assert_true(x->have_nearest);
    for (size_t i = 0; i < n; i++)
        if (!has(x, want[i])) {
            char all[2048] = "";
            for (size_t k = 0; k < x->ndiffs; k++) strcat(strcat(all, " "), x->diffs[k]);
            fail_msg("explain does not name '%s'; it names:%s", want[i], all);
        }
    if (unwanted) assert_false(has(x, unwanted));
    free(x);
}

static void test_each_change_is_named(void **state) {
    (void)state;
    kc_graph_desc *base = make(SRC, NULL, "64");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, base, "sm_80", &info), KC_OK);
    kc_stats before, after;
    kc_cache_stats(cache, &before);

    kc_explain *x = malloc(sizeof *x);
    assert_non_null(x);
    x->version = KC_EXPLAIN_VERSION;
    assert_int_equal(kc_graph_explain(cache, base, "sm_80", x), KC_OK);
    assert_int_equal(x->hit, 1);
    assert_int_equal(x->ndiffs, 0);
    assert_string_equal(x->key, info.key);
    assert_true(x->ndigests > KC_COMP_COUNT);
    free(x);

    const char *arch[] = {"arch"};
    expect(base, "sm_90", arch, 1, "inputs");

    kc_graph_desc *opt = make(SRC, "-use_fast_math", "64");
    const char *opts[] = {"options", "kernels[0].options"};
    expect(opt, "sm_80", opts, 2, "inputs[0].sizes");

    kc_graph_desc *size = make(SRC, NULL, "128");
    const char *sizes[] = {"inputs", "inputs[0].sizes"};
    expect(size, "sm_80", sizes, 2, "options");

    kc_graph_desc *src = make("extern \"C\" __global__ void k(float *x, int n) { if (n < 1) x[0] = 2; }\n", NULL, "64");
    const char *srcs[] = {"graph", "kernels[0].source"};
    expect(src, "sm_80", srcs, 2, "inputs[0].sizes");

    kc_cache_stats(cache, &after);
    assert_int_equal(after.v[KC_STAT_HITS], before.v[KC_STAT_HITS]);
    assert_int_equal(after.v[KC_STAT_MISSES], before.v[KC_STAT_MISSES]);
    kc_graph_desc_free(base);
    kc_graph_desc_free(opt);
    kc_graph_desc_free(size);
    kc_graph_desc_free(src);
}

static void test_empty_cache_has_no_nearest(void **state) {
    (void)state;
    kc_graph_desc *d = make(SRC, NULL, "64");
    kc_explain *x = malloc(sizeof *x);
    assert_non_null(x);
    x->version = KC_EXPLAIN_VERSION;
    assert_int_equal(kc_graph_explain(cache, d, "sm_80", x), KC_OK);
    assert_int_equal(x->hit, 0);
    assert_int_equal(x->have_nearest, 0);
    assert_int_equal(kc_graph_explain(cache, d, "gfx90a", x), KC_EARCH);
    free(x);
    kc_graph_desc_free(d);
}

/* A header that changed is named: which header of which kernel (not only the kernel's source). */
static kc_graph_desc *with_headers(const char *scale, const char *other) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "h");
    kc_header_src hs[] = {{"scale.cuh", scale}, {"other.cuh", other}};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "k.cu",
                       "#include \"scale.cuh\"\n#include \"other.cuh\"\n"
                       "extern \"C\" __global__ void k(float *x) { x[0] *= SCALE + OTHER; }\n",
                       "k",
                       hs,
                       2,
                       NULL,
                       0,
                       NULL,
                       0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"4"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"1", "1", "1"}, *args[] = {"input:0"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 1), KC_OK);
    return d;
}

static void test_a_changed_header_is_named(void **state) {
    (void)state;
    kc_graph_desc *base = with_headers("#define SCALE 2.0f\n", "#define OTHER 1.0f\n");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, base, "sm_80", &info), KC_OK);
    kc_graph_desc *edited = with_headers("#define SCALE 3.0f\n", "#define OTHER 1.0f\n");
    const char *want[] = {"graph", "kernels[0].source", "kernels[0].headers[scale.cuh]"};
    expect(edited, "sm_80", want, 3, "kernels[0].headers[other.cuh]");
    kc_graph_desc_free(base);
    kc_graph_desc_free(edited);
}

/* A changed graph stored under several variants: the nearest is its entry under the variant asked
 * for, whichever the walk meets first, so that the arch is not named as a difference. */
static void test_nearest_is_the_variant_asked_for(void **state) {
    (void)state;
    kc_graph_desc *base = make(SRC, NULL, "64");
    const char *variants[] = {"sm_80", "sm_90", "compute_80"};
    for (size_t i = 0; i < 3; i++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        assert_int_equal(kc_graph_compile(cache, base, variants[i], &info), KC_OK);
    }
    kc_graph_desc *src = make("extern \"C\" __global__ void k(float *x, int n) { if (n < 1) x[0] = 2; }\n", NULL, "64");
    const char *srcs[] = {"graph", "kernels[0].source"};
    for (size_t i = 0; i < 3; i++) expect(src, variants[i], srcs, 2, "arch");
    kc_graph_desc_free(base);
    kc_graph_desc_free(src);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_each_change_is_named),
        T(test_empty_cache_has_no_nearest),
        T(test_a_changed_header_is_named),
        T(test_nearest_is_the_variant_asked_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
