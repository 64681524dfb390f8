/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/prewarm.h — manifests, and compiling one for a fleet's architectures ahead of time.
 *
 * A manifest is a small JSON file that names the graph specs a deployment needs and the
 * targets of its fleet:
 *
 *   { "graphs": ["mlp_block.json", "layer_norm.json"],      spec paths, relative to the manifest
 *     "archs":  ["sm_80", "sm_90", "compute_80"] }          optional; targets (sm_XY, sm_XYa, compute_XY)
 *
 * kc_prewarm compiles every graph for every target on any host (no GPU needed), in
 * parallel, through the same single-flight path as kc_graph_compile, so concurrent
 * prewarms of one cache compile each variant once.  A variant counts as done only when it
 * is in the cache: one that compiled but could not be stored (a full disk, a read-only
 * cache) is reported as failed, with the reason.  Below the variants, each compile unit (one
 * NVRTC program: [Note: two levels] in kcache/entry.h) is compiled once per target and cache:
 * a unit two graphs share is compiled by one of them — the other finds it stored, or waits on
 * the unit's lock while it compiles — so on an empty cache the report's units_compiled is
 * the number of distinct units of the run, and a second prewarm compiles none.
 *
 * The manifest is read strictly: a field given twice (at any depth), a field other than these
 * two or a value of another type is an error, never ignored.  Errors name the file and the place
 * ("m.json:3:7: not valid JSON: …", "m.json:2:14: archs[1] is not a target", "m.json:1:24:
 * unknown field \"arches\" (known here: graphs, archs)"); they are KC_EINVAL.  A manifest handle is immutable once loaded (but for
 * kc_manifest_set_archs) and may be read from many threads at once.
 */
#ifndef KCACHE_PREWARM_H
#define KCACHE_PREWARM_H

#include "cache.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Caps on a manifest: its file size, its graphs and its targets. */
#define KC_MANIFEST_MAX_BYTES (16u << 20)
#define KC_MANIFEST_MAX_GRAPHS 10000
#define KC_MANIFEST_MAX_ARCHS 64

/** A parsed manifest: spec paths (resolved against the manifest's folder) and targets. */
typedef struct kc_manifest kc_manifest;

/** Read and validate the manifest at `path`.  Free with kc_manifest_free. */
KC_API int kc_manifest_load(kc_manifest **out, const char *path);

/**
 * Parse a manifest held in memory (`len` bytes, no NUL needed).  Relative spec paths are
 * resolved against `base_dir` (NULL: "."); `origin` names it in error messages (NULL:
 * "manifest").
 */
KC_API int kc_manifest_parse(kc_manifest **out, const char *json, size_t len, const char *base_dir, const char *origin);

/** Replace the manifest's targets by a comma-separated list ("sm_80,sm_90"); duplicates are dropped. */
KC_API int kc_manifest_set_archs(kc_manifest *m, const char *list);

/** Number of graphs; the ith spec path (borrowed, lives as long as the manifest). */
KC_API size_t kc_manifest_graph_count(const kc_manifest *m);
KC_API const char *kc_manifest_graph(const kc_manifest *m, size_t i);

/** Number of targets (0 when the manifest names none); the ith one (borrowed). */
KC_API size_t kc_manifest_arch_count(const kc_manifest *m);
KC_API const char *kc_manifest_arch(const kc_manifest *m, size_t i);

/** Free a manifest; accepts NULL. */
KC_API void kc_manifest_free(kc_manifest *m);

/** One variant of a prewarm: graph i of the manifest for target j. */
typedef struct kc_prewarm_result {
    size_t graph;       /**< Index into the manifest's graphs. */
    size_t arch;        /**< Index into the manifest's targets. */
    const char *name;   /**< The graph's name (borrowed from the report). */
    int status;         /**< KC_OK (compiled and stored, a hit, or bypassed), or why it failed. */
    const char *error;  /**< The reason when status != KC_OK, else "" (owned by the report). */
    kc_graph_info info; /**< Where it came from; info.store_status says whether it was stored. */
} kc_prewarm_result;

/** What a prewarm did.  Owned by the caller; free with kc_prewarm_report_free. */
typedef struct kc_prewarm_report {
    size_t graphs, variants; /**< graphs × targets = variants */
    size_t compiled, hits, bypassed, failed, done;
    double seconds;
    kc_prewarm_result *results; /**< `variants` results, graph-major in manifest order. */
    /** Compile units the variants that did not hit needed (the sum of their info.units: a unit
     *  shared by two graphs counts for each), and how many of those NVRTC compiled (the sum of
     *  info.units_compiled; the others were found stored: units - units_compiled).  A variant
     *  that hit needed no unit.  Failed variants count what they compiled before failing. */
    size_t units, units_compiled;
    double compile_ms; /**< NVRTC wall time, summed over the variants */
} kc_prewarm_report;

