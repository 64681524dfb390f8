/*
 * bundle.c — export and import one-file bundles (format in include/kcache/bundle.h).
 *
 * The one idea: import is two phases.  Phase one reads the whole file and proves it
 * sound — header checksum, payload checksum, exact decompressed length, a table of
 * contents whose every offset and name is checked, every entry decoded in full and
 * matched to its name, every image checked in full (XXH3-128 and SHA-256) and every
 * reference to a bundled image matched to it — holding nothing but memory.  Only then does
 * phase two write, each entry atomically, images first, unit records next, graph entries
 * last ([Note: two levels] in kcache/entry.h), leaving out any whose image is neither in the
 * bundle nor in the cache; an entry already present with the same bytes is left alone, so
 * importing twice is a no-op.  Export is the mirror: the filter picks graph entries, their
 * images (each once, checked in full) and those images' unit records follow.
 *
 * Callers: the public kc_bundle_export/kc_bundle_import (kcache export/import).
 * Must not: write anything before phase one has passed; write a graph entry or unit record
 * before its images, or at all when one is nowhere; ship a graph whose image is missing or
 * corrupt; accept a name that is not "<32 hex>.<variant>"; trust a length it has not bounded
 * ([Note: sizes] in bundle.h: the header's sizes and compression ratio before inflating, each
 * toc size against the room left before adding it).
 */
#include "kcache/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "../cache/internal.h" /* kc_cache_local_, kc_cache_trust_ */
#include "../entry/trust.h"
#include "../common/fs.h"
#include "../common/internal.h"
#include "../cache/record.h"      /* kc_cache_toolchain_note_ */
#include "../store/local.h"       /* kc_local_read/put/quarantine; KC_NAME_MAX, kc_store_name (store/name.h) */

#define HEADER 48
#define BAD(p, fmt, ...) kc_err(KC_ECORRUPT, "bundle '%s': " fmt, (p), ##__VA_ARGS__)
static const uint8_t MAGIC[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};

/* The ratio rule of bundle.h: may `stored` payload bytes declare `raw`?  Cannot wrap. */
static int ratio_ok(uint64_t raw, uint64_t stored) {
    return raw <= KC_BUNDLE_RATIO_FLOOR || raw / KC_BUNDLE_MAX_RATIO <= stored;
}

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

/* ---- objects of three kinds ([Note: two levels] in kcache/entry.h) ---- */

enum { KIND_IMAGE, KIND_UNIT, KIND_GRAPH, NKINDS }; /* also the order of a bundle and of an import's writes */

/* One entry of a bundle: export's (data malloc'ed, its own) or import's (data inside the bundle). */
typedef struct item {
    char name[KC_NAME_MAX + 1];
    const uint8_t *data;
    size_t len;
    int kind, skipped;
    kc_image_ref ref;    /* an image's own reference; a unit record's image */
    kc_image_ref *refs;  /* a graph's images (NULL, 0: none) */
    size_t nrefs;
} item;

/* Read what a decoded entry is, strictly; an image is checked in full (XXH3-128 and SHA-256). */
static int item_read(item *it, const kc_entry *e) {
    const char *v = kc_entry_variant(e);
    it->kind = strcmp(v, KC_VARIANT_IMAGE) == 0 ? KIND_IMAGE : strcmp(v, KC_VARIANT_UNIT) == 0 ? KIND_UNIT : KIND_GRAPH;
    if (it->kind == KIND_IMAGE) return kc_image_entry_read(e, NULL, 1, &it->ref, NULL, NULL);
    if (it->kind == KIND_UNIT) return kc_unit_entry_read(e, &it->ref, NULL, 0, NULL);
    int rc = kc_entry_images(e, &it->refs, &it->nrefs);
    return rc == KC_MISS ? KC_OK : rc; /* a graph of no images */
}

/* The references an entry makes to images: a unit record's one, a graph's, an image none. */
static const kc_image_ref *item_refs(const item *it, size_t *n) {
    *n = it->kind == KIND_UNIT ? 1 : it->kind == KIND_GRAPH ? it->nrefs : 0;
    return it->kind == KIND_UNIT ? &it->ref : it->refs;
}

/* Order of references: by id, then every other field, so that equal ones sit side by side. */
static int ref_cmp(const void *pa, const void *pb) {
    const kc_image_ref *a = pa, *b = pb;
    int d = memcmp(a->id.bytes, b->id.bytes, sizeof a->id.bytes);
    if (!d) d = memcmp(a->sha256, b->sha256, sizeof a->sha256);
    if (!d) d = strcmp(a->target, b->target);
    if (!d) d = (a->is_ptx > b->is_ptx) - (a->is_ptx < b->is_ptx);
    if (!d) d = (a->len > b->len) - (a->len < b->len);
    return d;
}
static int by_id(const void *a, const void *b) { return memcmp(((const item *)a)->ref.id.bytes, ((const item *)b)->ref.id.bytes, 16); }
static int by_id_ptr(const void *a, const void *b) { return by_id(*(item *const *)a, *(item *const *)b); }
static int by_name(const void *a, const void *b) { return strcmp(((const item *)a)->name, ((const item *)b)->name); }

/* Count an entry in a report, by kind. */
static void report_add(kc_bundle_report *r, int kind, size_t len) {
    r->entries++;
    r->bytes += len;
    if (kind == KIND_IMAGE) r->images++, r->image_bytes += len;
    else if (kind == KIND_UNIT) r->units++, r->unit_bytes += len;
    else r->graphs++, r->graph_bytes += len;
}

/* ---- coverage record (v2: the grammar's `covers`, in bundle.h) ---- */

#define COV_STR_MAX 4096

