/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache_manifest.c — the Cache methods over a prewarm manifest: prewarm, coverage, and export with
 * manifest= (as `kcache export --manifest`: every graph x target there, or refused).
 *
 * The one idea: load the manifest (kc_manifest_load; archs= replaces its targets), call libkcache
 * without the GIL, and give its report as a dict (the field names `kcache ... --json` prints).  A
 * prewarm that failed raises the first failure's error with the whole report in .report.
 *
 * Callers: cache.c's method table (prewarm, coverage), cache_ops.c (kcpy_export_manifest).
 * Must not: decide anything libkcache decides; hold the GIL across a call that may block.
 */
#include "kcpy.h"

#include "kcache/bundle.h"
#include "kcache/prewarm.h"

#include <stdlib.h>
#include <string.h>

/* The manifest at `path` with `archs` (None, a str "sm_80,sm_90", or a sequence of str) as its
 * targets; NULL with an exception set. */
static kc_manifest *manifest_open(PyObject *path, PyObject *archs) {
    PyObject *keep = NULL, *list = NULL;
    const char *p = kcpy_path(path, "manifest", &keep);
    if (!p) return NULL;
    const char *a = NULL;
    if (archs && archs != Py_None) {
        PyObject *t = NULL;
        const char **v = NULL;
        PyObject *comma = PyUnicode_FromString(",");
        if (comma && kcpy_text_seq(archs, "archs", 1, &t, &v) == 0) list = PyUnicode_Join(comma, t);
        Py_XDECREF(comma);
        Py_XDECREF(t);
        PyMem_Free(v);
        if (!list || !(a = kcpy_text(list, "archs"))) {
            Py_XDECREF(list);
            Py_DECREF(keep);
            return NULL;
        }
    }
    kc_manifest *m = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_manifest_load(&m, p);
    if (rc == KC_OK && a) rc = kc_manifest_set_archs(m, a);
    Py_END_ALLOW_THREADS if (rc != KC_OK) {
        kcpy_raise(rc); /* before anything else calls kcache on this thread */
        kc_manifest_free(m);
        m = NULL;
    }
    Py_XDECREF(list);
    Py_DECREF(keep);
    return m;
}

static const char *result_word(const kc_prewarm_result *x) {
    return x->status                          ? "failed"
           : x->info.source == KC_FROM_DISK   ? "hit"
           : x->info.source == KC_FROM_REMOTE ? "remote_hit"
           : x->info.source == KC_FROM_BYPASS ? "bypassed"
                                              : "compiled";
}

static PyObject *prewarm_dict(const kc_prewarm_report *r, const kc_manifest *m) {
    PyObject *d = Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:d,s:n,s:n,s:d}", "graphs", (Py_ssize_t)r->graphs,
                                "variants", (Py_ssize_t)r->variants, "compiled", (Py_ssize_t)r->compiled, "hits",
                                (Py_ssize_t)r->hits, "bypassed", (Py_ssize_t)r->bypassed, "failed",
                                (Py_ssize_t)r->failed, "seconds", r->seconds, "units", (Py_ssize_t)r->units,
                                "units_compiled", (Py_ssize_t)r->units_compiled, "compile_ms", r->compile_ms);
    PyObject *list = d ? PyList_New((Py_ssize_t)r->variants) : NULL;
    for (size_t i = 0; list && i < r->variants; i++) {
        const kc_prewarm_result *x = &r->results[i];
        PyObject *o = Py_BuildValue("{s:s,s:s,s:s,s:s,s:s,s:s,s:d,s:i,s:i}", "graph", x->name ? x->name : "", "arch",
                                    kc_manifest_arch(m, x->arch), "key", x->info.key, "result", result_word(x),
                                    "status", kc_status_str(x->status), "error", x->error ? x->error : "", "compile_ms",
                                    x->info.compile_ms, "units", x->info.units, "units_compiled",
                                    x->info.units_compiled);
        if (!o) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    if (!list || kcpy_dict_put(d, "results", list) < 0) Py_CLEAR(d);
    return d;
}

