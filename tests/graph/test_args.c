/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_args.c — runtime arguments and the argument kinds of issue 17 (items 1 and 5), on a CPU:
 * declarations from a spec and from C (kc_graph_add_arg), bad declarations refused with the
 * spec's file and place, the launch ABI of every kind ("arg:NAME" sized by its declared type,
 * "null", "u32:", "f64:", "bytes:HEX", a tensor at an offset) against parameter tables and
 * against what NVRTC really compiled, the decoder's strictness about the new kinds, argument
 * packing (values, offsets in and out of range), and the key: the arguments' names and types
 * are in it, their values never are.
 *
 * The launches themselves, byte by byte, are test_args_double.c's (the driver double).
 */

#include <math.h>

#include "common/internal.h"
#include "compile/params.h"
#include "graph/argkind.h"
#include "graph/graph_internal.h"
#include "graph/program.h"
#include "kcache.h"
#include "helpers.h"
#include "args_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("args", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* Write k.cu and spec args.json with `body` (the JSON after the kernels); load it: KC_OK or the error. */
static int spec_rc(const char *body, kc_graph_desc **out) {
    char p[700];
    kcat_write_spec(dir, "args.json", "args_test", "", body, p, sizeof p);
    *out = NULL;
    return kc_graph_desc_load(out, p);
}

static kc_graph_desc *spec(const char *body) {
    kc_graph_desc *d;
    if (spec_rc(body, &d) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

/* The spec is refused (KC_EINVAL; KC_EEXPR for a malformed expression, as everywhere) with a message holding
 * the file name and every needle. */
static void refused(const char *body, const char *n1, const char *n2) {
    kc_graph_desc *d;
    int rc = spec_rc(body, &d);
    if (rc != KC_EINVAL && rc != KC_EEXPR) fail_msg("expected KC_EINVAL, got %d for:\n%s", rc, body);
    assert_null(d);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "args.json") || !strstr(m, n1) || (n2 && !strstr(m, n2)))
        fail_msg("'%s'%s%s not all in: %s", n1, n2 ? " and " : "", n2 ? n2 : "", m);
}

#define IO \
    "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
#define IO16 \
    "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [16]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [4, 4]}],\n"
#define SCALE(args) \
    "\"forward\": [{\"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"args\": [" args "]}]"

/* The full step: every new kind in one launch. */
#define STEP_ARGS                                                                                          \
    "\"input:0\", \"output:0\", \"e64:N\", \"arg:lr\", \"f64:0.25\", \"u32:4000000000\", \"bytes:803f\", " \
    "\"bytes:0000803f0000004000004040\", \"null\", \"input:0+N-1\", \"arg:seed\""

static kc_lprog *program_of(const kc_graph_desc *d, kc_pass pass) {
    kc_buf b = {0};
    kc_program_encode(d, pass, &b);
    assert_false(b.failed);
    kc_lprog *p;
    if (kc_program_decode(b.data, b.len, &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_buf_free(&b);
    return p;
}

/* ---- declarations ---- */

static void test_declarations_from_a_spec_and_from_c(void **state) {
    (void)state;
    kc_graph_desc *d = spec(IO
                            "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"seed\", \"type\": \"u64\"},"
                            " {\"name\": \"beta\", \"type\": \"f64\"}, {\"name\": \"k\", \"type\": \"i32\"},"
                            " {\"name\": \"m\", \"type\": \"u32\"}, {\"name\": \"t\", \"type\": \"i64\"}],\n" SCALE(
                                "\"input:0\", \"output:0\", \"e32:N\", \"arg:lr\""));
    kc_lprog *p = program_of(d, KC_PASS_FORWARD);
    static const char *names[] = {"lr", "seed", "beta", "k", "m", "t"};
    static const kc_arg_type types[] = {KC_ARG_F32, KC_ARG_U64, KC_ARG_F64, KC_ARG_I32, KC_ARG_U32, KC_ARG_I64};
    assert_int_equal(p->nrargs, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(p->rargs[i].name, names[i]);
        assert_int_equal(p->rargs[i].type, types[i]);
    }
    kc_lprog_free(p);
    /* The backward program carries the declarations too (its calls are checked against them). */
    p = program_of(d, KC_PASS_BACKWARD);
    assert_int_equal(p->nrargs, 6);
    kc_lprog_free(p);
    kc_graph_desc_free(d);

    /* In C, with every refusal's reason. */
    kc_graph_desc *c;
    assert_int_equal(kc_graph_desc_new(&c, "c_args"), KC_OK);
    const char *sz[] = {"N"};
    assert_int_equal(kc_graph_add_input(c, KC_DTYPE_F32, 1, sz, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_arg(c, "lr", KC_ARG_F32), KC_OK);
    assert_int_equal(kc_graph_add_arg(c, "lr", KC_ARG_F64), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "declared twice"));
    assert_int_equal(kc_graph_add_arg(c, "N", KC_ARG_I64), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "size symbol"));
    assert_int_equal(kc_graph_add_arg(c, "2x", KC_ARG_I64), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "identifier"));
    assert_int_equal(kc_graph_add_arg(c, "a-b", KC_ARG_I64), KC_EINVAL);
    assert_int_equal(kc_graph_add_arg(c, "", KC_ARG_I64), KC_EINVAL);
    assert_int_equal(kc_graph_add_arg(c, "x", (kc_arg_type)0), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "unknown type"));
    assert_int_equal(kc_graph_add_arg(c, "x", (kc_arg_type)7), KC_EINVAL);
    assert_int_equal(kc_graph_add_arg(NULL, "x", KC_ARG_F32), KC_EINVAL);
    /* A later input's symbol may not take a runtime argument's name either. */
    const char *sz2[] = {"lr"};
    assert_int_equal(kc_graph_add_input(c, KC_DTYPE_F32, 1, sz2, NULL, 0), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "runtime argument"));
    kc_graph_desc_free(c);
}

