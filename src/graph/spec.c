/*
 * spec.c — graph specs: JSON files (format in the README) read with common/json.c (one arena
 * per spec, not an allocation per value: [Note: spec JSON]) into a kc_graph_desc.  Kernel
 * sources and headers are files beside the spec.
 *
 * The one idea: every error names the file and the place in it ("mlp.json: forward[1].args[2]:
 * …", or line and column for a JSON syntax error), because a deployment engineer reads them.
 *
 * Callers: the public kc_graph_desc_load (the CLI, the prewarm part, tests); it builds the
 * description only through desc.c's checked builders.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/fs.h"
#include "../common/json.h"
#include "../common/internal.h"
#include "graph_internal.h"
#include "program.h"

#define SPEC_MAX_BYTES (16u << 20)
/* Caps on the spec's arrays, checked before an array is walked (each walk is linear, with
 * KC_JSON_EACH: kc_json_at(i) walks from the start, which made loading
 * quadratic).  desc.c enforces the exact limits of the launch program as pieces are added;
 * these only keep a hostile spec from costing more than a linear pass. */
#define SPEC_MAX_ITEMS 4096 /* kernels' headers and options, tensors, scratch, steps */
#define SPEC_MAX_ARGS 256   /* a step's arguments: the launch program's limit (program.c) */
#define SPEC_MAX_WRAPPERS 64

#define SPEC_FILES_KEPT 64

/* A file the spec names, read once per load: every kernel that names it gets the same bytes. */
typedef struct spec_file {
    char *name, *data;
    size_t len;
} spec_file;

typedef struct sctx {
    const char *path;
    char dir[PATH_MAX];
    kc_graph_desc *d;
    spec_file files[SPEC_FILES_KEPT];
    int nfiles;
} sctx;

static void files_free(sctx *s) {
    for (int i = 0; i < s->nfiles; i++) free(s->files[i].name), free(s->files[i].data);
    s->nfiles = 0;
}

#define SPEC_ERR(s, where, ...) spec_err((s), (where), __VA_ARGS__)

static int spec_err(sctx *s, const char *where, const char *fmt, ...) KC_PRINTF(3, 4);
static int spec_err(sctx *s, const char *where, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kc_err(KC_EINVAL, "%s: %s: %s", s->path, where, msg);
}

/* A copy of `f`'s bytes (NUL-terminated) into *out. */
static int copy_file(const spec_file *f, char **out) {
    char *c = kc_malloc(f->len + 1);
    if (!c) return kc_err(KC_ENOMEM, "spec: out of memory");
    memcpy(c, f->data, f->len + 1);
    *out = c;
    return KC_OK;
}

/*
 * Read a file named in the spec, relative to the spec's folder (no escaping it).  A name read
 * before in this load is not read again (a spec's kernels share their sources and headers: one
 * read per file, not per kernel), which also makes every kernel see the same bytes of it.
 */
static int read_beside(sctx *s, const char *where, const char *name, char **out) {
    if (!name || !*name || name[0] == '/' || strstr(name, ".."))
        return SPEC_ERR(s, where, "'%s' must be a relative path inside the spec's folder", name ? name : "");
    for (int i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].name, name) == 0) return copy_file(&s->files[i], out);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    void *data;
    size_t len;
    int rc = kc_fs_read_input(path, SPEC_MAX_BYTES, &data, &len, NULL);
    if (rc == KC_MISS) return SPEC_ERR(s, where, "cannot read '%s': no such file", path);
    if (rc) return kc_err_prefix(rc, "%s: %s", s->path, where);
    ((char *)data)[len] = '\0'; /* kc_fs_read_input leaves room for it */
    if (strlen(data) != len) {
        free(data);
        return SPEC_ERR(s, where, "'%s' holds a NUL byte", path);
    }
    if (s->nfiles < SPEC_FILES_KEPT) { /* kept for the next kernel that names it; a copy is handed out */
        spec_file *f = &s->files[s->nfiles];
        if ((f->name = kc_strdup(name))) {
            f->data = data, f->len = len;
            s->nfiles++;
            return copy_file(f, out);
        }
    }
    *out = data;
    return KC_OK;
}

/* The length of array `a` (one linear count), or an error naming `where` when it is over `max`. */
static int array_len(sctx *s, const char *where, const kc_json *a, int max, int *n) {
    int k = 0;
    const kc_json *x;
    KC_JSON_EACH(x, a) {
        if (++k > max) return SPEC_ERR(s, where, "has more than %d items", max);
    }
    *n = k;
    return KC_OK;
}

/*
 * Every field of object `o` is one of `known` (NULL-terminated), and none appears twice: a misspelt
 * "inplce" or "alais" would otherwise be dropped in silence and change what the graph does.
 */
static int known_fields(sctx *s, const char *where, const kc_json *o, const char *const *known) {
    const kc_json *f;
    KC_JSON_EACH(f, o) {
        size_t k = 0;
        const char *key = f->key ? f->key : "";
        while (known[k] && (known[k][0] != key[0] || strcmp(known[k], key) != 0)) k++;
        if (!known[k]) {
            char list[256] = "";
            for (size_t j = 0; known[j]; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", known[j]);
            return SPEC_ERR(s, where, "unknown field \"%.64s\" (known here: %s)", f->key ? f->key : "", list);
        }
        for (const kc_json *g = f->next; g; g = g->next)
            if (g->key && g->key[0] == key[0] && strcmp(g->key, key) == 0)
                return SPEC_ERR(s, where, "field \"%.64s\" appears twice", f->key);
    }
    return KC_OK;
}

static const char *str_field(const kc_json *o, const char *name) {
    const kc_json *v = kc_json_get(o, name);
    return kc_json_is(v, KC_JSON_STRING) ? v->str : NULL;
}

/* Whether `v` is an expression field — a string, or an integer number —, with *out its text
 * (NULL when not). */
static int expr_ok(const kc_json *v, char buf[64], const char **out) {
    *out = NULL;
    if (kc_json_is(v, KC_JSON_STRING)) {
        *out = v->str;
        return 1;
    }
    if (kc_json_is(v, KC_JSON_NUMBER) && v->num >= 0 && v->num <= 9.0e15 && v->num == (double)(int64_t)v->num) {
        kc_utoa((unsigned long long)v->num, buf); /* ≤ 9e15: 16 digits */
        *out = buf;
        return 1;
    }
    return 0;
}

/* An expression field.  *out is always written (NULL on error), so no caller can read an unset
 * pointer. */
static int expr_of(sctx *s, const char *where, const kc_json *v, char buf[64], const char **out) {
    return expr_ok(v, buf, out) ? KC_OK : SPEC_ERR(s, where, "must be an integer or an expression string");
}

/* expr_of at the place "<base><mid>[i]", whose name is built only for the error: a spec's
 * every size, grid and block is one, and a warm start loads every spec. */
static int expr_at(sctx *s, const char *base, const char *mid, int i, const kc_json *v, char buf[64], const char **out) {
    if (expr_ok(v, buf, out)) return KC_OK;
    char w[128];
    return expr_of(s, kc_cat_index(w, sizeof w, base, mid, i, ""), v, buf, out);
}

/* A boolean field: *out unchanged when absent; an error when it is not true/false. */
static int bool_field(sctx *s, const char *where, const kc_json *o, const char *name, int *out) {
    const kc_json *v = kc_json_get(o, name);
    if (!v) return KC_OK;
    if (!kc_json_is_bool(v)) return SPEC_ERR(s, where, "\"%s\" must be true or false", name);
    *out = kc_json_is(v, KC_JSON_TRUE) ? 1 : 0;
    return KC_OK;
}

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
        int rc = read_beside(s, hw, hn->str, (char **)&hdr[*nh].source);
        if (rc) return rc;
        hdr[(*nh)++].name = hn->str;
    }
    return KC_OK;
}

static int load_kernels(sctx *s, const kc_json *root, const kc_json *arr, char ***names) {
    /* What every kernel of the spec shares: headers, and whether it may use the toolkit's. */
    const kc_json *shared = kc_json_get(root, "headers");
    if (shared && !kc_json_is(shared, KC_JSON_ARRAY)) return SPEC_ERR(s, "headers", "must be an array of strings");
    int nshared = 0, toolkit_all = 0, n = 0;
    int rc0 = bool_field(s, "spec", root, "toolkit_headers", &toolkit_all);
    if (!rc0 && shared) rc0 = array_len(s, "headers", shared, SPEC_MAX_ITEMS, &nshared);
    if (rc0) return rc0;
    /* A graph of zero steps only (zeroing gradients) has no kernel: "kernels": [] or no "kernels". */
    if (arr && !kc_json_is(arr, KC_JSON_ARRAY)) return SPEC_ERR(s, "kernels", "must be an array");
    if (!arr) return KC_OK;
    if ((rc0 = array_len(s, "kernels", arr, KC_GRAPH_MAX_KERNELS, &n))) return rc0;
    *names = kc_calloc((size_t)n + 1, sizeof **names);
    if (!*names) return kc_err(KC_ENOMEM, "spec: out of memory");
    int i = -1;
    const kc_json *k;
    KC_JSON_EACH(k, arr) {
        i++;
        char where[64];
        kc_cat_index(where, sizeof where, "kernels", "", i, "");
        const char *id = str_field(k, "id"), *file = str_field(k, "file"), *entry = str_field(k, "entry");
        if (!kc_json_is(k, KC_JSON_OBJECT) || !file || !entry)
            return SPEC_ERR(s, where, "needs \"file\" and \"entry\" strings");
        static const char *const kfields[] = {"id", "file", "entry", "headers", "options", "toolkit_headers",
                                              "include_digest", NULL};
        int krc = known_fields(s, where, k, kfields);
        if (krc) return krc;
        (*names)[i] = (char *)(id ? id : entry);
        char *source = NULL;
        int rc = read_beside(s, where, file, &source);
        if (rc) return rc;
        const kc_json *hs = kc_json_get(k, "headers");
        const kc_json *os = kc_json_get(k, "options");
        int nh = 0, no = 0;
        if ((hs && !kc_json_is(hs, KC_JSON_ARRAY)) || (os && !kc_json_is(os, KC_JSON_ARRAY))) {
            free(source);
            return SPEC_ERR(s, where, "\"headers\" and \"options\" must be arrays of strings");
        }
        if ((hs && (rc = array_len(s, where, hs, SPEC_MAX_ITEMS, &nh))) ||
            (os && (rc = array_len(s, where, os, SPEC_MAX_ITEMS, &no)))) {
            free(source);
            return rc;
        }
        kc_header_src *hdr = kc_calloc((size_t)(nshared + nh) + 1, sizeof *hdr);
        const char **opt = kc_calloc((size_t)no + 1, sizeof *opt);
        int nhdr = 0, toolkit = toolkit_all;
        char kw[80];
        kc_cat_index(kw, sizeof kw, where, ".", -1, "");
        if (!hdr || !opt) rc = kc_err(KC_ENOMEM, "spec: out of memory");
        if (!rc && shared) rc = load_headers(s, "", shared, hdr, &nhdr);
        if (!rc && hs) rc = load_headers(s, kw, hs, hdr, &nhdr);
        if (!rc) rc = bool_field(s, where, k, "toolkit_headers", &toolkit);
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
            kc_kernel_src src = {KC_KERNEL_SRC_VERSION, file, source, entry, hdr, (size_t)nhdr, opt, (size_t)no,
                                 str_field(k, "include_digest"), toolkit ? KC_KERNEL_TOOLKIT_HEADERS : 0u};
            rc = kc_graph_add_kernel(s->d, &src, NULL);
            if (rc) kc_err_prefix(rc, "%s: %s", s->path, where);
        }
        for (int h = 0; hdr && h < nshared + nh; h++) free((char *)hdr[h].source);
        free(hdr);
        free(opt);
        free(source);
        if (rc) return rc;
    }
    return KC_OK;
}

/* The sizes `arr` of the tensor at `where` ("inputs[0]"): its errors say "inputs[0].sizes…". */
static int dims_of(sctx *s, const char *where, const kc_json *arr, const char **dims, char bufs[][64], int *rank) {
    if (!kc_json_is(arr, KC_JSON_ARRAY) || (int)kc_json_count(arr) > KC_MAX_RANK) {
        char w[96];
        return SPEC_ERR(s, kc_cat_index(w, sizeof w, where, ".sizes", -1, ""), "must be an array of at most %d sizes", KC_MAX_RANK);
    }
    *rank = (int)kc_json_count(arr); /* at most KC_MAX_RANK: checked above */
    int r = 0;
    const kc_json *x;
    KC_JSON_EACH(x, arr) {
        int rc = expr_at(s, where, ".sizes", r, x, bufs[r], &dims[r]);
        if (rc) return rc;
        r++;
    }
    return KC_OK;
}

