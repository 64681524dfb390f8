/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcpy.h — what the parts of the extension module kcache._kcache share.
 *
 * The one idea: the module is a thin layer over libkcache.  A Python cache object owns one
 * kc_cache; every method enters it (kcpy_cache_enter), releases the GIL around the C call, and
 * leaves it.  Closing waits, without the GIL, for the calls in flight, so a cache is never closed
 * under a running call and a call after close raises kcache.ClosedError.  Every kcache failure
 * becomes a kcache.Error (subclass by status) carrying kc_error_last()'s status and message.
 *
 * Callers: python/src/*.c.  Must not: add logic of its own to what libkcache decides (keys,
 * caching, trust); hold the GIL across a call that may block.
 */
#ifndef KCPY_H
#define KCPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kcache/cache.h"

/** The C object behind kcache.Cache (module.c/cache.c define it). */
extern PyTypeObject *kcpy_cache_type;

/**
 * Enter a call on the cache object `obj` (an instance of kcpy_cache_type): the kc_cache, counted in
 * flight until kcpy_cache_leave; NULL with kcache.ClosedError (or TypeError) set.  GIL held.
 */
kc_cache *kcpy_cache_enter(PyObject *obj);

/** Leave a call entered with kcpy_cache_enter (GIL held or not). */
void kcpy_cache_leave(PyObject *obj);

/** Raise the kcache.Error subclass of `status` with kc_error_last()'s message (or `status`'s name
 *  when none was recorded); returns NULL.  Call right after the failing kcache call, on its thread. */
PyObject *kcpy_raise(int status);

/** Raise the kcache.Error subclass of `status` with `msg`; returns NULL. */
PyObject *kcpy_raise_msg(int status, const char *msg);

/** The graph part (graph.c, only when the build has it: KCPY_HAVE_GRAPH): add its types and functions
 *  to the module.  0, or -1 with an exception set. */
int kcpy_graph_add(PyObject *module);

/** The benchmark's hook (bench.c): add the private _compile_loop to the module.  0, or -1 with an
 *  exception set. */
int kcpy_bench_add(PyObject *module);

#endif
