/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bundle.c — import's phase two and the coverage read back (format in include/kcache/bundle.h;
 * the part's files: bundle/internal.h).
 *
 * The one idea: import is two phases.  Phase one (read.c) reads the whole file and proves it
 * sound, holding nothing but memory.  Only then does phase two write, each entry atomically,
 * images first, unit records next, graph entries last ([Note: two levels] in kcache/entry.h),
 * leaving out any whose image is neither in the bundle nor in the cache; an entry already
 * present with the same bytes is left alone, so importing twice is a no-op; then the site
 * profiles are merged.
 *
 * Callers: the public kc_bundle_import / kc_bundle_coverage_read (kcache import, deploy, sign).
 * Must not: write anything before phase one has passed; write a graph entry or unit record
 * before its images, or at all when one is nowhere.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "../cache/internal.h" /* kc_cache_local_, kc_cache_trust_ */
#include "../cache/record.h"   /* kc_cache_toolchain_note_ */
#include "../common/fs.h"      /* kc_fs_sync_dir */
#include "../guard/internal.h" /* kc_site_profile_merge_at_ */

#include <limits.h>

typedef kc_bundle_item item;
typedef kc_bundle_in bundle_in;
#define in_image kc_bundle_in_image_
#define item_refs kc_bundle_item_refs_
#define ref_cmp kc_bundle_ref_cmp_

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
    *(it->kind == KIND_IMAGE  ? &rep->images_written
      : it->kind == KIND_UNIT ? &rep->units_written
                              : &rep->graphs_written) += 1;
}

/* An import's phase two, as it goes. */
typedef struct import {
    kc_cache *c;
    const char *path;
    int dry_run;
    kc_local *l;
    const kc_trust *trust;
    kc_local_batch *wb;
    const item **queued; /* what the batch holds, in its order */
    size_t nq;
    kc_bundle_report rep;
} import;

/* Put one entry in the import's batch unless the cache holds the same bytes (queued[nq] then);
 * a dry run only counts. */
static int in_put(import *im, const item *it) {
    void *old;
    size_t olen;
    kc_bundle_report *rep = &im->rep;
    const char *path = im->path;
    if (im->l && kc_local_read(im->l, it->name, &old, &olen) == KC_OK) {
        int same = olen == it->len && memcmp(old, it->data, olen) == 0;
        free(old);
        if (same) return rep->unchanged++, KC_OK;
    }
    char who[KC_TRUST_WHO_MAX], origin[KC_PROV_SOURCE_MAX + 64]; /* [Note: provenance record] in local.c */
    kc_trust_verifier(im->trust, it->data, it->len, who);        /* the bytes phase one checked */
    kc_provenance_format(origin, sizeof origin, KC_PROV_IMPORTED, strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
                         who);
    int rc = im->dry_run
                 ? KC_OK
                 : kc_local_batch_put(im->wb, it->name, it->data, it->len, 0400, origin) /* [Note: provenance] */;
    if (rc) return rc;
    if (im->dry_run) in_written(rep, it);
    else im->queued[im->nq++] = it; /* counted once the batch's commit has renamed it */
    return KC_OK;
}

/* Entry `it`, of kind k, lacks image `lack`: left out, logged and counted. */
static void in_skip(import *im, item *it, int k, const kc_image_ref *lack) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&lack->id, hex);
    kc_log(KC_LOG_STORE,
           "import %s: %s left out: its image %s.img is neither in the bundle nor in the "
           "cache",
           im->path, it->name, hex);
    if (!im->rep.graphs_skipped && !im->rep.units_skipped)
        snprintf(im->rep.first_skipped, sizeof im->rep.first_skipped, "%s", it->name);
    *(k == KIND_GRAPH ? &im->rep.graphs_skipped : &im->rep.units_skipped) += 1;
    it->skipped = 1;
}

/* Images, unit records, graph entries, in one batch of the store ([Note: batched puts] in
 * store/local.c): every temporary written, one sync, the images renamed, one sync (the fence),
 * the referrers renamed, one sync — no graph lands before its images are durable.  An entry whose
 * image is nowhere is left out, never written dangling. */
static int in_entries(import *im, bundle_in *b, const in_local *m) {
    int rc = KC_OK;
    if (!im->dry_run && !(im->queued = kc_calloc(b->n ? b->n : 1, sizeof *im->queued)))
        rc = kc_err(KC_ENOMEM, "import: out of memory");
    if (!rc && !im->dry_run) rc = kc_local_batch_begin(im->l, &im->wb);
    for (int k = 0; k < NKINDS && !rc; k++) {
        for (size_t i = 0; i < b->n && !rc; i++) {
            item *it = &b->items[i];
            const kc_image_ref *lack = it->kind == k ? in_lacks(m, b, it) : NULL;
            if (lack) in_skip(im, it, k, lack);
            else if (it->kind == k) rc = in_put(im, it);
        }
        if (k == KIND_IMAGE) kc_local_batch_fence(im->wb);
    }
    size_t landed = 0, nq = im->nq;
    const char *path = im->path;
    if (im->wb && rc) kc_local_batch_abort(im->wb);
    else if (im->wb) rc = kc_local_batch_commit(im->wb, &landed);
    for (size_t i = 0; i < landed; i++) in_written(&im->rep, im->queued[i]);
    if (rc && landed < nq && landed)
        kc_err_prefix(rc,
                      "bundle '%s': import stopped at '%s' (%zu of the %zu it had to write) after writing %llu "
                      "(they stay in the cache; importing again writes the rest)",
                      path, im->queued[landed]->name, landed + 1, nq, (unsigned long long)im->rep.written);
    else if (rc && landed)
        kc_err_prefix(rc,
                      "bundle '%s': all %llu entries written, but not known to be durable (importing again "
                      "writes any a crash loses)",
                      path, (unsigned long long)im->rep.written);
    free(im->queued);
    im->queued = NULL;
    return rc;
}

