/* SPDX-License-Identifier: Apache-2.0 */
/*
 * abi.c — the launch ABI of a graph: every step's arguments checked against its kernel's
 * parameter table as the compiler produced it, and the PARAMS section that keeps the tables
 * in the entry.
 *
 * PARAMS section := nkernels:u32 { nparams:u32 total:u32 { offset:u32 size:u32 align:u32 cls:u8 }[nparams] }
 *   one table per kernel, in the KERNELS section's kernel order (nkernels equal);
 *   nparams ≤ KC_PARAMS_MAX; parameters in order, non-overlapping (gaps are alignment padding), sizes ≥ 1;
 *   align 0 (not recorded: a cubin) or a power of two;
 *   total == end of the last parameter (0 when none) ≤ KC_PARAMS_MAX_BYTES; cls ≤ KC_PARAM_BYTES.
 *
 * The one idea: the driver copies into a kernel's parameter bank exactly the bytes its table
 * says, from wherever each argument pointer points — so an argument too few, or 4 bytes where
 * the kernel reads 8, is garbage on a GPU and a fault far from its cause.  The table is read
 * from the image right after NVRTC (compile/params.h) on the build host, every step is checked
 * against it before anything is stored (a mismatch is KC_ECOMPILE naming graph, pass, step,
 * argument and sizes), and the table is kept in the entry so that a load checks the launch
 * programs again — and, where the driver has cuFuncGetParamInfo, the table against the driver.
 *
 * Callers: lookup.c (tables from images, the check, the writer), loaded.c (the reader, the
 * check at load), the public kc_entry_params (kcache show).  Must not: accept a table it could
 * not read whole, or pass a step whose every argument was not matched.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../compile/params.h"
#include "graph_internal.h"
#include "program.h"

void kc_abi_free(kc_params *t, size_t n) {
    for (size_t i = 0; t && i < n; i++) kc_params_free(&t[i]);
    free(t);
}

int kc_abi_tables(const kc_graph_desc *d, const kc_units *u, int is_ptx, kc_compiled *const *res, kc_params **out) {
    *out = NULL;
    kc_params *t = kc_calloc(d->nkernels ? d->nkernels : 1, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "out of memory");
    for (size_t i = 0; i < d->nkernels; i++) {
        const kc_compiled *c = res[u->unit_of[i]];
        const char *lowered = c->lowered_names[u->slot[i]];
        int rc = kc_params_read(c->image, c->len, is_ptx, lowered, &t[i]);
        if (rc) {
            kc_abi_free(t, d->nkernels);
            return kc_err_prefix(rc == KC_ENOMEM ? rc : KC_ECOMPILE,
                                 "graph '%s': kernel '%s': cannot read its parameter table from the compiled image",
                                 d->name, d->kernels[i].name);
        }
    }
    *out = t;
    return KC_OK;
}

/* "8,8,4" — the sizes a table takes, for messages. */
static void sizes_of(const kc_params *t, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->n && o + 16 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%u", i ? "," : "", t->v[i].size);
    if (!t->n) snprintf(buf, cap, "none");
}

/* A parameter's class, for messages (", an integer or a pointer"; "" when the image does not say). */
static const char *cls_name(int cls) {
    return cls == KC_PARAM_INT     ? ", an integer or a pointer"
           : cls == KC_PARAM_FLOAT ? ", a floating-point value"
           : cls == KC_PARAM_BYTES ? ", bytes by value"
                                   : "";
}

/* The kinds of argument that fit parameter p, into buf (for a message only: a load checks every argument of every
 * step, and a list built for each one that fits was most of a load's own time). */
static const char *fits_for(const kc_param *p, char *buf, size_t cap) {
    kc_program_arg_kinds_for(p->size, p->cls, buf, cap);
    return buf;
}

