/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_launch.c — the driver double's launches and graphs: cuLaunchKernel, and the graphs
 * a stream capture produces (cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphExecDestroy,
 * cuGraphDestroy).
 *
 * The one idea: a launch is checked as the driver checks it — a live function of the current
 * context, grid and block within the device's and the function's limits (launch bounds,
 * .reqntid, registers), dynamic shared memory within the function's
 * MAX_DYNAMIC_SHARED_SIZE_BYTES, a stream that exists, and an argument for every parameter in
 * the image's table — and then exactly param[i].size bytes are read from each kernelParams[i]
 * (or the `extra` buffer) into an argument buffer laid out at the table's offsets, which is
 * what a test sees in kcd_launch.  Nothing runs.  A graph launch replays its kernel nodes as
 * launches of their own (marked replayed), checked again: a node whose module was unloaded
 * since the capture fails the whole graph launch, as the driver's would.
 *
 * An 8-byte argument that holds an address from the double's device range but lies in no live
 * allocation is recorded as a defect (a use after free, as far as anyone can tell without
 * running the kernel); the launch itself still succeeds, as on a GPU.
 *
 * Who calls it: kcache and tests through the entry points.  Must not: read past a parameter's
 * size from a caller's argument, or accept a launch the driver would refuse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

/* The launch configuration against the device and the function. */
static CUresult check_config(const char *call, const kcd_obj *f, const unsigned g[3], const unsigned b[3],
                             unsigned shared) {
    const kcd_kinfo *k = f->ki;
    int d = f->device;
    static const CUdevice_attribute GRID[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                               CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    static const CUdevice_attribute BLOCK[3] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
    for (int i = 0; i < 3; i++) {
        if (g[i] < 1 || g[i] > (unsigned)kcd_dev_attr(d, GRID[i]))
            return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: grid %u,%u,%u (dimension %d: 1..%d)", k->name, g[0],
                            g[1], g[2], i, kcd_dev_attr(d, GRID[i]));
        if (b[i] < 1 || b[i] > (unsigned)kcd_dev_attr(d, BLOCK[i]))
            return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: block %u,%u,%u (dimension %d: 1..%d)", k->name,
                            b[0], b[1], b[2], i, kcd_dev_attr(d, BLOCK[i]));
    }
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    uint32_t by_regs, most = k->max_threads;
    if ((uint32_t)kcd_dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK) < most)
        most = (uint32_t)kcd_dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    kcd_func_max_threads(f, &by_regs);
    if (threads > most)
        return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: %llu threads per block (the most is %u)", k->name,
                        (unsigned long long)threads, most);
    if (k->reqntid[0] && (b[0] != k->reqntid[0] || b[1] != (k->reqntid[1] ? k->reqntid[1] : 1) ||
                          b[2] != (k->reqntid[2] ? k->reqntid[2] : 1)))
        return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: block %u,%u,%u but the kernel requires %u,%u,%u",
                        k->name, b[0], b[1], b[2], k->reqntid[0], k->reqntid[1], k->reqntid[2]);
    if (threads > by_regs)
        return kcd_fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 1, call,
                        "%s: %llu threads × %u registers exceed the block's registers", k->name,
                        (unsigned long long)threads, k->regs);
    if (shared > (unsigned)f->max_dyn)
        return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call,
                        "%s: %u bytes of dynamic shared memory (MAX_DYNAMIC_SHARED_SIZE_BYTES is %d)", k->name, shared,
                        f->max_dyn);
    for (int i = 0; i < 3; i++)
        if (k->cluster[i] && g[i] % k->cluster[i])
            return kcd_fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, 1, call,
                            "%s: grid %u,%u,%u is not a multiple of the cluster %u,%u,%u", k->name, g[0], g[1], g[2],
                            k->cluster[0], k->cluster[1], k->cluster[2]);
    return CUDA_SUCCESS;
}

/* Read the arguments into a buffer of the table's size (*out malloc'd, NULL when it is 0 bytes). */
static CUresult pack(const char *call, const kcd_kinfo *k, void **params, void **extra, unsigned char **out) {
    *out = NULL;
    if (params && extra) return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: both kernelParams and extra", k->name);
    unsigned char *buf = k->ptotal ? calloc(1, k->ptotal) : NULL;
    if (k->ptotal && !buf) return kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
    if (extra) {
        const void *ptr = NULL;
        const size_t *size = NULL;
        int i = 0;
        for (; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) ptr = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = extra[i + 1];
            else break;
        }
        const char *bad = i >= 64 || extra[i] != CU_LAUNCH_PARAM_END ? "an unknown key or no CU_LAUNCH_PARAM_END"
                          : !ptr || !size                            ? "BUFFER_POINTER and BUFFER_SIZE both needed"
                          : *size != k->ptotal                       ? "a buffer size that is not the parameters' size"
                                                                     : NULL;
        if (bad) {
            free(buf);
            return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: extra has %s (%u bytes of parameters)", k->name,
                            bad, k->ptotal);
        }
        if (k->ptotal) memcpy(buf, ptr, k->ptotal);
    } else if (k->nparams) {
        if (!params) {
            free(buf);
            return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s takes %u parameters but kernelParams is NULL",
                            k->name, k->nparams);
        }
        for (uint32_t i = 0; i < k->nparams; i++) {
            if (!params[i]) {
                free(buf);
                return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "%s: kernelParams[%u] is NULL", k->name, i);
            }
            memcpy(buf + k->poff[i], params[i], k->psize[i]);
        }
    }
    *out = buf;
    return CUDA_SUCCESS;
}

