/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify.c — kc_cache_verify: read and validate every object of the local directory, and the
 * references between them ([Note: two levels] in kcache/entry.h).
 *
 * The one idea: a maintenance read of each object (its LRU time left alone), decoded as the
 * object its name promises, in two passes.  The first checks each object alone: an image's
 * bytes against both its digests (XXH3-128, its name, and SHA-256: kc_image_entry_read, full),
 * a graph entry's and a unit record's references read and kept; an object of another format
 * version is stale (reported, left for gc, never quarantined); a corrupt one is quarantined.
 * The second follows every reference kept: the image must be present, sound and the very image
 * referred to (every field of the reference).  A graph entry or unit record whose image is
 * missing or bad is dangling: reported, not removed — verify only quarantines corrupt objects;
 * `kcache gc` removes dangling ones.  An image that appeared after the first pass saw its shard
 * is checked when first referred to.
 *
 * Callers: `kcache verify` and tests, through kcache/cache.h.  Must not: count lookups, or
 * change anything but the quarantine.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "../entry/trust.h"
#include "../store/name.h"
#include "kcache/sign.h"
#include "internal.h"

/* What the first pass found of one image. */
typedef struct seen_image {
    kc_image_ref ref; /* as the image holds it (ref.id: its name) */
    int sound;        /* 1: it passed every check; 0: corrupt (quarantined) */
} seen_image;

/* A graph entry or unit record and where its references start in verify_ctx.refs. */
typedef struct referrer {
    char name[KC_NAME_MAX + 1];
    size_t ref0, n;
} referrer;

typedef struct verify_ctx {
    kc_cache *c;
    kc_verify_report r;
    seen_image *imgs;
    size_t nimg, capimg;
    kc_image_ref *refs;
    size_t nref, capref;
    referrer *who;
    size_t nwho, capwho;
} verify_ctx;

