/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/graph.h — compiled forward/backward graphs: describe, key, compile, store, load.
 *
 * A tensor runtime describes a graph: its kernels (CUDA C++ source, entry name, headers in
 * memory, options), its input tensors (dtype, sizes static or symbolic), the tensors it
 * produces (outputs, saved for backward, scratch) with sizes as expressions over the
 * symbols, and a launch program per pass: for each step a kernel, grid, block and shared
 * memory as integer expressions, and its arguments.  kc_graph_get turns that into loaded
 * kernels: from process memory, the cache directory, or NVRTC — storing what it compiled.
 *
 * Launch expressions: integers, symbols (names of symbolic input sizes), + - * and
 * floordiv(a,b) ceildiv(a,b) min(a,b) max(a,b) mod(a,b), parentheses.  They are parsed
 * when the graph is described and evaluated with checked arithmetic: a division by zero or
 * an overflow is KC_EEXPR, never undefined behaviour.
 *
 * Device facts: launch expressions (grid, block, shared memory, scratch and saved sizes,
 * e32/e64 and tensor-offset arguments) may also use the reserved names device_sm_count,
 * device_max_threads_per_sm, device_max_threads_per_block, device_smem_per_block (the
 * default 48 KiB), device_smem_optin (the most a kernel may opt in to per block),
 * device_smem_per_sm and device_warp_size.  They are read from the device when the graph is
 * loaded, so one entry serves every GPU of its variant, each with its own grid: the
 * expressions are in the key, the values are not.  They are not size symbols (an input may
 * not name one as a size) and may not appear in an input's strides or an output's sizes.
 * Compiling without a GPU (kc_graph_compile, prewarm) evaluates what uses only constants and
 * device facts over a table of known devices of the target: a launch that fits none of them
 * (shared memory above every opt-in limit, a block over 1024 threads, a grid out of range,
 * a division by zero, an e32 over 32 bits, a negative scratch size) is KC_ECOMPILE.
 *
 * Dynamic shared memory above the default: before a launch that asks for more than the
 * kernel's current maximum, kcache raises it (cuFuncSetAttribute, once per function and
 * size, thread-safe); beyond the device's opt-in limit less the kernel's static shared
 * memory the call fails with KC_EINVAL naming step, kernel, bytes and limit, before the
 * driver sees it.
 *
 * A kc_graph_desc is built on one thread; a loaded kc_graph may be shared by threads.
 */
#ifndef KCACHE_GRAPH_H
#define KCACHE_GRAPH_H

#include "cache.h"
#include "common.h"
#include "compile.h"
#include "key.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kc_graph_desc kc_graph_desc;

/** The passes of a graph. */
typedef enum kc_pass { KC_PASS_FORWARD = 0, KC_PASS_BACKWARD = 1 } kc_pass;

/** Kinds of tensors a launch step can name. */
typedef enum kc_tensor_role {
    KC_ROLE_INPUT = 0,    /**< Forward input i. */
    KC_ROLE_OUTPUT = 1,   /**< Forward output i. */
    KC_ROLE_SAVED = 2,    /**< Tensor i saved by forward for backward. */
    KC_ROLE_SCRATCH = 3,  /**< Scratch buffer i of the pass. */
    KC_ROLE_GRAD_OUT = 4, /**< Backward: the incoming gradient of output i. */
    KC_ROLE_GRAD_IN = 5   /**< Backward: the gradient of input i (produced). */
} kc_tensor_role;

/** A new, empty description named `name` (used in messages). Free with kc_graph_desc_free. */
KC_API int kc_graph_desc_new(kc_graph_desc **out, const char *name);
/** Free; accepts NULL. */
KC_API void kc_graph_desc_free(kc_graph_desc *d);
/** The description's name; borrowed. */
KC_API const char *kc_graph_desc_name(const kc_graph_desc *d);

/** Add a kernel (everything is copied).  Its index is returned through `index` (may be NULL). */
KC_API int kc_graph_add_kernel(kc_graph_desc *d, const kc_kernel_src *k, int *index);

/**
 * Add a forward input.  `sizes[i]` is a decimal integer ("64") or a symbol name ("N");
 * strides default to contiguous when `strides` is NULL.
 */
KC_API int kc_graph_add_input(kc_graph_desc *d, kc_dtype dtype, int rank, const char *const *sizes,
                              const char *const *strides, int requires_grad);

/** Add an output, saved tensor (role OUTPUT or SAVED) with sizes as expressions. */
KC_API int kc_graph_add_tensor(kc_graph_desc *d, kc_tensor_role role, kc_dtype dtype, int rank,
                               const char *const *sizes);

/** Add a scratch buffer of `bytes` (an expression) to a pass. */
KC_API int kc_graph_add_scratch(kc_graph_desc *d, kc_pass pass, const char *bytes);

/**
 * Declare forward input `input` written by the graph (updated in place: GELU's backward
 * overwriting its input, an optimizer step updating parameters and moments).  kcache never
 * allocates an input; this says the graph writes through the caller's pointer, so the
 * built-in cuda_graph wrapper copies the input back to the caller's tensor after a replay
 * (or runs the call directly) and a zero step may name it.  In the key.  KC_EINVAL when there
 * is no such input.  Spec: `"inplace": true` on the input.
 */
