/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache_ops.c — the Cache methods that report: stats, config, prewarm, export, import_, coverage.
 *
 * The one idea: each enters the cache, calls libkcache without the GIL, and turns its report
 * struct into a dict with the field names `kcache ... --json` prints.
 *
 * Callers: cache.c's method table.  Must not: decide anything libkcache decides.
 */
#include "kcpy.h"

static PyObject *todo(const char *what) {
    PyErr_Format(PyExc_NotImplementedError, "kcache.Cache.%s: not built yet", what);
    return NULL;
}

PyObject *kcpy_cache_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return todo("stats");
}
PyObject *kcpy_cache_config(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return todo("config");
}
PyObject *kcpy_cache_prewarm(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self, (void)args, (void)kwargs;
    return todo("prewarm");
}
PyObject *kcpy_cache_export(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self, (void)args, (void)kwargs;
    return todo("export");
}
PyObject *kcpy_cache_import(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self, (void)args, (void)kwargs;
    return todo("import_");
}
PyObject *kcpy_cache_coverage(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self, (void)args, (void)kwargs;
    return todo("coverage");
}
