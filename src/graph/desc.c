/* SPDX-License-Identifier: Apache-2.0 */
/*
 * desc.c — graph descriptions: building a kc_graph_desc piece by piece, checking each piece
 * as it comes, and freeing it.
 *
 * The one idea: every mistake a caller can make in a description (an unknown kernel, a step
 * argument naming no tensor, an expression over an undeclared symbol, an option kcache
 * refuses) is found here, when it is added, with the graph's and kernel's names — so the key,
 * the compile and the launch paths only ever see descriptions that are whole and consistent.
 *
 * A step argument is checked by args.c (kc_graph_arg_check), where every argument kind is
 * spelled; the grammar of the launch program, argument kinds included, is written whole at the
 * top of program.c.
 *
 * Callers: the public kc_graph_* builders (graph.h) and spec.c (JSON specs).  The storage is
 * graph_internal.h's; the canonical bytes of a description are graph_key.c's and program.c's.
 * Must not: compile, hash, or touch the cache.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "graph_internal.h"
#include "program.h"

_Static_assert(KC_GRAPH_MAX_KERNELS <= KC_UNITS_MAX, "a graph's kernels must fit one grouping into compile units");

/* The readers' limits, enforced here so that a description is refused when it is built, never
 * stored and then found "malformed" on load (issue 15).  They must equal what the readers
 * accept: program.c (MAX_ITEMS symbols, tensors, scratch buffers and steps per pass; 256
 * arguments per step; strings of 65536 bytes), kernels.c (names of 4096 bytes) and wrapper.c
 * (MAX_WRAPPERS wrappers, names of 255 bytes).  [They belong in those files' headers; kept
 * here until they move.] */
#define DESC_MAX_ITEMS 4096
#define DESC_MAX_ARGS 256
#define DESC_MAX_STR 65536
#define DESC_MAX_KERNEL_NAME 4096
#define DESC_MAX_WRAPPERS 64
#define DESC_MAX_WRAPPER_NAME 255

/* A string the launch program will hold: KC_OK, or KC_EINVAL naming `what`. */
int kc_desc_fits(const kc_graph_desc *d, const char *s, const char *what) {
    if (s && strlen(s) > DESC_MAX_STR)
        return kc_err(KC_EINVAL, "graph '%s': %s of %zu bytes is over the cap of %d", d->name, what, strlen(s),
                      DESC_MAX_STR);
    return KC_OK;
}

static const struct {
    const char *name;
    kc_dtype t;
} dtypes[] = {
    {"f32", KC_DTYPE_F32},   {"f16", KC_DTYPE_F16},       {"bf16", KC_DTYPE_BF16},     {"f64", KC_DTYPE_F64},
    {"i32", KC_DTYPE_I32},   {"i64", KC_DTYPE_I64},       {"i8", KC_DTYPE_I8},         {"u8", KC_DTYPE_U8},
    {"bool", KC_DTYPE_BOOL}, {"f8e4m3", KC_DTYPE_F8E4M3}, {"f8e5m2", KC_DTYPE_F8E5M2},
};

const char *kc_dtype_str(kc_dtype t) {
    for (size_t i = 0; i < KC_ARRAY_LEN(dtypes); i++)
        if (dtypes[i].t == t) return dtypes[i].name;
    return "?";
}

kc_dtype kc_dtype_parse(const char *s) {
    for (size_t i = 0; s && i < KC_ARRAY_LEN(dtypes); i++)
        if (strcmp(s, dtypes[i].name) == 0) return dtypes[i].t;
    return (kc_dtype)0;
}

