/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.h — a pass's launch program, written to and decoded from an entry's FORWARD or BACKWARD section,
 * and everything about running it that needs no GPU: binding symbols from input shapes,
 * sizing tensors, evaluating launch dimensions (program.c), and the argument kinds —
 * one table of them (args.c, rows in argkind.h): spelling, checks, launch ABI — and packing
 * kernel arguments at a call (argpack.c).  The section's grammar, argument kinds included, is at
 * the top of program.c.
 *
 * Callers: graph_key.c and lookup.c (kc_program_encode), loaded.c (decode), run.c
 * (evaluate, pack), desc.c, desc_writes.c, spec_read.c and specialize.c (argument checks and
 * names), abi.c (argument ABI); nothing outside src/graph/ (tests and the fuzz harness aside).
 */
#ifndef KC_PROGRAM_H
#define KC_PROGRAM_H

#include "../common/internal.h"
#include "kcache/graph.h"

typedef struct kc_lprog kc_lprog;

typedef struct pstep {
    int kernel;
    char *grid[3], *block[3], *shared;
    char **args;
    size_t nargs;
    uint8_t **blobs; /* [nargs]: a "bytes:HEX" argument's bytes, decoded once (NULL for other kinds) */
} pstep;

/** A declared runtime argument (kc_graph_add_arg): its name and type. */
typedef struct kc_argdecl {
    char *name;
    kc_arg_type type;
} kc_argdecl;

/** At most this many runtime arguments in a description (and in a program). */
#define KC_GRAPH_MAX_ARGS 256

typedef struct ptensor {
    int role, dtype, rank, requires_grad;
    int inplace, accumulate; /* inputs: written by the graph; gradient accumulated into the caller's buffer */
    int alias;               /* outputs: the input it is, -1 when allocated */
    char *sizes[KC_MAX_RANK], *strides[KC_MAX_RANK];
} ptensor;

/* A tensor record's flags byte (program.c's grammar). */
#define KC_PT_REQUIRES_GRAD 1u
#define KC_PT_INPLACE 2u
#define KC_PT_ACCUMULATE 4u
#define KC_PT_ALIAS 8u
/** A step whose kernel index is this is a zero step: the tensor reference follows. */
#define KC_PROGRAM_ZERO_STEP 0xffffffffu
/** A step whose kernel index is this zeroes a range: the tensor reference, its offset and count follow. */
#define KC_PROGRAM_ZERO_RANGE 0xfffffffeu

/** A zero step: before kernel step `at` (= nsteps: at the pass's end), tensor role:index is zeroed — whole, or
 *  `count` elements (scratch: bytes) from element `offset` (expressions; count NULL: to the end). */
typedef struct pzero {
    size_t at;
    int role;
    size_t index;
    char *offset, *count; /* NULL, NULL: the whole tensor */
} pzero;

/**
 * A zero step's range in this call: its first byte and its bytes, within a tensor of `n` elements
 * of `esize` bytes (KC_EINVAL naming `ref` when the range is not inside it).
 */
int kc_program_zero_range(const kc_lprog *p, const pzero *z, const int64_t *syms, const char *ref, int64_t n,
                          size_t esize, size_t *first, size_t *bytes);

struct kc_lprog {
    int pass;
    char **syms;
    size_t nsyms;
    ptensor *tensors;
    size_t ntensors;
    char **scratch;
    size_t nscratch;
    pstep *steps; /* the kernel steps only (a zero step is in `zeros`, at its place among them) */
    size_t nsteps;
    pzero *zeros;
    size_t nzeros;
    kc_argdecl *rargs; /* the runtime arguments, in declaration order */
    size_t nrargs;
    int offsets;        /* a step passes a tensor at an offset: every step's arguments are packed before any launch */
    const int64_t *dev; /* the device facts (KC_DEVICE_NFACTS values, the loaded graph's: device.c), NULL until
                           bound at load — an expression using one then fails */
};

/** Whether a zero step of `pass` may name a tensor of `role` (forward: output, saved, scratch,
 *  input — an in-place one; backward: grad_in, scratch). */
int kc_program_zero_role_ok(int pass, int role);
/** A zero step's tensor reference as the program section spells it ("output:0"). */
void kc_program_zero_ref(int role, size_t index, char buf[48]);

/** Write the program section of one pass of a description (grammar in program.c). */
void kc_program_encode(const kc_graph_desc *d, kc_pass pass, kc_buf *b);

/** Decode a program section (strictly; KC_ECORRUPT on any defect). */
int kc_program_decode(const void *data, size_t len, kc_lprog **out);
void kc_lprog_free(kc_lprog *p);

/** The bytes of one element of a dtype. */
size_t kc_dtype_size(kc_dtype t);

/** The i-th tensor of a role (input, output, saved), or NULL. */
const ptensor *kc_program_tensor(const kc_lprog *p, int role, size_t i);
size_t kc_program_count(const kc_lprog *p, int role);

/**
 * Bind every symbol from the inputs' shapes and check the inputs against the program
 * (count, dtype, rank, static sizes, one value per symbol).  `vals` has nsyms slots.
 */
int kc_program_bind(const kc_lprog *p, const kc_tensor *inputs, size_t n, int64_t *vals);

/** Evaluate expression `e` of the program under bound symbols `vals` and its device facts (checked arithmetic). */
int kc_program_eval(const kc_lprog *p, const char *e, const int64_t *vals, int64_t *out);

