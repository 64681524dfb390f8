/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec.c — graph specs: JSON files (format in the README) read with common/json.c (one arena
 * per spec, not an allocation per value: [Note: spec JSON]) into a kc_graph_desc.  Kernel
 * sources and headers are files beside the spec.  This file reads the spec's root, its kernels,
 * tensors, runtime arguments and wrappers; a pass's steps are spec_pass.c's, the field readers
 * and the errors spec_read.c's.
 *
 * The one idea: every error names the file and the place in it ("mlp.json: forward[1].args[2]:
 * …", or line and column for a JSON syntax error), because a deployment engineer reads them.
 *
 * Callers: the public kc_graph_desc_load (the CLI, the prewarm part, tests); it builds the
 * description only through desc.c's checked builders.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/fs.h"
#include "spec.h"

/* Read the headers `arr` lists into hdr[*nh…] (names borrowed from the JSON, sources owned). */
static int load_headers(sctx *s, const char *where, const kc_json *arr, kc_header_src *hdr, int *nh) {
    int h = -1;
    const kc_json *hn;
    KC_JSON_EACH(hn, arr) {
        h++;
        char hw[96];
        kc_cat_index(hw, sizeof hw, where, "headers", h, "");
        if (!kc_json_is(hn, KC_JSON_STRING)) return SPEC_ERR(s, hw, "must be a string");
        for (int k = 0; k < *nh; k++)
            if (strcmp(hdr[k].name, hn->str) == 0)
                return SPEC_ERR(s, hw, "'%s' is listed twice (the spec's \"headers\" are every kernel's)", hn->str);
        int rc = kc_spec_read_beside(s, hw, hn->str, (char **)&hdr[*nh].source);
        if (rc) return rc;
        hdr[(*nh)++].name = hn->str;
    }
    return KC_OK;
}

/* What every kernel of the spec shares: its headers, and whether it may use the toolkit's. */
typedef struct kshared {
    const kc_json *headers;
    int nheaders, toolkit;
} kshared;

/* A kernel's headers (the spec's, then its own) and options, then the kernel added with its source. */
static int add_kernel(sctx *s, const char *where, const kc_json *k, const kshared *sh, const char *source) {
    const kc_json *hs = kc_json_get(k, "headers");
    const kc_json *os = kc_json_get(k, "options");
    int nh = 0, no = 0, rc = KC_OK;
    if ((hs && !kc_json_is(hs, KC_JSON_ARRAY)) || (os && !kc_json_is(os, KC_JSON_ARRAY)))
        return SPEC_ERR(s, where, "\"headers\" and \"options\" must be arrays of strings");
    if ((hs && (rc = kc_spec_array_len(s, where, hs, SPEC_MAX_ITEMS, &nh))) ||
        (os && (rc = kc_spec_array_len(s, where, os, SPEC_MAX_ITEMS, &no))))
        return rc;
    kc_header_src *hdr = kc_calloc((size_t)(sh->nheaders + nh) + 1, sizeof *hdr);
    const char **opt = kc_calloc((size_t)no + 1, sizeof *opt);
    int nhdr = 0, toolkit = sh->toolkit;
    char kw[80];
    kc_cat_index(kw, sizeof kw, where, ".", -1, "");
    if (!hdr || !opt) rc = kc_err(KC_ENOMEM, "spec: out of memory");
    if (!rc && sh->headers) rc = load_headers(s, "", sh->headers, hdr, &nhdr);
    if (!rc && hs) rc = load_headers(s, kw, hs, hdr, &nhdr);
    if (!rc) rc = kc_spec_bool(s, where, k, "toolkit_headers", &toolkit);
    int o = -1;
    const kc_json *ov;
    KC_JSON_EACH(ov, os) {
        if (rc) break;
        o++;
        char ow[96];
        kc_cat_index(ow, sizeof ow, where, ".options", o, "");
        if (!kc_json_is(ov, KC_JSON_STRING)) rc = SPEC_ERR(s, ow, "must be a string");
        else opt[o] = ov->str;
    }
    if (!rc) {
        const char *file = kc_spec_str(k, "file"), *entry = kc_spec_str(k, "entry");
        kc_kernel_src src = {KC_KERNEL_SRC_VERSION,
                             file,
                             source,
                             entry,
                             hdr,
                             (size_t)nhdr,
                             opt,
                             (size_t)no,
                             kc_spec_str(k, "include_digest"),
                             toolkit ? KC_KERNEL_TOOLKIT_HEADERS : 0u};
        rc = kc_graph_add_kernel(s->d, &src, NULL);
        if (rc) kc_err_prefix(rc, "%s: %s", s->path, where);
    }
    for (int h = 0; hdr && h < sh->nheaders + nh; h++) free((char *)hdr[h].source);
    free(hdr);
    free(opt);
    return rc;
}

/* Kernel i of the spec: its fields, its id (into names[i]), its source file read beside the spec. */
static int load_kernel(sctx *s, int i, const kc_json *k, const kshared *sh, char **names) {
    char where[64];
    kc_cat_index(where, sizeof where, "kernels", "", i, "");
    const char *id = kc_spec_str(k, "id"), *file = kc_spec_str(k, "file"), *entry = kc_spec_str(k, "entry");
    if (!kc_json_is(k, KC_JSON_OBJECT) || !file || !entry)
        return SPEC_ERR(s, where, "needs \"file\" and \"entry\" strings");
    static const char *const kfields[] = {
        "id", "file", "entry", "headers", "options", "toolkit_headers", "include_digest", NULL};
    int rc = kc_spec_known_fields(s, where, k, kfields);
    if (rc) return rc;
    names[i] = (char *)(id ? id : entry);
    char *source = NULL;
    if ((rc = kc_spec_read_beside(s, where, file, &source))) return rc;
    rc = add_kernel(s, where, k, sh, source);
    free(source);
    return rc;
}

static int load_kernels(sctx *s, const kc_json *root, const kc_json *arr, char ***names) {
    kshared sh = {kc_json_get(root, "headers"), 0, 0};
    if (sh.headers && !kc_json_is(sh.headers, KC_JSON_ARRAY))
        return SPEC_ERR(s, "headers", "must be an array of strings");
    int n = 0;
    int rc = kc_spec_bool(s, "spec", root, "toolkit_headers", &sh.toolkit);
    if (!rc && sh.headers) rc = kc_spec_array_len(s, "headers", sh.headers, SPEC_MAX_ITEMS, &sh.nheaders);
    if (rc) return rc;
    /* A graph of zero steps only (zeroing gradients) has no kernel: "kernels": [] or no "kernels". */
    if (arr && !kc_json_is(arr, KC_JSON_ARRAY)) return SPEC_ERR(s, "kernels", "must be an array");
    if (!arr) return KC_OK;
    if ((rc = kc_spec_array_len(s, "kernels", arr, KC_GRAPH_MAX_KERNELS, &n))) return rc;
    *names = kc_calloc((size_t)n + 1, sizeof **names);
    if (!*names) return kc_err(KC_ENOMEM, "spec: out of memory");
    int i = -1;
    const kc_json *k;
    KC_JSON_EACH(k, arr) {
        if ((rc = load_kernel(s, ++i, k, &sh, *names))) return rc;
    }
    return KC_OK;
}

/* What a tensor says of being written: an input's "inplace" and "grad": "accumulate", an output's "alias". */
static int load_writes(sctx *s, const kc_json *t, const char *where, kc_tensor_role role, size_t i) {
    char w[96];
    w[0] = '\0';
    int inplace = 0, rc;
    const kc_json *grad = kc_json_get(t, "grad"), *alias = kc_json_get(t, "alias");
    if (kc_json_get(t, "inplace")) kc_cat_index(w, sizeof w, where, ".inplace", -1, ""); /* named only when there */
    if ((rc = kc_spec_bool(s, w, t, "inplace", &inplace))) return rc;
    if (role != KC_ROLE_INPUT && (kc_json_get(t, "inplace") || grad))
        return SPEC_ERR(s, where,
                        "\"inplace\" and \"grad\" are an input's (an output that is an input says \"alias\")");
    if (role != KC_ROLE_OUTPUT && alias) return SPEC_ERR(s, where, "only an output may be an \"alias\" of an input");
    if (inplace && (rc = kc_graph_set_inplace(s->d, i))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    if (grad) {
        kc_cat_index(w, sizeof w, where, ".grad", -1, "");
        if (!kc_json_is(grad, KC_JSON_STRING) || strcmp(grad->str, "accumulate") != 0)
            return SPEC_ERR(s, w,
                            "must be \"accumulate\" (the caller's gradient buffer, added into) or absent (allocated)");
        if ((rc = kc_graph_set_grad_accumulate(s->d, i))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    }
    if (alias) {
        kc_tensor_role r;
        size_t j;
        kc_cat_index(w, sizeof w, where, ".alias", -1, "");
        if ((rc = kc_spec_ref(s, w, kc_json_is(alias, KC_JSON_STRING) ? alias->str : NULL, &r, &j))) return rc;
        if (r != KC_ROLE_INPUT) return SPEC_ERR(s, w, "an output may be an alias of an input only (\"input:J\")");
        if ((rc = kc_graph_set_alias(s->d, i, j))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    }
    return KC_OK;
}

static int load_tensors(sctx *s, const kc_json *root, const char *field, kc_tensor_role role) {
    const kc_json *arr = kc_json_get(root, field);
    if (!arr) return role == KC_ROLE_INPUT ? SPEC_ERR(s, field, "is required") : KC_OK;
    if (!kc_json_is(arr, KC_JSON_ARRAY)) return SPEC_ERR(s, field, "must be an array");
    int n, i = -1, rc0 = kc_spec_array_len(s, field, arr, SPEC_MAX_ITEMS, &n);
    if (rc0) return rc0;
    const kc_json *t;
    KC_JSON_EACH(t, arr) {
        i++;
        char where[64];
        kc_cat_index(where, sizeof where, field, "", i, "");
        /* inplace, grad and alias are known to every role: load_writes says which role each belongs to. */
        static const char *const in_fields[] = {"dtype", "sizes", "requires_grad", "inplace", "grad", "alias", NULL};
        static const char *const other_fields[] = {"dtype", "sizes", "inplace", "grad", "alias", NULL};
        int frc = kc_spec_known_fields(s, where, t, role == KC_ROLE_INPUT ? in_fields : other_fields);
        if (frc) return frc;
        kc_dtype dt = kc_dtype_parse(kc_spec_str(t, "dtype"));
        if (!dt) return SPEC_ERR(s, where, "\"dtype\" must be one of f32 f16 bf16 f64 i32 i64 i8 u8 bool");
        const char *dims[KC_MAX_RANK];
        char bufs[KC_MAX_RANK][64];
        int rank = 0, rc;
        if ((rc = kc_spec_dims(s, where, kc_json_get(t, "sizes"), dims, bufs, &rank))) return rc;
        if (role == KC_ROLE_INPUT) {
            const kc_json *rg = kc_json_get(t, "requires_grad");
            rc = kc_graph_add_input(s->d, dt, rank, dims, NULL, kc_json_is(rg, KC_JSON_TRUE));
        } else {
            rc = kc_graph_add_tensor(s->d, role, dt, rank, dims);
        }
        if (rc) return kc_err_prefix(rc, "%s: %s", s->path, where);
        if ((rc = load_writes(s, t, where, role, (size_t)i))) return rc;
    }
    return KC_OK;
}

/* "args": [{"name": "lr", "type": "f32"}, …] — the runtime arguments, in the order calls give their values. */
static int load_args(sctx *s, const kc_json *root) {
    const kc_json *arr = kc_json_get(root, "args");
    if (!arr) return KC_OK;
    if (!kc_json_is(arr, KC_JSON_ARRAY)) return SPEC_ERR(s, "args", "must be an array of {\"name\": …, \"type\": …}");
    int n, i = -1, rc = kc_spec_array_len(s, "args", arr, KC_GRAPH_MAX_ARGS, &n);
    if (rc) return rc;
    const kc_json *a;
    KC_JSON_EACH(a, arr) {
        i++;
        char where[64];
        const char *name = kc_spec_str(a, "name"), *type = kc_spec_str(a, "type");
        kc_cat_index(where, sizeof where, "args", "", i, "");
        if (!kc_json_is(a, KC_JSON_OBJECT) || !name)
            return SPEC_ERR(s, where, "needs a \"name\" string (and a \"type\")");
        static const char *const a_fields[] = {"name", "type", NULL};
        if ((rc = kc_spec_known_fields(s, where, a, a_fields))) return rc;
        kc_arg_type t = kc_arg_type_parse(type);
        if (!t) {
            snprintf(where, sizeof where, "args[%d].type", i);
            return SPEC_ERR(s, where, "runtime argument '%.64s': unknown type '%.32s' (one of f32 f64 i32 u32 i64 u64)",
                            name, type ? type : "(not a string)");
        }
        if ((rc = kc_graph_add_arg(s->d, name, t))) return kc_err_prefix(rc, "%s: %s", s->path, where);
    }
    return KC_OK;
}

/* "wrappers": [{"name": …, "version": N, "params": "…"}, …]. */
static int load_wrappers(sctx *s, const kc_json *root) {
    const kc_json *ws = kc_json_get(root, "wrappers");
    int nw = 0, i = -1, rc = KC_OK;
    if (kc_json_is(ws, KC_JSON_ARRAY)) rc = kc_spec_array_len(s, "wrappers", ws, SPEC_MAX_WRAPPERS, &nw);
    const kc_json *w, *wl = kc_json_is(ws, KC_JSON_ARRAY) && !rc ? ws : NULL;
    KC_JSON_EACH(w, wl) {
        if (rc) break;
        i++;
        const kc_json *v = kc_json_get(w, "version");
        char where[48];
        snprintf(where, sizeof where, "wrappers[%d]", i);
        static const char *const w_fields[] = {"name", "version", "params", NULL};
        if (!kc_spec_str(w, "name") || !kc_json_is(v, KC_JSON_NUMBER))
            rc = SPEC_ERR(s, where, "needs \"name\" and \"version\"");
        else if ((rc = kc_spec_known_fields(s, where, w, w_fields))) break;
        else if (!(v->num >= 0 && v->num <= 4294967295.0 && v->num == (double)(uint32_t)v->num))
            rc = SPEC_ERR(s, where, "\"version\" must be a whole number from 0 to 4294967295");
        else {
            const char *params = kc_spec_str(w, "params");
            rc = kc_graph_add_wrapper(s->d, kc_spec_str(w, "name"), (uint32_t)v->num, params,
                                      params ? strlen(params) : 0);
        }
    }
    return rc;
}

/* The description of the spec's root object, once its name made it: kernels, tensors, arguments, passes,
 * wrappers, back end (*kernel_ids owned by the caller). */
static int load_root(sctx *s, const kc_json *root, char ***kernel_ids) {
    const kc_json *kernels = kc_json_get(root, "kernels");
    int nk = kc_json_is(kernels, KC_JSON_ARRAY) ? (int)kc_json_count(kernels) : 0;
    int rc;
    if (!(rc = load_kernels(s, root, kernels, kernel_ids)) && !(rc = load_tensors(s, root, "inputs", KC_ROLE_INPUT)) &&
        !(rc = load_tensors(s, root, "outputs", KC_ROLE_OUTPUT)) &&
        !(rc = load_tensors(s, root, "saved", KC_ROLE_SAVED)) && !(rc = load_args(s, root)) &&
        !(rc = kc_spec_load_pass(s, root, "forward", KC_PASS_FORWARD, *kernel_ids, nk)))
        rc = kc_spec_load_pass(s, root, "backward", KC_PASS_BACKWARD, *kernel_ids, nk);
    if (!rc) rc = load_wrappers(s, root);
    const char *backend = kc_spec_str(root, "backend");
    if (!rc && backend) rc = kc_graph_set_backend(s->d, backend);
    return rc;
}

/* Parse the spec's text (freed here) into *doc; a syntax error says its line and column. */
static int parse_spec(const char *spec_path, char *text, size_t len, kc_json_doc *doc, void *scratch, size_t cap) {
    kc_json_err e;
    int rc = kc_json_parse_in(doc, text, len, &e, scratch, cap);
    if (rc == KC_ENOMEM) rc = kc_err_prefix(rc, "%s", spec_path);
    else if (rc) rc = kc_json_fail_parse(spec_path, text, len, &e);
    free(text);
    return rc;
}

/* The folder of `path` into out ("." when it names none). */
static void folder_of(const char *path, char out[PATH_MAX]) {
    const char *slash = strrchr(path, '/');
    snprintf(out, PATH_MAX, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
}

int kc_spec_load_whole_(kc_graph_desc **out, const char *spec_path, const char *read_path, kc_spec_direct *sd) {
    *out = NULL;
    void *text;
    size_t len;
    if (!read_path) read_path = spec_path;
    int rc = kc_spec_read_file(sd, NULL, read_path, &text, &len);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "%s: no such file", spec_path);
    if (rc) return rc;
    ((char *)text)[len] = '\0';
    sctx s = {spec_path, "", "", NULL, {{0}}, 0, sd};
    folder_of(spec_path, s.dir);
    folder_of(read_path, s.rdir);
    kc_json_doc doc;
    _Alignas(max_align_t) char scratch[4096]; /* a spec of a few hundred bytes is read here ([Note: spec JSON]) */
    if ((rc = parse_spec(spec_path, text, len, &doc, scratch, sizeof scratch))) return rc;
    const kc_json *root = doc.root;
    char **kernel_ids = NULL;
    const char *name = kc_spec_str(root, "name");
    if (!kc_json_is(root, KC_JSON_OBJECT) || !name) {
        rc = SPEC_ERR(&s, "name", "a graph spec is an object with a \"name\" string");
    } else if (!(rc = kc_graph_desc_new(&s.d, name)) && !(s.d->spec_path = kc_strdup(spec_path))) {
        rc = kc_err(KC_ENOMEM, "spec: out of memory");
    } else if (!rc) {
        static const char *const root_fields[] = {"name",     "kernels", "headers", "toolkit_headers", "inputs",
                                                  "outputs",  "saved",   "args",    "forward",         "backward",
                                                  "wrappers", "backend", NULL};
        rc = kc_spec_known_fields(&s, "spec", root, root_fields);
    }
    if (!rc && s.d) rc = load_root(&s, root, &kernel_ids);
    free(kernel_ids);
    kc_spec_files_free(&s);
    kc_json_free(&doc);
    if (rc) {
        kc_graph_desc_free(s.d);
        return rc;
    }
    *out = s.d;
    return KC_OK;
}

/* [Note: spec direct mode] in spec_direct.c: a memo that vouches for every file gives a description
 * not read yet; else the spec is read whole, and what was read is kept for the memo. */
int kc_graph_desc_load(kc_graph_desc **out, const char *spec_path) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !spec_path) return kc_err(KC_EINVAL, "kc_graph_desc_load: NULL argument");
    kc_spec_direct *sd = kc_spec_direct_begin_(spec_path);
    if (sd && kc_spec_direct_vouch_(sd, spec_path, out)) return KC_OK;
    int rc = kc_spec_load_whole_(out, spec_path, NULL, sd);
    if (rc == KC_OK) (*out)->direct = sd; /* after its builders: a change from now on is the caller's */
    else kc_spec_direct_free_(sd);
    return rc;
}
