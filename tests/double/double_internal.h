/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_internal.h — what the files of the CUDA driver double share: the parsed image, the
 * live objects, the state and its lock, and the helpers that log, count defects and find
 * objects.  Included by the files under tests/double/ only, never by a test.
 *
 * The one idea: every handle the double gives out is a number, never a pointer to memory —
 * (kind, id) encoded in a non-canonical address that nobody can dereference — and ids are
 * never reused.  So a handle that was freed is told apart from one that never existed, a
 * stream passed as a function is caught, and a stale handle can never alias a new object.
 *
 * Locking: one mutex (kcd_lock/kcd_unlock) guards everything below; every entry point takes
 * it for its whole body, and the helpers here expect it held.  The context stack is
 * thread-local and needs no lock.
 *
 * Visibility: the library is built with hidden visibility; only the driver entry points
 * (declared by <cuda.h>) and the kcd_ control API (cuda_double.h) are exported, which the
 * pragma below arranges for both headers.
 */
#ifndef KCD_INTERNAL_H
#define KCD_INTERNAL_H

#pragma GCC visibility push(default)
#include <cuda.h>

#include "cuda_double.h"
#pragma GCC visibility pop

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- images (double_image.c) ---- */

/** At most this many parameters and bytes of parameters in one kernel (CUDA 12.1+ on Volta+). */
#define KCD_MAX_PARAMS 4096u
#define KCD_MAX_PARAM_BYTES 32764u
/** The largest image the double believes a header about. */
#define KCD_IMAGE_MAX ((size_t)1 << 30)

/** One kernel of an image, as the driver would know it after loading. */
typedef struct kcd_kinfo {
    char *name;
    uint32_t nparams;
    uint32_t *poff, *psize; /* [nparams], by ordinal */
    uint32_t ptotal;        /* bytes of the parameter buffer */
    uint32_t static_shared; /* bytes of static shared memory (the user's, without the driver's reserve) */
    uint32_t max_threads;   /* launch bounds (.maxntid / EIATTR_MAX_THREADS), else 1024 */
    uint32_t reqntid[3];    /* required block dims (.reqntid / EIATTR_REQNTID); 0: none */
    uint32_t cluster[3];    /* required cluster dims; 0: none */
    uint32_t regs;          /* registers per thread (0: unknown, PTX) */
} kcd_kinfo;

/** A parsed image: a cubin or PTX text. */
typedef struct kcd_image {
    int is_ptx;
    int arch;                 /* 90 for sm_90 / compute_90, 103 for sm_103f */
    char variant;             /* 0, 'a' (arch-specific) or 'f' (family) */
    char target[24];          /* "sm_90a", "compute_80" */
    int ptx_major, ptx_minor; /* PTX: the .version */
    int virt_arch;            /* the PTX (virtual) architecture it came from: CU_FUNC_ATTRIBUTE_PTX_VERSION */
    size_t nkernels;
    kcd_kinfo *k;
    size_t bytes; /* the image's length as read */
} kcd_image;

/** Parse exactly `len` bytes.  CUDA_SUCCESS, or the driver's error with the reason in why. */
CUresult kcd_image_read(const void *image, size_t len, kcd_image *out, char *why, size_t cap);
/** How many bytes an image handed to an entry point claims to be (its ELF header, or PTX up to the NUL). */
size_t kcd_image_claimed(const void *image);
/** Whether the image runs on a device of capability major.minor: CUDA_SUCCESS or CUDA_ERROR_NO_BINARY_FOR_GPU. */
CUresult kcd_image_fits(const kcd_image *im, int major, int minor, char *why, size_t cap);
/** The kernel named `name`, or NULL. */
const kcd_kinfo *kcd_image_kernel(const kcd_image *im, const char *name);
/** Free what kcd_image_read allocated; accepts a zeroed image. */
void kcd_image_free(kcd_image *im);
/** PTX text (double_ptx.c), as kcd_image_read. */
CUresult kcd_ptx_read(const char *text, size_t len, kcd_image *out, char *why, size_t cap);
/** Append a kernel named by n bytes (zeroed, 1024 threads); NULL when out of memory. */
kcd_kinfo *kcd_image_add_kernel(kcd_image *im, const char *name, size_t n);
/** One parameter as read: ordinal, offset, size. */
typedef struct kcd_kp {
    uint32_t ord, off, size;
} kcd_kp;
/** Sort v by ordinal, check it is a table (ordinals 0..n-1, no overlap, within the limits,
 *  `total` (0: the end of the last) not short) and give it to k.  0, or -1 with why. */
int kcd_image_set_params(kcd_kinfo *k, kcd_kp *v, uint32_t n, uint32_t total, char *why, size_t cap);

/* ---- objects ---- */

enum kcd_kind {
    KCD_CTX = 1,
    KCD_MOD,
    KCD_LIB,
    KCD_KERN,
    KCD_FUNC,
    KCD_STREAM,
    KCD_EVENT,
    KCD_GRAPH,
    KCD_EXEC,
    KCD_NKINDS
};

