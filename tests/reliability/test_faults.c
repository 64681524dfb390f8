/*
 * test_faults.c — injected file-system and allocation faults at the cache's boundary.
 * For put: each of open, write, fsync and rename fails with EIO, ENOSPC, EACCES and EROFS,
 * at call N = 1, 2, … until the put completes, once as a single failure and once failing
 * every call from N on.  After each: the error is reported, the earlier entry is intact,
 * no temporary file is left, verify is clean.  For get: a failing open or read is a miss,
 * never an error, and quarantines nothing.  Under ASan, LeakSanitizer checks each path.
 */
#include <errno.h>

#include "common/fs.h"
#include "common/internal.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("faults", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    kc_fs_fault_clear();
    kc_alloc_fail_at(0, false);
    return kct_close_cache(dir, cache);
}

static kc_entry *entry(const char *payload) {
    kc_key k = {{1, 2, 3}};
    kc_entry *e;
    kc_entry_new(&e, &k, "sm_90");
    kc_entry_set_section(e, KC_SECTION_KERNELS, payload, strlen(payload));
    return e;
}

static void expect_payload(const char *want) {
    kc_key k = {{1, 2, 3}};
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &k, "sm_90", &e), KC_OK);
    const void *p;
    size_t n;
    kc_entry_section(e, KC_SECTION_KERNELS, &p, &n);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(p, want, n);
    kc_entry_free(e);
}

static void test_put_faults(void **state) {
    (void)state;
    kc_entry *old = entry("the old kernels"), *new_ = entry("the new kernels, longer");
    assert_int_equal(kc_cache_put(cache, old), KC_OK);
    const kc_fs_op ops[] = {KC_FS_OPEN, KC_FS_WRITE, KC_FS_FSYNC, KC_FS_RENAME};
    const int errs[] = {EIO, ENOSPC, EACCES, EROFS};
    long injected = 0;
    for (size_t o = 0; o < 4; o++)
        for (size_t e = 0; e < 4; e++)
            for (int every = 0; every < 2; every++) {
                for (long nth = 1; nth < 20; nth++) {
                    assert_int_equal(kc_cache_put(cache, old), KC_OK); /* start from the old state */
                    kc_fs_fault_set(ops[o], nth, errs[e], every);
                    long before = kc_fs_fault_count();
                    int rc = kc_cache_put(cache, new_);
                    int hit = kc_fs_fault_count() > before;
                    kc_fs_fault_clear();
                    injected += hit;
                    if (!hit) { /* the put finished before call N: done with this op */
                        assert_int_equal(rc, KC_OK);
                        expect_payload("the new kernels, longer");
                        break;
                    }
                    if (rc == KC_OK) {
                        expect_payload("the new kernels, longer"); /* e.g. only the directory fsync failed */
                    } else {
                        assert_non_null(strstr(kc_error_last()->message, strerror(errs[e])));
                        expect_payload("the old kernels");
                    }
                    assert_int_equal(kct_count_files(dir, ".tmp."), 0);
                    kc_verify_report r;
                    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
                    assert_int_equal(r.corrupt, 0);
                }
            }
    fprintf(stderr, "%ld put faults injected\n", injected);
    assert_true(injected >= 32);
    kc_entry_free(old);
    kc_entry_free(new_);
}

static void test_get_faults_are_misses(void **state) {
    (void)state;
    kc_entry *e = entry("payload");
    assert_int_equal(kc_cache_put(cache, e), KC_OK);
    kc_key k = {{1, 2, 3}};
    const kc_fs_op ops[] = {KC_FS_OPEN, KC_FS_READ};
    for (size_t o = 0; o < 2; o++) {
        kc_fs_fault_set(ops[o], 1, EIO, false);
        kc_entry *g;
        assert_int_equal(kc_cache_get(cache, &k, "sm_90", &g), KC_MISS);
        kc_fs_fault_clear();
        expect_payload("payload"); /* nothing was quarantined */
    }
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_STORE_ERRORS], 2);
    assert_int_equal(st.v[KC_STAT_CORRUPT], 0);
    kc_entry_free(e);
}

static void test_allocation_faults(void **state) {
    (void)state;
    kc_entry *old = entry("old"), *new_ = entry("new");
    assert_int_equal(kc_cache_put(cache, old), KC_OK);
    int completed = 0;
    for (long nth = 1; nth < 200 && !completed; nth++) {
        kc_alloc_fail_at(nth, false);
        int rc = kc_cache_put(cache, new_);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) completed = 1;
        else expect_payload("old");
        assert_int_equal(kct_count_files(dir, ".tmp."), 0);
    }
    assert_true(completed);
    expect_payload("new");
    kc_entry_free(old);
    kc_entry_free(new_);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_put_faults),
        T(test_get_faults_are_misses),
        T(test_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
