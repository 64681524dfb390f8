/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/entry.h — the entry format: one key + one variant, as bytes on disk or wire.
 *
 * An entry is decoded by a validator that trusts nothing: every length is bounds-checked
 * against caps and against the bytes actually present, every checksum is verified before
 * the bytes it covers are used (and before anything is decompressed), and any failure is
 * KC_ECORRUPT.  A corrupt entry is never handed further (never to the driver).
 *
 * [Note: two levels] A cache holds three kinds of object, each one entry of this format (so every
 * tier, bundle, checksum, MAC and quarantine treats them alike), told apart by their variant:
 *   - a graph entry, "<graph key>.<target>" (sm_90, compute_80, …): the graph's own sections
 *     (launch programs, wrappers, parameter tables, runtime metadata, key digests) and, in IMAGES,
 *     a reference to each compiled image it runs: never the image itself;
 *   - an image, "<image id>.img": one compile unit's cubin or PTX for one target, stored once under
 *     its content's XXH3-128 and shared by every graph, static shape and option set that made the
 *     same bytes (as git's objects);
 *   - a unit record, "<unit key>.unit": which image a compile unit (sources, headers, options,
 *     name expressions, target, toolchain) compiled to, and its kernels' lowered names, so a new
 *     shape or a new graph that reuses a unit compiles nothing (ccache's manifest).
 * Writes go images first, unit record next, graph entry last, each durable before the next, so a
 * reader never finds a graph whose images were not yet stored.  A reference carries the image's
 * XXH3-128 (its name, checked on every read) and SHA-256 (what a MAC or signature of the graph
 * entry covers; checked when an image comes from outside the local directory — a remote, a
 * bundle — and by verify).  An image that is missing or fails its checks makes its graph a miss.
 *
 * Format v3 (all integers little-endian; offsets in bytes from the start of the entry):
 *
 *   entry        := header section_desc{nsections} section_data{nsections} mac?
 *   header       := magic[8]          "\x89KCE\r\n\x1a\n"
 *                   version:u16       4 (v3 had no ORIGIN, v2 kept images inside graph entries,
 *                                     v1 had no PARAMS; entries of other versions are not read:
 *                                     corrupt to decode)
 *                   header_size:u16   96
 *                   flags:u32         bit 0: a MAC trailer follows; other bits must be 0
 *                   key[16]           the entry's key; must match the name it is stored under
 *                   variant[32]       [a-z0-9_]{1,31}, NUL-padded ("sm_90", "compute_80")
 *                   total_len:u64     the whole entry's length, mac included
 *                   nsections:u32     1..16
 *                   reserved:u32      0
 *                   reserved:u64      0
 *                   header_sum:u64    XXH3-64 over header bytes [0,88) ++ all section_descs
 *   section_desc := type:u32          1 META, 2 FORWARD, 3 BACKWARD, 4 KERNELS,
 *                                     5 WRAPPERS, 6 RUNTIME_META, 7 PARAMS (the kernels'
 *                                     parameter tables, src/graph/abi.c), 8 IMAGES, 9 IMAGE,
 *                                     10 UNIT, 11 ORIGIN (below); each at most once
 *                   codec:u32         0 none, 1 zstd
 *                   raw_len:u64       ≤ KC_SECTION_MAX_RAW (256 MiB); the raw lengths of all
 *                                     sections together ≤ KC_ENTRY_MAX_RAW (1 GiB)
 *                   stored_len:u64    == raw_len for codec none; ≤ raw_len + 1 KiB for zstd,
 *                                     and for zstd raw_len ≤ KC_SECTION_RATIO_FLOOR (1 MiB) or
 *                                     raw_len / KC_SECTION_MAX_RATIO (256) ≤ stored_len
 *                   offset:u64        sections are contiguous, in table order, from the
 *                                     end of the table; the last ends at total_len - mac
 *                   checksum:u64      XXH3-64 of the stored bytes (verified before decoding)
 *   section_data := stored bytes; for zstd, one frame whose content size is raw_len
 *   mac          := HMAC-SHA256[32]   over bytes [0, total_len - 32): the header (flag bit 0
 *                                     set, total_len counting the mac) and every section
 *
 *   META payload := count:u32 (≤ 4096)
 *                   { name_len:u16 (1..255) name[name_len] digest[16] }{count}
 *                   created_at_ns:u64  toolchain_len:u16 (≤ 255) toolchain[toolchain_len]
 *                   and nothing after.
 *
 *   ref          := id[16] sha256[32] target:str is_ptx:u8 len:u64
 *                   str := len:u32 (1..31) bytes, a valid variant ([a-z0-9_]); len ≥ 1 and
 *                   ≤ KC_SECTION_MAX_RAW; a PTX image's bytes end with its NUL
 *   IMAGES       := count:u32 (1..256) ref{count}, and nothing after   (a graph entry's images)
 *   IMAGE        := ref bytes[ref.len], and nothing after    (an image: ref.id is the entry's key,
 *                   and XXH3-128(bytes) == ref.id; SHA-256(bytes) == ref.sha256 when checked fully)
 *   UNIT         := ref count:u32 (1..256) { expr:str4 lowered:str4 }{count}, nothing after
 *                   str4 := len:u32 (1..4096) bytes without NUL   (a unit record: its image, and
 *                   each name expression with the name NVRTC lowered it to)
 *   ORIGIN       := count:u32 (1..64) { name:len:u32 (1..31) [a-z0-9_]  value:len:u32 (0..4096)
 *                   bytes without NUL }{count}, each name once, nothing after  (optional: where
 *                   the entry came from — "compile_us", the NVRTC time its images cost when first
 *                   compiled, "compile_wall_us", the wall-clock time of that compile; names a reader does not know are skipped, so records can be added
 *                   without a new format version)
 *
 * Sizes ([Note: sizes]): every length, count and offset read from an entry is bounded before
 * it is used, with arithmetic that cannot wrap: a value is compared with the room left
 * (`v > limit - used`, never `used + v > limit`), counts against their caps before anything
 * is multiplied by them.  Every section's declared raw length is checked against the caps
 * above, for the whole table, before any section is allocated or decompressed, so an entry
 * of N bytes inflates to at most 256 × N + 6 MiB bytes: a small entry cannot declare a
 * huge section (a decompression bomb).  The encoder stores a section that would compress
 * past the ratio as it is (codec none), so every entry it writes decodes.  The caps are
 * part of the format (compile-time constants, not settings: an entry one build writes must
 * decode in every other); real kernels are a few MB and far inside them.
 *
 * Every entry carries a META section; other sections are opaque bytes at this layer
 * (the graph part gives FORWARD, BACKWARD, KERNELS and WRAPPERS their own encodings).
 * The golden files tests/golden/entry_v4.kce, image_v4.kce and unit_v4.kce pin this format: a change to it means a
 * new format version.
 */
#ifndef KCACHE_ENTRY_H
#define KCACHE_ENTRY_H

#include "common.h"
#include "key.h"
#include "target.h" /* kc_variant_check, KC_VARIANT_MAX */

#ifdef __cplusplus
extern "C" {
#endif

/** Current entry format version. */
#define KC_ENTRY_FORMAT_VERSION 4
/** Cap on one section's raw length. */
#define KC_SECTION_MAX_RAW (256u << 20)
/** Cap on a whole entry. */
#define KC_ENTRY_MAX_BYTES (1024ull << 20)
/** Cap on the raw lengths of an entry's sections together. */
#define KC_ENTRY_MAX_RAW (1024ull << 20)
/** A zstd section's raw length may be at most this many times its stored length… */
#define KC_SECTION_MAX_RATIO 256u
/** …unless it is at most this long (small sections may compress as well as they like). */
#define KC_SECTION_RATIO_FLOOR (1u << 20)

/** Section types.  Values are part of the format. */
typedef enum kc_section_type {
    KC_SECTION_META = 1,
    KC_SECTION_FORWARD = 2,
    KC_SECTION_BACKWARD = 3,
    KC_SECTION_KERNELS = 4,
    KC_SECTION_WRAPPERS = 5,
    KC_SECTION_RUNTIME_META = 6,
    KC_SECTION_PARAMS = 7,
    KC_SECTION_IMAGES = 8,
    KC_SECTION_IMAGE = 9,
    KC_SECTION_UNIT = 10,
    KC_SECTION_ORIGIN = 11 /**< name/value records: kc_entry_set_origin, kc_entry_origin */
} kc_section_type;

/** Caps of an ORIGIN section: records, a name's bytes ([a-z0-9_]), a value's bytes. */
#define KC_ORIGIN_MAX 64
#define KC_ORIGIN_NAME_MAX 31
#define KC_ORIGIN_VALUE_MAX 4096

/** Codecs of stored sections.  Values are part of the format. */
typedef enum kc_codec { KC_CODEC_NONE = 0, KC_CODEC_ZSTD = 1 } kc_codec;

typedef struct kc_entry kc_entry;

/**
 * A new, empty entry for `key` and `variant` (validated: [a-z0-9_]{1,31}).
 * Free with kc_entry_free.
 */
KC_API int kc_entry_new(kc_entry **out, const kc_key *key, const char *variant);

/** Free an entry; accepts NULL. */
KC_API void kc_entry_free(kc_entry *e);

/** The entry's key; borrowed, lives as long as the entry. */
KC_API const kc_key *kc_entry_key(const kc_entry *e);

/** The entry's variant; borrowed, lives as long as the entry. */
KC_API const char *kc_entry_variant(const kc_entry *e);

/**
 * Set a section's bytes (copied), replacing any earlier value.  KC_SECTION_META is built
 * from the digests and toolchain below and cannot be set directly (KC_EINVAL).
 */
KC_API int kc_entry_set_section(kc_entry *e, kc_section_type type, const void *data, size_t len);

/**
 * A section's bytes, borrowed from the entry (valid until the entry is changed or freed).
 * KC_MISS when the entry has no such section.
 */
KC_API int kc_entry_section(const kc_entry *e, kc_section_type type, const void **data, size_t *len);

/** Record a named digest in META (e.g. every digest of a finished key builder). */
KC_API int kc_entry_add_digest(kc_entry *e, const char *name, const kc_digest *d);

/** Record every named digest of a finished key builder in META. */
KC_API int kc_entry_add_key_digests(kc_entry *e, const kc_key_builder *kb);

/** Number of named digests in META. */
KC_API size_t kc_entry_digest_count(const kc_entry *e);

/** The i-th named digest; `*name_out` is borrowed from the entry. */
KC_API int kc_entry_digest_at(const kc_entry *e, size_t i, const char **name_out, kc_digest *out);

/**
 * Set an ORIGIN record (`name`: 1..31 of [a-z0-9_]; `value`: text of at most 4096 bytes),
 * replacing an earlier value of that name.  kcache writes "compile_us" (the NVRTC time, in
 * microseconds, that the entry's images cost when they were first compiled, summed over units)
 * and "compile_wall_us" (the wall-clock time of the compile that made the entry: what a hit saves).
 */
KC_API int kc_entry_set_origin(kc_entry *e, const char *name, const char *value);

/** The ORIGIN record `name` into out (cap bytes, NUL-terminated): KC_OK, or KC_MISS when absent. */
KC_API int kc_entry_origin(const kc_entry *e, const char *name, char *out, size_t cap);

/** Set the toolchain string in META (≤ 255 bytes), e.g. "nvrtc 13.0 (build 36424714)". */
KC_API int kc_entry_set_toolchain(kc_entry *e, const char *toolchain);

/** The toolchain string in META; "" when unset; borrowed. */
KC_API const char *kc_entry_toolchain(const kc_entry *e);

/** Creation time (ns since the Unix epoch); set at first encode when 0. */
KC_API uint64_t kc_entry_created_at(const kc_entry *e);

/** Set the creation time explicitly (golden files, tests). */
KC_API void kc_entry_set_created_at(kc_entry *e, uint64_t ns);

/**
 * Encode an entry.  Sections larger than 256 bytes are zstd-compressed when that saves an
 * eighth of them or more (a hit inflates every compressed section it reads).  `*out` is the caller's, freed with kc_free.
 */
KC_API int kc_entry_encode(const kc_entry *e, void **out, size_t *out_len);

/**
 * Decode and fully validate an entry (every checksum, every length, META's structure).
 * KC_ECORRUPT with the reason in kc_error_last() on any defect.  `data` is not retained.
 */
KC_API int kc_entry_decode(kc_entry **out, const void *data, size_t len);

/** Length of an HMAC-SHA256 key kcache accepts at least (shorter keys are refused). */
#define KC_MAC_KEY_MIN 16

/**
 * Authenticate encoded entry bytes: set the MAC flag, count the MAC in total_len, update
 * the header checksum and append HMAC-SHA256(key, header ++ sections).  `*data` (from
 * kc_entry_encode, malloc'ed) is reallocated.  An entry that already has a MAC is re-sealed.
 */
KC_API int kc_entry_seal(void **data, size_t *len, const void *key, size_t key_len);

/**
 * Check an entry's MAC reading nothing beyond its fixed header: KC_OK when it carries a
 * valid HMAC-SHA256 under `key`; KC_EUNTRUSTED (reason in kc_error_last()) when it has none, a
 * wrong one, or a header that does not frame one.  Compare in constant time.
 */
KC_API int kc_entry_mac_check(const void *data, size_t len, const void *key, size_t key_len);

/**
 * Decode and validate an entry (as kc_entry_decode) that must be the one asked for: it must
 * hold `key` and `variant`.  KC_ECORRUPT ("it holds another key or variant than its name")
 * when it holds another, as for any other defect; KC_ENOMEM; KC_EINVAL for a NULL argument.
 * The one identity check of the library: every read from a store goes through it.  `*out`
 * (NULL unless KC_OK) is the caller's, freed with kc_entry_free; `data` is not retained.
 */
KC_API int kc_entry_decode_as(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant);

/**
 * Check stored entry bytes as kc_entry_decode_as would check the container — header, section
 * table, size and ratio caps, every section's XXH3-64, each zstd frame's declared sizes, ORIGIN's
 * records, and the identity (`key`, `variant`) — without inflating any other section, parsing
 * META or building an entry: for a caller that needs to know an object is intact and the one its
 * name promises, not its bytes (a compile-only hit: [Note: checked, not inflated] in
 * src/entry/entry.c).  What a decode would find only by inflating (a section's records) is not
 * checked.  With `section` ≥ 0,
 * `*raw_len` (when not NULL) is that section's raw length, and an entry without it is
 * KC_ECORRUPT.  KC_OK; KC_ECORRUPT with the reason; KC_ENOMEM; KC_EINVAL for a NULL argument.
 * It does not check an image's XXH3-128 over its raw bytes (kc_image_entry_read does).
 */
KC_API int kc_entry_check_stored(const void *data, size_t len, const kc_key *key, const char *variant, int section,
                                 uint64_t *raw_len);

/** The format version of encoded entry bytes (from its fixed header), or -1 when they carry no
 *  entry header at all; reads nothing else (gc tells an older format from a corrupt entry). */
KC_API int kc_entry_peek_version(const void *data, size_t len);

/* ---- images, references and unit records ([Note: two levels]) ---- */

/** The variant of an image object ("<id>.img") and of a unit record ("<unit key>.unit"). */
#define KC_VARIANT_IMAGE "img"
#define KC_VARIANT_UNIT "unit"
/** Most images a graph entry refers to, and most names a unit record holds. */
#define KC_IMAGES_MAX 256

/** What identifies a compiled image: its content digests, target, kind and length. */
typedef struct kc_image_ref {
    kc_key id;                       /**< XXH3-128 of the bytes: the image's store name "<id>.img" */
    uint8_t sha256[32];              /**< SHA-256 of the bytes: what a MAC or signature covers */
    char target[KC_VARIANT_MAX + 1]; /**< "sm_90", "compute_80" */
    int is_ptx;                      /**< 1: PTX text (its bytes end with NUL); 0: a cubin */
    uint64_t len;                    /**< bytes */
} kc_image_ref;

/** Make the reference of `len` image bytes (digests computed here).  KC_EINVAL for a bad target,
 *  an empty image, PTX without its NUL, or one over KC_SECTION_MAX_RAW. */
KC_API int kc_image_ref_make(kc_image_ref *out, const char *target, int is_ptx, const void *bytes, size_t len);

/** Whether two references name the same image (every field); 1 or 0. */
KC_API int kc_image_ref_equal(const kc_image_ref *a, const kc_image_ref *b);

/** The image object of `bytes` (len ref->len, copied) under "<ref->id>.img".  Free with kc_entry_free. */
KC_API int kc_image_entry_new(kc_entry **out, const kc_image_ref *ref, const void *bytes);

/**
 * Decode as kc_entry_decode_as, but inflate and keep only the sections whose bit (1u << type)
 * is set in `sections`: the others are checked as kc_entry_check_stored checks them.  Without the
 * META bit the entry has no named digests, toolchain or creation time
 * ([Note: checked, not inflated]).  With `sections` ~0u it is kc_entry_decode_as.  A partly
 * decoded entry is refused by kc_entry_encode (KC_EINVAL).
 */
KC_API int kc_entry_decode_some(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant,
                                unsigned sections);

/** The raw length of the IMAGE section of `ref`'s image object: its reference's encoding and
 *  the bytes (a check without inflating: kc_entry_check_stored). */
KC_API uint64_t kc_image_section_len(const kc_image_ref *ref);

/**
 * Read an image object: its reference and its bytes (borrowed from `e`).  Checks the grammar,
 * that ref.id is the entry's key and XXH3-128 of the bytes, and — when `full` — SHA-256 of the
 * bytes against ref.sha256 (KC_ECORRUPT naming what failed).  `want` (may be NULL) must equal the
 * reference found (KC_ECORRUPT: "it is not the image the graph refers to").
 */
KC_API int kc_image_entry_read(const kc_entry *e, const kc_image_ref *want, int full, kc_image_ref *ref_out,
                               const void **bytes, size_t *len);

/** Set a graph entry's IMAGES section from n references (1..KC_IMAGES_MAX). */
KC_API int kc_entry_set_images(kc_entry *e, const kc_image_ref *refs, size_t n);

/** The references of a graph entry's IMAGES section, strictly read: *out (free()) has *n items.
 *  KC_MISS when it has no IMAGES section; KC_ECORRUPT on any defect. */
KC_API int kc_entry_images(const kc_entry *e, kc_image_ref **out, size_t *n);

/** A unit record under "<unit_key>.unit": its image and each name expression's lowered name. */
KC_API int kc_unit_entry_new(kc_entry **out, const kc_key *unit_key, const kc_image_ref *ref, const char *const *exprs,
                             const char *const *lowered, size_t n);

/**
 * Read a unit record strictly: its image reference, and the lowered name of each of the `n`
 * expressions asked (lowered_out[i] the caller's, each freed with free(); all NULL unless KC_OK).
 * KC_ECORRUPT for a malformed record; KC_MISS when an expression asked is not in it.
 */
KC_API int kc_unit_entry_read(const kc_entry *e, kc_image_ref *ref_out, const char *const *exprs, size_t n,
                              char **lowered_out);

/**
 * Attach image `index`'s bytes to a graph entry in memory (copied; never encoded): what the
 * graph part's loader and kc_entry_extract read once the images are fetched and checked.
 */
KC_API int kc_entry_attach_image(kc_entry *e, size_t index, const void *bytes, size_t len);

/** Image `index`'s attached bytes (borrowed from `e`); KC_MISS when none is attached. */
KC_API int kc_entry_attached_image(const kc_entry *e, size_t index, const void **bytes, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
