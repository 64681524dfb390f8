/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_manifest.c — manifests: paths resolved against the manifest's folder, targets
 * validated and de-duplicated, --arch lists, and every error naming the file and the place
 * (read by the strict JSON reader: a field twice or an unknown field is an error).
 */
#include "kcache.h"
#include "helpers.h"

static void expect_error(const char *json, const char *want) {
    kc_manifest *m = (kc_manifest *)1;
    assert_int_equal(kc_manifest_parse(&m, json, strlen(json), "/base", "m.json"), KC_EINVAL);
    assert_null(m);
    if (!strstr(kc_error_last()->message, want))
        fail_msg("'%.200s': message '%s' lacks '%s'", json, kc_error_last()->message, want);
}

static void test_parse_resolves_and_dedupes(void **state) {
    (void)state;
    const char *j = "{\"graphs\": [\"a.json\", \"/abs/b.json\", \"sub/c.json\"],\n"
                    " \"archs\": [\"sm_80\", \"sm_90a\", \"sm_80\", \"compute_90\"]}";
    kc_manifest *m;
    assert_int_equal(kc_manifest_parse(&m, j, strlen(j), "/base", "m.json"), KC_OK);
    assert_int_equal(kc_manifest_graph_count(m), 3);
    assert_string_equal(kc_manifest_graph(m, 0), "/base/a.json");
    assert_string_equal(kc_manifest_graph(m, 1), "/abs/b.json");
    assert_string_equal(kc_manifest_graph(m, 2), "/base/sub/c.json");
    assert_null(kc_manifest_graph(m, 3));
    assert_int_equal(kc_manifest_arch_count(m), 3); /* the repeated sm_80 is dropped */
    assert_string_equal(kc_manifest_arch(m, 0), "sm_80");
    assert_string_equal(kc_manifest_arch(m, 1), "sm_90a");
    assert_string_equal(kc_manifest_arch(m, 2), "compute_90");
    assert_int_equal(kc_manifest_set_archs(m, "sm_86,sm_86,compute_80"), KC_OK);
    assert_int_equal(kc_manifest_arch_count(m), 2);
    assert_string_equal(kc_manifest_arch(m, 1), "compute_80");
    /* A bad list changes nothing. */
    assert_int_equal(kc_manifest_set_archs(m, "sm_90,sm_9x"), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "sm_9x"));
    assert_int_equal(kc_manifest_set_archs(m, ""), KC_EINVAL);
    assert_int_equal(kc_manifest_set_archs(m, "sm_90,,sm_80"), KC_EINVAL);
    assert_int_equal(kc_manifest_arch_count(m), 2);
    kc_manifest_free(m);
    kc_manifest_free(NULL);
}

static void test_errors_name_the_place(void **state) {
    (void)state;
    expect_error("{\"graphs\": [\n  \"a.json\",\n  ]}", "m.json:3:3: not valid JSON");
    expect_error("", "m.json:1:1: not valid JSON");
    expect_error("[]", "must be a JSON object");
    expect_error("{}", "\"graphs\" must be a non-empty array");
    expect_error("{\"graphs\": []}", "\"graphs\" must be a non-empty array");
    expect_error("{\"graphs\": [\"a.json\", 7]}", "graphs[1] must be a spec path");
    expect_error("{\"graphs\": [\"\"]}", "graphs[0] must be a spec path");
    expect_error("{\"graphs\": [\"a\"], \"archs\": \"sm_90\"}", "\"archs\" must be an array");
    expect_error("{\"graphs\": [\"a\"], \"archs\": [\"sm_90\", \"volta\"]}",
                 "unknown target 'volta' (manifest m.json:1:38, archs[1])");
    expect_error("{\"graphs\": [\"a\"], \"archs\": [null]}", "m.json:1:29: archs[0] is not a target");
    const char nul[] = "{\"graphs\": [\"a\0b\"]}";
    kc_manifest *m;
    assert_int_equal(kc_manifest_parse(&m, nul, sizeof nul - 1, NULL, NULL), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "NUL"));
}

static void test_caps(void **state) {
    (void)state;
    size_t n = (size_t)KC_MANIFEST_MAX_GRAPHS + 1, cap = n * 6 + 64;
    char *j = malloc(cap), *p = j;
    p += sprintf(p, "{\"graphs\": [");
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s\"g\"", i ? "," : "");
    sprintf(p, "]}");
    expect_error(j, "more than 10000 graphs");
    p = j + sprintf(j, "{\"graphs\": [\"g\"], \"archs\": [");
    kc_target_list table = KC_TARGET_LIST_INIT; /* targets kcache knows, more of them than the cap */
    assert_int_equal(kc_target_table(&table), KC_OK);
    char names[6 * KC_TARGET_LIST_MAX][16];
    size_t nn = kc_target_list_names(&table, names, 6 * KC_TARGET_LIST_MAX);
    assert_true(nn > KC_MANIFEST_MAX_ARCHS);
    for (int i = 0; i <= KC_MANIFEST_MAX_ARCHS; i++) p += sprintf(p, "%s\"%s\"", i ? "," : "", names[i]);
    sprintf(p, "]}");
    expect_error(j, "more than 64 targets");
    free(j);
}

/* A field given twice — at the top (the second "graphs" was dropped in silence) or inside a value —
 * or one the format does not know is an error naming the place; so is a value of the wrong type. */