/* Defects for 8-byte arguments that look like device addresses no allocation holds. */
static void check_pointers(const char *call, const kcd_kinfo *k, const unsigned char *args) {
    for (uint32_t i = 0; i < k->nparams; i++) {
        if (k->psize[i] != 8) continue;
        uint64_t v = 0;
        for (int j = 7; j >= 0; j--) v = v << 8 | args[k->poff[i] + (uint32_t)j];
        if (kcd_is_devptr(v) && !kcd_alloc_find(v, 0))
            kcd_defect("%s: %s argument %u is %#llx, in no live allocation (freed?)", call, k->name, i,
                       (unsigned long long)v);
    }
}

static void describe(char *out, size_t cap, const kcd_kinfo *k, const unsigned g[3], const unsigned b[3],
                     unsigned shared, CUstream s) {
    char nm[32];
    snprintf(out, cap, "%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%s args=%uB", k->name, g[0], g[1], g[2], b[0],
             b[1], b[2], shared, kcd_name(s, nm), k->ptotal);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra) {
    KCD_CALLED();
    static const char call[] = "cuLaunchKernel";
    kcd_lock();
    const unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    char nm[32], what[300];
    int dev;
    uint64_t ctx;
    kcd_capture *c = NULL;
    unsigned char *args = NULL;
    kcd_obj *fo = kcd_obj_find(f, KCD_FUNC);
    CUresult r = kcd_ready(call);
    if (!r && kcd_ctx_current(&dev, &ctx)) r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "no current context");
    if (!r && !fo)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call,
                     kcd_obj_dead(f, KCD_FUNC) ? "launch of '%s', whose module was unloaded" : "%s is not a function",
                     kcd_obj_dead(f, KCD_FUNC) ? kcd_obj_dead_name(f) : kcd_name(f, nm));
    if (!r && fo->ctx != ctx)
        r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "%s belongs to device %d's context, not the current one",
                     fo->ki->name, fo->device);
    if (!r) r = kcd_stream_use(call, hStream, dev, &c);
    if (!r) r = check_config(call, fo, g, b, sharedMemBytes);
    if (!r) r = pack(call, fo->ki, kernelParams, extra, &args);
    if (r && c) {
        snprintf(what, sizeof what, "a launch failed during the capture");
        c->invalid = 1;
        if (!c->why[0]) snprintf(c->why, sizeof c->why, "%s", what);
    }
    if (!r) {
        check_pointers(call, fo->ki, args);
        describe(what, sizeof what, fo->ki, g, b, sharedMemBytes, hStream);
        unsigned long long seq = kcd_log("%s %s%s", call, what, c ? " captured" : "");
        kcd_record_launch(fo, g, b, sharedMemBytes, hStream, dev, c != NULL, 0, args, fo->ki->ptotal, seq);
        if (c) {
            kcd_node n = {.func = fo->id, .shared = sharedMemBytes, .args = args, .args_len = fo->ki->ptotal};
            memcpy(n.grid, g, sizeof g), memcpy(n.block, b, sizeof b);
            args = NULL;
            if (kcd_nodes_add(&c->nodes, &n)) r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
        }
    }
    free(args);
    kcd_unlock();
    return r;
}

/* ---- graphs ---- */

