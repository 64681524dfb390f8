/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.c — running a loaded graph's passes: forward (outputs and saved tensors allocated
 * through the caller's allocator or the driver's stream-ordered one), backward from what the
 * forward saved, and the saved record's lifetime.
 *
 * The one idea: a launch program (program.h) knows shapes, dimensions and arguments as
 * expressions; this file binds them to one call's tensors and stream and launches each step
 * (and zeroes what its zero steps name, in order with the launches), freeing on every error
 * path what it allocated — and only that: an aliased output (the caller's input) and an
 * accumulating gradient (the caller's buffer) are never allocated nor freed here.  Nothing
 * here synchronises the stream.
 *
 * Callers: the public kc_graph_forward/backward and kc_saved_free; loaded.c (the graph's own
 * forward is the base of its wrapper chain); cudagraph.c (kc_saved_clone, kc_dev_alloc).
 * Must not: launch a step whose arguments did not pass the program's checks, nor one asking
 * for dynamic shared memory the function was not opted in to (device.c raises or refuses).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../cuda/internal.h"
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "program.h"

int kc_dev_alloc(const kc_allocator *a, size_t bytes, void *stream, void **out) {
    if (a && a->alloc) {
        *out = a->alloc(a->ctx, bytes ? bytes : 1, stream);
        return *out ? KC_OK : kc_err(KC_ENOMEM, "the caller's allocator returned NULL for %zu bytes", bytes);
    }
    return kc_cuda_malloc(out, bytes, stream);
}

void kc_dev_free(const kc_allocator *a, void *p, void *stream) {
    if (!p) return;
    if (a && a->free) a->free(a->ctx, p, stream);
    else if (!a || !a->alloc) kc_cuda_free(p, stream);
}

void kc_tensor_release(kc_tensor *t, void *stream, const kc_allocator *alloc) {
    if (!t || !t->data) return;
    kc_dev_free(alloc, t->data, stream);
    t->data = NULL;
}

int kc_graph_output_alias(const kc_graph *g, size_t output) {
    const ptensor *t = g && g->fwd ? kc_program_tensor(g->fwd, KC_ROLE_OUTPUT, output) : NULL;
    return t ? t->alias : -1;
}

typedef struct bindings {
    const kc_tensor *inputs, *outputs, *saved, *grad_out, *grad_in;
    size_t ninputs, noutputs, nsaved, ngrad_out, ngrad_in;
    void **scratch;
    size_t nscratch;
} bindings;

static int resolve(void *ctx, int role, size_t i, void **ptr) {
    const bindings *b = ctx;
    const kc_tensor *v = NULL;
    size_t n = 0;
    switch (role) {
    case KC_ROLE_INPUT: v = b->inputs, n = b->ninputs; break;
    case KC_ROLE_OUTPUT: v = b->outputs, n = b->noutputs; break;
    case KC_ROLE_SAVED: v = b->saved, n = b->nsaved; break;
    case KC_ROLE_GRAD_OUT: v = b->grad_out, n = b->ngrad_out; break;
    case KC_ROLE_GRAD_IN: v = b->grad_in, n = b->ngrad_in; break;
    case KC_ROLE_SCRATCH:
        if (i >= b->nscratch) return kc_err(KC_ECORRUPT, "no scratch %zu", i);
        *ptr = b->scratch[i];
        return KC_OK;
    default: return kc_err(KC_ECORRUPT, "unknown tensor role %d", role);
    }
    if (!v || i >= n) return kc_err(KC_EINVAL, "the call provides no tensor %zu of role %d", i, role);
    *ptr = v[i].data;
    return KC_OK;
}

/* The call's tensor i of a role (not scratch), or NULL. */
static const kc_tensor *bound(const bindings *b, int role, size_t i) {
    const kc_tensor *v = role == KC_ROLE_INPUT     ? b->inputs
                         : role == KC_ROLE_OUTPUT  ? b->outputs
                         : role == KC_ROLE_SAVED   ? b->saved
                         : role == KC_ROLE_GRAD_IN ? b->grad_in
                                                   : NULL;
    size_t n = role == KC_ROLE_INPUT     ? b->ninputs
               : role == KC_ROLE_OUTPUT  ? b->noutputs
               : role == KC_ROLE_SAVED   ? b->nsaved
               : role == KC_ROLE_GRAD_IN ? b->ngrad_in
                                         : 0;
    return v && i < n ? &v[i] : NULL;
}

static int whole_tensor(const kc_tensor *t, const char *ref, size_t *bytes);

/* Zero step z's address and bytes in this call: a scratch buffer's bytes, or a contiguous tensor's (a caller's
 * strided tensor is refused: zeroing its span would write between its elements), or the range of them it names. */
static int zero_target(const kc_lprog *p, const pzero *z, const int64_t *syms, bindings *b, void **ptr, size_t *bytes) {
    char ref[48];
    kc_program_zero_ref(z->role, z->index, ref);
    int rc = resolve(b, z->role, z->index, ptr);
    if (rc) return kc_err_prefix(rc, "zero step '%s'", ref);
    size_t esize = 1, first = 0;
    if (z->role == KC_ROLE_SCRATCH) {
        rc = kc_program_scratch_bytes(p, z->index, syms, bytes);
    } else {
        const kc_tensor *t = bound(b, z->role, z->index);
        esize = kc_dtype_size(t->dtype);
        rc = whole_tensor(t, ref, bytes);
    }
    if (rc || (!z->offset && !z->count)) return rc;
    /* A range: inside the tensor's elements (scratch: bytes), or the call fails before anything runs. */
    rc = kc_program_zero_range(p, z, syms, ref, (int64_t)(*bytes / esize), esize, &first, bytes);
    if (!rc) *ptr = (void *)((uintptr_t)*ptr + first);
    return rc;
}

/* A caller's or allocated tensor's bytes, when it is contiguous (else zeroing its span would write between its elements). */
static int whole_tensor(const kc_tensor *t, const char *ref, size_t *bytes) {
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] > 1 && t->strides[d] != stride)
            return kc_err(KC_EINVAL,
                          "zero step '%s': the tensor is not contiguous (size[%d] %lld, stride %lld where %lld "
                          "is contiguous): zeroing it whole would write between its elements",
                          ref, d, (long long)t->sizes[d], (long long)t->strides[d], (long long)stride);
        if (t->sizes[d] > 0 && __builtin_mul_overflow(stride, t->sizes[d], &stride))
            return kc_err(KC_EINVAL, "zero step '%s': tensor too large", ref);
    }
    *bytes = kc_tensor_span(t);
    return KC_OK;
}

