/*
 * kcache/cuda.h — the CUDA driver, opened at run time, and the choice of variant.
 *
 * libcuda.so.1 is found with dlopen (KCACHE_CUDA_DRIVER overrides the path).  Without a
 * driver, or without a device, every call here that needs one returns KC_ENODRIVER with
 * a clear message, and everything else in kcache — compile, store, tools — still works:
 * a CPU-only build host prewarms for a GPU fleet.
 *
 * [Note: variant selection] On a device of compute capability X.Y the variants of an
 * entry are tried in this order: a cubin for X.Y (sm_XYa before sm_XY); a cubin for X.y
 * with y < Y, highest first (binary compatible within a major version); PTX for the
 * highest compute capability ≤ X.Y (the driver JIT-compiles it); else a miss (compile
 * for sm_XY).  An arch-specific sm_XYa cubin runs only on X.Y; a family sm_XYf cubin on
 * X.y with y ≥ Y.
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

/**
 * Choose among `n` variant names ("sm_90", "sm_90a", "compute_80") the one to load on a
 * device of capability major.minor ([Note: variant selection]).  Returns the index, or
 * KC_MISS when none fits.  Unparseable names are skipped.
 */
KC_API int kc_variant_select(const char *const *variants, size_t n, int major, int minor);

/** The variant to compile for a device of capability major.minor when nothing fits ("sm_90a" on 9.0). */
KC_API void kc_variant_for_device(int major, int minor, char out[16]);

/** A loaded module (a cuLibrary, or a cuModule on older drivers).  Opaque. */
typedef struct kc_module kc_module;

/**
 * Load a cubin or PTX image on `device` (its primary context).  A driver that refuses the
 * image (too new a toolkit, invalid image, no JIT for that PTX) gives KC_EDRIVER with the
 * driver's message, so that callers can treat it as a miss.
 */
KC_API int kc_module_load(kc_module **out, int device, const void *image, size_t len);

/** Resolve a kernel by its lowered name; the handle lives as long as the module. */
KC_API int kc_module_function(kc_module *m, const char *name, void **fn_out);

/** Unload; accepts NULL. */
KC_API void kc_module_free(kc_module *m);

/**
 * Launch `fn` (from kc_module_function) on `stream` (a CUstream; NULL for the default)
 * with `args` as cuLaunchKernel takes them.
 */
KC_API int kc_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3],
                          unsigned shared_bytes, void *stream, void **args);

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

/* ---- streams, events and CUDA graphs (used by the built-in cuda_graph wrapper) ---- */

/** cuMemAlloc / cuMemFree: not stream-ordered (legal during a relaxed capture). Context must be current. */
KC_API int kc_cuda_malloc_now(void **out, size_t bytes);
KC_API void kc_cuda_free_now(void *ptr);
/** Copy device → device on `stream`, asynchronously. */
KC_API int kc_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream);
/** A non-blocking stream of the current context; free with kc_cuda_stream_free. */
KC_API int kc_cuda_stream_create(void **out);
KC_API void kc_cuda_stream_free(void *stream);
/** An event without timing; record it on a stream, make another stream wait for it. */
KC_API int kc_cuda_event_create(void **out);
KC_API void kc_cuda_event_free(void *event);
KC_API int kc_cuda_event_record(void *event, void *stream);
KC_API int kc_cuda_stream_wait(void *stream, void *event);
/** Begin capturing `stream` (relaxed mode); KC_EDRIVER when the driver has no graphs. */
KC_API int kc_cuda_capture_begin(void *stream);
/** End the capture and instantiate it: `*exec_out` is a CUgraphExec (free with kc_cuda_graph_free). */
KC_API int kc_cuda_capture_end(void *stream, void **exec_out);
/** Launch an instantiated graph on `stream`. */
KC_API int kc_cuda_graph_launch(void *exec, void *stream);
KC_API void kc_cuda_graph_free(void *exec);

#ifdef __cplusplus
}
#endif
#endif
