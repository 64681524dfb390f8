/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/key.h — canonical cache keys.
 *
 * A key is XXH3-128 over an ordered list of named components (format, graph, inputs,
 * options, toolchain, backend, globals, hooks, extra).  Each component is hashed on its
 * own from a canonical byte encoding — every value is written little-endian with an
 * explicit tag and length, never as a struct with padding — so that the same inputs give
 * the same key on every host and in every process, and so that "why did this miss?" has
 * an answer: the component digests are stored with each entry and compared later.
 *
 * Finer digests ("inputs[0].sizes", "inputs[0].dtype", …) are recorded beside the
 * components; they do not enter the key a second time but let `kcache explain` name the
 * field that changed.
 *
 * Symbolic sizes are named by their source ("input 0, dim 0") and get a stable id: a hash
 * of that name, with linear probing on collision — never an allocation counter — so that
 * marking one more dimension dynamic does not renumber the others.
 *
 * A kc_key_builder is not thread-safe: build a key on one thread.  A finished kc_key is a
 * plain value.
 */
#ifndef KCACHE_KEY_H
#define KCACHE_KEY_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A finished cache key: 16 bytes, compared with memcmp. */
typedef struct kc_key {
    uint8_t bytes[16];
} kc_key;

/** Initialiser of a kc_key (all zero bytes: no key kcache makes). */
#define KC_KEY_INIT \
    {               \
        { 0 }       \
    }

/** Length of a key in hex, without the terminating NUL. */
#define KC_KEY_HEX_LEN 32

/** A component digest (XXH3-128), big-endian bytes as printed. */
typedef struct kc_digest {
    uint8_t bytes[16];
} kc_digest;

/** The components of a key, hashed in this order.  Values are part of the format. */
typedef enum kc_component {
    KC_COMP_FORMAT = 0,    /**< Entry format version (set by kcache). */
    KC_COMP_GRAPH = 1,     /**< Kernel sources, headers, entry names, launch program. */
    KC_COMP_INPUTS = 2,    /**< Per input tensor: dtype, rank, sizes, strides, device, grad. */
    KC_COMP_OPTIONS = 3,   /**< Normalised compile options. */
    KC_COMP_TOOLCHAIN = 4, /**< Compiler identity (NVRTC version and build). */
    KC_COMP_BACKEND = 5,   /**< Backend id: a graph for one backend never serves another. */
    KC_COMP_GLOBALS = 6,   /**< Global state the caller declares (grad mode, autocast…). */
    KC_COMP_HOOKS = 7,     /**< Saved-tensor hook graphs. */
    KC_COMP_EXTRA = 8,     /**< Anything else the caller wants in the key. */
    KC_COMP_COUNT = 9
} kc_component;

/** Element types of tensors.  Values are part of the key format. */
typedef enum kc_dtype {
    KC_DTYPE_F32 = 1,
    KC_DTYPE_F16 = 2,
    KC_DTYPE_BF16 = 3,
    KC_DTYPE_F64 = 4,
    KC_DTYPE_I32 = 5,
    KC_DTYPE_I64 = 6,
    KC_DTYPE_I8 = 7,
    KC_DTYPE_U8 = 8,
    KC_DTYPE_BOOL = 9,
    KC_DTYPE_F8E4M3 = 10,
    KC_DTYPE_F8E5M2 = 11
} kc_dtype;

/** Device types of tensors.  Values are part of the key format. */
typedef enum kc_device_type { KC_DEVICE_CPU = 1, KC_DEVICE_CUDA = 2 } kc_device_type;

/** Largest tensor rank kcache describes. */
#define KC_MAX_RANK 8

/**
 * A dimension: either static (sym == NULL, value used) or symbolic (sym names its source,
 * e.g. "input 0, dim 0"; value ignored).
 */
typedef struct kc_dim {
    int64_t value;
    const char *sym;
} kc_dim;

/** Initialiser of a kc_dim (static, 0). */
#define KC_DIM_INIT \
    { 0, NULL }

/** Metadata of one input tensor.  Borrowed: kcache copies what it needs. */
typedef struct kc_tensor_meta {
    kc_dtype dtype;
    kc_device_type device;
    int rank; /**< 0..KC_MAX_RANK */
    kc_dim sizes[KC_MAX_RANK];
    kc_dim strides[KC_MAX_RANK]; /**< In elements. */
    int requires_grad;           /**< 0 or 1 */
} kc_tensor_meta;