/* Issue the zero steps placed before kernel step `at` (at == nsteps: after the last). */
static int run_zeros(const kc_lprog *p, size_t at, const int64_t *syms, bindings *b, void *stream) {
    int rc = KC_OK;
    for (size_t z = 0; z < p->nzeros && !rc; z++) {
        void *ptr;
        size_t bytes;
        if (p->zeros[z].at != at) continue;
        if (!(rc = zero_target(p, &p->zeros[z], syms, b, &ptr, &bytes))) rc = kc_cuda_memset_async(ptr, bytes, stream);
    }
    return rc;
}

/* Allocate scratch, launch every step (zeroing what the zero steps name before the step they precede), free
 * scratch (stream-ordered).  Every zero step's tensor is checked first; when a step passes a tensor at an
 * offset, every step's dimensions and arguments too: a call that cannot run whole fails before anything is
 * launched. */
static int run_steps(kc_graph *g, const kc_lprog *p, const int64_t *syms, bindings *b, void *stream,
                     const kc_allocator *alloc, const uint64_t *philox, const kc_value *rvals) {
    void *scratch[64] = {0};
    if (p->nscratch > 64) return kc_err(KC_ECORRUPT, "too many scratch buffers");
    int rc = KC_OK;
    for (size_t i = 0; i < p->nscratch && !rc; i++) {
        size_t bytes;
        rc = kc_program_scratch_bytes(p, i, syms, &bytes);
        if (!rc) rc = kc_dev_alloc(alloc, bytes, stream, &scratch[i]);
    }
    b->scratch = scratch;
    b->nscratch = p->nscratch;
    for (size_t z = 0; z < p->nzeros && !rc; z++) {
        void *ptr;
        size_t bytes;
        rc = zero_target(p, &p->zeros[z], syms, b, &ptr, &bytes);
    }
    /* Every step is checked before the first launches — dimensions, arguments (a tensor offset outside its
     * tensor), dynamic shared memory against the device — so a call fails whole or runs whole: never a pass
     * that launched its first steps and then refused a later one. */
    kc_argpack pack = {syms, resolve, b, philox, rvals};
    for (size_t i = 0; i < p->nsteps && !rc; i++) {
        unsigned grid[3], block[3], shared;
        kc_argval vals[256];
        void *args[256];
        rc = kc_program_dims(p, i, syms, grid, block, &shared);
        if (!rc) rc = kc_program_pack(p, i, &pack, vals, args);
        if (!rc && grid[0] && grid[1] && grid[2]) rc = kc_device_smem_ready(g, p, i, shared);
    }
    for (size_t i = 0; i < p->nsteps && !rc; i++) {
        unsigned grid[3], block[3], shared;
        kc_argval vals[256];
        void *args[256];
        if (p->nzeros && (rc = run_zeros(p, i, syms, b, stream))) break;
        rc = kc_program_dims(p, i, syms, grid, block, &shared);
        if (!rc) rc = kc_program_pack(p, i, &pack, vals, args);
        if (!rc && (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)) continue; /* empty tensors: nothing to do */
        if (!rc) rc = kc_device_smem_ready(g, p, i, shared); /* over 48 KiB: opted in, or refused here */
        if (!rc) rc = kc_cuda_launch(g->fns[p->steps[i].kernel], grid, block, shared, stream, args);
    }
    if (!rc && p->nzeros) rc = run_zeros(p, p->nsteps, syms, b, stream);
    for (size_t i = 0; i < p->nscratch; i++) kc_dev_free(alloc, scratch[i], stream);
    return rc;
}

