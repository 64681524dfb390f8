/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entry/internal.h — the entry part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_ENTRY_INTERNAL_H
#define KC_ENTRY_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_entry_attach_image_from_  entry_internal.h  Callers: graph
 *   kc_trust_can_vouch           trust.h           Callers: store
 *   kc_trust_check               trust.h           Callers: bundle, guard, store
 *   kc_trust_checks              trust.h           Callers: bundle, store
 *   kc_trust_verifier            trust.h           Callers: bundle, cache, store
 *   kc_trust_vouch               trust.h           Callers: bundle, cache, guard, store
 *   kc_unit_entry_names_         entry_internal.h  Callers: graph
 * ---- end of the index ---- */

#endif
