/*
 * loaded.c — the process-wide table of loaded graphs, and loading one from an entry.
 *
 * [Note: loaded graphs] Same key and device → the same kc_graph, reference-counted; the
 * table holds one reference of its own, so a graph stays loaded for the life of the process
 * once used.  Loading resolves every kernel of the KERNELS section (one module per image),
 * decodes and re-validates both launch programs, and rebuilds the recorded wrapper chain
 * around the graph's own forward (run.c).  A bypassed graph is never published.
 *
 * Callers: lookup.c (find, load, publish); run.c and cudagraph.c use kc_graph's fields.
 * Must not: give the driver an image the KERNELS reader did not accept.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "program.h"

static pthread_mutex_t loaded_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_graph *loaded;

static void graph_destroy(kc_graph *g) {
    kc_wrapper_chain_free(g->chain);
    kc_program_free(g->fwd);
    kc_program_free(g->bwd);
    for (size_t i = 0; g->modules && i < g->nimages; i++) kc_module_free(g->modules[i]);
    free(g->modules);
    free(g->fns);
    free(g);
}

void kc_graph_release(kc_graph *g) {
    if (!g) return;
    if (__atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) graph_destroy(g);
}

int kc_graph_function(const kc_graph *g, int i, void **fn_out) {
    if (!g || !fn_out || i < 0 || (size_t)i >= g->nkernels) return kc_err(KC_EINVAL, "kc_graph_function: bad index");
    *fn_out = g->fns[i];
    return KC_OK;
}

/* Load every kernel of an entry; KC_EDRIVER when the driver refuses an image. */
int kc_graph_load(const kc_entry *e, const kc_key *key, int device, kc_graph **out) {
    kimg *v;
    size_t n, nimg;
    char *strs;
    int rc = kc_kernels_of(e, &v, &n, &nimg, &strs);
    if (rc) return rc;
    kc_graph *g = kc_calloc(1, sizeof *g);
    if (!g || !(g->modules = kc_calloc(nimg, sizeof *g->modules)) || !(g->fns = kc_calloc(n, sizeof *g->fns))) {
        if (g) free(g->modules);
        free(g);
        free(v);
        free(strs);
        return kc_err(KC_ENOMEM, "load: out of memory");
    }
    g->refs = 1;
    g->key = *key;
    g->device = device;
    g->nkernels = n;
    g->nimages = nimg;
    snprintf(g->variant, sizeof g->variant, "%s", kc_entry_variant(e));
    for (size_t i = 0; i < n && !rc; i++) {
        kc_module **m = &g->modules[v[i].image_index];
        if (!*m) rc = kc_module_load(m, device, v[i].image, v[i].len);
        if (!rc) rc = kc_module_function(*m, v[i].lowered, &g->fns[i]);
    }
    free(v);
    free(strs);
    /* The launch programs, then the recorded wrappers around this graph's own forward. */
    const void *pd;
    size_t pl;
    if (!rc && kc_entry_section(e, KC_SECTION_FORWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->fwd);
    else if (!rc) rc = kc_err(KC_ECORRUPT, "entry has no FORWARD section");
    if (!rc && kc_entry_section(e, KC_SECTION_BACKWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->bwd);
    for (size_t i = 0; !rc && g->fwd && i < g->fwd->nsteps; i++)
        if (g->fwd->steps[i].kernel < 0 || (size_t)g->fwd->steps[i].kernel >= n) rc = kc_err(KC_ECORRUPT, "step names no kernel");
    for (size_t i = 0; !rc && g->bwd && i < g->bwd->nsteps; i++)
        if (g->bwd->steps[i].kernel < 0 || (size_t)g->bwd->steps[i].kernel >= n) rc = kc_err(KC_ECORRUPT, "step names no kernel");
    if (!rc) {
        kc_callable base = {kc_graph_run_forward, g};
        rc = kc_wrapper_chain_build(&g->chain, e, &base);
    }
    if (rc) {
        graph_destroy(g);
        return rc;
    }
    *out = g;
    return KC_OK;
}

int kc_graph_device(const kc_graph *g) { return g->device; }

kc_graph *kc_loaded_find(const kc_key *key, int device) {
    kc_graph *out = NULL;
    pthread_mutex_lock(&loaded_mu);
    for (kc_graph *g = loaded; g; g = g->next)
        if (g->device == device && memcmp(g->key.bytes, key->bytes, 16) == 0) {
            __atomic_add_fetch(&g->refs, 1, __ATOMIC_ACQ_REL);
            out = g;
            break;
        }
    pthread_mutex_unlock(&loaded_mu);
    return out;
}

kc_graph *kc_loaded_publish(kc_graph *g, int keep) {
    /* Publish, unless another thread loaded the same graph meanwhile: use theirs. */
    pthread_mutex_lock(&loaded_mu);
    kc_graph *other = NULL;
    for (kc_graph *x = loaded; x; x = x->next)
        if (x->device == g->device && memcmp(x->key.bytes, g->key.bytes, 16) == 0) other = x;
    if (other) {
        __atomic_add_fetch(&other->refs, 1, __ATOMIC_ACQ_REL);
    } else if (keep) {
        g->refs = 2; /* the table's and the caller's */
        g->next = loaded;
        loaded = g;
    }
    pthread_mutex_unlock(&loaded_mu);
    if (other) {
        graph_destroy(g);
        g = other;
    }
    return g;
}
