/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loaded.c — the process-wide table of loaded graphs, and loading one from an entry.
 *
 * [Note: loaded graphs] Same key and device → the same kc_graph, reference-counted; the
 * table holds one reference of its own, so a graph stays loaded after its last user released
 * it, and the next lookup is a memory hit.  The table has a budget (graphs and image bytes,
 * kc_graph_loaded_budget): when it is over, the least recently looked-up graphs that only the
 * table holds (refs == 1) are unlinked and unloaded, outside the table's lock.  A graph is only
 * ever taken from the table under the lock (find, publish), and a graph with refs == 1 seen
 * under the lock has no other holder, so eviction never unloads a graph someone can reach.
 * A budget check runs when a graph joins the table and when a release leaves a graph to the
 * table alone.  Loading resolves every kernel of the KERNELS section (one module per image),
 * decodes and re-validates both launch programs, and rebuilds the recorded wrapper chain
 * around the graph's own forward (run.c); it reads the device's facts once (device.c), which
 * the programs' device_* names evaluate to.  A bypassed graph is never published.
 *
 * Callers: lookup.c (find, load, publish); run.c and cudagraph.c use kc_graph's fields.
 * Must not: give the driver an image the KERNELS reader did not accept.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "graph_internal.h"
#include "../cuda/internal.h"
#include "kcache/cuda.h"
#include "program.h"
#include "../config/config.h"

static pthread_mutex_t loaded_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_graph *loaded;
static struct {
    size_t graphs, bytes;         /* in the table */
    size_t max_graphs, max_bytes; /* the budget */
    int configured;               /* the budget was read from the environment or set */
    uint64_t clock;               /* ticks at each lookup: the LRU order */
    unsigned long long unloads;
} lt;

/* The budget from KCACHE_LOADED_GRAPHS / KCACHE_LOADED_BYTES, once (a bad value: a warning, the default). Locked. */
static void configure_locked(void) {
    if (lt.configured) return;
    unsigned long long g = 512, b = 1ull << 30;
    g = kc_config_process()->v.loaded_graphs; /* the process's settings (config/): a bad value was said there */
    b = kc_config_process()->v.loaded_bytes;
    lt.max_graphs = (size_t)g;
    lt.max_bytes = (size_t)b;
    lt.configured = 1;
}

/* Unlink released graphs, least recently used first, while over budget; returns them as a list. Locked. */
static kc_graph *trim_locked(void) {
    configure_locked();
    kc_graph *out = NULL;
    while (lt.graphs > lt.max_graphs || lt.bytes > lt.max_bytes) {
        kc_graph **victim = NULL;
        for (kc_graph **pp = &loaded; *pp; pp = &(*pp)->next)
            if (__atomic_load_n(&(*pp)->refs, __ATOMIC_ACQUIRE) == 1 && (!victim || (*pp)->used < (*victim)->used))
                victim = pp;
        if (!victim) break; /* everything over budget is in use */
        kc_graph *g = *victim;
        *victim = g->next;
        lt.graphs--;
        lt.bytes -= g->bytes;
        lt.unloads++;
        g->next = out;
        out = g;
    }
    return out;
}

static void unload_list(kc_graph *g) {
    while (g) {
        kc_graph *next = g->next;
        kc_graph_release(g); /* the table's reference: the last one */
        g = next;
    }
}

static void graph_destroy(kc_graph *g) {
    kc_wrapper_chain_free(g->chain);
    kc_lprog_free(g->fwd);
    kc_lprog_free(g->bwd);
    for (size_t i = 0; g->modules && i < g->nimages; i++) kc_module_free(g->modules[i]);
    for (size_t i = 0; g->kfn && i < g->nkernels; i++) free(g->kfn[i].name);
    free(g->kfn);
    free(g->modules);
    free(g->fns);
    free(g);
}

void kc_graph_release(kc_graph *g) {
    if (!g) return;
    /* Read before the decrement: once refs is 1, another thread's trim may unload and free g at any moment. */
    int in_table = g->in_table;
    int left = __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL);
    if (left == 0) {
        graph_destroy(g);
    } else if (left == 1 && in_table) { /* now only the table holds it: the budget may want it gone */
        pthread_mutex_lock(&loaded_mu);
        kc_graph *evicted = trim_locked();
        pthread_mutex_unlock(&loaded_mu);
        unload_list(evicted);
    }
}

void kc_graph_loaded_budget(size_t max_graphs, size_t max_bytes) {
    pthread_mutex_lock(&loaded_mu);
    lt.configured = 1;
    lt.max_graphs = max_graphs;
    lt.max_bytes = max_bytes;
    kc_graph *evicted = trim_locked();
    pthread_mutex_unlock(&loaded_mu);
    unload_list(evicted);
}

