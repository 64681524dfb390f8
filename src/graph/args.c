/*
 * args.c — the argument kinds of a launch step: how each is spelled, checked, and packed.
 *
 * A step argument is a string (program.c's grammar lists every kind: a tensor "ROLE:I", the same
 * at an offset "ROLE:I+EXPR", null, sym:, e32:/e64:, the constants i32: u32: i64: f32: f64: bytes:,
 * arg:NAME, philox_seed/philox_offset).  This file holds everything that knows those spellings:
 * the runtime arguments' type names, the tensor roles' prefixes (zero steps reuse them), the
 * constants' parsers, the check of an argument against a description as it is added
 * (kc_graph_arg_check, for desc.c), its re-validation once decoded from an entry
 * (kc_program_arg_check, for program.c), its launch ABI (kc_program_arg_abi, for abi.c), the
 * check of a call's runtime argument values, and packing a step's arguments for the driver
 * (kc_program_args_with, for run.c).
 *
 * The one idea: one kind, one set of rules, read in one file — what the description accepts, what
 * the decoder re-validates, what the ABI check says is passed and what the packer writes must
 * agree, so they sit side by side.  An offset is checked to lie inside its tensor when the
 * shapes are static (at description time) and at each call before any launch (when packing).
 *
 * Callers: desc.c, spec.c, program.c, abi.c and run.c, declared in program.h; nothing outside
 * src/graph/ (tests and the fuzz harness aside).  Must not: launch, allocate device memory, or
 * decode a section — program.c reads the bytes, this file judges and packs the arguments.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../compile/params.h"
#include "graph_internal.h"
#include "program.h"

/* ---- names: runtime-argument types, tensor roles ---- */

static const char *const arg_type_names[] = {NULL, "f32", "f64", "i32", "u32", "i64", "u64"};

const char *kc_arg_type_str(int t) {
    return t >= KC_ARG_F32 && t <= KC_ARG_U64 ? arg_type_names[t] : "unknown";
}

kc_arg_type kc_arg_type_parse(const char *s) {
    for (int t = KC_ARG_F32; s && t <= KC_ARG_U64; t++)
        if (strcmp(s, arg_type_names[t]) == 0) return (kc_arg_type)t;
    return (kc_arg_type)0;
}

static const struct { const char *prefix; int role; } tensor_kinds[] = {
    {"input:", KC_ROLE_INPUT}, {"output:", KC_ROLE_OUTPUT}, {"saved:", KC_ROLE_SAVED},
    {"scratch:", KC_ROLE_SCRATCH}, {"grad_out:", KC_ROLE_GRAD_OUT}, {"grad_in:", KC_ROLE_GRAD_IN},
};

const char *kc_program_role_prefix(int role) {
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++)
        if (tensor_kinds[k].role == role) return tensor_kinds[k].prefix;
    return NULL;
}

int kc_program_role_match(const char *ref, size_t *prefix_len) {
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++) {
        size_t pl = strlen(tensor_kinds[k].prefix);
        if (strncmp(ref, tensor_kinds[k].prefix, pl) != 0) continue;
        *prefix_len = pl;
        return tensor_kinds[k].role;
    }
    return -1;
}

/* ---- spellings: offsets and constants ---- */

