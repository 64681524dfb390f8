/* SPDX-License-Identifier: Apache-2.0 */
/*
 * desc_writes.c — what a graph writes of its caller's tensors, declared on a description: inputs updated in
 * place, outputs that are aliases of inputs, gradients accumulated into the caller's buffers, and zero steps
 * (a whole tensor or a range set to zero before a step).
 *
 * The one idea: a graph writes only what it declares written, and every such declaration is checked against
 * the others as it is added (an alias has its input's shape and is that input's only alias; an accumulated
 * gradient is never zeroed; a zero step names a tensor its pass may zero — args.c's table says which — and,
 * where the shapes are static, a range inside it), so the key, the loader and the launch see only consistent
 * descriptions.
 *
 * Callers: the public builders (kc_graph_set_inplace, kc_graph_set_alias, kc_graph_set_grad_accumulate,
 * kc_graph_add_zero, kc_graph_add_zero_range: graph.h), spec.c and spec_pass.c (JSON specs), specialize.c.
 * Must not: compile, hash, or touch the cache; the storage and the shared builders' helpers are desc.c's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "graph_internal.h"
#include "program.h"

/* Tensor `i` of `role` (input, output, saved), or NULL. */
static gtensor *nth_tensor(kc_graph_desc *d, kc_tensor_role role, size_t i) {
    for (size_t t = 0; t < d->ntensors; t++)
        if (d->tensors[t].role == role && i-- == 0) return &d->tensors[t];
    return NULL;
}

