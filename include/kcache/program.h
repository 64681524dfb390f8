/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/program.h — a cached single-source compile: one CUDA source, its name expressions, one
 * target, through the cache.
 *
 * What CuPy's RawModule, cuda.core's Program or a hand-written NVRTC loop cache today, with
 * kcache's key behind it: kc_cache_compile is a compile unit of a graph ([Note: two levels] in
 * kcache/entry.h) asked for alone — the same key (every byte NVRTC reads, every option, the
 * name expressions, the target, the toolchain), the same stores (the local directory, the
 * remote, bundles), single-flight across threads and processes, leases, the trust path,
 * must-hit mode and the lookup counters.  A graph built on the same source, options and names
 * for the same target finds what kc_cache_compile stored, and the other way round.
 *
 * A warm repeat in one process is answered from the cache handle's memory (KC_LOOKUP_MEMORY)
 * without reading the directory: only for exactly the key and name expressions it recorded.
 */
#ifndef KCACHE_PROGRAM_H
#define KCACHE_PROGRAM_H

#include "cache.h"
#include "compile.h"
#include "graph.h" /* kc_param_info */

#ifdef __cplusplus
extern "C" {
#endif

/** Most name expressions one kc_cache_compile takes. */
#define KC_PROGRAM_NAMES_MAX 256

/**
 * A compiled program.  Size-versioned: fields are only ever appended; `size` says how many the
 * library that made it filled.  Everything it points to lives until kc_program_free.
 */
typedef struct kc_program {
    size_t size;                        /**< sizeof(kc_program) of the library that made it */
    const unsigned char *image;         /**< cubin (ELF) or PTX text (NUL-terminated; len without NUL) */
    size_t len;                         /**< bytes of image (PTX: without the NUL) */
    int is_ptx;                         /**< 1 for a compute_XX target */
    const char *target;                 /**< "sm_90", "compute_80": as asked, in canonical form */
    size_t nnames;                      /**< name expressions asked */
    const char *const *names;           /**< the name expressions asked, in order */
    const char *const *lowered_names;   /**< lowered_names[i]: the symbol of names[i] */
    const kc_param_info *const *params; /**< params[i][0..nparams[i]): the parameter table of names[i] (a kernel) */
    const size_t *nparams; /**< nparams[i]: parameters of names[i]; 0 for a __device__ variable ("&N::v": no table) */
    char key[KC_KEY_HEX_LEN + 1]; /**< the key (hex) this compile is stored under */
    int outcome;                  /**< kc_lookup_outcome: MEMORY, DISK, REMOTE, COMPILE or BYPASS */
    const char *log;              /**< NVRTC's log when compiled by this call, else "" */
    double compile_seconds;       /**< time in NVRTC by this call (0 on a hit) */
} kc_program;

/**
 * Compile `k` (its source, file, headers, options and flags; k->name is ignored) with the name
 * expressions `names[0..nnames)` for `target`, through the cache: the same key, stores,
 * single-flight, leases, trust path, must-hit mode and counters as a graph's compile unit.  One
 * lookup, one outcome counted (exactly the `outcome` returned, with its time in the latency
 * histogram).  A source that is not cacheable (kc_kernel_cacheable: __TIME__, __DATE__ …) is
 * compiled and not stored (KC_LOOKUP_BYPASS; KC_EINVAL when the cache is strict).
 *
 * KC_EINVAL: a NULL argument, nnames 0 or over KC_PROGRAM_NAMES_MAX, an empty or repeated name;
 * KC_EARCH: a target that is not sm_XY, sm_XYa or compute_XY; KC_ECOMPILE: NVRTC's log in
 * kc_error_last(); KC_ENOTCACHED: not stored and the cache is must-hit (nothing compiled);
 * KC_ENONVRTC: no NVRTC here.  *out is freed with kc_program_free.  Thread-safe on one cache.
 */
KC_API int kc_cache_compile(kc_cache *c, const kc_kernel_src *k, const char *const *names, size_t nnames,
                            const char *target, kc_program **out);

/** Free a program from kc_cache_compile; accepts NULL. */
KC_API void kc_program_free(kc_program *p);

#ifdef __cplusplus
}
#endif

#endif
