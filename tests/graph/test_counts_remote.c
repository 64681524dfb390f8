/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_counts_remote.c (labels redis, driver-double) — a lookup served by the remote tier counts
 * remote_hits, never hits (the local directory's), and credits its entry's recorded wall-clock
 * compile time; the next lookup of the same graph, from the directory the remote hit filled, is a
 * disk hit.  Both front doors: kc_graph_compile and kc_graph_get (through the driver double).
 * Starts its own redis-server on a free loopback port; needs NVRTC, no GPU.
 */
#include "double/double_test.h"
#include "counts_test.h"
#include "redis_server.h"

static kct_redis r;

static kc_cache *open_at(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = r.url;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) fail_msg("open: %s", kc_error_last()->message);
    return c;
}


/* Compile `d` for sm_90 on a host of its own and publish it; the wall time its entry records. */
static uint64_t publish_from_elsewhere(kc_graph_desc *d) {
    char *da = kct_tmpdir("cntA");
    kc_cache *a = open_at(da);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(a, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info.key), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_cache_peek(a, &k, "sm_90", &e), KC_OK);
    char v[32];
    assert_int_equal(kc_entry_origin(e, "compile_wall_us", v, sizeof v), KC_OK);
    kc_entry_free(e);
    kc_cache_close(a);
    kct_rmtree(da);
    free(da);
    return strtoull(v, NULL, 10);
}

static void assert_outcome(kc_cache *c, uint64_t remote, uint64_t disk, uint64_t saved_us) {
    assert_int_equal(kcdt_stat(c, KC_STAT_REMOTE_HITS), remote);
    assert_int_equal(kcdt_stat(c, KC_STAT_HITS), disk);
    assert_int_equal(kcdt_stat(c, KC_STAT_MISSES), 0);
    assert_int_equal(kcdt_stat(c, KC_STAT_MEMORY_HITS), 0);
    assert_int_equal(kcdt_stat(c, KC_STAT_COMPILE_US_SAVED), saved_us);
}

static void test_compile_remote_hit_counts_remote(void **state) {
    (void)state;
    kc_graph_desc *d = kcc_small("remote_compile", "x[i] = 5;");
    uint64_t us = publish_from_elsewhere(d);
    char *db = kct_tmpdir("cntB");
    kc_cache *b = open_at(db);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(b, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    assert_true(info.saved_ms == (double)us / 1e3);
    assert_outcome(b, 1, 0, us);
    assert_int_equal(kc_graph_compile(b, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_outcome(b, 1, 1, 2 * us);
    kcc_latency_agrees(b);
    kc_cache_close(b);
    kct_rmtree(db);
    free(db);
    kc_graph_desc_free(d);
}

static void test_get_remote_hit_counts_remote(void **state) {
    (void)state;
    kc_graph_desc *d = kcc_small("remote_get", "x[i] = 6;");
    uint64_t us = publish_from_elsewhere(d);
    char *db = kct_tmpdir("cntG");
    kc_cache *b = open_at(db);
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_get(b, d, 0, &g, &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    assert_true(info.saved_ms == (double)us / 1e3);
    assert_outcome(b, 1, 0, us);
    kc_graph_release(g);
    kcdt_unload_all(); /* the next lookup reads the directory the remote hit filled */
    assert_int_equal(kc_graph_get(b, d, 0, &g, &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_outcome(b, 1, 1, 2 * us);
    kcc_latency_agrees(b);
    kc_graph_release(g);
    kcdt_unload_all();
    kcdt_no_defects();
    kc_cache_close(b);
    kct_rmtree(db);
    free(db);
    kc_graph_desc_free(d);
}

int main(void) {
    if (!kct_have_redis()) return KC_SKIP_CODE;
    if (kcd_set_devices("9.0") != 0 || kc_cuda_available() != KC_OK) {
        fprintf(stderr, "the driver double did not load: %s\n", kc_error_last()->message);
        return 1;
    }
    if (kct_redis_start(&r, 0) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_remote_hit_counts_remote),
        cmocka_unit_test(test_get_remote_hit_counts_remote),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kct_redis_stop(&r, SIGTERM);
    return rc;
}
