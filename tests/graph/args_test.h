/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args_test.h — what test_args.c (on a CPU) and test_args_double.c (through the driver double)
 * share: the kernels their specs name, and writing such a spec beside them.
 *
 * The one idea: both suites exercise every argument kind against the same two kernels ("step",
 * taking one parameter of each kind, and "scale"), so the CUDA source and the spec's head are
 * written once; a test adds only its passes (and the double its inputs and outputs).
 *
 * Who may include it: tests/graph/test_args.c and tests/graph/test_args_double.c, after helpers.h
 * (for kct_write and cmocka).  Each helper is static inline.  Must not: load the spec or assert
 * anything the tests prove (their assertions stay in the tests).
 */
#ifndef KCACHE_TESTS_ARGS_TEST_H
#define KCACHE_TESTS_ARGS_TEST_H

#include <stdio.h>
#include <string.h>

/** The kernels: "step" takes a parameter of each kind the suites pass, "scale" a plain scaling. */
static const char *const kcat_kernel_src =
    "#include <cuda_bf16.h>\n"
    "struct trio { float a, b, c; };\n"
    "extern \"C\" __global__ void step(const float *x, float *y, long long n, float lr, double d, unsigned u,\n"
    "                                  __nv_bfloat16 h, trio t, const float *maybe, const float *tail, unsigned long long seed) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = lr * x[i] + (float)d + (float)u + (float)h + t.a + t.b + t.c + (maybe ? maybe[0] : 0.f)\n"
    "                    + tail[0] + (float)seed;\n"
    "}\n"
    "extern \"C\" __global__ void scale(const float *x, float *y, int n, float a) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i];\n"
    "}\n";

/**
 * Write <dir>/k.cu (kcat_kernel_src) and the spec <dir>/<file>: graph `name` with toolkit headers,
 * kernels "step" and "scale", then `pre` and `body` (JSON members; `pre` ends in ",\n" or is "").
 * The spec's path goes into path[cap].  Fails the test when a file cannot be written.
 */
static inline void kcat_write_spec(const char *dir, const char *file, const char *name, const char *pre,
                                   const char *body, char *path, size_t cap) {
    char json[4096];
    snprintf(path, cap, "%s/k.cu", dir);
    assert_int_equal(kct_write(path, kcat_kernel_src, strlen(kcat_kernel_src)), 0);
    snprintf(json, sizeof json,
             "{\"name\": \"%s\", \"toolkit_headers\": true,\n"
             " \"kernels\": [{\"id\": \"step\", \"file\": \"k.cu\", \"entry\": \"step\"},"
             " {\"id\": \"scale\", \"file\": \"k.cu\", \"entry\": \"scale\"}],\n%s%s}\n",
             name, pre, body);
    snprintf(path, cap, "%s/%s", dir, file);
    assert_int_equal(kct_write(path, json, strlen(json)), 0);
}

#endif
