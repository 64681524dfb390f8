/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cache_compile.c — kc_cache_compile (kcache/program.h): a single-source compile through the
 * cache.  A miss then a disk hit in a new handle and a memory hit in the same one (one outcome
 * counted per call, the one returned, each with its latency observation); the key is the unit key
 * a graph on the same source and names uses; a __TIME__ source is a bypass, stored nowhere; must-hit
 * refuses; bad arguments are refused before any lookup; many threads compiling one source make one
 * NVRTC compile and all get the same image; the parameter tables of a cubin and of PTX.  Needs
 * NVRTC (compile-only), no GPU.
 */
#include <pthread.h>

#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static const char *SRC = "extern \"C\" __global__ void k(float *p, int n, double d) { if (n) p[0] = (float)d; }\n"
                         "template <typename T> __global__ void t(T *p) { p[0] = T(1); }\n";

static int setup(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "SKIP: no NVRTC: %s\n", kc_error_last()->message);
        exit(KC_SKIP_CODE);
    }
    return kct_open_cache("ccompile", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_kernel_src src_of(const char *text) {
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "k.cu";
    k.source = text;
    return k;
}

static uint64_t outcome_count(kc_cache *c, int o) { return kct_stat(c, kc_lookup_outcome_stat((kc_lookup_outcome)o)); }

/* The five outcome counters and their latency observations, before and after a call: exactly the
 * outcome returned grew, by one, and nothing else. */
typedef struct counts {
    uint64_t v[KC_LOOKUP_OUTCOMES], obs[KC_LOOKUP_OUTCOMES];
} counts;

static counts counts_of(kc_cache *c) {
    counts s;
    kc_latency l = KC_LATENCY_INIT;
    assert_int_equal(kc_cache_latency(c, &l), KC_OK);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) s.v[o] = outcome_count(c, o), s.obs[o] = l.count[o];
    return s;
}

static void assert_one_counted(const counts *a, const counts *b, int outcome) {
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        assert_int_equal(b->v[o] - a->v[o], o == outcome ? 1 : 0);
        assert_int_equal(b->obs[o] - a->obs[o], o == outcome ? 1 : 0);
    }
}

