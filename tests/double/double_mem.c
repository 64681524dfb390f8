/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_mem.c — the driver double's memory, streams, events and stream-capture state:
 * cuMemAlloc/cuMemAllocAsync/cuMemFree/cuMemFreeAsync, the copies and memsets (cuMemsetD8Async,
 * cuMemsetD32Async), cuStreamCreate/Destroy/
 * Synchronize/WaitEvent, cuEventCreate/Record/Destroy, cuStreamBeginCapture/EndCapture, and
 * the checks every other entry point makes on a stream argument.
 *
 * The one idea: device memory is a range of fake addresses (256-aligned, from a non-canonical
 * range no host pointer can have, never reused, with a gap after each allocation) backed by a
 * host shadow buffer, so copies really copy and every copy is checked against the one
 * allocation it must lie in; a free of anything but a live allocation's start is a defect.
 * Work on a stream runs at once (there is nothing to overlap), except on a capturing stream,
 * where kernels, copies and memsets become nodes of the capture instead; a capture ends in a graph
 * only if nothing illegal happened during it, as in the driver (a forbidden call invalidates
 * the capture, and cuStreamEndCapture then answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
 *
 * Simplifications, said out loud: cuMemAllocAsync/cuMemFreeAsync on a capturing stream act
 * at once (no allocation nodes); a stream that joins a capture through cuStreamWaitEvent
 * leaves it when the capture ends (no UNJOINED check); the per-thread default stream cannot
 * be captured.  Who calls it: kcache and tests through the entry points; double_launch.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define DEV_BASE 0x0dd0000000000000ULL
#define DEV_SPAN 0x0010000000000000ULL
#define DEV_GAP 4096u
#define MEM_LIMIT ((size_t)4 << 30) /* host bytes the shadows may take */
#define FREED_RING 1024

static kcd_alloc *allocs;
static size_t nallocs, capallocs, live_bytes;
static uint64_t next_addr = DEV_BASE + 0x100000;
static uint64_t freed[FREED_RING];
static size_t nfreed;
static kcd_capture **caps;
static size_t ncaps, capcaps;

static const char *mode_name(int m) { return m == 0 ? "global" : m == 1 ? "thread-local" : "relaxed"; }

/* ---- allocations ---- */

int kcd_is_devptr(uint64_t p) { return p >= DEV_BASE && p < DEV_BASE + DEV_SPAN; }

kcd_alloc *kcd_alloc_find(uint64_t p, size_t n) {
    for (size_t i = 0; i < nallocs; i++) {
        kcd_alloc *a = &allocs[i];
        if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
    }
    return NULL;
}

static CUresult alloc(const char *call, CUdeviceptr *dptr, size_t bytes, int device, int async) {
    if (!dptr || !bytes) return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s", dptr ? "0 bytes" : "dptr is NULL");
    if (bytes > MEM_LIMIT - live_bytes)
        return kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "%zu bytes (%zu live; the double's limit is %zu)", bytes,
                        live_bytes, MEM_LIMIT);
    if (nallocs == capallocs) {
        size_t cap = capallocs ? 2 * capallocs : 64;
        kcd_alloc *v = realloc(allocs, cap * sizeof *v);
        if (!v) return kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of host memory");
        allocs = v, capallocs = cap;
    }
    unsigned char *shadow = calloc(1, bytes);
    if (!shadow) return kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "no host memory for a %zu-byte shadow", bytes);
    uint64_t base = next_addr;
    next_addr += ((uint64_t)bytes + 255) / 256 * 256 + DEV_GAP;
    allocs[nallocs++] = (kcd_alloc){base, bytes, shadow, device, async};
    live_bytes += bytes;
    *dptr = base;
    return CUDA_SUCCESS;
}

static CUresult release(const char *call, CUdeviceptr p) {
    for (size_t i = 0; i < nallocs; i++)
        if (allocs[i].base == p) {
            free(allocs[i].shadow);
            live_bytes -= allocs[i].size;
            allocs[i] = allocs[--nallocs];
            freed[nfreed++ % FREED_RING] = p;
            return CUDA_SUCCESS;
        }
    for (size_t i = 0; i < FREED_RING && i < nfreed; i++)
        if (freed[i] == p)
            return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%#llx: freed already (double free)",
                            (unsigned long long)p);
    kcd_alloc *in = kcd_alloc_find(p, 0);
    if (in)
        return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%#llx is inside the allocation at %#llx, not its start",
                        (unsigned long long)p, (unsigned long long)in->base);
    return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%#llx was never allocated", (unsigned long long)p);
}

