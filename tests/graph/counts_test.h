/* SPDX-License-Identifier: Apache-2.0 */
/*
 * counts_test.h — what the lookup-counter tests share (test_counts_double.c, test_counts_remote.c):
 * a one-kernel graph whose kernel's body is the caller's, so that each test gets keys of its own;
 * and the check that the lookup latency histograms agree with the outcome counters (test_counts.c too).
 */
#ifndef KC_COUNTS_TEST_H
#define KC_COUNTS_TEST_H

/* After double/double_test.h (helpers.h, cmocka and kcache.h come with it). */
#include <stdio.h>

/* A graph `name` of one kernel k(float *x, int n) whose statement for thread i < n is `body`. */
static inline kc_graph_desc *kcc_small(const char *name, const char *body) {
    char src[512];
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) %s }\n", body);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, name), KC_OK);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "k.cu", k.source = src, k.name = "k";
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

/* Each lookup counted under an outcome is exactly one observation of its time (kcache/stats.h):
 * per outcome, the histogram's count equals its counter and its buckets sum to its count; and a
 * lookup that compiled took some time. */
static inline void kcc_latency_agrees(kc_cache *c) {
    kc_stats s;
    kc_latency lat = KC_LATENCY_INIT;
    assert_int_equal(kc_cache_stats(c, &s), KC_OK);
    assert_int_equal(kc_cache_latency(c, &lat), KC_OK);
    uint64_t total = 0;
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        uint64_t b = 0, want = s.v[kc_lookup_outcome_stat((kc_lookup_outcome)o)];
        for (int i = 0; i <= KC_LATENCY_BUCKETS; i++) b += lat.buckets[o][i];
        assert_int_equal(b, lat.count[o]);
        if (lat.count[o] != want)
            fail_msg("outcome %s: %llu observations, its counter %llu", kc_lookup_outcome_name((kc_lookup_outcome)o),
                     (unsigned long long)lat.count[o], (unsigned long long)want);
        total += lat.count[o];
    }
    assert_true(total > 0);
    if (lat.count[KC_LOOKUP_COMPILE]) assert_true(lat.sum_ns[KC_LOOKUP_COMPILE] > 0);
}

#endif
