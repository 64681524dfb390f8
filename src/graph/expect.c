/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph/expect.c — the compiles a set of graphs will make for a set of targets, named to the
 * compile part before they run ([Note: precompiled headers] in compile/pch.c: in a burst, a header
 * set expected thrice gets its PCH at its first compile, one expected once or twice none).
 *
 * The one idea: what a cold prewarm compiles follows from its descriptions alone — each graph's
 * compile units for each target, a unit that several graphs share compiled once ([Note:
 * single-flight per unit] in unitobtain.c) — so each unit is named once per unit key, the key it is
 * stored under (with the toolchain and toolkit left out: they are the same for every unit of the
 * process).  Which header set a unit's compile has is the compile part's to say (kc_compile_expect_
 * builds its program as its compile would).  What cannot be known without the work a count should
 * save is what is stored already: a description a spec's memo vouched for (not read: it was keyed
 * before, so most likely stored) is left out, and one read whole counts every unit (at worst a PCH
 * that nothing uses, as every first compile of a burst made before counts existed).
 *
 * Callers: prewarm (kc_graph_expect_compiles_, from its announcer at a burst's first compile).
 * Must not: read a file or a vouched description (the warm start the spec direct mode saves), or
 * leave an error behind.
 */
#include "expect.h"

#include <stdlib.h>
#include <string.h>

#include "../common/internal.h"
#include "graph_internal.h"

/* The unit keys named so far. */
typedef struct keyset {
    kc_key *v;
    size_t n, cap;
} keyset;

/* 1 when k is new (added), 0 when it was named already; a set that cannot grow says "new". */
static int keyset_add(keyset *s, const kc_key *k) {
    for (size_t i = 0; i < s->n; i++)
        if (!memcmp(s->v[i].bytes, k->bytes, sizeof k->bytes)) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        kc_key *v = kc_realloc(s->v, cap * sizeof *v);
        if (!v) return 1;
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = *k;
    return 1;
}

/* d's units for t not named yet, each named once. */
static void expect_desc(const kc_graph_desc *d, const kc_target *t, keyset *named) {
    if (!d || kc_spec_direct_lazy_(d) || d->nkernels == 0 || d->nkernels > KC_UNITS_MAX || kc_graph_uncacheable_(d))
        return; /* vouched (most likely stored), nothing to compile, refused, or compiled without the cache */
    kc_kernel_src *ks = kc_calloc(d->nkernels, sizeof *ks);
    kc_units *u = kc_malloc(sizeof *u);
    if (ks && u) {
        for (size_t i = 0; i < d->nkernels; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
        kc_units_group(ks, d->nkernels, u);
        kc_unit_set s;
        kc_unit_set_init_(&s, ks, d->nkernels, u, t, "", "");
        for (size_t i = 0; i < u->n; i++) {
            kc_key key;
            if (kc_unit_key_(&s, i, &key, NULL) != KC_OK || keyset_add(named, &key))
                kc_compile_expect_(&ks[u->first[i]], t);
        }
    }
    free(u);
    free(ks);
}

void kc_graph_expect_compiles_(kc_graph_desc *const *descs, size_t n, const char *const *targets, size_t nt) {
    kc_err_saved saved;
    kc_err_save(&saved);
    keyset named = {NULL, 0, 0};
    for (size_t i = 0; i < nt; i++) {
        kc_target t;
        if (kc_target_parse(targets[i], &t) != KC_OK) continue; /* its compiles are refused before NVRTC */
        for (size_t g = 0; g < n; g++) expect_desc(descs[g], &t, &named);
    }
    free(named.v);
    kc_err_restore(&saved);
}
