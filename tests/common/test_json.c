/* SPDX-License-Identifier: Apache-2.0 */
/* test_json.c — the one JSON reader behind graph specs and manifests ([Note: spec JSON] and
 * [Note: one name once] in common/json.c). */
#include "helpers.h"

#include <math.h>

#include "common/internal.h"
#include "common/json.h"

static int parse(kc_json_doc *doc, const char *text, size_t *at) {
    kc_json_err e = {99999, "x"};
    int rc = kc_json_read(doc, text, strlen(text), &e);
    if (at) *at = e.at;
    return rc;
}

static void test_a_tree_in_the_text_order(void **state) {
    (void)state;
    kc_json_doc doc;
    const char *t =
        "\xEF\xBB\xBF {\"name\": \"x\", \"n\": [1, -2, 0, true, false, null, {}, []], \"o\": {\"a\": \"\"}}\n";
    assert_int_equal(parse(&doc, t, NULL), KC_OK);
    const kc_json *r = doc.root;
    assert_true(kc_json_is(r, KC_JSON_OBJECT));
    assert_int_equal(kc_json_count(r), 3);
    assert_string_equal(kc_json_str(kc_json_get(r, "name")), "x");
    assert_null(kc_json_get(r, "nam"));
    assert_null(kc_json_get(kc_json_get(r, "n"), "name")); /* an array has no members */
    const kc_json *n = kc_json_get(r, "n");
    assert_int_equal(kc_json_count(n), 8);
    const int types[] = {KC_JSON_NUMBER, KC_JSON_NUMBER, KC_JSON_NUMBER, KC_JSON_TRUE,
                         KC_JSON_FALSE,  KC_JSON_NULL,   KC_JSON_OBJECT, KC_JSON_ARRAY};
    size_t i = 0;
    const kc_json *x;
    KC_JSON_EACH(x, n) {
        assert_true(kc_json_is(x, (kc_json_type)types[i]));
        assert_ptr_equal(kc_json_at(n, i), x);
        assert_null(x->key);
        i++;
    }
    assert_int_equal(i, 8);
    assert_true(kc_json_at(n, 1)->num == -2.0);
    assert_null(kc_json_at(n, 8));
    assert_int_equal(kc_json_count(kc_json_at(n, 6)), 0);
    assert_string_equal(kc_json_get(r, "o")->child->key, "a");
    assert_string_equal(kc_json_str(kc_json_get(kc_json_get(r, "o"), "a")), "");
    kc_json_free(&doc);
    kc_json_free(&doc); /* freed twice: nothing left to free */
}

static void test_strings_are_unescaped(void **state) {
    (void)state;
    kc_json_doc doc;
    assert_int_equal(
        parse(&doc, "[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\\ud83d\\ude00\", \"\xc3\xa9\"]", NULL),
        KC_OK);
    assert_string_equal(kc_json_str(kc_json_at(doc.root, 0)), "a\"b\\c/d\b\f\n\r\t");
    assert_string_equal(kc_json_str(kc_json_at(doc.root, 1)), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_string_equal(kc_json_str(kc_json_at(doc.root, 2)), "\xc3\xa9");
    kc_json_free(&doc);
}

static void test_numbers_as_strtod_reads_them(void **state) {
    (void)state;
    kc_json_doc doc;
    assert_int_equal(
        parse(&doc, "[0, 256, 999999999999999, 12345678901234567890, 1.5, -0.25, 1e3, 2E-2, 9007199254740993, -0]",
              NULL),
        KC_OK);
    const double want[] = {
        0, 256, 999999999999999.0, 12345678901234567890.0, 1.5, -0.25, 1000, 0.02, 9007199254740992.0, 0};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const kc_json *v = kc_json_at(doc.root, i);
        assert_true(kc_json_is(v, KC_JSON_NUMBER));
        if (v->num != want[i]) fail_msg("number %zu: %.17g, not %.17g", i, v->num, want[i]);
    }
    assert_true(signbit(kc_json_at(doc.root, 9)->num)); /* -0 as strtod reads it */
    kc_json_free(&doc);
}

