/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/log.h — diagnostic logging to stderr, by category.
 *
 * KCACHE_LOG is a comma-separated list of categories ("store,key,compile,load,graph,
 * guard,recompiles,remote") or "all".  Logging is off by default and costs one load and
 * branch per call site when off.
 */
#ifndef KCACHE_LOG_H
#define KCACHE_LOG_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Log categories (bits). */
typedef enum kc_log_cat {
    KC_LOG_STORE = 1u << 0,
    KC_LOG_KEY = 1u << 1,
    KC_LOG_COMPILE = 1u << 2,
    KC_LOG_LOAD = 1u << 3,
    KC_LOG_GRAPH = 1u << 4,
    KC_LOG_GUARD = 1u << 5,
    KC_LOG_RECOMPILES = 1u << 6,
    KC_LOG_REMOTE = 1u << 7,
    KC_LOG_ALL = 0xffffu
} kc_log_cat;

/**
 * Set the enabled categories from a KCACHE_LOG-style string (NULL or "" turns logging
 * off).  Unknown words are ignored with a warning on stderr.  Thread-safe.
 */
KC_API void kc_log_configure(const char *spec);

/** Whether a category is enabled. */
KC_API int kc_log_enabled(kc_log_cat cat);

#ifdef __cplusplus
}
#endif
#endif
