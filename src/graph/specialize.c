/* SPDX-License-Identifier: Apache-2.0 */
/*
 * specialize.c — a description read back (its inputs, outputs, saved tensors, symbols and
 * runtime arguments), and a new description derived from one for a call and a site's answer
 * (kcache/guard.h's `dynamic` masks): the dimensions the answer marks symbolic, every other
 * one the call's size.
 *
 * The one idea: a description is only ever specialized, never generalized beyond what its
 * author wrote.  A dimension written as a symbol may stay a symbol or become the call's size
 * (substituting a value for a symbol is exact: every expression the author wrote over it stays
 * true); a dimension written as a number stays that number ([Note: specializing a
 * description]).  The result is rebuilt through desc.c's checked builders, so it is checked as
 * if written by hand, and the original is never touched.
 *
 * Callers: the public API (graph.h): a runtime applying kc_site_lookup's answer, the CLI,
 * tests.  Must not: compile, hash, touch the cache, or rewrite an expression as text (symbols
 * are found by the parser, kc_expr_subst, so "N" never matches inside "NN").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "argkind.h"
#include "graph_internal.h"
#include "program.h"

/* ---- reading a description back ---- */

static int readable_role(kc_tensor_role role) {
    return role == KC_ROLE_INPUT || role == KC_ROLE_OUTPUT || role == KC_ROLE_SAVED;
}

/* Every reader below reads a vouched description first ([Note: spec direct mode] in spec_direct.c): one
 * that cannot be read now answers as an empty one would, with the reason in kc_error_last(). */
size_t kc_graph_desc_count(const kc_graph_desc *d, kc_tensor_role role) {
    size_t n = 0;
    if (d && kc_spec_direct_ready_(d)) return 0;
    for (size_t i = 0; d && readable_role(role) && i < d->ntensors; i++) n += d->tensors[i].role == role;
    return n;
}

int kc_graph_desc_tensor(const kc_graph_desc *d, kc_tensor_role role, size_t i, kc_graph_tensor_desc *out) {
    if (!d || !out || !readable_role(role)) return kc_err(KC_EINVAL, "kc_graph_desc_tensor: bad argument or role");
    int rrc = kc_spec_direct_ready_(d);
    if (rrc) return rrc;
    unsigned version = out->version;
    int vrc = kc_api_version("kc_graph_desc_tensor", "kc_graph_tensor_desc", "KC_GRAPH_TENSOR_DESC_INIT", version,
                             KC_GRAPH_TENSOR_DESC_VERSION);
    if (vrc) return vrc;
    memset(out, 0, sizeof *out); /* version 1 is the only one: its size is the struct's */
    out->version = version;
    for (size_t t = 0, k = 0; t < d->ntensors; t++) {
        const gtensor *g = &d->tensors[t];
        if (g->role != role || k++ != i) continue;
        out->dtype = g->dtype;
        out->rank = g->rank;
        out->requires_grad = g->requires_grad;
        out->inplace = g->inplace;
        out->grad_accumulate = g->grad_accumulate;
        out->alias = g->alias ? (int)(g->alias - 1) : -1;
        for (int r = 0; r < g->rank; r++) out->sizes[r] = g->sizes[r], out->strides[r] = g->strides[r];
        return KC_OK;
    }
    return kc_err(KC_EINVAL, "graph '%s': no tensor %zu of that role (%zu declared)", d->name, i,
                  kc_graph_desc_count(d, role));
}

const char *kc_graph_desc_symbol(const kc_graph_desc *d, size_t i) {
    return d && !kc_spec_direct_ready_(d) && i < d->nsymbols ? d->symbols[i] : NULL;
}

size_t kc_graph_desc_nargs(const kc_graph_desc *d) { return d && !kc_spec_direct_ready_(d) ? d->nrargs : 0; }

int kc_graph_desc_arg(const kc_graph_desc *d, size_t i, const char **name, kc_arg_type *type) {
    int rrc = d ? kc_spec_direct_ready_(d) : KC_OK;
    if (rrc) return rrc;
    if (!d || i >= d->nrargs) return kc_err(KC_EINVAL, "kc_graph_desc_arg: no runtime argument %zu", i);
    if (name) *name = d->rargs[i].name;
    if (type) *type = d->rargs[i].type;
    return KC_OK;
}

