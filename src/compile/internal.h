/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/internal.h — the compile part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_COMPILE_INTERNAL_H
#define KC_COMPILE_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_compile_expect_            units.h    Callers: graph
 *   kc_kernel_src_arrays_ok_      options.h  Callers: graph
 *   kc_params_free                params.h   Callers: graph
 *   kc_params_is_kernel           params.h   Callers: graph
 *   kc_params_read                params.h   Callers: graph
 *   kc_pch_announce_              pch.h      Callers: prewarm
 *   kc_pch_burst_                 pch.h      Callers: prewarm
 *   kc_target_compilable_         targets.h  Callers: graph
 *   kc_target_known_              targets.h  Callers: graph
 *   kc_target_manifest_check_     targets.h  Callers: prewarm
 *   kc_toolkit_digest             toolkit.h  Callers: graph
 *   kc_toolkit_digest_known       toolkit.h  Callers: graph
 *   kc_toolkit_direct             toolkit.h  Callers: graph
 *   kc_toolkit_direct_from_reads  toolkit.h  Callers: graph
 *   kc_toolkit_present            toolkit.h  Callers: graph
 *   kc_toolkit_unchanged          toolkit.h  Callers: graph
 *   kc_toolkit_watch_begin        toolkit.h  Callers: graph
 *   kc_toolkit_watch_end          toolkit.h  Callers: graph
 *   kc_units_compile              units.h    Callers: graph
 *   kc_units_free                 units.h    Callers: graph
 *   kc_units_group                units.h    Callers: graph
 * ---- end of the index ---- */

#endif