/* Append `cv` as a covers record; KC_EINVAL for a record the grammar cannot hold. */
static int covers_put(kc_buf *b, const kc_bundle_covers *cv) {
    size_t ml = cv->manifest ? strlen(cv->manifest) : 0;
    if (ml == 0 || ml > COV_STR_MAX) return kc_err(KC_EINVAL, "export: the manifest's name must be 1..%d bytes", COV_STR_MAX);
    if (cv->ntargets == 0 || cv->ntargets > KC_BUNDLE_MAX_TARGETS || !cv->targets)
        return kc_err(KC_EINVAL, "export: a coverage record needs 1..%d targets", KC_BUNDLE_MAX_TARGETS);
    if (cv->ngraphs == 0 || cv->ngraphs > KC_BUNDLE_MAX_GRAPHS || !cv->names || !cv->keys)
        return kc_err(KC_EINVAL, "export: a coverage record needs 1..%d graphs", KC_BUNDLE_MAX_GRAPHS);
    kc_buf_put_u16(b, (uint16_t)ml);
    kc_buf_put(b, cv->manifest, ml);
    kc_buf_put_u16(b, (uint16_t)cv->ntargets);
    for (size_t i = 0; i < cv->ntargets; i++) {
        kc_target t;
        size_t tl = cv->targets[i] ? strlen(cv->targets[i]) : 0;
        if (tl == 0 || tl > KC_VARIANT_MAX || kc_target_parse(cv->targets[i], &t) != KC_OK)
            return kc_err(KC_EINVAL, "export: coverage target %zu is not a target", i);
        uint8_t l8 = (uint8_t)tl;
        kc_buf_put(b, &l8, 1);
        kc_buf_put(b, cv->targets[i], tl);
    }
    kc_buf_put_u32(b, (uint32_t)cv->ngraphs);
    for (size_t i = 0; i < cv->ngraphs; i++) {
        size_t nl = cv->names[i] ? strlen(cv->names[i]) : 0;
        if (nl == 0 || nl > COV_STR_MAX) return kc_err(KC_EINVAL, "export: coverage graph %zu's name must be 1..%d bytes", i, COV_STR_MAX);
        kc_buf_put(b, cv->keys[i].bytes, 16);
        kc_buf_put_u16(b, (uint16_t)nl);
        kc_buf_put(b, cv->names[i], nl);
    }
    return KC_OK;
}

void kc_bundle_coverage_free(kc_bundle_coverage *cov) {
    if (!cov) return;
    for (size_t i = 0; cov->names && i < cov->ngraphs; i++) free(cov->names[i]);
    for (size_t i = 0; cov->targets && i < cov->ntargets; i++) free(cov->targets[i]);
    free(cov->names);
    free(cov->targets);
    free(cov->keys);
    free(cov->carried);
    free(cov->manifest);
    free(cov);
}

/* One string of a covers record (length already read): 1..max bytes, no NUL, copied. */
static char *covers_str(kc_reader *r, size_t len, size_t max) {
    const uint8_t *p = kc_rd_bytes(r, len);
    if (r->bad || len == 0 || len > max || memchr(p, 0, len)) return NULL;
    char *s = kc_malloc(len + 1);
    if (s) memcpy(s, p, len), s[len] = '\0';
    return s;
}

/* Read a covers record of exactly `len` bytes, strictly ([Note: sizes]: every count bounded by
 * the bytes left before anything is allocated).  NULL with the reason set (KC_ECORRUPT/ENOMEM). */
static kc_bundle_coverage *covers_read(const char *path, const uint8_t *p, size_t len, int *rc) {
    kc_reader r = kc_reader_make(p, len);
    kc_bundle_coverage *cv = kc_calloc(1, sizeof *cv);
    const char *why = NULL;
    if (!cv) return *rc = kc_err(KC_ENOMEM, "import: out of memory"), NULL;
    uint16_t ml = kc_rd_next_u16(&r);
    if (!(cv->manifest = covers_str(&r, ml, COV_STR_MAX))) why = "its manifest's name";
    uint16_t nt = why ? 0 : kc_rd_next_u16(&r);
    if (!why && (r.bad || nt == 0 || nt > KC_BUNDLE_MAX_TARGETS || nt > r.left / 2)) why = "its target count";
    if (!why && !(cv->targets = kc_calloc(nt, sizeof *cv->targets))) why = "memory";
    for (uint16_t i = 0; !why && i < nt; i++, cv->ntargets++) {
        const uint8_t *l = kc_rd_bytes(&r, 1);
        kc_target t;
        if (r.bad || !(cv->targets[i] = covers_str(&r, *l, KC_VARIANT_MAX)) || kc_target_parse(cv->targets[i], &t) != KC_OK)
            why = "a target";
        for (uint16_t k = 0; !why && k < i; k++)
            if (strcmp(cv->targets[k], cv->targets[i]) == 0) why = "a target named twice";
        if (why) cv->ntargets++; /* free what was copied */
    }
    uint32_t ng = why ? 0 : kc_rd_next_u32(&r);
    if (!why && (r.bad || ng == 0 || ng > KC_BUNDLE_MAX_GRAPHS || ng > r.left / 19)) why = "its graph count";
    if (!why && (!(cv->names = kc_calloc(ng, sizeof *cv->names)) || !(cv->keys = kc_calloc(ng, sizeof *cv->keys)) ||
                 !(cv->carried = kc_calloc((size_t)ng * nt, 1))))
        why = "memory";
    for (uint32_t i = 0; !why && i < ng; i++, cv->ngraphs++) {
        const uint8_t *k = kc_rd_bytes(&r, 16);
        if (!r.bad) memcpy(cv->keys[i].bytes, k, 16);
        uint16_t nl = kc_rd_next_u16(&r);
        if (r.bad || !(cv->names[i] = covers_str(&r, nl, COV_STR_MAX))) why = "a graph", cv->ngraphs++;
    }
    if (!why && (r.bad || r.left)) why = "its length";
    if (!why) return cv;
    kc_bundle_coverage_free(cv);
    *rc = strcmp(why, "memory") == 0 ? kc_err(KC_ENOMEM, "import: out of memory")
                                     : BAD(path, "its coverage record is malformed (%s)", why);
    return NULL;
}

