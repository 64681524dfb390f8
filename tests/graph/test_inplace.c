/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_inplace.c — what a graph writes besides fresh outputs (issue 17, item 2), on a CPU: in-place
 * inputs, outputs that alias an input, accumulating gradients and zero steps — declared in a spec
 * and in C, read back, carried by kc_graph_desc_specialize, written into and strictly read from the
 * program section, and in the key; bad declarations refused with the spec's file and place.
 *
 * What it proves: each declaration reaches the description and the decoded program (flags, the
 * alias's input, each zero step at its place among the kernel steps); a description with any of
 * them never shares a key with one without, and one without keeps its bytes; the decoder refuses
 * what no builder writes (an alias of a non-in-place input, flags on the wrong role, a zero step its
 * pass may not take, a non-canonical reference).  The launches are test_inplace_double.c's.
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
    return kct_open_cache("inplace", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *kernel_src = "extern \"C\" __global__ void upd(float *p, const float *g, float *s, long long n) {\n"
                                "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                                "  if (i < n) { p[i] -= g[i]; atomicAdd(s, p[i]); }\n"
                                "}\n";

/* Write spec inplace.json with `inputs`, `outputs` and `rest` (passes); load it: KC_OK or the error. */
static int spec_rc(const char *inputs, const char *outputs, const char *rest, kc_graph_desc **out) {
    char p[700], json[4096];
    snprintf(p, sizeof p, "%s/k.cu", dir);
    assert_int_equal(kct_write(p, kernel_src, strlen(kernel_src)), 0);
    snprintf(json, sizeof json,
             "{\"name\": \"inplace_test\", \"kernels\": [{\"id\": \"upd\", \"file\": \"k.cu\", \"entry\": \"upd\"}],\n"
             " \"inputs\": [%s],\n \"outputs\": [%s],\n%s}\n",
             inputs, outputs, rest);
    snprintf(p, sizeof p, "%s/inplace.json", dir);
    assert_int_equal(kct_write(p, json, strlen(json)), 0);
    *out = NULL;
    return kc_graph_desc_load(out, p);
}

#define STEP                                                                                \
    "{\"kernel\": \"upd\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1], " \
    "\"args\": [\"input:0\", \"input:1\", \"output:1\", \"e64:N\"]}"
#define IN_P "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"requires_grad\": true%s}"
#define IN_G "{\"dtype\": \"f32\", \"sizes\": [\"N\"]}"
#define OUT_P "{\"dtype\": \"f32\", \"sizes\": [\"N\"]%s}"
#define OUT_S "{\"dtype\": \"f32\", \"sizes\": [1]}"
#define OUTS "{\"dtype\": \"f32\", \"sizes\": [\"N\"]}, " OUT_S

/* The full declaration: input 0 in place, aliased by output 0, its gradient accumulating; zero steps in both passes. */
static kc_graph_desc *full(void) {
    char in[256], out[256];
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"inplace\": true, \"grad\": \"accumulate\"");
    snprintf(out, sizeof out, OUT_P ", " OUT_S, ", \"alias\": \"input:0\"");
    kc_graph_desc *d;
    if (spec_rc(
            in, out,
            "\"forward\": [{\"zero\": \"output:1\"}, " STEP ", {\"zero\": \"input:0\"}, " STEP "],\n"
            "\"backward\": {\"scratch\": [16], \"steps\": [{\"zero\": \"grad_in:1\"}, {\"zero\": \"scratch:0\"}, "
            "{\"kernel\": \"upd\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"args\": [\"grad_in:0\", \"grad_out:0\", "
            "\"scratch:0\", \"e64:N\"]}]}",
            &d) != KC_OK)
        fail_msg("%s", kc_error_last()->message);
    return d;
}

static void expect_err(int rc, const char *a, const char *b) {
    assert_int_equal(rc, KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, a) || (b && !strstr(m, b))) fail_msg("expected '%s' and '%s' in: %s", a, b ? b : "", m);
}

/* ---- declarations, read back ---- */

