/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gc_age.c — kc_cache_gc_ext's age limit (kc_gc_options.older_than_s, `kcache gc
 * --older-than`): what was not used for longer goes, what was used since stays, a time in the
 * future is not judged by age, and the options' version is checked.
 */
#include "helpers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "kcache.h"

static kc_cache *open_at(const char *d) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("open %s: %s", d, kc_error_last()->message);
    return c;
}

/* Store entry i (no image: one object) and set its file's time `age_s` seconds back (negative: ahead). */
static void put_aged(kc_cache *c, const char *dir, int i, long age_s) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "i", (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_add_key_digests(e, kb), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "payload", 7), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
    kc_key_builder_free(kb);
    char hex[KC_KEY_HEX_LEN + 1], path[4096];
    kc_key_to_hex(&k, hex);
    snprintf(path, sizeof path, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
    struct timespec t[2] = {{time(NULL) - age_s, 0}, {time(NULL) - age_s, 0}};
    if (utimensat(AT_FDCWD, path, t, 0) != 0) fail_msg("utimensat %s", path);
}

static void test_older_than(void **state) {
    (void)state;
    char *dir = kct_tmpdir("gcage");
    kc_cache *c = open_at(dir);
    put_aged(c, dir, 1, 10 * 86400); /* unused for 10 days */
    put_aged(c, dir, 2, 9 * 86400);  /* 9 days */
    put_aged(c, dir, 3, 3600);       /* an hour */
    put_aged(c, dir, 4, -86400);     /* a day ahead: the clock stepped back; not judged by age */
    kc_gc_options o = KC_GC_OPTIONS_INIT;
    kc_gc_report r = KC_GC_REPORT_INIT;
    o.older_than_s = 14 * 86400; /* two weeks: nothing is that old */
    assert_int_equal(kc_cache_gc_ext(c, &o, &r), KC_OK);
    assert_int_equal(r.evicted, 0);
    assert_int_equal(kct_count_files(dir, ".kce"), 4);
    o.older_than_s = 7 * 86400;
    assert_int_equal(kc_cache_gc_ext(c, &o, &r), KC_OK);
    assert_int_equal(r.evicted, 2);
    assert_int_equal(r.entries_after, 2);
    assert_int_equal(kct_count_files(dir, ".kce"), 2);
    o.older_than_s = 0; /* no age limit: kc_cache_gc */
    assert_int_equal(kc_cache_gc_ext(c, &o, &r), KC_OK);
    assert_int_equal(r.evicted, 0);
    assert_int_equal(kc_cache_gc_ext(c, NULL, &r), KC_OK); /* NULL: the defaults */
    assert_int_equal(r.entries_after, 2);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

static void test_versions(void **state) {
    (void)state;
    char *dir = kct_tmpdir("gcage");
    kc_cache *c = open_at(dir);
    kc_gc_options o = KC_GC_OPTIONS_INIT;
    o.version = 0; /* never initialised */
    assert_int_equal(kc_cache_gc_ext(c, &o, NULL), KC_EVERSION);
    assert_non_null(strstr(kc_error_last()->message, "KC_GC_OPTIONS_INIT"));
    o.version = KC_GC_OPTIONS_VERSION + 1;
    assert_int_equal(kc_cache_gc_ext(c, &o, NULL), KC_EVERSION);
    assert_int_equal(kc_cache_gc_ext(NULL, NULL, NULL), KC_EINVAL);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_older_than),
        cmocka_unit_test(test_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