/*
 * [Note: specializing a description]
 * For each input dimension, as the description wrote it:
 *  - a symbol S: S stays a symbol when any dimension written S is dynamic in the answer (every
 *    dimension written S is then symbolic, and `applied` says so); else every dimension written
 *    S must have one size in the call, and that size replaces S in every expression — input
 *    sizes and strides, output and saved sizes, scratch, grid, block, shared memory, and the
 *    arguments ("e32:"/"e64:" expressions, a tensor's "+EXPR" offset, and "sym:S", which
 *    becomes "e64:SIZE": the same 8-byte integer).  Substituting a value for a symbol keeps
 *    every expression true for that value, so the result computes what the original would.
 *  - a number: the call must have that size.  The answer making it dynamic is an error: a
 *    number in a description is a promise its kernels and expressions may rely on (a loop
 *    bound in the source, a block size, a product written out as 1024), and nothing in the
 *    description shows every place that would have to change with it — a new symbol there
 *    could launch wrong dimensions.  A spec marks a dimension that may vary by writing a
 *    symbol.  With KC_SPECIALIZE_KEEP_NUMBERS the dimension stays static instead and `applied`
 *    leaves it out, so the site keeps guarding it.
 * The new description is built through desc.c's checked builders: an argument kind this file
 * does not rewrite that still names a specialized symbol fails their check (an unknown
 * symbol) — an error, never a description that reads a symbol no input binds.
 */

/* The substitutions: static symbols and their values as decimal strings. */
typedef struct subs {
    const char **names;
    char (*vals)[24];
    const char **repl;
    size_t n;
} subs;

/* Where an error points: the spec's file and place, or the graph's name. */
static int place_err(const kc_graph_desc *d, size_t i, int r, const char *fmt, ...) KC_PRINTF(4, 5);
static int place_err(const kc_graph_desc *d, size_t i, int r, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->spec_path) return kc_err(KC_EINVAL, "%s: inputs[%zu].sizes[%d]: %s", d->spec_path, i, r, msg);
    return kc_err(KC_EINVAL, "graph '%s', input %zu size[%d]: %s", d->name, i, r, msg);
}

static int is_name(const char *s) { return s && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'); }

/* `e` with the substitutions applied (*out owned). */
static int subst_expr(const subs *x, const char *e, char **out) {
    return kc_expr_subst(e, x->names, x->repl, x->n, out);
}

/* A zero step, its range's expressions rewritten. */
static int copy_zero(kc_graph_desc *nd, const gzero *g, const subs *x) {
    char *o = NULL, *c = NULL;
    int rc = g->offset ? subst_expr(x, g->offset, &o) : KC_OK;
    if (!rc && g->count) rc = subst_expr(x, g->count, &c);
    if (!rc) rc = kc_graph_add_zero_range(nd, g->pass, g->role, g->index, o, c);
    free(o);
    free(c);
    return rc;
}

/* The value a symbol is specialized to, or NULL when it stays a symbol. */
static const char *value_of(const subs *x, const char *name) {
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->names[i], name) == 0) return x->repl[i];
    return NULL;
}

/* One step argument rewritten (*out owned): the kinds that carry an expression or a symbol (args.c's table). */
static int subst_arg(const subs *x, const char *a, char **out) {
    *out = NULL;
    const kc_argkind *k = kc_argkind_of(a);
    if (k && k->body == KC_AB_SYM) {
        const char *v = value_of(x, a + strlen(k->spelling));
        kc_buf b = {NULL, 0, 0, 0};
        kc_buf_printf(&b, v ? "e64:%s" : "%s", v ? v : a);
        *out = kc_buf_take_str(&b);
        return *out ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
    }
    size_t head = kc_program_arg_expr_at(a); /* bytes of `a` kept as they are; the rest is an expression */
    if (!head) return (*out = kc_strdup(a)) ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
    char *e;
    int rc = subst_expr(x, a + head, &e);
    if (rc) return rc;
    kc_buf b = {NULL, 0, 0, 0};
    kc_buf_put(&b, a, head);
    kc_buf_put(&b, e, strlen(e));
    free(e);
    *out = b.failed ? NULL : kc_buf_take_str(&b);
    if (!*out) kc_buf_free(&b);
    return *out ? KC_OK : kc_err(KC_ENOMEM, "out of memory");
}

static void free_n(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]), v[i] = NULL;
}

