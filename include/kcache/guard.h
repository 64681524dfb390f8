/* SPDX-License-Identifier: Apache-2.0 */
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
 * Limits, next to Dynamo's ([Note: site limits] in site.c):
 *   - cache_size_limit (Dynamo: recompile_limit, 8) bounds the entries that guard the same
 *     set of owners.  A *recompile* is a miss when the site already holds an entry for the
 *     call's owner set (Dynamo's is_recompilation); the first call and a new owner set are
 *     compiles, not recompiles — KCACHE_LOG=recompiles prints only recompiles (and fallbacks),
 *     KCACHE_LOG=guard the other compiles.
 *   - accumulated_cache_size_limit (Dynamo: accumulated_recompile_limit, 256) bounds all
 *     entries of the site.
 *   - max_compiles bounds the *real* compiles of the site (inserts not marked
 *     KC_SITE_INSERT_CACHED), so a site whose entries keep being invalidated stops compiling.
 *     It defaults to the accumulated limit, as Dynamo bounds a frame's compile ids by the
 *     accumulated limit itself; unlike Dynamo, an entry answered by the persistent cache (a
 *     disk hit, inserted with KC_SITE_INSERT_CACHED) counts toward no compile bound, so a model
 *     re-created again and again, every compile a disk hit, never ends up uncompiled.
 * Every limit is enforced at insert too, and a compile in flight counts toward it: with
 * limit 4, no interleaving of threads leaves more than 4 entries.
 *
 * Threads: a site is safe to use from many threads.  A miss is single-flight: the lookup that
 * misses starts a compile of the call's guard set, and a concurrent lookup whose call that
 * compile will serve waits until kc_site_insert (or kc_site_abandon) ends it, and then hits.
 * So after a MISS, insert or abandon; a thread's next lookup on the same site abandons its
 * own compile in flight, so single-threaded callers need nothing more.
 *
 * Owners are compared by address (and generation): see kc_call.owners.
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
    unsigned version;                      /**< KC_SITE_OPTIONS_VERSION */
    uint32_t cache_size_limit;             /**< [8] entries per set of owners */
    uint32_t accumulated_cache_size_limit; /**< [256] entries per site */
    uint32_t max_compiles;                 /**< [accumulated_cache_size_limit] real compiles per site */
    int static_shapes;                     /**< 1: never mark a dimension dynamic */
} kc_site_options;

#define KC_SITE_OPTIONS_INIT \
    { KC_SITE_OPTIONS_VERSION, 0, 0, 0, 0 }

/**
 * One call, as the site sees it.  Sizes and strides are the actual values (`sym` ignored).
 * Every field is checked before a guard reads it: at most KC_SITE_MAX_INPUTS inputs, each
 * of rank 0..KC_MAX_RANK with sizes ≥ 0, `inputs` and `owners` non-NULL when their count is
 * not 0, and a backend name of at most 31 bytes; anything else is KC_EINVAL, naming the field.
 */
typedef struct kc_call {
    const kc_tensor_meta *inputs;
    size_t ninputs;
    /**
     * Identities of the objects the compiled code depends on — by ADDRESS.  An owner freed
     * without kc_owner_release, and a new object that the allocator places at the same
     * address, is the SAME owner to the site: the new object gets the old object's entries,
     * compiled code guarded for another object.  Call kc_owner_release when an owner dies, or
     * give each object a generation number (as a weak reference tells a dead object from a
     * new one) and pass it with the address to kc_site_lookup_ext and kc_site_insert_ext: an
     * entry guards each owner's (address, generation), so the same address with a new
     * generation is another owner — a miss, never the old entry.
     */
    const uintptr_t *owners;
    size_t nowners;
    uint64_t globals;    /**< Grad mode, autocast, … as the caller declares them. */
    const char *backend; /**< NULL: "cuda". */
} kc_call;