static void test_bad_declarations_name_the_file_and_place(void **state) {
    (void)state;
    refused(IO "\"args\": [{\"name\": \"lr\", \"type\": \"f16\"}],\n" SCALE("\"input:0\""), "args[0].type",
            "unknown type 'f16'");
    refused(IO "\"args\": [{\"name\": \"lr\"}],\n" SCALE("\"input:0\""), "args[0].type", "unknown type");
    refused(IO "\"args\": [{\"name\": \"a\", \"type\": \"f32\"}, {\"name\": \"a\", \"type\": \"i32\"}],\n" SCALE(
                "\"input:0\""),
            "args[1]", "declared twice");
    refused(IO "\"args\": [{\"name\": \"N\", \"type\": \"i64\"}],\n" SCALE("\"input:0\""), "args[0]", "size symbol");
    refused(IO "\"args\": [{\"name\": \"l r\", \"type\": \"f32\"}],\n" SCALE("\"input:0\""), "args[0]", "identifier");
    refused(IO "\"args\": [{\"type\": \"f32\"}],\n" SCALE("\"input:0\""), "args[0]", "name");
    refused(IO "\"args\": {\"lr\": \"f32\"},\n" SCALE("\"input:0\""), "args", "array");
    /* Steps: a runtime argument never declared, malformed constants, offsets. */
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"arg:lr\""), "forward[0]", "arg:lr");
    refused(IO SCALE("\"input:0\", \"output:0\", \"u32:4294967296\", \"f32:1\""), "forward[0]", "u32:4294967296");
    refused(IO SCALE("\"input:0\", \"output:0\", \"u32:-1\", \"f32:1\""), "forward[0]", "u32:-1");
    refused(IO SCALE("\"input:0\", \"output:0\", \"u32:\", \"f32:1\""), "forward[0]", "bad constant");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"f64:one\""), "forward[0]", "f64:one");
    /* Out of its kind's range: never wrapped to 32 bits, never made infinite. */
    refused(IO SCALE("\"input:0\", \"output:0\", \"i32:3000000000\", \"f32:1\""), "forward[0]", "i32:3000000000");
    refused(IO SCALE("\"input:0\", \"output:0\", \"i32:-2147483649\", \"f32:1\""), "forward[0]", "i32:-2147483649");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"f32:1e300\""), "forward[0]", "f32:1e300");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"f32:nan\""), "forward[0]", "f32:nan");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"f64:inf\""), "forward[0]", "f64:inf");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"bytes:803\""), "forward[0]", "bytes:803");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"bytes:\""), "forward[0]", "bad constant");
    refused(IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"bytes:80zz\""), "forward[0]", "bytes:80zz");
    refused(IO SCALE("\"input:0+\", \"output:0\", \"e32:N\", \"f32:1\""), "forward[0]", "input:0+");
    refused(IO SCALE("\"input:0+M\", \"output:0\", \"e32:N\", \"f32:1\""), "forward[0]", "M");
    refused(IO SCALE("\"input:0-1\", \"output:0\", \"e32:N\", \"f32:1\""), "forward[0]", "input:0-1");
    refused(IO SCALE("\"input:+1\", \"output:0\", \"e32:N\", \"f32:1\""), "forward[0]", "input:+1");
    refused(IO SCALE("\"input:1+0\", \"output:0\", \"e32:N\", \"f32:1\""), "forward[0]", "no such tensor");
    /* An offset outside a tensor whose shape is static: refused now, not at the call. */
    refused(IO16 SCALE("\"input:0+16\", \"output:0\", \"i32:16\", \"f32:1\""), "forward[0]",
            "offset 16 is outside the tensor's 16 elements");
    refused(IO16 SCALE("\"input:0+(0-1)\", \"output:0\", \"i32:16\", \"f32:1\""), "forward[0]", "offset -1");
    refused(IO16 SCALE("\"input:0\", \"output:0+4*4\", \"i32:16\", \"f32:1\""), "forward[0]", "offset 16");
    refused(
        IO16
        "\"forward\": {\"scratch\": [64], \"steps\": [{\"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],"
        " \"args\": [\"scratch:0+64\", \"output:0\", \"i32:16\", \"f32:1\"]}]}",
        "forward[0]", "offset 64 is outside the tensor's 64 bytes");
    /* 257 bytes is one too many. */
    char body[2048], hex[600];
    for (int i = 0; i < 257; i++) snprintf(hex + 2 * i, 3, "%02x", i & 0xff);
    snprintf(body, sizeof body, IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"bytes:%s\""), hex);
    refused(body, "forward[0]", "bad constant");

    /* What is fine: the last element of a static tensor, offsets over symbols (checked per call), 256 bytes. */
    kc_graph_desc *d = spec(IO16 SCALE("\"input:0+15\", \"output:0+(3*4+3)\", \"i32:16\", \"f32:1\""));
    kc_graph_desc_free(d);
    d = spec(IO SCALE("\"input:0+N\", \"output:0+N*1000\", \"e32:N\", \"f32:1\""));
    kc_graph_desc_free(d);
    hex[512] = '\0';
    snprintf(body, sizeof body, IO SCALE("\"input:0\", \"output:0\", \"e32:N\", \"bytes:%s\""), hex);
    d = spec(body);
    kc_graph_desc_free(d);
}

