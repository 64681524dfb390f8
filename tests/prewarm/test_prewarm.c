/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_prewarm.c — kc_prewarm: every graph for every target on several threads, hits the
 * second time, a failing graph reported with NVRTC's log while the others still compile (its unit
 * counted neither compiled nor found stored), a
 * spec that cannot be read failing the call before anything compiles, a variant that
 * compiled but could not be stored counted as failed, and the progress callback called
 * once per variant, never two at a time.  Compile units ([Note: two levels]): the report sums
 * them, and two graphs that share one unit, prewarmed at the same moment on two workers,
 * compile it once (the other waits on the unit's lock and finds it stored).
 */
#include "kcache.h"
#include "helpers.h"

static char *dir, *work;
static kc_cache *cache;

static void write_spec(const char *name, const char *body) {
    char p[512], cu[512];
    snprintf(p, sizeof p, "%s/%s.cu", work, name);
    snprintf(cu, sizeof cu, "extern \"C\" __global__ void %s_k(float *y) { %s }\n", name, body);
    assert_int_equal(kct_write(p, cu, strlen(cu)), 0);
    char spec[1024];
    snprintf(
        spec, sizeof spec,
        "{\"name\": \"%s\", \"kernels\": [{\"id\": \"k\", \"file\": \"%s.cu\", \"entry\": \"%s_k\"}],\n"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
        " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [\"N\", 1, 1], \"args\": [\"output:0\"]}]}\n",
        name, name, name);
    snprintf(p, sizeof p, "%s/%s.json", work, name);
    assert_int_equal(kct_write(p, spec, strlen(spec)), 0);
}

static kc_manifest *manifest(const char *json) {
    kc_manifest *m;
    if (kc_manifest_parse(&m, json, strlen(json), work, "test manifest") != KC_OK)
        fail_msg("%s", kc_error_last()->message);
    return m;
}

static int setup(void **state) {
    (void)state;
    work = kct_tmpdir("prewarm-specs");
    write_spec("twice", "y[threadIdx.x] *= 2.f;");
    write_spec("thrice", "y[threadIdx.x] *= 3.f;");
    write_spec("broken", "y[threadIdx.x] = undeclared_name;");
    return kct_open_cache("prewarm", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(work);
    free(work);
    return kct_close_cache(dir, cache);
}

typedef struct seen {
    int inside, overlapped, calls;
    int index_seen[16];
} seen;

static void progress(const kc_prewarm_report *r, size_t index, void *ctx) {
    seen *s = ctx;
    if (__atomic_exchange_n(&s->inside, 1, __ATOMIC_ACQ_REL)) s->overlapped = 1;
    s->calls++;
    if (index < 16) s->index_seen[index]++;
    assert_true(r->done == (size_t)s->calls);
    struct timespec ts = {0, 2000000}; /* linger, so that overlapping calls would be seen */
    nanosleep(&ts, NULL);
    __atomic_store_n(&s->inside, 0, __ATOMIC_RELEASE);
}

static void test_compiles_then_hits(void **state) {
    (void)state;
    kc_manifest *m = manifest(
        "{\"graphs\": [\"twice.json\", \"thrice.json\"], \"archs\": [\"sm_80\", \"compute_80\"]}");
    seen s;
    memset(&s, 0, sizeof s);
    kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
    o.jobs = 3;
    o.progress = progress;
    o.ctx = &s;
    kc_prewarm_report *r;
    assert_int_equal(kc_prewarm(cache, m, &o, &r), KC_OK);
    assert_int_equal(r->graphs, 2);
    assert_int_equal(r->variants, 4);
    assert_int_equal(r->compiled, 4);
    assert_int_equal(r->hits + r->failed + r->bypassed, 0);
    assert_int_equal(r->units, 4); /* one unit per graph and target, each compiled */
    assert_int_equal(r->units_compiled, 4);
    assert_true(r->compile_ms > 0);
    assert_int_equal(s.calls, 4);
    assert_false(s.overlapped);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s.index_seen[i], 1);
        const kc_prewarm_result *x = &r->results[i];
        assert_int_equal(x->graph, (size_t)i / 2);
        assert_int_equal(x->arch, (size_t)i % 2);
        assert_string_equal(x->name, i < 2 ? "twice" : "thrice");
        assert_int_equal(x->status, KC_OK);
        assert_string_equal(x->error, "");
        assert_int_equal(x->info.source, KC_FROM_COMPILE);
        assert_int_equal(x->info.store_status, KC_OK);
        kc_key k;
        assert_int_equal(kc_key_from_hex(&k, x->info.key), KC_OK);
        assert_int_equal(kc_cache_exists(cache, &k, kc_manifest_arch(m, x->arch)), 1);
    }
    kc_prewarm_report_free(r);
    o.progress = NULL;
    assert_int_equal(kc_prewarm(cache, m, &o, &r), KC_OK); /* the second time: hits only */
    assert_int_equal(r->hits, 4);
    assert_int_equal(r->compiled, 0);
    assert_int_equal(r->units + r->units_compiled, 0); /* a hit needs no unit */
    assert_true(r->compile_ms == 0);
    kc_prewarm_report_free(r);
    kc_manifest_free(m);
}