/* Whether tensor i of `role` (grads: the gradients of the inputs) is the caller's — an aliased output, an
 * accumulating gradient — and so never allocated nor freed here. */
static int callers(const kc_lprog *p, int role, int grads, size_t i) {
    const ptensor *t = kc_program_tensor(p, role, i);
    return t && (grads ? t->accumulate : role == KC_ROLE_OUTPUT && t->alias >= 0);
}

/* Release what alloc_role allocated (the caller's tensors stay). */
static void release_role(const kc_lprog *p, int role, int grads, kc_tensor *out, size_t n, void *stream,
                         const kc_allocator *alloc) {
    for (size_t i = 0; i < n; i++)
        if (!callers(p, role, grads, i)) kc_tensor_release(&out[i], stream, alloc);
}

/* The caller's buffer for accumulating gradient i: non-NULL, input i's dtype and sizes, contiguous. */
static int check_accumulating(const kc_tensor *gi, const kc_tensor *in, size_t i) {
    int ok = gi->data && gi->dtype == in->dtype && gi->rank == in->rank;
    int64_t stride = 1;
    for (int d = (ok ? in->rank : 0) - 1; ok && d >= 0; d--) {
        ok = gi->sizes[d] == in->sizes[d] && (gi->sizes[d] <= 1 || gi->strides[d] == stride);
        if (ok && gi->sizes[d] > 0) ok = !__builtin_mul_overflow(stride, gi->sizes[d], &stride);
    }
    if (ok) return KC_OK;
    return kc_err(KC_EINVAL,
                  "grad_inputs[%zu]: the gradient of input %zu accumulates (\"grad\": \"accumulate\"): pass the "
                  "caller's buffer there (%s)",
                  i, i, !gi->data ? "its data is NULL" : "non-NULL, the input's dtype and sizes, contiguous");
}

/* The n tensors `out` of a role of program p; `grads`: the gradients of the inputs. */
typedef struct roleset {
    const kc_lprog *p;
    int role, grads;
    kc_tensor *out;
    size_t n;
} roleset;

/* Allocate the tensors of a role with the program's shapes.  An aliased output becomes the input it is (inputs[j]);
 * an accumulating gradient is the caller's, checked. */
static int alloc_role(const roleset *rs, const kc_tensor *inputs, const int64_t *syms, void *stream,
                      const kc_allocator *alloc) {
    const kc_lprog *p = rs->p;
    int role = rs->role, grads = rs->grads;
    kc_tensor *out = rs->out;
    for (size_t i = 0; i < rs->n; i++) {
        const ptensor *t = kc_program_tensor(p, role, i);
        size_t bytes;
        int rc = t ? KC_OK : kc_err(KC_ECORRUPT, "no tensor %zu", i);
        if (!rc && grads && t->accumulate) rc = check_accumulating(&out[i], &inputs[i], i);
        else if (!rc && !grads && role == KC_ROLE_OUTPUT && t->alias >= 0) out[i] = inputs[t->alias];
        else if (!rc && !(rc = kc_program_shape(p, t, syms, &out[i], &bytes)))
            rc = kc_dev_alloc(alloc, bytes, stream, &out[i].data);
        if (rc) {
            release_role(p, role, grads, out, i, stream, alloc);
            return rc;
        }
    }
    return KC_OK;
}

