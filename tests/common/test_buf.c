/* SPDX-License-Identifier: Apache-2.0 */
/* test_buf.c — little-endian writers, bounds-checked readers, hex (and the memos' strict hex readers). */
#include "helpers.h"

#include "common/internal.h"

static void test_writers_are_little_endian(void **state) {
    (void)state;
    kc_buf b = {0};
    kc_buf_put_u16(&b, 0x0102);
    kc_buf_put_u32(&b, 0x03040506);
    kc_buf_put_u64(&b, 0x0708090a0b0c0d0eull);
    const uint8_t want[] = {2, 1, 6, 5, 4, 3, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 9, 8, 7};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    kc_buf_free(&b);
}

static void test_reader_never_overruns(void **state) {
    (void)state;
    const uint8_t data[5] = {1, 2, 3, 4, 5};
    kc_reader r = kc_reader_make(data, sizeof data);
    assert_int_equal(kc_rd_next_u32(&r), 0x04030201u);
    assert_false(r.bad);
    assert_int_equal(kc_rd_next_u32(&r), 0); /* only one byte left */
    assert_true(r.bad);
    assert_int_equal(kc_rd_next_u8(&r), 0); /* stays bad */
    assert_null(kc_rd_bytes(&r, 0));
    r = kc_reader_make(data, sizeof data);
    assert_null(kc_rd_bytes(&r, SIZE_MAX));
    assert_true(r.bad);
}

static void test_printf_and_take(void **state) {
    (void)state;
    kc_buf b = {0};
    for (int i = 0; i < 100; i++) kc_buf_printf(&b, "%d,", i);
    char *s = kc_buf_take_str(&b);
    assert_non_null(s);
    assert_int_equal(strncmp(s, "0,1,2,", 6), 0);
    assert_non_null(strstr(s, "99,"));
    free(s);
}

static void test_alloc_failure_is_sticky(void **state) {
    (void)state;
    kc_buf b = {0};
    kc_alloc_fail_at(1, false);
    kc_buf_put_u64(&b, 1);
    kc_buf_put_u64(&b, 2);
    assert_true(b.failed);
    assert_int_equal(b.len, 0);
    kc_buf_free(&b);
}

static void test_hex(void **state) {
    (void)state;
    uint8_t in[3] = {0x00, 0xab, 0xff}, out[3];
    char h[7];
    kc_hex(in, 3, h);
    assert_string_equal(h, "00abff");
    assert_int_equal(kc_unhex("00ABff", 3, out), KC_OK);
    assert_memory_equal(in, out, 3);
    assert_int_equal(kc_unhex("0g", 1, out), KC_EINVAL);
}

/* The hex digits' table: each byte's value as the digit it is, either case (kc_hexval) or lowercase
 * only (kc_lowerhex), -1 for every other byte; kc_hex_is as "exactly n lowercase digits". */
static void test_hex_digits_table(void **state) {
    (void)state;
    for (int c = 0; c < 256; c++) {
        int lower = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        int any = lower >= 0 ? lower : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        assert_int_equal(kc_lowerhex((char)c), lower);
        assert_int_equal(kc_hexval((char)c), any);
    }
    assert_true(kc_hex_is("0123456789abcdef", 16));
    assert_false(kc_hex_is("0123456789abcdeF", 16));
    assert_false(kc_hex_is("0123456789abcdef0", 16)); /* longer */
    assert_false(kc_hex_is("0123456789abcde", 16));   /* shorter */
    assert_false(kc_hex_is(NULL, 0));
    assert_true(kc_hex_is("", 0));
}

/* kc_hex: every byte value at every place, for every length up to 17, is what "%02x" writes, and
 * nothing is written past the NUL. */
static void test_hex_every_byte(void **state) {
    (void)state;
    uint8_t in[17];
    char got[40], want[40];
    for (size_t n = 0; n <= sizeof in; n++)
        for (size_t at = 0; at < (n ? n : 1); at++)
            for (unsigned v = 0; v < 256; v++) {
                for (size_t i = 0; i < n; i++) in[i] = (uint8_t)(i * 37 + 11);
                if (n) in[at] = (uint8_t)v;
                memset(got, '#', sizeof got);
                kc_hex(in, n, got);
                for (size_t i = 0; i < n; i++) snprintf(want + 2 * i, 3, "%02x", in[i]);
                want[2 * n] = '\0';
                assert_string_equal(got, want);
                assert_int_equal(got[2 * n + 1], '#');
            }
}

