/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph/expect.h — the compiles a set of graphs will make, named before they run (expect.c).
 *
 * Callers: prewarm/prewarm.c (its burst's announcer).  Must not: compile, read a file, or leave an
 * error behind.
 */
#ifndef KC_GRAPH_EXPECT_H
#define KC_GRAPH_EXPECT_H

#include <stddef.h>

#include "kcache/graph.h"

/**
 * Name to the compile burst running each compile that kc_graph_compile of every description of
 * `descs` (n; NULL ones skipped) for every target of `targets` (nt) would make in an empty cache: a
 * compile unit that several share, once; a description vouched for by its spec's memo (not read),
 * none.  Counts only (compile/pch.c's header sets): nothing is compiled, no error is left.
 */
void kc_graph_expect_compiles_(kc_graph_desc *const *descs, size_t n, const char *const *targets, size_t nt);

#endif