static void test_strict_fields(void **state) {
    (void)state;
    expect_error("{\"graphs\":[\"softmax.json\"],\"graphs\":[\"layer_norm.json\"], \"archs\": [\"sm_90\"]}",
                 "m.json:1:28: field \"graphs\" appears twice (first at 1:2; keep one)");
    expect_error("{\"graphs\": [\"a.json\"],\n \"archs\": [\"sm_90\"],\n \"archs\": [\"sm_80\"]}",
                 "m.json:3:2: field \"archs\" appears twice (first at 2:2; keep one)");
    expect_error("{\"graphs\": [\"a.json\", {\"x\": 1, \"x\": 2}]}", "m.json:1:32: field \"x\" appears twice");
    expect_error("{\"graphs\": [\"a.json\"], \"arches\": [\"sm_90\"]}",
                 "m.json:1:24: unknown field \"arches\" (known here: graphs, archs)");
    expect_error("{\"graphs\": [\"a.json\"],\n  \"name\": \"fleet\"}", "m.json:2:3: unknown field \"name\"");
    expect_error("{\"graphs\": \"a.json\"}",
                 "m.json:1:12: \"graphs\" must be a non-empty array of spec paths, not a string");
    expect_error("{\"graphs\": {}}", "\"graphs\" must be a non-empty array of spec paths, not an object");
    expect_error("{\"graphs\": [\"a\"], \"archs\": {\"sm_90\": true}}",
                 "m.json:1:28: \"archs\" must be an array of targets");
    expect_error("{\"graphs\": [\"a\", true]}",
                 "m.json:1:18: graphs[1] must be a spec path (a non-empty string), not a boolean");
    expect_error("{\"graphs\": [\"a\"], \"archs\": [\"sm_90\",\n 80]}", "m.json:2:2: archs[1] is not a target");
    expect_error("{\"graphs\": [\"a\"]} {}", "m.json:1:19: not valid JSON: something after the JSON value");
    expect_error("{\"graphs\": [\"a\", 1e999]}", "m.json:1:18: a number beyond a double's range");
    expect_error("{\"graphs\": [\"a\\u0000b\"]}", "m.json:1:21: not valid JSON: a bad \\u escape");
    expect_error("\"graphs\"", "m.json:1:1: must be a JSON object with \"graphs\", not a string");
}

/* Every manifest valid before stays valid with the same meaning: the bundled one, a byte order mark,
 * "archs" empty or absent, escapes in paths. */
static void test_valid_ones_keep_their_meaning(void **state) {
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/manifest.json", KC_KERNELS_DIR);
    kc_manifest *m;
    assert_int_equal(kc_manifest_load(&m, path), KC_OK);
    assert_int_equal(kc_manifest_graph_count(m), 10);
    snprintf(path, sizeof path, "%s/mlp_block.json", KC_KERNELS_DIR);
    assert_string_equal(kc_manifest_graph(m, 0), path);
    snprintf(path, sizeof path, "%s/linear.json", KC_KERNELS_DIR);
    assert_string_equal(kc_manifest_graph(m, 9), path);
    assert_int_equal(kc_manifest_arch_count(m), 3);
    assert_string_equal(kc_manifest_arch(m, 2), "compute_80");
    kc_manifest_free(m);
    const char *j = "\xEF\xBB\xBF{\"archs\": [], \"graphs\": [\"d\\/\\u00e9.json\"]}\r\n";
    assert_int_equal(kc_manifest_parse(&m, j, strlen(j), "/b", "m.json"), KC_OK);
    assert_string_equal(kc_manifest_graph(m, 0), "/b/d/\xc3\xa9.json");
    assert_int_equal(kc_manifest_arch_count(m), 0);
    kc_manifest_free(m);
}

/* Hostile sizes are refused cleanly: over the byte cap, nested past the reader's limit, an object of
 * many names (checked by sorting, not name by name). */
static void test_hostile_sizes(void **state) {
    (void)state;
    kc_manifest *m = (kc_manifest *)1;
    static const char tiny[] = "{}";
    assert_int_equal(kc_manifest_parse(&m, tiny, (size_t)KC_MANIFEST_MAX_BYTES + 1, NULL, "m.json"), KC_EINVAL);
    assert_null(m);
    assert_non_null(strstr(kc_error_last()->message, "m.json: over 16777216 bytes"));
    size_t n = 200000;
    char *j = malloc(n * 12 + 64), *p = j;
    p += sprintf(p, "{\"graphs\": [\"a\"], \"x\": ");
    memset(p, '[', n), p += n;
    memset(p, ']', n), p += n;
    sprintf(p, "}");
    expect_error(j, "nested deeper than 1000 arrays and objects");
    p = j + sprintf(j, "{\"graphs\": [\"a\"], \"x\": {");
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s\"%zu\":0", i ? "," : "", i);
    sprintf(p, ",\"7\":1}}");
    expect_error(j, "field \"7\" appears twice");
    free(j);
}

static void test_load_from_a_file(void **state) {
    (void)state;
    char *d = kct_tmpdir("manifest"), path[512];
    snprintf(path, sizeof path, "%s/m.json", d);
    const char *j = "{\"graphs\": [\"x.json\"]}";
    assert_int_equal(kct_write(path, j, strlen(j)), 0);
    kc_manifest *m;
    assert_int_equal(kc_manifest_load(&m, path), KC_OK);
    char want[600];
    snprintf(want, sizeof want, "%s/x.json", d);
    assert_string_equal(kc_manifest_graph(m, 0), want);
    assert_int_equal(kc_manifest_arch_count(m), 0);
    kc_manifest_free(m);
    snprintf(path, sizeof path, "%s/none.json", d);
    assert_int_equal(kc_manifest_load(&m, path), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "no such file"));
    assert_int_equal(kc_manifest_load(&m, d), KC_EINVAL); /* a directory */
    kct_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_resolves_and_dedupes),
        cmocka_unit_test(test_errors_name_the_place),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_load_from_a_file),
        cmocka_unit_test(test_strict_fields),
        cmocka_unit_test(test_valid_ones_keep_their_meaning),
        cmocka_unit_test(test_hostile_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
