/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argpack.c — packing a step's arguments at a call: each argument's value written where the driver reads it.
 *
 * kc_program_pack walks a decoded step's arguments, finds each one's row in args.c's table (argkind.h) and
 * calls the row's pack function, one per body: a tensor's device pointer (at its offset, checked to lie
 * inside the tensor under this call's symbols, before any launch), a symbol's or an expression's value, a
 * constant, the decoded bytes of "bytes:HEX", a runtime argument's value, the philox seed and offset.
 * kc_program_check_values checks a call's runtime argument values against the declarations first.
 *
 * The one idea: the packer writes what the ABI check (args.c, the same row's size and class) said the
 * argument passes, and nothing else; a value that cannot be packed is an error naming the step and the
 * argument, never a guess.
 *
 * Callers: run.c (kc_program_pack, kc_program_check_values), declared in program.h; the pack functions
 * only through args.c's table.  Must not: launch, allocate device memory, or know a kind's spelling (the
 * table does).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "argkind.h"
#include "graph_internal.h"

int kc_program_check_values(const kc_lprog *p, const kc_value *v, size_t n) {
    if (n != p->nrargs || (n && !v)) {
        char list[256];
        size_t o = 0;
        list[0] = '\0';
        for (size_t i = 0; i < p->nrargs && o + 80 < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%.40s %s", i ? ", " : "", p->rargs[i].name,
                                  kc_arg_type_str(p->rargs[i].type));
        if (!p->nrargs) return kc_err(KC_EINVAL, "the graph takes no runtime arguments, %zu given", n);
        return kc_err(KC_EINVAL, "the graph takes %zu runtime argument%s (%s), %zu given%s", p->nrargs,
                      p->nrargs == 1 ? "" : "s", list, n,
                      n ? "" : ": pass their values (kc_graph_forward_args, kc_graph_backward_args)");
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].type != p->rargs[i].type)
            return kc_err(KC_EINVAL, "runtime argument %zu '%s' is %s, a value of type %s was given", i,
                          p->rargs[i].name, kc_arg_type_str(p->rargs[i].type), kc_arg_type_str((int)v[i].type));
    return KC_OK;
}

/* How many elements (scratch: bytes) tensor `idx` of `role` spans under bound symbols, and each one's bytes.  An
 * input counts the smaller of its element count and the elements its strides reach (a broadcast input is smaller
 * than its shape); a gradient has its tensor's shape. */
static int extent(const kc_lprog *p, int role, size_t idx, const int64_t *syms, int64_t *n, size_t *esize) {
    if (role == KC_ROLE_SCRATCH) {
        size_t b;
        int rc = kc_program_scratch_bytes(p, idx, syms, &b);
        *n = b > (size_t)INT64_MAX ? INT64_MAX : (int64_t)b;
        *esize = 1;
        return rc;
    }
    int trole = role == KC_ROLE_GRAD_IN ? KC_ROLE_INPUT : role == KC_ROLE_GRAD_OUT ? KC_ROLE_OUTPUT : role;
    const ptensor *t = kc_program_tensor(p, trole, idx);
    if (!t) return kc_err(KC_ECORRUPT, "no tensor %zu of role %d", idx, role);
    *esize = kc_dtype_size((kc_dtype)t->dtype);
    int64_t numel = 1, last = 0;
    int empty = 0;
    for (int d = 0; d < t->rank; d++) {
        int64_t sz, st = 0;
        int rc = kc_program_eval(p, t->sizes[d], syms, &sz);
        if (!rc && trole == KC_ROLE_INPUT) rc = kc_program_eval(p, t->strides[d], syms, &st);
        if (rc) return rc;
        if (sz <= 0) {
            empty = 1;
            continue;
        }
        if (st < 0 && __builtin_sub_overflow((int64_t)0, st, &st)) return kc_err(KC_EEXPR, "tensor too large");
        int64_t reach;
        if (__builtin_mul_overflow(numel, sz, &numel) || __builtin_mul_overflow(sz - 1, st, &reach) ||
            __builtin_add_overflow(last, reach, &last))
            return kc_err(KC_EEXPR, "tensor too large");
    }
    *n = empty ? 0 : trole == KC_ROLE_INPUT && last + 1 < numel ? last + 1 : numel;
    return KC_OK;
}

/* ---- one pack function per body (args.c's table names them) ---- */

int kc_pack_tensor(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    const char *end, *e;
    int role = pa->k->role;
    kc_program_offset_split(pa->x, (size_t)(pa->rest - pa->x), &end, &e);
    size_t idx = (size_t)strtoull(pa->rest, NULL, 10);
    int rc = pa->in->resolve(pa->in->ctx, role, idx, &v->ptr);
    if (rc || !e) return rc;
    int64_t off, n = 0;
    size_t esize = 1;
    if ((rc = kc_program_eval(pa->p, e, pa->in->syms, &off)) || off == 0 ||
        (rc = extent(pa->p, role, idx, pa->in->syms, &n, &esize)))
        return rc;
    if (off < 0 || off >= n)
        return kc_err(KC_EINVAL, "'%.64s': offset %lld is outside the tensor's %lld %s", pa->x, (long long)off,
                      (long long)n, role == KC_ROLE_SCRATCH ? "bytes" : "elements");
    v->ptr = (void *)((uintptr_t)v->ptr + (uintptr_t)off * esize); /* off < n: n elements of esize were sized */
    return KC_OK;
}

int kc_pack_null(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)pa, (void)arg;
    v->ptr = NULL;
    return KC_OK;
}