static void test_spec_declarations_read_back(void **state) {
    (void)state;
    kc_graph_desc *d = full();
    kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 0, &t), KC_OK);
    assert_true(t.inplace && t.grad_accumulate && t.requires_grad);
    assert_int_equal(t.alias, -1);
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 1, &t), KC_OK);
    assert_true(!t.inplace && !t.grad_accumulate);
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_OUTPUT, 0, &t), KC_OK);
    assert_int_equal(t.alias, 0);
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_OUTPUT, 1, &t), KC_OK);
    assert_int_equal(t.alias, -1);
    /* The program: flags, the alias, each zero step at its place among the kernel steps. */
    for (int pass = 0; pass < 2; pass++) {
        kc_buf b = {0};
        kc_program_encode(d, (kc_pass)pass, &b);
        kc_lprog *p;
        if (kc_program_decode(b.data, b.len, &p)) fail_msg("%s", kc_error_last()->message);
        const ptensor *in0 = kc_program_tensor(p, KC_ROLE_INPUT, 0), *o0 = kc_program_tensor(p, KC_ROLE_OUTPUT, 0);
        assert_true(in0->inplace && in0->accumulate && in0->requires_grad &&
                    !kc_program_tensor(p, KC_ROLE_INPUT, 1)->inplace);
        assert_int_equal(o0->alias, 0);
        assert_int_equal(kc_program_tensor(p, KC_ROLE_OUTPUT, 1)->alias, -1);
        if (pass == 0) {
            assert_int_equal(p->nsteps, 2);
            assert_int_equal(p->nzeros, 2);
            assert_int_equal(p->zeros[0].at, 0);
            assert_int_equal(p->zeros[0].role, KC_ROLE_OUTPUT);
            assert_int_equal(p->zeros[0].index, 1);
            assert_int_equal(p->zeros[1].at, 1);
            assert_int_equal(p->zeros[1].role, KC_ROLE_INPUT);
        } else {
            assert_int_equal(p->nsteps, 1);
            assert_int_equal(p->nzeros, 2);
            assert_int_equal(p->zeros[0].role, KC_ROLE_GRAD_IN);
            assert_int_equal(p->zeros[0].index, 1);
            assert_int_equal(p->zeros[1].role, KC_ROLE_SCRATCH);
            assert_int_equal(p->zeros[1].at, 0);
        }
        kc_lprog_free(p);
        kc_buf_free(&b);
    }
    kc_graph_desc_free(d);
}

/* The same graph built in C has the same key as the spec's. */
static void test_c_api_matches_spec(void **state) {
    (void)state;
    kc_graph_desc *s = full(), *d;
    kc_key ks, kd;
    assert_int_equal(kc_graph_key(s, &ks, NULL), KC_OK);
    assert_int_equal(kc_graph_desc_new(&d, "inplace_test"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "k.cu", kernel_src, "upd", NULL, 0, NULL, 0, NULL, 0};
    const char *N[] = {"N"}, *one[] = {"1"};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, N, NULL, 1), KC_OK);
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, N, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_set_grad_accumulate(d, 0), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, N), KC_OK);
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, one), KC_OK);
    assert_int_equal(kc_graph_set_alias(d, 0, 0), KC_OK); /* makes input 0 in place */
    const char *g[] = {"ceildiv(N, 128)", "1", "1"}, *b[] = {"128", "1", "1"}, *g1[] = {"1", "1", "1"},
               *b1[] = {"32", "1", "1"};
    const char *a[] = {"input:0", "input:1", "output:1", "e64:N"},
               *ab[] = {"grad_in:0", "grad_out:0", "scratch:0", "e64:N"};
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_OUTPUT, 1), KC_OK);
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, g, b, NULL, a, 4), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_INPUT, 0), KC_OK);
    assert_int_equal(kc_graph_add_scratch(d, KC_PASS_BACKWARD, "16"), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_BACKWARD, KC_ROLE_GRAD_IN, 1), KC_OK);
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, g, b, NULL, a, 4), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_BACKWARD, KC_ROLE_SCRATCH, 0), KC_OK);
    assert_int_equal(kc_graph_add_step(d, KC_PASS_BACKWARD, 0, g1, b1, NULL, ab, 4), KC_OK);
    assert_int_equal(kc_graph_key(d, &kd, NULL), KC_OK);
    assert_memory_equal(&ks, &kd, sizeof ks);
    /* An alias read back from C too; kc_graph_set_inplace on an input. */
    kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_OUTPUT, 0, &t), KC_OK);
    assert_int_equal(t.alias, 0);
    assert_int_equal(kc_graph_set_inplace(d, 1), KC_OK);
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 1, &t), KC_OK);
    assert_true(t.inplace);
    expect_err(kc_graph_set_inplace(d, 2), "no input 2", NULL);
    kc_graph_desc_free(d);
    kc_graph_desc_free(s);
}

