/*
 * kcache/guard.h — the in-memory site cache: per call site, compiled entries with guards,
 * Dynamo's limits, owners, readable recompile reasons, and automatic dynamic shapes.
 *
 * A runtime keeps one kc_site per call site (a model's forward).  Each call, it asks the
 * site: HIT (an entry's guards all pass: here is your value), MISS (compile — here is why,
 * and which dimensions to compile as dynamic), or FALLBACK (a limit is reached: run without
 * compiling — here is why).  Guards check each input's dtype, device, rank, static sizes and
 * strides (dynamic dimensions are not checked), the identities of owner objects, the
 * declared global-state word and the backend.
 *
 * Limits, with Dynamo's meaning: cache_size_limit counts the entries that guard the same
 * set of owners; accumulated_cache_size_limit counts all entries of the site; max_compiles
 * bounds the compiles of a site, so a site whose entries keep being invalidated stops
 * compiling.  A site is safe to use from many threads.
 */
#ifndef KCACHE_GUARD_H
#define KCACHE_GUARD_H

#include "cache.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KC_SITE_OPTIONS_VERSION 1
/** Most inputs a site guards. */
#define KC_SITE_MAX_INPUTS 32

/** Options of a site; fields left 0 take the defaults in brackets. */
typedef struct kc_site_options {
    unsigned version;                       /**< KC_SITE_OPTIONS_VERSION */
    uint32_t cache_size_limit;              /**< [8] entries per set of owners */
    uint32_t accumulated_cache_size_limit;  /**< [256] entries per site */
    uint32_t max_compiles;                  /**< [64] compiles per site */
    int static_shapes;                      /**< 1: never mark a dimension dynamic */
} kc_site_options;

#define KC_SITE_OPTIONS_INIT { KC_SITE_OPTIONS_VERSION, 0, 0, 0, 0 }

/**
 * One call, as the site sees it.  Sizes and strides are the actual values (`sym` ignored).
 * Every field is checked before a guard reads it: at most KC_SITE_MAX_INPUTS inputs, each
 * of rank 0..KC_MAX_RANK with sizes ≥ 0, `inputs` and `owners` non-NULL when their count is
 * not 0, and a backend name of at most 31 bytes; anything else is KC_EINVAL, naming the field.
 */
typedef struct kc_call {
    const kc_tensor_meta *inputs;
    size_t ninputs;
    const uintptr_t *owners;   /**< Identities of the objects the compiled code depends on. */
    size_t nowners;
    uint64_t globals;          /**< Grad mode, autocast, … as the caller declares them. */
    const char *backend;       /**< NULL: "cuda". */
} kc_call;

typedef enum kc_site_result { KC_SITE_HIT = 0, KC_SITE_MISS = 1, KC_SITE_FALLBACK = 2 } kc_site_result;

/** The answer of a lookup. */
typedef struct kc_site_answer {
    kc_site_result result;
    void *value;                                 /**< HIT: the entry's value. */
    char reason[256];                            /**< MISS/FALLBACK: why ("input 0 size[0]: expected 64, got 32"). */
    uint32_t dynamic[KC_SITE_MAX_INPUTS];        /**< MISS: per input, the dims to compile dynamic (bit d). */
} kc_site_answer;

typedef struct kc_site kc_site;

/**
 * A site named `name` (its profile of dynamic dimensions is kept in `cache`'s directory
 * under that name, and read now: a new process starts from what the last one learned).
 * `cache` and `opts` may be NULL.  `*out` is the caller's (kc_site_free); NULL on failure.
 */
KC_API int kc_site_new(kc_site **out, kc_cache *cache, const char *name, const kc_site_options *opts);

/** Free a site and its entries (their release callbacks run); accepts NULL. */
KC_API void kc_site_free(kc_site *s);

/**
 * Look a call up.  The returned value stays valid until its entry is dropped.  KC_EINVAL
 * when a field of `call` is out of range (see kc_call).
 */
KC_API int kc_site_lookup(kc_site *s, const kc_call *call, kc_site_answer *out);

/**
 * Add an entry for `call` after a MISS, compiled with the dims in `dynamic` (per input, as
 * the answer gave them, or better the `applied` masks of kc_graph_desc_specialize — the dims
 * the compiled description really leaves symbolic; NULL: none) unchecked.  `release` (may be NULL) is called with
 * `value` when the entry is dropped.  Counts a compile.
 */
KC_API int kc_site_insert(kc_site *s, const kc_call *call, const uint32_t *dynamic, void *value,
                          void (*release)(void *value));

/**
 * Declare bounds for a dimension of an input (as a runtime's mark_dynamic(min, max)): when
 * the dimension is dynamic, entries still check min ≤ size ≤ max, and a size outside is a
 * miss with the reason.  Applies to lookups from now on.
 */
KC_API int kc_site_set_bounds(kc_site *s, size_t input, int dim, int64_t min, int64_t max);

/** Drop every entry, in every site, that guards `owner` (the owner died).  Returns how many. */
KC_API size_t kc_owner_release(uintptr_t owner);

/**
 * The symbol name kcache uses for input `i`, dimension `d` when it is dynamic ("in0_d1"),
 * for building a graph description in C from an answer's `dynamic` masks (a description
 * that already names its dimensions — a spec — is applied with kc_graph_desc_specialize).  The key's symbol ids
 * are a hash of this name, so a graph built from a saved profile has the same key in every
 * process, and marking one more dimension dynamic renames no other.  `out` holds 24 bytes.
 */
KC_API void kc_site_symbol(size_t input, int dim, char out[24]);

/** Counters of a site. */
typedef struct kc_site_stats {
    uint64_t hits, misses, fallbacks, compiles, entries;
    uint64_t reasons[9]; /**< By first failing guard: none, dtype, device, rank, size, stride, owner, globals, backend. */
} kc_site_stats;

/** A snapshot of a site's counters (all 0 for a NULL site). */
KC_API void kc_site_get_stats(kc_site *s, kc_site_stats *out);

/** Persist the site's dynamic-dimension profile now (also done when it changes). */
KC_API int kc_site_save_profile(kc_site *s);

#ifdef __cplusplus
}
#endif
#endif
