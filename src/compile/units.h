/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/units.h — compile units: kernels that share one NVRTC program, compiled in parallel.
 *
 * Only the graph part uses this: its lookup path (src/graph/lookup.c) groups and compiles,
 * the KERNELS section writer (src/graph/kernels.c) lays images out by unit; graph_internal.h
 * includes it for the kc_units type.  Kernels with the same file, source, headers, options and
 * include digest form one unit: one NVRTC program with several name expressions, one image.
 */
#ifndef KC_COMPILE_UNITS_H
#define KC_COMPILE_UNITS_H

#include "kcache/compile.h"

/** Most kernels a grouping takes (a graph has at most as many). */
#define KC_UNITS_MAX 256

/** How `n` kernels group into units. */
typedef struct kc_units {
    size_t n;                  /**< number of units */
    int unit_of[KC_UNITS_MAX]; /**< kernel → its unit */
    int first[KC_UNITS_MAX];   /**< unit → its first kernel */
    int slot[KC_UNITS_MAX];    /**< kernel → its index among its unit's names */
} kc_units;

/** Group kernels into units, in order of first appearance (no units for n > KC_UNITS_MAX). */
void kc_units_group(const kc_kernel_src *ks, size_t n, kc_units *u);

/**
 * kc_compile_names for a target parsed already (the graph's lookup parsed it once, at its boundary):
 * the same checks but the target's, the same result.  Callers: compile/units.c; nvrtc.c defines it.
 */
int kc_compile_names_for_(const kc_kernel_src *k, const char *const *names, size_t nnames, const kc_target *target,
                          kc_compiled **out);

/**
 * Name to the PCH burst running (compile/pch.h's kc_pch_announce_) one compile of `k` for `target`
 * that it will make: the program its compile would give NVRTC, made the same way, counted for its
 * header set.  Nothing is compiled; no error is left.  Callers: graph (expect.c); nvrtc.c defines it.
 */
void kc_compile_expect_(const kc_kernel_src *k, const kc_target *target);

/**
 * Compile every unit for `target` — or, with `which` (may be NULL), those units u with which[u] != 0,
 * the others left NULL — on the shared worker pool (KC_EINVAL for n > KC_UNITS_MAX); (*out)[unit]
 * is the unit's image with its lowered names.  On failure the first failing unit's error is the last error,
 * as "<label>: <NVRTC's message>", and nothing is returned.  *ms is the wall time.
 */
int kc_units_compile(const kc_kernel_src *ks, size_t n, const kc_units *u, const int *which, const kc_target *target,
                     const char *label, kc_compiled ***out, double *ms);

/** Free the result of kc_units_compile (`n` units); accepts NULL. */
void kc_units_free(kc_compiled **v, size_t n);

#endif
