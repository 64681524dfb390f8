/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_units.c — compile units: which kernels share one NVRTC program (same file, source,
 * headers, options and include digest; order of first appearance; each kernel's slot among
 * its unit's names), and compiling the units of a graph for real, with a failing unit's
 * error under the caller's label.  Needs the CUDA Toolkit's NVRTC, not a GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "compile/units.h"
#include "kcache.h"

static const char *SRC_A = "extern \"C\" __global__ void fa(float *x) { x[threadIdx.x] += 1.0f; }\n"
                           "extern \"C\" __global__ void fb(float *x) { x[threadIdx.x] *= 2.0f; }\n";
static const char *SRC_B = "extern \"C\" __global__ void gb(int *x) { x[threadIdx.x] = 7; }\n";
static const kc_header_src H1[] = {{"h.h", "#define K 1\n"}};
static const kc_header_src H2[] = {{"h.h", "#define K 2\n"}};
static const char *O1[] = {"-DX=1"};
static const char *O2[] = {"-DX=2"};
static const kc_target sm80 = {8, 0, KC_TARGET_CUBIN, '\0'}; /* parsed once, as the graph part passes it */

static kc_kernel_src ksrc(const char *file, const char *src, const char *name) {
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, file, src, name, NULL, 0, NULL, 0, NULL, 0};
    return k;
}

static void test_same_bytes_share_a_unit(void **state) {
    (void)state;
    kc_kernel_src ks[] = {ksrc("a.cu", SRC_A, "fa"), ksrc("b.cu", SRC_B, "gb"), ksrc("a.cu", SRC_A, "fb")};
    kc_units u;
    kc_units_group(ks, 3, &u);
    assert_int_equal(u.n, 2);
    assert_int_equal(u.unit_of[0], 0);
    assert_int_equal(u.unit_of[1], 1);
    assert_int_equal(u.unit_of[2], 0);
    assert_int_equal(u.first[0], 0);
    assert_int_equal(u.first[1], 1);
    assert_int_equal(u.slot[0], 0); /* fa is the unit's first name */
    assert_int_equal(u.slot[2], 1); /* fb its second */
    assert_int_equal(u.slot[1], 0);
}

static void test_any_difference_splits_units(void **state) {
    (void)state;
    kc_kernel_src base = ksrc("a.cu", SRC_A, "fa");
    kc_kernel_src v[6];
    for (int i = 0; i < 6; i++) v[i] = base, v[i].name = "fb";
    v[0].file = "other.cu";               /* another file name */
    v[1].file = NULL;                     /* none */
    v[2].headers = H1, v[2].nheaders = 1; /* a header */
    v[3].options = O1, v[3].noptions = 1; /* an option */
    v[4].include_digest = "abc";          /* an include digest */
    v[5].source = SRC_B;                  /* another source */
    for (int i = 0; i < 6; i++) {
        kc_kernel_src ks[2] = {base, v[i]};
        kc_units u;
        kc_units_group(ks, 2, &u);
        if (u.n != 2) fail_msg("difference %d did not split the unit", i);
    }
    /* Same header name, other contents; same option count, other option. */
    kc_kernel_src h1 = base, h2 = base, o1 = base, o2 = base;
    h1.headers = H1, h1.nheaders = 1, h2.headers = H2, h2.nheaders = 1;
    o1.options = O1, o1.noptions = 1, o2.options = O2, o2.noptions = 1;
    kc_kernel_src hs[2] = {h1, h2}, os[2] = {o1, o2};
    kc_units u;
    kc_units_group(hs, 2, &u);
    assert_int_equal(u.n, 2);
    kc_units_group(os, 2, &u);
    assert_int_equal(u.n, 2);
    kc_kernel_src same[2] = {h1, h1};
    kc_units_group(same, 2, &u);
    assert_int_equal(u.n, 1);
}

static void test_compile_units_for_real(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    kc_kernel_src ks[] = {ksrc("a.cu", SRC_A, "fa"), ksrc("b.cu", SRC_B, "gb"), ksrc("a.cu", SRC_A, "fb")};
    kc_units u;
    kc_units_group(ks, 3, &u);
    kc_compiled **res = NULL;
    double ms = -1;
    int rc = kc_units_compile(ks, 3, &u, NULL, &sm80, "graph 'g'", &res, &ms);
    if (rc) fail_msg("%s", kc_error_last()->message);
    assert_true(ms >= 0);
    assert_int_equal(res[0]->nnames, 2);
    assert_string_equal(res[0]->lowered_names[u.slot[0]], "fa");
    assert_string_equal(res[0]->lowered_names[u.slot[2]], "fb");
    assert_int_equal(res[1]->nnames, 1);
    assert_string_equal(res[1]->lowered_names[0], "gb");
    kc_units_free(res, u.n);
}

static void test_failing_unit_reports_under_the_label(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    kc_kernel_src ks[] = {ksrc("a.cu", SRC_A, "fa"), ksrc("bad.cu", "extern \"C\" __global__ void f( { }\n", "f")};
    kc_units u;
    kc_units_group(ks, 2, &u);
    kc_compiled **res = (kc_compiled **)0x1;
    double ms;
    assert_int_equal(kc_units_compile(ks, 2, &u, NULL, &sm80, "graph 'broken'", &res, &ms), KC_ECOMPILE);
    assert_ptr_equal(res, (kc_compiled **)0x1); /* nothing returned */
    const char *m = kc_error_last()->message;
    assert_int_equal(strncmp(m, "graph 'broken': ", 16), 0);
    assert_non_null(strstr(m, "bad.cu"));
    kc_units_free(NULL, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes_share_a_unit),
        cmocka_unit_test(test_any_difference_splits_units),
        cmocka_unit_test(test_compile_units_for_real),
        cmocka_unit_test(test_failing_unit_reports_under_the_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