/* ---- profiles record (v3: the grammar's `profiles`, in bundle.h) ---- */

/* Profiles, each a pointer and a length (export: its own copy; import: into the bundle). */
typedef struct prof_list {
    const uint8_t **p;
    size_t *len;
    size_t n, cap;
} prof_list;

static void prof_list_free(prof_list *l, int owned) {
    for (size_t i = 0; owned && i < l->n; i++) free((void *)l->p[i]);
    free(l->p);
    free(l->len);
    memset(l, 0, sizeof *l);
}

static int prof_add(prof_list *l, const uint8_t *p, size_t len) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        const uint8_t **np = kc_realloc(l->p, cap * sizeof *np);
        if (np) l->p = np;
        size_t *nl = np ? kc_realloc(l->len, cap * sizeof *nl) : NULL;
        if (!nl) return kc_err(KC_ENOMEM, "out of memory");
        l->len = nl, l->cap = cap;
    }
    l->p[l->n] = p, l->len[l->n++] = len;
    return KC_OK;
}

/* kc_site_profile_foreach's callback: a copy of each sound local profile. */
static int prof_collect(const void *data, size_t len, void *ctx) {
    prof_list *l = ctx;
    if (l->n >= KC_BUNDLE_MAX_PROFILES) return kc_err(KC_EINVAL, "export: more than %d site profiles", KC_BUNDLE_MAX_PROFILES);
    uint8_t *c = kc_malloc(len ? len : 1);
    if (!c) return kc_err(KC_ENOMEM, "export: out of memory");
    memcpy(c, data, len);
    int rc = prof_add(l, c, len);
    if (rc) free(c);
    return rc;
}

/* Read a profiles record of exactly `len` bytes, strictly: a count (1..KC_BUNDLE_MAX_PROFILES,
 * bounded by the bytes left), each profile sound (kc_site_profile_check), no site twice.  The
 * list points into `p`.  KC_ECORRUPT with the reason (KC_ENOMEM). */
static int profiles_read(const char *path, const uint8_t *p, size_t len, prof_list *out) {
    kc_reader r = kc_reader_make(p, len);
    uint32_t n = kc_rd_next_u32(&r);
    if (r.bad || n == 0 || n > KC_BUNDLE_MAX_PROFILES || n > r.left / 2) return BAD(path, "its profiles record is malformed (its count)");
    char (*sites)[KC_CACHE_PROFILE_NAME_MAX + 1] = kc_calloc(n, sizeof *sites);
    if (!sites) return kc_err(KC_ENOMEM, "import: out of memory");
    int rc = KC_OK;
    for (uint32_t i = 0; i < n && !rc; i++) {
        uint16_t pl = kc_rd_next_u16(&r);
        const uint8_t *b = kc_rd_bytes(&r, pl);
        if (r.bad || pl == 0) rc = BAD(path, "its profiles record is malformed (profile %u runs past it)", i);
        else if (kc_cache_profile_parse_(b, pl, sites[i], NULL) != KC_OK)
            rc = BAD(path, "site profile %u: %s", i, kc_error_last()->message);
        for (uint32_t k = 0; !rc && k < i; k++)
            if (strcmp(sites[k], sites[i]) == 0) rc = BAD(path, "the profile of site '%s' appears twice", sites[i]);
        if (!rc) rc = prof_add(out, b, pl);
    }
    if (!rc && r.left) rc = BAD(path, "its profiles record is malformed (its length)");
    free(sites);
    if (rc) prof_list_free(out, 0);
    return rc;
}

/* ---- export ---- */

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
    if ((rc = kc_entry_decode_as(&e, data, it->len, key, variant)) == KC_OK) rc = item_read(it, e);
    kc_entry_free(e);
    if (rc == KC_OK) return l->n++, KC_OK;
    int v = kc_entry_peek_version(data, it->len);
    if (rc == KC_ECORRUPT && v > 0 && v != KC_ENTRY_FORMAT_VERSION) rc = kc_err(KC_MISS, "%s is of format v%d", name, v);
    else if (rc == KC_ECORRUPT) kc_local_quarantine(kc_cache_local_(c), name);
    ex_item_free(it);
    return rc;
}

/* The walk keeps the selected graph entries and every unit record; images follow the graphs. */
static int export_item(const kc_cache_item *it, void *ctx) {
    ex_ctx *x = ctx;
    int kind = strcmp(it->variant, KC_VARIANT_IMAGE) == 0 ? KIND_IMAGE
               : strcmp(it->variant, KC_VARIANT_UNIT) == 0 ? KIND_UNIT : KIND_GRAPH;
    if (kind == KIND_IMAGE || (kind == KIND_GRAPH && !selected(x->f, it))) return 0;
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    int rc = ex_load(x->c, &x->kinds[kind], name, &it->key, it->variant);
    if (rc == KC_OK || rc == KC_MISS || rc == KC_ECORRUPT) return 0; /* removed meanwhile, older, corrupt: left out */
    return x->rc = rc, 1;
}

