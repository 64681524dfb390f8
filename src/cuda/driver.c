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
 * Must not: create contexts of its own (the primary context is shared with the caller's
 * runtime), or treat an image the driver refuses as anything but a reportable error.
 */
#include "kcache/cuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "internal.h"

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
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
    const char *env = getenv("KCACHE_CUDA_DRIVER");
    const char *path = env && *env ? env : "libcuda.so.1";
    cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        snprintf(cu.why, sizeof cu.why, "no CUDA driver (%s)", dlerror());
        return;
    }
#define REQ(field, name)                                                           \
    if (!(*(void **)&cu.field = dlsym(cu.lib, name))) {                            \
        snprintf(cu.why, sizeof cu.why, "the CUDA driver lacks %s (too old)", name); \
        return;                                                                    \
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

#define KC_CU_CHECK(call)                                                                \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char *n_ = "?", *s_ = "?";                                             \
            cu.GetErrorName(r_, &n_);                                                    \
            cu.GetErrorString(r_, &s_);                                                  \
            rc = kc_err(KC_EDRIVER, "%s failed: %s (%s) (%s:%d)", #call, n_, s_, __FILE__, \
                        __LINE__);                                                       \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

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
    CUlibrary lib;  /* when cuLibraryLoadData exists */
    CUmodule mod;   /* else */
};

int kc_module_load(kc_module **out, int device, const void *image, size_t len) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!out || !image || !len) return kc_err(KC_EINVAL, "kc_module_load: bad argument");
    *out = NULL;
    kc_module *m = kc_calloc(1, sizeof *m);
    if (!m) return kc_err(KC_ENOMEM, "kc_module_load: out of memory");
    CUdevice d;
    int pushed = 0;
    KC_CU_CHECK(cu.DeviceGet(&d, device));
    KC_CU_CHECK(cu.PrimaryCtxRetain(&m->ctx, d));
    KC_CU_CHECK(cu.CtxPush(m->ctx));
    pushed = 1;
    if (cu.LibraryLoadData && cu.LibraryGetKernel && cu.LibraryUnload && cu.KernelGetFunction)
        KC_CU_CHECK(cu.LibraryLoadData(&m->lib, image, NULL, NULL, 0, NULL, NULL, 0));
    else
        KC_CU_CHECK(cu.ModuleLoadData(&m->mod, image));
    *out = m;
    m = NULL;
    rc = KC_OK;
done:
    if (pushed) {
        CUcontext c;
        cu.CtxPop(&c);
    }
    free(m);
    return rc;
}

int kc_module_function(kc_module *m, const char *name, void **fn_out) {
    int rc = cu_ready();
    if (rc) return rc;
    if (!m || !name || !fn_out) return kc_err(KC_EINVAL, "kc_module_function: bad argument");
    CUfunction f = NULL;
    KC_CU_CHECK(cu.CtxPush(m->ctx));
    if (m->lib) {
        CUkernel k;
        rc = KC_OK;
        CUresult r = cu.LibraryGetKernel(&k, m->lib, name);
        if (r == CUDA_SUCCESS) r = cu.KernelGetFunction(&f, k);
        if (r != CUDA_SUCCESS) rc = kc_err(KC_EDRIVER, "kernel '%s' not found in the loaded image", name);
    } else {
        rc = cu.ModuleGetFunction(&f, m->mod, name) == CUDA_SUCCESS
                 ? KC_OK : kc_err(KC_EDRIVER, "kernel '%s' not found in the loaded image", name);
    }
    CUcontext c;
    cu.CtxPop(&c);
    if (rc == KC_OK) *fn_out = (void *)f;
done:
    return rc;
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

int kc_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                   void *stream, void **args) {
    int rc = cu_ready();
    if (rc) return rc;
    KC_CU_CHECK(cu.LaunchKernel((CUfunction)fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                shared_bytes, (CUstream)stream, args, NULL));
    rc = KC_OK;
done:
    return rc;
}

int kc_cuda_push(int device) {
    int rc = cu_ready();
    if (rc) return rc;
    CUdevice d;
    CUcontext ctx;
    KC_CU_CHECK(cu.DeviceGet(&d, device));
    KC_CU_CHECK(cu.PrimaryCtxRetain(&ctx, d));
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
    if (bytes) KC_CU_CHECK(cu.MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                                              (CUstream)stream));
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
