/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_abi.c — the launch-ABI check (src/graph/abi.c), on a CPU: a spec whose step passes one
 * argument too few, one too many, an e32 where the kernel takes a 64-bit value, an integer where
 * (PTX says) it takes a float, or 4 bytes where it takes a bf16 by value is a compile error
 * naming the graph, the pass, the step, the argument and both sizes, and nothing is stored;
 * every bundled graph passes for sm_80, sm_90 and compute_80, and its entry keeps one
 * parameter table per kernel; a stored entry whose launch program does not fit its tables is
 * refused at load (KC_ECORRUPT) before any image reaches a driver; the PARAMS reader refuses
 * malformed tables.
 */

#include "common/internal.h"
#include "graph/graph_internal.h"
#include "graph/program.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("abi", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *kernel_src =
    "#include <cuda_bf16.h>\n"
    "extern \"C\" __global__ void scale(const float *__restrict__ x, float *y, size_t n, float a) {\n"
    "  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i];\n"
    "}\n"
    "extern \"C\" __global__ void scale_bf16(const __nv_bfloat16 *x, __nv_bfloat16 *y, int n, __nv_bfloat16 a) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i];\n"
    "}\n";

/* Write scale.cu and a spec whose forward step passes `args` (a JSON list body) to `kernel`. */
static kc_graph_desc *spec(const char *kernel, const char *dtype, const char *args) {
    char p[700], json[2048];
    snprintf(p, sizeof p, "%s/scale.cu", dir);
    assert_int_equal(kct_write(p, kernel_src, strlen(kernel_src)), 0);
    snprintf(
        json, sizeof json,
        "{\"name\": \"abi_%s\", \"toolkit_headers\": true, \"kernels\": [{\"id\": \"k\", \"file\": \"scale.cu\", "
        "\"entry\": \"%s\"}],\n"
        " \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
        " \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], "
        "\"args\": [%s]}]}\n",
        kernel, kernel, dtype, dtype, args);
    snprintf(p, sizeof p, "%s/abi.json", dir);
    assert_int_equal(kct_write(p, json, strlen(json)), 0);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

static size_t stored_entries(void) {
    return kct_count_graphs(dir); /* a misfit's units may be stored (they compiled); its graph never is */
}

/* Compiling `args` for `target` fails with KC_ECOMPILE and a message holding every needle. */
static void refused(const char *kernel, const char *dtype, const char *args, const char *target,
                    const char *const *needles, size_t n) {
    kc_graph_desc *d = spec(kernel, dtype, args);
    size_t before = stored_entries();
    uint64_t errors = kct_stat(cache, KC_STAT_COMPILE_ERRORS);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(cache, d, target, &info);
    assert_int_equal(kct_stat(cache, KC_STAT_COMPILE_ERRORS), errors + 1); /* counted as a compile error */
    if (rc != KC_ECOMPILE)
        fail_msg("%s for %s: expected KC_ECOMPILE, got %d (%s)", args, target, rc, kc_error_last()->message);
    const char *msg = kc_error_last()->message;
    for (size_t i = 0; i < n; i++)
        if (!strstr(msg, needles[i])) fail_msg("'%s' not in: %s", needles[i], msg);
    assert_int_equal(stored_entries(), before); /* nothing stored */
    kc_graph_desc_free(d);
}

static void test_one_argument_too_few(void **state) {
    (void)state;
    const char *n[] = {"graph 'abi_scale'", "forward step 0", "kernel 'scale'", "3 arguments given, the kernel takes 4",
                       "8,8,8,4"};
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\"", "sm_90", n, 5);
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\"", "compute_80", n, 5);
}

static void test_one_argument_too_many(void **state) {
    (void)state;
    const char *n[] = {"forward step 0", "5 arguments given, the kernel takes 4"};
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\", \"f32:2\", \"i32:1\"", "sm_80", n, 2);
}

static void test_e32_where_the_kernel_takes_64_bits(void **state) {
    (void)state;
    const char *n[] = {"forward step 0", "argument 2 ('e32:N')", "passes 4 bytes",
                       "parameter 2 takes 8 (at offset 16)"};
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e32:N\", \"f32:2\"", "sm_90", n, 4);
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e32:N\", \"f32:2\"", "compute_80", n, 4);
}

static void test_an_integer_where_ptx_says_float(void **state) {
    (void)state;
    /* A cubin records sizes only: i32 for a float parameter is knowable from PTX alone. */
    const char *n[] = {"argument 3 ('i32:2')", "is an integer", "floating-point"};
    refused("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\", \"i32:2\"", "compute_80", n, 3);
    const char *m[] = {"argument 2 ('f32:2')", "floating-point value", "integer or a pointer"};
    refused("scale_bf16", "bf16", "\"input:0\", \"output:0\", \"f32:2\", \"f32:2\"", "compute_80", m, 3);
}

