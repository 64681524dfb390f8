/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loaded.c — kcache._kcache.LoadedGraph and .Saved: a graph loaded on a device (kc_graph_get)
 * and its passes (kc_graph_forward_call / kc_graph_backward_call) over the caller's tensors
 * (explain: loaded_explain.c).
 *
 * The one idea: each call checks the caller's tensors against the description (count, dtype,
 * rank, the sizes written as numbers, C-contiguity) and names the argument, what it is and what
 * the graph wants; kcache checks the rest (symbols, expressions) with its own message.  Outputs
 * are kcache's allocations on the call's stream, handed back as Buffers; a Saved keeps what
 * kc_saved borrows (the forward's inputs and outputs) alive until it is freed.  A LoadedGraph
 * counts its calls in flight (under the GIL) and releases the kc_graph when the last one ends
 * after close().  Callers: python/kcache/_graph.py.  Must not: hold the GIL across a kcache call;
 * run Python code (a tensor's __dlpack__, an object's creation) under the graph's lock.
 */
#include <stdio.h>
#include <string.h>

#include "graph_int.h"
#include "kcache/cuda.h"

#if PY_VERSION_HEX < 0x030A0000
static PyObject *Py_NewRef(PyObject *o) {
    Py_INCREF(o);
    return o;
}
#endif

typedef struct {
    PyObject_HEAD kc_graph *g;
    kcpy_graph *graph;
    int device, inflight, closed;
    PyObject *info;
} loaded;

typedef struct {
    PyObject_HEAD kc_saved *s;
    loaded *lg;
    void *stream;
    PyObject *stream_obj; /* the caller's stream object: saved tensors are freed on it */
    PyObject *keep;       /* what keeps the forward's inputs alive (import holders) */
    PyObject *outputs;    /* the forward's outputs (Buffers or aliased inputs) */
    kc_tensor outs[KC_MAX_RANK * 8];
    size_t nout;
    int busy;
} saved;

static PyTypeObject *loaded_type, *saved_type;

static void loaded_release(loaded *l) {
    kc_graph *g = l->g;
    l->g = NULL;
    if (g) {
        Py_BEGIN_ALLOW_THREADS kc_graph_release(g);
        Py_END_ALLOW_THREADS
    }
}

static int enter(loaded *l) {
    if (l->closed || !l->g) return PyErr_SetString(PyExc_ValueError, "this LoadedGraph is closed"), -1;
    l->inflight++;
    return 0;
}
static void leave(loaded *l) {
    if (--l->inflight == 0 && l->closed) loaded_release(l);
}

/* graph_get(cache, graph, device) */
static PyObject *graph_get(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *cache;
    kcpy_graph *gr;
    int device;
    if (!PyArg_ParseTuple(args, "OO!i", &cache, kcpy_graph_type, &gr, &device)) return NULL;
    if (device < 0) return PyErr_Format(PyExc_ValueError, "device %d: a CUDA device ordinal is 0 or more", device);
    kc_cache *c = kcpy_cache_enter(cache);
    if (!c) return NULL;
    kc_graph *g = NULL;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kcpy_graph_lock(gr);
    gr->frozen = 1;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_graph_get(c, gr->d, device, &g, &info);
    Py_END_ALLOW_THREADS kcpy_graph_unlock(gr); /* no Python code under the graph's lock */
    if (rc) kcpy_raise(rc);
    kcpy_cache_leave(cache);
    if (rc) return NULL;
    static const char *src[] = {"memory", "disk", "remote", "compile", "bypass"};
    loaded *l = PyObject_New(loaded, loaded_type);
    if (!l) return kc_graph_release(g), NULL;
    l->g = g, l->device = device, l->inflight = 0, l->closed = 0;
    Py_INCREF(gr), l->graph = gr;
    l->info = Py_BuildValue("{s:s,s:s,s:s,s:s,s:i,s:d}", "source",
                            info.source >= 0 && info.source <= 4 ? src[info.source] : "?", "variant", info.variant,
                            "key", info.key, "miss_reason", info.miss_reason, "kernels", info.kernels, "total_us",
                            info.total_us);
    if (!l->info) return Py_DECREF(l), NULL;
    return (PyObject *)l;
}

static void loaded_dealloc(PyObject *self) {
    loaded *l = (loaded *)self;
    PyTypeObject *tp = Py_TYPE(self);
    loaded_release(l);
    Py_XDECREF(l->graph);
    Py_XDECREF(l->info);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *loaded_close(PyObject *self, PyObject *u) {
    (void)u;
    loaded *l = (loaded *)self;
    l->closed = 1;
    if (!l->inflight) loaded_release(l);
    Py_RETURN_NONE;
}

/* "(3, 4)" */
static void shape_str(const kc_tensor *t, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int r = 0; r < t->rank && n < cap; r++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", r ? ", " : "", (long long)t->sizes[r]);
    if (n < cap) snprintf(buf + n, cap - n, "%s)", t->rank == 1 ? "," : "");
}

/* Check tensor t (argument `what`) against the description's tensor `want`; -1 with an exception. */
static int check_tensor(const kc_tensor *t, const char *what, const kc_graph_tensor_desc *want, const char *gname) {
    char got[256], sizes[256] = "(";
    shape_str(t, got, sizeof got);
    size_t n = 1;
    for (int r = 0; r < want->rank && n < sizeof sizes; r++)
        n += (size_t)snprintf(sizes + n, sizeof sizes - n, "%s%s", r ? ", " : "",
                              want->sizes[r] ? want->sizes[r] : "?");
    if (n < sizeof sizes) snprintf(sizes + n, sizeof sizes - n, "%s)", want->rank == 1 ? "," : "");
    int ok = t->dtype == want->dtype;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: a %s tensor of shape %s; graph '%s' wants %s of sizes %s", what,
                     kcpy_dtype_name(t->dtype), got, gname, kcpy_dtype_name(want->dtype), sizes);
        return -1;
    }
    ok = t->rank == want->rank;
    int64_t st = 1;
    for (int r = (ok ? t->rank : 0) - 1; ok && r >= 0; r--) {
        const char *w = want->sizes[r];
        char *end = NULL;
        long long v = w ? strtoll(w, &end, 10) : -1;
        if (w && end && *end == '\0' && end != w) ok = v == t->sizes[r];
        if (ok && t->sizes[r] > 1 && t->strides[r] != st) {
            PyErr_Format(PyExc_ValueError,
                         "%s: a tensor of shape %s that is not C-contiguous (dimension %d has "
                         "stride %lld, not %lld); pass a contiguous copy (.contiguous(), cupy.ascontiguousarray)",
                         what, got, r, (long long)t->strides[r], (long long)st);
            return -1;
        }
        st *= t->sizes[r] ? t->sizes[r] : 1;
    }
    if (!ok)
        PyErr_Format(PyExc_ValueError, "%s: a %s tensor of shape %s; graph '%s' wants %s of sizes %s", what,
                     kcpy_dtype_name(t->dtype), got, gname, kcpy_dtype_name(want->dtype), sizes);
    return ok ? 0 : -1;
}

