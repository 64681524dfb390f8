/*
 * counts_test.h — what the lookup-counter tests share (test_counts_double.c, test_counts_remote.c):
 * a one-kernel graph whose kernel's body is the caller's, so that each test gets keys of its own.
 */
#ifndef KC_COUNTS_TEST_H
#define KC_COUNTS_TEST_H

/* After double/double_test.h (helpers.h, cmocka and kcache.h come with it). */
#include <stdio.h>

/* A graph `name` of one kernel k(float *x, int n) whose statement for thread i < n is `body`. */
static inline kc_graph_desc *kcc_small(const char *name, const char *body) {
    char src[512];
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) %s }\n", body);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, name), KC_OK);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "k.cu", k.source = src, k.name = "k";
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"1", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

#endif
