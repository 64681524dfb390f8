/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h — the one strict JSON reader for every JSON file kcache is given (graph specs,
 * manifests): one parse into a read-only tree whose nodes and strings live in a few blocks of one
 * document, freed at once.  A member name twice in one object, at any depth, is an error, as are
 * a number out of a double's range, a \u0000 or a lone surrogate, and anything after the value.
 *
 * The one idea: a spec is read once, walked once and dropped, so the tree is allocated as an
 * arena (a spec of a few hundred bytes is 1 allocation, where a tree of one allocation per value
 * and per name cost a warm start more than the rest of the spec's loading; [Note: spec JSON] in
 * json.c).
 *
 * Callers: src/graph/spec.c, src/prewarm/manifest.c.  Must not: keep anything of the text it parses (the tree has its
 * own copies), or accept what RFC 8259 does not (see json.c for the few choices made).
 */
#ifndef KC_JSON_H
#define KC_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef enum kc_json_type {
    KC_JSON_NULL = 1,
    KC_JSON_FALSE,
    KC_JSON_TRUE,
    KC_JSON_NUMBER,
    KC_JSON_STRING,
    KC_JSON_ARRAY,
    KC_JSON_OBJECT,
} kc_json_type;

/* One value.  An array's or object's values are child, child->next, …, in the text's order. */
typedef struct kc_json kc_json;
struct kc_json {
    kc_json *next;   /* the next value of the same array or object */
    kc_json *child;  /* the first value of an array or object, else NULL */
    const char *key; /* an object's member: its name (NUL-terminated, owned by the document); else NULL */
    const char *str; /* a string: its value (NUL-terminated, no NUL inside); else NULL */
    double num;      /* a number: its value (as strtod reads it in the C locale; always finite) */
    uint32_t count;  /* an array's or object's number of values */
    uint32_t at;     /* the offset of the value's first byte in the text (for errors: kc_json_fail) */
    uint32_t key_at; /* an object's member: the offset of its name's opening quote; else 0 */
    uint8_t type;    /* a kc_json_type */
};

/** The largest text kc_json_read reads (its callers cap theirs lower); nesting past KC_JSON_DEPTH_MAX
 * arrays and objects is refused too, so a hostile file can exhaust neither memory nor the stack. */
#define KC_JSON_MAX_BYTES (64u << 20)
#define KC_JSON_DEPTH_MAX 1000

/** Why a parse failed: `at` the offset in the text, `what` the message after "FILE:LINE:COL: ". */
typedef struct kc_json_err {
    size_t at;
    char what[512];
} kc_json_err;

typedef struct kc_json_block kc_json_block;

/* A parsed document: root and every node and string it holds; kc_json_free releases them. */
typedef struct kc_json_doc {
    kc_json *root;
    kc_json_block *blocks;
    kc_json_block *lent; /* the first block when it lies in the caller's scratch (never freed) */
} kc_json_doc;

/**
 * Parse text[0, len) (NUL bytes inside are an error; text need not be NUL-terminated) as one
 * JSON value with only whitespace around it (a UTF-8 byte order mark before it is skipped).
 * KC_OK with doc->root; KC_EINVAL when it is not valid JSON, when an object names a member twice,
 * or when it is over KC_JSON_MAX_BYTES or nested too deep, with *err (may be NULL) saying where
 * and why and no error recorded (the caller names its file: kc_json_fail); KC_ENOMEM (recorded).
 * On failure doc holds nothing to free.
 */
int kc_json_read(kc_json_doc *doc, const char *text, size_t len, kc_json_err *err);
/** kc_json_read saying only where it failed: *err_at (may be NULL) the offset, 0 on success. */
int kc_json_parse(kc_json_doc *doc, const char *text, size_t len, size_t *err_at);
/**
 * kc_json_read with the first block in scratch[0, cap) when it fits there (a spec of a few
 * hundred bytes: no allocation at all); scratch must outlive the document.  Anything else as
 * kc_json_read.
 */
int kc_json_parse_in(kc_json_doc *doc, const char *text, size_t len, kc_json_err *err, void *scratch, size_t cap);
/** Release a document (a zeroed or failed one too). */
void kc_json_free(kc_json_doc *doc);

/** The line and column (1-based, in bytes) of offset `at` of text[0, len). */
void kc_json_place(const char *text, size_t len, size_t at, int *line, int *col);
/**
 * Record KC_EINVAL as "ORIGIN:LINE:COL: WHAT…" (`at` an offset of text[0, len), the rest printf's)
 * and return KC_EINVAL: every error about a JSON file says the file and the place the same way.
 */
int kc_json_fail(const char *origin, const char *text, size_t len, size_t at, const char *fmt, ...) KC_PRINTF(5, 6);
/** kc_json_read's error `e` recorded as kc_json_fail does; KC_EINVAL. */
int kc_json_fail_parse(const char *origin, const char *text, size_t len, const kc_json_err *e);
/** A member name or string as printed in a message: at most 64 bytes of it, a control byte, a quote
 * or a backslash as JSON escapes it (\n, \u001b, \"), so a hostile name cannot forge a line. */
const char *kc_json_printable(const char *s, char out[400]);

/** The first member of object `o` named `name`, or NULL (also when `o` is NULL or not an object). */
const kc_json *kc_json_get(const kc_json *o, const char *name);
/** The i-th value of array or object `a`, or NULL. */
const kc_json *kc_json_at(const kc_json *a, size_t i);

static inline int kc_json_is(const kc_json *v, kc_json_type t) { return v && v->type == (uint8_t)t; }
static inline int kc_json_is_bool(const kc_json *v) {
    return kc_json_is(v, KC_JSON_TRUE) || kc_json_is(v, KC_JSON_FALSE);
}
/** For each value x of array or object a (none when a is NULL or neither). */
#define KC_JSON_EACH(x, a) for ((x) = (a) ? (a)->child : NULL; (x) != NULL; (x) = (x)->next)

/** Its string value when `v` is a string, else NULL. */
static inline const char *kc_json_str(const kc_json *v) { return kc_json_is(v, KC_JSON_STRING) ? v->str : NULL; }
/** The number of values of an array or object; 0 for anything else and for NULL. */
static inline size_t kc_json_count(const kc_json *v) { return v ? v->count : 0; }

#endif
