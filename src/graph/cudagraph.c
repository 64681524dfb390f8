/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cudagraph.c — the built-in "cuda_graph" post-compile wrapper (version 1): capture the
 * forward launch sequence once per input shape, replay it after.
 *
 * The one idea: a captured CUDA graph bakes in every pointer it was captured with, so the
 * wrapper owns them.  For each shape (dtype, sizes and strides of every input, and whether
 * backward will run) it keeps static input buffers, and captures the inner forward with an
 * allocator that hands out memory it keeps (outputs, saved tensors, scratch).  A call then
 * copies the caller's inputs into the static ones, launches the graph, and copies the
 * outputs (and saved tensors) into memory from the caller's allocator — so what the caller
 * gets is exactly what a direct forward gives: tensors it owns, valid after the next call.
 *
 * Replays of one shape share buffers, so they are ordered: each call waits on an event
 * recorded by the previous one (calls on different streams stay correct), and the host
 * side is under the wrapper's lock.
 *
 * In-place inputs (kc_graph_set_inplace, and every aliased output's input) are written by the
 * replay in the static copy, so each is copied back to the caller's tensor after the launch, on
 * the call's stream, before the call returns: no update is lost.  An aliased output is handed
 * back as the caller's input, as a direct forward does.  A strided in-place input runs directly
 * (its span holds bytes between its elements that are not the graph's to write back), and so does a call whose in-place
 * input shares bytes with another input (one tensor to a direct run, two static copies to a replay).
 *
 * Must not: replay a call whose kernels take values that change per call — a call with an
 * RNG state (philox) or with runtime arguments (kc_graph_forward_args) runs directly, uncaptured, as do shapes beyond the wrapper's limit
 * (parameters: the most shapes kept, in decimal; default 8) and any capture the driver
 * refuses.  Direct runs are always correct; they only lose the launch savings.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../cuda/internal.h"
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "program.h"

#define CG_DEFAULT_SHAPES 8
#define CG_MAX_SHAPES 64

typedef struct pool {
    void **ptrs;
    size_t n, cap;
} pool;

typedef struct capture {
    kc_tensor *sig; /* the inputs' dtypes, ranks, sizes and strides (data: static copies) */
    size_t ninputs, noutputs;
    int with_saved;
    kc_tensor *outputs; /* static outputs */
    kc_saved *saved;    /* static saved tensors, when with_saved */
    pool mem;           /* every buffer the capture owns */
    void *exec;         /* the instantiated CUDA graph */
} capture;

typedef struct cg_layer {
    kc_callable inner;
    pthread_mutex_t mu;
    size_t max_shapes, ncaps;
    capture *caps[CG_MAX_SHAPES];
    void *stream; /* where captures are recorded (never runs anything) */
    void *done;   /* recorded after the last replay's copies */
    int device;
} cg_layer;

static void *pool_alloc(void *ctx, size_t bytes, void *stream) {
    (void)stream;
    pool *p = ctx;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        void **v = realloc(p->ptrs, cap * sizeof *v);
        if (!v) return NULL;
        p->ptrs = v, p->cap = cap;
    }
    void *d;
    if (kc_cuda_malloc_now(&d, bytes)) return NULL;
    p->ptrs[p->n++] = d;
    return d;
}

/* Frees during a capture (scratch) are deferred to the capture's end of life. */
static void pool_free(void *ctx, void *ptr, void *stream) { (void)ctx, (void)ptr, (void)stream; }

static void capture_free(capture *k) {
    if (!k) return;
    kc_cuda_graph_free(k->exec);
    for (size_t i = 0; i < k->mem.n; i++) kc_cuda_free_now(k->mem.ptrs[i]);
    free(k->mem.ptrs);
    kc_saved_free_shell(k->saved);
    free(k->sig);
    free(k->outputs);
    free(k);
}

static int same_shape(const capture *k, const kc_forward_call *c) {
    if (k->ninputs != c->ninputs || k->noutputs != c->noutputs || k->with_saved != (c->saved != NULL)) return 0;
    for (size_t i = 0; i < c->ninputs; i++) {
        const kc_tensor *a = &k->sig[i], *b = &c->inputs[i];
        if (a->dtype != b->dtype || a->rank != b->rank || b->rank < 0 || b->rank > KC_MAX_RANK) return 0;
        for (int r = 0; r < a->rank; r++)
            if (a->sizes[r] != b->sizes[r] || a->strides[r] != b->strides[r]) return 0;
    }
    return 1;
}

/* Whether the graph writes input i in place (its copy-back is exact only for a contiguous input, whose span is its elements). */
static int inplace(const kc_forward_call *c, size_t i) {
    const ptensor *t = kc_program_tensor(c->graph->fwd, KC_ROLE_INPUT, i);
    return t && t->inplace;
}

static int contiguous(const kc_tensor *t) {
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] > 1 && t->strides[d] != stride) return 0;
        if (t->sizes[d] > 0 && __builtin_mul_overflow(stride, t->sizes[d], &stride)) return 0;
    }
    return 1;
}

