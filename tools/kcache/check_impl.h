/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_impl.h — what check.c (the references and the table of cases) and check_run.c (the runner)
 * share: a case's description and the buffers a reference reads and writes.  Only those two files
 * include it.
 */
#ifndef KCACHE_TOOLS_CHECK_IMPL_H
#define KCACHE_TOOLS_CHECK_IMPL_H

#include "check.h"

#define MAXIN 5
#define MAXARGS 8

typedef struct tdesc {
    int rank;
    int64_t sizes[2];
    float offset, scale; /* values: offset + scale × uniform(−1, 1) */
    int labels;          /* > 0: int32 labels in [0, labels) */
    kc_dtype dtype;      /* 0: f32; KC_DTYPE_BF16: the values rounded to bf16 (the reference sees them rounded) */
} tdesc;

typedef struct rio {
    float *in[MAXIN];
    const int32_t *lab;
    const float *got_y; /* the device's forward output (dropout derives its mask from it) */
    const float *gy;
    float *y;
    float *gx[MAXIN];
    size_t ny;
} rio;

typedef struct rcase {
    const char *name;
    size_t nin;
    tdesc in[MAXIN];
    int rng;
    const char *(*ref)(rio *io);
    size_t nargs;
    kc_value args[MAXARGS]; /* the runtime arguments' values, in declaration order */
    unsigned inplace;       /* bit i: the forward updates input i where it is (compared after it) */
    unsigned accumulate;    /* bit i: input i's gradient adds into the caller's buffer (filled first) */
    int forward_only;       /* no backward pass */
    unsigned nograd;        /* bit i: input i has no gradient (its "requires_grad" is false) */
} rcase;

/* The case of the graph named `name` (check.c's table); NULL when it has none. */
const rcase *kcc_find_case_(const char *name);

#endif
