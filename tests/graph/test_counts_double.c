/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_counts_double.c (labels driver-double, concurrency) — kc_graph_get's counters equal what
 * each caller was told, through the CUDA driver double (real NVRTC, small kernels, loads by the
 * double).  8 threads look two graphs up at once on a cold cache, many times each: every lookup
 * records the source it was told (memory, disk — and whether it took another's compile, which
 * miss_reason says —, compile), and the counters equal those tallies outcome by outcome, not
 * only in sum; the time saved equals what the callers were told (saved_ms), memory hits and
 * waits telling 0.  Then, deterministic: a disk hit saves its entry's recorded wall-clock compile
 * time, a memory hit of the same graph saves nothing; an uncacheable graph is a bypass each time,
 * never a miss.
 */
#include <pthread.h>

#include "double/double_test.h"
#include "counts_test.h"

enum { THREADS = 8, ROUNDS = 10, GRAPHS = 2 };

static char *dir;
static kc_cache *cache;
static kc_graph_desc *descs[GRAPHS];
static pthread_barrier_t start;

typedef struct tally {
    int memory, disk, waited, compiled, other, failed;
    double saved_ms, memory_saved_ms, waited_saved_ms;
} tally;

static void *worker(void *p) {
    tally *t = p;
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS; r++)
        for (int g = 0; g < GRAPHS; g++) {
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            kc_graph *gr = NULL;
            if (kc_graph_get(cache, descs[(g + r) % GRAPHS], 0, &gr, &info) != KC_OK) {
                t->failed++;
                continue;
            }
            t->saved_ms += info.saved_ms;
            if (info.source == KC_FROM_MEMORY) t->memory++, t->memory_saved_ms += info.saved_ms;
            else if (info.source == KC_FROM_COMPILE) t->compiled++;
            else if (info.source == KC_FROM_DISK && info.miss_reason[0])
                t->waited++, t->waited_saved_ms += info.saved_ms;
            else if (info.source == KC_FROM_DISK) t->disk++;
            else t->other++;
            kc_graph_release(gr);
        }
    return NULL;
}

static void test_counters_equal_what_callers_were_told(void **state) {
    (void)state;
    descs[0] = kcc_small("small_a", "x[i] = 1;");
    descs[1] = kcc_small("small_b", "x[i] = 2;");
    pthread_t th[THREADS];
    tally t[THREADS], sum;
    memset(t, 0, sizeof t);
    memset(&sum, 0, sizeof sum);
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, worker, &t[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        sum.memory += t[i].memory, sum.disk += t[i].disk, sum.waited += t[i].waited, sum.compiled += t[i].compiled;
        sum.other += t[i].other, sum.failed += t[i].failed, sum.saved_ms += t[i].saved_ms;
        sum.memory_saved_ms += t[i].memory_saved_ms, sum.waited_saved_ms += t[i].waited_saved_ms;
    }
    pthread_barrier_destroy(&start);
    if (sum.failed) fail_msg("%d lookups failed: %s", sum.failed, kc_error_last()->message);
    assert_int_equal(sum.other, 0);
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    fprintf(stderr,
            "told: compile %d, disk %d (waited %d), memory %d; counted: misses %llu, hits %llu (waits %llu), "
            "memory_hits %llu\n",
            sum.compiled, sum.disk + sum.waited, sum.waited, sum.memory, (unsigned long long)st.v[KC_STAT_MISSES],
            (unsigned long long)st.v[KC_STAT_HITS], (unsigned long long)st.v[KC_STAT_COMPILE_WAITS],
            (unsigned long long)st.v[KC_STAT_MEMORY_HITS]);
    assert_int_equal(sum.compiled + sum.disk + sum.waited + sum.memory, THREADS * ROUNDS * GRAPHS);
    assert_int_equal(sum.compiled, GRAPHS); /* single-flight */
    /* Outcome by outcome. */
    assert_int_equal(st.v[KC_STAT_MISSES], sum.compiled);
    assert_int_equal(st.v[KC_STAT_COMPILES], sum.compiled);
    assert_int_equal(st.v[KC_STAT_HITS], sum.disk + sum.waited);
    assert_int_equal(st.v[KC_STAT_COMPILE_WAITS], sum.waited);
    assert_int_equal(st.v[KC_STAT_MEMORY_HITS], sum.memory);
    assert_int_equal(st.v[KC_STAT_REMOTE_HITS] + st.v[KC_STAT_BYPASSES], 0);
    /* Time saved: what the callers were told, nothing for memory hits or waits. */
    assert_true(sum.memory_saved_ms == 0);
    assert_true(sum.waited_saved_ms == 0);
    double counted_ms = (double)st.v[KC_STAT_COMPILE_US_SAVED] / 1e3;
    if (counted_ms < sum.saved_ms - 0.01 || counted_ms > sum.saved_ms + 0.01)
        fail_msg("compile_us_saved %.3f ms, the callers were told %.3f ms", counted_ms, sum.saved_ms);
    kcdt_no_defects();
    kcc_latency_agrees(cache); /* each lookup one latency observation, under its outcome */
    for (int g = 0; g < GRAPHS; g++) kc_graph_desc_free(descs[g]);
    kcdt_unload_all();
}