/** Initialiser of a kc_tensor_meta (an f32 CUDA tensor of rank 0).  A fixed layout: callers pass arrays of
 *  them, so a field added would be a new type, never a change of this one. */
#define KC_TENSOR_META_INIT                                                                                           \
    {                                                                                                                 \
        KC_DTYPE_F32, KC_DEVICE_CUDA, 0,                                                                              \
            {KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT}, \
            {KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT, KC_DIM_INIT}, \
            0                                                                                                         \
    }

typedef struct kc_key_builder kc_key_builder;

/** Start a key.  The format component is filled in by kcache.  Free with kc_key_builder_free. */
KC_API int kc_key_builder_new(kc_key_builder **out);

/** Free a builder; accepts NULL. */
KC_API void kc_key_builder_free(kc_key_builder *kb);

/**
 * Append labelled bytes to a component.  The label and the length are part of the hash,
 * so ("a","bc") and ("ab","c") differ.  `label` must be non-NULL; `data` may be NULL when
 * `len` is 0.
 */
KC_API int kc_key_add_bytes(kc_key_builder *kb, kc_component comp, const char *label, const void *data, size_t len);

/** Append a labelled NUL-terminated string to a component. */
KC_API int kc_key_add_string(kc_key_builder *kb, kc_component comp, const char *label, const char *str);

/** Append a labelled unsigned integer (encoded as 8 bytes little-endian). */
KC_API int kc_key_add_u64(kc_key_builder *kb, kc_component comp, const char *label, uint64_t value);

/**
 * Append one input tensor to KC_COMP_INPUTS, as the next input (0, 1, …).  Symbolic
 * dimensions are replaced by their stable symbol id.  Also records the finer digests
 * "inputs[i].dtype", ".device", ".rank", ".sizes", ".strides", ".requires_grad".
 */
KC_API int kc_key_add_tensor(kc_key_builder *kb, const kc_tensor_meta *t);

/**
 * Record a finer digest named `name` (e.g. "kernels[0].source") beside the components.  It
 * does not change the key — the bytes must also be added to a component — but it is
 * stored with entries so that `kcache explain` can name what changed.
 */
KC_API int kc_key_note(kc_key_builder *kb, const char *name, const void *data, size_t len);

/**
 * The stable id of a symbol named by its source.  The same name always gets the same id
 * in one builder; a new name gets hash(name), or the next free id on collision.
 */
KC_API int kc_key_symbol_id(kc_key_builder *kb, const char *source_name, uint32_t *out);

/**
 * Finish the key.  The builder stays readable (digests, debug lines) but takes no more
 * input.  Calling it again returns the same key.
 */
KC_API int kc_key_finish(kc_key_builder *kb, kc_key *out);

/** The digest of one component; valid after kc_key_finish. */
KC_API int kc_key_component_digest(const kc_key_builder *kb, kc_component comp, kc_digest *out);

/** The name of a component ("graph", "inputs", …), static; NULL when out of range. */
KC_API const char *kc_component_name(kc_component comp);

/** How many named digests (components first, then finer ones) a finished builder has. */
KC_API size_t kc_key_digest_count(const kc_key_builder *kb);

/**
 * The i-th named digest of a finished builder.  `*name_out` is borrowed from the builder
 * and lives as long as it.
 */
KC_API int kc_key_digest_at(const kc_key_builder *kb, size_t i, const char **name_out, kc_digest *out);

/**
 * Debug lines, one per component: "<name> <32 hex digest>\n", then "key <hex>\n".
 * `*out` is the caller's, freed with kc_free.
 */
KC_API int kc_key_debug(const kc_key_builder *kb, char **out);

/** Write the key as 32 lowercase hex digits and a NUL into `out` (33 bytes). */
KC_API void kc_key_to_hex(const kc_key *key, char out[KC_KEY_HEX_LEN + 1]);

/** Parse 32 hex digits (no more, no less).  KC_EINVAL otherwise. */
KC_API int kc_key_from_hex(kc_key *out, const char *hex);

/** Write a digest as 32 lowercase hex digits and a NUL. */
KC_API void kc_digest_to_hex(const kc_digest *d, char out[KC_KEY_HEX_LEN + 1]);

#ifdef __cplusplus
}
#endif
#endif
