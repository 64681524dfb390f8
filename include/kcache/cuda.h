/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/cuda.h — the CUDA driver, opened at run time: devices, modules, launches, memory.
 *
 * libcuda.so.1 is found with dlopen (KCACHE_CUDA_DRIVER overrides the path).  Without a
 * driver, or without a device, every call here that needs one returns KC_ENODRIVER with
 * a clear message, and everything else in kcache — compile, store, tools — still works:
 * a CPU-only build host prewarms for a GPU fleet.
 *
 * Which variant a device loads is not decided here: see kcache/target.h and its
 * [Note: variant selection] (kc_target_candidates, kc_variant_select).  The stream, event
 * and CUDA-graph wrappers the library uses for itself are not part of this API.
 */
#ifndef KCACHE_CUDA_H
#define KCACHE_CUDA_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** KC_OK when a driver and at least one device are present, else KC_ENODRIVER (message says why). */
KC_API int kc_cuda_available(void);

/** The number of devices (0 without a driver). */
KC_API int kc_cuda_device_count(void);

/** A device's compute capability.  KC_ENODRIVER, or KC_EINVAL for a bad ordinal. */
KC_API int kc_cuda_capability(int device, int *major, int *minor);

/** A loaded module (a cuLibrary, or a cuModule on older drivers).  Opaque. */
typedef struct kc_module kc_module;

/**
 * Load a cubin or PTX image on `device` (its primary context, retained once per process).  A
 * driver that refuses the image (too new a toolkit, an invalid image, no kernel image for the
 * device, no JIT for that PTX) gives KC_EREFUSED, so that callers can treat it as a miss; other
 * driver failures give KC_EDRIVER.  The message names the driver's error name and code.
 */
KC_API int kc_module_load(kc_module **out, int device, const void *image, size_t len);

/** Resolve a kernel by its lowered name; the handle lives as long as the module.  KC_EREFUSED when absent. */
KC_API int kc_module_function(kc_module *m, const char *name, void **fn_out);

/** Unload; accepts NULL. */
KC_API void kc_module_free(kc_module *m);

/**
 * Launch `fn` (from kc_module_function) on `stream` (a CUstream; NULL for the default)
 * with `args` as cuLaunchKernel takes them.
 */
KC_API int kc_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                          void *stream, void **args);

/** Make device's primary context current on this thread (pair with kc_cuda_pop). */
KC_API int kc_cuda_push(int device);
/** Undo kc_cuda_push. */
KC_API void kc_cuda_pop(void);

/** Allocate device memory on `stream` (stream-ordered when the driver has it). Context must be current. */
KC_API int kc_cuda_malloc(void **out, size_t bytes, void *stream);
/** Free memory from kc_cuda_malloc on `stream`; accepts NULL. Context must be current. */
KC_API void kc_cuda_free(void *ptr, void *stream);
/** Copy host → device / device → host, synchronously. Context must be current. */
KC_API int kc_cuda_copy_to_device(void *dst, const void *src, size_t bytes);
KC_API int kc_cuda_copy_to_host(void *dst, const void *src, size_t bytes);
/** Wait for all work of the current context. */
KC_API int kc_cuda_synchronize(void);

#ifdef __cplusplus
}
#endif
#endif