typedef struct ex_use {
    kc_image_ref ref;   /* first: ref_cmp orders these */
    const char *graph;  /* the name of a graph that refers to it */
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
    qsort(u, n, sizeof *u, ref_cmp);
    int rc = KC_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        char name[KC_NAME_MAX + 1];
        kc_store_name(&u[i].ref.id, KC_VARIANT_IMAGE, name);
        const item *last = im->n ? &im->v[im->n - 1] : NULL;
        if (!last || memcmp(last->ref.id.bytes, u[i].ref.id.bytes, 16) != 0) { /* not fetched for an earlier graph */
            rc = ex_load(x->c, im, name, &u[i].ref.id, KC_VARIANT_IMAGE);
            if (rc == KC_MISS)
                rc = kc_err(KC_MISS, "graph %s refers to image %s, which the cache does not hold; " EX_FIX,
                            u[i].graph, name);
            else if (rc == KC_ECORRUPT)
                rc = kc_err_prefix(rc, "graph %s refers to image %s, which is corrupt and was moved to "
                                   "quarantine; " EX_FIX ": ", u[i].graph, name);
            last = rc ? NULL : &im->v[im->n - 1];
        }
        if (last && !kc_image_ref_equal(&last->ref, &u[i].ref))
            rc = kc_err(KC_ECORRUPT, "graph %s refers to image %s, which is not the image it describes (%s %s, "
                        "%llu bytes; the graph says %s %s, %llu bytes); " EX_FIX, u[i].graph, name, last->ref.target,
                        last->ref.is_ptx ? "PTX" : "cubin", (unsigned long long)last->ref.len, u[i].ref.target,
                        u[i].ref.is_ptx ? "PTX" : "cubin", (unsigned long long)u[i].ref.len);
    }
    free(u);
    return rc;
}

/* Keep the unit records whose image the bundle carries (the same reference); drop the others. */
static void ex_units(ex_ctx *x) {
    ex_list *un = &x->kinds[KIND_UNIT], *im = &x->kinds[KIND_IMAGE];
    size_t kept = 0;
    for (size_t i = 0; i < un->n; i++) {
        const item *hit = im->n ? bsearch(&un->v[i], im->v, im->n, sizeof *im->v, by_id) : NULL;
        if (hit && kc_image_ref_equal(&hit->ref, &un->v[i].ref)) un->v[kept++] = un->v[i];
        else ex_item_free(&un->v[i]);
    }
    un->n = kept;
}

int kc_bundle_export(kc_cache *c, const char *path, const kc_bundle_filter *filter, kc_bundle_report *out) {
    return kc_bundle_export_covering(c, path, filter, NULL, out);
}

int kc_bundle_export_covering(kc_cache *c, const char *path, const kc_bundle_filter *filter,
                              const kc_bundle_covers *covers, kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_export: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    if (!kc_cache_local_(c)) return kc_err(KC_EREADONLY, "the cache is disabled");
    ex_ctx x = {.c = c, .f = filter, .rc = KC_OK};
    int rc = kc_cache_foreach(c, export_item, &x);
    if (x.rc) rc = x.rc;
    if (rc == KC_OK) rc = ex_images(&x);
    if (rc == KC_OK) ex_units(&x);
    prof_list prof = {0};
    if (rc == KC_OK) rc = kc_cache_profile_foreach_(c, prof_collect, &prof);
    int version = prof.n ? 3 : covers ? 2 : 1; /* no profiles: v1 or v2 byte for byte as before */
    kc_buf content = {0};
    uint8_t *file = NULL;
    kc_bundle_report rep;
    memset(&rep, 0, sizeof rep);
    if (rc == KC_OK) {
        /* Images, unit records, graph entries; each kind in name order: the same cache gives the same bundle. */
        for (int k = 0; k < NKINDS; k++)
            if (x.kinds[k].n) qsort(x.kinds[k].v, x.kinds[k].n, sizeof *x.kinds[k].v, by_name);
        uint64_t off = 0;
        for (int k = 0; k < NKINDS; k++)
            for (size_t i = 0; i < x.kinds[k].n; i++) {
                const item *it = &x.kinds[k].v[i];
                size_t nl = strlen(it->name);
                kc_buf_put_u16(&content, (uint16_t)nl);
                kc_buf_put(&content, it->name, nl);
                kc_buf_put_u64(&content, off);
                kc_buf_put_u64(&content, it->len);
                kc_buf_put_u64(&content, XXH3_64bits(it->data, it->len));
                off += it->len;
                report_add(&rep, k, it->len);
            }
        for (int k = 0; k < NKINDS; k++)
            for (size_t i = 0; i < x.kinds[k].n; i++) kc_buf_put(&content, x.kinds[k].v[i].data, x.kinds[k].v[i].len);
        size_t at = content.len;
        if (version == 3) kc_buf_put_u32(&content, 0); /* the covers record's length, set below */
        if (covers) rc = covers_put(&content, covers);
        if (version == 3 && !content.failed) kc_wr_u32(content.data + at, (uint32_t)(content.len - at - 4));
        if (version == 3) {
            kc_buf_put_u32(&content, (uint32_t)prof.n);
            for (size_t i = 0; i < prof.n; i++) {
                kc_buf_put_u16(&content, (uint16_t)prof.len[i]);
                kc_buf_put(&content, prof.p[i], prof.len[i]);
            }
            rep.profiles = prof.n;
        }
        if (rc == KC_OK && content.failed) rc = kc_err(KC_ENOMEM, "export: out of memory");
        else if (rc == KC_OK && (content.len > KC_BUNDLE_MAX_BYTES || rep.entries > UINT32_MAX))
            rc = kc_err(KC_EINVAL, "bundle over the %llu-byte cap", (unsigned long long)KC_BUNDLE_MAX_BYTES);
    }
    if (rc == KC_OK) {
        size_t bound = ZSTD_compressBound(content.len), sbound = stored_frame_bound(content.len);
        if (sbound > bound) bound = sbound;
        file = kc_malloc(HEADER + bound);
        if (!file) rc = kc_err(KC_ENOMEM, "export: out of memory");
        size_t z = file ? ZSTD_compress(file + HEADER, bound, content.data, content.len, 9) : 0;
        if (!rc && ZSTD_isError(z)) rc = kc_err(KC_ERROR, "export: zstd: %s", ZSTD_getErrorName(z));
        if (!rc && !ratio_ok(content.len, z)) z = stored_frame(file + HEADER, content.data, content.len);
        if (!rc) {
            memcpy(file, MAGIC, 8);
            kc_wr_u16(file + 8, (uint16_t)version);
            kc_wr_u16(file + 10, 0);
            kc_wr_u32(file + 12, (uint32_t)rep.entries);
            kc_wr_u64(file + 16, content.len);
            kc_wr_u64(file + 24, z);
            kc_wr_u64(file + 32, XXH3_64bits(content.data, content.len));
            kc_wr_u64(file + 40, XXH3_64bits(file, 40));
            rc = kc_fs_write_atomic(path, file, HEADER + z);
        }
    }
    if (rc == KC_OK && out) *out = rep;
    for (int k = 0; k < NKINDS; k++) {
        for (size_t i = 0; i < x.kinds[k].n; i++) ex_item_free(&x.kinds[k].v[i]);
        free(x.kinds[k].v);
    }
    prof_list_free(&prof, 1);
    kc_buf_free(&content);
    free(file);
    return rc;
}

