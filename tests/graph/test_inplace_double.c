/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_inplace_double.c — in-place inputs, aliased outputs, accumulating gradients and zero steps
 * at launch, through the CUDA driver double (tests/double/, label driver-double: it checks every
 * launch against the kernel's parameter table, records the argument buffer, logs every
 * allocation, copy and memset, and backs device memory with host shadows; it runs no kernel).
 *
 * What it proves: an in-place update launches with the caller's input pointer and an aliased
 * output is handed back as that pointer, with nothing allocated for it; an accumulating backward
 * launches with the caller's gradient buffer, allocates nothing for it and never frees it, and a
 * NULL or misshapen buffer there is refused before anything is launched or allocated; a zero step
 * is a memset of exactly its tensor's bytes, before the launch it precedes; a caller's strided
 * tensor is never zeroed whole (refused, nothing launched); and the cuda_graph wrapper loses no
 * in-place update — the replayed graph writes its static copy (here: a captured memset of it) and
 * the copy back puts the result in the caller's tensor, at the first call and at every replay.
 */

#include "common/internal.h"
#include "double/double_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0", "inplace_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *kernel_src =
    "extern \"C\" __global__ void upd(float *p, const float *g, float *s, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) { p[i] -= g[i]; atomicAdd(s, p[i]); }\n"
    "}\n"
    "extern \"C\" __global__ void bwd(float *gp, float *gg, const float *gs, float *part, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) { gp[i] += gs[0]; gg[i] = -gs[0]; part[i] += gs[0]; }\n"
    "}\n"
    "extern \"C\" __global__ void touch(float *x, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) x[i] += 1.0f;\n"
    "}\n";