void kc_program_offset_split(const char *arg, size_t prefix_len, const char **idx_end, const char **expr) {
    const char *q = arg + prefix_len;
    while (*q >= '0' && *q <= '9') q++;
    *idx_end = q;
    *expr = *q == '+' ? q + 1 : NULL;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t kc_program_hex(const char *h, uint8_t out[256]) {
    size_t n = strnlen(h, 513);
    if (n == 0 || n % 2 || n > 512) return 0;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(h[i]), lo = hexval(h[i + 1]);
        if (hi < 0 || lo < 0) return 0;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

/* "u32:V": decimal digits only, 0..4294967295. */
static int parse_u32(const char *s, uint32_t *out) {
    uint64_t v = 0;
    if (!*s || strlen(s) > 10) return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > UINT32_MAX) return 0;
    *out = (uint32_t)v;
    return 1;
}

/* "f64:V": what strtod reads whole, in range. */
static int parse_f64(const char *s, double *out) {
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && end != s && !*end;
}

/* A whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long long lo, long long hi) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return !errno && end != s && !*end && v >= lo && v <= hi;
}

/* Whether a constant argument is well formed and fits its kind: an i32 in 32 bits, an f32 or
 * f64 finite (an f32 within float's range) — never a value silently wrapped or made infinite. */
int kc_program_const_ok(const char *a) {
    uint8_t b[256];
    uint32_t u;
    double f;
    if (strncmp(a, "i32:", 4) == 0) return parse_int(a + 4, INT32_MIN, INT32_MAX);
    if (strncmp(a, "i64:", 4) == 0) return parse_int(a + 4, INT64_MIN, INT64_MAX);
    if (strncmp(a, "f32:", 4) == 0) return parse_f64(a + 4, &f) && f >= -FLT_MAX && f <= FLT_MAX; /* NaN fails too */
    if (strncmp(a, "u32:", 4) == 0) return parse_u32(a + 4, &u);
    if (strncmp(a, "f64:", 4) == 0) return parse_f64(a + 4, &f) && isfinite(f);
    if (strncmp(a, "bytes:", 6) == 0) return kc_program_hex(a + 6, b) != 0;
    if (strncmp(a, "bool:", 5) == 0) return strcmp(a + 5, "true") == 0 || strcmp(a + 5, "false") == 0;
    return 1;
}

/* ---- an argument against a description, as it is added (desc.c) ---- */

static int desc_expr(const kc_graph_desc *d, const char *e, const char *what) {
    int rc = kc_expr_check(e, (const char *const *)d->symbols, d->nsymbols);
    return rc ? kc_err_prefix(rc, "graph '%s', %s", d->name, what) : KC_OK;
}

/* Where the shapes are static, an offset argument "ROLE:I+EXPR" must lie inside tensor I (scratch: its bytes);
 * `a` is the whole argument, for the message.  Symbolic sizes or offsets are checked at each call instead. */
static int check_static_offset(const kc_graph_desc *d, const char *a, const char *expr, int role, size_t idx, kc_pass pass) {
    int64_t off, n = 1, v;
    if (kc_expr_eval(expr, NULL, NULL, 0, &off) != KC_OK) return KC_OK; /* symbolic: the call checks it */
    if (off == 0) return KC_OK;
    if (role == KC_ROLE_SCRATCH) {
        for (size_t i = 0, k = 0; i < d->nscratch; i++)
            if (d->scratch[i].pass == pass && k++ == idx) {
                if (kc_expr_eval(d->scratch[i].bytes, NULL, NULL, 0, &n) != KC_OK) return KC_OK;
                break;
            }
    } else {
        const gtensor *t = NULL;
        for (size_t i = 0, k = 0; i < d->ntensors && !t; i++)
            if ((int)d->tensors[i].role == role && k++ == idx) t = &d->tensors[i];
        if (!t) return KC_OK;
        int64_t last = 0;
        for (int r = 0; r < t->rank; r++) {
            int64_t st = 0, reach;
            if (kc_expr_eval(t->sizes[r], NULL, NULL, 0, &v) != KC_OK) return KC_OK;
            if (role == KC_ROLE_INPUT && kc_expr_eval(t->strides[r], NULL, NULL, 0, &st) != KC_OK) return KC_OK;
            if (v <= 0) {
                n = 0;
                break;
            }
            if (st < 0 && __builtin_sub_overflow((int64_t)0, st, &st)) return KC_OK;
            if (__builtin_mul_overflow(n, v, &n) || __builtin_mul_overflow(v - 1, st, &reach) ||
                __builtin_add_overflow(last, reach, &last))
                return KC_OK; /* too large to matter here: the call checks it */
        }
        if (role == KC_ROLE_INPUT && n > 0 && last + 1 < n) n = last + 1;
    }
    if (off < 0 || off >= n)
        return kc_err(KC_EINVAL, "graph '%s': argument '%.64s': offset %lld is outside the tensor's %lld %s", d->name, a,
                      (long long)off, (long long)n, role == KC_ROLE_SCRATCH ? "bytes" : "elements");
    return KC_OK;
}

int kc_graph_arg_check(const kc_graph_desc *d, kc_pass pass, const char *a) {
    static const struct { const char *prefix; int role; int fwd, bwd; } kinds[] = {
        {"input:", KC_ROLE_INPUT, 1, 1},     {"output:", KC_ROLE_OUTPUT, 1, 1},
        {"saved:", KC_ROLE_SAVED, 1, 1},     {"scratch:", KC_ROLE_SCRATCH, 1, 1},
        {"grad_out:", KC_ROLE_OUTPUT, 0, 1}, {"grad_in:", KC_ROLE_INPUT, 0, 1},
    };
    if (!a) return kc_err(KC_EINVAL, "graph '%s': NULL step argument", d->name);
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++) {
        size_t pl = strlen(kinds[k].prefix);
        if (strncmp(a, kinds[k].prefix, pl) != 0) continue;
        const char *end, *off;
        kc_program_offset_split(a, pl, &end, &off);
        if (end == a + pl || end - (a + pl) > 18 || (*end && !off))
            return kc_err(KC_EINVAL, "graph '%s': bad argument '%s' (a tensor is ROLE:I or ROLE:I+EXPR)", d->name, a);
        if (!(pass == KC_PASS_FORWARD ? kinds[k].fwd : kinds[k].bwd))
            return kc_err(KC_EINVAL, "graph '%s': argument '%s' is not available in the %s pass", d->name, a,
                          pass == KC_PASS_FORWARD ? "forward" : "backward");
        size_t idx = (size_t)strtoull(a + pl, NULL, 10), have;
        have = 0;
        if (kinds[k].role == KC_ROLE_SCRATCH)
            for (size_t i = 0; i < d->nscratch; i++) have += d->scratch[i].pass == pass;
        else
            for (size_t i = 0; i < d->ntensors; i++) have += (int)d->tensors[i].role == kinds[k].role;
        if (idx >= have) return kc_err(KC_EINVAL, "graph '%s': argument '%s' names no such tensor (%zu declared)", d->name, a, have);
        if (!off) return KC_OK;
        char what[128];
        snprintf(what, sizeof what, "argument '%.80s': the offset", a);
        int rc = desc_expr(d, off, what);
        return rc ? rc : check_static_offset(d, a, off, kinds[k].role, idx, pass);
    }
    if (strcmp(a, "null") == 0) return KC_OK;
    if (strncmp(a, "arg:", 4) == 0) {
        for (size_t i = 0; i < d->nrargs; i++)
            if (strcmp(d->rargs[i].name, a + 4) == 0) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names no declared runtime argument", d->name, a);
    }
    if (strncmp(a, "u32:", 4) == 0 || strncmp(a, "f64:", 4) == 0 || strncmp(a, "bytes:", 6) == 0 ||
        strncmp(a, "bool:", 5) == 0) {
        if (kc_program_const_ok(a)) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': bad constant '%.80s' (u32: 0..4294967295; f64: a number; bytes: 1 to 256 "
                      "bytes as an even count of hex digits; bool: true or false)", d->name, a);
    }
    if (strncmp(a, "sym:", 4) == 0) {
        for (size_t i = 0; i < d->nsymbols; i++)
            if (strcmp(d->symbols[i], a + 4) == 0) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names an unknown symbol", d->name, a);
    }
    if (strcmp(a, "philox_seed") == 0 || strcmp(a, "philox_offset") == 0) return KC_OK;
    if (strncmp(a, "e32:", 4) == 0 || strncmp(a, "e64:", 4) == 0) /* an expression's value */
        return desc_expr(d, a + 4, "step argument");
    if (strncmp(a, "i32:", 4) == 0 || strncmp(a, "i64:", 4) == 0 || strncmp(a, "f32:", 4) == 0) {
        if (!kc_program_const_ok(a))
            return kc_err(KC_EINVAL, "graph '%s': bad constant '%.80s' (i32: -2147483648..2147483647; i64: 64 bits; f32: a "
                          "finite number within float's range)", d->name, a);
        return KC_OK;
    }
    return kc_err(KC_EINVAL, "graph '%s': unknown argument kind '%s'", d->name, a);
}

