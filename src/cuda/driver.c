/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver.c — the CUDA driver through dlopen: availability, device capability, loading
 * images, launching kernels, memory, and the stream/event/graph wrappers the library uses
 * itself (declared in internal.h).  Which variant to load is the target part's question
 * (kcache/target.h, [Note: variant selection]), not this file's.
 *
 * The one idea: the driver is optional.  It is looked for once; when it is absent every
 * entry point answers KC_ENODRIVER with the reason, and nothing else in kcache cares.
 * Every driver call goes through KC_CU_CHECK, which records the call, its error name,
 * file and line in the last error instead of aborting.
 *
 * An image the driver refuses (cu_refusal: invalid image, no kernel image for the device, too
 * new a PTX, a kernel missing) is KC_EREFUSED, which a lookup takes as a miss; any other
 * failure is KC_EDRIVER.  Every message names the call, the driver's error name and code.
 *
 * Must not: create contexts of its own (each device's primary context, shared with the
 * caller's runtime, is retained once and held for the life of the process).
 */
#include "kcache/cuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/internal.h"
#include "internal.h"
#include "../config/config.h"

static struct {
    void *lib;
    int ndev;
    char why[512];
    __typeof__(cuInit) *Init;
    __typeof__(cuGetErrorName) *GetErrorName;
    __typeof__(cuGetErrorString) *GetErrorString;
    __typeof__(cuDeviceGetCount) *DeviceGetCount;
    __typeof__(cuDeviceGet) *DeviceGet;
    __typeof__(cuDeviceGetAttribute) *DeviceGetAttribute;
    __typeof__(cuDevicePrimaryCtxRetain) *PrimaryCtxRetain;
    __typeof__(cuCtxPushCurrent) *CtxPush;
    __typeof__(cuCtxPopCurrent) *CtxPop;
    __typeof__(cuModuleLoadData) *ModuleLoadData;
    __typeof__(cuModuleGetFunction) *ModuleGetFunction;
    __typeof__(cuModuleUnload) *ModuleUnload;
    __typeof__(cuLibraryLoadData) *LibraryLoadData; /* optional (driver >= 12.0) */
    __typeof__(cuLibraryGetKernel) *LibraryGetKernel;
    __typeof__(cuLibraryUnload) *LibraryUnload;
    __typeof__(cuKernelGetFunction) *KernelGetFunction;
    __typeof__(cuLaunchKernel) *LaunchKernel;
    __typeof__(cuMemAlloc) *MemAlloc;
    __typeof__(cuMemFree) *MemFree;
    __typeof__(cuMemAllocAsync) *MemAllocAsync; /* optional */
    __typeof__(cuMemFreeAsync) *MemFreeAsync;
    __typeof__(cuMemcpyHtoD) *MemcpyHtoD;
    __typeof__(cuMemcpyDtoH) *MemcpyDtoH;
    __typeof__(cuCtxSynchronize) *CtxSynchronize;
    __typeof__(cuMemcpyDtoDAsync) *MemcpyDtoDAsync;
    __typeof__(cuMemsetD8Async) *MemsetD8Async; /* optional: a graph's zero steps need it */
    __typeof__(cuStreamCreate) *StreamCreate;
    __typeof__(cuStreamDestroy) *StreamDestroy;
    __typeof__(cuEventCreate) *EventCreate;
    __typeof__(cuEventRecord) *EventRecord;
    __typeof__(cuEventDestroy) *EventDestroy;
    __typeof__(cuStreamWaitEvent) *StreamWaitEvent;
    __typeof__(cuStreamBeginCapture) *StreamBeginCapture; /* optional: graphs (cuda_graph wrapper) */
    __typeof__(cuStreamEndCapture) *StreamEndCapture;
    __typeof__(cuGraphInstantiateWithFlags) *GraphInstantiate;
    __typeof__(cuGraphLaunch) *GraphLaunch;
    __typeof__(cuGraphExecDestroy) *GraphExecDestroy;
    __typeof__(cuGraphDestroy) *GraphDestroy;
    __typeof__(cuFuncGetParamInfo) *FuncGetParamInfo; /* optional (driver >= 12.4) */
    __typeof__(cuFuncLoad) *FuncLoad;                 /* optional (driver >= 12.4) */
    __typeof__(cuFuncGetAttribute) *FuncGetAttribute; /* optional: large dynamic shared memory */
    __typeof__(cuFuncSetAttribute) *FuncSetAttribute;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
    const char *env = kc_config_process()->v.cuda_driver;
    const char *path = env && *env ? env : "libcuda.so.1";
    cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(cu.why, sizeof cu.why, "no CUDA driver (%s)", dlerror());
        return;
    }
#define REQ(field, name)                                                             \
    if (!(*(void **)&cu.field = dlsym(cu.lib, name))) {                              \
        snprintf(cu.why, sizeof cu.why, "the CUDA driver lacks %s (too old)", name); \
        return;                                                                      \
    }
#define OPT(field, name) (*(void **)&cu.field = dlsym(cu.lib, name))
    REQ(Init, "cuInit");
    REQ(GetErrorName, "cuGetErrorName");
    REQ(GetErrorString, "cuGetErrorString");
    REQ(DeviceGetCount, "cuDeviceGetCount");
    REQ(DeviceGet, "cuDeviceGet");
    REQ(DeviceGetAttribute, "cuDeviceGetAttribute");
    REQ(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    REQ(CtxPush, "cuCtxPushCurrent_v2");
    REQ(CtxPop, "cuCtxPopCurrent_v2");
    REQ(ModuleLoadData, "cuModuleLoadData");
    REQ(ModuleGetFunction, "cuModuleGetFunction");
    REQ(ModuleUnload, "cuModuleUnload");
    REQ(LaunchKernel, "cuLaunchKernel");
    REQ(MemAlloc, "cuMemAlloc_v2");
    REQ(MemFree, "cuMemFree_v2");
    REQ(MemcpyHtoD, "cuMemcpyHtoD_v2");
    REQ(MemcpyDtoH, "cuMemcpyDtoH_v2");
    REQ(CtxSynchronize, "cuCtxSynchronize");
    REQ(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    REQ(StreamCreate, "cuStreamCreate");
    REQ(StreamDestroy, "cuStreamDestroy_v2");
    REQ(EventCreate, "cuEventCreate");
    REQ(EventRecord, "cuEventRecord");
    REQ(EventDestroy, "cuEventDestroy_v2");
    REQ(StreamWaitEvent, "cuStreamWaitEvent");
    OPT(StreamBeginCapture, "cuStreamBeginCapture_v2");
    OPT(StreamEndCapture, "cuStreamEndCapture");
    OPT(GraphInstantiate, "cuGraphInstantiateWithFlags");
    OPT(GraphLaunch, "cuGraphLaunch");
    OPT(GraphExecDestroy, "cuGraphExecDestroy");
    OPT(GraphDestroy, "cuGraphDestroy");
    OPT(MemAllocAsync, "cuMemAllocAsync");
    OPT(MemFreeAsync, "cuMemFreeAsync");
    OPT(LibraryLoadData, "cuLibraryLoadData");
    OPT(LibraryGetKernel, "cuLibraryGetKernel");
    OPT(LibraryUnload, "cuLibraryUnload");
    OPT(KernelGetFunction, "cuKernelGetFunction");
    OPT(FuncGetParamInfo, "cuFuncGetParamInfo");
    OPT(FuncLoad, "cuFuncLoad");
    OPT(FuncGetAttribute, "cuFuncGetAttribute");
    OPT(FuncSetAttribute, "cuFuncSetAttribute");
    OPT(MemsetD8Async, "cuMemsetD8Async");
#undef REQ
#undef OPT
    CUresult r = cu.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        cu.GetErrorName(r, &name);
        snprintf(cu.why, sizeof cu.why, "the CUDA driver did not initialise: %s", name);
        return;
    }
    if (cu.DeviceGetCount(&cu.ndev) != CUDA_SUCCESS || cu.ndev == 0) {
        cu.ndev = 0;
        snprintf(cu.why, sizeof cu.why, "the CUDA driver sees no device");
        return;
    }
    cu.why[0] = '\0';
}

static int cu_ready(void) {
    pthread_once(&cu_once, cu_load);
    if (cu.ndev > 0) return KC_OK;
    return kc_err(KC_ENODRIVER, "%s; compile-only work (prewarm, store, tools) still works", cu.why);
}

/* A failed driver call as a status: its name, the driver's error name, code and text, and where. */
static int cu_fail(CUresult r, int status, const char *call, const char *file, int line) {
    const char *n = "?", *s = "?", *src = strstr(file, "src/");
    cu.GetErrorName(r, &n);
    cu.GetErrorString(r, &s);
    /* "cu.LibraryLoadData(&m->lib, …)" is said as the driver's name for it: cuLibraryLoadData. */
    int member = strncmp(call, "cu.", 3) == 0;
    if (member) call += 3;
    return kc_err(status, "%s%.*s failed: %s (%d: %s) (%s:%d)", member ? "cu" : "", (int)strcspn(call, "("), call, n,
                  (int)r, s, src ? src + 4 : file, line);
}

#define KC_CU_CHECK(call)                                            \
    do {                                                             \
        CUresult r_ = (call);                                        \
        if (r_ != CUDA_SUCCESS) {                                    \
            rc = cu_fail(r_, KC_EDRIVER, #call, __FILE__, __LINE__); \
            goto done;                                               \
        }                                                            \
    } while (0)

/*
 * Whether an error says "this image is not for this driver or device" — the driver refusing
 * what it was given, which a lookup answers by trying the next variant or compiling — rather
 * than trouble with the context, memory or the device, which no other image would cure.
 */
static int cu_refusal(CUresult r) {
    switch (r) {
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_NOT_FOUND: return 1;
    default: return 0;
    }
}

#define KC_CU_LOAD(call)                                                                            \
    do {                                                                                            \
        CUresult r_ = (call);                                                                       \
        if (r_ != CUDA_SUCCESS) {                                                                   \
            rc = cu_fail(r_, cu_refusal(r_) ? KC_EREFUSED : KC_EDRIVER, #call, __FILE__, __LINE__); \
            goto done;                                                                              \
        }                                                                                           \
    } while (0)

/*
 * The primary context of each device, retained once for the life of the process (the caller's
 * runtime shares it; releasing it while modules live would destroy them).
 */
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext *ctxs;

static int primary_ctx(int device, CUcontext *out) {
    int rc = KC_OK;
    if (device < 0 || device >= cu.ndev) return kc_err(KC_EINVAL, "no CUDA device %d (there are %d)", device, cu.ndev);
    pthread_mutex_lock(&ctx_mu);
    if (!ctxs && !(ctxs = kc_calloc((size_t)cu.ndev, sizeof *ctxs))) rc = kc_err(KC_ENOMEM, "out of memory");
    if (!rc && !ctxs[device]) {
        CUdevice d;
        KC_CU_CHECK(cu.DeviceGet(&d, device));
        KC_CU_CHECK(cu.PrimaryCtxRetain(&ctxs[device], d));
    }
    if (!rc) *out = ctxs[device];
done:
    pthread_mutex_unlock(&ctx_mu);
    return rc;
}

int kc_cuda_available(void) { return cu_ready(); }

int kc_cuda_device_count(void) {
    pthread_once(&cu_once, cu_load);
    return cu.ndev;
}

int kc_cuda_capability(int device, int *major, int *minor) {
    int rc = cu_ready();
    if (rc) return rc;
    if (device < 0 || device >= cu.ndev || !major || !minor)
        return kc_err(KC_EINVAL, "no CUDA device %d (there are %d)", device, cu.ndev);
    CUdevice d;
    KC_CU_CHECK(cu.DeviceGet(&d, device));
    KC_CU_CHECK(cu.DeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d));
    rc = KC_OK;
done:
    return rc;
}

/* ---- modules ---- */

struct kc_module {
    CUcontext ctx;
    CUlibrary lib; /* when cuLibraryLoadData exists */
    CUmodule mod;  /* else */
};

/*
 * The loads proper, with the device's primary context already current (kc_cuda_push): a graph's
 * load pushes it once for all its images and kernels (loaded.c), the public kc_module_load and
 * kc_module_function once per call.  [Note: driver calls per load] One cuLibraryLoadData per
 * image; per kernel cuLibraryGetKernel, cuKernelGetFunction and cuFuncLoad — no other call.
 */
int kc_module_load_current(kc_module **out, int device, const void *image, size_t len) {
    if (out) *out = NULL; /* on every failure too */
    int rc = cu_ready();
    if (rc) return rc;
    if (!out || !image || !len) return kc_err(KC_EINVAL, "kc_module_load: bad argument");
    kc_module *m = kc_calloc(1, sizeof *m);
    if (!m) return kc_err(KC_ENOMEM, "kc_module_load: out of memory");
    if ((rc = primary_ctx(device, &m->ctx))) goto done; /* retained once: no driver call after the first */
    if (cu.LibraryLoadData && cu.LibraryGetKernel && cu.LibraryUnload && cu.KernelGetFunction)
        KC_CU_LOAD(cu.LibraryLoadData(&m->lib, image, NULL, NULL, 0, NULL, NULL, 0));
    else KC_CU_LOAD(cu.ModuleLoadData(&m->mod, image));
    *out = m;
    m = NULL;
    rc = KC_OK;
done:
    free(m);
    return rc;
}

int kc_module_function_current(kc_module *m, const char *name, void **fn_out) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!m || !name || !fn_out) return kc_err(KC_EINVAL, "kc_module_function: bad argument");
    CUfunction f = NULL;
    CUkernel k;
    if (m->lib) {
        KC_CU_LOAD(cu.LibraryGetKernel(&k, m->lib, name));
        KC_CU_LOAD(cu.KernelGetFunction(&f, k));
    } else {
        KC_CU_LOAD(cu.ModuleGetFunction(&f, m->mod, name));
    }
    /* Under lazy loading (the default since CUDA 12.2) a library is only read at load and a
     * function handed out unloaded: an image the device cannot run would be refused at the
     * first launch, inside the caller's step.  Loading it now makes that refusal a miss here —
     * and it is where the driver really loads the code onto the device, the cost a load pays. */
    if (cu.FuncLoad) KC_CU_LOAD(cu.FuncLoad(f));
    *fn_out = (void *)f;
done:
    if (rc) kc_err_prefix(rc, "kernel '%s'", name);
    return rc;
}