/* Add tensor `g` of `d` to `nd`, its expressions rewritten. */
static int copy_tensor(kc_graph_desc *nd, const gtensor *g, const subs *x) {
    char *sizes[KC_MAX_RANK] = {0}, *strides[KC_MAX_RANK] = {0};
    int rc = KC_OK;
    for (int r = 0; r < g->rank && !rc; r++) {
        rc = subst_expr(x, g->sizes[r], &sizes[r]);
        if (!rc && g->role == KC_ROLE_INPUT) rc = subst_expr(x, g->strides[r], &strides[r]);
    }
    if (!rc && g->role == KC_ROLE_INPUT)
        rc = kc_graph_add_input(nd, g->dtype, g->rank, (const char *const *)sizes, (const char *const *)strides,
                                g->requires_grad);
    else if (!rc) rc = kc_graph_add_tensor(nd, g->role, g->dtype, g->rank, (const char *const *)sizes);
    free_n(sizes, KC_MAX_RANK);
    free_n(strides, KC_MAX_RANK);
    return rc;
}

static int copy_step(kc_graph_desc *nd, const gstep *s, const subs *x) {
    char *dims[7] = {0}, **args = s->nargs ? kc_calloc(s->nargs, sizeof *args) : NULL;
    int rc = s->nargs && !args ? kc_err(KC_ENOMEM, "out of memory") : KC_OK;
    for (int j = 0; j < 3 && !rc; j++)
        if (!(rc = subst_expr(x, s->grid[j], &dims[j]))) rc = subst_expr(x, s->block[j], &dims[3 + j]);
    if (!rc) rc = subst_expr(x, s->shared, &dims[6]);
    for (size_t a = 0; a < s->nargs && !rc; a++) rc = subst_arg(x, s->args[a], &args[a]);
    if (!rc)
        rc = kc_graph_add_step(nd, s->pass, s->kernel, (const char *const *)dims, (const char *const *)dims + 3,
                               dims[6], (const char *const *)args, s->nargs);
    free_n(dims, 7);
    if (args) free_n(args, s->nargs);
    free(args);
    return rc;
}

/* The kernels, runtime arguments and tensors of `d` into `nd`, then what the graph writes: in-place inputs,
 * accumulating gradients, aliased outputs (every tensor is there by then). */
static int rebuild_tensors(kc_graph_desc *nd, const kc_graph_desc *d, const subs *x) {
    int rc = KC_OK;
    for (size_t i = 0; i < d->nkernels && !rc; i++) {
        kc_kernel_src k = kc_graph_kernel_src(&d->kernels[i]);
        rc = kc_graph_add_kernel(nd, &k, NULL);
    }
    for (size_t i = 0; i < d->nrargs && !rc; i++) rc = kc_graph_add_arg(nd, d->rargs[i].name, d->rargs[i].type);
    for (size_t i = 0; i < d->ntensors && !rc; i++) rc = copy_tensor(nd, &d->tensors[i], x);
    for (size_t i = 0, in = 0, out = 0; i < d->ntensors && !rc; i++) {
        const gtensor *g = &d->tensors[i];
        if (g->role == KC_ROLE_INPUT && g->inplace) rc = kc_graph_set_inplace(nd, in);
        if (!rc && g->role == KC_ROLE_INPUT && g->grad_accumulate) rc = kc_graph_set_grad_accumulate(nd, in);
        if (!rc && g->role == KC_ROLE_OUTPUT && g->alias) rc = kc_graph_set_alias(nd, out, g->alias - 1);
        in += g->role == KC_ROLE_INPUT;
        out += g->role == KC_ROLE_OUTPUT;
    }
    return rc;
}

/* The scratch buffers, then the steps, each pass's zero steps at their places among its kernel steps (in the order
 * they were added). */
static int rebuild_steps(kc_graph_desc *nd, const kc_graph_desc *d, const subs *x) {
    int rc = KC_OK;
    for (size_t i = 0; i < d->nscratch && !rc; i++) {
        char *e;
        if (!(rc = subst_expr(x, d->scratch[i].bytes, &e)))
            rc = kc_graph_add_scratch(nd, d->scratch[i].pass, e), free(e);
    }
    size_t nth[2] = {0, 0};
    for (size_t i = 0; i <= d->nsteps && !rc; i++) {
        int end = i == d->nsteps, pi = !end && d->steps[i].pass == KC_PASS_BACKWARD;
        for (size_t z = 0; z < d->nzeros && !rc; z++) {
            const gzero *g = &d->zeros[z];
            int zp = g->pass == KC_PASS_BACKWARD;
            if (end ? g->at == nth[zp] : zp == pi && g->at == nth[pi]) rc = copy_zero(nd, g, x);
        }
        if (end || rc) break;
        rc = copy_step(nd, &d->steps[i], x);
        nth[pi]++;
    }
    return rc;
}