int kc_graph_desc_new(kc_graph_desc **out, const char *name) {
    if (!out) return kc_err(KC_EINVAL, "kc_graph_desc_new: out is NULL");
    *out = NULL;
    kc_graph_desc *d = kc_calloc(1, sizeof *d);
    if (d) pthread_mutex_init(&d->key_memo.mu, NULL);
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
    if (kc_spec_direct_lazy_(d)) d->nkernels = 0; /* vouched, not read: no kernel array yet */
    for (size_t i = 0; i < d->nkernels; i++) {
        gkernel *k = &d->kernels[i];
        free(k->file);
        free(k->source);
        free(k->name);
        free(k->include_digest);
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
        free(d->steps[i].args); /* its strings with it (kc_graph_add_step) */
    }
    for (size_t i = 0; i < d->nwrappers; i++) free(d->wrappers[i].name), free(d->wrappers[i].params);
    for (size_t i = 0; i < d->nzeros; i++) free(d->zeros[i].offset), free(d->zeros[i].count);
    free(d->zeros);
    free(d->kernels);
    free(d->tensors);
    free(d->scratch);
    free(d->steps);
    free(d->wrappers);
    free_strs(d->symbols, d->nsymbols);
    for (size_t i = 0; i < d->nrargs; i++) free(d->rargs[i].name);
    free(d->rargs);
    free_strs(d->hooks, d->nhooks);
    free(d->unhashed_hook);
    free(d->runtime_meta);
    free(d->spec_path);
    kc_spec_direct_free_(d->direct);
    free(d->name);
    free(d->backend);
    pthread_mutex_destroy(&d->key_memo.mu);
    free(d);
}

const char *kc_graph_desc_name(const kc_graph_desc *d) { return d->name; }

/* Every builder below calls this before it changes anything, success or not: a key memoised
 * before the change is never handed out after it ([Note: key memo] in graph_key.c). */
int kc_graph_desc_changed_(kc_graph_desc *d) {
    int rc = kc_spec_direct_ready_(d); /* a vouched description is read before it changes */
    if (rc) return rc;
    if (d->direct) d->direct->recordable = 0; /* no longer what its spec says */
    __atomic_store_n(&d->cacheable_memo, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&d->key_memo.mu);
    d->key_memo.gen++;
    d->key_memo.valid = 0;
    pthread_mutex_unlock(&d->key_memo.mu);
    return KC_OK;
}

/* Grow an array by one zeroed element; returns it or NULL. */
void *kc_desc_grow(void **arr, size_t *n, size_t size) {
    void *p = kc_realloc(*arr, (*n + 1) * size);
    if (!p) return NULL;
    *arr = p;
    memset((char *)p + *n * size, 0, size);
    return (char *)p + (*n)++ * size;
}

/* Copy `str` (NULL: none) with its NUL to *at, which moves past it; the copy, or NULL. */
static char *put_str(char **at, const char *str) {
    if (!str) return NULL;
    size_t n = strlen(str) + 1;
    char *d = memcpy(*at, str, n);
    *at += n;
    return d;
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = kc_strdup(s);
    if (!d) *oom = 1;
    return d;
}