/** Initialiser of a kc_call (no inputs, no owners, globals 0, the default backend). */
#define KC_CALL_INIT \
    { NULL, 0, NULL, 0, 0, NULL }

typedef enum kc_site_result { KC_SITE_HIT = 0, KC_SITE_MISS = 1, KC_SITE_FALLBACK = 2 } kc_site_result;

/** The answer of a lookup. */
typedef struct kc_site_answer {
    kc_site_result result;
    void *value;                          /**< HIT: the entry's value. */
    char reason[256];                     /**< MISS/FALLBACK: why ("input 0 size[0]: expected 64, got 32"). */
    uint32_t dynamic[KC_SITE_MAX_INPUTS]; /**< MISS: per input, the dims to compile dynamic (bit d). */
} kc_site_answer;

typedef struct kc_site kc_site;

/**
 * A site named `name` (its profile of dynamic dimensions is kept in `cache`'s directory
 * under that name, and read now: a new process starts from what the last one learned; with a
 * remote tier, merged with the remote's profile of that name).  `cache` and `opts` may be NULL;
 * a cache with a writable remote must outlive the site.  `*out` is the caller's (kc_site_free); NULL on failure.
 */
KC_API int kc_site_new(kc_site **out, kc_cache *cache, const char *name, const kc_site_options *opts);

/** Free a site and its entries (their release callbacks run now, or for a value retained by
 *  kc_site_lookup_ext when its last hold is released); accepts NULL.  No other thread may
 *  be using the site. */
KC_API void kc_site_free(kc_site *s);

/**
 * Look a call up.  The returned value is borrowed: it stays valid until its entry is dropped
 * (kc_owner_release, kc_site_free — from any thread); use kc_site_lookup_ext with a hold when another
 * thread may drop it.  A lookup whose call another thread is compiling waits for that compile
 * (see the top of this file).  KC_EINVAL when a field of `call` is out of range (see kc_call).
 */
KC_API int kc_site_lookup(kc_site *s, const kc_call *call, kc_site_answer *out);

/** A hit's entry, retained for the caller (kc_site_lookup_ext). */
typedef struct kc_site_hold kc_site_hold;

/**
 * kc_site_lookup with owner generations and holds.  `owner_generations`: NULL (every
 * generation 0, as kc_site_lookup), or one per `call->owners[i]` (see kc_call.owners).
 * `hold`: NULL (the value is borrowed, as kc_site_lookup), or on a HIT `*hold` retains the
 * entry: `out->value` stays valid, and its release callback does not run, until
 * kc_site_hold_release(*hold) — even if the entry is dropped meanwhile (kc_owner_release,
 * kc_site_free) by this thread or another.  `*hold` is NULL when the answer is not a HIT or
 * on failure.
 */
KC_API int kc_site_lookup_ext(kc_site *s, const kc_call *call, const uint64_t *owner_generations, kc_site_answer *out,
                              kc_site_hold **hold);

/** Release a hold of kc_site_lookup_ext (the last one of a dropped entry runs its release callback); accepts NULL. */
KC_API void kc_site_hold_release(kc_site_hold *hold);

/**
 * Add an entry for `call` after a MISS, compiled with the dims in `dynamic` (per input, as
 * the answer gave them, or better the `applied` masks of kc_graph_desc_specialize — the dims
 * the compiled description really leaves symbolic; NULL: none) unchecked.  `release` (may be NULL) is called with
 * `value` when the entry is dropped.  Counts a compile.
 */
KC_API int kc_site_insert(kc_site *s, const kc_call *call, const uint32_t *dynamic, void *value,
                          void (*release)(void *value));

/** kc_site_insert_ext flag: the value was answered by the persistent cache (kc_graph_info.source
 *  KC_FROM_DISK, KC_FROM_REMOTE or KC_FROM_MEMORY), not compiled: it counts toward no compile
 *  bound (max_compiles), only toward the entry limits. */
#define KC_SITE_INSERT_CACHED 1u

