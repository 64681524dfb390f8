/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_counts.c — one outcome per lookup, the one its caller was told: 8 threads looking three
 * graphs up at once in an empty cache, so that most of the first lookups wait for another
 * thread's compile, then take its entry (told KC_FROM_DISK); the counters equal the callers'
 * tallies outcome by outcome — misses = compiles = lookups told KC_FROM_COMPILE, hits = lookups
 * told KC_FROM_DISK, compile_waits = those of them that took another's compile (told so in
 * miss_reason).  Time saved ([Note: time saved] in src/graph/lookup.c): each entry records the
 * wall-clock time of its compile (ORIGIN compile_wall_us), a disk hit reports it (saved_ms) and
 * stats add it up (compile_us_saved); a new static shape built only from stored units compiled
 * nothing and records 0, however long its units took.  An uncacheable graph is a bypass, never
 * a miss.  Compile-only (NVRTC, no GPU); kc_graph_get's counts: test_counts_double.c.
 */
#include <pthread.h>

#include "kcache.h"
#include "helpers.h"
#include "counts_test.h" /* kcc_latency_agrees */

enum { THREADS = 8, ROUNDS = 6, GRAPHS = 3 };

static char *dir;
static kc_cache *cache;
static kc_graph_desc *descs[GRAPHS];
static pthread_barrier_t start;

typedef struct tally {
    int compiled, disk, waited, other, failed;
} tally;

static void *worker(void *p) {
    tally *t = p;
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++)
        for (int g = 0; g < GRAPHS; g++) {
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            if (kc_graph_compile(cache, descs[(g + r) % GRAPHS], "sm_90", &info) != KC_OK) t->failed++;
            else if (info.source == KC_FROM_COMPILE) t->compiled++;
            else if (info.source == KC_FROM_DISK) t->disk++, t->waited += info.miss_reason[0] != '\0';
            else t->other++;
        }
    return NULL;
}

static void test_hits_and_misses_add_up_under_threads(void **state) {
    (void)state;
    static const char *specs[GRAPHS] = {"softmax.json", "dropout.json", "global_norm.json"};
    for (int g = 0; g < GRAPHS; g++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, specs[g]);
        assert_int_equal(kc_graph_desc_load(&descs[g], p), KC_OK);
    }
    pthread_t th[THREADS];
    tally t[THREADS];
    memset(t, 0, sizeof t);
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, &t[i]), 0);
    int compiled = 0, disk = 0, waited = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(t[i].failed, 0);
        assert_int_equal(t[i].other, 0);
        compiled += t[i].compiled, disk += t[i].disk, waited += t[i].waited;
    }
    pthread_barrier_destroy(&start);
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    uint64_t lookups = (uint64_t)THREADS * ROUNDS * GRAPHS;
    assert_int_equal(compiled + disk, lookups);
    assert_int_equal(compiled, GRAPHS); /* single-flight: each graph compiled once */
    assert_int_equal(st.v[KC_STAT_COMPILES], GRAPHS);
    /* One outcome per lookup, the one its caller was told: each counter equals its tally. */
    assert_int_equal(st.v[KC_STAT_MISSES], compiled);
    assert_int_equal(st.v[KC_STAT_HITS], disk);
    assert_int_equal(st.v[KC_STAT_COMPILE_WAITS], waited);
    assert_int_equal(st.v[KC_STAT_MEMORY_HITS] + st.v[KC_STAT_REMOTE_HITS] + st.v[KC_STAT_BYPASSES], 0);
    kcc_latency_agrees(cache); /* each of those lookups one latency observation, under its outcome */
    for (int g = 0; g < GRAPHS; g++) kc_graph_desc_free(descs[g]);
}

static uint64_t origin_us(const kc_graph_info *info, const char *variant) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_cache_peek(cache, &k, variant, &e), KC_OK);
    char v[32];
    assert_int_equal(kc_entry_origin(e, "compile_wall_us", v, sizeof v), KC_OK);
    kc_entry_free(e);
    return strtoull(v, NULL, 10);
}

