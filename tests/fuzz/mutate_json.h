/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutate_json.h — a structure-aware mutator for the JSON documents kcache reads (graph specs,
 * manifests), shared by fuzz_spec.c and fuzz_manifest.c.
 *
 * The one idea: a byte flipped in JSON is mostly a syntax error, which the reader refuses at its
 * first check, so the mutations seldom reach what the document says.  This mutator reads the
 * input with the library's own reader (src/common/json.c), copies it into a small tree it may
 * change, changes one value — a string's bytes (libFuzzer's mutation) or a token the format uses
 * in its place, a number among edge values (some beyond a double, written as text), a value's
 * type, an array element or an object member dropped, doubled (a name given twice), moved,
 * renamed or added (a name the format knows, or one it does not) — and prints it again, always
 * well formed.  One time in eight (and whenever the input is not JSON the reader takes) the bytes
 * are mutated raw, so the reader's syntax checks are fuzzed too.  `tokens` are strings the format
 * gives meaning to (the target's own).
 * Must not: write past `max`; fail (it always returns a size).
 */
#ifndef KCACHE_FUZZ_MUTATE_JSON_H
#define KCACHE_FUZZ_MUTATE_JSON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "mutate_entry.h" /* fz_rand, LLVMFuzzerMutate */

/* A value the mutator may change: its own copies of names and strings; a number as text. */
typedef struct fz_jv {
    int type;        /* a kc_json_type */
    char *key, *str; /* str: a string's bytes, or a number's text */
    struct fz_jv *kids;
    size_t n, cap;
} fz_jv;

static inline char *fz_dup(const char *s) {
    size_t l = strlen(s);
    char *c = malloc(l + 1);
    if (c) memcpy(c, s, l + 1);
    return c;
}

static inline void fz_jv_clear(fz_jv *v) {
    for (size_t i = 0; i < v->n; i++) {
        fz_jv_clear(&v->kids[i]);
        free(v->kids[i].key);
    }
    free(v->kids), free(v->str);
    v->kids = NULL, v->str = NULL, v->n = v->cap = 0;
}

/* A new child slot of v (zeroed), or NULL. */
static inline fz_jv *fz_jv_add(fz_jv *v) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        fz_jv *k = realloc(v->kids, cap * sizeof *k);
        if (!k) return NULL;
        v->kids = k, v->cap = cap;
    }
    memset(&v->kids[v->n], 0, sizeof *v->kids);
    return &v->kids[v->n++];
}

static inline void fz_jv_from(fz_jv *d, const kc_json *s) {
    char num[40];
    d->type = s->type;
    if (s->type == KC_JSON_STRING) d->str = fz_dup(s->str);
    if (s->type == KC_JSON_NUMBER) snprintf(num, sizeof num, "%.17g", s->num), d->str = fz_dup(num);
    for (const kc_json *c = s->child; c; c = c->next) {
        fz_jv *k = fz_jv_add(d);
        if (!k) return;
        if (c->key) k->key = fz_dup(c->key);
        fz_jv_from(k, c);
    }
}

static inline fz_jv fz_jv_copy(const fz_jv *s) {
    fz_jv d = {s->type, s->key ? fz_dup(s->key) : NULL, s->str ? fz_dup(s->str) : NULL, NULL, 0, 0};
    for (size_t i = 0; i < s->n; i++) {
        fz_jv *k = fz_jv_add(&d);
        if (k) *k = fz_jv_copy(&s->kids[i]);
    }
    return d;
}

static inline size_t fz_jv_list(fz_jv *v, fz_jv **all, size_t n, size_t cap) {
    if (n < cap) all[n++] = v;
    for (size_t i = 0; i < v->n; i++) n = fz_jv_list(&v->kids[i], all, n, cap);
    return n;
}

