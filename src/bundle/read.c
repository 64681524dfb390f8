/* SPDX-License-Identifier: Apache-2.0 */
/*
 * read.c — phase one of an import: a bundle read whole and proved sound, nothing written
 * (format in include/kcache/bundle.h).
 *
 * The one idea: every length is bounded by what REMAINS, never by a total it was read out of,
 * and never with a subtraction that can wrap.  The header's sizes are bounded before anything is
 * allocated or inflated; the table of contents is read first, then each entry's size is checked
 * against the bytes after the table (`size <= body - expect`, with expect <= body kept
 * throughout); what follows the entries (the tail) is split into the version's records, each
 * length against what is left of the tail.  Then: header checksum, payload checksum, exact
 * decompressed length, every name, every entry decoded in full and matched to its name, every
 * image checked in full (XXH3-128 and SHA-256) and every reference to a bundled image matched to
 * it — holding nothing but memory.
 *
 * Trust ([Note: bundle seal] in records.c).  With a keyring or MAC key, every entry must carry
 * what the configuration requires (kc_trust_check), and so must the bundle's own records: a v4
 * bundle's seal is checked; a v2 or v3 bundle, whose coverage record or profiles nothing covers,
 * is refused whole at its header, before it is inflated, with what to do (sign it again).
 *
 * Callers: bundle.c (kc_bundle_import, kc_bundle_coverage_read).  Must not: read a byte it has
 * not bounded; believe a record under trust that no seal vouches for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "internal.h"
#include "../common/fs.h"

typedef kc_bundle_item item;
#define HEADER KC_BUNDLE_HEADER
#define BAD KC_BUNDLE_BAD

const uint8_t kc_bundle_magic_[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};

/* ---- objects of three kinds ([Note: two levels] in kcache/entry.h) ---- */

/* Read what a decoded entry is, strictly; an image is checked in full (XXH3-128 and SHA-256). */
int kc_bundle_item_read_(item *it, const kc_entry *e) {
    const char *v = kc_entry_variant(e);
    it->kind = strcmp(v, KC_VARIANT_IMAGE) == 0 ? KIND_IMAGE : strcmp(v, KC_VARIANT_UNIT) == 0 ? KIND_UNIT : KIND_GRAPH;
    if (it->kind == KIND_IMAGE) return kc_image_entry_read(e, NULL, 1, &it->ref, NULL, NULL);
    if (it->kind == KIND_UNIT) return kc_unit_entry_read(e, &it->ref, NULL, 0, NULL);
    int rc = kc_entry_images(e, &it->refs, &it->nrefs);
    return rc == KC_MISS ? KC_OK : rc; /* a graph of no images */
}

/* The references an entry makes to images: a unit record's one, a graph's, an image none. */
const kc_image_ref *kc_bundle_item_refs_(const item *it, size_t *n) {
    *n = it->kind == KIND_UNIT ? 1 : it->kind == KIND_GRAPH ? it->nrefs : 0;
    return it->kind == KIND_UNIT ? &it->ref : it->refs;
}

/* Order of references: by id, then every other field, so that equal ones sit side by side. */
int kc_bundle_ref_cmp_(const void *pa, const void *pb) {
    const kc_image_ref *a = pa, *b = pb;
    int d = memcmp(a->id.bytes, b->id.bytes, sizeof a->id.bytes);
    if (!d) d = memcmp(a->sha256, b->sha256, sizeof a->sha256);
    if (!d) d = strcmp(a->target, b->target);
    if (!d) d = (a->is_ptx > b->is_ptx) - (a->is_ptx < b->is_ptx);
    if (!d) d = (a->len > b->len) - (a->len < b->len);
    return d;
}
int kc_bundle_by_id_(const void *a, const void *b) {
    return memcmp(((const item *)a)->ref.id.bytes, ((const item *)b)->ref.id.bytes, 16);
}
static int by_id_ptr(const void *a, const void *b) { return kc_bundle_by_id_(*(item *const *)a, *(item *const *)b); }
static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Count an entry in a report, by kind. */
void kc_bundle_report_add_(kc_bundle_report *r, int kind, size_t len) {
    r->entries++;
    r->bytes += len;
    if (kind == KIND_IMAGE) r->images++, r->image_bytes += len;
    else if (kind == KIND_UNIT) r->units++, r->unit_bytes += len;
    else r->graphs++, r->graph_bytes += len;
}

