/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/cuda_double.h — the control API of the CUDA driver double (libkcache_cuda_double.so),
 * for testing a runtime's integration with kcache on machines without a GPU.
 *
 * Installed with kcache: the CMake target kcache::cuda_double (link it to call the functions
 * below; $<TARGET_FILE:kcache::cuda_double> is the path for KCACHE_CUDA_DRIVER), the library
 * libkcache_cuda_double.so beside libkcache, and this header, which needs no <cuda.h>: driver
 * types appear as plain integers and pointers of the same size (a CUresult or a
 * CUdevice_attribute is an int here, a CUstream a void *), so a program may pass the driver's
 * enumerators when it has <cuda.h> or the documented numbers when it has not.
 *
 * The double is a shared library that exports the CUDA driver entry points kcache opens with
 * dlopen (KCACHE_CUDA_DRIVER=<path of the library>).  It cannot run kernels; everything else
 * it does for real: it validates images as the driver would (ELF header and SM for cubins,
 * .version and .target for PTX, the compatibility rules of plain, `a` and `f` targets),
 * resolves kernels and their parameter tables from the image, checks every launch against
 * that table and the device's limits, backs device memory with host shadow buffers so copies
 * really copy, tracks every live object, captures streams into graphs, and records what
 * happened.  Tests that use it carry the CTest label `driver-double`, never `gpu`: it proves
 * the load path and the launch ABI, never numerics.
 *
 * A test may link the library and call the functions below: the dynamic loader hands kcache's
 * later dlopen of the same file the already-loaded object, so both see one state.
 *
 * Configuration, read from the environment the first time anything needs it (cuInit or a
 * kcd_ call); the functions below change it afterwards:
 *   KCD_DEVICES         comma list of compute capabilities, one device each, optionally with
 *                       an SM count: "8.0,9.0:132" (default "9.0"; set and empty: no device)
 *   KCD_DRIVER_VERSION  what cuDriverGetVersion answers (default 13000)
 *   KCD_PTX_ISA_MAX     the newest PTX ISA the "JIT" accepts (default "9.0"); newer →
 *                       CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 *   KCD_REFUSE          "target=code,...": refuse images of that target ("sm_90", "sm_90a",
 *                       "compute_80", or "*") with that CUresult, e.g. "compute_80=222,*=200"
 *
 * Thread safety: every function here and every driver entry point may be called from any
 * thread; one mutex guards the state, and the context stack is per thread, as the driver's.
 * Strings and arrays handed out (kcd_launch) stay valid until kcd_reset().
 */
#ifndef KCACHE_CUDA_DOUBLE_PUBLIC_H
#define KCACHE_CUDA_DOUBLE_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- configuration ---- */

/** Replace the devices: a KCD_DEVICES list ("7.5,9.0:132").  0, or -1 for a bad list (nothing changes). */
int kcd_set_devices(const char *spec);

/** Set any attribute of a device (a CUdevice_attribute value; also the compute capability: 75 and 76 are
 *  its major and minor).  0, or -1 for a bad device or attribute. */
int kcd_set_attribute(int device, int attribute, int value);

/** What cuDriverGetVersion answers from now on (e.g. 12080). */
void kcd_set_driver_version(int version);

/** The newest PTX ISA accepted from now on ("8.5").  0, or -1 for a bad version. */
int kcd_set_ptx_isa_max(const char *version);

/**
 * Refuse every later load of an image of `target` ("sm_90a", "compute_80", "*" for any) with
 * `error` (e.g. CUDA_ERROR_NO_BINARY_FOR_GPU); CUDA_SUCCESS removes the rule.  A rule for the
 * exact target wins over "*".  0, or -1 when the rule table is full or the target is too long.
 */
int kcd_refuse(const char *target, int error);

/** Refuse the next `n` loads (module or library, any image) with `error` (a CUresult value); n = 0 cancels. */
void kcd_refuse_next(int n, int error);

/**
 * Forget the records: launches, the call log, defects, load and call counts, and the refusal rules.
 * Live objects (modules, memory, streams, contexts, …) and the devices stay as they are.
 */
void kcd_reset(void);

/* ---- what happened ---- */