/* Runtime argument `name` of type `t` from the Python value `o` into `out`; -1 with an exception. */
static int take_arg(const char *name, kc_arg_type t, PyObject *o, kc_value *out) {
    out->type = t;
    int is_float = t == KC_ARG_F32 || t == KC_ARG_F64;
    if (PyBool_Check(o) || !(PyFloat_Check(o) || PyLong_Check(o)) || (!is_float && !PyLong_Check(o)))
        return PyErr_Format(PyExc_TypeError, "runtime argument %s=: a%s, not %.80s", name,
                            is_float ? " float" : "n int", Py_TYPE(o)->tp_name),
               -1;
    if (is_float) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) return -1;
        if (t == KC_ARG_F32) out->v.f32 = (float)d;
        else out->v.f64 = d;
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    unsigned long long u = (unsigned long long)v;
    int big = 0; /* a u64 above INT64_MAX, read whole (a negative value is never one) */
    if (overflow > 0 && t == KC_ARG_U64) u = PyLong_AsUnsignedLongLong(o), big = !PyErr_Occurred(), overflow = !big;
    PyErr_Clear();
    int range = !overflow && (t == KC_ARG_I32   ? v >= INT32_MIN && v <= INT32_MAX
                              : t == KC_ARG_U32 ? v >= 0 && v <= (long long)UINT32_MAX
                              : t == KC_ARG_U64 ? big || v >= 0
                                                : 1);
    if (!range)
        return PyErr_Format(PyExc_ValueError, "runtime argument %s=%R is out of range for its type", name, o), -1;
    if (t == KC_ARG_I32) out->v.i32 = (int32_t)v;
    else if (t == KC_ARG_U32) out->v.u32 = (uint32_t)v;
    else if (t == KC_ARG_I64) out->v.i64 = v;
    else out->v.u64 = u;
    return 0;
}

