/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_env.c — common/env.c, the one strict parser of KCACHE_* values (handed the value: config/ reads the variable) (issue 15, item 19):
 * every value the issue found guessed at ("0 ", "N", "fasle" as on; inf, 1e300, 2e10, abc, -5
 * as a lock wait) is an error that names the variable, and the default stays when unset.
 */
#include "helpers.h"

#include "common/internal.h"

#define VAR "KCACHE_TEST_VALUE"

static void expect_bad(int rc, const char *value) {
    if (rc != KC_EINVAL) fail_msg("'%s' was accepted", value);
    if (!strstr(kc_error_last()->message, VAR))
        fail_msg("the error for '%s' does not name " VAR ": %s", value, kc_error_last()->message);
}

static void test_flags(void **state) {
    (void)state;
    bool v = true;
    unsetenv(VAR);
    assert_int_equal(kc_env_flag(VAR, getenv(VAR), &v), KC_OK);
    assert_true(v); /* unset: the default stays */
    setenv(VAR, "", 1);
    assert_int_equal(kc_env_flag(VAR, getenv(VAR), &v), KC_OK);
    assert_true(v); /* empty: as unset */
    const char *on[] = {"1", "true", "TRUE", "yes", "On"}, *off[] = {"0", "false", "No", "OFF"};
    for (size_t i = 0; i < KC_ARRAY_LEN(on); i++) {
        v = false;
        setenv(VAR, on[i], 1);
        assert_int_equal(kc_env_flag(VAR, getenv(VAR), &v), KC_OK);
        assert_true(v);
    }
    for (size_t i = 0; i < KC_ARRAY_LEN(off); i++) {
        v = true;
        setenv(VAR, off[i], 1);
        assert_int_equal(kc_env_flag(VAR, getenv(VAR), &v), KC_OK);
        assert_false(v);
    }
    const char *bad[] = {"0 ", " 1", "N", "y", "fasle", "2", "enable", "-1"};
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        v = false;
        setenv(VAR, bad[i], 1);
        expect_bad(kc_env_flag(VAR, getenv(VAR), &v), bad[i]);
        assert_false(v); /* untouched */
    }
    unsetenv(VAR);
}

static void test_counts(void **state) {
    (void)state;
    unsigned long long n = 7;
    unsetenv(VAR);
    assert_int_equal(kc_env_uint(VAR, getenv(VAR), 1000, &n), KC_OK);
    assert_int_equal(n, 7);
    setenv(VAR, "1000", 1);
    assert_int_equal(kc_env_uint(VAR, getenv(VAR), 1000, &n), KC_OK);
    assert_int_equal(n, 1000);
    setenv(VAR, "0", 1);
    assert_int_equal(kc_env_uint(VAR, getenv(VAR), 1000, &n), KC_OK);
    assert_int_equal(n, 0);
    const char *bad[] = {"1001", "-5", "+5", " 5", "5 ", "abc", "1e3", "0x10", "99999999999999999999999"};
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        n = 7;
        setenv(VAR, bad[i], 1);
        expect_bad(kc_env_uint(VAR, getenv(VAR), 1000, &n), bad[i]);
        assert_int_equal(n, 7);
    }
    setenv(VAR, "18446744073709551615", 1); /* the largest, when the maximum allows it */
    assert_int_equal(kc_env_uint(VAR, getenv(VAR), UINT64_MAX, &n), KC_OK);
    assert_true(n == UINT64_MAX);
    setenv(VAR, "18446744073709551616", 1);
    expect_bad(kc_env_uint(VAR, getenv(VAR), UINT64_MAX, &n), "2^64");
    unsetenv(VAR);
}

static void test_seconds(void **state) {
    (void)state;
    double s = 600;
    unsetenv(VAR);
    assert_int_equal(kc_env_seconds(VAR, getenv(VAR), 86400, &s), KC_OK);
    assert_true(s == 600);
    const char *good[] = {"0", "60", "0.5", "86400", ".25", "3."};
    const double want[] = {0, 60, 0.5, 86400, 0.25, 3};
    for (size_t i = 0; i < KC_ARRAY_LEN(good); i++) {
        setenv(VAR, good[i], 1);
        assert_int_equal(kc_env_seconds(VAR, getenv(VAR), 86400, &s), KC_OK);
        assert_true(s == want[i]);
    }
    const char *bad[] = {"inf", "INF", "nan", "1e300", "2e10",  "86401", "abc",
                         "-5",  "5s",  " 5",  ".",     "1.2.3", "0x10",  "99999999999999999999999999999999999999"};
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        s = 600;
        setenv(VAR, bad[i], 1);
        expect_bad(kc_env_seconds(VAR, getenv(VAR), 86400, &s), bad[i]);
        assert_true(s == 600);
    }
    unsetenv(VAR);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