/* ---- the launch ABI of each kind ---- */

static void test_abi_of_each_kind(void **state) {
    (void)state;
    kc_argdecl decl[] = {{"lr", KC_ARG_F32}, {"beta", KC_ARG_F64}, {"k", KC_ARG_I32},
                         {"m", KC_ARG_U32},  {"t", KC_ARG_I64},    {"seed", KC_ARG_U64}};
    static const struct {
        const char *arg;
        unsigned size;
        int cls, pointer;
    } want[] = {
        {"arg:lr", 4, KC_PARAM_FLOAT, 0},    {"arg:beta", 8, KC_PARAM_FLOAT, 0},
        {"arg:k", 4, KC_PARAM_INT, 0},       {"arg:m", 4, KC_PARAM_INT, 0},
        {"arg:t", 8, KC_PARAM_INT, 0},       {"arg:seed", 8, KC_PARAM_INT, 0},
        {"null", 8, KC_PARAM_INT, 1},        {"u32:7", 4, KC_PARAM_INT, 0},
        {"f64:0.5", 8, KC_PARAM_FLOAT, 0},   {"bytes:803f", 2, KC_PARAM_BYTES, 0},
        {"bytes:00", 1, KC_PARAM_BYTES, 0},  {"bytes:0000803f0000004000004040", 12, KC_PARAM_BYTES, 0},
        {"input:0+N", 8, KC_PARAM_INT, 1},   {"scratch:1+64", 8, KC_PARAM_INT, 1},
        {"grad_in:0+1", 8, KC_PARAM_INT, 1},
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(want); i++) {
        kc_arg_abi a;
        if (kc_program_arg_abi(decl, KC_ARRAY_LEN(decl), want[i].arg, &a))
            fail_msg("%s: %s", want[i].arg, kc_error_last()->message);
        if (a.size != want[i].size || a.cls != want[i].cls || a.pointer != want[i].pointer)
            fail_msg("%s: size %u class %d pointer %d", want[i].arg, a.size, a.cls, a.pointer);
    }
    kc_arg_abi a;
    assert_int_equal(kc_program_arg_abi(decl, KC_ARRAY_LEN(decl), "arg:nope", &a), KC_ECORRUPT);
    assert_int_equal(kc_program_arg_abi(NULL, 0, "arg:lr", &a), KC_ECORRUPT);
    assert_int_equal(kc_program_arg_abi(decl, 1, "bytes:8", &a), KC_ECORRUPT);
    assert_int_equal(kc_program_arg_abi(decl, 1, "nullx", &a), KC_ECORRUPT);

    /* Against parameter tables: (offset, size, align, class). */
    static const struct {
        const char *arg;
        kc_param p;
        int ok;
    } cases[] = {
        {"bytes:803f", {0, 2, 2, KC_PARAM_BYTES}, 1}, /* a bf16 by value */
        {"bytes:803f", {0, 2, 2, KC_PARAM_INT}, 1},   /* exact size: any class */
        {"bytes:803f", {0, 2, 2, KC_PARAM_FLOAT}, 1}, /* a half as .f16 */
        {"bytes:803f", {0, 4, 4, KC_PARAM_BYTES}, 0}, /* the size differs */
        {"bytes:803f0000", {0, 2, 2, KC_PARAM_BYTES}, 0},
        {"bytes:0000803f0000004000004040", {4, 12, 4, KC_PARAM_BYTES}, 1}, /* a 12-byte struct at offset 4 */
        {"arg:lr", {0, 4, 4, KC_PARAM_FLOAT}, 1},
        {"arg:lr", {0, 4, 4, KC_PARAM_INT}, 0},   /* a float where the kernel reads an int */
        {"arg:lr", {0, 4, 0, KC_PARAM_ANY}, 1},   /* a cubin says only the size */
        {"arg:lr", {0, 8, 8, KC_PARAM_FLOAT}, 0}, /* f32 where the kernel takes a double */
        {"arg:beta", {0, 8, 8, KC_PARAM_FLOAT}, 1},
        {"arg:k", {0, 4, 4, KC_PARAM_FLOAT}, 0}, /* an int where the kernel reads a float */
        {"arg:m", {0, 4, 4, KC_PARAM_INT}, 1},
        {"arg:t", {0, 4, 4, KC_PARAM_INT}, 0},
        {"arg:seed", {0, 8, 8, KC_PARAM_INT}, 1},
        {"u32:7", {0, 4, 4, KC_PARAM_INT}, 1},
        {"u32:7", {0, 8, 8, KC_PARAM_INT}, 0},
        {"f64:1", {0, 8, 8, KC_PARAM_FLOAT}, 1},
        {"f64:1", {0, 8, 8, KC_PARAM_INT}, 0},
        {"null", {0, 8, 8, KC_PARAM_INT}, 1},
        {"null", {0, 4, 4, KC_PARAM_INT}, 0},
        {"input:0+3", {0, 8, 8, KC_PARAM_INT}, 1},
        /* A scalar at an offset its size does not divide is a member of an aggregate: refused. */
        {"arg:t", {4, 8, 8, KC_PARAM_INT}, 0},
        {"arg:beta", {12, 8, 4, KC_PARAM_FLOAT}, 0},
        {"arg:k", {2, 4, 4, KC_PARAM_INT}, 0},
        {"null", {4, 8, 8, KC_PARAM_INT}, 0},
        {"arg:t", {8, 8, 8, KC_PARAM_INT}, 1},
        {"arg:k", {12, 4, 4, KC_PARAM_INT}, 1},
        {"bytes:0000803f0000004000004040", {2, 12, 2, KC_PARAM_BYTES}, 1}, /* bytes: any offset */
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(cases); i++) {
        kc_param p = cases[i].p;
        kc_params t = {&p, 1, p.offset + p.size};
        char *args[] = {(char *)cases[i].arg};
        int rc = kc_abi_check_step(KC_ECOMPILE, "graph 'g': forward step 0", "k", args, 1, &t, decl,
                                   KC_ARRAY_LEN(decl));
        if ((rc == KC_OK) != cases[i].ok)
            fail_msg("%s against (size %u, class %d): %d, %s", cases[i].arg, p.size, p.cls, rc,
                     rc ? kc_error_last()->message : "accepted");
        if (rc && !strstr(kc_error_last()->message, cases[i].arg))
            fail_msg("the message does not name '%s': %s", cases[i].arg, kc_error_last()->message);
    }
}

