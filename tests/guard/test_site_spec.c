/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_spec.c — the site cache's answer applied to a description loaded from a bundled
 * spec (src/graph/specialize.c): reading a description back; specializing it (a spec's
 * symbol kept where the answer is dynamic, replaced by the call's size everywhere where it is
 * static, found by the parser and never inside a longer name; a number never generalized);
 * and the guarded flow end to end on kernels/softmax.json — first shape compiles static,
 * second compiles dynamic, every later shape is a hit, and the next process is a disk hit —
 * once through kc_graph_compile in two real processes, once through kc_graph_get and the
 * forward pass on the CUDA driver double (label driver-double: it checks every launch's grid
 * and argument bytes, it runs no kernel).
 */
#include <sys/wait.h>

#include "double/double_test.h"
#include "graph/graph_internal.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup_no_driver("9.0", "sitespec", &dir, &cache); /* the driver later: a test forks first */
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* Contiguous f32 metadata of a call's input. */
static kc_tensor_meta meta(int rank, const int64_t *sizes) {
    kc_tensor_meta t;
    memset(&t, 0, sizeof t);
    t.dtype = KC_DTYPE_F32;
    t.device = KC_DEVICE_CUDA;
    t.rank = rank;
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) t.sizes[d].value = sizes[d], t.strides[d].value = st, st *= sizes[d];
    return t;
}

static kc_graph_tensor_desc tensor(const kc_graph_desc *d, kc_tensor_role role, size_t i) {
    kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
    if (kc_graph_desc_tensor(d, role, i, &t)) fail_msg("%s", kc_error_last()->message);
    return t;
}

static void key_of(const kc_graph_desc *d, kc_key *k) {
    if (kc_graph_key(d, k, NULL)) fail_msg("%s", kc_error_last()->message);
}

/* ---- reading a description back ---- */

static void test_readers(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("layer_norm.json");
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 3);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_OUTPUT), 1);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_SAVED), 2);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_SCRATCH), 0);
    kc_graph_tensor_desc t = tensor(d, KC_ROLE_INPUT, 0);
    assert_int_equal(t.dtype, KC_DTYPE_F32);
    assert_int_equal(t.rank, 2);
    assert_string_equal(t.sizes[0], "R");
    assert_string_equal(t.sizes[1], "D");
    assert_string_equal(t.strides[0], "D"); /* the contiguous default */
    assert_string_equal(t.strides[1], "1");
    assert_int_equal(t.requires_grad, 1);
    t = tensor(d, KC_ROLE_INPUT, 2);
    assert_int_equal(t.rank, 1);
    assert_string_equal(t.sizes[0], "D");
    t = tensor(d, KC_ROLE_OUTPUT, 0);
    assert_string_equal(t.sizes[1], "D");
    assert_null(t.strides[0]);
    assert_int_equal(t.requires_grad, 0);
    t = tensor(d, KC_ROLE_SAVED, 1);
    assert_int_equal(t.rank, 1);
    assert_string_equal(t.sizes[0], "R");
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_SAVED, 2, &t), KC_EINVAL);
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_SCRATCH, 0, &t), KC_EINVAL);
    assert_string_equal(kc_graph_desc_symbol(d, 0), "R");
    assert_string_equal(kc_graph_desc_symbol(d, 1), "D");
    assert_null(kc_graph_desc_symbol(d, 2));
    assert_int_equal(kc_graph_desc_nargs(d), 0);
    assert_int_equal(kc_graph_desc_arg(d, 0, NULL, NULL), KC_EINVAL);
    kc_graph_desc_free(d);

    kc_graph_desc_new(&d, "args");
    assert_int_equal(kc_graph_add_arg(d, "lr", KC_ARG_F32), KC_OK);
    assert_int_equal(kc_graph_add_arg(d, "step", KC_ARG_U64), KC_OK);
    const char *name;
    kc_arg_type type;
    assert_int_equal(kc_graph_desc_nargs(d), 2);
    assert_int_equal(kc_graph_desc_arg(d, 1, &name, &type), KC_OK);
    assert_string_equal(name, "step");
    assert_int_equal(type, KC_ARG_U64);
    kc_graph_desc_free(d);
}