/* ---- bad declarations: clear errors with the spec's file and place ---- */

static void test_bad_declarations(void **state) {
    (void)state;
    kc_graph_desc *d;
    char in[256];
    const char *fwd = "\"forward\": [" STEP "]";
    /* an alias of mismatched shape: rank, size expression, dtype */
    snprintf(in, sizeof in, IN_P ", " IN_G, "");
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N\", 2], \"alias\": \"input:0\"}, " OUT_S, fwd, &d),
               "inplace.json: outputs[0].alias", "an alias of mismatched shape");
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N+0\"], \"alias\": \"input:0\"}, " OUT_S, fwd, &d),
               "inplace.json: outputs[0].alias", "mismatched shape: it is f32 [N+0], input 0 is f32 [N]");
    expect_err(spec_rc(in, "{\"dtype\": \"f16\", \"sizes\": [\"N\"], \"alias\": \"input:1\"}, " OUT_S, fwd, &d),
               "outputs[0].alias", "mismatched shape");
    /* an alias of no input, of an output, not a reference; an input aliased twice */
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:2\"}, " OUT_S, fwd, &d),
               "outputs[0].alias", "does not exist");
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"output:1\"}, " OUT_S, fwd, &d),
               "outputs[0].alias", "an alias of an input only");
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": 0}, " OUT_S, fwd, &d),
               "outputs[0].alias", "not a tensor reference");
    expect_err(spec_rc(in,
                       "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:0\"}, "
                       "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:0\"}",
                       fwd, &d),
               "outputs[1].alias", "already the alias of output 0");
    /* "grad" other than "accumulate"; "inplace" not a boolean; declarations on the wrong role */
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"grad\": \"sum\"");
    expect_err(spec_rc(in, OUTS, fwd, &d), "inplace.json: inputs[0].grad", "must be \"accumulate\"");
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"inplace\": 1");
    expect_err(spec_rc(in, OUTS, fwd, &d), "inplace.json: inputs[0].inplace", "true or false");
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"alias\": \"input:1\"");
    expect_err(spec_rc(in, OUTS, fwd, &d), "inplace.json: inputs[0]", "only an output");
    snprintf(in, sizeof in, IN_P ", " IN_G, "");
    expect_err(spec_rc(in, "{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}, " OUT_S, fwd, &d),
               "inplace.json: outputs[0]", "an input's");
    /* zero steps: an input not in place, a role the pass may not zero, no such tensor, extra fields, a bad reference */
    expect_err(spec_rc(in, OUTS, "\"forward\": [{\"zero\": \"input:0\"}, " STEP "]", &d),
               "inplace.json: forward[0].zero", "not in place");
    expect_err(spec_rc(in, OUTS, "\"forward\": [" STEP ", {\"zero\": \"grad_in:0\"}]", &d),
               "inplace.json: forward[1].zero", "cannot name");
    expect_err(spec_rc(in, OUTS, "\"forward\": [" STEP "], \"backward\": [{\"zero\": \"output:0\"}]", &d),
               "inplace.json: backward[0].zero", "cannot name");
    expect_err(spec_rc(in, OUTS, "\"forward\": [{\"zero\": \"output:2\"}, " STEP "]", &d),
               "inplace.json: forward[0].zero", "names no such tensor");
    expect_err(spec_rc(in, OUTS, "\"forward\": [{\"zero\": \"scratch:0\"}, " STEP "]", &d), "forward[0].zero",
               "names no such tensor");
    expect_err(spec_rc(in, OUTS, "\"forward\": [{\"zero\": \"output:0\", \"kernel\": \"upd\"}, " STEP "]", &d),
               "inplace.json: forward[0]", "alone");
    expect_err(spec_rc(in, OUTS, "\"forward\": [{\"zero\": \"output:x\"}, " STEP "]", &d),
               "inplace.json: forward[0].zero", "not a tensor reference");
    /* zeroing an accumulating gradient: refused in either order */
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"grad\": \"accumulate\"");
    expect_err(spec_rc(in, OUTS, "\"forward\": [" STEP "], \"backward\": [{\"zero\": \"grad_in:0\"}]", &d),
               "inplace.json: backward[0].zero", "discard what the caller accumulated");
    assert_int_equal(kc_graph_desc_new(&d, "order"), KC_OK);
    const char *N[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, N, NULL, 1), KC_OK);
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_BACKWARD, KC_ROLE_GRAD_IN, 0), KC_OK);
    expect_err(kc_graph_set_grad_accumulate(d, 0), "cannot accumulate", "zero step");
    expect_err(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_GRAD_OUT, 0), "cannot name", NULL);
    expect_err(kc_graph_set_alias(d, 0, 0), "no output 0", NULL);
    kc_graph_desc_free(d);
}