/* The wall-clock compile time an entry records (ORIGIN compile_wall_us). */
static uint64_t wall_us(const kc_graph_info *info) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_cache_peek(cache, &k, info->variant, &e), KC_OK);
    char v[32];
    assert_int_equal(kc_entry_origin(e, "compile_wall_us", v, sizeof v), KC_OK);
    kc_entry_free(e);
    return strtoull(v, NULL, 10);
}

static void test_disk_hit_saves_wall_time_memory_hit_nothing(void **state) {
    (void)state;
    kc_graph_desc *d = kcc_small("small_c", "x[i] = 3;");
    kc_graph *g1, *g2, *g3;
    kc_graph_info i1 = KC_GRAPH_INFO_INIT, i2 = KC_GRAPH_INFO_INIT, i3 = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_get(cache, d, 0, &g1, &i1), KC_OK);
    assert_int_equal(i1.source, KC_FROM_COMPILE);
    assert_true(i1.saved_ms == 0);
    uint64_t us = wall_us(&i1);
    assert_true(us > 0);
    kc_graph_release(g1);
    kcdt_unload_all(); /* the next lookup reads the directory */
    assert_int_equal(kc_graph_get(cache, d, 0, &g2, &i2), KC_OK);
    assert_int_equal(i2.source, KC_FROM_DISK);
    assert_true(i2.saved_ms == (double)us / 1e3);
    assert_int_equal(kc_graph_get(cache, d, 0, &g3, &i3), KC_OK);
    assert_int_equal(i3.source, KC_FROM_MEMORY);
    assert_true(i3.saved_ms == 0);
    assert_int_equal(kcdt_stat(cache, KC_STAT_COMPILE_US_SAVED), us);
    assert_int_equal(kcdt_stat(cache, KC_STAT_HITS), 1);
    assert_int_equal(kcdt_stat(cache, KC_STAT_MEMORY_HITS), 1);
    assert_int_equal(kcdt_stat(cache, KC_STAT_MISSES), 1);
    kcc_latency_agrees(cache);
    kc_graph_release(g2), kc_graph_release(g3);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

static void test_uncacheable_get_is_a_bypass_not_a_miss(void **state) {
    (void)state;
    kc_graph_desc *d = kcc_small("dated", "{ const char *t = __DATE__; x[i] = t[0]; }");
    for (int i = 0; i < 2; i++) {
        kc_graph *g;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        assert_int_equal(kc_graph_get(cache, d, 0, &g, &info), KC_OK);
        assert_int_equal(info.source, KC_FROM_BYPASS);
        kc_graph_release(g);
    }
    assert_int_equal(kcdt_stat(cache, KC_STAT_BYPASSES), 2);
    assert_int_equal(kcdt_stat(cache, KC_STAT_MISSES), 0);
    assert_int_equal(kcdt_stat(cache, KC_STAT_HITS) + kcdt_stat(cache, KC_STAT_MEMORY_HITS), 0);
    kcc_latency_agrees(cache);
    kc_graph_desc_free(d);
    kcdt_unload_all();
}

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0", "counts_double", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counters_equal_what_callers_were_told, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_hit_saves_wall_time_memory_hit_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uncacheable_get_is_a_bypass_not_a_miss, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