size_t kcd_alloc_leaks(char *buf, size_t cap, size_t *off) {
    for (size_t i = 0; i < nallocs && buf; i++) {
        if (*off >= cap) break;
        int n = snprintf(buf + *off, cap - *off, "allocation %#llx (%zu bytes%s)\n", (unsigned long long)allocs[i].base,
                         allocs[i].size, allocs[i].async ? ", stream-ordered" : "");
        if (n > 0) *off = *off + (size_t)n < cap ? *off + (size_t)n : cap - 1;
    }
    return nallocs;
}

size_t kcd_alloc_drop_device(int device) {
    size_t n = 0;
    for (size_t i = 0; i < nallocs;)
        if (allocs[i].device == device) release("(context destroyed)", allocs[i].base), n++;
        else i++;
    return n;
}

void kcd_copy_now(uint64_t dst, uint64_t src, size_t n) {
    kcd_alloc *d = kcd_alloc_find(dst, n), *s = kcd_alloc_find(src, n);
    if (d && s && n) memmove(d->shadow + (dst - d->base), s->shadow + (src - s->base), n);
}

void kcd_memset_now(uint64_t dst, unsigned value, unsigned elem, size_t n) {
    kcd_alloc *d = kcd_alloc_find(dst, n);
    if (!d || !n) return;
    unsigned char *p = d->shadow + (dst - d->base);
    if (elem == 1) {
        memset(p, (int)(value & 0xff), n);
        return;
    }
    for (size_t i = 0; i + 4 <= n; i += 4) memcpy(p + i, &value, 4); /* the device's little-endian 32-bit words */
}

/* A device range [p, p+n) that must lie in one allocation; logged defect when it does not. */
static CUresult range(const char *call, const char *what, uint64_t p, size_t n) {
    if (kcd_alloc_find(p, n)) return CUDA_SUCCESS;
    kcd_alloc *in = kcd_alloc_find(p, 0);
    if (in)
        return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call,
                        "%s %#llx + %zu bytes runs past its allocation (%#llx, %zu bytes)", what, (unsigned long long)p,
                        n, (unsigned long long)in->base, in->size);
    return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s %#llx is not in any live allocation", what,
                    (unsigned long long)p);
}

/* ---- captures ---- */

static kcd_capture *capture_by_id(uint64_t id) {
    for (size_t i = 0; id && i < ncaps; i++)
        if (caps[i]->id == id) return caps[i];
    return NULL;
}

kcd_capture *kcd_capture_of(CUstream s) {
    kcd_obj *o = kcd_obj_find(s, KCD_STREAM);
    return o ? capture_by_id(o->capture) : NULL;
}

static void invalidate(kcd_capture *c, const char *why) {
    if (!c->invalid) snprintf(c->why, sizeof c->why, "%s", why);
    c->invalid = 1;
}

/* End a capture: its streams leave it, and it is freed. */
static void capture_end(kcd_capture *c) {
    for (size_t i = 0; kcd_obj_at(i); i++)
        if (kcd_obj_at(i)->kind == KCD_STREAM && kcd_obj_at(i)->capture == c->id) kcd_obj_at(i)->capture = 0;
    for (size_t i = 0; i < ncaps; i++)
        if (caps[i] == c) {
            caps[i] = caps[--ncaps];
            break;
        }
    kcd_nodes_free(&c->nodes);
    free(c);
}

void kcd_capture_forget_stream(uint64_t id) {
    for (size_t i = 0; i < ncaps; i++)
        if (caps[i]->origin == id) {
            kcd_log("(capture %llu ends: its stream is destroyed)", (unsigned long long)caps[i]->id);
            capture_end(caps[i]);
            return;
        }
}

CUresult kcd_capture_guard(const char *call, int sync) {
    int dev = -1, bad = 0;
    kcd_ctx_current(&dev, NULL);
    for (size_t i = 0; i < ncaps; i++) {
        kcd_capture *c = caps[i];
        int hit = sync ? c->device == dev
                       : c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                             (c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && c->thread == kcd_thread_token());
        if (!hit) continue;
        char why[160];
        snprintf(why, sizeof why, "%s during a %s-mode capture", call, mode_name(c->mode));
        invalidate(c, why);
        bad = 1;
    }
    if (!bad) return CUDA_SUCCESS;
    return kcd_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 1, call,
                    "not permitted while a stream is capturing "
                    "(the capture is invalidated)");
}