/* The bytes tensor `t` may touch, [*lo, *hi) (negative strides reach below data; unsigned arithmetic: no UB on any
 * value a caller passes).  An empty tensor touches nothing. */
static void bytes_of(const kc_tensor *t, uintptr_t *lo, uintptr_t *hi) {
    uint64_t below = 0, above = 0, es = kc_dtype_size(t->dtype);
    *lo = *hi = (uintptr_t)t->data;
    for (int d = 0; d < t->rank; d++) {
        if (t->sizes[d] <= 0) return;
        uint64_t st = t->strides[d] < 0 ? 0 - (uint64_t)t->strides[d] : (uint64_t)t->strides[d];
        if (t->strides[d] < 0) below += (uint64_t)(t->sizes[d] - 1) * st;
        else above += (uint64_t)(t->sizes[d] - 1) * st;
    }
    *lo = (uintptr_t)t->data - (uintptr_t)(below * es);
    *hi = (uintptr_t)t->data + (uintptr_t)((above + 1) * es);
}

/* Whether in-place input i shares bytes with another input: a direct run sees one tensor where a replay would see two
 * static copies (the later copy back undoing the earlier, a read seeing the value before the write). */
static int overlaps_another(const kc_forward_call *c, size_t i) {
    uintptr_t lo, hi, lo2, hi2;
    bytes_of(&c->inputs[i], &lo, &hi);
    for (size_t j = 0; j < c->ninputs && lo < hi; j++) {
        if (j == i) continue;
        bytes_of(&c->inputs[j], &lo2, &hi2);
        if (lo2 < hi2 && lo < hi2 && lo2 < hi) return 1;
    }
    return 0;
}

/* Capture the inner forward for the shape of `c` (layer lock held, context current). */
static int capture_new(cg_layer *l, const kc_forward_call *c, capture **out) {
    capture *k = kc_calloc(1, sizeof *k);
    if (!k) return kc_err(KC_ENOMEM, "out of memory");
    k->ninputs = c->ninputs, k->noutputs = c->noutputs, k->with_saved = c->saved != NULL;
    k->sig = kc_calloc(c->ninputs + 1, sizeof *k->sig);
    k->outputs = kc_calloc(c->noutputs + 1, sizeof *k->outputs);
    int rc = k->sig && k->outputs ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->ninputs && !rc; i++) {
        k->sig[i] = c->inputs[i];
        if (!(k->sig[i].data = pool_alloc(&k->mem, kc_tensor_span(&c->inputs[i]), NULL)))
            rc = kc_err(KC_ENOMEM, "cuda_graph: no device memory for static input %zu", i);
    }
    if (!rc && !l->stream) rc = kc_cuda_stream_create(&l->stream);
    if (!rc) rc = kc_cuda_capture_begin(l->stream);
    if (!rc) {
        kc_allocator a = {pool_alloc, pool_free, &k->mem};
        kc_forward_call cc = *c;
        cc.inputs = k->sig;
        cc.outputs = k->outputs;
        cc.saved = c->saved ? &k->saved : NULL;
        cc.stream = l->stream;
        cc.alloc = &a;
        int crc = l->inner.call(l->inner.ctx, &cc);
        rc = kc_cuda_capture_end(l->stream, &k->exec);
        if (crc) rc = crc;
        if (k->saved) {
            /* The static saved tensors must not keep the graph alive (the graph owns this layer). */
            kc_graph_release(k->saved->g);
            k->saved->g = NULL;
        }
    }
    if (rc) {
        capture_free(k);
        return rc;
    }
    *out = k;
    return KC_OK;
}

