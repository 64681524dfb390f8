/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_image.c — libFuzzer target: the second level of the entry format ([Note: two levels] in
 * kcache/entry.h, src/entry/image.c): image objects (kc_image_entry_read), a graph entry's IMAGES
 * references over its KERNELS section with images attached (kc_entry_images, kc_kernels_of) and
 * unit records (kc_unit_entry_read).
 *
 * Input := mode:u8 rest
 *   mode % 3 == 0  an image "<key>.img": rest is its IMAGE section.  mode & 0x10: the harness makes
 *                  the reference's id (and the entry's key) the XXH3-128 of the bytes after the
 *                  reference, & 0x20 its SHA-256 too — so the mutations get past the digests the
 *                  fuzzer cannot forge; & 0x40: the entry's variant is "sm_80" (not an image);
 *                  & 0x80: the read checks SHA-256 (full).
 *   mode % 3 == 1  a graph entry "sm_80": rest := ilen:u16 IMAGES[ilen] KERNELS[the rest]; its
 *                  images are attached as a lookup attaches them (harness.h fz_attach).
 *   mode % 3 == 2  a unit record "<key>.unit": rest is its UNIT section; every name it holds is
 *                  asked for, and one it does not.
 * Each is built through the API, encoded and decoded by name (so the container's checksums are
 * right and kc_entry_decode_as is the read a store does).
 *
 * Invariants (abort when broken; a refusal is always a correct answer): what is read is what the
 * grammar allows (counts, lengths, targets); an image read is its reference's length and XXH3-128
 * (and SHA-256 when full), and a reference made anew from its bytes is the same; a read with the
 * reference found as `want` is taken and one with any field changed refused; what the readers
 * take, the writers write back byte for byte (kc_image_entry_new, kc_entry_set_images,
 * kc_unit_entry_new); a unit record hands each name's first lowered name, and KC_MISS with every
 * output NULL for a name it lacks.  Seeds (corpus/image/) are objects kcache writes, made by
 * tools/fuzz_seeds.sh.
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define REF_FIXED (16 + 32 + 4) /* id sha256 target_len, before the target's bytes */

static kc_entry *built(const kc_key *key, const char *variant, kc_section_type t1, const void *d1, size_t l1,
                       kc_section_type t2, const void *d2, size_t l2) {
    kc_entry *e = NULL, *back = NULL;
    if (kc_entry_new(&e, key, variant) != KC_OK) abort();
    if (kc_entry_set_section(e, t1, d1, l1) != KC_OK) abort();
    if (d2 && kc_entry_set_section(e, t2, d2, l2) != KC_OK) abort();
    kc_entry_set_created_at(e, 1);
    void *bytes;
    size_t n;
    if (kc_entry_encode(e, &bytes, &n) != KC_OK) {
        kc_entry_free(e);
        return NULL; /* out of memory only */
    }
    kc_entry_free(e);
    if (kc_entry_decode_as(&back, bytes, n, key, variant) != KC_OK) {
        fprintf(stderr, "an encoded entry does not decode: %s\n", kc_error_last()->message);
        abort();
    }
    kc_free(bytes);
    return back;
}

/* Section `type` of `e` is byte for byte `data`? */
static int same_section(const kc_entry *e, kc_section_type type, const void *data, size_t len) {
    const void *p;
    size_t l;
    return kc_entry_section(e, type, &p, &l) == KC_OK && l == len && (len == 0 || memcmp(p, data, len) == 0);
}