CUresult kcd_stream_use(const char *call, CUstream s, int device, kcd_capture **cap) {
    char nm[32];
    *cap = NULL;
    if (!s || s == CU_STREAM_LEGACY) { /* the legacy stream waits for every blocking stream */
        int bad = 0;
        for (size_t i = 0; i < ncaps; i++) {
            kcd_obj *o = kcd_obj_by_id(caps[i]->origin);
            if (caps[i]->device == device && o && !(o->flags & CU_STREAM_NON_BLOCKING)) {
                invalidate(caps[i], "the legacy stream was used while a blocking stream was capturing");
                bad = 1;
            }
        }
        return bad ? kcd_fail(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, 1, call,
                              "the legacy stream would wait on a capturing blocking stream")
                   : CUDA_SUCCESS;
    }
    if (s == CU_STREAM_PER_THREAD) return CUDA_SUCCESS;
    kcd_obj *o = kcd_obj_find(s, KCD_STREAM);
    if (!o)
        return kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "stream %s %s", kcd_name(s, nm),
                        kcd_obj_dead(s, KCD_STREAM) ? "was destroyed" : "is not a stream");
    if (device >= 0 && o->device != device)
        return kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "stream %s belongs to device %d, the current context to %d",
                        kcd_name(s, nm), o->device, device);
    *cap = capture_by_id(o->capture);
    return CUDA_SUCCESS;
}

int kcd_nodes_add(kcd_nodes *ns, kcd_node *n) {
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? 2 * ns->cap : 16;
        kcd_node *v = realloc(ns->v, cap * sizeof *v);
        if (!v) {
            free(n->args);
            return -1;
        }
        ns->v = v, ns->cap = cap;
    }
    ns->v[ns->n++] = *n;
    return 0;
}

void kcd_nodes_free(kcd_nodes *ns) {
    for (size_t i = 0; i < ns->n; i++) free(ns->v[i].args);
    free(ns->v);
    memset(ns, 0, sizeof *ns);
}

int kcd_nodes_copy(kcd_nodes *dst, const kcd_nodes *src) {
    for (size_t i = 0; i < src->n; i++) {
        kcd_node n = src->v[i];
        if (n.args_len) {
            if (!(n.args = malloc(n.args_len))) return -1;
            memcpy(n.args, src->v[i].args, n.args_len);
        } else {
            n.args = NULL;
        }
        if (kcd_nodes_add(dst, &n)) return -1;
    }
    return 0;
}

/* ---- memory entry points ---- */