/** A node of a captured graph: a kernel launch, a device-to-device copy or a memset. */
typedef struct kcd_node {
    int is_copy;
    int is_memset; /* memset: `bytes` at dst, `value` repeated in elements of `elem` bytes (1 or 4) */
    unsigned value, elem;
    uint64_t func; /* kernel: the function's id */
    unsigned grid[3], block[3], shared;
    unsigned char *args; /* kernel: the argument buffer (owned) */
    size_t args_len;
    uint64_t dst, src; /* copy */
    size_t bytes;
} kcd_node;

typedef struct kcd_nodes {
    kcd_node *v;
    size_t n, cap;
} kcd_nodes;

/** A live object of any kind; the fields used depend on the kind. */
typedef struct kcd_obj {
    uint64_t id;
    int kind;
    int device;            /* the device of its context (-1: none) */
    uint64_t ctx;          /* the context it belongs to (0: none, e.g. a library) */
    kcd_image im;          /* module, library */
    uint64_t owner;        /* kernel: its library; function: its module or library */
    const kcd_kinfo *ki;   /* kernel, function */
    const kcd_image *oim;  /* kernel, function: the owner's image */
    int max_dyn, carveout; /* function attributes */
    unsigned flags;        /* stream, event */
    uint64_t capture;      /* stream: the capture it belongs to; event: the capture it was recorded in */
    kcd_nodes nodes;       /* graph, exec */
} kcd_obj;

/** A device allocation, backed by a host shadow buffer. */
typedef struct kcd_alloc {
    uint64_t base;
    size_t size;
    unsigned char *shadow;
    int device;
    int async;
} kcd_alloc;

/** A stream capture in progress. */
typedef struct kcd_capture {
    uint64_t id;
    uint64_t origin; /* the stream that began it */
    int mode;        /* CUstreamCaptureMode */
    uint64_t thread; /* the thread that began it (kcd_thread_token) */
    int device;      /* the device of its context */
    int invalid;     /* something illegal happened: EndCapture fails */
    char why[200];
    kcd_nodes nodes;
} kcd_capture;

/* ---- handles ---- */

#define KCD_HANDLE_BASE 0x0cd0000000000000ULL
#define KCD_ID_MASK 0xffffffffffULL

/** The handle of object `id` of `kind`: a non-canonical address, never memory. */
static inline void *kcd_handle(int kind, uint64_t id) {
    return (void *)(uintptr_t)(KCD_HANDLE_BASE | (uint64_t)kind << 40 | id);
}
/** The id behind a handle of `kind`, 0 when it is not one. */
static inline uint64_t kcd_handle_id(const void *h, int kind) {
    uint64_t v = (uint64_t)(uintptr_t)h;
    return (v & ~KCD_ID_MASK) == (KCD_HANDLE_BASE | (uint64_t)kind << 40) ? v & KCD_ID_MASK : 0;
}

/* ---- devices (double_device.c) ---- */

/** A device: its attributes (known[a]: answered by cuDeviceGetAttribute) and its primary context. */
typedef struct kcd_dev {
    int attr[CU_DEVICE_ATTRIBUTE_MAX];
    unsigned char known[CU_DEVICE_ATTRIBUTE_MAX];
    int retains;
    uint64_t ctx; /* the live primary context's id, 0 when none */
} kcd_dev;

/** Set one attribute (and make it known). */
void kcd_dev_set(kcd_dev *d, CUdevice_attribute a, int v);
/** Every attribute of device `index` of capability major.minor with `sms` SMs (0: the architecture's typical count). */
void kcd_dev_defaults(kcd_dev *d, int index, int major, int minor, int sms);

/* ---- state and helpers (cuda_double.c; objects and records: double_objects.c) ---- */

