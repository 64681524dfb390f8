/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache.c — kcache._kcache.Cache: one kc_cache, its calls in flight, and closing it safely.
 *
 * The one idea: every method enters the cache (kcpy_cache_enter: counted in flight, or
 * ClosedError once close began), releases the GIL around the libkcache call, and leaves.  close()
 * refuses new calls at once, waits without the GIL for the calls in flight, and only then runs
 * kc_cache_close (without the GIL: it may wait for queued remote writes); a second close, from any
 * thread, waits for the first to finish.  So a kc_cache is never closed under a running call, and
 * the interpreter never crashes on a closed cache.  Opening maps the keywords to kc_options: dir,
 * remote, readonly (the `readonly` setting), and every other keyword a KC_CONFIG_TABLE setting as
 * "name=value" (bool "1"/"0", int in decimal, str as is) for libkcache to check (kc_options v5).
 *
 * Callers: module.c (kcpy_cache_add), cache_ops.c and program.c (enter/leave), the graph part
 * (enter/leave on the cache object it is given).  Must not: hold the GIL across a call that may block;
 * judge a setting's name or value itself (libkcache says what is wrong).
 */
#include "kcpy.h"

#include <pthread.h>
#include <stddef.h>
#include <structmember.h>
#include <string.h>

typedef struct kcpy_cache {
    PyObject_HEAD kc_cache *c; /* NULL once closed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long inflight; /* calls entered and not left */
    int closing;   /* 1: close began, new calls refused */
    int closed;    /* 1: kc_cache_close done */
    PyObject *dir; /* str: kc_cache_dir, kept after close */
    PyObject *weakrefs;
} kcpy_cache;

PyTypeObject *kcpy_cache_type;

const char *kcpy_text(PyObject *obj, const char *what) {
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s%s", what, Py_TYPE(obj)->tp_name,
                     PyBytes_Check(obj) ? " (decode it first: kcache takes text)" : "");
        return NULL;
    }
    Py_ssize_t n = 0;
    const char *s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (s && (size_t)n != strlen(s)) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return NULL;
    }
    return s;
}

/* `obj` (a sequence of str; `one_str` 1: a str alone is a sequence of one) as a tuple in *tup and a
 * C array of its texts in *v. */
int kcpy_text_seq(PyObject *obj, const char *what, int one_str, PyObject **tup, const char ***v) {
    if (PyUnicode_Check(obj) && one_str) *tup = PyTuple_Pack(1, obj);
    else if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) || !PySequence_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be %sa sequence of str, not %.100s", what, one_str ? "a str or " : "",
                     Py_TYPE(obj)->tp_name);
        return -1;
    } else *tup = PySequence_Tuple(obj);
    if (!*tup) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(*tup);
    *v = PyMem_Calloc((size_t)n + 1, sizeof **v);
    if (!*v) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        char label[96];
        snprintf(label, sizeof label, "%s[%zd]", what, i);
        if (!((*v)[i] = kcpy_text(PyTuple_GET_ITEM(*tup, i), label))) return -1;
    }
    return 0;
}

/* One (name, source) item of a headers mapping's items() as a new 2-tuple (a tuple or a list of two,
 * unpacked by hand), or NULL with TypeError naming `what`. */
static PyObject *header_pair(PyObject *it, const char *what) {
    PyObject *pair = NULL;
    if (PyTuple_Check(it) || PyList_Check(it)) pair = PySequence_Tuple(it);
    else
        PyErr_Format(PyExc_TypeError, "%s: items() must give (name, source) pairs, not %.100s", what,
                     Py_TYPE(it)->tp_name);
    if (pair && PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_TypeError, "%s: items() must give (name, source) pairs, not %zd items", what,
                     PyTuple_GET_SIZE(pair));
        Py_CLEAR(pair);
    }
    return pair;
}