/* Ready, a current context, and its device. */
static CUresult need_ctx(const char *call, int *dev) {
    CUresult r = kcd_ready(call);
    if (!r && kcd_ctx_current(dev, NULL)) r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "no current context");
    return r;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    CUresult r = need_ctx("cuMemAlloc_v2", &dev);
    if (!r) r = kcd_capture_guard("cuMemAlloc_v2", 0);
    if (!r) r = alloc("cuMemAlloc_v2", dptr, bytesize, dev, 0);
    if (!r) kcd_log("cuMemAlloc_v2 %zu -> %#llx", bytesize, (unsigned long long)*dptr);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    CUresult r = need_ctx("cuMemAllocAsync", &dev);
    if (!r) r = kcd_stream_use("cuMemAllocAsync", hStream, dev, &c);
    if (!r) r = alloc("cuMemAllocAsync", dptr, bytesize, dev, 1);
    if (!r)
        kcd_log("cuMemAllocAsync %zu on %s -> %#llx%s", bytesize, kcd_name(hStream, nm), (unsigned long long)*dptr,
                c ? " (during capture: allocated at once)" : "");
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    CUresult r = need_ctx("cuMemFree_v2", &dev);
    if (!r && dptr) r = kcd_capture_guard("cuMemFree_v2", 0);
    if (!r && dptr) r = release("cuMemFree_v2", dptr);
    if (!r) kcd_log("cuMemFree_v2 %#llx", (unsigned long long)dptr);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    CUresult r = need_ctx("cuMemFreeAsync", &dev);
    if (!r) r = kcd_stream_use("cuMemFreeAsync", hStream, dev, &c);
    if (!r && dptr) r = release("cuMemFreeAsync", dptr);
    if (!r) kcd_log("cuMemFreeAsync %#llx on %s", (unsigned long long)dptr, kcd_name(hStream, nm));
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c;
    CUresult r = need_ctx("cuMemcpyHtoD_v2", &dev);
    if (!r) r = kcd_capture_guard("cuMemcpyHtoD_v2", 0);
    if (!r) r = kcd_stream_use("cuMemcpyHtoD_v2", CU_STREAM_LEGACY, dev, &c);
    if (!r && ByteCount && !srcHost) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuMemcpyHtoD_v2", "srcHost is NULL");
    if (!r && ByteCount) r = range("cuMemcpyHtoD_v2", "destination", dstDevice, ByteCount);
    if (!r && ByteCount) {
        kcd_alloc *a = kcd_alloc_find(dstDevice, ByteCount);
        memcpy(a->shadow + (dstDevice - a->base), srcHost, ByteCount);
    }
    if (!r) kcd_log("cuMemcpyHtoD_v2 %#llx <- %zu bytes", (unsigned long long)dstDevice, ByteCount);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c;
    CUresult r = need_ctx("cuMemcpyDtoH_v2", &dev);
    if (!r) r = kcd_capture_guard("cuMemcpyDtoH_v2", 0);
    if (!r) r = kcd_stream_use("cuMemcpyDtoH_v2", CU_STREAM_LEGACY, dev, &c);
    if (!r && ByteCount && !dstHost) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuMemcpyDtoH_v2", "dstHost is NULL");
    if (!r && ByteCount) r = range("cuMemcpyDtoH_v2", "source", srcDevice, ByteCount);
    if (!r && ByteCount) {
        kcd_alloc *a = kcd_alloc_find(srcDevice, ByteCount);
        memcpy(dstHost, a->shadow + (srcDevice - a->base), ByteCount);
    }
    if (!r) kcd_log("cuMemcpyDtoH_v2 %zu bytes <- %#llx", ByteCount, (unsigned long long)srcDevice);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    CUresult r = need_ctx("cuMemcpyDtoDAsync_v2", &dev);
    if (!r) r = kcd_stream_use("cuMemcpyDtoDAsync_v2", hStream, dev, &c);
    if (!r && ByteCount) r = range("cuMemcpyDtoDAsync_v2", "destination", dstDevice, ByteCount);
    if (!r && ByteCount) r = range("cuMemcpyDtoDAsync_v2", "source", srcDevice, ByteCount);
    if (!r && c && ByteCount) {
        kcd_node n = {.is_copy = 1, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount};
        if (kcd_nodes_add(&c->nodes, &n))
            r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuMemcpyDtoDAsync_v2", "out of memory");
    } else if (!r) {
        kcd_copy_now(dstDevice, srcDevice, ByteCount);
    }
    if (!r)
        kcd_log("cuMemcpyDtoDAsync_v2 %#llx <- %#llx %zu bytes on %s%s", (unsigned long long)dstDevice,
                (unsigned long long)srcDevice, ByteCount, kcd_name(hStream, nm), c ? " (captured)" : "");
    kcd_unlock();
    return r;
}

/* cuMemsetD8Async / cuMemsetD32Async: n elements of `elem` bytes set to `value`, on a stream (a node when capturing). */
static CUresult memset_async(const char *call, CUdeviceptr dst, unsigned value, unsigned elem, size_t n,
                             CUstream hStream) {
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    size_t bytes = n * elem;
    CUresult r = need_ctx(call, &dev);
    if (!r) r = kcd_stream_use(call, hStream, dev, &c);
    if (!r && n > SIZE_MAX / elem) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%zu elements overflow", n);
    if (!r && elem == 4 && dst % 4)
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%#llx is not 4-byte aligned", (unsigned long long)dst);
    if (!r && bytes) r = range(call, "destination", dst, bytes);
    if (!r && c && bytes) {
        kcd_node nd = {.is_memset = 1, .dst = dst, .bytes = bytes, .value = value, .elem = elem};
        if (kcd_nodes_add(&c->nodes, &nd)) r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
    } else if (!r) {
        kcd_memset_now(dst, value, elem, bytes);
    }
    if (!r)
        kcd_log("%s %#llx = %#x x %zu (%zu bytes) on %s%s", call, (unsigned long long)dst, value, n, bytes,
                kcd_name(hStream, nm), c ? " (captured)" : "");
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    KCD_CALLED();
    return memset_async("cuMemsetD8Async", dstDevice, uc, 1, N, hStream);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
    KCD_CALLED();
    return memset_async("cuMemsetD32Async", dstDevice, ui, 4, N, hStream);
}

