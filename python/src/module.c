/* SPDX-License-Identifier: Apache-2.0 */
/*
 * module.c — the extension module kcache._kcache: its functions and its import.
 *
 * The one idea: importing adds the error classes (errors.c), the Cache type (cache.c) and, when the
 * build has it, the graph part (kcpy_graph_add); it loads nothing of CUDA (libkcache dlopens NVRTC
 * and the driver when a call first needs them), so `import kcache` works on any machine.
 *
 * Callers: the interpreter (PyInit__kcache); kcache/__init__.py re-exports what it adds.
 * Must not: open a cache or touch CUDA at import.
 */
#include "kcpy.h"

static PyObject *mod_version(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(kc_version());
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS, "The running libkcache's version (kc_version)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kcpy_module = {
    PyModuleDef_HEAD_INIT,
    "kcache._kcache",
    "kcache's C extension: the library's calls for the kcache package.",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__kcache(void) {
    PyObject *m = PyModule_Create(&kcpy_module);
    if (!m) return NULL;
    if (kcpy_errors_add(m) < 0 || kcpy_cache_add(m) < 0 ||
        PyModule_AddStringConstant(m, "__version__", kc_version()) < 0 ||
        PyModule_AddIntConstant(m, "KC_OPTIONS_VERSION", KC_OPTIONS_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#ifdef KCPY_HAVE_GRAPH
    if (kcpy_graph_add(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
#endif
    if (kcpy_bench_add(m) < 0) { /* the benchmark's private _compile_loop (bench.c) */
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
