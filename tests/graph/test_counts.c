/*
 * test_counts.c — one outcome per lookup (issue 19): 8 threads looking three graphs up at once
 * in an empty cache, so that most of the first lookups wait for another thread's compile,
 * then hit; every lookup counts exactly one of hits or misses (a waiter is a miss, never a
 * miss and a hit), hits + misses = lookups, each graph is compiled once, and the waiters
 * are exactly the misses that did not compile.  Time saved: each entry records the NVRTC time its
 * units cost when first compiled (ORIGIN compile_us), a hit reports it (saved_ms) and stats add it
 * up (compile_us_saved); a new static shape built from stored units records the same.
 * Compile-only (NVRTC, no GPU).
 */
#include <pthread.h>

#include "kcache.h"
#include "helpers.h"

enum { THREADS = 8, ROUNDS = 6, GRAPHS = 3 };

static char *dir;
static kc_cache *cache;
static kc_graph_desc *descs[GRAPHS];
static pthread_barrier_t start;

typedef struct tally {
    int compiled, disk, other, failed;
} tally;

static void *worker(void *p) {
    tally *t = p;
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++)
        for (int g = 0; g < GRAPHS; g++) {
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            if (kc_graph_compile(cache, descs[(g + r) % GRAPHS], "sm_90", &info) != KC_OK) t->failed++;
            else if (info.source == KC_FROM_COMPILE) t->compiled++;
            else if (info.source == KC_FROM_DISK) t->disk++;
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
    int compiled = 0, disk = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(t[i].failed, 0);
        assert_int_equal(t[i].other, 0);
        compiled += t[i].compiled, disk += t[i].disk;
    }
    pthread_barrier_destroy(&start);
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    uint64_t lookups = (uint64_t)THREADS * ROUNDS * GRAPHS;
    assert_int_equal(compiled + disk, lookups);
    assert_int_equal(compiled, GRAPHS);                      /* single-flight: each graph compiled once */
    assert_int_equal(st.v[KC_STAT_COMPILES], GRAPHS);
    assert_int_equal(st.v[KC_STAT_HITS] + st.v[KC_STAT_MISSES], lookups); /* one outcome per lookup */
    /* A miss is a lookup that found nothing at its start: the compiles, and the waiters that then took
     * another's result (reported as from disk, counted a miss, not a hit). */
    assert_true(st.v[KC_STAT_MISSES] >= GRAPHS);
    assert_int_equal(st.v[KC_STAT_HITS], (uint64_t)disk - (st.v[KC_STAT_MISSES] - GRAPHS));
    for (int g = 0; g < GRAPHS; g++) kc_graph_desc_free(descs[g]);
}

static uint64_t origin_us(const kc_graph_info *info, const char *variant) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_cache_peek(cache, &k, variant, &e), KC_OK);
    char v[32];
    assert_int_equal(kc_entry_origin(e, "compile_us", v, sizeof v), KC_OK);
    kc_entry_free(e);
    return strtoull(v, NULL, 10);
}

static kc_graph_desc *softmax_rows(int64_t r) {
    char p[512];
    snprintf(p, sizeof p, "%s/softmax.json", KC_KERNELS_DIR);
    kc_graph_desc *d, *s;
    assert_int_equal(kc_graph_desc_load(&d, p), KC_OK);
    kc_tensor_meta in;
    memset(&in, 0, sizeof in);
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
    assert_true((double)us <= i1.compile_ms * 1e3 + 1000); /* NVRTC's own time, within the unit's wall time */
    assert_int_equal(kc_graph_compile(cache, a, "sm_90", &i2), KC_OK);
    assert_int_equal(i2.source, KC_FROM_DISK);
    assert_true(i2.saved_ms == (double)us / 1e3);
    /* Another static shape from the stored unit: nothing compiled, the same compile time recorded. */
    assert_int_equal(kc_graph_compile(cache, b, "sm_90", &i3), KC_OK);
    assert_int_equal(i3.units_compiled, 0);
    assert_int_equal(origin_us(&i3, "sm_90"), us);
    assert_int_equal(kc_graph_compile(cache, b, "sm_90", &i4), KC_OK);
    assert_true(i4.saved_ms == (double)us / 1e3);
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_COMPILE_US_SAVED], 2 * us); /* two hits */
    kc_graph_desc_free(a), kc_graph_desc_free(b);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