/* ---- streams and events ---- */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    uint64_t ctx = 0;
    char nm[32];
    kcd_obj *o = NULL;
    CUresult r = need_ctx("cuStreamCreate", &dev);
    if (!r && (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING)))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuStreamCreate", "phStream NULL or flags %#x", Flags);
    if (!r && !(o = kcd_obj_new(KCD_STREAM)))
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuStreamCreate", "out of memory");
    if (!r) {
        kcd_ctx_current(NULL, &ctx);
        o->ctx = ctx, o->device = dev, o->flags = Flags;
        *phStream = kcd_obj_handle(o);
        kcd_log("cuStreamCreate -> %s%s", kcd_name(*phStream, nm), Flags ? " (non-blocking)" : "");
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    char nm[32];
    kcd_obj *o = kcd_obj_find(hStream, KCD_STREAM);
    CUresult r = kcd_ready("cuStreamDestroy_v2");
    if (!r && !o)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, "cuStreamDestroy_v2", "%s %s", kcd_name(hStream, nm),
                     kcd_obj_dead(hStream, KCD_STREAM) ? "was destroyed already" : "is not a stream one may destroy");
    if (!r) {
        if (capture_by_id(o->capture))
            kcd_defect("cuStreamDestroy_v2: %s destroyed while capturing", kcd_name(hStream, nm));
        kcd_log("cuStreamDestroy_v2 %s", kcd_name(hStream, nm));
        kcd_obj_free(o);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    CUresult r = need_ctx("cuStreamSynchronize", &dev);
    if (!r) r = kcd_stream_use("cuStreamSynchronize", hStream, dev, &c);
    if (!r && c) {
        invalidate(c, "cuStreamSynchronize on the capturing stream");
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 1, "cuStreamSynchronize", "%s is capturing",
                     kcd_name(hStream, nm));
    }
    if (!r) kcd_log("cuStreamSynchronize %s", kcd_name(hStream, nm));
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    CUresult r = need_ctx("cuStreamIsCapturing", &dev);
    if (!r && !captureStatus) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuStreamIsCapturing", "captureStatus is NULL");
    if (!r) r = kcd_stream_use("cuStreamIsCapturing", hStream, dev, &c);
    if (!r)
        *captureStatus = !c           ? CU_STREAM_CAPTURE_STATUS_NONE
                         : c->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                      : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    uint64_t ctx = 0;
    char nm[32];
    kcd_obj *o = NULL;
    CUresult r = need_ctx("cuEventCreate", &dev);
    if (!r && (!phEvent || (Flags & ~0xfu)))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuEventCreate", "phEvent NULL or flags %#x", Flags);
    if (!r && !(o = kcd_obj_new(KCD_EVENT)))
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuEventCreate", "out of memory");
    if (!r) {
        kcd_ctx_current(NULL, &ctx);
        o->ctx = ctx, o->device = dev, o->flags = Flags;
        *phEvent = kcd_obj_handle(o);
        kcd_log("cuEventCreate -> %s", kcd_name(*phEvent, nm));
    }
    kcd_unlock();
    return r;
}

/* A live event, or a logged INVALID_HANDLE. */
static kcd_obj *event(const char *call, CUevent e, CUresult *r) {
    char nm[32];
    kcd_obj *o = kcd_obj_find(e, KCD_EVENT);
    if (!*r && !o)
        *r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s %s", kcd_name(e, nm),
                      kcd_obj_dead(e, KCD_EVENT) ? "was destroyed" : "is not an event");
    return o;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char n1[32], n2[32];
    CUresult r = need_ctx("cuEventRecord", &dev);
    kcd_obj *e = event("cuEventRecord", hEvent, &r);
    if (!r) r = kcd_stream_use("cuEventRecord", hStream, dev, &c);
    if (!r) {
        e->capture = c ? c->id : 0;
        kcd_log("cuEventRecord %s on %s%s", kcd_name(hEvent, n1), kcd_name(hStream, n2), c ? " (captured)" : "");
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
    KCD_CALLED();
    kcd_lock();
    char nm[32];
    CUresult r = kcd_ready("cuEventDestroy_v2");
    kcd_obj *e = event("cuEventDestroy_v2", hEvent, &r);
    if (!r) {
        kcd_log("cuEventDestroy_v2 %s", kcd_name(hEvent, nm));
        kcd_obj_free(e);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char n1[32], n2[32];
    CUresult r = need_ctx("cuStreamWaitEvent", &dev);
    kcd_obj *e = event("cuStreamWaitEvent", hEvent, &r);
    if (!r && Flags > 1) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuStreamWaitEvent", "flags %#x", Flags);
    if (!r) r = kcd_stream_use("cuStreamWaitEvent", hStream, dev, &c);
    kcd_capture *ec = !r ? capture_by_id(e->capture) : NULL;
    if (!r && ec && !c) {
        kcd_obj *s = kcd_obj_find(hStream, KCD_STREAM);
        if (s) s->capture = ec->id; /* a stream that waits on captured work joins the capture */
        else {
            invalidate(ec, "the legacy stream waited on captured work");
            r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 1, "cuStreamWaitEvent",
                         "%s waits on an event recorded during a capture", kcd_name(hStream, n1));
        }
    } else if (!r && ec && c && ec != c) {
        invalidate(ec, "two captures merged");
        invalidate(c, "two captures merged");
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_MERGE, 1, "cuStreamWaitEvent", "%s waits on another capture's event",
                     kcd_name(hStream, n1));
    }
    if (!r)
        kcd_log("cuStreamWaitEvent %s on %s%s", kcd_name(hStream, n1), kcd_name(hEvent, n2),
                ec && !c ? " (joins the capture)" : "");
    kcd_unlock();
    return r;
}

