/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph.c — kcache._kcache.Graph: one kc_graph_desc, loaded from a spec (kc_graph_desc_load) or
 * built step by step (the kc_graph_add_* builder), read back as Python tuples.
 *
 * The one idea: the Python object is the description and nothing more; every question about it is
 * kcache's answer (kc_graph_desc_tensor, _arg), every builder call is the C builder's call, so a
 * spec and a built graph behave alike.  A description may be filled in lazily by kcache (a spec
 * vouched by its memo), so every use holds the graph's lock.  Once finished (or loaded) the
 * builder's methods refuse.  Callers: python/kcache/_graph.py; loaded.c (get, explain).  Must not:
 * parse a spec or an expression itself.
 */
#include <string.h>

#include "graph_int.h"

PyTypeObject *kcpy_graph_type;

void kcpy_graph_lock(kcpy_graph *g) {
    if (PyThread_acquire_lock(g->lock, NOWAIT_LOCK)) return;
    Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(g->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
}
void kcpy_graph_unlock(kcpy_graph *g) { PyThread_release_lock(g->lock); }

static PyObject *graph_wrap(kc_graph_desc *d, int frozen) {
    kcpy_graph *g = PyObject_New(kcpy_graph, kcpy_graph_type);
    if (!g) return kc_graph_desc_free(d), NULL;
    g->d = d, g->frozen = frozen, g->lock = PyThread_allocate_lock();
    if (!g->lock) {
        Py_DECREF(g);
        return PyErr_NoMemory();
    }
    return (PyObject *)g;
}

static void graph_dealloc(PyObject *self) {
    kcpy_graph *g = (kcpy_graph *)self;
    PyTypeObject *tp = Py_TYPE(self);
    kc_graph_desc_free(g->d);
    if (g->lock) PyThread_free_lock(g->lock);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* from_spec(path): str or os.PathLike (bytes refused: a spec's path is text). */
static PyObject *graph_from_spec(PyObject *cls, PyObject *arg) {
    (void)cls;
    PyObject *p = PyOS_FSPath(arg);
    if (!p) return NULL;
    if (!PyUnicode_Check(p)) {
        Py_DECREF(p);
        return PyErr_Format(PyExc_TypeError, "Graph.from_spec: the path is a str or os.PathLike of str, not %.80s",
                            Py_TYPE(arg)->tp_name);
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(p, &n);
    if (s && (Py_ssize_t)strlen(s) != n) {
        Py_DECREF(p);
        return PyErr_Format(PyExc_ValueError, "Graph.from_spec: the path contains a NUL character");
    }
    kc_graph_desc *d = NULL;
    int rc = -1;
    if (s) {
        Py_BEGIN_ALLOW_THREADS rc = kc_graph_desc_load(&d, s);
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(p);
    if (!s) return NULL;
    if (rc) return kcpy_raise(rc);
    return graph_wrap(d, 1);
}

static PyObject *graph_new_builder(PyObject *cls, PyObject *arg) {
    (void)cls;
    const char *name = kcpy_text(arg, "Graph.build: the name");
    if (!name) return NULL;
    kc_graph_desc *d = NULL;
    int rc = kc_graph_desc_new(&d, name);
    return rc ? kcpy_raise(rc) : graph_wrap(d, 0);
}

/* ---- reading back ---- */

static PyObject *tensor_tuple(kcpy_graph *g, kc_tensor_role role) {
    kcpy_graph_lock(g);
    size_t n = kc_graph_desc_count(g->d, role);
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        kc_graph_tensor_desc td = KC_GRAPH_TENSOR_DESC_INIT;
        int rc = kc_graph_desc_tensor(g->d, role, i, &td);
        if (rc) {
            kcpy_raise(rc);
            Py_CLEAR(out);
            break;
        }
        PyObject *sizes = PyTuple_New(td.rank);
        for (int r = 0; sizes && r < td.rank; r++) {
            PyObject *v = PyUnicode_FromString(td.sizes[r] ? td.sizes[r] : "?");
            if (!v) Py_CLEAR(sizes);
            else PyTuple_SET_ITEM(sizes, r, v);
        }
        PyObject *t = sizes ? Py_BuildValue("(siNO)", kcpy_dtype_name(td.dtype), td.rank, sizes,
                                            td.requires_grad ? Py_True : Py_False)
                            : NULL;
        if (!t) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, t);
    }
    kcpy_graph_unlock(g);
    return out;
}

static PyObject *graph_inputs(PyObject *self, void *u) {
    return (void)u, tensor_tuple((kcpy_graph *)self, KC_ROLE_INPUT);
}
static PyObject *graph_outputs(PyObject *self, void *u) {
    return (void)u, tensor_tuple((kcpy_graph *)self, KC_ROLE_OUTPUT);
}
static PyObject *graph_saved(PyObject *self, void *u) {
    return (void)u, tensor_tuple((kcpy_graph *)self, KC_ROLE_SAVED);
}

static const char *arg_type_name(kc_arg_type t) {
    static const char *names[] = {"?", "f32", "f64", "i32", "u32", "i64", "u64"};
    return t >= KC_ARG_F32 && t <= KC_ARG_U64 ? names[t] : "?";
}

static PyObject *graph_args(PyObject *self, void *u) {
    (void)u;
    kcpy_graph *g = (kcpy_graph *)self;
    kcpy_graph_lock(g);
    size_t n = kc_graph_desc_nargs(g->d);
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; out && i < n; i++) {
        const char *name = NULL;
        kc_arg_type t = KC_ARG_F32;
        int rc = kc_graph_desc_arg(g->d, i, &name, &t);
        PyObject *a = rc ? kcpy_raise(rc) : Py_BuildValue("(ss)", name ? name : "?", arg_type_name(t));
        if (!a) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, a);
    }
    kcpy_graph_unlock(g);
    return out;
}

static PyObject *graph_name(PyObject *self, void *u) {
    (void)u;
    kcpy_graph *g = (kcpy_graph *)self;
    kcpy_graph_lock(g);
    const char *n = kc_graph_desc_name(g->d);
    PyObject *r = PyUnicode_DecodeUTF8(n ? n : "", n ? (Py_ssize_t)strlen(n) : 0, "replace");
    kcpy_graph_unlock(g);
    return r;
}

/* ---- the builder ---- */

static kcpy_graph *building(PyObject *self) {
    kcpy_graph *g = (kcpy_graph *)self;
    if (g->frozen) PyErr_SetString(PyExc_ValueError, "this graph is finished: build another with Graph.build(name)");
    return g->frozen ? NULL : g;
}

/* A sequence of str into a NULL-terminated C array (borrowed from `*keep`, a tuple); -1 on error. */
static int str_array(PyObject *seq, const char *what, size_t max, const char **out, size_t *n, PyObject **keep) {
    *keep = NULL;
    if (PyUnicode_Check(seq) || PyBytes_Check(seq))
        return PyErr_Format(PyExc_TypeError, "%s: a sequence of str, not one %.80s", what, Py_TYPE(seq)->tp_name), -1;
    PyObject *t = PySequence_Tuple(seq);
    if (!t) return -1;
    if ((size_t)PyTuple_GET_SIZE(t) > max) {
        Py_DECREF(t);
        return PyErr_Format(PyExc_ValueError, "%s: at most %zu items", what, max), -1;
    }
    *n = (size_t)PyTuple_GET_SIZE(t);
    for (size_t i = 0; i < *n; i++) {
        PyObject *o = PyTuple_GET_ITEM(t, (Py_ssize_t)i);
        out[i] = kcpy_text(o, what); /* a str without NUL characters */
        if (!out[i]) {
            Py_DECREF(t);
            return -1;
        }
    }
    out[*n] = NULL;
    *keep = t;
    return 0;
}

#define MAX_ITEMS 4096

static PyObject *b_add_kernel(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"source", "name", "file", "headers", "options", "toolkit_headers", NULL};
    const char *source, *name, *file = NULL;
    PyObject *headers = Py_None, *options = Py_None;
    int toolkit = 0;
    kcpy_graph *g = building(self);
    if (!g ||
        !PyArg_ParseTupleAndKeywords(args, kw, "ss|$zOOp", names, &source, &name, &file, &headers, &options, &toolkit))
        return NULL;
    const char *opts[MAX_ITEMS + 1];
    size_t nopt = 0, nh = 0;
    PyObject *keep_o = NULL, *items = NULL, *res = NULL;
    kc_header_src *hs = NULL;
    if (options != Py_None && str_array(options, "options", MAX_ITEMS, opts, &nopt, &keep_o)) return NULL;
    if (headers != Py_None && kcpy_header_pairs(headers, "headers", &items, &hs, &nh)) goto done;
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = file, k.source = source, k.name = name, k.headers = hs, k.nheaders = nh;
    k.options = nopt ? opts : NULL, k.noptions = nopt, k.flags = toolkit ? KC_KERNEL_TOOLKIT_HEADERS : 0;
    int index = -1, rc = kc_graph_add_kernel(g->d, &k, &index);
    res = rc ? kcpy_raise(rc) : PyLong_FromLong(index);
done:
    PyMem_Free(hs);
    Py_XDECREF(items);
    Py_XDECREF(keep_o);
    return res;
}