/* Not JSON, with where reading stopped: what spec.c turns into "file:line:col: not valid JSON". */
static void test_what_is_not_json(void **state) {
    (void)state;
    struct {
        const char *text;
        size_t at;
    } cases[] = {
        {"", 0},
        {"   ", 3},
        {"{\"a\": 1,}", 8},
        {"[1, 2,\n  ]", 9},
        {"{\"a\" 1}", 5},
        {"{a: 1}", 1},
        {"[01]", 2},
        {"[1.]", 3},
        {"[1e]", 3},
        {"[+1]", 1},
        {"[.5]", 1},
        {"[tru]", 1},
        {"[\"a\\x\"]", 3},
        {"[\"a\tb\"]", 3},      /* a raw control character in a string */
        {"[\"a\\u0000b\"]", 9}, /* a NUL would cut the name short */
        {"[\"\\udc00\"]", 8},   /* a low surrogate alone */
        {"[\"\\ud800x\"]", 8},  /* a high surrogate alone */
        {"[\"\\u12g4\"]", 4},
        {"[\"abc", 5},
        {"{\"a\": 1} {\"b\": 2}", 9}, /* something after the value */
        {"[1] x", 4},
        {"\f[]", 0}, /* only space, tab, CR and LF are whitespace */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_json_doc doc = {(kc_json *)1, NULL, NULL};
        size_t at = 12345;
        int rc = parse(&doc, cases[i].text, &at);
        if (rc != KC_EINVAL) fail_msg("case %zu (%s): %d", i, cases[i].text, rc);
        if (at != cases[i].at) fail_msg("case %zu (%s): stopped at %zu, not %zu", i, cases[i].text, at, cases[i].at);
        assert_null(doc.root);
        assert_null(doc.blocks);
    }
    /* A NUL byte inside the text given is not whitespace. */
    kc_json_doc doc;
    assert_int_equal(kc_json_parse(&doc, "[1]\0", 4, NULL), KC_EINVAL);
    assert_int_equal(kc_json_parse(&doc, "[1]\0", 3, NULL), KC_OK);
    kc_json_free(&doc);
    size_t at = 0; /* kc_json_parse: the place only */
    assert_int_equal(kc_json_parse(&doc, "[1, 2", 5, &at), KC_EINVAL);
    assert_int_equal(at, 5);
}

/* Nesting is capped (the reader recurses): 1000 deep reads, 1001 is refused, never a crash. */
static void test_nesting_is_capped(void **state) {
    (void)state;
    char *t = malloc(2 * 100000 + 1);
    const int depths[] = {1000, 1001, 100000};
    for (size_t i = 0; i < 3; i++) {
        int depth = depths[i];
        memset(t, '[', (size_t)depth);
        memset(t + depth, ']', (size_t)depth);
        t[2 * depth] = '\0';
        kc_json_doc doc;
        assert_int_equal(parse(&doc, t, NULL), depth <= 1000 ? KC_OK : KC_EINVAL);
        kc_json_free(&doc);
    }
    free(t);
}

/* A small document is one allocation; a big one a few blocks; every failed allocation is
 * KC_ENOMEM with nothing leaked (ASan checks the leaks). */
static void test_allocations(void **state) {
    (void)state;
    kc_json_doc doc;
    const char *small =
        "{\"name\": \"x\", \"kernels\": [{\"id\": \"k\", \"file\": \"k.cu\", \"entry\": \"k\"}], \"n\": [1, 2, 3]}";
    kc_alloc_fail_at(2, false); /* the second allocation would fail: there is none */
    assert_int_equal(parse(&doc, small, NULL), KC_OK);
    assert_int_equal(kc_alloc_fail_count(), 0);
    kc_alloc_fail_at(0, false);
    kc_json_free(&doc);
    kc_alloc_fail_at(1, false);
    assert_int_equal(parse(&doc, small, NULL), KC_ENOMEM);
    kc_alloc_fail_at(0, false);
    assert_null(doc.root);
    /* 20000 values, 2 bytes each: more nodes than the first block holds */
    size_t n = 20000;
    char *big = malloc(2 * n + 2);
    big[0] = '[';
    for (size_t i = 0; i < n; i++) big[1 + 2 * i] = '7', big[2 + 2 * i] = i + 1 < n ? ',' : ']';
    big[2 * n + 1] = '\0';
    int failed = 0;
    for (long nth = 1;; nth++) {
        kc_alloc_fail_at(nth, false);
        int rc = parse(&doc, big, NULL);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) {
            assert_int_equal(kc_json_count(doc.root), n);
            assert_true(kc_json_at(doc.root, n - 1)->num == 7.0);
            kc_json_free(&doc);
            break;
        }
        assert_int_equal(rc, KC_ENOMEM);
        assert_null(doc.root);
        failed++;
        assert_true(nth < 64);
    }
    assert_true(failed >= 2); /* the first block, and at least one more */
    free(big);
}

/* kc_json_parse_in: a document whose first block fits the caller's scratch (even misaligned) makes
 * no allocation and frees nothing of it; one that does not fit allocates as kc_json_parse does;
 * a failed parse in scratch leaves nothing to free.  ASan checks that no scratch is freed. */
