/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_read.c — the spec reader's tools: the error that names the file and the place, files read beside
 * the spec (once per load), and the readers of one field (an array's length, the known fields of an object,
 * a string, an expression, a boolean, a tensor reference, a tensor's sizes).
 *
 * The one idea: every error names the file and the place in it ("mlp.json: forward[1].args[2]: …"),
 * because a deployment engineer reads them; a field is read and judged here once, in one way, whichever
 * part of the spec it is in.
 *
 * Callers: spec.c and spec_pass.c (spec.h).  Must not: build the description (spec.c and spec_pass.c do,
 * through desc.c's checked builders), or read a file outside the spec's folder.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "../common/fs.h"
#include "spec.h"

void kc_spec_files_free(sctx *s) {
    for (int i = 0; i < s->nfiles; i++) free(s->files[i].name), free(s->files[i].data);
    s->nfiles = 0;
}

int kc_spec_err(sctx *s, const char *where, const char *fmt, ...) {
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

int kc_spec_read_file(kc_spec_direct *sd, const char *rel, const char *path, void **data, size_t *len) {
    struct stat before, read, after;
    int ok = !sd || stat(path, &before) == 0;
    int rc = kc_fs_read_input(path, SPEC_MAX_BYTES, data, len, sd ? &read : NULL);
    /* The bytes are the open file's (its fstat): a name flipped to another file and back during the read
     * leaves the path's stat before and after equal, never the file read's too. */
    if (rc == KC_OK && sd)
        kc_spec_direct_saw_(sd, rel,
                            ok && stat(path, &after) == 0 && kc_spec_direct_sig_(&read) == kc_spec_direct_sig_(&after),
                            &before, &after);
    return rc;
}

/*
 * Read a file named in the spec, relative to the spec's folder (no escaping it).  A name read
 * before in this load is not read again (a spec's kernels share their sources and headers: one
 * read per file, not per kernel), which also makes every kernel see the same bytes of it.
 */
int kc_spec_read_beside(sctx *s, const char *where, const char *name, char **out) {
    if (!name || !*name || name[0] == '/' || strstr(name, ".."))
        return SPEC_ERR(s, where, "'%s' must be a relative path inside the spec's folder", name ? name : "");
    for (int i = 0; i < s->nfiles; i++)
        if (strcmp(s->files[i].name, name) == 0) return copy_file(&s->files[i], out);
    char path[PATH_MAX], rpath[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    snprintf(rpath, sizeof rpath, "%s/%s", s->rdir, name);
    void *data;
    size_t len;
    int rc = kc_spec_read_file(s->sd, name, rpath, &data, &len);
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
int kc_spec_array_len(sctx *s, const char *where, const kc_json *a, int max, int *n) {
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
int kc_spec_known_fields(sctx *s, const char *where, const kc_json *o, const char *const *known) {
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

const char *kc_spec_str(const kc_json *o, const char *name) {
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
int kc_spec_expr_of(sctx *s, const char *where, const kc_json *v, char buf[64], const char **out) {
    return expr_ok(v, buf, out) ? KC_OK : SPEC_ERR(s, where, "must be an integer or an expression string");
}

/* expr_of at the place "<base><mid>[i]", whose name is built only for the error: a spec's
 * every size, grid and block is one, and a warm start loads every spec. */
int kc_spec_expr_at(sctx *s, const char *base, const char *mid, int i, const kc_json *v, char buf[64],
                    const char **out) {
    if (expr_ok(v, buf, out)) return KC_OK;
    char w[128];
    return kc_spec_expr_of(s, kc_cat_index(w, sizeof w, base, mid, i, ""), v, buf, out);
}

/* A boolean field: *out unchanged when absent; an error when it is not true/false. */
int kc_spec_bool(sctx *s, const char *where, const kc_json *o, const char *name, int *out) {
    const kc_json *v = kc_json_get(o, name);
    if (!v) return KC_OK;
    if (!kc_json_is_bool(v)) return SPEC_ERR(s, where, "\"%s\" must be true or false", name);
    *out = kc_json_is(v, KC_JSON_TRUE) ? 1 : 0;
    return KC_OK;
}

/* The sizes `arr` of the tensor at `where` ("inputs[0]"): its errors say "inputs[0].sizes…". */
int kc_spec_dims(sctx *s, const char *where, const kc_json *arr, const char **dims, char bufs[][64], int *rank) {
    if (!kc_json_is(arr, KC_JSON_ARRAY) || (int)kc_json_count(arr) > KC_MAX_RANK) {
        char w[96];
        return SPEC_ERR(s, kc_cat_index(w, sizeof w, where, ".sizes", -1, ""), "must be an array of at most %d sizes",
                        KC_MAX_RANK);
    }
    *rank = (int)kc_json_count(arr); /* at most KC_MAX_RANK: checked above */
    int r = 0;
    const kc_json *x;
    KC_JSON_EACH(x, arr) {
        int rc = kc_spec_expr_at(s, where, ".sizes", r, x, bufs[r], &dims[r]);
        if (rc) return rc;
        r++;
    }
    return KC_OK;
}

/* A tensor reference "ROLE:I" (I decimal, at most 9 digits): KC_OK with its role and index, else an error at `where`. */
int kc_spec_ref(sctx *s, const char *where, const char *ref, kc_tensor_role *role, size_t *index) {
    size_t pl;
    int r = ref ? kc_program_role_match(ref, &pl) : -1; /* the roles' spellings: args.c's table */
    size_t nd = r < 0 ? 0 : strspn(ref + pl, "0123456789");
    if (nd == 0 || nd > 9 || ref[pl + nd])
        return SPEC_ERR(s, where, "'%.64s' is not a tensor reference (ROLE:I, e.g. \"output:0\")",
                        ref ? ref : "(not a string)");
    *role = (kc_tensor_role)r;
    *index = (size_t)strtoul(ref + pl, NULL, 10);
    return KC_OK;
}
