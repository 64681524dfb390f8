/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_name.c — store names (src/store/name.c), the one grammar every tier and backend uses:
 * "<32 lowercase hex>.<variant>".  Composed names check; every way out of a folder or a
 * Redis key space ("..", "/", upper case, short or long keys, a variant outside [a-z0-9_]) is refused;
 * the shard is the key's first byte.
 */
#include "kcache.h"
#include "helpers.h"
#include "store/name.h"

static void test_composed_names_check(void **state) {
    (void)state;
    for (int i = 0; i < 64; i++) {
        kc_key k = kct_key("name", i);
        const char *variants[] = {"sm_80", "sm_90a", "sm_100f", "compute_80"};
        char name[KC_NAME_MAX + 1], hex[KC_KEY_HEX_LEN + 1];
        kc_store_name(&k, variants[i % 4], name);
        assert_int_equal(kc_store_name_check(name), KC_OK);
        kc_key_to_hex(&k, hex);
        assert_int_equal(strncmp(name, hex, KC_KEY_HEX_LEN), 0);
        assert_int_equal(name[KC_KEY_HEX_LEN], '.');
        assert_string_equal(name + KC_KEY_HEX_LEN + 1, variants[i % 4]);
        assert_int_equal(kc_store_name_shard(name), k.bytes[0]);
    }
}

static void test_hostile_names_are_refused(void **state) {
    (void)state;
    const char *key = "0123456789abcdef0123456789abcdef";
    char good[80];
    snprintf(good, sizeof good, "%s.sm_90", key);
    assert_int_equal(kc_store_name_check(good), KC_OK);
    const char *bad[] = {
        "",
        ".sm_90",
        "0123456789abcdef0123456789abcde.sm_90",   /* 31 hex */
        "0123456789abcdef0123456789abcdef0.sm_90", /* 33 hex */
        "0123456789ABCDEF0123456789abcdef.sm_90",  /* upper case */
        "0123456789abcdef0123456789abcdeg.sm_90",  /* not hex */
        "0123456789abcdef0123456789abcdef",        /* no variant */
        "0123456789abcdef0123456789abcdef.",
        "0123456789abcdef0123456789abcdef.sm_90/../x",
        "0123456789abcdef0123456789abcdef.../sm_90",
        "0123456789abcdef0123456789abcdef..",
        "0123456789abcdef0123456789abcdef.sm_90 ",
        "0123456789abcdef0123456789abcdef_sm_90",
        "../0123456789abcdef0123456789abcdef.sm_90",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (kc_store_name_check(bad[i]) != KC_EINVAL) fail_msg("accepted '%s'", bad[i]);
    assert_int_equal(kc_store_name_check(NULL), KC_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_composed_names_check),
        cmocka_unit_test(test_hostile_names_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
