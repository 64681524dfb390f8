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
 * Callers: the .c files of python/src.  Must not: add logic of its own to what libkcache decides (keys,
 * caching, trust); hold the GIL across a call that may block.
 */
#ifndef KCPY_H
#define KCPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kcache/cache.h"
#include "kcache/compile.h"

/** The C object behind kcache.Cache (module.c/cache.c define it). */
extern PyTypeObject *kcpy_cache_type;

/**
 * Enter a call on the cache object `obj` (an instance of kcpy_cache_type): the kc_cache, counted in
 * flight until kcpy_cache_leave; NULL with kcache.ClosedError (or TypeError) set.  GIL held.
 */
kc_cache *kcpy_cache_enter(PyObject *obj);

/** 0 when the cache object `obj` is open (checked first, so that a closed cache says so before an
 *  argument's error), or -1 with ClosedError (or TypeError) set.  GIL held. */
int kcpy_cache_check(PyObject *obj);

/** Leave a call entered with kcpy_cache_enter (GIL held or not). */
void kcpy_cache_leave(PyObject *obj);

/** Raise the kcache.Error subclass of `status` with kc_error_last()'s message (or `status`'s name
 *  when none was recorded); returns NULL.  Call right after the failing kcache call, on its thread
 *  (after Py_END_ALLOW_THREADS is fine: the same OS thread, and the message is copied before any
 *  Python allocation). */
PyObject *kcpy_raise(int status);

/** Raise the kcache.Error subclass of `status` with `msg`; returns NULL. */
PyObject *kcpy_raise_msg(int status, const char *msg);

/* ---- shared by the core's parts (module.c, errors.c, cache.c, cache_ops.c, program.c) ---- */

/** Add kcache.Error and its subclasses to the module (errors.c).  0, or -1 with an exception set. */
int kcpy_errors_add(PyObject *module);

/** Raise kcache.ClosedError (a call on a closed cache); returns NULL. */
PyObject *kcpy_raise_closed(void);

/** Add the cache type (kcache._kcache.Cache) to the module (cache.c).  0, or -1 with an exception set. */
int kcpy_cache_add(PyObject *module);

/**
 * `obj` as UTF-8 text for the argument named `what`: a str without NUL characters; NULL with
 * TypeError (bytes or another type, naming `what`) or ValueError (a NUL) set.  Borrowed from `obj`.
 */
const char *kcpy_text(PyObject *obj, const char *what);

/**
 * `obj` (str or os.PathLike giving str) as a file-system path for the argument named `what`,
 * encoded as the file-system encoding does, in *keep (a new bytes object the caller releases);
 * NULL with TypeError (bytes paths are refused: kcache takes text) or ValueError (a NUL) set.
 */
const char *kcpy_path(PyObject *obj, const char *what, PyObject **keep);

/**
 * `obj`, a sequence of str (`one_str` 1: or a str alone, a sequence of one; a str, bytes or a
 * non-sequence otherwise: TypeError naming `what`), copied into a new tuple in *tup (which keeps the
 * texts alive while the GIL is released) and its texts in *v (PyMem_Calloc'd, NULL-terminated; the
 * caller frees both, also on failure).  0, or -1 with an exception set.
 */
int kcpy_text_seq(PyObject *obj, const char *what, int one_str, PyObject **tup, const char ***v);

/**
 * `obj`, headers as a mapping of name -> source text (any object with items() that is not a str,
 * bytes, list or tuple; items() giving (name, source) pairs, tuples or lists of two), copied into a
 * new tuple of new 2-tuples in *keep (which holds every text while the GIL is released, whatever
 * another thread does to the mapping) and its texts in *v (PyMem_Calloc'd, *n of them); TypeError
 * (ValueError for a NUL) naming `what`.  The caller frees *keep and *v, also on failure.  0, or -1.
 */
int kcpy_header_pairs(PyObject *obj, const char *what, PyObject **keep, kc_header_src **v, size_t *n);

/** Set d[key] = v, stealing v; -1 (exception set) when v is NULL or the set fails. */
int kcpy_dict_put(PyObject *d, const char *key, PyObject *v);

struct kc_bundle_report;
/** A bundle report (export, import) as a dict, with "path" (cache_ops.c). */
PyObject *kcpy_bundle_dict(const struct kc_bundle_report *r, PyObject *path);

/** Cache.export(path, manifest=..., archs=...): every graph x target of the manifest or refused
 *  (cache_manifest.c). */
PyObject *kcpy_export_manifest(PyObject *self, PyObject *path, PyObject *manifest, PyObject *archs);

/** Cache methods of cache_ops.c and cache_manifest.c (the signatures of the type's method table). */
PyObject *kcpy_cache_stats(PyObject *self, PyObject *unused);
PyObject *kcpy_cache_config(PyObject *self, PyObject *unused);
PyObject *kcpy_cache_prewarm(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *kcpy_cache_export(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *kcpy_cache_import(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *kcpy_cache_coverage(PyObject *self, PyObject *args, PyObject *kwargs);
/** Cache.compile's C half (program.c): a tuple of what kc_program holds (kcache/_program.py makes it
 *  a Program). */
PyObject *kcpy_cache_compile(PyObject *self, PyObject *args, PyObject *kwargs);

/** The graph part (graph.c, only when the build has it: KCPY_HAVE_GRAPH): add its types and functions
 *  to the module.  0, or -1 with an exception set. */
int kcpy_graph_add(PyObject *module);

/** The benchmark's hook (bench.c): add the private _compile_loop to the module.  0, or -1 with an
 *  exception set. */
int kcpy_bench_add(PyObject *module);

#endif