static kc_program *compile_ok(kc_cache *c, const char *text, const char *const *names, size_t n, const char *target,
                              int want_outcome) {
    kc_kernel_src k = src_of(text);
    kc_program *p = NULL;
    counts a = counts_of(c);
    if (kc_cache_compile(c, &k, names, n, target, &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    counts b = counts_of(c);
    assert_int_equal(p->outcome, want_outcome);
    assert_one_counted(&a, &b, want_outcome);
    assert_int_equal(p->size, sizeof *p);
    assert_int_equal(p->nnames, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(p->names[i], names[i]);
    assert_int_equal(strlen(p->key), KC_KEY_HEX_LEN);
    return p;
}

static void assert_same_image(const kc_program *a, const kc_program *b) {
    assert_string_equal(a->key, b->key);
    assert_int_equal(a->len, b->len);
    assert_memory_equal(a->image, b->image, a->len);
    for (size_t i = 0; i < a->nnames; i++) assert_string_equal(a->lowered_names[i], b->lowered_names[i]);
}

/* Miss, memory hit in the same handle, disk hit in a new one: one key, one image. */
static void test_miss_then_hits(void **state) {
    (void)state;
    const char *names[] = {"k", "t<float>"};
    kc_program *a = compile_ok(cache, SRC, names, 2, "sm_80", KC_LOOKUP_COMPILE);
    assert_false(a->is_ptx);
    assert_true(a->compile_seconds > 0);
    assert_string_equal(a->target, "sm_80");
    assert_string_equal(a->lowered_names[0], "k");
    assert_non_null(strstr(a->lowered_names[1], "1tIfE")); /* the mangled template instance */
    kc_program *m = compile_ok(cache, SRC, names, 2, "sm_80", KC_LOOKUP_MEMORY);
    assert_same_image(a, m);
    assert_true(m->compile_seconds == 0);
    assert_string_equal(m->log, "");
    kc_cache *again = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir, o.flags = KC_OPEN_NO_ENV;
    assert_int_equal(kc_cache_open(&again, &o), KC_OK);
    kc_program *d = compile_ok(again, SRC, names, 2, "sm_80", KC_LOOKUP_DISK);
    assert_same_image(a, d);
    assert_int_equal(kct_stat(again, KC_STAT_UNIT_COMPILES), 1); /* the miss's only: shared shards */
    kc_cache_close(again);
    /* Another target, another key; the names in another order: not the memo's record. */
    kc_program *p = compile_ok(cache, SRC, names, 2, "compute_80", KC_LOOKUP_COMPILE);
    assert_string_not_equal(p->key, a->key);
    const char *swapped[] = {"t<float>", "k"};
    kc_program *s = compile_ok(cache, SRC, swapped, 2, "sm_80", KC_LOOKUP_DISK);
    assert_string_equal(s->key, a->key);
    assert_string_equal(s->lowered_names[1], "k");
    kc_program_free(a), kc_program_free(m), kc_program_free(d), kc_program_free(p), kc_program_free(s);
    kc_program_free(NULL);
}

/* The parameter tables: a cubin says offsets and sizes, PTX says classes and alignments too. */
static void test_params(void **state) {
    (void)state;
    const char *names[] = {"k"};
    kc_program *c = compile_ok(cache, SRC, names, 1, "sm_90", KC_LOOKUP_COMPILE);
    assert_int_equal(c->nparams[0], 3);
    static const unsigned off[] = {0, 8, 16}, sz[] = {8, 4, 8};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c->params[0][i].offset, off[i]);
        assert_int_equal(c->params[0][i].size, sz[i]);
        assert_string_equal(c->params[0][i].cls, "any");
    }
    kc_program *p = compile_ok(cache, SRC, names, 1, "compute_90", KC_LOOKUP_COMPILE);
    assert_true(p->is_ptx);
    assert_int_equal(p->image[p->len], 0);
    assert_int_equal(strlen((const char *)p->image), p->len);
    assert_int_equal(p->nparams[0], 3);
    static const char *const cls[] = {"int", "int", "float"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(p->params[0][i].offset, off[i]);
        assert_int_equal(p->params[0][i].size, sz[i]);
        assert_string_equal(p->params[0][i].cls, cls[i]);
    }
    kc_program_free(c), kc_program_free(p);
}

/* A source that reads the clock: compiled every time, stored nowhere, counted as a bypass. */
static void test_bypass(void **state) {
    (void)state;
    const char *text = "extern \"C\" __global__ void k(int *p) { const char *s = __TIME__; p[0] = s[0]; }\n";
    const char *names[] = {"k"};
    size_t before = kct_count_files(dir, ".unit");
    kc_program *a = compile_ok(cache, text, names, 1, "sm_80", KC_LOOKUP_BYPASS);
    kc_program *b = compile_ok(cache, text, names, 1, "sm_80", KC_LOOKUP_BYPASS);
    assert_int_equal(kct_count_files(dir, ".unit"), before);
    kc_program_free(a), kc_program_free(b);
    /* Strict: a bypass is an anomaly, refused before any lookup (nothing counted). */
    kc_cache *strict = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir, o.flags = KC_OPEN_NO_ENV | KC_OPEN_STRICT;
    assert_int_equal(kc_cache_open(&strict, &o), KC_OK);
    kc_kernel_src k = src_of(text);
    kc_program *p = NULL;
    counts c0 = counts_of(strict);
    assert_int_equal(kc_cache_compile(strict, &k, names, 1, "sm_80", &p), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_STRICT"));
    counts c1 = counts_of(strict);
    assert_memory_equal(&c0, &c1, sizeof c0);
    assert_null(p);
    kc_cache_close(strict);
}

/* Must-hit: what is stored is served; what is not is refused, nothing compiled, the miss counted. */
static void test_require_hit(void **state) {
    (void)state;
    const char *names[] = {"k"};
    kc_program *a = compile_ok(cache, SRC, names, 1, "sm_86", KC_LOOKUP_COMPILE);
    kc_cache *must = NULL;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir, o.flags = KC_OPEN_NO_ENV | KC_OPEN_REQUIRE_HIT;
    assert_int_equal(kc_cache_open(&must, &o), KC_OK);
    kc_program *d = compile_ok(must, SRC, names, 1, "sm_86", KC_LOOKUP_DISK);
    kc_kernel_src k = src_of(SRC);
    kc_program *p = (kc_program *)1;
    uint64_t units = kct_stat(must, KC_STAT_UNIT_COMPILES), refused = kct_stat(must, KC_STAT_COMPILES_REFUSED);
    counts c0 = counts_of(must);
    assert_int_equal(kc_cache_compile(must, &k, names, 1, "sm_75", &p), KC_ENOTCACHED);
    counts c1 = counts_of(must);
    assert_one_counted(&c0, &c1, KC_LOOKUP_COMPILE);
    assert_null(p);
    assert_non_null(strstr(kc_error_last()->message, "must-hit"));
    assert_non_null(strstr(kc_error_last()->message, "sm_75"));
    assert_int_equal(kct_stat(must, KC_STAT_UNIT_COMPILES), units);
    assert_int_equal(kct_stat(must, KC_STAT_COMPILES_REFUSED), refused + 1);
    kc_cache_close(must);
    kc_program_free(a), kc_program_free(d);
}

/* NVRTC's log is the error's message; a failed compile is a miss, counted once. */
static void test_compile_error(void **state) {
    (void)state;
    kc_kernel_src k = src_of("extern \"C\" __global__ void k(int *p) { p[0] = undeclared_thing; }\n");
    const char *names[] = {"k"};
    kc_program *p = NULL;
    counts a = counts_of(cache);
    assert_int_equal(kc_cache_compile(cache, &k, names, 1, "sm_80", &p), KC_ECOMPILE);
    counts b = counts_of(cache);
    assert_one_counted(&a, &b, KC_LOOKUP_COMPILE);
    assert_non_null(strstr(kc_error_last()->message, "undeclared_thing"));
    assert_null(p);
}

/* Every bad argument is refused before a lookup: nothing counted, a message naming it. */
static void test_bad_args(void **state) {
    (void)state;
    kc_kernel_src k = src_of(SRC);
    const char *one[] = {"k"}, *empty[] = {""}, *null[] = {NULL}, *twice[] = {"k", "k"};
    kc_program *p = (kc_program *)1;
    counts a = counts_of(cache);
    assert_int_equal(kc_cache_compile(NULL, &k, one, 1, "sm_80", &p), KC_EINVAL);
    assert_null(p);
    assert_int_equal(kc_cache_compile(cache, NULL, one, 1, "sm_80", &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, NULL, 1, "sm_80", &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, one, 1, NULL, &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, one, 1, "sm_80", NULL), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, one, 0, "sm_80", &p), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "0 name expressions"));
    assert_int_equal(kc_cache_compile(cache, &k, one, (size_t)-1, "sm_80", &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, empty, 1, "sm_80", &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, null, 1, "sm_80", &p), KC_EINVAL);
    assert_int_equal(kc_cache_compile(cache, &k, twice, 2, "sm_80", &p), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "given twice"));
    assert_int_equal(kc_cache_compile(cache, &k, one, 1, "sm_8x", &p), KC_EARCH);
    assert_int_equal(kc_cache_compile(cache, &k, one, 1, "", &p), KC_EARCH);
    kc_kernel_src v0 = k;
    v0.version = 0;
    assert_int_equal(kc_cache_compile(cache, &v0, one, 1, "sm_80", &p), KC_EVERSION);
    kc_kernel_src nosrc = k;
    nosrc.source = NULL;
    assert_int_equal(kc_cache_compile(cache, &nosrc, one, 1, "sm_80", &p), KC_EINVAL);
    assert_null(p);
    counts b = counts_of(cache);
    assert_memory_equal(&a, &b, sizeof a);
}