/* What NVRTC compiled agrees: every kind fits the kernel's real parameters, as a cubin and as PTX (classes). */
static void test_every_kind_against_compiled_kernels(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        IO "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"seed\", \"type\": \"u64\"}],\n"
           "\"forward\": [{\"kernel\": \"step\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
           " \"args\": [" STEP_ARGS "]}]");
    const char *targets[] = {"sm_80", "compute_80"};
    for (size_t i = 0; i < 2; i++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_compile(cache, d, targets[i], &info)) fail_msg("%s: %s", targets[i], kc_error_last()->message);
    }
    kc_graph_desc_free(d);
    /* lr declared f64 where the kernel takes a float: a compile error naming the argument and both sizes. */
    d = spec(IO "\"args\": [{\"name\": \"lr\", \"type\": \"f64\"}, {\"name\": \"seed\", \"type\": \"u64\"}],\n"
                "\"forward\": [{\"kernel\": \"step\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
                " \"args\": [" STEP_ARGS "]}]");
    size_t before = kct_count_files(dir, ".kce");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_80", &info), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "argument 3") || !strstr(m, "arg:lr") || !strstr(m, "8 bytes") || !strstr(m, "takes 4"))
        fail_msg("%s", m);
    assert_int_equal(kct_count_files(dir, ".kce"), before);
    kc_graph_desc_free(d);
    /* A bf16 passed as 4 bytes, and as an f32 (a float of the wrong size): refused. */
    d = spec(
        IO
        "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"seed\", \"type\": \"u64\"}],\n"
        "\"forward\": [{\"kernel\": \"step\", \"grid\": [1, 1, 1], \"block\": [128, 1, 1], \"args\": [\"input:0\", "
        "\"output:0\", \"e64:N\", \"arg:lr\", \"f64:0.25\", \"u32:4\", \"bytes:803f0000\", \"bytes:0000803f0000004000004040\", "
        "\"null\", \"input:0\", \"arg:seed\"]}]");
    assert_int_equal(kc_graph_compile(cache, d, "compute_80", &info), KC_ECOMPILE);
    if (!strstr(kc_error_last()->message, "bytes:803f0000")) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
}