/* Copy in, launch, copy out (layer lock held, context current). */
static int replay(cg_layer *l, capture *k, kc_forward_call *c) {
    int rc = l->done ? kc_cuda_stream_wait(c->stream, l->done) : kc_cuda_event_create(&l->done);
    for (size_t i = 0; i < c->ninputs && !rc; i++)
        rc = kc_cuda_copy_async(k->sig[i].data, c->inputs[i].data, kc_tensor_span(&c->inputs[i]), c->stream);
    if (!rc) rc = kc_cuda_graph_launch(k->exec, c->stream);
    /* What the graph wrote in place went to the static copy: back to the caller's tensor (an aliased output too). */
    for (size_t i = 0; i < c->ninputs && !rc; i++)
        if (inplace(c, i))
            rc = kc_cuda_copy_async(c->inputs[i].data, k->sig[i].data, kc_tensor_span(&c->inputs[i]), c->stream);
    size_t made = 0;
    for (; made < c->noutputs && !rc; made++) {
        int j = kc_graph_output_alias(c->graph, made);
        if (j >= 0) { /* the caller's input itself, as a direct forward hands it back */
            c->outputs[made] = c->inputs[j];
            continue;
        }
        c->outputs[made] = k->outputs[made];
        c->outputs[made].data = NULL;
        size_t bytes = kc_tensor_span(&k->outputs[made]);
        rc = kc_dev_alloc(c->alloc, bytes, c->stream, &c->outputs[made].data);
        if (!rc) rc = kc_cuda_copy_async(c->outputs[made].data, k->outputs[made].data, bytes, c->stream);
    }
    if (!rc && c->saved) {
        kc_saved *s;
        rc = kc_saved_clone(&s, k->saved, c);
        if (!rc) *c->saved = s;
    }
    if (!rc) rc = kc_cuda_event_record(l->done, c->stream);
    if (rc)
        for (size_t i = 0; i < made; i++)
            if (kc_graph_output_alias(c->graph, i) < 0) kc_tensor_release(&c->outputs[i], c->stream, c->alloc);
    return rc;
}

static int cg_call(void *ctx, kc_forward_call *c) {
    cg_layer *l = ctx;
    if (c->rng || c->philox_set || c->nargs || !c->graph) return l->inner.call(l->inner.ctx, c);
    for (size_t i = 0; i < c->ninputs; i++) {
        if (c->inputs[i].rank < 0 || c->inputs[i].rank > KC_MAX_RANK)
            return kc_err(KC_EINVAL, "input %zu: rank %d", i, c->inputs[i].rank);
        if (inplace(c, i) && !contiguous(&c->inputs[i]))
            return l->inner.call(l->inner.ctx, c); /* a strided in-place input */
    }
    for (size_t i = 0; i < c->ninputs; i++) /* an in-place input sharing bytes with another input */
        if (inplace(c, i) && overlaps_another(c, i)) return l->inner.call(l->inner.ctx, c);
    pthread_mutex_lock(&l->mu);
    l->device = kc_graph_device(c->graph);
    capture *k = NULL;
    for (size_t i = 0; i < l->ncaps && !k; i++)
        if (same_shape(l->caps[i], c)) k = l->caps[i];
    int rc = kc_cuda_push(l->device);
    if (rc) {
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    if (!k && l->ncaps < l->max_shapes) {
        if (capture_new(l, c, &k) == KC_OK) l->caps[l->ncaps++] = k;
        else kc_log(KC_LOG_GRAPH, "cuda_graph: capture failed, running directly: %s", kc_error_last()->message);
    }
    if (k) rc = replay(l, k, c);
    kc_cuda_pop();
    pthread_mutex_unlock(&l->mu);
    return k ? rc : l->inner.call(l->inner.ctx, c);
}

int kc_cudagraph_wrap(const kc_callable *inner, const void *params, size_t len, kc_callable *out) {
    size_t max = CG_DEFAULT_SHAPES;
    if (len) {
        char buf[16];
        if (len >= sizeof buf)
            return kc_err(KC_ECORRUPT, "cuda_graph: parameters must be the most shapes kept, in decimal");
        memcpy(buf, params, len);
        buf[len] = '\0';
        char *end;
        unsigned long v = strtoul(buf, &end, 10);
        if (*end || buf[0] < '0' || buf[0] > '9' || v > CG_MAX_SHAPES)
            return kc_err(KC_ECORRUPT, "cuda_graph: bad shape limit '%s' (0..%d)", buf, CG_MAX_SHAPES);
        max = v;
    }
    cg_layer *l = kc_calloc(1, sizeof *l);
    if (!l) return kc_err(KC_ENOMEM, "out of memory");
    l->inner = *inner;
    l->max_shapes = max;
    l->device = -1;
    pthread_mutex_init(&l->mu, NULL);
    out->call = cg_call;
    out->ctx = l;
    return KC_OK;
}

void kc_cudagraph_unwrap(kc_callable *c) {
    cg_layer *l = c->ctx;
    if (!l) return;
    int pushed = l->device >= 0 && kc_cuda_push(l->device) == KC_OK;
    if (pushed) kc_cuda_synchronize();
    for (size_t i = 0; i < l->ncaps; i++) capture_free(l->caps[i]);
    kc_cuda_event_free(l->done);
    kc_cuda_stream_free(l->stream);
    if (pushed) kc_cuda_pop();
    pthread_mutex_destroy(&l->mu);
    free(l);
}
