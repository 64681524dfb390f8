/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decode.c — reading an entry's bytes back, strictly (grammar in include/kcache/entry.h;
 * layout in layout.h), and the identity check.
 *
 * The one idea: the decoder trusts nothing.  It checks the fixed header, then the header
 * checksum (which also covers the section table), then every section's bounds and declared
 * sizes against the caps and the compression-ratio rule ([Note: sizes] in entry.h), for the
 * whole table, before it allocates or inflates anything; then each section's checksum of its
 * stored bytes, and only then decompresses, into a buffer of the length the verified table
 * promises, requiring the frame to fill it exactly.  Any defect is
 * KC_ECORRUPT with a reason; no partial entry is ever returned.
 *
 * Must not: read outside the input, allocate from an unchecked length, or interpret the
 * opaque sections (that is the graph part's job).
 *
 * Callers: the store's tiers (kc_entry_decode_as on every read), the front door, bundles,
 * the graph part (sections of a compiled graph), and tools through entry.h.
 */
#include "kcache/entry.h"

#include <stdlib.h>

#include "../common/internal.h"
#include "layout.h"
#include "kcache/target.h" /* kc_variant_check */

/* A decoded META's digests: the array sized once, the names in one block (each name and its NUL
 * fit in the 2 + name + 16 bytes it takes in META), not an allocation per name. */
static int decode_meta(kc_entry *e, const uint8_t *p, size_t n) {
    kc_reader r = kc_reader_make(p, n);
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count > MAX_DIGESTS) return CORRUPT("META digest count %u", count);
    if (count && e->ndigests == 0 && !e->names_block && count <= n / 19) { /* 19: the least a digest takes */
        named_digest *ds = kc_realloc(e->digests, count * sizeof *ds);
        char *names = ds ? kc_malloc(n) : NULL;
        if (ds) e->digests = ds, e->capdigests = count;
        if (!names) return kc_err(KC_ENOMEM, "decoding entry: out of memory");
        e->names_block = names;
    }
    size_t at = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = kc_rd_next_u16(&r);
        const uint8_t *name = kc_rd_bytes(&r, nl);
        const uint8_t *dig = kc_rd_bytes(&r, 16);
        if (r.bad || nl == 0 || nl > 255) return CORRUPT("META digest %u is malformed", i);
        if (memchr(name, 0, nl)) return CORRUPT("META digest name %u holds a NUL", i);
        kc_digest d;
        memcpy(d.bytes, dig, 16);
        if (e->names_block && e->nblock == e->ndigests && at + nl + 1 <= n) {
            char *nm = e->names_block + at;
            memcpy(nm, name, nl);
            nm[nl] = '\0';
            at += (size_t)nl + 1;
            e->digests[e->ndigests].name = nm;
            e->digests[e->ndigests].d = d;
            e->nblock = ++e->ndigests;
            continue;
        }
        char tmp[256];
        memcpy(tmp, name, nl);
        tmp[nl] = '\0';
        int rc = kc_entry_add_digest(e, tmp, &d);
        if (rc) return rc;
    }
    uint64_t created = kc_rd_next_u64(&r);
    uint16_t tl = kc_rd_next_u16(&r);
    const uint8_t *tc = kc_rd_bytes(&r, tl);
    if (r.bad) return CORRUPT("META is truncated");
    if (r.left != 0) return CORRUPT("META has %zu trailing bytes", r.left);
    if (tl > 255 || memchr(tc, 0, tl)) return CORRUPT("META toolchain is malformed");
    e->created_at = created;
    memcpy(e->toolchain, tc, tl);
    e->toolchain[tl] = '\0';
    return KC_OK;
}

/*
 * [Note: checked, not inflated] A hit that only confirms an entry is stored (kc_graph_compile,
 * prewarm: nothing is loaded) needs its objects intact, not their bytes.  decode() with
 * `out` NULL runs every check a decode runs on the container — header, table, sizes and ratio
 * caps, the XXH3-64 of every section's stored bytes, the raw length a zstd frame's header declares
 * — but inflates no section, walks no frame's blocks and parses no META: the checksum already
 * proves the stored bytes are the ones written (a frame's blocks are walked, and its bytes
 * inflated to the declared length or refused, when it is loaded; a purge's selectors, which read
 * some sections, check the others so; kcache verify inflates them all); ORIGIN alone is always read
 * (it is small, and its records are validated).  What it cannot check is an
 * image's XXH3-128 over its raw bytes (that needs them); a local image is named by that
 * digest when this cache writes it, and an image from outside is checked in full before it is
 * kept (resolve.c), so a local object that passes this check holds the bytes its name was
 * made from; resolve.c also compares its IMAGE section's length with the reference.  Its target,
 * kind and SHA-256 (inside the compressed section) and the XXH3-128 of its bytes are checked
 * when it is loaded, which needs the bytes anyway: a compile-only hit can call an object stored
 * that a load then refuses (a miss, compiled again), never the reverse.  kc_entry_decode_some is
 * the middle way, for a graph entry of such a hit: the sections asked for are inflated and kept,
 * the others only checked (META too: without its bit the entry has no digests, toolchain or
 * creation time); such an entry is marked partial and is never encoded again.
 */