/* ---- an argument decoded from an entry (program.c) ---- */

int kc_program_arg_check(kc_program *p, pstep *s, size_t a) {
    const char *x = s->args[a];
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++) {
        size_t pl = strlen(tensor_kinds[k].prefix);
        if (strncmp(x, tensor_kinds[k].prefix, pl) != 0) continue;
        const char *end, *e;
        kc_program_offset_split(x, pl, &end, &e);
        if (end == x + pl || (*end && !e)) return kc_err(KC_ECORRUPT, "bad argument '%.64s'", x);
        if (!e) return KC_OK;
        p->offsets = 1;
        return kc_expr_check(e, (const char *const *)p->syms, p->nsyms);
    }
    if (strncmp(x, "arg:", 4) == 0) {
        for (size_t k = 0; k < p->nrargs; k++)
            if (strcmp(p->rargs[k].name, x + 4) == 0) return KC_OK;
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    }
    if (!kc_program_const_ok(x)) return kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
    if (strncmp(x, "bytes:", 6) == 0) {
        uint8_t b[256];
        size_t n = kc_program_hex(x + 6, b);
        if (!s->blobs && !(s->blobs = kc_calloc(s->nargs, sizeof *s->blobs))) return kc_err(KC_ENOMEM, "out of memory");
        if (!(s->blobs[a] = kc_malloc(n))) return kc_err(KC_ENOMEM, "out of memory");
        memcpy(s->blobs[a], b, n);
    }
    return KC_OK;
}