static PyObject *b_add_input(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"dtype", "sizes", "strides", "requires_grad", NULL};
    PyObject *dt, *sizes, *strides = Py_None, *k1 = NULL, *k2 = NULL;
    int rg = 0;
    kc_dtype t;
    const char *sz[KC_MAX_RANK + 1], *st[KC_MAX_RANK + 1];
    size_t n = 0, ns = 0;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTupleAndKeywords(args, kw, "OO|$Op", names, &dt, &sizes, &strides, &rg) ||
        kcpy_dtype_parse(dt, "add_input", &t) || str_array(sizes, "sizes", KC_MAX_RANK, sz, &n, &k1))
        return NULL;
    if (strides != Py_None && str_array(strides, "strides", KC_MAX_RANK, st, &ns, &k2)) return Py_DECREF(k1), NULL;
    PyObject *res = NULL;
    if (strides != Py_None && ns != n) PyErr_Format(PyExc_ValueError, "add_input: %zu strides for %zu sizes", ns, n);
    else {
        size_t i = kc_graph_desc_count(g->d, KC_ROLE_INPUT);
        int rc = kc_graph_add_input(g->d, t, (int)n, sz, strides != Py_None ? st : NULL, rg);
        res = rc ? kcpy_raise(rc) : PyLong_FromSize_t(i);
    }
    Py_XDECREF(k1), Py_XDECREF(k2);
    return res;
}