PyObject *kcpy_cache_prewarm(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"manifest", "archs", "jobs", NULL};
    PyObject *path, *archs = NULL;
    int jobs = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Oi:prewarm", kwlist, &path, &archs, &jobs)) return NULL;
    if (jobs < 0) {
        PyErr_Format(PyExc_ValueError, "jobs must be 0 (one per CPU) or more, not %d", jobs);
        return NULL;
    }
    kc_manifest *m = kcpy_cache_check(self) == 0 ? manifest_open(path, archs) : NULL;
    kc_cache *c = m ? kcpy_cache_enter(self) : NULL;
    if (!c) {
        kc_manifest_free(m);
        return NULL;
    }
    kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
    o.jobs = jobs;
    kc_prewarm_report *rep = NULL;
    int rc;
    char *msg = NULL;
    Py_BEGIN_ALLOW_THREADS rc = kc_prewarm(c, m, &o, &rep);
    if (rc != KC_OK) msg = strdup(kc_error_last()->message);
    Py_END_ALLOW_THREADS kcpy_cache_leave(self);
    PyObject *d = rep ? prewarm_dict(rep, m) : NULL;
    if (rc != KC_OK) {
        kcpy_raise_msg(rc, msg && msg[0] ? msg : NULL);
        if (d) { /* the whole report travels with the error */
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyErr_NormalizeException(&et, &ev, &tb);
            if (ev) PyObject_SetAttrString(ev, "report", d);
            PyErr_Restore(et, ev, tb);
        }
        Py_CLEAR(d);
    }
    free(msg);
    kc_prewarm_report_free(rep);
    kc_manifest_free(m);
    return d;
}

static PyObject *coverage_dict(const kc_coverage_report *r) {
    PyObject *targets = PyList_New((Py_ssize_t)r->targets);
    for (size_t t = 0; targets && t < r->targets; t++) {
        PyObject *s = PyUnicode_FromString(r->target_names[t]);
        if (!s) Py_CLEAR(targets);
        else PyList_SET_ITEM(targets, (Py_ssize_t)t, s);
    }
    size_t n = r->graphs * r->targets;
    PyObject *list = targets ? PyList_New((Py_ssize_t)n) : NULL;
    for (size_t i = 0; list && i < n; i++) {
        const kc_coverage_result *x = &r->results[i];
        PyObject *o = Py_BuildValue("{s:s,s:s,s:s,s:O,s:s,s:s}", "graph", x->name ? x->name : "", "target",
                                    r->target_names[x->target], "key", x->key, "hit", x->hit ? Py_True : Py_False,
                                    "variant", x->variant, "reason", x->reason ? x->reason : "");
        if (!o) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    PyObject *d = list ? Py_BuildValue("{s:n,s:O,s:n,s:n,s:i,s:O}", "graphs", (Py_ssize_t)r->graphs, "targets", targets,
                                       "covered", (Py_ssize_t)r->covered, "missing", (Py_ssize_t)r->missing, "device",
                                       r->device, "results", list)
                       : NULL;
    Py_XDECREF(targets);
    Py_XDECREF(list);
    return d;
}

/* kc_manifest_covered of `m` (device: KC_COVERAGE_ARCHS or a GPU); *out the report; KC_OK or KC_MISS
 * with *out set, else raised. */
static int covered(PyObject *self, kc_manifest *m, int device, kc_coverage_report **out) {
    kc_cache *c = kcpy_cache_enter(self);
    if (!c) return -1;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_manifest_covered(c, m, device, out);
    Py_END_ALLOW_THREADS kcpy_cache_leave(self);
    if (!*out) {
        kcpy_raise(rc == KC_OK ? KC_ERROR : rc);
        return -1;
    }
    return 0;
}

PyObject *kcpy_cache_coverage(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"manifest", "device", NULL};
    PyObject *path;
    int device = KC_COVERAGE_ARCHS;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:coverage", kwlist, &path, &device)) return NULL;
    if (device < KC_COVERAGE_ARCHS) {
        PyErr_Format(PyExc_ValueError, "device must be -1 (the manifest's targets) or a GPU ordinal, not %d", device);
        return NULL;
    }
    kc_manifest *m = kcpy_cache_check(self) == 0 ? manifest_open(path, NULL) : NULL;
    kc_coverage_report *r = NULL;
    PyObject *d = m && covered(self, m, device, &r) == 0 ? coverage_dict(r) : NULL;
    kc_coverage_report_free(r);
    kc_manifest_free(m);
    return d;
}

