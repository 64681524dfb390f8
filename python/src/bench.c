/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.c — the benchmark's hook in the extension: kcache._kcache._compile_loop.
 *
 * The one idea: the Python call overhead over the C call is measured in one process, so the C
 * side of it must run in that process too.  _compile_loop(cache, source, names, target, n) calls
 * kc_cache_compile n times on the cache's kc_cache (each kc_program freed), with the GIL released
 * and timed by CLOCK_MONOTONIC around the whole loop, and returns the total seconds.  The first
 * failing call raises its kcache.Error (status and message), like Cache.compile.
 *
 * Callers: tools/bench/python_compile.py (a private name: no user API).  Must not: keep anything
 * between calls, hold the GIL across the loop, or accept what Cache.compile would refuse.
 */
#include <string.h>
#include <time.h>

#include "kcache/program.h"
#include "kcpy.h"

#define KCPY_BENCH_NAMES_MAX 64

/* The name expressions, a str or a sequence of str, as UTF-8 pointers into the objects (owned by
 * `seq`, a tuple the caller releases).  0, or -1 with an exception set. */
static int bench_names(PyObject *names, PyObject **seq, const char **out, size_t *n) {
    if (PyUnicode_Check(names)) {
        *seq = PyTuple_Pack(1, names);
    } else if (PyBytes_Check(names) || PyByteArray_Check(names) || !PySequence_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "names: a str or a sequence of str");
        return -1;
    } else {
        *seq = PySequence_Tuple(names); /* a copy: a list another thread changes frees nothing in use */
    }
    if (!*seq) return -1;
    Py_ssize_t len = PyTuple_GET_SIZE(*seq);
    if (len < 1 || len > KCPY_BENCH_NAMES_MAX) {
        PyErr_Format(PyExc_ValueError, "names: give 1 to %d name expressions", KCPY_BENCH_NAMES_MAX);
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *s = PyTuple_GET_ITEM(*seq, i);
        if (!PyUnicode_Check(s)) {
            PyErr_SetString(PyExc_TypeError, "names: every name expression must be a str");
            return -1;
        }
        if (!(out[i] = PyUnicode_AsUTF8(s))) return -1;
    }
    *n = (size_t)len;
    return 0;
}

static double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n calls of kc_cache_compile without the GIL; the status of the first that failed (its program
 * freed either way), the seconds through *secs. */
static int bench_run(kc_cache *c, const kc_kernel_src *k, const char *const *names, size_t nn, const char *target,
                     long n, double *secs) {
    int rc = KC_OK;
    double t0 = bench_now();
    for (long i = 0; i < n && rc == KC_OK; i++) {
        kc_program *p = NULL;
        rc = kc_cache_compile(c, k, names, nn, target, &p);
        kc_program_free(p);
    }
    *secs = bench_now() - t0;
    return rc;
}

static PyObject *compile_loop(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cache, *names, *seq = NULL;
    const char *source, *target;
    long n;
    if (!PyArg_ParseTuple(args, "OsOsl:_compile_loop", &cache, &source, &names, &target, &n)) return NULL;
    if (n < 1 || n > 100000000L) return PyErr_Format(PyExc_ValueError, "n: give 1 to 100000000 calls");
    const char *nv[KCPY_BENCH_NAMES_MAX];
    size_t nn = 0;
    if (bench_names(names, &seq, nv, &nn)) {
        Py_XDECREF(seq);
        return NULL;
    }
    kc_cache *c = kcpy_cache_enter(cache);
    if (!c) {
        Py_DECREF(seq);
        return NULL;
    }
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.source = source;
    double secs = 0;
    int rc;
    PyObject *res;
    Py_BEGIN_ALLOW_THREADS rc = bench_run(c, &k, nv, nn, target, n, &secs);
    Py_END_ALLOW_THREADS res = rc ? kcpy_raise(rc) : PyFloat_FromDouble(secs);
    kcpy_cache_leave(cache);
    Py_DECREF(seq);
    return res;
}

static PyMethodDef bench_methods[] = {
    {"_compile_loop", compile_loop, METH_VARARGS,
     "_compile_loop(cache, source, names, target, n) -> float\n\n"
     "The benchmark's C side: kc_cache_compile called n times on the cache (GIL released); the total "
     "seconds.  Private: for tools/bench/python_compile.py."},
    {NULL, NULL, 0, NULL},
};

int kcpy_bench_add(PyObject *module) { return PyModule_AddFunctions(module, bench_methods); }
