/*
 * explain.c — why a graph misses: the stored entry nearest to a description, and which of
 * the key's named digests differ from it.
 *
 * The one idea: every entry keeps the digests of its key's components and finer notes (per
 * kernel source and options, per pass program, per tensor); the nearest entry is the same
 * key under another variant, else one that shares the graph, else the one with the most
 * equal components — and the answer is the names that differ ("arch", "kernels[0].source").
 *
 * Callers: the public kc_graph_explain (kcache explain).  Must not: count, refresh or
 * quarantine anything (it peeks), or cost a lookup anything (it is never on the hot path).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "graph_internal.h"

typedef struct ex_best {
    kc_explain *x;
    kc_cache *c;
    const kc_key_builder *kb;
    kc_key key;
    int best_shares, best_equal;
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
    /* Rank: same key (another arch) > shares the graph > most equal components. */
    int rank = same_key ? 1000 : shares * 100 + equal, best_rank = !b->best ? -1
        : (memcmp(kc_entry_key(b->best)->bytes, b->key.bytes, 16) == 0 ? 1000 : b->best_shares * 100 + b->best_equal);
    if (rank > best_rank) {
        kc_entry_free(b->best);
        b->best = e;
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

int kc_graph_explain(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_explain *x) {
    if (!c || !d || !variant || !x) return kc_err(KC_EINVAL, "kc_graph_explain: NULL argument");
    memset(x, 0, sizeof *x);
    kc_target t;
    int rc = kc_target_parse(variant, &t);
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
    x->hit = kc_cache_exists(c, &key, variant) == 1;
    if (!x->hit) {
        ex_best b = {x, c, kb, key, 0, 0, NULL, ""};
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