/* ---- specializing ---- */

static void test_all_static_replaces_every_symbol(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("softmax.json"), *s;
    kc_key before, after, ks, ks2;
    key_of(d, &before);
    int64_t sz[] = {64, 128};
    kc_tensor_meta in = meta(2, sz);
    uint32_t applied[1] = {0xff};
    if (kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, applied)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(applied[0], 0);
    kc_graph_tensor_desc t = tensor(s, KC_ROLE_INPUT, 0);
    assert_string_equal(t.sizes[0], "64");
    assert_string_equal(t.sizes[1], "128");
    assert_string_equal(t.strides[0], "128");
    t = tensor(s, KC_ROLE_OUTPUT, 0);
    assert_string_equal(t.sizes[0], "64");
    assert_null(kc_graph_desc_symbol(s, 0));
    /* Every launch expression: grid R, the argument e32:C, in both passes. */
    assert_int_equal(s->nsteps, 2);
    for (size_t i = 0; i < s->nsteps; i++) {
        assert_string_equal(s->steps[i].grid[0], "64");
        assert_string_equal(s->steps[i].args[s->steps[i].nargs - 1], "e32:128");
    }
    /* The original is untouched, and each static shape is its own key. */
    t = tensor(d, KC_ROLE_INPUT, 0);
    assert_string_equal(t.sizes[0], "R");
    assert_string_equal(d->steps[0].grid[0], "R");
    key_of(d, &after);
    assert_memory_equal(before.bytes, after.bytes, sizeof before.bytes);
    key_of(s, &ks);
    assert_memory_not_equal(ks.bytes, before.bytes, sizeof ks.bytes);
    kc_graph_desc *s2;
    sz[0] = 32;
    in = meta(2, sz);
    assert_int_equal(kc_graph_desc_specialize(&s2, d, &in, 1, NULL, 0, NULL), KC_OK);
    key_of(s2, &ks2);
    assert_memory_not_equal(ks.bytes, ks2.bytes, sizeof ks.bytes);
    kc_graph_desc_free(s2);
    kc_graph_desc_free(s);
    kc_graph_desc_free(d);
}

static void test_dynamic_keeps_the_spec_symbol(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("softmax.json"), *a, *b, *all;
    int64_t s1[] = {64, 128}, s2[] = {7, 128};
    kc_tensor_meta m1 = meta(2, s1), m2 = meta(2, s2);
    uint32_t dyn[1] = {1}, applied[1];
    assert_int_equal(kc_graph_desc_specialize(&a, d, &m1, 1, dyn, 0, applied), KC_OK);
    assert_int_equal(applied[0], 1);
    assert_int_equal(kc_graph_desc_specialize(&b, d, &m2, 1, dyn, 0, NULL), KC_OK);
    kc_graph_tensor_desc t = tensor(a, KC_ROLE_INPUT, 0);
    assert_string_equal(t.sizes[0], "R");
    assert_string_equal(t.sizes[1], "128");
    assert_string_equal(kc_graph_desc_symbol(a, 0), "R");
    assert_null(kc_graph_desc_symbol(a, 1));
    assert_string_equal(a->steps[0].grid[0], "R");
    assert_string_equal(a->steps[0].args[2], "e32:128");
    /* Two shapes, one dynamic description: one key. */
    kc_key ka, kb, kd, kall;
    key_of(a, &ka);
    key_of(b, &kb);
    assert_memory_equal(ka.bytes, kb.bytes, sizeof ka.bytes);
    /* Every dimension dynamic: the description itself, the same key. */
    dyn[0] = 3;
    assert_int_equal(kc_graph_desc_specialize(&all, d, &m1, 1, dyn, 0, applied), KC_OK);
    assert_int_equal(applied[0], 3);
    key_of(d, &kd);
    key_of(all, &kall);
    assert_memory_equal(kd.bytes, kall.bytes, sizeof kd.bytes);
    kc_graph_desc_free(all);
    kc_graph_desc_free(a);
    kc_graph_desc_free(b);
    kc_graph_desc_free(d);
}

