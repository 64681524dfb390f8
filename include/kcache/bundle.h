/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/bundle.h — one-file bundles that ship a warm cache to other hosts.
 *
 * Format v1..v4 (integers little-endian):
 *
 *   bundle  := magic[8] "\x89KCB\r\n\x1a\n"  version:u16 (1..4)  reserved:u16 (0)  count:u32
 *              raw_len:u64  stored_len:u64  payload_sum:u64  header_sum:u64   (48 bytes)
 *              payload: one zstd frame of stored_len bytes whose content is raw_len bytes
 *   content := toc entry_bytes*            (v1)
 *            | toc entry_bytes* covers     (v2: the rest of the content after the entries)
 *            | toc entry_bytes* clen:u32 covers[clen] profiles
 *                                          (v3: clen 0 when no coverage record)
 *            | toc entry_bytes* clen:u32 covers[clen] plen:u32 profiles[plen] slen:u32 seal[slen]
 *                                          (v4: clen 0, plen 0 when that record is absent)
 *   toc     := { name_len:u16 name[name_len] offset:u64 size:u64 sum:u64 }{count}
 *              offsets are relative to the end of the toc, contiguous, in order; every size is
 *              bounded by the bytes AFTER the toc that remain (never by raw_len)
 *   profiles := nprofiles:u32 { plen:u16 profile[plen] }{nprofiles}
 *              1..KC_BUNDLE_MAX_PROFILES site profiles, each 1..KC_SITE_PROFILE_MAX bytes in the
 *              one form kc_site_profile_check accepts (kcache/guard.h), no site twice; it must
 *              end exactly where its record ends.
 *   covers  := mlen:u16 manifest[mlen]  ntargets:u16 { tlen:u8 target[tlen] }{ntargets}
 *              ngraphs:u32 { key[16] nlen:u16 name[nlen] }{ngraphs}
 *              the manifest (its path as exported: 1..4096 bytes), its targets (each one
 *              kc_target_parse accepts, 1..KC_BUNDLE_MAX_TARGETS of them, none twice) and its
 *              graphs (key and name, 1..4096 bytes; 1..KC_BUNDLE_MAX_GRAPHS); no NUL in any
 *              string; it must end exactly where its record ends.
 *   seal    := an entry (entry.h) of variant "bundle" keyed by the first 16 bytes of D, whose one
 *              section (RUNTIME_META) is D = SHA-256 of every content byte before slen; signed
 *              (the exporter's Ed25519 key) or MACed (its MAC key) as any entry is, or neither
 *              when the exporter has no key; nothing may follow it.  1..4096 bytes.
 *   payload_sum = XXH3-64 of the content; header_sum = XXH3-64 of header bytes [0,40);
 *   each entry's sum = XXH3-64 of its bytes, which are a complete entry (entry.h).
 *
 * Trust ([Note: bundle seal] in src/bundle/records.c).  Each entry carries its own signature or
 * MAC.  A bundle's own records (coverage, profiles) are vouched for by the v4 seal alone: under a
 * keyring (KCACHE_KEYRING) or MAC key (KCACHE_HMAC_KEY) an import checks the seal exactly as it
 * checks an entry (a trusted signature, or the MAC; a keyring wants a signature), so an
 * entry-less bundle is authenticated like any other; a v2 or v3 bundle, whose records nothing
 * covers, is refused whole there (KC_EPERM, saying to sign it again: `kcache sign` writes v4).
 * Without trust configured, every version imports as before.
 *
 * Sizes ([Note: sizes], as in entry.h): every size, count and offset read from a bundle is
 * bounded before it is used, with arithmetic that cannot wrap — a value is compared with the
 * room left (`v > limit - used`, never `used + v > limit`).  From the header, before anything
 * is allocated or inflated: raw_len ≤ KC_BUNDLE_MAX_BYTES (4 GiB), and raw_len ≤
 * KC_BUNDLE_RATIO_FLOOR (16 MiB) or raw_len / KC_BUNDLE_MAX_RATIO (64) ≤ stored_len, so a
 * small file cannot declare GiBs (a decompression bomb); count ≤ raw_len / 27 + 1.  In the
 * toc: each size ≤ KC_ENTRY_MAX_BYTES and ≤ the bytes after the toc not yet claimed by the
 * entries before it, so the running sum never wraps; each record's length ≤ what is left of the
 * content after the entries and the records before it.  Bundle contents are entries whose
 * sections are already compressed, so real bundles compress far less than 64:1; an export
 * whose content would compress past the ratio stores it in raw zstd blocks instead, so every
 * bundle kcache writes imports.  The caps are compile-time constants (part of the format).
 *
 * Import verifies the whole bundle — header, payload, table of contents, every name
 * ("<32 hex>.<variant>", nothing that could leave the cache directory) and every entry,
 * decoded and checked against its name — before it writes anything, so a truncated,
 * corrupt or altered bundle leaves the cache untouched.  Importing twice changes nothing.
 *
 * Two levels ([Note: two levels] in kcache/entry.h).  A bundle's entries are objects of three
 * kinds, told by the variant of their names: images ("<id>.img"), unit records ("<unit key>.unit")
 * and graph entries ("<graph key>.<target>").  Export selects graph entries (the filter applies to
 * them alone) and ships with them every image they refer to, each once however many graphs share
 * it, and every unit record of those images; it writes images first, unit records next, graph
 * entries last (each kind in name order).  A selected graph whose image is missing or fails its
 * full check (XXH3-128 and SHA-256) fails the export, naming both: a bundle never carries a graph
 * that points at nothing.  Import does not rely on the order: every image is checked in full, and
 * every reference of a graph or unit record to an image the bundle carries must be that image, or
 * the bundle is refused whole, as for any other defect; then images are written first, unit records
 * next, graph entries last, and a graph entry or unit record whose image is neither in the bundle
 * nor (whole) in the cache is skipped and counted — never written dangling.
 *
 * Coverage (v2).  An export for a manifest (kc_bundle_export_covering) records the manifest, its
 * graphs (names and keys) and the targets it was exported for, so that the host importing it can
 * say what it brings: every graph × target, or which are not in the bundle (kc_bundle_coverage_read).
 * An export without one writes v1, byte for byte as before, so an older kcache still imports it.
 * v1 bundles (which record nothing) import as they always did; their coverage is "not recorded".
 * An older kcache refuses a newer bundle ("format version 4 is not supported") rather than misread it.
 * This kcache writes v4 for a bundle with a coverage record or profiles (v2 and v3 are read only).
 *
 * Site profiles (v3).  An export also carries the cache's site profiles (kc_site_profile_foreach:
 * the dynamic dimensions its sites learned), whatever the filter, so a fleet starts dynamic where
 * the exporter learned to be; an import checks each (a malformed one refuses the whole bundle
 * before anything is written) and merges it into the local profile of its site (the union, as
 * kc_site_profile_merge does), after the entries.  A cache without profiles or coverage exports
 * v1 exactly as before; with either the bundle is v4 (sealed), which an older kcache refuses
 * rather than drop its records unseen.
 */
