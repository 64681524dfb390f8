/*
 * program.c — the FORWARD and BACKWARD sections of an entry (a pass's launch program): their
 * grammar, writer and reader, and every part of running a program that needs no GPU.
 *
 * program section := pass:u32
 *                    nsyms:u32 { symbol:str }
 *                    nrargs:u32 { name:str type:u8 }     (the runtime arguments, in declaration order:
 *                                                        identifiers, unique; type a kc_arg_type;
 *                                                        nrargs ≤ KC_GRAPH_MAX_ARGS)
 *                    ntensors:u32 { role:u8 dtype:u8 rank:u8 flags:u8 [alias:u32] { size:str stride:str }[rank] }
 *                    nscratch:u32 { bytes:str }            (the scratch buffers of this pass)
 *                    nsteps:u32 { step }                   (launch and zero steps, in order)
 *   step := kernel:u32 grid:str[3] block:str[3] shared:str nargs:u32 { arg:str }[nargs]   (kernel < 0xffffffff)
 *         | 0xffffffff ref:str     (a zero step: the whole tensor set to zero bytes before the next step;
 *                                   ref := output:I | saved:I | scratch:I | input:I (an in-place input) in the
 *                                   forward pass, grad_in:I (not accumulating) | scratch:I in the backward pass;
 *                                   I decimal without leading zeros, naming an existing tensor)
 *   flags := requires_grad 1 | inplace 2 | grad accumulate 4 (inputs only) | alias 8 (outputs only; then alias:u32,
 *            the input it is: an in-place input with the same dtype, rank and size strings, aliased by no other
 *            output); a saved tensor's flags are 0.  A description without these has the bytes it had before them.
 *   str := len:u32 bytes[len]; sizes, strides, dimensions and scratch bytes are expressions
 *   over the symbols (expr.c); an output's and a saved tensor's strides are empty.
 *   Expressions may also name the device facts (device_sm_count, …: device.c), bound from the
 *   device at load and so never in the key — except an input's sizes and strides and an
 *   output's sizes (the caller's contract); a device fact is never a symbol.
 *   The same bytes are the program part of the graph key (graph_key.c): the runtime arguments'
 *   names and types are in the key, their values (given per call) never are.
 *   arg := input:I | output:I | saved:I | scratch:I | grad_out:I | grad_in:I   (a device pointer)
 *        | <one of those>+EXPR   (the pointer EXPR elements further — scratch: bytes; checked to
 *                                 lie inside the tensor at each call, before any launch)
 *        | null | sym:NAME | e32:EXPR | e64:EXPR | i32:V | u32:V | i64:V | f32:V | f64:V
 *        | bytes:HEX (1..256 bytes by value) | arg:NAME (a runtime argument) | philox_seed | philox_offset
 *
 * The one idea: the program section is untrusted bytes like any entry payload (it passed
 * the entry's checksums, but a checksum is not a proof of sense), so decoding re-validates
 * every expression and argument; evaluation is checked arithmetic (expr.c), and launch
 * dimensions are checked against CUDA's limits before they reach the driver.
 *
 * Callers: graph_key.c and lookup.c write (kc_program_encode); loaded.c decodes; run.c and
 * run.c evaluates.  Must not: launch anything (run.c does).
 */
#include "program.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../compile/params.h"
#include "graph_internal.h"

#define MAX_ITEMS 4096

/* The program of one pass: symbols, tensors, scratch of the pass, its steps. */
void kc_program_encode(const kc_graph_desc *d, kc_pass pass, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)pass);
    kc_buf_put_u32(b, (uint32_t)d->nsymbols);
    for (size_t i = 0; i < d->nsymbols; i++) kc_buf_put_str(b, d->symbols[i]);
    kc_buf_put_u32(b, (uint32_t)d->nrargs);
    for (size_t i = 0; i < d->nrargs; i++) kc_buf_put_str(b, d->rargs[i].name), kc_buf_put_u8(b, (uint8_t)d->rargs[i].type);
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
    uint32_t ns = 0;
    for (size_t i = 0; i < d->nscratch; i++) ns += d->scratch[i].pass == pass;
    kc_buf_put_u32(b, ns);
    for (size_t i = 0; i < d->nscratch; i++)
        if (d->scratch[i].pass == pass) kc_buf_put_str(b, d->scratch[i].bytes);
    uint32_t nst = 0;
    for (size_t i = 0; i < d->nsteps; i++) nst += d->steps[i].pass == pass;
    for (size_t i = 0; i < d->nzeros; i++) nst += d->zeros[i].pass == pass;
    kc_buf_put_u32(b, nst);
    for (size_t i = 0, k = 0; i <= d->nsteps; i++) {
        /* The zero steps added before this pass's k-th kernel step (after its last: at the end). */
        int end = i == d->nsteps;
        if (!end && d->steps[i].pass != pass) continue;
        for (size_t z = 0; z < d->nzeros; z++)
            if (d->zeros[z].pass == pass && d->zeros[z].at == k) {
                char ref[48];
                kc_program_zero_ref((int)d->zeros[z].role, d->zeros[z].index, ref);
                kc_buf_put_u32(b, KC_PROGRAM_ZERO_STEP);
                kc_buf_put_str(b, ref);
            }
        if (end) break;
        k++;
        const gstep *s = &d->steps[i];
        kc_buf_put_u32(b, (uint32_t)s->kernel);
        for (int j = 0; j < 3; j++) kc_buf_put_str(b, s->grid[j]);
        for (int j = 0; j < 3; j++) kc_buf_put_str(b, s->block[j]);
        kc_buf_put_str(b, s->shared);
        kc_buf_put_u32(b, (uint32_t)s->nargs);
        for (size_t a = 0; a < s->nargs; a++) kc_buf_put_str(b, s->args[a]);
    }
}

