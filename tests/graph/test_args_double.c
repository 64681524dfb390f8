/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_args_double.c — runtime arguments and the new argument kinds at launch, through the CUDA
 * driver double (tests/double/, label driver-double: it checks every launch against the kernel's
 * parameter table and records the argument buffer as the kernel would see it; it runs nothing).
 *
 * What it proves: the bytes each kind puts in the kernel's parameter buffer ("arg:NAME" from the
 * call's values, "null", "u32:", "f64:", "bytes:HEX", a tensor at an element offset); backward
 * takes the forward's values unless given its own; a call without values, or with a value of the
 * wrong type, is refused before anything is launched; the cuda_graph wrapper never replays a
 * capture with old values (two calls with different learning rates launch directly, with their
 * own bytes) and values never reach the key (one compile, then memory and disk hits); a tensor
 * offset outside its tensor fails the call before its first launch, and nothing leaks.
 */

#include "common/internal.h"
#include "double/double_test.h"
#include "args_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0", "args_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* Write k.cu and spec `name`.json (one f32 input and output of N elements, then `body`); load it. */
static kc_graph_desc *spec(const char *name, const char *body) {
    char p[700], file[300];
    snprintf(file, sizeof file, "%s.json", name);
    kcat_write_spec(
        dir, file, name,
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n",
        body, p, sizeof p);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

static kc_graph *get(kc_graph_desc *d, kc_graph_info *info) {
    kc_graph *g;
    if (kc_graph_get(cache, d, 0, &g, info)) fail_msg("%s", kc_error_last()->message);
    return g;
}

static kcd_launch launch(size_t i) {
    kcd_launch l;
    assert_int_equal(kcd_launch_get(i, &l), 0);
    return l;
}

static float arg_f32(const kcd_launch *l, size_t i) {
    float f;
    assert_int_equal(kcd_launch_arg(l, i, &f, sizeof f), 4);
    return f;
}

/* ---- every kind's bytes ---- */

static void test_every_kind_reaches_the_kernel(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        "kinds",
        "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"seed\", \"type\": \"u64\"}],\n"
        "\"forward\": [{\"kernel\": \"step\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1], \"args\": ["
        "\"input:0\", \"output:0\", \"e64:N\", \"arg:lr\", \"f64:0.25\", \"u32:4000000000\", \"bytes:803f\", "
        "\"bytes:0000803f0000004000004040\", \"null\", \"input:0+N-1\", \"arg:seed\"]}],\n"
        "\"backward\": [{\"kernel\": \"scale\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"grad_out:0\", \"grad_in:0+1\", \"e32:N-1\", \"arg:lr\"]}]");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, &info);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {100}, {1}}, out = {0}, gout, gin = {0};
    assert_int_equal(kc_cuda_malloc(&in.data, 400, NULL), KC_OK);
    kcd_reset();

    /* Without values, with too few, with a value of the wrong type: refused, nothing launched. */
    kc_saved *sv = NULL;
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, &sv, NULL, NULL), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "lr f32") || !strstr(m, "seed u64") || !strstr(m, "kc_graph_forward_args")) fail_msg("%s", m);
    kc_value v[2] = {{KC_ARG_F32, {.f32 = 0.125f}}, {KC_ARG_U64, {.u64 = 0x0123456789abcdefull}}};
    assert_int_equal(kc_graph_forward_args(g, &in, 1, &out, 1, &sv, NULL, NULL, NULL, v, 1), KC_EINVAL);
    kc_value bad[2] = {{KC_ARG_F64, {.f64 = 0.125}}, v[1]};
    assert_int_equal(kc_graph_forward_args(g, &in, 1, &out, 1, &sv, NULL, NULL, NULL, bad, 2), KC_EINVAL);
    m = kc_error_last()->message;
    if (!strstr(m, "'lr'") || !strstr(m, "f64")) fail_msg("%s", m);
    assert_null(sv);
    assert_null(out.data);
    assert_int_equal(kcd_launch_count(), 0);

    /* With them: every argument where the kernel reads it. */
    if (kc_graph_forward_args(g, &in, 1, &out, 1, &sv, NULL, NULL, NULL, v, 2))
        fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l = launch(0);
    assert_string_equal(l.kernel, "step");
    assert_int_equal(l.nparams, 11);
    assert_int_equal(kcd_launch_arg_u64(&l, 0), (uintptr_t)in.data);
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)out.data);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), 100);
    assert_true(arg_f32(&l, 3) == 0.125f);
    double dv;
    assert_int_equal(kcd_launch_arg(&l, 4, &dv, sizeof dv), 8);
    assert_true(dv == 0.25);
    assert_int_equal(kcd_launch_arg_u64(&l, 5), 4000000000u);
    unsigned char b[16];
    assert_int_equal(kcd_launch_arg(&l, 6, b, sizeof b), 2);
    assert_memory_equal(b, "\x80\x3f", 2); /* bf16 1.0 */
    assert_int_equal(kcd_launch_arg(&l, 7, b, sizeof b), 12);
    assert_memory_equal(b, "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12); /* {1, 2, 3} */
    assert_int_equal(kcd_launch_arg_u64(&l, 8), 0);
    assert_int_equal(kcd_launch_arg_u64(&l, 9), (uintptr_t)in.data + 99 * 4); /* the last element */
    assert_int_equal(kcd_launch_arg_u64(&l, 10), 0x0123456789abcdefull);

    /* Backward: the forward's values, unless it is given its own. */
    gout = out;
    assert_int_equal(kc_cuda_malloc(&gout.data, 400, NULL), KC_OK);
    kcd_reset();
    if (kc_graph_backward(g, sv, &gout, 1, &gin, 1, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    l = launch(0);
    assert_string_equal(l.kernel, "scale");
    assert_int_equal(kcd_launch_arg_u64(&l, 0), (uintptr_t)gout.data);
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)gin.data + 4);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), 99);
    assert_true(arg_f32(&l, 3) == 0.125f);
    kc_tensor_release(&gin, NULL, NULL);
    kc_value v2[2] = {{KC_ARG_F32, {.f32 = -2.5f}}, v[1]};
    if (kc_graph_backward_args(g, sv, &gout, 1, &gin, 1, NULL, v2, 2)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 2);
    l = launch(1);
    assert_true(arg_f32(&l, 3) == -2.5f);
    kc_tensor_release(&gin, NULL, NULL);
    assert_int_equal(kc_graph_backward_args(g, sv, &gout, 1, &gin, 1, NULL, v2, 1), KC_EINVAL);
    assert_int_equal(kcd_launch_count(), 2);
    assert_null(gin.data);

    /* The same calls as one kc_graph_call: the same bytes reach the kernels; a call of another
     * version, or a backward given the forward's allocator, is refused before anything runs. */
    kc_graph_call fc = KC_GRAPH_CALL_INIT;
    kc_tensor out2 = {0};
    fc.inputs = &in, fc.ninputs = 1, fc.outputs = &out2, fc.noutputs = 1, fc.args = v2, fc.nargs = 2;
    kc_saved *sv2 = NULL;
    fc.version = KC_GRAPH_CALL_VERSION + 1;
    assert_int_equal(kc_graph_forward_call(g, &fc, &sv2), KC_EVERSION);
    fc.version = KC_GRAPH_CALL_VERSION;
    if (kc_graph_forward_call(g, &fc, &sv2)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 3);
    l = launch(2);
    assert_true(arg_f32(&l, 3) == -2.5f);
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)out2.data);
    kc_graph_call bc = KC_GRAPH_CALL_INIT;
    bc.inputs = &gout, bc.ninputs = 1, bc.outputs = &gin, bc.noutputs = 1;
    kc_allocator any = KC_ALLOCATOR_INIT;
    bc.alloc = &any;
    assert_int_equal(kc_graph_backward_call(g, sv2, &bc), KC_EINVAL);
    assert_int_equal(kcd_launch_count(), 3);
    bc.alloc = NULL;
    if (kc_graph_backward_call(g, sv2, &bc)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 4);
    l = launch(3);
    assert_true(arg_f32(&l, 3) == -2.5f); /* the forward's values */
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)gin.data + 4);
    kc_tensor_release(&gin, NULL, NULL);
    kc_saved_free(sv2, NULL);
    kc_tensor_release(&out2, NULL, NULL);

    kc_cuda_free(gout.data, NULL);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* ---- the cuda_graph wrapper, and the key ---- */

