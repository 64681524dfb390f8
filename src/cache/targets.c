/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache/targets.c — the targets of the toolchain a cache's keys use: kc_cache_targets, what
 * the tools check a named target against before any lookup ([Note: target check] in
 * kcache/target.h).
 *
 * The one idea: a cache's toolchain (toolchain_choice.c) decides which list applies — this
 * host's NVRTC's when the keys use it, kcache's table otherwise (no NVRTC, a pin to another).
 * Callers: the tools, kc_prewarm.  Must not: fail because no toolchain can be chosen (the
 * table then), or leave that failure as the last error.
 */
#include "../common/internal.h"
#include "kcache/cache.h"
#include "kcache/target.h"

int kc_cache_targets(kc_cache *c, kc_target_list *out) {
    if (!c) return kc_err(KC_EINVAL, "kc_cache_targets: cache is NULL");
    int rc = kc_target_table(out);
    if (rc) return rc;
    kc_err_saved keep;
    kc_err_save(&keep);
    kc_toolchain_choice tc;
    rc = kc_cache_toolchain(c, &tc); /* none (no NVRTC, nothing recorded): the table */
    kc_err_restore(&keep);
    return rc == KC_OK ? kc_target_supported(tc.id, out) : KC_OK;
}
