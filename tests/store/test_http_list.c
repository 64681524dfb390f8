/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http_list.c (label unit) — an S3 ListObjectsV2 page read with bounds (store/http_list.c): the
 * objects, sizes and times of a well-formed page and its continuation token; entities decoded; and each
 * hostile page refused, never guessed: an element not closed, markup or an unknown entity in a value, a
 * key over the bound, a size that is not a number, more objects than a page holds, a truncated page
 * without a token, a reply that is not a listing.
 */
#include "helpers.h"

#include "common/internal.h"
#include "store/http_list.h"

typedef struct seen {
    int n;
    char keys[4][64];
    uint64_t sizes[4];
    int64_t times[4];
} seen;

static int collect(const kc_s3_object *o, void *ctx) {
    seen *s = ctx;
    if (s->n < 4) {
        snprintf(s->keys[s->n], sizeof s->keys[0], "%s", o->key);
        s->sizes[s->n] = o->size, s->times[s->n] = o->last_modified;
    }
    s->n++;
    return 0;
}

static int page(const char *xml, seen *s, int *trunc, char *tok) {
    memset(s, 0, sizeof *s);
    return kc_s3_list_page(xml, strlen(xml), collect, s, trunc, tok, 64);
}

#define HEAD "<?xml version=\"1.0\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"

static void test_a_page(void **state) {
    (void)state;
    seen s;
    int t;
    char tok[64];
    assert_int_equal(page(HEAD "<Name>kcache</Name><IsTruncated>true</IsTruncated>"
                               "<Contents><Key>fleet/ac/a.sm_90</Key><LastModified>2026-11-28T16:59:50.000Z"
                               "</LastModified><Size>123</Size></Contents>"
                               "<Contents><Key>fleet/cas/b&amp;c.img</Key><Size>0</Size></Contents>"
                               "<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>",
                          &s, &t, tok),
                     KC_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.keys[0], "fleet/ac/a.sm_90");
    assert_int_equal(s.sizes[0], 123);
    assert_int_equal(s.times[0], 1795885190);
    assert_string_equal(s.keys[1], "fleet/cas/b&c.img");
    assert_int_equal(s.times[1], 0);
    assert_int_equal(t, 1);
    assert_string_equal(tok, "tok/+=");
    /* The last page; an empty one. */
    assert_int_equal(
        page(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents></ListBucketResult>", &s, &t, tok),
        KC_OK);
    assert_int_equal(t, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(page(HEAD "<KeyCount>0</KeyCount></ListBucketResult>", &s, &t, tok), KC_OK);
    assert_int_equal(s.n, 0);
    /* A key that spells the page's elements is only a key. */
    assert_int_equal(page(HEAD "<Contents><Key>&lt;IsTruncated&gt;true</Key></Contents><IsTruncated>false"
                               "</IsTruncated></ListBucketResult>",
                          &s, &t, tok),
                     KC_OK);
    assert_int_equal(t, 0);
}

static void test_hostile_pages_are_refused(void **state) {
    (void)state;
    seen s;
    int t;
    char tok[64];
    const char *bad[] = {
        "<html>not a listing</html>",
        HEAD "<Contents><Key>a</Key>",
        HEAD "<Contents><Key>a</Contents>",
        HEAD "<Contents><Key>a<b>c</b></Key></Contents>",
        HEAD "<Contents><Key>a&bogus;</Key></Contents>",
        HEAD "<Contents><Size>1</Size></Contents>",
        HEAD "<Contents><Key>a</Key><Size>-1</Size></Contents>",
        HEAD "<Contents><Key>a</Key><Size>12x</Size></Contents>",
        HEAD "<IsTruncated>true</IsTruncated></ListBucketResult>",
        HEAD "<IsTruncated>true</IsTruncated><NextContinuationToken>0123456789012345678901234567890123456789"
             "012345678901234567890123456789</NextContinuationToken></ListBucketResult>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (page(bad[i], &s, &t, tok) != KC_ECORRUPT) fail_msg("page %zu was not refused: %s", i, bad[i]);
    /* A key over the bound; more objects than a page holds. */
    size_t cap = 2 * (KC_S3_KEY_MAX + 64) + 64 * (KC_S3_LIST_MAX + 2);
    char *x = malloc(cap);
    int n = snprintf(x, cap, HEAD "<Contents><Key>");
    memset(x + n, 'k', KC_S3_KEY_MAX + 1), n += KC_S3_KEY_MAX + 1;
    n += snprintf(x + n, cap - (size_t)n, "</Key></Contents></ListBucketResult>");
    assert_int_equal(page(x, &s, &t, tok), KC_ECORRUPT);
    n = snprintf(x, cap, HEAD);
    for (int i = 0; i <= KC_S3_LIST_MAX; i++)
        n += snprintf(x + n, cap - (size_t)n, "<Contents><Key>k</Key></Contents>");
    assert_int_equal(page(x, &s, &t, tok), KC_ECORRUPT);
    free(x);
    /* Bytes past the length given are never read: the page cut before its close tag. */
    const char *cut = HEAD "<Contents><Key>abc</Key></Contents>";
    memset(&s, 0, sizeof s);
    assert_int_equal(kc_s3_list_page(cut, strlen(cut) - 12, collect, &s, &t, tok, 64), KC_ECORRUPT);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_a_page), cmocka_unit_test(test_hostile_pages_are_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