/* The fixed header, checked: what the passes over the table need of it. */
typedef struct header {
    uint32_t nsec;
    size_t table_end, end; /* end: where the sections end (the trailer, if any, follows) */
    kc_key key;
    char variant[KC_VARIANT_MAX + 2];
} header;

/* Check the fixed header of data[0, len), its checksum (which covers the section table) and its
 * variant, before anything else is read. */
static int check_header(const uint8_t *h, size_t len, header *hd) {
    if (len < HEADER_SIZE) return CORRUPT("%zu bytes is shorter than the %d-byte header", len, HEADER_SIZE);
    if (memcmp(h, MAGIC, 8) != 0) return CORRUPT("bad magic");
    uint16_t version = kc_rd_u16(h + 8);
    if (version != KC_ENTRY_FORMAT_VERSION)
        return CORRUPT("format version %u is not supported (this build reads %d)", version, KC_ENTRY_FORMAT_VERSION);
    if (kc_rd_u16(h + 10) != HEADER_SIZE) return CORRUPT("header size %u", kc_rd_u16(h + 10));
    uint32_t flags = kc_rd_u32(h + 12);
    if (flags & ~(FLAG_MAC | FLAG_SIG)) return CORRUPT("unknown flags 0x%x", flags);
    if ((flags & FLAG_MAC) && (flags & FLAG_SIG)) return CORRUPT("both a MAC and a signature");
    uint64_t total = kc_rd_u64(h + 64);
    if (total != len)
        return CORRUPT("header says %llu bytes, %zu present (truncated or padded)", (unsigned long long)total, len);
    if (total > KC_ENTRY_MAX_BYTES) return CORRUPT("%llu bytes is over the cap", (unsigned long long)total);
    uint32_t nsec = kc_rd_u32(h + 72);
    if (nsec < 1 || nsec > MAX_SECTIONS) return CORRUPT("%u sections", nsec);
    if (kc_rd_u32(h + 76) != 0 || kc_rd_u64(h + 80) != 0) return CORRUPT("reserved header bytes are not zero");
    size_t table_end = HEADER_SIZE + (size_t)nsec * DESC_SIZE;
    if (table_end > len) return CORRUPT("section table runs past the end");
    if (header_sum(h, nsec) != kc_rd_u64(h + SUM_OFFSET)) return CORRUPT("header checksum mismatch");

    /* The header is now trusted to be what was written; the variant must still be valid. */
    char *variant = hd->variant;
    memcpy(variant, h + 32, 32);
    variant[32] = '\0';
    size_t vl = strlen(variant);
    for (size_t i = vl; i < 32; i++)
        if (h[32 + i] != 0) return CORRUPT("variant field is not NUL-padded");
    if (vl > KC_VARIANT_MAX || kc_variant_check(variant) != KC_OK) return CORRUPT("invalid variant");

    size_t trailer = (flags & FLAG_MAC) ? MAC_LEN : (flags & FLAG_SIG) ? SIG_TRAILER : 0;
    if (len < table_end + trailer) return CORRUPT("no room for the %s", (flags & FLAG_MAC) ? "MAC" : "signature");
    hd->nsec = nsec, hd->table_end = table_end, hd->end = len - trailer;
    memcpy(hd->key.bytes, h + 16, 16);
    return KC_OK;
}

/* Pass one over the table: every declared size bounded ([Note: sizes] in entry.h), before
 * any section is checksummed, allocated or inflated.  expect ≤ end throughout. */
