/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tensor.c — tensors across the boundary: the caller's (DLPack capsules, __cuda_array_interface__)
 * viewed as kc_tensor, and kcache's outputs exported as kcache._kcache.Buffer (DLPack and
 * __cuda_array_interface__ v3), which the Python layer turns into the caller's framework's tensor.
 *
 * The one idea: a view never copies; whoever produced the memory is kept alive while kcache uses
 * it — an imported DLPack capsule is renamed "used_dltensor" and its deleter called exactly once
 * (by the holder this file returns), and an exported Buffer frees kcache's allocation (on the
 * stream it was made on) only when the last consumer let go.  Callers: loaded.c.  Must not: accept
 * memory it cannot prove is a CUDA tensor on the graph's device, or touch the data.
 */
#include <stdint.h>
#include <string.h>

#include "graph_int.h"
#include "kcache/cuda.h"

/* ---- DLPack (dlpack.h, 0.8 and 1.x), declared here: the ABI is fixed ---- */
typedef struct {
    int32_t device_type, device_id;
} dl_device;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed {
    dl_tensor t;
    void *manager_ctx;
    void (*deleter)(struct dl_managed *);
} dl_managed;
typedef struct dl_managed_v {
    uint32_t major, minor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed_v *);
    uint64_t flags;
    dl_tensor t;
} dl_managed_v;
enum {
    DL_CUDA = 2,
    DL_INT = 0,
    DL_UINT = 1,
    DL_FLOAT = 2,
    DL_BFLOAT = 4,
    DL_BOOL = 6,
    DL_F8E4M3FN = 10,
    DL_F8E5M2 = 12
};
#define DL_FLAG_READ_ONLY 1ULL /* DLPACK_FLAG_BITMASK_READ_ONLY of DLManagedTensorVersioned.flags */

static const struct {
    kc_dtype t;
    const char *name;
    dl_dtype dl;
    const char *typestr; /* __cuda_array_interface__ */
} dtypes[] = {
    {KC_DTYPE_F32, "f32", {DL_FLOAT, 32, 1}, "<f4"},      {KC_DTYPE_F16, "f16", {DL_FLOAT, 16, 1}, "<f2"},
    {KC_DTYPE_BF16, "bf16", {DL_BFLOAT, 16, 1}, NULL},    {KC_DTYPE_F64, "f64", {DL_FLOAT, 64, 1}, "<f8"},
    {KC_DTYPE_I32, "i32", {DL_INT, 32, 1}, "<i4"},        {KC_DTYPE_I64, "i64", {DL_INT, 64, 1}, "<i8"},
    {KC_DTYPE_I8, "i8", {DL_INT, 8, 1}, "|i1"},           {KC_DTYPE_U8, "u8", {DL_UINT, 8, 1}, "|u1"},
    {KC_DTYPE_BOOL, "bool", {DL_BOOL, 8, 1}, "|b1"},      {KC_DTYPE_F8E4M3, "f8e4m3", {DL_F8E4M3FN, 8, 1}, NULL},
    {KC_DTYPE_F8E5M2, "f8e5m2", {DL_F8E5M2, 8, 1}, NULL},
};
enum { NDTYPES = sizeof dtypes / sizeof dtypes[0] };

const char *kcpy_dtype_name(kc_dtype t) {
    for (int i = 0; i < NDTYPES; i++)
        if (dtypes[i].t == t) return dtypes[i].name;
    return "?";
}

static int dtype_index(kc_dtype t) {
    for (int i = 0; i < NDTYPES; i++)
        if (dtypes[i].t == t) return i;
    return 0;
}

