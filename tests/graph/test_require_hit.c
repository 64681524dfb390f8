/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_require_hit.c — must-hit mode (issue 20: KCACHE_REQUIRE_HIT=1, KC_OPEN_REQUIRE_HIT): a lookup
 * that would run NVRTC fails with its own status, KC_ENOTCACHED, naming the graph, the variant and
 * why it missed; nothing is compiled or written; it counts one miss and one compiles_refused.  A hit
 * still hits; a new static shape whose compile units are stored is built without a compiler and
 * allowed.  Compile-only (NVRTC), no GPU.
 */
#include <stdlib.h>

#include "kcache.h"
#include "helpers.h"

static char *dir;

static kc_cache *open_cache(int must_hit) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | (must_hit ? KC_OPEN_REQUIRE_HIT : 0);
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return c;
}

static kc_graph_desc *load(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, name);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

static uint64_t stat_of(kc_cache *c, kc_stat id) {
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    return st.v[id];
}

/* softmax with its symbols made static (R, C): another static shape of the same kernels. */
static kc_graph_desc *softmax_at(int64_t r) {
    kc_graph_desc *d = load("softmax.json"), *s;
    kc_tensor_meta in;
    memset(&in, 0, sizeof in);
    in.dtype = KC_DTYPE_F32;
    in.device = KC_DEVICE_CUDA;
    in.requires_grad = 1;
    in.rank = 2;
    in.sizes[0].value = r, in.sizes[1].value = 777;
    in.strides[0].value = 777, in.strides[1].value = 1;
    if (kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    return s;
}

static void test_a_miss_compiles_nothing_and_says_why(void **state) {
    (void)state;
    kc_cache *c = open_cache(1);
    kc_graph_desc *d = softmax_at(64);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(c, d, "sm_90", &info);
    assert_int_equal(rc, KC_ENOTCACHED);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "graph 'softmax'") || !strstr(m, "sm_90") || !strstr(m, "KCACHE_REQUIRE_HIT") ||
        !strstr(m, "no entry for sm_90"))
        fail_msg("the message does not name the graph, the variant and why: %s", m);
    assert_int_equal(kct_count_files(dir, ".kce"), 0); /* nothing compiled, nothing written */
    assert_int_equal(stat_of(c, KC_STAT_MISSES), 1);
    assert_int_equal(stat_of(c, KC_STAT_COMPILES_REFUSED), 1);
    assert_int_equal(stat_of(c, KC_STAT_UNIT_COMPILES), 0);
    assert_int_equal(stat_of(c, KC_STAT_COMPILES), 0);
    kc_cache_close(c);
    /* Compiled by a cache that may compile; then the must-hit cache hits it, and builds a new
     * static shape from the stored unit without a compiler. */
    c = open_cache(0);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    c = open_cache(1);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    kc_graph_desc *d2 = softmax_at(128);
    assert_int_equal(kc_graph_compile(c, d2, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(info.units_compiled, 0);
    /* Another target has no stored unit: refused again. */
    assert_int_equal(kc_graph_compile(c, d2, "sm_80", &info), KC_ENOTCACHED);
    assert_int_equal(stat_of(c, KC_STAT_COMPILES_REFUSED), 2);
    assert_string_equal(kc_status_str(KC_ENOTCACHED), "KC_ENOTCACHED");
    kc_cache_close(c);
    kc_graph_desc_free(d), kc_graph_desc_free(d2);
}

/* The environment sets it too. */
static void test_the_environment_sets_it(void **state) {
    (void)state;
    setenv("KCACHE_REQUIRE_HIT", "1", 1);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    unsetenv("KCACHE_REQUIRE_HIT");
    kc_graph_desc *d = load("dropout.json");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_ENOTCACHED);
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

KCT_TMPDIR_FIXTURE(dir, "requirehit")

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_miss_compiles_nothing_and_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_environment_sets_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
