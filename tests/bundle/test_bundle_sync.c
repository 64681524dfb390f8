/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_sync.c — an import is made durable by three syncs of the file system, whatever its
 * size ([Note: batched puts] in store/local.c), and each sync guards what follows it: the first
 * failing leaves nothing under a name, the second (after the images' renames) no unit record or
 * graph entry, the third an error that says the entries are written but not known durable.  No
 * temporary file is left by any of them; imported files keep mode 0400 ([Note: provenance]).
 */
#include <errno.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"
#include "store/two_level.h"

#define G 30 /* graphs in the bundle: 90 objects */

static char bundle[4200];

static int setup(void **state) {
    (void)state;
    char *d;
    kc_cache *c;
    assert_int_equal(kct_open_cache("bsync-src", &d, &c), KC_OK);
    for (int i = 0; i < G; i++) {
        kc_image_ref ref;
        tl_image(c, 7 + i, 2000, "sm_90", &ref);
        kc_key gk = kct_key("graph", i), uk = kct_key("unit", i);
        tl_unit(c, &uk, &ref);
        tl_graph(c, &gk, &ref, 1);
    }
    snprintf(bundle, sizeof bundle, "/tmp/kctest-bsync-%d.kcb", (int)getpid());
    assert_int_equal(kc_bundle_export(c, bundle, NULL, NULL), KC_OK);
    kct_close_cache(d, c);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(bundle);
    return 0;
}

/* Import into a fresh cache with the nth sync (fsync or syncfs) failing; the files it leaves. */
static int import_failing_sync(long nth, size_t *images, size_t *referrers, size_t *temps, long *faults) {
    char *d;
    kc_cache *c;
    assert_int_equal(kct_open_cache("bsync", &d, &c), KC_OK);
    kc_fs_fault_clear();
    long before = kc_fs_fault_count();
    kc_fs_fault_set(KC_FS_FSYNC, nth, EIO, false);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    int rc = kc_bundle_import(c, bundle, 0, &r);
    kc_fs_fault_clear();
    *faults = kc_fs_fault_count() - before;
    *images = kct_count_files(d, ".img.kce");
    *referrers = kct_count_files(d, ".kce") - *images;
    *temps = kct_count_files(d, ".tmp.");
    if (rc == KC_OK) {
        assert_int_equal(r.written, 3 * G);
        char p[4200];
        kc_key gk = kct_key("graph", 0);
        tl_path(d, &gk, "sm_90", p, sizeof p);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0400); /* [Note: provenance] */
    }
    kct_close_cache(d, c);
    return rc;
}

/* 90 objects, three syncs: a fault armed for the 4th is never reached (one fsync per file and
 * folder reached it at the second object). */
static void test_three_syncs_whatever_the_size(void **state) {
    (void)state;
    size_t img, ref, tmp;
    long faults;
    assert_int_equal(import_failing_sync(4, &img, &ref, &tmp, &faults), KC_OK);
    assert_int_equal(faults, 0);
    assert_int_equal(img, G);
    assert_int_equal(ref, 2 * G);
    assert_int_equal(tmp, 0);
}

/* Each sync guards what follows it. */
static void test_each_sync_guards_the_next_renames(void **state) {
    (void)state;
    size_t img, ref, tmp;
    long faults;
    /* The temporaries' bytes are not durable: nothing is renamed. */
    assert_int_not_equal(import_failing_sync(1, &img, &ref, &tmp, &faults), KC_OK);
    assert_int_equal(faults, 1);
    assert_int_equal(img + ref + tmp, 0);
    /* The images' names are not durable: no referrer is renamed. */
    assert_int_not_equal(import_failing_sync(2, &img, &ref, &tmp, &faults), KC_OK);
    assert_int_equal(faults, 1);
    assert_int_equal(img, G);
    assert_int_equal(ref + tmp, 0);
    /* The last: all written, and the error says they may not be durable. */
    assert_int_not_equal(import_failing_sync(3, &img, &ref, &tmp, &faults), KC_OK);
    assert_int_equal(faults, 1);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "not known to be durable")) fail_msg("the message does not say so: %s", m);
    assert_int_equal(img, G);
    assert_int_equal(ref, 2 * G);
    assert_int_equal(tmp, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_syncs_whatever_the_size),
        cmocka_unit_test(test_each_sync_guards_the_next_renames),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