/* ---- the decoder ---- */

/* Replace the first `from` in b (same length) by `to`; the bytes must hold it. */
static void patch(kc_buf *b, const char *from, const char *to, size_t len) {
    uint8_t *at = memmem(b->data, b->len, from, len);
    assert_non_null(at);
    memcpy(at, to, len);
}

static void test_decoder_refuses_malformed_arguments(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        IO "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"lz\", \"type\": \"u64\"}],\n" SCALE(
            "\"input:0+N\", \"output:0\", \"bytes:803f\", \"arg:lr\""));
    static const struct {
        const char *from, *to;
        size_t len;
    } bad[] = {
        {"\x02\x00\x00\x00lr\x01", "\x02\x00\x00\x00lr\x09", 7}, /* an unknown type */
        {"\x02\x00\x00\x00lr\x01", "\x02\x00\x00\x00lr\x00", 7},
        {"\x02\x00\x00\x00lz", "\x02\x00\x00\x00lr", 6}, /* declared twice */
        {"\x02\x00\x00\x00lz",
         "\x02\x00\x00\x00"
         "1z",
         6},                                                /* not an identifier */
        {"\x02\x00\x00\x00lz", "\x02\x00\x00\x00N\x00", 6}, /* a NUL inside */
        {"arg:lr", "arg:lq", 6},                            /* names no runtime argument */
        {"bytes:803f", "bytes:80zf", 10},
        {"input:0+N", "input:0+Q", 9}, /* an unknown symbol */
        {"input:0+N", "input:0*N", 9},
        {"input:0+N", "input:x+N", 9},
    };
    kc_lprog *p;
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        kc_buf b = {0};
        kc_program_encode(d, KC_PASS_FORWARD, &b);
        assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_OK);
        kc_lprog_free(p);
        patch(&b, bad[i].from, bad[i].to, bad[i].len);
        if (kc_program_decode(b.data, b.len, &p) != KC_ECORRUPT) fail_msg("case %zu (%s) decoded", i, bad[i].to);
        kc_buf_free(&b);
    }
    /* A count of runtime arguments past the limit. */
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    patch(&b, "\x02\x00\x00\x00\x02\x00\x00\x00lr", "\x02\x00\x00\x00\x01\x01\x00\x00lr", 10);
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_ECORRUPT);
    kc_buf_free(&b);
    kc_graph_desc_free(d);
}