size_t kc_dtype_size(kc_dtype t) {
    switch (t) {
    case KC_DTYPE_F64: case KC_DTYPE_I64: return 8;
    case KC_DTYPE_F32: case KC_DTYPE_I32: return 4;
    case KC_DTYPE_F16: case KC_DTYPE_BF16: return 2;
    default: return 1;
    }
}

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void kc_program_free(kc_program *p) {
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
    free(p->zeros);
    for (size_t i = 0; p->rargs && i < p->nrargs; i++) free(p->rargs[i].name);
    free(p->rargs);
    free(p);
}

/* A length-prefixed string; NULL (and r->bad) on a defect or no memory. */
static char *rd_str(kc_reader *r, int *oom) {
    uint32_t n = kc_rd_next_u32(r);
    if (n > 65536) { r->bad = 1; return NULL; }
    const uint8_t *b = kc_rd_bytes(r, n);
    if (!b || memchr(b, 0, n)) { r->bad = 1; return NULL; }
    char *s = kc_strndup((const char *)b, n);
    if (!s) *oom = 1, r->bad = 1;
    return s;
}

static int check(const kc_program *p, const char *e) {
    return kc_expr_check(e, (const char *const *)p->syms, p->nsyms);
}

/* An input's size or stride, an output's size: the caller's contract, never a device fact. */
static int check_nodev(const kc_program *p, const char *e) {
    return kc_expr_check_nodev(e, (const char *const *)p->syms, p->nsyms);
}

static int is_ident(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

static const char *const arg_type_names[] = {NULL, "f32", "f64", "i32", "u32", "i64", "u64"};

const char *kc_arg_type_str(int t) {
    return t >= KC_ARG_F32 && t <= KC_ARG_U64 ? arg_type_names[t] : "unknown";
}

kc_arg_type kc_arg_type_parse(const char *s) {
    for (int t = KC_ARG_F32; s && t <= KC_ARG_U64; t++)
        if (strcmp(s, arg_type_names[t]) == 0) return (kc_arg_type)t;
    return (kc_arg_type)0;
}

void kc_program_offset_split(const char *arg, size_t prefix_len, const char **idx_end, const char **expr) {
    const char *q = arg + prefix_len;
    while (*q >= '0' && *q <= '9') q++;
    *idx_end = q;
    *expr = *q == '+' ? q + 1 : NULL;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t kc_program_hex(const char *h, uint8_t out[256]) {
    size_t n = strnlen(h, 513);
    if (n == 0 || n % 2 || n > 512) return 0;
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(h[i]), lo = hexval(h[i + 1]);
        if (hi < 0 || lo < 0) return 0;
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return n / 2;
}

/* "u32:V": decimal digits only, 0..4294967295. */
static int parse_u32(const char *s, uint32_t *out) {
    uint64_t v = 0;
    if (!*s || strlen(s) > 10) return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > UINT32_MAX) return 0;
    *out = (uint32_t)v;
    return 1;
}

/* "f64:V": what strtod reads whole, in range. */
static int parse_f64(const char *s, double *out) {
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && end != s && !*end;
}

int kc_program_const_ok(const char *a) {
    uint8_t b[256];
    uint32_t u;
    double f;
    if (strncmp(a, "u32:", 4) == 0) return parse_u32(a + 4, &u);
    if (strncmp(a, "f64:", 4) == 0) return parse_f64(a + 4, &f);
    if (strncmp(a, "bytes:", 6) == 0) return kc_program_hex(a + 6, b) != 0;
    return 1;
}

static const struct { const char *prefix; int role; } tensor_kinds[] = {
    {"input:", KC_ROLE_INPUT}, {"output:", KC_ROLE_OUTPUT}, {"saved:", KC_ROLE_SAVED},
    {"scratch:", KC_ROLE_SCRATCH}, {"grad_out:", KC_ROLE_GRAD_OUT}, {"grad_in:", KC_ROLE_GRAD_IN},
};

int kc_program_zero_role_ok(int pass, int role) {
    if (pass == KC_PASS_FORWARD)
        return role == KC_ROLE_OUTPUT || role == KC_ROLE_SAVED || role == KC_ROLE_SCRATCH || role == KC_ROLE_INPUT;
    return pass == KC_PASS_BACKWARD && (role == KC_ROLE_GRAD_IN || role == KC_ROLE_SCRATCH);
}

void kc_program_zero_ref(int role, size_t index, char buf[48]) {
    const char *pre = "?:";
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++)
        if (tensor_kinds[k].role == role) pre = tensor_kinds[k].prefix;
    snprintf(buf, 48, "%s%zu", pre, index);
}

