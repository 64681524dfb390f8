/* SPDX-License-Identifier: Apache-2.0 */
/*
 * explain.c — why a graph misses: the stored entry nearest to a description, and which of
 * the key's named digests differ from it.
 *
 * The one idea: every entry keeps the digests of its key's components and finer notes (per
 * kernel source and options, per pass program, per tensor); the nearest entry is the same
 * key under another variant, else one that shares the graph, else the one with the most
 * equal components — and the answer is the names that differ ("arch", "kernels[0].source").
 *
 * Two levels ([Note: two levels] in kcache/entry.h).  Only graph entries are compared: images
 * and unit records hold no graph's digests (a unit record's components could look "nearer"
 * than any graph).  A stored graph entry whose image is missing (or, locally, unreadable) is
 * no hit — a lookup misses on it and recompiles that image's unit — so explain says miss, with
 * the entry itself as the nearest and "images[i]" for each image a lookup would not find.  And
 * the key of each compile unit of the lookup is appended to the digests as "unit[i]" (the unit
 * key of unit i for this variant, as the lookup computes it: unitstore.c), so a caller can ask
 * the cache which units are stored — a miss whose units are all stored compiles nothing.
 *
 * Callers: the public kc_graph_explain (kcache explain).  Must not: count, refresh or
 * quarantine anything (it peeks), or cost a lookup anything (it is never on the hot path).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "../compile/targets.h"
#include "graph_internal.h"

typedef struct ex_best {
    kc_explain *x;
    kc_cache *c;
    const kc_key_builder *kb;
    kc_key key;
    int best_shares, best_equal, best_rank;
    kc_entry *best;
    char best_name[80];
} ex_best;

static int digest_of(const kc_entry *e, const char *name, kc_digest *out) {
    for (size_t i = 0; i < kc_entry_digest_count(e); i++) {
        const char *n;
        kc_entry_digest_at(e, i, &n, out);
        if (strcmp(n, name) == 0) return 1;
    }
    return 0;
}

static int ex_visit(const kc_cache_item *it, void *ctx) {
    ex_best *b = ctx;
    if (strcmp(it->variant, KC_VARIANT_IMAGE) == 0 || strcmp(it->variant, KC_VARIANT_UNIT) == 0) return 0;
    kc_entry *e;
    if (kc_cache_peek(b->c, &it->key, it->variant, &e) != KC_OK) return 0;
    int equal = 0, shares = 0;
    for (int comp = 0; comp < KC_COMP_COUNT; comp++) {
        kc_digest mine, theirs;
        kc_key_component_digest(b->kb, (kc_component)comp, &mine);
        if (digest_of(e, kc_component_name((kc_component)comp), &theirs) && memcmp(mine.bytes, theirs.bytes, 16) == 0) {
            equal++;
            if (comp == KC_COMP_GRAPH) shares = 1;
        }
    }
    int same_key = memcmp(it->key.bytes, b->key.bytes, 16) == 0;
    /* Rank: same key (another arch) > shares the graph > most equal components; of those, the
     * variant asked for first (the variant is no component: an entry of another key under it
     * differs from this lookup in fewer ways than the same entry under another arch). */
    int rank = (same_key ? 1000 : shares * 100 + equal) * 2 + (strcmp(it->variant, b->x->variant) == 0);
    if (rank > b->best_rank) {
        kc_entry_free(b->best);
        b->best = e;
        b->best_rank = rank;
        b->best_shares = shares;
        b->best_equal = equal;
        char hex[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&it->key, hex);
        snprintf(b->best_name, sizeof b->best_name, "%s.%s", hex, it->variant);
    } else {
        kc_entry_free(e);
    }
    return 0;
}

static void add_diff(kc_explain *x, const char *name) {
    for (size_t i = 0; i < x->ndiffs; i++)
        if (strcmp(x->diffs[i], name) == 0) return;
    if (x->ndiffs < KC_EXPLAIN_MAX) snprintf(x->diffs[x->ndiffs++], sizeof x->diffs[0], "%s", name);
}

/* Append "unit[i]" = the key of each compile unit of `d` for `variant` (nothing when the units
 * cannot be keyed here: no toolchain, too many kernels — the graph's digests say enough then). */
