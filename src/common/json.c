/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c — the JSON reader of json.h: a recursive-descent parser into a tree allocated as an
 * arena (a document is one block for a small file: its nodes, then room for every string).
 *
 * [Note: spec JSON]
 * A warm start loads every graph's spec (kc_graph_desc_load) once per process, so the spec's
 * JSON is read on every start of a training rank or a replica.  With cJSON each value and each
 * member name was its own allocation, and the tree was freed value by value: parsing and freeing
 * a synthetic 325-byte spec cost ~36 k instructions, a third of the whole load of the spec, and
 * a fresh process getting 300 graphs spent 10.8 M of its 49.1 M instructions there (callgrind).
 * Here a document is a list of blocks: the first holds a guess of the nodes the text needs and
 * room for all its strings (a string unescaped is never longer than its quoted text, so
 * len + 1 bytes hold every name and value), later blocks double the nodes; freeing is one free
 * per block.  The first block may lie in the caller's scratch (kc_json_parse_in: spec.c's
 * stack), so a small spec costs no allocation — and none of the glibc consolidation a request
 * past its small-chunk caches (~1 KB) triggers.  The grammar is RFC 8259's, strictly: whitespace is space, tab, CR, LF; a raw
 * control character, a lone surrogate and \u0000 in a string are errors (a name may never hold
 * a NUL, so "a.cu\u0000x" cannot be read as "a.cu"); after the value only whitespace may
 * follow.  Numbers are read as strtod reads them in the C locale, whatever the process's locale
 * (exactly, without strtod, for integers of at most 15 digits), and one beyond a double's range
 * (1e309) is an error rather than an infinity; nesting is limited to KC_JSON_DEPTH_MAX arrays and
 * objects, so a hostile file cannot exhaust the stack.
 *
 * [Note: one name once]
 * RFC 8259 leaves a name given twice in one object to the reader, and readers differ: cJSON kept
 * the first, Python's json the last, so {"graphs": [a], "graphs": [b]} meant a to kcache and b to
 * the script that wrote it.  Here it is an error at any depth, said at the second name with the
 * first one's place.  An object of at most DUP_LINEAR members is checked as each member is read
 * (against those before it: a spec's objects are all this small); a larger one once it is closed,
 * by sorting its names (n log n, so a hostile object of a million names costs no n² compares).
 */
#include "json.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIRST_NODES_MAX 1024
#define DUP_LINEAR 16

struct kc_json_block {
    kc_json_block *next;
    size_t used, cap;
    kc_json nodes[];
};

typedef struct parser {
    const char *text, *p, *end;
    char *out;            /* where the next string goes (the first block's string room) */
    kc_json_block *block; /* the newest block: nodes are taken from it */
    int nomem;
    const char *why; /* the first error's reason (static text), or NULL */
    int refused;     /* why is not a syntax error: valid JSON refused (a name twice, a limit) */
    char dup[512];   /* a name given twice: the message (why points here) */
} parser;

/* A syntax error at ps->p: its reason kept when it is the first; -1. */
static int bad(parser *ps, const char *why) {
    if (!ps->why) ps->why = why;
    return -1;
}

/* Valid JSON refused at ps->p (a name twice, too deep, a number out of range); -1. */
static int refuse(parser *ps, const char *why) {
    if (!ps->why) ps->why = why, ps->refused = 1;
    return -1;
}

static uint32_t offset_of(const parser *ps, const char *at) {
    size_t o = (size_t)(at - ps->text);
    return o < UINT32_MAX ? (uint32_t)o : UINT32_MAX; /* texts are at most KC_JSON_MAX_BYTES */
}

static kc_json *node_new(parser *ps) {
    kc_json_block *b = ps->block;
    if (b->used == b->cap) {
        size_t cap = b->cap * 2;
        kc_json_block *nb = cap < (SIZE_MAX - sizeof *nb) / sizeof(kc_json)
                                ? kc_malloc(sizeof *nb + cap * sizeof(kc_json))
                                : NULL;
        if (!nb) {
            ps->nomem = 1;
            return NULL;
        }
        nb->next = b, nb->used = 0, nb->cap = cap;
        ps->block = b = nb;
    }
    kc_json *n = &b->nodes[b->used++];
    memset(n, 0, sizeof *n);
    return n;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) ps->p++;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

/* Code point cp (1..0x10FFFF) as UTF-8 at d; the byte after it. */
static char *put_utf8(char *d, unsigned cp) {
    if (cp < 0x80) {
        *d++ = (char)cp;
    } else if (cp < 0x800) {
        *d++ = (char)(0xC0 | cp >> 6), *d++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *d++ = (char)(0xE0 | cp >> 12), *d++ = (char)(0x80 | (cp >> 6 & 0x3F)), *d++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *d++ = (char)(0xF0 | cp >> 18), *d++ = (char)(0x80 | (cp >> 12 & 0x3F));
        *d++ = (char)(0x80 | (cp >> 6 & 0x3F)), *d++ = (char)(0x80 | (cp & 0x3F));
    }
    return d;
}

/* The \u escape whose four hex digits start at *pp: its code point (a surrogate pair joined) into *out,
 * *pp past it; -1 on a syntax error, *pp where it stopped. */
static int unicode_escape(const char **pp, const char *end, unsigned *out) {
    const char *p = *pp;
    unsigned cp, lo;
    if (end - p < 4 || hex4(p, &cp)) return -1;
    *pp = p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return -1; /* a low surrogate alone */
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) return -1;
        *pp = p + 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp == 0) return -1; /* a NUL would cut the string short */
    *out = cp;
    return 0;
}

