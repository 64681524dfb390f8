/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loaded_explain.c — kcache._kcache.graph_explain: why a lookup of a graph hits or misses
 * (kc_graph_explain), as a dict.
 *
 * The one idea: kcache answers, this file only copies the answer into Python objects, after the
 * graph's lock is released.  Callers: loaded.c's module table (python/kcache/_graph.py's explain).
 * Must not: run Python code (make objects) under the graph's lock, or hold the GIL across the call.
 */
#include "graph_int.h"

static PyObject *explain_dict(const kc_explain *e) {
    PyObject *dg = PyDict_New(), *diffs = PyList_New(0);
    for (size_t i = 0; dg && diffs && i < e->ndigests && i < KC_EXPLAIN_MAX; i++) {
        PyObject *v = PyUnicode_FromString(e->digests[i].digest);
        if (!v || PyDict_SetItemString(dg, e->digests[i].name, v)) Py_CLEAR(dg);
        Py_XDECREF(v);
    }
    for (size_t i = 0; dg && diffs && i < e->ndiffs && i < KC_EXPLAIN_MAX; i++) {
        PyObject *v = PyUnicode_FromString(e->diffs[i]);
        if (!v || PyList_Append(diffs, v)) Py_CLEAR(diffs);
        Py_XDECREF(v);
    }
    if (!dg || !diffs) return Py_XDECREF(dg), Py_XDECREF(diffs), NULL;
    PyObject *nearest = e->have_nearest ? PyUnicode_FromString(e->nearest) : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue("{s:s,s:s,s:O,s:N,s:N,s:O,s:N}", "key", e->key, "variant", e->variant, "hit",
                         e->hit ? Py_True : Py_False, "digests", dg, "nearest", nearest, "nearest_shares_graph",
                         e->nearest_shares_graph ? Py_True : Py_False, "diffs", diffs);
}

/* graph_explain(cache, graph, target) -> dict */
PyObject *kcpy_graph_explain(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cache;
    kcpy_graph *gr;
    const char *target;
    if (!PyArg_ParseTuple(args, "OO!s", &cache, kcpy_graph_type, &gr, &target)) return NULL;
    kc_explain *e = PyMem_RawMalloc(sizeof *e);
    if (!e) return PyErr_NoMemory();
    *e = (kc_explain)KC_EXPLAIN_INIT;
    kc_cache *c = kcpy_cache_enter(cache);
    PyObject *res = NULL;
    if (c) {
        int rc;
        kcpy_graph_lock(gr);
        Py_BEGIN_ALLOW_THREADS rc = kc_graph_explain(c, gr->d, target, e);
        Py_END_ALLOW_THREADS kcpy_graph_unlock(gr); /* no Python code under the graph's lock */
        res = rc ? kcpy_raise(rc) : explain_dict(e);
        kcpy_cache_leave(cache);
    }
    PyMem_RawFree(e);
    return res;
}