static void test_a_shared_symbol_stays_where_any_use_is_dynamic(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("layer_norm.json"), *s;
    int64_t x[] = {8, 64}, w[] = {64};
    kc_tensor_meta in[3] = {meta(2, x), meta(1, w), meta(1, w)};
    uint32_t dyn[3] = {2, 0, 0}, applied[3]; /* D dynamic in input 0 only */
    if (kc_graph_desc_specialize(&s, d, in, 3, dyn, 0, applied)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(applied[0], 2);
    assert_int_equal(applied[1], 1);
    assert_int_equal(applied[2], 1);
    kc_graph_tensor_desc t = tensor(s, KC_ROLE_INPUT, 0);
    assert_string_equal(t.sizes[0], "8");
    assert_string_equal(t.sizes[1], "D");
    assert_string_equal(tensor(s, KC_ROLE_INPUT, 1).sizes[0], "D");
    assert_string_equal(tensor(s, KC_ROLE_SAVED, 0).sizes[0], "8");
    /* The backward's ceildiv(D, 256) kept, its "e32:R" now 8. */
    const gstep *gb = &s->steps[2];
    assert_string_equal(gb->grid[0], "ceildiv(D, 256)");
    assert_string_equal(gb->args[6], "e32:8");
    assert_string_equal(gb->args[7], "e32:D");
    kc_graph_desc_free(s);
    /* All static, but the call gives D two sizes: an error naming the spec's file and place. */
    int64_t w2[] = {32};
    in[1] = meta(1, w2);
    assert_int_equal(kc_graph_desc_specialize(&s, d, in, 3, NULL, 0, NULL), KC_EINVAL);
    assert_null(s);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "layer_norm.json: inputs[1].sizes[0]") || !strstr(m, "'D'")) fail_msg("%s", m);
    kc_graph_desc_free(d);
}

static const char *KSRC = "extern \"C\" __global__ void k(float *x, long long a, long long b, int c) {}\n";

/* A description built in C with symbols N and NN (a prefix of each other) and the number 64. */
static kc_graph_desc *names_desc(void) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "names");
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", KSRC, "k", NULL, 0, NULL, 0, NULL, 0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_add_arg(d, "lr", KC_ARG_F32), KC_OK);
    const char *sizes[] = {"N", "NN", "64"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 3, sizes, NULL, 1), KC_OK);
    const char *osz[] = {"N*NN", "min(N, NN)"};
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 2, osz), KC_OK);
    assert_int_equal(kc_graph_add_scratch(d, KC_PASS_FORWARD, "max(N,NN) * 4"), KC_OK);
    const char *grid[] = {"ceildiv(NN, N)", "N", "1"}, *block[] = {"NN", "1", "1"};
    const char *args[] = {"input:0+N", "e64:N + NN", "sym:N", "e32:mod(NN, N)"};
    if (kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, "N*4", args, 4)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kc_graph_add_wrapper(d, "philox", 1, "4", 1), KC_OK);
    assert_int_equal(kc_graph_add_hook(d, "pack", "h1"), KC_OK);
    assert_int_equal(kc_graph_set_runtime_meta(d, "meta", 4), KC_OK);
    kc_graph_set_globals(d, 5);
    return d;
}