KC_API int kc_graph_set_inplace(kc_graph_desc *d, size_t input);

/**
 * Declare forward output `output` to be forward input `input` (an in-place update returned as
 * an output): forward allocates nothing for it and hands back outputs[output] = inputs[input]
 * (the same data pointer, the input's strides); steps may name either.  The input becomes in
 * place (kc_graph_set_inplace).  Both must exist, with the same dtype, rank and size
 * expressions (as written) — else KC_EINVAL "an alias of mismatched shape" naming both; an
 * input is the alias of at most one output.  An aliased output is the caller's own tensor:
 * never release it (kc_tensor_release would free the input); kc_graph_output_alias says which
 * outputs are.  In the key.  Spec: `"alias": "input:J"` on the output.
 */
KC_API int kc_graph_set_alias(kc_graph_desc *d, size_t output, size_t input);

/**
 * Declare the gradient of forward input `input` accumulating: backward does not allocate
 * grad_inputs[input]; the caller passes its own buffer there (data non-NULL, the input's dtype
 * and sizes, contiguous) and the kernels add into it ("dweight +=").  A call that passes NULL
 * or another shape is KC_EINVAL naming it, before anything is launched.  Without it,
 * grad_inputs are allocated by backward as always.  A zero step may not name an accumulating
 * gradient (it would discard what the caller accumulated): KC_EINVAL either way round.  In
 * the key.  Spec: `"grad": "accumulate"` on the input.
 */
KC_API int kc_graph_set_grad_accumulate(kc_graph_desc *d, size_t input);

/**
 * Add a zero step to a pass, in order with its launch steps: before the next step (or at the
 * pass's end) the whole tensor is set to zero bytes on the stream (cuMemsetD8Async; inside a
 * captured cuda_graph, a memset node) — a reduction's partial sums, a grid-wide flag, a
 * gradient kernels atomically add into.  `role` and `index` name it: KC_ROLE_OUTPUT,
 * KC_ROLE_SAVED or an in-place KC_ROLE_INPUT in the forward pass; KC_ROLE_GRAD_IN (not an
 * accumulating one) in the backward pass; KC_ROLE_SCRATCH (of that pass: its bytes) in
 * either.  A tensor's bytes come from its shape; a caller's tensor (an in-place input, an
 * aliased output) must be contiguous at the call, else the call is KC_EINVAL before anything
 * is launched.  In the key.  Spec: a step `{"zero": "output:0"}`.
 */
KC_API int kc_graph_add_zero(kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index);

/**
 * kc_graph_add_zero for a range of the tensor: `count` elements (a scratch buffer: bytes) from
 * element `offset`, both expressions over the size symbols and device facts; `offset` NULL is 0,
 * `count` NULL is to the tensor's end (both NULL: the whole tensor, as kc_graph_add_zero).  The
 * range must lie inside the tensor: checked here where the sizes are constants, else at each call
 * before anything is launched (KC_EINVAL).  In the key.  Spec: `{"zero": "scratch:0+OFFSET",
 * "count": COUNT}` (a grid-wide flag of 4 bytes at the start of a scratch buffer: `{"zero":
 * "scratch:0", "count": 4}`).
 */
KC_API int kc_graph_add_zero_range(kc_graph_desc *d, kc_pass pass, kc_tensor_role role, size_t index,
                                   const char *offset, const char *count);

/** The type of a runtime argument (kc_graph_add_arg): what its kernel parameter takes by value. */
typedef enum kc_arg_type {
    KC_ARG_F32 = 1, /**< float (4 bytes, floating point) */
    KC_ARG_F64 = 2, /**< double (8 bytes, floating point) */
    KC_ARG_I32 = 3, /**< int32_t (4 bytes) */
    KC_ARG_U32 = 4, /**< uint32_t (4 bytes) */
    KC_ARG_I64 = 5, /**< int64_t (8 bytes) */
    KC_ARG_U64 = 6  /**< uint64_t (8 bytes) */
} kc_arg_type;

/**
 * One runtime argument's value for one call: `type` must be the declared type, and the
 * member of `v` of that type holds the value (e.g. {KC_ARG_F32, {.f32 = 3e-4f}}).
 */
typedef struct kc_value {
    kc_arg_type type;
    union {
        float f32;
        double f64;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
    } v;
} kc_value;

/** Initialiser of a kc_value (an f32 of 0; set `type` and the member of `v` of that type).  Fixed:
 *  a type and its value, never more. */
#define KC_VALUE_INIT        \
    {                        \
        KC_ARG_F32, { 0.0f } \
    }

/**
 * Declare a runtime argument: a named value passed at each call (a learning rate, a loss
 * scale, a step's seed), never a compile-time constant.  Steps pass it as "arg:NAME".  Its
 * name (an identifier, unique, not a size symbol) and type are in the key; its values never
 * are, so calls with different values share one compiled graph.  Values are given in
 * declaration order to kc_graph_forward_args / kc_graph_backward_args.
 */
