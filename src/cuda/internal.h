/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h — the driver wrappers that only libkcache itself uses: streams, events,
 * stream capture into CUDA graphs, and the allocations, copies and memsets made while capturing.
 *
 * The one idea: the public kcache/cuda.h is what a caller needs to load and launch
 * kernels and to move test data (tools/kcache/check.c, the GPU tests); these are the
 * library's own plumbing for the built-in cuda_graph wrapper and the graph part, so they
 * carry no KC_API and are not exported from the shared library.  Definitions are in
 * driver.c, behind the same KC_CU_CHECK as everything else there: a failure is a status
 * with the driver's message, never an abort.
 *
 * Who may include it: src/graph/ (cudagraph.c, run.c, loaded.c, device.c).  Must not: grow anything a
 * caller outside src/ needs — that belongs in kcache/cuda.h.
 * Every function needs a current context (kc_cuda_push) and answers KC_ENODRIVER
 * without a driver; the *_free functions accept NULL.
 */
#ifndef KC_CUDA_INTERNAL_H
#define KC_CUDA_INTERNAL_H

#include <stddef.h>

#include "kcache/cuda.h"

/** cuMemAlloc / cuMemFree: not stream-ordered (legal during a relaxed capture). */
int kc_cuda_malloc_now(void **out, size_t bytes);
void kc_cuda_free_now(void *ptr);
/** Copy device → device on `stream`, asynchronously. */
int kc_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream);
/** Set `bytes` bytes at `dst` to zero on `stream`, asynchronously (cuMemsetD8Async; a memset node when
 *  the stream is capturing).  0 bytes: nothing.  KC_EDRIVER when the driver lacks the call. */
int kc_cuda_memset_async(void *dst, size_t bytes, void *stream);
/** A non-blocking stream of the current context; free with kc_cuda_stream_free. */
int kc_cuda_stream_create(void **out);
void kc_cuda_stream_free(void *stream);
/** An event without timing; record it on a stream, make another stream wait for it. */
int kc_cuda_event_create(void **out);
void kc_cuda_event_free(void *event);
int kc_cuda_event_record(void *event, void *stream);
int kc_cuda_stream_wait(void *stream, void *event);
/** Begin capturing `stream` (relaxed mode); KC_EDRIVER when the driver has no graphs. */
int kc_cuda_capture_begin(void *stream);
/** End the capture and instantiate it: `*exec_out` is a CUgraphExec (free with kc_cuda_graph_free). */
int kc_cuda_capture_end(void *stream, void **exec_out);
/** Launch an instantiated graph on `stream`. */
int kc_cuda_graph_launch(void *exec, void *stream);
void kc_cuda_graph_free(void *exec);
/**
 * The driver's own record of parameter i of `fn` (cuFuncGetParamInfo): KC_OK with its offset
 * and size; KC_EINVAL past the last parameter; KC_MISS when the driver lacks the call (< 12.4).
 */
int kc_cuda_param_info(void *fn, size_t i, size_t *offset, size_t *size);

/**
 * kc_module_load and kc_module_function with device's primary context already current (the
 * caller's kc_cuda_push, popped after): a graph's load pushes once for all its images and kernels
 * instead of once per call ([Note: driver calls per load]).  The same statuses and messages.
 */
int kc_module_load_current(kc_module **out, int device, const void *image, size_t len);
int kc_module_function_current(kc_module *m, const char *name, void **fn_out);

/** What a device says of its limits (cuDeviceGetAttribute): the device facts of launch expressions. */
typedef struct kc_cuda_limits {
    int sm_count;              /**< MULTIPROCESSOR_COUNT */
    int max_threads_per_sm;    /**< MAX_THREADS_PER_MULTIPROCESSOR */
    int max_threads_per_block; /**< MAX_THREADS_PER_BLOCK */
    int smem_per_block;        /**< MAX_SHARED_MEMORY_PER_BLOCK: the default limit (48 KiB) */
    int smem_optin;            /**< MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: the most a function may opt in to */
    int smem_per_sm;           /**< MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    int warp_size;             /**< WARP_SIZE */
} kc_cuda_limits;
/** Read a device's limits (needs no current context). */
int kc_cuda_device_limits(int device, kc_cuda_limits *out);
/** A function's static shared memory and its current maximum dynamic shared memory (cuFuncGetAttribute). */
int kc_cuda_func_smem(void *fn, int *static_bytes, int *max_dynamic);
/** Set a function's maximum dynamic shared memory (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES). */
int kc_cuda_func_set_max_dynamic_smem(void *fn, int bytes);

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_cuda_capture_begin              internal.h  Callers: graph
 *   kc_cuda_capture_end                internal.h  Callers: graph
 *   kc_cuda_copy_async                 internal.h  Callers: graph
 *   kc_cuda_device_limits              internal.h  Callers: graph
 *   kc_cuda_event_create               internal.h  Callers: graph
 *   kc_cuda_event_free                 internal.h  Callers: graph
 *   kc_cuda_event_record               internal.h  Callers: graph
 *   kc_cuda_free_now                   internal.h  Callers: graph
 *   kc_cuda_func_set_max_dynamic_smem  internal.h  Callers: graph
 *   kc_cuda_func_smem                  internal.h  Callers: graph
 *   kc_cuda_graph_free                 internal.h  Callers: graph
 *   kc_cuda_graph_launch               internal.h  Callers: graph
 *   kc_cuda_malloc_now                 internal.h  Callers: graph
 *   kc_cuda_memset_async               internal.h  Callers: graph
 *   kc_cuda_param_info                 internal.h  Callers: graph
 *   kc_cuda_stream_create              internal.h  Callers: graph
 *   kc_cuda_stream_free                internal.h  Callers: graph
 *   kc_cuda_stream_wait                internal.h  Callers: graph
 *   kc_module_function_current         internal.h  Callers: graph
 *   kc_module_load_current             internal.h  Callers: graph
 * ---- end of the index ---- */

#endif