void kc_bundle_in_free_(kc_bundle_in *b) {
    for (size_t i = 0; b->items && i < b->n; i++) free(b->items[i].refs);
    free(b->items);
    free(b->images);
    free(b->content);
    kc_bundle_prof_free_(&b->prof, 0);
    memset(b, 0, sizeof *b);
}

const item *kc_bundle_in_image_(const kc_bundle_in *b, const kc_key *id) {
    item k, *kp = &k;
    k.ref.id = *id;
    item **hit = b->nimages ? bsearch(&kp, b->images, b->nimages, sizeof *b->images, by_id_ptr) : NULL;
    return hit ? *hit : NULL;
}

/* Index the bundle's images; every reference to one of them must be that image. */
static int in_index(const char *path, kc_bundle_in *b) {
    if (!(b->images = kc_calloc(b->n ? b->n : 1, sizeof *b->images))) return kc_err(KC_ENOMEM, "import: out of memory");
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].kind == KIND_IMAGE) b->images[b->nimages++] = &b->items[i];
    qsort(b->images, b->nimages, sizeof *b->images, by_id_ptr); /* ids are distinct: names are */
    for (size_t i = 0; i < b->n; i++) {
        size_t nr;
        const kc_image_ref *r = kc_bundle_item_refs_(&b->items[i], &nr);
        for (size_t k = 0; k < nr; k++) {
            const item *img = kc_bundle_in_image_(b, &r[k].id);
            if (img && !kc_image_ref_equal(&img->ref, &r[k]))
                return BAD(path, "entry '%s' refers to image %s, which is not the image it describes", b->items[i].name,
                           img->name);
        }
    }
    return KC_OK;
}

/* ---- the header and the payload ---- */

/* What a bundle's header says and its payload inflated: content (malloc'ed, the caller's even on failure). */
typedef struct payload {
    int version;
    uint32_t count;   /* entries */
    uint8_t *content; /* the raw bytes */
    size_t raw;       /* their length */
} payload;

/* Check the header of a file of flen bytes and inflate its payload into out->content (raw bytes).
 * A v2 or v3 bundle is refused here under trust ([Note: bundle seal]), before it is inflated. */
static int read_payload(const char *path, const uint8_t *h, size_t flen, const kc_trust *trust, bool *refused,
                        payload *out) {
    int *version = &out->version;
    uint32_t *count = &out->count;
    uint8_t **content = &out->content;
    if (flen < HEADER) return BAD(path, "%zu bytes is shorter than its header (truncated)", flen);
    if (memcmp(h, kc_bundle_magic_, 8) != 0) return BAD(path, "not a kcache bundle (bad magic)");
    if (XXH3_64bits(h, 40) != kc_rd_u64(h + 40)) return BAD(path, "header checksum mismatch");
    *version = kc_rd_u16(h + 8);
    if (*version < 1 || *version > KC_BUNDLE_VERSION_MAX || kc_rd_u16(h + 10) != 0)
        return BAD(path, "format version %u is not supported", kc_rd_u16(h + 8));
    if (kc_trust_checks(trust) && (*version == 2 || *version == 3)) {
        *refused = true;
        return kc_err(
            KC_EUNTRUSTED,
            "bundle '%s': format v%d carries a coverage record or site profiles that no signature "
            "or MAC covers, and this cache requires one (a keyring or MAC key is set): refused. Sign it again "
            "(`kcache sign --key FILE BUNDLE` writes format v4, whose seal covers them) or export it again "
            "from a cache that signs (or holds the MAC key)",
            path, *version);
    }
    *count = kc_rd_u32(h + 12);
    uint64_t raw = kc_rd_u64(h + 16), stored = kc_rd_u64(h + 24);
    if (raw > KC_BUNDLE_MAX_BYTES || *count > raw / 27 + 1) return BAD(path, "implausible sizes in its header");
    if (stored != flen - HEADER)
        return BAD(path, "%zu payload bytes present, header says %llu (truncated or padded)", flen - HEADER,
                   (unsigned long long)stored);
    if (!kc_bundle_ratio_ok_(raw, stored)) /* before anything is allocated or inflated */
        return BAD(path,
                   "%llu payload bytes declare %llu, past the compression ratio cap of %u (a decompression bomb?)",
                   (unsigned long long)stored, (unsigned long long)raw, KC_BUNDLE_MAX_RATIO);
    if (!(*content = kc_malloc(raw ? (size_t)raw : 1))) return kc_err(KC_ENOMEM, "import: out of memory");
    unsigned long long fcs = ZSTD_getFrameContentSize(h + HEADER, (size_t)stored);
    size_t fsz = ZSTD_findFrameCompressedSize(h + HEADER, (size_t)stored);
    size_t got = (fcs == raw && !ZSTD_isError(fsz) && fsz == stored)
                     ? ZSTD_decompress(*content, (size_t)raw, h + HEADER, (size_t)stored)
                     : (size_t)-1;
    if (ZSTD_isError(got) || got != raw) return BAD(path, "payload does not decompress to its length");
    if (XXH3_64bits(*content, (size_t)raw) != kc_rd_u64(h + 32)) return BAD(path, "payload checksum mismatch");
    out->raw = (size_t)raw;
    return KC_OK;
}