/* kc_hex_u64: exactly n lowercase digits, 1 <= n <= 16; nothing else (memos are written "%016llx"). */
static void test_hex_u64(void **state) {
    (void)state;
    uint64_t v = 7;
    assert_true(kc_hex_u64("0123456789abcdef", 16, &v));
    assert_true(v == 0x0123456789abcdefull);
    assert_true(kc_hex_u64("ffffffffffffffff", 16, &v));
    assert_true(v == UINT64_MAX);
    assert_true(kc_hex_u64("00a1 rest", 4, &v)); /* n digits, whatever follows */
    assert_true(v == 0xa1);
    assert_true(kc_hex_u64("0", 1, &v) && v == 0);
    const char *bad[] = {"0123456789abcdeF", "0123456789abcde",  "0123456789abcd g", "-123456789abcdef",
                         " 123456789abcdef", "0x23456789abcdef", "+123456789abcdef"};
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        v = 7;
        if (kc_hex_u64(bad[i], 16, &v)) fail_msg("'%s' read as 16 hex digits", bad[i]);
        assert_true(v == 0);
    }
    assert_false(kc_hex_u64("", 1, &v));
    assert_false(kc_hex_u64("12", 0, &v));
    assert_false(kc_hex_u64("00000000000000000", 17, &v)); /* more than a u64 */
    assert_false(kc_hex_u64(NULL, 4, &v));
}

/* kc_hex_number: the canonical "%llx" of a count, 1 to 15 digits, no leading zero; *end after it. */
static void test_hex_number(void **state) {
    (void)state;
    uint64_t v;
    const char *end;
    assert_true(kc_hex_number("1f,2", &end, &v));
    assert_true(v == 0x1f);
    assert_int_equal(*end, ',');
    assert_true(kc_hex_number("0 x", &end, &v) && v == 0 && *end == ' ');
    assert_true(kc_hex_number("fffffffffffffff", &end, &v) && v == 0xfffffffffffffffull && *end == '\0');
    assert_false(kc_hex_number("ffffffffffffffff", &end, &v)); /* 16 digits: longer than any count written */
    assert_false(kc_hex_number("01", &end, &v));               /* a leading zero: not as written */
    assert_false(kc_hex_number("00", &end, &v));
    assert_false(kc_hex_number("", &end, &v));
    assert_false(kc_hex_number(",1", &end, &v));
    assert_false(kc_hex_number("A", &end, &v)); /* uppercase: not as written */
    assert_false(kc_hex_number("-1", &end, &v));
    const char *long_one = "12345678901234567";
    assert_false(kc_hex_number(long_one, &end, &v));
    assert_true(end == long_one + 16); /* reads at most 16 digits */
}

/* kc_hex_is: exactly n lowercase digits and the end of the string. */
static void test_hex_is(void **state) {
    (void)state;
    assert_true(kc_hex_is("0123456789abcdef0123456789abcdef", 32));
    assert_false(kc_hex_is("0123456789abcdef0123456789abcdeF", 32));
    assert_false(kc_hex_is("0123456789abcdef0123456789abcde", 32));
    assert_false(kc_hex_is("0123456789abcdef0123456789abcdef0", 32));
    assert_false(kc_hex_is("0123456789abcdef0123456789abcde ", 32));
    assert_false(kc_hex_is(NULL, 32));
    assert_true(kc_hex_is("ab", 2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writers_are_little_endian),
        cmocka_unit_test(test_reader_never_overruns),
        cmocka_unit_test(test_printf_and_take),
        cmocka_unit_test(test_alloc_failure_is_sticky),
        cmocka_unit_test(test_hex),
        cmocka_unit_test(test_hex_every_byte),
        cmocka_unit_test(test_hex_digits_table),
        cmocka_unit_test(test_hex_u64),
        cmocka_unit_test(test_hex_number),
        cmocka_unit_test(test_hex_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
