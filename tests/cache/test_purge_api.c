/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_purge_api.c — kc_cache_purge's arguments from the API (the CLI bounds its own): an age past what a
 * 64-bit nanosecond clock holds chooses nothing (no object is that old), never a wrapped time that chooses
 * everything; a struct of version 0 is refused with the message that says how to initialise it.
 */
#include "kcache.h"

#include "helpers.h"

/* A cache holding one compiled graph (sm_90; NVRTC real). */
static kc_cache *filled(char **dir) {
    kc_cache *c = NULL;
    assert_int_equal(kct_open_cache("purgeapi", dir, &c), KC_OK);
    kc_graph_desc *d = kct_graph("softmax.json", 0x9e3779b97f4a7c15ull);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(c, d, "sm_90", &info);
    kc_graph_desc_free(d);
    if (rc == KC_ENONVRTC) skip();
    assert_int_equal(rc, KC_OK);
    return c;
}

static uint64_t dry_run_older_than(kc_cache *c, uint64_t s) {
    kc_purge_options o = KC_PURGE_OPTIONS_INIT;
    kc_purge_report r = KC_PURGE_REPORT_INIT;
    o.older_than_s = s, o.dry_run = 1;
    assert_int_equal(kc_cache_purge(c, &o, &r), KC_OK);
    return r.matched;
}

static void test_huge_age_chooses_nothing(void **state) {
    (void)state;
    char *dir;
    kc_cache *c = filled(&dir);
    assert_true(dry_run_older_than(c, 15000000000ull) == 0); /* 475 years: its nanoseconds wrap an int64 */
    assert_true(dry_run_older_than(c, 9300000000ull) == 0);
    assert_true(dry_run_older_than(c, UINT64_MAX) == 0);
    assert_true(dry_run_older_than(c, 366ull * 86400 * 100) == 0); /* a century: no wrap, nothing that old */
    kct_close_cache(dir, c);
}

static void test_version_zero(void **state) {
    (void)state;
    char *dir;
    kc_cache *c = NULL;
    assert_int_equal(kct_open_cache("purgever", &dir, &c), KC_OK);
    kc_purge_options o = KC_PURGE_OPTIONS_INIT;
    kc_purge_report r = KC_PURGE_REPORT_INIT;
    o.key = "0123456789abcdef", o.dry_run = 1;
    assert_int_equal(kc_cache_purge(c, &o, &r), KC_OK);
    o.version = 0;
    assert_int_equal(kc_cache_purge(c, &o, &r), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_PURGE_OPTIONS_INIT"));
    o.version = KC_PURGE_VERSION, r.version = 0;
    assert_int_equal(kc_cache_purge(c, &o, &r), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_PURGE_REPORT_INIT"));
    r.version = KC_PURGE_VERSION + 1;
    assert_int_equal(kc_cache_purge(c, &o, &r), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "newer"));
    kct_close_cache(dir, c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_age_chooses_nothing),
        cmocka_unit_test(test_version_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
