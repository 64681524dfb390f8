/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/internal.h — the store part's index of its private functions that other parts call, with
 * the parts that call each (their declarations stay in the headers named).  Generated and
 * checked by tests/arch/check_internal.py; a new caller across parts is added here.
 */
#ifndef KC_STORE_INTERNAL_H
#define KC_STORE_INTERNAL_H

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_local_backend           local.h     Callers: cache
 *   kc_local_batch_abort       local.h     Callers: bundle
 *   kc_local_batch_begin       local.h     Callers: bundle
 *   kc_local_batch_commit      local.h     Callers: bundle
 *   kc_local_batch_fence       local.h     Callers: bundle
 *   kc_local_batch_put         local.h     Callers: bundle
 *   kc_local_clear             local.h     Callers: cache
 *   kc_local_count             local.h     Callers: cache
 *   kc_local_free              local.h     Callers: cache
 *   kc_local_gc_aged           local.h     Callers: cache
 *   kc_local_latency           local.h     Callers: cache
 *   kc_local_observe           local.h     Callers: cache
 *   kc_local_open              local.h     Callers: cache
 *   kc_local_path              local.h     Callers: cache
 *   kc_local_profile_dir       local.h     Callers: cache
 *   kc_local_profile_written_  local.h     Callers: guard
 *   kc_local_quarantine        local.h     Callers: bundle
 *   kc_local_read              local.h     Callers: bundle
 *   kc_local_readonly          local.h     Callers: cache
 *   kc_local_root              local.h     Callers: cache
 *   kc_local_set_max_size      local.h     Callers: cache
 *   kc_local_stats             local.h     Callers: cache
 *   kc_local_stats_zero        local.h     Callers: cache
 *   kc_local_toolkit_dir       local.h     Callers: cache
 *   kc_local_trylock           local.h     Callers: cache
 *   kc_local_unlock            local.h     Callers: cache
 *   kc_remotes_parse           registry.h  Callers: cache
 *   kc_store_name              name.h      Callers: bundle, cache, guard
 *   kc_store_name_check        name.h      Callers: bundle, cache
 *   kc_tiers_add               tiers.h     Callers: cache
 *   kc_tiers_add_remote        tiers.h     Callers: cache
 *   kc_tiers_backend           tiers.h     Callers: cache
 *   kc_tiers_check_local       tiers.h     Callers: cache
 *   kc_tiers_count             tiers.h     Callers: cache
 *   kc_tiers_exists            tiers.h     Callers: cache
 *   kc_tiers_flush             tiers.h     Callers: cache
 *   kc_tiers_free              tiers.h     Callers: cache
 *   kc_tiers_get_local         tiers.h     Callers: cache
 *   kc_tiers_get_local_some    tiers.h     Callers: cache
 *   kc_tiers_get_remote        tiers.h     Callers: cache
 *   kc_tiers_get_remote_many   tiers.h     Callers: cache
 *   kc_tiers_iterate           tiers.h     Callers: cache
 *   kc_tiers_lease_acquire     tiers.h     Callers: cache
 *   kc_tiers_lease_release     tiers.h     Callers: cache
 *   kc_tiers_lease_stats       tiers.h     Callers: cache
 *   kc_tiers_lease_waited      tiers.h     Callers: cache
 *   kc_tiers_new               tiers.h     Callers: cache
 *   kc_tiers_peek              tiers.h     Callers: cache
 *   kc_tiers_ping              tiers.h     Callers: cache
 *   kc_tiers_publish           tiers.h     Callers: cache
 *   kc_tiers_put               tiers.h     Callers: cache
 *   kc_tiers_put_local         tiers.h     Callers: cache
 *   kc_tiers_quarantine        tiers.h     Callers: cache
 *   kc_tiers_refused_          tiers.h     Callers: graph
 *   kc_tiers_remote_state      tiers.h     Callers: cache
 *   kc_tiers_remove            tiers.h     Callers: cache
 *   kc_tiers_set_close_ms      tiers.h     Callers: cache
 *   kc_tiers_take_failure      tiers.h     Callers: graph
 *   kc_tiers_take_refusal      tiers.h     Callers: graph
 *   kc_tiers_tier_stats        tiers.h     Callers: cache
 * ---- end of the index ---- */

#endif
