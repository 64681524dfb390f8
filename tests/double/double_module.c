/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_module.c — the driver double's loads: cuModuleLoadData / cuLibraryLoadData and
 * their unloads, kernel lookup (cuModuleGetFunction, cuLibraryGetKernel,
 * cuKernelGetFunction), and what a function says about itself (cuFuncGetAttribute,
 * cuFuncSetAttribute, cuFuncGetParamInfo, cuFuncGetName, cuFuncLoad).
 *
 * The one idea: a load is decided in the driver's order — a kcd_refuse_next refusal, then the
 * image read whole (double_image.c: INVALID_IMAGE / INVALID_PTX), then a refusal rule for its
 * target, then the PTX ISA against the driver's, then the device (NO_BINARY_FOR_GPU) — and a
 * refused load is counted and logged but is not a defect: refusal is how a cache learns to
 * recompile.  A module belongs to the current context; a library to none (its functions,
 * from cuKernelGetFunction, to the context current then, where the device is checked).
 * Looking a kernel up twice gives the same handle, as the driver does.
 *
 * Who calls it: kcache and tests, through the entry points.  Must not: keep a pointer into a
 * caller's image (everything needed is copied while loading).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

static const char *kind_word(int library) { return library ? "library" : "module"; }

/* The whole load decision; *out a new module/library object on success. */
static CUresult load(const char *call, const void *image, int library, int device, uint64_t ctx, kcd_obj **out) {
    char why[400] = "";
    CUresult r = kcd_refusal(NULL);
    if (r) {
        kcd_count_load(library, 1);
        return kcd_fail(r, 0, call, "refused on demand (kcd_refuse_next)");
    }
    kcd_image im;
    r = kcd_image_read(image, kcd_image_claimed(image), &im, why, sizeof why);
    if (!r && (r = kcd_refusal(&im)))
        snprintf(why, sizeof why, "%s refused by a rule (KCD_REFUSE / kcd_refuse)", im.target);
    if (!r) r = kcd_ptx_isa_check(&im, why, sizeof why);
    if (!r && device >= 0)
        r = kcd_image_fits(&im, kcd_dev_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                           kcd_dev_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), why, sizeof why);
    if (!r && device < 0) { /* a library loaded with no context current: some device must run it */
        r = CUDA_ERROR_NO_BINARY_FOR_GPU;
        snprintf(why, sizeof why, "%s runs on none of the %d devices", im.target, kcd_device_count());
        for (int d = 0; d < kcd_device_count() && r; d++)
            if (!kcd_image_fits(&im, kcd_dev_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                kcd_dev_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), NULL, 0))
                r = CUDA_SUCCESS;
    }
    if (r) {
        kcd_image_free(&im);
        kcd_count_load(library, 1);
        return kcd_fail(r, 0, call, "%s", why);
    }
    kcd_obj *o = kcd_obj_new(library ? KCD_LIB : KCD_MOD);
    if (!o) {
        kcd_image_free(&im);
        return kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
    }
    o->im = im, o->device = device, o->ctx = ctx;
    kcd_count_load(library, 0);
    char nm[32], names[200] = "";
    size_t off = 0;
    for (size_t i = 0; i < im.nkernels && off < sizeof names; i++) {
        int n = snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", im.k[i].name);
        off += n > 0 ? (size_t)n : 0;
    }
    kcd_log("%s %s %s -> %s (%zu kernel%s: %s)", call, im.is_ptx ? "ptx" : "cubin", im.target,
            kcd_name(kcd_obj_handle(o), nm), im.nkernels, im.nkernels == 1 ? "" : "s", names);
    *out = o;
    return CUDA_SUCCESS;
}

static CUresult module_load(const char *call, CUmodule *module, const void *image) {
    kcd_lock();
    int dev;
    uint64_t ctx;
    kcd_obj *o = NULL;
    CUresult r = kcd_ready(call);
    if (!r && (!module || !image)) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "module or image is NULL");
    if (!r && kcd_ctx_current(&dev, &ctx)) r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "no current context");
    if (!r) r = load(call, image, 0, dev, ctx, &o);
    if (!r) *module = kcd_obj_handle(o);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
    KCD_CALLED();
    return module_load("cuModuleLoadData", module, image);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                    void **optionValues) {
    KCD_CALLED();
    if (numOptions && (!options || !optionValues)) return CUDA_ERROR_INVALID_VALUE;
    return module_load("cuModuleLoadDataEx", module, image);
}

/* Unload a module or library handle. */
static CUresult unload(const char *call, void *h, int library) {
    kcd_lock();
    int kind = library ? KCD_LIB : KCD_MOD;
    kcd_obj *o = kcd_obj_find(h, kind);
    char nm[32];
    CUresult r = kcd_ready(call);
    if (!r && !o)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s %s%s", kcd_name(h, nm),
                     kcd_obj_dead(h, kind) ? "was unloaded already (double unload)" : "is not a ",
                     kcd_obj_dead(h, kind) ? "" : kind_word(library));
    if (!r) {
        kcd_log("%s %s", call, kcd_name(h, nm));
        kcd_count_unload(library);
        kcd_obj_free(o);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
    KCD_CALLED();
    return unload("cuModuleUnload", hmod, 0);
}
CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
    KCD_CALLED();
    return unload("cuLibraryUnload", library, 1);
}

