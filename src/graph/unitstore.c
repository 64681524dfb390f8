/*
 * unitstore.c — compile units found in the store or stored there ([Note: two levels] in
 * kcache/entry.h): the unit key, the lookup of unit records and their images, and their writes.
 *
 * The one idea: a compile unit (compile/units.h: kernels sharing file, source, headers, options)
 * has a key of its own, made by the same identity rules as the graph key — every byte NVRTC reads
 * and every option it is given, the name expressions, the target and the toolchain's build — and
 * nothing of the graph's launches, shapes or other kernels.  So a graph at a new static shape, or
 * a new graph built on a source another graph compiled with the same names and options, finds its
 * units stored and compiles nothing.  A unit record says which image the unit compiled to; the
 * image is read and checked against the record's reference (XXH3-128 locally, SHA-256 too for
 * what a remote gives), so a record never serves bytes it did not name.
 *
 * Callers: lookup.c only.  Must not: count a graph lookup's outcome, or store a unit of a source
 * that is not cacheable (lookup.c never asks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../cache/internal.h"
#include "../common/internal.h"
#include "../compile/toolkit.h"
#include "../entry/entry_internal.h"
#include "../store/tiers.h" /* kc_tiers_refused_: a record whose image is gone, said */
#include "graph_internal.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/*
 * [Note: recorded names] A name expression goes through the preprocessor and C++ lookup, and only
 * NVRTC, in a compile, says which kernel it denotes: with `#define foo bar` the expression `foo`
 * lowers to bar's symbol though a kernel `foo` is in the image too.  So a unit record answers only
 * the name expressions whose lowering it recorded — nvrtcGetLoweredName's answer for that exact
 * expression in a compile that made the record's image — and a graph asking any other name of the
 * unit misses: the unit is compiled with the graph's names (under must-hit, refused, naming the
 * name the record lacks).  Nothing is inferred from the image's symbols.
 *
 * The key still leaves plain C identifiers out (NVRTC emits every non-template kernel of external
 * linkage whatever it is asked), so graphs asking other plain names of one source meet at one record:
 * when their compile makes the very bytes the stored record names, the record is stored again with
 * the names of both (each lowering one that NVRTC gave in a compile of those bytes); other bytes
 * replace it.  Either way each name it holds is one a compile recorded, never a guess.
 *
 * The key's "unit_record" component (KC_UNIT_RECORD_VERSION) versions this rule: the records stored
 * before it, whose lookups completed unlisted names from the image's symbols, live under other keys
 * in every tier and bundle; the rule's code never reads them (a miss, no noise; gc ages them out).
 */
#define KC_UNIT_RECORD_VERSION 2
static int plain_name(const char *s) {
    if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))) return 0;
    for (s++; *s; s++)
        if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

/* The name expressions of `unit` in slot order (one per kernel of the unit). */
static size_t unit_names(const kc_kernel_src *ks, size_t nk, const kc_units *u, size_t unit, const char **names) {
    size_t n = 0;
    for (size_t i = 0; i < nk; i++)
        if ((size_t)u->unit_of[i] == unit) names[n++] = ks[i].name;
    return n;
}

int kc_unit_key_(const kc_kernel_src *ks, size_t nk, const kc_units *u, size_t unit, const char *target,
                 const char *toolchain, const char *toolkit, kc_key *out, kc_key_builder **kb_out) {
    return kc_unit_key_at_(ks, nk, u, unit, target, toolchain, toolkit, KC_UNIT_RECORD_VERSION, out, kb_out);
}

