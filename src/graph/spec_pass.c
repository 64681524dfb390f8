/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_pass.c — a spec's pass ("forward", "backward"): its scratch buffers, its kernel steps (kernel, grid,
 * block, shared memory, arguments) and its zero steps, read from the JSON into the description.
 *
 * The one idea: a pass is read in the order it runs, each step through desc.c's checked builders
 * (kc_graph_add_step, kc_graph_add_zero_range), so a step is judged exactly as a C caller's would be; the
 * errors name the step ("forward[1]: …").
 *
 * Callers: spec.c (kc_spec_load_pass, spec.h).  Must not: know an argument kind's spelling (args.c's table
 * does, through kc_graph_add_step).
 */
#include <stdio.h>
#include <stdlib.h>

#include "spec.h"

/* A zero step at `where`: "ROLE:I" (the whole tensor), or a range "ROLE:I+OFFSET" and/or "count" (elements; scratch: bytes). */
static int load_zero(sctx *s, const char *where, const kc_json *st, const kc_json *zero, kc_pass pass) {
    kc_tensor_role zr;
    size_t zi;
    char zw[80], ref[64], cb[64];
    const kc_json *cnt = kc_json_get(st, "count");
    kc_cat_index(zw, sizeof zw, where, ".zero", -1, "");
    if ((int)kc_json_count(st) != 1 + (cnt != NULL))
        return SPEC_ERR(
            s, where, "a zero step is {\"zero\": \"ROLE:I\"} or {\"zero\": \"ROLE:I+OFFSET\", \"count\": COUNT} alone");
    const char *zs = kc_json_is(zero, KC_JSON_STRING) ? zero->str : NULL, *plus = zs ? strchr(zs, '+') : NULL,
               *off = NULL, *c = NULL;
    if (plus) { /* the offset, in elements (scratch: bytes), as a tensor argument's */
        if ((size_t)(plus - zs) >= sizeof ref || !plus[1]) return SPEC_ERR(s, zw, "'%.64s' is not ROLE:I+OFFSET", zs);
        snprintf(ref, sizeof ref, "%.*s", (int)(plus - zs), zs);
        off = plus + 1, zs = ref;
    }
    int rc = kc_spec_ref(s, zw, zs, &zr, &zi);
    if (!rc && cnt) {
        char cw[80];
        rc = kc_spec_expr_of(s, kc_cat_index(cw, sizeof cw, where, ".count", -1, ""), cnt, cb, &c);
    }
    if (!rc && (rc = kc_graph_add_zero_range(s->d, pass, zr, zi, off, c)))
        rc = kc_err_prefix(rc, "%s: %s", s->path, zw);
    return rc;
}

/* The pass's scratch buffers: an expression each (bytes). */
static int load_scratch(sctx *s, const char *field, const kc_json *scratch, kc_pass pass) {
    int i = -1;
    const kc_json *sc;
    KC_JSON_EACH(sc, scratch) {
        i++;
        char where[64], buf[64];
        const char *e;
        kc_cat_index(where, sizeof where, field, ".scratch", i, "");
        int rc = kc_spec_expr_of(s, where, sc, buf, &e);
        if (!rc) rc = kc_graph_add_scratch(s->d, pass, e);
        if (rc) return rc == KC_EINVAL || rc == KC_EEXPR ? kc_err_prefix(rc, "%s: %s", s->path, where) : rc;
    }
    return KC_OK;
}

/* A kernel step's grid, block (3 expressions each) and shared memory. */
static int load_dims(sctx *s, const char *where, const kc_json *st, const char *grid[3], const char *block[3],
                     const char **shared, char bufs[7][64]) {
    const kc_json *g = kc_json_get(st, "grid"), *b = kc_json_get(st, "block");
    if (!kc_json_is(g, KC_JSON_ARRAY) || (int)kc_json_count(g) != 3 || !kc_json_is(b, KC_JSON_ARRAY) ||
        (int)kc_json_count(b) != 3)
        return SPEC_ERR(s, where, "\"grid\" and \"block\" must be arrays of 3 expressions");
    int rc = KC_OK;
    const kc_json *gv = g->child, *bv = b->child; /* 3 each: checked above */
    for (int j = 0; j < 3 && !rc; j++, gv = gv->next, bv = bv->next) {
        rc = kc_spec_expr_at(s, where, ".grid", j, gv, bufs[j], &grid[j]);
        if (!rc) rc = kc_spec_expr_at(s, where, ".block", j, bv, bufs[3 + j], &block[j]);
    }
    const kc_json *sh = kc_json_get(st, "shared");
    if (!rc && sh) rc = kc_spec_expr_of(s, where, sh, bufs[6], shared);
    return rc;
}

