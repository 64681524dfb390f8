/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_program.c — everything about running a graph that needs no GPU, on a real stored
 * entry: the launch program decoded from FORWARD/BACKWARD, symbols bound from input
 * shapes (and mismatches refused with the reason), tensor shapes, launch dimensions and
 * packed kernel arguments; a damaged program is corrupt; post-compile wrappers are rebuilt
 * in the recorded order, and an unregistered one is a clear error.
 */

#include "graph/program.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("program", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_entry *compiled_entry(kc_graph_desc *d) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kc_key k;
    kc_key_from_hex(&k, info.key);
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &k, "sm_90", &e), KC_OK);
    return e;
}

static kc_tensor tensor2(int64_t a, int64_t b) {
    kc_tensor t = {NULL, KC_DTYPE_F32, 2, {a, b}, {b, 1}};
    return t;
}
static kc_tensor tensor1(int64_t a) {
    kc_tensor t = {NULL, KC_DTYPE_F32, 1, {a}, {1}};
    return t;
}

static int fake_resolve(void *ctx, int role, size_t i, void **ptr) {
    (void)ctx;
    *ptr = (void *)(uintptr_t)(0x1000 * (role + 1) + i);
    return KC_OK;
}

static void test_layer_norm_program(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/layer_norm.json"), KC_OK);
    kc_entry *e = compiled_entry(d);
    const void *data;
    size_t len;
    assert_int_equal(kc_entry_section(e, KC_SECTION_FORWARD, &data, &len), KC_OK);
    kc_lprog *p;
    if (kc_program_decode(data, len, &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(p->nsyms, 2);
    assert_int_equal(p->nsteps, 1);
    kc_tensor in[3] = {tensor2(8, 300), tensor1(300), tensor1(300)};
    int64_t syms[2];
    assert_int_equal(kc_program_bind(p, in, 3, syms), KC_OK);
    assert_int_equal(syms[0], 8);   /* R */
    assert_int_equal(syms[1], 300); /* D */
    kc_tensor out;
    size_t bytes;
    assert_int_equal(kc_program_shape(p, kc_program_tensor(p, KC_ROLE_OUTPUT, 0), syms, &out, &bytes), KC_OK);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.sizes[0], 8);
    assert_int_equal(out.sizes[1], 300);
    assert_int_equal(out.strides[0], 300);
    assert_int_equal(bytes, 8 * 300 * 4);
    assert_int_equal(kc_program_shape(p, kc_program_tensor(p, KC_ROLE_SAVED, 1), syms, &out, &bytes), KC_OK);
    assert_int_equal(bytes, 8 * 4);
    unsigned grid[3], block[3], shared;
    assert_int_equal(kc_program_dims(p, 0, syms, grid, block, &shared), KC_OK);
    assert_int_equal(grid[0], 8);
    assert_int_equal(block[0], 256);
    assert_int_equal(shared, 0);
    kc_argval vals[16];
    void *args[16];
    assert_int_equal(kc_program_args(p, 0, syms, fake_resolve, NULL, NULL, vals, args), KC_OK);
    assert_ptr_equal(*(void **)args[0], (void *)(uintptr_t)(0x1000 * (KC_ROLE_INPUT + 1) + 0));
    assert_ptr_equal(*(void **)args[3], (void *)(uintptr_t)(0x1000 * (KC_ROLE_OUTPUT + 1) + 0));
    assert_ptr_equal(*(void **)args[5], (void *)(uintptr_t)(0x1000 * (KC_ROLE_SAVED + 1) + 1));
    assert_int_equal(*(int32_t *)args[6], 300);
    assert_true(*(float *)args[7] > 0.9e-5f && *(float *)args[7] < 1.1e-5f);

    /* Inputs that do not fit the program are refused with the reason. */
    kc_tensor bad[3] = {tensor2(8, 300), tensor1(299), tensor1(300)};
    assert_int_equal(kc_program_bind(p, bad, 3, syms), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "symbol D is 299"));
    assert_int_equal(kc_program_bind(p, in, 2, syms), KC_EINVAL);
    kc_tensor wrong_dtype[3] = {tensor2(8, 300), tensor1(300), tensor1(300)};
    wrong_dtype[0].dtype = KC_DTYPE_F16;
    assert_int_equal(kc_program_bind(p, wrong_dtype, 3, syms), KC_EINVAL);
    kc_tensor strided[3] = {tensor2(8, 300), tensor1(300), tensor1(300)};
    strided[0].strides[0] = 512;
    assert_int_equal(kc_program_bind(p, strided, 3, syms), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "stride"));
    kc_lprog_free(p);

    /* The backward program decodes too, with grad roles. */
    assert_int_equal(kc_entry_section(e, KC_SECTION_BACKWARD, &data, &len), KC_OK);
    assert_int_equal(kc_program_decode(data, len, &p), KC_OK);
    assert_int_equal(p->nsteps, 2);
    assert_int_equal(kc_program_bind(p, in, 3, syms), KC_OK);
    assert_int_equal(kc_program_args(p, 1, syms, fake_resolve, NULL, NULL, vals, args), KC_OK);
    assert_ptr_equal(*(void **)args[0], (void *)(uintptr_t)(0x1000 * (KC_ROLE_GRAD_OUT + 1) + 0));
    assert_ptr_equal(*(void **)args[5], (void *)(uintptr_t)(0x1000 * (KC_ROLE_GRAD_IN + 2) + 0 - 0x1000 + 2));
    kc_lprog_free(p);

    /* Every truncation of a program section is corrupt, never a crash. */
    assert_int_equal(kc_entry_section(e, KC_SECTION_FORWARD, &data, &len), KC_OK);
    for (size_t n = 0; n < len; n++) {
        uint8_t *t = malloc(n ? n : 1);
        memcpy(t, data, n);
        assert_int_equal(kc_program_decode(t, n, &p), KC_ECORRUPT);
        free(t);
    }
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

