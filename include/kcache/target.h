/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/target.h — GPU targets and variants: names, the variant check, and which
 * variants a device can run, in order.
 *
 * A target is what NVRTC compiles for: a cubin for a real architecture ("sm_80", the
 * arch-specific "sm_90a", the family "sm_100f") or PTX for a virtual one ("compute_80").
 * An entry is stored once per target, and the target's name is the entry's *variant*
 * (the GPU architecture is not in the key).  This header is the one place that decides
 * which variants a device of compute capability X.Y may load and in which order; the
 * lookup (graph part), kc_variant_select and the tools all ask it.  It also says which
 * targets a toolchain supports, and checks a name against them ([Note: target check]): only
 * kc_target_supported asks NVRTC (kc_cache_targets, in kcache/cache.h, through it); everything else here knows nothing of
 * files, NVRTC or the driver, and is pure.  Every function here is safe from any thread.
 *
 * [Note: variant selection]
 * On a device of compute capability X.Y, kc_target_candidates lists, most preferred first:
 *   1. sm_XYa  — arch-specific cubin (only for X >= 9: Hopper introduced 'a' targets);
 *                it runs on X.Y alone, never on any other device, not even X.(Y+1).
 *   2. sm_XYf  — family cubin (only for X >= 10: 'f' targets came with Blackwell and
 *                CUDA 12.9); it runs on X.y for every y >= Y of the same major.
 *   3. sm_XY   — the plain cubin for this device.
 *   4. for each lower minor y of the same major that some toolkit has targeted, highest
 *      first: sm_Xyf (X >= 10), then sm_Xy.  A cubin for X.y runs on X.Y when y <= Y
 *      (binary compatible within a major); a newer minor (sm_89 on 8.6) never does, nor
 *      does any cubin of another major (sm_90 on 10.0, sm_100f on 12.0).
 *   5. PTX, compute_N for every known virtual architecture N <= X.Y, highest first (the
 *      driver JIT-compiles it; PTX runs on any later device).  Only plain compute_N:
 *      compute_XYa/f PTX is as tied to its device as the cubin and is never chosen.
 * Nothing else: no sm_70a or sm_80f (targets that no toolkit makes), no minor that no
 * toolkit has ever targeted (sm_85), because every candidate costs the lookup a file
 * open.  The device's own sm_XY (and its a/f forms) is always listed, known or not, so
 * a device newer than this table still finds what was compiled for it.
 * What the CUDA documentation says (Programming Guide, "Compute Capabilities" / feature
 * availability; nvcc's -arch docs): the arch-specific set (suffix 'a') is "not
 * guaranteed to be available on subsequent architectures" and code for it runs only on
 * exactly that compute capability; the family-specific set (suffix 'f', CUDA 12.9+,
 * compute capability 10.0 and later) is shared by the devices of one family — the same
 * major version, later minors — so sm_100f runs on 10.0 (B200) and 10.3 (B300), sm_120f
 * on 12.0 and 12.1, and none of them on 11.0 or on another major; 'a' ⊃ 'f' ⊃ plain,
 * which is why a stored 'a' or 'f' cubin is preferred to the plain one when it runs.
 * When nothing stored fits, kcache compiles the plain sm_XY (kc_variant_for_device):
 * the portable choice that never fails on a device because of a feature it lacks.
 * kc_variant_select is this list applied to a set of names: the first candidate present.
 *
 * [Note: target check]
 * Every target named to kcache — on the command line, in a manifest, through the API — is
 * checked before any work, and an unknown one is KC_EARCH, naming the target, where it came
 * from and the targets the toolchain supports.  Two sets decide it:
 *   - the supported list of a toolchain (kc_target_supported): what this host's NVRTC
 *     reports (nvrtcGetSupportedArchs, through the library kcache loads: the one the key
 *     names, [Note: finding NVRTC]) when the toolchain asked about is this host's NVRTC;
 *     otherwise — no NVRTC here, or a cache pinned to another toolchain — kcache's own table
 *     of every architecture a CUDA toolkit (10 to 13) has made (kc_target_table);
 *   - for each XY listed: sm_XY and compute_XY; sm_XYa and compute_XYa when XY >= 90; sm_XYf
 *     and compute_XYf when XY >= 100 and the toolchain makes family targets (NVRTC >= 12.9).
 * The rule, by what the caller does with the target:
 *   - a lookup that may only read stored entries (kc_graph_explain, the lookup half of
 *     kc_graph_compile) accepts a target of the table, or one this host's NVRTC lists; NVRTC
 *     is loaded only for a target the table does not know, so a hit never pays for dlopen,
 *     and a runtime without NVRTC still loads an sm_90 entry (or an sm_37 one a CUDA 11
 *     toolchain stored);
 *   - a compile (a miss that compiles, kc_compile_names, kc_prewarm) needs the target in the
 *     compiling NVRTC's list: sm_37 on CUDA 13 is refused before any compile starts, with
 *     the list, instead of NVRTC's bare INVALID_OPTION;
 *   - the tools and kc_prewarm check up front against kc_cache_targets (kcache/cache.h): the list of the
 *     toolchain the cache's keys use, so `kcache get --arch sm_999` fails before a lookup.
 * A manifest's targets are checked against the table when it is read (kc_manifest_load,
 * kc_manifest_set_archs: KC_EINVAL, a bad input file), and against the cache's toolchain by
 * kc_prewarm and the tools before they start.
 */
