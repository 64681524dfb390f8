/* SPDX-License-Identifier: Apache-2.0 */
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
 * ([Note: single-flight per unit] in graph/unitobtain.c), so two workers that need one unit at
 * the same moment compile it once — one waits on the unit's lock and then finds it stored —
 * and the report's units_compiled counts it once.
 *
 * Below it, coverage (kc_manifest_covered): whether every variant a manifest asks for is in the
 * cache, read without compiling or counting anything (the section's own note says how).
 *
 * Callers: the public kc_prewarm (the CLI's prewarm and demo) and kc_manifest_covered (the CLI's
 * coverage and export --manifest).
 *
 * Must not: use the library's compile pool for its workers (kc_units_compile in
 * compile/units.c waits on that pool, so a worker inside it would deadlock it); report a variant done before it is in
 * the cache.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../cache/internal.h" /* kc_cache_set_origin_manifest_ */
#include "../common/internal.h"
#include "../compile/pch.h"  /* kc_pch_burst_, kc_pch_announce_ */
#include "../graph/expect.h" /* kc_graph_expect_compiles_ */
#include "kcache/cuda.h"     /* kc_cuda_capability: coverage for a device */
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


/* Offer a graph entry to the remote with what a host needs to hit it: its images first (a
 * graph entry on the remote must find its images there: [Note: two levels]), then the entry.
 * Each is refused when this cache may not vouch for it ([Note: provenance]); counted there. */
/* manifest.c: the file a manifest was read from. */
const char *kc_manifest_origin_(const kc_manifest *m);

static void publish_graph(kc_cache *c, const kc_key *key, const char *arch) {
    kc_entry *e;
    if (kc_cache_peek(c, key, arch, &e) != KC_OK) return;
    kc_image_ref *refs = NULL;
    size_t n = 0;
    int ok = kc_entry_images(e, &refs, &n) == KC_OK;
    for (size_t i = 0; ok && i < n; i++) ok = kc_cache_publish(c, &refs[i].id, KC_VARIANT_IMAGE) >= 0;
    free(refs);
    kc_entry_free(e);
    if (ok) kc_cache_publish(c, key, arch);
}

static void run_one(pw_run *p, size_t i) {
    kc_prewarm_result *r = &p->rep->pub.results[i];
    const char *arch = kc_manifest_arch(p->m, r->arch);
    r->info.version = KC_GRAPH_INFO_VERSION; /* the report is calloc'd: its infos are this build's version */
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
        if (kc_key_from_hex(&k, r->info.key) == KC_OK) publish_graph(p->c, &k, arch);
    }
    pthread_mutex_lock(&p->mu);
    kc_prewarm_report *rep = &p->rep->pub;
    rep->done++;
    /* Units compiled, or found stored.  A variant whose compile failed counts only what it compiled:
     * the units it did not obtain (the failing one among them) were neither compiled nor found. */
    int failed_compile = rc != KC_OK && !unstored;
    int units = failed_compile ? r->info.units_compiled : r->info.units;
    if (units > 0) rep->units += (size_t)units;
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

/* The burst's announcer ([Note: precompiled headers] in compile/pch.c), run at its first compile:
 * every graph of the manifest for every target, a unit that graphs share once. */