static void test_launch_limits(void **state) {
    (void)state;
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "limits");
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "k.cu",
                       "extern \"C\" __global__ void k(float *x, int n) {}\n",
                       "k",
                       NULL,
                       0,
                       NULL,
                       0,
                       NULL,
                       0};
    kc_graph_add_kernel(d, &k, NULL);
    const char *sizes[] = {"N"};
    kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0);
    const char *grid[] = {"ceildiv(N, 128)", "1", "1"}, *block[] = {"N", "1", "1"},
               *args[] = {"input:0", "e32:N * 1000"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    kc_entry *e = compiled_entry(d);
    const void *data;
    size_t len;
    kc_entry_section(e, KC_SECTION_FORWARD, &data, &len);
    kc_lprog *p;
    assert_int_equal(kc_program_decode(data, len, &p), KC_OK);
    int64_t syms[1] = {2048};
    unsigned g[3], b[3], sh;
    assert_int_equal(kc_program_dims(p, 0, syms, g, b, &sh), KC_EEXPR); /* 2048 threads */
    syms[0] = 3000000;
    kc_argval vals[2];
    void *av[2];
    assert_int_equal(kc_program_args(p, 0, syms, fake_resolve, NULL, NULL, vals, av), KC_EEXPR); /* N*1000 > 2^31 */
    assert_non_null(strstr(kc_error_last()->message, "32 bits"));
    kc_lprog_free(p);
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

/* ---- wrappers ---- */

typedef struct trace {
    char log[128];
} trace;

static int base_call(void *ctx, kc_forward_call *c) {
    (void)ctx;
    strcat(((trace *)c->stream)->log, "base");
    return KC_OK;
}

typedef struct layer {
    kc_callable inner;
    char tag[8];
} layer;

static int layer_call(void *ctx, kc_forward_call *c) {
    layer *l = ctx;
    strcat(((trace *)c->stream)->log, l->tag);
    strcat(((trace *)c->stream)->log, ">");
    return l->inner.call(l->inner.ctx, c);
}

static int wrap_a(const kc_callable *inner, const void *params, size_t len, kc_callable *out) {
    (void)params;
    (void)len;
    layer *l = malloc(sizeof *l);
    l->inner = *inner;
    strcpy(l->tag, "a");
    out->call = layer_call;
    out->ctx = l;
    return KC_OK;
}
static int wrap_b(const kc_callable *inner, const void *params, size_t len, kc_callable *out) {
    layer *l = malloc(sizeof *l);
    l->inner = *inner;
    snprintf(l->tag, sizeof l->tag, "b%.*s", (int)len, (const char *)params);
    out->call = layer_call;
    out->ctx = l;
    return KC_OK;
}
static void unwrap(kc_callable *c) { free(c->ctx); }

static kc_entry *entry_with_wrappers_p(const char *const *names, const uint32_t *versions, size_t n,
                                       const char *params) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "wrapped");
    kc_kernel_src k = {
        KC_KERNEL_SRC_VERSION, "k.cu", "extern \"C\" __global__ void k(float *x) {}\n", "k", NULL, 0, NULL, 0, NULL, 0};
    kc_graph_add_kernel(d, &k, NULL);
    const char *sizes[] = {"4"};
    kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"1", "1", "1"}, *args[] = {"input:0"};
    kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 1);
    for (size_t i = 0; i < n; i++) kc_graph_add_wrapper(d, names[i], versions[i], params, strlen(params));
    kc_entry *e = compiled_entry(d);
    kc_graph_desc_free(d);
    return e;
}

