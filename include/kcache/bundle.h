/*
 * kcache/bundle.h — one-file bundles that ship a warm cache to other hosts.
 *
 * Format v1 (integers little-endian):
 *
 *   bundle  := magic[8] "\x89KCB\r\n\x1a\n"  version:u16 (1)  reserved:u16 (0)  count:u32
 *              raw_len:u64  stored_len:u64  payload_sum:u64  header_sum:u64   (48 bytes)
 *              payload: one zstd frame of stored_len bytes whose content is raw_len bytes
 *   content := toc entry_bytes*
 *   toc     := { name_len:u16 name[name_len] offset:u64 size:u64 sum:u64 }{count}
 *              offsets are relative to the end of the toc, contiguous, in order
 *   payload_sum = XXH3-64 of the content; header_sum = XXH3-64 of header bytes [0,40);
 *   each entry's sum = XXH3-64 of its bytes, which are a complete entry (entry.h).
 *
 * Sizes ([Note: sizes], as in entry.h): every size, count and offset read from a bundle is
 * bounded before it is used, with arithmetic that cannot wrap — a value is compared with the
 * room left (`v > limit - used`, never `used + v > limit`).  From the header, before anything
 * is allocated or inflated: raw_len ≤ KC_BUNDLE_MAX_BYTES (4 GiB), and raw_len ≤
 * KC_BUNDLE_RATIO_FLOOR (16 MiB) or raw_len / KC_BUNDLE_MAX_RATIO (64) ≤ stored_len, so a
 * small file cannot declare GiBs (a decompression bomb); count ≤ raw_len / 27 + 1.  In the
 * toc: each size ≤ KC_ENTRY_MAX_BYTES and ≤ the room left in the content, so the running sum
 * of sizes never wraps and must end exactly at raw_len.  Bundle contents are entries whose
 * sections are already compressed, so real bundles compress far less than 64:1; an export
 * whose content would compress past the ratio stores it in raw zstd blocks instead, so every
 * bundle kcache writes imports.  The caps are compile-time constants (part of the format).
 *
 * Import verifies the whole bundle — header, payload, table of contents, every name
 * ("<32 hex>.<variant>", nothing that could leave the cache directory) and every entry,
 * decoded and checked against its name — before it writes anything, so a truncated,
 * corrupt or altered bundle leaves the cache untouched.  Importing twice changes nothing.
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

/** Which entries to export.  Zero-initialise; NULL/0 fields select everything. */
typedef struct kc_bundle_filter {
    const char *const *variants;  /**< Keep only these variants ("sm_90", …). */
    size_t nvariants;
    const kc_key *keys;           /**< Keep only these keys. */
    size_t nkeys;
} kc_bundle_filter;

/** What an export or import did. */
typedef struct kc_bundle_report {
    uint64_t entries;    /**< Entries in the bundle. */
    uint64_t bytes;      /**< Their total size. */
    uint64_t written;    /**< Import: entries written. */
    uint64_t unchanged;  /**< Import: entries already present with identical bytes. */
} kc_bundle_report;

/**
 * Write the selected entries (each validated first; corrupt ones are quarantined and left
 * out) to `path`, atomically.  `filter` and `out` may be NULL.
 */
KC_API int kc_bundle_export(kc_cache *c, const char *path, const kc_bundle_filter *filter, kc_bundle_report *out);

/**
 * Verify a bundle entirely, then (unless `dry_run`) write its entries into the cache.
 * KC_ECORRUPT (or KC_EPERM for a name that would leave the directory) with the reason,
 * and nothing written, when any check fails.  A write that fails after the checks (a full
 * disk) stops the import: the error says how many entries were written, and they stay
 * (each is whole: entries are written atomically); importing again writes the rest.
 */
KC_API int kc_bundle_import(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out);

#ifdef __cplusplus
}
#endif
#endif