KC_API int kc_graph_add_arg(kc_graph_desc *d, const char *name, kc_arg_type type);

/**
 * Add a launch step to a pass.  `grid` and `block` are three expressions each, `shared`
 * one (NULL: 0).  Each argument is "input:I", "output:I", "saved:I", "scratch:I",
 * "grad_out:I", "grad_in:I" (device pointers; "input:I+EXPR" & co: the pointer EXPR elements
 * further, scratch EXPR bytes — an offset outside the tensor is refused, here when the
 * shapes are static, else at the call before any launch), "null" (a null pointer),
 * "sym:NAME" (a symbol as int64), "e32:EXPR" / "e64:EXPR" (an expression's value as int32 /
 * int64), "i32:V", "u32:V", "i64:V", "f32:V" or "f64:V" (constants), "bytes:HEX" (1 to 256
 * bytes by value, e.g. a bf16 "bytes:803f" or a small struct), "arg:NAME" (a runtime
 * argument, kc_graph_add_arg), and "philox_seed" / "philox_offset" (uint64, from the
 * philox wrapper).
 */
KC_API int kc_graph_add_step(kc_graph_desc *d, kc_pass pass, int kernel, const char *const grid[3],
                             const char *const block[3], const char *shared, const char *const *args, size_t nargs);

/**
 * Record a post-compile wrapper (applied in the order added) with opaque parameters.
 * Built in: "philox" version 1 (see kc_rng_state) and "cuda_graph" version 1 — the
 * forward's launches are captured into a CUDA graph once per input shape (dtype, sizes,
 * strides; and whether saved tensors are asked for) and replayed after, the inputs copied
 * into buffers the wrapper keeps and the outputs copied out into memory from the caller's
 * allocator, so results are those of direct launches.  Its parameters: the most shapes
 * kept, in decimal (default 8; more shapes run directly).  Calls with an RNG state or with
 * runtime arguments run directly (their arguments change per call; a replay would launch
 * the values it was captured with).
 */
KC_API int kc_graph_add_wrapper(kc_graph_desc *d, const char *name, uint32_t version, const void *params, size_t len);

/**
 * Attach a saved-tensor hook graph (pack/unpack) by name.  Its `cache_hash` — a digest the
 * caller computes of the hook's code — joins the key (component "hooks").  A hook without
 * one (NULL) cannot be keyed: the graph is compiled and works, but bypasses the persistent
 * cache (counted in `bypasses`, with the reason).
 */
KC_API int kc_graph_add_hook(kc_graph_desc *d, const char *name, const char *cache_hash);

/** Opaque bytes the runtime stores with the graph (returned by kc_graph_runtime_meta). */
KC_API int kc_graph_set_runtime_meta(kc_graph_desc *d, const void *data, size_t len);

/** The global-state word the caller declares (grad mode, autocast, …); enters the key. */
KC_API void kc_graph_set_globals(kc_graph_desc *d, uint64_t globals);

/** The backend id (default "cuda"); a graph for one backend never serves another. */
KC_API int kc_graph_set_backend(kc_graph_desc *d, const char *backend);

/**
 * Load a description from a graph spec (JSON, format in the README).  Kernel files and
 * headers are read relative to the spec's folder.  Errors name the file and the place.
 * When the cache last opened in this process holds a memo of this spec
 * whose files all have the stat signatures recorded when its key was computed, nothing is read:
 * a lookup serves a hit of that key, and anything else reads the files first (the spec direct
 * mode, docs/performance.md).  The description is still what its load vouched for: the files read
 * then must have the signatures the memo recorded, or the call that needed them fails with
 * "<spec>: changed since it was loaded (load the spec again)"; a file removed or broken since the
 * load is reported with the message its read gives and "load the spec again".  Either failure
 * stays: every later call on the description (a lookup too) returns it.
 */
KC_API int kc_graph_desc_load(kc_graph_desc **out, const char *spec_path);

/* ---- reading a description back, and specializing it for a call ---- */

/**
 * A tensor of a description as it was written.  The strings are borrowed from the description:
 * valid until it is freed (kc_graph_desc_free), never changed by anything else.
 */
typedef struct kc_graph_tensor_desc {
    unsigned version; /**< KC_GRAPH_TENSOR_DESC_VERSION, set by the caller (kept). */
    kc_dtype dtype;
    int rank;
    const char *sizes[KC_MAX_RANK]; /**< Inputs: a decimal size or a symbol; outputs and saved tensors: expressions. */
    const char
        *strides[KC_MAX_RANK]; /**< Inputs: as written, or the contiguous default ("C*D", "D", "1"); others NULL. */
    int requires_grad;         /**< Inputs: 1 when declared to need a gradient; others 0. */
    int inplace;               /**< Inputs: 1 when the graph writes it (kc_graph_set_inplace, or an alias). */
    int grad_accumulate;       /**< Inputs: 1 when its gradient accumulates (kc_graph_set_grad_accumulate). */
    int alias;                 /**< Outputs: the input it is (kc_graph_set_alias), else -1. */
} kc_graph_tensor_desc;

