/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache.h — umbrella header of libkcache, a cache of compiled GPU kernels.
 *
 * Include this; the parts live in include/kcache/<part>.h:
 *   version.h KC_VERSION_MAJOR/MINOR/PATCH, KC_VERSION_NUMBER (kc_version_number() at run time)
 *   common.h  status codes, kc_error_last(), kc_free()
 *   log.h     KCACHE_LOG categories
 *   config.h  every setting in one table: environment, kcache.conf, defaults, origins
 *   key.h     canonical keys (XXH3-128 over named components)
 *   target.h  target names (sm_90, sm_100f, compute_80), variant selection
 *   entry.h   the entry format (grammar at its top)
 *   stats.h   statistic ids
 *   store.h   the store under a cache: gc report, remote tier limits and state
 *   cache.h   kc_cache_open, get/put by key and variant, gc, verify
 *   graph.h   graph descriptions, compile/get, forward/backward
 *   prewarm.h manifests and kc_prewarm
 * Backend authors: kcache/sys/store.h.
 */
#ifndef KCACHE_H
#define KCACHE_H

#include "kcache/version.h"
#include "kcache/common.h"
#include "kcache/log.h"
#include "kcache/config.h"
#include "kcache/key.h"
#include "kcache/target.h"
#include "kcache/entry.h"
#include "kcache/sign.h"
#include "kcache/stats.h"
#include "kcache/store.h"
#include "kcache/cache.h"
#include "kcache/compile.h"
#include "kcache/cuda.h"
#include "kcache/graph.h"
#include "kcache/bundle.h"
#include "kcache/prewarm.h"
#include "kcache/program.h"
#include "kcache/guard.h"

#endif
