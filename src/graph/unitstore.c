/* SPDX-License-Identifier: Apache-2.0 */
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
 * Callers: unitobtain.c (find, store, keys), build.c and cachecompile.c (kc_unit_set_init_,
 * kc_unit_key_), explain.c (unit keys).
 * Must not: count a graph lookup's outcome, or store a unit of a source that is not cacheable
 * (nothing asks it to), or parse the target again (kc_unit_set carries it parsed).
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
static size_t unit_names(const kc_unit_set *s, size_t unit, const char **names) {
    size_t n = 0;
    for (size_t i = 0; i < s->nk; i++)
        if ((size_t)s->u->unit_of[i] == unit) names[n++] = s->ks[i].name;
    return n;
}

void kc_unit_set_init_(kc_unit_set *s, const kc_kernel_src *ks, size_t nk, const kc_units *u, const kc_target *t,
                       const char *toolchain, const char *toolkit) {
    s->ks = ks, s->nk = nk, s->u = u, s->target = *t;
    kc_target_name(t, s->variant);
    s->toolchain = toolchain, s->toolkit = toolkit;
}

int kc_unit_key_(const kc_unit_set *s, size_t unit, kc_key *out, kc_key_builder **kb_out) {
    return kc_unit_key_at_(s, unit, KC_UNIT_RECORD_VERSION, out, kb_out);
}

/* The unit's compile inputs: file, source, headers and the name expressions that are not plain names. */
static void add_unit_inputs(kc_key_builder *kb, const kc_unit_set *s, size_t unit) {
    const kc_kernel_src *k = &s->ks[s->u->first[unit]];
    const char *names[KC_UNITS_MAX];
    size_t n = unit_names(s, unit, names);
    qsort(names, n, sizeof *names, cmp_str);
    kc_key_add_string(kb, KC_COMP_GRAPH, "unit.file", k->file ? k->file : "");
    kc_key_add_string(kb, KC_COMP_GRAPH, "unit.source", k->source);
    for (size_t h = 0; h < k->nheaders; h++) {
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.name", k->headers[h].name);
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.source", k->headers[h].source);
    }
    for (size_t i = 0; i < n;
         i++) /* a set: sorted, one each; plain names are not part of it ([Note: recorded names]) */
        if ((i == 0 || strcmp(names[i], names[i - 1]) != 0) && !plain_name(names[i]))
            kc_key_add_string(kb, KC_COMP_GRAPH, "unit.name", names[i]);
}