/** Version of kc_graph_tensor_desc this build fills. */
#define KC_GRAPH_TENSOR_DESC_VERSION 1

/** Initialiser of a kc_graph_tensor_desc ([Note: versioned structs]: another version is KC_EVERSION). */
#define KC_GRAPH_TENSOR_DESC_INIT                                                                        \
    {                                                                                                    \
        KC_GRAPH_TENSOR_DESC_VERSION, KC_DTYPE_F32, 0, {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}, \
            {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}, 0, 0, 0, -1                                \
    }

/** How many tensors of `role` (KC_ROLE_INPUT, KC_ROLE_OUTPUT or KC_ROLE_SAVED) `d` declares; 0 for another role. */
KC_API size_t kc_graph_desc_count(const kc_graph_desc *d, kc_tensor_role role);

/** Tensor `i` of `role` (input, output or saved), in declaration order; KC_EINVAL for another role or `i` too large. */
KC_API int kc_graph_desc_tensor(const kc_graph_desc *d, kc_tensor_role role, size_t i, kc_graph_tensor_desc *out);

/** The i-th symbol the inputs' sizes declare (in order of first use), borrowed; NULL past the last. */
KC_API const char *kc_graph_desc_symbol(const kc_graph_desc *d, size_t i);

/** How many runtime arguments (kc_graph_add_arg) `d` declares. */
KC_API size_t kc_graph_desc_nargs(const kc_graph_desc *d);

/** Runtime argument `i`: its name (borrowed, as the tensors' strings) and type; either may be NULL. */
KC_API int kc_graph_desc_arg(const kc_graph_desc *d, size_t i, const char **name, kc_arg_type *type);

/** kc_graph_desc_specialize: a dimension written as a number that the answer makes dynamic stays static. */
#define KC_SPECIALIZE_KEEP_NUMBERS 1u

/**
 * Derive from `d` (left untouched) the description for a call whose inputs are `inputs` (their
 * actual sizes; `sym` ignored), with the input dimensions `dynamic` marks (`ninputs` words, per
 * input bit k: dimension k — a site's kc_site_answer.dynamic; NULL: none) symbolic and every other one
 * static.  A dimension the description wrote as a symbol S keeps S when any dimension written S
 * is dynamic; else S is replaced by the call's size in every expression (sizes, strides, grids,
 * blocks, shared memory, scratch, arguments; "sym:S" becomes "e64:SIZE").  A dimension written
 * as a number must equal the call's size, and cannot be made dynamic: the kernels and
 * expressions may depend on the number in ways no analysis finds (a spec marks a dimension
 * that may vary by writing a symbol) — KC_EINVAL naming the spec's file and place, or with
 * KC_SPECIALIZE_KEEP_NUMBERS it stays static.  `applied` (may be NULL; `ninputs` words)
 * receives the dimensions symbolic in the result — more than asked where a symbol is shared,
 * fewer with KEEP_NUMBERS: pass it to kc_site_insert so that the site guards exactly what the
 * graph does not.  KC_EINVAL when the call does not fit `d` (input count, dtype, rank, a
 * number, two sizes for one symbol).  `*out` is the caller's: kc_graph_desc_free.
 */
KC_API int kc_graph_desc_specialize(kc_graph_desc **out, const kc_graph_desc *d, const kc_tensor_meta *inputs,
                                    size_t ninputs, const uint32_t *dynamic, unsigned flags, uint32_t *applied);

/**
 * Compute the description's key.  `kb_out` (may be NULL) receives the finished builder,
 * for its digests (free with kc_key_builder_free).  Needs NVRTC (its version is in the key).
 */
KC_API int kc_graph_key(const kc_graph_desc *d, kc_key *out, kc_key_builder **kb_out);

/**
 * Evaluate an expression with symbol values (names[i] = values[i]).  KC_EEXPR on error; a
 * device fact (device_sm_count, …) not among `names` is an error here (no device is bound).
 */
KC_API int kc_expr_eval(const char *expr, const char *const *names, const int64_t *values, size_t n, int64_t *out);

/** Where kc_graph_get found a graph. */
typedef enum kc_graph_source {
    KC_FROM_MEMORY = 0,
    KC_FROM_DISK = 1,
    KC_FROM_REMOTE = 2,
    KC_FROM_COMPILE = 3,
    KC_FROM_BYPASS = 4
} kc_graph_source;

/** Version of kc_graph_info this build fills. */
#define KC_GRAPH_INFO_VERSION 1

/**
 * What happened in kc_graph_get or kc_graph_compile.  The caller's: initialise it with
 * KC_GRAPH_INFO_INIT (its `version` set); kcache fills only the fields of that version and
 * refuses another (0 included: never initialised) with KC_EVERSION before doing anything
 * ([Note: versioned structs] in src/common/api.h).  A field added later comes with a new version.
 */
