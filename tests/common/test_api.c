/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c — [Note: versioned structs] (src/common/api.h, api.c): a caller's struct of a version
 * this build does not know — 0 (never initialised) or newer — is refused with KC_EVERSION, naming
 * the struct and its _INIT, before anything is done; a struct kcache fills gets only the bytes of
 * the caller's version, its version kept; and every public door that takes a versioned struct
 * checks it: kc_kernel_src (add_kernel, compile, normalize, cacheable), kc_graph_info (get,
 * compile), kc_bundle_report (export, import: nothing written), kc_gc_report, kc_verify_report,
 * kc_signature_report, kc_explain, kc_graph_tensor_desc, kc_loaded_stats.  The _INIT macros
 * are complete: this file is built with -Wextra -Werror (and tests/api/test_consumer.sh builds
 * them as C++11 against the installed headers).
 */
#include "helpers.h"

#include <sys/stat.h>

#include "common/api.h"
#include "common/internal.h"
#include "kcache.h"

static void test_version_check(void **state) {
    (void)state;
    assert_int_equal(kc_api_version("f", "kc_thing", "KC_THING_INIT", 1, 1), KC_OK);
    assert_int_equal(kc_api_version("f", "kc_thing", "KC_THING_INIT", 2, 3), KC_OK);
    assert_int_equal(kc_api_version("f", "kc_thing", "KC_THING_INIT", 0, 1), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "kc_thing.version is 0"));
    assert_non_null(strstr(kc_error_last()->message, "KC_THING_INIT"));
    assert_int_equal(kc_api_version("f", "kc_thing", "KC_THING_INIT", 2, 1), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "newer"));
}

/* A caller of an older version (a smaller struct) gets its bytes and not one more. */
static void test_copy_out_fills_only_what_fits(void **state) {
    (void)state;
    typedef struct {
        unsigned version;
        int a;
        int b;
    } v2;
    typedef struct {
        unsigned version;
        int a;
    } v1;
    v2 full = {2, 7, 9};
    full.version = 0; /* kcache's own filling may zero it: the caller's is put back */
    unsigned char mem[sizeof(v2)];
    memset(mem, 0xAB, sizeof mem);
    v1 *old = (v1 *)(void *)mem;
    old->version = 1;
    kc_api_copy_out(old, &full, sizeof(v1), 1);
    assert_int_equal(old->version, 1);
    assert_int_equal(old->a, 7);
    for (size_t i = sizeof(v1); i < sizeof mem; i++) assert_int_equal(mem[i], 0xAB);
}

static void test_kernel_src_version(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "g"), KC_OK);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    assert_int_equal(k.version, KC_KERNEL_SRC_VERSION);
    k.file = "k.cu";
    k.source = "extern \"C\" __global__ void k(float *x) { x[0] = 1; }\n";
    k.name = "k";
    kc_kernel_src never = k, newer = k;
    never.version = 0;
    newer.version = KC_KERNEL_SRC_VERSION + 1;
    const kc_kernel_src *bad[] = {&never, &newer};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kc_graph_add_kernel(d, bad[i], NULL), KC_EVERSION);
        assert_non_null(strstr(kc_error_last()->message, "kc_kernel_src"));
        char *norm = NULL;
        assert_int_equal(kc_options_normalize(bad[i], &norm), KC_EVERSION);
        assert_null(norm);
        kc_compiled *out = NULL;
        assert_int_equal(kc_compile_kernel(bad[i], "sm_90", &out), KC_EVERSION);
        assert_null(out);
        const char *why = NULL;
        assert_int_equal(kc_kernel_cacheable(bad[i], &why), 0); /* when in doubt, not cacheable */
        assert_non_null(strstr(why, "KC_KERNEL_SRC_INIT"));
    }
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *why = NULL;
    assert_int_equal(kc_kernel_cacheable(&k, &why), 1);
    kc_graph_desc_free(d);
}