#ifndef KCACHE_BUNDLE_H
#define KCACHE_BUNDLE_H

#include "cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Cap on a bundle's content (raw_len). */
#define KC_BUNDLE_MAX_BYTES (4ull << 30)
/** A bundle's raw_len may be at most this many times its stored_len… */
#define KC_BUNDLE_MAX_RATIO 64u
/** …unless it is at most this long. */
#define KC_BUNDLE_RATIO_FLOOR (16ull << 20)

/** Which graph entries to export (their images and unit records follow them).  Initialise with
 *  KC_BUNDLE_FILTER_INIT; NULL/0 fields select every graph entry. */
typedef struct kc_bundle_filter {
    const char *const *variants; /**< Keep only these variants ("sm_90", …). */
    size_t nvariants;
    const kc_key *keys; /**< Keep only these keys. */
    size_t nkeys;
} kc_bundle_filter;

/** Initialiser of a kc_bundle_filter: selects every graph entry. */
#define KC_BUNDLE_FILTER_INIT \
    { NULL, 0, NULL, 0 }

/** Cap on the site profiles of a bundle (v3 on). */
#define KC_BUNDLE_MAX_PROFILES 65536

/** Caps on a bundle's coverage record. */
#define KC_BUNDLE_MAX_TARGETS 64
#define KC_BUNDLE_MAX_GRAPHS 10000

/** What a manifest export covers (kc_bundle_export_covering): recorded in the bundle (v2 on), read
 *  back by kc_bundle_coverage_read.  Every pointer is borrowed for the call. */
typedef struct kc_bundle_covers {
    const char *manifest;     /**< The manifest, as named (its path). */
    const char *const *names; /**< Its graphs' names… */
    const kc_key *keys;       /**< …and keys: ngraphs of each, in manifest order. */
    size_t ngraphs;
    const char *const *targets; /**< The targets it was exported for. */
    size_t ntargets;
} kc_bundle_covers;

/** Initialiser of a kc_bundle_covers (nothing named). */
#define KC_BUNDLE_COVERS_INIT \
    { NULL, NULL, NULL, 0, NULL, 0 }

/** Version of kc_bundle_report this build fills. */
#define KC_BUNDLE_REPORT_VERSION 1

/** What an export or import did.  In a dry run, the written counts are what the import would write.
 *  The caller's: initialise with KC_BUNDLE_REPORT_INIT; kcache fills the fields of its `version` and
 *  refuses another with KC_EVERSION ([Note: versioned structs] in src/common/api.h). */
