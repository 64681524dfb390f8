/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unit_names_remote.c — across hosts through a real Redis, a stored compile unit answers only
 * the name expressions whose lowering it recorded ([Note: recorded names] in src/graph/unitstore.c).
 *
 * The `#define foo bar` sequence (unit_names_test.h), each host its own cache folder on one Redis:
 * host A compiles a graph asking `bar` and also publishes a unit record as the code before the rule
 * keyed it, holding foo's wrong kernel; host C, must-hit, asking `foo` is refused with a reason that
 * names `foo` (served neither record); host D compiles `foo` and gets bar's kernel; host E, must-hit,
 * then builds a graph asking both names from D's record (A's `bar` and D's `foo`, one image),
 * compiling nothing.  Starts its own
 * redis-server on a free loopback port; needs NVRTC (compile-only), no GPU.
 */
#include <hiredis/hiredis.h>

#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"
#include "unit_names_test.h"

static kct_redis r;

static kc_cache *host(const char *dir, int must_hit) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | (must_hit ? KC_OPEN_REQUIRE_HIT : 0);
    o.remote = r.url;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

static uint64_t stat_of(kc_cache *c, kc_stat id) {
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    return st.v[id];
}

static const char *const FOO[] = {"foo"}, *const BAR[] = {"bar"}, *const BOTH[] = {"bar", "foo"};

static void test_no_host_is_served_a_lowering_that_was_not_recorded(void **state) {
    (void)state;
    char *da = kct_tmpdir("unA"), *dc = kct_tmpdir("unC"), *dd = kct_tmpdir("unD"), *de = kct_tmpdir("unE");
    kc_cache *a = host(da, 0);
    kc_graph_desc *gb = kcun_graph(da, "gbar", BAR, 1), *gf = kcun_graph(da, "gfoo", FOO, 1),
                  *g2 = kcun_graph(da, "gboth", BOTH, 2);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(a, gb, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.units_compiled, 1);
    kcun_plant_old_record(a, gf, &info, "foo", "_Z3fooPf"); /* on A and on the remote */

    /* C, must-hit: neither bar's record nor the old one answers `foo`. */
    kc_cache *c = host(dc, 1);
    uint64_t uh = stat_of(c, KC_STAT_UNIT_HITS);
    assert_int_equal(kc_graph_compile(c, gf, "sm_90", &info), KC_ENOTCACHED);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "KCACHE_REQUIRE_HIT") || !strstr(m, "no lowering of 'foo'"))
        fail_msg("no reason naming 'foo': %s", m);
    assert_int_equal(kct_count_graphs(dc), 0);
    assert_int_equal(stat_of(c, KC_STAT_UNIT_HITS), uh);

    /* D compiles `foo`: bar's kernel. */
    kc_cache *d = host(dd, 0);
    if (kc_graph_compile(d, gf, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.units_compiled, 1);
    kcun_expect_lowered(d, &info, "foo", "_Z3barPf");

    /* E, must-hit: a graph asking both names is built from D's record, which holds A's `bar` and
     * its own `foo` (the same image: D kept A's record to store both). */
    kc_cache *e = host(de, 1);
    if (kc_graph_compile(e, g2, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.units_compiled, 0);
    kcun_expect_lowered(e, &info, "foo", "_Z3barPf");
    kcun_expect_lowered(e, &info, "bar", "_Z3barPf");

    kc_graph_desc_free(gb), kc_graph_desc_free(gf), kc_graph_desc_free(g2);
    kc_cache_close(a), kc_cache_close(c), kc_cache_close(d), kc_cache_close(e);
    kct_rmtree(da), kct_rmtree(dc), kct_rmtree(dd), kct_rmtree(de);
    free(da), free(dc), free(dd), free(de);
}

int main(void) {
    if (!kct_have_redis()) return KC_SKIP_CODE;
    if (kct_redis_start(&r, 0) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_host_is_served_a_lowering_that_was_not_recorded),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kct_redis_stop(&r, SIGTERM);
    return rc;
}
