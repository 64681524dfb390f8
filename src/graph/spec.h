/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec.h — what the spec reader's files share (spec.c, spec_read.c, spec_pass.c): one load's context, the error
 * that names the file and the place, and the field readers.  Nothing outside the three includes it.
 */
#ifndef KC_SPEC_H
#define KC_SPEC_H

#include <limits.h>
#include <stddef.h>

#include "../common/json.h"
#include "../common/internal.h"
#include "graph_internal.h"
#include "program.h"

#define SPEC_MAX_BYTES (16u << 20)
/* Caps on the spec's arrays, checked before an array is walked (each walk is linear, with
 * KC_JSON_EACH: kc_json_at(i) walks from the start, which made loading
 * quadratic).  desc.c enforces the exact limits of the launch program as pieces are added;
 * these only keep a hostile spec from costing more than a linear pass. */
#define SPEC_MAX_ITEMS 4096 /* kernels' headers and options, tensors, scratch, steps */
#define SPEC_MAX_ARGS 256   /* a step's arguments: the launch program's limit (program.c) */
#define SPEC_MAX_WRAPPERS 64

#define SPEC_FILES_KEPT 64

/* A file the spec names, read once per load: every kernel that names it gets the same bytes. */
typedef struct spec_file {
    char *name, *data;
    size_t len;
} spec_file;

typedef struct sctx {
    const char *path;
    char dir[PATH_MAX];  /* the spec's folder as named (messages) */
    char rdir[PATH_MAX]; /* ...as read through (a vouched description's first-need read: absolute) */
    kc_graph_desc *d;
    spec_file files[SPEC_FILES_KEPT];
    int nfiles;
    kc_spec_direct *sd; /* records every file read ([Note: spec direct mode]); may be NULL */
} sctx;

#define SPEC_ERR(s, where, ...) kc_spec_err((s), (where), __VA_ARGS__)

/* ---- spec_read.c: files, errors, fields (callers: spec.c, spec_pass.c) ---- */

/** KC_EINVAL: "<spec path>: <where>: <message>". */
int kc_spec_err(sctx *s, const char *where, const char *fmt, ...) KC_PRINTF(3, 4);
/** Forget the files read beside the spec in this load. */
void kc_spec_files_free(sctx *s);
/** Read `path` whole (kc_fs_read_input), its stat taken before and after and the open file's for sd ([Note: spec direct mode];
 *  rel NULL: the spec itself). */
int kc_spec_read_file(kc_spec_direct *sd, const char *rel, const char *path, void **data, size_t *len);
/** A file named in the spec, read beside it (relative, inside its folder; once per load), into *out (owned). */
int kc_spec_read_beside(sctx *s, const char *where, const char *name, char **out);
/** The length of array `a`, or an error at `where` when it has more than `max` items. */
int kc_spec_array_len(sctx *s, const char *where, const kc_json *a, int max, int *n);
/** Every field of object `o` is one of `known` (NULL-terminated), and none appears twice. */
int kc_spec_known_fields(sctx *s, const char *where, const kc_json *o, const char *const *known);
/** A string field's text, or NULL. */
const char *kc_spec_str(const kc_json *o, const char *name);
/** An expression field (a string, or an integer number written into buf); *out NULL on error. */
int kc_spec_expr_of(sctx *s, const char *where, const kc_json *v, char buf[64], const char **out);
/** kc_spec_expr_of at the place "<base><mid>[i]" (the name built only for the error). */
int kc_spec_expr_at(sctx *s, const char *base, const char *mid, int i, const kc_json *v, char buf[64],
                    const char **out);
/** A boolean field: *out unchanged when absent; an error when not true/false. */
int kc_spec_bool(sctx *s, const char *where, const kc_json *o, const char *name, int *out);
/** A tensor reference "ROLE:I" (the roles' spellings: args.c's table). */
int kc_spec_ref(sctx *s, const char *where, const char *ref, kc_tensor_role *role, size_t *index);
/** A tensor's sizes (at most KC_MAX_RANK expressions). */
int kc_spec_dims(sctx *s, const char *where, const kc_json *arr, const char **dims, char bufs[][64], int *rank);

/* ---- spec_pass.c (caller: spec.c) ---- */

/** The pass `field` ("forward", "backward"): its scratch buffers, kernel steps and zero steps. */
int kc_spec_load_pass(sctx *s, const kc_json *root, const char *field, kc_pass pass, char **kernel_ids, int nk);

#endif