void kcd_lock(void);
void kcd_unlock(void);
/** CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED (logged). */
CUresult kcd_ready(const char *call);
/** Append one line to the call log; returns its line number. */
unsigned long long kcd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** Log "call: … -> NAME: why" for a failed call, count a defect when `defect`, and return r. */
CUresult kcd_fail(CUresult r, int defect, const char *call, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** Count a defect that does not fail the call (e.g. a launch argument that is a freed address). */
void kcd_defect(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/** The current context: CUDA_SUCCESS with its device and id, or CUDA_ERROR_INVALID_CONTEXT (not logged). */
CUresult kcd_ctx_current(int *device, uint64_t *ctx);
/** A number for this thread, unique in the process (capture ownership). */
uint64_t kcd_thread_token(void);
/** A device's compute capability and attribute value (device checked by the caller). */
int kcd_dev_attr(int device, CUdevice_attribute a);
int kcd_device_count(void);
/** The refusal of a load: im NULL → kcd_refuse_next's (consumed), else the rule for im's target; CUDA_SUCCESS when none. */
CUresult kcd_refusal(const kcd_image *im);
/** CUDA_ERROR_UNSUPPORTED_PTX_VERSION (why set) for PTX newer than the configured ISA, else CUDA_SUCCESS. */
CUresult kcd_ptx_isa_check(const kcd_image *im, char *why, size_t cap);
void kcd_count_load(int library, int refused);
/** Count one call of entry point `fn` (double_calls.c); every exported cu* function opens with KCD_CALLED(), whose
 *  `slot` (one per function, -1 at first) remembers fn's row so that a count is no search. */
void kcd_called(const char *fn, int *slot);
#define KCD_CALLED()                      \
    do {                                  \
        static int kcd_slot_ = -1;        \
        kcd_called(__func__, &kcd_slot_); \
    } while (0)
/** Zero every entry point's count (kcd_reset). */
void kcd_calls_clear(void);
void kcd_count_unload(int library);

/** A new object with a fresh id (kind set; all else zero); NULL when out of memory. */
kcd_obj *kcd_obj_new(int kind);
/** The live object behind a handle of `kind`, or NULL. */
kcd_obj *kcd_obj_find(const void *handle, int kind);
kcd_obj *kcd_obj_by_id(uint64_t id);
/** Whether a handle of `kind` was issued once and has since been destroyed. */
int kcd_obj_dead(const void *handle, int kind);
/** The name a destroyed object had (a function's kernel), or "?". */
const char *kcd_obj_dead_name(const void *handle);
/** Destroy an object: frees what it owns, remembers its name for messages. */
void kcd_obj_free(kcd_obj *o);
void *kcd_obj_handle(const kcd_obj *o);
/** Iterate over live objects: the i-th one, or NULL past the end. */
kcd_obj *kcd_obj_at(size_t i);
/** A short name for a handle in the log ("m12", "s4", "null", "legacy"). */
const char *kcd_name(const void *handle, char buf[32]);

/** The next object id (also used for contexts). */
uint64_t kcd_next_id(void);
/** Forget the launch records (kcd_reset). */
void kcd_records_clear(void);
/** Record an accepted launch (lock held). */
void kcd_record_launch(const kcd_obj *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                       CUstream stream, int device, int captured, int replayed, const unsigned char *args,
                       size_t args_len, unsigned long long seq);

/* ---- memory, streams, captures (double_mem.c) ---- */

/** The live allocation holding [p, p+n), or NULL. */
kcd_alloc *kcd_alloc_find(uint64_t p, size_t n);
/** Whether p lies in the range device addresses come from. */
int kcd_is_devptr(uint64_t p);
/** How many allocations are alive; describe them into buf at *off. */
size_t kcd_alloc_leaks(char *buf, size_t cap, size_t *off);
/** Destroy every allocation of a device (its primary context went). */
size_t kcd_alloc_drop_device(int device);
/** The capture a stream handle belongs to, or NULL. */
kcd_capture *kcd_capture_of(CUstream s);
/**
 * Check a stream handle for an operation in the current context: CUDA_SUCCESS with *cap set
 * to the capture it belongs to (or NULL), or the error (logged, a defect).  Implicit
 * synchronisation of the legacy stream with a capturing blocking stream invalidates that
 * capture and fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT.
 */
CUresult kcd_stream_use(const char *call, CUstream s, int device, kcd_capture **cap);
/**
 * A call that a capture under way forbids: with `sync` (cuCtxSynchronize) any capture on the
 * current device; else (cuMemAlloc, cuMemFree, synchronous copies) a global-mode capture, or a
 * thread-local one begun by this thread.  CUDA_SUCCESS when allowed, else invalidates the
 * offending captures and returns CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (logged, a defect).
 */
CUresult kcd_capture_guard(const char *call, int sync);
/** A stream is destroyed: a capture it began ends (its streams leave it). */
void kcd_capture_forget_stream(uint64_t id);
/** Append a node to a node list: 0, or -1 when out of memory (the node's args are then freed). */
int kcd_nodes_add(kcd_nodes *ns, kcd_node *n);
void kcd_nodes_free(kcd_nodes *ns);
int kcd_nodes_copy(kcd_nodes *dst, const kcd_nodes *src);
/** Copy device to device now (ranges checked by the caller). */
void kcd_copy_now(uint64_t dst, uint64_t src, size_t n);
/** Set n bytes at dst now to `value` in elements of `elem` bytes (1 or 4; range checked by the caller). */
void kcd_memset_now(uint64_t dst, unsigned value, unsigned elem, size_t n);

/* ---- functions (double_module.c) ---- */

/** The most threads per block a function launches with (launch bounds, device, registers);
 *  *by_regs (may be NULL) the registers' limit alone. */
uint32_t kcd_func_max_threads(const kcd_obj *f, uint32_t *by_regs);

/* ---- launches and graphs (double_launch.c) ---- */

/** Replay a graph exec's nodes on a stream (lock held): validated again, recorded as replayed. */
CUresult kcd_replay(const char *call, const kcd_obj *exec, CUstream s, int device);

#endif
