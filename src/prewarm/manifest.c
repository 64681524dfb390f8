/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifest.c — manifests: the list of graph specs and targets a deployment prewarms
 * (format in include/kcache/prewarm.h and docs/formats.md), read with the strict JSON reader
 * every JSON input goes through (src/common/json.c).
 *
 * The one idea: a manifest is read by a deployment engineer's tool on a build host, so
 * every error names the file and the place ("m.json:3:5: …"), and nothing in it is trusted —
 * sizes, counts, types, field names and targets are all checked before a byte of it is used.
 * A field given twice (at any depth: the reader refuses it) or one this version does not know
 * is an error, never dropped in silence: a misspelt "arches" would prewarm nothing for the fleet.
 *
 * Must not: read the specs it names (kc_prewarm does); accept a target kc_target_parse
 * refuses; hold on to the JSON tree past parsing.
 *
 * Callers: the public kc_manifest_* API (the CLI's prewarm, export and demo; prewarm.c).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "../common/json.h"
#include "../compile/targets.h"
#include "kcache/compile.h"
#include "kcache/prewarm.h"

struct kc_manifest {
    char **specs;
    size_t nspecs;
    char **archs;
    size_t narchs;
    char *origin; /* the file it was read from ("manifest" when parsed from memory): recorded as provenance */
};

const char *kc_manifest_origin_(const kc_manifest *m) { return m && m->origin ? m->origin : ""; }

void kc_manifest_free(kc_manifest *m) {
    if (!m) return;
    for (size_t i = 0; i < m->nspecs; i++) free(m->specs[i]);
    for (size_t i = 0; i < m->narchs; i++) free(m->archs[i]);
    free(m->specs);
    free(m->archs);
    free(m->origin);
    free(m);
}

size_t kc_manifest_graph_count(const kc_manifest *m) { return m ? m->nspecs : 0; }
const char *kc_manifest_graph(const kc_manifest *m, size_t i) { return m && i < m->nspecs ? m->specs[i] : NULL; }
size_t kc_manifest_arch_count(const kc_manifest *m) { return m ? m->narchs : 0; }
const char *kc_manifest_arch(const kc_manifest *m, size_t i) { return m && i < m->narchs ? m->archs[i] : NULL; }

/* Add a target unless present; KC_EINVAL (with `where`) if it is not one. */
static int add_arch(kc_manifest *m, const char *origin, const char *where, const char *t) {
    int rc = kc_target_manifest_check_(origin, where, t); /* [Note: target check] */
    if (rc) return rc;
    for (size_t i = 0; i < m->narchs; i++)
        if (strcmp(m->archs[i], t) == 0) return KC_OK;
    if (m->narchs >= KC_MANIFEST_MAX_ARCHS)
        return kc_err(KC_EINVAL, "%s: more than %d targets", origin, KC_MANIFEST_MAX_ARCHS);
    if (!(m->archs[m->narchs] = kc_strdup(t))) return kc_err(KC_ENOMEM, "manifest: out of memory");
    m->narchs++;
    return KC_OK;
}

int kc_manifest_set_archs(kc_manifest *m, const char *list) {
    if (!m || !list) return kc_err(KC_EINVAL, "kc_manifest_set_archs: NULL argument");
    char **archs = kc_calloc(KC_MANIFEST_MAX_ARCHS, sizeof *archs);
    if (!archs) return kc_err(KC_ENOMEM, "manifest: out of memory");
    kc_manifest fresh = {NULL, 0, archs, 0, NULL};
    int rc = KC_OK;
    for (const char *p = list; rc == KC_OK;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char t[32];
        if (n == 0 || n >= sizeof t) {
            rc = kc_err(KC_EINVAL, "--arch: '%.*s' is not a target (sm_XY, sm_XYa, compute_XY)", (int)(n < 40 ? n : 40),
                        p);
            break;
        }
        memcpy(t, p, n);
        t[n] = '\0';
        rc = add_arch(&fresh, "--arch", t, t);
        if (!comma) break;
        p = comma + 1;
    }
    if (rc == KC_OK && fresh.narchs == 0) rc = kc_err(KC_EINVAL, "--arch: no target given");
    if (rc != KC_OK) {
        for (size_t i = 0; i < fresh.narchs; i++) free(fresh.archs[i]);
        free(archs);
        return rc;
    }
    for (size_t i = 0; i < m->narchs; i++) free(m->archs[i]);
    free(m->archs);
    m->archs = fresh.archs;
    m->narchs = fresh.narchs;
    return KC_OK;
}

/* The manifest's fields: anything else is an error that lists them. */
static const char *const manifest_fields[] = {"graphs", "archs", NULL};

/* The text being read, for errors at a place of it. */
typedef struct mtext {
    const char *origin, *text;
    size_t len;
} mtext;

#define MFAIL(t, at, ...) kc_json_fail((t)->origin, (t)->text, (t)->len, (at), __VA_ARGS__)

/* What value `v` is, for "must be X, not Y". */
static const char *what_is(const kc_json *v) {
    switch (v->type) {
    case KC_JSON_NULL: return "null";
    case KC_JSON_FALSE:
    case KC_JSON_TRUE: return "a boolean";
    case KC_JSON_NUMBER: return "a number";
    case KC_JSON_STRING: return v->str[0] ? "a string" : "an empty string";
    case KC_JSON_ARRAY: return v->count ? "an array" : "an empty array";
    default: return "an object";
    }
}

/* Every member of the root is a known field (the reader has refused one named twice). */
static int known_fields(const mtext *t, const kc_json *root) {
    const kc_json *f;
    KC_JSON_EACH(f, root) {
        size_t k = 0;
        while (manifest_fields[k] && strcmp(manifest_fields[k], f->key) != 0) k++;
        if (manifest_fields[k]) continue;
        char name[400], list[64] = "";
        for (size_t j = 0; manifest_fields[j]; j++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", manifest_fields[j]);
        return MFAIL(t, f->key_at, "unknown field \"%s\" (known here: %s)", kc_json_printable(f->key, name), list);
    }
    return KC_OK;
}

/* The spec paths, resolved against `dir`. */
static int read_graphs(kc_manifest *m, const mtext *t, const kc_json *graphs, const char *dir) {
    if (kc_json_count(graphs) > KC_MANIFEST_MAX_GRAPHS)
        return MFAIL(t, graphs->at, "more than %d graphs (split the manifest)", KC_MANIFEST_MAX_GRAPHS);
    if (!(m->specs = kc_calloc(kc_json_count(graphs), sizeof *m->specs)))
        return kc_err(KC_ENOMEM, "manifest: out of memory");
    int i = 0;
    const kc_json *g;
    KC_JSON_EACH(g, graphs) {
        const char *s = kc_json_str(g);
        if (!s || !s[0])
            return MFAIL(t, g->at, "graphs[%d] must be a spec path (a non-empty string), not %s", i, what_is(g));
        size_t need = strlen(s) + (s[0] == '/' ? 0 : strlen(dir) + 1);
        if (need >= PATH_MAX) return MFAIL(t, g->at, "graphs[%d]: path too long (over %d bytes)", i, PATH_MAX - 1);
        char *full = kc_malloc(need + 1);
        if (!full) return kc_err(KC_ENOMEM, "manifest: out of memory");
        if (s[0] == '/') snprintf(full, need + 1, "%s", s);
        else snprintf(full, need + 1, "%s/%s", dir, s);
        m->specs[m->nspecs++] = full;
        i++;
    }
    return KC_OK;
}

/* The targets, each parsed and kept once. */
static int read_archs(kc_manifest *m, const mtext *t, const kc_json *archs) {
    if (!(m->archs = kc_calloc(KC_MANIFEST_MAX_ARCHS, sizeof *m->archs)))
        return kc_err(KC_ENOMEM, "manifest: out of memory");
    int i = 0;
    const kc_json *a;
    KC_JSON_EACH(a, archs) {
        char where[32], place[PATH_MAX + 64];
        int line, col;
        kc_json_place(t->text, t->len, a->at, &line, &col);
        snprintf(where, sizeof where, "archs[%d]", i++);
        snprintf(place, sizeof place, "%s:%d:%d", t->origin, line, col);
        int rc = add_arch(m, place, where, kc_json_str(a));
        if (rc) return rc;
    }
    return KC_OK;
}

static int parse_tree(kc_manifest *m, const mtext *t, const kc_json *root, const char *dir) {
    if (!kc_json_is(root, KC_JSON_OBJECT))
        return MFAIL(t, root->at, "must be a JSON object with \"graphs\", not %s (e.g. {\"graphs\": [\"spec.json\"]})",
                     what_is(root));
    int rc = known_fields(t, root);
    if (rc) return rc;
    const kc_json *graphs = kc_json_get(root, "graphs"), *archs = kc_json_get(root, "archs");
    if (!graphs) return MFAIL(t, root->at, "\"graphs\" must be a non-empty array of spec paths (it is missing)");
    if (!kc_json_is(graphs, KC_JSON_ARRAY) || kc_json_count(graphs) == 0)
        return MFAIL(t, graphs->at, "\"graphs\" must be a non-empty array of spec paths, not %s", what_is(graphs));
    if (archs && !kc_json_is(archs, KC_JSON_ARRAY))
        return MFAIL(t, archs->at, "\"archs\" must be an array of targets (e.g. [\"sm_90\"]), not %s", what_is(archs));
    if ((rc = read_graphs(m, t, graphs, dir)) || (rc = read_archs(m, t, archs))) return rc;
    /* Every target is read and parsed here: the place to check them against the toolchain, before any work. */
    return KC_OK;
}

int kc_manifest_parse(kc_manifest **out, const char *json, size_t len, const char *base_dir, const char *origin) {
    if (!out) return kc_err(KC_EINVAL, "kc_manifest_parse: out is NULL");
    *out = NULL;
    if (!json && len) return kc_err(KC_EINVAL, "kc_manifest_parse: NULL text");
    if (!origin) origin = "manifest";
    if (!base_dir || !*base_dir) base_dir = ".";
    if (len > KC_MANIFEST_MAX_BYTES)
        return kc_err(KC_EINVAL, "%s: over %u bytes (a manifest lists paths and targets: split it)", origin,
                      KC_MANIFEST_MAX_BYTES);
    mtext t = {origin, json ? json : "", len};
    const char *nul = len ? memchr(json, '\0', len) : NULL;
    if (nul) return MFAIL(&t, (size_t)(nul - json), "holds a NUL byte (a manifest is UTF-8 JSON text)");
    kc_json_doc doc;
    kc_json_err e;
    int rc = kc_json_read(&doc, t.text, len, &e);
    if (rc) return rc == KC_EINVAL ? kc_json_fail_parse(origin, t.text, len, &e) : kc_err_prefix(rc, "%s", origin);
    kc_manifest *m = kc_calloc(1, sizeof *m);
    rc = m ? parse_tree(m, &t, doc.root, base_dir) : kc_err(KC_ENOMEM, "manifest: out of memory");
    if (!rc && !(m->origin = kc_strdup(origin))) rc = kc_err(KC_ENOMEM, "manifest: out of memory");
    kc_json_free(&doc);
    if (rc) {
        kc_manifest_free(m);
        return rc;
    }
    *out = m;
    return KC_OK;
}

int kc_manifest_load(kc_manifest **out, const char *path) {
    if (!out) return kc_err(KC_EINVAL, "kc_manifest_load: out is NULL");
    *out = NULL;
    if (!path || !*path) return kc_err(KC_EINVAL, "kc_manifest_load: no path");
    void *text;
    size_t len;
    int rc = kc_fs_read_input(path, KC_MANIFEST_MAX_BYTES, &text, &len, NULL);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "cannot read manifest '%s': no such file", path);
    if (rc == KC_ECORRUPT) return kc_err(KC_EINVAL, "manifest %s", kc_error_last()->message);
    if (rc) return kc_err_prefix(rc, "manifest");
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
    rc = kc_manifest_parse(out, text, len, dir, path);
    free(text);
    return rc;
}