/* A graph with the same source and name for the same target finds the unit kc_cache_compile
 * stored and compiles nothing (and the other way round: a unit a graph stored is a disk hit). */
static void test_graph_shares_unit(void **state) {
    (void)state;
    const char *text = "extern \"C\" __global__ void shared_k(float *x, int n) { if (n) x[0] = 2.0f; }\n";
    const char *names[] = {"shared_k"};
    kc_program *a = compile_ok(cache, text, names, 1, "sm_80", KC_LOOKUP_COMPILE);
    char name[KC_KEY_HEX_LEN + 8];
    snprintf(name, sizeof name, "%s.unit", a->key);
    assert_int_equal(kct_count_files(dir, name), 1);
    for (int t = 0; t < 2; t++) {
        kc_graph_desc *d;
        assert_int_equal(kc_graph_desc_new(&d, "shares"), KC_OK);
        kc_kernel_src k = src_of(text);
        k.name = "shared_k";
        assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
        const char *sizes[] = {"N"};
        assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
        const char *grid[] = {"1", "1", "1"}, *block[] = {"32", "1", "1"}, *args[] = {"input:0", "e32:N"};
        assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        const char *target = t == 0 ? "sm_80" : "sm_75";
        if (kc_graph_compile(cache, d, target, &info) != KC_OK) fail_msg("%s", kc_error_last()->message);
        assert_int_equal(info.units, 1);
        assert_int_equal(info.units_compiled, t == 0 ? 0 : 1); /* sm_80: kc_cache_compile's unit */
        kc_graph_desc_free(d);
    }
    kc_program *b = compile_ok(cache, text, names, 1, "sm_75", KC_LOOKUP_DISK); /* the graph's unit */
    kc_program_free(a), kc_program_free(b);
}