int kcpy_dtype_parse(PyObject *o, const char *what, kc_dtype *out) {
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: a dtype name is a str (\"f32\", \"bf16\", ...), not %.80s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8(o);
    if (!s) return -1;
    for (int i = 0; i < NDTYPES; i++)
        if (strcmp(s, dtypes[i].name) == 0) return *out = dtypes[i].t, 0;
    PyErr_Format(PyExc_ValueError, "%s: unknown dtype %R (known: f32 f16 bf16 f64 i32 i64 i8 u8 bool f8e4m3 f8e5m2)",
                 what, o);
    return -1;
}

static size_t dtype_bytes(kc_dtype t) {
    return t == KC_DTYPE_F64 || t == KC_DTYPE_I64    ? 8
           : t == KC_DTYPE_F32 || t == KC_DTYPE_I32  ? 4
           : t == KC_DTYPE_F16 || t == KC_DTYPE_BF16 ? 2
                                                     : 1;
}

/* ---- import ---- */

/* The destructors of our hold on an imported tensor: the producer's deleter, once.  A capsule is often
 * dropped while an exception is being raised (a tensor refused): that exception is kept, whatever the
 * deleter or the name lookup does to the error indicator. */
static void used_v0(PyObject *cap) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    dl_managed *m = PyCapsule_GetPointer(cap, "kcache.dltensor");
    if (m && m->deleter) m->deleter(m);
    PyErr_Clear();
    PyErr_Restore(t, v, tb);
}
static void used_v1(PyObject *cap) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    dl_managed_v *m = PyCapsule_GetPointer(cap, "kcache.dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
    PyErr_Clear();
    PyErr_Restore(t, v, tb);
}

/* obj.__dlpack__(stream=...), versioned first when the producer takes max_version. */
static PyObject *call_dlpack(PyObject *obj, void *stream) {
    /* DLPack's stream argument: 1 is the legacy default stream (0 is ambiguous and refused). */
    PyObject *s = PyLong_FromVoidPtr(stream ? stream : (void *)1);
    if (!s) return NULL;
    PyObject *fn = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *kw = fn ? Py_BuildValue("{s:O,s:(ii)}", "stream", s, "max_version", 1, 0) : NULL;
    PyObject *empty = kw ? PyTuple_New(0) : NULL;
    PyObject *cap = empty ? PyObject_Call(fn, empty, kw) : NULL;
    if (!cap && empty && PyErr_ExceptionMatches(PyExc_TypeError)) { /* a producer before DLPack 1.0 */
        PyErr_Clear();
        PyDict_DelItemString(kw, "max_version");
        cap = PyObject_Call(fn, empty, kw);
    }
    Py_XDECREF(empty), Py_XDECREF(kw), Py_XDECREF(fn), Py_DECREF(s);
    return cap;
}

static int bad(PyObject *exc, const char *what, const char *fmt, const char *detail) {
    PyErr_Format(exc, fmt, what, detail);
    return -1;
}

/* A tensor with elements but a NULL data pointer is refused (a kernel would fault on it). */
static int no_data(const kc_tensor *t, const char *what) {
    int empty = 0;
    for (int r = 0; r < t->rank; r++) empty |= t->sizes[r] == 0;
    if (t->data || empty) return 0;
    return bad(PyExc_ValueError, what, "%s: a tensor with elements and a NULL data pointer%s", "");
}

/* A read-only tensor is refused where kcache writes it (`writes`: an in-place input, an accumulated gradient). */
static int read_only(const char *what, int writes, const char *how) {
    if (!writes) return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s is read-only (%s) and kcache writes it (an in-place input or an accumulated gradient); "
                 "pass a writable tensor",
                 what, how);
    return -1;
}

/* Fill `out` from a DLTensor (checked); -1 with an exception naming `what`. */
static int from_dl(const dl_tensor *t, const char *what, int device, kc_tensor *out) {
    if (t->device.device_type != DL_CUDA || t->device.device_id != device) {
        PyErr_Format(PyExc_ValueError, "%s is on DLPack device (%d, %d); the graph runs on cuda:%d (device type 2)",
                     what, (int)t->device.device_type, (int)t->device.device_id, device);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > KC_MAX_RANK)
        return PyErr_Format(PyExc_ValueError, "%s has rank %d; kcache takes 0 to %d", what, (int)t->ndim, KC_MAX_RANK),
               -1;
    int k = -1;
    for (int i = 0; i < NDTYPES; i++)
        if (memcmp(&dtypes[i].dl, &t->dtype, sizeof t->dtype) == 0) k = i;
    if (k < 0) {
        PyErr_Format(PyExc_TypeError, "%s has DLPack dtype (code %d, bits %d, lanes %d), which kcache does not know",
                     what, t->dtype.code, t->dtype.bits, t->dtype.lanes);
        return -1;
    }
    out->dtype = dtypes[k].t;
    out->rank = t->ndim;
    if ((!t->data && t->byte_offset) || t->byte_offset > UINTPTR_MAX - (uintptr_t)t->data)
        return PyErr_Format(PyExc_ValueError, "%s: a DLPack tensor whose byte_offset %llu %s", what,
                            (unsigned long long)t->byte_offset,
                            t->data ? "overflows its data pointer" : "is added to a NULL data pointer"),
               -1;
    out->data = (void *)((uintptr_t)t->data + (uintptr_t)t->byte_offset);
    if (t->ndim > 0 && !t->shape) return bad(PyExc_ValueError, what, "%s: a DLPack tensor without shape%s", "");
    int64_t st = 1;
    for (int r = t->ndim - 1; r >= 0; r--) {
        if (t->shape[r] < 0) return bad(PyExc_ValueError, what, "%s has a negative size%s", "");
        out->sizes[r] = t->shape[r];
        out->strides[r] = t->strides ? t->strides[r] : st;
        if (__builtin_mul_overflow(st, t->shape[r] ? t->shape[r] : 1, &st))
            return bad(PyExc_ValueError, what, "%s: its sizes overflow 64 bits%s", "");
    }
    return no_data(out, what);
}