static kc_entry *entry_with_wrappers(const char *const *names, const uint32_t *versions, size_t n) {
    return entry_with_wrappers_p(names, versions, n, "7");
}

static void test_wrappers_in_recorded_order(void **state) {
    (void)state;
    kc_wrapper a = {"trace_a", 1, wrap_a, unwrap}, b = {"trace_b", 2, wrap_b, unwrap};
    assert_int_equal(kc_wrapper_register(&a), KC_OK);
    assert_int_equal(kc_wrapper_register(&b), KC_OK);
    const char *names[] = {"trace_a", "trace_b"};
    const uint32_t versions[] = {1, 2};
    kc_entry *e = entry_with_wrappers(names, versions, 2);
    kc_callable base = {base_call, NULL};
    kc_wrapper_chain *ch;
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_OK);
    trace t = {""};
    kc_forward_call c;
    memset(&c, 0, sizeof c);
    c.stream = &t;
    assert_int_equal(kc_wrapper_chain_call(ch, &c), KC_OK);
    assert_string_equal(t.log, "b7>a>base"); /* the last recorded is outermost; params reach it */
    kc_wrapper_chain_free(ch);
    kc_entry_free(e);
    /* A different recorded order gives the other nesting. */
    const char *rev[] = {"trace_b", "trace_a"};
    const uint32_t rv[] = {2, 1};
    e = entry_with_wrappers(rev, rv, 2);
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_OK);
    t.log[0] = '\0';
    kc_wrapper_chain_call(ch, &c);
    assert_string_equal(t.log, "a>b7>base");
    kc_wrapper_chain_free(ch);
    kc_entry_free(e);
    assert_int_equal(kc_wrapper_unregister("trace_a", 1), KC_OK);
    assert_int_equal(kc_wrapper_unregister("trace_b", 2), KC_OK);
}

static void test_unregistered_wrapper_is_a_clear_error(void **state) {
    (void)state;
    kc_wrapper a = {"trace_a", 1, wrap_a, unwrap};
    kc_wrapper_register(&a);
    const char *names[] = {"trace_a", "not_here"};
    const uint32_t versions[] = {1, 1};
    kc_entry *e = entry_with_wrappers(names, versions, 2);
    kc_callable base = {base_call, NULL};
    kc_wrapper_chain *ch = (kc_wrapper_chain *)0x1;
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_EUNREGISTERED);
    assert_null(ch);
    assert_non_null(strstr(kc_error_last()->message, "'not_here' version 1 is not registered"));
    kc_entry_free(e);
    /* A registered name with another version is not the same wrapper. */
    const char *n2[] = {"trace_a"};
    const uint32_t v2[] = {9};
    e = entry_with_wrappers(n2, v2, 1);
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_EUNREGISTERED);
    kc_entry_free(e);
    kc_wrapper_unregister("trace_a", 1);
    assert_int_equal(kc_wrapper_unregister("trace_a", 1), KC_MISS);
}

/* The built-in philox wrapper: seed and offset reach the call, the offset advances by the
 * recorded increment, and a call without an RNG state is refused. */