static void add_unit_keys(kc_cache *c, const kc_graph_desc *d, const kc_target *variant, kc_explain *x) {
    if (d->nkernels == 0 || d->nkernels > KC_UNITS_MAX) return;
    kc_kernel_src *ks = kc_calloc(d->nkernels, sizeof *ks);
    kc_units *u = kc_malloc(sizeof *u);
    kc_toolchain_choice tc;
    char toolkit[33];
    if (ks && u && kc_cache_toolchain(c, &tc) == KC_OK && kc_graph_toolkit_id_(c, d, toolkit) == KC_OK) {
        for (size_t i = 0; i < d->nkernels; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
        kc_units_group(ks, d->nkernels, u);
        for (size_t i = 0; i < u->n && x->ndigests < KC_EXPLAIN_MAX; i++) {
            kc_key k;
            kc_unit_set us;
            kc_unit_set_init_(&us, ks, d->nkernels, u, variant, tc.id, toolkit);
            if (kc_unit_key_(&us, i, &k, NULL) != KC_OK) break;
            snprintf(x->digests[x->ndigests].name, sizeof x->digests[0].name, "unit[%zu]", i);
            kc_key_to_hex(&k, x->digests[x->ndigests++].digest);
        }
    }
    free(ks);
    free(u);
    kc_error_clear(); /* a unit that could not be keyed is not explain's failure */
}

/* Whether image `r` is there for a lookup: the local copy is the image referred to, or (none
 * here) the remote has it.  Peeks: nothing counted, refreshed or quarantined. */
static int image_there(kc_cache *c, const kc_image_ref *r) {
    kc_entry *img;
    int rc = kc_cache_peek(c, &r->id, KC_VARIANT_IMAGE, &img);
    if (rc == KC_OK) {
        rc = kc_image_entry_read(img, r, 0, NULL, NULL, NULL);
        kc_entry_free(img);
        return rc == KC_OK;
    }
    return rc != KC_ECORRUPT && kc_cache_exists(c, &r->id, KC_VARIANT_IMAGE) == 1;
}

/* A stored graph entry is a hit only if every image it refers to is there: else name them. */
static void check_images(kc_cache *c, const kc_key *key, const char *variant, kc_explain *x) {
    kc_entry *e;
    kc_image_ref *refs;
    size_t n;
    if (kc_cache_peek(c, key, variant, &e) != KC_OK)
        return; /* only the remote has it: its images are fetched with it */
    if (kc_entry_images(e, &refs, &n) == KC_OK) {
        for (size_t i = 0; i < n; i++) {
            if (image_there(c, &refs[i])) continue;
            char name[32];
            snprintf(name, sizeof name, "images[%zu]", i);
            add_diff(x, name);
        }
        free(refs);
    }
    kc_entry_free(e);
    if (x->ndiffs) {
        x->hit = 0;
        x->have_nearest = 1; /* the entry itself: what differs is what is missing under it */
        x->nearest_shares_graph = 1;
        snprintf(x->nearest, sizeof x->nearest, "%s.%s", x->key, variant);
    }
    kc_error_clear();
}

int kc_graph_explain(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_explain *x) {
    if (!c || !d || !variant || !x) return kc_err(KC_EINVAL, "kc_graph_explain: NULL argument");
    int rrc = kc_spec_direct_ready_(d); /* [Note: spec direct mode] */
    if (rrc) return rrc;
    unsigned version = x->version;
    int vrc = kc_api_version("kc_graph_explain", "kc_explain", "KC_EXPLAIN_INIT", version, KC_EXPLAIN_VERSION);
    if (vrc) return vrc;
    memset(x, 0, sizeof *x); /* version 1 is the only one: its size is the struct's */
    x->version = version;
    kc_target t;
    int rc = kc_target_known_(variant, "kc_graph_explain", &t); /* [Note: target check] */
    if (rc) return rc;
    kc_key key;
    kc_key_builder *kb;
    if ((rc = kc_graph_key_in(c, d, &key, &kb))) return rc;
    kc_key_to_hex(&key, x->key);
    snprintf(x->variant, sizeof x->variant, "%s", variant);
    for (size_t i = 0; i < kc_key_digest_count(kb) && x->ndigests < KC_EXPLAIN_MAX; i++) {
        const char *name;
        kc_digest dg;
        kc_key_digest_at(kb, i, &name, &dg);
        snprintf(x->digests[x->ndigests].name, sizeof x->digests[0].name, "%s", name);
        kc_digest_to_hex(&dg, x->digests[x->ndigests++].digest);
    }
    add_unit_keys(c, d, &t, x);
    x->hit = kc_cache_exists(c, &key, variant) == 1;
    if (x->hit) check_images(c, &key, variant, x);
    else {
        ex_best b = {x, c, kb, key, 0, 0, -1, NULL, ""};
        rc = kc_cache_foreach(c, ex_visit, &b);
        if (b.best) {
            x->have_nearest = 1;
            x->nearest_shares_graph = b.best_shares;
            snprintf(x->nearest, sizeof x->nearest, "%s", b.best_name);
            if (strcmp(kc_entry_variant(b.best), variant) != 0) add_diff(x, "arch");
            /* Every named digest of either side that is missing on the other or differs. */
            for (size_t i = 0; i < kc_key_digest_count(kb); i++) {
                const char *name;
                kc_digest mine, theirs;
                kc_key_digest_at(kb, i, &name, &mine);
                if (!digest_of(b.best, name, &theirs) || memcmp(mine.bytes, theirs.bytes, 16) != 0) add_diff(x, name);
            }
            for (size_t i = 0; i < kc_entry_digest_count(b.best); i++) {
                const char *name;
                kc_digest theirs;
                kc_entry_digest_at(b.best, i, &name, &theirs);
                int found = 0;
                for (size_t k = 0; k < kc_key_digest_count(kb) && !found; k++) {
                    const char *n2;
                    kc_digest mine;
                    kc_key_digest_at(kb, k, &n2, &mine);
                    found = strcmp(n2, name) == 0;
                }
                if (!found) add_diff(x, name);
            }
            kc_entry_free(b.best);
        }
    }
    kc_key_builder_free(kb);
    return rc;
}