#define MAXT 64    /* tensors of one call */
#define MAXARGS 64 /* runtime arguments of one call */

/* What a call reads of the description, read under the graph's lock and used after it (no Python code
 * runs under that lock: a tensor's __dlpack__ may touch the same graph).  The pointers stay valid: a
 * loaded graph's description is read whole and frozen, and the LoadedGraph keeps it alive. */
typedef struct {
    const char *gname;
    size_t nin, nout, nargs;
    kc_graph_tensor_desc in[MAXT];
    const char *arg_names[MAXARGS];
    kc_arg_type arg_types[MAXARGS];
} desc_view;

static int desc_view_read(kcpy_graph *gr, desc_view *v) {
    int rc = KC_OK;
    kcpy_graph_lock(gr);
    v->gname = kc_graph_desc_name(gr->d);
    v->nin = kc_graph_desc_count(gr->d, KC_ROLE_INPUT), v->nout = kc_graph_desc_count(gr->d, KC_ROLE_OUTPUT);
    v->nargs = kc_graph_desc_nargs(gr->d);
    for (size_t i = 0; !rc && i < v->nin && i < MAXT; i++) {
        v->in[i] = (kc_graph_tensor_desc)KC_GRAPH_TENSOR_DESC_INIT;
        rc = kc_graph_desc_tensor(gr->d, KC_ROLE_INPUT, i, &v->in[i]);
    }
    for (size_t i = 0; !rc && i < v->nargs && i < MAXARGS; i++)
        rc = kc_graph_desc_arg(gr->d, i, &v->arg_names[i], &v->arg_types[i]);
    kcpy_graph_unlock(gr);
    if (rc) return kcpy_raise(rc), -1;
    if (v->nargs > MAXARGS) return PyErr_Format(PyExc_ValueError, "the graph declares too many runtime arguments"), -1;
    return 0;
}

/* The runtime arguments from `kw` (a dict or None) in declaration order; -1 with an exception. */
static int take_args(const desc_view *v, PyObject *kw, kc_value *vals, size_t *n) {
    size_t used = 0;
    if (kw && kw != Py_None && !PyDict_Check(kw))
        return PyErr_Format(PyExc_TypeError, "the runtime arguments are a dict"), -1;
    for (size_t i = 0; i < v->nargs; i++) {
        const char *name = v->arg_names[i];
        PyObject *o = kw && kw != Py_None ? PyDict_GetItemString(kw, name) : NULL;
        if (!o) return PyErr_Format(PyExc_TypeError, "missing the runtime argument %s= of the graph", name), -1;
        used++;
        if (take_arg(name, v->arg_types[i], o, &vals[i])) return -1;
    }
    if (kw && kw != Py_None && (size_t)PyDict_Size(kw) != used)
        return PyErr_Format(PyExc_TypeError,
                            "unknown keyword arguments: the graph's runtime arguments are %zu (%R given)", v->nargs,
                            kw),
               -1;
    *n = v->nargs;
    return 0;
}