CUresult kcd_replay(const char *call, const kcd_obj *x, CUstream s, int device) {
    char nm[32], what[300];
    for (size_t i = 0; i < x->nodes.n; i++) { /* all or nothing: check every node first */
        const kcd_node *n = &x->nodes.v[i];
        if (n->is_memset) {
            if (!kcd_alloc_find(n->dst, n->bytes))
                return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call,
                                "node %zu sets %zu bytes at %#llx, outside live allocations", i, n->bytes,
                                (unsigned long long)n->dst);
            continue;
        }
        if (n->is_copy) {
            if (!kcd_alloc_find(n->dst, n->bytes) || !kcd_alloc_find(n->src, n->bytes))
                return kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call,
                                "node %zu copies %zu bytes %#llx <- %#llx, outside live allocations", i, n->bytes,
                                (unsigned long long)n->dst, (unsigned long long)n->src);
            continue;
        }
        const kcd_obj *f = kcd_obj_by_id(n->func);
        if (!f)
            return kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "node %zu launches '%s', whose module was unloaded", i,
                            kcd_obj_dead_name(kcd_handle(KCD_FUNC, n->func)));
        if (f->device != device)
            return kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "node %zu: %s belongs to device %d", i, f->ki->name,
                            f->device);
        CUresult r = check_config(call, f, n->grid, n->block, n->shared);
        if (r) return r;
    }
    unsigned long long seq = kcd_log("%s %s on %s: %zu nodes", call, kcd_name(kcd_obj_handle(x), nm), kcd_name(s, what),
                                     x->nodes.n);
    for (size_t i = 0; i < x->nodes.n; i++) {
        const kcd_node *n = &x->nodes.v[i];
        if (n->is_memset) {
            kcd_memset_now(n->dst, n->value, n->elem, n->bytes);
            continue;
        }
        if (n->is_copy) {
            kcd_copy_now(n->dst, n->src, n->bytes);
            continue;
        }
        const kcd_obj *f = kcd_obj_by_id(n->func);
        check_pointers(call, f->ki, n->args);
        kcd_record_launch(f, n->grid, n->block, n->shared, s, device, 0, 1, n->args, n->args_len, seq);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
    KCD_CALLED();
    static const char call[] = "cuGraphInstantiateWithFlags";
    kcd_lock();
    char n1[32], n2[32];
    int dev;
    uint64_t ctx;
    kcd_obj *g = kcd_obj_find(hGraph, KCD_GRAPH), *x = NULL;
    CUresult r = kcd_ready(call);
    if (!r && kcd_ctx_current(&dev, &ctx)) r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "no current context");
    if (!r && (!phGraphExec || flags > 0xf))
        r = kcd_fail(CUDA_ERROR_INVALID_VALUE, 1, call, "phGraphExec NULL or flags %#llx", flags);
    if (!r && !g)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s %s", kcd_name(hGraph, n1),
                     kcd_obj_dead(hGraph, KCD_GRAPH) ? "was destroyed" : "is not a graph");
    if (!r && (!(x = kcd_obj_new(KCD_EXEC)) || kcd_nodes_copy(&x->nodes, &g->nodes))) {
        if (x) kcd_obj_free(x);
        r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
    }
    if (!r) {
        x->ctx = ctx, x->device = dev;
        *phGraphExec = kcd_obj_handle(x);
        kcd_log("%s %s -> %s (%zu nodes)", call, kcd_name(hGraph, n1), kcd_name(*phGraphExec, n2), x->nodes.n);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    KCD_CALLED();
    static const char call[] = "cuGraphLaunch";
    kcd_lock();
    char n1[32], n2[32];
    int dev;
    kcd_capture *c = NULL;
    kcd_obj *x = kcd_obj_find(hGraphExec, KCD_EXEC);
    CUresult r = kcd_ready(call);
    if (!r && kcd_ctx_current(&dev, NULL)) r = kcd_fail(CUDA_ERROR_INVALID_CONTEXT, 1, call, "no current context");
    if (!r && !x)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s %s", kcd_name(hGraphExec, n1),
                     kcd_obj_dead(hGraphExec, KCD_EXEC) ? "was destroyed" : "is not a graph exec");
    if (!r) r = kcd_stream_use(call, hStream, dev, &c);
    if (!r && c) { /* launched into a capture: its nodes join the capture */
        if (kcd_nodes_copy(&c->nodes, &x->nodes)) r = kcd_fail(CUDA_ERROR_OUT_OF_MEMORY, 0, call, "out of memory");
        else
            kcd_log("%s %s on %s (captured: %zu nodes)", call, kcd_name(hGraphExec, n1), kcd_name(hStream, n2),
                    x->nodes.n);
    } else if (!r) {
        r = kcd_replay(call, x, hStream, dev);
    }
    kcd_unlock();
    return r;
}

/* Destroy a graph or a graph exec. */
static CUresult destroy(const char *call, void *h, int kind) {
    kcd_lock();
    char nm[32];
    kcd_obj *o = kcd_obj_find(h, kind);
    CUresult r = kcd_ready(call);
    if (!r && !o)
        r = kcd_fail(CUDA_ERROR_INVALID_HANDLE, 1, call, "%s %s", kcd_name(h, nm),
                     kcd_obj_dead(h, kind) ? "was destroyed already" : "is not one");
    if (!r) {
        kcd_log("%s %s", call, kcd_name(h, nm));
        kcd_obj_free(o);
    }
    kcd_unlock();
    return r;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
    KCD_CALLED();
    return destroy("cuGraphExecDestroy", hGraphExec, KCD_EXEC);
}
CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
    KCD_CALLED();
    return destroy("cuGraphDestroy", hGraph, KCD_GRAPH);
}
