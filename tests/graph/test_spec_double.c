/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spec_double.c — what a real training step (llm.c's kernels) needs a graph spec to say, each
 * through the spec loader (kc_graph_desc_load), real NVRTC and the CUDA driver double (label
 * driver-double: it checks every launch against the kernel's parameter table, records each
 * launch's argument buffer and logs every allocation and memset; it runs no kernel).
 *
 * What it proves: the built-in <math.h> has glibc's constants (INFINITY, M_PI, …) in a kernel a
 * spec compiles and launches; a "bool:true|false" argument is one byte in the launch buffer, and
 * an argument of the wrong size for a parameter is refused naming the parameter's size, alignment
 * and the kinds that fit it; a zero step may zero a range of a tensor or scratch buffer ("ROLE:I+OFF"
 * and "count"), bounds-checked at load where the sizes are known and at each call before anything
 * runs; a graph may be zero steps only (no kernels); an output may be sized by a device fact,
 * evaluated from the device the graph is loaded on.
 */

#include "common/internal.h"
#include "double/double_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0:132,9.0:114", "spec_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* Write `src` as k.cu and the spec {"name": name, <body>} beside it; load it (KC_OK or the loader's status in *rc). */
static kc_graph_desc *spec_rc(const char *name, const char *src, const char *body, int *rc) {
    char p[700];
    static char json[8192];
    snprintf(p, sizeof p, "%s/%s.cu", dir, name);
    assert_int_equal(kct_write(p, src, strlen(src)), 0);
    snprintf(json, sizeof json, "{\"name\": \"%s\", %s}\n", name, body);
    snprintf(p, sizeof p, "%s/%s.json", dir, name);
    assert_int_equal(kct_write(p, json, strlen(json)), 0);
    kc_graph_desc *d = NULL;
    *rc = kc_graph_desc_load(&d, p);
    return d;
}

static kc_graph_desc *spec(const char *name, const char *src, const char *body) {
    int rc;
    kc_graph_desc *d = spec_rc(name, src, body, &rc);
    if (rc) fail_msg("%s", kc_error_last()->message);
    return d;
}

/* The spec's load fails with KC_EINVAL, its message holding each of `needles`. */
static void spec_refused(const char *name, const char *src, const char *body, const char *const *needles, size_t n) {
    int rc;
    kc_graph_desc *d = spec_rc(name, src, body, &rc);
    kc_graph_desc_free(d);
    if (rc != KC_EINVAL) fail_msg("%s: loaded (%d), expected a refusal", name, rc);
    for (size_t i = 0; i < n; i++)
        if (!strstr(kc_error_last()->message, needles[i]))
            fail_msg("'%s' not in: %s", needles[i], kc_error_last()->message);
}

static kc_graph *get_on(kc_graph_desc *d, int device) {
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, device, &g, &info)) fail_msg("%s", kc_error_last()->message);
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

/* ---- the built-in <math.h> ---- */

static const char *math_src =
    "#include <math.h>\n"
    "extern \"C\" __global__ void clamp(float *x, double *y, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  if (isnan(x[i]) || x[i] == INFINITY || x[i] == -HUGE_VALF) x[i] = NAN;\n"
    "  y[i] = M_PI * M_E * M_SQRT2 * M_LN2 * M_LN10 * M_LOG2E * M_LOG10E * M_PI_2 * M_PI_4 * M_1_PI * M_2_PI\n"
    "         * M_2_SQRTPI * M_SQRT1_2 + (y[i] > HUGE_VAL ? 1 : 0) + M_PIf + FP_NAN + FP_INFINITE + FP_NORMAL;\n"
    "}\n";

/* llm.c's kernels use INFINITY and M_PI: a spec asking for the toolkit's headers compiles, loads and launches them. */
static void test_math_constants_in_a_spec(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        "mathc", math_src,
        "\"toolkit_headers\": true, \"kernels\": [{\"id\": \"c\", \"file\": \"mathc.cu\", \"entry\": \"clamp\"}],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}, {\"dtype\": \"f64\", \"sizes\": [\"N\"], "
        "\"inplace\": true}],"
        " \"forward\": [{\"kernel\": \"c\", \"grid\": [\"ceildiv(N, 64)\", 1, 1], \"block\": [64, 1, 1],"
        " \"args\": [\"input:0\", \"input:1\", \"e64:N\"]}]");
    kc_graph *g = get_on(d, 0);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in[2] = {{NULL, KC_DTYPE_F32, 1, {100}, {1}}, {NULL, KC_DTYPE_F64, 1, {100}, {1}}};
    assert_int_equal(kc_cuda_malloc(&in[0].data, 400, NULL), KC_OK);
    assert_int_equal(kc_cuda_malloc(&in[1].data, 800, NULL), KC_OK);
    kcd_reset();
    if (kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcdt_no_defects();
    kc_cuda_free(in[0].data, NULL);
    kc_cuda_free(in[1].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* ---- a bool argument ---- */

static const char *bool_src = "extern \"C\" __global__ void flag(float *y, bool on, long long n) {\n"
                              "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                              "  if (i < n && on) y[i] = 1.0f;\n"
                              "}\n";

static kc_graph_desc *bool_spec(const char *name, const char *arg, int *rc) {
    char body[1024];
    snprintf(
        body, sizeof body,
        "\"kernels\": [{\"id\": \"f\", \"file\": \"%s.cu\", \"entry\": \"flag\"}],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],"
        " \"forward\": [{\"kernel\": \"f\", \"grid\": [1, 1, 1], \"block\": [128, 1, 1], \"args\": [\"input:0\", \"%s\", \"e64:N\"]}]",
        name, arg);
    return spec_rc(name, bool_src, body, rc);
}

/* "bool:true" and "bool:false" are one byte, 1 and 0, in the launch buffer, where the kernel's parameter is. */
static void test_bool_argument_is_one_byte(void **state) {
    (void)state;
    static const char *const args[] = {"bool:true", "bool:false"};
    for (int k = 0; k < 2; k++) {
        int rc;
        kc_graph_desc *d = bool_spec(k ? "boolf" : "boolt", args[k], &rc);
        if (rc) fail_msg("%s", kc_error_last()->message);
        kc_graph *g = get_on(d, 0);
        assert_int_equal(kc_cuda_push(0), KC_OK);
        kc_tensor in = {NULL, KC_DTYPE_F32, 1, {100}, {1}};
        assert_int_equal(kc_cuda_malloc(&in.data, 400, NULL), KC_OK);
        kcd_reset();
        if (kc_graph_forward(g, &in, 1, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(kcd_launch_count(), 1);
        kcd_launch l = launch(0);
        assert_int_equal(l.nparams, 3);
        assert_int_equal(l.param_size[1], 1);
        uint8_t b[8] = {0xee, 0xee};
        assert_int_equal(kcd_launch_arg(&l, 1, b, sizeof b), 1);
        assert_int_equal(b[0], k ? 0 : 1);
        assert_int_equal(kcd_launch_arg_u64(&l, 2), 100);
        kcdt_no_defects();
        kc_cuda_free(in.data, NULL);
        kc_cuda_pop();
        kc_graph_release(g);
        kc_graph_desc_free(d);
    }
    /* Another spelling is refused when the spec is loaded, naming the kind's values. */
    int rc;
    kc_graph_desc *d = bool_spec("boolx", "bool:1", &rc);
    assert_null(d);
    assert_int_equal(rc, KC_EINVAL);
    if (!strstr(kc_error_last()->message, "bool: true or false")) fail_msg("%s", kc_error_last()->message);
}

/* An argument of another size for a 1-byte bool parameter is refused before anything is stored; the message names the
 * parameter's size and alignment, and the kinds that pass one byte. */
static void test_abi_mismatch_names_size_and_kinds_that_fit(void **state) {
    (void)state;
    int rc;
    kc_graph_desc *d = bool_spec("booli", "i32:1", &rc);
    if (rc) fail_msg("%s", kc_error_last()->message);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    static const char *const needles[] = {"argument 1 ('i32:1') passes 4 bytes", "takes 1", "aligned to 1",
                                          "kinds that fit it: bool:true|false", "bytes:HEX of 1 byte"};
    for (size_t i = 0; i < KC_ARRAY_LEN(needles); i++)
        if (!strstr(m, needles[i])) fail_msg("'%s' not in: %s", needles[i], m);
    kc_graph_desc_free(d);
    /* "bytes:01" fits it too, as the message says. */
    d = bool_spec("boolb", "bytes:01", &rc);
    if (rc || kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
}

/* ---- zeroing a range ---- */

static const char *flag_src = "extern \"C\" __global__ void scan(const float *x, float *y, int *flag, long long n) {\n"
                              "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                              "  if (i < n) { y[i] = x[i]; if (i == 0) atomicAdd(flag, 1); }\n"
                              "}\n";

#define FLAG_KERNEL "\"kernels\": [{\"id\": \"s\", \"file\": \"%s.cu\", \"entry\": \"scan\"}], "
#define FLAG_TENSORS \
    "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], "
#define FLAG_STEP                                                                         \
    "{\"kernel\": \"s\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1], " \
    "\"args\": [\"input:0\", \"output:0\", \"scratch:0\", \"e64:N\"]}"

static kc_graph_desc *flag_spec(const char *name, const char *zeros, int *rc) {
    char body[2048];
    snprintf(body, sizeof body,
             FLAG_KERNEL FLAG_TENSORS "\"forward\": {\"scratch\": [1024], \"steps\": [%s" FLAG_STEP "]}", name, zeros);
    return spec_rc(name, flag_src, body, rc);
}

/* llm.c zeroes a 4-byte flag at the start of a scratch buffer: a zero step of a range is a memset of exactly those bytes
 * (of an output: from its offset, in elements), before the launch it precedes. */
static void test_zero_a_range(void **state) {
    (void)state;
    int rc;
    kc_graph_desc *d = flag_spec(
        "flag",
        "{\"zero\": \"scratch:0\", \"count\": 4}, {\"zero\": \"output:0+2\", \"count\": \"N - 4\"}, "
        "{\"zero\": \"scratch:0+1020\"}, ",
        &rc);
    if (rc) fail_msg("%s", kc_error_last()->message);
    kc_graph *g = get_on(d, 0);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {100}, {1}}, out;
    assert_int_equal(kc_cuda_malloc(&in.data, 400, NULL), KC_OK);
    kcd_reset();
    memset(&out, 0, sizeof out);
    if (kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l = launch(0);
    uint64_t scratch = kcd_launch_arg_u64(&l, 2);
    char l1[96], l2[96], l3[96];
    snprintf(l1, sizeof l1, "cuMemsetD8Async %#llx = 0 x 4 (4 bytes)", (unsigned long long)scratch);
    snprintf(l2, sizeof l2, "cuMemsetD8Async %#llx = 0 x 384 (384 bytes)",
             (unsigned long long)((uintptr_t)out.data + 8));
    snprintf(l3, sizeof l3, "cuMemsetD8Async %#llx = 0 x 4 (4 bytes)", (unsigned long long)(scratch + 1020));
    const char *seq[] = {l1, l2, l3, "cuLaunchKernel scan"};
    kcdt_log_in_order(seq, 4);
    assert_int_equal(log_count("cuMemset"), 3);
    kc_tensor_release(&out, NULL, NULL);
    /* N = 3: the count N - 4 is negative — refused before anything is allocated, zeroed or launched. */
    in.sizes[0] = 3;
    kcd_reset();
    memset(&out, 0, sizeof out);
    assert_int_equal(kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "zero step 'output:0'") || !strstr(m, "not inside the tensor's 3")) fail_msg("%s", m);
    assert_int_equal(kcd_launch_count(), 0);
    assert_int_equal(log_count("cuMemset"), 0);
    assert_null(out.data);
    kcdt_no_defects();
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* A range outside a tensor of constant size is refused when the spec is loaded, naming the place; so is a malformed one. */
static void test_zero_range_checked_at_load(void **state) {
    (void)state;
    static const struct {
        const char *zeros, *needle;
    } bad[] = {
        {"{\"zero\": \"scratch:0+1000\", \"count\": 100}, ",
         "the range of 100 bytes from 1000 is not inside the tensor's 1024"},
        {"{\"zero\": \"scratch:0+1025\"}, ", "from 1025 is not inside the tensor's 1024"},
        {"{\"zero\": \"scratch:0\", \"count\": -1}, ", "forward[0].count"},
        {"{\"zero\": \"scratch:0+\"}, ", "is not ROLE:I+OFFSET"},
        {"{\"zero\": \"scratch:0+M\"}, ", "zero step 'scratch:0': the offset"},
        {"{\"zero\": \"scratch:0\", \"count\": 4, \"grid\": [1, 1, 1]}, ", "alone"},
        /* "count" on a kernel step would be dropped in silence: an error. */
        {"{\"kernel\": \"s\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [], \"count\": 4}, ",
         "belongs to a zero step"},
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        int rc;
        kc_graph_desc *d = flag_spec("flagbad", bad[i].zeros, &rc);
        kc_graph_desc_free(d);
        if (rc == KC_OK || !strstr(kc_error_last()->message, bad[i].needle))
            fail_msg("case %zu: %d: %s", i, rc, kc_error_last()->message);
        if (!strstr(kc_error_last()->message, "flagbad.json: forward[0]"))
            fail_msg("case %zu: %s", i, kc_error_last()->message);
    }
    /* The range is in the key: another count is another graph; a whole-tensor zero step keeps the bytes it had. */
    int rc;
    kc_graph_desc *a = flag_spec("flagk", "{\"zero\": \"scratch:0\", \"count\": 4}, ", &rc);
    kc_graph_desc *b = flag_spec("flagk", "{\"zero\": \"scratch:0\", \"count\": 8}, ", &rc);
    kc_graph_desc *c = flag_spec("flagk", "{\"zero\": \"scratch:0\"}, ", &rc);
    kc_key ka, kb, kc;
    assert_int_equal(kc_graph_key(a, &ka, NULL), KC_OK);
    assert_int_equal(kc_graph_key(b, &kb, NULL), KC_OK);
    assert_int_equal(kc_graph_key(c, &kc, NULL), KC_OK);
    assert_memory_not_equal(&ka, &kb, sizeof ka);
    assert_memory_not_equal(&ka, &kc, sizeof ka);
    kc_graph_desc_free(a);
    kc_graph_desc_free(b);
    kc_graph_desc_free(c);
}

/* ---- a graph of zero steps only ---- */

/* Zeroing gradients between steps (llm.c): a graph with no kernel at all, only zero steps — stored, found again and
 * run: a memset per step, nothing compiled or launched. */
static void test_zero_steps_only(void **state) {
    (void)state;
    kc_graph_desc *d = spec(
        "zerograds", "",
        "\"kernels\": [], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true},"
        " {\"dtype\": \"bf16\", \"sizes\": [\"M\", 4], \"inplace\": true}],"
        " \"forward\": [{\"zero\": \"input:0\"}, {\"zero\": \"input:1+4\", \"count\": \"M * 4 - 4\"}]");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    uint64_t misses = kcdt_stat(cache, KC_STAT_MISSES), compiles = kcdt_stat(cache, KC_STAT_COMPILES);
    uint64_t bypasses = kcdt_stat(cache, KC_STAT_BYPASSES), memory_hits = kcdt_stat(cache, KC_STAT_MEMORY_HITS);
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_BYPASS); /* nothing to compile or store */
    assert_non_null(strstr(info.miss_reason, "no kernels"));
    assert_int_equal(info.units, 0);
    kc_graph *g, *g2;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    if (kc_graph_get(cache, d, 0, &g2, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_MEMORY); /* kept in the loaded table under its key */
    assert_ptr_equal(g, g2);
    kc_graph_release(g2);
    assert_int_equal(kcdt_stat(cache, KC_STAT_MISSES), misses);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), compiles);
    assert_int_equal(kcdt_stat(cache, KC_STAT_BYPASSES),
                     bypasses + 2); /* each lookup's one outcome: what it was told */
    assert_int_equal(kcdt_stat(cache, KC_STAT_MEMORY_HITS), memory_hits + 1);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in[2] = {{NULL, KC_DTYPE_F32, 1, {100}, {1}}, {NULL, KC_DTYPE_BF16, 2, {10, 4}, {4, 1}}};
    assert_int_equal(kc_cuda_malloc(&in[0].data, 400, NULL), KC_OK);
    assert_int_equal(kc_cuda_malloc(&in[1].data, 80, NULL), KC_OK);
    kcd_reset();
    if (kc_graph_forward(g, in, 2, NULL, 0, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    char l1[96], l2[96];
    snprintf(l1, sizeof l1, "cuMemsetD8Async %#llx = 0 x 400 (400 bytes)", (unsigned long long)(uintptr_t)in[0].data);
    snprintf(l2, sizeof l2, "cuMemsetD8Async %#llx = 0 x 72 (72 bytes)",
             (unsigned long long)((uintptr_t)in[1].data + 8));
    const char *seq[] = {l1, l2};
    kcdt_log_in_order(seq, 2);
    assert_int_equal(log_count("cuMemset"), 2);
    assert_int_equal(kcd_launch_count(), 0);
    kcdt_no_defects();
    kc_cuda_free(in[0].data, NULL);
    kc_cuda_free(in[1].data, NULL);
    kc_cuda_pop();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    /* A kernel step in a graph with no kernels names nothing: refused at load, as before. */
    static const char *const needles[] = {"forward[0]", "\"kernel\" must name one of the kernels' ids"};
    spec_refused("nokernel", "",
                 "\"kernels\": [], \"inputs\": [], \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], "
                 "\"block\": [1, 1, 1], \"args\": []}]",
                 needles, 2);
}

/* ---- an output sized by a device fact ---- */

static const char *partial_src =
    "extern \"C\" __global__ void partial(const float *x, float *part, long long n) {\n"
    "  float s = 0.f;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (long long)blockDim.x)\n"
    "    s += x[i];\n"
    "  atomicAdd(&part[blockIdx.x], s);\n"
    "}\n";

static kc_graph_desc *partial_spec(const char *name, const char *rows, int *rc) {
    char body[1024];
    snprintf(
        body, sizeof body,
        "\"kernels\": [{\"id\": \"p\", \"file\": \"%s.cu\", \"entry\": \"partial\"}],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"%s\", 2]}],"
        " \"forward\": [{\"zero\": \"output:0\"}, {\"kernel\": \"p\", \"grid\": [\"device_sm_count\", 1, 1], \"block\": [256, 1, 1],"
        " \"args\": [\"input:0\", \"output:0\", \"e64:N\"]}]",
        name, rows);
    return spec_rc(name, partial_src, body, rc);
}

/* One partial sum per SM (an SM-count grid, as llm.c's): the output's size is evaluated on the device the graph is loaded
 * on — one entry, two devices of 132 and 114 SMs, two shapes; on a host without a GPU, a size that cannot be right on
 * any known device of the target is a compile error naming the output. */
static void test_output_sized_by_a_device_fact(void **state) {
    (void)state;
    int rc;
    kc_graph_desc *d = partial_spec("partial", "device_sm_count", &rc);
    if (rc) fail_msg("%s", kc_error_last()->message);
    static const int64_t sms[2] = {132, 114};
    for (int dev = 0; dev < 2; dev++) {
        kc_graph *g = get_on(d, dev);
        assert_int_equal(kc_cuda_push(dev), KC_OK);
        kc_tensor in = {NULL, KC_DTYPE_F32, 1, {1000}, {1}}, out;
        assert_int_equal(kc_cuda_malloc(&in.data, 4000, NULL), KC_OK);
        kcd_reset();
        memset(&out, 0, sizeof out);
        if (kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(out.rank, 2);
        assert_int_equal(out.sizes[0], sms[dev]);
        assert_int_equal(out.sizes[1], 2);
        char line[96];
        snprintf(line, sizeof line, "cuMemsetD8Async %#llx = 0 x %lld", (unsigned long long)(uintptr_t)out.data,
                 (long long)sms[dev] * 8);
        assert_int_equal(log_count(line), 1);
        kcd_launch l = launch(0);
        assert_int_equal(l.grid[0], (unsigned)sms[dev]);
        kc_tensor_release(&out, NULL, NULL);
        kcdt_no_defects();
        kc_cuda_free(in.data, NULL);
        kc_cuda_pop();
        kc_graph_release(g);
    }
    kc_graph_desc_free(d);
    /* Negative on every known device that loads sm_90: refused before NVRTC runs. */
    d = partial_spec("partialbad", "device_sm_count - 1000", &rc);
    if (rc) fail_msg("%s", kc_error_last()->message);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "output 0") || !strstr(m, "is negative") || !strstr(m, "every known device")) fail_msg("%s", m);
    kc_graph_desc_free(d);
    /* An input's size is still the caller's: never a device fact. */
    static const char *const needles[] = {"inputs[0]", "device fact"};
    spec_refused(
        "partialin", partial_src,
        "\"kernels\": [], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"device_sm_count\"]}], \"forward\": []",
        needles, 2);
}

int main(void) {
#define T(f) cmocka_unit_test(f)
    const struct CMUnitTest tests[] = {
        T(test_math_constants_in_a_spec),
        T(test_bool_argument_is_one_byte),
        T(test_abi_mismatch_names_size_and_kinds_that_fit),
        T(test_zero_a_range),
        T(test_zero_range_checked_at_load),
        T(test_zero_steps_only),
        T(test_output_sized_by_a_device_fact),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