static inline void fz_json_change(fz_jv *root, fz_jv *v, uint64_t *rs, const char *const *tokens, size_t ntok) {
    static const char *const edge[] = {"0",           "1",
                                       "-1",          "2",
                                       "3",           "31",
                                       "32",          "1024",
                                       "65536",       "4294967296",
                                       "-2147483649", "1e300",
                                       "0.5",         "9007199254740993",
                                       "1e309",       "-1e999",
                                       "1E+2",        "-0",
                                       "1e-400",      "123456789012345678901234567890"};
    const size_t nedge = sizeof edge / sizeof *edge;
    const char *tok = tokens[fz_rand(rs) % ntok];
    uint32_t r = fz_rand(rs) % 9;
    if (r == 8 && v->key) { /* a member renamed (a name the format knows) */
        free(v->key);
        v->key = fz_dup(tok);
    } else if (r == 0 && v != root) { /* another type in its place */
        char *key = v->key;
        v->key = NULL;
        fz_jv_clear(v);
        v->key = key;
        switch (fz_rand(rs) % 6) {
        case 0: v->type = KC_JSON_NULL; break;
        case 1: v->type = fz_rand(rs) & 1 ? KC_JSON_TRUE : KC_JSON_FALSE; break;
        case 2: v->type = KC_JSON_NUMBER, v->str = fz_dup(edge[fz_rand(rs) % nedge]); break;
        case 3: v->type = KC_JSON_STRING, v->str = fz_dup(tok); break;
        case 4: v->type = KC_JSON_ARRAY; break;
        default: v->type = KC_JSON_OBJECT; break;
        }
        if ((v->type == KC_JSON_NUMBER || v->type == KC_JSON_STRING) && !v->str) v->type = KC_JSON_NULL;
    } else if (v->type == KC_JSON_NUMBER) {
        free(v->str);
        v->str = fz_dup(edge[fz_rand(rs) % nedge]);
        if (!v->str) v->type = KC_JSON_NULL;
    } else if (v->type == KC_JSON_STRING) {
        size_t l = strlen(v->str), cap = l * 2 + 32;
        char *b = malloc(cap + 1);
        if (!b) return;
        if (r < 4) {
            snprintf(b, cap + 1, "%s", tok);
        } else {
            memcpy(b, v->str, l);
            l = LLVMFuzzerMutate((uint8_t *)b, l, cap);
            b[l] = 0;
        }
        free(v->str);
        v->str = b;
    } else if ((v->type == KC_JSON_ARRAY || v->type == KC_JSON_OBJECT) && v->n && r < 7) {
        size_t at = fz_rand(rs) % v->n;
        if (r < 3) { /* one dropped */
            fz_jv_clear(&v->kids[at]);
            free(v->kids[at].key);
            memmove(&v->kids[at], &v->kids[at + 1], (v->n - at - 1) * sizeof *v->kids);
            v->n--;
        } else if (r < 5) { /* one doubled, at the end: in an object, a name given twice */
            fz_jv copy = fz_jv_copy(&v->kids[at]);
            fz_jv *k = fz_jv_add(v);
            if (k) *k = copy;
            else fz_jv_clear(&copy), free(copy.key);
        } else if (v->n > 1) { /* one moved to the end */
            fz_jv m = v->kids[at];
            memmove(&v->kids[at], &v->kids[at + 1], (v->n - at - 1) * sizeof *v->kids);
            v->kids[v->n - 1] = m;
        }
    } else if (v->type == KC_JSON_ARRAY || v->type == KC_JSON_OBJECT) { /* one added: a token, under a token's name */
        fz_jv *k = fz_jv_add(v);
        if (!k) return;
        k->type = KC_JSON_STRING, k->str = fz_dup(tokens[fz_rand(rs) % ntok]);
        if (v->type == KC_JSON_OBJECT) k->key = fz_dup(r == 8 ? "x-unknown" : tok);
        if (!k->str) k->type = KC_JSON_NULL;
    } else if (v->type == KC_JSON_TRUE || v->type == KC_JSON_FALSE) {
        v->type = v->type == KC_JSON_TRUE ? KC_JSON_FALSE : KC_JSON_TRUE;
    }
}

/* A growing output: the text printed so far, `over` once past `max`. */
typedef struct fz_out {
    char *b;
    size_t n, max;
    int over;
} fz_out;

static inline void fz_put(fz_out *o, const char *s, size_t l) {
    if (o->over || o->n + l > o->max) {
        o->over = 1;
        return;
    }
    memcpy(o->b + o->n, s, l);
    o->n += l;
}

static inline void fz_put_str(fz_out *o, const char *s) {
    fz_put(o, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char e[8];
        if (c == '"' || c == '\\') e[0] = '\\', e[1] = (char)c, fz_put(o, e, 2);
        else if (c < 0x20) snprintf(e, sizeof e, "\\u%04x", c), fz_put(o, e, 6);
        else fz_put(o, s, 1);
    }
    fz_put(o, "\"", 1);
}

static inline void fz_print(fz_out *o, const fz_jv *v, int lines) {
    const char *sep = lines ? ",\n " : ",";
    switch (v->type) {
    case KC_JSON_NULL: fz_put(o, "null", 4); return;
    case KC_JSON_TRUE: fz_put(o, "true", 4); return;
    case KC_JSON_FALSE: fz_put(o, "false", 5); return;
    case KC_JSON_NUMBER: fz_put(o, v->str, strlen(v->str)); return;
    case KC_JSON_STRING: fz_put_str(o, v->str); return;
    default: break;
    }
    fz_put(o, v->type == KC_JSON_ARRAY ? "[" : "{", 1);
    for (size_t i = 0; i < v->n; i++) {
        if (i) fz_put(o, sep, strlen(sep));
        if (v->type == KC_JSON_OBJECT) fz_put_str(o, v->kids[i].key ? v->kids[i].key : "x"), fz_put(o, ": ", 2);
        fz_print(o, &v->kids[i], lines);
    }
    fz_put(o, v->type == KC_JSON_ARRAY ? "]" : "}", 1);
}

static inline size_t fz_json_mutate(uint8_t *data, size_t size, size_t max, unsigned seed, const char *const *tokens,
                                    size_t ntok) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 5;
    kc_json_doc doc;
    if (fz_rand(&rs) % 8 == 0 || kc_json_parse(&doc, (const char *)data, size, NULL) != KC_OK)
        return LLVMFuzzerMutate(data, size, max);
    fz_jv root = {0, NULL, NULL, NULL, 0, 0};
    fz_jv_from(&root, doc.root);
    kc_json_free(&doc);
    int times = 1 + (int)(fz_rand(&rs) % 3);
    for (int i = 0; i < times; i++) {
        fz_jv *all[512];
        size_t n = fz_jv_list(&root, all, 0, 512);
        fz_json_change(&root, all[fz_rand(&rs) % n], &rs, tokens, ntok);
    }
    fz_out o = {malloc(max ? max : 1), 0, max, 0};
    if (o.b) fz_print(&o, &root, fz_rand(&rs) % 4 == 0);
    fz_jv_clear(&root);
    if (!o.b || o.over) {
        free(o.b);
        return LLVMFuzzerMutate(data, size, max);
    }
    memcpy(data, o.b, o.n);
    free(o.b);
    return o.n;
}

#endif