static void test_scratch(void **state) {
    (void)state;
    static char scratch[4096 + 1];
    const char *small = "{\"name\": \"x\", \"n\": [1, 2, \"three\"]}";
    kc_json_doc doc;
    kc_alloc_fail_at(1, false); /* any allocation would fail */
    assert_int_equal(kc_json_parse_in(&doc, small, strlen(small), NULL, scratch + 1, sizeof scratch - 1), KC_OK);
    kc_alloc_fail_at(0, false);
    assert_string_equal(kc_json_str(kc_json_at(kc_json_get(doc.root, "n"), 2)), "three");
    kc_json_free(&doc);
    kc_alloc_fail_at(1, false); /* too small a scratch: the first block is allocated */
    assert_int_equal(kc_json_parse_in(&doc, small, strlen(small), NULL, scratch, 64), KC_ENOMEM);
    kc_alloc_fail_at(0, false);
    assert_int_equal(kc_json_parse_in(&doc, small, strlen(small), NULL, scratch, 64), KC_OK);
    assert_string_equal(kc_json_str(kc_json_get(doc.root, "name")), "x");
    kc_json_free(&doc);
    kc_json_err e;
    assert_int_equal(kc_json_parse_in(&doc, "[1, 2", 5, &e, scratch, sizeof scratch), KC_EINVAL);
    assert_int_equal(e.at, 5);
    assert_null(doc.blocks);
    /* more values than the first block in scratch holds: later blocks are allocated, and freed */
    char big[2 * 100 + 2];
    big[0] = '[';
    for (int i = 0; i < 100; i++) big[1 + 2 * i] = '5', big[2 + 2 * i] = i + 1 < 100 ? ',' : ']';
    big[2 * 100 + 1] = '\0';
    assert_int_equal(kc_json_parse_in(&doc, big, strlen(big), NULL, scratch, sizeof scratch), KC_OK);
    assert_int_equal(kc_json_count(doc.root), 100);
    assert_true(kc_json_at(doc.root, 99)->num == 5.0);
    assert_non_null(doc.lent);
    assert_true(doc.blocks != doc.lent); /* a block of its own, before the one in scratch */
    kc_json_free(&doc);
}

/* A member name given twice is an error at any depth, said at the second with the first's place
 * ([Note: one name once]): small objects as they are read, big ones (sorted) once closed. */
static void test_a_name_twice(void **state) {
    (void)state;
    struct {
        const char *text;
        size_t at;
        const char *want;
    } cases[] = {
        {"{\"graphs\": [\"a\"], \"graphs\": [\"b\"]}", 18, "field \"graphs\" appears twice (first at 1:2; keep one)"},
        {"{\"a\": {\"x\": 1,\n \"y\": 2, \"x\": 3}}", 24, "field \"x\" appears twice (first at 1:8; keep one)"},
        {"[[{\"k\": [], \"k\": {}}]]", 12, "\"k\" appears twice"},
        {"{\"\\u0041\": 1, \"A\": 2}", 14, "\"A\" appears twice"},                 /* the same name, however written */
        {"{\"a\\nb\": 1, \"a\\nb\": 2}", 12, "field \"a\\u000ab\" appears twice"}, /* printed escaped */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_json_doc doc;
        kc_json_err e;
        int rc = kc_json_read(&doc, cases[i].text, strlen(cases[i].text), &e);
        if (rc != KC_EINVAL || e.at != cases[i].at || !strstr(e.what, cases[i].want))
            fail_msg("case %zu: rc %d, at %zu (want %zu), '%s' (want '%s')", i, rc, e.at, cases[i].at, e.what,
                     cases[i].want);
        assert_null(doc.root);
    }
    /* Names that differ, and the same name in two objects, are fine. */
    kc_json_doc doc;
    assert_int_equal(parse(&doc, "[{\"a\": 1, \"ab\": 2, \"b\": 3}, {\"a\": 1}, {\"a\": {\"a\": 1}}]", NULL), KC_OK);
    kc_json_free(&doc);
    /* A big object: 5000 names, the 4000th given again at the end and the 300th again before it. */
    size_t n = 5000;
    char *big = malloc(n * 16 + 64), *p = big;
    p += sprintf(p, "{");
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s\"k%zu\": 0", i ? ", " : "", i);
    p += sprintf(p, "}");
    assert_int_equal(parse(&doc, big, NULL), KC_OK);
    assert_int_equal(kc_json_count(doc.root), n);
    kc_json_free(&doc);
    p--;
    size_t second = (size_t)(p - big) + 2;
    p += sprintf(p, ", \"k300\": 1, \"k3999\": 2}");
    size_t at = 0;
    kc_json_err e;
    assert_int_equal(kc_json_read(&doc, big, strlen(big), &e), KC_EINVAL);
    at = e.at;
    if (at != second || !strstr(e.what, "field \"k300\" appears twice (first at 1:"))
        fail_msg("at %zu (want %zu): '%s'", at, second, e.what);
    free(big);
}