/* ---- the key ---- */

static void test_each_declaration_changes_the_key(void **state) {
    (void)state;
    char in[256], out[256];
    kc_key k[6];
    kc_graph_desc *d;
    const char *fwd = "\"forward\": [" STEP "]";
    const char *variants[6][3] = {
        {"", "", fwd},
        {", \"inplace\": true", "", fwd},
        {", \"grad\": \"accumulate\"", "", fwd},
        {"", ", \"alias\": \"input:0\"", fwd},
        {"", "", "\"forward\": [" STEP ", {\"zero\": \"output:0\"}]"},
        {"", "", "\"forward\": [{\"zero\": \"output:0\"}, " STEP "]"},
    };
    for (int v = 0; v < 6; v++) {
        snprintf(in, sizeof in, IN_P ", " IN_G, variants[v][0]);
        snprintf(out, sizeof out, OUT_P ", " OUT_S, variants[v][1]);
        if (spec_rc(in, out, variants[v][2], &d)) fail_msg("%d: %s", v, kc_error_last()->message);
        assert_int_equal(kc_graph_key(d, &k[v], NULL), KC_OK);
        for (int w = 0; w < v; w++)
            if (!memcmp(&k[v], &k[w], sizeof k[v])) fail_msg("variants %d and %d share a key", v, w);
        /* Without any declaration, a tensor record's flags byte is requires_grad alone (the bytes before item 2). */
        if (v == 0) {
            kc_buf b = {0};
            kc_program_encode(d, KC_PASS_FORWARD, &b);
            const uint8_t want[] = {0, KC_DTYPE_F32, 1, 1}; /* input 0: role dtype rank requires_grad */
            const uint8_t *at = memmem(b.data, b.len, want, sizeof want);
            assert_non_null(at);
            kc_buf_free(&b);
        }
        kc_graph_desc_free(d);
    }
}