static void test_substitution_follows_the_parser(void **state) {
    (void)state;
    kc_graph_desc *d = names_desc(), *s;
    int64_t sz[] = {5, 7, 64};
    kc_tensor_meta in = meta(3, sz);
    uint32_t dyn[1] = {2}, applied[1]; /* NN dynamic, N static */
    if (kc_graph_desc_specialize(&s, d, &in, 1, dyn, 0, applied)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(applied[0], 2);
    kc_graph_tensor_desc t = tensor(s, KC_ROLE_INPUT, 0);
    assert_string_equal(t.sizes[0], "5");
    assert_string_equal(t.sizes[1], "NN");
    assert_string_equal(t.sizes[2], "64");
    assert_string_equal(t.strides[0], "64*NN");
    t = tensor(s, KC_ROLE_OUTPUT, 0);
    assert_string_equal(t.sizes[0], "5*NN");
    assert_string_equal(t.sizes[1], "min(5, NN)");
    assert_string_equal(s->scratch[0].bytes, "max(5,NN) * 4");
    const gstep *st = &s->steps[0];
    assert_string_equal(st->grid[0], "ceildiv(NN, 5)");
    assert_string_equal(st->grid[1], "5");
    assert_string_equal(st->block[0], "NN");
    assert_string_equal(st->shared, "5*4");
    assert_string_equal(st->args[0], "input:0+5");
    assert_string_equal(st->args[1], "e64:5 + NN");
    assert_string_equal(st->args[2], "e64:5"); /* "sym:N": the same 8-byte integer */
    assert_string_equal(st->args[3], "e32:mod(NN, 5)");
    /* Everything else carried over: the runtime argument, wrapper, hook, meta, globals. */
    assert_int_equal(kc_graph_desc_nargs(s), 1);
    assert_int_equal(s->nwrappers, 1);
    assert_int_equal(s->nhooks, 2);
    assert_int_equal(s->runtime_meta_len, 4);
    assert_memory_equal(s->runtime_meta, "meta", 4);
    assert_int_equal(s->globals, 5);
    kc_graph_desc_free(s);
    /* With N and NN both dynamic, nothing changes: the key is the original's (the key covers
     * kernels, runtime arguments, hooks, wrappers, globals and backend). */
    dyn[0] = 3;
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, dyn, 0, NULL), KC_OK);
    kc_key k1, k2;
    key_of(d, &k1);
    key_of(s, &k2);
    assert_memory_equal(k1.bytes, k2.bytes, sizeof k1.bytes);
    kc_graph_desc_free(s);
    kc_graph_desc_free(d);
}

/* Every allocation of a specialization failed in turn: KC_ENOMEM and nothing leaked (ASan), then success. */
static void test_out_of_memory(void **state) {
    (void)state;
    kc_graph_desc *d = names_desc(), *s;
    int64_t sz[] = {5, 7, 64};
    kc_tensor_meta in = meta(3, sz);
    uint32_t dyn[1] = {2};
    long nth;
    for (nth = 1; nth < 10000; nth++) {
        s = NULL;
        kc_alloc_fail_at(nth, false);
        int rc = kc_graph_desc_specialize(&s, d, &in, 1, dyn, 0, NULL);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) break;
        if (rc != KC_ENOMEM) fail_msg("allocation %ld: %d %s", nth, rc, kc_error_last()->message);
        assert_null(s);
    }
    assert_true(nth > 20);
    assert_string_equal(s->steps[0].args[2], "e64:5");
    kc_graph_desc_free(s);
    kc_graph_desc_free(d);
}

static void test_expr_subst(void **state) {
    (void)state;
    const char *names[] = {"N", "min"}, *repl[] = {"3", "9"};
    char *out;
    assert_int_equal(kc_expr_subst("NN+N*ceildiv(N,NN) - N_1", names, repl, 2, &out), KC_OK);
    assert_string_equal(out, "NN+3*ceildiv(3,NN) - N_1");
    free(out);
    assert_int_equal(kc_expr_subst("min(min, 2) + other", names, repl, 2, &out),
                     KC_OK); /* a function is not a symbol */
    assert_string_equal(out, "min(9, 2) + other");
    free(out);
    assert_int_equal(kc_expr_subst("  N  ", names, repl, 2, &out), KC_OK);
    assert_string_equal(out, "  3  ");
    free(out);
    assert_int_equal(kc_expr_subst("N +", names, repl, 2, &out), KC_EEXPR);
    assert_null(out);
    assert_int_equal(kc_expr_subst("N $ 2", names, repl, 2, &out), KC_EEXPR);
    assert_null(out);
}