/* ---- what an argument passes, and packing a step's arguments (abi.c, run.c) ---- */

int kc_program_arg_abi(const kc_argdecl *decl, size_t ndecl, const char *x, kc_arg_abi *out) {
    /* Keep in step with kc_program_args_with below: what it packs is what this says. */
    static const struct { const char *prefix; unsigned size; int cls, pointer; } kinds[] = {
        {"input:", 8, KC_PARAM_INT, 1},  {"output:", 8, KC_PARAM_INT, 1},   {"saved:", 8, KC_PARAM_INT, 1},
        {"scratch:", 8, KC_PARAM_INT, 1}, {"grad_out:", 8, KC_PARAM_INT, 1}, {"grad_in:", 8, KC_PARAM_INT, 1},
        {"null", 8, KC_PARAM_INT, 1},
        {"philox_seed", 8, KC_PARAM_INT, 0}, {"philox_offset", 8, KC_PARAM_INT, 0},
        {"sym:", 8, KC_PARAM_INT, 0},    {"e64:", 8, KC_PARAM_INT, 0},      {"i64:", 8, KC_PARAM_INT, 0},
        {"e32:", 4, KC_PARAM_INT, 0},    {"i32:", 4, KC_PARAM_INT, 0},      {"u32:", 4, KC_PARAM_INT, 0},
        {"f32:", 4, KC_PARAM_FLOAT, 0},  {"f64:", 8, KC_PARAM_FLOAT, 0},      {"bool:", 1, KC_PARAM_INT, 0},
    };
    /* A runtime argument's type: its size and class (index = kc_arg_type). */
    static const struct { unsigned size; int cls; } types[] = {
        {0, 0}, {4, KC_PARAM_FLOAT}, {8, KC_PARAM_FLOAT}, {4, KC_PARAM_INT}, {4, KC_PARAM_INT}, {8, KC_PARAM_INT}, {8, KC_PARAM_INT},
    };
    out->pointer = 0;
    if (strncmp(x, "bytes:", 6) == 0) {
        uint8_t b[256];
        size_t n = kc_program_hex(x + 6, b);
        if (!n) return kc_err(KC_ECORRUPT, "malformed argument '%.64s'", x);
        out->size = (unsigned)n;
        out->cls = KC_PARAM_BYTES;
        return KC_OK;
    }
    if (strncmp(x, "arg:", 4) == 0) {
        for (size_t k = 0; k < ndecl; k++)
            if (strcmp(decl[k].name, x + 4) == 0 && decl[k].type >= KC_ARG_F32 && decl[k].type <= KC_ARG_U64) {
                out->size = types[decl[k].type].size;
                out->cls = types[decl[k].type].cls;
                return KC_OK;
            }
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    }
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++) {
        size_t pl = strlen(kinds[k].prefix);
        if (strncmp(x, kinds[k].prefix, pl) == 0 && (kinds[k].prefix[pl - 1] == ':' || x[pl] == '\0')) {
            out->size = kinds[k].size;
            out->cls = kinds[k].cls;
            out->pointer = kinds[k].pointer;
            return KC_OK;
        }
    }
    return kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
}

