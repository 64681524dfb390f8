/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/stats.h — the cache's statistics: ONE table (KC_STAT_TABLE below) gives each its id,
 * name, kind and meaning; the enum, `kcache stats`, `kcache stats --json`, the shard stats
 * files and the C API (kc_stat_name, kc_stat_kind_of, kc_stat_doc) are all read from it, so a
 * new counter (per tier, per reason) is one row.
 *
 * Counters are kept per shard of the local cache directory and shared by every process that
 * uses it; kc_cache_stats() sums them.  Ids and names are stable: they are written in the shard
 * stats files and printed by `kcache stats --json`.  Append only; at most 32 (the stats file's
 * slots, src/store/local_stats.c).
 *
 * One outcome per lookup of a graph (kc_graph_get, kc_graph_compile): exactly one of
 * memory_hits, hits, remote_hits, misses and bypasses, the one whose source the caller was told
 * (KC_FROM_MEMORY, KC_FROM_DISK, KC_FROM_REMOTE, KC_FROM_COMPILE or a failure, KC_FROM_BYPASS).
 * The other counters are details (a disk hit that waited for another's compile also counts
 * compile_waits; a refused image also counts load_refused; …), never a second outcome.
 *
 * Time saved (compile_us_saved): a hit credits what it avoided — a disk or remote hit adds the
 * wall-clock time its entry's compile took where it was made (ORIGIN "compile_wall_us": the
 * NVRTC rounds of that compile, parallel units once, units found stored nothing); a memory hit
 * adds nothing (the graph is already loaded in this process: its compile or disk hit was
 * counted once), nor does a hit that waited for the compile, nor an entry that records no wall
 * time (written before it was recorded).
 */
#ifndef KCACHE_STATS_H
#define KCACHE_STATS_H

#include "common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kc_cache kc_cache; /* kcache/cache.h */

/** What a statistic's value is. */
typedef enum kc_stat_kind {
    KC_STAT_KIND_COUNTER = 0,     /**< Events counted; `--zero` resets it. */
    KC_STAT_KIND_GAUGE = 1,       /**< A quantity held now (entries); not reset by `--zero`. */
    KC_STAT_KIND_BYTES = 2,       /**< Bytes held now; not reset by `--zero`. */
    KC_STAT_KIND_MICROSECONDS = 3 /**< Time summed over events, in microseconds; `--zero` resets it. */
} kc_stat_kind;

/*
 * The table: X(ID, id value, "name", KIND, "what it counts").  Values are part of the stats
 * file format: append only, never reuse or reorder.
 */