/* Export every graph x target of the manifest `m` (at `mpath`) to `p`, with its coverage record;
 * refused (MissError) when any is missing. */
static PyObject *export_covering(PyObject *self, kc_manifest *m, const char *mpath, const char *p, PyObject *path) {
    kc_coverage_report *cov = NULL;
    if (covered(self, m, KC_COVERAGE_ARCHS, &cov) < 0) return NULL;
    PyObject *r = NULL;
    if (cov->missing) {
        const kc_coverage_result *x = cov->results;
        while (x->hit) x++;
        PyObject *msg = PyUnicode_FromFormat(
            "export refused: %zu of %zu variants of %s (%zu graphs x %zu targets) are not in the cache (the first: "
            "%s for %s: %s); nothing written: prewarm them first",
            cov->missing, cov->graphs * cov->targets, mpath, cov->graphs, cov->targets, x->name,
            cov->target_names[x->target], x->reason ? x->reason : "missing");
        const char *text = msg ? PyUnicode_AsUTF8(msg) : NULL;
        if (text) kcpy_raise_msg(KC_MISS, text);
        Py_XDECREF(msg);
        kc_coverage_report_free(cov);
        return NULL;
    }
    const char **names = PyMem_Calloc(cov->graphs + 1, sizeof *names);
    kc_key *keys = PyMem_Calloc(cov->graphs + 1, sizeof *keys);
    int rc = names && keys ? KC_OK : KC_ENOMEM;
    for (size_t g = 0; rc == KC_OK && g < cov->graphs; g++) {
        names[g] = cov->results[g * cov->targets].name;
        rc = kc_key_from_hex(&keys[g], cov->results[g * cov->targets].key);
    }
    if (rc == KC_OK) {
        kc_bundle_covers cv = {mpath, names, keys, cov->graphs, cov->target_names, cov->targets};
        kc_bundle_filter f = {cov->target_names, cov->targets, keys, cov->graphs};
        kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
        kc_cache *c = kcpy_cache_enter(self);
        if (c) {
            Py_BEGIN_ALLOW_THREADS rc = kc_bundle_export_covering(c, p, &f, &cv, &rep);
            Py_END_ALLOW_THREADS kcpy_cache_leave(self);
            r = rc == KC_OK ? kcpy_bundle_dict(&rep, path) : kcpy_raise(rc);
            if (r && kcpy_dict_put(r, "coverage", coverage_dict(cov)) < 0) Py_CLEAR(r);
        }
    } else {
        kcpy_raise_msg(rc, "export: the manifest's coverage report could not be read back");
    }
    PyMem_Free(names);
    PyMem_Free(keys);
    kc_coverage_report_free(cov);
    return r;
}

PyObject *kcpy_export_manifest(PyObject *self, PyObject *path, PyObject *manifest, PyObject *archs) {
    PyObject *keep = NULL, *mkeep = NULL;
    const char *p = kcpy_cache_check(self) == 0 ? kcpy_path(path, "path", &keep) : NULL;
    const char *mpath = p ? kcpy_path(manifest, "manifest", &mkeep) : NULL;
    kc_manifest *m = mpath ? manifest_open(manifest, archs) : NULL;
    PyObject *r = NULL;
    if (m && kc_manifest_arch_count(m) == 0)
        kcpy_raise_msg(KC_EINVAL, "export: the manifest names no target (\"archs\"): give archs=");
    else if (m) r = export_covering(self, m, mpath, p, path);
    kc_manifest_free(m);
    Py_XDECREF(mkeep);
    Py_XDECREF(keep);
    return r;
}