/* "f32 [N, 4]" — a tensor's declaration, for messages. */
static void decl_str(const gtensor *t, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "%s [", kc_dtype_str(t->dtype));
    for (int r = 0; r < t->rank && o < cap; r++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%.40s", r ? ", " : "", t->sizes[r]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* Whether a backward zero step names the gradient of `input`. */
static int zeroes_grad(const kc_graph_desc *d, size_t input) {
    for (size_t i = 0; i < d->nzeros; i++)
        if (d->zeros[i].role == KC_ROLE_GRAD_IN && d->zeros[i].index == input) return 1;
    return 0;
}

int kc_graph_set_inplace(kc_graph_desc *d, size_t input) {
    if (!d) return kc_err(KC_EINVAL, "kc_graph_set_inplace: NULL description");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    gtensor *t = nth_tensor(d, KC_ROLE_INPUT, input);
    if (!t)
        return kc_err(KC_EINVAL, "graph '%s': no input %zu to update in place (%zu declared)", d->name, input,
                      kc_desc_count_role(d, KC_ROLE_INPUT));
    t->inplace = 1;
    return KC_OK;
}

int kc_graph_set_alias(kc_graph_desc *d, size_t output, size_t input) {
    if (!d) return kc_err(KC_EINVAL, "kc_graph_set_alias: NULL description");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    gtensor *o = nth_tensor(d, KC_ROLE_OUTPUT, output), *in = nth_tensor(d, KC_ROLE_INPUT, input);
    if (!o)
        return kc_err(KC_EINVAL, "graph '%s': no output %zu to alias (%zu declared)", d->name, output,
                      kc_desc_count_role(d, KC_ROLE_OUTPUT));
    if (!in)
        return kc_err(KC_EINVAL, "graph '%s': output %zu is an alias of input %zu, which does not exist (%zu declared)",
                      d->name, output, input, kc_desc_count_role(d, KC_ROLE_INPUT));
    int same = o->dtype == in->dtype && o->rank == in->rank;
    for (int r = 0; same && r < o->rank; r++) same = strcmp(o->sizes[r], in->sizes[r]) == 0;
    if (!same) {
        char a[160], b[160];
        decl_str(o, a, sizeof a), decl_str(in, b, sizeof b);
        return kc_err(KC_EINVAL,
                      "graph '%s': output %zu is an alias of mismatched shape: it is %s, input %zu is %s (an alias "
                      "has its input's dtype, rank and size expressions)",
                      d->name, output, a, input, b);
    }
    for (size_t t = 0, k = 0; t < d->ntensors; t++) {
        if (d->tensors[t].role != KC_ROLE_OUTPUT) continue;
        if (k != output && d->tensors[t].alias == input + 1)
            return kc_err(KC_EINVAL, "graph '%s': input %zu is already the alias of output %zu", d->name, input, k);
        k++;
    }
    o->alias = input + 1;
    in->inplace = 1;
    return KC_OK;
}

int kc_graph_set_grad_accumulate(kc_graph_desc *d, size_t input) {
    if (!d) return kc_err(KC_EINVAL, "kc_graph_set_grad_accumulate: NULL description");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    gtensor *t = nth_tensor(d, KC_ROLE_INPUT, input);
    if (!t)
        return kc_err(KC_EINVAL, "graph '%s': no input %zu to accumulate the gradient of (%zu declared)", d->name,
                      input, kc_desc_count_role(d, KC_ROLE_INPUT));
    if (zeroes_grad(d, input))
        return kc_err(KC_EINVAL,
                      "graph '%s': the gradient of input %zu cannot accumulate: a backward zero step clears it "
                      "(it would discard what the caller accumulated)",
                      d->name, input);
    t->grad_accumulate = 1;
    return KC_OK;
}

int kc_graph_add_zero(kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index) {
    return kc_graph_add_zero_range(d, pass, role, index, NULL, NULL);
}

/* The elements (scratch: bytes) of tensor `index` of `role` when its sizes are constants: 1 with *n, else 0. */
static int static_extent(const kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index, int64_t *n) {
    if (role == KC_ROLE_SCRATCH) {
        for (size_t i = 0, k = 0; i < d->nscratch; i++)
            if (d->scratch[i].pass == pass && k++ == index)
                return kc_expr_eval(d->scratch[i].bytes, NULL, NULL, 0, n) == KC_OK;
        return 0;
    }
    const gtensor *t = nth_tensor((kc_graph_desc *)d, role == KC_ROLE_GRAD_IN ? KC_ROLE_INPUT : role, index);
    *n = 1;
    for (int r = 0; t && r < t->rank; r++) {
        int64_t v;
        if (kc_expr_eval(t->sizes[r], NULL, NULL, 0, &v) != KC_OK || v < 0 || __builtin_mul_overflow(*n, v, n))
            return 0;
    }
    return t != NULL;
}

/* A zero step's range against its tensor, where everything is a constant (else each call checks it). */
static int check_zero_range(const kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index, const char *ref,
                            const char *offset, const char *count) {
    int rc = KC_OK;
    char what[96];
    snprintf(what, sizeof what, "zero step '%s': the offset", ref);
    if (offset && !(rc = kc_desc_check_expr(d, offset, what))) rc = kc_desc_fits(d, offset, "a zero step's offset");
    snprintf(what, sizeof what, "zero step '%s': the count", ref);
    if (!rc && count && !(rc = kc_desc_check_expr(d, count, what))) rc = kc_desc_fits(d, count, "a zero step's count");
    if (rc) return rc;
    int64_t n, off = 0, cnt;
    if (!static_extent(d, pass, role, index, &n) || (offset && kc_expr_eval(offset, NULL, NULL, 0, &off) != KC_OK))
        return KC_OK;
    if (!count) cnt = n - (off < 0 || off > n ? 0 : off);
    else if (kc_expr_eval(count, NULL, NULL, 0, &cnt) != KC_OK) cnt = 0; /* symbolic: only the offset is checked here */
    if (off < 0 || off > n || cnt < 0 || cnt > n - off)
        return kc_err(
            KC_EINVAL, "graph '%s': zero step '%s': the range of %lld %s from %lld is not inside the tensor's %lld",
            d->name, ref, (long long)cnt, role == KC_ROLE_SCRATCH ? "bytes" : "elements", (long long)off, (long long)n);
    return KC_OK;
}

int kc_graph_add_zero_range(kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index, const char *offset,
                            const char *count) {
    if (!d || (pass != KC_PASS_FORWARD && pass != KC_PASS_BACKWARD))
        return kc_err(KC_EINVAL, "kc_graph_add_zero: bad argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    const char *pn = pass == KC_PASS_FORWARD ? "forward" : "backward";
    if (!kc_program_zero_role_ok((int)pass, (int)role))
        return kc_err(KC_EINVAL,
                      "graph '%s': a %s zero step cannot name a tensor of that role (forward: output, saved, "
                      "scratch or an in-place input; backward: grad_in or scratch)",
                      d->name, pn);
    if (d->nsteps + d->nzeros >= KC_GRAPH_MAX_STEPS) return kc_err(KC_EINVAL, "graph '%s': too many steps", d->name);
    size_t have = 0;
    if (role == KC_ROLE_SCRATCH)
        for (size_t i = 0; i < d->nscratch; i++) have += d->scratch[i].pass == pass;
    else have = kc_desc_count_role(d, role == KC_ROLE_GRAD_IN ? KC_ROLE_INPUT : role);
    char ref[48];
    kc_program_zero_ref((int)role, index, ref);
    if (index >= have)
        return kc_err(KC_EINVAL, "graph '%s': %s zero step '%s' names no such tensor (%zu declared)", d->name, pn, ref,
                      have);
    if (role == KC_ROLE_INPUT && !nth_tensor(d, KC_ROLE_INPUT, index)->inplace)
        return kc_err(KC_EINVAL,
                      "graph '%s': zero step '%s': input %zu is not in place (declare it \"inplace\": the graph may "
                      "write only inputs it declares written)",
                      d->name, ref, index);
    if (role == KC_ROLE_GRAD_IN && nth_tensor(d, KC_ROLE_INPUT, index)->grad_accumulate)
        return kc_err(KC_EINVAL,
                      "graph '%s': zero step '%s': the gradient of input %zu accumulates into the caller's buffer; "
                      "zeroing it would discard what the caller accumulated",
                      d->name, ref, index);
    int rc = check_zero_range(d, pass, role, index, ref, offset, count);
    if (rc) return rc;
    char *o = NULL, *c = NULL;
    if ((offset && !(o = kc_strdup(offset))) || (count && !(c = kc_strdup(count)))) {
        free(o);
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    gzero *z = kc_desc_grow((void **)&d->zeros, &d->nzeros, sizeof *z);
    if (!z) {
        free(o), free(c);
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    z->pass = pass;
    z->role = role;
    z->index = index;
    z->offset = o;
    z->count = c;
    for (size_t i = 0; i < d->nsteps; i++) z->at += d->steps[i].pass == pass;
    return KC_OK;
}