#define KC_STAT_TABLE(X)                                                                                           \
    X(HITS, 0, "hits", COUNTER,                                                                                    \
      "Graph lookups served from the local directory (told KC_FROM_DISK), those that "                             \
      "waited for another's compile included; entry lookups (kc_cache_get) found locally")                         \
    X(MISSES, 1, "misses", COUNTER,                                                                                \
      "Lookups that found nothing usable and compiled, or failed (told "                                           \
      "KC_FROM_COMPILE, or an error); a wait that ended in another's entry is a hit, not a miss")                  \
    X(PUTS, 2, "puts", COUNTER, "Objects written to the local directory")                                          \
    X(CORRUPT, 3, "corrupt", COUNTER, "Entries that failed validation (then quarantined)")                         \
    X(EVICTIONS, 4, "evictions", COUNTER, "Entries removed to hold the size limit")                                \
    X(BYTES, 5, "bytes", BYTES, "Bytes of objects held (approximate between gcs)")                                 \
    X(ENTRIES, 6, "entries", GAUGE, "Objects held: graph entries, images, unit records (approximate between gcs)") \
    X(BYPASSES, 7, "bypasses", COUNTER,                                                                            \
      "Lookups of graphs that are not cacheable: compiled, never stored (told "                                    \
      "KC_FROM_BYPASS); never a miss")                                                                             \
    X(COMPILES, 8, "compiles", COUNTER,                                                                            \
      "Graphs built because of a miss (each unit compiled or found stored: "                                       \
      "unit_compiles, unit_hits)")                                                                                 \
    X(COMPILE_ERRORS, 9, "compile_errors", COUNTER, "Compiles that failed")                                        \
    X(MEMORY_HITS, 10, "memory_hits", COUNTER,                                                                     \
      "Lookups served from this process's loaded graphs (told "                                                    \
      "KC_FROM_MEMORY); they credit no time saved")                                                                \
    X(REMOTE_HITS, 11, "remote_hits", COUNTER,                                                                     \
      "Lookups served from the remote tier (told KC_FROM_REMOTE); "                                                \
      "never counted as hits")                                                                                     \
    X(REMOTE_MISSES, 12, "remote_misses", COUNTER, "Remote lookups that found nothing")                            \
    X(REMOTE_ERRORS, 13, "remote_errors", COUNTER, "Remote calls that failed (a reply out of step included)")      \
    X(REMOTE_TIMEOUTS, 14, "remote_timeouts", COUNTER, "Remote calls past their deadline")                         \
    X(REMOTE_DROPPED, 15, "remote_dropped", COUNTER, "Remote writes dropped (queue full, breaker open)")           \
    X(LOAD_REFUSED, 16, "load_refused", COUNTER, "Stored variants the driver refused (each lookup then a miss)")   \
    X(STORE_ERRORS, 17, "store_errors", COUNTER, "Cache-side I/O errors (each cost a miss, not a failure)")        \
    X(READONLY_SKIPS, 18, "readonly_skips", COUNTER, "Puts skipped because the cache is read-only")                \
    X(REMOTE_PUTS, 19, "remote_puts", COUNTER, "Objects the remote confirmed it stored (background writer)")       \
    X(MAC_REJECTED, 20, "mac_rejected", COUNTER, "Entries (remote or imported) refused for a missing or bad MAC")  \
    X(REMOTE_SKIPPED, 21, "remote_skipped", COUNTER, "Remote lookups skipped while its breaker was open")          \
    X(UNIT_HITS, 22, "unit_hits", COUNTER, "Compile units found stored when a graph was built: NVRTC skipped")     \
    X(UNIT_COMPILES, 23, "unit_compiles", COUNTER, "Compile units NVRTC compiled")                                 \
    X(IMAGES_MISSING, 24, "images_missing", COUNTER,                                                               \
      "Graph entries found whose image was missing or failed "                                                     \
      "its checks (each lookup then a miss)")                                                                      \
    X(COMPILES_REFUSED, 25, "compiles_refused", COUNTER,                                                           \
      "Misses that would have run NVRTC under "                                                                    \
      "KCACHE_REQUIRE_HIT (each also a miss)")                                                                     \
    X(COMPILE_US_SAVED, 26, "compile_us_saved", MICROSECONDS,                                                      \
      "Compile time the hits avoided: each disk or "                                                               \
      "remote hit adds its entry's recorded wall-clock compile time; memory hits and waits add nothing")           \
    X(PUBLISH_REFUSED, 27, "publish_refused", COUNTER,                                                             \
      "Local objects not published: fetched or imported "                                                          \
      "without a MAC under the key, never sealed here")                                                            \
    X(COMPILE_WAITS, 28, "compile_waits", COUNTER,                                                                 \
      "Hits that waited for another thread's or process's "                                                        \
      "compile of the same graph, then took its entry (each also a hit; no time saved)")

/** Statistic ids (KC_STAT_HITS, …), from the table. */
typedef enum kc_stat {
#define KC_STAT_ENUM_(id, v, name, kind, doc) KC_STAT_##id = v,
    KC_STAT_TABLE(KC_STAT_ENUM_)
#undef KC_STAT_ENUM_
        KC_STAT_COUNT = 29
} kc_stat;

/** A snapshot of every counter. */
typedef struct kc_stats {
    uint64_t v[KC_STAT_COUNT];
} kc_stats;

/** The JSON/CLI name of a statistic ("hits", "bytes", …), static; NULL if out of range. */
KC_API const char *kc_stat_name(kc_stat id);

/** A statistic's kind; KC_STAT_KIND_COUNTER if out of range. */
KC_API kc_stat_kind kc_stat_kind_of(kc_stat id);

/** What a statistic counts, one sentence, static; NULL if out of range. */
KC_API const char *kc_stat_doc(kc_stat id);

/** The name of a kind: "counter", "gauge", "bytes", "microseconds"; NULL if out of range. */
KC_API const char *kc_stat_kind_name(kc_stat_kind kind);

/** The id of a statistic's name (`kcache stats`' spelling): KC_OK, or KC_EINVAL if none. */
KC_API int kc_stat_from_name(const char *name, kc_stat *out);

/*
 * Lookup latency: every lookup counted under one outcome above is also one observation of its
 * wall-clock time (from its start to the moment its outcome was known) in a histogram per
 * outcome, kept with the counters in the cache directory, so that every process using it adds
 * its own (src/store/local_stats.c) and `--zero` resets it.  So the histogram's count of an
 * outcome equals that outcome's counter (memory_hits, hits, remote_hits, misses, bypasses),
 * exactly, in every directory whose writers are all of this version or later.  A count added
 * through kc_cache_count under an outcome's id is a lookup of unmeasured time: observed as 0 s.
 */

/** The outcomes of a lookup, in the histogram's order: where it was served from. */
typedef enum kc_lookup_outcome {
    KC_LOOKUP_MEMORY = 0,  /**< memory_hits: this process's loaded graphs. */
    KC_LOOKUP_DISK = 1,    /**< hits: the local directory. */
    KC_LOOKUP_REMOTE = 2,  /**< remote_hits: a remote tier. */
    KC_LOOKUP_COMPILE = 3, /**< misses: compiled (or failed). */
    KC_LOOKUP_BYPASS = 4,  /**< bypasses: not cacheable, compiled and never stored. */
    KC_LOOKUP_OUTCOMES = 5
} kc_lookup_outcome;

