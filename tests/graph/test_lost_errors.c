/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lost_errors.c — every failure of the compile path keeps its status and its message through
 * every layer ([Note: cleanup keeps the error] in src/common/internal.h).  A kernel that reads the
 * toolkit's headers ("toolkit_headers": true, as three of the bundled graphs) is compiled under a
 * watch of the toolkit's tree; the watch's end ran after a failed compile and cleared the thread's
 * record, so a compile error came back as `failed (KC_OK)` with NVRTC's log gone — from
 * kc_graph_compile, kc_graph_get, kc_prewarm and the must-hit refusal alike.  Here each of those is
 * asked and must say KC_ECOMPILE (KC_ENOTCACHED under must-hit) with the log line; a compile error
 * on a pool thread (two units compiled at once) reaches the caller's thread whole; an ABI refusal
 * after the compile and a store failure under strict keep theirs.
 * Driver double for kc_graph_get (label driver-double); NVRTC compiles for real.
 */
#include <errno.h>
#include <stdlib.h>

#include "common/fs.h" /* kc_fs_fault_set: a store that fails after the compile */
#include "double/double_test.h"

static char *dir;
static kc_cache *cache;

/* The bundled AdamW kernel (toolkit headers: cuda_bf16.h) with one undefined name in its body. */
#define BROKEN "undefined_thing_42"

/* A bundled file as a string. */
static char *read_text(const char *path, size_t *n) {
    char *b = (char *)kct_read(path, n);
    if (!b) fail_msg("cannot read %s", path);
    b[*n] = '\0'; /* kct_read leaves a byte for it */
    return b;
}

static void write_specs(void) {
    char p[1024];
    snprintf(p, sizeof p, "%s/adamw.cu", KC_KERNELS_DIR);
    size_t n;
    char *src = read_text(p, &n);
    const char *line = "const float g = (float)grads[i];";
    char *at = strstr(src, line);
    assert_non_null(at);
    char *broken = malloc(n + 64);
    assert_non_null(broken);
    int k = snprintf(broken, n + 64, "%.*sconst float g = (float)grads[i] + " BROKEN ";%s", (int)(at - src), src,
                     at + strlen(line));
    assert_int_equal(kct_put(dir, "specs/broken.cu", broken), 0);
    (void)k;
    assert_int_equal(kct_put(dir, "specs/good.cu", src), 0);
    free(broken);
    free(src);
    snprintf(p, sizeof p, "%s/adamw.json", KC_KERNELS_DIR);
    char *spec = read_text(p, &n);
    /* broken.json: the kernel from broken.cu.  abi.json: the good kernel launched with one argument too many. */
    char *s = malloc(n + 256), *f = strstr(spec, "\"adamw.cu\"");
    assert_non_null(s), assert_non_null(f);
    snprintf(s, n + 256, "%.*s\"broken.cu\"%s", (int)(f - spec), spec, f + strlen("\"adamw.cu\""));
    assert_int_equal(kct_put(dir, "specs/broken.json", s), 0);
    char *a = strstr(spec, "\"arg:step\"]");
    assert_non_null(a);
    snprintf(s, n + 256, "%.*s\"good.cu\"%.*s\"arg:step\", \"arg:step\"]%s", (int)(f - spec), spec,
             (int)(a - (f + strlen("\"adamw.cu\""))), f + strlen("\"adamw.cu\""), a + strlen("\"arg:step\"]"));
    assert_int_equal(kct_put(dir, "specs/abi.json", s), 0);
    /* two.json: two units compiled at once on the pool — the good kernel and the broken one. */
    const char *two =
        "{\"name\": \"two\", \"toolkit_headers\": true, \"kernels\": ["
        "{\"id\": \"a\", \"file\": \"good.cu\", \"entry\": \"adamw_step<256, __nv_bfloat16>\", \"options\": [\"-std=c++17\"]},"
        "{\"id\": \"b\", \"file\": \"broken.cu\", \"entry\": \"adamw_step<256, __nv_bfloat16>\", \"options\": [\"-std=c++17\"]}],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}, {\"dtype\": \"bf16\", \"sizes\": [\"N\"]},"
        " {\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}, {\"dtype\": \"f32\", \"sizes\": [\"N\"], \"inplace\": true}],"
        " \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"], \"alias\": \"input:0\"}],"
        " \"forward\": ["
        "{\"kernel\": \"a\", \"grid\": [1, 1, 1], \"block\": [256, 1, 1], \"args\": [\"input:0\", \"input:1\", \"input:2\","
        " \"input:3\", \"e64:N\", \"f32:1\", \"f32:1\", \"f32:1\", \"f32:1\", \"f32:1\", \"u32:1\"]},"
        "{\"kernel\": \"b\", \"grid\": [1, 1, 1], \"block\": [256, 1, 1], \"args\": [\"input:0\", \"input:1\", \"input:2\","
        " \"input:3\", \"e64:N\", \"f32:1\", \"f32:1\", \"f32:1\", \"f32:1\", \"f32:1\", \"u32:1\"]}]}";
    assert_int_equal(kct_put(dir, "specs/two.json", two), 0);
    free(s);
    free(spec);
}