/* Make room for `more` items in a growing array; 0 when out of memory. */
static int grow(void **p, size_t *cap, size_t n, size_t more, size_t size) {
    if (more <= *cap - n) return 1;
    size_t c = *cap ? *cap : 64;
    while (more > c - n) c *= 2;
    void *q = kc_realloc(*p, c * size);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

static int keep_refs(verify_ctx *v, const char *name, const kc_image_ref *refs, size_t n) {
    if (!grow((void **)&v->refs, &v->capref, v->nref, n, sizeof *v->refs) ||
        !grow((void **)&v->who, &v->capwho, v->nwho, 1, sizeof *v->who))
        return kc_err(KC_ENOMEM, "verify: out of memory");
    referrer *w = &v->who[v->nwho++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->ref0 = v->nref;
    w->n = n;
    if (n) memcpy(v->refs + v->nref, refs, n * sizeof *refs);
    v->nref += n;
    return KC_OK;
}

/* Check one decoded object alone; keep what the second pass needs. */
static int check_object(verify_ctx *v, const char *name, const kc_entry *e) {
    const char *variant = kc_entry_variant(e);
    kc_image_ref ref;
    if (strcmp(variant, KC_VARIANT_IMAGE) == 0) {
        v->r.images_checked++;
        int rc = kc_image_entry_read(e, NULL, 1, &ref, NULL, NULL);
        if (rc != KC_OK && rc != KC_ECORRUPT) return rc;
        if (!grow((void **)&v->imgs, &v->capimg, v->nimg, 1, sizeof *v->imgs))
            return kc_err(KC_ENOMEM, "verify: out of memory");
        seen_image *s = &v->imgs[v->nimg++];
        memset(&s->ref, 0, sizeof s->ref);
        s->ref.id = *kc_entry_key(e);
        s->sound = rc == KC_OK;
        if (rc == KC_OK) s->ref = ref;
        return rc;
    }
    if (strcmp(variant, KC_VARIANT_UNIT) == 0) {
        int rc = kc_unit_entry_read(e, &ref, NULL, 0, NULL);
        return rc ? rc : keep_refs(v, name, &ref, 1);
    }
    kc_image_ref *refs = NULL;
    size_t n = 0;
    int rc = kc_entry_images(e, &refs, &n);
    if (rc == KC_OK) rc = keep_refs(v, name, refs, n);
    else if (rc == KC_MISS) rc = KC_OK; /* a graph entry with no images refers to nothing */
    free(refs);
    return rc;
}

static void found_corrupt(verify_ctx *v, const char *name) {
    v->r.corrupt++;
    kc_log(KC_LOG_STORE, "verify %s: %s", name, kc_error_last()->message);
    if (kc_cache_quarantine_(v->c, name) == KC_OK) v->r.quarantined++;
}

static int verify_item(const kc_cache_item *it, void *ctx) {
    verify_ctx *v = ctx;
    v->r.checked++;
    /* Read and validate here (not kc_cache_get) to tell a corrupt entry from a vanished one;
     * a maintenance read, so the entry's LRU time is left alone. */
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    void *data;
    size_t len;
    int rc = kc_cache_peek_raw_(v->c, name, &data, &len);
    if (rc == KC_MISS) return 0; /* removed since the listing */
    kc_entry *e = NULL;
    if (rc == KC_OK) {
        int version = kc_entry_peek_version(data, len);
        if (version >= 0 && version != KC_ENTRY_FORMAT_VERSION) {
            free(data);
            v->r.stale++; /* an older cache's: a miss to readers, removed by gc, never corrupt */
            kc_log(KC_LOG_STORE, "verify %s: format version %d (this build reads %d): stale", name, version,
                   KC_ENTRY_FORMAT_VERSION);
            return 0;
        }
        rc = kc_entry_decode_as(&e, data, len, &it->key, it->variant);
        free(data);
    }
    if (rc == KC_OK) rc = check_object(v, name, e);
    kc_entry_free(e);
    if (rc == KC_OK) v->r.ok++;
    else if (rc == KC_ECORRUPT) found_corrupt(v, name);
    else if (rc == KC_ENOMEM) return rc;
    return 0;
}

static int by_id(const void *a, const void *b) {
    return memcmp(((const seen_image *)a)->ref.id.bytes, ((const seen_image *)b)->ref.id.bytes, sizeof(kc_key));
}

static const seen_image *find_image(const verify_ctx *v, const kc_key *id) {
    seen_image key = {.ref.id = *id};
    return v->nimg ? bsearch(&key, v->imgs, v->nimg, sizeof *v->imgs, by_id) : NULL;
}

/* An image the first pass did not see (stored since it passed its shard, or absent): checked
 * now and remembered (KC_OK), KC_MISS when absent; one unreadable now is left (KC_OK, not
 * remembered: not a finding). */
static int check_late_image(verify_ctx *v, const kc_key *id) {
    char name[KC_NAME_MAX + 1];
    kc_store_name(id, KC_VARIANT_IMAGE, name);
    void *data;
    size_t len;
    int rc = kc_cache_peek_raw_(v->c, name, &data, &len);
    if (rc) return rc == KC_MISS ? KC_MISS : KC_OK;
    kc_entry *e = NULL;
    rc = kc_entry_decode_as(&e, data, len, id, KC_VARIANT_IMAGE);
    free(data);
    seen_image s = {.ref.id = *id};
    if (rc == KC_OK) {
        v->r.images_checked++;
        rc = kc_image_entry_read(e, NULL, 1, &s.ref, NULL, NULL);
    }
    kc_entry_free(e);
    if (rc != KC_OK && rc != KC_ECORRUPT) return rc == KC_ENOMEM ? rc : KC_OK;
    if (rc == KC_ECORRUPT) found_corrupt(v, name);
    s.sound = rc == KC_OK;
    if (!grow((void **)&v->imgs, &v->capimg, v->nimg, 1, sizeof *v->imgs))
        return kc_err(KC_ENOMEM, "verify: out of memory");
    v->imgs[v->nimg++] = s;
    qsort(v->imgs, v->nimg, sizeof *v->imgs, by_id);
    return KC_OK;
}

/* Follow every reference the first pass kept: the image must be present, sound, and the very
 * image referred to. */
static int check_refs(verify_ctx *v) {
    if (v->nimg) qsort(v->imgs, v->nimg, sizeof *v->imgs, by_id);
    for (size_t w = 0; w < v->nwho; w++) {
        const referrer *who = &v->who[w];
        int dangling = 0;
        for (size_t k = 0; k < who->n; k++) {
            const kc_image_ref *ref = &v->refs[who->ref0 + k];
            v->r.refs_checked++;
            const seen_image *s = find_image(v, &ref->id);
            if (!s) {
                int rc = check_late_image(v, &ref->id);
                if (rc == KC_ENOMEM) return rc;
                if (rc == KC_OK && !(s = find_image(v, &ref->id))) continue; /* unreadable now */
            }
            const char *bad = !s                                  ? "missing"
                              : !s->sound                         ? "corrupt"
                              : !kc_image_ref_equal(ref, &s->ref) ? "not the image it refers to"
                                                                  : NULL;
            if (!bad) continue;
            if (s) v->r.bad_refs++;
            else v->r.missing_refs++;
            char hex[KC_KEY_HEX_LEN + 1];
            kc_key_to_hex(&ref->id, hex);
            kc_log(KC_LOG_STORE, "verify %s: its image %s.%s is %s", who->name, hex, KC_VARIANT_IMAGE, bad);
            dangling = 1;
        }
        v->r.dangling += (uint64_t)dangling;
    }
    return KC_OK;
}

int kc_cache_verify(kc_cache *c, kc_verify_report *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_verify: NULL argument");
    int vrc = kc_api_version("kc_cache_verify", "kc_verify_report", "KC_VERIFY_REPORT_INIT", out->version,
                             KC_VERIFY_REPORT_VERSION);
    if (vrc) return vrc;
    verify_ctx v;
    memset(&v, 0, sizeof v);
    v.c = c;
    int rc = kc_cache_foreach(c, verify_item, &v);
    if (rc == KC_OK) rc = check_refs(&v);
    free(v.imgs);
    free(v.refs);
    free(v.who);
    kc_api_copy_out(out, &v.r, sizeof v.r, out->version); /* [Note: versioned structs]: one version yet */
    return rc;
}

/* ---- signatures ---- */

typedef struct sig_ctx {
    kc_cache *c;
    const kc_keyring *kr;
    kc_signature_report r;
} sig_ctx;

static int sig_item(const kc_cache_item *it, void *ctx) {
    sig_ctx *s = ctx;
    char name[KC_NAME_MAX + 1];
    kc_store_name(&it->key, it->variant, name);
    void *data;
    size_t len;
    if (kc_cache_peek_raw_(s->c, name, &data, &len) != KC_OK) return 0;
    if (kc_entry_peek_version(data, len) != KC_ENTRY_FORMAT_VERSION) { /* stale: kc_cache_verify's to report */
        free(data);
        return 0;
    }
    s->r.checked++;
    char id[2 * KC_SIGN_KEY_ID_LEN + 1];
    if (kc_entry_signer(data, len, id) != KC_OK) {
        s->r.unsigned_++;
        kc_log(KC_LOG_STORE, "verify --signatures %s: unsigned", name);
    } else if (kc_entry_sig_check(data, len, s->kr, id) == KC_OK) {
        s->r.signed_ok++;
    } else {
        s->r.refused++;
        kc_log(KC_LOG_STORE, "verify --signatures %s: %s", name, kc_error_last()->message);
    }
    free(data);
    return 0;
}

int kc_cache_verify_signatures(kc_cache *c, kc_signature_report *out) {
    if (!c || !out) return kc_err(KC_EINVAL, "kc_cache_verify_signatures: NULL argument");
    int rc = kc_api_version("kc_cache_verify_signatures", "kc_signature_report", "KC_SIGNATURE_REPORT_INIT",
                            out->version, KC_SIGNATURE_REPORT_VERSION);
    if (rc) return rc;
    sig_ctx s = {c, NULL, KC_SIGNATURE_REPORT_INIT};
    kc_api_copy_out(out, &s.r, sizeof s.r, out->version); /* zero counts on any failure below */
    const kc_trust *t = kc_cache_trust_(c);
    if (!t->keyring) return kc_err(KC_EINVAL, "no keyring to verify signatures with (KCACHE_KEYRING)");
    s.kr = t->keyring;
    rc = kc_cache_foreach(c, sig_item, &s);
    kc_api_copy_out(out, &s.r, sizeof s.r, out->version);
    return rc;
}