void kc_graph_loaded_budget_get(size_t *max_graphs, size_t *max_bytes) {
    pthread_mutex_lock(&loaded_mu);
    configure_locked();
    if (max_graphs) *max_graphs = lt.max_graphs;
    if (max_bytes) *max_bytes = lt.max_bytes;
    pthread_mutex_unlock(&loaded_mu);
}

/* The size of a kc_loaded_stats at each version this build knows ([Note: versioned structs]). */
static size_t stats_size(unsigned version) {
    (void)version; /* version 1 is the only one yet */
    return sizeof(kc_loaded_stats);
}

int kc_graph_loaded_stats(kc_loaded_stats *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_graph_loaded_stats: NULL argument");
    int rc = kc_api_version("kc_graph_loaded_stats", "kc_loaded_stats", "KC_LOADED_STATS_INIT", out->version,
                            KC_LOADED_STATS_VERSION);
    if (rc) return rc;
    kc_loaded_stats full = KC_LOADED_STATS_INIT;
    pthread_mutex_lock(&loaded_mu);
    configure_locked();
    full.graphs = lt.graphs;
    full.bytes = lt.bytes;
    for (kc_graph *g = loaded; g; g = g->next) {
        int refs = __atomic_load_n(&g->refs, __ATOMIC_ACQUIRE);
        full.in_use += refs > 1;
        full.unreferenced += refs == 1; /* the table's own reference only */
    }
    full.max_graphs = lt.max_graphs;
    full.max_bytes = lt.max_bytes;
    full.unloads = lt.unloads;
    pthread_mutex_unlock(&loaded_mu);
    kc_api_copy_out(out, &full, stats_size(out->version), out->version);
    return KC_OK;
}

int kc_graph_function(const kc_graph *g, int i, void **fn_out) {
    if (!g || !fn_out || i < 0 || (size_t)i >= g->nkernels) return kc_err(KC_EINVAL, "kc_graph_function: bad index");
    *fn_out = g->fns[i];
    return KC_OK;
}

/*
 * The driver's own record of a kernel's parameters (cuFuncGetParamInfo, where the driver has
 * it) must be the table the entry was checked against: KC_EREFUSED naming the first difference.
 */
static int driver_agrees(void *fn, const char *kernel, const kc_params *t) {
    for (size_t i = 0; i <= t->n; i++) {
        size_t off = 0, size = 0;
        int rc = kc_cuda_param_info(fn, i, &off, &size);
        if (rc == KC_MISS) return KC_OK; /* a driver older than 12.4: the entry's table stands */
        if (i == t->n) {
            if (rc == KC_EINVAL) return KC_OK;
            if (rc == KC_OK)
                return kc_err(KC_EREFUSED,
                              "kernel '%s': the driver reports more than the %zu parameters the entry "
                              "records",
                              kernel, t->n);
            return rc;
        }
        if (rc == KC_EINVAL)
            return kc_err(KC_EREFUSED, "kernel '%s': the driver reports %zu parameters, the entry %zu", kernel, i,
                          t->n);
        if (rc) return rc;
        if (off != t->v[i].offset || size != t->v[i].size)
            return kc_err(KC_EREFUSED,
                          "kernel '%s': parameter %zu is %zu bytes at offset %zu to the driver, %u at %u in the "
                          "entry",
                          kernel, i, size, off, t->v[i].size, t->v[i].offset);
    }
    return KC_OK;
}

/*
 * Backward runs over what forward bound — its symbols' values (kc_saved's syms, as many as the forward has) and its
 * tensors — so the BACKWARD section must declare the same symbols, in order, and the same tensor records as FORWARD
 * (kcache writes both from one description).  KC_ECORRUPT otherwise: never an evaluation past the forward's values.
 */
static int same_bindings(const kc_lprog *f, const kc_lprog *b) {
    int ok = b->nsyms == f->nsyms && b->ntensors == f->ntensors;
    for (size_t i = 0; ok && i < f->nsyms; i++) ok = strcmp(f->syms[i], b->syms[i]) == 0;
    for (size_t i = 0; ok && i < f->ntensors; i++) {
        const ptensor *x = &f->tensors[i], *y = &b->tensors[i];
        ok = x->role == y->role && x->dtype == y->dtype && x->rank == y->rank && x->requires_grad == y->requires_grad &&
             x->inplace == y->inplace && x->accumulate == y->accumulate && x->alias == y->alias;
        for (int r = 0; ok && r < x->rank; r++)
            ok = !strcmp(x->sizes[r], y->sizes[r]) && !strcmp(x->strides[r], y->strides[r]);
    }
    return ok ? KC_OK
              : kc_err(KC_ECORRUPT, "corrupt entry: the backward program's symbols or tensors are not the forward's");
}