/**
 * Called once per finished variant, from the worker that finished it, one call at a time
 * (never concurrently).  `r` is the live report: results other than `index` may still be
 * in progress unless their graph's variants are all done.
 */
typedef void (*kc_prewarm_progress_cb)(const kc_prewarm_report *r, size_t index, void *ctx);

/** Version of kc_prewarm_options understood by this build. */
#define KC_PREWARM_OPTIONS_VERSION 1

/** Options of kc_prewarm.  Zero fields take defaults. */
typedef struct kc_prewarm_options {
    unsigned version;                /**< KC_PREWARM_OPTIONS_VERSION. */
    int jobs;                        /**< Variants compiled at once; 0: one per CPU. */
    int publish;                     /**< With a remote tier: also publish local hits the remote lacks. */
    kc_prewarm_progress_cb progress; /**< May be NULL. */
    void *ctx;                       /**< Passed to progress. */
} kc_prewarm_options;

/** Static initialiser of kc_prewarm_options. */
#define KC_PREWARM_OPTIONS_INIT \
    { KC_PREWARM_OPTIONS_VERSION, 0, 0, NULL, NULL }

/**
 * Compile every graph of `m` for every target of `m` into the cache.  Every spec is loaded
 * first: a spec that cannot be read or parsed fails the call before anything compiles
 * (KC_EINVAL naming the manifest entry, or the I/O error), with *out NULL.  Otherwise
 * *out gets the report, and the call returns KC_OK when every variant is in the cache (or
 * bypassed), else the status of the first failed variant, its reason in kc_error_last().
 * KC_EINVAL when the manifest names no target.
 */
KC_API int kc_prewarm(kc_cache *c, const kc_manifest *m, const kc_prewarm_options *opts, kc_prewarm_report **out);

/** Free a report; accepts NULL. */
KC_API void kc_prewarm_report_free(kc_prewarm_report *r);

/* ---- coverage: is every variant a manifest asks for in the cache? ---- */

/** kc_manifest_covered's `device` for "the manifest's targets" rather than a GPU's. */
#define KC_COVERAGE_ARCHS (-1)

/** One graph of a manifest for one target: hit or missing. */
typedef struct kc_coverage_result {
    size_t graph;                     /**< Index into the manifest's graphs. */
    size_t target;                    /**< Index into the report's targets. */
    const char *name;                 /**< The graph's name (owned by the report). */
    char key[KC_KEY_HEX_LEN + 1];     /**< The graph's key (hex). */
    int hit;                          /**< 1: its graph entry is stored, and every image it refers to is there
                                            and checks out (kc_entry_resolve); 0: missing. */
    char variant[KC_VARIANT_MAX + 1]; /**< On a hit, the stored variant that serves it (for a device: the first
                                            of its candidates that does, e.g. "sm_80" on 8.6); else "". */
    const char *reason;               /**< When missing, why: the stored graph entry's missing or bad image, or
                                            explain's nearest entry and what differs (owned by the report); else "". */
} kc_coverage_result;

/** What a coverage check found.  Owned by the caller; free with kc_coverage_report_free. */
typedef struct kc_coverage_report {
    size_t graphs, targets;          /**< graphs × targets = results */
    size_t covered, missing;         /**< covered + missing = graphs × targets */
    int device;                      /**< The GPU asked about, or KC_COVERAGE_ARCHS. */
    const char *const *target_names; /**< `targets` names: the manifest's targets, or for a device the one
                                            variant a miss there would compile (kc_variant_for_device). */
    kc_coverage_result *results;     /**< graph-major, in manifest order. */
} kc_coverage_report;

/**
 * Whether the cache covers manifest `m`: for each graph and each target, is the graph entry
 * in the local cache with every image it refers to present and sound?  Nothing is counted,
 * refreshed or quarantined (kc_cache_peek and kc_entry_resolve are maintenance reads); no spec
 * is compiled.  `device` KC_COVERAGE_ARCHS asks for the manifest's targets (kc_manifest_set_archs
 * to choose others); a device ordinal asks for what a lookup on that GPU would accept: one result
 * per graph, a hit when any of kc_target_candidates of its capability is stored and sound, in the
 * lookup's order ([Note: variant selection] in kcache/target.h).  Each missing one has a reason
 * (kc_graph_explain's nearest entry, or the image the stored graph entry lacks).
 * Returns KC_OK when everything is covered, KC_MISS when anything is missing (both with *out
 * set), else an error with *out NULL: KC_EINVAL (no target, a spec that cannot be read),
 * KC_ENODRIVER or KC_EINVAL from kc_cuda_capability for a device.
 */
KC_API int kc_manifest_covered(kc_cache *c, const kc_manifest *m, int device, kc_coverage_report **out);

/** Free a coverage report; accepts NULL. */
KC_API void kc_coverage_report_free(kc_coverage_report *r);

#ifdef __cplusplus
}
#endif
#endif
