/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph/internal.h — the graph part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_GRAPH_INTERNAL_H
#define KC_GRAPH_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_graph_expect_compiles_  expect.h  Callers: prewarm
 * ---- end of the index ---- */

#endif