/* kc_graph_desc_specialize carries every declaration: with every dimension dynamic it rebuilds the same key. */
static void test_specialize_carries_them(void **state) {
    (void)state;
    kc_graph_desc *d = full(), *sd;
    kc_key a, b;
    kc_tensor_meta m[2];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 2; i++) m[i].dtype = KC_DTYPE_F32, m[i].rank = 1, m[i].sizes[0].value = 64;
    uint32_t dyn[2] = {1, 1};
    assert_int_equal(kc_graph_key(d, &a, NULL), KC_OK);
    if (kc_graph_desc_specialize(&sd, d, m, 2, dyn, 0, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kc_graph_key(sd, &b, NULL), KC_OK);
    assert_memory_equal(&a, &b, sizeof a);
    kc_graph_desc_free(sd);
    /* Static: N becomes 64 in both the input's and the alias's sizes, which still agree. */
    if (kc_graph_desc_specialize(&sd, d, m, 2, NULL, 0, NULL)) fail_msg("%s", kc_error_last()->message);
    kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
    assert_int_equal(kc_graph_desc_tensor(sd, KC_ROLE_OUTPUT, 0, &t), KC_OK);
    assert_int_equal(t.alias, 0);
    assert_string_equal(t.sizes[0], "64");
    kc_buf buf = {0};
    kc_program_encode(sd, KC_PASS_FORWARD, &buf);
    kc_lprog *p;
    if (kc_program_decode(buf.data, buf.len, &p)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(p->nzeros, 2);
    assert_int_equal(p->zeros[1].at, 1);
    kc_lprog_free(p);
    kc_buf_free(&buf);
    kc_graph_desc_free(sd);
    kc_graph_desc_free(d);
}

/* ---- the decoder's strictness ---- */

/* Replace the first occurrence of `from` by `to` (same length) in b; 1 when found. */
static int patch(kc_buf *b, const void *from, const void *to, size_t n) {
    uint8_t *at = memmem(b->data, b->len, from, n);
    if (!at) return 0;
    memcpy(at, to, n);
    return 1;
}

static void expect_corrupt(const kc_buf *b, const char *what) {
    kc_lprog *p = NULL;
    int rc = kc_program_decode(b->data, b->len, &p);
    kc_lprog_free(p);
    if (rc != KC_ECORRUPT) fail_msg("%s: decoded (%d)", what, rc);
}

/* A zero step's first bytes: the kernel index 0xffffffff and its reference's length. */
#define Z7 "\xff\xff\xff\xff\x07\x00\x00\x00"
#define Z8 "\xff\xff\xff\xff\x08\x00\x00\x00"
#define Z9 "\xff\xff\xff\xff\x09\x00\x00\x00"

static void test_decoder_refuses_what_no_builder_writes(void **state) {
    (void)state;
    kc_graph_desc *d = full();
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    kc_lprog *p;
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_OK);
    kc_lprog_free(p);
    const uint8_t in0[] = {KC_ROLE_INPUT, KC_DTYPE_F32, 1, 1 | 2 | 4},
                  out0[] = {KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, 8, 0, 0, 0, 0};
    struct {
        const void *from, *to;
        size_t n;
        const char *what;
    } cases[] = {
        {in0, (const uint8_t[]){KC_ROLE_INPUT, KC_DTYPE_F32, 1, 1 | 4}, 4, "an alias of an input not in place"},
        {in0, (const uint8_t[]){KC_ROLE_INPUT, KC_DTYPE_F32, 1, 1 | 2 | 4 | 16}, 4, "an unknown flag"},
        {out0, (const uint8_t[]){KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, 8, 1, 0, 0, 0}, 8,
         "an alias of input 1 (not in place)"},
        {out0, (const uint8_t[]){KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, 8, 9, 0, 0, 0}, 8, "an alias of no input"},
        {out0, (const uint8_t[]){KC_ROLE_OUTPUT, KC_DTYPE_F64, 1, 8, 0, 0, 0, 0}, 8, "an alias of another dtype"},
        {out0, (const uint8_t[]){KC_ROLE_OUTPUT, KC_DTYPE_F32, 1, 2, 0, 0, 0, 0}, 8, "in place on an output"},
        {Z8 "output:1", Z8 "outpuu:1", 16, "a zero step naming no tensor"},
        {Z8 "output:1", Z8 "output:9", 16, "a zero step past the outputs"},
        {Z8 "output:1", Z8 "grad_in:", 16, "a zero step with no index"},
        {Z7 "input:0", Z7 "input:1", 15, "a zero step of an input not in place"},
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(cases); i++) {
        kc_buf c = {0};
        kc_buf_put(&c, b.data, b.len);
        if (!patch(&c, cases[i].from, cases[i].to, cases[i].n)) fail_msg("%s: nothing to patch", cases[i].what);
        expect_corrupt(&c, cases[i].what);
        kc_buf_free(&c);
    }
    kc_buf_free(&b);
    /* Backward: a zero step of an accumulating gradient, of an output (forward's only) */
    kc_program_encode(d, KC_PASS_BACKWARD, &b);
    kc_buf c = {0};
    kc_buf_put(&c, b.data, b.len);
    assert_true(patch(&c, Z9 "grad_in:1", Z9 "grad_in:0", 17));
    expect_corrupt(&c, "a zero step of an accumulating gradient");
    kc_buf_free(&c);
    kc_buf_put(&c, b.data, b.len);
    assert_true(patch(&c, Z9 "scratch:0", Z9 "output:00", 17));
    expect_corrupt(&c, "a non-canonical, forward-only zero reference in backward");
    kc_buf_free(&c);
    kc_buf_free(&b);
    kc_graph_desc_free(d);
}

/* A backward pass of zero steps alone is still a backward pass: the compiled entry carries its BACKWARD section
 * (lookup.c once counted kernel steps only and left the section out, so the pass was lost). */