static int import_dlpack(PyObject *obj, const char *what, void *stream, int device, int writes, kc_tensor *out,
                         PyObject **keep) {
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) return -1;
    int dt = -1, di = -1;
    int ok = PyTuple_Check(dev) && PyArg_ParseTuple(dev, "ii", &dt, &di);
    Py_DECREF(dev);
    if (!ok) {
        PyErr_Clear();
        return bad(PyExc_TypeError, what, "%s: __dlpack_device__() did not return (type, id)%s", "");
    }
    if (dt != DL_CUDA || di != device) {
        PyErr_Format(PyExc_ValueError, "%s is on DLPack device (%d, %d)%s; the graph runs on cuda:%d", what, dt, di,
                     dt == 1 ? " (the CPU)" : "", device);
        return -1;
    }
    PyObject *cap = call_dlpack(obj, stream);
    if (!cap) return -1;
    int rc = -1;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        dl_managed_v *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (PyCapsule_SetName(cap, "used_dltensor_versioned") == 0) {
            *keep = PyCapsule_New(m, "kcache.dltensor_versioned", used_v1);
            if (!*keep && m->deleter) m->deleter(m);
            if (*keep && m->major != 1)
                PyErr_Format(PyExc_ValueError, "%s: a DLPack %u.%u tensor; kcache reads 1.x", what, m->major, m->minor);
            else if (*keep && !((m->flags & DL_FLAG_READ_ONLY) && read_only(what, writes, "DLPack's read-only flag")))
                rc = from_dl(&m->t, what, device, out);
        }
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        dl_managed *m = PyCapsule_GetPointer(cap, "dltensor");
        if (PyCapsule_SetName(cap, "used_dltensor") == 0) {
            *keep = PyCapsule_New(m, "kcache.dltensor", used_v0);
            if (!*keep && m->deleter) m->deleter(m);
            if (*keep) rc = from_dl(&m->t, what, device, out);
        }
    } else {
        bad(PyExc_TypeError, what, "%s: __dlpack__() returned no DLPack capsule%s", "");
    }
    Py_DECREF(cap);
    if (rc) Py_CLEAR(*keep); /* the producer's deleter runs now */
    return rc;
}