static void test_cuda_graph_never_replays_old_values(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        "adamw_like",
        "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}],\n"
        "\"forward\": [{\"kernel\": \"scale\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"input:0\", \"output:0\", \"e32:N\", \"arg:lr\"]}],\n"
        "\"wrappers\": [{\"name\": \"cuda_graph\", \"version\": 1}]");
    uint64_t compiles0 = kcdt_stat(cache, KC_STAT_COMPILES);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, &info);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {1000}, {1}}, out;
    assert_int_equal(kc_cuda_malloc(&in.data, 4000, NULL), KC_OK);
    kcd_reset();
    const float lr[3] = {0.1f, 0.2f, 0.1f};
    for (int call = 0; call < 3; call++) {
        kc_value v = {KC_ARG_F32, {.f32 = lr[call]}};
        memset(&out, 0, sizeof out);
        if (kc_graph_forward_args(g, &in, 1, &out, 1, NULL, NULL, NULL, NULL, &v, 1))
            fail_msg("%s", kc_error_last()->message);
        kc_tensor_release(&out, NULL, NULL);
    }
    /* Each call launched directly with its own value: no capture, no replay. */
    assert_int_equal(kcd_launch_count(), 3);
    for (size_t i = 0; i < 3; i++) {
        kcd_launch l = launch(i);
        assert_false(l.captured);
        assert_false(l.replayed);
        assert_true(arg_f32(&l, 3) == lr[i]);
    }
    char *log = kcd_call_log();
    if (strstr(log, "cuStreamBeginCapture") || strstr(log, "cuGraphLaunch")) fail_msg("captured or replayed:\n%s", log);
    free(log);
    /* A graph with runtime arguments called without values: refused, not run with stale ones. */
    memset(&out, 0, sizeof out);
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL), KC_EINVAL);
    assert_int_equal(kcd_launch_count(), 3);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);

    /* One compile for every value: the next lookup is a memory hit, and after unloading a disk hit. */
    g = get(d, &info);
    assert_int_equal(info.source, KC_FROM_MEMORY);
    kc_graph_release(g);
    kc_graph_loaded_budget(0, 0);
    kc_graph_loaded_budget(512, (size_t)1 << 30);
    g = get(d, &info);
    assert_int_equal(info.source, KC_FROM_DISK);
    kc_graph_release(g);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES) - compiles0, 1);
    kcdt_no_defects();
    kc_graph_desc_free(d);
}

