/*
 * internal.h — the driver wrappers that only libkcache itself uses: streams, events,
 * stream capture into CUDA graphs, and the allocations and copies made while capturing.
 *
 * The one idea: the public kcache/cuda.h is what a caller needs to load and launch
 * kernels and to move test data (tools/kcache/check.c, the GPU tests); these are the
 * library's own plumbing for the built-in cuda_graph wrapper and the graph part, so they
 * carry no KC_API and are not exported from the shared library.  Definitions are in
 * driver.c, behind the same KC_CU_CHECK as everything else there: a failure is a status
 * with the driver's message, never an abort.
 *
 * Who may include it: src/graph/ (cudagraph.c, run.c, loaded.c).  Must not: grow anything a
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

#endif
