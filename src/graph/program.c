/* SPDX-License-Identifier: Apache-2.0 */
/*
 * program.c — the FORWARD and BACKWARD sections of an entry (a pass's launch program): their
 * grammar, writer and reader (tensor flags and zero steps included), and evaluating a decoded
 * program's shapes and launch dimensions — every part of running it that needs no GPU except
 * its arguments, which are args.c's (each kind's spelling, checks, ABI and packing).
 *
 * The grammar below is the one place the section is written down whole, the argument kinds
 * included; args.c, desc.c and program.h refer here.
 *
 * program section := pass:u32
 *                    nsyms:u32 { symbol:str }
 *                    nrargs:u32 { name:str type:u8 }     (the runtime arguments, in declaration order:
 *                                                        identifiers, unique; type a kc_arg_type;
 *                                                        nrargs ≤ KC_GRAPH_MAX_ARGS)
 *                    ntensors:u32 { role:u8 dtype:u8 rank:u8 flags:u8 [alias:u32] { size:str stride:str }[rank] }
 *                    nscratch:u32 { bytes:str }            (the scratch buffers of this pass)
 *                    nsteps:u32 { step }                   (launch and zero steps, in order)
 *   step := kernel:u32 grid:str[3] block:str[3] shared:str nargs:u32 { arg:str }[nargs]   (kernel < 0xfffffffe)
 *         | 0xffffffff ref:str     (a zero step: the whole tensor set to zero bytes before the next step;
 *                                   ref := output:I | saved:I | scratch:I | input:I (an in-place input) in the
 *                                   forward pass, grad_in:I (not accumulating) | scratch:I in the backward pass;
 *                                   I decimal without leading zeros, naming an existing tensor)
 *         | 0xfffffffe ref:str offset:str count:str   (a zero step of a range: `count` elements — scratch: bytes —
 *                                   from element `offset`, both expressions; count empty: to the tensor's end;
 *                                   checked to lie inside the tensor at each call, before any launch.  A
 *                                   whole-tensor zero step is always written as 0xffffffff: a description
 *                                   without ranges has the bytes it had before them)
 *   flags := requires_grad 1 | inplace 2 | grad accumulate 4 (inputs only) | alias 8 (outputs only; then alias:u32,
 *            the input it is: an in-place input with the same dtype, rank and size strings, aliased by no other
 *            output); a saved tensor's flags are 0.  A description without these has the bytes it had before them.
 *   str := len:u32 bytes[len]; sizes, strides, dimensions and scratch bytes are expressions
 *   over the symbols (expr.c); an output's and a saved tensor's strides are empty.
 *   Expressions may also name the device facts (device_sm_count, …: device.c), bound from the
 *   device at load and so never in the key — except an input's sizes and strides (the caller's
 *   contract); a device fact is never a symbol.
 *   The same bytes are the program part of the graph key (graph_key.c): the runtime arguments'
 *   names and types are in the key, their values (given per call) never are.
 *   arg := input:I | output:I | saved:I | scratch:I | grad_out:I | grad_in:I   (a device pointer)
 *        | <one of those>+EXPR   (the pointer EXPR elements further — scratch: bytes; checked to
 *                                 lie inside the tensor at each call, before any launch)
 *        | null | sym:NAME | e32:EXPR | e64:EXPR | i32:V | u32:V | i64:V | f32:V | f64:V
 *        | bool:true | bool:false   (one byte, 1 or 0: a C++ bool parameter)
 *        | bytes:HEX (1..256 bytes by value) | arg:NAME (a runtime argument) | philox_seed | philox_offset
 *
 * The one idea: the program section is untrusted bytes like any entry payload (it passed
 * the entry's checksums, but a checksum is not a proof of sense), so decoding re-validates
 * every expression, tensor record, zero step and argument (kc_program_arg_check, args.c);
 * evaluation is checked arithmetic (expr.c), and launch dimensions are checked against CUDA's
 * limits before they reach the driver.
 *
 * Callers: graph_key.c and lookup.c write (kc_program_encode); loaded.c decodes; run.c and
 * args.c evaluate.  Must not: launch anything (run.c does), or know an argument kind's
 * spelling (args.c does).
 */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "graph_internal.h"