/* ---- an offset outside its tensor ---- */

static void test_offset_out_of_range_is_refused_before_any_launch(void **state) {
    (void)state;
    /* Step 0 is fine; step 1 passes input:0+N, one past the end: the call fails before step 0 launches. */
    kc_graph_desc *d = spec(
        "offsets",
        "\"forward\": [{\"kernel\": \"scale\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"input:0\", \"output:0\", \"e32:N\", \"f32:1\"]},\n"
        " {\"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1],"
        " \"args\": [\"input:0+N\", \"output:0+N-1\", \"i32:1\", \"f32:1\"]}]");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_graph *g = get(d, &info);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {64}, {1}}, out = {0};
    assert_int_equal(kc_cuda_malloc(&in.data, 256, NULL), KC_OK);
    kcd_reset();
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "input:0+N") || !strstr(m, "offset 64 is outside the tensor's 64 elements")) fail_msg("%s", m);
    assert_int_equal(kcd_launch_count(), 0);
    assert_null(out.data); /* the outputs it allocated were freed */
    kc_cuda_free(in.data, NULL);
    kc_cuda_synchronize();
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kcdt_no_defects();
    kc_graph_loaded_budget(0, 0);
    kcdt_no_leaks("at the end");
    kc_graph_loaded_budget(512, (size_t)1 << 30);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_reaches_the_kernel),
        cmocka_unit_test(test_cuda_graph_never_replays_old_values),
        cmocka_unit_test(test_offset_out_of_range_is_refused_before_any_launch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