void kc_program_arg_kinds_for(unsigned size, int cls, char *buf, size_t cap) {
    /* Keep in step with kc_program_arg_abi above: each kind listed where it passes `size` bytes of a class that fits. */
    static const struct { const char *kinds; unsigned size; int cls; } fit[] = {
        {"bool:true|false", 1, KC_PARAM_INT},
        {"i32:V, u32:V, e32:EXPR, arg:NAME (i32, u32)", 4, KC_PARAM_INT},
        {"f32:V, arg:NAME (f32)", 4, KC_PARAM_FLOAT},
        {"a tensor ROLE:I[+EXPR], null, i64:V, e64:EXPR, sym:NAME, philox_seed, philox_offset, arg:NAME (i64, u64)", 8,
         KC_PARAM_INT},
        {"f64:V, arg:NAME (f64)", 8, KC_PARAM_FLOAT},
    };
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < KC_ARRAY_LEN(fit) && o < cap; i++)
        if (fit[i].size == size && (cls == KC_PARAM_ANY || cls == KC_PARAM_BYTES || fit[i].cls == cls))
            o += (size_t)snprintf(buf + o, cap - o, "%s, ", fit[i].kinds);
    if (o < cap) snprintf(buf + o, cap - o, "bytes:HEX of %u byte%s", size, size == 1 ? "" : "s");
}

int kc_program_check_values(const kc_program *p, const kc_value *v, size_t n) {
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
            return kc_err(KC_EINVAL, "runtime argument %zu '%s' is %s, a value of type %s was given", i, p->rargs[i].name,
                          kc_arg_type_str(p->rargs[i].type), kc_arg_type_str((int)v[i].type));
    return KC_OK;
}

/* How many elements (scratch: bytes) tensor `idx` of `role` spans under bound symbols, and each one's bytes.  An
 * input counts the smaller of its element count and the elements its strides reach (a broadcast input is smaller
 * than its shape); a gradient has its tensor's shape. */