/* The string at ps->p (its opening quote), unescaped into the string room; NULL on a syntax error. */
static const char *parse_string(parser *ps) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t"; /* the one-letter escapes */
    const char *p = ps->p + 1, *end = ps->end, *why = NULL;
    char *start = ps->out, *d = start;
    for (;;) {
        if (p >= end) {
            why = "a string is not closed (a '\"' expected)";
            break;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) {
            why = "a control character in a string (write it as an escape, e.g. \\n)";
            break;
        }
        if (c != '\\') {
            *d++ = (char)c, p++;
            continue;
        }
        const char *simple = end - p >= 2 && p[1] ? strchr(from, p[1]) : NULL;
        unsigned cp;
        if (simple) {
            *d++ = to[simple - from], p += 2;
        } else if (end - p < 2 || p[1] != 'u') {
            why = "an unknown escape (known: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"; /* said at its backslash */
            break;
        } else {
            p += 2;
            if (unicode_escape(&p, end, &cp)) {
                why = "a bad \\u escape (4 hex digits; no \\u0000, no lone surrogate)";
                break;
            }
            d = put_utf8(d, cp);
        }
    }
    if (why) {
        ps->p = p;
        bad(ps, why);
        return NULL;
    }
    *d++ = '\0';
    ps->out = d;
    ps->p = p + 1;
    return start;
}

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;
static void c_locale_init(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static const char *digits(const char *p, const char *end) {
    while (p < end && is_digit(*p)) p++;
    return p;
}

/* The value of the number text [start, end) (its grammar checked): exactly, without strtod, when `exact`
 * (an integer of at most 15 digits, below 2^53: the double is the integer itself), else as strtod reads it
 * in the C locale.  0, or -2 out of memory. */
static int number_value(const char *start, const char *end, int neg, int exact, double *out) {
    if (exact) {
        uint64_t v = 0;
        for (const char *q = start + neg; q < end; q++) v = v * 10 + (uint64_t)(*q - '0');
        *out = neg ? -(double)v : (double)v;
        return 0;
    }
    pthread_once(&c_locale_once, c_locale_init);
    size_t n = (size_t)(end - start);
    char small[64], *buf = n < sizeof small ? small : kc_malloc(n + 1);
    if (!buf || !c_locale) {
        if (buf && buf != small) free(buf);
        return -2;
    }
    memcpy(buf, start, n);
    buf[n] = '\0';
    *out = strtod_l(buf, NULL, c_locale);
    if (buf != small) free(buf);
    return 0;
}

/* The number at ps->p into *out: 0, -1 on a syntax error, -2 out of memory. */
static int parse_number(parser *ps, double *out) {
    const char *start = ps->p, *p = start, *end = ps->end;
    int neg = p < end && *p == '-';
    if (neg) p++;
    if (p < end && *p == '0') p++;
    else if (p < end && *p >= '1' && *p <= '9') p = digits(p, end);
    else return ps->p = p, bad(ps, "a digit expected");
    size_t int_digits = (size_t)(p - start) - (size_t)neg;
    int exact = 1;
    if (p < end && *p == '.') {
        exact = 0, p++;
        if (p >= end || !is_digit(*p)) return ps->p = p, bad(ps, "a digit expected after '.'");
        p = digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        exact = 0, p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return ps->p = p, bad(ps, "a digit expected in the exponent");
        p = digits(p, end);
    }
    int rc = number_value(start, p, neg, exact && int_digits <= 15, out);
    if (rc == 0 && !isfinite(*out)) {
        ps->p = start;
        return refuse(ps, "a number beyond a double's range (about 1.8e308)");
    }
    ps->p = p;
    return rc;
}

#define A_VALUE "a value expected (a string, number, object, array, true, false or null)"

static int literal(parser *ps, const char *word, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return bad(ps, A_VALUE);
    ps->p += n;
    return 0;
}

static int parse_value(parser *ps, kc_json *v, int depth);

/* Member `second` names what `first` (before it) does: the error at the second, with the first's place. */
static int twice(parser *ps, const kc_json *first, const kc_json *second) {
    int line, col;
    char name[400];
    kc_json_place(ps->text, (size_t)(ps->end - ps->text), first->key_at, &line, &col);
    snprintf(ps->dup, sizeof ps->dup, "field \"%s\" appears twice (first at %d:%d; keep one)",
             kc_json_printable(second->key, name), line, col);
    ps->p = ps->text + second->key_at;
    ps->why = NULL;
    return refuse(ps, ps->dup);
}

static int by_name_then_place(const void *a, const void *b) {
    const kc_json *x = *(const kc_json *const *)a, *y = *(const kc_json *const *)b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->key_at > y->key_at) - (x->key_at < y->key_at);
}