/* ---- import ---- */

/* A bundle verified: its items point into `content`; `images` are its image items by id. */
typedef struct bundle_in {
    uint8_t *content;
    item *items;
    size_t n;
    item **images;
    size_t nimages;
    prof_list prof; /* v3: the site profiles, pointing into content */
} bundle_in;

static void in_free(bundle_in *b) {
    for (size_t i = 0; b->items && i < b->n; i++) free(b->items[i].refs);
    free(b->items);
    free(b->images);
    free(b->content);
    prof_list_free(&b->prof, 0);
}

/* The bundle's image of id `id`, or NULL. */
static const item *in_image(const bundle_in *b, const kc_key *id) {
    item k, *kp = &k;
    k.ref.id = *id;
    item **hit = b->nimages ? bsearch(&kp, b->images, b->nimages, sizeof *b->images, by_id_ptr) : NULL;
    return hit ? *hit : NULL;
}

/* Index the bundle's images; every reference to one of them must be that image. */
static int in_index(const char *path, bundle_in *b) {
    if (!(b->images = kc_calloc(b->n ? b->n : 1, sizeof *b->images))) return kc_err(KC_ENOMEM, "import: out of memory");
    for (size_t i = 0; i < b->n; i++)
        if (b->items[i].kind == KIND_IMAGE) b->images[b->nimages++] = &b->items[i];
    qsort(b->images, b->nimages, sizeof *b->images, by_id_ptr); /* ids are distinct: names are */
    for (size_t i = 0; i < b->n; i++) {
        size_t nr;
        const kc_image_ref *r = item_refs(&b->items[i], &nr);
        for (size_t k = 0; k < nr; k++) {
            const item *img = in_image(b, &r[k].id);
            if (img && !kc_image_ref_equal(&img->ref, &r[k]))
                return BAD(path, "entry '%s' refers to image %s, which is not the image it describes", b->items[i].name,
                           img->name);
        }
    }
    return KC_OK;
}