/* Offsets of values and member names, for errors at a place (kc_json_fail). */
static void test_places(void **state) {
    (void)state;
    kc_json_doc doc;
    const char *t = "{\"graphs\": [\"a\",\n  \"b\"],\n \"archs\": 7}";
    assert_int_equal(parse(&doc, t, NULL), KC_OK);
    const kc_json *g = kc_json_get(doc.root, "graphs"), *a = kc_json_get(doc.root, "archs");
    assert_int_equal(doc.root->at, 0);
    assert_int_equal(g->key_at, 1);
    assert_int_equal(g->at, 11);
    assert_int_equal(kc_json_at(g, 1)->at, 19);
    int line, col;
    kc_json_place(t, strlen(t), kc_json_at(g, 1)->at, &line, &col);
    assert_int_equal(line, 2);
    assert_int_equal(col, 3);
    assert_int_equal(kc_json_fail("m.json", t, strlen(t), a->key_at, "unknown field \"%s\"", a->key), KC_EINVAL);
    assert_string_equal(kc_error_last()->message, "m.json:3:2: unknown field \"archs\"");
    kc_json_free(&doc);
    /* a syntax error, said the same way */
    kc_json_err e;
    assert_int_equal(kc_json_read(&doc, "{\"a\": 1,\n  }", 12, &e), KC_EINVAL);
    assert_int_equal(kc_json_fail_parse("m.json", "{\"a\": 1,\n  }", 12, &e), KC_EINVAL);
    assert_string_equal(kc_error_last()->message,
                        "m.json:2:3: not valid JSON: a member name expected (a string in double quotes)");
    char out[400];
    assert_string_equal(kc_json_printable("a\"b\\c\x1b", out), "a\\\"b\\\\c\\u001b");
    char longname[100];
    memset(longname, 'x', 99), longname[99] = '\0';
    assert_int_equal(strlen(kc_json_printable(longname, out)), 67); /* 64 and "..." */
    static char cont[2000]; /* a lead byte at 63, then continuation bytes without end (not UTF-8) */
    memset(cont, 'x', 63), cont[63] = (char)0xC3, memset(cont + 64, 0x80, sizeof cont - 65);
    assert_int_equal(strlen(kc_json_printable(cont, out)), 70); /* 64, 3 more at most, "..." */
}

/* Hostile input: a number out of a double's range, a text over the cap (refused unread). */
static void test_limits(void **state) {
    (void)state;
    kc_json_doc doc;
    kc_json_err e;
    assert_int_equal(parse(&doc, "[1e308, -1e308, 1e-400]", NULL), KC_OK); /* an underflow is 0, as strtod reads it */
    kc_json_free(&doc);
    const char *huge[] = {"[1, 1e309]", "[-1e309]", "{\"a\": 123456789e999}"};
    const size_t huge_at[] = {4, 1, 6};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(kc_json_read(&doc, huge[i], strlen(huge[i]), &e), KC_EINVAL);
        assert_int_equal(e.at, huge_at[i]);
        assert_non_null(strstr(e.what, "beyond a double's range"));
    }
    static const char small[] = "[]";
    assert_int_equal(kc_json_read(&doc, small, (size_t)KC_JSON_MAX_BYTES + 1, &e), KC_EINVAL); /* not read */
    assert_non_null(strstr(e.what, "over 64 MiB"));
    assert_null(doc.root);
    char *deep = malloc(2002);
    memset(deep, '[', 1001), memset(deep + 1001, ']', 1001), deep[2002 - 1] = '\0';
    assert_int_equal(kc_json_read(&doc, deep, 2001, &e), KC_EINVAL);
    assert_non_null(strstr(e.what, "nested deeper than 1000"));
    free(deep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_tree_in_the_text_order),
        cmocka_unit_test(test_strings_are_unescaped),
        cmocka_unit_test(test_numbers_as_strtod_reads_them),
        cmocka_unit_test(test_what_is_not_json),
        cmocka_unit_test(test_nesting_is_capped),
        cmocka_unit_test(test_allocations),
        cmocka_unit_test(test_scratch),
        cmocka_unit_test(test_a_name_twice),
        cmocka_unit_test(test_places),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
