/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expr.c — launch expressions: parse and evaluate with checked arithmetic.
 *
 *   expr   := term (('+' | '-') term)*
 *   term   := factor ('*' factor)*
 *   factor := INT | NAME | FUNC '(' expr ',' expr ')' | '(' expr ')' | '-' factor
 *   FUNC   := floordiv | ceildiv | min | max | mod
 *
 * The one idea: one recursive-descent pass both validates (symbols checked against a list,
 * values ignored) and evaluates; every operation is checked (__builtin_*_overflow, division
 * by zero, INT64_MIN / -1), and the first failure stops the pass with a reason.  Division
 * rounds toward negative infinity (as Python's //), and mod takes the sign of the divisor.
 *
 * Device facts (device_sm_count, …: device.c names them) are reserved names every expression
 * knows without their being in its symbol list: checking accepts them (unless told they are
 * not allowed there), and evaluating takes their values from `dev` — an expression that uses
 * one with no device bound fails, it never reads an unset value.
 *
 * Callers: desc.c (checks each expression as a description is built), program.c
 * (re-checks when an entry is decoded, evaluates at run time) and specialize.c (rewrites the
 * symbols of an expression with kc_expr_subst: the parser finds them, so a symbol is never
 * matched inside a longer name or a function's name).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "kcache/graph.h"
#include "graph_internal.h"

typedef struct ep {
    const char *s, *p;
    const char *const *names;
    const int64_t *vals;
    size_t n;
    int validate; /* symbols only checked, values are 1 */
    /* When set (with validate): every symbol reference is handed here instead of being looked
     * up, in the order it appears (kc_expr_subst rewrites them). */
    void (*on_symbol)(struct ep *e, const char *at, size_t len);
    void *ctx;
    int depth;
    int err;
    char msg[160];
    const int64_t *dev; /* the device facts' values (KC_DEVICE_NFACTS); NULL: no device bound */
    int nodev;          /* a device fact is an error here */
} ep;

static int64_t fail(ep *e, const char *what) {
    if (!e->err) {
        e->err = 1;
        snprintf(e->msg, sizeof e->msg, "%s at offset %d", what, (int)(e->p - e->s));
    }
    return 0;
}

static void ws(ep *e) {
    while (*e->p == ' ' || *e->p == '\t') e->p++;
}

static int64_t expr(ep *e);

static int64_t fdiv(ep *e, int64_t a, int64_t b) {
    if (b == 0) return fail(e, "division by zero");
    if (a == INT64_MIN && b == -1) return fail(e, "overflow");
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

static int64_t call(ep *e, const char *name, size_t len) {
    static const char *const funcs[] = {"floordiv", "ceildiv", "min", "max", "mod"};
    size_t f;
    for (f = 0; f < KC_ARRAY_LEN(funcs); f++)
        if (strlen(funcs[f]) == len && strncmp(funcs[f], name, len) == 0) break;
    if (f == KC_ARRAY_LEN(funcs)) return fail(e, "unknown function");
    e->p++; /* '(' */
    int64_t a = expr(e);
    ws(e);
    if (*e->p != ',') return fail(e, "expected ','");
    e->p++;
    int64_t b = expr(e);
    ws(e);
    if (*e->p != ')') return fail(e, "expected ')'");
    e->p++;
    if (e->err) return 0;
    if (e->validate && (f == 0 || f == 1 || f == 4)) return 1; /* divisors unknown: no check */
    switch (f) {
    case 0: return fdiv(e, a, b);
    case 1: {
        if (b == 0) return fail(e, "division by zero");
        if (a == INT64_MIN) return fail(e, "overflow");
        int64_t q = fdiv(e, -a, b);
        if (q == INT64_MIN) return fail(e, "overflow");
        return -q;
    }
    case 2: return a < b ? a : b;
    case 3: return a > b ? a : b;
    default: {
        int64_t q = fdiv(e, a, b), m;
        if (e->err) return 0;
        if (__builtin_mul_overflow(q, b, &m) || __builtin_sub_overflow(a, m, &m)) return fail(e, "overflow");
        return m;
    }
    }
}

/* A decimal integer. */
static int64_t number(ep *e) {
    int64_t v = 0;
    while (*e->p >= '0' && *e->p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *e->p - '0', &v))
            return fail(e, "integer too large");
        e->p++;
    }
    return v;
}

/* A symbol's value (1 when validating), or a device fact's. */
static int64_t symbol(ep *e, const char *start, size_t len) {
    size_t i;
    for (i = 0; i < e->n; i++)
        if (strlen(e->names[i]) == len && strncmp(e->names[i], start, len) == 0) break;
    int f = i == e->n ? kc_device_fact(start, len) : -1;
    if (i < e->n) return e->validate ? 1 : e->vals[i];
    if (f < 0) return fail(e, "unknown symbol");
    if (e->nodev) return fail(e, "a device fact is not allowed here");
    if (e->validate) return 1;
    if (!e->dev) return fail(e, "a device fact with no device bound");
    return e->dev[f];
}

static int ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A name: a function's call, or a symbol (told to on_symbol, when set, and then worth 1). */
static int64_t name(ep *e) {
    const char *start = e->p;
    while (ident_char(*e->p)) e->p++;
    size_t len = (size_t)(e->p - start);
    ws(e);
    if (*e->p == '(') return call(e, start, len);
    if (e->on_symbol) {
        e->on_symbol(e, start, len);
        return 1;
    }
    return symbol(e, start, len);
}

static int64_t factor(ep *e) {
    ws(e);
    if (++e->depth > 64) return fail(e, "expression nested too deeply");
    int64_t v = 0;
    char c = *e->p;
    if (c == '(') {
        e->p++;
        v = expr(e);
        ws(e);
        if (*e->p != ')') v = fail(e, "expected ')'");
        else e->p++;
    } else if (c == '-') {
        e->p++;
        int64_t x = factor(e);
        if (x == INT64_MIN) v = fail(e, "overflow");
        else v = -x;
    } else if (c >= '0' && c <= '9') {
        v = number(e);
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
        v = name(e);
    } else {
        v = fail(e, c ? "unexpected character" : "unexpected end");
    }
    e->depth--;
    return v;
}

static int64_t term(ep *e) {
    int64_t v = factor(e);
    for (;;) {
        ws(e);
        if (*e->p != '*' || e->err) return v;
        e->p++;
        int64_t r = factor(e);
        if (!e->validate && __builtin_mul_overflow(v, r, &v)) return fail(e, "overflow");
    }
}

static int64_t expr(ep *e) {
    int64_t v = term(e);
    for (;;) {
        ws(e);
        char c = *e->p;
        if ((c != '+' && c != '-') || e->err) return v;
        e->p++;
        int64_t r = term(e);
        if (e->validate) continue;
        if (c == '+' ? __builtin_add_overflow(v, r, &v) : __builtin_sub_overflow(v, r, &v)) return fail(e, "overflow");
    }
}

static int run(const char *s, const char *const *names, const int64_t *vals, size_t n, int validate, int64_t *out,
               const int64_t *dev, int nodev) {
    if (!s) return kc_err(KC_EEXPR, "expression is NULL");
    ep e = {s, s, names, vals, n, validate, NULL, NULL, 0, 0, "", dev, nodev};
    int64_t v = expr(&e);
    ws(&e);
    if (!e.err && *e.p) fail(&e, "unexpected character");
    if (e.err) return kc_err(KC_EEXPR, "expression '%.100s': %s", s, e.msg);
    if (out) *out = v;
    return KC_OK;
}

int kc_expr_check(const char *s, const char *const *names, size_t n) {
    return run(s, names, NULL, n, 1, NULL, NULL, 0);
}

int kc_expr_check_nodev(const char *s, const char *const *names, size_t n) {
    return run(s, names, NULL, n, 1, NULL, NULL, 1);
}

int kc_expr_eval(const char *s, const char *const *names, const int64_t *values, size_t n, int64_t *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_expr_eval: out is NULL");
    return run(s, names, values, n, 0, out, NULL, 0);
}

int kc_expr_eval_dev(const char *s, const char *const *names, const int64_t *values, size_t n, const int64_t *dev,
                     int64_t *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_expr_eval: out is NULL");
    return run(s, names, values, n, 0, out, dev, 0);
}

/* kc_expr_subst's state: the output so far and how much of the input is copied into it. */
typedef struct subst {
    kc_buf out;
    const char *copied; /* the input up to here is in `out` */
    const char *const *names, *const *repl;
    size_t n;
} subst;

static void subst_symbol(ep *e, const char *at, size_t len) {
    subst *x = e->ctx;
    for (size_t i = 0; i < x->n; i++) {
        if (strlen(x->names[i]) != len || strncmp(x->names[i], at, len) != 0) continue;
        kc_buf_put(&x->out, x->copied, (size_t)(at - x->copied));
        kc_buf_put(&x->out, x->repl[i], strlen(x->repl[i]));
        x->copied = at + len;
        return;
    }
}

int kc_expr_subst(const char *s, const char *const *names, const char *const *repl, size_t n, char **out) {
    *out = NULL;
    if (!s) return kc_err(KC_EEXPR, "expression is NULL");
    subst x = {{NULL, 0, 0, 0}, s, names, repl, n};
    ep e = {s, s, NULL, NULL, 0, 1, subst_symbol, &x, 0, 0, "", NULL, 0};
    expr(&e);
    ws(&e);
    if (!e.err && *e.p) fail(&e, "unexpected character");
    if (e.err) {
        kc_buf_free(&x.out);
        return kc_err(KC_EEXPR, "expression '%.100s': %s", s, e.msg);
    }
    kc_buf_put(&x.out, x.copied, strlen(x.copied));
    if (x.out.failed) {
        kc_buf_free(&x.out);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    *out = kc_buf_take_str(&x.out); /* frees the buffer when it fails */
    return *out ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
}
