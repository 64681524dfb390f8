/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/nvrtc.h — what nvrtc.c tells other parts about the NVRTC it loads, beyond the public
 * compile.h: the targets it compiles ([Note: target check] in kcache/target.h).
 *
 * Callers: target/supported.c.  Must not: load NVRTC unless asked (`load`): a lookup that hits
 * never pays for dlopen.
 */
#ifndef KC_COMPILE_NVRTC_H
#define KC_COMPILE_NVRTC_H

#include <stddef.h>

/** Room for NVRTC's list of supported architectures. */
#define KC_NVRTC_ARCHS_MAX 64

/**
 * The compute capabilities (10 * major + minor) this host's NVRTC compiles, as
 * nvrtcGetSupportedArchs reports them: up to `cap` written to `cc`, their number in *n, and
 * NVRTC's version.  With `load` 0, only when NVRTC is loaded already.  KC_ENONVRTC (with the
 * reason) when there is no NVRTC, it is not loaded and `load` is 0, or it does not list them.
 */
int kc_nvrtc_archs_(int load, int *cc, size_t cap, size_t *n, int *major, int *minor);

#endif