typedef struct kc_bundle_report {
    unsigned version;   /**< KC_BUNDLE_REPORT_VERSION, set by the caller (kept). */
    uint64_t entries;   /**< Entries in the bundle, of every kind. */
    uint64_t bytes;     /**< Their total size. */
    uint64_t written;   /**< Import: entries written (a dry run: that it would write). */
    uint64_t unchanged; /**< Import: entries already present with identical bytes. */
    uint64_t graphs;    /**< Graph entries in the bundle ([Note: two levels] in kcache/entry.h). */
    uint64_t images;    /**< Images in the bundle (each image once). */
    uint64_t units;     /**< Unit records in the bundle. */
    uint64_t graph_bytes, image_bytes, unit_bytes;          /**< The sizes of each kind. */
    uint64_t graphs_written, images_written, units_written; /**< Import: written of each kind (dry run: would write). */
    uint64_t graphs_skipped; /**< Import: graph entries not written: an image they refer to is neither in the
                                   bundle nor in the cache. */
    uint64_t units_skipped;  /**< Import: unit records not written, for the same reason. */
    char first_skipped[KC_KEY_HEX_LEN + 1 + KC_VARIANT_MAX +
                       1];     /**< The first entry skipped ("<key>.<variant>"), or "". */
    uint64_t profiles;         /**< Site profiles in the bundle (v3 on). */
    uint64_t profiles_written; /**< Import: profiles that changed the local one (dry run: would). */
} kc_bundle_report;

/** Initialiser of a kc_bundle_report: this version, every count 0. */
#define KC_BUNDLE_REPORT_INIT \
    { KC_BUNDLE_REPORT_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "", 0, 0 }

/**
 * Write the selected graph entries, their images and those images' unit records (each
 * validated first; a corrupt graph entry or unit record is quarantined and left out) to `path`,
 * atomically.  A selected graph whose image is missing or corrupt fails the export (KC_ECORRUPT
 * or KC_MISS, naming the graph and the image; nothing is written).  `filter` and `out` may be NULL.
 */
KC_API int kc_bundle_export(kc_cache *c, const char *path, const kc_bundle_filter *filter, kc_bundle_report *out);

/**
 * kc_bundle_export, recording in the bundle (format v4, sealed) the manifest, graphs and targets
 * `covers` names, so that an import can say what the bundle brings.  It selects nothing
 * itself: `filter` does (the caller passes the same keys and targets), and whether every
 * graph × target is there is the caller's check (kc_manifest_covered; `kcache export
 * --manifest` refuses a partial bundle unless --allow-partial).  KC_EINVAL for a record the
 * format cannot hold (bundle.h's grammar).  `covers` NULL: exactly kc_bundle_export (v1).
 */
KC_API int kc_bundle_export_covering(kc_cache *c, const char *path, const kc_bundle_filter *filter,
                                     const kc_bundle_covers *covers, kc_bundle_report *out);

/**
 * Verify a bundle entirely, then (unless `dry_run`) write its entries into the cache: images,
 * then unit records, then graph entries, skipping (and counting) any whose image is neither in
 * the bundle nor in the cache.
 * KC_ECORRUPT (KC_EPERM for a name that would leave the directory, KC_EUNTRUSTED for an entry
 * without the MAC or trusted signature the cache requires) with the reason, and nothing written,
 * when any check fails.  A write that fails after the checks (a full
 * disk) stops the import: the error says how many entries were written, and they stay
 * (each is whole: entries are written atomically); importing again writes the rest.
 */
KC_API int kc_bundle_import(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out);

/** A bundle's coverage record, read back, and what of it the bundle carries.  Free with
 *  kc_bundle_coverage_free. */
typedef struct kc_bundle_coverage {
    char *manifest; /**< The manifest it was exported for. */
    size_t ngraphs, ntargets;
    char **names;           /**< ngraphs graph names… */
    kc_key *keys;           /**< …and keys. */
    char **targets;         /**< ntargets targets. */
    unsigned char *carried; /**< ngraphs × ntargets, graph-major: 1 when the bundle holds "<key>.<target>". */
    size_t missing;         /**< How many of those are 0. */
} kc_bundle_coverage;

/**
 * Verify the bundle at `path` whole (as an import's first phase does, without a MAC check) and
 * read its coverage record: *out gets the manifest, graphs and targets it records and which of
 * them it carries.  KC_MISS (*out NULL) for a bundle that records none (v1, or an export
 * without a manifest); KC_ECORRUPT and the others of kc_bundle_import for a bad bundle.
 */
KC_API int kc_bundle_coverage_read(const char *path, kc_bundle_coverage **out);

/** Free a coverage record; accepts NULL. */
KC_API void kc_bundle_coverage_free(kc_bundle_coverage *cov);

#ifdef __cplusplus
}
#endif
#endif