/* A tuple of ints into `v` (n of them); -1 with an exception. */
static int int_tuple(PyObject *t, const char *what, const char *field, int64_t *v, int *n) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) > KC_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "%s: __cuda_array_interface__[%s] is not a tuple of at most %d ints", what,
                     field, KC_MAX_RANK);
        return -1;
    }
    *n = (int)PyTuple_GET_SIZE(t);
    for (int i = 0; i < *n; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* The strides of a CAI tensor whose sizes and dtype are read (`strides` NULL: C-contiguous), in elements. */
static int cai_strides(PyObject *strides, const char *what, kc_tensor *out) {
    int64_t st[KC_MAX_RANK], e = 1, size = (int64_t)dtype_bytes(out->dtype);
    int ns = 0, n = out->rank;
    if (strides && int_tuple(strides, what, "strides", st, &ns)) return -1;
    if (strides && ns != n) return bad(PyExc_ValueError, what, "%s: strides and shape differ in length%s", "");
    for (int r = n - 1; r >= 0; r--) {
        if (out->sizes[r] < 0) return bad(PyExc_ValueError, what, "%s has a negative size%s", "");
        if (strides && st[r] % size)
            return bad(PyExc_ValueError, what, "%s: a stride is not a whole number of elements%s", "");
        out->strides[r] = strides ? st[r] / size : e;
        if (__builtin_mul_overflow(e, out->sizes[r] ? out->sizes[r] : 1, &e))
            return bad(PyExc_ValueError, what, "%s: its sizes overflow 64 bits%s", "");
    }
    return 0;
}

/*
 * CAI v3's "stream": the producer's stream, whose work must be done before kcache reads or writes.
 * None (or absent): nothing to wait for; 0 is refused (the protocol forbids it); the stream kcache
 * launches on (1 and kcache's NULL both being the legacy default stream): ordered already; another:
 * libkcache has no public stream-to-stream wait, so the device's context is synchronized (without
 * the GIL) — correct, and a stall the caller avoids by passing stream= the producer's stream.
 */
static int cai_stream(PyObject *cai, const char *what, void *stream, int device) {
    PyObject *so = PyDict_GetItemString(cai, "stream");
    if (!so || so == Py_None) return 0;
    if (!PyLong_Check(so) || PyBool_Check(so))
        return bad(PyExc_TypeError, what, "%s: __cuda_array_interface__[\"stream\"] is not an int or None%s", "");
    void *p = PyLong_AsVoidPtr(so);
    if (!p && PyErr_Occurred()) return -1;
    if (!p)
        return bad(PyExc_ValueError, what,
                   "%s: __cuda_array_interface__[\"stream\"] is 0, which the protocol forbids (1 is the legacy "
                   "default stream)%s",
                   "");
    if (p == (stream ? stream : (void *)1)) return 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_cuda_push(device);
    if (!rc) rc = kc_cuda_synchronize(), kc_cuda_pop();
    Py_END_ALLOW_THREADS return rc ? (kcpy_raise(rc), -1) : 0;
}

static int cai_parse(PyObject *cai, const char *what, int writes, kc_tensor *out) {
    PyObject *shape = PyDict_GetItemString(cai, "shape"), *ts = PyDict_GetItemString(cai, "typestr");
    PyObject *data = PyDict_GetItemString(cai, "data"), *strides = PyDict_GetItemString(cai, "strides");
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    if (mask && mask != Py_None)
        return bad(PyExc_ValueError, what, "%s: a masked __cuda_array_interface__%s is refused", "");
    if (!shape || !ts || !data || !PyUnicode_Check(ts) || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return bad(PyExc_TypeError, what, "%s: __cuda_array_interface__ lacks shape, typestr or data%s", "");
    int n = 0, k = -1;
    if (int_tuple(shape, what, "shape", out->sizes, &n)) return -1;
    const char *s = PyUnicode_AsUTF8(ts);
    if (!s) return -1;
    for (int i = 0; i < NDTYPES; i++)
        if (dtypes[i].typestr && strcmp(dtypes[i].typestr, s) == 0) k = i;
    if (k < 0) return bad(PyExc_TypeError, what, "%s has typestr '%s', which kcache does not know", s);
    out->dtype = dtypes[k].t, out->rank = n;
    out->data = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if (!out->data && PyErr_Occurred()) return -1;
    int ro = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (ro < 0 || (ro && read_only(what, writes, "__cuda_array_interface__[\"data\"][1] is True"))) return -1;
    if (cai_strides(strides && strides != Py_None ? strides : NULL, what, out)) return -1;
    return no_data(out, what);
}

int kcpy_tensor_import(PyObject *obj, const char *what, void *stream, int device, int writes, kc_tensor *out,
                       PyObject **keep) {
    *keep = NULL;
    memset(out, 0, sizeof *out);
    if (PyObject_HasAttrString(obj, "__dlpack__")) return import_dlpack(obj, what, stream, device, writes, out, keep);
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (!cai) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "%s: a %.80s is not a tensor kcache takes (one with __dlpack__ or __cuda_array_interface__: "
                     "PyTorch, CuPy, JAX on a CUDA device)",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    int rc = PyDict_Check(cai) ? cai_parse(cai, what, writes, out)
                               : bad(PyExc_TypeError, what, "%s: __cuda_array_interface__ is not a dict%s", "");
    if (!rc) rc = cai_stream(cai, what, stream, device);
    Py_DECREF(cai);
    if (!rc) Py_INCREF(obj), *keep = obj;
    return rc;
}

/* ---- export: kcache._kcache.Buffer ---- */

typedef struct {
    PyObject_HEAD kc_tensor t;
    int device, owned;
    void *stream;
    PyObject *stream_obj; /* the caller's stream object, kept while its memory may be freed on it */
} buffer;

PyTypeObject *kcpy_buffer_type;

PyObject *kcpy_buffer_new(const kc_tensor *t, int device, void *stream, PyObject *stream_obj) {
    buffer *b = PyObject_New(buffer, kcpy_buffer_type);
    if (!b) return NULL;
    b->t = *t, b->device = device, b->stream = stream, b->owned = 1;
    Py_XINCREF(stream_obj), b->stream_obj = stream_obj;
    return (PyObject *)b;
}

static void buffer_dealloc(PyObject *self) {
    buffer *b = (buffer *)self;
    PyTypeObject *tp = Py_TYPE(self);
    if (b->owned && b->t.data) {
        Py_BEGIN_ALLOW_THREADS if (kc_cuda_push(b->device) == KC_OK) {
            kc_tensor_release(&b->t, b->stream, NULL);
            kc_cuda_pop();
        }
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(b->stream_obj);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* The DLManagedTensor of an export: the struct, its shape and strides, and a reference to the Buffer. */
typedef struct {
    dl_managed_v v;
    dl_managed m;
    int64_t shape[KC_MAX_RANK], strides[KC_MAX_RANK];
    PyObject *owner;
} dl_export;

static void export_free(dl_export *e) {
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(e->owner);
    PyMem_RawFree(e);
    PyGILState_Release(g);
}
static void del_v0(dl_managed *m) { export_free(m->manager_ctx); }
static void del_v1(dl_managed_v *m) { export_free(m->manager_ctx); }
static void cap_v0(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor")) del_v0(PyCapsule_GetPointer(cap, "dltensor"));
}
static void cap_v1(PyObject *cap) {
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) del_v1(PyCapsule_GetPointer(cap, "dltensor_versioned"));
}

static PyObject *buffer_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *maxv = Py_None, *dld = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$OOOO", names, &stream, &maxv, &dld, &copy)) return NULL;
    buffer *b = (buffer *)self;
    if (copy == Py_True) return PyErr_Format(PyExc_BufferError, "kcache buffers export without a copy only");
    if (dld != Py_None) {
        int dt = -1, di = -1;
        if (!PyTuple_Check(dld) || !PyArg_ParseTuple(dld, "ii", &dt, &di) || dt != DL_CUDA || di != b->device) {
            PyErr_Clear();
            return PyErr_Format(PyExc_BufferError, "a kcache buffer is on (2, %d) only", b->device);
        }
    }
    int v1 = 0;
    if (maxv != Py_None) {
        long major = PyTuple_Check(maxv) && PyTuple_GET_SIZE(maxv) == 2 ? PyLong_AsLong(PyTuple_GET_ITEM(maxv, 0)) : -1;
        if (major == -1 && PyErr_Occurred()) return NULL;
        v1 = major >= 1;
    }
    if (stream != Py_None) { /* the consumer's stream: when it is not ours, wait for our work first */
        void *s = PyLong_AsVoidPtr(stream);
        if (!s && PyErr_Occurred()) return NULL;
        if (s == (void *)1) s = NULL;
        if (s != b->stream) {
            int rc;
            Py_BEGIN_ALLOW_THREADS rc = kc_cuda_push(b->device);
            if (!rc) rc = kc_cuda_synchronize(), kc_cuda_pop();
            Py_END_ALLOW_THREADS if (rc) return kcpy_raise(rc);
        }
    }
    dl_export *e = PyMem_RawCalloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    dl_tensor *t = v1 ? &e->v.t : &e->m.t;
    t->data = b->t.data, t->device.device_type = DL_CUDA, t->device.device_id = b->device;
    t->ndim = b->t.rank, t->dtype = dtypes[dtype_index(b->t.dtype)].dl;
    for (int r = 0; r < b->t.rank; r++) e->shape[r] = b->t.sizes[r], e->strides[r] = b->t.strides[r];
    t->shape = e->shape, t->strides = e->strides;
    Py_INCREF(self), e->owner = self;
    e->v.major = 1, e->v.minor = 0, e->v.manager_ctx = e, e->v.deleter = del_v1;
    e->m.manager_ctx = e, e->m.deleter = del_v0;
    PyObject *cap = v1 ? PyCapsule_New(&e->v, "dltensor_versioned", cap_v1) : PyCapsule_New(&e->m, "dltensor", cap_v0);
    if (!cap) Py_DECREF(self), PyMem_RawFree(e);
    return cap;
}

static PyObject *buffer_dlpack_device(PyObject *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("(ii)", DL_CUDA, ((buffer *)self)->device);
}

static PyObject *shape_of(const kc_tensor *t, int bytes) {
    PyObject *s = PyTuple_New(t->rank);
    for (int r = 0; s && r < t->rank; r++) {
        PyObject *v = PyLong_FromLongLong(bytes ? t->strides[r] * (int64_t)dtype_bytes(t->dtype) : t->sizes[r]);
        if (!v) return Py_DECREF(s), NULL;
        PyTuple_SET_ITEM(s, r, v);
    }
    return s;
}

static PyObject *buffer_cai(PyObject *self, void *unused) {
    (void)unused;
    buffer *b = (buffer *)self;
    const char *ts = dtypes[dtype_index(b->t.dtype)].typestr;
    if (!ts)
        return PyErr_Format(PyExc_AttributeError, "a %s buffer has no __cuda_array_interface__ typestr (use DLPack)",
                            kcpy_dtype_name(b->t.dtype));
    PyObject *shape = shape_of(&b->t, 0), *strides = shape_of(&b->t, 1);
    PyObject *r = shape && strides
                      ? Py_BuildValue("{s:N,s:s,s:(Ni),s:N,s:i,s:N}", "shape", shape, "typestr", ts, "data",
                                      PyLong_FromVoidPtr(b->t.data), 0, "strides", strides, "version", 3, "stream",
                                      PyLong_FromVoidPtr(b->stream ? b->stream : (void *)1))
                      : NULL;
    if (!r) Py_XDECREF(shape), Py_XDECREF(strides);
    return r;
}

static PyObject *buffer_shape(PyObject *self, void *unused) { return (void)unused, shape_of(&((buffer *)self)->t, 0); }
static PyObject *buffer_dtype(PyObject *self, void *unused) {
    return (void)unused, PyUnicode_FromString(kcpy_dtype_name(((buffer *)self)->t.dtype));
}
static PyObject *buffer_ptr(PyObject *self, void *unused) {
    return (void)unused, PyLong_FromVoidPtr(((buffer *)self)->t.data);
}
static PyObject *buffer_device(PyObject *self, void *unused) {
    return (void)unused, PyLong_FromLong(((buffer *)self)->device);
}

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))buffer_dlpack, METH_VARARGS | METH_KEYWORDS,
     "A DLPack capsule of this buffer (0.8, or 1.0 with max_version); waits for kcache's stream when the "
     "consumer's stream differs."},
    {"__dlpack_device__", buffer_dlpack_device, METH_NOARGS, "(2, device): a CUDA device."},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef buffer_getset[] = {
    {"__cuda_array_interface__", buffer_cai, NULL, "version 3, with kcache's stream", NULL},
    {"shape", buffer_shape, NULL, "sizes", NULL},
    {"dtype", buffer_dtype, NULL, "the dtype's name", NULL},
    {"ptr", buffer_ptr, NULL, "the device pointer", NULL},
    {"device", buffer_device, NULL, "the CUDA device ordinal", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
static PyType_Slot buffer_slots[] = {
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_methods, buffer_methods},
    {Py_tp_getset, buffer_getset},
    {Py_tp_doc, "Device memory kcache allocated for a graph's output or gradient: DLPack and "
                "__cuda_array_interface__ v3; freed on the stream it was made on when the last user lets go."},
    {0, NULL},
};
static PyType_Spec buffer_spec = {"kcache._kcache.Buffer", sizeof(buffer), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, buffer_slots};

int kcpy_tensor_add(PyObject *module) {
    kcpy_buffer_type = (PyTypeObject *)PyType_FromSpec(&buffer_spec);
    if (!kcpy_buffer_type) return -1;
    Py_INCREF(kcpy_buffer_type);
    return PyModule_AddObject(module, "Buffer", (PyObject *)kcpy_buffer_type) ? (Py_DECREF(kcpy_buffer_type), -1) : 0;
}
