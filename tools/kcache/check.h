/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h — run a bundled graph's forward and backward once on a GPU and compare them with
 * a CPU reference in fp32.  Used by `kcache demo` (the main job) and the gpu tests.
 *
 * Tolerances: max |got − want| ≤ 2e-3 × max |want| for forward values, 5e-3 for gradients
 * (the kernels use fast exp and another order of summation).  dropout has no fixed
 * reference (its mask is random): every element must be 0 or 2x, about half kept, and the
 * gradient must use the same mask.  In-place graphs (adamw) are also compared on the inputs
 * they update; accumulating gradients (linear's dW and db) start from values the runner puts
 * in the caller's buffers, on the device and in the reference alike; runtime arguments get
 * fixed values per graph; bf16 inputs are rounded before the reference sees them.
 */
#ifndef KCACHE_TOOLS_CHECK_H
#define KCACHE_TOOLS_CHECK_H

#include <stddef.h>

#include "kcache.h"

/** Whether there is a CPU reference for a graph of this name. */
int kcc_has_reference(const char *graph_name);

/**
 * Check graph `g` (named `graph_name`, loaded on its device) against its reference.
 * Returns KC_OK when every output and gradient is within tolerance; KC_ECORRUPT with the
 * worst mismatch in `msg` when not; KC_MISS when there is no reference; another status
 * (with `msg`) when a call failed.  `msg` always says what was compared.
 */
int kcc_check(kc_graph *g, int device, const char *graph_name, char *msg, size_t cap);

#endif
