/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.c — the argument kinds of a launch step: the one table of them, and how each is spelled, checked,
 * and passed.
 *
 * A step argument is a string (program.c's grammar lists every kind: a tensor "ROLE:I", the same
 * at an offset "ROLE:I+EXPR", null, sym:, e32:/e64:, the constants i32: u32: i64: f32: f64: bool: bytes:,
 * arg:NAME, philox_seed/philox_offset).  Each kind is one row of `kinds` below (argkind.h says what a row
 * holds): its spelling, the tensor role it names, the passes it may appear in and whose zero steps may
 * name it, what follows the spelling, its launch ABI, how messages list it, its constant's check, and its
 * pack function (argpack.c).  This file reads the table for the check of an argument against a
 * description as it is added (kc_graph_arg_check, for desc.c), its re-validation once decoded from an
 * entry (kc_program_arg_check, for program.c), its launch ABI and the kinds that fit a parameter
 * (kc_program_arg_abi, kc_program_arg_kinds_for, for abi.c), and the tensor roles' spellings (spec.c,
 * program.c's zero steps); specialize.c reads it for which bodies are expressions.
 *
 * The one idea: one kind, one row — what the description accepts, what the decoder re-validates, what
 * the ABI check says is passed and what the packer writes are read from the same row, so adding a kind
 * is one row (and, for a new body, one pack function).  An offset is checked to lie inside its tensor
 * when the shapes are static (at description time) and at each call before any launch (argpack.c).
 *
 * Callers: desc.c, spec.c, specialize.c, program.c, abi.c and argpack.c, declared in program.h and
 * argkind.h; nothing outside src/graph/ (tests and the fuzz harness aside).  Must not: launch, allocate
 * device memory, pack a call's values (argpack.c), or decode a section — program.c reads the bytes, this
 * file judges the arguments.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../compile/params.h"
#include "argkind.h"
#include "graph_internal.h"

/* ---- the runtime arguments' types: name and launch ABI (index = kc_arg_type) ---- */

static const struct {
    const char *name;
    unsigned size;
    int cls;
} arg_types[] = {
    {NULL, 0, 0},
    {"f32", 4, KC_PARAM_FLOAT},
    {"f64", 8, KC_PARAM_FLOAT},
    {"i32", 4, KC_PARAM_INT},
    {"u32", 4, KC_PARAM_INT},
    {"i64", 8, KC_PARAM_INT},
    {"u64", 8, KC_PARAM_INT},
};

const char *kc_arg_type_str(int t) { return t >= KC_ARG_F32 && t <= KC_ARG_U64 ? arg_types[t].name : "unknown"; }

kc_arg_type kc_arg_type_parse(const char *s) {
    for (int t = KC_ARG_F32; s && t <= KC_ARG_U64; t++)
        if (strcmp(s, arg_types[t].name) == 0) return (kc_arg_type)t;
    return (kc_arg_type)0;
}

/* ---- the constants' parsers ---- */

