/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unit_names.c — a stored compile unit answers only the name expressions whose lowering it
 * recorded ([Note: recorded names] in src/graph/unitstore.c), through the driver double (label
 * driver-double: what the loaded graph launches is the kernel the stored entry names).
 *
 * The `#define foo bar` sequence (unit_names_test.h): compiled fresh, `foo` is bar's kernel; after
 * another graph stored the source's unit for `bar`, a graph asking `foo` is still given _Z3barPf —
 * compiled, never completed from the image's symbols — and launches _Z3barPf; the record then holds
 * both names (the same image), so a graph asking both compiles nothing; under must-hit the graph
 * asking `foo` is refused with a reason that names `foo`, never served; a unit record stored before
 * the rule (its key without the records' version) is not read.  Needs NVRTC; no GPU.
 */
#include "common/internal.h"
#include "double/double_test.h"
#include "unit_names_test.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kcdt_setup("9.0", "unitnames", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *const FOO[] = {"foo"}, *const BAR[] = {"bar"}, *const BOTH[] = {"bar", "foo"};

static void compile_ok(kc_cache *c, kc_graph_desc *d, kc_graph_info *info) {
    if (kc_graph_compile(c, d, "sm_90", info) != KC_OK) fail_msg("%s", kc_error_last()->message);
}

/* Load `d` on the double's device, run its forward once: the symbol of the kernel it launched. */
static void expect_launched(kc_graph_desc *d, const char *want) {
    kc_graph *g;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_get(cache, d, 0, &g, &info)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kc_cuda_push(0), KC_OK);
    kc_tensor in = {NULL, KC_DTYPE_F32, 1, {16}, {1}}, out = {0};
    assert_int_equal(kc_cuda_malloc(&in.data, 64, NULL), KC_OK);
    kcd_reset();
    kc_saved *sv = NULL;
    if (kc_graph_forward(g, &in, 1, &out, 1, &sv, NULL, NULL)) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(kcd_launch_count(), 1);
    kcd_launch l;
    assert_int_equal(kcd_launch_get(0, &l), 0);
    if (strcmp(l.kernel, want) != 0) fail_msg("the graph launched '%s', not '%s'", l.kernel, want);
    kc_saved_free(sv, NULL);
    kc_tensor_release(&out, NULL, NULL);
    kc_cuda_free(in.data, NULL);
    kc_cuda_pop();
    kcdt_no_defects();
    kc_graph_release(g);
}

static uint64_t stat_of(kc_cache *c, kc_stat s) { return kcdt_stat(c, s); }

