/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_input.c — a site checks every field a caller passes (issue 19): a rank outside
 * 0..KC_MAX_RANK (-1, 9), a negative size, too many inputs, a NULL array with a nonzero
 * count and a backend name too long for an entry are KC_EINVAL with the field named, for
 * lookup and for insert, and nothing is counted or stored; kc_site_new leaves NULL in
 * `*out` when it fails.  Meant to run clean under -fsanitize=address,undefined (the rank
 * -1 shift and the rank 9 read past sizes[] were what the sanitizers caught).
 */
#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static kc_site *new_site(const char *name) {
    kc_site *s = NULL;
    assert_int_equal(kc_site_new(&s, NULL, name, NULL), KC_OK);
    return s;
}

/* Both lookup and insert refuse `c` with KC_EINVAL and a message holding `needle`; the site is untouched. */
static void refused(kc_site *s, const kc_call *c, const char *needle) {
    kc_site_answer a;
    memset(&a, 0x5a, sizeof a);
    assert_int_equal(kc_site_lookup(s, c, &a), KC_EINVAL);
    if (!strstr(kc_error_last()->message, needle))
        fail_msg("lookup: \"%s\" lacks \"%s\"", kc_error_last()->message, needle);
    assert_int_equal(a.result, KC_SITE_HIT); /* the answer was cleared, not left as garbage */
    assert_null(a.value);
    assert_int_equal(kc_site_insert(s, c, NULL, (void *)1, NULL), KC_EINVAL);
    if (!strstr(kc_error_last()->message, needle))
        fail_msg("insert: \"%s\" lacks \"%s\"", kc_error_last()->message, needle);
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.compiles, 0);
    assert_int_equal(st.hits + st.misses + st.fallbacks, 0);
}

static void test_rank_out_of_range(void **state) {
    (void)state;
    kc_site *s = new_site("rank");
    uintptr_t owner = 1;
    int bad[] = {-1, 9, KC_MAX_RANK + 100, -2147483647 - 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kc_tensor_meta in[2] = {t2(4, 8), t2(4, 8)};
        for (int d = 0; d < KC_MAX_RANK; d++) in[1].sizes[d].value = 3, in[1].strides[d].value = 1;
        in[1].rank = bad[i];
        kc_call c = {in, 2, &owner, 1, 0, NULL};
        refused(s, &c, "input 1 has rank");
    }
    /* The bounds themselves are accepted: rank 0 and rank KC_MAX_RANK. */
    kc_tensor_meta ok[2] = {t2(4, 8), t2(4, 8)};
    ok[0].rank = 0;
    ok[1].rank = KC_MAX_RANK;
    for (int d = 0; d < KC_MAX_RANK; d++) ok[1].sizes[d].value = 2, ok[1].strides[d].value = 1;
    kc_call c = {ok, 2, &owner, 1, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_site_insert(s, &c, a.dynamic, (void *)7, NULL), KC_OK);
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)7);
    kc_site_free(s);
}

static void test_rank_out_of_range_against_an_entry(void **state) {
    (void)state;
    /* With an entry of rank 2 present, a call of rank 9 must not reach the guard walk either. */
    kc_site *s = new_site("rank-entry");
    kc_tensor_meta in = t2(4, 8);
    kc_call c = {&in, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(kc_site_insert(s, &c, a.dynamic, (void *)1, NULL), KC_OK);
    in.rank = 9;
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_EINVAL);
    in.rank = -1;
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_EINVAL);
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.entries, 1);
    assert_int_equal(st.misses, 1);
    kc_site_free(s);
}

static void test_other_fields(void **state) {
    (void)state;
    kc_site *s = new_site("fields");
    uintptr_t owner = 1;
    kc_tensor_meta in[KC_SITE_MAX_INPUTS + 1];
    for (size_t i = 0; i < KC_SITE_MAX_INPUTS + 1; i++) in[i] = t2(4, 8);

    in[0].sizes[1].value = -8;
    kc_call neg = {in, 1, &owner, 1, 0, NULL};
    refused(s, &neg, "size[1] is negative");
    in[0] = t2(4, 8);

    kc_call many = {in, KC_SITE_MAX_INPUTS + 1, &owner, 1, 0, NULL};
    refused(s, &many, "at most");

    kc_call no_inputs = {NULL, 1, &owner, 1, 0, NULL};
    refused(s, &no_inputs, "inputs is NULL");

    kc_call no_owners = {in, 1, NULL, 2, 0, NULL};
    refused(s, &no_owners, "owners is NULL");

    char longname[64];
    memset(longname, 'b', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    kc_call long_backend = {in, 1, &owner, 1, 0, longname};
    refused(s, &long_backend, "backend name");

    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, NULL, &a), KC_EINVAL);
    assert_int_equal(kc_site_insert(s, NULL, NULL, NULL, NULL), KC_EINVAL);
    kc_call fine = {in, 1, &owner, 1, 0, NULL};
    assert_int_equal(kc_site_lookup(NULL, &fine, &a), KC_EINVAL);
    assert_int_equal(kc_site_lookup(s, &fine, NULL), KC_EINVAL);
    /* A NULL array with a zero count is fine (a call with no inputs or owners). */
    kc_call empty = {NULL, 0, NULL, 0, 0, NULL};
    assert_int_equal(kc_site_lookup(s, &empty, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    kc_site_free(s);
}

static void test_site_new_sets_out_null(void **state) {
    (void)state;
    kc_site *sentinel = (kc_site *)(uintptr_t)0xdeadbeef;
    kc_site *s = sentinel;
    assert_int_equal(kc_site_new(&s, NULL, NULL, NULL), KC_EINVAL);
    assert_null(s);
    s = sentinel;
    assert_int_equal(kc_site_new(&s, NULL, "", NULL), KC_EINVAL);
    assert_null(s);
    s = sentinel;
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.version = 99;
    assert_int_equal(kc_site_new(&s, NULL, "v", &o), KC_EVERSION);
    assert_null(s);
    assert_int_equal(kc_site_new(NULL, NULL, "v", NULL), KC_EINVAL);
    kc_site_stats st;
    memset(&st, 0x5a, sizeof st);
    kc_site_get_stats(NULL, &st);
    assert_int_equal(st.hits + st.entries, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_out_of_range),
        cmocka_unit_test(test_rank_out_of_range_against_an_entry),
        cmocka_unit_test(test_other_fields),
        cmocka_unit_test(test_site_new_sets_out_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