int kc_graph_run_forward(void *ctx, kc_forward_call *c) {
    kc_graph *g = ctx;
    const kc_lprog *p = g->fwd;
    size_t nout = kc_program_count(p, KC_ROLE_OUTPUT), nsaved = kc_program_count(p, KC_ROLE_SAVED);
    if (c->noutputs != nout)
        return kc_err(KC_EINVAL, "the graph has %zu outputs, room for %zu given", nout, c->noutputs);
    int vrc = kc_program_check_values(p, c->args, c->nargs); /* again: a wrapper may have changed the call */
    if (vrc) return vrc;
    int64_t *syms = kc_calloc(p->nsyms + 1, sizeof *syms);
    kc_tensor *saved = kc_calloc(nsaved + 1, sizeof *saved);
    if (!syms || !saved) {
        free(syms);
        free(saved);
        return kc_err(KC_ENOMEM, "forward: out of memory");
    }
    int rc = kc_cuda_push(g->device);
    int pushed = rc == KC_OK, outs = 0, sv = 0;
    if (!rc) rc = kc_program_bind(p, c->inputs, c->ninputs, syms);
    if (!rc &&
        !(rc = alloc_role(&(roleset){p, KC_ROLE_OUTPUT, 0, c->outputs, nout}, c->inputs, syms, c->stream, c->alloc)))
        outs = 1;
    if (!rc && !(rc = alloc_role(&(roleset){p, KC_ROLE_SAVED, 0, saved, nsaved}, NULL, syms, c->stream, c->alloc)))
        sv = 1;
    if (!rc) {
        bindings b = {c->inputs, c->outputs, saved, NULL, NULL, c->ninputs, nout, nsaved, 0, 0, NULL, 0};
        uint64_t philox[2] = {c->philox_seed, c->philox_offset};
        rc = run_steps(g, p, syms, &b, c->stream, c->alloc, c->philox_set ? philox : NULL, c->args);
    }
    kc_saved *s = NULL;
    if (!rc && c->saved) {
        s = kc_calloc(1, sizeof *s);
        if (s) {
            s->inputs = kc_calloc(c->ninputs + 1, sizeof *s->inputs);
            s->outputs = kc_calloc(nout + 1, sizeof *s->outputs);
            s->args = kc_calloc(c->nargs + 1, sizeof *s->args);
        }
        if (!s || !s->inputs || !s->outputs || !s->args) {
            if (s) free(s->inputs), free(s->outputs), free(s->args);
            free(s);
            s = NULL;
            rc = kc_err(KC_ENOMEM, "forward: out of memory");
        } else {
            __atomic_add_fetch(&g->refs, 1, __ATOMIC_ACQ_REL);
            s->g = g;
            s->syms = syms;
            s->saved = saved;
            s->nsaved = nsaved;
            memcpy(s->inputs, c->inputs, c->ninputs * sizeof *s->inputs);
            memcpy(s->outputs, c->outputs, nout * sizeof *s->outputs);
            s->ninputs = c->ninputs;
            s->noutputs = nout;
            if (c->alloc) s->alloc = *c->alloc, s->has_alloc = 1;
            s->philox[0] = c->philox_seed;
            s->philox[1] = c->philox_offset;
            s->philox_set = c->philox_set;
            if (c->nargs) memcpy(s->args, c->args, c->nargs * sizeof *s->args);
            s->nargs = c->nargs;
            *c->saved = s;
            syms = NULL;
            saved = NULL;
        }
    }
    if (saved && sv)
        for (size_t i = 0; i < nsaved; i++) kc_tensor_release(&saved[i], c->stream, c->alloc);
    if (rc && outs) release_role(p, KC_ROLE_OUTPUT, 0, c->outputs, nout, c->stream, c->alloc);
    if (pushed) kc_cuda_pop();
    free(syms);
    free(saved);
    return rc;
}

/* A caller's kc_graph_call, of the version this build knows, or KC_EVERSION / KC_EINVAL. */
static int call_check(const kc_graph_call *call, const char *who) {
    if (!call) return kc_err(KC_EINVAL, "%s: call is NULL", who);
    if (call->version != KC_GRAPH_CALL_VERSION)
        return kc_err(KC_EVERSION, "%s: kc_graph_call version %u is not supported (this build: %d)", who, call->version,
                      KC_GRAPH_CALL_VERSION);
    return KC_OK;
}