/* The doors check before anything: no cache, no description is even looked at. */
static void test_graph_info_version(void **state) {
    (void)state;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(info.version, KC_GRAPH_INFO_VERSION);
    info.version = 0;
    assert_int_equal(kc_graph_compile(NULL, NULL, "sm_90", &info), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_GRAPH_INFO_INIT"));
    kc_graph *g = (kc_graph *)&info; /* set to NULL on failure */
    assert_int_equal(kc_graph_get(NULL, NULL, 0, &g, &info), KC_EVERSION);
    assert_null(g);
    info.version = KC_GRAPH_INFO_VERSION + 1;
    assert_int_equal(kc_graph_compile(NULL, NULL, "sm_90", &info), KC_EVERSION);
    /* A known version passes the door: the NULL arguments are what is refused then. */
    info.version = KC_GRAPH_INFO_VERSION;
    assert_int_equal(kc_graph_compile(NULL, NULL, "sm_90", &info), KC_EINVAL);
    assert_int_equal(info.version, KC_GRAPH_INFO_VERSION);
    assert_int_equal(kc_graph_compile(NULL, NULL, "sm_90", NULL), KC_EINVAL);
}

static void test_bundle_report_version(void **state) {
    (void)state;
    char *dir = kct_tmpdir("api-bundle");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    char path[1024];
    snprintf(path, sizeof path, "%s/out.kcb", dir);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    r.version = 0;
    kc_bundle_filter all = KC_BUNDLE_FILTER_INIT;
    assert_int_equal(kc_bundle_export(c, path, &all, &r), KC_EVERSION);
    struct stat st;
    assert_int_not_equal(stat(path, &st), 0);                        /* nothing written */
    assert_int_equal(kc_bundle_import(c, path, 1, &r), KC_EVERSION); /* before the file is opened */
    r.version = KC_BUNDLE_REPORT_VERSION;
    assert_int_equal(kc_bundle_export(c, path, &all, &r), KC_OK);
    assert_int_equal(r.version, KC_BUNDLE_REPORT_VERSION);
    assert_int_equal(r.entries, 0);
    kc_bundle_report in = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(c, path, 1, &in), KC_OK);
    assert_int_equal(in.version, KC_BUNDLE_REPORT_VERSION);
    assert_int_equal(kc_bundle_export(c, path, NULL, NULL), KC_OK); /* NULL: no report */
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

/* The reports of gc, verify and explain, and a description's tensor: 0 refused, the version kept. */
static void test_reports_versions(void **state) {
    (void)state;
    char *dir = kct_tmpdir("api-reports");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_gc_report g = KC_GC_REPORT_INIT;
    g.version = 0;
    assert_int_equal(kc_cache_gc(c, 0, &g), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_GC_REPORT_INIT"));
    g.version = KC_GC_REPORT_VERSION;
    g.evicted = 99;
    assert_int_equal(kc_cache_gc(c, 0, &g), KC_OK);
    assert_int_equal(g.version, KC_GC_REPORT_VERSION);
    assert_int_equal(g.evicted, 0);
    assert_int_equal(kc_cache_gc(c, 0, NULL), KC_OK);
    kc_verify_report v = KC_VERIFY_REPORT_INIT;
    v.version = 0;
    assert_int_equal(kc_cache_verify(c, &v), KC_EVERSION);
    v.version = KC_VERIFY_REPORT_VERSION;
    assert_int_equal(kc_cache_verify(c, &v), KC_OK);
    assert_int_equal(v.version, KC_VERIFY_REPORT_VERSION);
    kc_signature_report s = KC_SIGNATURE_REPORT_INIT;
    s.version = 0;
    assert_int_equal(kc_cache_verify_signatures(c, &s), KC_EVERSION);
    s.version = KC_SIGNATURE_REPORT_VERSION;
    assert_int_equal(kc_cache_verify_signatures(c, &s), KC_EINVAL); /* no keyring: the door passed */
    assert_int_equal(s.version, KC_SIGNATURE_REPORT_VERSION);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "g"), KC_OK);
    const char *sizes[1] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F16, 1, sizes, NULL, 0), KC_OK);
    kc_graph_tensor_desc t = KC_GRAPH_TENSOR_DESC_INIT;
    t.version = 0;
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 0, &t), KC_EVERSION);
    t.version = KC_GRAPH_TENSOR_DESC_VERSION;
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 0, &t), KC_OK);
    assert_int_equal(t.version, KC_GRAPH_TENSOR_DESC_VERSION);
    assert_int_equal(t.dtype, KC_DTYPE_F16);
    kc_explain *x = calloc(1, sizeof *x); /* version 0 */
    assert_non_null(x);
    assert_int_equal(kc_graph_explain(c, d, "sm_90", x), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_EXPLAIN_INIT"));
    free(x);
    kc_graph_desc_free(d);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

static void test_loaded_stats_version(void **state) {
    (void)state;
    kc_loaded_stats ls = KC_LOADED_STATS_INIT;
    ls.version = 0;
    ls.graphs = 12345;
    assert_int_equal(kc_graph_loaded_stats(&ls), KC_EVERSION);
    assert_int_equal(ls.graphs, 12345); /* untouched */
    assert_int_equal(kc_graph_loaded_stats(NULL), KC_EINVAL);
    ls.version = KC_LOADED_STATS_VERSION;
    assert_int_equal(kc_graph_loaded_stats(&ls), KC_OK);
    assert_int_equal(ls.version, KC_LOADED_STATS_VERSION);
    assert_int_equal(ls.graphs, 0);
    /* The budget reads back, and what was read restores it. */
    size_t g0 = 0, b0 = 0, g1 = 0, b1 = 0;
    kc_graph_loaded_budget_get(&g0, &b0);
    assert_int_equal(g0, ls.max_graphs);
    assert_int_equal(b0, ls.max_bytes);
    kc_graph_loaded_budget(3, 4096);
    kc_graph_loaded_budget_get(&g1, &b1);
    assert_int_equal(g1, 3);
    assert_int_equal(b1, 4096);
    kc_graph_loaded_budget_get(NULL, NULL);
    kc_graph_loaded_budget(g0, b0);
    kc_graph_loaded_budget_get(&g1, &b1);
    assert_int_equal(g1, g0);
    assert_int_equal(b1, b0);
}

/* Every _INIT sets what its struct's doc says (the rest is 0): a C caller's designated fields and
 * a positional _INIT agree. */
static void test_inits(void **state) {
    (void)state;
    kc_header_src h = KC_HEADER_SRC_INIT;
    kc_tensor t = KC_TENSOR_INIT;
    kc_tensor_meta m = KC_TENSOR_META_INIT;
    kc_call call = KC_CALL_INIT;
    kc_value v = KC_VALUE_INIT;
    kc_allocator a = KC_ALLOCATOR_INIT;
    kc_bundle_covers cov = KC_BUNDLE_COVERS_INIT;
    kc_redis_config rc = KC_REDIS_CONFIG_INIT;
    kc_site_info si = KC_SITE_INFO_INIT;
    kc_key key = KC_KEY_INIT;
    kc_rng_state rng = KC_RNG_STATE_INIT;
    kc_callable cb = KC_CALLABLE_INIT;
    kc_wrapper w = KC_WRAPPER_INIT;
    kc_forward_call fc = KC_FORWARD_CALL_INIT;
    kc_dim dim = KC_DIM_INIT;
    assert_null(h.name);
    assert_null(t.data);
    assert_int_equal(t.rank, 0);
    assert_int_equal(m.rank, 0);
    assert_null(m.sizes[7].sym);
    assert_null(call.inputs);
    assert_int_equal(v.type, KC_ARG_F32);
    assert_null(a.alloc);
    assert_int_equal(cov.ngraphs, 0);
    assert_int_equal(rc.deadline_ms, 0);
    assert_int_equal(si.version, KC_SITE_INFO_VERSION);
    assert_int_equal(key.bytes[15], 0);
    assert_int_equal(rng.offset, 0);
    assert_null(cb.call);
    assert_null(w.name);
    assert_null(fc.graph);
    assert_null(dim.sym);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_check),         cmocka_unit_test(test_copy_out_fills_only_what_fits),
        cmocka_unit_test(test_kernel_src_version),    cmocka_unit_test(test_graph_info_version),
        cmocka_unit_test(test_bundle_report_version), cmocka_unit_test(test_reports_versions),
        cmocka_unit_test(test_loaded_stats_version),  cmocka_unit_test(test_inits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
