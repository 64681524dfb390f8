/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image.c — the second level of the format ([Note: two levels] in entry.h): image objects,
 * the references a graph entry keeps in IMAGES, and compile units' records.
 *
 * The one idea: an image is named by its content.  Its reference carries two digests of the
 * same bytes — XXH3-128, the name, cheap enough to check on every read (the hit path reads one
 * image file per compile unit), and SHA-256, which a MAC or signature of the graph entry covers
 * through the reference, checked where bytes come from outside the local directory.  Every
 * reader here is as strict as the entry decoder: counts and lengths bounded before use,
 * trailing bytes an error, any defect KC_ECORRUPT.
 *
 * Callers: the graph part (writes references and records, reads them to resolve a graph's
 * images), the store's gc and verify (follow references), bundles, tools.  Must not: know what
 * a graph or a kernel is beyond a name expression and its lowered name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/crypto.h"
#include "../common/internal.h"
#include "entry_internal.h"
#include "kcache/entry.h"
#include "kcache/target.h"

#define STR4_MAX 4096

static int sha256(const void *bytes, size_t len, uint8_t out[32]) { return kc_sha256(bytes, len, out); }

static void xxh128(const void *bytes, size_t len, kc_key *out) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(bytes, len));
    memcpy(out->bytes, c.digest, sizeof out->bytes);
}

int kc_image_ref_make(kc_image_ref *out, const char *target, int is_ptx, const void *bytes, size_t len) {
    if (!out || !target || !bytes) return kc_err(KC_EINVAL, "kc_image_ref_make: NULL argument");
    memset(out, 0, sizeof *out);
    int rc = kc_variant_check(target);
    if (rc) return rc;
    if (len == 0 || len > KC_SECTION_MAX_RAW) return kc_err(KC_EINVAL, "an image of %zu bytes", len);
    if (is_ptx && ((const uint8_t *)bytes)[len - 1] != 0) return kc_err(KC_EINVAL, "PTX must be stored with its NUL");
    xxh128(bytes, len, &out->id);
    if ((rc = sha256(bytes, len, out->sha256))) return rc;
    snprintf(out->target, sizeof out->target, "%s", target);
    out->is_ptx = is_ptx ? 1 : 0;
    out->len = len;
    return KC_OK;
}

int kc_image_ref_equal(const kc_image_ref *a, const kc_image_ref *b) {
    return memcmp(a->id.bytes, b->id.bytes, sizeof a->id.bytes) == 0 && memcmp(a->sha256, b->sha256, 32) == 0 &&
           strcmp(a->target, b->target) == 0 && a->is_ptx == b->is_ptx && a->len == b->len;
}

static void put_ref(kc_buf *b, const kc_image_ref *r) {
    kc_buf_put(b, r->id.bytes, 16);
    kc_buf_put(b, r->sha256, 32);
    kc_buf_put_str(b, r->target);
    kc_buf_put_u8(b, (uint8_t)r->is_ptx);
    kc_buf_put_u64(b, r->len);
}

/* Read one reference; 0 when it is malformed. */
static int get_ref(kc_reader *r, kc_image_ref *out) {
    memset(out, 0, sizeof *out);
    const uint8_t *id = kc_rd_bytes(r, 16), *sha = kc_rd_bytes(r, 32);
    uint32_t tl = kc_rd_next_u32(r);
    const uint8_t *t = kc_rd_bytes(r, tl);
    out->is_ptx = kc_rd_next_u8(r);
    out->len = kc_rd_next_u64(r);
    if (r->bad || tl == 0 || tl > KC_VARIANT_MAX || memchr(t, 0, tl) || out->is_ptx > 1 || out->len == 0 ||
        out->len > KC_SECTION_MAX_RAW)
        return 0;
    memcpy(out->id.bytes, id, 16);
    memcpy(out->sha256, sha, 32);
    memcpy(out->target, t, tl);
    out->target[tl] = '\0';
    return kc_variant_check(out->target) == KC_OK;
}