int kc_unit_key_at_(const kc_kernel_src *ks, size_t nk, const kc_units *u, size_t unit, const char *target,
                    const char *toolchain, const char *toolkit, unsigned record_version, kc_key *out,
                    kc_key_builder **kb_out) {
    const kc_kernel_src *k = &ks[u->first[unit]];
    const char *names[KC_UNITS_MAX];
    size_t n = unit_names(ks, nk, u, unit, names);
    qsort(names, n, sizeof *names, cmp_str);
    kc_key_builder *kb;
    int rc = kc_key_builder_new(&kb);
    if (rc) return rc;
    kc_key_add_u64(kb, KC_COMP_FORMAT, "unit_format", KC_ENTRY_FORMAT_VERSION);
    if (record_version) kc_key_add_u64(kb, KC_COMP_FORMAT, "unit_record", record_version); /* [Note: recorded names] */
    kc_key_add_string(kb, KC_COMP_GRAPH, "unit.file", k->file ? k->file : "");
    kc_key_add_string(kb, KC_COMP_GRAPH, "unit.source", k->source);
    for (size_t h = 0; h < k->nheaders; h++) {
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.name", k->headers[h].name);
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.source", k->headers[h].source);
    }
    for (size_t i = 0; i < n; i++) /* a set: sorted, one each; plain names are not part of it ([Note: recorded names]) */
        if ((i == 0 || strcmp(names[i], names[i - 1]) != 0) && !plain_name(names[i]))
            kc_key_add_string(kb, KC_COMP_GRAPH, "unit.name", names[i]);
    char *norm = NULL;
    if (k->flags) kc_key_add_u64(kb, KC_COMP_OPTIONS, "kernel.flags", k->flags);
    rc = kc_options_normalize(k, &norm);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "options", norm);
    free(norm);
    if (!rc && k->include_digest) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "include_digest", k->include_digest);
    if (!rc && (k->flags & KC_KERNEL_TOOLKIT_HEADERS)) rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "toolkit_headers", toolkit);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "nvrtc", toolchain);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "target", target);
    if (!rc) rc = kc_key_finish(kb, out);
    if (rc || !kb_out) kc_key_builder_free(kb);
    else *kb_out = kb;
    return rc;
}