static void announce(void *ctx) {
    pw_run *p = ctx;
    size_t na = kc_manifest_arch_count(p->m);
    const char **t = kc_calloc(na ? na : 1, sizeof *t);
    if (!t) return; /* the sets go unannounced: a PCH at a set's second compile */
    for (size_t i = 0; i < na; i++) t[i] = kc_manifest_arch(p->m, i);
    kc_graph_expect_compiles_(p->descs, kc_manifest_graph_count(p->m), t, na);
    free(t);
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

/* Every target of the manifest against the toolchain the cache's keys use, before any work
 * ([Note: target check] in kcache/target.h): KC_OK, or KC_EARCH naming the first unknown one. */
static int targets_supported(kc_cache *c, const kc_manifest *m) {
    kc_target_list l = KC_TARGET_LIST_INIT;
    int rc = kc_cache_targets(c, &l);
    for (size_t i = 0; rc == KC_OK && i < kc_manifest_arch_count(m); i++) {
        char w[64];
        snprintf(w, sizeof w, "manifest archs[%zu]", i);
        rc = kc_target_check(&l, kc_manifest_arch(m, i), w, NULL);
    }
    return rc;
}

int kc_prewarm(kc_cache *c, const kc_manifest *m, const kc_prewarm_options *opts, kc_prewarm_report **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_prewarm: out is NULL");
    *out = NULL;
    if (!c || !m) return kc_err(KC_EINVAL, "kc_prewarm: NULL argument");
    kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
    if (opts) {
        if (opts->version != KC_PREWARM_OPTIONS_VERSION)
            return kc_err(KC_EVERSION, "kc_prewarm_options version %u is not supported (this build: %d)", opts->version,
                          KC_PREWARM_OPTIONS_VERSION);
        o = *opts;
    }
    if (kc_manifest_arch_count(m) == 0) return kc_err(KC_EINVAL, "the manifest names no target (\"archs\"); give some");
    kc_graph_desc **descs = NULL;
    int rc = targets_supported(c, m); /* before any work: [Note: target check] */
    if (!rc) rc = load_descs(m, &descs);
    if (rc) return rc;
    kc_cache_set_origin_manifest_(c, kc_manifest_origin_(m)); /* what it writes records the manifest */
    pw_run p = {c, m, &o, descs, report_new(m, descs), 0, kc_mono_ns(), PTHREAD_MUTEX_INITIALIZER};
    if (!p.rep) {
        rc = kc_err(KC_ENOMEM, "prewarm: out of memory");
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        size_t threads = o.jobs > 0 ? (size_t)o.jobs : cpus > 0 ? (size_t)cpus : 1;
        if (threads > p.rep->pub.variants) threads = p.rep->pub.variants;
        kc_pch_burst_(1); /* many compiles, named: a set expected thrice makes its PCH at its first */
        int announced = kc_pch_announce_(announce, &p) == 0;
        pthread_t *t = threads > 1 ? kc_calloc(threads - 1, sizeof *t) : NULL;
        size_t started = 0;
        for (; t && started < threads - 1; started++) /* fewer threads if some cannot start */
            if (pthread_create(&t[started], NULL, worker, &p) != 0) break;
        worker(&p); /* this thread works too */
        for (size_t i = 0; i < started; i++) pthread_join(t[i], NULL);
        if (announced) kc_pch_announce_(NULL, &p); /* before p goes: a compile elsewhere may be running it */
        kc_pch_burst_(0);
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

/* ---- coverage: is every variant a manifest asks for in the cache? ----
 *
 * The one idea: a variant is covered only when a lookup would hit it without compiling — its
 * graph entry stored and every image it refers to there and sound — so the check is the
 * lookup's own two reads done as maintenance reads (kc_cache_peek, kc_entry_resolve: nothing
 * counted, refreshed or quarantined), and for a device it walks the lookup's candidate list
 * (kc_target_candidates) in the lookup's order.  A missing one gets explain's reason.  It
 * compiles nothing, and lives here rather than in a file of its own only because it reads a
 * manifest's specs the way prewarm does (load_descs). */

typedef struct cov_owned {
    kc_coverage_report pub; /* first: the caller's pointer is this */
    char **names;           /* per graph */
    char **targets;
    size_t ngraphs, ntargets;
} cov_owned;

static const char COV_NONE[] = "";

void kc_coverage_report_free(kc_coverage_report *r) {
    if (!r) return;
    cov_owned *o = (cov_owned *)r;
    for (size_t i = 0; r->results && i < o->ngraphs * o->ntargets; i++)
        if (r->results[i].reason != COV_NONE && r->results[i].reason != NO_MEMORY) free((char *)r->results[i].reason);
    for (size_t i = 0; o->names && i < o->ngraphs; i++) free(o->names[i]);
    for (size_t i = 0; o->targets && i < o->ntargets; i++) free(o->targets[i]);
    free(o->names);
    free(o->targets);
    free(r->results);
    free(o);
}

/* A reason, formatted and owned by the report. */
static const char *cov_reason(const char *fmt, ...) KC_PRINTF(1, 2);
static const char *cov_reason(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = kc_strdup(buf);
    return s ? s : NO_MEMORY;
}

/* Why a graph is missing for `want`, by explain: `what` ("not stored"), the nearest stored entry and what differs. */
static const char *cov_explain(kc_cache *c, const kc_graph_desc *d, const char *want, const char *what) {
    kc_explain *x = kc_malloc(sizeof *x);
    if (!x) return NO_MEMORY;
    x->version = KC_EXPLAIN_VERSION;
    const char *r;
    if (kc_graph_explain(c, d, want, x) != KC_OK) {
        r = cov_reason("%s (explain failed: %s)", what, kc_error_last()->message);
    } else if (!x->have_nearest) {
        r = cov_reason("%s; the cache holds no entry to compare with", what);
    } else {
        char diffs[512] = "";
        size_t o = 0;
        for (size_t i = 0; i < x->ndiffs && o + 1 < sizeof diffs; i++) {
            int w = snprintf(diffs + o, sizeof diffs - o, "%s%s", i ? " " : "", x->diffs[i]);
            if (w < 0) break;
            o += (size_t)w < sizeof diffs - o ? (size_t)w : sizeof diffs - o - 1;
        }
        r = cov_reason("%s; nearest %s%s differs in: %s", what, x->nearest,
                       x->nearest_shares_graph ? " (same graph)" : "", x->ndiffs ? diffs : "nothing named");
    }
    free(x);
    return r;
}

/* One graph for one target: the first of `cand` (n of them) stored and sound is a hit. */
static void cov_one(kc_cache *c, const kc_graph_desc *d, const kc_key *key, char (*cand)[16], size_t n,
                    const char *want, const char *what, kc_coverage_result *r) {
    const char *bad = NULL;
    for (size_t i = 0; i < n && !r->hit; i++) {
        kc_entry *e = NULL;
        int rc = kc_cache_peek(c, key, cand[i], &e);
        if (rc == KC_OK && (rc = kc_entry_resolve(c, e)) == KC_OK) {
            r->hit = 1;
            snprintf(r->variant, sizeof r->variant, "%s", cand[i]);
        } else if (rc != KC_MISS || e) {
            /* the graph entry is there (or unreadable), but a lookup could not use it */
            if (!bad)
                bad = cov_reason("graph entry %s.%s is stored, but %s", r->key, cand[i], kc_error_last()->message);
        }
        kc_entry_free(e);
    }
    if (r->hit) {
        if (bad && bad != NO_MEMORY) free((char *)bad);
        r->reason = COV_NONE;
    } else {
        r->reason = bad ? bad : cov_explain(c, d, want, what);
    }
}

/* What a coverage check asks for each graph: a device's candidates (in the lookup's order) and
 * its own variant, or (device KC_COVERAGE_ARCHS) each of the manifest's targets alone. */
typedef struct cov_ask {
    int device;
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    size_t ncand;
    char devvar[16], what[96];
} cov_ask;

static int cov_ask_init(const kc_manifest *m, int device, cov_ask *a) {
    a->device = device, a->ncand = 0, a->devvar[0] = '\0';
    snprintf(a->what, sizeof a->what, "not stored");
    if (device < 0) {
        if (kc_manifest_arch_count(m) == 0)
            return kc_err(KC_EINVAL, "the manifest names no target (\"archs\"); give some");
        return KC_OK;
    }
    int major, minor, rc = kc_cuda_capability(device, &major, &minor);
    if (rc) return kc_err_prefix(rc, "coverage for device %d", device);
    a->ncand = kc_target_candidates(major, minor, a->cand, KC_TARGET_CANDIDATES_MAX);
    kc_variant_for_device(major, minor, a->devvar);
    if (a->ncand == 0)
        return kc_err(KC_EARCH, "device %d: compute capability %d.%d has no targets", device, major, minor);
    snprintf(a->what, sizeof a->what, "no variant a %d.%d device loads is stored (%zu candidates, %s to %s)", major,
             minor, a->ncand, a->cand[0], a->cand[a->ncand - 1]);
    return KC_OK;
}

/* The report's arrays: ng graphs × nt targets, each result with no reason yet; the targets named. */
static int cov_alloc(const kc_manifest *m, const cov_ask *a, size_t ng, size_t nt, cov_owned **out) {
    int rc = KC_OK;
    cov_owned *o = kc_calloc(1, sizeof *o);
    if (o) {
        o->names = kc_calloc(ng, sizeof *o->names);
        o->targets = kc_calloc(nt, sizeof *o->targets);
        o->pub.results = kc_calloc(ng * nt, sizeof *o->pub.results);
        o->ngraphs = ng, o->ntargets = nt;
    }
    if (!o || !o->names || !o->targets || !o->pub.results) rc = kc_err(KC_ENOMEM, "coverage: out of memory");
    for (size_t t = 0; !rc && t < nt; t++)
        if (!(o->targets[t] = kc_strdup(a->device >= 0 ? a->devvar : kc_manifest_arch(m, t))))
            rc = kc_err(KC_ENOMEM, "coverage: out of memory");
    for (size_t i = 0; !rc && i < ng * nt; i++) o->pub.results[i].reason = COV_NONE;
    if (!rc) {
        o->pub.graphs = ng, o->pub.targets = nt, o->pub.device = a->device;
        o->pub.target_names = (const char *const *)o->targets;
    }
    *out = o;
    return rc;
}

/* Graph g of the manifest for every target of the report. */
static int cov_graph(kc_cache *c, const kc_graph_desc *d, size_t g, cov_ask *a, cov_owned *o) {
    kc_coverage_report *rep = &o->pub;
    size_t nt = o->ntargets;
    kc_key key;
    int rc = KC_OK;
    if (!(o->names[g] = kc_strdup(kc_graph_desc_name(d)))) rc = kc_err(KC_ENOMEM, "coverage: out of memory");
    else if ((rc = kc_graph_key(d, &key, NULL))) kc_err_prefix(rc, "manifest graphs[%zu]", g);
    for (size_t t = 0; !rc && t < nt; t++) {
        kc_coverage_result *r = &rep->results[g * nt + t];
        r->graph = g, r->target = t, r->name = o->names[g];
        kc_key_to_hex(&key, r->key);
        if (a->device < 0) snprintf(a->cand[0], sizeof a->cand[0], "%s", o->targets[t]), a->ncand = 1;
        cov_one(c, d, &key, a->cand, a->ncand, o->targets[t], a->what, r);
        if (r->hit) rep->covered++;
        else rep->missing++;
    }
    return rc;
}

int kc_manifest_covered(kc_cache *c, const kc_manifest *m, int device, kc_coverage_report **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_manifest_covered: out is NULL");
    *out = NULL;
    if (!c || !m) return kc_err(KC_EINVAL, "kc_manifest_covered: NULL argument");
    if (device < KC_COVERAGE_ARCHS) return kc_err(KC_EINVAL, "kc_manifest_covered: device %d is not a device", device);
    cov_ask a;
    int rc = cov_ask_init(m, device, &a);
    if (rc) return rc;
    kc_graph_desc **descs = NULL;
    if ((rc = load_descs(m, &descs))) return rc;
    size_t ng = kc_manifest_graph_count(m), nt = device >= 0 ? 1 : kc_manifest_arch_count(m);
    cov_owned *o = NULL;
    rc = cov_alloc(m, &a, ng, nt, &o);
    for (size_t g = 0; !rc && g < ng; g++) rc = cov_graph(c, descs[g], g, &a, o);
    for (size_t i = 0; i < ng; i++) kc_graph_desc_free(descs[i]);
    free(descs);
    kc_coverage_report *rep = o ? &o->pub : NULL;
    if (rc) {
        kc_coverage_report_free(rep);
        return rc;
    }
    *out = rep;
    if (!rep->missing) return KC_OK;
    for (size_t i = 0; i < ng * nt; i++)
        if (!rep->results[i].hit)
            return kc_err(KC_MISS, "%zu of %zu variants missing; first: %s %s: %s", rep->missing, ng * nt,
                          rep->results[i].name, rep->target_names[rep->results[i].target], rep->results[i].reason);
    return KC_MISS;
}
