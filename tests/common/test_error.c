/* SPDX-License-Identifier: Apache-2.0 */
/* test_error.c — the per-thread last error, status names, the allocation failure switch. */
#include "helpers.h"

#include <pthread.h>

#include "common/internal.h"
#include "kcache.h"

static void test_record_and_clear(void **state) {
    (void)state;
    kc_error_clear();
    assert_int_equal(kc_error_last()->code, KC_OK);
    assert_string_equal(kc_error_last()->message, "");
    assert_int_equal(kc_err(KC_EIO, "disk %d failed", 3), KC_EIO);
    assert_int_equal(kc_error_last()->code, KC_EIO);
    assert_string_equal(kc_error_last()->message, "disk 3 failed");
    kc_err_prefix(KC_EIO, "reading %s", "x");
    assert_string_equal(kc_error_last()->message, "reading x: disk 3 failed");
    kc_error_clear();
    assert_int_equal(kc_error_last()->code, KC_OK);
}

/* Adding context by quoting the last message must not garble it. */
static void test_message_can_quote_itself(void **state) {
    (void)state;
    kc_err(KC_EIO, "inner reason");
    kc_err(KC_ECORRUPT, "outer: %s", kc_error_last()->message);
    assert_string_equal(kc_error_last()->message, "outer: inner reason");
}

static void test_errno_mapping(void **state) {
    (void)state;
    assert_int_equal(kc_err_errno(ENOSPC, "writing"), KC_EIO);
    assert_non_null(strstr(kc_error_last()->message, "No space left"));
    assert_int_equal(kc_err_errno(EROFS, "writing"), KC_EREADONLY); /* never KC_EPERM: that is a safety refusal */
    assert_int_equal(kc_err_errno(EACCES, "writing"), KC_EIO);
    assert_int_equal(kc_err_errno(EPERM, "writing"), KC_EIO);
    assert_int_equal(kc_err_errno(ENOMEM, "x"), KC_ENOMEM);
    assert_int_equal(kc_err_errno(ENOENT, "x"), KC_EIO); /* an error path's ENOENT is not a miss */
}

static void *other_thread(void *arg) {
    (void)arg;
    kc_err(KC_ECORRUPT, "from the other thread");
    return (void *)(intptr_t)(kc_error_last()->code == KC_ECORRUPT);
}

static void test_per_thread(void **state) {
    (void)state;
    kc_err(KC_MISS, "main thread");
    pthread_t t;
    void *ok;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, &ok);
    assert_true((intptr_t)ok);
    assert_int_equal(kc_error_last()->code, KC_MISS);
    assert_string_equal(kc_error_last()->message, "main thread");
}

static void test_status_names(void **state) {
    (void)state;
    assert_string_equal(kc_status_str(KC_MISS), "KC_MISS");
    assert_string_equal(kc_status_str(KC_ENODRIVER), "KC_ENODRIVER");
    assert_string_equal(kc_status_str(12345), "KC_UNKNOWN");
    for (int s = 0; s >= KC_EUNTRUSTED; s--) assert_string_not_equal(kc_status_str(s), "KC_UNKNOWN");
    assert_string_equal(kc_status_str(KC_EUNTRUSTED), "KC_EUNTRUSTED");
}

/* One version everywhere: the header's numbers, its string, the library's answers and the version CMake
 * set for the package (read from the header: it cannot drift, and this checks that it did not). */
static void test_version_agrees(void **state) {
    (void)state;
    char v[64];
    snprintf(v, sizeof v, "%d.%d.%d", KC_VERSION_MAJOR, KC_VERSION_MINOR, KC_VERSION_PATCH);
    assert_string_equal(v, KC_VERSION_STRING);
    assert_string_equal(kc_version(), KC_VERSION_STRING);
    assert_string_equal(KC_PROJECT_VERSION, KC_VERSION_STRING);
    assert_int_equal(kc_version_number(), KC_VERSION_NUMBER);
    assert_int_equal(KC_VERSION_NUMBER, KC_VERSION_MAJOR * 10000 + KC_VERSION_MINOR * 100 + KC_VERSION_PATCH);
#if !KC_VERSION_AT_LEAST(0, 1, 0) || KC_VERSION_AT_LEAST(KC_VERSION_MAJOR + 1, 0, 0)
    fail_msg("KC_VERSION_AT_LEAST is wrong");
#endif
}

/* The codes are part of the ABI: a new one is appended, an existing one never renumbered; "untrusted"
 * (a MAC or signature refused) is its own code, not the "unsafe" of KC_EPERM. */
