/* SPDX-License-Identifier: Apache-2.0 */
/*
 * argkind.h — the one table of step-argument kinds and tensor roles (args.c holds its rows).
 *
 * A step argument is a string; what comes before its body names its kind ("input:", "e32:", "null").  Every
 * part that reads an argument reads this table: the description's check and the decoder's re-check and the
 * launch ABI (args.c), packing at a call (argpack.c), specializing (specialize.c: which body is an
 * expression), JSON specs (spec_read.c: a tensor reference), zero steps (program.c, desc_writes.c: which roles
 * a pass may zero), and the known devices' check of expression arguments (device.c).  Adding a kind is one
 * row in args.c (and, for a new body, its pack function in argpack.c).
 *
 * Callers: args.c, argpack.c, specialize.c, device.c (the rows), and through program.h's functions spec_read.c,
 * program.c, desc.c and desc_writes.c; tests/graph/test_args.c checks the table's own rules.  Nothing outside
 * src/graph/.
 */
#ifndef KC_ARGKIND_H
#define KC_ARGKIND_H

#include "program.h"

/** What follows a kind's spelling. */
typedef enum kc_argbody {
    KC_AB_TENSOR, /* "I" or "I+EXPR": a tensor of the row's role (at an offset) */
    KC_AB_NONE,   /* nothing: the spelling is the whole argument ("null", "philox_seed") */
    KC_AB_SYM,    /* a symbol's name */
    KC_AB_EXPR,   /* an expression over the symbols */
    KC_AB_CONST,  /* a constant, checked by the row's `ok` */
    KC_AB_BYTES,  /* hex digits: bytes passed by value */
    KC_AB_RARG    /* a declared runtime argument's name */
} kc_argbody;

/** A pass's bit in a row's `passes` and `zero_passes`. */
#define KC_AK_FWD 1u
#define KC_AK_BWD 2u

typedef struct kc_argkind kc_argkind;

/** One argument being packed at a call (argpack.c). */
typedef struct kc_packarg {
    const kc_lprog *p;
    const pstep *s;
    size_t a;             /* the argument's index in step s */
    const kc_argpack *in; /* the call's symbols, resolver, philox state and runtime values */
    const kc_argkind *k;  /* its row */
    const char *x;        /* the whole argument */
    const char *rest;     /* its body: x after the spelling */
} kc_packarg;

/** Write argument `pa` into *v, or point *arg elsewhere (bytes:). */
typedef int (*kc_pack_fn)(const kc_packarg *pa, kc_argval *v, void **arg);

struct kc_argkind {
    const char *spelling; /* a prefix ending in ':' ("input:"), or the whole argument ("null") */
    int role;             /* the tensor role it names (KC_ROLE_*), or -1 */
    int tensors;          /* the role whose tensors its index counts at description time (grad_in: inputs), or -1 */
    unsigned passes;      /* KC_AK_FWD | KC_AK_BWD: the passes a step may pass it in */
    unsigned zero_passes; /* the passes whose zero steps may name its tensor (tensor roles only) */
    kc_argbody body;
    unsigned size;   /* launch ABI: the bytes it passes (0: its own — bytes:HEX, arg:NAME) */
    int cls;         /* their class (compile/params.h) */
    int pointer;     /* a device address */
    const char *doc; /* how messages spell it ("i32:V"), in the lists of what fits a parameter; NULL: not listed */
    int (*ok)(const char *body); /* KC_AB_CONST, KC_AB_BYTES: whether the body is well formed */
    const char *hint;            /* KC_AB_CONST, KC_AB_BYTES: what the description's message says is well formed */
    kc_pack_fn pack;
};

/** The row of argument `arg` (a prefix row whose spelling it starts with, or an exact one), or NULL. */
const kc_argkind *kc_argkind_of(const char *arg);
/** The table itself: its rows, *n of them (for tests and the lists messages make). */
const kc_argkind *kc_argkind_table(size_t *n);
/** The row of tensor role `role`, or NULL. */
const kc_argkind *kc_argkind_role(int role);

/* ---- pack functions, one per body (argpack.c) ---- */
int kc_pack_tensor(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_null(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_philox_seed(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_philox_offset(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_sym(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_e32(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_e64(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_i32(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_u32(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_i64(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_f32(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_f64(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_bool(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_bytes(const kc_packarg *pa, kc_argval *v, void **arg);
int kc_pack_rarg(const kc_packarg *pa, kc_argval *v, void **arg);

/* ---- the constants' parsers (args.c), shared with the packer ---- */
int kc_arg_parse_u32(const char *s, uint32_t *out);
int kc_arg_parse_f64(const char *s, double *out);

#endif