/* A zero step's reference read back: its role and index (canonical digits), or KC_ECORRUPT. */
static int zero_parse(const char *ref, int *role, size_t *index) {
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++) {
        size_t pl = strlen(tensor_kinds[k].prefix);
        if (strncmp(ref, tensor_kinds[k].prefix, pl) != 0) continue;
        size_t nd = strspn(ref + pl, "0123456789");
        if (nd == 0 || nd > 9 || ref[pl + nd] || (nd > 1 && ref[pl] == '0')) break;
        *role = tensor_kinds[k].role;
        *index = (size_t)strtoul(ref + pl, NULL, 10);
        return KC_OK;
    }
    return kc_err(KC_ECORRUPT, "zero step '%.64s' names no tensor", ref);
}

/* The tensor records' flags and aliases, and the zero steps, against the pass (after decoding). */
static int check_inplace(const kc_program *p) {
    size_t nin = kc_program_count(p, KC_ROLE_INPUT);
    for (size_t i = 0; i < p->ntensors; i++) {
        const ptensor *t = &p->tensors[i], *in;
        if (t->alias < 0) continue;
        if (!(in = kc_program_tensor(p, KC_ROLE_INPUT, (size_t)t->alias)) || !in->inplace || in->dtype != t->dtype ||
            in->rank != t->rank)
            return kc_err(KC_ECORRUPT, "an output aliases input %d, which is not an in-place input of its shape", t->alias);
        for (int r = 0; r < t->rank; r++)
            if (strcmp(in->sizes[r], t->sizes[r]) != 0) return kc_err(KC_ECORRUPT, "an alias of mismatched shape");
        for (size_t k = 0; k < i; k++)
            if (p->tensors[k].alias == t->alias) return kc_err(KC_ECORRUPT, "input %d is aliased twice", t->alias);
    }
    for (size_t i = 0; i < p->nzeros; i++) {
        const pzero *z = &p->zeros[i];
        const ptensor *in = z->role == KC_ROLE_INPUT || z->role == KC_ROLE_GRAD_IN ? kc_program_tensor(p, KC_ROLE_INPUT, z->index) : NULL;
        size_t have = z->role == KC_ROLE_SCRATCH ? p->nscratch : z->role == KC_ROLE_GRAD_IN ? nin : kc_program_count(p, z->role);
        if (!kc_program_zero_role_ok(p->pass, z->role) || z->index >= have || (z->role == KC_ROLE_INPUT && !in->inplace) ||
            (z->role == KC_ROLE_GRAD_IN && in->accumulate))
            return kc_err(KC_ECORRUPT, "zero step %zu names a tensor its pass may not zero", i);
    }
    return KC_OK;
}

/* Re-validate argument a of step s as decoded (the kinds that carry more than a name), and
 * decode a "bytes:HEX" once into s->blobs. */
static int check_arg(kc_program *p, pstep *s, size_t a) {
    const char *x = s->args[a];
    for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds); k++) {
        size_t pl = strlen(tensor_kinds[k].prefix);
        if (strncmp(x, tensor_kinds[k].prefix, pl) != 0) continue;
        const char *end, *e;
        kc_program_offset_split(x, pl, &end, &e);
        if (end == x + pl || (*end && !e)) return kc_err(KC_ECORRUPT, "bad argument '%.64s'", x);
        if (!e) return KC_OK;
        p->offsets = 1;
        return check(p, e);
    }
    if (strncmp(x, "arg:", 4) == 0) {
        for (size_t k = 0; k < p->nrargs; k++)
            if (strcmp(p->rargs[k].name, x + 4) == 0) return KC_OK;
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    }
    if (!kc_program_const_ok(x)) return kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
    if (strncmp(x, "bytes:", 6) == 0) {
        uint8_t b[256];
        size_t n = kc_program_hex(x + 6, b);
        if (!s->blobs && !(s->blobs = kc_calloc(s->nargs, sizeof *s->blobs))) return kc_err(KC_ENOMEM, "out of memory");
        if (!(s->blobs[a] = kc_malloc(n))) return kc_err(KC_ENOMEM, "out of memory");
        memcpy(s->blobs[a], b, n);
    }
    return KC_OK;
}