int kc_graph_forward_call(kc_graph *g, const kc_graph_call *call, kc_saved **saved) {
    int rc = call_check(call, "kc_graph_forward");
    if (rc) return rc;
    if (!g || (call->ninputs && !call->inputs) || (call->noutputs && !call->outputs))
        return kc_err(KC_EINVAL, "kc_graph_forward: bad argument");
    if (saved) *saved = NULL;
    if ((rc = kc_program_check_values(g->fwd, call->args, call->nargs))) return rc;
    kc_forward_call c = {g,
                         call->inputs,
                         call->ninputs,
                         call->outputs,
                         call->noutputs,
                         saved,
                         call->stream,
                         call->alloc,
                         call->rng,
                         0,
                         0,
                         0,
                         call->args,
                         call->nargs};
    return kc_wrapper_chain_call(g->chain, &c);
}

int kc_graph_forward_args(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                          kc_saved **saved, void *stream, const kc_allocator *alloc, kc_rng_state *rng,
                          const kc_value *args, size_t nargs) {
    kc_graph_call c = {KC_GRAPH_CALL_VERSION, inputs, ninputs, outputs, noutputs, stream, alloc, rng, args, nargs};
    return kc_graph_forward_call(g, &c, saved);
}

int kc_graph_forward_rng(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                         kc_saved **saved, void *stream, const kc_allocator *alloc, kc_rng_state *rng) {
    kc_graph_call c = {KC_GRAPH_CALL_VERSION, inputs, ninputs, outputs, noutputs, stream, alloc, rng, NULL, 0};
    return kc_graph_forward_call(g, &c, saved);
}

int kc_graph_forward(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                     kc_saved **saved, void *stream, const kc_allocator *alloc) {
    return kc_graph_forward_rng(g, inputs, ninputs, outputs, noutputs, saved, stream, alloc, NULL);
}

int kc_graph_backward(kc_graph *g, kc_saved *s, const kc_tensor *grad_outputs, size_t n, kc_tensor *grad_inputs,
                      size_t ninputs, void *stream) {
    return kc_graph_backward_args(g, s, grad_outputs, n, grad_inputs, ninputs, stream, NULL, 0);
}

int kc_graph_backward_args(kc_graph *g, kc_saved *s, const kc_tensor *grad_outputs, size_t n, kc_tensor *grad_inputs,
                           size_t ninputs, void *stream, const kc_value *args, size_t nargs) {
    kc_graph_call c = {KC_GRAPH_CALL_VERSION, grad_outputs, n, grad_inputs, ninputs, stream, NULL, NULL, args, nargs};
    return kc_graph_backward_call(g, s, &c);
}

/* The gradients given have the forward's outputs' shapes, and as many as it had outputs and inputs. */
static int backward_shapes(const kc_saved *s, const kc_graph_call *call) {
    if (call->ninputs != s->noutputs || call->noutputs != s->ninputs)
        return kc_err(KC_EINVAL, "backward takes %zu gradients and gives %zu; %zu and %zu given", s->noutputs,
                      s->ninputs, call->ninputs, call->noutputs);
    for (size_t i = 0; i < call->ninputs; i++) {
        const kc_tensor *t = &call->inputs[i];
        if (t->rank != s->outputs[i].rank ||
            memcmp(t->sizes, s->outputs[i].sizes, sizeof(int64_t) * (size_t)t->rank) != 0)
            return kc_err(KC_EINVAL, "grad_outputs[%zu] does not have output %zu's shape", i, i);
    }
    return KC_OK;
}

int kc_graph_backward_call(kc_graph *g, kc_saved *s, const kc_graph_call *call) {
    int rc = call_check(call, "kc_graph_backward");
    if (rc) return rc;
    if (!g || !s || s->g != g || (call->ninputs && !call->inputs) || (call->noutputs && !call->outputs))
        return kc_err(KC_EINVAL, "kc_graph_backward: bad argument (saved must come from this graph's forward)");
    if (call->alloc || call->rng)
        return kc_err(KC_EINVAL, "kc_graph_backward: alloc and rng are the forward's: leave them NULL");
    if (!g->bwd) return kc_err(KC_EINVAL, "the graph has no backward pass");
    const kc_value *args = call->args;
    size_t nargs = call->nargs;
    if (!args && !nargs) args = s->args, nargs = s->nargs; /* the forward's values */
    if ((rc = kc_program_check_values(g->bwd, args, nargs)) || (rc = backward_shapes(s, call))) return rc;
    const kc_allocator *alloc = s->has_alloc ? &s->alloc : NULL;
    void *stream = call->stream;
    kc_tensor *grad_inputs = call->outputs;
    if ((rc = kc_cuda_push(g->device))) return rc;
    rc = alloc_role(&(roleset){g->bwd, KC_ROLE_INPUT, 1, grad_inputs, call->noutputs}, s->inputs, s->syms, stream,
                    alloc);
    if (!rc) {
        bindings b = {s->inputs,   s->outputs, s->saved,      call->inputs,   grad_inputs, s->ninputs,
                      s->noutputs, s->nsaved,  call->ninputs, call->noutputs, NULL,        0};
        rc = run_steps(g, g->bwd, s->syms, &b, stream, alloc, s->philox_set ? s->philox : NULL, args);
        if (rc) release_role(g->bwd, KC_ROLE_INPUT, 1, grad_inputs, call->noutputs, stream, alloc);
    }
    kc_cuda_pop();
    return rc;
}