int kcpy_header_pairs(PyObject *obj, const char *what, PyObject **keep, kc_header_src **v, size_t *n) {
    *keep = NULL, *v = NULL, *n = 0;
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) || PyList_Check(obj) ||
        PyTuple_Check(obj) || !PyObject_HasAttrString(obj, "items")) {
        PyErr_Format(PyExc_TypeError, "%s must be a mapping of str to str (an object with items()), not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *items = PyMapping_Items(obj), *copy = items ? PySequence_Tuple(items) : NULL;
    Py_XDECREF(items); /* may be the mapping's own list: only the copy is read from here on */
    if (!copy) return -1;
    Py_ssize_t len = PyTuple_GET_SIZE(copy);
    if (!(*keep = PyTuple_New(len)) || !(*v = PyMem_Calloc((size_t)len + 1, sizeof **v))) {
        Py_DECREF(copy);
        if (*keep) PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *pair = header_pair(PyTuple_GET_ITEM(copy, i), what);
        if (!pair) break;
        PyTuple_SET_ITEM(*keep, i, pair); /* *keep owns the pair, the pair its two str */
        char label[96];
        snprintf(label, sizeof label, "%s: a header's name", what);
        if (!((*v)[i].name = kcpy_text(PyTuple_GET_ITEM(pair, 0), label))) break;
        snprintf(label, sizeof label, "%s: a header's source", what);
        if (!((*v)[i].source = kcpy_text(PyTuple_GET_ITEM(pair, 1), label))) break;
        *n = (size_t)i + 1;
    }
    Py_DECREF(copy);
    return *n == (size_t)len ? 0 : -1;
}

const char *kcpy_path(PyObject *obj, const char *what, PyObject **keep) {
    *keep = NULL;
    if (PyBytes_Check(obj) || PyByteArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be str or os.PathLike, not %.100s (kcache takes text paths)", what,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (!PyUnicode_Check(obj) && !PyObject_HasAttrString((PyObject *)Py_TYPE(obj), "__fspath__")) {
        PyErr_Format(PyExc_TypeError, "%s must be str or os.PathLike, not %.100s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *p = PyOS_FSPath(obj); /* an exception raised by __fspath__ stays what it is */
    if (!p) return NULL;
    if (!PyUnicode_Check(p)) {
        PyErr_Format(PyExc_TypeError, "%s: its __fspath__ gave %.100s; kcache takes text paths", what,
                     Py_TYPE(p)->tp_name);
        Py_DECREF(p);
        return NULL;
    }
    PyObject *b = PyUnicode_EncodeFSDefault(p);
    Py_DECREF(p);
    if (!b) return NULL;
    const char *s = PyBytes_AS_STRING(b);
    if ((size_t)PyBytes_GET_SIZE(b) != strlen(s)) {
        Py_DECREF(b);
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return NULL;
    }
    *keep = b;
    return s;
}

kc_cache *kcpy_cache_enter(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, kcpy_cache_type)) {
        PyErr_Format(PyExc_TypeError, "expected a kcache.Cache, not %.100s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    kcpy_cache *self = (kcpy_cache *)obj;
    pthread_mutex_lock(&self->mu);
    kc_cache *c = self->closing ? NULL : self->c;
    if (c) self->inflight++;
    pthread_mutex_unlock(&self->mu);
    if (!c) kcpy_raise_closed();
    return c;
}

int kcpy_cache_check(PyObject *obj) {
    if (!kcpy_cache_enter(obj)) return -1;
    kcpy_cache_leave(obj);
    return 0;
}

void kcpy_cache_leave(PyObject *obj) {
    kcpy_cache *self = (kcpy_cache *)obj;
    pthread_mutex_lock(&self->mu);
    if (--self->inflight == 0 && self->closing) pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
}

/* Close: refuse new calls, wait for those in flight, close the kc_cache; a later closer waits for the
 * first.  Called without the GIL. */
static void close_nogil(kcpy_cache *self) {
    pthread_mutex_lock(&self->mu);
    if (self->closing) {
        while (!self->closed) pthread_cond_wait(&self->cv, &self->mu);
        pthread_mutex_unlock(&self->mu);
        return;
    }
    self->closing = 1;
    while (self->inflight > 0) pthread_cond_wait(&self->cv, &self->mu);
    kc_cache *c = self->c;
    self->c = NULL;
    pthread_mutex_unlock(&self->mu);
    kc_cache_close(c);
    pthread_mutex_lock(&self->mu);
    self->closed = 1;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
}

static PyObject *cache_close(PyObject *obj, PyObject *unused) {
    (void)unused;
    Py_BEGIN_ALLOW_THREADS close_nogil((kcpy_cache *)obj);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *cache_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)args;
    (void)kwargs;
    kcpy_cache *self = (kcpy_cache *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->cv, NULL);
    self->closing = 1; /* until __init__ opens it */
    self->closed = 1;
    return (PyObject *)self;
}

static void cache_dealloc(PyObject *obj) {
    kcpy_cache *self = (kcpy_cache *)obj;
    PyObject_GC_UnTrack(obj);
    if (self->weakrefs) PyObject_ClearWeakRefs(obj);
    if (self->c) {
        kc_cache *c = self->c;
        self->c = NULL;
        Py_BEGIN_ALLOW_THREADS kc_cache_close(c); /* no call is in flight: each holds a reference */
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(self->dir);
    pthread_cond_destroy(&self->cv);
    pthread_mutex_destroy(&self->mu);
    PyTypeObject *tp = Py_TYPE(obj);
    tp->tp_free(obj);
    Py_DECREF(tp);
}

static int cache_traverse(PyObject *obj, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(obj));
    return 0;
}

/* One setting keyword as "name=value" in a new str; NULL with TypeError/ValueError set. */
static PyObject *setting_text(PyObject *name, PyObject *value) {
    const char *n = kcpy_text(name, "a setting's name");
    if (!n) return NULL;
    if (strchr(n, '=')) {
        PyErr_Format(PyExc_ValueError, "setting name %R contains '='", name);
        return NULL;
    }
    PyObject *v = NULL;
    if (PyBool_Check(value)) v = PyUnicode_FromString(value == Py_True ? "1" : "0");
    else if (PyLong_Check(value)) v = PyObject_Str(value);
    else if (PyUnicode_Check(value)) {
        v = Py_NewRef(value);
    } else {
        PyErr_Format(PyExc_TypeError, "setting %s must be str, int or bool, not %.100s", n, Py_TYPE(value)->tp_name);
        return NULL;
    }
    PyObject *s = v ? PyUnicode_FromFormat("%s=%U", n, v) : NULL;
    Py_XDECREF(v);
    if (s && !kcpy_text(s, n)) {
        Py_CLEAR(s);
    }
    return s;
}

/* The keywords other than dir and remote as "name=value" strs (readonly among them when not None). */
static PyObject *settings_list(PyObject *kwargs, PyObject *readonly) {
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    if (readonly && readonly != Py_None) {
        if (!PyBool_Check(readonly)) {
            PyErr_Format(PyExc_TypeError, "readonly must be True, False or None, not %.100s",
                         Py_TYPE(readonly)->tp_name);
            goto fail;
        }
        int t = readonly == Py_True;
        if (PyList_Append(list, PyUnicode_FromString(t ? "readonly=1" : "readonly=0")) < 0) goto fail;
        Py_DECREF(PyList_GET_ITEM(list, 0)); /* the list holds it */
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (kwargs && PyDict_Next(kwargs, &pos, &k, &v)) {
        if (PyUnicode_Check(k) &&
            (PyUnicode_CompareWithASCIIString(k, "dir") == 0 || PyUnicode_CompareWithASCIIString(k, "remote") == 0 ||
             PyUnicode_CompareWithASCIIString(k, "readonly") == 0))
            continue;
        PyObject *s = setting_text(k, v);
        if (!s || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            goto fail;
        }
        Py_DECREF(s);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

/* Open the kc_cache with `o` and the settings in `list` (strs), without the GIL. */
static int open_with(kcpy_cache *self, kc_options *o, PyObject *list) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    const char **set = PyMem_Calloc((size_t)n + 1, sizeof *set);
    if (!set) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        set[i] = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i)); /* checked by setting_text */
#if KC_OPTIONS_VERSION >= 5
    o->settings = n ? set : NULL;
    o->nsettings = (size_t)n;
#else
    if (n > 0) {
        PyMem_Free(set);
        kcpy_raise_msg(KC_EINVAL, "settings as keywords need a libkcache with kc_options version 5");
        return -1;
    }
#endif
    kc_cache *c = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_cache_open(&c, o);
    Py_END_ALLOW_THREADS PyMem_Free(set);
    if (rc != KC_OK) {
        kcpy_raise(rc); /* kc_error_last() on this thread: nothing called kcache since */
        return -1;
    }
    self->dir = PyUnicode_DecodeFSDefault(kc_cache_dir(c));
    if (!self->dir) {
        Py_BEGIN_ALLOW_THREADS kc_cache_close(c);
        Py_END_ALLOW_THREADS return -1;
    }
    self->c = c;
    self->closing = 0;
    self->closed = 0;
    return 0;
}

/* The keyword `name` from kwargs or positional `i` of args; NULL (borrowed) when absent. */
static PyObject *arg_of(PyObject *args, Py_ssize_t i, PyObject *kwargs, const char *name) {
    PyObject *kw = kwargs ? PyDict_GetItemString(kwargs, name) : NULL;
    if (i < PyTuple_GET_SIZE(args)) {
        if (kw) {
            PyErr_Format(PyExc_TypeError, "Cache() got multiple values for argument '%s'", name);
            return NULL;
        }
        return PyTuple_GET_ITEM(args, i);
    }
    return kw;
}

static int cache_init(PyObject *obj, PyObject *args, PyObject *kwargs) {
    kcpy_cache *self = (kcpy_cache *)obj;
    if (self->c || self->dir) {
        PyErr_SetString(PyExc_TypeError, "Cache.__init__ called on an open or closed cache");
        return -1;
    }
    if (PyTuple_GET_SIZE(args) > 2) {
        PyErr_Format(PyExc_TypeError, "Cache() takes at most 2 positional arguments (dir, remote), %zd given",
                     PyTuple_GET_SIZE(args));
        return -1;
    }
    PyObject *dir = arg_of(args, 0, kwargs, "dir");
    PyObject *remote = PyErr_Occurred() ? NULL : arg_of(args, 1, kwargs, "remote");
    if (PyErr_Occurred()) return -1;
    kc_options o = KC_OPTIONS_INIT;
    PyObject *dir_keep = NULL;
    if (dir && dir != Py_None && !(o.dir = kcpy_path(dir, "dir", &dir_keep))) return -1;
    if (remote && remote != Py_None && !(o.remote = kcpy_text(remote, "remote"))) {
        Py_XDECREF(dir_keep);
        return -1;
    }
    PyObject *readonly = kwargs ? PyDict_GetItemString(kwargs, "readonly") : NULL;
    PyObject *list = settings_list(kwargs, readonly);
    int rc = list ? open_with(self, &o, list) : -1;
    Py_XDECREF(list);
    Py_XDECREF(dir_keep);
    return rc;
}

static PyObject *cache_enter_ctx(PyObject *obj, PyObject *unused) {
    (void)unused;
    kc_cache *c = kcpy_cache_enter(obj);
    if (!c) return NULL;
    kcpy_cache_leave(obj);
    return Py_NewRef(obj);
}

static PyObject *cache_exit_ctx(PyObject *obj, PyObject *args) {
    (void)args;
    PyObject *r = cache_close(obj, NULL);
    Py_XDECREF(r);
    if (!r) return NULL;
    Py_RETURN_FALSE;
}

static PyObject *cache_get_dir(PyObject *obj, void *closure) {
    (void)closure;
    kcpy_cache *self = (kcpy_cache *)obj;
    if (!self->dir) return kcpy_raise_closed();
    return Py_NewRef(self->dir);
}

static PyObject *cache_get_closed(PyObject *obj, void *closure) {
    (void)closure;
    kcpy_cache *self = (kcpy_cache *)obj;
    pthread_mutex_lock(&self->mu);
    int closing = self->closing;
    pthread_mutex_unlock(&self->mu);
    return PyBool_FromLong(closing);
}

static PyObject *cache_repr(PyObject *obj) {
    kcpy_cache *self = (kcpy_cache *)obj;
    if (!self->dir) return PyUnicode_FromFormat("<kcache.Cache (not opened)>");
    return PyUnicode_FromFormat("<kcache.Cache dir=%R%s>", self->dir, self->closing ? " closed" : "");
}

static PyMethodDef cache_methods[] = {
    {"close", cache_close, METH_NOARGS,
     "Close the cache: wait for the calls in flight, then close it; later calls raise ClosedError.  Idempotent."},
    {"__enter__", cache_enter_ctx, METH_NOARGS, "The cache itself."},
    {"__exit__", cache_exit_ctx, METH_VARARGS, "Close the cache."},
    {"stats", kcpy_cache_stats, METH_NOARGS, "Every counter by its name (kc_cache_stats), with entries and bytes."},
    {"config", kcpy_cache_config, METH_NOARGS, "Each setting in force: name -> {'value', 'origin', 'where'}."},
    {"prewarm", (PyCFunction)(void (*)(void))kcpy_cache_prewarm, METH_VARARGS | METH_KEYWORDS,
     "prewarm(manifest, archs=None, jobs=0) -> dict: compile a manifest's graphs into the cache."},
    {"export", (PyCFunction)(void (*)(void))kcpy_cache_export, METH_VARARGS | METH_KEYWORDS,
     "export(path, *, graphs=None, archs=None, manifest=None) -> dict: write a bundle."},
    {"import_", (PyCFunction)(void (*)(void))kcpy_cache_import, METH_VARARGS | METH_KEYWORDS,
     "import_(path, *, dry_run=False) -> dict: verify a bundle, then write its entries."},
    {"coverage", (PyCFunction)(void (*)(void))kcpy_cache_coverage, METH_VARARGS | METH_KEYWORDS,
     "coverage(manifest, device=-1) -> dict: whether every graph x target of a manifest is stored."},
    {"_compile", (PyCFunction)(void (*)(void))kcpy_cache_compile, METH_VARARGS | METH_KEYWORDS,
     "kc_cache_compile's result as a tuple (Cache.compile makes it a Program)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cache_getset[] = {
    {"dir", cache_get_dir, NULL, "The cache directory (kc_cache_dir).", NULL},
    {"closed", cache_get_closed, NULL, "Whether close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef cache_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(kcpy_cache, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot cache_slots[] = {
    {Py_tp_new, cache_new},
    {Py_tp_init, cache_init},
    {Py_tp_dealloc, cache_dealloc},
    {Py_tp_traverse, cache_traverse},
    {Py_tp_methods, cache_methods},
    {Py_tp_getset, cache_getset},
    {Py_tp_members, cache_members},
    {Py_tp_repr, cache_repr},
    {Py_tp_doc, "Cache(dir=None, remote=None, *, readonly=None, **settings): one kcache cache; thread-safe."},
    {0, NULL},
};

static PyType_Spec cache_spec = {
    "kcache._kcache.Cache",
    sizeof(kcpy_cache),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    cache_slots,
};

int kcpy_cache_add(PyObject *module) {
    kcpy_cache_type = (PyTypeObject *)PyType_FromSpec(&cache_spec);
    if (!kcpy_cache_type) return -1;
    return PyModule_AddObjectRef(module, "Cache", (PyObject *)kcpy_cache_type);
}