static kc_graph_desc *softmax_rows(int64_t r) {
    char p[512];
    snprintf(p, sizeof p, "%s/softmax.json", KC_KERNELS_DIR);
    kc_graph_desc *d, *s;
    assert_int_equal(kc_graph_desc_load(&d, p), KC_OK);
    kc_tensor_meta in = KC_TENSOR_META_INIT;
    in.dtype = KC_DTYPE_F32, in.device = KC_DEVICE_CUDA, in.requires_grad = 1, in.rank = 2;
    in.sizes[0].value = r, in.sizes[1].value = 300, in.strides[0].value = 300, in.strides[1].value = 1;
    assert_int_equal(kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL), KC_OK);
    kc_graph_desc_free(d);
    return s;
}

static void test_a_hit_reports_the_compile_time_it_saved(void **state) {
    (void)state;
    kc_graph_desc *a = softmax_rows(8), *b = softmax_rows(16);
    kc_graph_info i1 = KC_GRAPH_INFO_INIT, i2 = KC_GRAPH_INFO_INIT, i3 = KC_GRAPH_INFO_INIT, i4 = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, a, "sm_90", &i1), KC_OK);
    assert_int_equal(i1.source, KC_FROM_COMPILE);
    assert_true(i1.saved_ms == 0);
    uint64_t us = origin_us(&i1, "sm_90");
    assert_true(us > 0);
    assert_int_equal(us, (uint64_t)(i1.compile_ms * 1e3 + 0.5)); /* the compile's wall time, as it was measured */
    assert_int_equal(kc_graph_compile(cache, a, "sm_90", &i2), KC_OK);
    assert_int_equal(i2.source, KC_FROM_DISK);
    assert_true(i2.saved_ms == (double)us / 1e3);
    /* Another static shape from the stored unit: nothing compiled, so nothing recorded, nothing saved by its hits. */
    assert_int_equal(kc_graph_compile(cache, b, "sm_90", &i3), KC_OK);
    assert_int_equal(i3.units_compiled, 0);
    assert_int_equal(origin_us(&i3, "sm_90"), 0);
    assert_int_equal(kc_graph_compile(cache, b, "sm_90", &i4), KC_OK);
    assert_int_equal(i4.source, KC_FROM_DISK);
    assert_true(i4.saved_ms == 0);
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_COMPILE_US_SAVED], us); /* the one hit that avoided a compile */
    kc_graph_desc_free(a), kc_graph_desc_free(b);
}

/* Two units compiled in parallel record the compile's wall time, not the sum of their NVRTC times. */
static void test_parallel_units_record_wall_time(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "two_units"), KC_OK);
    static const char *const src[2] = {
        "extern \"C\" __global__ void ka(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = 1; }\n",
        "extern \"C\" __global__ void kb(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = 2; }\n"};
    static const char *const name[2] = {"ka", "kb"}, *const file[2] = {"a.cu", "b.cu"};
    for (int i = 0; i < 2; i++) {
        kc_kernel_src k = KC_KERNEL_SRC_INIT;
        k.file = file[i], k.source = src[i], k.name = name[i];
        assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    }
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, k, grid, block, NULL, args, 2), KC_OK);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(info.units_compiled, 2);
    assert_int_equal(origin_us(&info, "sm_90"), (uint64_t)(info.compile_ms * 1e3 + 0.5));
    kc_graph_desc_free(d);
}

/* An uncacheable graph is a bypass each time, never a miss (nor a hit). */
static void test_uncacheable_is_a_bypass_not_a_miss(void **state) {
    (void)state;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "dated"), KC_OK);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "t.cu", k.name = "k";
    k.source =
        "extern \"C\" __global__ void k(float *x, int n) { const char *t = __DATE__; if (n < 0) x[0] = t[0]; }\n";
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
        assert_int_equal(info.source, KC_FROM_BYPASS);
    }
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_BYPASSES], 2);
    assert_int_equal(st.v[KC_STAT_MISSES], 0);
    assert_int_equal(st.v[KC_STAT_HITS] + st.v[KC_STAT_COMPILES] + st.v[KC_STAT_COMPILE_US_SAVED], 0);
    kcc_latency_agrees(cache);
    kc_graph_desc_free(d);
}

static int setup(void **state) {
    (void)state;
    return kct_open_cache("counts", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hits_and_misses_add_up_under_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_hit_reports_the_compile_time_it_saved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parallel_units_record_wall_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncacheable_is_a_bypass_not_a_miss, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