static int philox(const kc_packarg *pa, kc_argval *v, int which) {
    if (!pa->in->philox) return kc_err(KC_EINVAL, "'%s' needs the philox wrapper and an RNG state", pa->x);
    v->u64 = pa->in->philox[which];
    return KC_OK;
}

int kc_pack_philox_seed(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    return philox(pa, v, 0);
}

int kc_pack_philox_offset(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    return philox(pa, v, 1);
}

int kc_pack_sym(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    for (size_t k = 0; k < pa->p->nsyms; k++)
        if (strcmp(pa->p->syms[k], pa->rest) == 0) {
            v->i64 = pa->in->syms[k];
            return KC_OK;
        }
    return kc_err(KC_ECORRUPT, "unknown symbol in '%s'", pa->x);
}

int kc_pack_e64(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    return kc_program_eval(pa->p, pa->rest, pa->in->syms, &v->i64);
}

int kc_pack_e32(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    int64_t x = 0;
    int rc = kc_program_eval(pa->p, pa->rest, pa->in->syms, &x);
    if (!rc && (x < INT32_MIN || x > INT32_MAX))
        rc = kc_err(KC_EEXPR, "'%s' = %lld does not fit 32 bits", pa->x, (long long)x);
    v->i32 = (int32_t)x;
    return rc;
}

int kc_pack_i32(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    v->i32 = (int32_t)strtol(pa->rest, NULL, 10);
    return KC_OK;
}

int kc_pack_u32(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    return kc_arg_parse_u32(pa->rest, &v->u32) ? KC_OK : kc_err(KC_ECORRUPT, "bad constant '%.64s'", pa->x);
}

int kc_pack_i64(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    v->i64 = (int64_t)strtoll(pa->rest, NULL, 10);
    return KC_OK;
}

int kc_pack_f32(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    v->f32 = strtof(pa->rest, NULL);
    return KC_OK;
}

int kc_pack_f64(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    return kc_arg_parse_f64(pa->rest, &v->f64) ? KC_OK : kc_err(KC_ECORRUPT, "bad constant '%.64s'", pa->x);
}

int kc_pack_bool(const kc_packarg *pa, kc_argval *v, void **arg) { /* one byte, 1 or 0, as C++ passes a bool */
    (void)arg;
    v->u64 = 0;
    v->u8 = strcmp(pa->rest, "true") == 0 ? 1 : 0;
    return KC_OK;
}

int kc_pack_bytes(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)v;
    if (!pa->s->blobs || !pa->s->blobs[pa->a]) return kc_err(KC_ECORRUPT, "'%.64s' was not decoded", pa->x);
    *arg = pa->s->blobs[pa->a];
    return KC_OK;
}

int kc_pack_rarg(const kc_packarg *pa, kc_argval *v, void **arg) {
    (void)arg;
    const kc_lprog *p = pa->p;
    const kc_value *rv = pa->in->rvals;
    size_t k;
    for (k = 0; k < p->nrargs; k++)
        if (strcmp(p->rargs[k].name, pa->rest) == 0) break;
    if (k == p->nrargs) return kc_err(KC_ECORRUPT, "'%.64s' names no runtime argument", pa->x);
    if (!rv) return kc_err(KC_EINVAL, "'%.64s' needs the call's runtime argument values", pa->x);
    if (rv[k].type != p->rargs[k].type)
        return kc_err(KC_EINVAL, "runtime argument '%s' is %s, a value of type %s was given", p->rargs[k].name,
                      kc_arg_type_str(p->rargs[k].type), kc_arg_type_str((int)rv[k].type));
    switch (p->rargs[k].type) {
    case KC_ARG_F32: v->f32 = rv[k].v.f32; break;
    case KC_ARG_F64: v->f64 = rv[k].v.f64; break;
    case KC_ARG_I32: v->i32 = rv[k].v.i32; break;
    case KC_ARG_U32: v->u32 = rv[k].v.u32; break;
    case KC_ARG_I64: v->i64 = rv[k].v.i64; break;
    default: v->u64 = rv[k].v.u64; break;
    }
    return KC_OK;
}

/* ---- a step ---- */

int kc_program_pack(const kc_lprog *p, size_t i, const kc_argpack *in, kc_argval *vals, void **args) {
    const pstep *s = &p->steps[i];
    for (size_t a = 0; a < s->nargs; a++) {
        const char *x = s->args[a];
        const kc_argkind *k = kc_argkind_of(x);
        kc_packarg pa = {p, s, a, in, k, x, k ? x + strlen(k->spelling) : x};
        args[a] = &vals[a];
        int rc = k ? k->pack(&pa, &vals[a], &args[a]) : kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
        if (rc) return kc_err_prefix(rc, "step %zu argument %zu", i, a);
    }
    return KC_OK;
}

int kc_program_args(const kc_lprog *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                    const uint64_t *philox, kc_argval *vals, void **args) {
    kc_argpack in = {syms, resolve, ctx, philox, NULL};
    return kc_program_pack(p, i, &in, vals, args);
}
