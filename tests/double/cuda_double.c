/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_double.c — the CUDA driver double's core: configuration, devices and their attributes,
 * error names, primary contexts and the per-thread context stack, the table of live
 * objects, and the records tests read (launches, call log, defects, leaks, load counts)
 * through the kcd_ control API (cuda_double.h).
 *
 * The one idea: behave as the driver does at its interface — the same entry points and
 * symbol names, the same error codes for the same mistakes, the same lifetimes (a primary
 * context that is released for the last time takes its modules, memory and streams with
 * it) — and write down everything that happened, so a test can assert on the sequence of
 * calls and on every launch's argument bytes.  The other files: double_device.c (what a
 * device of each architecture says about itself), double_image.c and double_ptx.c (reading
 * cubins and PTX), double_objects.c (the object table, launch records, leaks), double_module.c (modules, libraries, functions), double_mem.c (memory,
 * streams, events, capture state), double_launch.c (launches, graphs).
 *
 * Who calls it: kcache through dlopen (KCACHE_CUDA_DRIVER), tests directly.  Must not: run
 * or pretend to run a kernel, hand out a handle that points at memory, or abort on any
 * argument — a wrong call is an error code, a log line and, when it is misuse, a defect.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define KCD_MAX_DEVICES 64
#define KCD_MAX_RULES 64
#define KCD_CTX_DEPTH 64
#define KCD_LOG_MAX ((size_t)8 << 20)

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static struct {
    pthread_mutex_t mu;
    int configured, initialised;
    char config_error[256];
    int ndev;
    kcd_dev dev[KCD_MAX_DEVICES];
    int driver_version, ptx_major, ptx_minor;
    struct {
        char target[24];
        CUresult err;
    } rules[KCD_MAX_RULES];
    int nrules, refuse_n;
    CUresult refuse_err;
    sbuf log, defects;
    unsigned long long nlines, dropped;
    size_t ndefects;
    kcd_load_stats loads;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local uint64_t ctx_stack[KCD_CTX_DEPTH];
static _Thread_local int ctx_depth;

/* ---- text buffers, the log, defects ---- */

static void sbuf_vadd(sbuf *b, size_t max, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0 || b->n + (size_t)n + 2 > max) return;
    if (b->n + (size_t)n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)n + 2) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p, b->cap = cap;
    }
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    b->n += (size_t)n;
    b->p[b->n++] = '\n';
    b->p[b->n] = '\0';
}

unsigned long long kcd_log(const char *fmt, ...) {
    size_t before = S.log.n;
    va_list ap;
    va_start(ap, fmt);
    sbuf_vadd(&S.log, KCD_LOG_MAX, fmt, ap);
    va_end(ap);
    if (S.log.n == before) S.dropped++;
    return ++S.nlines;
}

static void defect_v(const char *fmt, va_list ap) {
    S.ndefects++;
    sbuf_vadd(&S.defects, KCD_LOG_MAX, fmt, ap);
}

void kcd_defect(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    defect_v(fmt, ap);
    va_end(ap);
}

/* ---- error names ---- */

#define E(code, text) \
    { code, #code, text }
static const struct {
    CUresult code;
    const char *name, *text;
} ERRORS[] = {
    E(CUDA_SUCCESS, "no error"),
    E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
    E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    E(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    E(CUDA_ERROR_NOT_READY, "device not ready"),
    E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
    E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
      "operation would make the legacy stream depend on a capturing blocking stream"),
    E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
      "attempt to terminate a thread-local capture sequence from another thread"),
    E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
    E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
    KCD_CALLED();
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) return *pStr = ERRORS[i].name, CUDA_SUCCESS;
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
    KCD_CALLED();
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].code == error) return *pStr = ERRORS[i].text, CUDA_SUCCESS;
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static const char *err_name(CUresult r) {
    const char *n = NULL;
    cuGetErrorName(r, &n);
    return n ? n : "CUDA_ERROR_?";
}

CUresult kcd_fail(CUresult r, int defect, const char *call, const char *fmt, ...) {
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kcd_log("%s -> %s: %s", call, err_name(r), why);
    if (defect) kcd_defect("%s: %s: %s", call, err_name(r), why);
    return r;
}

/* ---- devices ---- */