typedef struct kc_graph_info {
    unsigned version; /**< KC_GRAPH_INFO_VERSION, set by the caller (kept by kcache). */
    kc_graph_source source;
    char variant[32]; /**< The variant used ("sm_90", "compute_80"). */
    char key[KC_KEY_HEX_LEN + 1];
    char miss_reason[160]; /**< Why it was not a hit ("" on a hit). */
    double key_us, lookup_us, compile_ms, load_us, total_us;
    int kernels;
    /** KC_OK, or the status of the failed put when a graph this call compiled could not be
     *  stored (full disk, read-only cache); its message is kc_error_last() right after the
     *  call.  The call itself still succeeds: a cache error costs the next process a compile. */
    int store_status;
    /** Compile units of the graph for this variant (one NVRTC program each), and how many of
     *  them this call compiled; the others were found stored ([Note: two levels]).  Both 0
     *  when the lookup compiled nothing at all (a hit). */
    int units, units_compiled;
    /** On a disk or remote hit: the compile time it avoided — the wall-clock time its entry's
     *  compile took where it was made (ORIGIN "compile_wall_us": parallel units once, units found
     *  stored nothing).  0 on a memory hit (this process loaded it already), on a hit that took the
     *  entry of another's compile it raced (miss_reason says so; stats: compile_waits), on a miss,
     *  and for an entry that records no wall time (written before it was recorded). */
    double saved_ms;
} kc_graph_info;