/* The toolchains whose entries are now here, for a host without NVRTC (cache/record.h). */
static void in_note_toolchains(kc_cache *c, const bundle_in *b) {
    for (size_t i = 0; i < b->n; i++) {
        kc_entry *e;
        if (b->items[i].kind == KIND_IMAGE || b->items[i].skipped) continue;
        if (kc_entry_decode(&e, b->items[i].data, b->items[i].len) != KC_OK) continue;
        kc_cache_toolchain_note_(c, kc_entry_toolchain(e));
        kc_cache_toolkit_note_(c, kc_entry_toolchain(e));
        kc_entry_free(e);
    }
}

/* The site profiles (v3 on), each merged into the local one: a union, under its stripe's lock;
 * written without an fsync each (65,536 fsyncs took minutes), their folder fsynced once.  A
 * crash may lose some (or leave one empty): a profile is learned again, never a wrong kernel. */
static int in_profiles(import *im, const bundle_in *b) {
    size_t merged = 0;
    char pdir[PATH_MAX];
    const char *path = im->path;
    int rc = KC_OK;
    if (b->prof.n && (rc = kc_cache_profile_dir(im->c, pdir, sizeof pdir)))
        kc_err_prefix(rc, "bundle '%s': its entries are imported, but its site profiles are not", path);
    for (size_t i = 0; !rc && i < b->prof.n; i++) {
        int changed = 0;
        im->rep.profiles++;
        if ((rc = kc_site_profile_merge_at_(im->c, pdir, b->prof.p[i], b->prof.len[i],
                                            im->dry_run ? KC_SITE_PROFILE_DRY : KC_SITE_PROFILE_LAZY, &changed)))
            kc_err_prefix(rc, "bundle '%s': its entries are imported, but a site profile is not", path);
        im->rep.profiles_written += (uint64_t)changed;
        merged += (size_t)changed;
    }
    if (merged && !im->dry_run && kc_fs_sync_dir(pdir) != KC_OK) {
        kc_log(KC_LOG_STORE, "import %s: %s (the profiles are written, not known to be durable)", path,
               kc_error_last()->message);
        if (!rc) kc_error_clear();
    }
    return rc;
}

/* kc_bundle_import once the caller's report is checked (bundle/report.c): `out` is kcache's own. */
int kc_bundle_import_(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out) {
    if (!c || !path) return kc_err(KC_EINVAL, "kc_bundle_import: NULL argument");
    if (out) memset(out, 0, sizeof *out);
    bundle_in b;
    memset(&b, 0, sizeof b); /* GCC -O3 cannot see kc_bundle_verify_ fills it on KC_OK */
    bool mac_refused = false;
    int rc = kc_bundle_verify_(path, kc_cache_trust_(c), &b, &mac_refused, NULL);
    if (mac_refused) kc_cache_count(c, NULL, KC_STAT_MAC_REJECTED, 1);
    if (rc) return rc;
import im;
    memset(&im, 0, sizeof im);
    im.c = c, im.path = path, im.dry_run = dry_run, im.l = kc_cache_local_(c), im.trust = kc_cache_trust_(c);
    for (size_t i = 0; i < b.n; i++) kc_bundle_report_add_(&im.rep, b.items[i].kind, b.items[i].len);
    if (!dry_run && (!im.l || kc_cache_mode(c) != KC_CACHE_READWRITE))
        rc = kc_err(KC_EREADONLY, "the cache is read-only or disabled");
    in_local m = {NULL, NULL, 0};
    if (!rc) rc = in_local_find(&m, im.l, &b);
    if (!rc) rc = in_entries(&im, &b, &m);
    if (!dry_run && !rc) in_note_toolchains(c, &b);
    if (!rc) rc = in_profiles(&im, &b);
    free(m.refs);
    free(m.ok);
    kc_bundle_in_free_(&b);
    if (out) *out = im.rep;
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
    int rc = kc_bundle_verify_(path, NULL, &b, &mac_refused, &cv);
    if (rc) return rc;
    if (!cv) {
        kc_bundle_in_free_(&b);
        return kc_err(KC_MISS, "bundle '%s' records no coverage (format v1, or exported without a manifest)", path);
    }
    /* Which graph x target the bundle carries: a graph entry named "<key>.<target>". */
    for (size_t g = 0; g < cv->ngraphs; g++)
        for (size_t t = 0; t < cv->ntargets; t++) {
            char name[KC_NAME_MAX + 1];
            kc_store_name(&cv->keys[g], cv->targets[t], name);
            int have = 0;
            for (size_t i = 0; i < b.n && !have; i++)
                have = b.items[i].kind == KIND_GRAPH && strcmp(b.items[i].name, name) == 0;
            cv->carried[g * cv->ntargets + t] = (unsigned char)have;
            cv->missing += !have;
        }
    kc_bundle_in_free_(&b);
    *out = cv;
    return KC_OK;
}
