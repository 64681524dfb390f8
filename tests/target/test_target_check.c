/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_target_check.c — [Note: target check]: the supported list (NVRTC's where it is loaded,
 * compared with what NVRTC itself reports through dlopen; kcache's table where there is none:
 * the same binary runs as test_target_check_no_nvrtc with KCACHE_NVRTC naming nothing), the
 * check's message (the name, where it came from, the list), and every API entry point refusing
 * an unknown target (sm_999) and a target this NVRTC does not compile (sm_37) before any work:
 * no compile counted, nothing stored.  No GPU.
 */
#include <dlfcn.h>

#include "kcache.h"

#include "helpers.h"

static int have_nvrtc(void) {
    kc_toolchain t;
    return kc_toolchain_local(&t) == KC_OK;
}

static size_t names_of(const kc_target_list *l, char out[6 * KC_TARGET_LIST_MAX][16]) {
    return kc_target_list_names(l, out, 6 * KC_TARGET_LIST_MAX);
}

static int has_name(const kc_target_list *l, const char *name) {
    char v[6 * KC_TARGET_LIST_MAX][16];
    size_t n = names_of(l, v);
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0) return 1;
    return 0;
}

static void test_table(void **state) {
    (void)state;
    kc_target_list l = KC_TARGET_LIST_INIT;
    assert_int_equal(kc_target_table(&l), KC_OK);
    assert_int_equal(l.from, KC_TARGETS_TABLE);
    for (size_t i = 1; i < l.n; i++) assert_true(l.cc[i - 1] < l.cc[i]); /* ascending, each once */
    const char *in[] = {"sm_37",   "sm_50",   "sm_80",      "sm_90",       "sm_90a",
                        "sm_100f", "sm_121a", "compute_80", "compute_90a", "compute_120f"};
    const char *out[] = {"sm_89a", "sm_90f", "sm_85", "sm_999", "compute_80a", "sm_20"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (!has_name(&l, in[i])) fail_msg("the table lacks %s", in[i]);
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        if (has_name(&l, out[i])) fail_msg("the table has %s", out[i]);
    kc_target_list bad = KC_TARGET_LIST_INIT;
    bad.version = 0;
    assert_int_equal(kc_target_table(&bad), KC_EVERSION);
    assert_int_equal(kc_target_table(NULL), KC_EINVAL);
}

/* NVRTC's own answer, through dlopen of the file kcache identified: 0 when it cannot say. */
static int nvrtc_says(int *cc, int cap) {
    kc_toolchain t;
    if (kc_toolchain_local(&t) != KC_OK) return 0;
    void *h = dlopen(t.path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    int (*num)(int *) = (int (*)(int *))dlsym(h, "nvrtcGetNumSupportedArchs");
    int (*get)(int *) = (int (*)(int *))dlsym(h, "nvrtcGetSupportedArchs");
    int n = 0;
    if (!num || !get || num(&n) != 0 || n > cap || get(cc) != 0) n = 0;
    dlclose(h);
    return n;
}

static void test_supported_is_nvrtcs_or_the_table(void **state) {
    (void)state;
    kc_target_list l = KC_TARGET_LIST_INIT, table = KC_TARGET_LIST_INIT;
    kc_error_clear();
    assert_int_equal(kc_target_supported(NULL, &l), KC_OK);
    int left = kc_error_last()->code;
    assert_int_equal(kc_target_table(&table), KC_OK);
    if (!have_nvrtc()) { /* KCACHE_NVRTC names nothing: the table, and no error left behind */
        assert_int_equal(l.from, KC_TARGETS_TABLE);
        assert_int_equal(l.n, table.n);
        assert_memory_equal(l.cc, table.cc, l.n * sizeof l.cc[0]);
        assert_int_equal(left, KC_OK);
        return;
    }
    int cc[KC_TARGET_LIST_MAX];
    int n = nvrtc_says(cc, KC_TARGET_LIST_MAX);
    assert_true(n > 0);
    assert_int_equal(l.from, KC_TARGETS_NVRTC);
    assert_int_equal((int)l.n, n);
    for (int i = 0; i < n; i++) assert_int_equal(l.cc[i], cc[i]); /* NVRTC lists them ascending */
    kc_target_list other = KC_TARGET_LIST_INIT;                   /* another toolchain's identity: the table */
    assert_int_equal(kc_target_supported("build-id:00112233445566778899aabbccddeeff", &other), KC_OK);
    assert_int_equal(other.from, KC_TARGETS_TABLE);
}

static void test_check_message(void **state) {
    (void)state;
    kc_target_list l = KC_TARGET_LIST_INIT;
    assert_int_equal(kc_target_supported(NULL, &l), KC_OK);
    kc_target t;
    assert_int_equal(kc_target_check(&l, "sm_90", "--arch", &t), KC_OK);
    assert_int_equal(t.major, 9);
    assert_int_equal(kc_target_check(&l, "sm_90a", "--arch", &t), KC_OK);
    assert_int_equal(t.suffix, 'a');
    const char *bad[] = {"sm_999", "sm_20", "sm_89a", "volta", "sm_9\n0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kc_target_check(&l, bad[i], "manifest m.json, archs[1]", NULL), KC_EARCH);
        const char *m = kc_error_last()->message;
        if (!strstr(m, "unknown target '") || !strstr(m, "(manifest m.json, archs[1])") || !strstr(m, " sm_90 ") ||
            !strstr(m, l.from == KC_TARGETS_NVRTC ? "NVRTC " : "kcache's table") || strchr(m, '\n'))
            fail_msg("'%s': %s", bad[i], m);
    }
    assert_non_null(strstr(kc_error_last()->message, "'sm_9\\x0a0'")); /* shown escaped */
    /* an empty name is shown empty (it once showed whatever the stack held) */
    assert_int_equal(kc_target_check(&l, "", "--arch", NULL), KC_EARCH);
    assert_non_null(strstr(kc_error_last()->message, "unknown target '' (--arch)"));
    if (l.from == KC_TARGETS_NVRTC) { /* too old for CUDA 12 and 13: known to the table, not compiled */
        assert_int_equal(kc_target_check(&l, "sm_37", "--arch", NULL), KC_EARCH);
    } else {
        assert_int_equal(kc_target_check(&l, "sm_37", "--arch", NULL), KC_OK);
    }
}

typedef struct fx {
    char *dir;
    kc_cache *c;
} fx;

static int fx_up(void **state) {
    fx *f = calloc(1, sizeof *f);
    if (kct_open_cache("targetcheck", &f->dir, &f->c) != KC_OK) return -1;
    *state = f;
    return 0;
}

static int fx_down(void **state) {
    fx *f = *state;
    kct_close_cache(f->dir, f->c);
    free(f);
    return 0;
}

/* Nothing was done: no lookup, no compile, nothing stored. */
static void nothing_done(kc_cache *c, int lookups) {
    assert_int_equal(kct_stat(c, KC_STAT_COMPILES), 0);
    assert_int_equal(kct_stat(c, KC_STAT_PUTS), 0);
    assert_int_equal(kct_stat(c, KC_STAT_ENTRIES), 0);
    if (!lookups) assert_int_equal(kct_stat(c, KC_STAT_MISSES), 0);
}

static void test_graph_entry_points(void **state) {
    fx *f = *state;
    kc_graph_desc *d = kct_graph("softmax.json", 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(f->c, d, "sm_999", &info), KC_EARCH);
    assert_non_null(strstr(kc_error_last()->message, "unknown target 'sm_999' (kc_graph_compile)"));
    nothing_done(f->c, 0);
    kc_explain *x = calloc(1, sizeof *x);
    x->version = KC_EXPLAIN_VERSION;
    assert_int_equal(kc_graph_explain(f->c, d, "sm_999", x), KC_EARCH);
    assert_non_null(strstr(kc_error_last()->message, "(kc_graph_explain)"));
    if (have_nvrtc()) {
        /* sm_37 is in the table (a reader may load what an old toolchain stored), but this
         * NVRTC does not compile it: refused before a compile, nothing stored. */
        assert_int_equal(kc_graph_compile(f->c, d, "sm_37", &info), KC_EARCH);
        assert_non_null(strstr(kc_error_last()->message, "unknown target 'sm_37' (to compile)"));
        nothing_done(f->c, 1);
    } else {
        /* readable without NVRTC: not refused for its target (this empty cache records no toolchain) */
        assert_int_not_equal(kc_graph_explain(f->c, d, "sm_37", x), KC_EARCH);
        assert_int_not_equal(kc_graph_compile(f->c, d, "sm_37", &info), KC_EARCH);
    }
    free(x);
    kc_graph_desc_free(d);
}

static void test_manifest_and_prewarm(void **state) {
    fx *f = *state;
    kc_manifest *m = NULL;
    const char *j = "{\"graphs\": [\"softmax.json\"], \"archs\": [\"sm_90\", \"sm_999\"]}";
    assert_int_equal(kc_manifest_parse(&m, j, strlen(j), KC_KERNELS_DIR, "m.json"), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "unknown target 'sm_999' (manifest m.json:1:49, archs[1])"));
    j = "{\"graphs\": [\"softmax.json\"], \"archs\": [\"sm_90\"]}";
    assert_int_equal(kc_manifest_parse(&m, j, strlen(j), KC_KERNELS_DIR, "m.json"), KC_OK);
    assert_int_equal(kc_manifest_set_archs(m, "sm_80,sm_999"), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "unknown target 'sm_999' (--arch)"));
    assert_string_equal(kc_manifest_arch(m, 0), "sm_90");       /* unchanged */
    assert_int_equal(kc_manifest_set_archs(m, "sm_37"), KC_OK); /* known: the cache's toolchain decides */
    kc_prewarm_report *r = NULL;
    int rc = kc_prewarm(f->c, m, NULL, &r);
    if (have_nvrtc()) {
        assert_int_equal(rc, KC_EARCH);
        assert_null(r);
        assert_non_null(strstr(kc_error_last()->message, "unknown target 'sm_37' (manifest archs[0])"));
        nothing_done(f->c, 0);
    }
    kc_prewarm_report_free(r);
    kc_manifest_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_supported_is_nvrtcs_or_the_table),
        cmocka_unit_test(test_check_message),
        cmocka_unit_test_setup_teardown(test_graph_entry_points, fx_up, fx_down),
        cmocka_unit_test_setup_teardown(test_manifest_and_prewarm, fx_up, fx_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