static int check_table(const uint8_t *h, const header *hd) {
    size_t end = hd->end;
    uint64_t expect = hd->table_end, raw_total = 0;
    unsigned seen_types = 0;
    for (uint32_t i = 0; i < hd->nsec; i++) {
        const uint8_t *d = h + HEADER_SIZE + (size_t)i * DESC_SIZE;
        uint32_t type = kc_rd_u32(d), codec = kc_rd_u32(d + 4);
        uint64_t raw_len = kc_rd_u64(d + 8), stored_len = kc_rd_u64(d + 16), off = kc_rd_u64(d + 24);
        if (!valid_type((int)type)) return CORRUPT("section %u has unknown type %u", i, type);
        if (seen_types & (1u << type)) {
            return CORRUPT("section type %u appears twice", type);
        }
        seen_types |= 1u << type;
        if (raw_len > KC_SECTION_MAX_RAW) return CORRUPT("section %u raw length over the cap", i);
        if (codec == KC_CODEC_NONE   ? stored_len != raw_len
            : codec == KC_CODEC_ZSTD ? stored_len > raw_len + 1024 || stored_len == 0
                                     : 1) {
            return CORRUPT("section %u: codec %u with stored length %llu for raw %llu", i, codec,
                           (unsigned long long)stored_len, (unsigned long long)raw_len);
        }
        if (codec == KC_CODEC_ZSTD && !ratio_ok(raw_len, stored_len)) {
            return CORRUPT("section %u declares %llu bytes from %llu stored, past the compression ratio cap of %u "
                           "(a decompression bomb?)",
                           i, (unsigned long long)raw_len, (unsigned long long)stored_len, KC_SECTION_MAX_RATIO);
        }
        if (off != expect || stored_len > end - off) {
            return CORRUPT("section %u is out of place or out of bounds", i);
        }
        expect = off + stored_len;
        raw_total += raw_len; /* each ≤ 256 MiB, at most 16: no wrap */
    }
    if (raw_total > KC_ENTRY_MAX_RAW)
        return CORRUPT("sections declare %llu bytes, over the cap of %llu", (unsigned long long)raw_total,
                       (unsigned long long)KC_ENTRY_MAX_RAW);
    if (expect != end) return CORRUPT("%llu bytes after the last section", (unsigned long long)(end - expect));
    return KC_OK;
}

/* Whether the zstd frame src[0, stored_len) declares raw_len bytes and is exactly stored_len long. */
static int frame_fits(const uint8_t *src, uint64_t stored_len, uint64_t raw_len) {
    unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)stored_len);
    size_t fsz = ZSTD_findFrameCompressedSize(src, (size_t)stored_len);
    return fcs == raw_len && !ZSTD_isError(fsz) && fsz == stored_len;
}

/* Section i (descriptor d, checksummed) inflated into *raw (malloc'ed, exactly its raw length). */
static int inflate_section(zctx **z, const uint8_t *h, const uint8_t *d, uint32_t i, uint8_t **raw) {
    uint32_t codec = kc_rd_u32(d + 4);
    uint64_t raw_len = kc_rd_u64(d + 8), stored_len = kc_rd_u64(d + 16);
    const uint8_t *src = h + kc_rd_u64(d + 24);
    if (!(*raw = kc_malloc((size_t)raw_len))) return kc_err(KC_ENOMEM, "decoding entry: out of memory");
    if (codec == KC_CODEC_NONE) {
        if (raw_len) memcpy(*raw, src, (size_t)raw_len);
        return KC_OK;
    }
    if (!*z) *z = kc_entry_zctx_();
    if (*z && !(*z)->d) (*z)->d = ZSTD_createDCtx();
    int rc = KC_OK;
    if (!*z || !(*z)->d) {
        rc = kc_err(KC_ENOMEM, "decoding entry: out of memory (zstd)");
    } else {
        size_t got = frame_fits(src, stored_len, raw_len)
                         ? ZSTD_decompressDCtx((*z)->d, *raw, (size_t)raw_len, src, (size_t)stored_len)
                         : (size_t)-1;
        if (ZSTD_isError(got) || got != raw_len) rc = CORRUPT("section %u does not decompress to its length", i);
    }
    if (rc) free(*raw), *raw = NULL;
    return rc;
}

/* Pass two: checksums, then the bytes, each section into the length pass one bounded: the
 * sections `keep` names into e (none when e is NULL: [Note: checked, not inflated]); ORIGIN is
 * always read and checked.  *want_raw: the raw length of section want_type, when there is one. */