size_t kc_program_hex(const char *h, uint8_t out[256]) {
    size_t n = strnlen(h, 513);
    if (n == 0 || n % 2 || n > 512) return 0;
    for (size_t i = 0; i < n; i += 2) {
        int hi = kc_hexval(h[i]), lo = kc_hexval(h[i + 1]);
        if (hi < 0 || lo < 0) return 0;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

/* "u32:V": decimal digits only, 0..4294967295. */
int kc_arg_parse_u32(const char *s, uint32_t *out) {
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
int kc_arg_parse_f64(const char *s, double *out) {
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

/* Each constant's check: an i32 in 32 bits, an f32 or f64 finite (an f32 within float's range) — never a
 * value silently wrapped or made infinite. */
static int ok_i32(const char *s) { return parse_int(s, INT32_MIN, INT32_MAX); }
static int ok_i64(const char *s) { return parse_int(s, INT64_MIN, INT64_MAX); }
static int ok_u32(const char *s) {
    uint32_t u;
    return kc_arg_parse_u32(s, &u);
}
static int ok_f32(const char *s) {
    double f;
    return kc_arg_parse_f64(s, &f) && f >= -FLT_MAX && f <= FLT_MAX;
} /* NaN fails too */
static int ok_f64(const char *s) {
    double f;
    return kc_arg_parse_f64(s, &f) && isfinite(f);
}
static int ok_bool(const char *s) { return strcmp(s, "true") == 0 || strcmp(s, "false") == 0; }
static int ok_bytes(const char *s) {
    uint8_t b[256];
    return kc_program_hex(s, b) != 0;
}

/* ---- the table ---- */

/* What a description's message says a well-formed constant is, by family. */
static const char hint_u[] =
    "(u32: 0..4294967295; f64: a number; bytes: 1 to 256 bytes as an even count of hex digits; "
    "bool: true or false)";
static const char hint_i[] = "(i32: -2147483648..2147483647; i64: 64 bits; f32: a finite number within float's range)";

#define FWD KC_AK_FWD
#define BWD KC_AK_BWD
#define INT KC_PARAM_INT
#define FLT KC_PARAM_FLOAT
#define TENSOR(sp, role, counts, passes, zero, doc) \
    { sp, role, counts, passes, zero, KC_AB_TENSOR, 8, INT, 1, doc, NULL, NULL, kc_pack_tensor }
#define PLAIN(sp, body, size, cls, doc, pack) \
    { sp, -1, -1, FWD | BWD, 0, body, size, cls, 0, doc, NULL, NULL, pack }
#define CONST(sp, size, cls, doc, ok, hint, pack) \
    { sp, -1, -1, FWD | BWD, 0, KC_AB_CONST, size, cls, 0, doc, ok, hint, pack }

/* The order of the rows is the order messages list the kinds that fit a parameter (kc_program_arg_kinds_for):
 * within each size and class, as listed here; matching does not depend on it (no spelling is another's prefix). */
static const kc_argkind kinds[] = {
    TENSOR("input:", KC_ROLE_INPUT, KC_ROLE_INPUT, FWD | BWD, FWD, "a tensor ROLE:I[+EXPR]"),
    TENSOR("output:", KC_ROLE_OUTPUT, KC_ROLE_OUTPUT, FWD | BWD, FWD, NULL),
    TENSOR("saved:", KC_ROLE_SAVED, KC_ROLE_SAVED, FWD | BWD, FWD, NULL),
    TENSOR("scratch:", KC_ROLE_SCRATCH, KC_ROLE_SCRATCH, FWD | BWD, FWD | BWD, NULL),
    TENSOR("grad_out:", KC_ROLE_GRAD_OUT, KC_ROLE_OUTPUT, BWD, 0, NULL),
    TENSOR("grad_in:", KC_ROLE_GRAD_IN, KC_ROLE_INPUT, BWD, BWD, NULL),
    {"null", -1, -1, FWD | BWD, 0, KC_AB_NONE, 8, INT, 1, "null", NULL, NULL, kc_pack_null},
    CONST("i64:", 8, INT, "i64:V", ok_i64, hint_i, kc_pack_i64),
    PLAIN("e64:", KC_AB_EXPR, 8, INT, "e64:EXPR", kc_pack_e64),
    PLAIN("sym:", KC_AB_SYM, 8, INT, "sym:NAME", kc_pack_sym),
    PLAIN("philox_seed", KC_AB_NONE, 8, INT, "philox_seed", kc_pack_philox_seed),
    PLAIN("philox_offset", KC_AB_NONE, 8, INT, "philox_offset", kc_pack_philox_offset),
    CONST("i32:", 4, INT, "i32:V", ok_i32, hint_i, kc_pack_i32),
    CONST("u32:", 4, INT, "u32:V", ok_u32, hint_u, kc_pack_u32),
    PLAIN("e32:", KC_AB_EXPR, 4, INT, "e32:EXPR", kc_pack_e32),
    CONST("f32:", 4, FLT, "f32:V", ok_f32, hint_i, kc_pack_f32),
    CONST("f64:", 8, FLT, "f64:V", ok_f64, hint_u, kc_pack_f64),
    CONST("bool:", 1, INT, "bool:true|false", ok_bool, hint_u, kc_pack_bool), /* one byte, 1 or 0: a C++ bool */
    {"bytes:", -1, -1, FWD | BWD, 0, KC_AB_BYTES, 0, KC_PARAM_BYTES, 0, NULL, ok_bytes, hint_u, kc_pack_bytes},
    PLAIN("arg:", KC_AB_RARG, 0, 0, NULL, kc_pack_rarg), /* its size and class: its declared type's */
};

#undef FWD
#undef BWD
#undef INT
#undef FLT
#undef TENSOR
#undef PLAIN
#undef CONST

const kc_argkind *kc_argkind_of(const char *x) {
    for (size_t k = 0; x && k < KC_ARRAY_LEN(kinds); k++) {
        size_t pl = strlen(kinds[k].spelling);
        if (strncmp(x, kinds[k].spelling, pl) == 0 && (kinds[k].spelling[pl - 1] == ':' || x[pl] == '\0'))
            return &kinds[k];
    }
    return NULL;
}

const kc_argkind *kc_argkind_table(size_t *n) {
    *n = KC_ARRAY_LEN(kinds);
    return kinds;
}

const kc_argkind *kc_argkind_role(int role) {
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++)
        if (kinds[k].body == KC_AB_TENSOR && kinds[k].role == role) return &kinds[k];
    return NULL;
}

/* ---- tensor roles: their spellings, and zero steps ---- */

const char *kc_program_role_prefix(int role) {
    const kc_argkind *k = kc_argkind_role(role);
    return k ? k->spelling : NULL;
}

int kc_program_role_match(const char *ref, size_t *prefix_len) {
    const kc_argkind *k = kc_argkind_of(ref);
    if (!k || k->body != KC_AB_TENSOR) return -1;
    *prefix_len = strlen(k->spelling);
    return k->role;
}

static unsigned pass_bit(int pass) {
    return pass == KC_PASS_FORWARD ? KC_AK_FWD : pass == KC_PASS_BACKWARD ? KC_AK_BWD : 0;
}

int kc_program_zero_role_ok(int pass, int role) {
    const kc_argkind *k = kc_argkind_role(role);
    return k && (k->zero_passes & pass_bit(pass)) != 0;
}

/* ---- spellings: offsets and constants ---- */

void kc_program_offset_split(const char *arg, size_t prefix_len, const char **idx_end, const char **expr) {
    const char *q = arg + prefix_len;
    while (*q >= '0' && *q <= '9') q++;
    *idx_end = q;
    *expr = *q == '+' ? q + 1 : NULL;
}

int kc_program_const_ok(const char *a) {
    const kc_argkind *k = kc_argkind_of(a);
    return k && k->ok ? k->ok(a + strlen(k->spelling)) : 1;
}

size_t kc_program_arg_expr_at(const char *a) {
    const kc_argkind *k = kc_argkind_of(a);
    if (!k) return 0;
    size_t pl = strlen(k->spelling);
    if (k->body == KC_AB_EXPR) return pl;
    if (k->body != KC_AB_TENSOR) return 0;
    const char *end, *e;
    kc_program_offset_split(a, pl, &end, &e);
    return e ? (size_t)(e - a) : 0;
}

/* ---- an argument against a description, as it is added (desc.c) ---- */

static int desc_expr(const kc_graph_desc *d, const char *e, const char *what) {
    int rc = kc_expr_check(e, (const char *const *)d->symbols, d->nsymbols);
    return rc ? kc_err_prefix(rc, "graph '%s', %s", d->name, what) : KC_OK;
}

/* The elements a static tensor spans (an input: the fewer of its elements and what its strides reach), or 0 (*n
 * untouched) when a size or stride is symbolic or too large to matter here. */
static int static_elements(const gtensor *t, int input, int64_t *out) {
    int64_t n = 1, v, last = 0;
    for (int r = 0; r < t->rank; r++) {
        int64_t st = 0, reach;
        if (kc_expr_eval(t->sizes[r], NULL, NULL, 0, &v) != KC_OK) return 0;
        if (input && kc_expr_eval(t->strides[r], NULL, NULL, 0, &st) != KC_OK) return 0;
        if (v <= 0) {
            n = 0;
            break;
        }
        if (st < 0 && __builtin_sub_overflow((int64_t)0, st, &st)) return 0;
        if (__builtin_mul_overflow(n, v, &n) || __builtin_mul_overflow(v - 1, st, &reach) ||
            __builtin_add_overflow(last, reach, &last))
            return 0; /* too large to matter here: the call checks it */
    }
    if (input && n > 0 && last + 1 < n) n = last + 1;
    *out = n;
    return 1;
}

/* Where the shapes are static, an offset argument "ROLE:I+EXPR" must lie inside tensor I (scratch: its bytes);
 * `a` is the whole argument, for the message.  Symbolic sizes or offsets are checked at each call instead. */
static int check_static_offset(const kc_graph_desc *d, const char *a, const char *expr, int role, size_t idx,
                               kc_pass pass) {
    int64_t off, n = 1;
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
        if (!t || !static_elements(t, role == KC_ROLE_INPUT, &n)) return KC_OK;
    }
    if (off < 0 || off >= n)
        return kc_err(KC_EINVAL, "graph '%s': argument '%.64s': offset %lld is outside the tensor's %lld %s", d->name,
                      a, (long long)off, (long long)n, role == KC_ROLE_SCRATCH ? "bytes" : "elements");
    return KC_OK;
}

/* A tensor argument "ROLE:I[+EXPR]" of row k in `pass`. */
static int desc_tensor(const kc_graph_desc *d, kc_pass pass, const char *a, const kc_argkind *k) {
    size_t pl = strlen(k->spelling);
    const char *end, *off;
    kc_program_offset_split(a, pl, &end, &off);
    if (end == a + pl || end - (a + pl) > 18 || (*end && !off))
        return kc_err(KC_EINVAL, "graph '%s': bad argument '%s' (a tensor is ROLE:I or ROLE:I+EXPR)", d->name, a);
    if (!(k->passes & pass_bit((int)pass)))
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' is not available in the %s pass", d->name, a,
                      pass == KC_PASS_FORWARD ? "forward" : "backward");
    size_t idx = (size_t)strtoull(a + pl, NULL, 10), have = 0;
    if (k->tensors == KC_ROLE_SCRATCH)
        for (size_t i = 0; i < d->nscratch; i++) have += d->scratch[i].pass == pass;
    else
        for (size_t i = 0; i < d->ntensors; i++) have += (int)d->tensors[i].role == k->tensors;
    if (idx >= have)
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names no such tensor (%zu declared)", d->name, a, have);
    if (!off) return KC_OK;
    char what[128];
    snprintf(what, sizeof what, "argument '%.80s': the offset", a);
    int rc = desc_expr(d, off, what);
    return rc ? rc : check_static_offset(d, a, off, k->tensors, idx, pass);
}

int kc_graph_arg_check(const kc_graph_desc *d, kc_pass pass, const char *a) {
    if (!a) return kc_err(KC_EINVAL, "graph '%s': NULL step argument", d->name);
    const kc_argkind *k = kc_argkind_of(a);
    const char *body = k ? a + strlen(k->spelling) : NULL;
    switch (k ? (int)k->body : -1) {
    case KC_AB_TENSOR: return desc_tensor(d, pass, a, k);
    case KC_AB_NONE: return KC_OK;
    case KC_AB_RARG:
        for (size_t i = 0; i < d->nrargs; i++)
            if (strcmp(d->rargs[i].name, body) == 0) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names no declared runtime argument", d->name, a);
    case KC_AB_SYM:
        for (size_t i = 0; i < d->nsymbols; i++)
            if (strcmp(d->symbols[i], body) == 0) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names an unknown symbol", d->name, a);
    case KC_AB_EXPR: return desc_expr(d, body, "step argument"); /* an expression's value */
    case KC_AB_CONST:
    case KC_AB_BYTES:
        if (k->ok(body)) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': bad constant '%.80s' %s", d->name, a, k->hint);
    default: return kc_err(KC_EINVAL, "graph '%s': unknown argument kind '%s'", d->name, a);
    }
}

/* ---- an argument decoded from an entry (program.c) ---- */

int kc_program_arg_check(kc_lprog *p, pstep *s, size_t a) {
    const char *x = s->args[a];
    const kc_argkind *k = kc_argkind_of(x);
    const char *body = k ? x + strlen(k->spelling) : NULL;
    switch (k ? (int)k->body : -1) {
    case KC_AB_TENSOR: {
        const char *end, *e;
        kc_program_offset_split(x, strlen(k->spelling), &end, &e);
        if (end == body || (*end && !e)) return kc_err(KC_ECORRUPT, "bad argument '%.64s'", x);
        if (!e) return KC_OK;
        p->offsets = 1;
        return kc_expr_check(e, (const char *const *)p->syms, p->nsyms);
    }
    case KC_AB_RARG:
        for (size_t i = 0; i < p->nrargs; i++)
            if (strcmp(p->rargs[i].name, body) == 0) return KC_OK;
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    case KC_AB_CONST: return k->ok(body) ? KC_OK : kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
    case KC_AB_BYTES: {
        uint8_t b[256];
        size_t n = kc_program_hex(body, b);
        if (!n) return kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
        if (!s->blobs && !(s->blobs = kc_calloc(s->nargs, sizeof *s->blobs))) return kc_err(KC_ENOMEM, "out of memory");
        if (!(s->blobs[a] = kc_malloc(n))) return kc_err(KC_ENOMEM, "out of memory");
        memcpy(s->blobs[a], b, n);
        return KC_OK;
    }
    default: return KC_OK; /* an unknown kind is refused by the ABI check at load, and by the packer */
    }
}

/* ---- what an argument passes (abi.c) ---- */

int kc_program_arg_abi(const kc_argdecl *decl, size_t ndecl, const char *x, kc_arg_abi *out) {
    const kc_argkind *k = kc_argkind_of(x);
    out->pointer = 0;
    if (!k) return kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
    if (k->body == KC_AB_BYTES) {
        uint8_t b[256];
        size_t n = kc_program_hex(x + strlen(k->spelling), b);
        if (!n) return kc_err(KC_ECORRUPT, "malformed argument '%.64s'", x);
        out->size = (unsigned)n;
        out->cls = KC_PARAM_BYTES;
        return KC_OK;
    }
    if (k->body == KC_AB_RARG) {
        for (size_t i = 0; i < ndecl; i++)
            if (strcmp(decl[i].name, x + strlen(k->spelling)) == 0 && decl[i].type >= KC_ARG_F32 &&
                decl[i].type <= KC_ARG_U64) {
                out->size = arg_types[decl[i].type].size;
                out->cls = arg_types[decl[i].type].cls;
                return KC_OK;
            }
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    }
    out->size = k->size;
    out->cls = k->cls;
    out->pointer = k->pointer;
    return KC_OK;
}

/* Append "S, " to buf at *o while it fits (what snprintf would, truncated). */
static void list_put(char *buf, size_t cap, size_t *o, const char *s) {
    if (*o < cap) *o += (size_t)snprintf(buf + *o, cap - *o, "%s, ", s);
}

/* The kinds of one size and class, as messages list them: the table's rows in order, then "arg:NAME (types)". */
static void kinds_of(unsigned size, int cls, char *buf, size_t cap, size_t *o) {
    char rt[64];
    size_t r = 0;
    for (int t = KC_ARG_F32; t <= KC_ARG_U64; t++)
        if (arg_types[t].size == size && arg_types[t].cls == cls)
            r += (size_t)snprintf(rt + r, sizeof rt - r, "%s%s", r ? ", " : "arg:NAME (", arg_types[t].name);
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++)
        if (kinds[k].doc && kinds[k].size == size && kinds[k].cls == cls) list_put(buf, cap, o, kinds[k].doc);
    if (r) snprintf(rt + r, sizeof rt - r, ")"), list_put(buf, cap, o, rt);
}

void kc_program_arg_kinds_for(unsigned size, int cls, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (int c = KC_PARAM_INT; c <= KC_PARAM_FLOAT; c++)
        if (cls == KC_PARAM_ANY || cls == KC_PARAM_BYTES || c == cls) kinds_of(size, c, buf, cap, &o);
    if (o < cap) snprintf(buf + o, cap - o, "bytes:HEX of %u byte%s", size, size == 1 ? "" : "s");
}