static void image(uint8_t mode, uint8_t *s, size_t n) {
    kc_key key;
    memset(&key, 0, sizeof key);
    if (n >= REF_FIXED) {
        uint32_t tl = fz_rd32(s + 48);
        size_t off = (size_t)REF_FIXED + (tl < 64 ? tl : 64) + 1 + 8; /* where the bytes would start */
        if (tl < 64 && off <= n) {
            if (mode & 0x10) {
                XXH128_canonical_t c;
                XXH128_canonicalFromHash(&c, XXH3_128bits(s + off, n - off));
                memcpy(s, c.digest, 16);
            }
            if (mode & 0x20) EVP_Digest(s + off, n - off, s + 16, NULL, EVP_sha256(), NULL);
        }
        memcpy(key.bytes, s, 16);
    }
    const char *variant = mode & 0x40 ? "sm_80" : KC_VARIANT_IMAGE;
    int full = mode >> 7;
    kc_entry *e = built(&key, variant, KC_SECTION_IMAGE, s, n, KC_SECTION_IMAGE, NULL, 0);
    if (!e) return;
    kc_image_ref ref;
    const void *p;
    size_t len;
    int rc = kc_image_entry_read(e, NULL, full, &ref, &p, &len);
    fz_say("kc_image_entry_read", rc);
    if (rc == KC_OK) {
        if (strcmp(variant, KC_VARIANT_IMAGE) != 0 || len != ref.len || len == 0 || len > KC_SECTION_MAX_RAW) abort();
        if (memcmp(kc_entry_key(e)->bytes, ref.id.bytes, 16) != 0) abort();
        kc_image_ref again;
        if (kc_image_ref_make(&again, ref.target, ref.is_ptx, p, len) != KC_OK) abort(); /* a valid target, PTX's NUL */
        if (memcmp(again.id.bytes, ref.id.bytes, 16) != 0) abort();
        if (full && !kc_image_ref_equal(&again, &ref)) abort();
        /* The writer writes the section read, byte for byte. */
        kc_entry *w;
        if (kc_image_entry_new(&w, &ref, p) == KC_OK) {
            if (!same_section(w, KC_SECTION_IMAGE, s, n)) abort();
            kc_entry_free(w);
        }
        /* `want`: the reference found is taken; each field changed is refused. */
        if (kc_image_entry_read(e, &ref, full, NULL, NULL, NULL) != KC_OK) abort();
        kc_image_ref w2 = ref;
        switch (n % 5) {
        case 0: w2.id.bytes[n % 16] ^= 1; break;
        case 1: w2.sha256[n % 32] ^= 1; break;
        case 2: w2.target[0] = w2.target[0] == 'x' ? 'y' : 'x'; break;
        case 3: w2.is_ptx ^= 1; break;
        case 4: w2.len ^= 1; break;
        }
        if (kc_image_entry_read(e, &w2, full, NULL, NULL, NULL) != KC_ECORRUPT) abort();
    }
    kc_entry_free(e);
}

static void graph(const uint8_t *s, size_t n) {
    if (n < 2) return;
    size_t il = (size_t)s[0] | (size_t)s[1] << 8;
    s += 2, n -= 2;
    if (il > n) il = n;
    kc_key key;
    memset(&key, 0x6b, sizeof key);
    kc_entry *e = built(&key, "sm_80", KC_SECTION_IMAGES, s, il, KC_SECTION_KERNELS, s + il, n - il);
    if (!e) return;
    kc_image_ref *refs;
    size_t nr;
    int rc = kc_entry_images(e, &refs, &nr);
    fz_say("kc_entry_images", rc);
    if (rc == KC_OK) {
        if (nr == 0 || nr > KC_IMAGES_MAX) abort();
        for (size_t i = 0; i < nr; i++)
            if (kc_variant_check(refs[i].target) != KC_OK || refs[i].is_ptx > 1 || refs[i].len == 0 ||
                refs[i].len > KC_SECTION_MAX_RAW)
                abort();
        kc_entry *w;
        if (kc_entry_new(&w, &key, "sm_80") != KC_OK) abort();
        if (kc_entry_set_images(w, refs, nr) == KC_OK && !same_section(w, KC_SECTION_IMAGES, s, il)) abort();
        kc_entry_free(w);
        free(refs);
    }
    kimg *v;
    size_t nk, nimg;
    char *strs;
    rc = kc_kernels_of(e, &v, &nk, &nimg, &strs); /* bare: no image attached */
    fz_say("kc_kernels_of (bare)", rc);
    if (rc == KC_OK) {
        for (size_t i = 0; i < nk; i++)
            if (v[i].image || v[i].image_index >= nimg || !*v[i].name || !*v[i].lowered) abort();
        free(v);
        free(strs);
    }
    fz_attach(e); /* with images, as the loader reads it; its own invariants */
    kc_entry_free(e);
}