static int read_sections(kc_entry *e, const uint8_t *h, uint32_t nsec, int want_type, uint64_t *want_raw,
                         unsigned keep) {
    zctx *z = NULL;
    int seen_meta = 0, rc;
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = h + HEADER_SIZE + (size_t)i * DESC_SIZE;
        uint32_t type = kc_rd_u32(d), codec = kc_rd_u32(d + 4);
        uint64_t raw_len = kc_rd_u64(d + 8), stored_len = kc_rd_u64(d + 16);
        uint64_t off = kc_rd_u64(d + 24), sum = kc_rd_u64(d + 32);
        const uint8_t *src = h + off;
        if (XXH3_64bits(src, (size_t)stored_len) != sum) {
            return CORRUPT("section %u checksum mismatch", i);
        }
        if ((int)type == want_type && want_raw) *want_raw = raw_len;
        int kept = e && (keep & (1u << type));
        if (!kept && type != KC_SECTION_ORIGIN) { /* [Note: checked, not inflated] */
            seen_meta |= type == KC_SECTION_META;
            /* the frame's header, not its blocks: those are walked when it is inflated */
            if (codec != KC_CODEC_NONE && ZSTD_getFrameContentSize(src, (size_t)stored_len) != raw_len)
                return CORRUPT("section %u does not decompress to its length", i);
            continue;
        }
        uint8_t *raw;
        if ((rc = inflate_section(&z, h, d, i, &raw))) return rc;
        if (type == KC_SECTION_META) {
            rc = decode_meta(e, raw, (size_t)raw_len); /* kept: a META not kept was skipped above */
            free(raw);
            if (rc) return rc;
            seen_meta = 1;
        } else if (type == KC_SECTION_ORIGIN &&
                   (rc = kc_entry_origin_scan_(raw, (size_t)raw_len, NULL, NULL, NULL)) != KC_OK) {
            free(raw);
            return rc;
        } else if (!kept) {
            free(raw); /* ORIGIN, checked and not kept */
        } else {
            e->sec[type].data = raw;
            e->sec[type].len = (size_t)raw_len;
            e->sec[type].present = 1;
        }
    }
    return seen_meta ? KC_OK : CORRUPT("no META section");
}

static int decode(kc_entry **out, const void *data, size_t len, int want_type, uint64_t *want_raw, unsigned keep) {
    const uint8_t *h = data;
    header hd;
    int rc = check_header(h, len, &hd);
    if (rc) return rc;
    kc_entry *e = NULL;
    if (out && (rc = kc_entry_new(&e, &hd.key, hd.variant))) return rc;
    if (!(rc = check_table(h, &hd))) rc = read_sections(e, h, hd.nsec, want_type, want_raw, keep);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    if (out) *out = e;
    return KC_OK;
}

int kc_entry_decode(kc_entry **out, const void *data, size_t len) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || (!data && len)) return kc_err(KC_EINVAL, "kc_entry_decode: NULL argument");
    return decode(out, data, len, -1, NULL, ~0u);
}

int kc_entry_decode_some(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant,
                         unsigned sections) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || (!data && len) || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_decode_some: NULL argument");
    kc_entry *e;
    int rc = decode(&e, data, len, -1, NULL, sections);
    if (rc) return rc;
    if (memcmp(e->key.bytes, key->bytes, sizeof key->bytes) != 0 || strcmp(e->variant, variant) != 0) {
        kc_entry_free(e);
        return CORRUPT("it holds another key or variant than its name");
    }
    e->partial = sections != ~0u;
    *out = e;
    return KC_OK;
}

int kc_entry_check_stored(const void *data, size_t len, const kc_key *key, const char *variant, int section,
                          uint64_t *raw_len) {
    if (raw_len) *raw_len = 0;
    if (!data || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_check_stored: NULL argument");
    uint64_t got = UINT64_MAX;
    int rc = decode(NULL, data, len, section, &got, 0);
    if (rc) return rc;
    /* decode() checked the header's variant field; the name's promise is checked here, as in
     * kc_entry_decode_as. */
    const uint8_t *h = data;
    char v[33];
    memcpy(v, h + 32, 32);
    v[32] = '\0';
    if (memcmp(h + 16, key->bytes, sizeof key->bytes) != 0 || strcmp(v, variant) != 0)
        return CORRUPT("it holds another key or variant than its name");
    if (section >= 0 && got == UINT64_MAX) return CORRUPT("it has no section of type %d", section);
    if (raw_len) *raw_len = got;
    return KC_OK;
}

/* The identity check: a store name promises a key and a variant, and only an entry that keeps
 * the promise is used (one place, for every tier, verify and export). */
int kc_entry_decode_as(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant) {
    if (out) *out = NULL;
    if (!out || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_decode_as: NULL argument");
    return kc_entry_decode_some(out, data, len, key, variant, ~0u);
}
