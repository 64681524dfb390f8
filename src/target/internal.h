/*
 * target/internal.h — the target part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_TARGET_INTERNAL_H
#define KC_TARGET_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_target_compilable_          check.h   Callers: compile, graph
 *   kc_target_known_               check.h   Callers: graph
 *   kc_target_manifest_check_      check.h   Callers: prewarm
 *   kc_target_manifest_supported_  check.h   Callers: prewarm
 * ---- end of the index ---- */

#endif