/* ---- packing: values, offsets ---- */

static int resolve(void *ctx, int role, size_t i, void **ptr) {
    (void)ctx;
    *ptr = (void *)(uintptr_t)(0x100000 * (role + 1) + 0x1000 * i);
    return KC_OK;
}

static void test_packing_values_and_offsets(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        IO "\"args\": [{\"name\": \"lr\", \"type\": \"f32\"}, {\"name\": \"seed\", \"type\": \"u64\"}],\n"
           "\"forward\": {\"scratch\": [\"N * 4\"], \"steps\": [{\"kernel\": \"step\", \"grid\": [1, 1, 1],"
           " \"block\": [128, 1, 1], \"args\": [" STEP_ARGS "]},\n"
           " {\"kernel\": \"scale\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],"
           " \"args\": [\"scratch:0+N*4-1\", \"output:0+N\", \"e32:N\", \"arg:lr\"]}]}");
    kc_lprog *p = program_of(d, KC_PASS_FORWARD);
    assert_true(p->offsets);
    int64_t syms[1] = {100};
    kc_argval vals[16];
    void *args[16];
    kc_value v[2] = {{KC_ARG_F32, {.f32 = 0.125f}}, {KC_ARG_U64, {.u64 = 0xfedcba9876543210ull}}};
    assert_int_equal(kc_program_check_values(p, v, 2), KC_OK);
    if (kc_program_pack(p, 0, &(kc_argpack){syms, resolve, NULL, NULL, v}, vals, args))
        fail_msg("%s", kc_error_last()->message);
    assert_int_equal((uintptr_t) * (void **)args[0], 0x100000);
    assert_int_equal((uintptr_t) * (void **)args[1], 0x200000);
    assert_int_equal(*(int64_t *)args[2], 100);
    assert_true(*(float *)args[3] == 0.125f);
    assert_true(*(double *)args[4] == 0.25);
    assert_int_equal(*(uint32_t *)args[5], 4000000000u);
    assert_memory_equal(args[6], "\x80\x3f", 2);
    assert_memory_equal(args[7], "\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12);
    assert_null(*(void **)args[8]);
    assert_int_equal((uintptr_t) * (void **)args[9], 0x100000 + 99 * 4); /* the last of 100 floats */
    assert_int_equal(*(uint64_t *)args[10], 0xfedcba9876543210ull);
    /* Step 1: output:0+N is one past the end (refused); the scratch offset is in bytes. */
    int rc = kc_program_pack(p, 1, &(kc_argpack){syms, resolve, NULL, NULL, v}, vals, args);
    assert_int_equal(rc, KC_EINVAL);
    if (!strstr(kc_error_last()->message, "output:0+N") ||
        !strstr(kc_error_last()->message, "offset 100 is outside the tensor's 100 elements"))
        fail_msg("%s", kc_error_last()->message);
    /* Another size: N = 101 makes input:0+N-1 the 101st element. */
    syms[0] = 101;
    assert_int_equal(kc_program_pack(p, 0, &(kc_argpack){syms, resolve, NULL, NULL, v}, vals, args), KC_OK);
    assert_int_equal((uintptr_t) * (void **)args[9], 0x100000 + 100 * 4);
    /* An empty input: any offset but 0 is outside. */
    syms[0] = 0;
    assert_int_equal(kc_program_pack(p, 0, &(kc_argpack){syms, resolve, NULL, NULL, v}, vals, args), KC_EINVAL);
    /* Without values: "arg:lr" needs them. */
    syms[0] = 100;
    assert_int_equal(kc_program_pack(p, 0, &(kc_argpack){syms, resolve, NULL, NULL, NULL}, vals, args), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "arg:lr"));
    assert_int_equal(kc_program_args(p, 0, syms, resolve, NULL, NULL, vals, args), KC_EINVAL);

    /* The call's values: count and types, the message naming the argument. */
    assert_int_equal(kc_program_check_values(p, NULL, 0), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "2 runtime arguments") || !strstr(m, "lr f32") || !strstr(m, "seed u64") ||
        !strstr(m, "kc_graph_forward_args"))
        fail_msg("%s", m);
    assert_int_equal(kc_program_check_values(p, v, 1), KC_EINVAL);
    kc_value w[2] = {{KC_ARG_F64, {.f64 = 0.125}}, v[1]};
    assert_int_equal(kc_program_check_values(p, w, 2), KC_EINVAL);
    m = kc_error_last()->message;
    if (!strstr(m, "'lr'") || !strstr(m, "f32") || !strstr(m, "f64")) fail_msg("%s", m);
    w[0] = v[0];
    w[1].type = KC_ARG_I64;
    assert_int_equal(kc_program_check_values(p, w, 2), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "'seed'"));
    kc_lprog_free(p);
    kc_graph_desc_free(d);
}