static PyObject *b_add_tensor(PyObject *self, PyObject *args) {
    int role;
    PyObject *dt, *sizes, *keep;
    kc_dtype t;
    const char *sz[KC_MAX_RANK + 1];
    size_t n = 0;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTuple(args, "iOO", &role, &dt, &sizes) || kcpy_dtype_parse(dt, "add_tensor", &t) ||
        str_array(sizes, "sizes", KC_MAX_RANK, sz, &n, &keep))
        return NULL;
    size_t i = kc_graph_desc_count(g->d, (kc_tensor_role)role);
    int rc = role == KC_ROLE_OUTPUT || role == KC_ROLE_SAVED ? kc_graph_add_tensor(g->d, role, t, (int)n, sz)
                                                             : KC_EINVAL;
    Py_DECREF(keep);
    if (rc == KC_EINVAL && role != KC_ROLE_OUTPUT && role != KC_ROLE_SAVED)
        return kcpy_raise_msg(KC_EINVAL, "add_tensor: the role is output or saved");
    return rc ? kcpy_raise(rc) : PyLong_FromSize_t(i);
}

static PyObject *b_add_step(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"pass_", "kernel", "grid", "block", "args", "shared", NULL};
    int pass, kernel;
    PyObject *grid, *block, *sargs, *k1 = NULL, *k2 = NULL, *k3 = NULL;
    const char *shared = NULL, *gr[4], *bl[4], *av[MAX_ITEMS + 1];
    size_t ng = 0, nb = 0, na = 0;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTupleAndKeywords(args, kw, "iiOOO|z", names, &pass, &kernel, &grid, &block, &sargs, &shared))
        return NULL;
    PyObject *res = NULL;
    if (str_array(grid, "grid", 3, gr, &ng, &k1) || str_array(block, "block", 3, bl, &nb, &k2) ||
        str_array(sargs, "args", MAX_ITEMS, av, &na, &k3))
        goto done;
    if (ng != 3 || nb != 3) {
        PyErr_SetString(PyExc_ValueError, "add_step: grid and block are three expressions each");
        goto done;
    }
    int rc = kc_graph_add_step(g->d, (kc_pass)pass, kernel, gr, bl, shared, av, na);
    res = rc ? kcpy_raise(rc) : (Py_INCREF(Py_None), Py_None);
done:
    Py_XDECREF(k1), Py_XDECREF(k2), Py_XDECREF(k3);
    return res;
}