/* A closed object of more than DUP_LINEAR members: no name twice ([Note: one name once]).  Its names sorted,
 * the error is at the earliest second use of a name.  0, -1 (a name twice), -2 out of memory. */
static int names_once(parser *ps, const kc_json *o) {
    const kc_json **all = kc_malloc(o->count * sizeof *all);
    if (!all) return ps->nomem = 1, -2;
    size_t n = 0;
    for (const kc_json *c = o->child; c; c = c->next) all[n++] = c;
    qsort((void *)all, n, sizeof *all, by_name_then_place);
    const kc_json *first = NULL, *second = NULL;
    for (size_t i = 1; i < n; i++)
        if (strcmp(all[i - 1]->key, all[i]->key) == 0 && (i < 2 || strcmp(all[i - 2]->key, all[i]->key) != 0) &&
            (!second || all[i]->key_at < second->key_at))
            first = all[i - 1], second = all[i];
    free((void *)all);
    return second ? twice(ps, first, second) : 0;
}

/* The member name at ps->p, then its ':' (a syntax error: -1). */
static const char *member_name(parser *ps) {
    if (ps->p >= ps->end || *ps->p != '"') return bad(ps, "a member name expected (a string in double quotes)"), NULL;
    const char *key = parse_string(ps);
    if (!key) return NULL;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return bad(ps, "':' expected after the member name"), NULL;
    ps->p++;
    skip_ws(ps);
    return key;
}

