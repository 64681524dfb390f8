/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_objects.c — the driver double's table of live objects (modules, libraries, kernels,
 * functions, streams, events, graphs, graph execs), the names they go by in the log, the
 * launch records, and the leak report.
 *
 * The one idea: an object's handle is its (kind, id) and ids only grow, so the table can say
 * of any handle whether it is alive, was destroyed (and what it was: a small ring of the last
 * destroyed names makes "launch of an unloaded function 'k'" possible), or never existed.
 * Destroying a module or library destroys the functions and kernels it owns, as the driver's
 * unload does; a function's kernel description points into its owner's image and never
 * outlives it.
 *
 * Who calls it: the other files of the double, with the lock held (double_internal.h); tests
 * through kcd_launch_* and kcd_leaks.  Must not: hand out pointers into the table (it moves).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define KCD_GRAVE 256
#define KCD_MAX_RECORDS 1000000u

typedef struct kcd_rec {
    kcd_launch l;
    void *mem;
} kcd_rec;

static uint64_t next_id;
static kcd_obj **objs;
static size_t nobjs, capobjs;
static struct {
    uint64_t id;
    char name[64];
} grave[KCD_GRAVE];
static size_t ngrave;
static kcd_rec *recs;
static size_t nrecs, caprecs, dropped_recs;

uint64_t kcd_next_id(void) { return ++next_id; }

kcd_obj *kcd_obj_new(int kind) {
    if (nobjs == capobjs) {
        size_t cap = capobjs ? 2 * capobjs : 64;
        kcd_obj **v = realloc(objs, cap * sizeof *v);
        if (!v) return NULL;
        objs = v, capobjs = cap;
    }
    kcd_obj *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->id = kcd_next_id(), o->kind = kind, o->device = -1, o->carveout = -1;
    objs[nobjs++] = o;
    return o;
}

kcd_obj *kcd_obj_by_id(uint64_t id) {
    for (size_t i = 0; id && i < nobjs; i++)
        if (objs[i]->id == id) return objs[i];
    return NULL;
}

kcd_obj *kcd_obj_find(const void *handle, int kind) {
    kcd_obj *o = kcd_obj_by_id(kcd_handle_id(handle, kind));
    return o && o->kind == kind ? o : NULL;
}

int kcd_obj_dead(const void *handle, int kind) {
    uint64_t id = kcd_handle_id(handle, kind);
    return id && id <= next_id && !kcd_obj_by_id(id);
}

const char *kcd_obj_dead_name(const void *handle) {
    uint64_t v = (uint64_t)(uintptr_t)handle & KCD_ID_MASK;
    for (size_t i = 0; i < KCD_GRAVE && i < ngrave; i++)
        if (grave[i].id == v) return grave[i].name;
    return "?";
}

void *kcd_obj_handle(const kcd_obj *o) { return kcd_handle(o->kind, o->id); }

kcd_obj *kcd_obj_at(size_t i) { return i < nobjs ? objs[i] : NULL; }

void kcd_obj_free(kcd_obj *o) {
    if (o->kind == KCD_MOD || o->kind == KCD_LIB) /* its kernels and functions go first */
        for (size_t i = 0; i < nobjs;) {
            kcd_obj *d = objs[i];
            if ((d->kind == KCD_FUNC || d->kind == KCD_KERN) && d->owner == o->id) kcd_obj_free(d);
            else i++;
        }
    size_t g = ngrave++ % KCD_GRAVE;
    grave[g].id = o->id;
    snprintf(grave[g].name, sizeof grave[g].name, "%s",
             o->ki                                        ? o->ki->name
             : (o->kind == KCD_MOD || o->kind == KCD_LIB) ? o->im.target
                                                          : "?");
    if (o->kind == KCD_MOD || o->kind == KCD_LIB) kcd_image_free(&o->im);
    if (o->kind == KCD_GRAPH || o->kind == KCD_EXEC) kcd_nodes_free(&o->nodes);
    if (o->kind == KCD_STREAM) kcd_capture_forget_stream(o->id);
    for (size_t i = 0; i < nobjs; i++)
        if (objs[i] == o) {
            memmove(&objs[i], &objs[i + 1], (nobjs - i - 1) * sizeof *objs);
            nobjs--;
            break;
        }
    free(o);
}

const char *kcd_name(const void *h, char buf[32]) {
    uint64_t v = (uint64_t)(uintptr_t)h;
    if (!h) return "null";
    if (h == CU_STREAM_LEGACY) return "legacy";
    if (h == CU_STREAM_PER_THREAD) return "per-thread";
    unsigned kind = (unsigned)(v >> 40) & 0xff;
    if ((v & ~(KCD_ID_MASK | (uint64_t)0xff << 40)) == KCD_HANDLE_BASE && kind > 0 && kind < KCD_NKINDS)
        snprintf(buf, 32, "%c%llu", "?cmlkfsegx"[kind], (unsigned long long)(v & KCD_ID_MASK));
    else snprintf(buf, 32, "%#llx", (unsigned long long)v);
    return buf;
}