int kc_module_load(kc_module **out, int device, const void *image, size_t len) {
    if (out) *out = NULL; /* on every failure too */
    int rc = cu_ready();
    if (rc) return rc;
    if (!out || !image || !len) return kc_err(KC_EINVAL, "kc_module_load: bad argument");
    if ((rc = kc_cuda_push(device))) return rc;
    rc = kc_module_load_current(out, device, image, len);
    kc_cuda_pop();
    return rc;
}

int kc_module_function(kc_module *m, const char *name, void **fn_out) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!m || !name || !fn_out) return kc_err(KC_EINVAL, "kc_module_function: bad argument");
    KC_CU_CHECK(cu.CtxPush(m->ctx));
    rc = kc_module_function_current(m, name, fn_out);
    CUcontext c;
    cu.CtxPop(&c);
done:
    return rc;
}

int kc_cuda_param_info(void *fn, size_t i, size_t *offset, size_t *size) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!cu.FuncGetParamInfo) return KC_MISS;
    CUresult r = cu.FuncGetParamInfo((CUfunction)fn, i, offset, size);
    if (r == CUDA_ERROR_INVALID_VALUE) return KC_EINVAL; /* past the last parameter */
    if (r != CUDA_SUCCESS) return cu_fail(r, KC_EDRIVER, "cuFuncGetParamInfo", __FILE__, __LINE__);
    return KC_OK;
}

