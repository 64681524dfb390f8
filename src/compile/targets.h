/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/targets.h — the target checks other parts make ([Note: target check] in kcache/target.h):
 * a name a lookup may read, a target a compile may make, a manifest's target.
 *
 * Callers: graph/lookup.c and graph/explain.c (kc_target_known_), compile/nvrtc.c and
 * graph/build.c (kc_target_compilable_), prewarm/manifest.c (kc_target_manifest_check_).
 * Must not: load NVRTC for a target kcache's table knows (a hit never pays for dlopen).
 */
#ifndef KC_COMPILE_TARGETS_H
#define KC_COMPILE_TARGETS_H

#include "kcache/target.h"

/**
 * A target a lookup may read: parsed, and in kcache's table or in this host's NVRTC's list (NVRTC
 * is asked only when the table lacks it).  KC_OK with *out, else KC_EARCH naming `name`, `where`
 * and the supported list.
 */
int kc_target_known_(const char *name, const char *where, kc_target *out);

/** A target a compile may make: KC_OK when this host's NVRTC lists it or lists nothing (loads
 *  NVRTC), else KC_EARCH with NVRTC's list. */
int kc_target_compilable_(const kc_target *t);

/** A manifest's target (`where` in `origin`: "archs[1]" in "m.json", or the list of "--arch"):
 *  kc_target_known_'s check, failing with KC_EINVAL (bad input) and the same message. */
int kc_target_manifest_check_(const char *origin, const char *where, const char *name);

#endif