/* Parse a KCD_DEVICES list into S.dev (nothing changes on error). */
static int devices_parse(const char *spec, char *why, size_t cap) {
    int ndev = 0, cc[KCD_MAX_DEVICES][3];
    const char *p = spec;
    while (*p == ' ') p++;
    while (*p) {
        if (ndev == KCD_MAX_DEVICES) return snprintf(why, cap, "more than %d devices", KCD_MAX_DEVICES), -1;
        char *end;
        long major = strtol(p, &end, 10), minor = -1, sms = 0;
        if (end != p && *end == '.' && end[1] >= '0' && end[1] <= '9') minor = strtol(end + 1, &end, 10);
        if (minor >= 0 && *end == ':') {
            const char *q = end + 1;
            sms = strtol(q, &end, 10);
            if (end == q || sms < 1 || sms > 100000) minor = -1;
        }
        while (*end == ' ') end++;
        if (major < 1 || major > 99 || minor < 0 || minor > 9 || (*end && *end != ','))
            return snprintf(why, cap, "bad device '%s' (want M.m or M.m:SMs)", p), -1;
        cc[ndev][0] = (int)major, cc[ndev][1] = (int)minor, cc[ndev][2] = (int)sms, ndev++;
        p = *end ? end + 1 : end;
        while (*p == ' ') p++;
    }
    for (int i = 0; i < ndev; i++) kcd_dev_defaults(&S.dev[i], i, cc[i][0], cc[i][1], cc[i][2]);
    S.ndev = ndev;
    return 0;
}

static int version_parse(const char *s, int *major, int *minor) {
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '.' || end[1] < '0' || end[1] > '9') return -1;
    long b = strtol(end + 1, &end, 10);
    if (*end || a < 1 || a > 99 || b < 0 || b > 99) return -1;
    *major = (int)a, *minor = (int)b;
    return 0;
}

static int rule_set(const char *target, size_t n, CUresult err) {
    if (n == 0 || n >= sizeof S.rules[0].target) return -1;
    for (int i = 0; i < S.nrules; i++)
        if (strlen(S.rules[i].target) == n && !memcmp(S.rules[i].target, target, n)) {
            if (err == CUDA_SUCCESS) S.rules[i] = S.rules[--S.nrules];
            else S.rules[i].err = err;
            return 0;
        }
    if (err == CUDA_SUCCESS) return 0;
    if (S.nrules == KCD_MAX_RULES) return -1;
    memcpy(S.rules[S.nrules].target, target, n);
    S.rules[S.nrules].target[n] = '\0';
    S.rules[S.nrules++].err = err;
    return 0;
}

static int rules_parse(const char *spec, char *why, size_t cap) {
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ','), *eq = strchr(p, '=');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *end;
        long code = eq && eq < p + len ? strtol(eq + 1, &end, 10) : -1;
        if (code <= 0 || end != p + len || rule_set(p, (size_t)(eq - p), (CUresult)code))
            return snprintf(why, cap, "bad rule '%.*s' (want target=code)", (int)len, p), -1;
        p += len + (comma != NULL);
    }
    return 0;
}

static void configure(void) {
    S.configured = 1;
    S.driver_version = 13000, S.ptx_major = 9, S.ptx_minor = 0;
    const char *e = getenv("KCD_DEVICES"), *where = "KCD_DEVICES";
    char why[200] = "";
    int bad = devices_parse(e ? e : "9.0", why, sizeof why);
    if (!bad && (e = getenv("KCD_DRIVER_VERSION")) && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        where = "KCD_DRIVER_VERSION";
        if (*end || v < 1000 || v > 99999) bad = 1, snprintf(why, sizeof why, "'%s' is not a version like 13000", e);
        else S.driver_version = (int)v;
    }
    if (!bad && (e = getenv("KCD_PTX_ISA_MAX")) && *e && version_parse(e, &S.ptx_major, &S.ptx_minor))
        bad = 1, where = "KCD_PTX_ISA_MAX", snprintf(why, sizeof why, "'%s' is not a version like 9.0", e);
    if (!bad && (e = getenv("KCD_REFUSE")) && *e) where = "KCD_REFUSE", bad = rules_parse(e, why, sizeof why) != 0;
    if (bad) {
        snprintf(S.config_error, sizeof S.config_error, "%s: %s", where, why);
        fprintf(stderr, "kcache CUDA driver double: %s\n", S.config_error);
    }
}

