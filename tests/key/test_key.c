/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_key.c — keys are canonical and stable: golden keys (tests/golden/keys.txt), every
 * single-component change changes the key and only that component's digest, stable
 * symbol ids with linear probing, validation of tensor metadata.
 *
 * Regenerate the golden file (only with a format change): KCACHE_REGEN_GOLDEN=1.
 */
#include "helpers.h"

#include <xxhash.h>

#include "kcache.h"

static kc_key_builder *base_builder(void) {
    kc_key_builder *kb;
    assert_int_equal(kc_key_builder_new(&kb), KC_OK);
    assert_int_equal(
        kc_key_add_string(kb, KC_COMP_GRAPH, "source", "extern \"C\" __global__ void k(float *x) { x[0] = 1; }"),
        KC_OK);
    assert_int_equal(kc_key_add_string(kb, KC_COMP_GRAPH, "entry", "k"), KC_OK);
    assert_int_equal(kc_key_add_string(kb, KC_COMP_OPTIONS, "opt", "-default-device"), KC_OK);
    assert_int_equal(kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "nvrtc", "13.0"), KC_OK);
    assert_int_equal(kc_key_add_string(kb, KC_COMP_BACKEND, "id", "cuda"), KC_OK);
    assert_int_equal(kc_key_add_u64(kb, KC_COMP_GLOBALS, "grad_mode", 1), KC_OK);
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{64, NULL}, {128, NULL}}, {{128, NULL}, {1, NULL}}, 1};
    assert_int_equal(kc_key_add_tensor(kb, &t), KC_OK);
    kc_tensor_meta s = {
        KC_DTYPE_BF16, KC_DEVICE_CUDA, 2, {{0, "input 1, dim 0"}, {256, NULL}}, {{256, NULL}, {1, NULL}}, 0};
    assert_int_equal(kc_key_add_tensor(kb, &s), KC_OK);
    return kb;
}

static void key_hex_of(kc_key_builder *kb, char hex[33]) {
    kc_key k;
    assert_int_equal(kc_key_finish(kb, &k), KC_OK);
    kc_key_to_hex(&k, hex);
}

/* The golden cases: name and a function building the key. */
static void golden_empty(kc_key_builder *kb) { (void)kb; }
static void golden_base(kc_key_builder *kb) { (void)kb; }
static void golden_bytes(kc_key_builder *kb) {
    uint8_t b[256];
    for (int i = 0; i < 256; i++) b[i] = (uint8_t)i;
    kc_key_add_bytes(kb, KC_COMP_EXTRA, "all bytes", b, sizeof b);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "max", UINT64_MAX);
}

static void compute_golden(char *out, size_t cap) {
    struct {
        const char *name;
        void (*fn)(kc_key_builder *);
        int base;
    } cases[] = {
        {"empty", golden_empty, 0},
        {"base", golden_base, 1},
        {"bytes", golden_bytes, 0},
    };
    size_t n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_key_builder *kb;
        if (cases[i].base) kb = base_builder();
        else assert_int_equal(kc_key_builder_new(&kb), KC_OK);
        cases[i].fn(kb);
        char hex[33];
        key_hex_of(kb, hex);
        n += (size_t)snprintf(out + n, cap - n, "%s %s\n", cases[i].name, hex);
        kc_key_builder_free(kb);
    }
}

static void test_golden_keys(void **state) {
    (void)state;
    char got[4096];
    compute_golden(got, sizeof got);
    const char *path = KC_GOLDEN_DIR "/keys.txt";
    if (getenv("KCACHE_REGEN_GOLDEN")) assert_int_equal(kct_write(path, got, strlen(got)), 0);
    size_t len;
    char *want = (char *)kct_read(path, &len);
    assert_non_null(want);
    want[len] = '\0';
    assert_string_equal(got, want);
    free(want);
}

static void test_same_inputs_same_key(void **state) {
    (void)state;
    kc_key_builder *a = base_builder(), *b = base_builder();
    char ha[33], hb[33];
    key_hex_of(a, ha);
    key_hex_of(b, hb);
    assert_string_equal(ha, hb);
    kc_key_builder_free(a);
    kc_key_builder_free(b);
}

/* Adding one item to one component changes the key and that component's digest alone. */
static void test_each_component_matters(void **state) {
    (void)state;
    kc_key_builder *ref = base_builder();
    kc_key kref;
    kc_key_finish(ref, &kref);
    for (int c = KC_COMP_GRAPH; c < KC_COMP_COUNT; c++) {
        kc_key_builder *kb = base_builder();
        assert_int_equal(kc_key_add_string(kb, (kc_component)c, "more", "x"), KC_OK);
        kc_key k;
        kc_key_finish(kb, &k);
        assert_memory_not_equal(k.bytes, kref.bytes, 16);
        for (int d = 0; d < KC_COMP_COUNT; d++) {
            kc_digest x, y;
            kc_key_component_digest(kb, (kc_component)d, &x);
            kc_key_component_digest(ref, (kc_component)d, &y);
            if (d == c) assert_memory_not_equal(x.bytes, y.bytes, 16);
            else assert_memory_equal(x.bytes, y.bytes, 16);
        }
        kc_key_builder_free(kb);
    }
    kc_key_builder_free(ref);
}

