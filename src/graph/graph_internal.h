/* graph_internal.h — the description's storage, shared by graph.c and spec.c. */
#ifndef KC_GRAPH_INTERNAL_H
#define KC_GRAPH_INTERNAL_H

#include "kcache/graph.h"

typedef struct gkernel {
    char *file, *source, *name, *include_digest;
    kc_header_src *headers; /* owned strings */
    size_t nheaders;
    char **options;
    size_t noptions;
} gkernel;

typedef struct gtensor {
    kc_tensor_role role;
    kc_dtype dtype;
    int rank;
    char *sizes[KC_MAX_RANK];
    char *strides[KC_MAX_RANK];
    int requires_grad;
} gtensor;

typedef struct gscratch {
    kc_pass pass;
    char *bytes;
} gscratch;

typedef struct gstep {
    kc_pass pass;
    int kernel;
    char *grid[3], *block[3], *shared;
    char **args;
    size_t nargs;
} gstep;

typedef struct gwrapper {
    char *name;
    uint32_t version;
    uint8_t *params;
    size_t len;
} gwrapper;

struct kc_graph_desc {
    char *name, *backend;
    uint64_t globals;
    gkernel *kernels; size_t nkernels;
    gtensor *tensors; size_t ntensors;
    gscratch *scratch; size_t nscratch;
    gstep *steps; size_t nsteps;
    gwrapper *wrappers; size_t nwrappers;
    char **symbols; size_t nsymbols;
    char **hooks; size_t nhooks;          /* "name\0hash" pairs as two strings each */
    int hook_unhashed;                    /* a hook came without a cache hash */
    char *unhashed_hook;
    uint8_t *runtime_meta; size_t runtime_meta_len;
};

/** Check an expression's syntax and that its symbols are among `names`. */
int kc_expr_check(const char *s, const char *const *names, size_t n);

/** The dtype of a name ("f32", "bf16", …); 0 when unknown. */
kc_dtype kc_dtype_parse(const char *s);

/* ---- shared by graph.c and cudagraph.c ---- */

struct kc_saved {
    kc_graph *g;
    int64_t *syms;
    kc_tensor *saved;
    size_t nsaved;
    kc_tensor *inputs, *outputs; /* shallow copies: data borrowed from the caller */
    size_t ninputs, noutputs;
    kc_allocator alloc;
    int has_alloc;
    uint64_t philox[2];  /* the forward's seed and offset: backward regenerates the same numbers */
    int philox_set;
};

/** Device memory through the caller's allocator, or the driver's stream-ordered one. */
int kc_dev_alloc(const kc_allocator *a, size_t bytes, void *stream, void **out);
void kc_dev_free(const kc_allocator *a, void *p, void *stream);

/** The device a loaded graph lives on. */
int kc_graph_device(const kc_graph *g);

/**
 * A copy of `src` for the call `c`: its saved tensors copied (on c->stream) into memory
 * from c->alloc, its inputs and outputs those of `c`.  Context must be current.
 */
int kc_saved_clone(kc_saved **out, const kc_saved *src, const kc_forward_call *c);

/** Free a kc_saved's host parts only (not its tensors; drops no graph reference). */
void kc_saved_free_shell(kc_saved *s);

/** Bytes spanned by a tensor's elements (0 when any size is 0). */
size_t kc_tensor_span(const kc_tensor *t);

/** The built-in cuda_graph wrapper (cudagraph.c). */
int kc_cudagraph_wrap(const kc_callable *inner, const void *params, size_t len, kc_callable *out);
void kc_cudagraph_unwrap(kc_callable *c);

#endif