/* The array or object at ps->p (its opening bracket) into v: 0, -1 on a syntax error, -2 out of memory. */
static int parse_container(parser *ps, kc_json *v, int depth, int object) {
    char close = object ? '}' : ']';
    v->type = object ? KC_JSON_OBJECT : KC_JSON_ARRAY;
    if (depth >= KC_JSON_DEPTH_MAX) return refuse(ps, "nested deeper than 1000 arrays and objects");
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    kc_json *last = NULL;
    for (;;) {
        const char *key = NULL, *key_start = ps->p;
        if (object && !(key = member_name(ps))) return -1;
        kc_json *item = node_new(ps);
        if (!item) return -2;
        item->key = key;
        item->key_at = object ? offset_of(ps, key_start) : 0;
        for (const kc_json *c = v->count < DUP_LINEAR ? v->child : NULL; object && c; c = c->next)
            if (c->key[0] == key[0] && strcmp(c->key, key) == 0) return twice(ps, c, item);
        int rc = parse_value(ps, item, depth + 1);
        if (rc) return rc;
        if (last) last->next = item;
        else v->child = item;
        last = item;
        if (v->count == UINT32_MAX) return bad(ps, "more than 4294967295 values in one array or object");
        v->count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return object && v->count > DUP_LINEAR ? names_once(ps, v) : 0;
        }
        return bad(ps, object ? "',' or '}' expected" : "',' or ']' expected");
    }
}

/* The value at ps->p into v: 0, -1 on a syntax error (ps->p where it stopped), -2 out of memory. */
static int parse_value(parser *ps, kc_json *v, int depth) {
    if (ps->p >= ps->end) return bad(ps, A_VALUE);
    v->at = offset_of(ps, ps->p);
    char c = *ps->p;
    switch (c) {
    case 'n': v->type = KC_JSON_NULL; return literal(ps, "null", 4);
    case 't': v->type = KC_JSON_TRUE; return literal(ps, "true", 4);
    case 'f': v->type = KC_JSON_FALSE; return literal(ps, "false", 5);
    case '"': v->type = KC_JSON_STRING; return (v->str = parse_string(ps)) ? 0 : -1;
    case '[':
    case '{': return parse_container(ps, v, depth, c == '{');
    default:
        if (c == '-' || is_digit(c)) {
            v->type = KC_JSON_NUMBER;
            return parse_number(ps, &v->num);
        }
        return bad(ps, A_VALUE);
    }
}

int kc_json_read(kc_json_doc *doc, const char *text, size_t len, kc_json_err *err) {
    return kc_json_parse_in(doc, text, len, err, NULL, 0);
}

int kc_json_parse(kc_json_doc *doc, const char *text, size_t len, size_t *err_at) {
    kc_json_err e;
    int rc = kc_json_parse_in(doc, text, len, &e, NULL, 0);
    if (err_at) *err_at = rc == KC_OK ? 0 : e.at;
    return rc;
}

/* The failed parse's reason into *err (a syntax error says so; a name twice or a limit says what it is). */
static void say_why(const parser *ps, kc_json_err *err) {
    if (!err) return;
    err->at = (size_t)(ps->p - ps->text);
    snprintf(err->what, sizeof err->what, "%s%s", ps->refused ? "" : "not valid JSON: ", ps->why ? ps->why : A_VALUE);
}

int kc_json_parse_in(kc_json_doc *doc, const char *text, size_t len, kc_json_err *err, void *scratch,
                     size_t scratch_cap) {
    doc->root = NULL, doc->blocks = NULL, doc->lent = NULL;
    if (err) err->at = 0, err->what[0] = '\0';
    if (!text) len = 0;
    if (len > KC_JSON_MAX_BYTES) {
        if (err) snprintf(err->what, sizeof err->what, "over %u MiB of JSON (refused unread)", KC_JSON_MAX_BYTES >> 20);
        return KC_EINVAL;
    }
    size_t cap = len / 8 + 8;
    if (cap > FIRST_NODES_MAX) cap = FIRST_NODES_MAX;
    size_t need = sizeof(kc_json_block) + cap * sizeof(kc_json) + len + 1;
    /* the caller's scratch, aligned for the block, when the first block fits in it */
    uintptr_t a = (uintptr_t)scratch,
              al = _Alignof(kc_json_block) > _Alignof(kc_json) ? _Alignof(kc_json_block) : _Alignof(kc_json);
    size_t skip = scratch ? (size_t)((al - a % al) % al) : 0;
    kc_json_block *b = NULL;
    if (scratch && scratch_cap >= skip && scratch_cap - skip >= need)
        b = doc->lent = (kc_json_block *)((char *)scratch + skip);
    else b = kc_malloc(need);
    if (!b) return kc_err(KC_ENOMEM, "reading JSON: out of memory");
    b->next = NULL, b->used = 0, b->cap = cap;
    parser ps = {text, text, text + len, (char *)&b->nodes[cap], b, 0, NULL, 0, ""};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.p += 3; /* a UTF-8 byte order mark */
    skip_ws(&ps);
    kc_json *root = node_new(&ps);
    int rc = root ? parse_value(&ps, root, 0) : -2;
    if (rc == 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) rc = bad(&ps, "something after the JSON value (one value per file)");
    }
    doc->blocks = ps.block;
    if (rc == 0) {
        doc->root = root;
        return KC_OK;
    }
    kc_json_free(doc);
    if (rc == -2 || ps.nomem) return kc_err(KC_ENOMEM, "reading JSON: out of memory");
    say_why(&ps, err);
    return KC_EINVAL;
}

void kc_json_place(const char *text, size_t len, size_t at, int *line, int *col) {
    *line = 1, *col = 1;
    for (size_t i = 0; text && i < at && i < len; i++) {
        if (text[i] == '\n') ++*line, *col = 1;
        else ++*col;
    }
}

int kc_json_fail(const char *origin, const char *text, size_t len, size_t at, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int line, col;
    kc_json_place(text, len, at, &line, &col);
    return kc_err(KC_EINVAL, "%s:%d:%d: %s", origin, line, col, what);
}

int kc_json_fail_parse(const char *origin, const char *text, size_t len, const kc_json_err *e) {
    return kc_json_fail(origin, text, len, e->at, "%s", e->what);
}

const char *kc_json_printable(const char *s, char out[400]) { /* 64 + 3 UTF-8 bytes, or 64 escapes of 6 */
    char *d = out;
    size_t i = 0;
    /* ends on a character: at most the 3 continuation bytes one may have, however many follow */
    for (; s && s[i] && (i < 64 || (i < 67 && ((unsigned char)s[i] & 0xC0) == 0x80)); i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') *d++ = '\\', *d++ = (char)c;
        else if (c < 0x20 || c == 0x7f) d += sprintf(d, "\\u%04x", c);
        else *d++ = (char)c;
    }
    if (s && s[i]) memcpy(d, "...", 3), d += 3;
    *d = '\0';
    return out;
}

void kc_json_free(kc_json_doc *doc) {
    if (!doc) return;
    for (kc_json_block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        if (b != doc->lent) free(b);
    }
    doc->blocks = NULL, doc->root = NULL, doc->lent = NULL;
}

const kc_json *kc_json_get(const kc_json *o, const char *name) {
    if (!kc_json_is(o, KC_JSON_OBJECT) || !name) return NULL;
    for (const kc_json *c = o->child; c; c = c->next)
        if (c->key[0] == name[0] && strcmp(c->key, name) == 0) return c;
    return NULL;
}

const kc_json *kc_json_at(const kc_json *a, size_t i) {
    const kc_json *c = a ? a->child : NULL;
    while (c && i--) c = c->next;
    return c;
}