static int by_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* Phase one: everything verified, nothing written.  *out owns the bytes its items point into. */
static int verify(const char *path, const kc_trust *trust, bundle_in *out, bool *mac_refused,
                  kc_bundle_coverage **cov) {
    if (cov) *cov = NULL;
    void *file;
    size_t flen;
    int rc = kc_fs_read_input(path, KC_BUNDLE_MAX_BYTES + HEADER, &file, &flen, NULL);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "bundle '%s': no such file", path);
    if (rc) return rc;
    const uint8_t *h = file;
    uint8_t *content = NULL;
    item *items = NULL;
    struct toc_row { uint64_t off, size, sum; } *toc = NULL;
    const char **order = NULL;
    if (flen < HEADER) { rc = BAD(path, "%zu bytes is shorter than its header (truncated)", flen); goto fail; }
    if (memcmp(h, MAGIC, 8) != 0) { rc = BAD(path, "not a kcache bundle (bad magic)"); goto fail; }
    if (XXH3_64bits(h, 40) != kc_rd_u64(h + 40)) { rc = BAD(path, "header checksum mismatch"); goto fail; }
    uint16_t version = kc_rd_u16(h + 8);
    if (version < 1 || version > 3 || kc_rd_u16(h + 10) != 0) { rc = BAD(path, "format version %u is not supported", kc_rd_u16(h + 8)); goto fail; }
    uint32_t count = kc_rd_u32(h + 12);
    uint64_t raw = kc_rd_u64(h + 16), stored = kc_rd_u64(h + 24);
    if (raw > KC_BUNDLE_MAX_BYTES || count > raw / 27 + 1) { rc = BAD(path, "implausible sizes in its header"); goto fail; }
    if (stored != flen - HEADER) {
        rc = BAD(path, "%zu payload bytes present, header says %llu (truncated or padded)", flen - HEADER, (unsigned long long)stored);
        goto fail;
    }
    if (!ratio_ok(raw, stored)) { /* before anything is allocated or inflated */
        rc = BAD(path, "%llu payload bytes declare %llu, past the compression ratio cap of %u (a decompression bomb?)",
                 (unsigned long long)stored, (unsigned long long)raw, KC_BUNDLE_MAX_RATIO);
        goto fail;
    }
    content = kc_malloc(raw ? (size_t)raw : 1);
    if (!content) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    unsigned long long fcs = ZSTD_getFrameContentSize(h + HEADER, (size_t)stored);
    size_t fsz = ZSTD_findFrameCompressedSize(h + HEADER, (size_t)stored);
    size_t got = (fcs == raw && !ZSTD_isError(fsz) && fsz == stored)
                     ? ZSTD_decompress(content, (size_t)raw, h + HEADER, (size_t)stored) : (size_t)-1;
    if (ZSTD_isError(got) || got != raw) { rc = BAD(path, "payload does not decompress to its length"); goto fail; }
    if (XXH3_64bits(content, (size_t)raw) != kc_rd_u64(h + 32)) { rc = BAD(path, "payload checksum mismatch"); goto fail; }
    items = kc_calloc(count ? count : 1, sizeof *items);
    if (!items) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    kc_reader r = kc_reader_make(content, (size_t)raw);
    uint64_t expect = 0;
    toc = kc_calloc(count ? count : 1, sizeof *toc);
    if (!toc) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = kc_rd_next_u16(&r);
        const uint8_t *nm = kc_rd_bytes(&r, nl);
        toc[i].off = kc_rd_next_u64(&r);
        toc[i].size = kc_rd_next_u64(&r);
        toc[i].sum = kc_rd_next_u64(&r);
        if (r.bad) { rc = BAD(path, "table of contents is truncated"); goto fail; }
        if (nl == 0 || nl > KC_NAME_MAX || memchr(nm, 0, nl)) { rc = kc_err(KC_EPERM, "bundle '%s': entry %u has an invalid name", path, i); goto fail; }
        memcpy(items[i].name, nm, nl);
        items[i].name[nl] = '\0';
        if (kc_store_name_check(items[i].name) != KC_OK) {
            rc = kc_err(KC_EPERM, "bundle '%s': entry %u is named '%s', not <key>.<variant>: refused", path, i, items[i].name);
            goto fail;
        }
        if (toc[i].off != expect) { rc = BAD(path, "entry %u is out of place", i); goto fail; }
        if (toc[i].size > KC_ENTRY_MAX_BYTES || toc[i].size > r.left - expect) { /* the bytes after the toc; expect ≤ r.left: no wrap */
            rc = BAD(path, "entry %u's size %llu is over the cap or runs past the bundle", i, (unsigned long long)toc[i].size);
            goto fail;
        }
        expect += toc[i].size;
    }
    if (version == 1 && expect != r.left) { rc = BAD(path, "entries do not fill the bundle"); goto fail; }
    if (version == 2 && expect >= r.left) { rc = BAD(path, "format v2 without its coverage record"); goto fail; }
    if (version == 3 && r.left - expect < 8) { rc = BAD(path, "format v3 without its profiles record"); goto fail; }

    /* A name twice: sorted copies side by side (n log n; comparing each with every earlier one
     * was quadratic in the count). */
    order = kc_calloc(count ? count : 1, sizeof *order);
    if (!order) { rc = kc_err(KC_ENOMEM, "import: out of memory"); goto fail; }
    for (uint32_t i = 0; i < count; i++) order[i] = items[i].name;
    qsort(order, count, sizeof *order, by_str);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(order[i - 1], order[i]) == 0) { rc = BAD(path, "'%s' appears twice", order[i]); goto fail; }
    for (uint32_t i = 0; i < count; i++) {
        items[i].data = r.p + toc[i].off;
        items[i].len = (size_t)toc[i].size;
        if (XXH3_64bits(items[i].data, items[i].len) != toc[i].sum) { rc = BAD(path, "entry '%s' checksum mismatch", items[i].name); goto fail; }
        if (kc_trust_checks(trust) && (rc = kc_trust_check(trust, items[i].data, items[i].len))) { /* a MAC, or a trusted signature */
            if (rc == KC_EPERM) rc = kc_err(KC_EPERM, "bundle '%s': entry '%s' refused: %s", path, items[i].name,
                                            kc_error_last()->message);
            *mac_refused = rc == KC_EPERM; /* only this counts as mac_rejected, not a name refused (also EPERM) */
            goto fail;
        }
        /* The one identity check (kc_entry_decode_as): the entry holds the key and variant its name says. */
        kc_key want;
        char hex[KC_KEY_HEX_LEN + 1];
        memcpy(hex, items[i].name, KC_KEY_HEX_LEN); /* the name passed kc_store_name_check */
        hex[KC_KEY_HEX_LEN] = '\0';
        kc_entry *e = NULL;
        if ((rc = kc_key_from_hex(&want, hex)) == KC_OK)
            rc = kc_entry_decode_as(&e, items[i].data, items[i].len, &want, items[i].name + KC_KEY_HEX_LEN + 1);
        if (rc == KC_OK) rc = item_read(&items[i], e);
        kc_entry_free(e);
        if (rc) {
            if (rc != KC_ENOMEM) rc = BAD(path, "entry '%s': %s", items[i].name, kc_error_last()->message);
            goto fail;
        }
    }
    kc_bundle_coverage *cv = NULL; /* v2: the rest of the content after the entries; v3: a covers record's length first */
    size_t clen = r.left - (size_t)expect;
    prof_list prof = {0};
    if (version == 3) {
        clen = kc_rd_u32(r.p + expect);
        if (clen > r.left - (size_t)expect - 4 - 4) { rc = BAD(path, "its coverage record runs past the bundle"); goto fail; }
        expect += 4;
    }
    if ((version == 2 || (version == 3 && clen)) && !(cv = covers_read(path, r.p + expect, clen, &rc))) goto fail;
    if (version == 3 && (rc = profiles_read(path, r.p + expect + clen, r.left - (size_t)expect - clen, &prof))) {
        kc_bundle_coverage_free(cv);
        goto fail;
    }
    if (cov) *cov = cv;
    else kc_bundle_coverage_free(cv);
    free(toc);
    free(order);
    free(file);
    *out = (bundle_in){content, items, count, NULL, 0, prof};
    if ((rc = in_index(path, out))) {
        in_free(out);
        if (cov) kc_bundle_coverage_free(*cov), *cov = NULL;
    }
    return rc;