/* Import and check the forward's input tensors `objs` (a tuple); keeps go into `keep`. */
static int take_inputs(loaded *l, const desc_view *v, PyObject *objs, void *stream, kc_tensor *out, PyObject *keep) {
    size_t n = v->nin, got = (size_t)PyTuple_GET_SIZE(objs);
    if (n != got || n > MAXT)
        return PyErr_Format(PyExc_TypeError, "graph '%s' takes %zu input tensors; %zu given", v->gname, n, got), -1;
    for (size_t i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "input %zu", i);
        PyObject *k = NULL;
        if (kcpy_tensor_import(PyTuple_GET_ITEM(objs, (Py_ssize_t)i), what, stream, l->device, v->in[i].inplace,
                               &out[i], &k))
            return -1;
        int rc = PyList_Append(keep, k);
        Py_DECREF(k);
        if (rc || check_tensor(&out[i], what, &v->in[i], v->gname)) return -1;
    }
    return 0;
}

static PyObject *forward_results(loaded *l, PyObject *tensors, kc_tensor *outs, size_t nout, void *stream,
                                 PyObject *sobj) {
    PyObject *t = PyTuple_New((Py_ssize_t)nout);
    int failed = !t;
    for (size_t i = 0; i < nout; i++) {
        int a = kc_graph_output_alias(l->g, i);
        PyObject *o = a >= 0 ? (Py_INCREF(PyTuple_GET_ITEM(tensors, a)), PyTuple_GET_ITEM(tensors, a))
                             : kcpy_buffer_new(&outs[i], l->device, stream, sobj);
        if (!o || failed) { /* release what is not yet owned by a Buffer */
            failed = 1;
            Py_XDECREF(o);
            if (a < 0 && !o) {
                Py_BEGIN_ALLOW_THREADS if (!kc_cuda_push(l->device)) kc_tensor_release(&outs[i], stream, NULL),
                    kc_cuda_pop();
                Py_END_ALLOW_THREADS
            }
            continue;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, o);
    }
    if (failed) Py_CLEAR(t);
    return t;
}