#ifndef KCACHE_TARGET_H
#define KCACHE_TARGET_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest variant name, without its NUL. */
#define KC_VARIANT_MAX 31

/** Room enough for kc_target_candidates on any device: size `out` with this. */
#define KC_TARGET_CANDIDATES_MAX 32

/** What a target makes: a cubin for one real architecture, or PTX for a virtual one. */
typedef enum kc_target_kind { KC_TARGET_CUBIN = 0, KC_TARGET_PTX = 1 } kc_target_kind;

/**
 * A compile target, parsed once where it enters (a CLI option, a manifest, a bundle's coverage
 * record, a public call taking a name) and passed inward as this value: cubin for sm_XY[a|f], or
 * PTX for compute_XY.  Its family is its major: the devices of one major share a family, and a
 * family cubin ('f') runs on every later minor of it ([Note: variant selection]).  The layout is
 * fixed (a value type: common/api.h); its name is kc_target_name's, and kc_target_parse of that
 * name gives the same value back.
 */
typedef struct kc_target {
    int major, minor; /**< Compute capability, e.g. 9 and 0; the major is the family. */
    int ptx;          /**< The kind: KC_TARGET_PTX (compute_XY) or KC_TARGET_CUBIN (sm_XY). */
    char suffix;      /**< 'a' (arch-specific), 'f' (family) or '\0'. */
} kc_target;

/** A kc_target before it is filled: no target (major 0 is none that parses). */
#define KC_TARGET_INIT \
    { 0, 0, KC_TARGET_CUBIN, '\0' }

/**
 * Parse "sm_90", "sm_90a", "sm_100f", "compute_80": the prefix (sm_ or compute_), the compute
 * capability as two or three digits without a leading zero (major 3..99, one digit of minor), and
 * an optional suffix 'a' or 'f'.  KC_EARCH on anything else, naming the name and what is wrong;
 * KC_EINVAL on NULL.  Only canonical names parse, so kc_target_name gives the name back unchanged.
 */
KC_API int kc_target_parse(const char *name, kc_target *out);

/** Write a target's name ("sm_90a"); `out` holds at least 16 bytes. */
KC_API void kc_target_name(const kc_target *t, char out[16]);

/** The target kcache compiles for a device of capability major.minor when nothing stored fits:
 *  the plain cubin sm_XY (kc_variant_for_device is its name). */
KC_API void kc_target_for_device(int major, int minor, kc_target *out);

/**
 * Validate a variant name: [a-z0-9_]{1,31}.  KC_OK or KC_EINVAL (with a message).
 */
KC_API int kc_variant_check(const char *variant);

/**
 * The targets a device of capability major.minor can load, most preferred first
 * ([Note: variant selection]): up to `cap` NUL-terminated names written to `out`, and
 * their number returned.  Never more than KC_TARGET_CANDIDATES_MAX; when `cap` is
 * smaller the list is cut, keeping the most preferred.  0 for a capability no target
 * name can spell (major < 3 or > 99, minor outside 0..9).  Every name parses with
 * kc_target_parse, and none appears twice.
 */
KC_API size_t kc_target_candidates(int major, int minor, char out[][16], size_t cap);

/**
 * Choose among `n` variant names ("sm_90", "sm_90a", "compute_80") the one to load on a
 * device of capability major.minor: the first of kc_target_candidates that is among
 * them, compared by name as the lookup opens them ([Note: variant selection]).  Returns
 * its index (the first such index when a name repeats), or KC_MISS when none fits.
 * NULL entries and names that are not targets never match.
 */