int kc_program_decode(const void *data, size_t len, kc_program **out) {
    *out = NULL;
    kc_program *p = kc_calloc(1, sizeof *p);
    if (!p) return kc_err(KC_ENOMEM, "program: out of memory");
    kc_reader r = kc_reader_make(data, len);
    int oom = 0;
    p->pass = (int)kc_rd_next_u32(&r);
    uint32_t ns = kc_rd_next_u32(&r);
    if (ns > MAX_ITEMS || !(p->syms = kc_calloc(ns + 1, sizeof *p->syms))) r.bad = 1;
    for (uint32_t i = 0; !r.bad && i < ns; i++, p->nsyms++) p->syms[i] = rd_str(&r, &oom);
    uint32_t nra = kc_rd_next_u32(&r);
    if (r.bad || nra > KC_GRAPH_MAX_ARGS || !(p->rargs = kc_calloc(nra + 1, sizeof *p->rargs))) r.bad = 1;
    for (uint32_t i = 0; !r.bad && i < nra; i++, p->nrargs++) {
        p->rargs[i].name = rd_str(&r, &oom);
        p->rargs[i].type = (kc_arg_type)kc_rd_next_u8(&r);
    }
    uint32_t nt = kc_rd_next_u32(&r);
    if (r.bad || nt > MAX_ITEMS || !(p->tensors = kc_calloc(nt + 1, sizeof *p->tensors))) r.bad = 1;
    for (uint32_t i = 0; !r.bad && i < nt; i++, p->ntensors++) {
        ptensor *t = &p->tensors[i];
        t->role = kc_rd_next_u8(&r);
        t->dtype = kc_rd_next_u8(&r);
        t->rank = kc_rd_next_u8(&r);
        unsigned fl = kc_rd_next_u8(&r);
        t->requires_grad = (fl & KC_PT_REQUIRES_GRAD) != 0;
        t->inplace = (fl & KC_PT_INPLACE) != 0;
        t->accumulate = (fl & KC_PT_ACCUMULATE) != 0;
        t->alias = -1;
        if (fl & KC_PT_ALIAS) {
            uint32_t a = kc_rd_next_u32(&r);
            if (a >= MAX_ITEMS) r.bad = 1;
            else t->alias = (int)a;
        }
        unsigned allowed = t->role == KC_ROLE_INPUT ? KC_PT_REQUIRES_GRAD | KC_PT_INPLACE | KC_PT_ACCUMULATE
                           : t->role == KC_ROLE_OUTPUT ? KC_PT_ALIAS : 0;
        if (fl & ~allowed) r.bad = 1;
        if (t->role > KC_ROLE_SAVED || t->dtype < KC_DTYPE_F32 || t->dtype > KC_DTYPE_F8E5M2 || t->rank > KC_MAX_RANK) r.bad = 1;
        for (int d = 0; !r.bad && d < t->rank; d++) t->sizes[d] = rd_str(&r, &oom), t->strides[d] = rd_str(&r, &oom);
    }
    uint32_t nsc = kc_rd_next_u32(&r);
    if (r.bad || nsc > MAX_ITEMS || !(p->scratch = kc_calloc(nsc + 1, sizeof *p->scratch))) r.bad = 1;
    for (uint32_t i = 0; !r.bad && i < nsc; i++, p->nscratch++) p->scratch[i] = rd_str(&r, &oom);
    uint32_t nst = kc_rd_next_u32(&r);
    if (r.bad || nst > MAX_ITEMS || !(p->steps = kc_calloc(nst + 1, sizeof *p->steps)) ||
        !(p->zeros = kc_calloc(nst + 1, sizeof *p->zeros)))
        r.bad = 1;
    for (uint32_t i = 0; !r.bad && i < nst; i++) {
        uint32_t kernel = kc_rd_next_u32(&r);
        if (kernel == KC_PROGRAM_ZERO_STEP) { /* a zero step: its place among the kernel steps, and its tensor */
            pzero *z = &p->zeros[p->nzeros];
            char *ref = rd_str(&r, &oom);
            if (ref && zero_parse(ref, &z->role, &z->index) != KC_OK) r.bad = 1;
            free(ref);
            z->at = p->nsteps;
            p->nzeros += !r.bad;
            continue;
        }
        pstep *s = &p->steps[p->nsteps++];
        s->kernel = (int)kernel;
        for (int j = 0; j < 3; j++) s->grid[j] = rd_str(&r, &oom);
        for (int j = 0; j < 3; j++) s->block[j] = rd_str(&r, &oom);
        s->shared = rd_str(&r, &oom);
        uint32_t na = kc_rd_next_u32(&r);
        if (r.bad || na > 256 || !(s->args = kc_calloc(na + 1, sizeof *s->args))) r.bad = 1;
        for (uint32_t a = 0; !r.bad && a < na; a++, s->nargs++) s->args[a] = rd_str(&r, &oom);
    }
    if (oom) {
        kc_program_free(p);
        return kc_err(KC_ENOMEM, "program: out of memory");
    }
    if (r.bad || r.left) {
        kc_program_free(p);
        return kc_err(KC_ECORRUPT, "corrupt entry: malformed launch program");
    }
    /* Re-validate what will be evaluated. */
    int rc = KC_OK;
    for (size_t i = 0; !rc && i < p->ntensors; i++)
        for (int d = 0; !rc && d < p->tensors[i].rank; d++) {
            int host = p->tensors[i].role == KC_ROLE_INPUT || p->tensors[i].role == KC_ROLE_OUTPUT;
            rc = host ? check_nodev(p, p->tensors[i].sizes[d]) : check(p, p->tensors[i].sizes[d]);
            if (!rc && p->tensors[i].role == KC_ROLE_INPUT) rc = check_nodev(p, p->tensors[i].strides[d]);
        }
    for (size_t i = 0; !rc && i < p->nsyms; i++) /* a device fact is never a size symbol */
        if (kc_device_fact(p->syms[i], strlen(p->syms[i])) >= 0) rc = kc_err(KC_ECORRUPT, "symbol '%s' is a device fact", p->syms[i]);
    for (size_t i = 0; !rc && i < p->nscratch; i++) rc = check(p, p->scratch[i]);
    for (size_t i = 0; !rc && i < p->nsteps; i++) {
        for (int j = 0; !rc && j < 3; j++) {
            rc = check(p, p->steps[i].grid[j]);
            if (!rc) rc = check(p, p->steps[i].block[j]);
        }
        if (!rc) rc = check(p, p->steps[i].shared);
        for (size_t a = 0; !rc && a < p->steps[i].nargs; a++) rc = check_arg(p, &p->steps[i], a);
    }
    if (!rc) rc = check_inplace(p);
    for (size_t i = 0; !rc && i < p->nrargs; i++) {
        if (p->rargs[i].type < KC_ARG_F32 || p->rargs[i].type > KC_ARG_U64 || !is_ident(p->rargs[i].name))
            rc = kc_err(KC_ECORRUPT, "runtime argument %zu", i);
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(p->rargs[k].name, p->rargs[i].name)) rc = kc_err(KC_ECORRUPT, "runtime argument '%s' twice", p->rargs[i].name);
        for (size_t k = 0; !rc && k < p->nsyms; k++)
            if (!strcmp(p->syms[k], p->rargs[i].name)) rc = kc_err(KC_ECORRUPT, "runtime argument '%s' is a symbol", p->rargs[i].name);
    }
    if (rc == KC_ENOMEM) {
        kc_program_free(p);
        return rc;
    }
    if (rc) {
        kc_program_free(p);
        return kc_err(KC_ECORRUPT, "corrupt entry: launch program: %s", kc_error_last()->message);
    }
    *out = p;
    return KC_OK;
}

size_t kc_program_count(const kc_program *p, int role) {
    size_t n = 0;
    for (size_t i = 0; i < p->ntensors; i++) n += p->tensors[i].role == role;
    return n;
}

const ptensor *kc_program_tensor(const kc_program *p, int role, size_t i) {
    for (size_t k = 0; k < p->ntensors; k++)
        if (p->tensors[k].role == role && i-- == 0) return &p->tensors[k];
    return NULL;
}

static int eval(const kc_program *p, const char *e, const int64_t *vals, int64_t *out) {
    return kc_expr_eval_dev(e, (const char *const *)p->syms, vals, p->nsyms, p->dev, out);
}

int kc_program_bind(const kc_program *p, const kc_tensor *in, size_t n, int64_t *vals) {
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
            if ((rc = eval(p, t->strides[d], vals, &want_stride))) break;
            if (in[i].sizes[d] > 1 && in[i].strides[d] != want_stride)
                rc = kc_err(KC_EINVAL, "input %zu stride[%d]: expected %lld, got %lld", i, d, (long long)want_stride,
                            (long long)in[i].strides[d]);
        }
    }
    free(bound);
    return rc;
}

int kc_program_shape(const kc_program *p, const ptensor *t, const int64_t *vals, kc_tensor *out, size_t *bytes) {
    memset(out, 0, sizeof *out);
    out->dtype = (kc_dtype)t->dtype;
    out->rank = t->rank;
    uint64_t n = kc_dtype_size((kc_dtype)t->dtype);
    for (int d = 0; d < t->rank; d++) {
        int rc = eval(p, t->sizes[d], vals, &out->sizes[d]);
        if (rc) return rc;
        if (out->sizes[d] < 0) return kc_err(KC_EEXPR, "tensor size '%s' is negative", t->sizes[d]);
        if (__builtin_mul_overflow(n, (uint64_t)out->sizes[d], &n)) return kc_err(KC_EEXPR, "tensor too large");
    }
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        out->strides[d] = stride;
        if (__builtin_mul_overflow(stride, out->sizes[d] ? out->sizes[d] : 1, &stride)) return kc_err(KC_EEXPR, "tensor too large");
    }
    *bytes = (size_t)n;
    return KC_OK;
}

int kc_program_scratch_bytes(const kc_program *p, size_t i, const int64_t *vals, size_t *bytes) {
    int64_t v;
    if (i >= p->nscratch) return kc_err(KC_EINVAL, "no scratch %zu", i);
    int rc = eval(p, p->scratch[i], vals, &v);
    if (rc) return rc;
    if (v < 0) return kc_err(KC_EEXPR, "scratch size '%s' is negative", p->scratch[i]);
    *bytes = (size_t)v;
    return KC_OK;
}

int kc_program_dims(const kc_program *p, size_t i, const int64_t *vals, unsigned grid[3], unsigned block[3], unsigned *shared) {
    static const int64_t gmax[3] = {2147483647, 65535, 65535}, bmax[3] = {1024, 1024, 64};
    const pstep *s = &p->steps[i];
    int64_t threads = 1;
    for (int j = 0; j < 3; j++) {
        int64_t g, b;
        int rc = eval(p, s->grid[j], vals, &g);
        if (!rc) rc = eval(p, s->block[j], vals, &b);
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
    int rc = eval(p, s->shared, vals, &sh);
    if (rc) return rc;
    if (sh < 0 || sh > (1 << 30)) return kc_err(KC_EEXPR, "step %zu: shared memory %lld out of range", i, (long long)sh);
    *shared = (unsigned)sh;
    return KC_OK;
}

int kc_program_arg_abi(const kc_argdecl *decl, size_t ndecl, const char *x, kc_arg_abi *out) {
    /* Keep in step with kc_program_args_with below: what it packs is what this says. */
    static const struct { const char *prefix; unsigned size; int cls, pointer; } kinds[] = {
        {"input:", 8, KC_PARAM_INT, 1},  {"output:", 8, KC_PARAM_INT, 1},   {"saved:", 8, KC_PARAM_INT, 1},
        {"scratch:", 8, KC_PARAM_INT, 1}, {"grad_out:", 8, KC_PARAM_INT, 1}, {"grad_in:", 8, KC_PARAM_INT, 1},
        {"null", 8, KC_PARAM_INT, 1},
        {"philox_seed", 8, KC_PARAM_INT, 0}, {"philox_offset", 8, KC_PARAM_INT, 0},
        {"sym:", 8, KC_PARAM_INT, 0},    {"e64:", 8, KC_PARAM_INT, 0},      {"i64:", 8, KC_PARAM_INT, 0},
        {"e32:", 4, KC_PARAM_INT, 0},    {"i32:", 4, KC_PARAM_INT, 0},      {"u32:", 4, KC_PARAM_INT, 0},
        {"f32:", 4, KC_PARAM_FLOAT, 0},  {"f64:", 8, KC_PARAM_FLOAT, 0},
    };
    /* A runtime argument's type: its size and class (index = kc_arg_type). */
    static const struct { unsigned size; int cls; } types[] = {
        {0, 0}, {4, KC_PARAM_FLOAT}, {8, KC_PARAM_FLOAT}, {4, KC_PARAM_INT}, {4, KC_PARAM_INT}, {8, KC_PARAM_INT}, {8, KC_PARAM_INT},
    };
    out->pointer = 0;
    if (strncmp(x, "bytes:", 6) == 0) {
        uint8_t b[256];
        size_t n = kc_program_hex(x + 6, b);
        if (!n) return kc_err(KC_ECORRUPT, "malformed argument '%.64s'", x);
        out->size = (unsigned)n;
        out->cls = KC_PARAM_BYTES;
        return KC_OK;
    }
    if (strncmp(x, "arg:", 4) == 0) {
        for (size_t k = 0; k < ndecl; k++)
            if (strcmp(decl[k].name, x + 4) == 0 && decl[k].type >= KC_ARG_F32 && decl[k].type <= KC_ARG_U64) {
                out->size = types[decl[k].type].size;
                out->cls = types[decl[k].type].cls;
                return KC_OK;
            }
        return kc_err(KC_ECORRUPT, "argument '%.64s' names no runtime argument", x);
    }
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++) {
        size_t pl = strlen(kinds[k].prefix);
        if (strncmp(x, kinds[k].prefix, pl) == 0 && (kinds[k].prefix[pl - 1] == ':' || x[pl] == '\0')) {
            out->size = kinds[k].size;
            out->cls = kinds[k].cls;
            out->pointer = kinds[k].pointer;
            return KC_OK;
        }
    }
    return kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
}

int kc_program_check_values(const kc_program *p, const kc_value *v, size_t n) {
    if (n != p->nrargs || (n && !v)) {
        char list[256];
        size_t o = 0;
        list[0] = '\0';
        for (size_t i = 0; i < p->nrargs && o + 80 < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%.40s %s", i ? ", " : "", p->rargs[i].name,
                                  kc_arg_type_str(p->rargs[i].type));
        if (!p->nrargs) return kc_err(KC_EINVAL, "the graph takes no runtime arguments, %zu given", n);
        return kc_err(KC_EINVAL, "the graph takes %zu runtime argument%s (%s), %zu given%s", p->nrargs,
                      p->nrargs == 1 ? "" : "s", list, n,
                      n ? "" : ": pass their values (kc_graph_forward_args, kc_graph_backward_args)");
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].type != p->rargs[i].type)
            return kc_err(KC_EINVAL, "runtime argument %zu '%s' is %s, a value of type %s was given", i, p->rargs[i].name,
                          kc_arg_type_str(p->rargs[i].type), kc_arg_type_str((int)v[i].type));
    return KC_OK;
}

/* How many elements (scratch: bytes) tensor `idx` of `role` spans under bound symbols, and each one's bytes.  An
 * input counts the smaller of its element count and the elements its strides reach (a broadcast input is smaller
 * than its shape); a gradient has its tensor's shape. */
static int extent(const kc_program *p, int role, size_t idx, const int64_t *syms, int64_t *n, size_t *esize) {
    if (role == KC_ROLE_SCRATCH) {
        size_t b;
        int rc = kc_program_scratch_bytes(p, idx, syms, &b);
        *n = b > (size_t)INT64_MAX ? INT64_MAX : (int64_t)b;
        *esize = 1;
        return rc;
    }
    int trole = role == KC_ROLE_GRAD_IN ? KC_ROLE_INPUT : role == KC_ROLE_GRAD_OUT ? KC_ROLE_OUTPUT : role;
    const ptensor *t = kc_program_tensor(p, trole, idx);
    if (!t) return kc_err(KC_ECORRUPT, "no tensor %zu of role %d", idx, role);
    *esize = kc_dtype_size((kc_dtype)t->dtype);
    int64_t numel = 1, last = 0;
    int empty = 0;
    for (int d = 0; d < t->rank; d++) {
        int64_t sz, st = 0;
        int rc = eval(p, t->sizes[d], syms, &sz);
        if (!rc && trole == KC_ROLE_INPUT) rc = eval(p, t->strides[d], syms, &st);
        if (rc) return rc;
        if (sz <= 0) {
            empty = 1;
            continue;
        }
        if (st < 0 && __builtin_sub_overflow((int64_t)0, st, &st)) return kc_err(KC_EEXPR, "tensor too large");
        int64_t reach;
        if (__builtin_mul_overflow(numel, sz, &numel) || __builtin_mul_overflow(sz - 1, st, &reach) ||
            __builtin_add_overflow(last, reach, &last))
            return kc_err(KC_EEXPR, "tensor too large");
    }
    *n = empty ? 0 : trole == KC_ROLE_INPUT && last + 1 < numel ? last + 1 : numel;
    return KC_OK;
}

int kc_program_args(const kc_program *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                    const uint64_t *philox, kc_argval *vals, void **args) {
    return kc_program_args_with(p, i, syms, resolve, ctx, philox, NULL, vals, args);
}

