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

#endif