static PyObject *b_add_scratch(PyObject *self, PyObject *args) {
    int pass;
    const char *bytes;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTuple(args, "is", &pass, &bytes)) return NULL;
    int rc = kc_graph_add_scratch(g->d, (kc_pass)pass, bytes);
    return rc ? kcpy_raise(rc) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *b_add_arg(PyObject *self, PyObject *args) {
    const char *name, *type;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTuple(args, "ss", &name, &type)) return NULL;
    int t = 0;
    for (int i = KC_ARG_F32; i <= KC_ARG_U64; i++)
        if (strcmp(type, arg_type_name((kc_arg_type)i)) == 0) t = i;
    if (!t) return PyErr_Format(PyExc_ValueError, "add_arg: type '%s' is not one of f32 f64 i32 u32 i64 u64", type);
    int rc = kc_graph_add_arg(g->d, name, (kc_arg_type)t);
    return rc ? kcpy_raise(rc) : (Py_INCREF(Py_None), Py_None);
}

/* set_inplace(i) / set_grad_accumulate(i) / set_alias(output, input) / add_zero(pass, role, index, offset, count) */
static PyObject *b_mark(PyObject *self, PyObject *args) {
    int what;
    Py_ssize_t a, b = 0;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTuple(args, "in|n", &what, &a, &b)) return NULL;
    if (a < 0 || b < 0) return PyErr_Format(PyExc_ValueError, "an index is not negative");
    int rc = what == 0   ? kc_graph_set_inplace(g->d, (size_t)a)
             : what == 1 ? kc_graph_set_grad_accumulate(g->d, (size_t)a)
                         : kc_graph_set_alias(g->d, (size_t)a, (size_t)b);
    return rc ? kcpy_raise(rc) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *b_add_zero(PyObject *self, PyObject *args) {
    int pass, role;
    Py_ssize_t index;
    const char *offset = NULL, *count = NULL;
    kcpy_graph *g = building(self);
    if (!g || !PyArg_ParseTuple(args, "iin|zz", &pass, &role, &index, &offset, &count)) return NULL;
    if (index < 0) return PyErr_Format(PyExc_ValueError, "add_zero: the index is not negative");
    int rc = kc_graph_add_zero_range(g->d, (kc_pass)pass, (kc_tensor_role)role, (size_t)index, offset, count);
    return rc ? kcpy_raise(rc) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *b_finish(PyObject *self, PyObject *unused) {
    (void)unused;
    kcpy_graph *g = building(self);
    if (!g) return NULL;
    g->frozen = 1;
    Py_INCREF(self);
    return self;
}

static PyMethodDef graph_methods[] = {
    {"from_spec", graph_from_spec, METH_O | METH_CLASS, "Load a graph spec (JSON)."},
    {"new_builder", graph_new_builder, METH_O | METH_CLASS, "An empty description to build."},
    {"add_kernel", (PyCFunction)(void (*)(void))b_add_kernel, METH_VARARGS | METH_KEYWORDS, NULL},
    {"add_input", (PyCFunction)(void (*)(void))b_add_input, METH_VARARGS | METH_KEYWORDS, NULL},
    {"add_tensor", b_add_tensor, METH_VARARGS, NULL},
    {"add_step", (PyCFunction)(void (*)(void))b_add_step, METH_VARARGS | METH_KEYWORDS, NULL},
    {"add_scratch", b_add_scratch, METH_VARARGS, NULL},
    {"add_arg", b_add_arg, METH_VARARGS, NULL},
    {"mark", b_mark, METH_VARARGS, NULL},
    {"add_zero", b_add_zero, METH_VARARGS, NULL},
    {"finish", b_finish, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef graph_getset[] = {
    {"name", graph_name, NULL, NULL, NULL},       {"inputs", graph_inputs, NULL, NULL, NULL},
    {"outputs", graph_outputs, NULL, NULL, NULL}, {"saved", graph_saved, NULL, NULL, NULL},
    {"args", graph_args, NULL, NULL, NULL},       {NULL, NULL, NULL, NULL, NULL},
};
static PyType_Slot graph_slots[] = {
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_methods, graph_methods},
    {Py_tp_getset, graph_getset},
    {Py_tp_doc, "A graph description (the C side of kcache.Graph)."},
    {0, NULL},
};
static PyType_Spec graph_spec = {"kcache._kcache._Graph", sizeof(kcpy_graph), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, graph_slots};

int kcpy_graph_add(PyObject *module) {
    kcpy_graph_type = (PyTypeObject *)PyType_FromSpec(&graph_spec);
    if (!kcpy_graph_type) return -1;
    Py_INCREF(kcpy_graph_type);
    if (PyModule_AddObject(module, "_Graph", (PyObject *)kcpy_graph_type)) return Py_DECREF(kcpy_graph_type), -1;
    return kcpy_tensor_add(module) || kcpy_loaded_add(module) ? -1 : 0;
}