void kc_saved_free(kc_saved *s, void *stream) {
    if (!s) return;
    const kc_allocator *alloc = s->has_alloc ? &s->alloc : NULL;
    if (kc_cuda_push(s->g->device) == KC_OK) {
        for (size_t i = 0; i < s->nsaved; i++) kc_tensor_release(&s->saved[i], stream, alloc);
        kc_cuda_pop();
    }
    kc_graph_release(s->g);
    free(s->saved);
    free(s->syms);
    free(s->inputs);
    free(s->outputs);
    free(s->args);
    free(s);
}

size_t kc_tensor_span(const kc_tensor *t) {
    uint64_t last = 0;
    for (int r = 0; r < t->rank; r++) {
        if (t->sizes[r] <= 0) return 0;
        last += (uint64_t)(t->sizes[r] - 1) *
                (t->strides[r] < 0 ? 0 - (uint64_t)t->strides[r] : (uint64_t)t->strides[r]);
    }
    return (size_t)((last + 1) * kc_dtype_size(t->dtype));
}

void kc_saved_free_shell(kc_saved *s) {
    if (!s) return;
    free(s->saved);
    free(s->syms);
    free(s->inputs);
    free(s->outputs);
    free(s->args);
    free(s);
}

int kc_saved_clone(kc_saved **out, const kc_saved *src, const kc_forward_call *c) {
    *out = NULL;
    kc_saved *s = kc_calloc(1, sizeof *s);
    if (!s) return kc_err(KC_ENOMEM, "out of memory");
    const kc_lprog *p = c->graph->fwd;
    s->syms = kc_calloc(p->nsyms + 1, sizeof *s->syms);
    s->saved = kc_calloc(src->nsaved + 1, sizeof *s->saved);
    s->inputs = kc_calloc(c->ninputs + 1, sizeof *s->inputs);
    s->outputs = kc_calloc(c->noutputs + 1, sizeof *s->outputs);
    s->args = kc_calloc(c->nargs + 1, sizeof *s->args);
    if (!s->syms || !s->saved || !s->inputs || !s->outputs || !s->args) {
        kc_saved_free_shell(s);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    memcpy(s->syms, src->syms, p->nsyms * sizeof *s->syms);
    memcpy(s->inputs, c->inputs, c->ninputs * sizeof *s->inputs);
    memcpy(s->outputs, c->outputs, c->noutputs * sizeof *s->outputs);
    s->ninputs = c->ninputs;
    s->noutputs = c->noutputs;
    if (c->nargs) memcpy(s->args, c->args, c->nargs * sizeof *s->args);
    s->nargs = c->nargs;
    if (c->alloc) s->alloc = *c->alloc, s->has_alloc = 1;
    int rc = KC_OK;
    size_t i;
    for (i = 0; i < src->nsaved && !rc; i++) {
        s->saved[i] = src->saved[i];
        s->saved[i].data = NULL;
        size_t bytes = kc_tensor_span(&src->saved[i]);
        rc = kc_dev_alloc(c->alloc, bytes, c->stream, &s->saved[i].data);
        if (!rc) rc = kc_cuda_copy_async(s->saved[i].data, src->saved[i].data, bytes, c->stream);
    }
    if (rc) {
        for (size_t k = 0; k < i; k++) kc_dev_free(c->alloc, s->saved[k].data, c->stream);
        kc_saved_free_shell(s);
        return rc;
    }
    s->nsaved = src->nsaved;
    __atomic_add_fetch(&c->graph->refs, 1, __ATOMIC_ACQ_REL);
    s->g = c->graph;
    *out = s;
    return KC_OK;
}
