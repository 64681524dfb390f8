/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cache_ops.c — the Cache methods that read or move the cache whole: stats, config, export,
 * import_ (and the report dicts they share with cache_manifest.c).
 *
 * The one idea: each enters the cache, calls libkcache without the GIL, and turns its report
 * struct into a dict whose keys are the struct's field names (those `kcache ... --json` prints).
 *
 * Callers: cache.c's method table; cache_manifest.c (kcpy_bundle_dict).
 * Must not: decide anything libkcache decides; hold the GIL across a call that may block.
 */
#include "kcpy.h"

#include "kcache/bundle.h"

#include <string.h>

/* Set d[key] = v (stealing v); -1 when v is NULL or the set fails. */
int kcpy_dict_put(PyObject *d, const char *key, PyObject *v) {
    int rc = v ? PyDict_SetItemString(d, key, v) : -1;
    Py_XDECREF(v);
    return rc;
}

PyObject *kcpy_cache_stats(PyObject *self, PyObject *unused) {
    (void)unused;
    kc_cache *c = kcpy_cache_enter(self);
    if (!c) return NULL;
    kc_stats st;
    memset(&st, 0, sizeof st);
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_cache_stats(c, &st);
    Py_END_ALLOW_THREADS kcpy_cache_leave(self);
    if (rc != KC_OK) return kcpy_raise(rc);
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < KC_STAT_COUNT; i++) {
        const char *name = kc_stat_name((kc_stat)i);
        if (name && kcpy_dict_put(d, name, PyLong_FromUnsignedLongLong(st.v[i])) < 0) Py_CLEAR(d);
    }
    return d;
}

/* One setting as {"value", "origin", "where"}. */
static PyObject *config_row(const kc_config *cfg, int id) {
    char v[4096], where[1024];
    kc_config_origin o = KC_ORIGIN_DEFAULT;
    v[0] = where[0] = '\0';
    if (kc_config_get(cfg, id, v, sizeof v, &o, where, sizeof where) != KC_OK) return kcpy_raise(kc_error_last()->code);
    PyObject *d = PyDict_New();
    if (d && (kcpy_dict_put(d, "value", PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "replace")) < 0 ||
              kcpy_dict_put(d, "origin", PyUnicode_FromString(kc_config_origin_name(o))) < 0 ||
              kcpy_dict_put(d, "where", PyUnicode_DecodeUTF8(where, (Py_ssize_t)strlen(where), "replace")) < 0))
        Py_CLEAR(d);
    return d;
}

PyObject *kcpy_cache_config(PyObject *self, PyObject *unused) {
    (void)unused;
    kc_cache *c = kcpy_cache_enter(self);
    if (!c) return NULL;
    const kc_config *cfg = kc_cache_config(c);
    PyObject *d = PyDict_New();
    for (int id = 0; d && id < KC_CONFIG_COUNT; id++) {
        const kc_config_row *row = kc_config_row_of(id);
        if (row && kcpy_dict_put(d, row->name, config_row(cfg, id)) < 0) Py_CLEAR(d);
    }
    kcpy_cache_leave(self);
    return d;
}

