/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.c — a graph entry's images, fetched and checked ([Note: two levels] in kcache/entry.h).
 *
 * The one idea: a graph entry names its images by digest; resolving fetches each — the local
 * directory first (one read per image, checked against the reference's XXH3-128, length, target
 * and kind), then the remote tier for all that are missing in one round trip (checked fully:
 * SHA-256 too, because they come from outside) — and attaches the bytes to the entry for the
 * loader.  Images fetched from a remote are written to the local directory before the graph
 * entry that refers to them (the caller writes that one last).  Anything missing or failing a
 * check makes the whole graph a miss: never an error, never a wrong kernel.
 *
 * Callers: lookup.c (every hit), kc_entry_resolve's public callers (tools).  Must not: count a
 * lookup's outcome (the lookup does, once it knows it) or load anything.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../cache/internal.h"
#include "../common/internal.h"
#include "../entry/entry_internal.h"
#include "graph_internal.h"

/* Describe image `r` for messages: "<hex> (sm_90 cubin, 12345 bytes)". */
static void describe(const kc_image_ref *r, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&r->id, hex);
    snprintf(out, cap, "%s (%s %s, %llu bytes)", hex, r->target, r->is_ptx ? "PTX" : "cubin",
             (unsigned long long)r->len);
}

/* The local image of `ref`, checked and attached as image `i`: KC_OK, or KC_MISS (absent, corrupt:
 * quarantined by a use's read, or not the image referred to).  `use`: a lookup's read, which
 * refreshes the image's LRU time; a maintenance read (show, extract) leaves it. */
static int attach_local(kc_cache *c, kc_entry *e, size_t i, const kc_image_ref *ref, int attach, int use) {
    if (!attach &&
        use) { /* a compile-only hit: intact, its name's, of the reference's length ([Note: checked, not inflated]) */
        uint64_t raw_len;
        int rc = kc_cache_check_local_(c, &ref->id, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, &raw_len);
        if (rc == KC_OK && raw_len != kc_image_section_len(ref)) {
            char what[128];
            describe(ref, what, sizeof what);
            kc_log(KC_LOG_STORE, "local image %s: its IMAGE section is %llu bytes, not its reference's", what,
                   (unsigned long long)raw_len);
            rc = KC_MISS;
        }
        return rc == KC_OK ? KC_OK : KC_MISS;
    }
    kc_entry *img;
    int rc = use ? kc_cache_get_local_(c, &ref->id, KC_VARIANT_IMAGE, &img)
                 : kc_cache_peek(c, &ref->id, KC_VARIANT_IMAGE, &img);
    if (rc != KC_OK) return KC_MISS;
    const void *bytes;
    size_t len;
    rc = kc_image_entry_read(img, ref, 0, NULL, &bytes, &len);
    if (rc == KC_OK && attach)
        rc = kc_entry_attach_image_from_(e, i, img, bytes, len); /* [Note: attached, not copied] */
    else if (rc) kc_log(KC_LOG_STORE, "local image: %s", kc_error_last()->message);
    kc_entry_free(img);
    return rc == KC_ENOMEM ? rc : rc ? KC_MISS : KC_OK;
}

int kc_graph_resolve_(kc_cache *c, kc_entry *e, int attach, int use) {
    kc_image_ref *refs;
    size_t n;
    int rc = kc_entry_images(e, &refs, &n);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "corrupt entry: a graph entry without IMAGES") : rc;
    size_t missing[KC_IMAGES_MAX], nm = 0;
    for (size_t i = 0; i < n && rc != KC_ENOMEM; i++) {
        const void *b;
        size_t l;
        if (kc_entry_attached_image(e, i, &b, &l) == KC_OK) continue; /* resolved before */
        rc = attach_local(c, e, i, &refs[i], attach, use);
        if (rc == KC_MISS) missing[nm++] = i;
    }
    if (rc == KC_ENOMEM) {
        free(refs);
        return rc;
    }
    rc = KC_OK;
    if (nm) { /* from the remote, all at once; written back before the graph entry is */
        kc_key keys[KC_IMAGES_MAX];
        kc_entry *got[KC_IMAGES_MAX];
        void *raw[KC_IMAGES_MAX];
        size_t rl[KC_IMAGES_MAX];
        for (size_t k = 0; k < nm; k++) keys[k] = refs[missing[k]].id;
        kc_cache_remote_objects_(c, keys, KC_VARIANT_IMAGE, nm, got, raw, rl);
        for (size_t k = 0; k < nm; k++) {
            size_t i = missing[k];
            const void *bytes;
            size_t len;
            char what[128];
            describe(&refs[i], what, sizeof what);
            int r = got[k] ? kc_image_entry_read(got[k], &refs[i], 1, NULL, &bytes, &len) : KC_MISS;
            if (r == KC_OK && attach) r = kc_entry_attach_image_from_(e, i, got[k], bytes, len);
            if (r == KC_OK) (void)kc_cache_keep_local_(c, &refs[i].id, KC_VARIANT_IMAGE, raw[k], rl[k]);
            else if (!rc && got[k])
                rc = kc_err(KC_MISS, "image %s from the remote failed its check: %s", what, kc_error_last()->message);
            else if (!rc) rc = kc_err(KC_MISS, "image %s is missing", what);
            kc_entry_free(got[k]);
            free(raw[k]);
        }
    }
    free(refs);
    return rc;
}

int kc_entry_resolve(kc_cache *c, kc_entry *e) {
    if (!c || !e) return kc_err(KC_EINVAL, "kc_entry_resolve: NULL argument");
    return kc_graph_resolve_(c, e, 1, 0); /* not a use: show and extract leave the LRU times */
}