int kc_abi_check_step(int status, const char *where, const char *kernel, char *const *args, size_t nargs,
                      const kc_params *t, const kc_argdecl *decl, size_t ndecl) {
    char sz[128];
    if (nargs != t->n) {
        sizes_of(t, sz, sizeof sz);
        return kc_err(status, "%s (kernel '%s'): %zu argument%s given, the kernel takes %zu (of %s bytes)", where,
                      kernel, nargs, nargs == 1 ? "" : "s", t->n, sz);
    }
    for (size_t a = 0; a < nargs; a++) {
        kc_arg_abi abi;
        const kc_param *p = &t->v[a];
        int rc = kc_program_arg_abi(decl, ndecl, args[a], &abi);
        if (rc) return kc_err_prefix(status, "%s (kernel '%s'): argument %zu", where, kernel, a);
        char fits[400];
        if (abi.size != p->size) {
            kc_program_arg_kinds_for(p->size, p->cls, fits, sizeof fits);
            return kc_err(status,
                          "%s (kernel '%s'): argument %zu ('%.64s') passes %u bytes, the kernel's parameter %zu "
                          "takes %u (at offset %u), aligned to %u%s; kinds that fit it: %s",
                          where, kernel, a, args[a], abi.size, a, p->size, p->offset, p->align ? p->align : p->size,
                          cls_name(p->cls), fits);
        }
        if (abi.cls == KC_PARAM_BYTES) continue; /* by-value bytes of the parameter's exact size fit any class */
        if (p->offset % abi.size)
            return kc_err(status,
                          "%s (kernel '%s'): argument %zu ('%.64s') is a %u-byte value, but the kernel's parameter "
                          "%zu at offset %u is not %u-byte aligned (an aggregate, not a scalar)",
                          where, kernel, a, args[a], abi.size, a, p->offset, abi.size);
        if (p->cls == KC_PARAM_FLOAT && abi.cls != KC_PARAM_FLOAT)
            return kc_err(status,
                          "%s (kernel '%s'): argument %zu ('%.64s') is %s, the kernel's parameter %zu is a "
                          "%u-byte floating-point value; kinds that fit it: %s",
                          where, kernel, a, args[a], abi.pointer ? "a pointer" : "an integer", a, p->size,
                          fits_for(p, fits, sizeof fits));
        if (p->cls == KC_PARAM_INT && abi.cls == KC_PARAM_FLOAT)
            return kc_err(status,
                          "%s (kernel '%s'): argument %zu ('%.64s') is a floating-point value, the kernel's "
                          "parameter %zu is a %u-byte integer or a pointer; kinds that fit it: %s",
                          where, kernel, a, args[a], a, p->size, fits_for(p, fits, sizeof fits));
    }
    return KC_OK;
}

int kc_abi_check_desc(const kc_graph_desc *d, const kc_params *t) {
    size_t nth[2] = {0, 0};
    for (size_t i = 0; i < d->nsteps; i++) {
        const gstep *s = &d->steps[i];
        int bw = s->pass == KC_PASS_BACKWARD;
        char where[200];
        snprintf(where, sizeof where, "graph '%s': %s step %zu", d->name, bw ? "backward" : "forward", nth[bw]++);
        int rc = kc_abi_check_step(KC_ECOMPILE, where, d->kernels[s->kernel].name, s->args, s->nargs, &t[s->kernel],
                                   d->rargs, d->nrargs);
        if (rc) return rc;
    }
    return KC_OK;
}

void kc_abi_encode(kc_buf *b, const kc_params *t, size_t n) {
    kc_buf_put_u32(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        kc_buf_put_u32(b, (uint32_t)t[i].n);
        kc_buf_put_u32(b, t[i].total);
        for (size_t k = 0; k < t[i].n; k++) {
            kc_buf_put_u32(b, t[i].v[k].offset);
            kc_buf_put_u32(b, t[i].v[k].size);
            kc_buf_put_u32(b, t[i].v[k].align);
            kc_buf_put_u8(b, t[i].v[k].cls);
        }
    }
}

int kc_abi_decode(const kc_entry *e, size_t nkernels, kc_params **out) {
    *out = NULL;
    const void *data;
    size_t len;
    int rc = kc_entry_section(e, KC_SECTION_PARAMS, &data, &len);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "entry has no PARAMS section") : rc;
    kc_reader r = kc_reader_make(data, len);
    if (kc_rd_next_u32(&r) != nkernels || r.bad)
        return kc_err(KC_ECORRUPT, "corrupt entry: PARAMS section does not have one table per kernel");
    kc_params *t = kc_calloc(nkernels ? nkernels : 1, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "out of memory");
    for (size_t i = 0; i < nkernels && !r.bad; i++) {
        uint32_t n = kc_rd_next_u32(&r), total = kc_rd_next_u32(&r), end = 0;
        if (r.bad || n > KC_PARAMS_MAX || total > KC_PARAMS_MAX_BYTES || (size_t)n * 13 > r.left) {
            r.bad = 1;
            break;
        }
        if (n && !(t[i].v = kc_calloc(n, sizeof *t[i].v))) {
            kc_abi_free(t, nkernels);
            return kc_err(KC_ENOMEM, "out of memory");
        }
        t[i].n = n;
        t[i].total = total;
        for (uint32_t k = 0; k < n && !r.bad; k++) {
            kc_param *p = &t[i].v[k];
            p->offset = kc_rd_next_u32(&r);
            p->size = kc_rd_next_u32(&r);
            p->align = kc_rd_next_u32(&r);
            p->cls = kc_rd_next_u8(&r);
            if (p->offset < end || p->size == 0 || p->size > KC_PARAMS_MAX_BYTES ||
                p->offset > KC_PARAMS_MAX_BYTES - p->size || p->cls > KC_PARAM_BYTES || (p->align & (p->align - 1)))
                r.bad = 1;
            end = p->offset + p->size;
        }
        if (!r.bad && end != total) r.bad = 1;
    }
    if (r.bad || r.left) {
        kc_abi_free(t, nkernels);
        return kc_err(KC_ECORRUPT, "corrupt entry: malformed PARAMS section");
    }
    *out = t;
    return KC_OK;
}

int kc_abi_check_program(const char *where, const kc_lprog *p, const kc_params *t, const char *const *names) {
    for (size_t i = 0; p && i < p->nsteps; i++) {
        char w[200];
        snprintf(w, sizeof w, "%s: %s step %zu", where, p->pass == KC_PASS_BACKWARD ? "backward" : "forward", i);
        const pstep *s = &p->steps[i];
        int rc = kc_abi_check_step(KC_ECORRUPT, w, names[s->kernel], s->args, s->nargs, &t[s->kernel], p->rargs,
                                   p->nrargs);
        if (rc) return rc;
    }
    return KC_OK;
}

int kc_entry_params(const kc_entry *e, kc_param_visit_cb cb, void *ctx) {
    if (!e || !cb) return kc_err(KC_EINVAL, "kc_entry_params: NULL argument");
    kimg *v;
    size_t n;
    char *strs;
    kc_params *t;
    int rc = kc_kernels_of(e, &v, &n, NULL, &strs);
    if (rc) return rc;
    if (!(rc = kc_abi_decode(e, n, &t))) {
        static const char *const cls[] = {"any", "int", "float", "bytes"};
        for (size_t i = 0; i < n && !rc; i++) {
            kc_param_info *pi = kc_calloc(t[i].n + 1, sizeof *pi);
            if (!pi) {
                rc = kc_err(KC_ENOMEM, "out of memory");
                break;
            }
            for (size_t k = 0; k < t[i].n; k++)
                pi[k] = (kc_param_info){t[i].v[k].offset, t[i].v[k].size, t[i].v[k].align, cls[t[i].v[k].cls]};
            cb(v[i].name, v[i].lowered, pi, t[i].n, ctx);
            free(pi);
        }
        kc_abi_free(t, n);
    }
    free(v);
    free(strs);
    return rc;
}