void kc_module_free(kc_module *m) {
    if (!m) return;
    if (cu.ndev > 0) {
        if (cu.CtxPush(m->ctx) == CUDA_SUCCESS) {
            if (m->lib) cu.LibraryUnload(m->lib);
            if (m->mod) cu.ModuleUnload(m->mod);
            CUcontext c;
            cu.CtxPop(&c);
        }
    }
    free(m);
}

int kc_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes, void *stream,
                   void **args) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.LaunchKernel((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes,
                                (CUstream)stream, args, NULL));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_push(int device) {
    int rc = cu_ready();
    if (rc) return rc;
    CUcontext ctx;
    if ((rc = primary_ctx(device, &ctx))) goto done;
    KC_CU_CHECK(cu.CtxPush(ctx));
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_pop(void) {
    CUcontext c;
    if (cu.ndev > 0) cu.CtxPop(&c);
}

int kc_cuda_malloc(void **out, size_t bytes, void *stream) {
    if (out) *out = NULL; /* on every failure too */
    int rc = cu_ready();
    if (rc) return rc;
    CUdeviceptr p = 0;
    if (bytes == 0) bytes = 1;
    if (cu.MemAllocAsync) KC_CU_CHECK(cu.MemAllocAsync(&p, bytes, (CUstream)stream));
    else KC_CU_CHECK(cu.MemAlloc(&p, bytes));
    *out = (void *)(uintptr_t)p;
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_free(void *ptr, void *stream) {
    if (!ptr || cu.ndev <= 0) return;
    if (cu.MemFreeAsync) cu.MemFreeAsync((CUdeviceptr)(uintptr_t)ptr, (CUstream)stream);
    else cu.MemFree((CUdeviceptr)(uintptr_t)ptr);
}

int kc_cuda_copy_to_device(void *dst, const void *src, size_t bytes) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_copy_to_host(void *dst, const void *src, size_t bytes) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_synchronize(void) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.CtxSynchronize());
    rc = KC_OK;
done:
    return rc;
}