/* A compiled unit made of a stored image and the record's lowered names (taken). */
static int as_compiled(const void *bytes, size_t len, int is_ptx, char **lowered, size_t n, kc_compiled **out) {
    kc_compiled *r = kc_calloc(1, sizeof *r);
    if (r) r->image = kc_malloc(len + 1), r->log = kc_strdup("");
    if (!r || !r->image || !r->log) {
        kc_compiled_free(r);
        for (size_t i = 0; i < n; i++) free(lowered[i]);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    memcpy(r->image, bytes, len);
    r->image[len] = 0;
    r->len = is_ptx ? len - 1 : len; /* PTX: kc_compiled's length leaves out the NUL */
    r->lowered_names = kc_malloc(n * sizeof *r->lowered_names);
    if (!r->lowered_names) {
        kc_compiled_free(r);
        for (size_t i = 0; i < n; i++) free(lowered[i]);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    memcpy(r->lowered_names, lowered, n * sizeof *lowered);
    r->nnames = n;
    r->lowered_name = r->lowered_names[0];
    *out = r;
    return KC_OK;
}

/* Unit `unit` from its record and image (either from the remote: then checked fully).  Every name
 * the graph asks must be one the record holds ([Note: recorded names]): else KC_MISS, with
 * *lacking the first name it lacks (the record and its image are sound; NULL for any other failure). */
static int from_record(const kc_entry *rec, const kc_entry *img, int full, const kc_kernel_src *ks, size_t nk,
                       const kc_units *u, size_t unit, const char *target, kc_compiled **res, kc_image_ref *ref,
                       const char **lacking) {
    const char *names[KC_UNITS_MAX];
    char *lowered[KC_UNITS_MAX] = {0};
    size_t n = unit_names(ks, nk, u, unit, names);
    kc_image_ref want;
    const void *bytes;
    size_t len;
    kc_target t;
    *lacking = NULL;
    int rc = kc_unit_entry_read(rec, &want, NULL, 0, NULL);
    if (!rc && (kc_target_parse(target, &t) != KC_OK || strcmp(want.target, target) != 0 || want.is_ptx != t.ptx))
        rc = kc_err(KC_ECORRUPT, "the unit record names a %s image for %s", want.is_ptx ? "PTX" : "cubin", want.target);
    int sound = 0;
    if (!rc) rc = kc_image_entry_read(img, &want, full, NULL, &bytes, &len);
    if (!rc) sound = 1, rc = kc_unit_entry_read(rec, NULL, names, n, lowered);
    for (size_t i = 0; sound && rc == KC_MISS && i < n && !*lacking; i++) { /* which one (a miss's cold path) */
        char *one = NULL;
        if (kc_unit_entry_read(rec, NULL, &names[i], 1, &one) == KC_MISS) *lacking = names[i];
        free(one);
    }
    if (*lacking) rc = kc_err(KC_MISS, "its record holds no lowering of '%.200s'", *lacking);
    if (!rc) rc = as_compiled(bytes, len, want.is_ptx, lowered, n, &res[unit]); /* takes lowered */
    char cu[24];
    if (!rc && kc_entry_origin(rec, "compile_us", cu, sizeof cu) == KC_OK) res[unit]->seconds = strtod(cu, NULL) / 1e6;
    if (!rc) *ref = want;
    return rc;
}

/* Units whose record was found and read but whose image is in no tier: a refusal, said
 * ([Note: refusals are said] in store/refusal.c) — the miss reason names it, and a strict lookup
 * (kc_graph_strict_refusal_) fails with it instead of compiling.  The thread's error is untouched. */
static void say_images_gone(const kc_units *u, kc_compiled *const *res, const kc_key *ukeys, const kc_image_ref *had,
                            const int *rec_ok) {
    for (size_t i = 0; i < u->n; i++) {
        if (res[i] || !rec_ok[i]) continue;
        char name[KC_KEY_HEX_LEN + 16], img[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&ukeys[i], name);
        snprintf(name + KC_KEY_HEX_LEN, sizeof name - KC_KEY_HEX_LEN, ".%s", KC_VARIANT_UNIT);
        kc_key_to_hex(&had[i].id, img);
        kc_err_saved keep;
        kc_err_save(&keep);
        (void)kc_err(KC_ECORRUPT, "the image it names (%s) is in no tier", img);
        kc_tiers_refused_(name, "in the cache", KC_ECORRUPT);
        kc_err_restore(&keep);
    }
}

size_t kc_units_find_(kc_cache *c, const kc_kernel_src *ks, size_t nk, const kc_units *u, const int *want,
                      const kc_key *ukeys, const char *target, kc_compiled **res, kc_image_ref *refs,
                      const char **lacking) {
    size_t found = 0, miss[KC_UNITS_MAX], nm = 0;
    const char *lack = NULL;
    kc_image_ref had[KC_UNITS_MAX];
    int rec_ok[KC_UNITS_MAX] = {0}; /* a record read whose image was not (yet) found */
    for (size_t i = 0; i < u->n; i++) {
        if (res[i] || (want && !want[i])) continue;
        lack = NULL;
        kc_entry *rec = NULL, *img = NULL;
        kc_image_ref ref;
        int rc = kc_cache_get_local_(c, &ukeys[i], KC_VARIANT_UNIT, &rec);
        if (!rc) rc = kc_unit_entry_read(rec, &ref, NULL, 0, NULL);
        if (!rc) had[i] = ref;
        if (!rc) rc = kc_cache_get_local_(c, &ref.id, KC_VARIANT_IMAGE, &img);
        rec_ok[i] = rc == KC_MISS && rec && !img; /* the record read, its image absent here */
        if (!rc) rc = from_record(rec, img, 0, ks, nk, u, i, target, res, &refs[i], &lack);
        if (rc == KC_OK) found++;
        else miss[nm++] = i;
        if (lacking && lack) lacking[i] = lack;
        kc_entry_free(rec);
        kc_entry_free(img);
    }
    if (!nm) return found;
    /* The remote: the records in one round trip, then their images in one more. */
    kc_key keys[KC_UNITS_MAX], ikeys[KC_UNITS_MAX];
    kc_entry *recs[KC_UNITS_MAX], *imgs[KC_UNITS_MAX];
    void *rraw[KC_UNITS_MAX], *iraw[KC_UNITS_MAX];
    size_t rl[KC_UNITS_MAX], il[KC_UNITS_MAX], ni = 0, at[KC_UNITS_MAX];
    for (size_t k = 0; k < nm; k++) keys[k] = ukeys[miss[k]];
    if (!kc_cache_remote_objects_(c, keys, KC_VARIANT_UNIT, nm, recs, rraw, rl)) {
        say_images_gone(u, res, ukeys, had, rec_ok);
        return found;
    }
    for (size_t k = 0; k < nm; k++) {
        kc_image_ref ref;
        if (recs[k] && kc_unit_entry_read(recs[k], &ref, NULL, 0, NULL) == KC_OK) {
            ikeys[ni] = ref.id, at[ni++] = k;
            had[miss[k]] = ref, rec_ok[miss[k]] = 1;
        }
    }
    size_t nimg = ni ? kc_cache_remote_objects_(c, ikeys, KC_VARIANT_IMAGE, ni, imgs, iraw, il) : 0;
    for (size_t j = 0; j < ni; j++) {
        size_t k = at[j], i = miss[k];
        lack = NULL;
        if (nimg && imgs[j]) rec_ok[i] = 0; /* found: refused or served, from_record says */
        int rc = nimg && imgs[j] ? from_record(recs[k], imgs[j], 1, ks, nk, u, i, target, res, &refs[i], &lack) : KC_MISS;
        if (rc == KC_OK) found++;
        if (lacking && rc && lack) lacking[i] = lack;
        /* Kept locally — the image first, then the record that names it — when it served, or when it
         * is sound and lacks only names: a compile of the same bytes then stores both records' names. */
        if ((rc == KC_OK || lack) && kc_cache_keep_local_(c, &ikeys[j], KC_VARIANT_IMAGE, iraw[j], il[j]) == KC_OK)
            (void)kc_cache_keep_local_(c, &keys[k], KC_VARIANT_UNIT, rraw[k], rl[k]);
        if (nimg) kc_entry_free(imgs[j]), free(iraw[j]);
    }
    for (size_t k = 0; k < nm; k++) kc_entry_free(recs[k]), free(rraw[k]);
    say_images_gone(u, res, ukeys, had, rec_ok);
    return found;
}

/* The record of a compiled unit: the graph's names with their lowerings, then — when the stored
 * record names the very same image — the names it holds that the graph did not ask
 * ([Note: recorded names]); the stored names only when each agrees with this compile. */
static int record_of(kc_cache *c, const kc_key *ukey, const kc_image_ref *ref, const char *const *names,
                     char *const *lowered, size_t n, kc_entry **out) {
    const char *ex[KC_IMAGES_MAX], *lo[KC_IMAGES_MAX];
    size_t m = 0;
    for (size_t i = 0; i < n && m < KC_IMAGES_MAX; i++) {
        size_t k = 0;
        while (k < m && strcmp(ex[k], names[i]) != 0) k++;
        if (k == m) ex[m] = names[i], lo[m++] = lowered[i];
    }
    kc_entry *old = NULL;
    char **oe = NULL, **ol = NULL;
    size_t on = 0, base = m;
    kc_image_ref oref;
    if (kc_cache_get_local_(c, ukey, KC_VARIANT_UNIT, &old) == KC_OK &&
        kc_unit_entry_names_(old, &oref, &oe, &ol, &on) == KC_OK && kc_image_ref_equal(&oref, ref)) {
        int agree = 1;
        for (size_t j = 0; j < on && agree; j++) {
            size_t k = 0;
            while (k < m && strcmp(ex[k], oe[j]) != 0) k++;
            if (k < m) agree = strcmp(lo[k], ol[j]) == 0; /* a disagreement: keep only this compile's */
            else if (m < KC_IMAGES_MAX) ex[m] = oe[j], lo[m++] = ol[j];
        }
        if (!agree) m = base;
    }
    int rc = kc_unit_entry_new(out, ukey, ref, ex, lo, m);
    for (size_t j = 0; j < on; j++) free(oe[j]), free(ol[j]);
    free(oe), free(ol);
    kc_entry_free(old);
    return rc;
}

int kc_units_store_(kc_cache *c, const kc_kernel_src *ks, size_t nk, const kc_units *u, size_t unit,
                    const kc_key *ukey, const char *target, int is_ptx, const kc_compiled *r, const char *toolchain_meta,
                    kc_image_ref *ref) {
    const char *names[KC_UNITS_MAX];
    size_t n = unit_names(ks, nk, u, unit, names);
    /* PTX is stored with its NUL: the driver takes a C string. */
    int rc = kc_image_ref_make(ref, target, is_ptx, r->image, r->len + (is_ptx ? 1 : 0));
    if (rc || !c) return rc;
    kc_entry *img = NULL, *rec = NULL;
    rc = kc_image_entry_new(&img, ref, r->image);
    if (!rc) rc = kc_entry_set_toolchain(img, toolchain_meta);
    if (!rc) rc = kc_cache_put(c, img); /* the image first: durable before anything names it */
    /* No key digests: nothing explains a unit by them, and they were most of a record's bytes. */
    if (!rc) rc = record_of(c, ukey, ref, names, r->lowered_names, n, &rec);
    char cu[24]; /* its NVRTC time: a graph built from it later records what a hit of it saves */
    snprintf(cu, sizeof cu, "%llu", (unsigned long long)(r->seconds * 1e6 + 0.5));
    if (!rc) rc = kc_entry_set_origin(rec, "compile_us", cu);
    if (!rc) rc = kc_entry_set_toolchain(rec, toolchain_meta);
    if (!rc) rc = kc_cache_put(c, rec);
    kc_entry_free(img);
    kc_entry_free(rec);
    return rc;
}

/* Must-hit: the first unit of `grab` may not be compiled — KC_ENOTCACHED saying why, naming the
 * name its stored record lacks when that is why ([Note: recorded names]). */
static int refused(const kc_kernel_src *ks, const kc_units *u, const int *grab, const char *const *lacking,
                   const char *target, int cacheable) {
    size_t first = 0;
    while (!grab[first]) first++;
    const kc_kernel_src *k = &ks[u->first[first]];
    char why[320] = "";
    if (lacking[first])
        snprintf(why, sizeof why, " for this graph's names (its record holds no lowering of '%.200s': only a "
                 "compile says which kernel that name denotes)", lacking[first]);
    return kc_err(KC_ENOTCACHED, "its compile unit %zu (%s, for %s) is not stored%s%s, and the cache is must-hit "
                  "(KCACHE_REQUIRE_HIT): nothing was compiled", first, k->file ? k->file : k->name, target, why,
                  cacheable ? "" : " (the graph is not cacheable)");
}

/*
 * [Note: single-flight per unit] Each unit still missing is compiled under its own lock
 * ("<unit key>.unit"), across threads and processes.  A round takes every free lock of the
 * units still pending, looks those units up once more (stored meanwhile?), compiles the rest
 * together on the pool, stores them (image, then record) and lets the locks go; units whose
 * lock another holds are polled every few milliseconds until their record appears or their
 * lock comes free.  No lock is held while waiting, so two lookups that need each other's units
 * never wait for each other.  Past KCACHE_LOCK_WAIT the rest is compiled without locks.
 */
int kc_units_obtain_(kc_cache *c, int cacheable, int reuse, const kc_kernel_src *ks, size_t nk, const kc_units *u,
                     const char *target, const char *label, const char *toolchain, const char *toolkit,
                     const char *toolchain_meta, kc_compiled **res, kc_image_ref *refs, int *ncompiled, double *ms,
                     int *store_rc, char *store_msg, size_t msg_cap) {
    size_t n = u->n;
    kc_key ukeys[KC_UNITS_MAX];
    int pending[KC_UNITS_MAX] = {0}, grab[KC_UNITS_MAX], compiled_here[KC_UNITS_MAX] = {0}, left = 0, rc = KC_OK;
    kc_lock *locks[KC_UNITS_MAX] = {0};
    const char *lacking[KC_UNITS_MAX] = {0}; /* the name a unit's sound record lacks ([Note: recorded names]) */
    kc_target t;
    *ncompiled = 0;
    *ms = 0;
    *store_rc = KC_OK;
    if ((rc = kc_target_parse(target, &t))) return rc;
    for (size_t i = 0; cacheable && i < n && !rc; i++)
        rc = kc_unit_key_(ks, nk, u, i, target, toolchain, toolkit, &ukeys[i], NULL);
    if (!rc && cacheable && reuse) kc_units_find_(c, ks, nk, u, NULL, ukeys, target, res, refs, lacking);
    if (!rc && cacheable && reuse) rc = kc_graph_strict_refusal_(c); /* strict: a unit found and refused is no compile */
    for (size_t i = 0; i < n; i++) left += pending[i] = !res[i];
    double wait_s = 600.0;
    if (!rc && left && cacheable) wait_s = kc_cache_settings_(c)->lock_wait;
    uint64_t deadline = kc_mono_ns() + (uint64_t)(wait_s * 1e9);
    while (!rc && left) {
        int any = 0, late = kc_mono_ns() > deadline;
        for (size_t i = 0; i < n; i++) {
            grab[i] = 0;
            if (!pending[i]) continue;
            int lr = cacheable && reuse && !late ? kc_cache_trylock(c, &ukeys[i], KC_VARIANT_UNIT, &locks[i]) : KC_OK;
            if (lr == KC_EBUSY) continue;
            if (lr != KC_OK) kc_log(KC_LOG_GRAPH, "%s: no unit lock (%s); compiling", label, kc_error_last()->message);
            grab[i] = any = 1;
        }
        if (any && cacheable && reuse) kc_units_find_(c, ks, nk, u, grab, ukeys, target, res, refs, lacking); /* stored meanwhile? */
        int todo = 0;
        for (size_t i = 0; i < n; i++) {
            if (grab[i] && res[i]) grab[i] = 0, pending[i] = 0, left--;
            todo |= grab[i];
        }
        if (todo && c && kc_cache_require_hit_(c)) { /* must hit: NVRTC may not run (a waiter above could still take) */
            rc = refused(ks, u, grab, lacking, target, cacheable);
            for (size_t i = 0; i < n; i++) kc_cache_unlock(locks[i]), locks[i] = NULL;
            break;
        }
        if (todo) {
            kc_compiled **got = NULL;
            double one = 0;
            rc = kc_units_compile(ks, nk, u, grab, target, label, &got, &one);
            *ms += one;
            /* [Note: compiled after a change] (compile/toolkit.h): never new header bytes under the old digest. */
            int toolkit = 0;
            for (size_t i = 0; i < n; i++) toolkit |= grab[i] && (ks[u->first[i]].flags & KC_KERNEL_TOOLKIT_HEADERS);
            int moved = !rc && cacheable && toolkit && !kc_toolkit_unchanged();
            if (moved && !*store_rc) {
                *store_rc = KC_EIO;
                snprintf(store_msg, msg_cap, "the toolkit's headers changed since this process identified them: "
                                             "compiled, not stored (the next process identifies them afresh)");
                kc_log(KC_LOG_GRAPH, "%s: %s", label, store_msg);
            }
            for (size_t i = 0; !rc && i < n; i++) {
                if (!grab[i]) continue;
                res[i] = got[i], got[i] = NULL;
                pending[i] = 0, left--, (*ncompiled)++, compiled_here[i] = 1;
                int sr = kc_units_store_(cacheable && !moved ? c : NULL, ks, nk, u, i, &ukeys[i], target, t.ptx, res[i],
                                         toolchain_meta, &refs[i]);
                if (sr && sr != KC_EREADONLY && cacheable) {
                    kc_log(KC_LOG_GRAPH, "%s: unit %zu not stored: %s", label, i, kc_error_last()->message);
                    if (!*store_rc) *store_rc = sr, snprintf(store_msg, msg_cap, "%s", kc_error_last()->message);
                }
                if (sr == KC_ENOMEM || (sr && !cacheable)) rc = sr; /* a reference is needed even unstored */
            }
            if (got) kc_units_free(got, n);
        }
        for (size_t i = 0; i < n; i++) kc_cache_unlock(locks[i]), locks[i] = NULL;
        if (!rc && left && !any) { /* every pending unit is another's compile: wait for it */
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
            kc_units_find_(c, ks, nk, u, pending, ukeys, target, res, refs, lacking);
            for (size_t i = 0; i < n; i++)
                if (pending[i] && res[i]) pending[i] = 0, left--;
        }
    }
    /* Units found stored may be missing from a writable remote (written while it was down): a
     * graph entry about to go there must find its images there, so each is offered again first
     * (one exists() per remote; queued ahead of the graph entry). */
    for (size_t i = 0; !rc && cacheable && reuse && i < n; i++)
        if (!compiled_here[i] && kc_cache_publish(c, &refs[i].id, KC_VARIANT_IMAGE) >= 0)
            (void)kc_cache_publish(c, &ukeys[i], KC_VARIANT_UNIT);
    if (!rc && cacheable && n) {
        kc_cache_count(c, &ukeys[0], KC_STAT_UNIT_COMPILES, (uint64_t)*ncompiled);
        kc_cache_count(c, &ukeys[0], KC_STAT_UNIT_HITS, (uint64_t)((int)n - *ncompiled));
    }
    return rc;
}