void kcd_lock(void) {
    pthread_mutex_lock(&S.mu);
    if (!S.configured) configure();
}

void kcd_unlock(void) { pthread_mutex_unlock(&S.mu); }

CUresult kcd_ready(const char *call) {
    if (S.initialised) return CUDA_SUCCESS;
    return kcd_fail(CUDA_ERROR_NOT_INITIALIZED, 1, call, "cuInit has not been called");
}

int kcd_device_count(void) { return S.ndev; }
int kcd_dev_attr(int device, CUdevice_attribute a) { return S.dev[device].attr[a]; }

CUresult CUDAAPI cuInit(unsigned int Flags) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = CUDA_SUCCESS;
    if (Flags) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuInit", "flags %u (must be 0)", Flags);
    else if (S.config_error[0]) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 0, "cuInit", "%s", S.config_error);
    else {
        if (!S.initialised) kcd_log("cuInit: %d device%s, driver %d", S.ndev, S.ndev == 1 ? "" : "s", S.driver_version);
        S.initialised = 1;
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
    KCD_CALLED();
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    kcd_lock();
    *driverVersion = S.driver_version;
    kcd_unlock();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDeviceGetCount");
    if (!r && !count) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuDeviceGetCount", "count is NULL");
    if (!r) *count = S.ndev;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDeviceGet");
    if (!r && !device) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuDeviceGet", "device is NULL");
    if (!r && (ordinal < 0 || ordinal >= S.ndev))
        r = kcd_fail(CUDA_ERROR_INVALID_DEVICE, 1, "cuDeviceGet", "ordinal %d (there are %d)", ordinal, S.ndev);
    if (!r) *device = ordinal;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDeviceGetAttribute");
    if (!r && !pi) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuDeviceGetAttribute", "pi is NULL");
    if (!r && (dev < 0 || dev >= S.ndev))
        r = kcd_fail(CUDA_ERROR_INVALID_DEVICE, 1, "cuDeviceGetAttribute", "device %d (there are %d)", dev, S.ndev);
    if (!r && ((int)attrib < 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX || !S.dev[dev].known[attrib]))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 0, "cuDeviceGetAttribute", "attribute %d unknown to the double",
                     (int)attrib);
    if (!r) *pi = S.dev[dev].attr[attrib];
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDeviceGetName");
    if (!r && (!name || len <= 0 || dev < 0 || dev >= S.ndev))
        r = kcd_fail(dev < 0 || dev >= S.ndev ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE, 1,
                     "cuDeviceGetName", "bad argument");
    if (!r)
        snprintf(name, (size_t)len, "kcache CUDA driver double %d.%d",
                 S.dev[dev].attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                 S.dev[dev].attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDeviceTotalMem_v2");
    if (!r && (!bytes || dev < 0 || dev >= S.ndev))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuDeviceTotalMem_v2", "bad argument");
    if (!r) *bytes = (size_t)80 << 30;
    kcd_unlock();
    return r;
}

/* ---- contexts ---- */

uint64_t kcd_thread_token(void) {
    static atomic_ullong counter;
    static _Thread_local uint64_t token;
    if (!token) token = atomic_fetch_add(&counter, 1) + 1;
    return token;
}