/* ---- the table of contents ---- */

typedef struct toc_row {
    uint64_t off, size, sum;
} toc_row;

/* Read the toc (names into items[], rows into toc[]); then bound each entry by the bytes AFTER
 * the table, and point items[] at them; *tail: the bytes that follow the last entry. */
static int read_toc(const char *path, kc_reader *r, uint32_t count, item *items, toc_row *toc, size_t *tail) {
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = kc_rd_next_u16(r);
        const uint8_t *nm = kc_rd_bytes(r, nl);
        toc[i].off = kc_rd_next_u64(r);
        toc[i].size = kc_rd_next_u64(r);
        toc[i].sum = kc_rd_next_u64(r);
        if (r->bad) return BAD(path, "table of contents is truncated");
        if (nl == 0 || nl > KC_NAME_MAX || memchr(nm, 0, nl))
            return kc_err(KC_EPERM, "bundle '%s': entry %u has an invalid name", path, i);
        memcpy(items[i].name, nm, nl);
        items[i].name[nl] = '\0';
        if (kc_store_name_check(items[i].name) != KC_OK)
            return kc_err(KC_EPERM, "bundle '%s': entry %u is named '%s', not <key>.<variant>: refused", path, i,
                          items[i].name);
    }
    size_t body = r->left; /* the bytes after the table: the entries, then the records */
    uint64_t expect = 0;
    for (uint32_t i = 0; i < count; i++) { /* expect <= body throughout: body - expect cannot wrap */
        if (toc[i].off != expect) return BAD(path, "entry %u is out of place", i);
        if (toc[i].size > KC_ENTRY_MAX_BYTES || toc[i].size > body - expect)
            return BAD(path, "entry %u's size %llu is over the cap or runs past the bundle", i,
                       (unsigned long long)toc[i].size);
        items[i].data = r->p + expect;
        items[i].len = (size_t)toc[i].size;
        expect += toc[i].size;
    }
    *tail = body - (size_t)expect;
    return KC_OK;
}

/* ---- the records after the entries ---- */

typedef struct tail_parts {
    const uint8_t *covers, *profiles, *seal;
    size_t clen, plen, slen;
    size_t sealed; /* v4: the content bytes the seal covers (everything before its length) */
} tail_parts;

/* Split the `tail` bytes at p (after the last entry) into the version's records, each length
 * bounded by what is left of the tail. */
static int split_tail(const char *path, int version, const uint8_t *content, const uint8_t *p, size_t tail,
                      tail_parts *t) {
    memset(t, 0, sizeof *t);
    if (version == 1) return tail ? BAD(path, "entries do not fill the bundle") : KC_OK;
    if (version == 2) {
        if (!tail) return BAD(path, "format v2 without its coverage record");
        t->covers = p, t->clen = tail;
        return KC_OK;
    }
    kc_reader r = kc_reader_make(p, tail);
    t->clen = kc_rd_next_u32(&r);
    t->covers = kc_rd_bytes(&r, t->clen);
    if (r.bad) return BAD(path, "its coverage record runs past the bundle");
    if (version == 3) {
        if (r.left < 4) return BAD(path, "format v3 without its profiles record");
        t->profiles = r.p, t->plen = r.left;
        return KC_OK;
    }
    t->plen = kc_rd_next_u32(&r);
    t->profiles = kc_rd_bytes(&r, t->plen);
    if (r.bad) return BAD(path, "its profiles record runs past the bundle");
    t->sealed = (size_t)(r.p - content);
    t->slen = kc_rd_next_u32(&r);
    t->seal = kc_rd_bytes(&r, t->slen);
    if (r.bad) return BAD(path, "its seal runs past the bundle");
    if (r.left) return BAD(path, "%zu bytes after its seal", r.left);
    return KC_OK;
}

/* Every entry: no name twice, its checksum, what the trust configuration requires, decoded in
 * full as the entry its name promises. */
static int check_entries(const char *path, item *items, const toc_row *toc, uint32_t count, const kc_trust *trust,
                         bool *mac_refused) {
    /* A name twice: sorted copies side by side (n log n). */
    const char **order = kc_calloc(count ? count : 1, sizeof *order);
    if (!order) return kc_err(KC_ENOMEM, "import: out of memory");
    for (uint32_t i = 0; i < count; i++) order[i] = items[i].name;
    qsort(order, count, sizeof *order, by_str);
    int rc = KC_OK;
    for (uint32_t i = 1; i < count && !rc; i++)
        if (strcmp(order[i - 1], order[i]) == 0) rc = BAD(path, "'%s' appears twice", order[i]);
    free(order);
    for (uint32_t i = 0; i < count && !rc; i++) {
        if (XXH3_64bits(items[i].data, items[i].len) != toc[i].sum)
            return BAD(path, "entry '%s' checksum mismatch", items[i].name);
        if (kc_trust_checks(trust) &&
            (rc = kc_trust_check(trust, items[i].data, items[i].len))) { /* a MAC, or a trusted signature */
            if (rc == KC_EUNTRUSTED)
                rc = kc_err(KC_EUNTRUSTED, "bundle '%s': entry '%s' refused: %s", path, items[i].name,
                            kc_error_last()->message);
            *mac_refused = rc == KC_EUNTRUSTED; /* only this counts as mac_rejected, not a name refused (KC_EPERM) */
            return rc;
        }
        /* The one identity check (kc_entry_decode_as): the entry holds the key and variant its name says. */
        kc_key want;
        char hex[KC_KEY_HEX_LEN + 1];
        memcpy(hex, items[i].name, KC_KEY_HEX_LEN); /* the name passed kc_store_name_check */
        hex[KC_KEY_HEX_LEN] = '\0';
        kc_entry *e = NULL;
        if ((rc = kc_key_from_hex(&want, hex)) == KC_OK)
            rc = kc_entry_decode_as(&e, items[i].data, items[i].len, &want, items[i].name + KC_KEY_HEX_LEN + 1);
        if (rc == KC_OK) rc = kc_bundle_item_read_(&items[i], e);
        kc_entry_free(e);
        if (rc && rc != KC_ENOMEM) rc = BAD(path, "entry '%s': %s", items[i].name, kc_error_last()->message);
    }
    return rc;
}

int kc_bundle_verify_(const char *path, const kc_trust *trust, kc_bundle_in *out, bool *mac_refused,
                      kc_bundle_coverage **cov) {
    if (cov) *cov = NULL;
    memset(out, 0, sizeof *out);
    void *file;
    size_t flen, raw = 0, tail = 0;
    int rc = kc_fs_read_input(path, KC_BUNDLE_MAX_BYTES + HEADER, &file, &flen, NULL);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "bundle '%s': no such file", path);
    if (rc) return rc;
    int version = 0;
    uint32_t count = 0;
    toc_row *toc = NULL;
    tail_parts t;
    kc_bundle_coverage *cv = NULL;
    payload pl = {0, 0, NULL, 0};
    rc = read_payload(path, file, flen, trust, mac_refused, &pl);
    version = pl.version, count = pl.count, out->content = pl.content, raw = pl.raw;
    free(file);
    if (!rc && (!(out->items = kc_calloc(count ? count : 1, sizeof *out->items)) ||
                !(toc = kc_calloc(count ? count : 1, sizeof *toc))))
        rc = kc_err(KC_ENOMEM, "import: out of memory");
    kc_reader r = kc_reader_make(out->content, raw);
    if (!rc) out->n = count, rc = read_toc(path, &r, count, out->items, toc, &tail);
    if (!rc) rc = split_tail(path, version, out->content, r.p + (r.left - tail), tail, &t);
    if (!rc && version == 4)
        rc = kc_bundle_seal_check_(path, out->content, t.sealed, t.seal, t.slen, trust, mac_refused);
    if (!rc) rc = check_entries(path, out->items, toc, count, trust, mac_refused);
    if (!rc && (version == 2 || t.clen)) cv = kc_bundle_covers_read_(path, t.covers, t.clen, &rc); /* NULL: rc set */
    if (!rc && (version == 3 || t.plen)) rc = kc_bundle_profiles_read_(path, t.profiles, t.plen, &out->prof);
    if (!rc) rc = in_index(path, out);
    free(toc);
    if (rc) {
        kc_bundle_coverage_free(cv);
        kc_bundle_in_free_(out);
        return rc;
    }
    if (cov) *cov = cv;
    else kc_bundle_coverage_free(cv);
    return KC_OK;
}