/**
 * kc_site_insert with owner generations (NULL: all 0; else one per owner, as given to
 * kc_site_lookup_ext) and `flags` (KC_SITE_INSERT_CACHED or 0; kc_site_insert is flags 0).
 *
 * Both end this thread's compile in flight, and any whose guards the call passes, waking
 * the lookups that wait on it.  Limits are enforced here: when the entry would exceed
 * cache_size_limit, accumulated_cache_size_limit or (flags 0) max_compiles, nothing is
 * inserted and KC_ELIMIT is returned with the limit in kc_error_last(); the value stays the
 * caller's (`release` is not called), and the call should run uncompiled.  A dimension marked
 * dynamic whose size in `call` is outside bounds declared with kc_site_set_bounds is guarded
 * as static (the entry serves that size only).
 */
KC_API int kc_site_insert_ext(kc_site *s, const kc_call *call, const uint64_t *owner_generations,
                              const uint32_t *dynamic, void *value, void (*release)(void *value), unsigned flags);

/**
 * After a MISS whose compile failed or was given up: end the compile in flight (this
 * thread's, and any whose guards `call` passes with owner generations 0; `call` may be NULL), so that a waiting
 * lookup wakes and gets the MISS itself.  Returns how many were ended.
 */
KC_API size_t kc_site_abandon(kc_site *s, const kc_call *call);

/**
 * Declare bounds for a dimension of an input (as a runtime's mark_dynamic(min, max)): when
 * the dimension is dynamic, entries still check min ≤ size ≤ max, and a size outside is a
 * miss with the reason, whose answer proposes that dimension static (`dynamic` lacks its bit),
 * so inserting what the answer says and calling again hits.  Applies to lookups from now on.
 */
KC_API int kc_site_set_bounds(kc_site *s, size_t input, int dim, int64_t min, int64_t max);

/** Drop every entry, in every site, that guards `owner` (the owner died; every generation of
 *  the address).  Returns how many.  A value retained by kc_site_lookup_ext is released
 *  when its last hold is. */
KC_API size_t kc_owner_release(uintptr_t owner);

/**
 * The symbol name kcache uses for input `i`, dimension `d` when it is dynamic ("in0_d1"),
 * for building a graph description in C from an answer's `dynamic` masks (a description
 * that already names its dimensions — a spec — is applied with kc_graph_desc_specialize).  The key's symbol ids
 * are a hash of this name, so a graph built from a saved profile has the same key in every
 * process, and marking one more dimension dynamic renames no other.  `out` holds 24 bytes.
 */
KC_API void kc_site_symbol(size_t input, int dim, char out[24]);

/** Counters of a site.  `compiles` counts real compiles (inserts without KC_SITE_INSERT_CACHED);
 *  `misses` every MISS answer (first calls and new owner sets included: see kc_site_info). */
typedef struct kc_site_stats {
    uint64_t hits, misses, fallbacks, compiles, entries;
    uint64_t
        reasons[9]; /**< By first failing guard: none, dtype, device, rank, size, stride, owner, globals, backend. */
} kc_site_stats;

/** A snapshot of a site's counters (all 0 for a NULL site). */
KC_API void kc_site_get_stats(kc_site *s, kc_site_stats *out);

#define KC_SITE_INFO_VERSION 1

/** More of a site's counters (kc_site_get_info); set `version` to KC_SITE_INFO_VERSION. */
typedef struct kc_site_info {
    unsigned version;
    uint64_t recompiles;           /**< MISSes with an entry for the same owner set already (Dynamo's recompiles). */
    uint64_t recompile_reasons[9]; /**< Of those, by failing guard (indices as kc_site_stats.reasons). */
    uint64_t cached_inserts;       /**< Inserts marked KC_SITE_INSERT_CACHED (no compile). */
    uint64_t refused_inserts;      /**< Inserts refused by a limit. */
    uint64_t waits;                /**< Lookups that waited for another caller's compile (each answered once). */
    uint64_t in_flight;            /**< Compiles in flight now. */
    uint64_t held;                 /**< Holds of kc_site_lookup_ext taken (ever). */
} kc_site_info;

