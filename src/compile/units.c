/* SPDX-License-Identifier: Apache-2.0 */
/*
 * units.c — compile units and their parallel compile.
 *
 * The one idea: kernels that would be compiled from the same bytes (file, source, headers,
 * options, include digest, flags) are one NVRTC program with several name expressions, so a graph
 * of N kernels from one source compiles once; distinct units compile in parallel on one
 * process-wide pool (created on first use; without it they run inline).
 *
 * Only src/graph/ uses this (the lookup path groups and compiles; the KERNELS writer lays
 * images out by unit).  Must not: know anything of graphs, caches or entries.
 */
#include "units.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../common/pool.h"
#include "toolkit.h"

static kc_pool *g_pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) {
    if (kc_pool_new(&g_pool, 0) != KC_OK) g_pool = NULL; /* NULL runs inline */
}

#define SAME(x, y) (((x) == NULL && (y) == NULL) || ((x) && (y) && strcmp((x), (y)) == 0))
/* Kernels that can share one NVRTC program: same file, source, headers, options. */
static int same_unit(const kc_kernel_src *a, const kc_kernel_src *b) {
    if (!SAME(a->file, b->file) || strcmp(a->source, b->source) != 0 || !SAME(a->include_digest, b->include_digest) ||
        a->nheaders != b->nheaders || a->noptions != b->noptions || a->flags != b->flags)
        return 0;
    for (size_t h = 0; h < a->nheaders; h++)
        if (strcmp(a->headers[h].name, b->headers[h].name) || strcmp(a->headers[h].source, b->headers[h].source))
            return 0;
    for (size_t o = 0; o < a->noptions; o++)
        if (strcmp(a->options[o], b->options[o])) return 0;
    return 1;
}
#undef SAME

void kc_units_group(const kc_kernel_src *ks, size_t n, kc_units *u) {
    u->n = 0;
    if (n > KC_UNITS_MAX) return; /* kc_units_compile refuses it */
    int count[KC_UNITS_MAX] = {0};
    for (size_t i = 0; i < n && i < KC_UNITS_MAX; i++) {
        size_t k;
        for (k = 0; k < u->n; k++)
            if (same_unit(&ks[u->first[k]], &ks[i])) break;
        if (k == u->n) u->first[u->n++] = (int)i;
        u->unit_of[i] = (int)k;
        u->slot[i] = count[k]++;
    }
}

typedef struct job {
    const kc_kernel_src *ks;
    size_t nk;
    const kc_units *u;
    const kc_target *target;
    kc_compiled **out;
    int *rc;
    char **err;
    const int *which;
    kc_toolkit_watch *watch; /* the caller's: a PCH's reads are credited to it ([Note: a PCH's reads]) */
} job;

static void compile_job(void *ctx, size_t unit) {
    job *j = ctx;
    if (j->which && !j->which[unit]) return;
    const char *names[KC_UNITS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < j->nk; i++)
        if ((size_t)j->u->unit_of[i] == unit) names[n++] = j->ks[i].name;
    const kc_kernel_src *k = &j->ks[j->u->first[unit]];
    /* This runs on a pool thread: its record goes back to the caller's thread whole (status and
     * NVRTC log), never a message an earlier job left on this thread. */
    kc_error_clear();
    kc_toolkit_watch *was = kc_toolkit_watch_adopt_(j->watch);
    j->rc[unit] = kc_compile_names_for_(k, names, n, j->target, &j->out[unit]);
    kc_toolkit_watch_adopt_(was);
    const kc_error *e = kc_error_last();
    if (j->rc[unit] && e->code == j->rc[unit] && e->message[0]) j->err[unit] = kc_strdup(e->message);
}

int kc_units_compile(const kc_kernel_src *ks, size_t nk, const kc_units *u, const int *which, const kc_target *target,
                     const char *label, kc_compiled ***out, double *ms) {
    if (nk > KC_UNITS_MAX)
        return kc_err(KC_EINVAL, "%s: %zu kernels; at most %d compile together", label, nk, KC_UNITS_MAX);
    pthread_once(&pool_once, pool_init);
    size_t n = u->n;
    kc_compiled **res = kc_calloc(n ? n : 1, sizeof *res);
    int *rcs = kc_calloc(n ? n : 1, sizeof *rcs);
    char **errs = kc_calloc(n ? n : 1, sizeof *errs);
    int rc = KC_OK;
    if (!res || !rcs || !errs) {
        rc = kc_err(KC_ENOMEM, "compile: out of memory");
    } else {
        uint64_t t0 = kc_mono_ns();
        job j = {ks, nk, u, target, res, rcs, errs, which, kc_toolkit_watch_current_()};
        kc_pool_for(g_pool, n, compile_job, &j);
        *ms = (double)(kc_mono_ns() - t0) / 1e6;
        for (size_t i = 0; i < n; i++)
            if (rcs[i]) {
                rc = kc_err(rcs[i], "%s: %s", label,
                            errs[i] ? errs[i] : "its compile failed with no reason recorded (or no memory for it)");
                break;
            }
    }
    for (size_t i = 0; errs && i < n; i++) free(errs[i]);
    free(errs);
    free(rcs);
    if (rc) {
        kc_units_free(res, n);
        return rc;
    }
    *out = res;
    return KC_OK;
}

void kc_units_free(kc_compiled **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) kc_compiled_free(v[i]);
    free(v);
}
