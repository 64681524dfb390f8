/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_graph_double.c — the load path after a hit, through the CUDA driver double
 * (tests/double/, label driver-double: it validates images, launches and argument buffers,
 * tracks every object and records every call, but runs no kernel — this proves the load
 * path and the launch ABI on every commit, never numerics; the `gpu` tests do that).
 *
 * What it proves: kc_graph_get on devices 7.0 … 12.0 picks the variant [Note: variant
 * selection] says (exact, older minor, `a`, `f`, PTX) or compiles for the device; a variant
 * the driver refuses is a counted miss that ends in a fresh compile, store and load, and a
 * failure names the variant and the driver's error; every bundled graph's forward and
 * backward launches the spec's steps with every argument where the spec puts it (tensors,
 * sizes, constants, philox); the cuda_graph wrapper captures once and replays; the
 * loaded-graph table keeps at most its budget and reloads what it unloaded; nothing leaks.
 */

#include <pthread.h>

#include "common/internal.h"
#include "common/json.h"
#include "double/double_test.h"

/* The devices of the double, one per capability the variant table covers (CTest sets KCD_DEVICES). */
static const char *const caps[] = {"7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0"};
enum { DEV_70, DEV_75, DEV_80, DEV_86, DEV_89, DEV_90, DEV_100, DEV_103, DEV_120 };

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("7.0,7.5,8.0,8.6,8.9,9.0,10.0,10.3,12.0", "graph_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* ---- the variant table through kc_graph_get ---- */

static void test_variant_table_through_graph_get(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("softmax.json");
    const char *stored[] = {"sm_80", "sm_86", "sm_90a", "sm_100f", "compute_90"};
    for (size_t i = 0; i < KC_ARRAY_LEN(stored); i++) {
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_compile(cache, d, stored[i], &info)) fail_msg("%s: %s", stored[i], kc_error_last()->message);
    }
    static const struct {
        int dev;
        const char *variant; /* what kc_graph_get must load; NULL: no toolkit here can make one */
        kc_graph_source source;
    } want[] = {
        {DEV_70, NULL, KC_FROM_COMPILE},       /* nothing fits 7.0, and CUDA 13 compiles no sm_70 */
        {DEV_75, "sm_75", KC_FROM_COMPILE},    /* nothing stored fits: compiled for the device */
        {DEV_80, "sm_80", KC_FROM_DISK},       /* exact */
        {DEV_86, "sm_86", KC_FROM_DISK},       /* exact, before the older minor sm_80 */
        {DEV_89, "sm_86", KC_FROM_DISK},       /* the highest older minor */
        {DEV_90, "sm_90a", KC_FROM_DISK},      /* 'a' first on its own device */
        {DEV_100, "sm_100f", KC_FROM_DISK},    /* 'f' on its base */
        {DEV_103, "sm_100f", KC_FROM_DISK},    /* 'f' across the family */
        {DEV_120, "compute_90", KC_FROM_DISK}, /* no cubin of major 12: the PTX */
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(want); i++) {
        kcd_reset();
        kc_graph *g = NULL;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = kc_graph_get(cache, d, want[i].dev, &g, &info);
        if (!want[i].variant) {
            if (rc == KC_OK) { /* a toolkit that still compiles sm_70 */
                assert_string_equal(info.variant, "sm_70");
                kc_graph_release(g);
                continue;
            }
            assert_null(g);
            if (!strstr(kc_error_last()->message, "sm_70"))
                fail_msg("the failure does not name sm_70: %s", kc_error_last()->message);
            continue;
        }
        if (rc) fail_msg("device %s: %s", caps[want[i].dev], kc_error_last()->message);
        if (strcmp(info.variant, want[i].variant) || info.source != want[i].source)
            fail_msg("device %s: loaded %s (source %d), expected %s (source %d)", caps[want[i].dev], info.variant,
                     (int)info.source, want[i].variant, (int)want[i].source);
        /* The double loaded that very image on that device. */
        char *log = kcd_call_log();
        char needle[64];
        snprintf(needle, sizeof needle, " %s", want[i].variant);
        if (!strstr(log, needle))
            fail_msg("device %s: the call log shows no load of %s:\n%s", caps[want[i].dev], needle, log);
        free(log);
        /* A second lookup is a memory hit of the same graph. */
        kc_graph *g2;
        assert_int_equal(kc_graph_get(cache, d, want[i].dev, &g2, &info), KC_OK);
        assert_ptr_equal(g, g2);
        assert_int_equal(info.source, KC_FROM_MEMORY);
        kc_graph_release(g2);
        kc_graph_release(g);
        kcdt_no_defects();
    }
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

/* ---- refusal is a miss ---- */

static void test_refused_variant_ends_in_a_compiled_stored_loaded_graph(void **state) {
    (void)state;
    kc_graph_desc *d = kcdt_load("layer_norm.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "compute_80", &info), KC_OK);
    kc_key key;
    kc_key_from_hex(&key, info.key);
    assert_int_equal(kc_cache_exists(cache, &key, "sm_90"), 0);
    /* The driver is too old for this PTX: next candidate (none), then compile sm_90. */
    kcd_reset();
    kcd_refuse("compute_80", CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    uint64_t refused0 = kcdt_stat(cache, KC_STAT_LOAD_REFUSED), compiles0 = kcdt_stat(cache, KC_STAT_COMPILES);
    kc_graph *g = NULL;
    if (kc_graph_get(cache, d, DEV_90, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_non_null(g);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_string_equal(info.variant, "sm_90");
    if (!strstr(info.miss_reason, "compute_80") || !strstr(info.miss_reason, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"))
        fail_msg("miss reason: %s", info.miss_reason);
    assert_int_equal(kcdt_stat(cache, KC_STAT_LOAD_REFUSED), refused0 + 1);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILES), compiles0 + 1);
    assert_int_equal(kc_cache_exists(cache, &key, "sm_90"), 1); /* stored */
    kcd_load_stats ls;
    kcd_loads(&ls);
    assert_int_equal(ls.refused, 1);
    assert_true(ls.library_loads + ls.module_loads >= 1);
    kc_graph_release(g);
    kcdt_unload_all();

    /* The device's own stored cubin refused (a transient refusal), and the PTX after it: compiled afresh,
     * stored over the old one, loaded — never "taken as stored meanwhile" and refused again. */
    kcd_reset();
    kcd_refuse_next(2, CUDA_ERROR_INVALID_IMAGE); /* sm_90, then the next candidate compute_80 */
    if (kc_graph_get(cache, d, DEV_90, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_string_equal(info.variant, "sm_90");
    assert_non_null(strstr(info.miss_reason, "CUDA_ERROR_INVALID_IMAGE"));
    kc_graph_release(g);
    kcdt_unload_all();

    /* Everything refused: an error to the caller naming the variant, the driver's error name and code. */
    kcd_reset();
    kcd_refuse("*", CUDA_ERROR_NO_BINARY_FOR_GPU);
    g = (kc_graph *)0x1;
    int rc = kc_graph_get(cache, d, DEV_90, &g, &info);
    assert_int_equal(rc, KC_EREFUSED);
    assert_null(g);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "sm_90") || !strstr(m, "CUDA_ERROR_NO_BINARY_FOR_GPU") || !strstr(m, "209"))
        fail_msg("the failure does not name the variant and the driver's error: %s", m);
    kcd_reset();
    kc_graph_desc_free(d);
    kcdt_no_leaks("after refusals");
}

/* ---- every bundled graph's launches, argument by argument ---- */

typedef struct run {
    kc_json_doc doc; /* the spec, read by the library's own reader */
    const kc_json *spec;
    const char *names[16];
    int64_t vals[16];
    size_t nsyms;
    kc_tensor in[8], out[8], gout[8], gin[8];
    size_t nin, nout;
    uint64_t saved[16], scratch[16];
    kc_rng_state rng0;
    int rng;
    const char *argnames[8]; /* the spec's runtime arguments and the values this run passes */
    kc_value args[8];
    size_t nargs;
} run;

static const char *str_of(const kc_json *v, char *buf, size_t cap) {
    if (kc_json_is(v, KC_JSON_NUMBER)) snprintf(buf, cap, "%lld", (long long)v->num);
    else snprintf(buf, cap, "%s", kc_json_is(v, KC_JSON_STRING) ? v->str : "0");
    return buf;
}

static int64_t eval(const run *r, const char *e) {
    int64_t v;
    if (kc_expr_eval(e, r->names, r->vals, r->nsyms, &v)) fail_msg("'%s': %s", e, kc_error_last()->message);
    return v;
}

/* Bind every symbol of the spec's inputs to a small value, and allocate the inputs. */
static void make_inputs(run *r) {
    const kc_json *ins = kc_json_get(r->spec, "inputs"), *t;
    KC_JSON_EACH(t, ins) {
        kc_tensor *x = &r->in[r->nin++];
        const kc_json *dt = kc_json_get(t, "dtype"), *s;
        x->dtype = !strcmp(dt->str, "bf16") ? KC_DTYPE_BF16 : !strcmp(dt->str, "i32") ? KC_DTYPE_I32 : KC_DTYPE_F32;
        size_t bytes = x->dtype == KC_DTYPE_BF16 ? 2 : 4;
        KC_JSON_EACH(s, kc_json_get(t, "sizes")) {
            int64_t v;
            if (kc_json_is(s, KC_JSON_NUMBER)) {
                v = (int64_t)s->num;
            } else {
                size_t k;
                for (k = 0; k < r->nsyms && strcmp(r->names[k], s->str); k++) {}
                if (k == r->nsyms) r->names[r->nsyms] = s->str, r->vals[r->nsyms++] = 8 + 8 * (int64_t)k;
                v = r->vals[k];
            }
            x->sizes[x->rank++] = v;
            bytes *= (size_t)v;
        }
        for (int d = x->rank - 1, st = 1; d >= 0; st *= (int)x->sizes[d], d--) x->strides[d] = st;
        assert_int_equal(kc_cuda_malloc(&x->data, bytes, NULL), KC_OK);
    }
    /* The device facts expressions may use, as the double reports them for DEV_90. */
    static const struct {
        const char *name;
        CUdevice_attribute a;
    } facts[] = {{"device_sm_count", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
                 {"device_max_threads_per_sm", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
                 {"device_max_threads_per_block", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
                 {"device_warp_size", CU_DEVICE_ATTRIBUTE_WARP_SIZE},
                 {"device_smem_optin", CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}};
    for (size_t f = 0; f < KC_ARRAY_LEN(facts); f++) {
        int v;
        assert_int_equal(cuDeviceGetAttribute(&v, facts[f].a, DEV_90), CUDA_SUCCESS);
        r->names[r->nsyms] = facts[f].name, r->vals[r->nsyms++] = v;
    }
    /* A distinct value for each runtime argument, of its type. */
    const kc_json *a;
    KC_JSON_EACH(a, kc_json_get(r->spec, "args")) {
        const char *ty = kc_json_get(a, "type")->str;
        kc_value *v = &r->args[r->nargs];
        r->argnames[r->nargs++] = kc_json_get(a, "name")->str;
        uint64_t k = r->nargs;
        if (!strcmp(ty, "f32")) *v = (kc_value){KC_ARG_F32, {.f32 = 0.25f * (float)k}};
        else if (!strcmp(ty, "f64")) *v = (kc_value){KC_ARG_F64, {.f64 = 0.125 * (double)k}};
        else if (!strcmp(ty, "i32")) *v = (kc_value){KC_ARG_I32, {.i32 = -(int32_t)k}};
        else if (!strcmp(ty, "u32")) *v = (kc_value){KC_ARG_U32, {.u32 = 0x80000000u + (uint32_t)k}};
        else if (!strcmp(ty, "i64")) *v = (kc_value){KC_ARG_I64, {.i64 = -(int64_t)k << 40}};
        else *v = (kc_value){KC_ARG_U64, {.u64 = k << 40}};
    }
}

/* The bytes of runtime argument `name` as this run passed it, read as an unsigned integer. */
static uint64_t arg_bits(const run *r, const char *name) {
    for (size_t k = 0; k < r->nargs; k++)
        if (!strcmp(r->argnames[k], name)) {
            const kc_value *v = &r->args[k];
            uint32_t b32;
            switch (v->type) {
            case KC_ARG_F32: memcpy(&b32, &v->v.f32, 4); return b32;
            case KC_ARG_I32:
            case KC_ARG_U32: return v->v.u32;
            default: {
                uint64_t b64;
                memcpy(&b64, &v->v.u64, 8);
                return b64;
            }
            }
        }
    fail_msg("no runtime argument '%s'", name);
    return 0;
}

/* Launch i of the records against step `st` of the spec: kernel, dims, every argument. */
static void check_launch(run *r, size_t li, const kc_json *st, int backward) {
    kcd_launch l;
    assert_int_equal(kcd_launch_get(li, &l), 0);
    char b[256];
    for (int j = 0; j < 3; j++) {
        assert_int_equal(l.grid[j],
                         (unsigned)eval(r, str_of(kc_json_at(kc_json_get(st, "grid"), (size_t)j), b, sizeof b)));
        assert_int_equal(l.block[j],
                         (unsigned)eval(r, str_of(kc_json_at(kc_json_get(st, "block"), (size_t)j), b, sizeof b)));
    }
    const kc_json *args = kc_json_get(st, "args"), *a;
    assert_int_equal(l.nparams, kc_json_count(args));
    size_t i = 0;
    KC_JSON_EACH(a, args) {
        const char *x = a->str;
        uint64_t got = kcd_launch_arg_u64(&l, i), want = 0;
        unsigned idx = (unsigned)strtoul(strchr(x, ':') ? strchr(x, ':') + 1 : "0", NULL, 10);
        if (!strncmp(x, "input:", 6)) want = (uintptr_t)r->in[idx].data;
        else if (!strncmp(x, "output:", 7)) want = (uintptr_t)r->out[idx].data;
        else if (!strncmp(x, "grad_out:", 9)) want = (uintptr_t)r->gout[idx].data;
        else if (!strncmp(x, "grad_in:", 8)) want = (uintptr_t)r->gin[idx].data;
        else if (!strncmp(x, "saved:", 6) || !strncmp(x, "scratch:", 8)) {
            uint64_t *slot = x[1] == 'a' ? &r->saved[idx] : &r->scratch[idx];
            if (x[1] == 'a' && *slot) want = *slot; /* the same saved tensor in every step, forward and backward */
            else want = *slot = got;
            assert_true(got != 0);
        } else if (!strncmp(x, "e32:", 4) || !strncmp(x, "e64:", 4)) {
            want = (uint64_t)eval(r, x + 4);
            if (x[1] == '3') want &= 0xffffffffu;
        } else if (!strncmp(x, "i32:", 4)) {
            want = (uint32_t)atoi(x + 4);
        } else if (!strncmp(x, "f32:", 4)) {
            float f = strtof(x + 4, NULL);
            uint32_t bits;
            memcpy(&bits, &f, 4);
            want = bits;
        } else if (!strncmp(x, "u32:", 4)) {
            want = (uint32_t)strtoul(x + 4, NULL, 10);
        } else if (!strcmp(x, "null")) {
            want = 0;
        } else if (!strncmp(x, "arg:", 4)) {
            want = arg_bits(r, x + 4);
        } else if (!strcmp(x, "philox_seed")) {
            want = r->rng0.seed;
        } else if (!strcmp(x, "philox_offset")) {
            want = r->rng0.offset;
        } else {
            fail_msg("argument kind '%s' not covered by this test", x);
        }
        if (got != want)
            fail_msg("%s launch %zu (%s): argument %zu '%s' is 0x%llx, expected 0x%llx",
                     backward ? "backward" : "forward", li, l.kernel, i, x, (unsigned long long)got,
                     (unsigned long long)want);
        i++;
    }
}

/* A pass's steps: a list, or {"scratch": …, "steps": […]}. */
static const kc_json *steps_of(const kc_json *pass) {
    return kc_json_is(pass, KC_JSON_OBJECT) ? kc_json_get(pass, "steps") : pass;
}

/* How many of a pass's steps launch a kernel (a {"zero": …} step is a memset, not a launch). */
static size_t kernel_steps(const kc_json *steps) {
    size_t n = 0;
    const kc_json *st;
    KC_JSON_EACH(st, steps) n += kc_json_get(st, "kernel") != NULL;
    return n;
}

static void run_bundled(const char *spec_name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, spec_name);
    size_t jl;
    char *js = (char *)kct_read(p, &jl);
    assert_non_null(js);
    run *r = calloc(1, sizeof *r);
    assert_int_equal(kc_json_parse(&r->doc, js, jl, NULL), KC_OK);
    r->spec = r->doc.root;
    kc_graph_desc *d = kcdt_load(spec_name);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, DEV_90, &g, &info)) fail_msg("%s: %s", spec_name, kc_error_last()->message);
    assert_int_equal(kc_cuda_push(DEV_90), KC_OK);
    make_inputs(r);
    r->nout = kc_json_count(kc_json_get(r->spec, "outputs"));
    kcd_reset();
    kc_saved *sv = NULL;
    kc_rng_state rng = {1234, 5678};
    r->rng0 = rng;
    if (kc_graph_forward_args(g, r->in, r->nin, r->out, r->nout, &sv, NULL, NULL, &rng, r->nargs ? r->args : NULL,
                              r->nargs))
        fail_msg("%s forward: %s", spec_name, kc_error_last()->message);
    const kc_json *fw = steps_of(kc_json_get(r->spec, "forward")), *bw = steps_of(kc_json_get(r->spec, "backward")),
                  *st;
    assert_int_equal(kcd_launch_count(), kernel_steps(fw));
    size_t li = 0;
    KC_JSON_EACH(st, fw) if (kc_json_get(st, "kernel")) check_launch(r, li++, st, 0);
    if (bw) {
        for (size_t i = 0; i < r->nout; i++) {
            r->gout[i] = r->out[i];
            size_t bytes = 4;
            for (int k = 0; k < r->out[i].rank; k++) bytes *= (size_t)r->out[i].sizes[k];
            assert_int_equal(kc_cuda_malloc(&r->gout[i].data, bytes, NULL), KC_OK);
        }
        /* An accumulating gradient is the caller's buffer, of its input's shape. */
        const kc_json *t;
        size_t ii = 0;
        unsigned accumulate = 0;
        KC_JSON_EACH(t, kc_json_get(r->spec, "inputs")) {
            if (kc_json_get(t, "grad")) {
                accumulate |= 1u << ii;
                r->gin[ii] = r->in[ii];
                assert_int_equal(kc_cuda_malloc(&r->gin[ii].data,
                                                4 * (size_t)r->in[ii].strides[0] * (size_t)r->in[ii].sizes[0], NULL),
                                 KC_OK);
            }
            ii++;
        }
        kcd_reset();
        if (kc_graph_backward(g, sv, r->gout, r->nout, r->gin, r->nin, NULL))
            fail_msg("%s backward: %s", spec_name, kc_error_last()->message);
        assert_int_equal(kcd_launch_count(), kernel_steps(bw));
        li = 0;
        KC_JSON_EACH(st, bw) if (kc_json_get(st, "kernel")) check_launch(r, li++, st, 1);
        for (size_t i = 0; i < r->nout; i++) kc_cuda_free(r->gout[i].data, NULL);
        for (size_t i = 0; i < r->nin; i++)
            if (accumulate >> i & 1) kc_cuda_free(r->gin[i].data, NULL);
            else kc_tensor_release(&r->gin[i], NULL, NULL);
    }
    kc_saved_free(sv, NULL);
    for (size_t i = 0; i < r->nout; i++)
        if (kc_graph_output_alias(g, i) < 0)
            kc_tensor_release(&r->out[i], NULL, NULL); /* an alias is the caller's input */
    for (size_t i = 0; i < r->nin; i++) kc_cuda_free(r->in[i].data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
    kc_json_free(&r->doc);
    free(r);
    free(js);
}

static void test_every_bundled_graph_launches_as_its_spec_says(void **state) {
    (void)state;
    const char *specs[] = {"mlp_block.json",    "layer_norm.json",  "softmax.json",      "softmax_xent.json",
                           "add_mul_gelu.json", "dropout.json",     "rmsnorm_bf16.json", "attn_softmax.json",
                           "adamw.json",        "global_norm.json", "linear.json"};
    for (size_t s = 0; s < KC_ARRAY_LEN(specs); s++) run_bundled(specs[s]);
    kcdt_unload_all();
    kcdt_no_leaks("after the bundled graphs");
}

/* ---- the cuda_graph wrapper: capture once per shape, replay after ---- */

static void test_cuda_graph_capture_and_replay(void **state) {
    (void)state;
    const char *src = "extern \"C\" __global__ void twice(const float *x, float *y, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i];\n}\n";
    char p[600], json[1024];
    snprintf(p, sizeof p, "%s/twice.cu", dir);
    assert_int_equal(kct_write(p, src, strlen(src)), 0);
    snprintf(
        json, sizeof json,
        "{\"name\": \"twice_graph\", \"kernels\": [{\"id\": \"k\", \"file\": \"twice.cu\", \"entry\": \"twice\"}],\n"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
        " \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"input:0\", \"output:0\", \"e32:N\"]},\n"
        "             {\"kernel\": \"k\", \"grid\": [\"ceildiv(N, 128)\", 1, 1], \"block\": [128, 1, 1],"
        " \"args\": [\"output:0\", \"output:0\", \"e32:N\"]}],\n"
        " \"wrappers\": [{\"name\": \"cuda_graph\", \"version\": 1, \"params\": \"4\"}]}\n");
    snprintf(p, sizeof p, "%s/twice.json", dir);
    assert_int_equal(kct_write(p, json, strlen(json)), 0);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p)) fail_msg("%s", kc_error_last()->message);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, DEV_90, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kc_cuda_push(DEV_90), KC_OK);
    void *stream;
    assert_int_equal(cuStreamCreate((CUstream *)&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {1000}, {1}}, out;
    assert_int_equal(kc_cuda_malloc(&in.data, 4000, stream), KC_OK);
    kcd_reset();
    for (int call = 0; call < 3; call++) {
        memset(&out, 0, sizeof out);
        if (kc_graph_forward(g, &in, 1, &out, 1, NULL, stream, NULL))
            fail_msg("call %d: %s", call, kc_error_last()->message);
        kc_tensor_release(&out, stream, NULL);
    }
    char *log = kcd_call_log();
    /* One capture (begin, two launches captured, end, instantiate), then a graph launch per call. */
    const char *begin = strstr(log, "cuStreamBeginCapture"), *end = strstr(log, "cuStreamEndCapture");
    const char *inst = strstr(log, "cuGraphInstantiate");
    if (!begin || !end || !inst || !(begin < end && end < inst)) fail_msg("no capture in order:\n%s", log);
    if (strstr(end + 1, "cuStreamBeginCapture")) fail_msg("captured twice for one shape:\n%s", log);
    size_t glaunch = 0;
    for (const char *q = log; (q = strstr(q, "cuGraphLaunch")); q++) glaunch++;
    assert_int_equal(glaunch, 3);
    free(log);
    size_t captured = 0, replayed = 0, direct = 0;
    for (size_t i = 0; i < kcd_launch_count(); i++) {
        kcd_launch l;
        kcd_launch_get(i, &l);
        assert_string_equal(l.kernel, "twice");
        assert_int_equal(kcd_launch_arg_u64(&l, 2), 1000);
        captured += l.captured, replayed += l.replayed, direct += !l.captured && !l.replayed;
    }
    assert_int_equal(captured, 2);
    assert_int_equal(replayed, 6);
    assert_int_equal(direct, 0);
    kc_cuda_free(in.data, stream);
    cuStreamSynchronize((CUstream)stream);
    cuStreamDestroy((CUstream)stream);
    kc_cuda_pop();
    kcdt_no_defects();
    kc_graph_release(g);
    kc_graph_desc_free(d);
}

/* ---- the loaded-graph budget ---- */

static void test_loaded_graphs_stay_within_the_budget(void **state) {
    (void)state;
    kcdt_unload_all();
    const char *specs[] = {"mlp_block.json", "layer_norm.json", "softmax.json", "softmax_xent.json",
                           "add_mul_gelu.json"};
    kc_graph_loaded_budget(2, (size_t)1 << 30);
    kc_loaded_stats ls = KC_LOADED_STATS_INIT;
    kc_graph_loaded_stats(&ls);
    unsigned long long unloads0 = ls.unloads;
    kcd_reset();
    for (int round = 0; round < 2; round++)
        for (size_t s = 0; s < KC_ARRAY_LEN(specs); s++) {
            kc_graph_desc *d = kcdt_load(specs[s]);
            kc_graph *g;
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            if (kc_graph_get(cache, d, DEV_80, &g, &info)) fail_msg("%s: %s", specs[s], kc_error_last()->message);
            /* Each is loaded again from the cache, never from memory: two rounds of five over a budget of two. */
            assert_int_equal(info.source,
                             round == 0 && info.source == KC_FROM_COMPILE ? KC_FROM_COMPILE : KC_FROM_DISK);
            void *fn;
            assert_int_equal(kc_graph_function(g, 0, &fn), KC_OK);
            assert_non_null(fn);
            kc_graph_release(g);
            kc_graph_loaded_stats(&ls);
            assert_true(ls.graphs <= 2);
            assert_int_equal(ls.in_use, 0);
            kc_graph_desc_free(d);
        }
    assert_int_equal(kc_graph_loaded_stats(&ls), KC_OK);
    assert_int_equal(ls.graphs, 2);
    assert_int_equal(ls.unreferenced, 2);       /* kept for the next lookup, held by no one */
    assert_int_equal(ls.unloads - unloads0, 8); /* ten loads, two kept */
    kcd_load_stats dl;
    kcd_loads(&dl);
    /* The driver saw it: ten graphs' images loaded, eight graphs' images unloaded (one or more each). */
    assert_true(dl.library_loads + dl.module_loads >= 10);
    assert_true(dl.library_unloads + dl.module_unloads >= 8);
    assert_true(dl.library_loads + dl.module_loads - dl.library_unloads - dl.module_unloads <=
                4); /* two graphs' images */
    /* A graph in use is never unloaded, even at a budget of zero. */
    kc_graph_desc *d = kcdt_load("softmax.json");
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_get(cache, d, DEV_80, &g, &info), KC_OK);
    size_t max_graphs = 0, max_bytes = 0;
    kc_graph_loaded_budget_get(&max_graphs, &max_bytes); /* read back, to be restored */
    assert_int_equal(max_graphs, 2);
    assert_int_equal(max_bytes, (size_t)1 << 30);
    kc_graph_loaded_budget(0, 0);
    kc_graph_loaded_stats(&ls);
    assert_int_equal(ls.graphs, 1);
    assert_int_equal(ls.in_use, 1);
    assert_int_equal(ls.unreferenced, 0);
    void *fn;
    assert_int_equal(kc_graph_function(g, 0, &fn), KC_OK);
    kc_graph_release(g); /* the last user: unloaded now */
    kc_graph_loaded_stats(&ls);
    assert_int_equal(ls.graphs, 0);
    kc_graph_loaded_budget(max_graphs, max_bytes); /* restored: kept again after release */
    assert_int_equal(kc_graph_get(cache, d, DEV_80, &g, &info), KC_OK);
    kc_graph_release(g);
    kc_graph_loaded_stats(&ls);
    assert_int_equal(ls.graphs, 1);
    assert_int_equal(ls.unreferenced, 1);
    assert_int_equal(ls.max_graphs, 2);
    kc_graph_desc_free(d);
    kcdt_unload_all();
    kcdt_no_defects();
}

/*
 * Many threads look up, run and release three graphs under a budget of one: eviction races
 * with lookups and launches.  A graph unloaded while a thread still launches it is a defect
 * the double reports (a launch of an unloaded module's function); TSan runs this too.
 */
typedef struct racer {
    kc_graph_desc *d[3];
    int failures;
    char why[256];
} racer;

static void *race(void *arg) {
    racer *r = arg;
    if (kc_cuda_push(DEV_80) != KC_OK) return NULL;
    kc_tensor in = {NULL, KC_DTYPE_F32, 2, {4, 64}, {64, 1}};
    if (kc_cuda_malloc(&in.data, 4 * 64 * 4, NULL) != KC_OK) return NULL;
    for (int i = 0; i < 60; i++) {
        kc_graph *g;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        if (kc_graph_get(cache, r->d[i % 3], DEV_80, &g, &info) != KC_OK) {
            __atomic_add_fetch(&r->failures, 1, __ATOMIC_RELAXED);
            continue;
        }
        kc_tensor out = {0};
        if (i % 3 == 0 && kc_graph_forward(g, &in, 1, &out, 1, NULL, NULL, NULL) != KC_OK)
            __atomic_add_fetch(&r->failures, 1, __ATOMIC_RELAXED);
        kc_tensor_release(&out, NULL, NULL);
        kc_graph_release(g);
    }
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    return NULL;
}

static void test_threads_race_the_budget(void **state) {
    (void)state;
    kcdt_unload_all();
    racer r = {{kcdt_load("softmax.json"), kcdt_load("layer_norm.json"), kcdt_load("add_mul_gelu.json")}, 0, ""};
    for (int i = 0; i < 3; i++) { /* stored first, so the race is about loading and unloading */
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        assert_int_equal(kc_graph_compile(cache, r.d[i], "sm_80", &info), KC_OK);
    }
    kc_graph_loaded_budget(1, (size_t)1 << 30);
    kcd_reset();
    pthread_t t[4];
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, race, &r), 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    assert_int_equal(r.failures, 0);
    kcdt_no_defects();
    kc_loaded_stats ls = KC_LOADED_STATS_INIT;
    kc_graph_loaded_stats(&ls);
    assert_true(ls.graphs <= 1);
    assert_int_equal(ls.in_use, 0);
    for (int i = 0; i < 3; i++) kc_graph_desc_free(r.d[i]);
    kcdt_unload_all();
}

/* Last: after everything above, nothing the library made is still alive in the driver. */
static void test_nothing_leaks(void **state) {
    (void)state;
    kcdt_unload_all();
    kcdt_no_leaks("at the end");
    for (size_t i = 0; i < KC_ARRAY_LEN(caps); i++) assert_true(kcd_ctx_retains((int)i) <= 1); /* retained once, held */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_variant_table_through_graph_get),
        cmocka_unit_test(test_refused_variant_ends_in_a_compiled_stored_loaded_graph),
        cmocka_unit_test(test_every_bundled_graph_launches_as_its_spec_says),
        cmocka_unit_test(test_cuda_graph_capture_and_replay),
        cmocka_unit_test(test_loaded_graphs_stay_within_the_budget),
        cmocka_unit_test(test_threads_race_the_budget),
        cmocka_unit_test(test_nothing_leaks),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