static int seen_call(void *ctx, kc_forward_call *c) {
    uint64_t *seen = ctx;
    seen[0] = c->philox_seed;
    seen[1] = c->philox_offset;
    seen[2] = (uint64_t)c->philox_set;
    return KC_OK;
}

static void test_philox_wrapper(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/dropout.json"), KC_OK);
    kc_entry *e = compiled_entry(d);
    uint64_t seen[3] = {0, 0, 0};
    kc_callable base = {seen_call, seen};
    kc_wrapper_chain *ch;
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_OK);
    kc_rng_state rng = {42, 1000};
    kc_forward_call c;
    memset(&c, 0, sizeof c);
    c.rng = &rng;
    assert_int_equal(kc_wrapper_chain_call(ch, &c), KC_OK);
    assert_int_equal(seen[0], 42);
    assert_int_equal(seen[1], 1000);
    assert_int_equal(seen[2], 1);
    assert_int_equal(rng.offset, 1000 + 16777216);
    memset(&c, 0, sizeof c);
    assert_int_equal(kc_wrapper_chain_call(ch, &c), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "RNG state"));
    kc_wrapper_chain_free(ch);
    /* The seed and offset are packed as the kernel's last two arguments. */
    const void *data;
    size_t len;
    kc_entry_section(e, KC_SECTION_FORWARD, &data, &len);
    kc_lprog *p;
    assert_int_equal(kc_program_decode(data, len, &p), KC_OK);
    int64_t syms[1] = {1000};
    kc_argval vals[8];
    void *args[8];
    const uint64_t philox[2] = {42, 1000};
    assert_int_equal(kc_program_args(p, 0, syms, fake_resolve, NULL, philox, vals, args), KC_OK);
    assert_int_equal(*(uint64_t *)args[5], 42);
    assert_int_equal(*(uint64_t *)args[6], 1000);
    assert_int_equal(*(int64_t *)args[4], 1000);
    assert_int_equal(kc_program_args(p, 0, syms, fake_resolve, NULL, NULL, vals, args), KC_EINVAL);
    kc_lprog_free(p);
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

/* The built-in cuda_graph wrapper is registered; its shape limit is checked; a call with an
 * RNG state runs the inner callable directly (its arguments change per call).  Capture and
 * replay need a device: tests/graph/test_gpu_graphs.c. */
static void test_cuda_graph_wrapper_builtin(void **state) {
    (void)state;
    kc_wrapper a = {"trace_a", 1, wrap_a, unwrap};
    kc_wrapper_register(&a);
    const char *names[] = {"trace_a", "cuda_graph"};
    const uint32_t versions[] = {1, 1};
    kc_entry *e = entry_with_wrappers(names, versions, 2);
    kc_callable base = {base_call, NULL};
    kc_wrapper_chain *ch;
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_OK);
    trace t = {""};
    kc_rng_state rng = {1, 2};
    kc_forward_call c;
    memset(&c, 0, sizeof c);
    c.stream = &t;
    c.rng = &rng;
    assert_int_equal(kc_wrapper_chain_call(ch, &c), KC_OK);
    assert_string_equal(t.log, "a>base");
    kc_wrapper_chain_free(ch);
    kc_entry_free(e);
    const char *bad[] = {"x", "65", "99999999999999999999", ""};
    for (size_t i = 0; i < 3; i++) {
        e = entry_with_wrappers_p(names + 1, versions + 1, 1, bad[i]);
        assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "cuda_graph"));
        kc_entry_free(e);
    }
    e = entry_with_wrappers_p(names + 1, versions + 1, 1, bad[3]); /* no parameters: the default */
    assert_int_equal(kc_wrapper_chain_build(&ch, e, &base), KC_OK);
    kc_wrapper_chain_free(ch);
    kc_entry_free(e);
    kc_wrapper_unregister("trace_a", 1);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_layer_norm_program),
        T(test_launch_limits),
        T(test_wrappers_in_recorded_order),
        T(test_unregistered_wrapper_is_a_clear_error),
        T(test_philox_wrapper),
        T(test_cuda_graph_wrapper_builtin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