static kc_graph_desc *load(const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/specs/%s", dir, name);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s: %s", p, kc_error_last()->message);
    return d;
}

static kc_cache *open_flags(const char *tag, unsigned flags) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, tag);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = KC_OPEN_NO_ENV | flags;
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

/* The call returned `rc`; it must be `want`, and the thread's record must hold it and a message with `needle`. */
static void expect(const char *what, int rc, int want, const char *needle) {
    const kc_error *e = kc_error_last();
    if (rc != want || e->code != want || !strstr(e->message, needle))
        fail_msg("%s: returned %s, recorded %s: '%s' (want %s with '%s')", what, kc_status_str(rc),
                 kc_status_str(e->code), e->message, kc_status_str(want), needle);
}

static void test_a_toolkit_compile_error_reaches_every_caller(void **state) {
    (void)state;
    kc_graph_desc *d = load("broken.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_error_clear();
    expect("kc_graph_compile", kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE, BROKEN);
    expect("kc_graph_compile (the log)", KC_ECOMPILE, KC_ECOMPILE, "is undefined");
    kc_graph *g = NULL;
    kc_error_clear();
    expect("kc_graph_get", kc_graph_get(cache, d, 0, &g, &info), KC_ECOMPILE, BROKEN);
    assert_null(g);
    /* A second time: still compiled (a failure stores nothing), still said. */
    expect("kc_graph_get again", kc_graph_get(cache, d, 0, &g, &info), KC_ECOMPILE, BROKEN);

    /* prewarm: the variant's status and error, and the call's own. */
    char p[1024];
    snprintf(p, sizeof p, "%s/specs/m.json", dir);
    assert_int_equal(kct_put(dir, "specs/m.json", "{\"graphs\": [\"broken.json\"], \"archs\": [\"sm_90\"]}"), 0);
    kc_manifest *m;
    assert_int_equal(kc_manifest_load(&m, p), KC_OK);
    kc_prewarm_report *rep = NULL;
    kc_prewarm_options po = {KC_PREWARM_OPTIONS_VERSION, 1, 0, NULL, NULL};
    expect("kc_prewarm", kc_prewarm(cache, m, &po, &rep), KC_ECOMPILE, BROKEN);
    assert_non_null(rep);
    assert_int_equal(rep->failed, 1);
    assert_int_equal(rep->results[0].status, KC_ECOMPILE);
    if (!strstr(rep->results[0].error, BROKEN)) fail_msg("prewarm's error: '%s'", rep->results[0].error);
    kc_prewarm_report_free(rep);
    kc_manifest_free(m);

    /* Must-hit: nothing compiled, and the refusal says why (its unit is not stored), not just its status. */
    kc_cache *mh = open_flags("musthit", KC_OPEN_REQUIRE_HIT);
    expect("must-hit compile", kc_graph_compile(mh, d, "sm_90", &info), KC_ENOTCACHED, "is not stored");
    expect("must-hit compile (names must-hit)", KC_ENOTCACHED, KC_ENOTCACHED, "must-hit");
    expect("must-hit get", kc_graph_get(mh, d, 0, &g, &info), KC_ENOTCACHED, "is not stored");
    kc_cache_close(mh);
    kc_graph_desc_free(d);
    kcdt_no_defects();
}

static void test_a_compile_error_on_a_pool_thread(void **state) {
    (void)state;
    kc_graph_desc *d = load("two.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_error_clear();
    expect("two units", kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE, BROKEN);
    expect("two units (the graph)", KC_ECOMPILE, KC_ECOMPILE, "graph 'two'");
    kc_graph_desc_free(d);
}

static void test_an_abi_refusal_and_a_store_failure_keep_theirs(void **state) {
    (void)state;
    /* The launch ABI is checked after the compile (and the watch's end). */
    kc_graph_desc *d = load("abi.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_error_clear();
    expect("abi", kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE, "12 arguments given, the kernel takes 11");
    kc_graph_desc_free(d);
    /* Strict: compiled, then every write fails (a full disk): the store's failure is the lookup's. */
    kc_cache *st = open_flags("strict", KC_OPEN_STRICT);
    d = kcdt_load("adamw.json");
    kc_fs_fault_set(KC_FS_WRITE, 1, ENOSPC, true);
    int rc = kc_graph_compile(st, d, "sm_90", &info);
    kc_fs_fault_clear();
    expect("strict store", rc, KC_EIO, "not stored");
    kc_cache_close(st);
    /* Not strict, through prewarm: the variant failed, "compiled, but not stored", with the store's own reason. */
    kc_cache *lenient = open_flags("full", 0);
    char p[1024];
    snprintf(p, sizeof p, "%s/specs/full.json", dir);
    char mj[1200];
    snprintf(mj, sizeof mj, "{\"graphs\": [\"%s/adamw.json\"], \"archs\": [\"sm_90\"]}", KC_KERNELS_DIR);
    assert_int_equal(kct_put(dir, "specs/full.json", mj), 0);
    kc_manifest *m;
    assert_int_equal(kc_manifest_load(&m, p), KC_OK);
    kc_prewarm_report *rep = NULL;
    kc_prewarm_options po = {KC_PREWARM_OPTIONS_VERSION, 1, 0, NULL, NULL};
    kc_fs_fault_set(KC_FS_WRITE, 1, ENOSPC, true);
    rc = kc_prewarm(lenient, m, &po, &rep);
    kc_fs_fault_clear();
    expect("prewarm, not stored", rc, KC_EIO, "compiled, but not stored");
    assert_int_equal(rep->results[0].status, KC_EIO);
    if (!strstr(rep->results[0].error, "compiled, but not stored") || !strstr(rep->results[0].error, "No space left"))
        fail_msg("prewarm's error: '%s'", rep->results[0].error);
    kc_prewarm_report_free(rep);
    kc_manifest_free(m);
    kc_cache_close(lenient);
    kc_graph_desc_free(d);
}

static int group_setup(void **state) {
    (void)state;
    if (kcd_set_devices("9.0") != 0 || kc_cuda_available() != KC_OK) {
        fprintf(stderr, "the driver double did not load: %s\n", kc_error_last()->message);
        return -1;
    }
    if (!(dir = kct_tmpdir("lost-errors"))) return -1;
    write_specs();
    cache = open_flags("cache", 0);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    kc_cache_close(cache);
    kct_rmtree(dir);
    free(dir);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_toolkit_compile_error_reaches_every_caller),
        cmocka_unit_test(test_a_compile_error_on_a_pool_thread),
        cmocka_unit_test(test_an_abi_refusal_and_a_store_failure_keep_theirs),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
