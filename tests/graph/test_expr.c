/* SPDX-License-Identifier: Apache-2.0 */
/* test_expr.c — launch expressions: values, Python-style division, and every failure as KC_EEXPR. */
#include "helpers.h"

#include "kcache.h"

static const char *names[] = {"M", "N", "BIG", "NEG"};
static const int64_t vals[] = {100, 7, INT64_MAX, -7};

static int64_t ev(const char *e) {
    int64_t v;
    int rc = kc_expr_eval(e, names, vals, 4, &v);
    if (rc) fail_msg("'%s': %s", e, kc_error_last()->message);
    return v;
}

static void expect_err(const char *e, const char *why) {
    int64_t v;
    assert_int_equal(kc_expr_eval(e, names, vals, 4, &v), KC_EEXPR);
    if (!strstr(kc_error_last()->message, why)) fail_msg("'%s': '%s' lacks '%s'", e, kc_error_last()->message, why);
}

static void test_values(void **state) {
    (void)state;
    assert_int_equal(ev("42"), 42);
    assert_int_equal(ev("M * N + 3"), 703);
    assert_int_equal(ev("M - N - 3"), 90); /* left associative */
    assert_int_equal(ev("ceildiv(M, 16)"), 7);
    assert_int_equal(ev("floordiv(M, 16)"), 6);
    assert_int_equal(ev("floordiv(NEG, 2)"), -4); /* toward -inf */
    assert_int_equal(ev("ceildiv(NEG, 2)"), -3);
    assert_int_equal(ev("mod(NEG, 3)"), 2);
    assert_int_equal(ev("mod(7, -3)"), -2);
    assert_int_equal(ev("min(M, N) * max(2, 3)"), 21);
    assert_int_equal(ev("-(M) + 1"), -99);
    assert_int_equal(ev(" ( M + N ) * 2 "), 214);
    assert_int_equal(ev("ceildiv(M * 1024, 256)"), 400);
}

static void test_failures(void **state) {
    (void)state;
    expect_err("M / 2", "unexpected character");
    expect_err("floordiv(M, 0)", "division by zero");
    expect_err("ceildiv(M, N - 7)", "division by zero");
    expect_err("mod(M, 0)", "division by zero");
    expect_err("BIG + 1", "overflow");
    expect_err("BIG * 2", "overflow");
    expect_err("0 - BIG - 2", "overflow");
    expect_err("99999999999999999999", "too large");
    expect_err("X + 1", "unknown symbol");
    expect_err("pow(M, 2)", "unknown function");
    expect_err("min(M)", "expected ','");
    expect_err("(M + 1", "expected ')'");
    expect_err("", "unexpected end");
    expect_err("M M", "unexpected character");
    char deep[400];
    memset(deep, '(', 200);
    strcpy(deep + 200, "1");
    memset(deep + 201, ')', 198);
    deep[399] = '\0';
    expect_err(deep, "nested too deeply");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