static void test_four_bytes_where_the_kernel_takes_a_bf16(void **state) {
    (void)state;
    const char *n[] = {"kernel 'scale_bf16'", "argument 3 ('f32:0.5')", "passes 4 bytes", "takes 2"};
    refused("scale_bf16", "bf16", "\"input:0\", \"output:0\", \"e32:N\", \"f32:0.5\"", "sm_90", n, 4);
}

static void test_a_matching_step_compiles_and_keeps_its_table(void **state) {
    (void)state;
    kc_graph_desc *d = spec("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\", \"f32:2\"");
    const char *targets[] = {"sm_90", "compute_80"};
    for (size_t t = 0; t < 2; t++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_compile(cache, d, targets[t], &info)) fail_msg("%s", kc_error_last()->message);
        kc_key k;
        kc_key_from_hex(&k, info.key);
        kc_entry *e;
        assert_int_equal(kc_cache_get(cache, &k, targets[t], &e), KC_OK);
        kc_params *tab;
        assert_int_equal(kc_abi_decode(e, 1, &tab), KC_OK);
        assert_int_equal(tab[0].n, 4);
        static const unsigned off[] = {0, 8, 16, 24}, size[] = {8, 8, 8, 4};
        for (int i = 0; i < 4; i++) {
            assert_int_equal(tab[0].v[i].offset, off[i]);
            assert_int_equal(tab[0].v[i].size, size[i]);
        }
        assert_int_equal(tab[0].total, 28);
        assert_int_equal(tab[0].v[3].cls, t ? KC_PARAM_FLOAT : KC_PARAM_ANY);
        kc_abi_free(tab, 1);
        kc_entry_free(e);
    }
    kc_graph_desc_free(d);
}

typedef struct seen {
    size_t kernels, params;
} seen;

static void count_params(const char *name, const char *lowered, const kc_param_info *p, size_t n, void *ctx) {
    (void)name, (void)lowered;
    seen *s = ctx;
    s->kernels++;
    s->params += n;
    for (size_t i = 0; i < n; i++) assert_true(p[i].size >= 1);
}

static void test_every_bundled_graph_passes(void **state) {
    (void)state;
    const char *specs[] = {"mlp_block.json",    "layer_norm.json",  "softmax.json",      "softmax_xent.json",
                           "add_mul_gelu.json", "dropout.json",     "rmsnorm_bf16.json", "attn_softmax.json",
                           "adamw.json",        "global_norm.json", "linear.json"};
    const char *targets[] = {"sm_80", "sm_90", "compute_80"};
    for (size_t s = 0; s < KC_ARRAY_LEN(specs); s++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, specs[s]);
        kc_graph_desc *d;
        if (kc_graph_desc_load(&d, p)) fail_msg("%s", kc_error_last()->message);
        for (size_t t = 0; t < 3; t++) {
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            if (kc_graph_compile(cache, d, targets[t], &info))
                fail_msg("%s %s: %s", specs[s], targets[t], kc_error_last()->message);
            kc_key k;
            kc_key_from_hex(&k, info.key);
            kc_entry *e;
            assert_int_equal(kc_cache_get(cache, &k, targets[t], &e), KC_OK);
            seen sn = {0, 0};
            assert_int_equal(kc_entry_params(e, count_params, &sn), KC_OK);
            assert_int_equal(sn.kernels, (size_t)info.kernels);
            assert_true(sn.params > 0);
            kc_entry_free(e);
        }
        kc_graph_desc_free(d);
    }
}

/* The matching "scale" graph compiled for sm_90, and its stored entry (*e: the caller frees it). */
static kc_graph_desc *stored_scale(kc_key *k, kc_entry **e) {
    kc_graph_desc *d = spec("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\", \"f32:2\"");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    kc_key_from_hex(k, info.key);
    assert_int_equal(kc_cache_get(cache, k, "sm_90", e), KC_OK);
    assert_int_equal(kc_entry_resolve(cache, *e), KC_OK); /* its images, attached for the loader */
    return d;
}

/* An entry whose forward program passes one argument fewer than its table: refused at load. */
static void test_a_stored_mismatch_is_refused_at_load(void **state) {
    (void)state;
    kc_key k;
    kc_entry *e;
    kc_graph_desc *d = stored_scale(&k, &e);
    /* A second description, one argument short, gives the program to splice in. */
    kc_graph_desc *d2 = spec("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\"");
    kc_buf b = {0};
    kc_program_encode(d2, KC_PASS_FORWARD, &b);
    assert_false(b.failed);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, b.data, b.len), KC_OK);
    kc_graph *g = NULL;
    assert_int_equal(kc_graph_load(e, &k, 0, &g), KC_ECORRUPT);
    assert_null(g);
    assert_non_null(strstr(kc_error_last()->message, "3 arguments given, the kernel takes 4"));
    /* Without the PARAMS section, the entry is refused too (never loaded unchecked). */
    kc_entry *e2;
    assert_int_equal(kc_entry_new(&e2, &k, "sm_90"), KC_OK);
    const void *sd;
    size_t sl;
    assert_int_equal(kc_entry_section(e, KC_SECTION_KERNELS, &sd, &sl), KC_OK);
    assert_int_equal(kc_entry_set_section(e2, KC_SECTION_KERNELS, sd, sl), KC_OK);
    assert_int_equal(kc_entry_section(e, KC_SECTION_IMAGES, &sd, &sl), KC_OK);
    assert_int_equal(kc_entry_set_section(e2, KC_SECTION_IMAGES, sd, sl), KC_OK);
    assert_int_equal(kc_entry_resolve(cache, e2), KC_OK);
    assert_int_equal(kc_graph_load(e2, &k, 0, &g), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "no PARAMS section"));
    kc_entry_free(e2);
    kc_buf_free(&b);
    kc_entry_free(e);
    kc_graph_desc_free(d2);
    kc_graph_desc_free(d);
}