fail:
    free(toc);
    free(order);
    free(file);
    for (uint32_t i = 0; items && i < count; i++) free(items[i].refs);
    free(content);
    free(items);
    return rc;
}

/* The images outside the bundle that its entries refer to, each checked once in the cache. */
typedef struct in_local {
    kc_image_ref *refs; /* distinct, in ref_cmp order */
    uint8_t *ok;        /* refs[i] is in the cache, whole (checked in full) and the image described */
    size_t n;
} in_local;

static int in_local_ok(kc_local *l, const kc_image_ref *ref) {
    char name[KC_NAME_MAX + 1];
    kc_store_name(&ref->id, KC_VARIANT_IMAGE, name);
    void *data;
    size_t len;
    if (!l || kc_local_read(l, name, &data, &len) != KC_OK) return 0;
    kc_entry *e;
    int ok = kc_entry_decode_as(&e, data, len, &ref->id, KC_VARIANT_IMAGE) == KC_OK &&
             kc_image_entry_read(e, ref, 1, NULL, NULL, NULL) == KC_OK;
    kc_entry_free(e);
    free(data);
    return ok;
}

static int in_local_find(in_local *m, kc_local *l, const bundle_in *b) {
    size_t cap = 1;
    for (size_t i = 0; i < b->n; i++) cap += b->items[i].nrefs + 1;
    m->refs = kc_calloc(cap, sizeof *m->refs);
    m->ok = kc_calloc(cap, 1);
    if (!m->refs || !m->ok) return kc_err(KC_ENOMEM, "import: out of memory");
    for (size_t i = 0; i < b->n; i++) {
        size_t nr;
        const kc_image_ref *r = item_refs(&b->items[i], &nr);
        for (size_t k = 0; k < nr; k++)
            if (!in_image(b, &r[k].id)) m->refs[m->n++] = r[k];
    }
    qsort(m->refs, m->n, sizeof *m->refs, ref_cmp);
    size_t u = 0;
    for (size_t i = 0; i < m->n; i++)
        if (u == 0 || ref_cmp(&m->refs[u - 1], &m->refs[i]) != 0) m->refs[u++] = m->refs[i];
    for (m->n = u, u = 0; u < m->n; u++) m->ok[u] = (uint8_t)in_local_ok(l, &m->refs[u]);
    return KC_OK;
}

/* The first image `it` refers to that is neither in the bundle nor in the cache, or NULL. */
static const kc_image_ref *in_lacks(const in_local *m, const bundle_in *b, const item *it) {
    size_t nr;
    const kc_image_ref *r = item_refs(it, &nr);
    for (size_t k = 0; k < nr; k++) {
        if (in_image(b, &r[k].id)) continue; /* the very image: in_index checked */
        const kc_image_ref *hit = bsearch(&r[k], m->refs, m->n, sizeof *m->refs, ref_cmp);
        if (!hit || !m->ok[hit - m->refs]) return &r[k];
    }
    return NULL;
}

static void in_written(kc_bundle_report *rep, const item *it) {
    rep->written++;
    *(it->kind == KIND_IMAGE ? &rep->images_written : it->kind == KIND_UNIT ? &rep->units_written
                                                                              : &rep->graphs_written) += 1;
}

/* Put one entry in the import's batch unless the cache holds the same bytes (queued[*nq] then);
 * a dry run only counts. */
static int in_put(kc_local *l, kc_local_batch *wb, const item *it, int dry_run, kc_bundle_report *rep,
                  const item **queued, size_t *nq, const kc_trust *trust, const char *path) {
    void *old;
    size_t olen;
    if (l && kc_local_read(l, it->name, &old, &olen) == KC_OK) {
        int same = olen == it->len && memcmp(old, it->data, olen) == 0;
        free(old);
        if (same) return rep->unchanged++, KC_OK;
    }
    char who[KC_TRUST_WHO_MAX], origin[KC_PROV_SOURCE_MAX + 64]; /* [Note: provenance record] in local.c */
    kc_trust_verifier(trust, it->data, it->len, who); /* the bytes verify() checked */
    kc_provenance_format(origin, sizeof origin, KC_PROV_IMPORTED, strrchr(path, '/') ? strrchr(path, '/') + 1 : path, who);
    int rc = dry_run ? KC_OK : kc_local_batch_put(wb, it->name, it->data, it->len, 0400, origin) /* [Note: provenance] */;
    if (rc) return rc;
    if (dry_run) in_written(rep, it);
    else queued[(*nq)++] = it; /* counted once the batch's commit has renamed it */
    return KC_OK;
}