/* Labels and lengths are hashed: ("a","bc") differs from ("ab","c"). */
static void test_no_ambiguous_concatenation(void **state) {
    (void)state;
    kc_key_builder *a, *b;
    kc_key_builder_new(&a);
    kc_key_builder_new(&b);
    kc_key_add_string(a, KC_COMP_GRAPH, "s", "ab");
    kc_key_add_string(a, KC_COMP_GRAPH, "s", "c");
    kc_key_add_string(b, KC_COMP_GRAPH, "s", "a");
    kc_key_add_string(b, KC_COMP_GRAPH, "s", "bc");
    char ha[33], hb[33];
    key_hex_of(a, ha);
    key_hex_of(b, hb);
    assert_string_not_equal(ha, hb);
    kc_key_builder_free(a);
    kc_key_builder_free(b);
}

static void test_tensor_fields_have_fine_digests(void **state) {
    (void)state;
    kc_key_builder *a = base_builder();
    kc_key k;
    kc_key_finish(a, &k);
    assert_int_equal(kc_key_digest_count(a), KC_COMP_COUNT + 12);
    const char *name;
    kc_digest d;
    assert_int_equal(kc_key_digest_at(a, KC_COMP_COUNT + 3, &name, &d), KC_OK);
    assert_string_equal(name, "inputs[0].sizes");
    assert_int_equal(kc_key_digest_at(a, KC_COMP_COUNT + 6, &name, &d), KC_OK);
    assert_string_equal(name, "inputs[1].dtype");
    /* A changed size changes inputs[0].sizes only. */
    kc_key_builder *b;
    kc_key_builder_new(&b);
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{32, NULL}, {128, NULL}}, {{128, NULL}, {1, NULL}}, 1};
    kc_key_add_tensor(b, &t);
    kc_key_finish(b, &k);
    kc_key_builder *c;
    kc_key_builder_new(&c);
    t.sizes[0].value = 64;
    kc_key_add_tensor(c, &t);
    kc_key_finish(c, &k);
    for (size_t i = KC_COMP_COUNT; i < kc_key_digest_count(b); i++) {
        const char *n1, *n2;
        kc_digest d1, d2;
        kc_key_digest_at(b, i, &n1, &d1);
        kc_key_digest_at(c, i, &n2, &d2);
        assert_string_equal(n1, n2);
        if (strcmp(n1, "inputs[0].sizes") == 0) assert_memory_not_equal(d1.bytes, d2.bytes, 16);
        else assert_memory_equal(d1.bytes, d2.bytes, 16);
    }
    kc_key_builder_free(a);
    kc_key_builder_free(b);
    kc_key_builder_free(c);
}

/* [Note: stable symbol ids] */
static void test_symbol_ids_are_stable(void **state) {
    (void)state;
    kc_key_builder *a, *b;
    kc_key_builder_new(&a);
    kc_key_builder_new(&b);
    uint32_t x, y, z;
    assert_int_equal(kc_key_symbol_id(a, "input 0, dim 0", &x), KC_OK);
    /* b marks another dimension dynamic first: the first symbol keeps its id. */
    assert_int_equal(kc_key_symbol_id(b, "input 1, dim 1", &y), KC_OK);
    assert_int_equal(kc_key_symbol_id(b, "input 0, dim 0", &z), KC_OK);
    assert_int_equal(x, z);
    assert_int_equal(x, (uint32_t)XXH3_64bits("input 0, dim 0", 14));
    assert_int_equal(kc_key_symbol_id(a, "input 0, dim 0", &y), KC_OK);
    assert_int_equal(x, y);
    kc_key_builder_free(a);
    kc_key_builder_free(b);
}

typedef struct hn {
    uint32_t h;
    int i;
} hn;
static int by_h(const void *a, const void *b) {
    const hn *x = a, *y = b;
    return x->h < y->h ? -1 : x->h > y->h;
}