/* A broadcast input (stride 0) spans fewer elements than its shape: an offset must stay inside what it spans. */
static void test_offset_into_a_broadcast_input(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "bcast"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,    "k.cu", kcat_kernel_src, "scale", NULL, 0, NULL, 0, NULL,
                       KC_KERNEL_TOOLKIT_HEADERS};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sz[] = {"R", "C"}, *st[] = {"0", "1"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 2, sz, st, 0), KC_OK);
    const char *g[] = {"1", "1", "1"}, *b[] = {"32", "1", "1"};
    const char *args[] = {"input:0+C-1", "input:0+C", "e32:C", "f32:1"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, g, b, NULL, args, 4), KC_OK);
    kc_lprog *p = program_of(d, KC_PASS_FORWARD);
    int64_t syms[2] = {8, 10}; /* R = 8 rows of one shared row of C = 10 */
    kc_argval vals[4];
    void *av[4];
    assert_int_equal(kc_program_args(p, 0, syms, resolve, NULL, NULL, vals, av), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "offset 10 is outside the tensor's 10 elements"));
    kc_lprog_free(p);
    kc_graph_desc_free(d);
}

/* ---- the key ---- */

static void test_types_are_in_the_key_values_never(void **state) {
    (void)state;
    const char *base = IO
        "\"args\": [{\"name\": \"%s\", \"type\": \"%s\"}],\n" SCALE("\"input:0\", \"output:0\", \"e32:N\", \"%s\"");
    struct {
        const char *name, *type, *arg;
    } v[] = {
        {"lr", "f32", "arg:lr"},     {"lr", "f32", "arg:lr"}, {"lr", "i32", "f32:1"},
        {"rate", "f32", "arg:rate"}, {"lr", "f32", "f32:1"},
    };
    char hex[5][KC_KEY_HEX_LEN + 1];
    for (size_t i = 0; i < KC_ARRAY_LEN(v); i++) {
        char body[1024];
        snprintf(body, sizeof body, base, v[i].name, v[i].type, v[i].arg);
        kc_graph_desc *d = spec(body);
        kc_key k;
        if (kc_graph_key(d, &k, NULL)) fail_msg("%s", kc_error_last()->message);
        kc_key_to_hex(&k, hex[i]);
        kc_graph_desc_free(d);
    }
    assert_string_equal(hex[0], hex[1]);     /* the same declaration: the same key */
    assert_string_not_equal(hex[0], hex[2]); /* another type */
    assert_string_not_equal(hex[0], hex[3]); /* another name */
    assert_string_not_equal(hex[2], hex[4]); /* the type alone changes the key (the steps are the same) */
    assert_string_not_equal(hex[0], hex[4]); /* a constant is not a runtime argument */

    /* No value is part of a description: two processes' calls with different learning rates find one entry.
     * Here: compile once, and the second lookup is a hit without a compile. */
    char body[1024];
    snprintf(body, sizeof body, base, "lr", "f32", "arg:lr");
    kc_graph_desc *d = spec(body);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_stats s0, s1;
    assert_int_equal(kc_cache_stats(cache, &s0), KC_OK);
    if (kc_graph_compile(cache, d, "sm_80", &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_graph_compile(cache, d, "sm_80", &info), KC_OK);
    assert_int_not_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_cache_stats(cache, &s1), KC_OK);
    assert_int_equal(s1.v[KC_STAT_COMPILES] - s0.v[KC_STAT_COMPILES], 1);
    kc_graph_desc_free(d);
}