/* forward(tensors: tuple, stream: int, stream_obj, args: dict|None, save: bool) -> (outputs tuple, Saved|None) */
static PyObject *loaded_forward(PyObject *self, PyObject *a) {
    loaded *l = (loaded *)self;
    PyObject *tensors, *st, *sobj, *kw, *res = NULL, *keep = NULL, *outs_t = NULL;
    int save;
    if (!PyArg_ParseTuple(a, "O!OOOp", &PyTuple_Type, &tensors, &st, &sobj, &kw, &save)) return NULL;
    void *stream = PyLong_AsVoidPtr(st);
    if (!stream && PyErr_Occurred()) return NULL;
    if (enter(l)) return NULL;
    kc_tensor in[MAXT], outs[MAXT];
    kc_value vals[MAXARGS];
    size_t nargs = 0, nin = (size_t)PyTuple_GET_SIZE(tensors), nout = 0;
    kc_saved *sv = NULL;
    desc_view *v = PyMem_Malloc(sizeof *v);
    keep = PyList_New(0);
    int bad = !v || !keep;
    if (!v) PyErr_NoMemory();
    bad = bad || desc_view_read(l->graph, v) || take_inputs(l, v, tensors, stream, in, keep) ||
          take_args(v, kw, vals, &nargs);
    if (!bad) nout = v->nout;
    PyMem_Free(v);
    if (!bad && nout > MAXT) bad = 1, PyErr_SetString(PyExc_ValueError, "the graph has too many outputs");
    if (bad) goto done;
    memset(outs, 0, sizeof outs);
    kc_graph_call call = KC_GRAPH_CALL_INIT;
    call.inputs = in, call.ninputs = nin, call.outputs = outs, call.noutputs = nout, call.stream = stream;
    call.args = nargs ? vals : NULL, call.nargs = nargs;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_graph_forward_call(l->g, &call, save ? &sv : NULL);
    Py_END_ALLOW_THREADS if (rc) {
        kcpy_raise(rc);
        goto done;
    }
    outs_t = forward_results(l, tensors, outs, nout, stream, sobj);
    saved *s = outs_t && sv ? PyObject_New(saved, saved_type) : NULL;
    if (outs_t && sv && !s) goto done; /* no memory: sv is freed below */
    if (s) {
        s->s = sv, s->stream = stream, s->busy = 0, s->nout = nout;
        Py_INCREF(sobj), s->stream_obj = sobj;
        memcpy(s->outs, outs, nout * sizeof *outs);
        Py_INCREF(l), s->lg = l;
        Py_INCREF(keep), s->keep = keep;
        Py_INCREF(outs_t), s->outputs = outs_t;
        sv = NULL;
    }
    if (outs_t) res = Py_BuildValue("(NO)", outs_t, s ? (PyObject *)s : Py_None), outs_t = NULL;
    Py_XDECREF(s);
done:
    if (sv) {
        Py_BEGIN_ALLOW_THREADS kc_saved_free(sv, stream);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(outs_t);
    Py_XDECREF(keep);
    leave(l);
    return res;
}

/* Release the accumulating-gradient views and allocated gradients of a failed backward's result building. */
static PyObject *backward_results(loaded *l, PyObject *acc, kc_tensor *gin, size_t n, const int *is_acc, void *stream,
                                  PyObject *sobj) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; i < n; i++) {
        PyObject *o = NULL;
        if (t && is_acc[i]) {
            PyObject *key = PyLong_FromSize_t(i);
            o = key ? PyDict_GetItem(acc, key) : NULL;
            Py_XDECREF(key);
            Py_XINCREF(o);
        } else if (t) {
            o = kcpy_buffer_new(&gin[i], l->device, stream, sobj);
        }
        if (!o) {
            if (!is_acc[i]) {
                Py_BEGIN_ALLOW_THREADS if (!kc_cuda_push(l->device)) kc_tensor_release(&gin[i], stream, NULL),
                    kc_cuda_pop();
                Py_END_ALLOW_THREADS
            }
            Py_CLEAR(t);
            continue;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, o);
    }
    if (!t && !PyErr_Occurred()) PyErr_NoMemory();
    return t;
}

/* The caller's buffers of accumulating gradients: `acc` maps input index -> tensor. */
static int take_accumulating(loaded *l, const desc_view *v, PyObject *acc, void *stream, kc_tensor *gin, int *is_acc,
                             PyObject *keep) {
    size_t nin = v->nin;
    memset(is_acc, 0, nin * sizeof *is_acc);
    for (size_t i = 0; i < nin; i++) {
        const kc_graph_tensor_desc *td = &v->in[i];
        PyObject *key = PyLong_FromSize_t(i), *o = key && acc != Py_None ? PyDict_GetItemWithError(acc, key) : NULL;
        Py_XDECREF(key);
        if (PyErr_Occurred()) return -1;
        if (!td->grad_accumulate && o)
            return PyErr_Format(PyExc_ValueError, "accumulate[%zu]: input %zu's gradient does not accumulate", i, i),
                   -1;
        if (!td->grad_accumulate) continue;
        if (!o)
            return PyErr_Format(PyExc_TypeError, "input %zu's gradient accumulates: pass accumulate={%zu: tensor}", i,
                                i),
                   -1;
        char what[64];
        snprintf(what, sizeof what, "accumulate[%zu]", i);
        PyObject *k = NULL;
        if (kcpy_tensor_import(o, what, stream, l->device, 1, &gin[i], &k)) return -1;
        int rc = PyList_Append(keep, k);
        Py_DECREF(k);
        if (rc || check_tensor(&gin[i], what, td, v->gname)) return -1;
        is_acc[i] = 1;
    }
    if (acc != Py_None && PyDict_Size(acc) > 0) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(acc, &pos, &k, &v)) {
            Py_ssize_t i = PyLong_Check(k) ? PyLong_AsSsize_t(k) : -1;
            PyErr_Clear();
            if (i < 0 || (size_t)i >= nin)
                return PyErr_Format(PyExc_ValueError, "accumulate: %R is not an input index (0 to %zu)", k, nin - 1),
                       -1;
        }
    }
    return 0;
}

