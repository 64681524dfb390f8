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
 * (exactly, without strtod, for integers of at most 15 digits); nesting is limited to
 * KC_JSON_DEPTH_MAX arrays and objects, so a hostile file cannot exhaust the stack.
 */
#include "json.h"

#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define KC_JSON_DEPTH_MAX 1000
#define FIRST_NODES_MAX 1024

struct kc_json_block {
    kc_json_block *next;
    size_t used, cap;
    kc_json nodes[];
};

typedef struct parser {
    const char *p, *end;
    char *out;            /* where the next string goes (the first block's string room) */
    kc_json_block *block; /* the newest block: nodes are taken from it */
    int nomem;
} parser;

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
    const char *p = ps->p + 1, *end = ps->end;
    char *start = ps->out, *d = start;
    for (;;) {
        if (p >= end) goto bad;
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) goto bad;
        if (c != '\\') {
            *d++ = (char)c, p++;
            continue;
        }
        if (end - p < 2) goto bad;
        const char *simple = p[1] ? strchr(from, p[1]) : NULL;
        unsigned cp;
        if (simple) {
            *d++ = to[simple - from], p += 2;
        } else if (p[1] != 'u') {
            goto bad; /* an unknown escape: said at its backslash */
        } else {
            p += 2;
            if (unicode_escape(&p, end, &cp)) goto bad;
            d = put_utf8(d, cp);
        }
    }
    *d++ = '\0';
    ps->out = d;
    ps->p = p + 1;
    return start;
bad:
    ps->p = p;
    return NULL;
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
    else return ps->p = p, -1;
    size_t int_digits = (size_t)(p - start) - (size_t)neg;
    int exact = 1;
    if (p < end && *p == '.') {
        exact = 0, p++;
        if (p >= end || !is_digit(*p)) return ps->p = p, -1;
        p = digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        exact = 0, p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) return ps->p = p, -1;
        p = digits(p, end);
    }
    ps->p = p;
    return number_value(start, p, neg, exact && int_digits <= 15, out);
}

static int literal(parser *ps, const char *word, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return -1;
    ps->p += n;
    return 0;
}

static int parse_value(parser *ps, kc_json *v, int depth);

/* The array or object at ps->p (its opening bracket) into v: 0, -1 on a syntax error, -2 out of memory. */
static int parse_container(parser *ps, kc_json *v, int depth, int object) {
    char close = object ? '}' : ']';
    v->type = object ? KC_JSON_OBJECT : KC_JSON_ARRAY;
    if (depth >= KC_JSON_DEPTH_MAX) return -1;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    kc_json *last = NULL;
    for (;;) {
        const char *key = NULL;
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"' || !(key = parse_string(ps))) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return -1;
            ps->p++;
            skip_ws(ps);
        }
        kc_json *item = node_new(ps);
        if (!item) return -2;
        item->key = key;
        int rc = parse_value(ps, item, depth + 1);
        if (rc) return rc;
        if (last) last->next = item;
        else v->child = item;
        last = item;
        if (v->count == UINT32_MAX) return -1;
        v->count++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            skip_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return -1;
    }
}

/* The value at ps->p into v: 0, -1 on a syntax error (ps->p where it stopped), -2 out of memory. */
static int parse_value(parser *ps, kc_json *v, int depth) {
    if (ps->p >= ps->end) return -1;
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
        return -1;
    }
}

int kc_json_parse(kc_json_doc *doc, const char *text, size_t len, size_t *err_at) {
    return kc_json_parse_in(doc, text, len, err_at, NULL, 0);
}

int kc_json_parse_in(kc_json_doc *doc, const char *text, size_t len, size_t *err_at, void *scratch,
                     size_t scratch_cap) {
    doc->root = NULL, doc->blocks = NULL, doc->lent = NULL;
    if (err_at) *err_at = 0;
    if (!text) len = 0;
    size_t cap = len / 8 + 8;
    if (cap > FIRST_NODES_MAX) cap = FIRST_NODES_MAX;
    size_t need = len < SIZE_MAX / 2 ? sizeof(kc_json_block) + cap * sizeof(kc_json) + len + 1 : SIZE_MAX;
    /* the caller's scratch, aligned for the block, when the first block fits in it */
    uintptr_t a = (uintptr_t)scratch,
              al = _Alignof(kc_json_block) > _Alignof(kc_json) ? _Alignof(kc_json_block) : _Alignof(kc_json);
    size_t skip = scratch ? (size_t)((al - a % al) % al) : 0;
    kc_json_block *b = NULL;
    if (scratch && scratch_cap >= skip && scratch_cap - skip >= need)
        b = doc->lent = (kc_json_block *)((char *)scratch + skip);
    else b = need != SIZE_MAX ? kc_malloc(need) : NULL;
    if (!b) return kc_err(KC_ENOMEM, "reading JSON: out of memory");
    b->next = NULL, b->used = 0, b->cap = cap;
    parser ps = {text, text + len, (char *)&b->nodes[cap], b, 0};
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) ps.p += 3; /* a UTF-8 byte order mark */
    skip_ws(&ps);
    kc_json *root = node_new(&ps);
    int rc = root ? parse_value(&ps, root, 0) : -2;
    if (rc == 0) {
        skip_ws(&ps);
        if (ps.p != ps.end) rc = -1; /* something after the value */
    }
    doc->blocks = ps.block;
    if (rc == 0) {
        doc->root = root;
        return KC_OK;
    }
    if (err_at) *err_at = (size_t)(ps.p - text);
    kc_json_free(doc);
    return rc == -2 || ps.nomem ? kc_err(KC_ENOMEM, "reading JSON: out of memory") : KC_EINVAL;
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