/** Upper bounds of the latency histogram, in seconds (10 µs … 10 s); one bucket more holds the rest (+Inf). */
#define KC_LATENCY_BUCKETS 13

/** The name of an outcome: "memory", "disk", "remote", "compile", "bypass"; NULL if out of range. */
KC_API const char *kc_lookup_outcome_name(kc_lookup_outcome o);

/** The counter an outcome is counted under (KC_STAT_MEMORY_HITS, …); KC_STAT_COUNT if out of range. */
KC_API kc_stat kc_lookup_outcome_stat(kc_lookup_outcome o);

/** Bucket `i`'s upper bound in seconds (i < KC_LATENCY_BUCKETS); +infinity past the last. */
KC_API double kc_latency_bound(int i);

/** Version of kc_latency this build fills. */
#define KC_LATENCY_VERSION 1

/**
 * The lookup latency histograms, summed over the directory's shards like kc_cache_stats (and this
 * process's counts not yet written).  The caller's: initialise with KC_LATENCY_INIT; kcache fills
 * its version's fields, another is KC_EVERSION.
 */
typedef struct kc_latency {
    unsigned version; /**< KC_LATENCY_VERSION, set by the caller. */
    uint64_t buckets[KC_LOOKUP_OUTCOMES]
                    [KC_LATENCY_BUCKETS + 1]; /**< Per bucket, NOT cumulative; the last: over 10 s. */
    uint64_t count[KC_LOOKUP_OUTCOMES];       /**< Observations: the sum of the outcome's buckets. */
    uint64_t sum_ns[KC_LOOKUP_OUTCOMES];      /**< Their times summed, in nanoseconds. */
} kc_latency;

/** Initialiser of a kc_latency: this version, the rest 0. */
#define KC_LATENCY_INIT                       \
    {                                         \
        KC_LATENCY_VERSION, {{0}}, {0}, { 0 } \
    }

/** The lookup latency histograms of the cache (0s when it has no local directory).  Thread-safe. */
KC_API int kc_cache_latency(kc_cache *c, kc_latency *out);

/** Version of kc_lease_stats this build fills. */
#define KC_LEASE_STATS_VERSION 1

/**
 * One compile per key across the fleet (docs/fleet.md, "One compile per key"): what this process's
 * lookups did with the remote's leases.  Each lookup that waited ended in exactly one of wait_hits
 * (it was served the entry another host compiled: a remote hit) and wait_compiles (the lease ended
 * without the entry, or the wait lasted the lease: it compiled, a miss).  Initialise with
 * KC_LEASE_STATS_INIT; kcache fills its version's fields, another is KC_EVERSION.
 */
typedef struct kc_lease_stats {
    unsigned version;       /**< KC_LEASE_STATS_VERSION, set by the caller. */
    uint64_t taken;         /**< Leases taken: this process compiled while the fleet waited. */
    uint64_t waits;         /**< Lookups that found another host's lease and waited. */
    uint64_t wait_hits;     /**< Waits that ended in the entry (each also a remote hit). */
    uint64_t wait_compiles; /**< Waits that ended in a compile of this process's own (each also a miss). */
    uint64_t wait_us;       /**< Time those waits took, summed, in microseconds. */
} kc_lease_stats;

/** Initialiser of a kc_lease_stats: this version, the rest 0. */
#define KC_LEASE_STATS_INIT \
    { KC_LEASE_STATS_VERSION, 0, 0, 0, 0, 0 }

/** The lease counters of this process's lookups through `c` (kept in memory, not in the directory).  Thread-safe. */
KC_API int kc_cache_lease_stats(kc_cache *c, kc_lease_stats *out);

/** kc_cache_metrics' flags. */
#define KC_METRICS_OPENMETRICS 0u /**< OpenMetrics 1.0 text (application/openmetrics-text), ending "# EOF". */
#define KC_METRICS_PROMETHEUS 1u  /**< The classic Prometheus text format 0.0.4 (text/plain): no UNIT, no EOF. */

/**
 * The cache's statistics as a metrics exposition for a scraper (Prometheus, OpenMetrics): lookups
 * by outcome, refusals by reason, time saved, sizes, the lookup latency histograms (all as
 * kc_cache_stats and kc_cache_latency read them: the directory's, every process's), and this
 * process's per-tier counters (kc_cache_tier_stats), every name "kcache_…" (docs/fleet.md lists
 * them).  Written into `buf` (`cap` bytes, NUL-terminated) as snprintf would; *needed (may be
 * NULL) gets the length it takes, NUL included.  KC_OK when it fit, else KC_ERROR with as much as
 * fit (call again with *needed bytes).  `buf` may be NULL when `cap` is 0.  Thread-safe: it may run
 * while other threads look up through the same cache (each call reads the counters afresh).
 */
KC_API int kc_cache_metrics(kc_cache *c, unsigned flags, char *buf, size_t cap, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif
