/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.c — writing a bundle (format in include/kcache/bundle.h).
 *
 * The one idea: the filter picks graph entries; their images (each once, checked in full) and
 * those images' unit records follow; the content is written images first, unit records next,
 * graph entries last, each kind in name order, so the same cache gives the same bundle.  A
 * bundle with records of its own (a coverage record, site profiles) is v4 and ends with its seal
 * ([Note: bundle seal] in records.c), vouched for by this cache's signer or MAC key; one without
 * is v1, byte for byte as before.  A content that compresses past the ratio cap is stored in raw
 * zstd blocks, so every bundle kcache writes imports.
 *
 * Callers: the public kc_bundle_export / kc_bundle_export_covering (kcache export, kcache sign).
 * Must not: ship a graph whose image is missing or corrupt; ship a corrupt entry (it is
 * quarantined and left out).
 */
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "internal.h"
#include "kcache/guard.h"      /* kc_site_profile_foreach */
#include "../cache/internal.h" /* kc_cache_local_, kc_cache_trust_ */
#include "../common/fs.h"

typedef kc_bundle_item item;
#define HEADER KC_BUNDLE_HEADER

/* One zstd frame holding `len` bytes in raw blocks (RFC 8878: single segment, 8-byte content
 * size, no checksum), for content that compresses past the ratio.  `out` has room for
 * stored_frame_bound(len); returns the frame's length. */
#define ZBLOCK (128u << 10)
static size_t stored_frame_bound(size_t len) { return 4 + 1 + 8 + (len / ZBLOCK + 1) * 3 + len; }
static size_t stored_frame(uint8_t *out, const uint8_t *src, size_t len) {
    size_t o = 0;
    kc_wr_u32(out, 0xFD2FB528u);
    out[4] = 0xE0; /* content size in 8 bytes, single segment */
    kc_wr_u64(out + 5, len);
    o = 13;
    size_t done = 0;
    do {
        size_t n = len - done < ZBLOCK ? len - done : ZBLOCK;
        uint32_t bh = (uint32_t)(n << 3) | (done + n == len ? 1u : 0u); /* type 0: raw */
        out[o] = (uint8_t)bh;
        out[o + 1] = (uint8_t)(bh >> 8);
        out[o + 2] = (uint8_t)(bh >> 16);
        if (n) memcpy(out + o + 3, src + done, n);
        o += 3 + n;
        done += n;
    } while (done < len);
    return o;
}

/* ---- the entries ---- */

typedef struct ex_list {
    item *v;
    size_t n, cap;
} ex_list;

typedef struct ex_ctx {
    kc_cache *c;
    const kc_bundle_filter *f;
    ex_list kinds[NKINDS];
    int rc;
} ex_ctx;

static int by_name(const void *a, const void *b) { return strcmp(((const item *)a)->name, ((const item *)b)->name); }

static int selected(const kc_bundle_filter *f, const kc_cache_item *it) {
    if (!f) return 1;
    int ok = f->nvariants == 0;
    for (size_t i = 0; i < f->nvariants && !ok; i++) ok = strcmp(f->variants[i], it->variant) == 0;
    if (!ok) return 0;
    if (f->nkeys == 0) return 1;
    for (size_t i = 0; i < f->nkeys; i++)
        if (memcmp(f->keys[i].bytes, it->key.bytes, 16) == 0) return 1;
    return 0;
}

static void ex_item_free(item *it) { free((void *)it->data), free(it->refs); }

/* Read `name` from the local directory as the entry its name promises (item_read), into the next
 * item of `l`.  KC_MISS: absent, or of another format version (gc collects those); KC_ECORRUPT:
 * moved to quarantine (never ship a bad entry). */
static int ex_load(kc_cache *c, ex_list *l, const char *name, const kc_key *key, const char *variant) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        item *p = kc_realloc(l->v, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "export: out of memory");
        l->v = p;
        l->cap = cap;
    }
    item *it = &l->v[l->n];
    memset(it, 0, sizeof *it);
    snprintf(it->name, sizeof it->name, "%s", name);
    void *data;
    kc_entry *e = NULL;
    int rc = kc_local_read(kc_cache_local_(c), name, &data, &it->len);
    if (rc) return rc;
    it->data = data;
    if ((rc = kc_entry_decode_as(&e, data, it->len, key, variant)) == KC_OK) rc = kc_bundle_item_read_(it, e);
    kc_entry_free(e);
    if (rc == KC_OK) return l->n++, KC_OK;
    int v = kc_entry_peek_version(data, it->len);
    if (rc == KC_ECORRUPT && v > 0 && v != KC_ENTRY_FORMAT_VERSION)
        rc = kc_err(KC_MISS, "%s is of format v%d", name, v);
    else if (rc == KC_ECORRUPT) kc_local_quarantine(kc_cache_local_(c), name);
    ex_item_free(it);
    return rc;
}

/* The walk keeps the selected graph entries and every unit record; images follow the graphs. */
static int export_item(const kc_cache_item *it, void *ctx) {
    ex_ctx *x = ctx;
    int kind = strcmp(it->variant, KC_VARIANT_IMAGE) == 0  ? KIND_IMAGE
               : strcmp(it->variant, KC_VARIANT_UNIT) == 0 ? KIND_UNIT
                                                           : KIND_GRAPH;
    if (kind == KIND_IMAGE || (kind == KIND_GRAPH && !selected(x->f, it))) return 0;
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    int rc = ex_load(x->c, &x->kinds[kind], name, &it->key, it->variant);
    if (rc == KC_OK || rc == KC_MISS || rc == KC_ECORRUPT) return 0; /* removed meanwhile, older, corrupt: left out */
    return x->rc = rc, 1;
}

typedef struct ex_use {
    kc_image_ref ref;  /* first: ref_cmp orders these */
    const char *graph; /* the name of a graph that refers to it */
} ex_use;

#define EX_FIX "nothing exported (look the graph up or prewarm it again to restore the image, or leave the graph out)"

/* Each image the graphs refer to, once, read and checked in full, into x->kinds[KIND_IMAGE] (in
 * id order).  A missing or corrupt image, or one unlike its reference, fails the export. */
static int ex_images(ex_ctx *x) {
    ex_list *g = &x->kinds[KIND_GRAPH], *im = &x->kinds[KIND_IMAGE];
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) n += g->v[i].nrefs;
    ex_use *u = kc_calloc(n ? n : 1, sizeof *u);
    if (!u) return kc_err(KC_ENOMEM, "export: out of memory");
    n = 0;
    for (size_t i = 0; i < g->n; i++)
        for (size_t k = 0; k < g->v[i].nrefs; k++) u[n].ref = g->v[i].refs[k], u[n++].graph = g->v[i].name;
    qsort(u, n, sizeof *u, kc_bundle_ref_cmp_);
    int rc = KC_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        char name[KC_NAME_MAX + 1];
        kc_store_name(&u[i].ref.id, KC_VARIANT_IMAGE, name);
        const item *last = im->n ? &im->v[im->n - 1] : NULL;
        if (!last || memcmp(last->ref.id.bytes, u[i].ref.id.bytes, 16) != 0) { /* not fetched for an earlier graph */
            rc = ex_load(x->c, im, name, &u[i].ref.id, KC_VARIANT_IMAGE);
            if (rc == KC_MISS)
                rc = kc_err(KC_MISS, "graph %s refers to image %s, which the cache does not hold; " EX_FIX, u[i].graph,
                            name);
            else if (rc == KC_ECORRUPT)
                rc = kc_err_prefix(rc,
                                   "graph %s refers to image %s, which is corrupt and was moved to "
                                   "quarantine; " EX_FIX ": ",
                                   u[i].graph, name);
            last = rc ? NULL : &im->v[im->n - 1];
        }
        if (last && !kc_image_ref_equal(&last->ref, &u[i].ref))
            rc = kc_err(KC_ECORRUPT,
                        "graph %s refers to image %s, which is not the image it describes (%s %s, "
                        "%llu bytes; the graph says %s %s, %llu bytes); " EX_FIX,
                        u[i].graph, name, last->ref.target, last->ref.is_ptx ? "PTX" : "cubin",
                        (unsigned long long)last->ref.len, u[i].ref.target, u[i].ref.is_ptx ? "PTX" : "cubin",
                        (unsigned long long)u[i].ref.len);
    }
    free(u);
    return rc;
}

/* Keep the unit records whose image the bundle carries (the same reference); drop the others. */
static void ex_units(ex_ctx *x) {
    ex_list *un = &x->kinds[KIND_UNIT], *im = &x->kinds[KIND_IMAGE];
    size_t kept = 0;
    for (size_t i = 0; i < un->n; i++) {
        const item *hit = im->n ? bsearch(&un->v[i], im->v, im->n, sizeof *im->v, kc_bundle_by_id_) : NULL;
        if (hit && kc_image_ref_equal(&hit->ref, &un->v[i].ref)) un->v[kept++] = un->v[i];
        else ex_item_free(&un->v[i]);
    }
    un->n = kept;
}

/* The content: toc, entries and, in v4, the records and the seal ([Note: bundle seal]). */
static int ex_content(ex_ctx *x, const kc_bundle_covers *covers, const kc_prof_list *prof, int version,
                      const kc_trust *trust, kc_buf *content, kc_bundle_report *rep) {
    /* Images, unit records, graph entries; each kind in name order: the same cache gives the same bundle. */
    for (int k = 0; k < NKINDS; k++)
        if (x->kinds[k].n) qsort(x->kinds[k].v, x->kinds[k].n, sizeof *x->kinds[k].v, by_name);
    uint64_t off = 0;
    for (int k = 0; k < NKINDS; k++)
        for (size_t i = 0; i < x->kinds[k].n; i++) {
            const item *it = &x->kinds[k].v[i];
            size_t nl = strlen(it->name);
            kc_buf_put_u16(content, (uint16_t)nl);
            kc_buf_put(content, it->name, nl);
            kc_buf_put_u64(content, off);
            kc_buf_put_u64(content, it->len);
            kc_buf_put_u64(content, XXH3_64bits(it->data, it->len));
            off += it->len;
            kc_bundle_report_add_(rep, k, it->len);
        }
    for (int k = 0; k < NKINDS; k++)
        for (size_t i = 0; i < x->kinds[k].n; i++) kc_buf_put(content, x->kinds[k].v[i].data, x->kinds[k].v[i].len);
    int rc = KC_OK;
    if (version == 4) {
        size_t at = content->len;
        kc_buf_put_u32(content, 0); /* the covers record's length, set below */
        if (covers) rc = kc_bundle_covers_put_(content, covers);
        if (!content->failed) kc_wr_u32(content->data + at, (uint32_t)(content->len - at - 4));
        at = content->len;
        kc_buf_put_u32(content, 0); /* the profiles record's length, set below */
        if (prof->n) kc_bundle_profiles_put_(content, prof);
        if (!content->failed) kc_wr_u32(content->data + at, (uint32_t)(content->len - at - 4));
        rep->profiles = prof->n;
        if (rc == KC_OK) rc = kc_bundle_seal_put_(content, trust);
    }
    if (rc == KC_OK && content->failed) rc = kc_err(KC_ENOMEM, "export: out of memory");
    else if (rc == KC_OK && (content->len > KC_BUNDLE_MAX_BYTES || rep->entries > UINT32_MAX))
        rc = kc_err(KC_EINVAL, "bundle over the %llu-byte cap", (unsigned long long)KC_BUNDLE_MAX_BYTES);
    return rc;
}

/* Compress the content and write the bundle file atomically. */
static int ex_write(const char *path, const kc_buf *content, int version, uint32_t count) {
    size_t bound = ZSTD_compressBound(content->len), sbound = stored_frame_bound(content->len);
    if (sbound > bound) bound = sbound;
    uint8_t *file = kc_malloc(HEADER + bound);
    if (!file) return kc_err(KC_ENOMEM, "export: out of memory");
    int rc = KC_OK;
    size_t z = ZSTD_compress(file + HEADER, bound, content->data, content->len, 9);
    if (ZSTD_isError(z)) rc = kc_err(KC_ERROR, "export: zstd: %s", ZSTD_getErrorName(z));
    if (!rc && !kc_bundle_ratio_ok_(content->len, z)) z = stored_frame(file + HEADER, content->data, content->len);
    if (!rc) {
        memcpy(file, kc_bundle_magic_, 8);
        kc_wr_u16(file + 8, (uint16_t)version);
        kc_wr_u16(file + 10, 0);
        kc_wr_u32(file + 12, count);
        kc_wr_u64(file + 16, content->len);
        kc_wr_u64(file + 24, z);
        kc_wr_u64(file + 32, XXH3_64bits(content->data, content->len));
        kc_wr_u64(file + 40, XXH3_64bits(file, 40));
        rc = kc_fs_write_atomic(path, file, HEADER + z);
    }
    free(file);
    return rc;
}

/* kc_bundle_export_covering once the caller's report is checked (bundle/report.c): `out` is kcache's own. */
int kc_bundle_export_(kc_cache *c, const char *path, const kc_bundle_filter *filter, const kc_bundle_covers *covers,
                      kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_export: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    if (!kc_cache_local_(c)) return kc_err(KC_EREADONLY, "the cache is disabled");
    ex_ctx x = {.c = c, .f = filter, .rc = KC_OK};
    int rc = kc_cache_foreach(c, export_item, &x);
    if (x.rc) rc = x.rc;
    if (rc == KC_OK) rc = ex_images(&x);
    if (rc == KC_OK) ex_units(&x);
    kc_prof_list prof = {0};
    if (rc == KC_OK) rc = kc_site_profile_foreach(c, kc_bundle_prof_collect_, &prof);
    /* Records of its own (coverage, profiles): v4, sealed; none: v1 byte for byte as before. */
    int version = prof.n || covers ? 4 : 1;
    kc_buf content = {0};
    kc_bundle_report rep;
    memset(&rep, 0, sizeof rep);
    if (rc == KC_OK) rc = ex_content(&x, covers, &prof, version, kc_cache_trust_(c), &content, &rep);
    if (rc == KC_OK) rc = ex_write(path, &content, version, (uint32_t)rep.entries);
    if (rc == KC_OK && out) *out = rep;
    for (int k = 0; k < NKINDS; k++) {
        for (size_t i = 0; i < x.kinds[k].n; i++) ex_item_free(&x.kinds[k].v[i]);
        free(x.kinds[k].v);
    }
    kc_bundle_prof_free_(&prof, 1);
    kc_buf_free(&content);
    return rc;
}