/** Initializer of a kc_site_info (its version set, the rest 0). */
#define KC_SITE_INFO_INIT \
    { KC_SITE_INFO_VERSION, 0, {0, 0, 0, 0, 0, 0, 0, 0, 0}, 0, 0, 0, 0, 0 }

/** A snapshot of more counters of a site.  KC_EINVAL for NULL arguments, KC_EVERSION for another version. */
KC_API int kc_site_get_info(kc_site *s, kc_site_info *out);

/**
 * Persist the site's dynamic-dimension profile now (also done when it changes).  The write
 * merges: under an flock of "<profile>.lock" it reads the file, joins its dimensions to the
 * site's (the site learns them too) and replaces it atomically, so processes that learn
 * different dimensions leave the next one all of them.
 */
KC_API int kc_site_save_profile(kc_site *s);

/** Longest site name a profile records (a longer name is cut to it). */
#define KC_SITE_NAME_MAX 127
/** Most bytes a profile may have: a local file is read up to it, a bundle's or a remote's is refused past it. */
#define KC_SITE_PROFILE_MAX 4096

/*
 * Profiles travel: in bundles (kcache export/import) and through the remote tier.  A profile is
 * the text "kcache-profile 1\nsite <name>\n" then "input <i> <mask>\n" for each input with
 * dynamic dimensions (i in increasing order, mask in lowercase hex), filed in the cache's profile
 * directory (kc_cache_profile_dir) as "<XXH3-64 of the name, 16 hex>.profile".  Bytes from
 * outside are accepted only in exactly that form.  With a remote tier, a site's save also
 * publishes its profile there (merged with the remote's), and a new site merges the remote's
 * in: one round trip each, bounded by the remote's deadline, a failure counted and logged but
 * never an error of the site.  A site keeps `cache` to publish through it when the cache has a
 * writable remote: such a cache must outlive its sites.
 */

/**
 * Whether `data` is a sound profile (the form above, at most KC_SITE_PROFILE_MAX bytes): KC_OK
 * and the site's name into `site` (`cap` bytes; may be NULL), or KC_ECORRUPT with the reason.
 */
KC_API int kc_site_profile_check(const void *data, size_t len, char *site, size_t cap);

/**
 * Merge a profile's bytes into `cache`'s profile of the same site: the union of their dynamic
 * dimensions, under the lock and atomic rename of kc_site_save_profile.  The bytes are checked
 * first (kc_site_profile_check; KC_ECORRUPT, nothing written).  *changed (may be NULL) is 1 when
 * the file was written — with `dry_run`, would be (nothing is written).  KC_EREADONLY unless the
 * cache is writable (a dry run aside).
 */
KC_API int kc_site_profile_merge(kc_cache *cache, const void *data, size_t len, int dry_run, int *changed);

/**
 * Call `cb` with the bytes of each sound profile in `cache`'s directory that is filed under its
 * site's name, in file name order (borrowed for the call); others are left out and logged.  A
 * non-zero return of `cb` stops the walk and is returned.  KC_OK for a cache without profiles.
 */
KC_API int kc_site_profile_foreach(kc_cache *cache, int (*cb)(const void *data, size_t len, void *ctx), void *ctx);

/**
 * How many profile files `cache` holds and their bytes (a walk of its profile directory).
 * Profiles take room like entries: their bytes count toward the cache's size limit (in
 * KC_STAT_BYTES, not in KC_STAT_ENTRIES) and gc evicts them, least recently used first, with the
 * entries; a site that loads its profile refreshes its time.  0 and 0 for a cache without any.
 */
KC_API int kc_site_profile_usage(kc_cache *cache, uint64_t *files, uint64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif
