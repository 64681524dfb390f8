/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_key_memo.c — the key a description remembers ([Note: key memo] in graph_key.c):
 *   - a repeated key of an unchanged description is the memo: it allocates nothing (every
 *     allocation made to fail, it still succeeds) and equals the key computed afresh;
 *   - every builder that changes the description drops it: after each change the key is the
 *     one computed afresh (with the builder, which always computes) and differs from before;
 *   - the identities outside the description are compared, never assumed: two caches pinned to
 *     different toolchains, looked up alternately through one description, each get their own
 *     key, every time;
 *   - 8 threads keying one description at once all get the same key (run under TSan too).
 */
#include <pthread.h>

#include "common/internal.h"
#include "graph/graph_internal.h"
#include "helpers.h"
#include "kcache.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("keymemo");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kc_alloc_fail_at(0, false);
    kct_rmtree(dir);
    free(dir);
    return 0;
}

static kc_graph_desc *desc(void) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "memo"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "k.cu",
                       "extern \"C\" __global__ void k(float *x, int n) { x[0] = n; }\n",
                       "k",
                       NULL,
                       0,
                       NULL,
                       0,
                       NULL,
                       0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[3] = {"1", "1", "1"}, *block[3] = {"32", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

static kc_cache *open_pinned(const char *sub, const char *pin) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    kc_options o;
    kc_options_init(&o, KC_OPTIONS_VERSION);
    o.dir = p;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_record_set(c, "pin", pin), KC_OK);
    return c;
}

#define PIN_A "build-id:00000000000000000000000000000000000000aa"
#define PIN_B "build-id:00000000000000000000000000000000000000bb"

/* The key through the memo (no builder) and computed afresh (with one) must agree. */
static kc_key key_checked(kc_cache *c, const kc_graph_desc *d) {
    kc_key memo, fresh;
    kc_key_builder *kb;
    assert_int_equal(kc_graph_key_in(c, d, &memo, NULL), KC_OK);
    assert_int_equal(kc_graph_key_in(c, d, &fresh, &kb), KC_OK);
    kc_key_builder_free(kb);
    assert_memory_equal(&memo, &fresh, sizeof memo);
    return memo;
}

static void test_repeated_key_is_the_memo(void **state) {
    (void)state;
    kc_cache *c = open_pinned("a", PIN_A);
    kc_graph_desc *d = desc();
    kc_key k1 = key_checked(c, d), k2;
    kc_alloc_fail_at(1, true); /* a key computed now would fail: the builder allocates */
    int rc = kc_graph_key_in(c, d, &k2, NULL);
    long failed = kc_alloc_fail_count();
    kc_alloc_fail_at(0, false);
    assert_int_equal(rc, KC_OK);
    (void)failed;
    assert_memory_equal(&k1, &k2, sizeof k1);
    /* With the builder it is computed, so it fails under the same allocator. */
    kc_key_builder *kb = NULL;
    kc_alloc_fail_at(1, true);
    rc = kc_graph_key_in(c, d, &k2, &kb);
    kc_alloc_fail_at(0, false);
    assert_int_equal(rc, KC_ENOMEM);
    assert_null(kb);
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* Each change gives a new key, the one computed afresh. */
static void changed(kc_cache *c, const kc_graph_desc *d, kc_key *last, const char *what) {
    kc_key k = key_checked(c, d);
    if (memcmp(&k, last, sizeof k) == 0) fail_msg("the key did not change after %s", what);
    *last = k;
}

static void test_every_change_drops_the_memo(void **state) {
    (void)state;
    kc_cache *c = open_pinned("b", PIN_A);
    kc_graph_desc *d = desc();
    kc_key last = key_checked(c, d);
    kc_graph_set_globals(d, 7);
    changed(c, d, &last, "kc_graph_set_globals");
    assert_int_equal(kc_graph_set_backend(d, "other"), KC_OK);
    changed(c, d, &last, "kc_graph_set_backend");
    assert_int_equal(kc_graph_set_runtime_meta(d, "meta", 4), KC_OK);
    changed(c, d, &last, "kc_graph_set_runtime_meta");
    assert_int_equal(kc_graph_add_wrapper(d, "w", 1, "p", 1), KC_OK);
    changed(c, d, &last, "kc_graph_add_wrapper");
    assert_int_equal(kc_graph_add_hook(d, "hook", "0123"), KC_OK);
    changed(c, d, &last, "kc_graph_add_hook");
    const char *sizes[] = {"M"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F16, 1, sizes, NULL, 1), KC_OK);
    changed(c, d, &last, "kc_graph_add_input");
    assert_int_equal(kc_graph_set_inplace(d, 1), KC_OK);
    changed(c, d, &last, "kc_graph_set_inplace");
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_OUTPUT, KC_DTYPE_F16, 1, sizes), KC_OK);
    changed(c, d, &last, "kc_graph_add_tensor");
    assert_int_equal(kc_graph_set_alias(d, 0, 1), KC_OK);
    changed(c, d, &last, "kc_graph_set_alias");
    assert_int_equal(kc_graph_add_scratch(d, KC_PASS_FORWARD, "64"), KC_OK);
    changed(c, d, &last, "kc_graph_add_scratch");
    assert_int_equal(kc_graph_add_arg(d, "alpha", KC_ARG_F32), KC_OK);
    changed(c, d, &last, "kc_graph_add_arg");
    const char *grid[3] = {"2", "1", "1"}, *block[3] = {"64", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    changed(c, d, &last, "kc_graph_add_step");
    assert_int_equal(kc_graph_add_zero(d, KC_PASS_FORWARD, KC_ROLE_OUTPUT, 0), KC_OK);
    changed(c, d, &last, "kc_graph_add_zero");
    assert_int_equal(kc_graph_add_tensor(d, KC_ROLE_SAVED, KC_DTYPE_F32, 1, sizes), KC_OK);
    changed(c, d, &last, "kc_graph_add_tensor (saved)");
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 1), KC_OK);
    changed(c, d, &last, "kc_graph_add_input (2)");
    assert_int_equal(kc_graph_set_grad_accumulate(d, 2), KC_OK);
    changed(c, d, &last, "kc_graph_set_grad_accumulate");
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "k2.cu",
                       "extern \"C\" __global__ void k2(float *x) {}\n",
                       "k2",
                       NULL,
                       0,
                       NULL,
                       0,
                       NULL,
                       0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    changed(c, d, &last, "kc_graph_add_kernel");
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