static int section_of(const kc_entry *e, kc_section_type type, const char *what, kc_reader *r) {
    const void *data;
    size_t len;
    int rc = kc_entry_section(e, type, &data, &len);
    if (rc == KC_MISS) return kc_err(KC_MISS, "the entry has no %s section", what);
    if (rc) return rc;
    *r = kc_reader_make(data, len);
    return KC_OK;
}

/* ---- image objects ---- */

uint64_t kc_image_section_len(const kc_image_ref *ref) { /* put_ref's encoding, then the bytes */
    return ref ? 16 + 32 + 4 + strlen(ref->target) + 1 + 8 + ref->len : 0;
}

int kc_image_entry_new(kc_entry **out, const kc_image_ref *ref, const void *bytes) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !ref || !bytes) return kc_err(KC_EINVAL, "kc_image_entry_new: NULL argument");
    *out = NULL;
    kc_buf b = {0};
    put_ref(&b, ref);
    kc_buf_put(&b, bytes, (size_t)ref->len);
    if (b.failed) {
        kc_buf_free(&b);
        return kc_err(KC_ENOMEM, "image: out of memory");
    }
    kc_entry *e;
    int rc = kc_entry_new(&e, &ref->id, KC_VARIANT_IMAGE);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_IMAGE, b.data, b.len);
    kc_buf_free(&b);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    *out = e;
    return KC_OK;
}

int kc_image_entry_read(const kc_entry *e, const kc_image_ref *want, int full, kc_image_ref *ref_out,
                        const void **bytes, size_t *len) {
    if (!e) return kc_err(KC_EINVAL, "kc_image_entry_read: NULL entry");
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(kc_entry_key(e), hex);
    if (strcmp(kc_entry_variant(e), KC_VARIANT_IMAGE) != 0)
        return kc_err(KC_ECORRUPT, "%s.%s is not an image", hex, kc_entry_variant(e));
    kc_reader r = {0};
    int rc = section_of(e, KC_SECTION_IMAGE, "IMAGE", &r);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "image %s: no IMAGE section", hex) : rc;
    kc_image_ref ref;
    if (!get_ref(&r, &ref)) return kc_err(KC_ECORRUPT, "image %s: malformed reference", hex);
    const uint8_t *p = kc_rd_bytes(&r, (size_t)ref.len);
    if (r.bad || r.left) return kc_err(KC_ECORRUPT, "image %s: its length is not its reference's", hex);
    if (ref.is_ptx && p[ref.len - 1] != 0) return kc_err(KC_ECORRUPT, "image %s: PTX without its NUL", hex);
    kc_key id;
    xxh128(p, (size_t)ref.len, &id);
    if (memcmp(id.bytes, ref.id.bytes, 16) != 0 || memcmp(id.bytes, kc_entry_key(e)->bytes, 16) != 0)
        return kc_err(KC_ECORRUPT, "image %s: its bytes are not its name's (XXH3-128 differs)", hex);
    if (full) {
        uint8_t sha[32];
        if ((rc = sha256(p, (size_t)ref.len, sha))) return rc;
        if (memcmp(sha, ref.sha256, 32) != 0) return kc_err(KC_ECORRUPT, "image %s: its SHA-256 differs", hex);
    }
    if (want && !kc_image_ref_equal(want, &ref))
        return kc_err(KC_ECORRUPT,
                      "image %s is not the image the graph refers to (%s %s, %llu bytes; it refers to "
                      "%s %s, %llu bytes)",
                      hex, ref.target, ref.is_ptx ? "PTX" : "cubin", (unsigned long long)ref.len, want->target,
                      want->is_ptx ? "PTX" : "cubin", (unsigned long long)want->len);
    if (ref_out) *ref_out = ref;
    if (bytes) *bytes = p;
    if (len) *len = (size_t)ref.len;
    return KC_OK;
}

/* ---- a graph entry's references ---- */

int kc_entry_set_images(kc_entry *e, const kc_image_ref *refs, size_t n) {
    if (!e || !refs || n == 0 || n > KC_IMAGES_MAX) return kc_err(KC_EINVAL, "kc_entry_set_images: bad argument");
    kc_buf b = {0};
    kc_buf_put_u32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) put_ref(&b, &refs[i]);
    int rc = b.failed ? kc_err(KC_ENOMEM, "IMAGES: out of memory")
                      : kc_entry_set_section(e, KC_SECTION_IMAGES, b.data, b.len);
    kc_buf_free(&b);
    return rc;
}