/* backward(saved, grads: tuple, stream: int, stream_obj, args: dict|None, accumulate: dict|None) -> tuple of gradients */
static PyObject *loaded_backward(PyObject *self, PyObject *a) {
    loaded *l = (loaded *)self;
    saved *s;
    PyObject *grads, *st, *sobj, *kw, *acc, *res = NULL, *keep = NULL;
    if (!PyArg_ParseTuple(a, "O!O!OOOO", saved_type, &s, &PyTuple_Type, &grads, &st, &sobj, &kw, &acc)) return NULL;
    if (acc != Py_None && !PyDict_Check(acc))
        return PyErr_Format(PyExc_TypeError, "accumulate: a dict {input: tensor}");
    void *stream = PyLong_AsVoidPtr(st);
    if (!stream && PyErr_Occurred()) return NULL;
    if (s->lg != l) return PyErr_Format(PyExc_ValueError, "saved comes from another LoadedGraph's forward");
    if (!s->s)
        return PyErr_Format(PyExc_ValueError, "saved was released (Saved.release or a backward with retain=False)");
    if (enter(l)) return NULL;
    kc_tensor gout[MAXT], gin[MAXT];
    int is_acc[MAXT];
    kc_value vals[MAXARGS];
    size_t nargs = 0, nin = 0, ng = (size_t)PyTuple_GET_SIZE(grads);
    memset(gin, 0, sizeof gin);
    desc_view *v = PyMem_Malloc(sizeof *v);
    keep = PyList_New(0);
    int bad = !v || !keep || desc_view_read(l->graph, v);
    if (!v) PyErr_NoMemory();
    if (!bad) nin = v->nin, bad = nin > MAXT;
    if (bad && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the graph has too many inputs");
    if (!bad && ng != s->nout)
        bad = 1, PyErr_Format(PyExc_TypeError, "graph '%s' backward takes %zu gradients (one per output); %zu given",
                              v->gname, s->nout, ng);
    for (size_t i = 0; !bad && i < ng; i++) {
        char what[64];
        snprintf(what, sizeof what, "grad_output %zu", i);
        PyObject *k = NULL;
        kc_graph_tensor_desc td = KC_GRAPH_TENSOR_DESC_INIT;
        bad = kcpy_tensor_import(PyTuple_GET_ITEM(grads, (Py_ssize_t)i), what, stream, l->device, 0, &gout[i], &k) ||
              PyList_Append(keep, k);
        Py_XDECREF(k);
        /* the output's actual shape as the forward made it (its sizes are numbers there) */
        td.dtype = s->outs[i].dtype, td.rank = s->outs[i].rank;
        char sz[KC_MAX_RANK][24];
        for (int r = 0; r < td.rank; r++)
            snprintf(sz[r], sizeof sz[r], "%lld", (long long)s->outs[i].sizes[r]), td.sizes[r] = sz[r];
        if (!bad) bad = check_tensor(&gout[i], what, &td, v->gname);
    }
    if (!bad)
        bad = take_accumulating(l, v, acc, stream, gin, is_acc, keep) ||
              (kw != Py_None && take_args(v, kw, vals, &nargs)); /* none given: the forward's values */
    PyMem_Free(v);
    if (bad) goto done;
    kc_graph_call call = KC_GRAPH_CALL_INIT;
    call.inputs = gout, call.ninputs = ng, call.outputs = gin, call.noutputs = nin, call.stream = stream;
    call.args = nargs ? vals : NULL, call.nargs = nargs;
    int rc;
    s->busy++;
    Py_BEGIN_ALLOW_THREADS rc = kc_graph_backward_call(l->g, s->s, &call);
    Py_END_ALLOW_THREADS s->busy--;
    if (rc) kcpy_raise(rc);
    else res = backward_results(l, acc, gin, nin, is_acc, stream, sobj);
done:
    Py_XDECREF(keep);
    leave(l);
    return res;
}

/* ---- Saved ---- */

static void saved_free(saved *s) {
    kc_saved *k = s->s;
    s->s = NULL;
    if (k) {
        void *stream = s->stream;
        Py_BEGIN_ALLOW_THREADS kc_saved_free(k, stream);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(s->keep);
    Py_CLEAR(s->outputs);
    Py_CLEAR(s->stream_obj);
}

static void saved_dealloc(PyObject *self) {
    saved *s = (saved *)self;
    PyTypeObject *tp = Py_TYPE(self);
    saved_free(s);
    Py_XDECREF(s->lg);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *saved_release(PyObject *self, PyObject *u) {
    (void)u;
    saved *s = (saved *)self;
    if (s->busy) return PyErr_Format(PyExc_RuntimeError, "Saved.release: a backward is running on it");
    saved_free(s);
    Py_RETURN_NONE;
}

static PyObject *saved_released(PyObject *self, void *u) {
    return (void)u, PyBool_FromLong(((saved *)self)->s == NULL);
}

static PyObject *loaded_info(PyObject *self, void *u) { return (void)u, Py_NewRef(((loaded *)self)->info); }
static PyObject *loaded_graph(PyObject *self, void *u) {
    return (void)u, Py_NewRef((PyObject *)((loaded *)self)->graph);
}
static PyObject *loaded_device(PyObject *self, void *u) { return (void)u, PyLong_FromLong(((loaded *)self)->device); }
static PyObject *loaded_closed(PyObject *self, void *u) { return (void)u, PyBool_FromLong(((loaded *)self)->closed); }

static PyMethodDef loaded_methods[] = {
    {"forward", loaded_forward, METH_VARARGS, NULL},
    {"backward", loaded_backward, METH_VARARGS, NULL},
    {"close", loaded_close, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef loaded_getset[] = {
    {"info", loaded_info, NULL, NULL, NULL},
    {"graph", loaded_graph, NULL, NULL, NULL},
    {"device", loaded_device, NULL, NULL, NULL},
    {"closed", loaded_closed, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyType_Slot loaded_slots[] = {
    {Py_tp_dealloc, loaded_dealloc},
    {Py_tp_methods, loaded_methods},
    {Py_tp_getset, loaded_getset},
    {0, NULL},
};
static PyType_Spec loaded_spec = {"kcache._kcache._LoadedGraph", sizeof(loaded), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, loaded_slots};

static PyMethodDef saved_methods[] = {
    {"release", saved_release, METH_NOARGS, "Free what forward saved for backward now (else when dropped)."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef saved_getset[] = {
    {"released", saved_released, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyType_Slot saved_slots[] = {
    {Py_tp_dealloc, saved_dealloc},
    {Py_tp_methods, saved_methods},
    {Py_tp_getset, saved_getset},
    {Py_tp_doc, "What a forward keeps for its backward (saved tensors; the forward's inputs and outputs)."},
    {0, NULL},
};
static PyType_Spec saved_spec = {"kcache._kcache.Saved", sizeof(saved), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, saved_slots};

static PyMethodDef module_fns[] = {
    {"graph_get", graph_get, METH_VARARGS, "graph_get(cache, graph, device) -> _LoadedGraph"},
    {"graph_explain", kcpy_graph_explain, METH_VARARGS, "graph_explain(cache, graph, target) -> dict"},
    {NULL, NULL, 0, NULL},
};

int kcpy_loaded_add(PyObject *module) {
    loaded_type = (PyTypeObject *)PyType_FromSpec(&loaded_spec);
    saved_type = loaded_type ? (PyTypeObject *)PyType_FromSpec(&saved_spec) : NULL;
    if (!saved_type) return -1;
    if (PyModule_AddObject(module, "_LoadedGraph", Py_NewRef((PyObject *)loaded_type)) ||
        PyModule_AddObject(module, "Saved", Py_NewRef((PyObject *)saved_type)))
        return -1;
    return PyModule_AddFunctions(module, module_fns);
}