/* One load: the entry's kernels viewed in place, their parameter tables, and where its time goes
 * (KCACHE_LOG=load). */
typedef struct load_state {
    kimg *v;
    size_t n, nimg;
    char *strs;
    kc_params *abi;
    const char **names;
    uint64_t t_dev, t_mod, t_fn, t_par, t_kern, t_prog, t_wrap;
    char where[96], hex[KC_KEY_HEX_LEN + 1];
} load_state;

static void load_state_free(load_state *s) {
    free(s->v);
    free(s->names);
    kc_abi_free(s->abi, s->n);
    free(s->strs);
    s->v = NULL, s->names = NULL, s->abi = NULL, s->strs = NULL;
}

/* The entry's kernels, each with its image attached. */
static int load_kernels(const kc_entry *e, int kernelless, load_state *s) {
    int rc = kernelless ? KC_OK : kc_kernels_of(e, &s->v, &s->n, &s->nimg, &s->strs);
    if (rc) return rc;
    for (size_t i = 0; i < s->n; i++)
        if (!s->v[i].image)
            return kc_err(KC_EINVAL, "load: kernel '%s' has no image attached (the graph's images were not fetched)",
                          s->v[i].name);
    return KC_OK;
}

/* The graph's shell: its tables sized for the kernels and images, its identity. */
static int load_alloc(const kc_entry *e, const kc_key *key, int device, load_state *s, kc_graph **out) {
    size_t n = s->n;
    kc_graph *g = kc_calloc(1, sizeof *g);
    if (!g || !(g->modules = kc_calloc(s->nimg + 1, sizeof *g->modules)) ||
        !(g->fns = kc_calloc(n + 1, sizeof *g->fns)) || !(s->names = kc_calloc(n + 1, sizeof *s->names))) {
        if (g) free(g->modules), free(g->fns);
        free(g);
        return kc_err(KC_ENOMEM, "load: out of memory");
    }
    g->refs = 1;
    g->key = *key;
    g->device = device;
    g->nkernels = n;
    g->nimages = s->nimg;
    snprintf(g->variant, sizeof g->variant, "%s", kc_entry_variant(e));
    char cu[24];
    if (kc_entry_origin(e, "compile_wall_us", cu, sizeof cu) == KC_OK) g->compile_us = strtoull(cu, NULL, 10);
    for (size_t i = 0; i < n; i++) s->names[i] = s->v[i].name;
    *out = g;
    return KC_OK;
}

/* Whether every step of `p` (may be NULL) names one of the n kernels. */
static int steps_name_kernels(const struct kc_lprog *p, size_t n) {
    for (size_t i = 0; p && i < p->nsteps; i++)
        if (p->steps[i].kernel < 0 || (size_t)p->steps[i].kernel >= n)
            return kc_err(KC_ECORRUPT, "step names no kernel");
    return KC_OK;
}