/* The function object for kernel `k` of owner `o` in context `ctx`, made on first use. */
static kcd_obj *function_of(const kcd_obj *o, const kcd_kinfo *k, uint64_t ctx, int device) {
    for (size_t i = 0; kcd_obj_at(i); i++) {
        kcd_obj *f = kcd_obj_at(i);
        if (f->kind == KCD_FUNC && f->owner == o->id && f->ki == k && f->ctx == ctx) return f;
    }
    kcd_obj *f = kcd_obj_new(KCD_FUNC);
    if (!f) return NULL;
    f->owner = o->id, f->ki = k, f->oim = &o->im, f->ctx = ctx, f->device = device;
    uint32_t dflt = 48u << 10;
    f->max_dyn = k->static_shared < dflt ? (int)(dflt - k->static_shared) : 0;
    return f;
}

/* Check an owner handle (module or library) and find kernel `name` in it. */
static CUresult lookup(const char *call, void *h, int kind, const char *name, kcd_obj **o, const kcd_kinfo **k) {
    char nm[32];
    CUresult r = kcd_ready(call);
    if (r) return r;
    if (!(*o = kcd_obj_find(h, kind)))
        return kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s: %s", kcd_name(h, nm),
                        kcd_obj_dead(h, kind) ? "unloaded" : "not a live handle of this kind");
    if (!name) return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "name is NULL");
    if (!(*k = kcd_image_kernel(&(*o)->im, name)))
        return kcd_fail(CUDA_ERROR_NOT_FOUND, 0, call, "no kernel '%.200s' in %s (%s)", name, kcd_name(h, nm),
                        (*o)->im.target);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    KCD_CALLED();
    kcd_lock();
    kcd_obj *m = NULL, *f = NULL;
    const kcd_kinfo *k = NULL;
    CUresult r = hfunc ? lookup("cuModuleGetFunction", hmod, KCD_MOD, name, &m, &k)
                       : kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuModuleGetFunction", "hfunc is NULL");
    if (!r && !(f = function_of(m, k, m->ctx, m->device)))
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuModuleGetFunction", "out of memory");
    if (!r) *hfunc = kcd_obj_handle(f);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues, unsigned int numLibraryOptions) {
    KCD_CALLED();
    kcd_lock();
    int dev = -1;
    kcd_obj *o = NULL;
    CUresult r = kcd_ready("cuLibraryLoadData");
    if (!r && (!library || !code))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuLibraryLoadData", "library or code is NULL");
    if (!r && ((numJitOptions && (!jitOptions || !jitOptionsValues)) ||
               (numLibraryOptions && (!libraryOptions || !libraryOptionValues))))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuLibraryLoadData", "options counted but not given");
    if (!r && kcd_ctx_current(&dev, NULL)) dev = -1;
    if (!r) r = load("cuLibraryLoadData", code, 1, dev, 0, &o);
    if (!r) *library = kcd_obj_handle(o);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
    KCD_CALLED();
    kcd_lock();
    kcd_obj *l = NULL, *kern = NULL;
    const kcd_kinfo *k = NULL;
    CUresult r = pKernel ? lookup("cuLibraryGetKernel", library, KCD_LIB, name, &l, &k)
                         : kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuLibraryGetKernel", "pKernel is NULL");
    for (size_t i = 0; !r && kcd_obj_at(i) && !kern; i++) {
        kcd_obj *x = kcd_obj_at(i);
        if (x->kind == KCD_KERN && x->owner == l->id && x->ki == k) kern = x;
    }
    if (!r && !kern) {
        if ((kern = kcd_obj_new(KCD_KERN))) kern->owner = l->id, kern->ki = k, kern->oim = &l->im;
        else r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuLibraryGetKernel", "out of memory");
    }
    if (!r) *pKernel = kcd_obj_handle(kern);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    KCD_CALLED();
    kcd_lock();
    char nm[32], why[200];
    int dev;
    uint64_t ctx;
    kcd_obj *k = kcd_obj_find(kernel, KCD_KERN), *f = NULL;
    CUresult r = kcd_ready("cuKernelGetFunction");
    if (!r && !pFunc) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuKernelGetFunction", "pFunc is NULL");
    if (!r && !k)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, "cuKernelGetFunction", "%s: %s", kcd_name(kernel, nm),
                     kcd_obj_dead(kernel, KCD_KERN) ? "its library was unloaded" : "not a kernel");
    if (!r && kcd_ctx_current(&dev, &ctx))
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, "cuKernelGetFunction", "no current context");
    if (!r && (r = kcd_image_fits(k->oim, kcd_dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                  kcd_dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), why, sizeof why)))
        r = kcd_fail(r, 0, "cuKernelGetFunction", "%s", why);
    if (!r && !(f = function_of(kcd_obj_by_id(k->owner), k->ki, ctx, dev)))
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, "cuKernelGetFunction", "out of memory");
    if (!r) *pFunc = kcd_obj_handle(f);
    kcd_unlock();
    return r;
}