static void test_other_toolchain_never_stale(void **state) {
    (void)state;
    kc_cache *a = open_pinned("ta", PIN_A), *b = open_pinned("tb", PIN_B);
    kc_graph_desc *d = desc();
    kc_key ka = key_checked(a, d), kb = key_checked(b, d);
    assert_memory_not_equal(&ka, &kb, sizeof ka);
    for (int i = 0; i < 4; i++) {
        kc_key x;
        assert_int_equal(kc_graph_key_in(i & 1 ? b : a, d, &x, NULL), KC_OK);
        assert_memory_equal(&x, i & 1 ? &kb : &ka, sizeof x);
        assert_int_equal(kc_graph_key_in(i & 1 ? a : b, d, &x, NULL), KC_OK);
        assert_memory_equal(&x, i & 1 ? &ka : &kb, sizeof x);
    }
    kc_graph_desc_free(d);
    kc_cache_close(a);
    kc_cache_close(b);
}

typedef struct th {
    kc_cache *c;
    const kc_graph_desc *d;
    kc_key key;
    int rc;
} th;

static void *keyer(void *p) {
    th *t = p;
    for (int i = 0; i < 200 && !t->rc; i++) {
        kc_key k;
        kc_key_builder *kb = NULL;
        t->rc = kc_graph_key_in(t->c, t->d, &k, i % 10 == 0 ? &kb : NULL); /* some compute and publish */
        kc_key_builder_free(kb);
        if (!t->rc && i && memcmp(&k, &t->key, sizeof k) != 0) t->rc = -1;
        t->key = k;
    }
    return NULL;
}

static void test_threads_share_one_description(void **state) {
    (void)state;
    kc_cache *c = open_pinned("th", PIN_A);
    kc_graph_desc *d = desc();
    th t[8];
    pthread_t id[8];
    for (int i = 0; i < 8; i++) {
        t[i] = (th){c, d, {{0}}, 0};
        assert_int_equal(pthread_create(&id[i], NULL, keyer, &t[i]), 0);
    }
    for (int i = 0; i < 8; i++) pthread_join(id[i], NULL);
    kc_key want = key_checked(c, d);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(t[i].rc, KC_OK);
        assert_memory_equal(&t[i].key, &want, sizeof want);
    }
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_repeated_key_is_the_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_change_drops_the_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_toolchain_never_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_share_one_description, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