int kc_graph_add_kernel(kc_graph_desc *d, const kc_kernel_src *k, int *index) {
    if (!d || !k || !k->source || !k->name)
        return kc_err(KC_EINVAL, "kc_graph_add_kernel: source and name are required");
    int vrc = kc_api_version("kc_graph_add_kernel", "kc_kernel_src", "KC_KERNEL_SRC_INIT", k->version,
                             KC_KERNEL_SRC_VERSION);
    if (vrc) return vrc;
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (d->nkernels >= KC_GRAPH_MAX_KERNELS) return kc_err(KC_EINVAL, "graph '%s': too many kernels", d->name);
    if (strlen(k->name) > DESC_MAX_KERNEL_NAME)
        return kc_err(KC_EINVAL, "graph '%s': a kernel name is at most %d bytes", d->name, DESC_MAX_KERNEL_NAME);
    char *norm;
    int rc = kc_options_normalize(k, &norm); /* refuse bad options now, with the kernel's name */
    if (rc) return kc_err_prefix(rc, "graph '%s', kernel '%s'", d->name, k->name);
    free(norm);
    gkernel *g = kc_desc_grow((void **)&d->kernels, &d->nkernels, sizeof *g);
    if (!g) return kc_err(KC_ENOMEM, "graph: out of memory");
    int oom = 0;
    g->file = dup_or_null(k->file, &oom);
    g->source = dup_or_null(k->source, &oom);
    g->name = dup_or_null(k->name, &oom);
    g->include_digest = dup_or_null(k->include_digest, &oom);
    g->flags = k->flags;
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

int kc_graph_is_uint(const char *s) {
    if (!s || !*s || strlen(s) > 18) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

static int add_symbol(kc_graph_desc *d, const char *name) {
    for (size_t i = 0; i < d->nsymbols; i++)
        if (strcmp(d->symbols[i], name) == 0) return KC_OK;
    for (size_t i = 0; i < d->nrargs; i++)
        if (strcmp(d->rargs[i].name, name) == 0)
            return kc_err(KC_EINVAL, "graph '%s': size symbol '%s' is also the name of a runtime argument", d->name,
                          name);
    if (d->nsymbols >= DESC_MAX_ITEMS)
        return kc_err(KC_EINVAL, "graph '%s': more than %d symbols", d->name, DESC_MAX_ITEMS);
    int rc = kc_desc_fits(d, name, "a symbol");
    if (rc) return rc;
    char **slot = kc_desc_grow((void **)&d->symbols, &d->nsymbols, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(name))) {
        if (slot) d->nsymbols--;
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    return KC_OK;
}

int kc_desc_check_expr(const kc_graph_desc *d, const char *e, const char *what) {
    int rc = kc_expr_check(e, (const char *const *)d->symbols, d->nsymbols);
    return rc ? kc_err_prefix(rc, "graph '%s', %s", d->name, what) : KC_OK;
}

int kc_graph_add_arg(kc_graph_desc *d, const char *name, kc_arg_type type) {
    if (!d || !name) return kc_err(KC_EINVAL, "kc_graph_add_arg: NULL argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (!is_symbol_name(name) || strlen(name) > 255)
        return kc_err(KC_EINVAL,
                      "graph '%s': runtime argument '%.64s' must be an identifier (letters, digits, _; at most 255)",
                      d->name, name);
    if (type < KC_ARG_F32 || type > KC_ARG_U64)
        return kc_err(KC_EINVAL, "graph '%s': runtime argument '%s' has an unknown type (%d; f32 f64 i32 u32 i64 u64)",
                      d->name, name, (int)type);
    for (size_t i = 0; i < d->nrargs; i++)
        if (strcmp(d->rargs[i].name, name) == 0)
            return kc_err(KC_EINVAL, "graph '%s': runtime argument '%s' is declared twice", d->name, name);
    for (size_t i = 0; i < d->nsymbols; i++)
        if (strcmp(d->symbols[i], name) == 0)
            return kc_err(KC_EINVAL, "graph '%s': runtime argument '%s' is also a size symbol", d->name, name);
    if (d->nrargs >= KC_GRAPH_MAX_ARGS)
        return kc_err(KC_EINVAL, "graph '%s': more than %d runtime arguments", d->name, KC_GRAPH_MAX_ARGS);
    kc_argdecl *a = kc_desc_grow((void **)&d->rargs, &d->nrargs, sizeof *a);
    if (!a) return kc_err(KC_ENOMEM, "graph: out of memory");
    if (!(a->name = kc_strdup(name))) {
        d->nrargs--;
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    a->type = type;
    return KC_OK;
}

/* An input's sizes (each an integer or a symbol, declared here; never a device fact) and strides, as given. */
static int input_sizes(kc_graph_desc *d, int rank, const char *const *sizes, const char *const *strides) {
    for (int r = 0; r < rank; r++) {
        int rc = kc_desc_fits(d, sizes[r], "an input size");
        if (!rc && strides) rc = kc_desc_fits(d, strides[r], "an input stride");
        if (rc) return rc;
        if (is_symbol_name(sizes[r]) && kc_device_fact(sizes[r], strlen(sizes[r])) >= 0) {
            return kc_err(KC_EINVAL,
                          "graph '%s', input %zu: size %d is '%s', a device fact (reserved for launch "
                          "expressions; bound from the device, never from an input)",
                          d->name, d->ntensors, r, sizes[r]);
        } else if (is_symbol_name(sizes[r])) {
            int rc = add_symbol(d, sizes[r]);
            if (rc) return rc;
        } else if (!kc_graph_is_uint(sizes[r])) {
            return kc_err(KC_EINVAL, "graph '%s', input %zu: size %d must be an integer or a symbol, not '%s'", d->name,
                          d->ntensors, r, sizes[r] ? sizes[r] : "(null)");
        }
    }
    return KC_OK;
}

/* The strides of input t: those given, else contiguous ones — the product of the later sizes, as an expression;
 * 1 when out of memory. */
static int input_strides(gtensor *t, const char *const *strides) {
    int oom = 0;
    for (int r = t->rank - 1; r >= 0 && !oom; r--) {
        if (strides && strides[r]) {
            t->strides[r] = dup_or_null(strides[r], &oom);
        } else if (r == t->rank - 1) {
            t->strides[r] = dup_or_null("1", &oom);
        } else { /* sized to fit: a fixed buffer truncated long products into another expression */
            const char *next = t->strides[r + 1];
            int one = strcmp(next, "1") == 0;
            size_t n = (one ? 0 : strlen(next) + 1) + strlen(t->sizes[r + 1]) + 1;
            char *buf = kc_malloc(n);
            if (!buf) return 1;
            snprintf(buf, n, "%s%s%s", one ? "" : next, one ? "" : "*", t->sizes[r + 1]);
            t->strides[r] = buf;
        }
    }
    return oom;
}

int kc_graph_add_input(kc_graph_desc *d, kc_dtype dtype, int rank, const char *const *sizes, const char *const *strides,
                       int requires_grad) {
    if (!d || rank < 0 || rank > KC_MAX_RANK || (rank && !sizes))
        return kc_err(KC_EINVAL, "kc_graph_add_input: bad rank or sizes");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (dtype < KC_DTYPE_F32 || dtype > KC_DTYPE_F8E5M2) return kc_err(KC_EINVAL, "graph '%s': unknown dtype", d->name);
    if (d->ntensors >= DESC_MAX_ITEMS)
        return kc_err(KC_EINVAL, "graph '%s': more than %d tensors", d->name, DESC_MAX_ITEMS);
    int rc = input_sizes(d, rank, sizes, strides);
    if (rc) return rc;
    gtensor *t = kc_desc_grow((void **)&d->tensors, &d->ntensors, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "graph: out of memory");
    t->role = KC_ROLE_INPUT;
    t->dtype = dtype;
    t->rank = rank;
    t->requires_grad = requires_grad ? 1 : 0;
    int oom = 0;
    for (int r = 0; r < rank; r++) t->sizes[r] = dup_or_null(sizes[r], &oom);
    if (oom || input_strides(t, strides)) return kc_err(KC_ENOMEM, "graph: out of memory");
    for (int r = 0; r < rank; r++) {
        rc = kc_expr_check_nodev(t->strides[r], (const char *const *)d->symbols, d->nsymbols);
        if (rc) rc = kc_err_prefix(rc, "graph '%s', input stride (a device fact is not allowed here)", d->name);
        if (!rc) rc = kc_desc_fits(d, t->strides[r], "an input stride");
        if (rc) return rc;
    }
    return KC_OK;
}

int kc_graph_add_tensor(kc_graph_desc *d, kc_tensor_role role, kc_dtype dtype, int rank, const char *const *sizes) {
    if (!d || rank < 0 || rank > KC_MAX_RANK || (rank && !sizes) || (role != KC_ROLE_OUTPUT && role != KC_ROLE_SAVED))
        return kc_err(KC_EINVAL, "kc_graph_add_tensor: bad role, rank or sizes");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (dtype < KC_DTYPE_F32 || dtype > KC_DTYPE_F8E5M2) return kc_err(KC_EINVAL, "graph '%s': unknown dtype", d->name);
    if (d->ntensors >= DESC_MAX_ITEMS)
        return kc_err(KC_EINVAL, "graph '%s': more than %d tensors", d->name, DESC_MAX_ITEMS);
    /* An output's or a saved tensor's size may use the device facts (per-SM partial results): evaluated on the device
     * the graph is loaded on, and checked against the known devices on a host without one (device.c). */
    for (int r = 0; r < rank; r++) {
        int rc = kc_desc_check_expr(d, sizes[r], role == KC_ROLE_OUTPUT ? "output size" : "saved size");
        if (!rc) rc = kc_desc_fits(d, sizes[r], "a tensor size");
        if (rc) return rc;
    }
    gtensor *t = kc_desc_grow((void **)&d->tensors, &d->ntensors, sizeof *t);
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
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (d->nscratch >= DESC_MAX_ITEMS)
        return kc_err(KC_EINVAL, "graph '%s': more than %d scratch buffers", d->name, DESC_MAX_ITEMS);
    int rc = kc_desc_check_expr(d, bytes, "scratch size");
    if (!rc) rc = kc_desc_fits(d, bytes, "a scratch size");
    if (rc) return rc;
    gscratch *s = kc_desc_grow((void **)&d->scratch, &d->nscratch, sizeof *s);
    if (!s || !(s->bytes = kc_strdup(bytes))) return kc_err(KC_ENOMEM, "graph: out of memory");
    s->pass = pass;
    return KC_OK;
}

size_t kc_desc_count_role(const kc_graph_desc *d, kc_tensor_role role) {
    size_t n = 0;
    for (size_t i = 0; i < d->ntensors; i++) n += d->tensors[i].role == role;
    return n;
}

/* A step's grid, block and shared memory: expressions over the symbols, each within the program's cap. */
static int step_dims(const kc_graph_desc *d, const char *const grid[3], const char *const block[3],
                     const char *shared) {
    int rc;
    for (int j = 0; j < 3; j++) {
        if ((rc = kc_desc_check_expr(d, grid[j], "grid")) || (rc = kc_desc_fits(d, grid[j], "a grid size"))) return rc;
        if ((rc = kc_desc_check_expr(d, block[j], "block")) || (rc = kc_desc_fits(d, block[j], "a block size")))
            return rc;
    }
    if (shared &&
        ((rc = kc_desc_check_expr(d, shared, "shared memory")) || (rc = kc_desc_fits(d, shared, "a shared size"))))
        return rc;
    return KC_OK;
}

int kc_graph_add_step(kc_graph_desc *d, kc_pass pass, int kernel, const char *const grid[3], const char *const block[3],
                      const char *shared, const char *const *args, size_t nargs) {
    if (!d || !grid || !block || (nargs && !args) || (pass != KC_PASS_FORWARD && pass != KC_PASS_BACKWARD))
        return kc_err(KC_EINVAL, "kc_graph_add_step: bad argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (kernel < 0 || (size_t)kernel >= d->nkernels)
        return kc_err(KC_EINVAL, "graph '%s': step names kernel %d, which does not exist", d->name, kernel);
    if (d->nsteps + d->nzeros >= KC_GRAPH_MAX_STEPS) return kc_err(KC_EINVAL, "graph '%s': too many steps", d->name);
    if (nargs > DESC_MAX_ARGS)
        return kc_err(KC_EINVAL, "graph '%s': a step takes at most %d arguments, not %zu", d->name, DESC_MAX_ARGS,
                      nargs);
    int rc = step_dims(d, grid, block, shared);
    if (rc) return rc;
    for (size_t i = 0; i < nargs; i++)
        if ((rc = kc_graph_arg_check(d, pass, args[i])) || (rc = kc_desc_fits(d, args[i], "a step argument")))
            return rc;
    gstep *s = kc_desc_grow((void **)&d->steps, &d->nsteps, sizeof *s);
    if (!s) return kc_err(KC_ENOMEM, "graph: out of memory");
    s->pass = pass;
    s->kernel = kernel;
    /* One allocation per step: its argument array, then every string it holds (grid, block,
     * shared, the arguments), not one each — a warm start adds every step of every graph it
     * loads.  kc_graph_desc_free frees s->args alone. */
    const char *strs[7] = {grid[0], grid[1], grid[2], block[0], block[1], block[2], shared ? shared : "0"};
    size_t slots = nargs ? nargs : 1, need = slots * sizeof(char *);
    for (int j = 0; j < 7; j++) need += strs[j] ? strlen(strs[j]) + 1 : 0;
    for (size_t i = 0; i < nargs; i++) need += args[i] ? strlen(args[i]) + 1 : 0;
    char **blk = kc_malloc(need);
    if (!blk) {
        d->nsteps--; /* no half-made step left behind */
        return kc_err(KC_ENOMEM, "graph: out of memory");
    }
    char *at = (char *)(blk + slots), *put[7];
    for (int j = 0; j < 7; j++) put[j] = put_str(&at, strs[j]);
    for (int j = 0; j < 3; j++) s->grid[j] = put[j], s->block[j] = put[3 + j];
    s->shared = put[6];
    s->args = blk;
    for (size_t i = 0; i < nargs; i++) blk[i] = put_str(&at, args[i]);
    if (!nargs) blk[0] = NULL;
    s->nargs = nargs;
    return KC_OK;
}

int kc_graph_add_wrapper(kc_graph_desc *d, const char *name, uint32_t version, const void *params, size_t len) {
    if (!d || !name || !*name || (len && !params)) return kc_err(KC_EINVAL, "kc_graph_add_wrapper: bad argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (d->nwrappers >= DESC_MAX_WRAPPERS || strlen(name) > DESC_MAX_WRAPPER_NAME)
        return kc_err(KC_EINVAL, "graph '%s': at most %d wrappers, names of at most %d bytes", d->name,
                      DESC_MAX_WRAPPERS, DESC_MAX_WRAPPER_NAME);
    gwrapper *w = kc_desc_grow((void **)&d->wrappers, &d->nwrappers, sizeof *w);
    if (!w || !(w->name = kc_strdup(name)) || (len && !(w->params = kc_malloc(len))))
        return kc_err(KC_ENOMEM, "graph: out of memory");
    w->version = version;
    w->len = len;
    if (len) memcpy(w->params, params, len);
    return KC_OK;
}

int kc_graph_add_hook(kc_graph_desc *d, const char *name, const char *cache_hash) {
    if (!d || !name || !*name) return kc_err(KC_EINVAL, "kc_graph_add_hook: a name is required");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    if (!cache_hash || !*cache_hash) {
        d->hook_unhashed = 1;
        if (!d->unhashed_hook && !(d->unhashed_hook = kc_strdup(name))) return kc_err(KC_ENOMEM, "out of memory");
        return KC_OK;
    }
    char **slot = kc_desc_grow((void **)&d->hooks, &d->nhooks, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(name))) return kc_err(KC_ENOMEM, "out of memory");
    slot = kc_desc_grow((void **)&d->hooks, &d->nhooks, sizeof *slot);
    if (!slot || !(*slot = kc_strdup(cache_hash))) return kc_err(KC_ENOMEM, "out of memory");
    return KC_OK;
}

int kc_graph_set_runtime_meta(kc_graph_desc *d, const void *data, size_t len) {
    if (!d || (len && !data)) return kc_err(KC_EINVAL, "kc_graph_set_runtime_meta: bad argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    uint8_t *p = kc_malloc(len);
    if (!p) return kc_err(KC_ENOMEM, "graph: out of memory");
    if (len) memcpy(p, data, len);
    free(d->runtime_meta);
    d->runtime_meta = p;
    d->runtime_meta_len = len;
    return KC_OK;
}

void kc_graph_set_globals(kc_graph_desc *d, uint64_t globals) {
    if (kc_graph_desc_changed_(d)) return; /* a vouched spec that cannot be read now: kc_error_last() says */
    d->globals = globals;
}

int kc_graph_set_backend(kc_graph_desc *d, const char *backend) {
    if (!d || !backend || !*backend) return kc_err(KC_EINVAL, "kc_graph_set_backend: bad argument");
    int crc = kc_graph_desc_changed_(d);
    if (crc) return crc;
    char *b = kc_strdup(backend);
    if (!b) return kc_err(KC_ENOMEM, "graph: out of memory");
    free(d->backend);
    d->backend = b;
    return KC_OK;
}

kc_kernel_src kc_graph_kernel_src(const gkernel *g) {
    kc_kernel_src k = {
        KC_KERNEL_SRC_VERSION,           g->file,     g->source,         g->name, g->headers, g->nheaders,
        (const char *const *)g->options, g->noptions, g->include_digest, g->flags};
    return k;
}