int kc_entry_images(const kc_entry *e, kc_image_ref **out, size_t *n) {
    if (out) *out = NULL; /* on every failure too */
    if (n) *n = 0;
    if (!e || !out || !n) return kc_err(KC_EINVAL, "kc_entry_images: NULL argument");
    *out = NULL;
    *n = 0;
    kc_reader r = {0};
    int rc = section_of(e, KC_SECTION_IMAGES, "IMAGES", &r);
    if (rc) return rc;
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count == 0 || count > KC_IMAGES_MAX) return kc_err(KC_ECORRUPT, "corrupt entry: IMAGES count");
    kc_image_ref *v = kc_calloc(count, sizeof *v);
    if (!v) return kc_err(KC_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < count; i++)
        if (!get_ref(&r, &v[i])) {
            free(v);
            return kc_err(KC_ECORRUPT, "corrupt entry: IMAGES reference %u is malformed", i);
        }
    if (r.left) {
        free(v);
        return kc_err(KC_ECORRUPT, "corrupt entry: bytes after the IMAGES references");
    }
    *out = v;
    *n = count;
    return KC_OK;
}

/* ---- unit records ---- */

static int str4_ok(const char *s) {
    size_t l = s ? strlen(s) : 0;
    return l >= 1 && l <= STR4_MAX;
}

int kc_unit_entry_new(kc_entry **out, const kc_key *unit_key, const kc_image_ref *ref, const char *const *exprs,
                      const char *const *lowered, size_t n) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !unit_key || !ref || !exprs || !lowered || n == 0 || n > KC_IMAGES_MAX)
        return kc_err(KC_EINVAL, "kc_unit_entry_new: bad argument");
    *out = NULL;
    kc_buf b = {0};
    put_ref(&b, ref);
    kc_buf_put_u32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        if (!str4_ok(exprs[i]) || !str4_ok(lowered[i])) {
            kc_buf_free(&b);
            return kc_err(KC_EINVAL, "kc_unit_entry_new: name %zu is empty or over %d bytes", i, STR4_MAX);
        }
        kc_buf_put_str(&b, exprs[i]);
        kc_buf_put_str(&b, lowered[i]);
    }
    if (b.failed) {
        kc_buf_free(&b);
        return kc_err(KC_ENOMEM, "unit record: out of memory");
    }
    kc_entry *e;
    int rc = kc_entry_new(&e, unit_key, KC_VARIANT_UNIT);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_UNIT, b.data, b.len);
    kc_buf_free(&b);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    *out = e;
    return KC_OK;
}

/* Walk a unit record strictly: its reference, then visit(ctx, expr, el, lowered, ll) for each name
 * in order (lengths checked, no NUL inside; a visit's non-zero status stops the walk). */
typedef int (*unit_visit)(void *ctx, const uint8_t *ex, uint32_t el, const uint8_t *lo, uint32_t ll);
static int unit_walk(const kc_entry *e, kc_image_ref *ref, unit_visit visit, void *ctx) {
    if (strcmp(kc_entry_variant(e), KC_VARIANT_UNIT) != 0) return kc_err(KC_ECORRUPT, "not a unit record");
    kc_reader r = {0};
    int rc = section_of(e, KC_SECTION_UNIT, "UNIT", &r);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "unit record without its UNIT section") : rc;
    if (!get_ref(&r, ref)) return kc_err(KC_ECORRUPT, "unit record: malformed reference");
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count == 0 || count > KC_IMAGES_MAX) return kc_err(KC_ECORRUPT, "unit record: name count");
    for (uint32_t i = 0; i < count && !rc; i++) {
        uint32_t el = kc_rd_next_u32(&r);
        const uint8_t *ex = kc_rd_bytes(&r, el);
        uint32_t ll = kc_rd_next_u32(&r);
        const uint8_t *lo = kc_rd_bytes(&r, ll);
        if (r.bad || el == 0 || el > STR4_MAX || ll == 0 || ll > STR4_MAX || memchr(ex, 0, el) || memchr(lo, 0, ll))
            return kc_err(KC_ECORRUPT, "unit record: name %u is malformed", i);
        rc = visit(ctx, ex, el, lo, ll);
    }
    if (!rc && r.left) rc = kc_err(KC_ECORRUPT, "unit record: bytes after its names");
    return rc;
}