#define MAX_ITEMS 4096

/* The tensor records: role, dtype, rank, flags (and alias), sizes and strides. */
static void put_tensors(const kc_graph_desc *d, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)d->ntensors);
    for (size_t i = 0; i < d->ntensors; i++) {
        const gtensor *t = &d->tensors[i];
        kc_buf_put_u8(b, (uint8_t)t->role);
        kc_buf_put_u8(b, (uint8_t)t->dtype);
        kc_buf_put_u8(b, (uint8_t)t->rank);
        kc_buf_put_u8(b, (uint8_t)((t->requires_grad ? KC_PT_REQUIRES_GRAD : 0) | (t->inplace ? KC_PT_INPLACE : 0) |
                                   (t->grad_accumulate ? KC_PT_ACCUMULATE : 0) | (t->alias ? KC_PT_ALIAS : 0)));
        if (t->alias) kc_buf_put_u32(b, (uint32_t)(t->alias - 1));
        for (int r = 0; r < t->rank; r++) kc_buf_put_str(b, t->sizes[r]), kc_buf_put_str(b, t->strides[r]);
    }
}

/* The zero steps added before the pass's k-th kernel step (after its last: at the end). */
static void put_zeros_at(const kc_graph_desc *d, kc_pass pass, size_t k, kc_buf *b) {
    for (size_t z = 0; z < d->nzeros; z++)
        if (d->zeros[z].pass == pass && d->zeros[z].at == k) {
            const gzero *gz = &d->zeros[z];
            char ref[48];
            kc_program_zero_ref((int)gz->role, gz->index, ref);
            kc_buf_put_u32(b, gz->offset || gz->count ? KC_PROGRAM_ZERO_RANGE : KC_PROGRAM_ZERO_STEP);
            kc_buf_put_str(b, ref);
            if (gz->offset || gz->count)
                kc_buf_put_str(b, gz->offset ? gz->offset : "0"), kc_buf_put_str(b, gz->count ? gz->count : "");
        }
}

static void put_step(const gstep *s, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)s->kernel);
    for (int j = 0; j < 3; j++) kc_buf_put_str(b, s->grid[j]);
    for (int j = 0; j < 3; j++) kc_buf_put_str(b, s->block[j]);
    kc_buf_put_str(b, s->shared);
    kc_buf_put_u32(b, (uint32_t)s->nargs);
    for (size_t a = 0; a < s->nargs; a++) kc_buf_put_str(b, s->args[a]);
}

/* The program of one pass: symbols, tensors, scratch of the pass, its steps. */
void kc_program_encode(const kc_graph_desc *d, kc_pass pass, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)pass);
    kc_buf_put_u32(b, (uint32_t)d->nsymbols);
    for (size_t i = 0; i < d->nsymbols; i++) kc_buf_put_str(b, d->symbols[i]);
    kc_buf_put_u32(b, (uint32_t)d->nrargs);
    for (size_t i = 0; i < d->nrargs; i++)
        kc_buf_put_str(b, d->rargs[i].name), kc_buf_put_u8(b, (uint8_t)d->rargs[i].type);
    put_tensors(d, b);
    uint32_t ns = 0;
    for (size_t i = 0; i < d->nscratch; i++) ns += d->scratch[i].pass == pass;
    kc_buf_put_u32(b, ns);
    for (size_t i = 0; i < d->nscratch; i++)
        if (d->scratch[i].pass == pass) kc_buf_put_str(b, d->scratch[i].bytes);
    uint32_t nst = 0;
    for (size_t i = 0; i < d->nsteps; i++) nst += d->steps[i].pass == pass;
    for (size_t i = 0; i < d->nzeros; i++) nst += d->zeros[i].pass == pass;
    kc_buf_put_u32(b, nst);
    size_t k = 0;
    for (size_t i = 0; i < d->nsteps; i++) {
        if (d->steps[i].pass != pass) continue;
        put_zeros_at(d, pass, k++, b);
        put_step(&d->steps[i], b);
    }
    put_zeros_at(d, pass, k, b);
}

size_t kc_dtype_size(kc_dtype t) {
    switch (t) {
    case KC_DTYPE_F64:
    case KC_DTYPE_I64: return 8;
    case KC_DTYPE_F32:
    case KC_DTYPE_I32: return 4;
    case KC_DTYPE_F16:
    case KC_DTYPE_BF16: return 2;
    default: return 1;
    }
}

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void kc_lprog_free(kc_lprog *p) {
    if (!p) return;
    free_strs(p->syms, p->nsyms);
    for (size_t i = 0; p->tensors && i < p->ntensors; i++)
        for (int r = 0; r < KC_MAX_RANK; r++) free(p->tensors[i].sizes[r]), free(p->tensors[i].strides[r]);
    free(p->tensors);
    free_strs(p->scratch, p->nscratch);
    for (size_t i = 0; p->steps && i < p->nsteps; i++) {
        for (int j = 0; j < 3; j++) free(p->steps[i].grid[j]), free(p->steps[i].block[j]);
        free(p->steps[i].shared);
        for (size_t a = 0; p->steps[i].blobs && a < p->steps[i].nargs; a++) free(p->steps[i].blobs[a]);
        free(p->steps[i].blobs);
        free_strs(p->steps[i].args, p->steps[i].nargs);
    }
    free(p->steps);
    for (size_t i = 0; p->zeros && i < p->nzeros; i++) free(p->zeros[i].offset), free(p->zeros[i].count);
    free(p->zeros);
    for (size_t i = 0; p->rargs && i < p->nrargs; i++) free(p->rargs[i].name);
    free(p->rargs);
    free(p);
}

/* A length-prefixed string; NULL (and r->bad) on a defect or no memory. */
static char *rd_str(kc_reader *r, int *oom) {
    uint32_t n = kc_rd_next_u32(r);
    if (n > 65536) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *b = kc_rd_bytes(r, n);
    if (!b || memchr(b, 0, n)) {
        r->bad = 1;
        return NULL;
    }
    char *s = kc_strndup((const char *)b, n);
    if (!s) *oom = 1, r->bad = 1;
    return s;
}

static int check(const kc_lprog *p, const char *e) { return kc_expr_check(e, (const char *const *)p->syms, p->nsyms); }

/* An input's size or stride: the caller's contract, never a device fact. */
static int check_nodev(const kc_lprog *p, const char *e) {
    return kc_expr_check_nodev(e, (const char *const *)p->syms, p->nsyms);
}

static int is_ident(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

void kc_program_zero_ref(int role, size_t index, char buf[48]) {
    const char *pre = kc_program_role_prefix(role);
    snprintf(buf, 48, "%s%zu", pre ? pre : "?:", index);
}

/* A zero step's reference read back: its role and index (canonical digits), or KC_ECORRUPT. */
static int zero_parse(const char *ref, int *role, size_t *index) {
    size_t pl;
    int r = kc_program_role_match(ref, &pl);
    size_t nd = r < 0 ? 0 : strspn(ref + pl, "0123456789");
    if (nd == 0 || nd > 9 || ref[pl + nd] || (nd > 1 && ref[pl] == '0'))
        return kc_err(KC_ECORRUPT, "zero step '%.64s' names no tensor", ref);
    *role = r;
    *index = (size_t)strtoul(ref + pl, NULL, 10);
    return KC_OK;
}

/* The tensor records' flags and aliases, and the zero steps, against the pass (after decoding). */
static int check_inplace(const kc_lprog *p) {
    size_t nin = kc_program_count(p, KC_ROLE_INPUT);
    for (size_t i = 0; i < p->ntensors; i++) {
        const ptensor *t = &p->tensors[i], *in;
        if (t->alias < 0) continue;
        if (!(in = kc_program_tensor(p, KC_ROLE_INPUT, (size_t)t->alias)) || !in->inplace || in->dtype != t->dtype ||
            in->rank != t->rank)
            return kc_err(KC_ECORRUPT, "an output aliases input %d, which is not an in-place input of its shape",
                          t->alias);
        for (int r = 0; r < t->rank; r++)
            if (strcmp(in->sizes[r], t->sizes[r]) != 0) return kc_err(KC_ECORRUPT, "an alias of mismatched shape");
        for (size_t k = 0; k < i; k++)
            if (p->tensors[k].alias == t->alias) return kc_err(KC_ECORRUPT, "input %d is aliased twice", t->alias);
    }
    for (size_t i = 0; i < p->nzeros; i++) {
        const pzero *z = &p->zeros[i];
        const ptensor *in = z->role == KC_ROLE_INPUT || z->role == KC_ROLE_GRAD_IN
                                ? kc_program_tensor(p, KC_ROLE_INPUT, z->index)
                                : NULL;
        size_t have = z->role == KC_ROLE_SCRATCH   ? p->nscratch
                      : z->role == KC_ROLE_GRAD_IN ? nin
                                                   : kc_program_count(p, z->role);
        if (!kc_program_zero_role_ok(p->pass, z->role) || z->index >= have ||
            (z->role == KC_ROLE_INPUT && !in->inplace) || (z->role == KC_ROLE_GRAD_IN && in->accumulate))
            return kc_err(KC_ECORRUPT, "zero step %zu names a tensor its pass may not zero", i);
    }
    return KC_OK;
}
/* The symbols and the runtime arguments. */
static void rd_names(kc_reader *r, kc_lprog *p, int *oom) {
    uint32_t ns = kc_rd_next_u32(r);
    if (ns > MAX_ITEMS || !(p->syms = kc_calloc(ns + 1, sizeof *p->syms))) r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < ns; i++, p->nsyms++) p->syms[i] = rd_str(r, oom);
    uint32_t nra = kc_rd_next_u32(r);
    if (r->bad || nra > KC_GRAPH_MAX_ARGS || !(p->rargs = kc_calloc(nra + 1, sizeof *p->rargs))) r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < nra; i++, p->nrargs++) {
        p->rargs[i].name = rd_str(r, oom);
        p->rargs[i].type = (kc_arg_type)kc_rd_next_u8(r);
    }
}

/* One tensor record: its role, dtype, rank, flags (those of its role only), alias, sizes and strides. */
static void rd_tensor(kc_reader *r, ptensor *t, int *oom) {
    t->role = kc_rd_next_u8(r);
    t->dtype = kc_rd_next_u8(r);
    t->rank = kc_rd_next_u8(r);
    unsigned fl = kc_rd_next_u8(r);
    t->requires_grad = (fl & KC_PT_REQUIRES_GRAD) != 0;
    t->inplace = (fl & KC_PT_INPLACE) != 0;
    t->accumulate = (fl & KC_PT_ACCUMULATE) != 0;
    t->alias = -1;
    if (fl & KC_PT_ALIAS) {
        uint32_t a = kc_rd_next_u32(r);
        if (a >= MAX_ITEMS) r->bad = 1;
        else t->alias = (int)a;
    }
    unsigned allowed = t->role == KC_ROLE_INPUT    ? KC_PT_REQUIRES_GRAD | KC_PT_INPLACE | KC_PT_ACCUMULATE
                       : t->role == KC_ROLE_OUTPUT ? KC_PT_ALIAS
                                                   : 0;
    if (fl & ~allowed) r->bad = 1;
    if (t->role > KC_ROLE_SAVED || t->dtype < KC_DTYPE_F32 || t->dtype > KC_DTYPE_F8E5M2 || t->rank > KC_MAX_RANK)
        r->bad = 1;
    for (int d = 0; !r->bad && d < t->rank; d++) t->sizes[d] = rd_str(r, oom), t->strides[d] = rd_str(r, oom);
}

/* The tensors and the scratch buffers. */
static void rd_buffers(kc_reader *r, kc_lprog *p, int *oom) {
    uint32_t nt = kc_rd_next_u32(r);
    if (r->bad || nt > MAX_ITEMS || !(p->tensors = kc_calloc(nt + 1, sizeof *p->tensors))) r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < nt; i++, p->ntensors++) rd_tensor(r, &p->tensors[i], oom);
    uint32_t nsc = kc_rd_next_u32(r);
    if (r->bad || nsc > MAX_ITEMS || !(p->scratch = kc_calloc(nsc + 1, sizeof *p->scratch))) r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < nsc; i++, p->nscratch++) p->scratch[i] = rd_str(r, oom);
}

/* A zero step (`kernel` says whether of a range): its place (before the next kernel step), its tensor, its range. */
static void rd_zero(kc_reader *r, kc_lprog *p, uint32_t kernel, int *oom) {
    pzero *z = &p->zeros[p->nzeros];
    char *ref = rd_str(r, oom);
    if (ref && zero_parse(ref, &z->role, &z->index) != KC_OK) r->bad = 1;
    free(ref);
    if (kernel == KC_PROGRAM_ZERO_RANGE && !r->bad) {
        z->offset = rd_str(r, oom);
        z->count = rd_str(r, oom);
        if (z->count && !*z->count) free(z->count), z->count = NULL; /* to the end */
        if (!z->offset) free(z->count), z->count = NULL;
    }
    z->at = p->nsteps;
    if (r->bad) free(z->offset), free(z->count), z->offset = z->count = NULL;
    p->nzeros += !r->bad;
}

/* A kernel step: its kernel, dimensions, shared memory and arguments. */
static void rd_step(kc_reader *r, kc_lprog *p, uint32_t kernel, int *oom) {
    pstep *s = &p->steps[p->nsteps++];
    s->kernel = (int)kernel;
    for (int j = 0; j < 3; j++) s->grid[j] = rd_str(r, oom);
    for (int j = 0; j < 3; j++) s->block[j] = rd_str(r, oom);
    s->shared = rd_str(r, oom);
    uint32_t na = kc_rd_next_u32(r);
    if (r->bad || na > 256 || !(s->args = kc_calloc(na + 1, sizeof *s->args))) r->bad = 1;
    for (uint32_t a = 0; !r->bad && a < na; a++, s->nargs++) s->args[a] = rd_str(r, oom);
}

static void rd_steps(kc_reader *r, kc_lprog *p, int *oom) {
    uint32_t nst = kc_rd_next_u32(r);
    if (r->bad || nst > MAX_ITEMS || !(p->steps = kc_calloc(nst + 1, sizeof *p->steps)) ||
        !(p->zeros = kc_calloc(nst + 1, sizeof *p->zeros)))
        r->bad = 1;
    for (uint32_t i = 0; !r->bad && i < nst; i++) {
        uint32_t kernel = kc_rd_next_u32(r);
        if (kernel == KC_PROGRAM_ZERO_STEP || kernel == KC_PROGRAM_ZERO_RANGE) rd_zero(r, p, kernel, oom);
        else rd_step(r, p, kernel, oom);
    }
}

/* The tensors' expressions: an input's sizes and strides never name a device fact (an output's size may); nor
 * is a symbol one. */
static int check_tensors(const kc_lprog *p) {
    int rc = KC_OK;
    for (size_t i = 0; !rc && i < p->ntensors; i++)
        for (int d = 0; !rc && d < p->tensors[i].rank; d++) {
            int host = p->tensors[i].role == KC_ROLE_INPUT; /* an output's size may use a device fact */
            rc = host ? check_nodev(p, p->tensors[i].sizes[d]) : check(p, p->tensors[i].sizes[d]);
            if (!rc && p->tensors[i].role == KC_ROLE_INPUT) rc = check_nodev(p, p->tensors[i].strides[d]);
        }
    for (size_t i = 0; !rc && i < p->nsyms; i++) /* a device fact is never a size symbol */
        if (kc_device_fact(p->syms[i], strlen(p->syms[i])) >= 0)
            rc = kc_err(KC_ECORRUPT, "symbol '%s' is a device fact", p->syms[i]);
    for (size_t i = 0; !rc && i < p->nscratch; i++) rc = check(p, p->scratch[i]);
    return rc;
}

/* The steps' dimensions and arguments (args.c), and the zero steps' ranges. */
static int check_steps(kc_lprog *p) {
    int rc = KC_OK;
    for (size_t i = 0; !rc && i < p->nsteps; i++) {
        for (int j = 0; !rc && j < 3; j++) {
            rc = check(p, p->steps[i].grid[j]);
            if (!rc) rc = check(p, p->steps[i].block[j]);
        }
        if (!rc) rc = check(p, p->steps[i].shared);
        for (size_t a = 0; !rc && a < p->steps[i].nargs; a++) rc = kc_program_arg_check(p, &p->steps[i], a);
    }
    for (size_t i = 0; !rc && i < p->nzeros; i++) { /* a range's offset and count */
        if (p->zeros[i].offset) rc = check(p, p->zeros[i].offset);
        if (!rc && p->zeros[i].count) rc = check(p, p->zeros[i].count);
    }
    return rc;
}

/* The runtime arguments: a known type, an identifier, unique, never a symbol's name. */
static int check_rargs(const kc_lprog *p) {
    int rc = KC_OK;
    for (size_t i = 0; !rc && i < p->nrargs; i++) {
        if (p->rargs[i].type < KC_ARG_F32 || p->rargs[i].type > KC_ARG_U64 || !is_ident(p->rargs[i].name))
            rc = kc_err(KC_ECORRUPT, "runtime argument %zu", i);
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(p->rargs[k].name, p->rargs[i].name))
                rc = kc_err(KC_ECORRUPT, "runtime argument '%s' twice", p->rargs[i].name);
        for (size_t k = 0; !rc && k < p->nsyms; k++)
            if (!strcmp(p->syms[k], p->rargs[i].name))
                rc = kc_err(KC_ECORRUPT, "runtime argument '%s' is a symbol", p->rargs[i].name);
    }
    return rc;
}

int kc_program_decode(const void *data, size_t len, kc_lprog **out) {
    *out = NULL;
    kc_lprog *p = kc_calloc(1, sizeof *p);
    if (!p) return kc_err(KC_ENOMEM, "program: out of memory");
    kc_reader r = kc_reader_make(data, len);
    int oom = 0;
    p->pass = (int)kc_rd_next_u32(&r);
    rd_names(&r, p, &oom);
    rd_buffers(&r, p, &oom);
    rd_steps(&r, p, &oom);
    if (oom) {
        kc_lprog_free(p);
        return kc_err(KC_ENOMEM, "program: out of memory");
    }
    if (r.bad || r.left) {
        kc_lprog_free(p);
        return kc_err(KC_ECORRUPT, "corrupt entry: malformed launch program");
    }
    /* Re-validate what will be evaluated. */
    int rc = check_tensors(p);
    if (!rc) rc = check_steps(p);
    if (!rc) rc = check_inplace(p);
    if (!rc) rc = check_rargs(p);
    if (rc == KC_ENOMEM) {
        kc_lprog_free(p);
        return rc;
    }
    if (rc) {
        kc_lprog_free(p);
        return kc_err(KC_ECORRUPT, "corrupt entry: launch program: %s", kc_error_last()->message);
    }
    *out = p;
    return KC_OK;
}

size_t kc_program_count(const kc_lprog *p, int role) {
    size_t n = 0;
    for (size_t i = 0; i < p->ntensors; i++) n += p->tensors[i].role == role;
    return n;
}

const ptensor *kc_program_tensor(const kc_lprog *p, int role, size_t i) {
    for (size_t k = 0; k < p->ntensors; k++)
        if (p->tensors[k].role == role && i-- == 0) return &p->tensors[k];
    return NULL;
}

int kc_program_eval(const kc_lprog *p, const char *e, const int64_t *vals, int64_t *out) {
    return kc_expr_eval_dev(e, (const char *const *)p->syms, vals, p->nsyms, p->dev, out);
}

int kc_program_bind(const kc_lprog *p, const kc_tensor *in, size_t n, int64_t *vals) {
    size_t want = kc_program_count(p, KC_ROLE_INPUT);
    if (n != want) return kc_err(KC_EINVAL, "the graph takes %zu inputs, %zu given", want, n);
    if (n && !in) return kc_err(KC_EINVAL, "inputs are NULL");
    char *bound = kc_calloc(p->nsyms + 1, 1);
    if (!bound) return kc_err(KC_ENOMEM, "out of memory");
    int rc = KC_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const ptensor *t = kc_program_tensor(p, KC_ROLE_INPUT, i);
        if ((int)in[i].dtype != t->dtype || in[i].rank != t->rank) {
            rc = kc_err(KC_EINVAL, "input %zu: dtype %d rank %d given, %d and %d expected", i, (int)in[i].dtype,
                        in[i].rank, t->dtype, t->rank);
            break;
        }
        for (int d = 0; d < t->rank && !rc; d++) {
            int64_t got = in[i].sizes[d];
            if (got < 0) {
                rc = kc_err(KC_EINVAL, "input %zu size[%d] is negative", i, d);
                break;
            }
            size_t s;
            for (s = 0; s < p->nsyms; s++)
                if (strcmp(p->syms[s], t->sizes[d]) == 0) break;
            if (s < p->nsyms) {
                if (!bound[s]) vals[s] = got, bound[s] = 1;
                else if (vals[s] != got)
                    rc = kc_err(KC_EINVAL, "input %zu size[%d]: symbol %s is %lld here but %lld elsewhere", i, d,
                                p->syms[s], (long long)got, (long long)vals[s]);
            } else if (strtoll(t->sizes[d], NULL, 10) != got) {
                rc = kc_err(KC_EINVAL, "input %zu size[%d]: expected %s, got %lld", i, d, t->sizes[d], (long long)got);
            }
        }
    }
    for (size_t s = 0; !rc && s < p->nsyms; s++)
        if (!bound[s]) rc = kc_err(KC_EINVAL, "symbol %s is bound by no input", p->syms[s]);
    /* Strides are checked once every symbol is known. */
    for (size_t i = 0; i < n && !rc; i++) {
        const ptensor *t = kc_program_tensor(p, KC_ROLE_INPUT, i);
        for (int d = 0; d < t->rank && !rc; d++) {
            int64_t want_stride;
            if ((rc = kc_program_eval(p, t->strides[d], vals, &want_stride))) break;
            if (in[i].sizes[d] > 1 && in[i].strides[d] != want_stride)
                rc = kc_err(KC_EINVAL, "input %zu stride[%d]: expected %lld, got %lld", i, d, (long long)want_stride,
                            (long long)in[i].strides[d]);
        }
    }
    free(bound);
    return rc;
}

int kc_program_shape(const kc_lprog *p, const ptensor *t, const int64_t *vals, kc_tensor *out, size_t *bytes) {
    memset(out, 0, sizeof *out);
    out->dtype = (kc_dtype)t->dtype;
    out->rank = t->rank;
    uint64_t n = kc_dtype_size((kc_dtype)t->dtype);
    for (int d = 0; d < t->rank; d++) {
        int rc = kc_program_eval(p, t->sizes[d], vals, &out->sizes[d]);
        if (rc) return rc;
        if (out->sizes[d] < 0) return kc_err(KC_EEXPR, "tensor size '%s' is negative", t->sizes[d]);
        if (__builtin_mul_overflow(n, (uint64_t)out->sizes[d], &n)) return kc_err(KC_EEXPR, "tensor too large");
    }
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        out->strides[d] = stride;
        if (__builtin_mul_overflow(stride, out->sizes[d] ? out->sizes[d] : 1, &stride))
            return kc_err(KC_EEXPR, "tensor too large");
    }
    *bytes = (size_t)n;
    return KC_OK;
}

int kc_program_scratch_bytes(const kc_lprog *p, size_t i, const int64_t *vals, size_t *bytes) {
    int64_t v;
    if (i >= p->nscratch) return kc_err(KC_EINVAL, "no scratch %zu", i);
    int rc = kc_program_eval(p, p->scratch[i], vals, &v);
    if (rc) return rc;
    if (v < 0) return kc_err(KC_EEXPR, "scratch size '%s' is negative", p->scratch[i]);
    *bytes = (size_t)v;
    return KC_OK;
}

int kc_program_zero_range(const kc_lprog *p, const pzero *z, const int64_t *syms, const char *ref, int64_t n,
                          size_t esize, size_t *first, size_t *bytes) {
    int64_t off = 0, count = 0;
    int rc = z->offset ? kc_program_eval(p, z->offset, syms, &off) : KC_OK;
    if (!rc && off >= 0 && off <= n)
        rc = z->count ? kc_program_eval(p, z->count, syms, &count) : (count = n - off, KC_OK);
    if (rc) return kc_err_prefix(rc, "zero step '%s'", ref);
    if (off < 0 || off > n || count < 0 || count > n - off)
        return kc_err(KC_EINVAL,
                      "zero step '%s': the range of %lld %s from %lld (count '%.40s', offset '%.40s') is not "
                      "inside the tensor's %lld",
                      ref, (long long)(off < 0 || off > n ? 0 : count),
                      z->role == KC_ROLE_SCRATCH ? "bytes" : "elements", (long long)off,
                      z->count ? z->count : "to the end", z->offset ? z->offset : "0", (long long)n);
    *first = (size_t)off *
             esize; /* off ≤ n and count ≤ n - off: n elements of esize bytes were sized without overflow */
    *bytes = (size_t)count * esize;
    return KC_OK;
}

int kc_program_dims(const kc_lprog *p, size_t i, const int64_t *vals, unsigned grid[3], unsigned block[3],
                    unsigned *shared) {
    static const int64_t gmax[3] = {2147483647, 65535, 65535}, bmax[3] = {1024, 1024, 64};
    const pstep *s = &p->steps[i];
    int64_t threads = 1;
    for (int j = 0; j < 3; j++) {
        int64_t g, b;
        int rc = kc_program_eval(p, s->grid[j], vals, &g);
        if (!rc) rc = kc_program_eval(p, s->block[j], vals, &b);
        if (rc) return kc_err_prefix(rc, "step %zu", i);
        if (g < 0 || g > gmax[j] || b < 1 || b > bmax[j])
            return kc_err(KC_EEXPR, "step %zu: grid %lld / block %lld out of CUDA's range in dimension %d", i,
                          (long long)g, (long long)b, j);
        grid[j] = (unsigned)g;
        block[j] = (unsigned)b;
        threads *= b;
    }
    if (threads > 1024) return kc_err(KC_EEXPR, "step %zu: %lld threads per block (max 1024)", i, (long long)threads);
    int64_t sh;
    int rc = kc_program_eval(p, s->shared, vals, &sh);
    if (rc) return rc;
    if (sh < 0 || sh > (1 << 30))
        return kc_err(KC_EEXPR, "step %zu: shared memory %lld out of range", i, (long long)sh);
    *shared = (unsigned)sh;
    return KC_OK;
}