/** Initialiser of a kc_graph_info: this version, every other field 0 or "". */
#define KC_GRAPH_INFO_INIT \
    { KC_GRAPH_INFO_VERSION, KC_FROM_MEMORY, "", "", "", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

typedef struct kc_graph kc_graph;

/** A tensor on the device: data pointer, dtype, sizes and strides (in elements). Borrowed. */
typedef struct kc_tensor {
    void *data;
    kc_dtype dtype;
    int rank;
    int64_t sizes[KC_MAX_RANK];
    int64_t strides[KC_MAX_RANK];
} kc_tensor;

/** Initialiser of a kc_tensor (no data, rank 0).  A fixed layout: callers pass arrays of them, so a
 *  field added would be a new type, never a change of this one. */
#define KC_TENSOR_INIT                                                              \
    {                                                                               \
        NULL, KC_DTYPE_F32, 0, {0, 0, 0, 0, 0, 0, 0, 0}, { 0, 0, 0, 0, 0, 0, 0, 0 } \
    }

/**
 * How forward/backward allocate outputs, saved tensors, gradients and scratch.  NULL means
 * the driver's stream-ordered allocator (cuMemAllocAsync / cuMemFreeAsync on the stream).
 */
typedef struct kc_allocator {
    void *(*alloc)(void *ctx, size_t bytes, void *stream);
    void (*free)(void *ctx, void *ptr, void *stream);
    void *ctx;
} kc_allocator;

/** Initialiser of a kc_allocator: every pointer NULL (fill all three; a NULL allocator is the driver's). */
#define KC_ALLOCATOR_INIT \
    { NULL, NULL, NULL }

/**
 * What forward keeps for backward: saved tensors (owned, freed with kc_saved_free), the
 * bound symbols, and the forward's inputs and outputs (borrowed: the caller keeps them
 * alive until backward has run).
 */
typedef struct kc_saved kc_saved;

/** The caller's Philox RNG state; see the philox wrapper below. */
typedef struct kc_rng_state kc_rng_state;

/**
 * Ensure `target` ("sm_90", "compute_80") is compiled and stored for the description,
 * without a GPU: a hit if present, else compile (kernels in parallel) and store.  Bypassed
 * (not stored, KC_OK with info->source == KC_FROM_BYPASS) when a source is not cacheable.
 */
KC_API int kc_graph_compile(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info);

/**
 * Get the graph loaded on `device`: memory, then the cache directory (variant chosen per
 * [Note: variant selection]), else compile for the device and store.  A variant the driver
 * refuses is counted and treated as a miss.  KC_ENODRIVER without a driver.
 * `*out` is reference-counted and shared: release it with kc_graph_release.
 */
KC_API int kc_graph_get(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info);

/** Release a graph from kc_graph_get; accepts NULL. */
KC_API void kc_graph_release(kc_graph *g);

/**
 * The process's loaded graphs ([Note: loaded graphs] in src/graph/loaded.c): a graph stays
 * loaded after its last user released it, so that the next lookup is a memory hit, until the
 * table holds more than `max_graphs` graphs or `max_bytes` bytes of images; then the least
 * recently used released graphs are unloaded (a later lookup loads them again from the cache).
 * A graph in use is never unloaded, so the table can stand above its budget while its graphs
 * are held.  Defaults: KCACHE_LOADED_GRAPHS (512) and KCACHE_LOADED_BYTES (1 GiB); 0 keeps no
 * released graph loaded.  Applies at once (unloading what is over).  Thread-safe.
 */
KC_API void kc_graph_loaded_budget(size_t max_graphs, size_t max_bytes);

/**
 * The loaded-graph budget now (what kc_graph_loaded_budget last set, else the environment's or the
 * default), into `max_graphs` and `max_bytes` (either may be NULL), so that a caller — a test, a
 * phase that needs more room — can read it and put it back: kc_graph_loaded_budget(g, b) restores it.
 */
KC_API void kc_graph_loaded_budget_get(size_t *max_graphs, size_t *max_bytes);

/** Version of kc_loaded_stats this build fills. */
#define KC_LOADED_STATS_VERSION 1

/** The loaded-graph table now.  Initialise with KC_LOADED_STATS_INIT ([Note: versioned structs]). */
typedef struct kc_loaded_stats {
    unsigned version;             /**< KC_LOADED_STATS_VERSION, set by the caller (kept). */
    size_t graphs;                /**< loaded, in use or not */
    size_t bytes;                 /**< bytes of their images */
    size_t in_use;                /**< held by a caller (a kc_graph_get not yet released, or a kc_saved) */
    size_t unreferenced;          /**< loaded and held by no one (graphs - in_use): what the budget may unload, least
                              recently used first; a runtime checking for leaks expects it to be graphs after
                              releasing everything */
    size_t max_graphs, max_bytes; /**< the budget (kc_graph_loaded_budget_get) */
    unsigned long long unloads;   /**< graphs unloaded to hold the budget, since the process started */
} kc_loaded_stats;

/** Initialiser of a kc_loaded_stats: this version, every count 0. */
#define KC_LOADED_STATS_INIT \
    { KC_LOADED_STATS_VERSION, 0, 0, 0, 0, 0, 0, 0 }

/** A snapshot of the loaded-graph table.  KC_EINVAL for NULL, KC_EVERSION for a version this build does
 *  not know (`out` then untouched). */
KC_API int kc_graph_loaded_stats(kc_loaded_stats *out);

/**
 * The forward input that forward output `output` of a loaded graph is (kc_graph_set_alias),
 * or -1 when it is allocated (or there is no such output).  An aliased output is handed back
 * as the caller's input: a runtime releasing outputs skips it.
 */
KC_API int kc_graph_output_alias(const kc_graph *g, size_t output);

/** The function handle of kernel `i` of a loaded graph (for a runtime's own launches). */
KC_API int kc_graph_function(const kc_graph *g, int i, void **fn_out);

/**
 * Run the forward pass on `stream` (a CUstream; NULL: the default stream).  Binds the
 * symbols from the inputs' shapes (and checks them), allocates outputs (filled into
 * `outputs`, the caller's to free with the same allocator; an aliased output is the input it
 * aliases, never allocated and not to be freed: kc_graph_output_alias), saved tensors and scratch,
 * and launches every step.  `saved` (may be NULL when no backward will run) receives what
 * backward needs.  The post-compile wrappers recorded with the graph wrap this call.
 */
KC_API int kc_graph_forward(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs, size_t noutputs,
                            kc_saved **saved, void *stream, const kc_allocator *alloc);

/** kc_graph_forward with the caller's RNG state, for graphs recorded with the philox wrapper. */
KC_API int kc_graph_forward_rng(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs,
                                size_t noutputs, kc_saved **saved, void *stream, const kc_allocator *alloc,
                                kc_rng_state *rng);

/**
 * kc_graph_forward_rng with the values of the graph's runtime arguments (kc_graph_add_arg):
 * `args[i]` for the i-th declared argument, `nargs` of them.  KC_EINVAL, naming the argument,
 * when the count or a value's type differs from the declaration; a graph that declares
 * runtime arguments called through kc_graph_forward (no values) is KC_EINVAL too.  `rng`
 * may be NULL; the values are copied into `saved` for backward.
 */
KC_API int kc_graph_forward_args(kc_graph *g, const kc_tensor *inputs, size_t ninputs, kc_tensor *outputs,
                                 size_t noutputs, kc_saved **saved, void *stream, const kc_allocator *alloc,
                                 kc_rng_state *rng, const kc_value *args, size_t nargs);

/**
 * Run the backward pass: `grad_outputs` (one per forward output) in, `grad_inputs` (one per
 * forward input, allocated here; the caller frees them) out — except an accumulating gradient
 * (kc_graph_set_grad_accumulate), which the caller fills in (its buffer, dtype, rank, sizes
 * and strides) and backward adds into.  Runtime arguments take the values the forward was
 * called with.
 */
KC_API int kc_graph_backward(kc_graph *g, kc_saved *saved, const kc_tensor *grad_outputs, size_t n,
                             kc_tensor *grad_inputs, size_t ninputs, void *stream);

/**
 * kc_graph_backward with its own values of the runtime arguments (checked as in
 * kc_graph_forward_args); `args` NULL and `nargs` 0: the forward's values.
 */
KC_API int kc_graph_backward_args(kc_graph *g, kc_saved *saved, const kc_tensor *grad_outputs, size_t n,
                                  kc_tensor *grad_inputs, size_t ninputs, void *stream, const kc_value *args,
                                  size_t nargs);

/** Version of kc_graph_call described here. */
#define KC_GRAPH_CALL_VERSION 1

/**
 * One call of a pass, for kc_graph_forward_call and kc_graph_backward_call: the arguments of
 * kc_graph_forward_args and kc_graph_backward_args as one struct, which can grow (`version`).
 * Forward: `inputs` in, `outputs` allocated (as kc_graph_forward).  Backward: `inputs` are the
 * gradients of the forward's outputs and `outputs` receive the gradients of its inputs (as
 * kc_graph_backward); `alloc` and `rng` are the forward's and must be NULL.  `args`/`nargs`: the
 * runtime arguments' values (NULL and 0: none, or for backward the forward's).
 */
typedef struct kc_graph_call {
    unsigned version;        /**< KC_GRAPH_CALL_VERSION */
    const kc_tensor *inputs; /**< The pass's inputs; borrowed for the call. */
    size_t ninputs;
    kc_tensor *outputs; /**< The pass's outputs, filled in. */
    size_t noutputs;
    void *stream;              /**< A CUstream; NULL: the default stream. */
    const kc_allocator *alloc; /**< Forward: the allocator of outputs, saved tensors and scratch; NULL: the default. */
    kc_rng_state *rng;         /**< Forward: the RNG state (the philox wrapper); NULL: none. */
    const kc_value *args;      /**< The runtime arguments' values, in declaration order. */
    size_t nargs;
} kc_graph_call;

/** Initialiser of a kc_graph_call (no tensors, default stream and allocator, no arguments). */
#define KC_GRAPH_CALL_INIT \
    { KC_GRAPH_CALL_VERSION, NULL, 0, NULL, 0, NULL, NULL, NULL, NULL, 0 }

/** The forward pass of `call` (kc_graph_forward_args); `saved` as there.  KC_EVERSION for an
 *  unknown call version. */
KC_API int kc_graph_forward_call(kc_graph *g, const kc_graph_call *call, kc_saved **saved);

/** The backward pass of `call` over what `saved` holds (kc_graph_backward_args). */
KC_API int kc_graph_backward_call(kc_graph *g, kc_saved *saved, const kc_graph_call *call);

/** Free what forward saved (through the allocator it used, on `stream`); accepts NULL. */
KC_API void kc_saved_free(kc_saved *s, void *stream);

/** Free a tensor's data that kcache allocated with `alloc` (NULL: the default).  Never pass an
 *  aliased output (kc_graph_output_alias) or an accumulating gradient: they are the caller's. */
KC_API void kc_tensor_release(kc_tensor *t, void *stream, const kc_allocator *alloc);

/* ---- post-compile wrappers ---- */

/** The arguments of one forward call, as a wrapper sees them. */
typedef struct kc_forward_call {
    kc_graph *graph;
    const kc_tensor *inputs;
    size_t ninputs;
    kc_tensor *outputs;
    size_t noutputs;
    kc_saved **saved;
    void *stream;
    const kc_allocator *alloc;
    kc_rng_state *rng;                   /**< The caller's RNG state (for the philox wrapper), or NULL. */
    uint64_t philox_seed, philox_offset; /**< Set by the philox wrapper; read by "philox_seed"/"philox_offset" args. */
    int philox_set;
    const kc_value *args; /**< The runtime arguments' values, in declaration order (borrowed). */
    size_t nargs;         /**< How many (the graph's declared count; checked before the chain). */
} kc_forward_call;

/** Initialiser of a kc_forward_call (for a wrapper that builds one for its inner callable). */
#define KC_FORWARD_CALL_INIT \
    { NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, 0 }

/**
 * A Philox RNG state owned by the caller.  The built-in "philox" wrapper (version 1) gives
 * each forward call the current seed and offset — kernels receive them through the
 * arguments "philox_seed" and "philox_offset" (uint64) — and then advances the offset by
 * the increment recorded with the wrapper (its parameters: the increment in decimal).
 * The caller serialises calls that share one state.
 */
struct kc_rng_state {
    uint64_t seed, offset;
};

/** Initialiser of a kc_rng_state (seed and offset 0).  Fixed: a Philox state is these two words. */
#define KC_RNG_STATE_INIT \
    { 0, 0 }

/** A forward callable: the graph's own launches, or a wrapper around another callable. */
typedef struct kc_callable {
    int (*call)(void *ctx, kc_forward_call *c);
    void *ctx;
} kc_callable;

/** Initialiser of a kc_callable (NULL). */
#define KC_CALLABLE_INIT \
    { NULL, NULL }

/** A post-compile wrapper: turns one callable into another (AOTAutograd's wrappers). */
typedef struct kc_wrapper {
    const char *name;
    uint32_t version;
    /** Build `out` around `inner` with the parameters recorded in the entry. */
    int (*wrap)(const kc_callable *inner, const void *params, size_t len, kc_callable *out);
    /** Free what wrap made (may be NULL). */
    void (*unwrap)(kc_callable *c);
} kc_wrapper;

/** Initialiser of a kc_wrapper (`version` here is the wrapper's own, recorded in entries). */
#define KC_WRAPPER_INIT \
    { NULL, 0, NULL, NULL }

/** Register a wrapper (copied; the name is copied).  The same name and version replaces. */
KC_API int kc_wrapper_register(const kc_wrapper *w);

/** Remove a registered wrapper; KC_MISS when it was not registered. */
KC_API int kc_wrapper_unregister(const char *name, uint32_t version);

typedef struct kc_wrapper_chain kc_wrapper_chain;

/**
 * Rebuild an entry's recorded wrapper chain around `base`, in the recorded order (the
 * first recorded wraps `base`, the last is outermost).  KC_EUNREGISTERED, naming it, when a
 * recorded wrapper (name and version) is not registered.  Free with kc_wrapper_chain_free;
 * `*out` is NULL on failure.
 */
KC_API int kc_wrapper_chain_build(kc_wrapper_chain **out, const kc_entry *e, const kc_callable *base);

/** Call the outermost callable of a chain. */
KC_API int kc_wrapper_chain_call(kc_wrapper_chain *chain, kc_forward_call *c);

/** Free a chain; accepts NULL. */
KC_API void kc_wrapper_chain_free(kc_wrapper_chain *chain);

/* ---- explain ---- */

/** Most digests an explanation lists. */
#define KC_EXPLAIN_MAX 128

/** One named digest. */
typedef struct kc_explain_digest {
    char name[64];
    char digest[KC_KEY_HEX_LEN + 1];
} kc_explain_digest;

/** Version of kc_explain this build fills. */
#define KC_EXPLAIN_VERSION 1

/** Why a lookup hits or misses (kc_graph_explain).  Large: allocate it, don't put it on a small stack;
 *  set `version` to KC_EXPLAIN_VERSION (or copy KC_EXPLAIN_INIT into it) before the call. */
typedef struct kc_explain {
    unsigned version; /**< KC_EXPLAIN_VERSION, set by the caller (kept). */
    char key[KC_KEY_HEX_LEN + 1];
    char variant[32];
    int hit; /**< 1 when key.variant is stored and every image it refers to is there. */
    size_t ndigests;
    kc_explain_digest digests[KC_EXPLAIN_MAX]; /**< This lookup's components, then finer digests. */
    int have_nearest;                          /**< On a miss: a stored entry was compared. */
    char nearest[80];                          /**< Its "<key>.<variant>". */
    int nearest_shares_graph;                  /**< It has the same graph component. */
    size_t ndiffs;
    char diffs[KC_EXPLAIN_MAX][64]; /**< Names that differ: "arch", "options", "inputs[0].sizes", … */
} kc_explain;

/** Initialiser of a kc_explain: this version, nothing found. */
#define KC_EXPLAIN_INIT                                                   \
    {                                                                     \
        KC_EXPLAIN_VERSION, "", "", 0, 0, {{"", ""}}, 0, "", 0, 0, { "" } \
    }

/**
 * Explain a lookup of `d` for `variant`: the key, every digest, whether it hits, and on a
 * miss the stored entry nearest to it — one with the same key (then only "arch" differs),
 * else one sharing the graph component, else the one with the most equal components — and
 * the names of the components and finer digests that differ.  Reads the cache without
 * counting or refreshing anything.
 */
KC_API int kc_graph_explain(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_explain *out);

/** Extract every stored image of an entry into `dir` as <kernel>.<variant>.cubin / .ptx. */
KC_API int kc_entry_extract(const kc_entry *e, const char *dir, int *count);

/**
 * Fetch every image a graph entry refers to (the local directory, then the remote tier in one
 * round trip), check each against its reference (XXH3-128 always; SHA-256 for what came from
 * the remote) and attach it to `e` ([Note: two levels] in kcache/entry.h), so that
 * kc_entry_extract and loading can read it.  KC_MISS naming the first image that is missing or
 * failed its checks; KC_ECORRUPT for a malformed entry.  A maintenance read, not a use: it
 * counts nothing and leaves the images' LRU times (a lookup's own fetch refreshes them).
 */
KC_API int kc_entry_resolve(kc_cache *c, kc_entry *e);

/** Visit the kernels of an entry's KERNELS section: name, lowered name, target, image size. */
typedef void (*kc_kernel_visit_cb)(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes,
                                   void *ctx);
KC_API int kc_entry_kernels(const kc_entry *e, kc_kernel_visit_cb cb, void *ctx);

/** One kernel parameter as the compiler laid it out (an entry's PARAMS section). */
typedef struct kc_param_info {
    unsigned offset; /**< bytes into the parameter buffer */
    unsigned size;   /**< bytes */
    unsigned align;  /**< declared alignment (PTX); 0 when the image does not record it (cubin) */
    const char *cls; /**< "int", "float", "bytes" (a struct or half by value), or "any" (cubin: unknown) */
} kc_param_info;

/** Called once per kernel with its parameters (borrowed for the call). */
typedef void (*kc_param_visit_cb)(const char *name, const char *lowered, const kc_param_info *params, size_t n,
                                  void *ctx);

/**
 * Visit the parameter table of each kernel of an entry, in KERNELS order: what every launch
 * step was checked against when the graph was compiled, and is checked against again at load.
 * KC_ECORRUPT when the entry has no well-formed PARAMS section.
 */
KC_API int kc_entry_params(const kc_entry *e, kc_param_visit_cb cb, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