KC_API int kc_variant_select(const char *const *variants, size_t n, int major, int minor);

/**
 * The target to compile for a device of capability major.minor when nothing stored
 * fits: the plain cubin "sm_XY" ("sm_90" on 9.0, not "sm_90a": see the note).
 * `out` holds at least 16 bytes.
 */
KC_API void kc_variant_for_device(int major, int minor, char out[16]);

/* ---- the targets a toolchain supports ([Note: target check]) ---- */

/** Most compute capabilities a kc_target_list holds. */
#define KC_TARGET_LIST_MAX 64

/** Where a kc_target_list came from. */
typedef enum kc_targets_from {
    KC_TARGETS_TABLE = 0, /**< kcache's own table: no NVRTC asked (none here, or another toolchain) */
    KC_TARGETS_NVRTC = 1  /**< this host's NVRTC (nvrtcGetSupportedArchs) */
} kc_targets_from;

/** The version of kc_target_list this header declares. */
#define KC_TARGET_LIST_VERSION 1u

/**
 * The targets a toolchain compiles, as compute capabilities (10 * major + minor), ascending and
 * each once; for each, the names of [Note: target check] (sm_XY, compute_XY, and the 'a'/'f'
 * forms).  The caller sets `version` (KC_TARGET_LIST_INIT) and kcache fills the rest.
 */
typedef struct kc_target_list {
    unsigned version;           /**< KC_TARGET_LIST_VERSION, set by KC_TARGET_LIST_INIT */
    kc_targets_from from;       /**< the source of the list */
    int nvrtc_major;            /**< the NVRTC asked (KC_TARGETS_NVRTC), else 0 */
    int nvrtc_minor;            /**< its minor version, else 0 */
    int family;                 /**< 1 when family ('f') targets are made: NVRTC >= 12.9, and the table */
    size_t n;                   /**< compute capabilities in cc */
    int cc[KC_TARGET_LIST_MAX]; /**< 75, 80, …, 121 */
} kc_target_list;

/** A kc_target_list before kcache fills it. */
#define KC_TARGET_LIST_INIT                                         \
    {                                                               \
        KC_TARGET_LIST_VERSION, KC_TARGETS_TABLE, 0, 0, 0, 0, { 0 } \
    }

/** kcache's own table: every architecture a CUDA toolkit (10 to 13) has made.  Pure; any thread.
 *  KC_EINVAL on NULL, KC_EVERSION on a version this build lacks. */
KC_API int kc_target_table(kc_target_list *out);

/**
 * The targets `toolchain` compiles: NULL for this host's NVRTC, or an identity (kc_toolchain.id,
 * kc_toolchain_choice.id).  When that is this host's NVRTC and it reports its list, the list is
 * NVRTC's (this loads NVRTC, once per process: ~0.1-0.4 s the first time); otherwise kcache's
 * table (out->from says which).  KC_OK either way, unless an argument is bad.  Thread-safe.
 */
KC_API int kc_target_supported(const char *toolchain, kc_target_list *out);

/** 1 when `t` is one of the list's targets ([Note: target check]), else 0. */
KC_API int kc_target_list_has(const kc_target_list *l, const kc_target *t);

/**
 * Check a target named by a user: KC_OK with *out (may be NULL) filled when `name` is one of
 * the list's targets; else KC_EARCH with the message "unknown target 'NAME' (WHERE): <why>;
 * <the list, as kc_target_list_text>".  `where` says where the name came from ("--arch",
 * "manifest m.json archs[1]", "kc_graph_compile"; NULL: none).  Pure; any thread.
 */
KC_API int kc_target_check(const kc_target_list *l, const char *name, const char *where, kc_target *out);

/** The list for people: "NVRTC 13.0 compiles sm_75 sm_80 … sm_121 and compute_XY of each; sm_XYa
 *  and compute_XYa from 90; sm_XYf and compute_XYf from 100".  Returns the length it wanted
 *  (as snprintf); `out` is always terminated when cap > 0. */
KC_API size_t kc_target_list_text(const kc_target_list *l, char *out, size_t cap);

/** Every target name of the list, cubins then PTX, in ascending order: up to `cap` names written
 *  to `out`, and how many there are in all returned. */
KC_API size_t kc_target_list_names(const kc_target_list *l, char out[][16], size_t cap);

#ifdef __cplusplus
}
#endif
#endif