/* Two graphs of one kernel (one file, one entry: one compile unit) that differ in their launch. */
static void write_sharing(int round) {
    char p[512], cu[512], spec[1024];
    snprintf(p, sizeof p, "%s/shared%d.cu", work, round);
    /* a few instantiations, so that the compile takes long enough for the two workers to meet */
    snprintf(cu, sizeof cu,
             "template <int K> __device__ float f(float x) { return K == 0 ? x : f<K - 1>(x) * 1.0001f + %d.f; }\n"
             "template <> __device__ float f<0>(float x) { return x; }\n"
             "extern \"C\" __global__ void shared_k(float *y) { y[threadIdx.x] = f<48>(y[threadIdx.x]); }\n",
             round);
    assert_int_equal(kct_write(p, cu, strlen(cu)), 0);
    for (int g = 0; g < 2; g++) {
        snprintf(
            spec, sizeof spec,
            "{\"name\": \"share%d_%d\", \"kernels\": [{\"id\": \"k\", \"file\": \"shared%d.cu\", \"entry\": \"shared_k\"}],\n"
            " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [%d]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [%d]}],\n"
            " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [%d, 1, 1], \"args\": [\"output:0\"]}]}\n",
            round, g, round, 64 << g, 64 << g, 64 << g);
        snprintf(p, sizeof p, "%s/share%d_%d.json", work, round, g);
        assert_int_equal(kct_write(p, spec, strlen(spec)), 0);
    }
}

static void test_a_unit_two_graphs_share_compiles_once(void **state) {
    (void)state;
    for (int round = 0; round < 3; round++) { /* a fresh unit each round: three chances for the workers to meet */
        write_sharing(round);
        char json[256];
        snprintf(json, sizeof json, "{\"graphs\": [\"share%d_0.json\", \"share%d_1.json\"], \"archs\": [\"sm_90\"]}",
                 round, round);
        kc_manifest *m = manifest(json);
        kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
        o.jobs = 2; /* both graphs start at once */
        kc_stats before, after;
        kc_cache_stats(cache, &before);
        kc_prewarm_report *r;
        assert_int_equal(kc_prewarm(cache, m, &o, &r), KC_OK);
        assert_int_equal(r->compiled, 2);       /* two graph entries written… */
        assert_int_equal(r->units, 2);          /* …each needing the one unit… */
        assert_int_equal(r->units_compiled, 1); /* …which NVRTC compiled once */
        assert_int_equal(r->results[0].info.units_compiled + r->results[1].info.units_compiled, 1);
        assert_int_equal(r->results[0].info.units + r->results[1].info.units, 2);
        kc_cache_stats(cache, &after);
        assert_int_equal(after.v[KC_STAT_UNIT_COMPILES] - before.v[KC_STAT_UNIT_COMPILES], 1);
        assert_int_equal(after.v[KC_STAT_UNIT_HITS] - before.v[KC_STAT_UNIT_HITS], 1);
        kc_prewarm_report_free(r);
        kc_manifest_free(m);
    }
}

static void test_a_failing_graph_does_not_stop_the_others(void **state) {
    (void)state;
    kc_manifest *m = manifest("{\"graphs\": [\"broken.json\", \"twice.json\"], \"archs\": [\"sm_90\"]}");
    kc_prewarm_report *r;
    assert_int_equal(kc_prewarm(cache, m, NULL, &r), KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "1 of 2 variants failed; first: broken sm_90"));
    assert_non_null(strstr(kc_error_last()->message, "undeclared_name")); /* NVRTC's log */
    assert_int_equal(r->failed, 1);
    assert_int_equal(r->compiled, 1);
    assert_int_equal(r->results[0].status, KC_ECOMPILE);
    assert_non_null(strstr(r->results[0].error, "undeclared_name"));
    assert_int_equal(r->results[1].status, KC_OK);
    /* The failed unit was neither compiled nor found stored: no unit hit (`prewarm --json`'s unit_hits
     * is units - units_compiled). */
    assert_int_equal(r->units_compiled, 1);
    assert_int_equal(r->units, r->units_compiled);
    kc_prewarm_report_free(r);
    kc_manifest_free(m);
}

static void test_an_unreadable_spec_fails_before_compiling(void **state) {
    (void)state;
    kc_manifest *m = manifest("{\"graphs\": [\"twice.json\", \"missing.json\"], \"archs\": [\"sm_90\"]}");
    kc_prewarm_report *r = (kc_prewarm_report *)1;
    assert_int_equal(kc_prewarm(cache, m, NULL, &r), KC_EINVAL);
    assert_null(r);
    assert_non_null(strstr(kc_error_last()->message, "graphs[1]"));
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_COMPILES], 0);
    kc_manifest_free(m);
    m = manifest("{\"graphs\": [\"twice.json\"]}");
    assert_int_equal(kc_prewarm(cache, m, NULL, &r), KC_EINVAL); /* no target */
    assert_non_null(strstr(kc_error_last()->message, "no target"));
    kc_prewarm_options bad = KC_PREWARM_OPTIONS_INIT;
    bad.version = 99;
    assert_int_equal(kc_prewarm(cache, m, &bad, &r), KC_EVERSION);
    kc_manifest_free(m);
}

static void test_compiled_but_not_stored_is_a_failure(void **state) {
    (void)state;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_READONLY;
    kc_cache *ro;
    assert_int_equal(kc_cache_open(&ro, &o), KC_OK);
    kc_manifest *m = manifest("{\"graphs\": [\"thrice.json\"], \"archs\": [\"sm_90\"]}");
    kc_prewarm_report *r;
    assert_int_equal(kc_prewarm(ro, m, NULL, &r), KC_EREADONLY);
    assert_int_equal(r->failed, 1);
    assert_int_equal(r->results[0].info.source, KC_FROM_COMPILE); /* it did compile */
    assert_int_equal(r->results[0].info.store_status, KC_EREADONLY);
    assert_non_null(strstr(r->results[0].error, "compiled, but not stored"));
    kc_prewarm_report_free(r);
    /* The same through kc_graph_compile, a runtime's call: its graph compiled, so it succeeds. */
    kc_graph_desc *d;
    char p[512];
    snprintf(p, sizeof p, "%s/thrice.json", work);
    assert_int_equal(kc_graph_desc_load(&d, p), KC_OK);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(ro, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.store_status, KC_EREADONLY);
    kc_graph_desc_free(d);
    kc_manifest_free(m);
    kc_cache_close(ro);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_compiles_then_hits),
        T(test_a_unit_two_graphs_share_compiles_once),
        T(test_a_failing_graph_does_not_stop_the_others),
        T(test_an_unreadable_spec_fails_before_compiling),
        T(test_compiled_but_not_stored_is_a_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