int kc_unit_key_at_(const kc_unit_set *s, size_t unit, unsigned record_version, kc_key *out, kc_key_builder **kb_out) {
    const kc_kernel_src *k = &s->ks[s->u->first[unit]];
    kc_key_builder *kb;
    int rc = kc_key_builder_new(&kb);
    if (rc) return rc;
    kc_key_add_u64(kb, KC_COMP_FORMAT, "unit_format", KC_ENTRY_FORMAT_VERSION);
    if (record_version) kc_key_add_u64(kb, KC_COMP_FORMAT, "unit_record", record_version); /* [Note: recorded names] */
    add_unit_inputs(kb, s, unit);
    char *norm = NULL;
    if (k->flags) kc_key_add_u64(kb, KC_COMP_OPTIONS, "kernel.flags", k->flags);
    rc = kc_options_normalize(k, &norm);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "options", norm);
    free(norm);
    if (!rc && k->include_digest) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "include_digest", k->include_digest);
    if (!rc && (k->flags & KC_KERNEL_TOOLKIT_HEADERS))
        rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "toolkit_headers", s->toolkit);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "nvrtc", s->toolchain);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_OPTIONS, "target", s->variant);
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
static int from_record(const kc_entry *rec, const kc_entry *img, int full, const kc_unit_set *s, size_t unit,
                       kc_compiled **res, kc_image_ref *ref, const char **lacking) {
    const char *names[KC_UNITS_MAX];
    char *lowered[KC_UNITS_MAX] = {0};
    size_t n = unit_names(s, unit, names);
    kc_image_ref want;
    const void *bytes;
    size_t len;
    *lacking = NULL;
    int rc = kc_unit_entry_read(rec, &want, NULL, 0, NULL);
    if (!rc && (strcmp(want.target, s->variant) != 0 || want.is_ptx != s->target.ptx))
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

/* What one kc_units_find_ learns as it goes: the records read, their images, the units still missing. */
typedef struct find_state {
    const kc_unit_set *s;
    const kc_key *ukeys;
    kc_compiled **res;
    kc_image_ref *refs;
    const char **lacking; /* may be NULL */
    size_t found, miss[KC_UNITS_MAX], nm;
    kc_image_ref had[KC_UNITS_MAX];
    int rec_ok[KC_UNITS_MAX]; /* a record read whose image was not (yet) found */
    int nremote;              /* units the remote served */
} find_state;

/* The local directory: every unit asked, one record and one image read each. */
static void find_local(kc_cache *c, find_state *f, const int *want) {
    for (size_t i = 0; i < f->s->u->n; i++) {
        if (f->res[i] || (want && !want[i])) continue;
        const char *lack = NULL;
        kc_entry *rec = NULL, *img = NULL;
        kc_image_ref ref;
        int rc = kc_cache_get_local_(c, &f->ukeys[i], KC_VARIANT_UNIT, &rec);
        if (!rc) rc = kc_unit_entry_read(rec, &ref, NULL, 0, NULL);
        if (!rc) f->had[i] = ref;
        if (!rc) rc = kc_cache_get_local_(c, &ref.id, KC_VARIANT_IMAGE, &img);
        f->rec_ok[i] = rc == KC_MISS && rec && !img; /* the record read, its image absent here */
        if (!rc) rc = from_record(rec, img, 0, f->s, i, f->res, &f->refs[i], &lack);
        if (rc == KC_OK) f->found++;
        else f->miss[f->nm++] = i;
        if (f->lacking && lack) f->lacking[i] = lack;
        kc_entry_free(rec);
        kc_entry_free(img);
    }
}

/* The remote, for the units the local pass missed: the records in one round trip, then their images
 * in one more. */
static void find_remote(kc_cache *c, find_state *f) {
    kc_key keys[KC_UNITS_MAX], ikeys[KC_UNITS_MAX];
    kc_entry *recs[KC_UNITS_MAX], *imgs[KC_UNITS_MAX];
    void *rraw[KC_UNITS_MAX], *iraw[KC_UNITS_MAX];
    size_t rl[KC_UNITS_MAX], il[KC_UNITS_MAX], ni = 0, at[KC_UNITS_MAX], nm = f->nm;
    for (size_t k = 0; k < nm; k++) keys[k] = f->ukeys[f->miss[k]];
    if (!kc_cache_remote_objects_(c, keys, KC_VARIANT_UNIT, nm, recs, rraw, rl)) return;
    for (size_t k = 0; k < nm; k++) {
        kc_image_ref ref;
        if (recs[k] && kc_unit_entry_read(recs[k], &ref, NULL, 0, NULL) == KC_OK) {
            ikeys[ni] = ref.id, at[ni++] = k;
            f->had[f->miss[k]] = ref, f->rec_ok[f->miss[k]] = 1;
        }
    }
    size_t nimg = ni ? kc_cache_remote_objects_(c, ikeys, KC_VARIANT_IMAGE, ni, imgs, iraw, il) : 0;
    for (size_t j = 0; j < ni; j++) {
        size_t k = at[j], i = f->miss[k];
        const char *lack = NULL;
        if (nimg && imgs[j]) f->rec_ok[i] = 0; /* found: refused or served, from_record says */
        int rc = nimg && imgs[j] ? from_record(recs[k], imgs[j], 1, f->s, i, f->res, &f->refs[i], &lack) : KC_MISS;
        if (rc == KC_OK) f->found++, f->nremote++;
        if (f->lacking && rc && lack) f->lacking[i] = lack;
        /* Kept locally — the image first, then the record that names it — when it served, or when it
         * is sound and lacks only names: a compile of the same bytes then stores both records' names. */
        if ((rc == KC_OK || lack) && kc_cache_keep_local_(c, &ikeys[j], KC_VARIANT_IMAGE, iraw[j], il[j]) == KC_OK)
            (void)kc_cache_keep_local_(c, &keys[k], KC_VARIANT_UNIT, rraw[k], rl[k]);
        if (nimg) kc_entry_free(imgs[j]), free(iraw[j]);
    }
    for (size_t k = 0; k < nm; k++) kc_entry_free(recs[k]), free(rraw[k]);
}

size_t kc_units_find_(kc_cache *c, const kc_unit_set *s, const int *want, const kc_key *ukeys, kc_compiled **res,
                      kc_image_ref *refs, const char **lacking, int *nremote) {
    find_state f; /* on the stack, as the lookup's other unit arrays: a lookup allocates nothing more for it */
    f.s = s, f.ukeys = ukeys, f.res = res, f.refs = refs, f.lacking = lacking, f.found = 0, f.nm = 0, f.nremote = 0;
    memset(f.rec_ok, 0, sizeof f.rec_ok);
    find_local(c, &f, want);
    if (f.nm) {
        find_remote(c, &f);
        say_images_gone(s->u, res, ukeys, f.had, f.rec_ok);
    }
    if (nremote) *nremote += f.nremote;
    return f.found;
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

int kc_units_store_(kc_cache *c, const kc_unit_set *s, size_t unit, const kc_key *ukey, const kc_compiled *r,
                    const char *toolchain_meta, kc_image_ref *ref) {
    const char *names[KC_UNITS_MAX];
    size_t n = unit_names(s, unit, names);
    int is_ptx = s->target.ptx;
    /* PTX is stored with its NUL: the driver takes a C string. */
    int rc = kc_image_ref_make(ref, s->variant, is_ptx, r->image, r->len + (is_ptx ? 1 : 0));
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