/* `nd` (new, empty) made `d` with the substitutions: every piece in the order `d` has it. */
static int rebuild(kc_graph_desc *nd, const kc_graph_desc *d, const subs *x) {
    int rc = kc_graph_set_backend(nd, d->backend);
    kc_graph_set_globals(nd, d->globals);
    if (!rc && d->spec_path && !(nd->spec_path = kc_strdup(d->spec_path))) rc = kc_err(KC_ENOMEM, "out of memory");
    if (!rc) rc = rebuild_tensors(nd, d, x);
    if (!rc) rc = rebuild_steps(nd, d, x);
    for (size_t i = 0; i < d->nwrappers && !rc; i++)
        rc = kc_graph_add_wrapper(nd, d->wrappers[i].name, d->wrappers[i].version, d->wrappers[i].params,
                                  d->wrappers[i].len);
    for (size_t i = 0; i + 1 < d->nhooks && !rc; i += 2) rc = kc_graph_add_hook(nd, d->hooks[i], d->hooks[i + 1]);
    if (!rc && d->hook_unhashed) rc = kc_graph_add_hook(nd, d->unhashed_hook ? d->unhashed_hook : "hook", NULL);
    if (!rc && d->runtime_meta) rc = kc_graph_set_runtime_meta(nd, d->runtime_meta, d->runtime_meta_len);
    return rc;
}

/* What decide() learns of each symbol as it walks the call's inputs. */
typedef struct decision {
    const kc_graph_desc *d;
    const uint32_t *dynamic;
    unsigned flags;
    uint32_t *applied;
    char *keep; /* [nsymbols]: stays a symbol (a dimension written with it is dynamic) */
    int *seen;  /* [nsymbols]: its value is known, from input at_in[s] size[at_dim[s]] */
    int64_t *val;
    size_t *at_in;
    int *at_dim;
} decision;

/* A symbol stays one when any dimension written with it is dynamic. */
static void mark_dynamic(decision *c) {
    const kc_graph_desc *d = c->d;
    for (size_t t = 0, i = 0; t < d->ntensors; t++) {
        const gtensor *g = &d->tensors[t];
        if (g->role != KC_ROLE_INPUT) continue;
        for (int r = 0; r < g->rank; r++)
            if (c->dynamic && (c->dynamic[i] >> r & 1) && is_name(g->sizes[r]))
                for (size_t s = 0; s < d->nsymbols; s++) c->keep[s] |= strcmp(d->symbols[s], g->sizes[r]) == 0;
        i++;
    }
}

/* Size r of input i (tensor g), v in the call: a number that must match, or a symbol kept or bound to v. */
static int decide_dim(decision *c, const gtensor *g, size_t i, int r, int64_t v) {
    const kc_graph_desc *d = c->d;
    int dyn = c->dynamic && (c->dynamic[i] >> r & 1);
    int rc = KC_OK;
    if (v < 0) { /* said, unless the symbol's lookup below says something later (as it always did) */
        rc = place_err(d, i, r, "the call's size %" PRId64 " is negative", v);
    } else if (!is_name(g->sizes[r])) { /* a number */
        int64_t n = strtoll(g->sizes[r], NULL, 10);
        if (n != v)
            return place_err(d, i, r, "the description has the number %s here, the call %" PRId64, g->sizes[r], v);
        if (dyn && !(c->flags & KC_SPECIALIZE_KEEP_NUMBERS))
            return place_err(
                d, i, r,
                "the answer makes this dimension dynamic, but the description wrote the number %s: "
                "kernels and expressions may depend on it, so it cannot vary; write a symbol there to let it",
                g->sizes[r]);
        return KC_OK;
    }
    size_t s = 0;
    while (s < d->nsymbols && strcmp(d->symbols[s], g->sizes[r]) != 0) s++;
    if (s == d->nsymbols) {
        rc = place_err(d, i, r, "symbol '%s' is not declared", g->sizes[r]); /* a symbol: desc.c declared it */
    } else if (c->keep[s]) {
        c->applied[i] |= 1u << r;
    } else if (c->seen[s] && c->val[s] != v) {
        rc = place_err(d, i, r, "symbol '%s' is %" PRId64 " here but %" PRId64 " at input %zu size[%d] in the call",
                       g->sizes[r], v, c->val[s], c->at_in[s], c->at_dim[s]);
    } else if (!c->seen[s]) {
        c->seen[s] = 1, c->val[s] = v, c->at_in[s] = i, c->at_dim[s] = r;
    }
    return rc;
}

