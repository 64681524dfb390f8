/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_bounds.c — declared bounds never loop (issue 19): after a dimension becomes
 * dynamic with bounds [8, 128] declared, a call with size 256 is answered with a static
 * proposal for that dimension (never the dynamic one that cannot hit), and inserting what
 * the answer says and calling again hits — as does an insert that keeps the dynamic bit
 * (the site guards such an entry static there).
 */
#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static void test_out_of_bounds_is_answered_static(void **state) {
    (void)state;
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.cache_size_limit = 4;
    kc_site *s;
    assert_int_equal(kc_site_new(&s, NULL, "bounds-loop", &o), KC_OK);
    assert_int_equal(kc_site_set_bounds(s, 0, 0, 8, 128), KC_OK);
    kc_site_answer a;
    int64_t sizes[] = {16, 32};
    for (int i = 0; i < 2; i++) {
        kc_tensor_meta t = t2(sizes[i], 4);
        kc_call c = {&t, 1, NULL, 0, 0, NULL};
        assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
        assert_int_equal(a.result, KC_SITE_MISS);
        assert_int_equal(a.dynamic[0], (uint32_t)i); /* the second makes dim 0 dynamic */
        assert_int_equal(kc_site_insert(s, &c, a.dynamic, (void *)(intptr_t)(i + 1), NULL), KC_OK);
    }
    kc_tensor_meta t64 = t2(64, 4), t256 = t2(256, 4), t512 = t2(512, 4);
    kc_call c64 = {&t64, 1, NULL, 0, 0, NULL}, c256 = {&t256, 1, NULL, 0, 0, NULL}, c512 = {&t512, 1, NULL, 0, 0, NULL};
    assert_int_equal(kc_site_lookup(s, &c64, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    /* 256 is outside [8, 128]: the proposal is static in dim 0. */
    assert_int_equal(kc_site_lookup(s, &c256, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_non_null(strstr(a.reason, "outside the declared bounds [8, 128]"));
    assert_int_equal(a.dynamic[0] & 1u, 0);
    assert_int_equal(kc_site_insert(s, &c256, a.dynamic, (void *)(intptr_t)3, NULL), KC_OK);
    assert_int_equal(kc_site_lookup(s, &c256, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)(intptr_t)3);
    assert_int_equal(kc_site_lookup(s, &c64, &a), KC_OK); /* the dynamic entry still serves inside */
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)(intptr_t)2);
    /* A caller that inserts with the dynamic bit anyway: the entry is guarded static there. */
    uint32_t dyn[KC_SITE_MAX_INPUTS] = {1};
    assert_int_equal(kc_site_lookup(s, &c512, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_site_insert(s, &c512, dyn, (void *)(intptr_t)4, NULL), KC_OK);
    assert_int_equal(kc_site_lookup(s, &c512, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)(intptr_t)4);
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.entries, 4);
    kc_site_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_of_bounds_is_answered_static),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
