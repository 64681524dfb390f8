/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_test.h — the setup every test on the CUDA driver double repeats, written once: the
 * double's devices, the driver loaded through it, a scratch cache, a bundled spec loaded, the
 * double's defect record checked, a counter read, the loaded-graph table emptied.
 *
 * The one idea: a driver-double test (label driver-double; CMake's kc_use_driver_double points
 * KCACHE_CUDA_DRIVER at the double) differs from the next only in its devices and its cache's
 * tag, so those are the arguments and the rest is here, identical for every test.
 *
 * Who may include it: the tests linked with kcache_cuda_double (tests/graph/test_*_double.c,
 * tests/guard/test_site_spec.c), after <cmocka.h> (helpers.h brings it).  Each helper is static
 * inline, so a test that uses a few of them warns about none.  Must not: assert anything a test
 * proves (the tests' own assertions stay in the tests), nor start the driver unless asked (a test
 * that forks before its first driver call uses kcdt_setup_no_driver).
 */
#ifndef KCACHE_TESTS_DOUBLE_TEST_H
#define KCACHE_TESTS_DOUBLE_TEST_H

#include <stdio.h>

#include "double/cuda_double.h"
#include "kcache.h"
#include "helpers.h" /* after kcache.h: its cache helpers need kcache.h's types */

/**
 * A group setup's body without the driver: the double's devices (`devices`, as KCD_DEVICES:
 * "9.0", "9.0:132,9.0:114", …) and a scratch cache tagged `tag` in *dir / *cache (close both
 * with kct_close_cache).  0, or -1 when either fails.
 */
static inline int kcdt_setup_no_driver(const char *devices, const char *tag, char **dir, kc_cache **cache) {
    if (kcd_set_devices(devices) != 0) return -1;
    return kct_open_cache(tag, dir, cache);
}

/**
 * kcdt_setup_no_driver, and the driver loaded (kc_cuda_available) through the double before the
 * cache is opened; -1, with the reason on stderr, when the double did not load.
 */
static inline int kcdt_setup(const char *devices, const char *tag, char **dir, kc_cache **cache) {
    if (kcd_set_devices(devices) != 0) return -1;
    if (kc_cuda_available() != KC_OK) {
        fprintf(stderr, "the driver double did not load: %s\n", kc_error_last()->message);
        return -1;
    }
    return kct_open_cache(tag, dir, cache);
}

/** Fail the test when the double recorded a defect since its last reset (printing them). */
static inline void kcdt_no_defects(void) {
    char buf[4096];
    size_t n = kcd_defects(buf, sizeof buf);
    if (n) fail_msg("%zu defect(s):\n%s", n, buf);
}

/** A bundled spec (kernels/<spec>) as a description (the caller's: kc_graph_desc_free); fails the test if it does not load. */
static inline kc_graph_desc *kcdt_load(const char *spec) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, spec);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

/** One statistic of `cache`. */
static inline uint64_t kcdt_stat(kc_cache *cache, kc_stat s) {
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    return st.v[s];
}

/** Unload every released graph (the loaded table keeps nothing), then restore the default budget. */
static inline void kcdt_unload_all(void) {
    kc_graph_loaded_budget(0, 0);
    kc_graph_loaded_budget(512, (size_t)1 << 30);
}

/* The double's call log holds these needles in this order (else the log is printed and the test fails). */
static inline void kcdt_log_in_order(const char *const *needles, size_t n) {
    char *log = kcd_call_log();
    assert_non_null(log);
    const char *at = log;
    for (size_t i = 0; i < n; i++) {
        const char *hit = strstr(at, needles[i]);
        if (!hit) {
            ptrdiff_t pos = at - log;
            fprintf(stderr, "%s", log);
            free(log);
            fail_msg("'%s' is not in the log after position %td", needles[i], pos);
        }
        at = hit + strlen(needles[i]);
    }
    free(log);
}

/* Nothing the library made is still alive in the driver (modules, memory, streams, events, graphs): else
 * the test fails listing them, after `what` ("after the bundled graphs"). */
static inline void kcdt_no_leaks(const char *what) {
    char buf[4096];
    size_t n = kcd_leaks(buf, sizeof buf);
    if (n) fail_msg("%zu live object(s) in the driver %s:\n%s", n, what, buf);
}

#endif