/* Every input of the call against the description's. */
static int decide_inputs(decision *c, const kc_tensor_meta *in, size_t nin) {
    const kc_graph_desc *d = c->d;
    int rc = KC_OK;
    for (size_t t = 0, i = 0; t < d->ntensors && i < nin && !rc; t++) {
        const gtensor *g = &d->tensors[t];
        if (g->role != KC_ROLE_INPUT) continue;
        const kc_tensor_meta *m = &in[i];
        if (m->dtype != g->dtype || m->rank != g->rank)
            return kc_err(KC_EINVAL,
                          "%s%sgraph '%s', input %zu: the call's dtype %d and rank %d do not fit the description's "
                          "%d and %d",
                          d->spec_path ? d->spec_path : "", d->spec_path ? ": " : "", d->name, i, (int)m->dtype,
                          m->rank, (int)g->dtype, g->rank);
        c->applied[i] = 0;
        for (int r = 0; r < g->rank && !rc; r++) rc = decide_dim(c, g, i, r, m->sizes[r].value);
        i++;
    }
    return rc;
}

/* Which input dimensions are written as symbols that stay symbolic (dyn), and the static symbols' values. */
static int decide(const kc_graph_desc *d, const kc_tensor_meta *in, size_t nin, const uint32_t *dynamic, unsigned flags,
                  uint32_t *applied, subs *x) {
    decision c = {d, dynamic, flags, applied, NULL, NULL, NULL, NULL, NULL};
    if (!(c.keep = kc_calloc(d->nsymbols + 1, 1))) return kc_err(KC_ENOMEM, "out of memory");
    mark_dynamic(&c);
    int rc = KC_OK;
    c.val = kc_calloc(d->nsymbols + 1, sizeof *c.val);
    c.at_in = kc_calloc(d->nsymbols + 1, sizeof *c.at_in);
    c.at_dim = kc_calloc(d->nsymbols + 1, sizeof *c.at_dim), c.seen = kc_calloc(d->nsymbols + 1, sizeof *c.seen);
    if (!c.val || !c.at_in || !c.at_dim || !c.seen) rc = kc_err(KC_ENOMEM, "out of memory");
    if (!rc) rc = decide_inputs(&c, in, nin);
    x->n = 0;
    if (!rc && (!(x->names = kc_calloc(d->nsymbols + 1, sizeof *x->names)) ||
                !(x->repl = kc_calloc(d->nsymbols + 1, sizeof *x->repl)) ||
                !(x->vals = kc_calloc(d->nsymbols + 1, sizeof *x->vals))))
        rc = kc_err(KC_ENOMEM, "out of memory");
    for (size_t s = 0; s < d->nsymbols && !rc; s++) {
        if (c.keep[s] || !c.seen[s]) continue;
        snprintf(x->vals[x->n], sizeof x->vals[x->n], "%" PRId64, c.val[s]);
        x->names[x->n] = d->symbols[s];
        x->repl[x->n] = x->vals[x->n];
        x->n++;
    }
    free(c.keep), free(c.val), free(c.at_in), free(c.at_dim), free(c.seen);
    return rc;
}

int kc_graph_desc_specialize(kc_graph_desc **out, const kc_graph_desc *d, const kc_tensor_meta *inputs, size_t ninputs,
                             const uint32_t *dynamic, unsigned flags, uint32_t *applied) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !d || (ninputs && !inputs) || (flags & ~KC_SPECIALIZE_KEEP_NUMBERS))
        return kc_err(KC_EINVAL, "kc_graph_desc_specialize: bad argument");
    *out = NULL;
    int rrc = kc_spec_direct_ready_(d);
    if (rrc) return rrc;
    size_t have = kc_graph_desc_count(d, KC_ROLE_INPUT);
    if (ninputs != have)
        return kc_err(KC_EINVAL, "%s%sgraph '%s': the call has %zu inputs, the description %zu",
                      d->spec_path ? d->spec_path : "", d->spec_path ? ": " : "", d->name, ninputs, have);
    uint32_t *mask = kc_calloc(ninputs + 1, sizeof *mask);
    subs x = {NULL, NULL, NULL, 0};
    kc_graph_desc *nd = NULL;
    int rc = mask ? decide(d, inputs, ninputs, dynamic, flags, mask, &x) : kc_err(KC_ENOMEM, "out of memory");
    if (!rc) rc = kc_graph_desc_new(&nd, d->name);
    if (!rc) rc = rebuild(nd, d, &x);
    if (rc && nd) rc = kc_err_prefix(rc, "specializing graph '%s'", d->name);
    if (!rc && applied) memcpy(applied, mask, ninputs * sizeof *mask);
    free(mask);
    free(x.names), free(x.repl), free(x.vals);
    if (rc) {
        kc_graph_desc_free(nd);
        return rc;
    }
    *out = nd;
    return KC_OK;
}
