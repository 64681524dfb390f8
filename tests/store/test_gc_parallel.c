/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gc_parallel.c — a gc whose removals run on several threads ([Note: parallel removals] in
 * store/local_gc.c) removes what the serial gc removed: the least recently used in order, every
 * orphan and dangling referrer and nothing in use, with exact counts; a removal that fails is made
 * up by the next victim, and removals that all fail are an error with nothing counted evicted.
 * Stores big enough that the removals are parallel (over PAR_MIN); run under TSan by CI's
 * concurrency label.
 */
#include <errno.h>
#include <fcntl.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"
#include "store/two_level.h"

#define N 600 /* entries of one size, entry i used i seconds after entry i+1 */

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "gcpar")

static kc_cache *open_dir(void) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    return c;
}

/* N entries of one size, entry i aged 100 + i seconds; the size of one. */
static uint64_t fill(kc_cache *c) {
    uint8_t payload[300];
    memset(payload, 7, sizeof payload);
    time_t base = time(NULL);
    for (int i = 0; i < N; i++) {
        kc_key k = kct_key("lru", i);
        kc_entry *e;
        assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, payload, sizeof payload), KC_OK);
        assert_int_equal(kc_cache_put(c, e), KC_OK);
        kc_entry_free(e);
        char p[1024];
        tl_path(dir, &k, "sm_90", p, sizeof p);
        struct timespec ts[2] = {{base - 100 - i, 0}, {base - 100 - i, 0}}; /* one clock for all: no ties */
        assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    }
    uint64_t files, bytes;
    tl_count(dir, &files, &bytes);
    assert_int_equal(files, N);
    return bytes / N;
}

static void test_lru_order_kept(void **state) {
    (void)state;
    kc_cache *c = open_dir();
    uint64_t one = fill(c);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, one * (N / 3), &r), KC_OK); /* keep the newest third */
    assert_int_equal(r.evicted, N - N / 3);
    for (int i = 0; i < N; i++) {
        kc_key k = kct_key("lru", i);
        if (tl_exists(dir, &k, "sm_90") != (i < N / 3))
            fail_msg("entry %d (age %d s) %s", i, 100 + i, i < N / 3 ? "evicted" : "kept");
    }
    tl_assert_counts_exact(c, dir);
    assert_int_equal(kct_stat(c, KC_STAT_EVICTIONS), N - N / 3);
    kc_cache_close(c);
}

/* One unlink fails: the next least recently used goes instead, and the gc still reaches its target. */
static void test_failed_removal_made_up(void **state) {
    (void)state;
    kc_cache *c = open_dir();
    uint64_t one = fill(c);
    kc_gc_report r = KC_GC_REPORT_INIT;
    kc_fs_fault_set(KC_FS_UNLINK, 5, EIO, false);
    int rc = kc_cache_gc(c, one * (N / 2), &r);
    kc_fs_fault_clear();
    assert_int_equal(rc, KC_OK);
    assert_int_equal(r.evicted, N / 2);
    assert_int_equal(r.entries_after, N / 2);
    uint64_t files, bytes;
    tl_count(dir, &files, &bytes);
    assert_int_equal(files, N / 2);
    int kept_old = 0;
    for (int i = N / 2; i < N; i++) {
        kc_key k = kct_key("lru", i);
        kept_old += tl_exists(dir, &k, "sm_90");
    }
    assert_int_equal(kept_old, 1); /* the one whose removal failed; the newest-but-one half lost one instead */
    tl_assert_counts_exact(c, dir);
    /* Every removal failing: an error naming the first, nothing counted evicted, counts exact. */
    kc_fs_fault_set(KC_FS_UNLINK, 1, EIO, true);
    rc = kc_cache_gc(c, one * 10, &r);
    kc_fs_fault_clear();
    assert_int_equal(rc, KC_EIO);
    assert_int_equal(r.evicted, 0);
    tl_assert_counts_exact(c, dir);
    kc_cache_close(c);
}

/* Orphans and dangling referrers by the hundred are swept; what is in use stays. */
static void test_sweep_many(void **state) {
    (void)state;
    kc_cache *c = open_dir();
    enum { M = 150 };
    kc_image_ref kept[M];
    for (int i = 0; i < M; i++) {
        kc_image_ref orphan, gone;
        tl_image(c, 1000 + i, 200, "sm_90", &kept[i]);
        tl_image(c, 2000 + i, 200, "sm_90", &orphan);
        tl_image(c, 3000 + i, 200, "sm_90", &gone);
        kc_key g = kct_key("live", i), d = kct_key("dangling", i), u = kct_key("unit", i);
        tl_graph(c, &g, &kept[i], 1);
        tl_unit(c, &u, &kept[i]);
        tl_graph(c, &d, &gone, 1);
        char p[1024];
        tl_path(dir, &gone.id, KC_VARIANT_IMAGE, p, sizeof p);
        assert_int_equal(unlink(p), 0);
        tl_age(dir, &orphan.id, KC_VARIANT_IMAGE, 7200); /* past the grace */
        tl_age(dir, &kept[i].id, KC_VARIANT_IMAGE, 7200);
    }
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, 0, &r), KC_OK);
    assert_int_equal(r.orphans_removed, M);
    assert_int_equal(r.dangling_removed, M);
    assert_int_equal(r.evicted, 0);
    for (int i = 0; i < M; i++) {
        kc_key g = kct_key("live", i), d = kct_key("dangling", i), u = kct_key("unit", i);
        assert_true(tl_exists(dir, &g, "sm_90") && tl_exists(dir, &u, KC_VARIANT_UNIT));
        assert_true(tl_exists(dir, &kept[i].id, KC_VARIANT_IMAGE));
        assert_false(tl_exists(dir, &d, "sm_90"));
    }
    uint64_t files, bytes;
    tl_count(dir, &files, &bytes);
    assert_int_equal(files, 3 * M);
    tl_assert_counts_exact(c, dir);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lru_order_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_removal_made_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_many, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