static void test_a_number_is_never_generalized(void **state) {
    (void)state;
    kc_graph_desc *d = names_desc(), *s = NULL;
    int64_t sz[] = {5, 7, 64};
    kc_tensor_meta in = meta(3, sz);
    uint32_t dyn[1] = {4}, applied[1]; /* the dimension written 64 */
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, dyn, 0, applied), KC_EINVAL);
    assert_null(s);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "graph 'names', input 0 size[2]") || !strstr(m, "number 64")) fail_msg("%s", m);
    /* Asked to keep numbers: it stays 64, and `applied` tells the site to keep guarding it. */
    dyn[0] = 6;
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, dyn, KC_SPECIALIZE_KEEP_NUMBERS, applied), KC_OK);
    assert_int_equal(applied[0], 2);
    assert_string_equal(tensor(s, KC_ROLE_INPUT, 0).sizes[2], "64");
    kc_graph_desc_free(s);
    s = NULL;
    /* Calls that do not fit the description. */
    sz[2] = 32;
    in = meta(3, sz);
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "the number 64 here, the call 32"));
    sz[2] = 64;
    in = meta(3, sz);
    in.dtype = KC_DTYPE_F16;
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL), KC_EINVAL);
    in = meta(2, sz);
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL), KC_EINVAL);
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 0, NULL, 0, NULL), KC_EINVAL);
    assert_int_equal(kc_graph_desc_specialize(&s, d, NULL, 1, NULL, 0, NULL), KC_EINVAL);
    assert_null(s);
    kc_graph_desc_free(d);
}

/* ---- the guarded flow on softmax.json ---- */

typedef struct flow {
    kc_site *site;
    kc_graph_desc *spec;
    int use_get;          /* kc_graph_get on the double (else kc_graph_compile for sm_90) */
    kc_graph_source last; /* where the last call's graph came from (KC_FROM_MEMORY for a site hit) */
} flow;

static void release_graph(void *g) { kc_graph_release(g); }

/* Run a forward of `g` on the double for rows x cols and check its one launch: grid R, e32:C. */
static void forward_checked(kc_graph *g, int64_t rows, int64_t cols) {
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 2, {rows, cols}, {cols, 1}}, out;
    memset(&out, 0, sizeof out);
    assert_int_equal(kc_cuda_malloc(&in.data, (size_t)(rows * cols * 4), NULL), KC_OK);
    kcd_reset();
    if (kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l;
    assert_int_equal(kcd_launch_get(0, &l), 0);
    assert_int_equal(l.grid[0], (unsigned)rows);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), (uint64_t)cols);
    assert_int_equal(out.sizes[0], rows);
    assert_int_equal(out.sizes[1], cols);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
}

/* One call as a runtime makes it: ask the site; on a miss specialize, compile or get, insert. */
static void call(flow *f, int64_t rows, int64_t cols) {
    int64_t sz[] = {rows, cols};
    kc_tensor_meta m = meta(2, sz);
    kc_call c = {&m, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(f->site, &c, &a), KC_OK);
    kc_graph *g = NULL;
    if (a.result == KC_SITE_HIT) {
        f->last = KC_FROM_MEMORY;
        g = a.value;
    } else {
        assert_int_equal(a.result, KC_SITE_MISS);
        kc_graph_desc *d;
        uint32_t applied[1];
        if (kc_graph_desc_specialize(&d, f->spec, &m, 1, a.dynamic, 0, applied))
            fail_msg("%s", kc_error_last()->message);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = f->use_get ? kc_graph_get(cache, d, 0, &g, &info) : kc_graph_compile(cache, d, "sm_90", &info);
        if (rc) fail_msg("%s", kc_error_last()->message);
        kc_graph_desc_free(d);
        f->last = info.source;
        assert_int_equal(kc_site_insert(f->site, &c, applied, g, f->use_get ? release_graph : NULL), KC_OK);
    }
    if (f->use_get) forward_checked(g, rows, cols);
}

