/* SPDX-License-Identifier: Apache-2.0 */
/* test_pool.c — the thread pool: every index runs once; nested batches make progress. */
#include "helpers.h"

#include "common/internal.h"
#include "common/pool.h"

static kc_pool *pool;
static int counts[1000];

static void bump(void *ctx, size_t i) {
    (void)ctx;
    __atomic_add_fetch(&counts[i], 1, __ATOMIC_RELAXED);
}

static void test_each_index_once(void **state) {
    (void)state;
    memset(counts, 0, sizeof counts);
    assert_int_equal(kc_pool_for(pool, 1000, bump, NULL), KC_OK);
    for (int i = 0; i < 1000; i++) assert_int_equal(counts[i], 1);
}

static int inner_total;
static void inner(void *ctx, size_t i) {
    (void)ctx;
    (void)i;
    __atomic_add_fetch(&inner_total, 1, __ATOMIC_RELAXED);
}
static void outer(void *ctx, size_t i) {
    (void)i;
    kc_pool_for(ctx, 10, inner, NULL); /* nested on the same pool */
}

static void test_nested_batches_finish(void **state) {
    (void)state;
    inner_total = 0;
    assert_int_equal(kc_pool_for(pool, 16, outer, pool), KC_OK);
    assert_int_equal(inner_total, 160);
}

static int setup(void **state) {
    (void)state;
    return kc_pool_new(&pool, 3);
}
static int teardown(void **state) {
    (void)state;
    kc_pool_free(pool);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_index_once),
        cmocka_unit_test(test_nested_batches_finish),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