static void test_backward_of_zero_steps_alone_is_stored(void **state) {
    (void)state;
    char in[256];
    kc_graph_desc *d;
    snprintf(in, sizeof in, IN_P ", " IN_G, "");
    if (spec_rc(in, OUTS, "\"forward\": [" STEP "],\n\"backward\": [{\"zero\": \"grad_in:0\"}]", &d))
        fail_msg("%s", kc_error_last()->message);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kc_key k;
    kc_key_from_hex(&k, info.key);
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &k, "sm_90", &e), KC_OK);
    const void *data;
    size_t len;
    if (kc_entry_section(e, KC_SECTION_BACKWARD, &data, &len) != KC_OK) fail_msg("the entry has no BACKWARD section");
    kc_lprog *p;
    if (kc_program_decode(data, len, &p)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(p->pass, KC_PASS_BACKWARD);
    assert_int_equal(p->nsteps, 0);
    assert_int_equal(p->nzeros, 1);
    assert_int_equal(p->zeros[0].role, KC_ROLE_GRAD_IN);
    assert_int_equal(p->zeros[0].index, 0);
    kc_lprog_free(p);
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

/* A zero step of a range: its own tag (0xfffffffe) with the reference, offset and count; read back, carried by
 * specialize (N replaced in both), its expressions re-validated by the decoder; a whole-tensor zero step keeps its tag. */
static void test_zero_range_in_the_program(void **state) {
    (void)state;
    kc_graph_desc *d;
    char in[256];
    snprintf(in, sizeof in, IN_P ", " IN_G, ", \"inplace\": true");
    if (spec_rc(
            in, OUTS,
            "\"forward\": {\"scratch\": [\"N * 8\"], \"steps\": [{\"zero\": \"scratch:0+N\", \"count\": \"N * 2\"}, "
            "{\"zero\": \"input:0+1\"}, {\"zero\": \"output:1\"}, " STEP "]}",
            &d))
        fail_msg("%s", kc_error_last()->message);
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    kc_lprog *p;
    if (kc_program_decode(b.data, b.len, &p)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(p->nzeros, 3);
    assert_int_equal(p->zeros[0].role, KC_ROLE_SCRATCH);
    assert_string_equal(p->zeros[0].offset, "N");
    assert_string_equal(p->zeros[0].count, "N * 2");
    assert_string_equal(p->zeros[1].offset, "1");
    assert_null(p->zeros[1].count); /* to the end */
    assert_null(p->zeros[2].offset);
    assert_null(p->zeros[2].count);
    kc_lprog_free(p);
    assert_non_null(memmem(b.data, b.len, "\xfe\xff\xff\xff\x09\x00\x00\x00scratch:0", 17));
    assert_non_null(memmem(b.data, b.len, Z8 "output:1", 16)); /* a whole-tensor zero step: the bytes it had */
    /* The decoder re-validates the range's expressions. */
    kc_buf c = {0};
    kc_buf_put(&c, b.data, b.len);
    assert_true(patch(&c, "N * 2", "N * (", 5));
    expect_corrupt(&c, "a count that is no expression");
    kc_buf_free(&c);
    kc_buf_put(&c, b.data, b.len);
    assert_true(patch(&c, "\x01\x00\x00\x00N\x05", "\x01\x00\x00\x00M\x05", 6));
    expect_corrupt(&c, "an offset over an unknown symbol");
    kc_buf_free(&c);
    kc_buf_free(&b);
    /* Specialized to N = 64: the range's expressions too. */
    kc_tensor_meta m[2];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 2; i++) m[i].dtype = KC_DTYPE_F32, m[i].rank = 1, m[i].sizes[0].value = 64;
    kc_graph_desc *sd;
    if (kc_graph_desc_specialize(&sd, d, m, 2, NULL, 0, NULL)) fail_msg("%s", kc_error_last()->message);
    kc_program_encode(sd, KC_PASS_FORWARD, &b);
    if (kc_program_decode(b.data, b.len, &p)) fail_msg("%s", kc_error_last()->message);
    assert_string_equal(p->zeros[0].offset, "64");
    assert_string_equal(p->zeros[0].count, "64 * 2");
    kc_lprog_free(p);
    kc_buf_free(&b);
    kc_graph_desc_free(sd);
    kc_graph_desc_free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_declarations_read_back),
        cmocka_unit_test(test_c_api_matches_spec),
        cmocka_unit_test(test_bad_declarations),
        cmocka_unit_test(test_each_declaration_changes_the_key),
        cmocka_unit_test(test_specialize_carries_them),
        cmocka_unit_test(test_decoder_refuses_what_no_builder_writes),
        cmocka_unit_test(test_backward_of_zero_steps_alone_is_stored),
        cmocka_unit_test(test_zero_range_in_the_program),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