static char *str_of(const uint8_t *b, uint32_t l) {
    char *s = kc_malloc((size_t)l + 1);
    if (s) memcpy(s, b, l), s[l] = '\0';
    return s;
}

typedef struct asked {
    const char *const *exprs;
    size_t n;
    char **lowered;
} asked;
static int take_asked(void *ctx, const uint8_t *ex, uint32_t el, const uint8_t *lo, uint32_t ll) {
    asked *a = ctx;
    for (size_t k = 0; k < a->n; k++) {
        if (a->lowered[k] || strlen(a->exprs[k]) != el || memcmp(a->exprs[k], ex, el) != 0) continue;
        if (!(a->lowered[k] = str_of(lo, ll))) return kc_err(KC_ENOMEM, "out of memory");
    }
    return KC_OK;
}

int kc_unit_entry_read(const kc_entry *e, kc_image_ref *ref_out, const char *const *exprs, size_t n,
                       char **lowered_out) {
    if (!e || (n && (!exprs || !lowered_out))) return kc_err(KC_EINVAL, "kc_unit_entry_read: NULL argument");
    for (size_t k = 0; k < n; k++) lowered_out[k] = NULL;
    kc_image_ref ref;
    asked a = {exprs, n, lowered_out};
    int rc = unit_walk(e, &ref, take_asked, &a);
    for (size_t k = 0; k < n && !rc; k++)
        if (!lowered_out[k]) rc = kc_err(KC_MISS, "the unit record has no name '%.200s'", exprs[k]);
    if (rc) {
        for (size_t k = 0; k < n; k++) free(lowered_out[k]), lowered_out[k] = NULL;
        return rc;
    }
    if (ref_out) *ref_out = ref;
    return KC_OK;
}

typedef struct listed {
    char *exprs[KC_IMAGES_MAX], *lowered[KC_IMAGES_MAX];
    size_t n;
} listed;
static int take_all(void *ctx, const uint8_t *ex, uint32_t el, const uint8_t *lo, uint32_t ll) {
    listed *l = ctx; /* at most KC_IMAGES_MAX: unit_walk bounded the count */
    l->exprs[l->n] = str_of(ex, el);
    l->lowered[l->n] = str_of(lo, ll);
    l->n++;
    return l->exprs[l->n - 1] && l->lowered[l->n - 1] ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
}

int kc_unit_entry_names_(const kc_entry *e, kc_image_ref *ref_out, char ***exprs, char ***lowered, size_t *n) {
    if (!e || !ref_out || !exprs || !lowered || !n) return kc_err(KC_EINVAL, "kc_unit_entry_names_: NULL argument");
    *exprs = *lowered = NULL;
    *n = 0;
    listed *l = kc_calloc(1, sizeof *l);
    if (!l) return kc_err(KC_ENOMEM, "out of memory");
    int rc = unit_walk(e, ref_out, take_all, l);
    char **ve = rc ? NULL : kc_malloc(l->n * sizeof *ve), **vl = rc ? NULL : kc_malloc(l->n * sizeof *vl);
    if (!rc && (!ve || !vl)) rc = kc_err(KC_ENOMEM, "out of memory");
    if (rc) {
        for (size_t i = 0; i < l->n; i++) free(l->exprs[i]), free(l->lowered[i]);
        free(ve), free(vl), free(l);
        return rc;
    }
    memcpy(ve, l->exprs, l->n * sizeof *ve);
    memcpy(vl, l->lowered, l->n * sizeof *vl);
    *exprs = ve, *lowered = vl, *n = l->n;
    free(l);
    return KC_OK;
}
