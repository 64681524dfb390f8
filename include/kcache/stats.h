/*
 * kcache/stats.h — the fixed statistic ids of a cache (as ccache's), and their names.
 *
 * Counters are kept per shard of the local cache directory and shared by every process
 * that uses it; kc_cache_stats() sums them.  Ids and names are stable: they are written
 * in the shard stats files and printed by `kcache stats --json`.
 */
#ifndef KCACHE_STATS_H
#define KCACHE_STATS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Statistic ids.  Values are part of the stats file format: append only. */
typedef enum kc_stat {
    KC_STAT_HITS = 0,          /**< Lookups served from the local directory. */
    KC_STAT_MISSES = 1,        /**< Lookups that found nothing usable. */
    KC_STAT_PUTS = 2,          /**< Entries written. */
    KC_STAT_CORRUPT = 3,       /**< Entries that failed validation (then quarantined). */
    KC_STAT_EVICTIONS = 4,     /**< Entries removed to hold the size limit. */
    KC_STAT_BYTES = 5,         /**< Bytes of entries held (approximate between gcs). */
    KC_STAT_ENTRIES = 6,       /**< Entries held (approximate between gcs). */
    KC_STAT_BYPASSES = 7,      /**< Requests that were not cacheable. */
    KC_STAT_COMPILES = 8,      /**< Graphs compiled because of a miss (each unit compiled or found stored:
                                *   unit_compiles, unit_hits). */
    KC_STAT_COMPILE_ERRORS = 9,/**< Compiles that failed. */
    KC_STAT_MEMORY_HITS = 10,  /**< Lookups served from process memory. */
    KC_STAT_REMOTE_HITS = 11,  /**< Lookups served from the remote tier. */
    KC_STAT_REMOTE_MISSES = 12,
    KC_STAT_REMOTE_ERRORS = 13,
    KC_STAT_REMOTE_TIMEOUTS = 14,
    KC_STAT_REMOTE_DROPPED = 15,
    KC_STAT_LOAD_REFUSED = 16, /**< Variants the driver refused (counted as misses). */
    KC_STAT_STORE_ERRORS = 17, /**< Cache-side I/O errors (each cost a miss, not a failure). */
    KC_STAT_READONLY_SKIPS = 18, /**< Puts skipped because the cache is read-only. */
    KC_STAT_REMOTE_PUTS = 19,  /**< Entries written to the remote by the background writer. */
    KC_STAT_MAC_REJECTED = 20, /**< Entries (remote or imported) refused for a missing or bad MAC. */
    KC_STAT_REMOTE_SKIPPED = 21, /**< Remote lookups skipped while its breaker was open. */
    KC_STAT_UNIT_HITS = 22,    /**< Compile units found stored when a graph was compiled: NVRTC skipped. */
    KC_STAT_UNIT_COMPILES = 23,/**< Compile units NVRTC compiled. */
    KC_STAT_IMAGES_MISSING = 24, /**< Graph entries found whose image was missing or failed its checks (each
                                 *   lookup then counted as a miss). */
    KC_STAT_COMPILES_REFUSED = 25, /**< Misses that would have run NVRTC under KCACHE_REQUIRE_HIT (each also a miss). */
    KC_STAT_COMPILE_US_SAVED = 26, /**< Microseconds of NVRTC the hits saved: each hit adds its entry's compile time
                                    *   (the NVRTC time its images cost when first compiled; kc_graph_info.saved_ms). */
    KC_STAT_PUBLISH_REFUSED = 27, /**< Local objects not published: fetched or imported without a MAC under the key
                                   *   ([Note: provenance]): never sealed here. */
    KC_STAT_COUNT = 28
} kc_stat;

/** A snapshot of every counter. */
typedef struct kc_stats {
    uint64_t v[KC_STAT_COUNT];
} kc_stats;

/** The JSON/CLI name of a statistic ("hits", "bytes", …), static; NULL if out of range. */
KC_API const char *kc_stat_name(kc_stat id);

#ifdef __cplusplus
}
#endif
#endif