PyObject *kcpy_bundle_dict(const kc_bundle_report *r, PyObject *path) {
    PyObject *d = PyDict_New();
    if (!d || PyDict_SetItemString(d, "path", path) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    const struct {
        const char *name;
        uint64_t v;
    } f[] = {
        {"entries", r->entries},
        {"bytes", r->bytes},
        {"written", r->written},
        {"unchanged", r->unchanged},
        {"graphs", r->graphs},
        {"images", r->images},
        {"units", r->units},
        {"graph_bytes", r->graph_bytes},
        {"image_bytes", r->image_bytes},
        {"unit_bytes", r->unit_bytes},
        {"graphs_written", r->graphs_written},
        {"images_written", r->images_written},
        {"units_written", r->units_written},
        {"graphs_skipped", r->graphs_skipped},
        {"units_skipped", r->units_skipped},
        {"profiles", r->profiles},
        {"profiles_written", r->profiles_written},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (kcpy_dict_put(d, f[i].name, PyLong_FromUnsignedLongLong(f[i].v)) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    if (kcpy_dict_put(d, "first_skipped", PyUnicode_FromString(r->first_skipped)) < 0) Py_CLEAR(d);
    return d;
}

/* graphs (keys as 32 hex) and archs (variants) as a kc_bundle_filter; its arrays in *keys, *vv. */
static int export_filter(PyObject *graphs, PyObject *archs, kc_bundle_filter *f, kc_key **keys, const char ***vv,
                         PyObject **held) {
    if (graphs && graphs != Py_None) {
        const char **hex = NULL;
        PyObject *t = NULL;
        int rc = kcpy_text_seq(graphs, "graphs", 1, &t, &hex);
        Py_ssize_t n = t ? PyTuple_GET_SIZE(t) : 0;
        *keys = rc == 0 ? PyMem_Calloc((size_t)n + 1, sizeof **keys) : NULL;
        for (Py_ssize_t i = 0; *keys && i < n; i++) {
            if (kc_key_from_hex(&(*keys)[i], hex[i]) != KC_OK) {
                PyErr_Format(PyExc_ValueError, "graphs[%zd]: %R is not a key (32 hex digits)", i,
                             PyTuple_GET_ITEM(t, i));
                rc = -1;
                break;
            }
        }
        PyMem_Free(hex);
        Py_XDECREF(t);
        if (rc < 0 || !*keys) return rc < 0 ? -1 : (PyErr_NoMemory(), -1);
        f->keys = *keys;
        f->nkeys = (size_t)n;
    }
    if (archs && archs != Py_None) {
        if (kcpy_text_seq(archs, "archs", 1, held, vv) < 0) return -1;
        f->variants = *vv;
        f->nvariants = (size_t)PyTuple_GET_SIZE(*held);
    }
    return 0;
}

PyObject *kcpy_cache_export(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"path", "graphs", "archs", "manifest", NULL};
    PyObject *path, *graphs = NULL, *archs = NULL, *manifest = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:export", kwlist, &path, &graphs, &archs, &manifest) ||
        kcpy_cache_check(self) < 0)
        return NULL;
    if (manifest && manifest != Py_None) {
        if (graphs && graphs != Py_None) {
            PyErr_SetString(PyExc_TypeError, "export: give graphs or manifest, not both");
            return NULL;
        }
        return kcpy_export_manifest(self, path, manifest, archs);
    }
    PyObject *keep = NULL, *held = NULL;
    const char *p = kcpy_path(path, "path", &keep);
    kc_bundle_filter f = KC_BUNDLE_FILTER_INIT;
    kc_key *keys = NULL;
    const char **vv = NULL;
    PyObject *r = NULL;
    kc_cache *c = NULL;
    if (p && export_filter(graphs, archs, &f, &keys, &vv, &held) == 0 && (c = kcpy_cache_enter(self))) {
        kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
        int rc;
        Py_BEGIN_ALLOW_THREADS rc = kc_bundle_export(c, p, &f, &rep);
        Py_END_ALLOW_THREADS kcpy_cache_leave(self);
        r = rc == KC_OK ? kcpy_bundle_dict(&rep, path) : kcpy_raise(rc);
    }
    PyMem_Free(keys);
    PyMem_Free(vv);
    Py_XDECREF(held);
    Py_XDECREF(keep);
    return r;
}

PyObject *kcpy_cache_import(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"path", "dry_run", NULL};
    PyObject *path;
    int dry = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:import_", kwlist, &path, &dry)) return NULL;
    PyObject *keep = NULL;
    const char *p = kcpy_path(path, "path", &keep);
    kc_cache *c = p ? kcpy_cache_enter(self) : NULL;
    if (!c) {
        Py_XDECREF(keep);
        return NULL;
    }
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = kc_bundle_import(c, p, dry, &rep);
    Py_END_ALLOW_THREADS kcpy_cache_leave(self);
    PyObject *r = rc == KC_OK ? kcpy_bundle_dict(&rep, path) : kcpy_raise(rc);
    if (r && kcpy_dict_put(r, "dry_run", PyBool_FromLong(dry)) < 0) Py_CLEAR(r);
    Py_XDECREF(keep);
    return r;
}