/** Sizes and byte size of a tensor of the program under bound symbols. */
int kc_program_shape(const kc_lprog *p, const ptensor *t, const int64_t *vals, kc_tensor *out, size_t *bytes);

/** Bytes of scratch buffer i. */
int kc_program_scratch_bytes(const kc_lprog *p, size_t i, const int64_t *vals, size_t *bytes);

/** Grid, block and shared memory of step i (each checked to fit the launch limits). */
int kc_program_dims(const kc_lprog *p, size_t i, const int64_t *vals, unsigned grid[3], unsigned block[3],
                    unsigned *shared);

/* ---- the argument kinds (args.c: the table, argkind.h; argpack.c: packing at a call) ---- */

/** Where argument `arg`'s expression starts (e32:/e64:, a tensor's offset after '+'), or 0 when it has none. */
size_t kc_program_arg_expr_at(const char *arg);

/** A tensor role's prefix as arguments and zero steps spell it ("input:", …, "grad_in:"); NULL for no role. */
const char *kc_program_role_prefix(int role);
/** The role whose prefix `ref` starts with (and that prefix's length in *prefix_len), or -1. */
int kc_program_role_match(const char *ref, size_t *prefix_len);

/**
 * Check one step argument of `pass` against a description as it is added (KC_EINVAL naming the
 * graph and the argument): its kind, the tensor, symbol or runtime argument it names, an
 * offset's expression (and, where shapes are static, that it lies inside the tensor), a constant.
 */
int kc_graph_arg_check(const kc_graph_desc *d, kc_pass pass, const char *arg);

/**
 * Re-validate argument a of decoded step s (KC_ECORRUPT; the kinds that carry more than a
 * name), and decode a "bytes:HEX" once into s->blobs (KC_ENOMEM when it cannot).
 */
int kc_program_arg_check(kc_lprog *p, pstep *s, size_t a);

/** Resolve a tensor argument: its device pointer, or an error. */
typedef int (*kc_resolve_fn)(void *ctx, int role, size_t index, void **ptr);

/** One kernel argument's storage: a pointer or a scalar. */
typedef union kc_argval {
    void *ptr;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    float f32;
    double f64;
    uint64_t u64;
    uint8_t u8; /* bool:true|false */
} kc_argval;

/** What packing a step's arguments reads of the call: its bound symbols, how a tensor resolves to a device pointer,
 *  the philox {seed, offset} (NULL when the philox wrapper did not run: an argument that needs them is an error),
 *  and its runtime argument values (p->nrargs of them, checked by kc_program_check_values; NULL when the call gave
 *  none, and then an "arg:NAME" argument is an error). */
typedef struct kc_argpack {
    const int64_t *syms;
    kc_resolve_fn resolve;
    void *ctx;
    const uint64_t *philox;
    const kc_value *rvals;
} kc_argpack;

/** Fill vals[j] for each argument of step i and point args[j] at it (arrays of nargs) (argpack.c). */
int kc_program_pack(const kc_lprog *p, size_t i, const kc_argpack *in, kc_argval *vals, void **args);

/** kc_program_pack of a call without runtime argument values. */
int kc_program_args(const kc_lprog *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                    const uint64_t *philox, kc_argval *vals, void **args);

/** The count and each type of a call's runtime argument values against the declarations (KC_EINVAL naming one). */
int kc_program_check_values(const kc_lprog *p, const kc_value *v, size_t n);

/** A kc_arg_type's name ("f32", …; "unknown"), and the type of a name (0 when unknown). */
const char *kc_arg_type_str(int type);
kc_arg_type kc_arg_type_parse(const char *s);

/**
 * Split a tensor argument with an offset, "ROLE:I+EXPR": *idx_end points after the index
 * digits, *expr at EXPR (NULL when the argument has no offset).  `prefix_len` is ROLE:'s.
 */
void kc_program_offset_split(const char *arg, size_t prefix_len, const char **idx_end, const char **expr);

/** Whether a constant argument is well-formed: "u32:V" (0..4294967295), "f64:V", "bytes:HEX", "bool:true|false"; 1 for
 *  other kinds. */
int kc_program_const_ok(const char *arg);

/** Decode "bytes:HEX"'s HEX (1 to 256 bytes, an even count of hex digits) into out; the count, or 0 when malformed. */
size_t kc_program_hex(const char *hex, uint8_t out[256]);

/** One argument's launch ABI: the bytes it passes, their class (compile/params.h), and whether a pointer. */
typedef struct kc_arg_abi {
    unsigned size;
    int cls;     /* KC_PARAM_INT, KC_PARAM_FLOAT, or KC_PARAM_BYTES ("bytes:HEX": any class of its exact size) */
    int pointer; /* a tensor's or scratch buffer's device address */
} kc_arg_abi;

/**
 * The ABI of an argument as kc_program_args packs it; `decl` are the runtime arguments (an
 * "arg:NAME"'s size and class come from its declared type).  KC_ECORRUPT for an unknown kind.
 */
int kc_program_arg_abi(const kc_argdecl *decl, size_t ndecl, const char *arg, kc_arg_abi *out);

/** The argument kinds that pass `size` bytes a parameter of class `cls` takes ("bool:true|false, bytes:HEX of 1 byte"),
 *  for messages: what to write instead of an argument that does not fit. */
void kc_program_arg_kinds_for(unsigned size, int cls, char *buf, size_t cap);

#endif