/* The launch programs, checked against the parameter tables before any image reaches the driver. */
static int load_programs(kc_graph *g, const kc_entry *e, int kernelless, load_state *s) {
    const void *pd;
    size_t pl;
    int rc = kernelless ? KC_OK : kc_abi_decode(e, s->n, &s->abi);
    if (!rc && kc_entry_section(e, KC_SECTION_FORWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->fwd);
    else if (!rc) rc = kc_err(KC_ECORRUPT, "entry has no FORWARD section");
    if (!rc && kc_entry_section(e, KC_SECTION_BACKWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->bwd);
    if (!rc && g->bwd) rc = same_bindings(g->fwd, g->bwd);
    if (!rc) rc = steps_name_kernels(g->fwd, s->n);
    if (!rc) rc = steps_name_kernels(g->bwd, s->n);
    if (!rc) rc = kc_abi_check_program(s->where, g->fwd, s->abi, s->names);
    if (!rc) rc = kc_abi_check_program(s->where, g->bwd, s->abi, s->names);
    return rc;
}

/* The device's facts, read once for this graph (its programs' device_* names evaluate to them), and
 * each kernel's shared-memory record. */
static int load_device(kc_graph *g, int device, load_state *s) {
    uint64_t t1 = kc_mono_ns();
    int rc = kc_device_facts_read(device, g->dev);
    s->t_dev = kc_mono_ns() - t1;
    if (!rc) {
        g->fwd->dev = g->dev;
        if (g->bwd) g->bwd->dev = g->dev;
        if (!(g->kfn = kc_calloc(s->n + 1, sizeof *g->kfn))) rc = kc_err(KC_ENOMEM, "load: out of memory");
    }
    for (size_t i = 0; !rc && i < s->n; i++) {
        g->kfn[i].max_dyn = -1; /* read from the function when a launch first asks for dynamic shared memory */
        g->kfn[i].fn = (int)i;  /* its own function until load_modules finds it shares another's handle */
        if (!(g->kfn[i].name = kc_strdup(s->v[i].name))) rc = kc_err(KC_ENOMEM, "load: out of memory");
    }
    return rc;
}

/* The first kernel before i that is the same function (the same image and symbol): i itself when none. */
static size_t first_of_function(const load_state *s, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (s->v[j].image_index == s->v[i].image_index && strcmp(s->v[j].lowered, s->v[i].lowered) == 0) return j;
    return i;
}

/* Whether two parameter tables say the same offsets and sizes (all the driver's check compares). */
static int same_table(const kc_params *a, const kc_params *b) {
    if (a->n != b->n) return 0;
    for (size_t p = 0; p < a->n; p++)
        if (a->v[p].offset != b->v[p].offset || a->v[p].size != b->v[p].size) return 0;
    return 1;
}

/*
 * Each image to the driver once (kernels of a unit share it), each function fetched and loaded
 * once (two kernels naming one symbol of one image share its handle), and the driver's view of
 * its parameters against the table — once per function and table.  The device's primary context
 * is pushed once for the whole load, not per image and kernel ([Note: driver calls per load]).
 */
static int load_modules(kc_graph *g, int device, load_state *s) {
    if (!s->n) return KC_OK; /* a kernel-less graph: no driver call at all */
    int rc = kc_cuda_push(device);
    if (rc) return kc_err_prefix(rc, "load on device %d", device);
    for (size_t i = 0; i < s->n && !rc; i++) {
        const kimg *v = &s->v[i];
        kc_module **m = &g->modules[v->image_index];
        uint64_t a = kc_mono_ns(), b, c2;
        if (!*m) {
            rc = kc_module_load_current(m, device, v->image, v->len);
            if (rc) rc = kc_err_prefix(rc, "the %s image", v->target);
            else g->bytes += v->len;
        }
        b = kc_mono_ns();
        size_t j = first_of_function(s, i);
        if (!rc && j < i) g->fns[i] = g->fns[j];
        else if (!rc) rc = kc_module_function_current(*m, v->lowered, &g->fns[i]);
        for (size_t h = 0; !rc && h < i; h++) /* one shared-memory record per handle (device.c) */
            if (g->fns[h] == g->fns[i]) {
                g->kfn[i].fn = (int)h;
                break;
            }
        c2 = kc_mono_ns();
        if (!rc && (j == i || !same_table(&s->abi[i], &s->abi[j]))) rc = driver_agrees(g->fns[i], v->name, &s->abi[i]);
        s->t_mod += b - a, s->t_fn += c2 - b, s->t_par += kc_mono_ns() - c2;
    }
    kc_cuda_pop();
    return rc;
}

/* Load every kernel of an entry (`kernelless`: an in-memory entry of a graph with no kernel, lookup.c's [Note:
 * kernel-less graphs]: no KERNELS, IMAGES nor PARAMS section); KC_EREFUSED when the driver refuses an image. */
static int load(const kc_entry *e, const kc_key *key, int device, int kernelless, kc_graph **out) {
    load_state s;
    memset(&s, 0, sizeof s);
    uint64_t t0 = kc_mono_ns(); /* KCACHE_LOG=load: where a load's time goes */
    kc_graph *g = NULL;
    int rc = load_kernels(e, kernelless, &s);
    if (!rc) rc = load_alloc(e, key, device, &s, &g);
    uint64_t t1 = kc_mono_ns();
    s.t_kern = t1 - t0;
    if (rc) {
        load_state_free(&s);
        return rc;
    }
    kc_key_to_hex(key, s.hex);
    snprintf(s.where, sizeof s.where, "entry %s.%s", s.hex, kc_entry_variant(e));
    rc = load_programs(g, e, kernelless, &s);
    s.t_prog = kc_mono_ns() - t1;
    if (!rc) rc = load_device(g, device, &s);
    if (!rc) rc = load_modules(g, device, &s);
    /* The recorded wrappers around this graph's own forward. */
    uint64_t t2 = kc_mono_ns();
    if (!rc) {
        kc_callable base = {kc_graph_run_forward, g};
        rc = kc_wrapper_chain_build(&g->chain, e, &base);
    }
    s.t_wrap = kc_mono_ns() - t2;
    load_state_free(&s);
    if (rc) {
        graph_destroy(g);
        return rc;
    }
    uint64_t total = kc_mono_ns() - t0;
    uint64_t known = s.t_mod + s.t_fn + s.t_par + s.t_dev + s.t_kern + s.t_prog + s.t_wrap;
    kc_log(KC_LOG_LOAD,
           "loaded %s.%s on device %d in %.1f us: %zu images %.1f us, %zu kernels fetched %.1f us, their "
           "parameters checked with the driver %.1f us, device facts %.1f us; kcache's own work: the KERNELS "
           "section read %.1f us, the programs decoded and checked %.1f us, the wrappers %.1f us, the rest %.1f us",
           s.hex, g->variant, device, total / 1e3, s.nimg, s.t_mod / 1e3, s.n, s.t_fn / 1e3, s.t_par / 1e3,
           s.t_dev / 1e3, s.t_kern / 1e3, s.t_prog / 1e3, s.t_wrap / 1e3,
           (double)(total > known ? total - known : 0) / 1e3);
    *out = g;
    return KC_OK;
}

int kc_graph_load(const kc_entry *e, const kc_key *key, int device, kc_graph **out) {
    return load(e, key, device, 0, out);
}

/* A kernel-less graph's in-memory entry: its launch programs and wrappers, as an entry of it would hold them. */
static int kernelless_entry(const kc_graph_desc *d, const kc_key *key, const char *target, kc_entry **out) {
    kc_entry *e;
    int rc = kc_entry_new(&e, key, target);
    if (rc) return rc;
    kc_buf fw = {0}, bw = {0}, wr = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &fw);
    if (kc_graph_desc_has_backward_(d)) kc_program_encode(d, KC_PASS_BACKWARD, &bw);
    kc_wrappers_encode(d, &wr);
    if (fw.failed || bw.failed || wr.failed) rc = kc_err(KC_ENOMEM, "entry: out of memory");
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_FORWARD, fw.data, fw.len);
    if (!rc && bw.len) rc = kc_entry_set_section(e, KC_SECTION_BACKWARD, bw.data, bw.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_WRAPPERS, wr.data, wr.len);
    kc_buf_free(&fw), kc_buf_free(&bw), kc_buf_free(&wr);
    if (rc) kc_entry_free(e), e = NULL;
    *out = e;
    return rc;
}

int kc_graph_load_kernelless(const kc_graph_desc *d, const kc_key *key, const char *variant, int device,
                             kc_graph **out) {
    kc_entry *e = NULL;
    int rc = kernelless_entry(d, key, variant, &e);
    if (!rc) rc = load(e, key, device, 1, out);
    kc_entry_free(e);
    return rc;
}

int kc_graph_device(const kc_graph *g) { return g->device; }

kc_graph *kc_loaded_find(const kc_key *key, int device) {
    kc_graph *out = NULL;
    pthread_mutex_lock(&loaded_mu);
    for (kc_graph *g = loaded; g; g = g->next)
        if (g->device == device && memcmp(g->key.bytes, key->bytes, 16) == 0) {
            __atomic_add_fetch(&g->refs, 1, __ATOMIC_ACQ_REL);
            g->used = ++lt.clock;
            out = g;
            break;
        }
    pthread_mutex_unlock(&loaded_mu);
    return out;
}

kc_graph *kc_loaded_publish(kc_graph *g, int keep) {
    /* Publish, unless another thread loaded the same graph meanwhile: use theirs. */
    pthread_mutex_lock(&loaded_mu);
    kc_graph *other = NULL;
    for (kc_graph *x = loaded; x; x = x->next)
        if (x->device == g->device && memcmp(x->key.bytes, g->key.bytes, 16) == 0) other = x;
    kc_graph *evicted = NULL;
    if (other) {
        __atomic_add_fetch(&other->refs, 1, __ATOMIC_ACQ_REL);
        other->used = ++lt.clock;
    } else if (keep) {
        g->refs = 2; /* the table's and the caller's */
        g->in_table = 1;
        g->used = ++lt.clock;
        g->next = loaded;
        loaded = g;
        lt.graphs++;
        lt.bytes += g->bytes;
        evicted = trim_locked();
    }
    pthread_mutex_unlock(&loaded_mu);
    unload_list(evicted);
    if (other) {
        graph_destroy(g);
        g = other;
    }
    return g;
}