/* ---- launch records ---- */

void kcd_record_launch(const kcd_obj *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                       CUstream stream, int device, int captured, int replayed, const unsigned char *args,
                       size_t args_len, unsigned long long seq) {
    if (nrecs >= KCD_MAX_RECORDS) {
        dropped_recs++;
        return;
    }
    if (nrecs == caprecs) {
        size_t cap = caprecs ? 2 * caprecs : 256;
        kcd_rec *v = realloc(recs, cap * sizeof *v);
        if (!v) return;
        recs = v, caprecs = cap;
    }
    const kcd_kinfo *k = f->ki;
    size_t nl = strlen(k->name) + 1, tl = strlen(f->oim->target) + 1, head = (nl + tl + 3) & ~(size_t)3;
    unsigned char *m = malloc(head + 8 * (size_t)k->nparams + args_len + 1);
    if (!m) return;
    memcpy(m, k->name, nl);
    memcpy(m + nl, f->oim->target, tl);
    uint32_t *off = (uint32_t *)(void *)(m + head), *size = off + k->nparams;
    if (k->nparams) {
        memcpy(off, k->poff, 4 * (size_t)k->nparams);
        memcpy(size, k->psize, 4 * (size_t)k->nparams);
    }
    unsigned char *a = (unsigned char *)(size + k->nparams);
    if (args_len) memcpy(a, args, args_len);
    kcd_rec *r = &recs[nrecs++];
    memset(r, 0, sizeof *r);
    r->mem = m;
    kcd_launch *l = &r->l;
    l->kernel = (const char *)m, l->target = (const char *)m + nl;
    memcpy(l->grid, grid, sizeof l->grid);
    memcpy(l->block, block, sizeof l->block);
    l->shared = shared, l->stream = stream, l->device = device, l->captured = captured, l->replayed = replayed;
    l->seq = seq, l->nparams = k->nparams, l->param_offset = off, l->param_size = size;
    l->args = a, l->args_len = args_len;
}

void kcd_records_clear(void) {
    for (size_t i = 0; i < nrecs; i++) free(recs[i].mem);
    free(recs);
    recs = NULL, nrecs = caprecs = dropped_recs = 0;
}

size_t kcd_launch_count(void) {
    kcd_lock();
    size_t n = nrecs;
    kcd_unlock();
    return n;
}

int kcd_launch_get(size_t i, kcd_launch *out) {
    kcd_lock();
    int ok = i < nrecs && out;
    if (ok) *out = recs[i].l;
    kcd_unlock();
    return ok ? 0 : -1;
}

size_t kcd_launch_arg(const kcd_launch *l, size_t i, void *out, size_t cap) {
    if (!l || i >= l->nparams) return 0;
    size_t n = l->param_size[i];
    if (out) memcpy(out, l->args + l->param_offset[i], n < cap ? n : cap);
    return n;
}

uint64_t kcd_launch_arg_u64(const kcd_launch *l, size_t i) {
    unsigned char b[8] = {0};
    size_t n = kcd_launch_arg(l, i, b, sizeof b);
    if (n != 1 && n != 2 && n != 4 && n != 8) return 0;
    uint64_t v = 0;
    for (size_t j = n; j-- > 0;) v = v << 8 | b[j];
    return v;
}

/* ---- leaks ---- */

static void addf(char *buf, size_t cap, size_t *off, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void addf(char *buf, size_t cap, size_t *off, const char *fmt, ...) {
    if (!buf || *off >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *off, cap - *off, fmt, ap);
    va_end(ap);
    if (n > 0) *off = *off + (size_t)n < cap ? *off + (size_t)n : cap - 1;
}

size_t kcd_leaks(char *buf, size_t cap) {
    kcd_lock();
    size_t n = 0, off = 0;
    if (buf && cap) buf[0] = '\0';
    for (size_t i = 0; i < nobjs; i++) {
        const kcd_obj *o = objs[i];
        char nm[32];
        kcd_name(kcd_obj_handle(o), nm);
        switch (o->kind) {
        case KCD_MOD:
        case KCD_LIB:
            addf(buf, cap, &off, "%s %s (%s:", o->kind == KCD_MOD ? "module" : "library", nm, o->im.target);
            for (size_t k = 0; k < o->im.nkernels && k < 8; k++) addf(buf, cap, &off, " %s", o->im.k[k].name);
            addf(buf, cap, &off, "%s)\n", o->im.nkernels > 8 ? " …" : "");
            break;
        case KCD_STREAM: addf(buf, cap, &off, "stream %s\n", nm); break;
        case KCD_EVENT: addf(buf, cap, &off, "event %s\n", nm); break;
        case KCD_GRAPH: addf(buf, cap, &off, "graph %s (%zu nodes)\n", nm, o->nodes.n); break;
        case KCD_EXEC: addf(buf, cap, &off, "graph exec %s (%zu nodes)\n", nm, o->nodes.n); break;
        default: continue;
        }
        n++;
    }
    n += kcd_alloc_leaks(buf, cap, &off);
    kcd_unlock();
    return n;
}