/* ---- the one table of argument kinds (args.c) ---- */

/* What a row's body looks like, to build an argument of each kind. */
static const char *sample_body(const kc_argkind *k) {
    switch (k->body) {
    case KC_AB_TENSOR: return "0+N";
    case KC_AB_NONE: return "";
    case KC_AB_SYM: return "N";
    case KC_AB_EXPR: return "N*2";
    case KC_AB_BYTES: return "803f";
    case KC_AB_RARG: return "lr";
    default: return strcmp(k->spelling, "bool:") == 0 ? "true" : "1";
    }
}

/* The table's own rules: every row is found by its spelling and no spelling is another's prefix (matching does
 * not depend on the rows' order); each tensor role has one row, its spelling round-trips; each row's ABI is what
 * kc_program_arg_abi says; a constant has a check and a message; every row can be packed; a pass that may zero a
 * tensor may pass it; and the lists of what fits a parameter name every row that has a spelling for messages. */
static void test_the_table_of_kinds(void **state) {
    (void)state;
    size_t n;
    const kc_argkind *t = kc_argkind_table(&n);
    kc_argdecl decl[] = {{"lr", KC_ARG_F32}};
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        const kc_argkind *k = &t[i];
        char arg[64], fits[400];
        snprintf(arg, sizeof arg, "%s%s", k->spelling, sample_body(k));
        if (kc_argkind_of(arg) != k) fail_msg("'%s' is not found as its row", arg);
        for (size_t j = 0; j < n; j++)
            if (j != i && strncmp(t[j].spelling, k->spelling, strlen(k->spelling)) == 0 &&
                k->spelling[strlen(k->spelling) - 1] == ':')
                fail_msg("'%s' is a prefix of '%s'", k->spelling, t[j].spelling);
        assert_non_null(k->pack);
        assert_int_equal(k->zero_passes & ~k->passes, 0);
        if (k->body == KC_AB_TENSOR) {
            assert_ptr_equal(kc_argkind_role(k->role), k);
            assert_string_equal(kc_program_role_prefix(k->role), k->spelling);
            size_t pl;
            assert_int_equal(kc_program_role_match(arg, &pl), k->role);
            assert_int_equal(pl, strlen(k->spelling));
        }
        if (k->body == KC_AB_CONST || k->body == KC_AB_BYTES) {
            assert_non_null(k->ok);
            assert_non_null(k->hint);
            assert_true(kc_program_const_ok(arg));
        }
        kc_arg_abi abi;
        if (kc_program_arg_abi(decl, KC_ARRAY_LEN(decl), arg, &abi)) fail_msg("%s: %s", arg, kc_error_last()->message);
        if (k->size) {
            assert_int_equal(abi.size, k->size);
            assert_int_equal(abi.cls, k->cls);
            assert_int_equal(abi.pointer, k->pointer);
        }
        if (k->doc) {
            kc_program_arg_kinds_for(k->size, k->cls, fits, sizeof fits);
            if (!strstr(fits, k->doc))
                fail_msg("'%s' is missing from the kinds that fit %u bytes: %s", k->doc, k->size, fits);
        }
    }
    for (int role = KC_ROLE_INPUT; role <= KC_ROLE_GRAD_IN; role++) assert_non_null(kc_argkind_role(role));
    assert_null(kc_argkind_of("nullx"));
    assert_null(kc_argkind_of("philox_seed2"));
    assert_null(kc_argkind_of("tensor:0"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_declarations_from_a_spec_and_from_c),
        cmocka_unit_test(test_bad_declarations_name_the_file_and_place),
        cmocka_unit_test(test_abi_of_each_kind),
        cmocka_unit_test(test_the_table_of_kinds),
        cmocka_unit_test(test_every_kind_against_compiled_kernels),
        cmocka_unit_test(test_decoder_refuses_malformed_arguments),
        cmocka_unit_test(test_packing_values_and_offsets),
        cmocka_unit_test(test_offset_into_a_broadcast_input),
        cmocka_unit_test(test_types_are_in_the_key_values_never),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