static int extent(const kc_program *p, int role, size_t idx, const int64_t *syms, int64_t *n, size_t *esize) {
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

int kc_program_args(const kc_program *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                    const uint64_t *philox, kc_argval *vals, void **args) {
    return kc_program_args_with(p, i, syms, resolve, ctx, philox, NULL, vals, args);
}

int kc_program_args_with(const kc_program *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                         const uint64_t *philox, const kc_value *rvals, kc_argval *vals, void **args) {
    const pstep *s = &p->steps[i];
    for (size_t a = 0; a < s->nargs; a++) {
        const char *x = s->args[a];
        int rc = KC_OK, done = 0;
        args[a] = &vals[a];
        for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds) && !done; k++) {
            size_t pl = strlen(tensor_kinds[k].prefix);
            if (strncmp(x, tensor_kinds[k].prefix, pl) != 0) continue;
            done = 1;
            const char *end, *e;
            kc_program_offset_split(x, pl, &end, &e);
            size_t idx = (size_t)strtoull(x + pl, NULL, 10);
            rc = resolve(ctx, tensor_kinds[k].role, idx, &vals[a].ptr);
            if (rc || !e) break;
            int64_t off, n = 0;
            size_t esize = 1;
            if (!(rc = kc_program_eval(p, e, syms, &off)) && off != 0 && !(rc = extent(p, tensor_kinds[k].role, idx, syms, &n, &esize))) {
                if (off < 0 || off >= n)
                    rc = kc_err(KC_EINVAL, "'%.64s': offset %lld is outside the tensor's %lld %s", x, (long long)off,
                                (long long)n, tensor_kinds[k].role == KC_ROLE_SCRATCH ? "bytes" : "elements");
                else /* off < n, and n elements of esize bytes were sized without overflow */
                    vals[a].ptr = (void *)((uintptr_t)vals[a].ptr + (uintptr_t)off * esize);
            }
        }
        if (!done) {
            if (strcmp(x, "philox_seed") == 0 || strcmp(x, "philox_offset") == 0) {
                if (!philox) rc = kc_err(KC_EINVAL, "'%s' needs the philox wrapper and an RNG state", x);
                else vals[a].u64 = philox[x[7] == 's' ? 0 : 1];
            } else if (strcmp(x, "null") == 0) {
                vals[a].ptr = NULL;
            } else if (strncmp(x, "arg:", 4) == 0) {
                size_t k;
                for (k = 0; k < p->nrargs; k++)
                    if (strcmp(p->rargs[k].name, x + 4) == 0) break;
                if (k == p->nrargs) rc = kc_err(KC_ECORRUPT, "'%.64s' names no runtime argument", x);
                else if (!rvals) rc = kc_err(KC_EINVAL, "'%.64s' needs the call's runtime argument values", x);
                else if (rvals[k].type != p->rargs[k].type)
                    rc = kc_err(KC_EINVAL, "runtime argument '%s' is %s, a value of type %s was given", p->rargs[k].name,
                                kc_arg_type_str(p->rargs[k].type), kc_arg_type_str((int)rvals[k].type));
                else switch (p->rargs[k].type) {
                    case KC_ARG_F32: vals[a].f32 = rvals[k].v.f32; break;
                    case KC_ARG_F64: vals[a].f64 = rvals[k].v.f64; break;
                    case KC_ARG_I32: vals[a].i32 = rvals[k].v.i32; break;
                    case KC_ARG_U32: vals[a].u32 = rvals[k].v.u32; break;
                    case KC_ARG_I64: vals[a].i64 = rvals[k].v.i64; break;
                    default: vals[a].u64 = rvals[k].v.u64; break;
                    }
            } else if (strncmp(x, "bytes:", 6) == 0) {
                if (!s->blobs || !s->blobs[a]) rc = kc_err(KC_ECORRUPT, "'%.64s' was not decoded", x);
                else args[a] = s->blobs[a];
            } else if (strncmp(x, "sym:", 4) == 0) {
                size_t k;
                for (k = 0; k < p->nsyms; k++)
                    if (strcmp(p->syms[k], x + 4) == 0) break;
                if (k == p->nsyms) rc = kc_err(KC_ECORRUPT, "unknown symbol in '%s'", x);
                else vals[a].i64 = syms[k];
            } else if (strncmp(x, "e64:", 4) == 0) {
                rc = kc_program_eval(p, x + 4, syms, &vals[a].i64);
            } else if (strncmp(x, "e32:", 4) == 0) {
                int64_t v;
                rc = kc_program_eval(p, x + 4, syms, &v);
                if (!rc && (v < INT32_MIN || v > INT32_MAX)) rc = kc_err(KC_EEXPR, "'%s' = %lld does not fit 32 bits", x, (long long)v);
                vals[a].i32 = (int32_t)v;
            } else if (strncmp(x, "i32:", 4) == 0) {
                vals[a].i32 = (int32_t)strtol(x + 4, NULL, 10);
            } else if (strncmp(x, "u32:", 4) == 0) {
                if (!parse_u32(x + 4, &vals[a].u32)) rc = kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
            } else if (strncmp(x, "i64:", 4) == 0) {
                vals[a].i64 = (int64_t)strtoll(x + 4, NULL, 10);
            } else if (strncmp(x, "f32:", 4) == 0) {
                vals[a].f32 = strtof(x + 4, NULL);
            } else if (strncmp(x, "f64:", 4) == 0) {
                if (!parse_f64(x + 4, &vals[a].f64)) rc = kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
            } else if (strncmp(x, "bool:", 5) == 0) { /* one byte, 1 or 0, as C++ passes a bool */
                vals[a].u64 = 0;
                vals[a].u8 = strcmp(x + 5, "true") == 0 ? 1 : 0;
            } else {
                rc = kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
            }
        }
        if (rc) return kc_err_prefix(rc, "step %zu argument %zu", i, a);
    }
    return KC_OK;
}