/* The names of a UNIT section as the grammar frames them (the harness's own reading). */
typedef struct uname {
    const uint8_t *expr, *lowered;
    uint32_t el, ll;
} uname;
static size_t unit_names(const uint8_t *s, size_t n, uname *out, size_t cap) {
    if (n < REF_FIXED) return 0;
    size_t at = REF_FIXED + fz_rd32(s + 48);
    if (fz_rd32(s + 48) > 64 || at + 9 + 4 > n) return 0;
    at += 9;
    uint32_t count = fz_rd32(s + at);
    at += 4;
    size_t k = 0;
    for (uint32_t i = 0; i < count && k < cap; i++, k++) {
        if (n - at < 4) break;
        out[k].el = fz_rd32(s + at), at += 4;
        if (out[k].el > n - at) break;
        out[k].expr = s + at, at += out[k].el;
        if (n - at < 4) break;
        out[k].ll = fz_rd32(s + at), at += 4;
        if (out[k].ll > n - at) break;
        out[k].lowered = s + at, at += out[k].ll;
    }
    return k;
}

static void unit(const uint8_t *s, size_t n) {
    kc_key key;
    memset(&key, 0x75, sizeof key);
    kc_entry *e = built(&key, KC_VARIANT_UNIT, KC_SECTION_UNIT, s, n, KC_SECTION_UNIT, NULL, 0);
    if (!e) return;
    kc_image_ref ref;
    int rc = kc_unit_entry_read(e, &ref, NULL, 0, NULL);
    fz_say("kc_unit_entry_read", rc);
    if (rc != KC_OK) {
        kc_entry_free(e);
        return;
    }
    static uname names[KC_IMAGES_MAX];
    size_t k = unit_names(s, n, names, KC_IMAGES_MAX);
    if (k == 0 || kc_variant_check(ref.target) != KC_OK) abort();
    static char *exprs[KC_IMAGES_MAX + 1], *lowered[KC_IMAGES_MAX], *got[KC_IMAGES_MAX + 1];
    for (size_t i = 0; i < k; i++) {
        exprs[i] = strndup((const char *)names[i].expr, names[i].el);
        lowered[i] = strndup((const char *)names[i].lowered, names[i].ll);
        if (!exprs[i] || !lowered[i] || strlen(exprs[i]) != names[i].el || strlen(lowered[i]) != names[i].ll) abort();
    }
    /* Every name: each the lowered name of its first occurrence. */
    rc = kc_unit_entry_read(e, NULL, (const char *const *)exprs, k, got);
    if (rc == KC_OK) {
        for (size_t i = 0; i < k; i++) {
            size_t first = 0;
            while (strcmp(exprs[first], exprs[i]) != 0) first++;
            if (strcmp(got[i], lowered[first]) != 0) abort();
            free(got[i]);
        }
    } else if (rc != KC_ENOMEM) {
        abort();
    }
    /* And one more it lacks: KC_MISS, nothing handed out. */
    char absent[32] = "absent";
    for (size_t i = 0, tries = 0; i < k; i++)
        if (strcmp(exprs[i], absent) == 0) snprintf(absent, sizeof absent, "absent_%zu", ++tries), i = (size_t)-1;
    exprs[k] = absent;
    rc = kc_unit_entry_read(e, NULL, (const char *const *)exprs, k + 1, got);
    if (rc != KC_MISS && rc != KC_ENOMEM) abort();
    for (size_t i = 0; i <= k; i++)
        if (got[i]) abort();
    /* The writer writes the record read, byte for byte. */
    kc_entry *w;
    if (kc_unit_entry_new(&w, &key, &ref, (const char *const *)exprs, (const char *const *)lowered, k) == KC_OK) {
        if (!same_section(w, KC_SECTION_UNIT, s, n)) abort();
        kc_entry_free(w);
    }
    for (size_t i = 0; i < k; i++) free(exprs[i]), free(lowered[i]);
    kc_entry_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    uint8_t *s = malloc(size); /* the rest in a buffer of its size, so a read past it is caught */
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    switch (mode % 3) {
    case 0: image(mode, s, size - 1); break;
    case 1: graph(s, size - 1); break;
    case 2: unit(s, size - 1); break;
    }
    free(s);
    return 0;
}
