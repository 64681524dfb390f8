/*
 * prewarm.c — compile a manifest's graphs for every target of a fleet, ahead of time.
 *
 * The one idea: a prewarm is many kc_graph_compile calls run by a few worker threads that
 * take variants from a shared counter; each call already does the right thing (a hit, a
 * single-flight compile shared with other processes, a store).  What prewarm adds is
 * honesty about the result: its whole purpose is a warm cache, so a variant that compiled
 * but could not be stored is a failure here, even though kc_graph_compile (for a runtime)
 * calls it a success.  It also sums what the variants' compile units cost (kc_graph_info's
 * units and units_compiled): units shared between graphs are single-flighted below, per unit
 * ([Note: single-flight per unit] in graph/unitstore.c), so two workers that need one unit at
 * the same moment compile it once — one waits on the unit's lock and then finds it stored —
 * and the report's units_compiled counts it once.
 *
 * Callers: the public kc_prewarm (the CLI's prewarm and demo).
 *
 * Must not: use the library's compile pool for its workers (kc_units_compile in
 * compile/units.c waits on that pool, so a worker inside it would deadlock it); report a variant done before it is in
 * the cache.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../common/internal.h"
#include "kcache/prewarm.h"

/* The report as the caller sees it, plus the graph names it lends out. */
typedef struct report_owned {
    kc_prewarm_report pub; /* first: the caller's pointer is this */
    char **names;
    size_t nnames;
} report_owned;

static const char NO_ERROR[] = "", NO_MEMORY[] = "(out of memory for the message)";

void kc_prewarm_report_free(kc_prewarm_report *r) {
    if (!r) return;
    report_owned *o = (report_owned *)r;
    for (size_t i = 0; r->results && i < r->variants; i++)
        if (r->results[i].error != NO_ERROR && r->results[i].error != NO_MEMORY) free((char *)r->results[i].error);
    for (size_t i = 0; i < o->nnames; i++) free(o->names[i]);
    free(o->names);
    free(r->results);
    free(o);
}

typedef struct pw_run {
    kc_cache *c;
    const kc_manifest *m;
    const kc_prewarm_options *o;
    kc_graph_desc **descs;
    report_owned *rep;
    size_t next;
    uint64_t t0;
    pthread_mutex_t mu;
} pw_run;