/* A kernel step's arguments: an array of strings (*av owned, the strings borrowed from the JSON). */
static int load_step_args(sctx *s, const char *where, const kc_json *st, const char ***av, int *na) {
    const kc_json *args = kc_json_get(st, "args");
    if (!kc_json_is(args, KC_JSON_ARRAY)) return SPEC_ERR(s, where, "\"args\" must be an array of strings");
    if (kc_spec_array_len(s, where, args, SPEC_MAX_ARGS, na))
        return SPEC_ERR(s, where, "a step takes at most %d arguments (the launch program's limit)", SPEC_MAX_ARGS);
    if (!(*av = kc_calloc((size_t)*na + 1, sizeof **av))) return kc_err(KC_ENOMEM, "spec: out of memory");
    int a = -1;
    const kc_json *x;
    KC_JSON_EACH(x, args) {
        a++;
        if (!kc_json_is(x, KC_JSON_STRING)) {
            free(*av), *av = NULL;
            return SPEC_ERR(s, where, "args[%d] must be a string", a);
        }
        (*av)[a] = x->str;
    }
    return KC_OK;
}

/* One step at `where`: a zero step, or a kernel step (its kernel among the spec's ids, dimensions, arguments). */
static int load_step(sctx *s, const char *where, const kc_json *st, kc_pass pass, char **kernel_ids, int nk) {
    static const char *const step_fields[] = {"kernel", "grid", "block", "shared", "args", "zero", "count", NULL};
    int rc = kc_spec_known_fields(s, where, st, step_fields);
    if (rc) return rc;
    const kc_json *zero = kc_json_get(st, "zero");
    if (zero)
        return load_zero(s, where, st, zero,
                         pass); /* {"zero": "output:0"} or {"zero": "scratch:0+OFFSET", "count": COUNT} */
    if (kc_json_get(st, "count"))
        return SPEC_ERR(s, where, "\"count\" belongs to a zero step ({\"zero\": …, \"count\": …})");
    const char *kname = kc_spec_str(st, "kernel");
    int kernel = -1;
    for (int k = 0; kname && k < nk; k++)
        if (strcmp(kernel_ids[k], kname) == 0) kernel = k;
    if (kernel < 0) return SPEC_ERR(s, where, "\"kernel\" must name one of the kernels' ids");
    const char *grid[3], *block[3], *shared = NULL, **av = NULL;
    char bufs[7][64];
    int na = 0;
    if ((rc = load_dims(s, where, st, grid, block, &shared, bufs)) || (rc = load_step_args(s, where, st, &av, &na)))
        return rc;
    rc = kc_graph_add_step(s->d, pass, kernel, grid, block, shared, av, (size_t)na);
    free(av);
    return rc ? kc_err_prefix(rc, "%s: %s", s->path, where) : KC_OK;
}

int kc_spec_load_pass(sctx *s, const kc_json *root, const char *field, kc_pass pass, char **kernel_ids, int nk) {
    const kc_json *p = kc_json_get(root, field);
    if (!p) return pass == KC_PASS_FORWARD ? SPEC_ERR(s, field, "is required") : KC_OK;
    static const char *const pass_fields[] = {"steps", "scratch", NULL};
    if (kc_json_is(p, KC_JSON_OBJECT)) {
        int prc = kc_spec_known_fields(s, field, p, pass_fields);
        if (prc) return prc;
    }
    const kc_json *steps = kc_json_is(p, KC_JSON_ARRAY) ? p : kc_json_get(p, "steps");
    const kc_json *scratch = kc_json_is(p, KC_JSON_OBJECT) ? kc_json_get(p, "scratch") : NULL;
    if (!kc_json_is(steps, KC_JSON_ARRAY))
        return SPEC_ERR(s, field, "must be an array of steps (or {\"steps\": […], \"scratch\": […]})");
    int n = 0, i = -1, rc = kc_spec_array_len(s, field, steps, SPEC_MAX_ITEMS, &n);
    if (!rc && scratch) rc = kc_spec_array_len(s, field, scratch, SPEC_MAX_ITEMS, &n);
    if (!rc) rc = load_scratch(s, field, scratch, pass);
    const kc_json *st;
    KC_JSON_EACH(st, steps) {
        if (rc) break;
        i++;
        char where[64];
        kc_cat_index(where, sizeof where, field, "", i, "");
        rc = load_step(s, where, st, pass, kernel_ids, nk);
    }
    return rc;
}
