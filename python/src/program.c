/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.c — Cache.compile's C half: kc_cache_compile, its kc_program as a tuple.
 *
 * Callers: cache.c's method table (Cache._compile); kcache/_program.py makes the tuple a Program.
 * Must not: add logic of its own to the compile (the key, the stores, the outcome are libkcache's).
 */
#include "kcpy.h"

PyObject *kcpy_cache_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self, (void)args, (void)kwargs;
    PyErr_SetString(PyExc_NotImplementedError, "kcache.Cache.compile: not built yet");
    return NULL;
}
