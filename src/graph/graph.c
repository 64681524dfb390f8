/*
 * graph.c — graph descriptions, their key, and the paths that turn one into compiled,
 * stored and loaded kernels.
 *
 * The one idea: a description is reduced to canonical bytes (kernels with their sources
 * and headers, tensors, scratch, steps, wrappers, runtime metadata), and that — with the
 * normalised options, the NVRTC version, the backend and the declared global state — is
 * the key.  The GPU architecture is not in the key: it picks the variant.  A miss compiles
 * every kernel of the graph in parallel, stores one entry per variant, and loads it.
 *
 * KERNELS section := nimages:u32 { target:str is_ptx:u8 len:u64 image }
 *                    nkernels:u32 { name:str lowered:str image:u32 }
 *   Kernels that share a compile unit (file, source, headers, options) are compiled by one
 *   NVRTC program with several name expressions, and share one image.
 * program section := the canonical description bytes of one pass (str = u32 len + bytes)
 *
 * Must not: store a graph whose source is not cacheable (__DATE__ …), load an entry
 * without full validation, or fail a lookup because of the cache (errors cost a miss).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "../common/pool.h"
#include "../cache/internal.h"
#include "../cuda/internal.h"
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "program.h"

#define MAX_KERNELS 256
#define MAX_STEPS 4096

/* ---- descriptions ---- */

static const struct { const char *name; kc_dtype t; } dtypes[] = {
    {"f32", KC_DTYPE_F32}, {"f16", KC_DTYPE_F16}, {"bf16", KC_DTYPE_BF16}, {"f64", KC_DTYPE_F64},
    {"i32", KC_DTYPE_I32}, {"i64", KC_DTYPE_I64}, {"i8", KC_DTYPE_I8}, {"u8", KC_DTYPE_U8},
    {"bool", KC_DTYPE_BOOL}, {"f8e4m3", KC_DTYPE_F8E4M3}, {"f8e5m2", KC_DTYPE_F8E5M2},
};

kc_dtype kc_dtype_parse(const char *s) {
    for (size_t i = 0; s && i < KC_ARRAY_LEN(dtypes); i++)
        if (strcmp(s, dtypes[i].name) == 0) return dtypes[i].t;
    return (kc_dtype)0;
}

