/*
 * manifest.c — manifests: the list of graph specs and targets a deployment prewarms
 * (format in include/kcache/prewarm.h), read with cJSON.
 *
 * The one idea: a manifest is read by a deployment engineer's tool on a build host, so
 * every error names the file and the place, and nothing in it is trusted — sizes, counts,
 * types and targets are all checked before a byte of it is used.
 *
 * Must not: read the specs it names (kc_prewarm does); accept a target kc_target_parse
 * refuses; hold on to cJSON's tree past parsing.
 *
 * Callers: the public kc_manifest_* API (the CLI's prewarm, export and demo; prewarm.c).
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/fs.h"
#include "../common/internal.h"
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

/* Line and column of `at` in text. */
static void place_of(const char *text, size_t len, const char *at, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *p = text; at && p < at && p < text + len; p++) {
        if (*p == '\n') ++*line, *col = 1;
        else ++*col;
    }
}

static int parse_tree(kc_manifest *m, const cJSON *root, const char *dir, const char *origin) {
    if (!cJSON_IsObject(root)) return kc_err(KC_EINVAL, "%s: must be a JSON object with \"graphs\"", origin);
    const cJSON *graphs = cJSON_GetObjectItemCaseSensitive(root, "graphs");
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "archs");
    if (!cJSON_IsArray(graphs) || cJSON_GetArraySize(graphs) == 0)
        return kc_err(KC_EINVAL, "%s: \"graphs\" must be a non-empty array of spec paths", origin);
    if (archs && !cJSON_IsArray(archs)) return kc_err(KC_EINVAL, "%s: \"archs\" must be an array of targets", origin);
    int ng = cJSON_GetArraySize(graphs);
    if (ng > KC_MANIFEST_MAX_GRAPHS)
        return kc_err(KC_EINVAL, "%s: more than %d graphs", origin, KC_MANIFEST_MAX_GRAPHS);
    if (!(m->specs = kc_calloc((size_t)ng, sizeof *m->specs)) ||
        !(m->archs = kc_calloc(KC_MANIFEST_MAX_ARCHS, sizeof *m->archs)))
        return kc_err(KC_ENOMEM, "manifest: out of memory");
    int i = 0;
    for (const cJSON *g = graphs->child; g; g = g->next, i++) {
        if (!cJSON_IsString(g) || !g->valuestring[0])
            return kc_err(KC_EINVAL, "%s: graphs[%d] must be a spec path", origin, i);
        const char *s = g->valuestring;
        size_t need = strlen(s) + (s[0] == '/' ? 0 : strlen(dir) + 1);
        if (need >= PATH_MAX) return kc_err(KC_EINVAL, "%s: graphs[%d]: path too long", origin, i);
        char *full = kc_malloc(need + 1);
        if (!full) return kc_err(KC_ENOMEM, "manifest: out of memory");
        if (s[0] == '/') snprintf(full, need + 1, "%s", s);
        else snprintf(full, need + 1, "%s/%s", dir, s);
        m->specs[m->nspecs++] = full;
    }
    i = 0;
    for (const cJSON *a = archs ? archs->child : NULL; a; a = a->next, i++) {
        char where[32];
        snprintf(where, sizeof where, "archs[%d]", i);
        int rc = add_arch(m, origin, where, cJSON_IsString(a) ? a->valuestring : NULL);
        if (rc) return rc;
    }
    return KC_OK;
}

int kc_manifest_parse(kc_manifest **out, const char *json, size_t len, const char *base_dir, const char *origin) {
    if (!out) return kc_err(KC_EINVAL, "kc_manifest_parse: out is NULL");
    *out = NULL;
    if (!json && len) return kc_err(KC_EINVAL, "kc_manifest_parse: NULL text");
    if (!origin) origin = "manifest";
    if (!base_dir || !*base_dir) base_dir = ".";
    if (len > KC_MANIFEST_MAX_BYTES) return kc_err(KC_EINVAL, "%s: over %u bytes", origin, KC_MANIFEST_MAX_BYTES);
    if (len && memchr(json, '\0', len)) return kc_err(KC_EINVAL, "%s: holds a NUL byte", origin);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json ? json : "", len, &end, 0);
    if (!root) {
        int line, col;
        place_of(json, len, end, &line, &col);
        return kc_err(KC_EINVAL, "%s:%d:%d: not valid JSON", origin, line, col);
    }
    kc_manifest *m = kc_calloc(1, sizeof *m);
    int rc = m ? parse_tree(m, root, base_dir, origin) : kc_err(KC_ENOMEM, "manifest: out of memory");
    if (!rc && !(m->origin = kc_strdup(origin))) rc = kc_err(KC_ENOMEM, "manifest: out of memory");
    cJSON_Delete(root);
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