/* Two names whose hashes collide get distinct ids by linear probing. */
static void test_symbol_collision_probes(void **state) {
    (void)state;
    enum { N = 300000 };
    hn *v = malloc(N * sizeof *v);
    char name[32];
    for (int i = 0; i < N; i++) {
        int n = snprintf(name, sizeof name, "sym%d", i);
        v[i].h = (uint32_t)XXH3_64bits(name, (size_t)n);
        v[i].i = i;
    }
    qsort(v, N, sizeof *v, by_h);
    int a = -1, b = -1;
    for (int i = 1; i < N && a < 0; i++)
        if (v[i].h == v[i - 1].h) a = v[i - 1].i, b = v[i].i;
    assert_true(a >= 0); /* ~300k names in 2^32 ids: a collision is all but certain */
    char na[32], nb[32];
    snprintf(na, sizeof na, "sym%d", a);
    snprintf(nb, sizeof nb, "sym%d", b);
    uint32_t h = (uint32_t)XXH3_64bits(na, strlen(na));
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    uint32_t ia, ib;
    assert_int_equal(kc_key_symbol_id(kb, na, &ia), KC_OK);
    assert_int_equal(kc_key_symbol_id(kb, nb, &ib), KC_OK);
    assert_int_equal(ia, h);
    assert_int_equal(ib, h + 1);
    kc_key_builder_free(kb);
    free(v);
}

static void test_symbolic_vs_static(void **state) {
    (void)state;
    kc_key_builder *a, *b;
    kc_key_builder_new(&a);
    kc_key_builder_new(&b);
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 1, {{64, NULL}}, {{1, NULL}}, 0};
    kc_key_add_tensor(a, &t);
    t.sizes[0].sym = "input 0, dim 0";
    kc_key_add_tensor(b, &t);
    char ha[33], hb[33];
    key_hex_of(a, ha);
    key_hex_of(b, hb);
    assert_string_not_equal(ha, hb);
    /* A symbolic dim ignores the value. */
    kc_key_builder *c;
    kc_key_builder_new(&c);
    t.sizes[0].value = 999;
    kc_key_add_tensor(c, &t);
    char hc[33];
    key_hex_of(c, hc);
    assert_string_equal(hb, hc);
    kc_key_builder_free(a);
    kc_key_builder_free(b);
    kc_key_builder_free(c);
}

static void test_invalid_tensors_and_use(void **state) {
    (void)state;
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 9, {{0, NULL}}, {{0, NULL}}, 0};
    assert_int_equal(kc_key_add_tensor(kb, &t), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "rank"));
    t.rank = 1;
    t.dtype = (kc_dtype)99;
    assert_int_equal(kc_key_add_tensor(kb, &t), KC_EINVAL);
    t.dtype = KC_DTYPE_F32;
    t.sizes[0].value = -1;
    assert_int_equal(kc_key_add_tensor(kb, &t), KC_EINVAL);
    assert_int_equal(kc_key_add_string(kb, (kc_component)42, "x", "y"), KC_EINVAL);
    assert_int_equal(kc_key_add_bytes(kb, KC_COMP_GRAPH, "x", NULL, 3), KC_EINVAL);
    kc_key k;
    kc_digest d;
    assert_int_equal(kc_key_component_digest(kb, KC_COMP_GRAPH, &d), KC_EINVAL); /* not finished */
    assert_int_equal(kc_key_finish(kb, &k), KC_OK);
    assert_int_equal(kc_key_add_string(kb, KC_COMP_GRAPH, "late", "x"), KC_EINVAL);
    kc_key k2;
    kc_key_finish(kb, &k2);
    assert_memory_equal(k.bytes, k2.bytes, 16);
    kc_key_builder_free(kb);
    kc_key_builder_free(NULL);
}

static void test_hex_and_debug(void **state) {
    (void)state;
    kc_key_builder *kb = base_builder();
    kc_key k, k2;
    kc_key_finish(kb, &k);
    char hex[33];
    kc_key_to_hex(&k, hex);
    assert_int_equal(kc_key_from_hex(&k2, hex), KC_OK);
    assert_memory_equal(k.bytes, k2.bytes, 16);
    assert_int_equal(kc_key_from_hex(&k2, "abc"), KC_EINVAL);
    assert_int_equal(kc_key_from_hex(&k2, "zz000000000000000000000000000000"), KC_EINVAL);
    char *dbg;
    assert_int_equal(kc_key_debug(kb, &dbg), KC_OK);
    int lines = 0;
    for (char *p = dbg; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, KC_COMP_COUNT + 1);
    assert_non_null(strstr(dbg, "graph "));
    assert_non_null(strstr(dbg, hex));
    kc_free(dbg);
    kc_key_builder_free(kb);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_keys),
        cmocka_unit_test(test_same_inputs_same_key),
        cmocka_unit_test(test_each_component_matters),
        cmocka_unit_test(test_no_ambiguous_concatenation),
        cmocka_unit_test(test_tensor_fields_have_fine_digests),
        cmocka_unit_test(test_symbol_ids_are_stable),
        cmocka_unit_test(test_symbol_collision_probes),
        cmocka_unit_test(test_symbolic_vs_static),
        cmocka_unit_test(test_invalid_tensors_and_use),
        cmocka_unit_test(test_hex_and_debug),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