/* ---- capture ---- */

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32];
    CUresult r = need_ctx("cuStreamBeginCapture_v2", &dev);
    if (!r && ((int)mode < 0 || mode > CU_STREAM_CAPTURE_MODE_RELAXED))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuStreamBeginCapture_v2", "mode %d", (int)mode);
    if (!r && (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD))
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 1, "cuStreamBeginCapture_v2",
                     "the %s stream cannot be captured", kcd_name(hStream, nm));
    if (!r) r = kcd_stream_use("cuStreamBeginCapture_v2", hStream, dev, &c);
    if (!r && c)
        r = kcd_fail(CUDA_ERROR_ILLEGAL_STATE, 1, "cuStreamBeginCapture_v2", "%s is capturing already",
                     kcd_name(hStream, nm));
    if (!r && ncaps == capcaps) {
        size_t cap = capcaps ? 2 * capcaps : 8;
        kcd_capture **v = realloc(caps, cap * sizeof *v);
        if (v) caps = v, capcaps = cap;
    }
    if (!r && (ncaps == capcaps || !(c = calloc(1, sizeof *c))))
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuStreamBeginCapture_v2", "out of memory");
    if (!r) {
        kcd_obj *s = kcd_obj_find(hStream, KCD_STREAM);
        c->id = kcd_next_id(), c->origin = s->id, c->mode = mode, c->thread = kcd_thread_token(), c->device = dev;
        caps[ncaps++] = c;
        s->capture = c->id;
        kcd_log("cuStreamBeginCapture_v2 %s %s", kcd_name(hStream, nm), mode_name(mode));
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph) {
    KCD_CALLED();
    kcd_lock();
    int dev;
    kcd_capture *c = NULL;
    char nm[32], gn[32];
    CUresult r = need_ctx("cuStreamEndCapture", &dev);
    if (!r && !phGraph) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuStreamEndCapture", "phGraph is NULL");
    if (!r) r = kcd_stream_use("cuStreamEndCapture", hStream, dev, &c);
    kcd_obj *s = kcd_obj_find(hStream, KCD_STREAM);
    if (!r && !c)
        r = kcd_fail(CUDA_ERROR_ILLEGAL_STATE, 1, "cuStreamEndCapture", "%s is not capturing", kcd_name(hStream, nm));
    if (!r && (!s || c->origin != s->id))
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, 1, "cuStreamEndCapture", "%s did not begin the capture",
                     kcd_name(hStream, nm));
    if (!r && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != kcd_thread_token())
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, 1, "cuStreamEndCapture", "ended by another thread");
    if (!r && c->invalid) {
        *phGraph = NULL;
        r = kcd_fail(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 0, "cuStreamEndCapture", "%s: %s", kcd_name(hStream, nm),
                     c->why);
        capture_end(c);
    } else if (!r) {
        kcd_obj *g = kcd_obj_new(KCD_GRAPH);
        if (!g) {
            r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuStreamEndCapture", "out of memory");
        } else {
            g->nodes = c->nodes, g->ctx = s->ctx, g->device = dev;
            memset(&c->nodes, 0, sizeof c->nodes);
            *phGraph = kcd_obj_handle(g);
            kcd_log("cuStreamEndCapture %s -> %s (%zu nodes)", kcd_name(hStream, nm), kcd_name(*phGraph, gn),
                    g->nodes.n);
        }
        capture_end(c);
    }
    kcd_unlock();
    return r;
}