int kc_bundle_import(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_import: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    bundle_in b;
    memset(&b, 0, sizeof b); /* GCC -O3 cannot see verify() fills it on KC_OK */
    bool mac_refused = false;
    int rc = verify(path, kc_cache_trust_(c), &b, &mac_refused, NULL);
    if (mac_refused) kc_cache_count(c, NULL, KC_STAT_MAC_REJECTED, 1);
    if (rc) return rc;
    kc_bundle_report rep;
    memset(&rep, 0, sizeof rep);
    for (size_t i = 0; i < b.n; i++) report_add(&rep, b.items[i].kind, b.items[i].len);
    kc_local *l = kc_cache_local_(c);
    if (!dry_run && (!l || kc_cache_mode(c) != KC_CACHE_READWRITE)) rc = kc_err(KC_EREADONLY, "the cache is read-only or disabled");
    in_local m = {NULL, NULL, 0};
    if (!rc) rc = in_local_find(&m, l, &b);
    /* Images, unit records, graph entries, in one batch of the store ([Note: batched puts] in
     * store/local.c): every temporary written, one sync, the images renamed, one sync (the fence),
     * the referrers renamed, one sync — no graph lands before its images are durable.  An entry whose
     * image is nowhere is left out, never written dangling. */
    kc_local_batch *wb = NULL;
    const item **queued = NULL; /* what the batch holds, in its order */
    size_t nq = 0;
    if (!rc && !dry_run && !(queued = kc_calloc(b.n ? b.n : 1, sizeof *queued))) rc = kc_err(KC_ENOMEM, "import: out of memory");
    if (!rc && !dry_run) rc = kc_local_batch_begin(l, &wb);
    for (int k = 0; k < NKINDS && !rc; k++) {
        for (size_t i = 0; i < b.n && !rc; i++) {
            item *it = &b.items[i];
            const kc_image_ref *lack = it->kind == k ? in_lacks(&m, &b, it) : NULL;
            if (lack) {
                char hex[KC_KEY_HEX_LEN + 1];
                kc_key_to_hex(&lack->id, hex);
                kc_log(KC_LOG_STORE, "import %s: %s left out: its image %s.img is neither in the bundle nor in the "
                       "cache", path, it->name, hex);
                if (!rep.graphs_skipped && !rep.units_skipped)
                    snprintf(rep.first_skipped, sizeof rep.first_skipped, "%s", it->name);
                *(k == KIND_GRAPH ? &rep.graphs_skipped : &rep.units_skipped) += 1;
                it->skipped = 1;
            } else if (it->kind == k) {
                rc = in_put(l, wb, it, dry_run, &rep, queued, &nq, kc_cache_trust_(c), path);
            }
        }
        if (k == KIND_IMAGE) kc_local_batch_fence(wb);
    }
    size_t landed = 0;
    if (wb && rc) kc_local_batch_abort(wb);
    else if (wb) rc = kc_local_batch_commit(wb, &landed);
    for (size_t i = 0; i < landed; i++) in_written(&rep, queued[i]);
    if (rc && landed < nq && landed)
        kc_err_prefix(rc, "bundle '%s': import stopped at '%s' (%zu of the %zu it had to write) after writing %llu "
                      "(they stay in the cache; importing again writes the rest)", path, queued[landed]->name,
                      landed + 1, nq, (unsigned long long)rep.written);
    else if (rc && landed)
        kc_err_prefix(rc, "bundle '%s': all %llu entries written, but not known to be durable (importing again "
                      "writes any a crash loses)", path, (unsigned long long)rep.written);
    free(queued);
    /* The toolchains whose entries are now here, for a host without NVRTC (cache/record.h). */
    for (size_t i = 0; !dry_run && !rc && i < b.n; i++) {
        kc_entry *e;
        if (b.items[i].kind == KIND_IMAGE || b.items[i].skipped) continue;
        if (kc_entry_decode(&e, b.items[i].data, b.items[i].len) != KC_OK) continue;
        kc_cache_toolchain_note_(c, kc_entry_toolchain(e));
        kc_cache_toolkit_note_(c, kc_entry_toolchain(e));
        kc_entry_free(e);
    }
    /* The site profiles (v3), each merged into the local one: a union, under the site's own lock. */
    for (size_t i = 0; !rc && i < b.prof.n; i++) {
        int changed = 0;
        rep.profiles++;
        if ((rc = kc_cache_profile_merge_(c, b.prof.p[i], b.prof.len[i], dry_run, &changed)))
            kc_err_prefix(rc, "bundle '%s': its entries are imported, but a site profile is not", path);
        rep.profiles_written += (uint64_t)changed;
    }
    free(m.refs);
    free(m.ok);
    in_free(&b);
    if (out) *out = rep;
    return rc;
}

int kc_bundle_coverage_read(const char *path, kc_bundle_coverage **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_bundle_coverage_read: out is NULL");
    *out = NULL;
    if (!path) return kc_err(KC_EINVAL, "kc_bundle_coverage_read: NULL path");
    bundle_in b;
    memset(&b, 0, sizeof b);
    bool mac_refused = false;
    kc_bundle_coverage *cv = NULL;
    int rc = verify(path, NULL, &b, &mac_refused, &cv);
    if (rc) return rc;
    if (!cv) {
        in_free(&b);
        return kc_err(KC_MISS, "bundle '%s' records no coverage (format v1, or exported without a manifest)", path);
    }
    /* Which graph x target the bundle carries: a graph entry named "<key>.<target>". */
    for (size_t g = 0; g < cv->ngraphs; g++)
        for (size_t t = 0; t < cv->ntargets; t++) {
            char name[KC_NAME_MAX + 1];
            kc_store_name(&cv->keys[g], cv->targets[t], name);
            int have = 0;
            for (size_t i = 0; i < b.n && !have; i++) have = b.items[i].kind == KIND_GRAPH && strcmp(b.items[i].name, name) == 0;
            cv->carried[g * cv->ntargets + t] = (unsigned char)have;
            cv->missing += !have;
        }
    in_free(&b);
    *out = cv;
    return KC_OK;
}