/* ---- the library's own wrappers (internal.h) ---- */

int kc_cuda_malloc_now(void **out, size_t bytes) {
    if (out) *out = NULL; /* on every failure too */
    int rc = cu_ready();
    if (rc) return rc;
    CUdeviceptr p = 0;
    KC_CU_CHECK(cu.MemAlloc(&p, bytes ? bytes : 1));
    *out = (void *)(uintptr_t)p;
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_free_now(void *ptr) {
    if (ptr && cu.ndev > 0) cu.MemFree((CUdeviceptr)(uintptr_t)ptr);
}

int kc_cuda_copy_async(void *dst, const void *src, size_t bytes, void *stream) {
    int rc = cu_ready();
    if (rc) return rc;
    if (bytes)
        KC_CU_CHECK(
            cu.MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, (CUstream)stream));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_memset_async(void *dst, size_t bytes, void *stream) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!bytes) return KC_OK;
    if (!cu.MemsetD8Async) return kc_err(KC_EDRIVER, "the CUDA driver lacks cuMemsetD8Async (a zero step needs it)");
    KC_CU_CHECK(cu.MemsetD8Async((CUdeviceptr)(uintptr_t)dst, 0, bytes, (CUstream)stream));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_stream_create(void **out) {
    int rc = cu_ready();
    if (rc) return rc;
    CUstream s;
    KC_CU_CHECK(cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
    *out = s;
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_stream_free(void *stream) {
    if (stream && cu.ndev > 0) cu.StreamDestroy((CUstream)stream);
}

int kc_cuda_event_create(void **out) {
    int rc = cu_ready();
    if (rc) return rc;
    CUevent e;
    KC_CU_CHECK(cu.EventCreate(&e, CU_EVENT_DISABLE_TIMING));
    *out = e;
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_event_free(void *event) {
    if (event && cu.ndev > 0) cu.EventDestroy((CUevent)event);
}

int kc_cuda_event_record(void *event, void *stream) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.EventRecord((CUevent)event, (CUstream)stream));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_stream_wait(void *stream, void *event) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.StreamWaitEvent((CUstream)stream, (CUevent)event, 0));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_capture_begin(void *stream) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!cu.StreamBeginCapture || !cu.StreamEndCapture || !cu.GraphInstantiate || !cu.GraphLaunch)
        return kc_err(KC_EDRIVER, "the CUDA driver has no stream capture (CUDA graphs)");
    /* Relaxed: the capturing code may call cuMemAlloc (the cuda_graph wrapper's pool). */
    KC_CU_CHECK(cu.StreamBeginCapture((CUstream)stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_capture_end(void *stream, void **exec_out) {
    int rc = cu_ready();
    if (rc) return rc;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    *exec_out = NULL;
    KC_CU_CHECK(cu.StreamEndCapture((CUstream)stream, &graph));
    KC_CU_CHECK(cu.GraphInstantiate(&exec, graph, 0));
    *exec_out = exec;
    rc = KC_OK;
done:
    if (graph) cu.GraphDestroy(graph);
    return rc;
}

int kc_cuda_graph_launch(void *exec, void *stream) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.GraphLaunch((CUgraphExec)exec, (CUstream)stream));
    rc = KC_OK;
done:
    return rc;
}