int kc_program_args_with(const kc_program *p, size_t i, const int64_t *syms, kc_resolve_fn resolve, void *ctx,
                         const uint64_t *philox, const kc_value *rvals, kc_argval *vals, void **args) {
    const pstep *s = &p->steps[i];
    for (size_t a = 0; a < s->nargs; a++) {
        const char *x = s->args[a];
        int rc = KC_OK, done = 0;
        args[a] = &vals[a];
        for (size_t k = 0; k < KC_ARRAY_LEN(tensor_kinds) && !done; k++) {
            size_t pl = strlen(tensor_kinds[k].prefix);
            if (strncmp(x, tensor_kinds[k].prefix, pl) != 0) continue;
            done = 1;
            const char *end, *e;
            kc_program_offset_split(x, pl, &end, &e);
            size_t idx = (size_t)strtoull(x + pl, NULL, 10);
            rc = resolve(ctx, tensor_kinds[k].role, idx, &vals[a].ptr);
            if (rc || !e) break;
            int64_t off, n = 0;
            size_t esize = 1;
            if (!(rc = eval(p, e, syms, &off)) && off != 0 && !(rc = extent(p, tensor_kinds[k].role, idx, syms, &n, &esize))) {
                if (off < 0 || off >= n)
                    rc = kc_err(KC_EINVAL, "'%.64s': offset %lld is outside the tensor's %lld %s", x, (long long)off,
                                (long long)n, tensor_kinds[k].role == KC_ROLE_SCRATCH ? "bytes" : "elements");
                else /* off < n, and n elements of esize bytes were sized without overflow */
                    vals[a].ptr = (void *)((uintptr_t)vals[a].ptr + (uintptr_t)off * esize);
            }
        }
        if (!done) {
            if (strcmp(x, "philox_seed") == 0 || strcmp(x, "philox_offset") == 0) {
                if (!philox) rc = kc_err(KC_EINVAL, "'%s' needs the philox wrapper and an RNG state", x);
                else vals[a].u64 = philox[x[7] == 's' ? 0 : 1];
            } else if (strcmp(x, "null") == 0) {
                vals[a].ptr = NULL;
            } else if (strncmp(x, "arg:", 4) == 0) {
                size_t k;
                for (k = 0; k < p->nrargs; k++)
                    if (strcmp(p->rargs[k].name, x + 4) == 0) break;
                if (k == p->nrargs) rc = kc_err(KC_ECORRUPT, "'%.64s' names no runtime argument", x);
                else if (!rvals) rc = kc_err(KC_EINVAL, "'%.64s' needs the call's runtime argument values", x);
                else if (rvals[k].type != p->rargs[k].type)
                    rc = kc_err(KC_EINVAL, "runtime argument '%s' is %s, a value of type %s was given", p->rargs[k].name,
                                kc_arg_type_str(p->rargs[k].type), kc_arg_type_str((int)rvals[k].type));
                else switch (p->rargs[k].type) {
                    case KC_ARG_F32: vals[a].f32 = rvals[k].v.f32; break;
                    case KC_ARG_F64: vals[a].f64 = rvals[k].v.f64; break;
                    case KC_ARG_I32: vals[a].i32 = rvals[k].v.i32; break;
                    case KC_ARG_U32: vals[a].u32 = rvals[k].v.u32; break;
                    case KC_ARG_I64: vals[a].i64 = rvals[k].v.i64; break;
                    default: vals[a].u64 = rvals[k].v.u64; break;
                    }
            } else if (strncmp(x, "bytes:", 6) == 0) {
                if (!s->blobs || !s->blobs[a]) rc = kc_err(KC_ECORRUPT, "'%.64s' was not decoded", x);
                else args[a] = s->blobs[a];
            } else if (strncmp(x, "sym:", 4) == 0) {
                size_t k;
                for (k = 0; k < p->nsyms; k++)
                    if (strcmp(p->syms[k], x + 4) == 0) break;
                if (k == p->nsyms) rc = kc_err(KC_ECORRUPT, "unknown symbol in '%s'", x);
                else vals[a].i64 = syms[k];
            } else if (strncmp(x, "e64:", 4) == 0) {
                rc = eval(p, x + 4, syms, &vals[a].i64);
            } else if (strncmp(x, "e32:", 4) == 0) {
                int64_t v;
                rc = eval(p, x + 4, syms, &v);
                if (!rc && (v < INT32_MIN || v > INT32_MAX)) rc = kc_err(KC_EEXPR, "'%s' = %lld does not fit 32 bits", x, (long long)v);
                vals[a].i32 = (int32_t)v;
            } else if (strncmp(x, "i32:", 4) == 0) {
                vals[a].i32 = (int32_t)strtol(x + 4, NULL, 10);
            } else if (strncmp(x, "u32:", 4) == 0) {
                if (!parse_u32(x + 4, &vals[a].u32)) rc = kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
            } else if (strncmp(x, "i64:", 4) == 0) {
                vals[a].i64 = (int64_t)strtoll(x + 4, NULL, 10);
            } else if (strncmp(x, "f32:", 4) == 0) {
                vals[a].f32 = strtof(x + 4, NULL);
            } else if (strncmp(x, "f64:", 4) == 0) {
                if (!parse_f64(x + 4, &vals[a].f64)) rc = kc_err(KC_ECORRUPT, "bad constant '%.64s'", x);
            } else {
                rc = kc_err(KC_ECORRUPT, "unknown argument '%s'", x);
            }
        }
        if (rc) return kc_err_prefix(rc, "step %zu argument %zu", i, a);
    }
    return KC_OK;
}
