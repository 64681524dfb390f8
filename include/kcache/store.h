/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/store.h — what a caller sees of the store beneath a cache: the open flags the
 * store itself honours, what a gc did, and the remote tier's limits and state.
 *
 * The one idea: the arrow points one way.  The store (local directory, remote backends,
 * the tiers over them) is below the cache, so the types both share live here, at the
 * store's level; kcache/cache.h includes this header, and nothing of the store includes
 * kcache/cache.h.  Backend authors find the backend table in kcache/sys/store.h, which
 * includes this header too; a caller never needs sys/.
 */
#ifndef KCACHE_STORE_H
#define KCACHE_STORE_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Flags of kc_options.flags that the local directory store honours.  They share one bit
 * space with the other KC_OPEN_* flags in kcache/cache.h (0x1 NO_ENV, 0x4 DISABLE,
 * 0x10 REMOTE_READONLY, 0x20 OPTIONS_WIN).
 */
/** Never write (as KCACHE_READONLY=1).  A reader may open a cache another user owns when no one but
 *  that user can write it (a cache prewarmed by root into an image); a writer's must be its own. */
#define KC_OPEN_READONLY 0x2u
/** Accept a cache directory that is a symbolic link, is not ours (for writing), or that others could write
 *  to or swap (through it or an ancestor); refused otherwise (KCACHE_ALLOW_UNSAFE_DIR=1). */
#define KC_OPEN_ALLOW_UNSAFE_DIR 0x8u

/** Version of kc_gc_report this build fills. */
#define KC_GC_REPORT_VERSION 1

/** What kc_cache_gc did ([Note: two levels] in kcache/entry.h; the policy at the top of
 *  src/store/local_gc.c).  Every object (graph entry, image, unit record) is an entry here.  The
 *  caller's: initialise with KC_GC_REPORT_INIT; kcache fills its version's fields and refuses another
 *  with KC_EVERSION. */
typedef struct kc_gc_report {
    unsigned version; /**< KC_GC_REPORT_VERSION, set by the caller (kept). */
    uint64_t entries_before, bytes_before, entries_after, bytes_after, evicted, temp_removed;
    uint64_t stale_removed;    /**< Objects of another format version, removed (never quarantined). */
    uint64_t dangling_removed; /**< Graph entries and unit records one of whose images was gone, removed. */
    uint64_t orphans_removed;  /**< Images no graph entry or unit record refers to, removed (past a grace period). */
    uint64_t corrupt;          /**< Objects that did not decode: left in place for verify or a read to quarantine. */
    uint64_t profiles_before, profiles_after; /**< Site profiles (LRU items too, in the bytes and in `evicted`;
                                                   not in the entries). */
} kc_gc_report;

/** Initialiser of a kc_gc_report: this version, every count 0. */
#define KC_GC_REPORT_INIT \
    { KC_GC_REPORT_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Limits of one remote tier, whatever its back end; 0 fields take the defaults shown.  kc_options.remote_config
 * holds the defaults of every remote; a URL's attributes (connect-ms=, deadline-ms=, … in kc_options.remote)
 * override them for that remote alone.  A back end honours those that apply to it.
 */
typedef struct kc_remote_limits {
    unsigned connect_ms;     /**< Connect timeout; 100. */
    unsigned deadline_ms;    /**< Deadline of one whole command, reply included; 500. */
    unsigned backoff_ms;     /**< First circuit-breaker window; 1000 (doubles per failure, ±25% jitter). */
    unsigned backoff_max_ms; /**< Longest window; 60000. */
    uint64_t max_value;      /**< Largest value read or written; 64 MiB (KC_ENTRY_MAX_BYTES at most). */
    unsigned ttl_s;          /**< Expiry of values written; 0: none. */
} kc_remote_limits;

/** Initialiser of a kc_remote_limits (every limit its default).  It grows with kc_options' version. */
#define KC_REMOTE_LIMITS_INIT \
    { 0, 0, 0, 0, 0, 0 }

/** Deprecated (kc_options version 3 and before): the same struct, from when Redis was the only remote. */
typedef kc_remote_limits kc_redis_config;
/** Deprecated: KC_REMOTE_LIMITS_INIT. */
#define KC_REDIS_CONFIG_INIT KC_REMOTE_LIMITS_INIT

/** The circuit breaker's states. */
typedef enum kc_breaker { KC_BREAKER_CLOSED = 0, KC_BREAKER_OPEN = 1, KC_BREAKER_HALF_OPEN = 2 } kc_breaker;

/** What a remote backend says of itself (kc_cache_remote_state). */
typedef struct kc_remote_state {
    char url[300]; /**< The URL with any password replaced by "***". */
    kc_breaker breaker;
    double retry_in_ms; /**< While open: time left in the window. */
    unsigned failures;  /**< Consecutive failures (the window doubles with each). */
} kc_remote_state;

/** Version of kc_tier_stats this build fills. */
#define KC_TIER_STATS_VERSION 1

/**
 * One tier beneath a cache and what it saw since the cache was opened (kc_cache_tier_stats): tier 0 is the
 * local directory, tiers 1… the remotes in the order kc_options.remote lists them.  The counters are this
 * process's, per tier, and count every object asked of the tier — graph entries, images and unit records alike
 * (its errors include what was refused by its MAC or signature); the shared remote_* counters (kcache/stats.h)
 * keep their own meaning, per graph lookup, so the two are not sums of each other.  The
 * caller's: initialise with KC_TIER_STATS_INIT; kcache fills its version's fields, another is KC_EVERSION.
 */
typedef struct kc_tier_stats {
    unsigned version;      /**< KC_TIER_STATS_VERSION, set by the caller (kept). */
    char url[300];         /**< "local" for the directory; a remote's URL with any password "***". */
    int remote;            /**< 0: the local directory; 1: a remote. */
    int readonly;          /**< 1: never written (its read-only switch, or the cache's). */
    kc_breaker breaker;    /**< A remote's circuit breaker (the back end's own, or the tier's); closed for local. */
    double retry_in_ms;    /**< While open: time left in the window. */
    unsigned failures;     /**< Consecutive failures. */
    uint64_t hits;         /**< Reads that found what they asked for (validated). */
    uint64_t misses;       /**< Reads that found nothing. */
    uint64_t errors;       /**< Reads that failed: an error, a timeout, a refused (unauthenticated or corrupt) entry. */
    uint64_t skipped;      /**< Calls not made: the breaker was open. */
    uint64_t writes;       /**< Writes done (a put, a back-fill of what a slower tier had). */
    uint64_t write_errors; /**< Writes that failed or were dropped. */
} kc_tier_stats;

/** Initialiser of a kc_tier_stats: this version, the rest 0. */
#define KC_TIER_STATS_INIT \
    { KC_TIER_STATS_VERSION, {0}, 0, 0, KC_BREAKER_CLOSED, 0, 0, 0, 0, 0, 0, 0, 0 }

/** Name of a breaker state: "closed", "open", "half-open"; static. */
KC_API const char *kc_breaker_name(kc_breaker s);

#ifdef __cplusplus
}
#endif
#endif