#ifdef KC_CLI
/* `kcache compile` prints the key kc_cache_compile stores under, and finds its entry (one entry). */
static void test_cli_same_key(void **state) {
    (void)state;
    const char *names[] = {"k", "t<float>"};
    kc_program *a = compile_ok(cache, SRC, names, 2, "sm_80", KC_LOOKUP_COMPILE);
    char path[600], cmd[2048], line[4096] = "";
    snprintf(path, sizeof path, "%s/k.cu", dir);
    assert_int_equal(kct_write(path, SRC, strlen(SRC)), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' --cache-dir '%s' compile ./k.cu --file-name k.cu --name k --name 't<float>' --target "
             "sm_80 --json",
             dir, KC_CLI, dir);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t n = fread(line, 1, sizeof line - 1, f);
    line[n] = '\0';
    assert_int_equal(pclose(f), 0);
    char want[128];
    snprintf(want, sizeof want, "\"key\": \"%s\"", a->key);
    if (!strstr(line, want)) fail_msg("%s not in: %s", want, line);
    assert_non_null(strstr(line, "\"outcome\": \"disk\""));
    assert_int_equal(kct_count_files(dir, ".unit"), 1);
    /* without --file-name: the key of a kernel without a file name (C's and Python's default) */
    kc_kernel_src k = src_of(SRC);
    k.file = NULL;
    kc_program *b = NULL;
    assert_int_equal(kc_cache_compile(cache, &k, names, 2, "sm_80", &b), KC_OK);
    assert_string_not_equal(b->key, a->key);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && '%s' --cache-dir '%s' compile %s/k.cu --name k --name 't<float>' --target sm_80", dir, KC_CLI,
             dir, dir);
    f = popen(cmd, "r");
    assert_non_null(f);
    n = fread(line, 1, sizeof line - 1, f);
    line[n] = '\0';
    assert_int_equal(pclose(f), 0);
    snprintf(want, sizeof want, "key       %s", b->key);
    if (!strstr(line, want)) fail_msg("%s not in: %s", want, line);
    kc_program_free(a), kc_program_free(b);
}
#endif

typedef struct storm {
    kc_program *p;
    int rc;
} storm;

static void *storm_one(void *arg) {
    storm *s = arg;
    kc_kernel_src k = src_of("extern \"C\" __global__ void storm(int *p) { p[0] = 7; }\n");
    const char *names[] = {"storm"};
    s->rc = kc_cache_compile(cache, &k, names, 1, "sm_89", &s->p);
    return NULL;
}

/* Many threads, one source: one NVRTC compile (the unit's single-flight), one image for all, and
 * the outcomes counted are the outcomes returned. */
static void test_threads(void **state) {
    (void)state;
    enum { N = 12 };
    storm s[N];
    pthread_t th[N];
    uint64_t units = kct_stat(cache, KC_STAT_UNIT_COMPILES);
    counts a = counts_of(cache);
    for (int i = 0; i < N; i++) s[i].p = NULL, assert_int_equal(pthread_create(&th[i], NULL, storm_one, &s[i]), 0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    counts b = counts_of(cache);
    uint64_t told[KC_LOOKUP_OUTCOMES] = {0};
    for (int i = 0; i < N; i++) {
        if (s[i].rc != KC_OK) fail_msg("thread %d: %s", i, kc_error_last()->message);
        assert_same_image(s[0].p, s[i].p);
        told[s[i].p->outcome]++;
    }
    assert_int_equal(kct_stat(cache, KC_STAT_UNIT_COMPILES) - units, 1);
    assert_int_equal(told[KC_LOOKUP_COMPILE], 1);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) assert_int_equal(b.v[o] - a.v[o], told[o]);
    for (int i = 0; i < N; i++) kc_program_free(s[i].p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_miss_then_hits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bypass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_require_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compile_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_shares_unit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
#ifdef KC_CLI
        cmocka_unit_test_setup_teardown(test_cli_same_key, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
