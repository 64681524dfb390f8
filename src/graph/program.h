/*
 * program.h — a pass's launch program, written to and decoded from an entry's FORWARD or BACKWARD section,
 * and everything about running it that needs no GPU: binding symbols from input shapes,
 * sizing tensors, evaluating launch dimensions, packing kernel arguments.
 *
 * Callers: graph_key.c and lookup.c (kc_program_encode), loaded.c (decode), run.c
 * (evaluate); nothing outside src/graph/.
 */
#ifndef KC_PROGRAM_H
#define KC_PROGRAM_H

#include "../common/internal.h"
#include "kcache/graph.h"

typedef struct kc_program kc_program;

typedef struct pstep {
    int kernel;
    char *grid[3], *block[3], *shared;
    char **args;
    size_t nargs;
} pstep;

typedef struct ptensor {
    int role, dtype, rank, requires_grad;
    char *sizes[KC_MAX_RANK], *strides[KC_MAX_RANK];
} ptensor;

struct kc_program {
    int pass;
    char **syms;
    size_t nsyms;
    ptensor *tensors;
    size_t ntensors;
    char **scratch;
    size_t nscratch;
    pstep *steps;
    size_t nsteps;
    const int64_t *dev; /* the device facts (KC_DEVICE_NFACTS values, the loaded graph's: device.c), NULL until
                           bound at load — an expression using one then fails */
};

/** Write the program section of one pass of a description (grammar in program.c). */
void kc_program_encode(const kc_graph_desc *d, kc_pass pass, kc_buf *b);

/** Decode a program section (strictly; KC_ECORRUPT on any defect). */
int kc_program_decode(const void *data, size_t len, kc_program **out);
void kc_program_free(kc_program *p);

/** The bytes of one element of a dtype. */
size_t kc_dtype_size(kc_dtype t);

/** The i-th tensor of a role (input, output, saved), or NULL. */
const ptensor *kc_program_tensor(const kc_program *p, int role, size_t i);
size_t kc_program_count(const kc_program *p, int role);

/**
 * Bind every symbol from the inputs' shapes and check the inputs against the program
 * (count, dtype, rank, static sizes, one value per symbol).  `vals` has nsyms slots.
 */
int kc_program_bind(const kc_program *p, const kc_tensor *inputs, size_t n, int64_t *vals);

/** Sizes and byte size of a tensor of the program under bound symbols. */
int kc_program_shape(const kc_program *p, const ptensor *t, const int64_t *vals, kc_tensor *out, size_t *bytes);

/** Bytes of scratch buffer i. */
int kc_program_scratch_bytes(const kc_program *p, size_t i, const int64_t *vals, size_t *bytes);

/** Grid, block and shared memory of step i (each checked to fit the launch limits). */
int kc_program_dims(const kc_program *p, size_t i, const int64_t *vals, unsigned grid[3], unsigned block[3],
                    unsigned *shared);

/** Resolve a tensor argument: its device pointer, or an error. */
typedef int (*kc_resolve_fn)(void *ctx, int role, size_t index, void **ptr);

/** One kernel argument's storage: a pointer or a scalar. */
typedef union kc_argval {
    void *ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    uint64_t u64;
} kc_argval;

/**
 * Fill vals[j] for each argument of step i and point args[j] at it (arrays of nargs).
 * `philox` holds {seed, offset} when the philox wrapper ran, else NULL (and an argument
 * that needs them is an error).
 */
int kc_program_args(const kc_program *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                    const uint64_t *philox, kc_argval *vals, void **args);

/** One argument's launch ABI: the bytes it passes, their class (compile/params.h), and whether a pointer. */
typedef struct kc_arg_abi {
    unsigned size;
    int cls;     /* KC_PARAM_INT or KC_PARAM_FLOAT */
    int pointer; /* a tensor's or scratch buffer's device address */
} kc_arg_abi;

/** The ABI of an argument as kc_program_args packs it; KC_ECORRUPT for an unknown kind. */
int kc_program_arg_abi(const char *arg, kc_arg_abi *out);

#endif