/* (1) Fresh: `foo` is bar's kernel, in the entry and at launch. */
static void test_a_fresh_compile_gives_foo_the_bar_kernel(void **state) {
    (void)state;
    kc_graph_desc *d = kcun_graph(dir, "gfoo", FOO, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    compile_ok(cache, d, &info);
    assert_int_equal(info.units_compiled, 1);
    kcun_expect_lowered(cache, &info, "foo", "_Z3barPf");
    expect_launched(d, "_Z3barPf");
    kc_graph_desc_free(d);
}

/* (2) After a graph asking `bar` stored the unit: `foo` is compiled (its record never recorded it),
 * and is bar's kernel; the record then holds both names of the same image. */
static void test_a_stored_unit_never_serves_a_name_it_did_not_record(void **state) {
    (void)state;
    kc_graph_desc *gb = kcun_graph(dir, "gbar", BAR, 1), *gf = kcun_graph(dir, "gfoo", FOO, 1),
                  *g2 = kcun_graph(dir, "gboth", BOTH, 2);
    kc_graph_info ib = KC_GRAPH_INFO_INIT, ifoo = KC_GRAPH_INFO_INIT, i2 = KC_GRAPH_INFO_INIT;
    compile_ok(cache, gb, &ib);
    assert_int_equal(ib.units_compiled, 1);
    kcun_expect_lowered(cache, &ib, "bar", "_Z3barPf");
    compile_ok(cache, gf, &ifoo);
    assert_int_equal(ifoo.units_compiled, 1); /* the record holds `bar` only: compiled */
    kcun_expect_lowered(cache, &ifoo, "foo", "_Z3barPf");
    expect_launched(gf, "_Z3barPf");
    assert_int_equal(kct_count_files(dir, ".unit.kce"), 1); /* one unit: its record stored again */
    assert_int_equal(kct_count_files(dir, ".img.kce"), 1);  /* the same bytes */
    /* Both names were recorded by compiles of those bytes: a graph asking both compiles nothing. */
    compile_ok(cache, g2, &i2);
    assert_int_equal(i2.units, 1);
    assert_int_equal(i2.units_compiled, 0);
    kcun_expect_lowered(cache, &i2, "foo", "_Z3barPf");
    kcun_expect_lowered(cache, &i2, "bar", "_Z3barPf");
    assert_int_equal(stat_of(cache, KC_STAT_UNIT_COMPILES), 2);
    kc_graph_desc_free(gb), kc_graph_desc_free(gf), kc_graph_desc_free(g2);
}

/* (4) Must-hit: the unit stored for `bar` does not make `foo` a hit; refused, naming `foo`. */
static void test_must_hit_refuses_a_name_the_record_lacks(void **state) {
    (void)state;
    kc_graph_desc *gb = kcun_graph(dir, "gbar", BAR, 1), *gf = kcun_graph(dir, "gfoo", FOO, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    compile_ok(cache, gb, &info);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_REQUIRE_HIT;
    kc_cache *must;
    assert_int_equal(kc_cache_open(&must, &o), KC_OK);
    uint64_t uc = stat_of(must, KC_STAT_UNIT_COMPILES), uh = stat_of(must, KC_STAT_UNIT_HITS); /* the folder's */
    assert_int_equal(kc_graph_compile(must, gf, "sm_90", &info), KC_ENOTCACHED);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "KCACHE_REQUIRE_HIT") || !strstr(m, "no lowering of 'foo'"))
        fail_msg("no reason naming 'foo': %s", m);
    assert_int_equal(stat_of(must, KC_STAT_UNIT_COMPILES), uc);
    assert_int_equal(stat_of(must, KC_STAT_UNIT_HITS), uh);
    assert_int_equal(kct_count_graphs(dir), 1); /* gbar's only: nothing stored for gfoo */
    kc_cache_close(must);
    /* A cache that may compile stores foo's lowering; then must-hit is served it. */
    compile_ok(cache, gf, &info);
    assert_int_equal(kc_cache_open(&must, &o), KC_OK);
    kc_graph_desc *gf2 = kcun_graph(dir, "gfoo2", FOO, 1); /* another graph: its unit from the record */
    compile_ok(must, gf2, &info);
    assert_int_equal(info.units_compiled, 0);
    kcun_expect_lowered(must, &info, "foo", "_Z3barPf");
    kc_cache_close(must);
    kc_graph_desc_free(gb), kc_graph_desc_free(gf), kc_graph_desc_free(gf2);
}

/* (5) A record stored before the rule — keyed without the records' version — holding foo's wrong
 * kernel (what the old lookup served) is never read: the unit compiles, foo is bar's kernel. */
static void test_a_record_stored_before_the_rule_is_not_served(void **state) {
    (void)state;
    kc_graph_desc *gb = kcun_graph(dir, "gbar", BAR, 1), *gf = kcun_graph(dir, "gfoo", FOO, 1);
    kc_graph_info ib = KC_GRAPH_INFO_INIT, info = KC_GRAPH_INFO_INIT;
    compile_ok(cache, gb, &ib);
    kcun_plant_old_record(cache, gf, &ib, "foo", "_Z3fooPf");
    uint64_t corrupt = stat_of(cache, KC_STAT_CORRUPT);
    compile_ok(cache, gf, &info);
    assert_int_equal(info.units_compiled, 1);
    kcun_expect_lowered(cache, &info, "foo", "_Z3barPf");
    assert_int_equal(stat_of(cache, KC_STAT_CORRUPT), corrupt); /* a miss, not a corrupt record */
    expect_launched(gf, "_Z3barPf");
    kc_graph_desc_free(gb), kc_graph_desc_free(gf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_fresh_compile_gives_foo_the_bar_kernel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_stored_unit_never_serves_a_name_it_did_not_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_must_hit_refuses_a_name_the_record_lacks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_record_stored_before_the_rule_is_not_served, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
