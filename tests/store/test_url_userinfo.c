/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_url_userinfo.c — the URL pieces the remote back ends share (store/registry.c): where a URL's user
 * information ends and how it splits (kc_store_url_userinfo), %XX escapes (kc_store_pct_decode); and that
 * both back ends taking a password in the URL (HTTP, Redis) refuse an '@' that comes only after a '?'
 * without showing what lies before it.
 *
 * What it proves: the user information ends at the LAST '@' before the first '?' (a password may hold
 * '@'), never at one in the query; its user ends at the FIRST ':'; an '@' only after a '?' is -1 (a
 * password holding '?', or an unescaped '@' in a query: nothing before it may be taken or shown); a
 * malformed escape, an escaped NUL or a value that does not fit is -1.  The back ends' own cases (bare
 * words, decoding, the shown forms) are in test_http_hostile, test_redis and test_redis_tls.
 */
#include "helpers.h"

#include "common/internal.h"
#include "store/registry.h"

/* The user information of `s` as "user|password" ("user" alone without a colon), or "-" for none, "late" for -1. */
static const char *split(const char *s, char *out, size_t cap) {
    const char *at, *colon;
    int rc = kc_store_url_userinfo(s, &at, &colon);
    if (rc < 0) return "late";
    if (rc == 0) {
        assert_null(at);
        assert_null(colon);
        return "-";
    }
    assert_true(rc == 1 && at && *at == '@');
    if (colon) snprintf(out, cap, "%.*s|%.*s", (int)(colon - s), s, (int)(at - colon - 1), colon + 1);
    else snprintf(out, cap, "%.*s", (int)(at - s), s);
    return out;
}

static void test_userinfo_bounds(void **state) {
    (void)state;
    char b[256];
    assert_string_equal(split("host:6379/0", b, sizeof b), "-");
    assert_string_equal(split("host/x?ca_file=/etc/ca.pem", b, sizeof b), "-");
    assert_string_equal(split("u:p@host", b, sizeof b), "u|p");
    assert_string_equal(split(":p@host", b, sizeof b), "|p");
    assert_string_equal(split("word@host", b, sizeof b), "word");
    assert_string_equal(split("u:p:q@host", b, sizeof b), "u|p:q");   /* the user ends at the first ':' */
    assert_string_equal(split("u:p@ss@host", b, sizeof b), "u|p@ss"); /* the last '@' before the query */
    assert_string_equal(split("u:p@host?a=b@c", b, sizeof b), "u|p"); /* never one in the query */
    assert_string_equal(split("host?password_file=/a@b", b, sizeof b), "late");
    assert_string_equal(split("u:pa?ss@host", b, sizeof b), "late"); /* a password holding '?' */
    assert_string_equal(split("@host", b, sizeof b), "");
    assert_string_equal(split("", b, sizeof b), "-");
}

static void test_pct_decode(void **state) {
    (void)state;
    char out[8];
    assert_int_equal(kc_store_pct_decode("a%2Fb%3f", 8, out, sizeof out), 0);
    assert_string_equal(out, "a/b?");
    assert_int_equal(kc_store_pct_decode("abc", 0, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(kc_store_pct_decode("1234567", 7, out, sizeof out), 0); /* fits with its NUL */
    assert_int_equal(kc_store_pct_decode("12345678", 8, out, sizeof out), -1);
    assert_int_equal(kc_store_pct_decode("a%00b", 5, out, sizeof out), -1); /* a NUL inside */
    assert_int_equal(kc_store_pct_decode("a%zz", 4, out, sizeof out), -1);
    assert_int_equal(kc_store_pct_decode("a%4", 3, out, sizeof out), -1);
    assert_int_equal(kc_store_pct_decode("a%41", 3, out, sizeof out), -1); /* the escape cut by n */
}

/* Both back ends that read a password from the URL refuse an '@' after a '?' and show nothing before it. */
static void test_late_at_refused_by_both(void **state) {
    (void)state;
    static const char *const urls[] = {"redis://pa?ss@host:6379", "rediss://u:pa?ss@host",
                                       "http://u:pa?ss@127.0.0.1:1/x", "https://pa?ss@127.0.0.1:1/x"};
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    for (size_t i = 0; i < KC_ARRAY_LEN(urls); i++) {
        kc_store_backend *be = NULL;
        int rc = kc_store_open_url(&be, urls[i], &l);
        if (rc == KC_OK) fail_msg("'%s' opened", urls[i]);
        assert_null(be);
        const char *m = kc_error_last()->message;
        if (strstr(m, "pa?ss") || strstr(m, "pa?")) fail_msg("'%s' shows what lies before its '@': %s", urls[i], m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_userinfo_bounds),
        cmocka_unit_test(test_pct_decode),
        cmocka_unit_test(test_late_at_refused_by_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