static void run_one(pw_run *p, size_t i) {
    kc_prewarm_result *r = &p->rep->pub.results[i];
    const char *arch = kc_manifest_arch(p->m, r->arch);
    int rc = kc_graph_compile(p->c, p->descs[r->graph], arch, &r->info);
    int unstored = rc == KC_OK && r->info.source == KC_FROM_COMPILE && r->info.store_status != KC_OK;
    if (unstored) rc = r->info.store_status;
    if (rc != KC_OK) {
        const char *why = kc_error_last()->message;
        size_t n = strlen(why) + 32;
        char *e = kc_malloc(n);
        if (e) snprintf(e, n, "%s%s", unstored ? "compiled, but not stored: " : "", why);
        r->error = e ? e : NO_MEMORY;
    }
    r->status = rc;
    if (rc == KC_OK && r->info.source == KC_FROM_DISK && p->o->publish) {
        kc_key k; /* a local hit the remote may lack; a failure to publish is counted by the cache */
        if (kc_key_from_hex(&k, r->info.key) == KC_OK) kc_cache_publish(p->c, &k, arch);
    }
    pthread_mutex_lock(&p->mu);
    kc_prewarm_report *rep = &p->rep->pub;
    rep->done++;
    if (r->info.units > 0) rep->units += (size_t)r->info.units; /* compiled, or found stored, even if it failed later */
    if (r->info.units_compiled > 0) rep->units_compiled += (size_t)r->info.units_compiled;
    if (r->info.compile_ms > 0) rep->compile_ms += r->info.compile_ms;
    if (rc) rep->failed++;
    else if (r->info.source == KC_FROM_DISK || r->info.source == KC_FROM_REMOTE) rep->hits++;
    else if (r->info.source == KC_FROM_BYPASS) rep->bypassed++;
    else rep->compiled++;
    rep->seconds = (double)(kc_mono_ns() - p->t0) / 1e9;
    if (p->o->progress) p->o->progress(rep, i, p->o->ctx);
    pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg) {
    pw_run *p = arg;
    for (size_t i; (i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->rep->pub.variants;) run_one(p, i);
    return NULL;
}

/* Load every spec of the manifest; on failure nothing is kept. */
static int load_descs(const kc_manifest *m, kc_graph_desc ***out) {
    size_t n = kc_manifest_graph_count(m);
    kc_graph_desc **d = kc_calloc(n, sizeof *d);
    if (!d) return kc_err(KC_ENOMEM, "prewarm: out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc = kc_graph_desc_load(&d[i], kc_manifest_graph(m, i));
        if (rc) {
            kc_err_prefix(rc, "manifest graphs[%zu]", i);
            for (size_t k = 0; k < i; k++) kc_graph_desc_free(d[k]);
            free(d);
            return rc;
        }
    }
    *out = d;
    return KC_OK;
}

static report_owned *report_new(const kc_manifest *m, kc_graph_desc **descs) {
    size_t ng = kc_manifest_graph_count(m), na = kc_manifest_arch_count(m);
    report_owned *o = kc_calloc(1, sizeof *o);
    if (!o) return NULL;
    o->names = kc_calloc(ng, sizeof *o->names);
    o->pub.results = kc_calloc(ng * na, sizeof *o->pub.results);
    if (!o->names || !o->pub.results) {
        kc_prewarm_report_free(&o->pub);
        return NULL;
    }
    for (; o->nnames < ng; o->nnames++)
        if (!(o->names[o->nnames] = kc_strdup(kc_graph_desc_name(descs[o->nnames])))) {
            kc_prewarm_report_free(&o->pub);
            return NULL;
        }
    o->pub.graphs = ng;
    o->pub.variants = ng * na;
    for (size_t g = 0, k = 0; g < ng; g++)
        for (size_t a = 0; a < na; a++, k++) {
            o->pub.results[k].graph = g;
            o->pub.results[k].arch = a;
            o->pub.results[k].name = o->names[g];
            o->pub.results[k].error = NO_ERROR;
        }
    return o;
}

int kc_prewarm(kc_cache *c, const kc_manifest *m, const kc_prewarm_options *opts, kc_prewarm_report **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_prewarm: out is NULL");
    *out = NULL;
    if (!c || !m) return kc_err(KC_EINVAL, "kc_prewarm: NULL argument");
    kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
    if (opts) {
        if (opts->version != KC_PREWARM_OPTIONS_VERSION)
            return kc_err(KC_EVERSION, "kc_prewarm_options version %u is not supported (this build: %d)",
                          opts->version, KC_PREWARM_OPTIONS_VERSION);
        o = *opts;
    }
    if (kc_manifest_arch_count(m) == 0) return kc_err(KC_EINVAL, "the manifest names no target (\"archs\"); give some");
    kc_graph_desc **descs = NULL;
    int rc = load_descs(m, &descs);
    if (rc) return rc;
    pw_run p = {c, m, &o, descs, report_new(m, descs), 0, kc_mono_ns(), PTHREAD_MUTEX_INITIALIZER};
    if (!p.rep) {
        rc = kc_err(KC_ENOMEM, "prewarm: out of memory");
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        size_t threads = o.jobs > 0 ? (size_t)o.jobs : cpus > 0 ? (size_t)cpus : 1;
        if (threads > p.rep->pub.variants) threads = p.rep->pub.variants;
        pthread_t *t = threads > 1 ? kc_calloc(threads - 1, sizeof *t) : NULL;
        size_t started = 0;
        for (; t && started < threads - 1; started++) /* fewer threads if some cannot start */
            if (pthread_create(&t[started], NULL, worker, &p) != 0) break;
        worker(&p); /* this thread works too */
        for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
        free(t);
        kc_prewarm_report *rep = &p.rep->pub;
        rep->seconds = (double)(kc_mono_ns() - p.t0) / 1e9;
        for (size_t i = 0; i < rep->variants; i++)
            if (rep->results[i].status != KC_OK) {
                const kc_prewarm_result *r = &rep->results[i];
                rc = kc_err(r->status, "%zu of %zu variants failed; first: %s %s: %s", rep->failed, rep->variants,
                            r->name, kc_manifest_arch(m, r->arch), r->error);
                break;
            }
        *out = rep;
    }
    for (size_t i = 0; i < kc_manifest_graph_count(m); i++) kc_graph_desc_free(descs[i]);
    free(descs);
    pthread_mutex_destroy(&p.mu);
    return rc;
}