CUresult kcd_ctx_current(int *device, uint64_t *ctx) {
    if (!ctx_depth) return CUDA_ERROR_INVALID_CONTEXT;
    uint64_t c = ctx_stack[ctx_depth - 1];
    for (int d = 0; d < S.ndev; d++)
        if (S.dev[d].ctx == c && S.dev[d].retains > 0) {
            if (device) *device = d;
            if (ctx) *ctx = c;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDevicePrimaryCtxRetain");
    if (!r && (!pctx || dev < 0 || dev >= S.ndev))
        r = kcd_fail(pctx ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE, 1, "cuDevicePrimaryCtxRetain",
                     "device %d (there are %d)", dev, S.ndev);
    if (!r) {
        kcd_dev *d = &S.dev[dev];
        if (d->retains++ == 0) d->ctx = kcd_next_id();
        *pctx = kcd_handle(KCD_CTX, d->ctx);
    }
    kcd_unlock();
    return r;
}

/* The last release: everything the context owned goes with it, as in the driver. */
static void ctx_destroy(int dev) {
    uint64_t c = S.dev[dev].ctx;
    size_t gone[KCD_NKINDS] = {0};
    for (size_t i = 0; kcd_obj_at(i);) { /* from the start after each free: a free may take others with it */
        kcd_obj *o = kcd_obj_at(i);
        if (o->ctx == c) gone[o->kind]++, kcd_obj_free(o), i = 0;
        else i++;
    }
    size_t mem = kcd_alloc_drop_device(dev);
    if (mem || gone[KCD_MOD] || gone[KCD_STREAM] || gone[KCD_EVENT] || gone[KCD_EXEC])
        kcd_log("(the primary context of device %d is destroyed with %zu modules, %zu allocations, %zu streams, "
                "%zu events, %zu graph execs)",
                dev, gone[KCD_MOD], mem, gone[KCD_STREAM], gone[KCD_EVENT], gone[KCD_EXEC]);
    S.dev[dev].ctx = 0;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuDevicePrimaryCtxRelease_v2");
    if (!r && (dev < 0 || dev >= S.ndev))
        r = kcd_fail(CUDA_ERROR_INVALID_DEVICE, 1, "cuDevicePrimaryCtxRelease_v2", "device %d", dev);
    else if (!r && S.dev[dev].retains == 0)
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuDevicePrimaryCtxRelease_v2",
                     "device %d: released more often than retained", dev);
    else if (!r && --S.dev[dev].retains == 0) ctx_destroy(dev);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuCtxPushCurrent_v2");
    uint64_t id = kcd_handle_id(ctx, KCD_CTX);
    int live = 0;
    for (int d = 0; d < S.ndev && id; d++) live |= S.dev[d].ctx == id && S.dev[d].retains > 0;
    if (!r && !live)
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuCtxPushCurrent_v2", "%p is not a live context", (void *)ctx);
    else if (!r && ctx_depth == KCD_CTX_DEPTH)
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuCtxPushCurrent_v2", "%d contexts pushed and not popped",
                     ctx_depth);
    else if (!r) ctx_stack[ctx_depth++] = id;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuCtxPopCurrent_v2");
    if (!r && !ctx_depth)
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuCtxPopCurrent_v2", "no context is current (unbalanced pop)");
    else if (!r) {
        uint64_t id = ctx_stack[--ctx_depth];
        if (pctx) *pctx = kcd_handle(KCD_CTX, id);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuCtxGetCurrent");
    if (!r && !pctx) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuCtxGetCurrent", "pctx is NULL");
    if (!r) *pctx = ctx_depth ? kcd_handle(KCD_CTX, ctx_stack[ctx_depth - 1]) : NULL;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
    KCD_CALLED();
    kcd_lock();
    int d = 0;
    CUresult r = kcd_ready("cuCtxGetDevice");
    if (!r && !device) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuCtxGetDevice", "device is NULL");
    if (!r && kcd_ctx_current(&d, NULL))
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuCtxGetDevice", "no current context");
    if (!r) *device = d;
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
    KCD_CALLED();
    kcd_lock();
    CUresult r = kcd_ready("cuCtxSynchronize");
    if (!r && kcd_ctx_current(NULL, NULL))
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuCtxSynchronize", "no current context");
    if (!r) r = kcd_capture_guard("cuCtxSynchronize", 1);
    if (!r) kcd_log("cuCtxSynchronize");
    kcd_unlock();
    return r;
}

/* ---- loads: refusals and counters ---- */

CUresult kcd_refusal(const kcd_image *im) {
    if (!im) {
        if (S.refuse_n <= 0) return CUDA_SUCCESS;
        S.refuse_n--;
        return S.refuse_err;
    }
    CUresult any = CUDA_SUCCESS;
    for (int i = 0; i < S.nrules; i++) {
        if (!strcmp(S.rules[i].target, im->target)) return S.rules[i].err;
        if (!strcmp(S.rules[i].target, "*")) any = S.rules[i].err;
    }
    return any;
}

CUresult kcd_ptx_isa_check(const kcd_image *im, char *why, size_t cap) {
    if (!im->is_ptx || im->ptx_major < S.ptx_major || (im->ptx_major == S.ptx_major && im->ptx_minor <= S.ptx_minor))
        return CUDA_SUCCESS;
    snprintf(why, cap, "PTX ISA %d.%d is newer than this driver's %d.%d", im->ptx_major, im->ptx_minor, S.ptx_major,
             S.ptx_minor);
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
}

