/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.c — Cache.compile's C half: kc_cache_compile, and its kc_program as a tuple.
 *
 * The one idea: check and hold every argument as text (the sequences copied into tuples, so that no
 * other thread can free a string while the GIL is released), call kc_cache_compile without the GIL,
 * and hand back what the kc_program holds; kcache/_program.py gives it its shape (Program, Param).
 *
 * Callers: cache.c's method table (Cache._compile, called by kcache._cache.Cache.compile).
 * Must not: add logic of its own to the compile (the key, the stores, the outcome are libkcache's).
 */
#include "kcpy.h"

#include "kcache/compile.h"
#include "kcache/program.h"

#include <stdlib.h>
#include <string.h>

/* The arguments of one compile, held (tuples of str) for the call without the GIL. */
typedef struct compile_args {
    PyObject *names;   /* tuple of str */
    PyObject *options; /* tuple of str */
    PyObject *headers; /* tuple of (str, str) tuples */
    PyObject *held;    /* tuple (source, target, file): the texts k and target point into */
    const char **name_v, **opt_v;
    kc_header_src *hdr_v;
    kc_kernel_src k;
    const char *target;
} compile_args;

static void args_free(compile_args *a) {
    Py_XDECREF(a->names);
    Py_XDECREF(a->options);
    Py_XDECREF(a->headers);
    Py_XDECREF(a->held);
    PyMem_Free(a->name_v);
    PyMem_Free(a->opt_v);
    PyMem_Free(a->hdr_v);
}

/* headers: a mapping of name -> source text, copied (kcpy_header_pairs). */
static int header_list(PyObject *obj, compile_args *a) {
    size_t n = 0;
    if (kcpy_header_pairs(obj, "headers", &a->headers, &a->hdr_v, &n) < 0) return -1;
    a->k.headers = a->hdr_v;
    a->k.nheaders = n;
    return 0;
}

static int args_parse(PyObject *args, PyObject *kwargs, compile_args *a) {
    static char *kwlist[] = {"source",  "name_expressions", "target", "options",
                             "headers", "toolkit_headers",  "file",   NULL};
    PyObject *source, *names, *target, *options = NULL, *headers = NULL, *tk = NULL, *file = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OOOO:compile", kwlist, &source, &names, &target, &options,
                                     &headers, &tk, &file))
        return -1;
    kc_kernel_src init = KC_KERNEL_SRC_INIT;
    a->k = init;
    /* kwargs may be a dict another thread can change: hold the very objects whose texts are used */
    if (!(a->held = PyTuple_Pack(3, source, target, file ? file : Py_None))) return -1;
    if (!(a->k.source = kcpy_text(source, "source")) || !(a->target = kcpy_text(target, "target"))) return -1;
    if (file && file != Py_None && !(a->k.file = kcpy_text(file, "file"))) return -1;
    if (kcpy_text_seq(names, "name_expressions", 1, &a->names, &a->name_v) < 0) return -1;
    if (options && kcpy_text_seq(options, "options", 0, &a->options, &a->opt_v) < 0) return -1;
    if (a->options) {
        a->k.options = a->opt_v;
        a->k.noptions = (size_t)PyTuple_GET_SIZE(a->options);
    }
    if (headers && headers != Py_None && header_list(headers, a) < 0) return -1;
    int t = tk ? PyObject_IsTrue(tk) : 0;
    if (t < 0) return -1;
    a->k.flags = t ? KC_KERNEL_TOOLKIT_HEADERS : 0u;
    return 0;
}

/* A tuple of the n strings of v. */
static PyObject *str_tuple(const char *const *v, size_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromString(v[i] ? v[i] : "");
        if (!s) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, s);
    }
    return t;
}

/* params[i][0..nparams[i]) as a tuple (per name) of tuples (offset, size, align, cls). */
static PyObject *param_tables(const kc_program *p) {
    PyObject *all = PyTuple_New((Py_ssize_t)p->nnames);
    for (size_t i = 0; all && i < p->nnames; i++) {
        size_t n = p->nparams ? p->nparams[i] : 0;
        PyObject *row = PyTuple_New((Py_ssize_t)n);
        for (size_t j = 0; row && j < n; j++) {
            const kc_param_info *q = &p->params[i][j];
            PyObject *t = Py_BuildValue("(IIIs)", q->offset, q->size, q->align, q->cls ? q->cls : "any");
            if (!t) {
                Py_CLEAR(row);
                break;
            }
            PyTuple_SET_ITEM(row, (Py_ssize_t)j, t);
        }
        if (!row) {
            Py_CLEAR(all);
            break;
        }
        PyTuple_SET_ITEM(all, (Py_ssize_t)i, row);
    }
    return all;
}

static PyObject *program_tuple(const kc_program *p) {
    const char *outcome = kc_lookup_outcome_name((kc_lookup_outcome)p->outcome);
    PyObject *names = str_tuple(p->names, p->nnames);
    PyObject *lowered = str_tuple(p->lowered_names, p->nnames);
    PyObject *params = param_tables(p);
    /* NVRTC's log is text in no promised encoding: str, undecodable bytes replaced (never an error). */
    const char *log = p->log ? p->log : "";
    PyObject *logs = PyUnicode_DecodeUTF8(log, (Py_ssize_t)strlen(log), "replace");
    PyObject *r = NULL;
    if (names && lowered && params && logs)
        r = Py_BuildValue("(y#OsOOOssOd)", (const char *)p->image, (Py_ssize_t)p->len, p->is_ptx ? Py_True : Py_False,
                          p->target ? p->target : "", names, lowered, params, p->key, outcome ? outcome : "", logs,
                          p->compile_seconds);
    Py_XDECREF(logs);
    Py_XDECREF(names);
    Py_XDECREF(lowered);
    Py_XDECREF(params);
    return r;
}

PyObject *kcpy_cache_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
    compile_args a;
    memset(&a, 0, sizeof a);
    if (kcpy_cache_check(self) < 0 || args_parse(args, kwargs, &a) < 0) {
        args_free(&a);
        return NULL;
    }
    kc_cache *c = kcpy_cache_enter(self);
    if (!c) {
        args_free(&a);
        return NULL;
    }
    kc_program *p = NULL;
    int rc;
    size_t n = (size_t)PyTuple_GET_SIZE(a.names);
    Py_BEGIN_ALLOW_THREADS rc = kc_cache_compile(c, &a.k, a.name_v, n, a.target, &p);
    Py_END_ALLOW_THREADS kcpy_cache_leave(self);
    PyObject *r = rc == KC_OK ? program_tuple(p) : kcpy_raise(rc);
    kc_program_free(p);
    args_free(&a);
    return r;
}
