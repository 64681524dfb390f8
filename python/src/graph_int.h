/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_int.h — what the graph part of the extension (graph.c, tensor.c, loaded.c) shares.
 *
 * The one idea: a kcache.Graph owns one kc_graph_desc, which kcache may fill in lazily (a spec
 * vouched by its memo is read on first need), so every use of it holds the graph's lock; tensors
 * cross the boundary as kc_tensor views of the caller's memory (DLPack or
 * __cuda_array_interface__, kept alive by a holder) or as kcache-allocated buffers exported back.
 * Callers: python/src/graph.c, tensor.c, loaded.c only.  Must not: be included by the core's files.
 */
#ifndef KCPY_GRAPH_INT_H
#define KCPY_GRAPH_INT_H

#include "kcpy.h"
#include <pythread.h>

#include "kcache/graph.h"

/** kcache.Graph's C object: a description, built (frozen) or under construction. */
typedef struct kcpy_graph {
    PyObject_HEAD kc_graph_desc *d;
    PyThread_type_lock lock;
    int frozen; /* 1 once loaded or finished: the builder's methods refuse */
} kcpy_graph;

extern PyTypeObject *kcpy_graph_type;
extern PyTypeObject *kcpy_buffer_type;

/** Hold / release a graph's description lock (waits without the GIL). */
void kcpy_graph_lock(kcpy_graph *g);
void kcpy_graph_unlock(kcpy_graph *g);

/** A dtype's spec name ("f32"), or "?" */
const char *kcpy_dtype_name(kc_dtype t);
/** Parse a dtype name (str); -1 with ValueError/TypeError naming `what`. */
int kcpy_dtype_parse(PyObject *o, const char *what, kc_dtype *out);

/**
 * View the caller's tensor `obj` (DLPack or __cuda_array_interface__) as `out`: checked to be a
 * CUDA tensor on `device`; `stream` is the consumer stream handed to __dlpack__ (a CAI tensor made on
 * another stream is waited for); `writes`: kcache writes it (a read-only tensor is refused).  `*keep` receives
 * what keeps the memory alive (the caller decrefs it after use).  -1 with TypeError/ValueError
 * naming `what`.
 */
int kcpy_tensor_import(PyObject *obj, const char *what, void *stream, int device, int writes, kc_tensor *out,
                       PyObject **keep);

/** A kcache-allocated tensor exported as a Buffer, which frees it on `stream` when dropped; `stream_obj`
 *  (the caller's stream object, or NULL) is kept alive until then. */
PyObject *kcpy_buffer_new(const kc_tensor *t, int device, void *stream, PyObject *stream_obj);

/** graph_explain(cache, graph, target) -> dict (loaded_explain.c). */
PyObject *kcpy_graph_explain(PyObject *m, PyObject *args);

int kcpy_tensor_add(PyObject *module);
int kcpy_loaded_add(PyObject *module);

#endif