static kc_graph_desc *spec(const char *name, const char *body) {
    char p[700], json[4096];
    snprintf(p, sizeof p, "%s/k.cu", dir);
    assert_int_equal(kct_write(p, kernel_src, strlen(kernel_src)), 0);
    snprintf(
        json, sizeof json,
        "{\"name\": \"%s\", \"kernels\": [{\"id\": \"upd\", \"file\": \"k.cu\", \"entry\": \"upd\"},"
        " {\"id\": \"bwd\", \"file\": \"k.cu\", \"entry\": \"bwd\"}, {\"id\": \"touch\", \"file\": \"k.cu\", \"entry\": \"touch\"}],\n"
        "%s}\n",
        name, body);
    snprintf(p, sizeof p, "%s/%s.json", dir, name);
    assert_int_equal(kct_write(p, json, strlen(json)), 0);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

static kc_graph *get(kc_graph_desc *d) {
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    return g;
}

static kcd_launch launch(size_t i) {
    kcd_launch l;
    assert_int_equal(kcd_launch_get(i, &l), 0);
    return l;
}

/* How many lines of the call log since the last reset contain `needle`. */
static int log_count(const char *needle) {
    char *log = kcd_call_log();
    assert_non_null(log);
    int n = 0;
    for (const char *at = log; (at = strstr(at, needle)); at += strlen(needle)) n++;
    free(log);
    return n;
}

static char *hex(const void *p, char buf[32]) {
    snprintf(buf, 32, "%#llx", (unsigned long long)(uintptr_t)p);
    return buf;
}

#define N 100

/* The optimizer-like graph: input 0 updated in place and returned as output 0, its gradient accumulating; output 1 a
 * sum zeroed before the kernel adds into it; backward zeroes its partial sums (scratch) and the fresh gradient 1. */
static kc_graph_desc *acc_spec(void) {
    return spec(
        "acc",
        "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"requires_grad\": true, \"inplace\": true, \"grad\": \"accumulate\"},"
        " {\"dtype\": \"f32\", \"sizes\": [\"N\"], \"requires_grad\": true}],\n"
        "\"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:0\"}, {\"dtype\": \"f32\", \"sizes\": [1]}],\n"
        "\"forward\": [{\"zero\": \"output:1\"}, {\"kernel\": \"upd\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"input:0\", \"input:1\", \"output:1\", \"e64:N\"]}],\n"
        "\"backward\": {\"scratch\": [\"N * 4\"], \"steps\": [{\"zero\": \"scratch:0\"}, {\"zero\": \"grad_in:1\"},"
        " {\"kernel\": \"bwd\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"grad_in:0\", \"grad_in:1\", \"grad_out:1\", \"scratch:0\", \"e64:N\"]}]}");
}

static void test_inplace_alias_and_zero_in_forward(void **state) {
    (void)state;
    kc_graph_desc *d = acc_spec();
    kc_graph *g = get(d);
    assert_int_equal(kc_graph_output_alias(g, 0), 0);
    assert_int_equal(kc_graph_output_alias(g, 1), -1);
    assert_int_equal(kc_graph_output_alias(g, 2), -1);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in[2] = {{NULL, KC_DTYPE_F32, 1, {N}, {1}}, {NULL, KC_DTYPE_F32, 1, {N}, {1}}}, out[2];
    memset(out, 0, sizeof out);
    assert_int_equal(kc_cuda_malloc(&in[0].data, N * 4, NULL), KC_OK);
    assert_int_equal(kc_cuda_malloc(&in[1].data, N * 4, NULL), KC_OK);
    kcd_reset();
    kc_saved *sv = NULL;
    if (kc_graph_forward(g, in, 2, out, 2, &sv, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    /* The aliased output is the caller's input: its pointer, dtype and shape, nothing allocated for it. */
    assert_ptr_equal(out[0].data, in[0].data);
    assert_int_equal(out[0].sizes[0], N);
    assert_non_null(out[1].data);
    assert_ptr_not_equal(out[1].data, in[0].data);
    assert_int_equal(log_count("cuMemAllocAsync"), 1); /* output 1 only */
    assert_int_equal(log_count("4 bytes"), 1);
    /* The in-place update writes through the caller's pointer. */
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l = launch(0);
    assert_string_equal(l.kernel, "upd");
    assert_int_equal(kcd_launch_arg_u64(&l, 0), (uintptr_t)in[0].data);
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)in[1].data);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), (uintptr_t)out[1].data);
    /* The zero step: a memset of output 1's 4 bytes, before the launch. */
    char a[32], line[96];
    snprintf(line, sizeof line, "cuMemsetD8Async %s = 0 x 4 (4 bytes)", hex(out[1].data, a));
    const char *seq[] = {"cuMemAllocAsync", line, "cuLaunchKernel upd"};
    kcdt_log_in_order(seq, 3);
    assert_int_equal(log_count("cuMemset"), 1);

    /* Backward: the caller's buffer for the accumulating gradient 0 — NULL or misshapen is refused, nothing run. */
    kc_tensor gout[2] = {out[0], out[1]}, gin[2];
    assert_int_equal(kc_cuda_malloc(&gout[0].data, N * 4, NULL), KC_OK);
    assert_int_equal(kc_cuda_malloc(&gout[1].data, 4, NULL), KC_OK);
    void *mine;
    assert_int_equal(kc_cuda_malloc(&mine, N * 4, NULL), KC_OK);
    kcd_reset();
    memset(gin, 0, sizeof gin);
    assert_int_equal(kc_graph_backward(g, sv, gout, 2, gin, 2, NULL), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "grad_inputs[0]") || !strstr(m, "accumulate") || !strstr(m, "NULL")) fail_msg("%s", m);
    gin[0] = in[0];
    gin[0].data = mine;
    gin[0].sizes[0] = N - 1;
    assert_int_equal(kc_graph_backward(g, sv, gout, 2, gin, 2, NULL), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "grad_inputs[0]"));
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuMemAllocAsync"), 0);
    assert_int_equal(log_count("cuMemset"), 0);
    gin[0].sizes[0] = N;
    if (kc_graph_backward(g, sv, gout, 2, gin, 2, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_ptr_equal(gin[0].data, mine);
    assert_non_null(gin[1].data);
    assert_int_equal(kcd_launch_count(), 1);
    l = launch(0);
    assert_string_equal(l.kernel, "bwd");
    assert_int_equal(kcd_launch_arg_u64(&l, 0), (uintptr_t)mine); /* adds into the caller's gradient */
    assert_int_equal(kcd_launch_arg_u64(&l, 1), (uintptr_t)gin[1].data);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), (uintptr_t)gout[1].data);
    uint64_t part = kcd_launch_arg_u64(&l, 3);
    /* Two allocations (the scratch buffer and gradient 1), none for the caller's gradient; both zeroed whole, in
     * the spec's order, before the launch. */
    assert_int_equal(log_count("cuMemAllocAsync"), 2);
    char b[32], l1[96], l2[96];
    snprintf(l1, sizeof l1, "cuMemsetD8Async %s = 0 x 400 (400 bytes)", hex((void *)(uintptr_t)part, a));
    snprintf(l2, sizeof l2, "cuMemsetD8Async %s = 0 x 400 (400 bytes)", hex(gin[1].data, b));
    const char *seq2[] = {l1, l2, "cuLaunchKernel bwd"};
    kcdt_log_in_order(seq2, 3);
    assert_int_equal(log_count("cuMemset"), 2);
    /* Releasing what kcache allocated never frees the caller's tensors. */
    kc_tensor_release(&gin[1], NULL, NULL);
    kc_tensor_release(&out[1], NULL, NULL);
    kc_saved_free(sv, NULL);
    snprintf(line, sizeof line, "cuMemFreeAsync %s", hex(mine, a));
    assert_int_equal(log_count(line), 0);
    snprintf(line, sizeof line, "cuMemFreeAsync %s", hex(in[0].data, a));
    assert_int_equal(log_count(line), 0);
    kcdt_no_defects();
    kc_cuda_free(mine, NULL);
    kc_cuda_free(gout[0].data, NULL);
    kc_cuda_free(gout[1].data, NULL);
    kc_cuda_free(in[0].data, NULL);
    kc_cuda_free(in[1].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* cuda_graph: the replay writes the static copy of the in-place input (here a captured memset of it); the copy back
 * must put that in the caller's tensor, at the capture's call and at every replay. */
static void test_cuda_graph_loses_no_update(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        "cg", "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],\n"
              "\"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:0\"}],\n"
              "\"forward\": [{\"zero\": \"input:0\"}, {\"kernel\": \"touch\", \"grid\": [\"ceildiv(N, 128)\", 1, 1],"
              " \"block\": [128, 1, 1], \"args\": [\"input:0\", \"e64:N\"]}],\n"
              "\"wrappers\": [{\"name\": \"cuda_graph\", \"version\": 1}]");
    kc_graph *g = get(d);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor x = {NULL, KC_DTYPE_F32, 1, {N}, {1}}, out;
    assert_int_equal(kc_cuda_malloc(&x.data, N * 4, NULL), KC_OK);
    unsigned char pattern[N * 4], back[N * 4], zero[N * 4];
    memset(pattern, 0xab, sizeof pattern);
    memset(zero, 0, sizeof zero);
    for (int call = 0; call < 3; call++) {
        assert_int_equal(kc_cuda_copy_to_device(x.data, pattern, sizeof pattern), KC_OK);
        kcd_reset();
        memset(&out, 0, sizeof out);
        if (kc_graph_forward(g, &x, 1, &out, 1, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_ptr_equal(out.data, x.data);
        assert_int_equal(kc_cuda_synchronize(), KC_OK);
        assert_int_equal(kc_cuda_copy_to_host(back, x.data, sizeof back), KC_OK);
        assert_memory_equal(back, zero, sizeof back); /* the replay's memset reached the caller's tensor */
        /* a replay (the first call captures, then replays), and the copy back after it */
        size_t n = kcd_launch_count();
        assert_true(n >= 1);
        kcd_launch l = launch(n - 1);
        assert_true(l.replayed);
        char a[32], line[96];
        snprintf(line, sizeof line, "cuMemcpyDtoDAsync_v2 %s <- ", hex(x.data, a));
        const char *seq[] = {"cuMemcpyDtoDAsync_v2", "cuGraphLaunch", line};
        kcdt_log_in_order(seq, 3);
        assert_int_equal(log_count(line), 1);
        assert_int_equal(log_count("cuMemAllocAsync"), 0);           /* nothing allocated for the aliased output */
        if (call == 0) assert_int_equal(log_count("(captured)"), 1); /* the memset became a node */
        else assert_int_equal(log_count("cuMemset"), 0);             /* replays set it through the node only */
    }
    kcdt_no_defects();
    kc_cuda_free(x.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* cuda_graph: inputs the caller passes overlapping (one buffer as two in-place inputs) are one tensor to a direct run;
 * the replay's separate static copies would split them, and the later copy back would undo the earlier one.  Such a
 * call must compute what a direct run computes: the buffer zeroed through input 0, touched (nothing, here) through 1. */
static void test_cuda_graph_overlapping_inputs(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "cg_overlap"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", kernel_src, "touch", NULL, 0, NULL, 0, NULL, 0};
    const char *n[] = {"N"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, n, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, n, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_set_inplace(d, 0), KC_OK);
    assert_int_equal(kc_graph_set_inplace(d, 1), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_INPUT, 0), KC_OK);
    const char *gr[] = {"ceildiv(N, 128)", "1", "1"}, *bl[] = {"128", "1", "1"}, *args[] = {"input:1", "e64:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, gr, bl, NULL, args, 2), KC_OK);
    assert_int_equal(kc_graph_add_wrapper(d, "cuda_graph", 1, NULL, 0), KC_OK);
    kc_graph *g = get(d);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in[2] = {{NULL, KC_DTYPE_F32, 1, {N}, {1}}, {NULL, KC_DTYPE_F32, 1, {N}, {1}}};
    assert_int_equal(kc_cuda_malloc(&in[0].data, N * 4, NULL), KC_OK);
    unsigned char pattern[N * 4], back[N * 4], zero[N * 4];
    memset(pattern, 0xab, sizeof pattern);
    memset(zero, 0, sizeof zero);
    /* Distinct buffers first (captured, replayed), then the same buffer twice: zeroed at every call, as directly. */
    void *other;
    assert_int_equal(kc_cuda_malloc(&other, N * 4, NULL), KC_OK);
    in[1].data = other;
    if (kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    in[1].data = in[0].data;
    for (int call = 0; call < 2; call++) {
        assert_int_equal(kc_cuda_copy_to_device(in[0].data, pattern, sizeof pattern), KC_OK);
        if (kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(kc_cuda_synchronize(), KC_OK);
        assert_int_equal(kc_cuda_copy_to_host(back, in[0].data, sizeof back), KC_OK);
        assert_memory_equal(back, zero, sizeof back);
    }
    kcdt_no_defects();
    kc_cuda_free(other, NULL);
    kc_cuda_free(in[0].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* cuda_graph sizes a new shape's static inputs before the graph checks the call: a caller's stride of INT64_MIN must be
 * a clear error, never an overflow there (UBSan, halt_on_error as tools/test.sh runs it, fails this on one). */
static void test_cuda_graph_hostile_stride(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "cg_stride"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", kernel_src, "touch", NULL, 0, NULL, 0, NULL, 0};
    const char *n[] = {"N"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, n, NULL, 0), KC_OK);
    const char *gr[] = {"ceildiv(N, 128)", "1", "1"}, *bl[] = {"128", "1", "1"}, *args[] = {"input:0", "e64:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, gr, bl, NULL, args, 2), KC_OK);
    assert_int_equal(kc_graph_add_wrapper(d, "cuda_graph", 1, NULL, 0), KC_OK);
    kc_graph *g = get(d);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {2}, {INT64_MIN}};
    assert_int_equal(kc_cuda_malloc(&in.data, N * 4, NULL), KC_OK);
    assert_int_equal(kc_graph_forward(g, &in, 1, NULL, 0, NULL, NULL, NULL), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "stride"));
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* A caller's strided tensor is never zeroed whole (its span holds bytes between its elements): the call is refused
 * before anything runs; the same tensor contiguous is zeroed, its bytes exactly. */
static void test_strided_callers_tensor(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "strided"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", kernel_src, "touch", NULL, 0, NULL, 0, NULL, 0};
    const char *sz[] = {"R", "C"}, *st[] = {"L", "1"}, *l[] = {"L"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, l, NULL, 0), KC_OK); /* binds L, the row stride */
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 2, sz, st, 0), KC_OK);
    assert_int_equal(kc_graph_set_inplace(d, 1), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_INPUT, 1), KC_OK);
    const char *gr[] = {"1", "1", "1"}, *bl[] = {"32", "1", "1"}, *args[] = {"input:1", "e64:R*C"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, gr, bl, NULL, args, 2), KC_OK);
    kc_graph *g = get(d);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in[2] = {{NULL, KC_DTYPE_F32, 1, {16}, {1}}, {NULL, KC_DTYPE_F32, 2, {4, 8}, {16, 1}}};
    assert_int_equal(kc_cuda_malloc(&in[0].data, 16 * 4, NULL), KC_OK);
    assert_int_equal(kc_cuda_malloc(&in[1].data, 4 * 16 * 4, NULL), KC_OK);
    kcd_reset();
    assert_int_equal(kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "zero step 'input:1'") || !strstr(m, "not contiguous")) fail_msg("%s", m);
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuMemset"), 0);
    /* Contiguous (L = C): zeroed whole, 4*8 floats. */
    in[1].strides[0] = 8;
    in[0].sizes[0] = 8;
    if (kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(log_count("= 0 x 128 (128 bytes)"), 1);
    assert_int_equal(kcd_launch_count(), 1);
    kcdt_no_defects();
    kc_cuda_free(in[0].data, NULL);
    kc_cuda_free(in[1].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inplace_alias_and_zero_in_forward),
        cmocka_unit_test(test_cuda_graph_loses_no_update),
        cmocka_unit_test(test_strided_callers_tensor),
        cmocka_unit_test(test_cuda_graph_overlapping_inputs),
        cmocka_unit_test(test_cuda_graph_hostile_stride),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
