/* SPDX-License-Identifier: Apache-2.0 */
/*
 * params.h — a kernel's parameter table as the compiler produced it: read from a cubin's
 * `.nv.info.<kernel>` section (EIATTR_KPARAM_INFO: ordinal, offset, size of each parameter)
 * or from a PTX image's `.entry <kernel>(...)` parameter list (types, `.align`, arrays;
 * offsets laid out by the PTX ABI).
 *
 * The one idea: the table is what the driver will copy into the kernel's parameter bank,
 * so it is the only authority on how a launch's arguments must look.  kcache reads it on a
 * CPU-only host, right after NVRTC, to check every launch step against it (src/graph/abi.c)
 * before anything is stored.  Images are untrusted bytes: every offset, length and count is
 * bounds-checked, and anything that cannot be read with certainty is KC_ECORRUPT — never a
 * guess.
 *
 * Callers: src/graph/ (the launch-ABI check at compile and at load); tests and the fuzz
 * target.  Must not: load anything, or accept a table it could not read whole.
 */
#ifndef KC_PARAMS_H
#define KC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/** At most this many parameters in one kernel (the parameter bank is at most 32764 bytes). */
#define KC_PARAMS_MAX 4096
/** At most this many bytes of parameters (CUDA 12.1+'s limit on Volta and newer). */
#define KC_PARAMS_MAX_BYTES 32764u

/** What a parameter is, as far as the image says. */
typedef enum kc_param_class {
    KC_PARAM_ANY = 0,   /**< unknown (a cubin says only offset and size) */
    KC_PARAM_INT = 1,   /**< PTX .u/.s/.b 8..64 (a pointer is a 64-bit integer here) */
    KC_PARAM_FLOAT = 2, /**< PTX .f16/.f32/.f64 */
    KC_PARAM_BYTES = 3  /**< PTX .b8 array: a struct, a bf16/half, any aggregate passed by value */
} kc_param_class;

/** One parameter, in declaration order. */
typedef struct kc_param {
    uint32_t offset; /**< bytes from the start of the parameter buffer */
    uint32_t size;   /**< bytes */
    uint32_t align;  /**< PTX: the declared or natural alignment; cubin: 0 (not recorded) */
    uint8_t cls;     /**< kc_param_class */
} kc_param;

/** A kernel's parameter table.  `v` is malloc'd (NULL when n == 0); free with kc_params_free. */
typedef struct kc_params {
    kc_param *v;
    size_t n;
    uint32_t total; /**< bytes of the parameter buffer: end of the last parameter (0 when none) */
} kc_params;

/**
 * The parameter table of kernel `lowered` (its symbol, as NVRTC lowered it) in `image`: a cubin
 * (is_ptx 0) or PTX text (is_ptx 1; `len` may include a terminating NUL).  KC_ECORRUPT when the
 * image is malformed, the kernel is not in it, or its table cannot be read whole; KC_ENOMEM.
 * Parameters come out sorted by ordinal, contiguous from 0, non-overlapping.
 */
int kc_params_read(const void *image, size_t len, int is_ptx, const char *lowered, kc_params *out);

/**
 * Whether `lowered` names a kernel of `image` (a cubin: an entry function symbol; PTX: an `.entry`):
 * 1 yes, 0 no (a __device__ variable, a device function, nothing by that name), KC_ECORRUPT when a
 * cubin is malformed.  What kc_params_read may be asked for; a variable has no parameter table.
 */
int kc_params_is_kernel(const void *image, size_t len, int is_ptx, const char *lowered);

/** Free a table's storage (not the struct); accepts a zeroed table. */
void kc_params_free(kc_params *p);

#endif