/* Backward runs over what forward bound (its symbols' values, its tensors): an entry whose BACKWARD section declares
 * other symbols or tensors than FORWARD would evaluate past the forward's values.  Refused at load. */
static void test_a_backward_unlike_its_forward_is_refused_at_load(void **state) {
    (void)state;
    kc_key k;
    kc_entry *e;
    kc_graph_desc *d = stored_scale(&k, &e);
    /* A description with three more symbols (and inputs) gives the backward program to splice in. */
    kc_graph_desc *d2 = spec("scale", "f32", "\"input:0\", \"output:0\", \"e64:N\", \"f32:2\"");
    const char *m[] = {"M"}, *p[] = {"P"}, *q[] = {"Q"};
    assert_int_equal(kc_graph_add_input(d2, KC_DTYPE_F32, 1, m, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_input(d2, KC_DTYPE_F32, 1, p, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_input(d2, KC_DTYPE_F32, 1, q, NULL, 0), KC_OK);
    kc_buf b = {0};
    kc_program_encode(d2, KC_PASS_BACKWARD, &b);
    assert_false(b.failed);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_BACKWARD, b.data, b.len), KC_OK);
    kc_graph *g = NULL;
    int rc = kc_graph_load(e, &k, 0, &g);
    if (rc != KC_ECORRUPT) fail_msg("loaded with %d: %s", rc, kc_error_last()->message);
    assert_null(g);
    assert_non_null(strstr(kc_error_last()->message, "backward"));
    kc_buf_free(&b);
    kc_entry_free(e);
    kc_graph_desc_free(d2);
    kc_graph_desc_free(d);
}

/* The PARAMS reader: well-formed tables round-trip; every defect is KC_ECORRUPT. */
static void test_params_section_is_read_strictly(void **state) {
    (void)state;
    kc_key k = kct_key("abi", 1);
    kc_param v[2] = {{0, 8, 0, KC_PARAM_ANY}, {8, 4, 4, KC_PARAM_FLOAT}};
    kc_params t = {v, 2, 12};
    kc_buf good = {0};
    kc_abi_encode(&good, &t, 1);
    struct {
        size_t at;
        uint8_t val;
        const char *what;
    } bad[] = {
        {0, 2, "kernel count"}, {4, 9, "parameter count"},
        {8, 13, "total"},       {12, 4, "first offset (overlap is impossible at 0, so: a gap)"},
        {16, 0, "zero size"},   {25, 4, "second offset overlapping"},
        {37, 7, "class"},       {33, 3, "alignment not a power of two"},
    };
    kc_entry *e;
    kc_params *out;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_PARAMS, good.data, good.len), KC_OK);
    assert_int_equal(kc_abi_decode(e, 1, &out), KC_OK);
    assert_int_equal(out[0].n, 2);
    assert_int_equal(out[0].v[1].cls, KC_PARAM_FLOAT);
    kc_abi_free(out, 1);
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        uint8_t *b = malloc(good.len);
        memcpy(b, good.data, good.len);
        b[bad[i].at] = bad[i].val;
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_PARAMS, b, good.len), KC_OK);
        if (kc_abi_decode(e, 1, &out) != KC_ECORRUPT) fail_msg("accepted a bad %s", bad[i].what);
        free(b);
    }
    for (size_t n = 0; n < good.len; n++) { /* every truncation */
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_PARAMS, good.data, n), KC_OK);
        assert_int_equal(kc_abi_decode(e, 1, &out), KC_ECORRUPT);
    }
    kc_entry_free(e);
    kc_buf_free(&good);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_argument_too_few),
        cmocka_unit_test(test_one_argument_too_many),
        cmocka_unit_test(test_e32_where_the_kernel_takes_64_bits),
        cmocka_unit_test(test_an_integer_where_ptx_says_float),
        cmocka_unit_test(test_four_bytes_where_the_kernel_takes_a_bf16),
        cmocka_unit_test(test_a_matching_step_compiles_and_keeps_its_table),
        cmocka_unit_test(test_every_bundled_graph_passes),
        cmocka_unit_test(test_a_stored_mismatch_is_refused_at_load),
        cmocka_unit_test(test_a_backward_unlike_its_forward_is_refused_at_load),
        cmocka_unit_test(test_params_section_is_read_strictly),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