/* ---- function attributes ---- */

uint32_t kcd_func_max_threads(const kcd_obj *f, uint32_t *by_regs) {
    uint32_t m = f->ki->max_threads, dev = (uint32_t)kcd_dev_attr(f->device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    if (dev < m) m = dev;
    uint32_t regs = f->ki->regs, lim = m;
    if (regs) { /* registers are allocated per warp in units of 256 */
        uint32_t per_warp = (regs * 32 + 255) / 256 * 256;
        uint32_t warps = (uint32_t)kcd_dev_attr(f->device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK) / per_warp;
        if (warps * 32 < lim) lim = warps * 32;
    }
    if (by_regs) *by_regs = lim;
    return lim < m ? lim : m;
}

/* The live function behind a handle, or a logged INVALID_HANDLE / NULL. */
static kcd_obj *func(const char *call, CUfunction h, CUresult *r) {
    char nm[32];
    kcd_obj *f = NULL;
    *r = kcd_ready(call);
    if (!*r && !(f = kcd_obj_find(h, KCD_FUNC)))
        *r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s: %s", kcd_name(h, nm),
                      kcd_obj_dead(h, KCD_FUNC) ? "a function whose module was unloaded" : "not a function");
    return f;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    KCD_CALLED();
    kcd_lock();
    CUresult r;
    kcd_obj *f = func("cuFuncGetAttribute", hfunc, &r);
    if (!r && !pi) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncGetAttribute", "pi is NULL");
    if (!r) {
        const kcd_kinfo *k = f->ki;
        int major = kcd_dev_attr(f->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = kcd_dev_attr(f->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)kcd_func_max_threads(f, NULL); break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)k->static_shared; break;
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = (int)k->regs; break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = f->oim->virt_arch; break;
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = f->oim->is_ptx ? major * 10 + minor : f->oim->arch; break;
        case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = f->max_dyn; break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = f->carveout; break;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: *pi = (int)k->cluster[0]; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT: *pi = (int)k->cluster[1]; break;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH: *pi = (int)k->cluster[2]; break;
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
        default: r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncGetAttribute", "attribute %d", (int)attrib);
        }
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    KCD_CALLED();
    kcd_lock();
    CUresult r;
    kcd_obj *f = func("cuFuncSetAttribute", hfunc, &r);
    if (!r && attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        int optin = kcd_dev_attr(f->device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        int most = optin - (int)f->ki->static_shared;
        if (value < 0 || value > most)
            r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncSetAttribute",
                         "%s: MAX_DYNAMIC_SHARED_SIZE_BYTES %d (the most is %d: opt-in %d - static %u)", f->ki->name,
                         value, most, optin, f->ki->static_shared);
        else f->max_dyn = value, kcd_log("cuFuncSetAttribute %s MAX_DYNAMIC_SHARED_SIZE_BYTES=%d", f->ki->name, value);
    } else if (!r && attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
        if (value < -1 || value > 100)
            r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncSetAttribute", "%s: carveout %d", f->ki->name, value);
        else
            f->carveout = value,
            kcd_log("cuFuncSetAttribute %s PREFERRED_SHARED_MEMORY_CARVEOUT=%d", f->ki->name, value);
    } else if (!r) {
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncSetAttribute", "%s: attribute %d cannot be set", f->ki->name,
                     (int)attrib);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func_, size_t paramIndex, size_t *paramOffset, size_t *paramSize) {
    KCD_CALLED();
    kcd_lock();
    CUresult r;
    kcd_obj *f = func("cuFuncGetParamInfo", func_, &r);
    if (!r && !paramOffset) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncGetParamInfo", "paramOffset is NULL");
    /* Past the last parameter is how callers count them: an error, not misuse. */
    if (!r && paramIndex >= f->ki->nparams) r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        *paramOffset = f->ki->poff[paramIndex];
        if (paramSize) *paramSize = f->ki->psize[paramIndex];
    }
    kcd_unlock();
    return r;
}

/* The driver's lazy loading finishes a function here; the double loaded it whole at
 * cuKernelGetFunction (where the device was checked), so only the handle is checked. */
CUresult CUDAAPI cuFuncLoad(CUfunction function) {
    KCD_CALLED();
    kcd_lock();
    CUresult r;
    func("cuFuncLoad", function, &r);
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc) {
    KCD_CALLED();
    kcd_lock();
    CUresult r;
    kcd_obj *f = func("cuFuncGetName", hfunc, &r);
    if (!r && !name) r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, "cuFuncGetName", "name is NULL");
    if (!r) *name = f->ki->name;
    kcd_unlock();
    return r;
}
