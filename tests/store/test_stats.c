/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stats.c — the statistics' one table (KC_STAT_TABLE in kcache/stats.h): every id has a
 * name, a kind and a sentence, names are unique and found again by name; `--zero` resets what
 * the table says counts events (counters, microseconds), never a gauge or bytes; and a shard
 * stats file written in the layout every earlier version wrote (KCSTATS1, 32 slots, 28 of them
 * used) still reads, counter by counter, a slot this version does not know is ignored.
 */
#include "helpers.h"

#include <ctype.h>
#include <xxhash.h>

#include "common/internal.h"
#include "kcache.h"
#include "store/local.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("stats");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(dir);
    free(dir);
    return 0;
}

static void test_every_row_is_whole(void **state) {
    (void)state;
    for (int i = 0; i < KC_STAT_COUNT; i++) {
        kc_stat id = (kc_stat)i;
        const char *n = kc_stat_name(id), *doc = kc_stat_doc(id);
        assert_non_null(n);
        assert_non_null(doc);
        assert_true(strlen(n) > 0 && strlen(doc) > 10);
        for (const char *p = n; *p; p++) assert_true(islower((unsigned char)*p) || *p == '_');
        assert_non_null(kc_stat_kind_name(kc_stat_kind_of(id)));
        kc_stat back;
        assert_int_equal(kc_stat_from_name(n, &back), KC_OK);
        assert_int_equal(back, id); /* unique: the first of that name is this one */
    }
    /* The ids are the stats file's slots: fixed. */
    assert_string_equal(kc_stat_name(KC_STAT_HITS), "hits");
    assert_string_equal(kc_stat_name(KC_STAT_COMPILE_US_SAVED), "compile_us_saved");
    assert_string_equal(kc_stat_name(KC_STAT_PUBLISH_REFUSED), "publish_refused");
    assert_string_equal(kc_stat_name(KC_STAT_COMPILE_WAITS), "compile_waits");
    assert_int_equal(KC_STAT_PUBLISH_REFUSED, 27);
    assert_int_equal(kc_stat_kind_of(KC_STAT_BYTES), KC_STAT_KIND_BYTES);
    assert_int_equal(kc_stat_kind_of(KC_STAT_ENTRIES), KC_STAT_KIND_GAUGE);
    assert_int_equal(kc_stat_kind_of(KC_STAT_COMPILE_US_SAVED), KC_STAT_KIND_MICROSECONDS);
    assert_int_equal(kc_stat_kind_of(KC_STAT_MISSES), KC_STAT_KIND_COUNTER);
    assert_string_equal(kc_stat_kind_name(KC_STAT_KIND_MICROSECONDS), "microseconds");
    /* Out of range, unknown names. */
    assert_null(kc_stat_name(KC_STAT_COUNT));
    assert_null(kc_stat_doc((kc_stat)-1));
    assert_null(kc_stat_kind_name((kc_stat_kind)9));
    assert_int_equal(kc_stat_from_name("no_such_stat", NULL), KC_EINVAL);
    assert_int_equal(kc_stat_from_name(NULL, NULL), KC_EINVAL);
}

static void test_zero_resets_events_only(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    for (int i = 0; i < KC_STAT_COUNT; i++) kc_local_count(l, 5, (kc_stat)i, 3);
    kc_local_flush(l);
    assert_int_equal(kc_local_stats_zero(l), KC_OK);
    kc_stats s;
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    for (int i = 0; i < KC_STAT_COUNT; i++) {
        kc_stat_kind k = kc_stat_kind_of((kc_stat)i);
        uint64_t want = k == KC_STAT_KIND_GAUGE || k == KC_STAT_KIND_BYTES ? 3 : 0;
        if (s.v[i] != want)
            fail_msg("%s (%s): %llu after --zero, want %llu", kc_stat_name((kc_stat)i), kc_stat_kind_name(k),
                     (unsigned long long)s.v[i], (unsigned long long)want);
    }
    kc_local_free(l);
}

/* A shard stats file as every version since the format began writes it: KCSTATS1, 32 slots, a checksum. */
static void write_old_file(const char *shard, const uint64_t v[32]) {
    char p[600];
    snprintf(p, sizeof p, "%s/v1/%s", dir, shard);
    mkdir(p, 0700);
    uint8_t b[8 + 4 + 4 + 8 * 32 + 8];
    memcpy(b, "KCSTATS1", 8);
    kc_wr_u32(b + 8, 32);
    kc_wr_u32(b + 12, 0);
    for (int i = 0; i < 32; i++) kc_wr_u64(b + 16 + 8 * i, v[i]);
    kc_wr_u64(b + sizeof b - 8, XXH3_64bits(b, sizeof b - 8));
    snprintf(p, sizeof p, "%s/v1/%s/stats", dir, shard);
    assert_int_equal(kct_write(p, b, sizeof b), 0);
}

static void test_an_old_stats_file_still_reads(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK); /* makes v1/ */
    kc_local_free(l);
    uint64_t v[32] = {0};
    for (int i = 0; i < 28; i++) v[i] = 100 + (uint64_t)i; /* the 28 counters of the version before compile_waits */
    v[31] = 7;                                             /* a slot no version here knows */
    write_old_file("2a", v);
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    kc_stats s;
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    for (int i = 0; i < 28; i++) assert_int_equal(s.v[i], 100 + (uint64_t)i);
    assert_int_equal(s.v[KC_STAT_COMPILE_WAITS], 0);
    kc_local_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row_is_whole),
        cmocka_unit_test_setup_teardown(test_zero_resets_events_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_old_stats_file_still_reads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
