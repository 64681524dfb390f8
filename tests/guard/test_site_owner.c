/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_owner.c — owners by address and generation (issue 19): an object at the address of
 * one that died without kc_owner_release, given a new generation, misses instead of getting
 * the old object's entry; the same generation hits; kc_owner_release drops every generation.
 */
#include "kcache.h"
#include "helpers.h"

static void test_new_generation_misses(void **state) {
    (void)state;
    kc_site *s;
    assert_int_equal(kc_site_new(&s, NULL, "owner-gen", NULL), KC_OK);
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 1, {{16, NULL}}, {{1, NULL}}, 0};
    uintptr_t addr = 0x7f0000001000u;
    kc_call c = {&t, 1, &addr, 1, 0, NULL};
    uint64_t gen1 = 1, gen2 = 2;
    kc_site_answer a;
    assert_int_equal(kc_site_lookup_ext(s, &c, &gen1, &a, NULL), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_site_insert_ext(s, &c, &gen1, a.dynamic, (void *)0x1, NULL, 0), KC_OK);
    assert_int_equal(kc_site_lookup_ext(s, &c, &gen1, &a, NULL), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)0x1);
    /* The object died unreleased; a new one at the same address, generation 2: a miss. */
    assert_int_equal(kc_site_lookup_ext(s, &c, &gen2, &a, NULL), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_non_null(strstr(a.reason, "owners"));
    assert_int_equal(kc_site_insert_ext(s, &c, &gen2, a.dynamic, (void *)0x2, NULL, 0), KC_OK);
    assert_int_equal(kc_site_lookup_ext(s, &c, &gen2, &a, NULL), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)0x2);
    /* Without generations (0) it is yet another owner: neither entry. */
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_owner_release(addr), 2);
    kc_site_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_generation_misses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