void kcd_count_load(int library, int refused) {
    if (refused) S.loads.refused++;
    else if (library) S.loads.library_loads++;
    else S.loads.module_loads++;
}

void kcd_count_unload(int library) {
    if (library) S.loads.library_unloads++;
    else S.loads.module_unloads++;
}

/* ---- the control API ---- */

int kcd_set_devices(const char *spec) {
    char why[200];
    kcd_lock();
    int before = S.ndev, r = spec ? devices_parse(spec, why, sizeof why) : -1;
    if (!r) {
        kcd_log("(kcd_set_devices %s)", spec);
        for (int d = S.ndev; d < before; d++) { /* devices that went: their contexts go too */
            if (S.dev[d].retains) ctx_destroy(d);
            S.dev[d].retains = 0;
        }
    }
    kcd_unlock();
    return r;
}

int kcd_set_attribute(int device, int attribute, int value) {
    kcd_lock();
    int ok = device >= 0 && device < S.ndev && (int)attribute >= 0 && attribute < CU_DEVICE_ATTRIBUTE_MAX;
    if (ok) kcd_dev_set(&S.dev[device], (CUdevice_attribute)attribute, value);
    kcd_unlock();
    return ok ? 0 : -1;
}

void kcd_set_driver_version(int version) {
    kcd_lock();
    S.driver_version = version;
    kcd_unlock();
}

int kcd_set_ptx_isa_max(const char *version) {
    kcd_lock();
    int r = version ? version_parse(version, &S.ptx_major, &S.ptx_minor) : -1;
    kcd_unlock();
    return r;
}

int kcd_refuse(const char *target, int error) {
    kcd_lock();
    int r = target ? rule_set(target, strlen(target), (CUresult)error) : -1;
    kcd_unlock();
    return r;
}

void kcd_refuse_next(int n, int error) {
    kcd_lock();
    S.refuse_n = n > 0 ? n : 0, S.refuse_err = (CUresult)error;
    kcd_unlock();
}

void kcd_reset(void) {
    kcd_lock();
    free(S.log.p), free(S.defects.p);
    memset(&S.log, 0, sizeof S.log), memset(&S.defects, 0, sizeof S.defects);
    S.nlines = S.dropped = 0, S.ndefects = 0;
    S.nrules = 0, S.refuse_n = 0;
    memset(&S.loads, 0, sizeof S.loads);
    kcd_records_clear();
    kcd_unlock();
    kcd_calls_clear();
}

char *kcd_call_log(void) {
    kcd_lock();
    size_t n = S.log.n;
    char *out = malloc(n + 64);
    if (out) {
        if (n) memcpy(out, S.log.p, n);
        if (S.dropped) n += (size_t)snprintf(out + n, 64, "(%llu lines dropped: the log is full)\n", S.dropped);
        out[n] = '\0';
    }
    kcd_unlock();
    return out;
}

size_t kcd_defects(char *buf, size_t cap) {
    kcd_lock();
    size_t n = S.ndefects;
    if (buf && cap) snprintf(buf, cap, "%s", S.defects.p ? S.defects.p : "");
    kcd_unlock();
    return n;
}

void kcd_loads(kcd_load_stats *out) {
    kcd_lock();
    if (out) *out = S.loads;
    kcd_unlock();
}

int kcd_ctx_retains(int device) {
    kcd_lock();
    int r = device >= 0 && device < S.ndev ? S.dev[device].retains : -1;
    kcd_unlock();
    return r;
}

int kcd_image_check(const void *image, size_t len, int device, char *why, size_t cap) {
    char tmp[256];
    if (!why || !cap) why = tmp, cap = sizeof tmp;
    kcd_lock();
    kcd_image im;
    CUresult r = device < 0 || device >= S.ndev
                     ? (snprintf(why, cap, "no device %d", device), CUDA_ERROR_INVALID_DEVICE)
                     : kcd_image_read(image, len, &im, why, cap);
    if (!r) r = kcd_ptx_isa_check(&im, why, cap);
    if (!r)
        r = kcd_image_fits(&im, S.dev[device].attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR],
                           S.dev[device].attr[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR], why, cap);
    if (device >= 0 && device < S.ndev) kcd_image_free(&im);
    kcd_unlock();
    return r;
}