/* A tensor reference "ROLE:I" (I decimal, at most 9 digits): KC_OK with its role and index, else an error at `where`. */
static int ref_of(sctx *s, const char *where, const char *ref, kc_tensor_role *role, size_t *index) {
    size_t pl;
    int r = ref ? kc_program_role_match(ref, &pl) : -1; /* the roles' spellings: args.c's table */
    size_t nd = r < 0 ? 0 : strspn(ref + pl, "0123456789");
    if (nd == 0 || nd > 9 || ref[pl + nd])
        return SPEC_ERR(s, where, "'%.64s' is not a tensor reference (ROLE:I, e.g. \"output:0\")", ref ? ref : "(not a string)");
    *role = (kc_tensor_role)r;
    *index = (size_t)strtoul(ref + pl, NULL, 10);
    return KC_OK;
}

/* What a tensor says of being written: an input's "inplace" and "grad": "accumulate", an output's "alias". */
static int load_writes(sctx *s, const kc_json *t, const char *where, kc_tensor_role role, size_t i) {
    char w[96];
    w[0] = '\0';
    int inplace = 0, rc;
    const kc_json *grad = kc_json_get(t, "grad"), *alias = kc_json_get(t, "alias");
    if (kc_json_get(t, "inplace")) kc_cat_index(w, sizeof w, where, ".inplace", -1, ""); /* named only when there */
    if ((rc = bool_field(s, w, t, "inplace", &inplace))) return rc;
    if (role != KC_ROLE_INPUT && (kc_json_get(t, "inplace") || grad))
        return SPEC_ERR(s, where, "\"inplace\" and \"grad\" are an input's (an output that is an input says \"alias\")");
    if (role != KC_ROLE_OUTPUT && alias) return SPEC_ERR(s, where, "only an output may be an \"alias\" of an input");
    if (inplace && (rc = kc_graph_set_inplace(s->d, i))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    if (grad) {
        kc_cat_index(w, sizeof w, where, ".grad", -1, "");
        if (!kc_json_is(grad, KC_JSON_STRING) || strcmp(grad->str, "accumulate") != 0)
            return SPEC_ERR(s, w, "must be \"accumulate\" (the caller's gradient buffer, added into) or absent (allocated)");
        if ((rc = kc_graph_set_grad_accumulate(s->d, i))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    }
    if (alias) {
        kc_tensor_role r;
        size_t j;
        kc_cat_index(w, sizeof w, where, ".alias", -1, "");
        if ((rc = ref_of(s, w, kc_json_is(alias, KC_JSON_STRING) ? alias->str : NULL, &r, &j))) return rc;
        if (r != KC_ROLE_INPUT) return SPEC_ERR(s, w, "an output may be an alias of an input only (\"input:J\")");
        if ((rc = kc_graph_set_alias(s->d, i, j))) return kc_err_prefix(rc, "%s: %s", s->path, w);
    }
    return KC_OK;
}

static int load_tensors(sctx *s, const kc_json *root, const char *field, kc_tensor_role role) {
    const kc_json *arr = kc_json_get(root, field);
    if (!arr) return role == KC_ROLE_INPUT ? SPEC_ERR(s, field, "is required") : KC_OK;
    if (!kc_json_is(arr, KC_JSON_ARRAY)) return SPEC_ERR(s, field, "must be an array");
    int n, i = -1, rc0 = array_len(s, field, arr, SPEC_MAX_ITEMS, &n);
    if (rc0) return rc0;
    const kc_json *t;
    KC_JSON_EACH(t, arr) {
        i++;
        char where[64];
        kc_cat_index(where, sizeof where, field, "", i, "");
        /* inplace, grad and alias are known to every role: load_writes says which role each belongs to. */
        static const char *const in_fields[] = {"dtype", "sizes", "requires_grad", "inplace", "grad", "alias", NULL};
        static const char *const other_fields[] = {"dtype", "sizes", "inplace", "grad", "alias", NULL};
        int frc = known_fields(s, where, t, role == KC_ROLE_INPUT ? in_fields : other_fields);
        if (frc) return frc;
        kc_dtype dt = kc_dtype_parse(str_field(t, "dtype"));
        if (!dt) return SPEC_ERR(s, where, "\"dtype\" must be one of f32 f16 bf16 f64 i32 i64 i8 u8 bool");
        const char *dims[KC_MAX_RANK];
        char bufs[KC_MAX_RANK][64];
        int rank = 0, rc;
        if ((rc = dims_of(s, where, kc_json_get(t, "sizes"), dims, bufs, &rank))) return rc;
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
    int n, i = -1, rc = array_len(s, "args", arr, KC_GRAPH_MAX_ARGS, &n);
    if (rc) return rc;
    const kc_json *a;
    KC_JSON_EACH(a, arr) {
        i++;
        char where[64];
        const char *name = str_field(a, "name"), *type = str_field(a, "type");
        kc_cat_index(where, sizeof where, "args", "", i, "");
        if (!kc_json_is(a, KC_JSON_OBJECT) || !name) return SPEC_ERR(s, where, "needs a \"name\" string (and a \"type\")");
        static const char *const a_fields[] = {"name", "type", NULL};
        if ((rc = known_fields(s, where, a, a_fields))) return rc;
        kc_arg_type t = kc_arg_type_parse(type);
        if (!t) {
            snprintf(where, sizeof where, "args[%d].type", i);
            return SPEC_ERR(s, where, "runtime argument '%.64s': unknown type '%.32s' (one of f32 f64 i32 u32 i64 u64)", name,
                            type ? type : "(not a string)");
        }
        if ((rc = kc_graph_add_arg(s->d, name, t))) return kc_err_prefix(rc, "%s: %s", s->path, where);
    }
    return KC_OK;
}

/* A zero step at `where`: "ROLE:I" (the whole tensor), or a range "ROLE:I+OFFSET" and/or "count" (elements; scratch: bytes). */
static int load_zero(sctx *s, const char *where, const kc_json *st, const kc_json *zero, kc_pass pass) {
    kc_tensor_role zr;
    size_t zi;
    char zw[80], ref[64], cb[64];
    const kc_json *cnt = kc_json_get(st, "count");
    kc_cat_index(zw, sizeof zw, where, ".zero", -1, "");
    if ((int)kc_json_count(st) != 1 + (cnt != NULL))
        return SPEC_ERR(s, where, "a zero step is {\"zero\": \"ROLE:I\"} or {\"zero\": \"ROLE:I+OFFSET\", \"count\": COUNT} alone");
    const char *zs = kc_json_is(zero, KC_JSON_STRING) ? zero->str : NULL, *plus = zs ? strchr(zs, '+') : NULL, *off = NULL, *c = NULL;
    if (plus) { /* the offset, in elements (scratch: bytes), as a tensor argument's */
        if ((size_t)(plus - zs) >= sizeof ref || !plus[1]) return SPEC_ERR(s, zw, "'%.64s' is not ROLE:I+OFFSET", zs);
        snprintf(ref, sizeof ref, "%.*s", (int)(plus - zs), zs);
        off = plus + 1, zs = ref;
    }
    int rc = ref_of(s, zw, zs, &zr, &zi);
    if (!rc && cnt) {
        char cw[80];
        rc = expr_of(s, kc_cat_index(cw, sizeof cw, where, ".count", -1, ""), cnt, cb, &c);
    }
    if (!rc && (rc = kc_graph_add_zero_range(s->d, pass, zr, zi, off, c))) rc = kc_err_prefix(rc, "%s: %s", s->path, zw);
    return rc;
}

static int load_pass(sctx *s, const kc_json *root, const char *field, kc_pass pass, char **kernel_ids, int nk) {
    const kc_json *p = kc_json_get(root, field);
    if (!p) return pass == KC_PASS_FORWARD ? SPEC_ERR(s, field, "is required") : KC_OK;
    static const char *const pass_fields[] = {"steps", "scratch", NULL};
    if (kc_json_is(p, KC_JSON_OBJECT)) {
        int prc = known_fields(s, field, p, pass_fields);
        if (prc) return prc;
    }
    const kc_json *steps = kc_json_is(p, KC_JSON_ARRAY) ? p : kc_json_get(p, "steps");
    const kc_json *scratch = kc_json_is(p, KC_JSON_OBJECT) ? kc_json_get(p, "scratch") : NULL;
    if (!kc_json_is(steps, KC_JSON_ARRAY)) return SPEC_ERR(s, field, "must be an array of steps (or {\"steps\": […], \"scratch\": […]})");
    int n = 0, i = -1, rc0 = array_len(s, field, steps, SPEC_MAX_ITEMS, &n);
    if (!rc0 && scratch) rc0 = array_len(s, field, scratch, SPEC_MAX_ITEMS, &n);
    if (rc0) return rc0;
    const kc_json *sc;
    KC_JSON_EACH(sc, scratch) {
        i++;
        char where[64], buf[64];
        const char *e;
        kc_cat_index(where, sizeof where, field, ".scratch", i, "");
        int rc = expr_of(s, where, sc, buf, &e);
        if (!rc) rc = kc_graph_add_scratch(s->d, pass, e);
        if (rc) return rc == KC_EINVAL || rc == KC_EEXPR ? kc_err_prefix(rc, "%s: %s", s->path, where) : rc;
    }
    i = -1;
    const kc_json *st;
    KC_JSON_EACH(st, steps) {
        i++;
        char where[64];
        kc_cat_index(where, sizeof where, field, "", i, "");
        static const char *const step_fields[] = {"kernel", "grid", "block", "shared", "args", "zero", "count", NULL};
        int src0 = known_fields(s, where, st, step_fields);
        if (src0) return src0;
        const kc_json *zero = kc_json_get(st, "zero");
        if (zero) { /* {"zero": "output:0"} or {"zero": "scratch:0+OFFSET", "count": COUNT}: a zero step, nothing else */
            int rc = load_zero(s, where, st, zero, pass);
            if (rc) return rc;
            continue;
        }
        if (kc_json_get(st, "count")) return SPEC_ERR(s, where, "\"count\" belongs to a zero step ({\"zero\": …, \"count\": …})");
        const char *kname = str_field(st, "kernel");
        int kernel = -1;
        for (int k = 0; kname && k < nk; k++)
            if (strcmp(kernel_ids[k], kname) == 0) kernel = k;
        if (kernel < 0) return SPEC_ERR(s, where, "\"kernel\" must name one of the kernels' ids");
        const char *grid[3], *block[3], *shared = NULL;
        char gb[3][64], bb[3][64], sb[64];
        const kc_json *g = kc_json_get(st, "grid"), *b = kc_json_get(st, "block");
        if (!kc_json_is(g, KC_JSON_ARRAY) || (int)kc_json_count(g) != 3 || !kc_json_is(b, KC_JSON_ARRAY) || (int)kc_json_count(b) != 3)
            return SPEC_ERR(s, where, "\"grid\" and \"block\" must be arrays of 3 expressions");
        int rc = KC_OK;
        const kc_json *gv = g->child, *bv = b->child; /* 3 each: checked above */
        for (int j = 0; j < 3 && !rc; j++, gv = gv->next, bv = bv->next) {
            rc = expr_at(s, where, ".grid", j, gv, gb[j], &grid[j]);
            if (!rc) rc = expr_at(s, where, ".block", j, bv, bb[j], &block[j]);
        }
        const kc_json *sh = kc_json_get(st, "shared");
        if (!rc && sh) rc = expr_of(s, where, sh, sb, &shared);
        if (rc) return rc;
        const kc_json *args = kc_json_get(st, "args");
        int na = 0;
        if (!kc_json_is(args, KC_JSON_ARRAY)) return SPEC_ERR(s, where, "\"args\" must be an array of strings");
        if (array_len(s, where, args, SPEC_MAX_ARGS, &na))
            return SPEC_ERR(s, where, "a step takes at most %d arguments (the launch program's limit)", SPEC_MAX_ARGS);
        const char **av = kc_calloc((size_t)na + 1, sizeof *av);
        if (!av) return kc_err(KC_ENOMEM, "spec: out of memory");
        int a = -1;
        const kc_json *x;
        KC_JSON_EACH(x, args) {
            a++;
            if (!kc_json_is(x, KC_JSON_STRING)) {
                free(av);
                return SPEC_ERR(s, where, "args[%d] must be a string", a);
            }
            av[a] = x->str;
        }
        rc = kc_graph_add_step(s->d, pass, kernel, grid, block, shared, av, (size_t)na);
        free(av);
        if (rc) return kc_err_prefix(rc, "%s: %s", s->path, where);
    }
    return KC_OK;
}

int kc_graph_desc_load(kc_graph_desc **out, const char *spec_path) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !spec_path) return kc_err(KC_EINVAL, "kc_graph_desc_load: NULL argument");
    *out = NULL;
    void *text;
    size_t len;
    int rc = kc_fs_read_input(spec_path, SPEC_MAX_BYTES, &text, &len, NULL);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "%s: no such file", spec_path);
    if (rc) return rc;
    ((char *)text)[len] = '\0';
    sctx s = {spec_path, "", NULL, {{0}}, 0};
    const char *slash = strrchr(spec_path, '/');
    snprintf(s.dir, sizeof s.dir, "%.*s", slash ? (int)(slash - spec_path) : 1, slash ? spec_path : ".");
    kc_json_doc doc;
    size_t off = 0;
    _Alignas(max_align_t) char scratch[4096]; /* a spec of a few hundred bytes is read here ([Note: spec JSON]) */
    rc = kc_json_parse_in(&doc, text, len, &off, scratch, sizeof scratch);
    if (rc == KC_ENOMEM) {
        free(text);
        return kc_err_prefix(rc, "%s", spec_path);
    }
    const kc_json *root = doc.root;
    if (rc) {
        int line = 1, col = 1;
        for (size_t i = 0; i < off && i < len; i++) {
            if (((char *)text)[i] == '\n') line++, col = 1;
            else col++;
        }
        free(text);
        return kc_err(KC_EINVAL, "%s:%d:%d: not valid JSON", spec_path, line, col);
    }
    free(text);
    char **kernel_ids = NULL;
    const char *name = str_field(root, "name");
    if (!kc_json_is(root, KC_JSON_OBJECT) || !name) {
        rc = SPEC_ERR(&s, "name", "a graph spec is an object with a \"name\" string");
    } else if (!(rc = kc_graph_desc_new(&s.d, name)) && !(s.d->spec_path = kc_strdup(spec_path))) {
        rc = kc_err(KC_ENOMEM, "spec: out of memory");
    } else if (!rc) {
        static const char *const root_fields[] = {"name", "kernels", "headers", "toolkit_headers", "inputs", "outputs",
                                                  "saved", "args", "forward", "backward", "wrappers", "backend", NULL};
        rc = known_fields(&s, "spec", root, root_fields);
    }
    if (!rc && s.d) {
        const kc_json *kernels = kc_json_get(root, "kernels");
        int nk = kc_json_is(kernels, KC_JSON_ARRAY) ? (int)kc_json_count(kernels) : 0;
        if (!(rc = load_kernels(&s, root, kernels, &kernel_ids)) &&
            !(rc = load_tensors(&s, root, "inputs", KC_ROLE_INPUT)) &&
            !(rc = load_tensors(&s, root, "outputs", KC_ROLE_OUTPUT)) &&
            !(rc = load_tensors(&s, root, "saved", KC_ROLE_SAVED)) && !(rc = load_args(&s, root)) &&
            !(rc = load_pass(&s, root, "forward", KC_PASS_FORWARD, kernel_ids, nk)))
            rc = load_pass(&s, root, "backward", KC_PASS_BACKWARD, kernel_ids, nk);
        const kc_json *ws = kc_json_get(root, "wrappers");
        int nw = 0, i = -1;
        if (!rc && kc_json_is(ws, KC_JSON_ARRAY)) rc = array_len(&s, "wrappers", ws, SPEC_MAX_WRAPPERS, &nw);
        const kc_json *w, *wl = kc_json_is(ws, KC_JSON_ARRAY) && !rc ? ws : NULL;
        KC_JSON_EACH(w, wl) {
            if (rc) break;
            i++;
            const kc_json *v = kc_json_get(w, "version");
            char where[48];
            snprintf(where, sizeof where, "wrappers[%d]", i);
            static const char *const w_fields[] = {"name", "version", "params", NULL};
            if (!str_field(w, "name") || !kc_json_is(v, KC_JSON_NUMBER)) rc = SPEC_ERR(&s, where, "needs \"name\" and \"version\"");
            else if ((rc = known_fields(&s, where, w, w_fields))) break;
            else if (!(v->num >= 0 && v->num <= 4294967295.0 &&
                  v->num == (double)(uint32_t)v->num))
                rc = SPEC_ERR(&s, where, "\"version\" must be a whole number from 0 to 4294967295");
            else {
                const char *params = str_field(w, "params");
                rc = kc_graph_add_wrapper(s.d, str_field(w, "name"), (uint32_t)v->num, params,
                                          params ? strlen(params) : 0);
            }
        }
        const char *backend = str_field(root, "backend");
        if (!rc && backend) rc = kc_graph_set_backend(s.d, backend);
    }
    free(kernel_ids);
    files_free(&s);
    kc_json_free(&doc);
    if (rc) {
        kc_graph_desc_free(s.d);
        return rc;
    }
    *out = s.d;
    return KC_OK;
}