int kc_graph_desc_new(kc_graph_desc **out, const char *name) {
    if (!out) return kc_err(KC_EINVAL, "kc_graph_desc_new: out is NULL");
    *out = NULL;
    kc_graph_desc *d = kc_calloc(1, sizeof *d);
    if (!d || !(d->name = kc_strdup(name ? name : "graph")) || !(d->backend = kc_strdup("cuda"))) {
        kc_graph_desc_free(d);
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    *out = d;
    return KC_OK;
}

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

void kc_graph_desc_free(kc_graph_desc *d) {
    if (!d) return;
    for (size_t i = 0; i < d->nkernels; i++) {
        gkernel *k = &d->kernels[i];
        free(k->file); free(k->source); free(k->name); free(k->include_digest);
        for (size_t h = 0; h < k->nheaders; h++) {
            free((char *)k->headers[h].name);
            free((char *)k->headers[h].source);
        }
        free(k->headers);
        free_strs(k->options, k->noptions);
    }
    for (size_t i = 0; i < d->ntensors; i++)
        for (int r = 0; r < KC_MAX_RANK; r++) free(d->tensors[i].sizes[r]), free(d->tensors[i].strides[r]);
    for (size_t i = 0; i < d->nscratch; i++) free(d->scratch[i].bytes);
    for (size_t i = 0; i < d->nsteps; i++) {
        gstep *s = &d->steps[i];
        for (int j = 0; j < 3; j++) free(s->grid[j]), free(s->block[j]);
        free(s->shared);
        free_strs(s->args, s->nargs);
    }
    for (size_t i = 0; i < d->nwrappers; i++) free(d->wrappers[i].name), free(d->wrappers[i].params);
    free(d->kernels); free(d->tensors); free(d->scratch); free(d->steps); free(d->wrappers);
    free_strs(d->symbols, d->nsymbols);
    free_strs(d->hooks, d->nhooks);
    free(d->unhashed_hook);
    free(d->runtime_meta);
    free(d->name);
    free(d->backend);
    free(d);
}

const char *kc_graph_desc_name(const kc_graph_desc *d) { return d->name; }

/* Grow an array by one zeroed element; returns it or NULL. */
static void *grow(void **arr, size_t *n, size_t size) {
    void *p = kc_realloc(*arr, (*n + 1) * size);
    if (!p) return NULL;
    *arr = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = kc_strdup(s);
    if (!d) *oom = 1;
    return d;
}

int kc_graph_add_kernel(kc_graph_desc *d, const kc_kernel_src *k, int *index) {
    if (!d || !k || !k->source || !k->name) return kc_err(KC_EINVAL, "kc_graph_add_kernel: source and name are required");
    if (d->nkernels >= MAX_KERNELS) return kc_err(KC_EINVAL, "graph '%s': too many kernels", d->name);
    char *norm;
    int rc = kc_options_normalize(k, &norm); /* refuse bad options now, with the kernel's name */
    if (rc) return kc_err_prefix(rc, "graph '%s', kernel '%s'", d->name, k->name);
    free(norm);
    gkernel *g = grow((void **)&d->kernels, &d->nkernels, sizeof *g);
    if (!g) return kc_err(KC_ENOMEM, "graph: out of memory");
    int oom = 0;
    g->file = dup_or_null(k->file, &oom);
    g->source = dup_or_null(k->source, &oom);
    g->name = dup_or_null(k->name, &oom);
    g->include_digest = dup_or_null(k->include_digest, &oom);
    if (k->nheaders && !(g->headers = kc_calloc(k->nheaders, sizeof *g->headers))) oom = 1;
    for (size_t h = 0; !oom && h < k->nheaders; h++, g->nheaders++) {
        g->headers[h].name = dup_or_null(k->headers[h].name, &oom);
        g->headers[h].source = dup_or_null(k->headers[h].source, &oom);
    }
    if (k->noptions && !(g->options = kc_calloc(k->noptions, sizeof *g->options))) oom = 1;
    for (size_t o = 0; !oom && o < k->noptions; o++, g->noptions++) g->options[o] = dup_or_null(k->options[o], &oom);
    if (oom) return kc_err(KC_ENOMEM, "graph: out of memory");
    if (index) *index = (int)(d->nkernels - 1);
    return KC_OK;
}

static int is_symbol_name(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

static int is_uint(const char *s) {
    if (!s || !*s || strlen(s) > 18) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int add_symbol(kc_graph_desc *d, const char *name) {
    for (size_t i = 0; i < d->nsymbols; i++)
        if (strcmp(d->symbols[i], name) == 0) return KC_OK;
    char **slot = grow((void **)&d->symbols, &d->nsymbols, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(name))) {
        if (slot) d->nsymbols--;
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    return KC_OK;
}

static int check_expr(const kc_graph_desc *d, const char *e, const char *what) {
    int rc = kc_expr_check(e, (const char *const *)d->symbols, d->nsymbols);
    return rc ? kc_err_prefix(rc, "graph '%s', %s", d->name, what) : KC_OK;
}

int kc_graph_add_input(kc_graph_desc *d, kc_dtype dtype, int rank, const char *const *sizes,
                       const char *const *strides, int requires_grad) {
    if (!d || rank < 0 || rank > KC_MAX_RANK || (rank && !sizes))
        return kc_err(KC_EINVAL, "kc_graph_add_input: bad rank or sizes");
    if (dtype < KC_DTYPE_F32 || dtype > KC_DTYPE_F8E5M2) return kc_err(KC_EINVAL, "graph '%s': unknown dtype", d->name);
    for (int r = 0; r < rank; r++) {
        if (is_symbol_name(sizes[r])) {
            int rc = add_symbol(d, sizes[r]);
            if (rc) return rc;
        } else if (!is_uint(sizes[r])) {
            return kc_err(KC_EINVAL, "graph '%s', input %zu: size %d must be an integer or a symbol, not '%s'",
                          d->name, d->ntensors, r, sizes[r] ? sizes[r] : "(null)");
        }
    }
    gtensor *t = grow((void **)&d->tensors, &d->ntensors, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "graph: out of memory");
    t->role = KC_ROLE_INPUT;
    t->dtype = dtype;
    t->rank = rank;
    t->requires_grad = requires_grad ? 1 : 0;
    int oom = 0;
    for (int r = 0; r < rank; r++) t->sizes[r] = dup_or_null(sizes[r], &oom);
    /* Contiguous strides by default: the product of the later sizes, as an expression. */
    for (int r = rank - 1; r >= 0 && !oom; r--) {
        if (strides && strides[r]) {
            t->strides[r] = dup_or_null(strides[r], &oom);
        } else if (r == rank - 1) {
            t->strides[r] = dup_or_null("1", &oom);
        } else {
            char buf[512];
            snprintf(buf, sizeof buf, "%s%s%s", strcmp(t->strides[r + 1], "1") ? t->strides[r + 1] : "",
                     strcmp(t->strides[r + 1], "1") ? "*" : "", t->sizes[r + 1]);
            t->strides[r] = dup_or_null(buf, &oom);
        }
    }
    if (oom) return kc_err(KC_ENOMEM, "graph: out of memory");
    for (int r = 0; r < rank; r++) {
        int rc = check_expr(d, t->strides[r], "input stride");
        if (rc) return rc;
    }
    return KC_OK;
}

int kc_graph_add_tensor(kc_graph_desc *d, kc_tensor_role role, kc_dtype dtype, int rank, const char *const *sizes) {
    if (!d || rank < 0 || rank > KC_MAX_RANK || (rank && !sizes) || (role != KC_ROLE_OUTPUT && role != KC_ROLE_SAVED))
        return kc_err(KC_EINVAL, "kc_graph_add_tensor: bad role, rank or sizes");
    if (dtype < KC_DTYPE_F32 || dtype > KC_DTYPE_F8E5M2) return kc_err(KC_EINVAL, "graph '%s': unknown dtype", d->name);
    for (int r = 0; r < rank; r++) {
        int rc = check_expr(d, sizes[r], role == KC_ROLE_OUTPUT ? "output size" : "saved size");
        if (rc) return rc;
    }
    gtensor *t = grow((void **)&d->tensors, &d->ntensors, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "graph: out of memory");
    t->role = role;
    t->dtype = dtype;
    t->rank = rank;
    int oom = 0;
    for (int r = 0; r < rank; r++) t->sizes[r] = dup_or_null(sizes[r], &oom);
    return oom ? kc_err(KC_ENOMEM, "graph: out of memory") : KC_OK;
}

int kc_graph_add_scratch(kc_graph_desc *d, kc_pass pass, const char *bytes) {
    if (!d || !bytes || (pass != KC_PASS_FORWARD && pass != KC_PASS_BACKWARD))
        return kc_err(KC_EINVAL, "kc_graph_add_scratch: bad argument");
    int rc = check_expr(d, bytes, "scratch size");
    if (rc) return rc;
    gscratch *s = grow((void **)&d->scratch, &d->nscratch, sizeof *s);
    if (!s || !(s->bytes = kc_strdup(bytes))) return kc_err(KC_ENOMEM, "graph: out of memory");
    s->pass = pass;
    return KC_OK;
}

static size_t count_role(const kc_graph_desc *d, kc_tensor_role role) {
    size_t n = 0;
    for (size_t i = 0; i < d->ntensors; i++) n += d->tensors[i].role == role;
    return n;
}

/* Validate one step argument against the description. */
static int check_arg(const kc_graph_desc *d, kc_pass pass, const char *a) {
    static const struct { const char *prefix; int role; int fwd, bwd; } kinds[] = {
        {"input:", KC_ROLE_INPUT, 1, 1},     {"output:", KC_ROLE_OUTPUT, 1, 1},
        {"saved:", KC_ROLE_SAVED, 1, 1},     {"scratch:", KC_ROLE_SCRATCH, 1, 1},
        {"grad_out:", KC_ROLE_OUTPUT, 0, 1}, {"grad_in:", KC_ROLE_INPUT, 0, 1},
    };
    if (!a) return kc_err(KC_EINVAL, "graph '%s': NULL step argument", d->name);
    for (size_t k = 0; k < KC_ARRAY_LEN(kinds); k++) {
        size_t pl = strlen(kinds[k].prefix);
        if (strncmp(a, kinds[k].prefix, pl) != 0) continue;
        if (!is_uint(a + pl)) return kc_err(KC_EINVAL, "graph '%s': bad argument '%s'", d->name, a);
        if (!(pass == KC_PASS_FORWARD ? kinds[k].fwd : kinds[k].bwd))
            return kc_err(KC_EINVAL, "graph '%s': argument '%s' is not available in the %s pass", d->name, a,
                          pass == KC_PASS_FORWARD ? "forward" : "backward");
        size_t idx = (size_t)strtoull(a + pl, NULL, 10), have;
        if (kinds[k].role == KC_ROLE_SCRATCH) {
            have = 0;
            for (size_t i = 0; i < d->nscratch; i++) have += d->scratch[i].pass == pass;
        } else {
            have = count_role(d, (kc_tensor_role)kinds[k].role);
        }
        if (idx >= have) return kc_err(KC_EINVAL, "graph '%s': argument '%s' names no such tensor (%zu declared)", d->name, a, have);
        return KC_OK;
    }
    if (strncmp(a, "sym:", 4) == 0) {
        for (size_t i = 0; i < d->nsymbols; i++)
            if (strcmp(d->symbols[i], a + 4) == 0) return KC_OK;
        return kc_err(KC_EINVAL, "graph '%s': argument '%s' names an unknown symbol", d->name, a);
    }
    if (strcmp(a, "philox_seed") == 0 || strcmp(a, "philox_offset") == 0) return KC_OK;
    if (strncmp(a, "e32:", 4) == 0 || strncmp(a, "e64:", 4) == 0) /* an expression's value */
        return check_expr(d, a + 4, "step argument");
    if (strncmp(a, "i32:", 4) == 0 || strncmp(a, "i64:", 4) == 0 || strncmp(a, "f32:", 4) == 0) {
        char *end;
        errno = 0;
        if (a[1] == '3' && a[0] == 'f') strtod(a + 4, &end);
        else strtoll(a + 4, &end, 10);
        if (errno || end == a + 4 || *end) return kc_err(KC_EINVAL, "graph '%s': bad constant '%s'", d->name, a);
        return KC_OK;
    }
    return kc_err(KC_EINVAL, "graph '%s': unknown argument kind '%s'", d->name, a);
}

int kc_graph_add_step(kc_graph_desc *d, kc_pass pass, int kernel, const char *const grid[3],
                      const char *const block[3], const char *shared, const char *const *args, size_t nargs) {
    if (!d || !grid || !block || (nargs && !args) || (pass != KC_PASS_FORWARD && pass != KC_PASS_BACKWARD))
        return kc_err(KC_EINVAL, "kc_graph_add_step: bad argument");
    if (kernel < 0 || (size_t)kernel >= d->nkernels)
        return kc_err(KC_EINVAL, "graph '%s': step names kernel %d, which does not exist", d->name, kernel);
    if (d->nsteps >= MAX_STEPS) return kc_err(KC_EINVAL, "graph '%s': too many steps", d->name);
    int rc;
    for (int j = 0; j < 3; j++) {
        if ((rc = check_expr(d, grid[j], "grid"))) return rc;
        if ((rc = check_expr(d, block[j], "block"))) return rc;
    }
    if (shared && (rc = check_expr(d, shared, "shared memory"))) return rc;
    for (size_t i = 0; i < nargs; i++)
        if ((rc = check_arg(d, pass, args[i]))) return rc;
    gstep *s = grow((void **)&d->steps, &d->nsteps, sizeof *s);
    if (!s) return kc_err(KC_ENOMEM, "graph: out of memory");
    s->pass = pass;
    s->kernel = kernel;
    int oom = 0;
    for (int j = 0; j < 3; j++) s->grid[j] = dup_or_null(grid[j], &oom), s->block[j] = dup_or_null(block[j], &oom);
    s->shared = dup_or_null(shared ? shared : "0", &oom);
    if (nargs && !(s->args = kc_calloc(nargs, sizeof *s->args))) oom = 1;
    for (size_t i = 0; !oom && i < nargs; i++, s->nargs++) s->args[i] = dup_or_null(args[i], &oom);
    return oom ? kc_err(KC_ENOMEM, "graph: out of memory") : KC_OK;
}

int kc_graph_add_wrapper(kc_graph_desc *d, const char *name, uint32_t version, const void *params, size_t len) {
    if (!d || !name || !*name || (len && !params)) return kc_err(KC_EINVAL, "kc_graph_add_wrapper: bad argument");
    gwrapper *w = grow((void **)&d->wrappers, &d->nwrappers, sizeof *w);
    if (!w || !(w->name = kc_strdup(name)) || (len && !(w->params = kc_malloc(len))))
        return kc_err(KC_ENOMEM, "graph: out of memory");
    w->version = version;
    w->len = len;
    if (len) memcpy(w->params, params, len);
    return KC_OK;
}

int kc_graph_add_hook(kc_graph_desc *d, const char *name, const char *cache_hash) {
    if (!d || !name || !*name) return kc_err(KC_EINVAL, "kc_graph_add_hook: a name is required");
    if (!cache_hash || !*cache_hash) {
        d->hook_unhashed = 1;
        if (!d->unhashed_hook && !(d->unhashed_hook = kc_strdup(name))) return kc_err(KC_ENOMEM, "out of memory");
        return KC_OK;
    }
    char **slot = grow((void **)&d->hooks, &d->nhooks, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(name))) return kc_err(KC_ENOMEM, "out of memory");
    slot = grow((void **)&d->hooks, &d->nhooks, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(cache_hash))) return kc_err(KC_ENOMEM, "out of memory");
    return KC_OK;
}

int kc_graph_set_runtime_meta(kc_graph_desc *d, const void *data, size_t len) {
    if (!d || (len && !data)) return kc_err(KC_EINVAL, "kc_graph_set_runtime_meta: bad argument");
    uint8_t *p = kc_malloc(len);
    if (!p) return kc_err(KC_ENOMEM, "graph: out of memory");
    if (len) memcpy(p, data, len);
    free(d->runtime_meta);
    d->runtime_meta = p;
    d->runtime_meta_len = len;
    return KC_OK;
}

void kc_graph_set_globals(kc_graph_desc *d, uint64_t globals) { d->globals = globals; }

int kc_graph_set_backend(kc_graph_desc *d, const char *backend) {
    if (!d || !backend || !*backend) return kc_err(KC_EINVAL, "kc_graph_set_backend: bad argument");
    char *b = kc_strdup(backend);
    if (!b) return kc_err(KC_ENOMEM, "graph: out of memory");
    free(d->backend);
    d->backend = b;
    return KC_OK;
}

/* ---- canonical bytes ---- */

static void put_str(kc_buf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    kc_buf_put_u32(b, (uint32_t)n);
    kc_buf_put(b, s, n);
}

/* The program of one pass: symbols, tensors, scratch of the pass, its steps. */
static void encode_program(const kc_graph_desc *d, kc_pass pass, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)pass);
    kc_buf_put_u32(b, (uint32_t)d->nsymbols);
    for (size_t i = 0; i < d->nsymbols; i++) put_str(b, d->symbols[i]);
    kc_buf_put_u32(b, (uint32_t)d->ntensors);
    for (size_t i = 0; i < d->ntensors; i++) {
        const gtensor *t = &d->tensors[i];
        kc_buf_put_u8(b, (uint8_t)t->role);
        kc_buf_put_u8(b, (uint8_t)t->dtype);
        kc_buf_put_u8(b, (uint8_t)t->rank);
        kc_buf_put_u8(b, (uint8_t)t->requires_grad);
        for (int r = 0; r < t->rank; r++) put_str(b, t->sizes[r]), put_str(b, t->strides[r]);
    }
    uint32_t ns = 0;
    for (size_t i = 0; i < d->nscratch; i++) ns += d->scratch[i].pass == pass;
    kc_buf_put_u32(b, ns);
    for (size_t i = 0; i < d->nscratch; i++)
        if (d->scratch[i].pass == pass) put_str(b, d->scratch[i].bytes);
    uint32_t nst = 0;
    for (size_t i = 0; i < d->nsteps; i++) nst += d->steps[i].pass == pass;
    kc_buf_put_u32(b, nst);
    for (size_t i = 0; i < d->nsteps; i++) {
        const gstep *s = &d->steps[i];
        if (s->pass != pass) continue;
        kc_buf_put_u32(b, (uint32_t)s->kernel);
        for (int j = 0; j < 3; j++) put_str(b, s->grid[j]);
        for (int j = 0; j < 3; j++) put_str(b, s->block[j]);
        put_str(b, s->shared);
        kc_buf_put_u32(b, (uint32_t)s->nargs);
        for (size_t a = 0; a < s->nargs; a++) put_str(b, s->args[a]);
    }
}

static int has_backward(const kc_graph_desc *d) {
    for (size_t i = 0; i < d->nsteps; i++)
        if (d->steps[i].pass == KC_PASS_BACKWARD) return 1;
    return 0;
}

static kc_kernel_src as_src(const gkernel *g) {
    kc_kernel_src k = {g->file, g->source, g->name, g->headers, g->nheaders, (const char *const *)g->options,
                       g->noptions, g->include_digest};
    return k;
}

int kc_graph_key(const kc_graph_desc *d, kc_key *out, kc_key_builder **kb_out) {
    if (!d || !out) return kc_err(KC_EINVAL, "kc_graph_key: NULL argument");
    if (kb_out) *kb_out = NULL;
    int rc = kc_nvrtc_available();
    if (rc) return rc;
    kc_key_builder *kb;
    if ((rc = kc_key_builder_new(&kb))) return rc;
    kc_key_add_u64(kb, KC_COMP_FORMAT, "entry_format", KC_ENTRY_FORMAT_VERSION);
    for (size_t i = 0; i < d->nkernels && !rc; i++) {
        const gkernel *g = &d->kernels[i];
        kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.name", g->name);
        kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.file", g->file ? g->file : "");
        kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.source", g->source);
        for (size_t h = 0; h < g->nheaders; h++) {
            kc_key_add_string(kb, KC_COMP_GRAPH, "header.name", g->headers[h].name);
            kc_key_add_string(kb, KC_COMP_GRAPH, "header.source", g->headers[h].source);
        }
        char *norm, label[64];
        kc_kernel_src k = as_src(g);
        if ((rc = kc_options_normalize(&k, &norm))) break;
        kc_key_add_string(kb, KC_COMP_OPTIONS, g->name, norm);
        /* Finer digests, for explain: this kernel's source (with its headers) and options. */
        kc_buf src = {0};
        put_str(&src, g->source);
        for (size_t h = 0; h < g->nheaders; h++) put_str(&src, g->headers[h].name), put_str(&src, g->headers[h].source);
        snprintf(label, sizeof label, "kernels[%zu].source", i);
        if (!src.failed) rc = kc_key_note(kb, label, src.data, src.len);
        else rc = kc_err(KC_ENOMEM, "graph key: out of memory");
        kc_buf_free(&src);
        snprintf(label, sizeof label, "kernels[%zu].options", i);
        if (!rc) rc = kc_key_note(kb, label, norm, strlen(norm));
        free(norm);
        if (g->include_digest) kc_key_add_string(kb, KC_COMP_OPTIONS, "include_digest", g->include_digest);
    }
    kc_buf prog = {0};
    encode_program(d, KC_PASS_FORWARD, &prog);
    size_t fwd_len = prog.len;
    encode_program(d, KC_PASS_BACKWARD, &prog);
    if (!rc && !prog.failed) rc = kc_key_note(kb, "program.forward", prog.data, fwd_len);
    if (!rc && !prog.failed) rc = kc_key_note(kb, "program.backward", prog.data + fwd_len, prog.len - fwd_len);
    for (size_t i = 0; i < d->nwrappers; i++) {
        put_str(&prog, d->wrappers[i].name);
        kc_buf_put_u32(&prog, d->wrappers[i].version);
        kc_buf_put_u32(&prog, (uint32_t)d->wrappers[i].len);
        kc_buf_put(&prog, d->wrappers[i].params, d->wrappers[i].len);
    }
    if (prog.failed && !rc) rc = kc_err(KC_ENOMEM, "graph key: out of memory");
    if (!rc) rc = kc_key_add_bytes(kb, KC_COMP_GRAPH, "program", prog.data, prog.len);
    kc_buf_free(&prog);
    if (!rc) rc = kc_key_add_bytes(kb, KC_COMP_GRAPH, "runtime_meta", d->runtime_meta, d->runtime_meta_len);
    /* Inputs: symbolic sizes by the stable id of their symbol's name. */
    for (size_t i = 0; i < d->ntensors && !rc; i++) {
        const gtensor *t = &d->tensors[i];
        if (t->role != KC_ROLE_INPUT) continue;
        kc_tensor_meta m;
        memset(&m, 0, sizeof m);
        m.dtype = t->dtype;
        m.device = KC_DEVICE_CUDA;
        m.rank = t->rank;
        m.requires_grad = t->requires_grad;
        for (int r = 0; r < t->rank; r++) {
            if (is_uint(t->sizes[r])) m.sizes[r].value = (int64_t)strtoll(t->sizes[r], NULL, 10);
            else m.sizes[r].sym = t->sizes[r];
            if (is_uint(t->strides[r])) m.strides[r].value = (int64_t)strtoll(t->strides[r], NULL, 10);
            else m.strides[r].sym = t->strides[r];
        }
        rc = kc_key_add_tensor(kb, &m);
    }
    for (size_t i = 0; i + 1 < d->nhooks && !rc; i += 2) {
        rc = kc_key_add_string(kb, KC_COMP_HOOKS, "hook.name", d->hooks[i]);
        if (!rc) rc = kc_key_add_string(kb, KC_COMP_HOOKS, "hook.hash", d->hooks[i + 1]);
    }
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "nvrtc", kc_nvrtc_toolchain());
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_BACKEND, "backend", d->backend);
    if (!rc) rc = kc_key_add_u64(kb, KC_COMP_GLOBALS, "globals", d->globals);
    if (!rc) rc = kc_key_finish(kb, out);
    if (rc || !kb_out) kc_key_builder_free(kb);
    else *kb_out = kb;
    return rc;
}

/* ---- KERNELS section ---- */

typedef struct kimg {
    const char *name, *lowered, *target;
    int is_ptx;
    const uint8_t *image;
    size_t len;
    uint32_t image_index;
} kimg;

/* Parse a KERNELS section into per-kernel views (strings copied into `strs`). */
static int parse_kernels(const void *data, size_t len, kimg **out, size_t *n, size_t *nimages_out, char **strs) {
    *out = NULL;
    *n = 0;
    *strs = NULL;
    kc_reader r = kc_reader_make(data, len);
    uint32_t nimg = kc_rd_next_u32(&r);
    if (r.bad || nimg == 0 || nimg > MAX_KERNELS) return kc_err(KC_ECORRUPT, "corrupt entry: KERNELS image count");
    struct { const char *target; int is_ptx; const uint8_t *image; size_t len; } imgs[MAX_KERNELS];
    char *s = kc_malloc(len + 4 * (size_t)MAX_KERNELS + 1); /* every string, NUL-terminated */
    if (!s) return kc_err(KC_ENOMEM, "out of memory");
    char *sp = s;
#define RD_STR(dst)                                                               \
    do {                                                                          \
        uint32_t l_ = kc_rd_next_u32(&r);                                         \
        const uint8_t *b_ = kc_rd_bytes(&r, l_);                                  \
        if (r.bad || l_ == 0 || l_ > 4096 || memchr(b_, 0, l_)) goto corrupt;     \
        memcpy(sp, b_, l_);                                                       \
        sp[l_] = '\0';                                                            \
        (dst) = sp;                                                               \
        sp += l_ + 1;                                                             \
    } while (0)
    for (uint32_t i = 0; i < nimg; i++) {
        RD_STR(imgs[i].target);
        imgs[i].is_ptx = kc_rd_next_u8(&r);
        uint64_t il = kc_rd_next_u64(&r);
        imgs[i].image = kc_rd_bytes(&r, (size_t)il);
        imgs[i].len = (size_t)il;
        if (r.bad || imgs[i].is_ptx > 1 || il == 0) goto corrupt;
        if (imgs[i].is_ptx && imgs[i].image[il - 1] != 0) goto corrupt; /* PTX is stored with its NUL */
    }
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count == 0 || count > MAX_KERNELS) goto corrupt;
    kimg *v = kc_calloc(count, sizeof *v);
    if (!v) {
        free(s);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        RD_STR(v[i].name);
        RD_STR(v[i].lowered);
        uint32_t ix = kc_rd_next_u32(&r);
        if (r.bad || ix >= nimg) {
            free(v);
            goto corrupt;
        }
        v[i].image_index = ix;
        v[i].target = imgs[ix].target;
        v[i].is_ptx = imgs[ix].is_ptx;
        v[i].image = imgs[ix].image;
        v[i].len = imgs[ix].len;
    }
#undef RD_STR
    if (r.left) {
        free(v);
        goto corrupt;
    }
    *out = v;
    *n = count;
    if (nimages_out) *nimages_out = nimg;
    *strs = s;
    return KC_OK;
corrupt:
    free(s);
    return kc_err(KC_ECORRUPT, "corrupt entry: malformed KERNELS section");
}

/* The kernels of an entry's KERNELS section (views into the entry; strings in *strs). */
static int entry_kernels(const kc_entry *e, kimg **v, size_t *n, size_t *nimages, char **strs) {
    const void *data;
    size_t len;
    int rc = kc_entry_section(e, KC_SECTION_KERNELS, &data, &len);
    if (rc) return rc == KC_MISS ? kc_err(KC_ECORRUPT, "entry has no KERNELS section") : rc;
    return parse_kernels(data, len, v, n, nimages, strs);
}

int kc_entry_kernels(const kc_entry *e, kc_kernel_visit_cb cb, void *ctx) {
    kimg *v;
    size_t n;
    char *strs;
    int rc = entry_kernels(e, &v, &n, NULL, &strs);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) cb(v[i].name, v[i].lowered, v[i].target, v[i].is_ptx, v[i].len, ctx);
    free(v);
    free(strs);
    return KC_OK;
}

int kc_entry_extract(const kc_entry *e, const char *dir, int *count) {
    if (!e || !dir) return kc_err(KC_EINVAL, "kc_entry_extract: NULL argument");
    kimg *v;
    size_t n;
    char *strs;
    int rc = entry_kernels(e, &v, &n, NULL, &strs);
    if (rc) return rc;
    if ((rc = kc_fs_mkdirs(dir, 0755))) goto out;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX], base[200];
        snprintf(base, sizeof base, "%s", v[i].lowered);
        for (char *p = base; *p; p++) /* a file name, whatever the symbol holds */
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) *p = '_';
        snprintf(path, sizeof path, "%s/%s.%s.%s", dir, base, v[i].target, v[i].is_ptx ? "ptx" : "cubin");
        if ((rc = kc_fs_write_atomic(path, v[i].image, v[i].len - (v[i].is_ptx ? 1 : 0)))) goto out;
    }
    if (count) *count = (int)n;
out:
    free(v);
    free(strs);
    return rc;
}

/* ---- compile ---- */

static kc_pool *g_pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) {
    if (kc_pool_new(&g_pool, 0) != KC_OK) g_pool = NULL; /* NULL runs inline */
}

/* Kernels that can share one NVRTC program: same file, source, headers, options. */
static int same_unit(const gkernel *a, const gkernel *b) {
#define SAME(x, y) (((x) == NULL && (y) == NULL) || ((x) && (y) && strcmp((x), (y)) == 0))
    if (!SAME(a->file, b->file) || strcmp(a->source, b->source) != 0 || !SAME(a->include_digest, b->include_digest) ||
        a->nheaders != b->nheaders || a->noptions != b->noptions)
        return 0;
    for (size_t h = 0; h < a->nheaders; h++)
        if (strcmp(a->headers[h].name, b->headers[h].name) || strcmp(a->headers[h].source, b->headers[h].source)) return 0;
    for (size_t o = 0; o < a->noptions; o++)
        if (strcmp(a->options[o], b->options[o])) return 0;
    return 1;
#undef SAME
}

typedef struct units {
    size_t n;                 /* number of units */
    int unit_of[MAX_KERNELS]; /* kernel → unit */
    int first[MAX_KERNELS];   /* unit → its first kernel */
    int slot[MAX_KERNELS];    /* kernel → its index among its unit's names */
} units;

static void group_units(const kc_graph_desc *d, units *u) {
    u->n = 0;
    int count[MAX_KERNELS] = {0};
    for (size_t i = 0; i < d->nkernels; i++) {
        size_t k;
        for (k = 0; k < u->n; k++)
            if (same_unit(&d->kernels[u->first[k]], &d->kernels[i])) break;
        if (k == u->n) u->first[u->n++] = (int)i;
        u->unit_of[i] = (int)k;
        u->slot[i] = count[k]++;
    }
}

typedef struct job {
    const kc_graph_desc *d;
    const units *u;
    const char *target;
    kc_compiled **out;
    int *rc;
    char **err;
} job;

static void compile_job(void *ctx, size_t unit) {
    job *j = ctx;
    const char *names[MAX_KERNELS];
    size_t n = 0;
    for (size_t i = 0; i < j->d->nkernels; i++)
        if ((size_t)j->u->unit_of[i] == unit) names[n++] = j->d->kernels[i].name;
    kc_kernel_src k = as_src(&j->d->kernels[j->u->first[unit]]);
    j->rc[unit] = kc_compile_names(&k, names, n, j->target, &j->out[unit]);
    if (j->rc[unit]) j->err[unit] = kc_strdup(kc_error_last()->message);
}

/* Compile every unit for `target` in parallel; on failure the first error is recorded. */
static int compile_all(const kc_graph_desc *d, const units *u, const char *target, kc_compiled ***out, double *ms) {
    pthread_once(&pool_once, pool_init);
    size_t n = u->n;
    kc_compiled **res = kc_calloc(n ? n : 1, sizeof *res);
    int *rcs = kc_calloc(n ? n : 1, sizeof *rcs);
    char **errs = kc_calloc(n ? n : 1, sizeof *errs);
    int rc = KC_OK;
    if (!res || !rcs || !errs) {
        rc = kc_err(KC_ENOMEM, "compile: out of memory");
    } else {
        uint64_t t0 = kc_mono_ns();
        job j = {d, u, target, res, rcs, errs};
        kc_pool_for(g_pool, n, compile_job, &j);
        *ms = (double)(kc_mono_ns() - t0) / 1e6;
        for (size_t i = 0; i < n; i++)
            if (rcs[i]) {
                rc = kc_err(rcs[i], "graph '%s': %s", d->name, errs[i] ? errs[i] : kc_status_str(rcs[i]));
                break;
            }
    }
    for (size_t i = 0; errs && i < n; i++) free(errs[i]);
    free(errs);
    free(rcs);
    if (rc) {
        for (size_t i = 0; res && i < n; i++) kc_compiled_free(res[i]);
        free(res);
        return rc;
    }
    *out = res;
    return KC_OK;
}

static void free_compiled(kc_compiled **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) kc_compiled_free(v[i]);
    free(v);
}

/* Build the entry of a compiled graph. */
static int make_entry(const kc_graph_desc *d, const units *u, const kc_key *key, const kc_key_builder *kb,
                      const char *target, kc_compiled **res, kc_entry **out) {
    kc_entry *e;
    int rc = kc_entry_new(&e, key, target);
    if (rc) return rc;
    kc_target t;
    kc_target_parse(target, &t);
    kc_buf k = {0}, fw = {0}, bw = {0}, wr = {0};
    kc_buf_put_u32(&k, (uint32_t)u->n);
    for (size_t i = 0; i < u->n; i++) {
        put_str(&k, target);
        kc_buf_put_u8(&k, (uint8_t)(t.ptx ? 1 : 0));
        /* PTX is stored with its NUL: the driver needs a terminated string. */
        size_t il = res[i]->len + (t.ptx ? 1 : 0);
        kc_buf_put_u64(&k, il);
        kc_buf_put(&k, res[i]->image, il);
    }
    kc_buf_put_u32(&k, (uint32_t)d->nkernels);
    for (size_t i = 0; i < d->nkernels; i++) {
        put_str(&k, d->kernels[i].name);
        put_str(&k, res[u->unit_of[i]]->lowered_names[u->slot[i]]);
        kc_buf_put_u32(&k, (uint32_t)u->unit_of[i]);
    }
    encode_program(d, KC_PASS_FORWARD, &fw);
    if (has_backward(d)) encode_program(d, KC_PASS_BACKWARD, &bw);
    kc_buf_put_u32(&wr, (uint32_t)d->nwrappers);
    for (size_t i = 0; i < d->nwrappers; i++) {
        put_str(&wr, d->wrappers[i].name);
        kc_buf_put_u32(&wr, d->wrappers[i].version);
        kc_buf_put_u32(&wr, (uint32_t)d->wrappers[i].len);
        kc_buf_put(&wr, d->wrappers[i].params, d->wrappers[i].len);
    }
    if (k.failed || fw.failed || bw.failed || wr.failed) rc = kc_err(KC_ENOMEM, "entry: out of memory");
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_KERNELS, k.data, k.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_FORWARD, fw.data, fw.len);
    if (!rc && bw.len) rc = kc_entry_set_section(e, KC_SECTION_BACKWARD, bw.data, bw.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_WRAPPERS, wr.data, wr.len);
    if (!rc && d->runtime_meta_len) rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, d->runtime_meta, d->runtime_meta_len);
    if (!rc) rc = kc_entry_add_key_digests(e, kb);
    if (!rc) rc = kc_entry_set_toolchain(e, kc_nvrtc_toolchain());
    kc_buf_free(&k);
    kc_buf_free(&fw);
    kc_buf_free(&bw);
    kc_buf_free(&wr);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    *out = e;
    return KC_OK;
}

static const char *first_uncacheable(const kc_graph_desc *d) {
    if (d->hook_unhashed) return "a saved-tensor hook has no cache hash";
    for (size_t i = 0; i < d->nkernels; i++) {
        kc_kernel_src k = as_src(&d->kernels[i]);
        const char *why;
        if (!kc_kernel_cacheable(&k, &why)) return why;
    }
    return NULL;
}

static double us_since(uint64_t t0) { return (double)(kc_mono_ns() - t0) / 1e3; }

/* Compile for `target`, store unless bypassed; *entry_out (may be NULL) gets the entry. */
static int compile_and_store(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                             const char *target, kc_graph_info *info, kc_entry **entry_out) {
    const char *bypass = first_uncacheable(d);
    kc_compiled **res = NULL;
    units u;
    group_units(d, &u);
    int rc = compile_all(d, &u, target, &res, &info->compile_ms);
    if (rc) {
        kc_cache_count(c, key, KC_STAT_COMPILE_ERRORS, 1);
        return rc;
    }
    kc_entry *e = NULL;
    rc = make_entry(d, &u, key, kb, target, res, &e);
    free_compiled(res, u.n);
    if (rc) return rc;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    if (bypass) {
        info->source = KC_FROM_BYPASS;
        snprintf(info->miss_reason, sizeof info->miss_reason, "not cacheable: %s", bypass);
        kc_cache_count(c, key, KC_STAT_BYPASSES, 1);
        kc_log(KC_LOG_GRAPH, "%s: bypassed (%s)", d->name, bypass);
    } else {
        info->source = KC_FROM_COMPILE;
        kc_cache_count(c, key, KC_STAT_COMPILES, 1);
        int prc = kc_cache_put(c, e);
        info->store_status = prc;
        if (prc != KC_OK && prc != KC_EREADONLY) /* a full disk costs the next process a compile, not us */
            kc_log(KC_LOG_GRAPH, "%s: not stored: %s", d->name, kc_error_last()->message);
    }
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return KC_OK;
}

/*
 * [Note: single-flight] A miss compiles under the key+variant's lock.  A process that finds
 * the lock held waits, polling every few milliseconds, for the entry to appear (then it is
 * a hit) or for the lock to come free (the holder finished without storing, or died: the
 * kernel released its flock) — then it takes over.  The wait is bounded (KCACHE_LOCK_WAIT
 * seconds, default 600): past it, it compiles without the lock rather than fail.
 */
/* If key.target is stored now, take it as a disk hit (with why) and return 1. */
static int take_stored(kc_cache *c, const kc_key *key, const char *target, kc_graph_info *info, const char *why,
                       kc_entry **entry_out) {
    kc_entry *e;
    if (kc_cache_get_local_(c, key, target, &e) != KC_OK) return 0;
    info->source = KC_FROM_DISK;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return 1;
}

static int single_flight(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                         const char *target, kc_graph_info *info, kc_entry **entry_out) {
    const char *w = getenv("KCACHE_LOCK_WAIT");
    double wait_s = w && *w ? strtod(w, NULL) : 600.0;
    uint64_t deadline = kc_mono_ns() + (uint64_t)(wait_s > 0 ? wait_s * 1e9 : 0);
    int waited = 0;
    for (;;) {
        kc_lock *lk = NULL;
        int rc = kc_cache_trylock(c, key, target, &lk);
        if (rc == KC_OK) {
            /* Someone may have stored it between our miss and the lock. */
            if (take_stored(c, key, target, info, "stored by another process meanwhile", entry_out)) {
                kc_cache_unlock(lk);
                return KC_OK;
            }
            rc = compile_and_store(c, d, key, kb, target, info, entry_out);
            kc_cache_unlock(lk);
            return rc;
        }
        if (rc != KC_EBUSY || kc_mono_ns() > deadline) {
            if (rc == KC_EBUSY) kc_log(KC_LOG_GRAPH, "%s: waited %.0f s for another compile; compiling", d->name, wait_s);
            else kc_log(KC_LOG_GRAPH, "%s: no compile lock (%s); compiling", d->name, kc_error_last()->message);
            return compile_and_store(c, d, key, kb, target, info, entry_out);
        }
        if (!waited++) kc_log(KC_LOG_GRAPH, "%s: another process compiles %s; waiting", d->name, target);
        if (take_stored(c, key, target, info, "waited for another process's compile", entry_out)) return KC_OK;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void info_init(kc_graph_info *info, const kc_key *key) {
    memset(info, 0, sizeof *info);
    kc_key_to_hex(key, info->key);
}

/* The common start of a lookup: the key, its digests, and the info record. */
static int lookup_begin(const kc_graph_desc *d, kc_graph_info *info, kc_key *key, kc_key_builder **kb, uint64_t *t0) {
    *t0 = kc_mono_ns();
    int rc = kc_graph_key(d, key, kb);
    if (rc) return rc;
    info_init(info, key);
    info->key_us = us_since(*t0);
    info->kernels = (int)d->nkernels;
    return KC_OK;
}

int kc_graph_compile(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out) {
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !target) return kc_err(KC_EINVAL, "kc_graph_compile: NULL argument");
    kc_target t;
    int rc = kc_target_parse(target, &t);
    if (rc) return rc;
    uint64_t t0;
    kc_key key;
    kc_key_builder *kb;
    if ((rc = lookup_begin(d, info, &key, &kb, &t0))) return rc;
    uint64_t t1 = kc_mono_ns();
    kc_entry *e = NULL;
    int cacheable = first_uncacheable(d) == NULL;
    int got = cacheable ? kc_cache_get_local_(c, &key, target, &e) : KC_MISS; /* one read, no stat first */
    int corrupt = got == KC_ECORRUPT;
    if (got == KC_OK) {
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_DISK;
        snprintf(info->variant, sizeof info->variant, "%s", target);
        kc_entry_free(e);
    } else if (cacheable && kc_cache_remote_fetch_(c, &key, &target, 1, NULL, &e) == KC_OK) {
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_REMOTE;
        snprintf(info->variant, sizeof info->variant, "%s", target);
        kc_entry_free(e);
    } else {
        if (cacheable) {
            kc_cache_count(c, &key, KC_STAT_MISSES, 1);
            snprintf(info->miss_reason, sizeof info->miss_reason, corrupt ? "stored entry was corrupt" : "no entry for %s", target);
        }
        info->lookup_us = us_since(t1);
        rc = cacheable ? single_flight(c, d, &key, kb, target, info, NULL)
                       : compile_and_store(c, d, &key, kb, target, info, NULL);
    }
    info->total_us = us_since(t0);
    kc_key_builder_free(kb);
    return rc;
}

/* ---- loading: the process-wide table of loaded graphs ([Note: loaded graphs]) ----
 * Same key and device → the same kc_graph, reference-counted; the table holds one
 * reference of its own, so a graph stays loaded for the life of the process once used. */

struct kc_graph {
    int refs;
    kc_key key;
    int device;
    char variant[32];
    size_t nkernels, nimages;
    kc_module **modules;            /* one per image */
    void **fns;                     /* one per kernel */
    kc_program *fwd, *bwd;          /* bwd NULL when the graph has none */
    kc_wrapper_chain *chain;        /* the recorded wrappers around run_forward */
    struct kc_graph *next;
};

static int run_forward(void *ctx, kc_forward_call *c);

static pthread_mutex_t loaded_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_graph *loaded;

static void graph_destroy(kc_graph *g) {
    kc_wrapper_chain_free(g->chain);
    kc_program_free(g->fwd);
    kc_program_free(g->bwd);
    for (size_t i = 0; g->modules && i < g->nimages; i++) kc_module_free(g->modules[i]);
    free(g->modules);
    free(g->fns);
    free(g);
}

void kc_graph_release(kc_graph *g) {
    if (!g) return;
    if (__atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) graph_destroy(g);
}

int kc_graph_function(const kc_graph *g, int i, void **fn_out) {
    if (!g || !fn_out || i < 0 || (size_t)i >= g->nkernels) return kc_err(KC_EINVAL, "kc_graph_function: bad index");
    *fn_out = g->fns[i];
    return KC_OK;
}

/* Load every kernel of an entry; KC_EDRIVER when the driver refuses an image. */
static int load_entry(const kc_entry *e, const kc_key *key, int device, kc_graph **out) {
    kimg *v;
    size_t n, nimg;
    char *strs;
    int rc = entry_kernels(e, &v, &n, &nimg, &strs);
    if (rc) return rc;
    kc_graph *g = kc_calloc(1, sizeof *g);
    if (!g || !(g->modules = kc_calloc(nimg, sizeof *g->modules)) || !(g->fns = kc_calloc(n, sizeof *g->fns))) {
        if (g) free(g->modules);
        free(g);
        free(v);
        free(strs);
        return kc_err(KC_ENOMEM, "load: out of memory");
    }
    g->refs = 1;
    g->key = *key;
    g->device = device;
    g->nkernels = n;
    g->nimages = nimg;
    snprintf(g->variant, sizeof g->variant, "%s", kc_entry_variant(e));
    for (size_t i = 0; i < n && !rc; i++) {
        kc_module **m = &g->modules[v[i].image_index];
        if (!*m) rc = kc_module_load(m, device, v[i].image, v[i].len);
        if (!rc) rc = kc_module_function(*m, v[i].lowered, &g->fns[i]);
    }
    free(v);
    free(strs);
    /* The launch programs, then the recorded wrappers around this graph's own forward. */
    const void *pd;
    size_t pl;
    if (!rc && kc_entry_section(e, KC_SECTION_FORWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->fwd);
    else if (!rc) rc = kc_err(KC_ECORRUPT, "entry has no FORWARD section");
    if (!rc && kc_entry_section(e, KC_SECTION_BACKWARD, &pd, &pl) == KC_OK) rc = kc_program_decode(pd, pl, &g->bwd);
    for (size_t i = 0; !rc && g->fwd && i < g->fwd->nsteps; i++)
        if (g->fwd->steps[i].kernel < 0 || (size_t)g->fwd->steps[i].kernel >= n) rc = kc_err(KC_ECORRUPT, "step names no kernel");
    for (size_t i = 0; !rc && g->bwd && i < g->bwd->nsteps; i++)
        if (g->bwd->steps[i].kernel < 0 || (size_t)g->bwd->steps[i].kernel >= n) rc = kc_err(KC_ECORRUPT, "step names no kernel");
    if (!rc) {
        kc_callable base = {run_forward, g};
        rc = kc_wrapper_chain_build(&g->chain, e, &base);
    }
    if (rc) {
        graph_destroy(g);
        return rc;
    }
    *out = g;
    return KC_OK;
}

/* ---- running passes ---- */

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

/* Allocate scratch, launch every step, free scratch (stream-ordered). */
static int run_steps(kc_graph *g, const kc_program *p, const int64_t *syms, bindings *b, void *stream,
                     const kc_allocator *alloc, const uint64_t *philox) {
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
    for (size_t i = 0; i < p->nsteps && !rc; i++) {
        unsigned grid[3], block[3], shared;
        kc_argval vals[256];
        void *args[256];
        rc = kc_program_dims(p, i, syms, grid, block, &shared);
        if (!rc) rc = kc_program_args(p, i, syms, resolve, b, philox, vals, args);
        if (!rc && (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)) continue; /* empty tensors: nothing to do */
        if (!rc) rc = kc_cuda_launch(g->fns[p->steps[i].kernel], grid, block, shared, stream, args);
    }
    for (size_t i = 0; i < p->nscratch; i++) kc_dev_free(alloc, scratch[i], stream);
    return rc;
}

/* Allocate the tensors of a role with the program's shapes. */
static int alloc_role(const kc_program *p, int role, const int64_t *syms, kc_tensor *out, size_t n,
                      void *stream, const kc_allocator *alloc) {
    for (size_t i = 0; i < n; i++) {
        const ptensor *t = kc_program_tensor(p, role, i);
        size_t bytes;
        int rc = t ? kc_program_shape(p, t, syms, &out[i], &bytes) : kc_err(KC_ECORRUPT, "no tensor %zu", i);
        if (!rc) rc = kc_dev_alloc(alloc, bytes, stream, &out[i].data);
        if (rc) {
            for (size_t k = 0; k < i; k++) kc_tensor_release(&out[k], stream, alloc);
            return rc;
        }
    }
    return KC_OK;
}

static int run_forward(void *ctx, kc_forward_call *c) {
    kc_graph *g = ctx;
    const kc_program *p = g->fwd;
    size_t nout = kc_program_count(p, KC_ROLE_OUTPUT), nsaved = kc_program_count(p, KC_ROLE_SAVED);
    if (c->noutputs != nout) return kc_err(KC_EINVAL, "the graph has %zu outputs, room for %zu given", nout, c->noutputs);
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
    if (!rc && !(rc = alloc_role(p, KC_ROLE_OUTPUT, syms, c->outputs, nout, c->stream, c->alloc))) outs = 1;
    if (!rc && !(rc = alloc_role(p, KC_ROLE_SAVED, syms, saved, nsaved, c->stream, c->alloc))) sv = 1;
    if (!rc) {
        bindings b = {c->inputs, c->outputs, saved, NULL, NULL, c->ninputs, nout, nsaved, 0, 0, NULL, 0};
        uint64_t philox[2] = {c->philox_seed, c->philox_offset};
        rc = run_steps(g, p, syms, &b, c->stream, c->alloc, c->philox_set ? philox : NULL);
    }
    kc_saved *s = NULL;
    if (!rc && c->saved) {
        s = kc_calloc(1, sizeof *s);
        if (s) {
            s->inputs = kc_calloc(c->ninputs + 1, sizeof *s->inputs);
            s->outputs = kc_calloc(nout + 1, sizeof *s->outputs);
        }
        if (!s || !s->inputs || !s->outputs) {
            if (s) free(s->inputs), free(s->outputs);
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
            *c->saved = s;
            syms = NULL;
            saved = NULL;
        }
    }
    if (saved && sv)
        for (size_t i = 0; i < nsaved; i++) kc_tensor_release(&saved[i], c->stream, c->alloc);
    if (rc && outs)
        for (size_t i = 0; i < nout; i++) kc_tensor_release(&c->outputs[i], c->stream, c->alloc);
    if (pushed) kc_cuda_pop();
    free(syms);
    free(saved);
    return rc;
}

int kc_graph_forward_rng(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                         kc_saved **saved, void *stream, const kc_allocator *alloc, kc_rng_state *rng) {
    if (!g || (ninputs && !inputs) || (noutputs && !outputs)) return kc_err(KC_EINVAL, "kc_graph_forward: bad argument");
    if (saved) *saved = NULL;
    kc_forward_call c = {g, inputs, ninputs, outputs, noutputs, saved, stream, alloc, rng, 0, 0, 0};
    return kc_wrapper_chain_call(g->chain, &c);
}

int kc_graph_forward(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                     kc_saved **saved, void *stream, const kc_allocator *alloc) {
    return kc_graph_forward_rng(g, inputs, ninputs, outputs, noutputs, saved, stream, alloc, NULL);
}

int kc_graph_backward(kc_graph *g, kc_saved *s, const kc_tensor *grad_outputs, size_t n, kc_tensor *grad_inputs,
                      size_t ninputs, void *stream) {
    if (!g || !s || s->g != g || (n && !grad_outputs) || (ninputs && !grad_inputs))
        return kc_err(KC_EINVAL, "kc_graph_backward: bad argument (saved must come from this graph's forward)");
    if (!g->bwd) return kc_err(KC_EINVAL, "the graph has no backward pass");
    if (n != s->noutputs || ninputs != s->ninputs)
        return kc_err(KC_EINVAL, "backward takes %zu gradients and gives %zu; %zu and %zu given", s->noutputs, s->ninputs, n, ninputs);
    for (size_t i = 0; i < n; i++)
        if (grad_outputs[i].rank != s->outputs[i].rank ||
            memcmp(grad_outputs[i].sizes, s->outputs[i].sizes, sizeof(int64_t) * (size_t)s->outputs[i].rank) != 0)
            return kc_err(KC_EINVAL, "grad_outputs[%zu] does not have output %zu's shape", i, i);
    const kc_allocator *alloc = s->has_alloc ? &s->alloc : NULL;
    int rc = kc_cuda_push(g->device);
    if (rc) return rc;
    rc = alloc_role(g->bwd, KC_ROLE_INPUT, s->syms, grad_inputs, ninputs, stream, alloc);
    if (!rc) {
        bindings b = {s->inputs, s->outputs, s->saved, grad_outputs, grad_inputs, s->ninputs, s->noutputs, s->nsaved,
                      n, ninputs, NULL, 0};
        rc = run_steps(g, g->bwd, s->syms, &b, stream, alloc, s->philox_set ? s->philox : NULL);
        if (rc)
            for (size_t i = 0; i < ninputs; i++) kc_tensor_release(&grad_inputs[i], stream, alloc);
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
    free(s);
}

int kc_graph_device(const kc_graph *g) { return g->device; }

size_t kc_tensor_span(const kc_tensor *t) {
    uint64_t last = 0;
    for (int r = 0; r < t->rank; r++) {
        if (t->sizes[r] <= 0) return 0;
        last += (uint64_t)(t->sizes[r] - 1) * (uint64_t)(t->strides[r] < 0 ? -t->strides[r] : t->strides[r]);
    }
    return (size_t)((last + 1) * kc_dtype_size(t->dtype));
}

void kc_saved_free_shell(kc_saved *s) {
    if (!s) return;
    free(s->saved);
    free(s->syms);
    free(s->inputs);
    free(s->outputs);
    free(s);
}

int kc_saved_clone(kc_saved **out, const kc_saved *src, const kc_forward_call *c) {
    *out = NULL;
    kc_saved *s = kc_calloc(1, sizeof *s);
    if (!s) return kc_err(KC_ENOMEM, "out of memory");
    const kc_program *p = c->graph->fwd;
    s->syms = kc_calloc(p->nsyms + 1, sizeof *s->syms);
    s->saved = kc_calloc(src->nsaved + 1, sizeof *s->saved);
    s->inputs = kc_calloc(c->ninputs + 1, sizeof *s->inputs);
    s->outputs = kc_calloc(c->noutputs + 1, sizeof *s->outputs);
    if (!s->syms || !s->saved || !s->inputs || !s->outputs) {
        kc_saved_free_shell(s);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    memcpy(s->syms, src->syms, p->nsyms * sizeof *s->syms);
    memcpy(s->inputs, c->inputs, c->ninputs * sizeof *s->inputs);
    memcpy(s->outputs, c->outputs, c->noutputs * sizeof *s->outputs);
    s->ninputs = c->ninputs;
    s->noutputs = c->noutputs;
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

/* Candidate variants for a device, most preferred first ([Note: variant selection]). */
static size_t candidates(int major, int minor, char out[][16], size_t cap) {
    static const int virt[] = {121, 120, 110, 103, 101, 100, 90, 89, 87, 86, 80, 75, 72, 70};
    size_t n = 0;
    if (n < cap) snprintf(out[n++], 16, "sm_%d%da", major, minor);
    for (int y = minor; y >= 0 && n < cap; y--) snprintf(out[n++], 16, "sm_%d%d", major, y);
    for (size_t i = 0; i < KC_ARRAY_LEN(virt) && n < cap; i++)
        if (virt[i] <= major * 10 + minor) snprintf(out[n++], 16, "compute_%d", virt[i]);
    return n;
}

int kc_graph_get(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out) {
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !out) return kc_err(KC_EINVAL, "kc_graph_get: NULL argument");
    *out = NULL;
    int major, minor, rc = kc_cuda_capability(device, &major, &minor);
    if (rc) return rc;
    uint64_t t0;
    kc_key key;
    kc_key_builder *kb;
    if ((rc = lookup_begin(d, info, &key, &kb, &t0))) return rc;
    uint64_t t1 = kc_mono_ns();
    pthread_mutex_lock(&loaded_mu);
    for (kc_graph *g = loaded; g; g = g->next)
        if (g->device == device && memcmp(g->key.bytes, key.bytes, 16) == 0) {
            __atomic_add_fetch(&g->refs, 1, __ATOMIC_ACQ_REL);
            *out = g;
            break;
        }
    pthread_mutex_unlock(&loaded_mu);
    if (*out) {
        info->source = KC_FROM_MEMORY;
        snprintf(info->variant, sizeof info->variant, "%s", (*out)->variant);
        kc_cache_count(c, &key, KC_STAT_MEMORY_HITS, 1);
        info->lookup_us = us_since(t1);
        info->total_us = us_since(t0);
        kc_key_builder_free(kb);
        return KC_OK;
    }
    kc_graph *g = NULL;
    char cand[24][16];
    size_t nc = first_uncacheable(d) ? 0 : candidates(major, minor, cand, 24);
    for (size_t i = 0; i < nc && !g; i++) {
        kc_entry *e;
        if (kc_cache_get_local_(c, &key, cand[i], &e) != KC_OK) continue; /* absent, or corrupt: quarantined */
        info->lookup_us = us_since(t1);
        uint64_t t2 = kc_mono_ns();
        rc = load_entry(e, &key, device, &g);
        info->load_us = us_since(t2);
        kc_entry_free(e);
        if (rc == KC_EDRIVER) { /* refused by this driver: a miss, counted */
            kc_cache_count(c, &key, KC_STAT_LOAD_REFUSED, 1);
            snprintf(info->miss_reason, sizeof info->miss_reason, "driver refused %s", cand[i]);
            kc_log(KC_LOG_LOAD, "%s: %s", d->name, kc_error_last()->message);
            continue;
        }
        if (rc) break;
        info->source = KC_FROM_DISK;
        snprintf(info->variant, sizeof info->variant, "%s", cand[i]);
    }
    if (!g && !rc && nc) { /* the remote tier: the first present candidate, in one round trip */
        const char *cp[24];
        for (size_t i = 0; i < nc; i++) cp[i] = cand[i];
        size_t w;
        kc_entry *e;
        if (kc_cache_remote_fetch_(c, &key, cp, nc, &w, &e) == KC_OK) {
            info->lookup_us = us_since(t1);
            uint64_t t2 = kc_mono_ns();
            rc = load_entry(e, &key, device, &g);
            info->load_us = us_since(t2);
            kc_entry_free(e);
            if (rc == KC_EDRIVER) {
                kc_cache_count(c, &key, KC_STAT_LOAD_REFUSED, 1);
                snprintf(info->miss_reason, sizeof info->miss_reason, "driver refused remote %s", cand[w]);
                rc = KC_OK;
            } else if (!rc) {
                info->source = KC_FROM_REMOTE;
                snprintf(info->variant, sizeof info->variant, "%s", cand[w]);
            }
        }
    }
    if (!g && !rc) {
        char target[16];
        kc_variant_for_device(major, minor, target);
        if (!info->miss_reason[0]) {
            snprintf(info->miss_reason, sizeof info->miss_reason, "%s", nc ? "no usable variant stored" : "not cacheable");
            if (nc) kc_cache_count(c, &key, KC_STAT_MISSES, 1);
        }
        info->lookup_us = us_since(t1);
        kc_entry *e = NULL;
        rc = nc ? single_flight(c, d, &key, kb, target, info, &e) : compile_and_store(c, d, &key, kb, target, info, &e);
        if (!rc) {
            uint64_t t2 = kc_mono_ns();
            rc = load_entry(e, &key, device, &g);
            info->load_us = us_since(t2);
        }
        kc_entry_free(e);
    }
    kc_key_builder_free(kb);
    if (rc) return rc;
    /* Publish, unless another thread loaded the same graph meanwhile: use theirs. */
    pthread_mutex_lock(&loaded_mu);
    kc_graph *other = NULL;
    for (kc_graph *x = loaded; x; x = x->next)
        if (x->device == device && memcmp(x->key.bytes, key.bytes, 16) == 0) other = x;
    if (other) {
        __atomic_add_fetch(&other->refs, 1, __ATOMIC_ACQ_REL);
    } else if (info->source != KC_FROM_BYPASS) {
        g->refs = 2; /* the table's and the caller's */
        g->next = loaded;
        loaded = g;
    }
    pthread_mutex_unlock(&loaded_mu);
    if (other) {
        graph_destroy(g);
        g = other;
    }
    *out = g;
    info->total_us = us_since(t0);
    return KC_OK;
}

/* ---- explain ---- */

typedef struct ex_best {
    kc_explain *x;
    kc_cache *c;
    const kc_key_builder *kb;
    kc_key key;
    int best_shares, best_equal;
    kc_entry *best;
    char best_name[80];
} ex_best;

static int digest_of(const kc_entry *e, const char *name, kc_digest *out) {
    for (size_t i = 0; i < kc_entry_digest_count(e); i++) {
        const char *n;
        kc_entry_digest_at(e, i, &n, out);
        if (strcmp(n, name) == 0) return 1;
    }
    return 0;
}

static int ex_visit(const kc_cache_item *it, void *ctx) {
    ex_best *b = ctx;
    kc_entry *e;
    if (kc_cache_peek(b->c, &it->key, it->variant, &e) != KC_OK) return 0;
    int equal = 0, shares = 0;
    for (int comp = 0; comp < KC_COMP_COUNT; comp++) {
        kc_digest mine, theirs;
        kc_key_component_digest(b->kb, (kc_component)comp, &mine);
        if (digest_of(e, kc_component_name((kc_component)comp), &theirs) && memcmp(mine.bytes, theirs.bytes, 16) == 0) {
            equal++;
            if (comp == KC_COMP_GRAPH) shares = 1;
        }
    }
    int same_key = memcmp(it->key.bytes, b->key.bytes, 16) == 0;
    /* Rank: same key (another arch) > shares the graph > most equal components. */
    int rank = same_key ? 1000 : shares * 100 + equal, best_rank = !b->best ? -1
        : (memcmp(kc_entry_key(b->best)->bytes, b->key.bytes, 16) == 0 ? 1000 : b->best_shares * 100 + b->best_equal);
    if (rank > best_rank) {
        kc_entry_free(b->best);
        b->best = e;
        b->best_shares = shares;
        b->best_equal = equal;
        char hex[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&it->key, hex);
        snprintf(b->best_name, sizeof b->best_name, "%s.%s", hex, it->variant);
    } else {
        kc_entry_free(e);
    }
    return 0;
}

static void add_diff(kc_explain *x, const char *name) {
    for (size_t i = 0; i < x->ndiffs; i++)
        if (strcmp(x->diffs[i], name) == 0) return;
    if (x->ndiffs < KC_EXPLAIN_MAX) snprintf(x->diffs[x->ndiffs++], sizeof x->diffs[0], "%s", name);
}

int kc_graph_explain(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_explain *x) {
    if (!c || !d || !variant || !x) return kc_err(KC_EINVAL, "kc_graph_explain: NULL argument");
    memset(x, 0, sizeof *x);
    kc_target t;
    int rc = kc_target_parse(variant, &t);
    if (rc) return rc;
    kc_key key;
    kc_key_builder *kb;
    if ((rc = kc_graph_key(d, &key, &kb))) return rc;
    kc_key_to_hex(&key, x->key);
    snprintf(x->variant, sizeof x->variant, "%s", variant);
    for (size_t i = 0; i < kc_key_digest_count(kb) && x->ndigests < KC_EXPLAIN_MAX; i++) {
        const char *name;
        kc_digest dg;
        kc_key_digest_at(kb, i, &name, &dg);
        snprintf(x->digests[x->ndigests].name, sizeof x->digests[0].name, "%s", name);
        kc_digest_to_hex(&dg, x->digests[x->ndigests++].digest);
    }
    x->hit = kc_cache_exists(c, &key, variant) == 1;
    if (!x->hit) {
        ex_best b = {x, c, kb, key, 0, 0, NULL, ""};
        rc = kc_cache_foreach(c, ex_visit, &b);
        if (b.best) {
            x->have_nearest = 1;
            x->nearest_shares_graph = b.best_shares;
            snprintf(x->nearest, sizeof x->nearest, "%s", b.best_name);
            if (strcmp(kc_entry_variant(b.best), variant) != 0) add_diff(x, "arch");
            /* Every named digest of either side that is missing on the other or differs. */
            for (size_t i = 0; i < kc_key_digest_count(kb); i++) {
                const char *name;
                kc_digest mine, theirs;
                kc_key_digest_at(kb, i, &name, &mine);
                if (!digest_of(b.best, name, &theirs) || memcmp(mine.bytes, theirs.bytes, 16) != 0) add_diff(x, name);
            }
            for (size_t i = 0; i < kc_entry_digest_count(b.best); i++) {
                const char *name;
                kc_digest theirs;
                kc_entry_digest_at(b.best, i, &name, &theirs);
                int found = 0;
                for (size_t k = 0; k < kc_key_digest_count(kb) && !found; k++) {
                    const char *n2;
                    kc_digest mine;
                    kc_key_digest_at(kb, k, &n2, &mine);
                    found = strcmp(n2, name) == 0;
                }
                if (!found) add_diff(x, name);
            }
            kc_entry_free(b.best);
        }
    }
    kc_key_builder_free(kb);
    return rc;
}