void kc_cuda_graph_free(void *exec) {
    if (exec && cu.ndev > 0) cu.GraphExecDestroy((CUgraphExec)exec);
}

int kc_cuda_device_limits(int device, kc_cuda_limits *out) {
    int rc = cu_ready();
    if (rc) return rc;
    if (device < 0 || device >= cu.ndev || !out)
        return kc_err(KC_EINVAL, "no CUDA device %d (there are %d)", device, cu.ndev);
    CUdevice d;
    KC_CU_CHECK(cu.DeviceGet(&d, device));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->max_threads_per_sm, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->smem_per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, d));
    KC_CU_CHECK(cu.DeviceGetAttribute(&out->warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE, d));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_func_smem(void *fn, int *static_bytes, int *max_dynamic) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!cu.FuncGetAttribute) return kc_err(KC_EDRIVER, "the CUDA driver lacks cuFuncGetAttribute");
    KC_CU_CHECK(cu.FuncGetAttribute(static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, (CUfunction)fn));
    KC_CU_CHECK(cu.FuncGetAttribute(max_dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (CUfunction)fn));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_func_set_max_dynamic_smem(void *fn, int bytes) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!cu.FuncSetAttribute) return kc_err(KC_EDRIVER, "the CUDA driver lacks cuFuncSetAttribute");
    KC_CU_CHECK(cu.FuncSetAttribute((CUfunction)fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
    rc = KC_OK;
done:
    return rc;
}
