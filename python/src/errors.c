/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c — kcache's failures as Python exceptions: kcache.Error and one subclass per status.
 *
 * The one idea: a failing libkcache call's status picks the class (KC_ECOMPILE: CompileError, …;
 * a status without a class of its own: Error itself), and kc_error_last()'s message, read on the
 * failing call's thread, travels whole in .message (and str(exc)).  Every exception carries
 * .status (the kc_status value), .status_name ("KC_EINVAL") and .message; CompileError also .log.
 * InvalidArgumentError and ClosedError are ValueErrors too, as Python code expects of a bad
 * argument or a closed file.
 *
 * Callers: module.c (kcpy_errors_add at import), every part that calls libkcache (kcpy_raise).
 * Must not: reword or shorten kcache's message; be called for a status that is not a failure.
 */
#include "kcpy.h"

#include <stdlib.h>
#include <string.h>

/* One class per row; `status` 1 marks ClosedError (no kc_status of its own: KC_EINVAL). */
typedef struct kcpy_error_class {
    const char *name;
    int status;
    int status2; /* a second status of the same class, or 0 */
    int value_error;
    const char *doc;
    PyObject *type;
} kcpy_error_class;

static PyObject *kcpy_error_base; /* kcache.Error */

static kcpy_error_class kcpy_classes[] = {
    {"MissError", KC_MISS, 0, 0, "The cache has no such entry (KC_MISS).", NULL},
    {"NotCachedError", KC_ENOTCACHED, 0, 0, "A lookup missed and compiling is forbidden (require_hit).", NULL},
    {"CompileError", KC_ECOMPILE, 0, 0, "NVRTC rejected a source; .log holds its log.", NULL},
    {"NoNvrtcError", KC_ENONVRTC, 0, 0, "NVRTC could not be loaded.", NULL},
    {"NoDriverError", KC_ENODRIVER, 0, 0, "No CUDA driver on this host.", NULL},
    {"CorruptError", KC_ECORRUPT, 0, 0, "Data failed validation.", NULL},
    {"UntrustedError", KC_EUNTRUSTED, 0, 0, "Bytes from outside lack the MAC or a trusted signature.", NULL},
    {"ReadOnlyError", KC_EREADONLY, 0, 0, "The cache is read-only or disabled.", NULL},
    {"DriverError", KC_EDRIVER, KC_EREFUSED, 0, "The CUDA driver returned an error or refused an image.", NULL},
    {"InvalidArgumentError", KC_EINVAL, 0, 1, "An argument is invalid (KC_EINVAL); also a ValueError.", NULL},
    {"ClosedError", 1, 0, 1, "The cache is closed; also a ValueError.", NULL},
};
#define KCPY_NCLASSES (sizeof kcpy_classes / sizeof kcpy_classes[0])

/* The class of `status` (ClosedError for 1), or kcache.Error. */
static PyObject *class_of(int status) {
    for (size_t i = 0; i < KCPY_NCLASSES; i++) {
        if (kcpy_classes[i].status == status || (kcpy_classes[i].status2 != 0 && kcpy_classes[i].status2 == status))
            return kcpy_classes[i].type;
    }
    return kcpy_error_base;
}

/* Set the class attributes a bare instance reads (status, status_name, message, log). */
static int set_defaults(PyObject *type, int status) {
    PyObject *st = PyLong_FromLong(status);
    int rc = st ? PyObject_SetAttrString(type, "status", st) : -1;
    Py_XDECREF(st);
    PyObject *name = rc == 0 ? PyUnicode_FromString(kc_status_str(status)) : NULL;
    if (rc == 0) rc = name ? PyObject_SetAttrString(type, "status_name", name) : -1;
    Py_XDECREF(name);
    if (rc == 0) {
        PyObject *empty = PyUnicode_FromString("");
        rc = empty ? PyObject_SetAttrString(type, "message", empty) : -1;
        if (rc == 0) rc = PyObject_SetAttrString(type, "log", empty);
        Py_XDECREF(empty);
    }
    return rc;
}

int kcpy_errors_add(PyObject *module) {
    kcpy_error_base = PyErr_NewExceptionWithDoc("kcache.Error",
                                                "Every kcache failure: .status (a kc_status value), .status_name "
                                                "and .message (kcache's whole message).",
                                                NULL, NULL);
    if (!kcpy_error_base || set_defaults(kcpy_error_base, KC_ERROR) < 0 ||
        PyModule_AddObjectRef(module, "Error", kcpy_error_base) < 0)
        return -1;
    for (size_t i = 0; i < KCPY_NCLASSES; i++) {
        kcpy_error_class *k = &kcpy_classes[i];
        char qual[64];
        snprintf(qual, sizeof qual, "kcache.%s", k->name);
        PyObject *bases = k->value_error ? PyTuple_Pack(2, kcpy_error_base, PyExc_ValueError)
                                         : PyTuple_Pack(1, kcpy_error_base);
        if (!bases) return -1;
        k->type = PyErr_NewExceptionWithDoc(qual, k->doc, bases, NULL);
        Py_DECREF(bases);
        if (!k->type || set_defaults(k->type, k->status == 1 ? KC_EINVAL : k->status) < 0 ||
            PyModule_AddObjectRef(module, k->name, k->type) < 0)
            return -1;
    }
    return 0;
}

/* Raise the class of `cls_status` carrying `status` and `msg` (and `log`, for a CompileError). */
static PyObject *raise_as(int cls_status, int status, const char *msg) {
    PyObject *type = class_of(cls_status);
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    PyObject *exc = text ? PyObject_CallOneArg(type, text) : NULL;
    PyObject *st = PyLong_FromLong(status);
    PyObject *name = PyUnicode_FromString(kc_status_str(status));
    if (exc && st && name && PyObject_SetAttrString(exc, "status", st) == 0 &&
        PyObject_SetAttrString(exc, "status_name", name) == 0 && PyObject_SetAttrString(exc, "message", text) == 0 &&
        (status != KC_ECOMPILE || PyObject_SetAttrString(exc, "log", text) == 0))
        PyErr_SetObject(type, exc);
    Py_XDECREF(exc);
    Py_XDECREF(st);
    Py_XDECREF(name);
    Py_XDECREF(text);
    return NULL;
}

PyObject *kcpy_raise_msg(int status, const char *msg) {
    return raise_as(status, status, msg ? msg : kc_status_str(status));
}

PyObject *kcpy_raise(int status) {
    /* Copied with malloc before any Python allocation, which may run a finalizer that calls kcache. */
    const kc_error *e = kc_error_last();
    char *copy = strdup(e->message[0] != '\0' ? e->message : kc_status_str(status));
    if (!copy) return PyErr_NoMemory();
    raise_as(status, status, copy);
    free(copy);
    return NULL;
}

PyObject *kcpy_raise_closed(void) {
    return raise_as(1, KC_EINVAL, "the cache is closed (kcache.Cache.close was called): open a new Cache");
}