/** One accepted kernel launch (cuLaunchKernel, or a kernel node replayed by cuGraphLaunch). */
typedef struct kcd_launch {
    const char *kernel; /**< the kernel's name (its symbol) */
    const char *target; /**< the image's target: "sm_90", "sm_90a", "compute_80", … */
    unsigned grid[3], block[3];
    unsigned shared; /**< dynamic shared memory, bytes */
    void *stream;    /**< the CUstream as passed (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a stream) */
    int device;
    int captured;                 /**< became a graph node of a stream capture: nothing "ran" */
    int replayed;                 /**< ran as a node of cuGraphLaunch */
    unsigned long long seq;       /**< the call log's line number of the call that made it */
    size_t nparams;               /**< the kernel's parameter count, from the image */
    const uint32_t *param_offset; /**< [nparams]: each parameter's offset in `args` */
    const uint32_t *param_size;   /**< [nparams]: each parameter's size, bytes */
    const unsigned char *args;    /**< the argument buffer as the kernel would see it */
    size_t args_len;              /**< the table's total size */
} kcd_launch;

/** How many launches have been recorded since the last kcd_reset(). */
size_t kcd_launch_count(void);

/** The i-th recorded launch (0 first).  0, or -1 when there is no such record. */
int kcd_launch_get(size_t i, kcd_launch *out);

/** Copy parameter i of a launch into out (at most cap bytes); returns its size, 0 when there is none. */
size_t kcd_launch_arg(const kcd_launch *l, size_t i, void *out, size_t cap);

/** Parameter i of a launch read as an unsigned integer of its size (1, 2, 4 or 8 bytes); 0 otherwise. */
uint64_t kcd_launch_arg_u64(const kcd_launch *l, size_t i);

/**
 * The call log since the last kcd_reset(): one line per call, in order ("cuModuleLoadData
 * cubin sm_90 -> m3 (2 kernels)", "cuStreamBeginCapture_v2 s5 relaxed", "cuLaunchKernel k
 * grid=…", "cuGraphLaunch x9 on s7: 3 nodes", …; a failed call ends in "-> CUDA_ERROR_…:
 * why"; a memset "cuMemsetD8Async 0x… = 0 x 400 (400 bytes) on s3", " (captured)" when it became a
 * node).  Loads, unloads, allocations, frees, copies, memsets, streams, events, captures, graphs and
 * launches are logged; context pushes and pops are not.  malloc'd: free() it.
 */
char *kcd_call_log(void);

/**
 * What is still alive: modules, libraries, allocations, streams, events, graphs and graph
 * execs (primary-context retains are not counted: see kcd_ctx_retains).  Returns how many,
 * and describes each in buf (NUL-terminated, cut to cap; buf may be NULL when cap is 0).
 */
size_t kcd_leaks(char *buf, size_t cap);

/**
 * Misuse seen since the last kcd_reset(): a double or unknown free, a copy out of an
 * allocation's bounds, a launch refused for a bad argument, use of an unloaded module's
 * function or of a destroyed stream, an unbalanced pop, a call illegal during a capture, a
 * launch argument that looks like a freed device address, …  An image the driver refuses is
 * not misuse.  Returns the count; one line per defect in buf (as kcd_leaks).
 */
size_t kcd_defects(char *buf, size_t cap);

/** Load counters since the last kcd_reset(). */
typedef struct kcd_load_stats {
    unsigned long module_loads;  /**< cuModuleLoadData that succeeded */
    unsigned long library_loads; /**< cuLibraryLoadData that succeeded */
    unsigned long refused;       /**< loads refused (bad image, wrong device, a refusal rule) */
    unsigned long module_unloads;
    unsigned long library_unloads;
} kcd_load_stats;

/** Fill *out with the load counters. */
void kcd_loads(kcd_load_stats *out);

/**
 * How many times driver entry point `entry_point` (its exported name: "cuLibraryLoadData",
 * "cuCtxPushCurrent_v2") was called since the last kcd_reset(), failed calls included; NULL: the
 * calls of every entry point together.  Unlike the call log, every call is counted (context pushes
 * and pops, attribute and parameter queries too).
 */
unsigned long kcd_calls(const char *entry_point);

/**
 * The same counts as text, one "name count" line per entry point called since the last
 * kcd_reset(), in the order each was first called (cut to cap; buf may be NULL when cap is 0).
 * Returns how many entry points were called.
 */
size_t kcd_calls_list(char *buf, size_t cap);

/** The primary context's retain count on a device (-1 for a bad device). */
int kcd_ctx_retains(int device);

/**
 * What a load of `image` (exactly `len` bytes) on `device` would answer, without loading it
 * and without recording anything: CUDA_SUCCESS (0), or the CUresult with the reason in why (may be
 * NULL).  Refusal rules are not applied.  The entry points take no length and read what the
 * image's header claims, as the driver does; this one never reads past `len`.
 */
int kcd_image_check(const void *image, size_t len, int device, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