static void test_status_values_are_stable(void **state) {
    (void)state;
    static const struct {
        int code, value;
    } fixed[] = {{KC_OK, 0},
                 {KC_ERROR, -1},
                 {KC_ENOMEM, -2},
                 {KC_EINVAL, -3},
                 {KC_EIO, -4},
                 {KC_MISS, -5},
                 {KC_BYPASS, -6},
                 {KC_ECORRUPT, -7},
                 {KC_ENODRIVER, -8},
                 {KC_EARCH, -9},
                 {KC_ECOMPILE, -10},
                 {KC_ENONVRTC, -11},
                 {KC_EVERSION, -12},
                 {KC_EREADONLY, -13},
                 {KC_EDRIVER, -14},
                 {KC_EUNREGISTERED, -15},
                 {KC_EBUSY, -16},
                 {KC_EEXPR, -17},
                 {KC_EPERM, -18},
                 {KC_ETIMEOUT, -19},
                 {KC_EUNAVAILABLE, -20},
                 {KC_EREFUSED, -21},
                 {KC_ENOTCACHED, -22},
                 {KC_ELIMIT, -23},
                 {KC_EUNTRUSTED, -24}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) assert_int_equal(fixed[i].code, fixed[i].value);
}

static void test_long_message_is_cut_not_overflowed(void **state) {
    (void)state;
    char big[5000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    kc_err(KC_EIO, "%s", big);
    assert_true(strlen(kc_error_last()->message) < sizeof big);
    kc_err_prefix(KC_EIO, "%s", big);
    assert_true(strlen(kc_error_last()->message) < sizeof big);
}

static void test_alloc_failure_switch(void **state) {
    (void)state;
    kc_alloc_fail_at(2, false);
    void *a = kc_malloc(8);
    void *b = kc_malloc(8);
    void *c = kc_malloc(8);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    free(a);
    free(c);
    kc_alloc_fail_at(1, true);
    assert_null(kc_malloc(1));
    assert_null(kc_malloc(1));
    kc_alloc_fail_at(0, false);
    void *d = kc_malloc(1);
    assert_non_null(d);
    free(d);
}

static void test_log_configure(void **state) {
    (void)state;
    kc_log_configure("store,recompiles");
    assert_true(kc_log_enabled(KC_LOG_STORE));
    assert_true(kc_log_enabled(KC_LOG_RECOMPILES));
    assert_false(kc_log_enabled(KC_LOG_COMPILE));
    kc_log_configure("all");
    assert_true(kc_log_enabled(KC_LOG_GUARD));
    kc_log_configure(NULL);
    assert_false(kc_log_enabled(KC_LOG_STORE));
}

/* [Note: cleanup keeps the error]: what a cleanup records or clears between save and restore is
 * forgotten, and the failure before it is back, status and message. */
static void test_cleanup_keeps_the_error(void **state) {
    (void)state;
    kc_err(KC_ECOMPILE, "NVRTC: line 27: error: identifier is undefined");
    kc_err_saved keep;
    kc_err_save(&keep);
    kc_err(KC_EIO, "a manifest not written");
    kc_error_clear();
    kc_err_restore(&keep);
    assert_int_equal(kc_error_last()->code, KC_ECOMPILE);
    assert_string_equal(kc_error_last()->message, "NVRTC: line 27: error: identifier is undefined");
    /* Nothing pending: nothing comes back either. */
    kc_error_clear();
    kc_err_save(&keep);
    kc_err(KC_EIO, "an optional step failed");
    kc_err_restore(&keep);
    assert_int_equal(kc_error_last()->code, KC_OK);
    assert_string_equal(kc_error_last()->message, "");
}

/* A public call that fails never leaves KC_OK in the record, nor another status than the one returned. */
static void test_a_failure_is_never_ok(void **state) {
    (void)state;
    kc_error_clear();
    assert_int_equal(kc_err_returning(KC_ECOMPILE, "kc_graph_get"), KC_ECOMPILE);
    assert_int_equal(kc_error_last()->code, KC_ECOMPILE);
    assert_non_null(strstr(kc_error_last()->message, "kc_graph_get"));
    kc_err(KC_EIO, "disk full");
    assert_int_equal(kc_err_returning(KC_ENOTCACHED, "kc_graph_compile"), KC_ENOTCACHED);
    assert_int_equal(kc_error_last()->code, KC_ENOTCACHED);
    assert_string_equal(kc_error_last()->message, "disk full");
    kc_err(KC_EIO, "kept");
    assert_int_equal(kc_err_returning(KC_OK, "x"), KC_OK); /* success touches nothing */
    assert_int_equal(kc_error_last()->code, KC_EIO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_and_clear),
        cmocka_unit_test(test_errno_mapping),
        cmocka_unit_test(test_message_can_quote_itself),
        cmocka_unit_test(test_per_thread),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_status_values_are_stable),
        cmocka_unit_test(test_version_agrees),
        cmocka_unit_test(test_long_message_is_cut_not_overflowed),
        cmocka_unit_test(test_alloc_failure_switch),
        cmocka_unit_test(test_log_configure),
        cmocka_unit_test(test_cleanup_keeps_the_error),
        cmocka_unit_test(test_a_failure_is_never_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