static void test_guarded_flow_two_processes(void **state) {
    (void)state;
    pid_t pid = fork();
    if (pid == 0) {
        flow f = {NULL, kcdt_load("softmax.json"), 0, KC_FROM_MEMORY};
        kc_site_new(&f.site, cache, "softmax.forward", NULL);
        int ok = 1;
        call(&f, 64, 128), ok &= f.last == KC_FROM_COMPILE; /* static */
        call(&f, 32, 128), ok &= f.last == KC_FROM_COMPILE; /* R dynamic: the site saw two sizes */
        call(&f, 100, 128), ok &= f.last == KC_FROM_MEMORY; /* every later shape: a hit */
        call(&f, 64, 128), ok &= f.last == KC_FROM_MEMORY;
        kc_site_free(f.site);
        kc_graph_desc_free(f.spec);
        kc_cache_close(cache);
        _exit(ok ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), 2);
    /* The next process: its site starts from the saved profile, and the dynamic graph is on disk. */
    flow f = {NULL, kcdt_load("softmax.json"), 0, KC_FROM_MEMORY};
    kc_site_new(&f.site, cache, "softmax.forward", NULL);
    call(&f, 5, 128);
    assert_int_equal(f.last, KC_FROM_DISK);
    call(&f, 3000, 128);
    assert_int_equal(f.last, KC_FROM_MEMORY);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), 2);
    kc_site_free(f.site);
    kc_graph_desc_free(f.spec);
}

static void test_guarded_flow_through_graph_get(void **state) {
    (void)state;
    if (kc_cuda_available() != KC_OK) fail_msg("the driver double did not load: %s", kc_error_last()->message);
    flow f = {NULL, kcdt_load("softmax.json"), 1, KC_FROM_MEMORY};
    kc_site_new(&f.site, cache, "softmax.forward", NULL);
    call(&f, 64, 128);
    assert_int_equal(f.last, KC_FROM_COMPILE);
    call(&f, 32, 128);
    assert_int_equal(f.last, KC_FROM_COMPILE);
    for (int64_t r = 1; r <= 512; r *= 3) { /* every later shape: a site hit, launched with its own R */
        call(&f, r, 128);
        assert_int_equal(f.last, KC_FROM_MEMORY);
    }
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), 2);
    /* The next process: no graph loaded, a fresh cache handle, a new site. */
    kc_site_free(f.site);
    kc_graph_loaded_budget(0, 0);
    kc_cache_close(cache);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    assert_int_equal(kc_cache_open(&cache, &o), KC_OK);
    kc_site_new(&f.site, cache, "softmax.forward", NULL);
    call(&f, 77, 128);
    assert_int_equal(f.last, KC_FROM_DISK);
    call(&f, 78, 128);
    assert_int_equal(f.last, KC_FROM_MEMORY);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), 2);
    kc_site_free(f.site); /* releases its graphs */
    kc_graph_loaded_budget(0, 0);
    kcdt_no_leaks("after the site is freed");
    kc_graph_loaded_budget(512, (size_t)1 << 30);
    kc_graph_desc_free(f.spec);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_readers),
        T(test_all_static_replaces_every_symbol),
        T(test_dynamic_keeps_the_spec_symbol),
        T(test_a_shared_symbol_stays_where_any_use_is_dynamic),
        T(test_substitution_follows_the_parser),
        T(test_expr_subst),
        T(test_out_of_memory),
        T(test_a_number_is_never_generalized),
        T(test_guarded_flow_two_processes), /* forks: before anything here starts the driver */
        T(test_guarded_flow_through_graph_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
