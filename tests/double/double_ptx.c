/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_ptx.c — the driver double's PTX reader: what the driver's JIT would know of a PTX
 * module before compiling it — its ISA version and target, its kernels, each kernel's
 * parameter table, launch bounds and static shared memory.
 *
 * The one idea: PTX is read as tokens (comments and strings skipped, braces counted), never
 * by searching the text, so a `.entry` in a comment or a string is not a kernel and a body
 * cut short is caught.  `.version X.Y` must come first and `.target sm_XY[a|f]` next
 * (anything else is CUDA_ERROR_INVALID_PTX); kernels are `.entry name(params)` with a body
 * (declarations, `.extern .entry` and `.func` are not kernels); parameters are laid out by the
 * PTX ABI (each at its `.align`, else at its type's size; the `.align N` after `.ptr` is the
 * pointee's and does not count); `.maxntid` / `.reqntid` bound the block; the static shared
 * memory is the sum of the body's non-extern `.shared` declarations.  Registers are not known
 * before the JIT: 0.
 *
 * Who calls it: kcd_image_read (double_image.c).  Must not: read past `len`, or keep a
 * pointer into the text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define WHY(...) ((void)(why && cap ? snprintf(why, cap, __VA_ARGS__) : 0))

typedef struct ptx {
    const char *s;
    size_t n, i;
} ptx;
typedef struct tok {
    const char *p;
    size_t n;
} tok;

static int tok_is(const tok *t, const char *s) { return t->n == strlen(s) && !memcmp(t->p, s, t->n); }
static int word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '$' || c == '%';
}

/* The next token: 1, 0 at the end, -1 for an unterminated comment or string. */
static int next(ptx *x, tok *t) {
    for (;;) {
        while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\t' || x->s[x->i] == '\n' || x->s[x->i] == '\r'))
            x->i++;
        if (x->i + 1 < x->n && x->s[x->i] == '/' && x->s[x->i + 1] == '/') {
            while (x->i < x->n && x->s[x->i] != '\n') x->i++;
            continue;
        }
        if (x->i + 1 < x->n && x->s[x->i] == '/' && x->s[x->i + 1] == '*') {
            const char *end = NULL;
            for (size_t j = x->i + 2; j + 1 < x->n && !end; j++)
                if (x->s[j] == '*' && x->s[j + 1] == '/') end = x->s + j;
            if (!end) return -1;
            x->i = (size_t)(end - x->s) + 2;
            continue;
        }
        break;
    }
    if (x->i >= x->n) return 0;
    size_t b = x->i;
    if (word_char(x->s[b])) {
        while (x->i < x->n && word_char(x->s[x->i])) x->i++;
    } else if (x->s[b] == '"') {
        x->i++;
        while (x->i < x->n && x->s[x->i] != '"') x->i++;
        if (x->i >= x->n) return -1;
        x->i++;
    } else {
        x->i++;
    }
    t->p = x->s + b, t->n = x->i - b;
    return 1;
}

/* A decimal or 0x number token; -1 when it is not one (or is past 2^32). */
static long long num(const tok *t) {
    size_t i = 0;
    int base = 10;
    if (t->n > 2 && t->p[0] == '0' && (t->p[1] == 'x' || t->p[1] == 'X')) base = 16, i = 2;
    if (i == t->n) return -1;
    long long v = 0;
    for (; i < t->n; i++) {
        char c = t->p[i];
        int d = c >= '0' && c <= '9'                 ? c - '0'
                : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10
                : base == 16 && c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                     : -1;
        if (d < 0) return -1;
        v = v * base + d;
        if (v > 0xffffffffLL) return -1;
    }
    return v;
}

/* The size of a PTX fundamental type token, 0 when it is not one. */
static uint32_t type_size(const tok *t) {
    static const struct {
        const char *n;
        uint32_t s;
    } T[] = {{".b8", 1},    {".u8", 1},     {".s8", 1},     {".b16", 2},        {".u16", 2},    {".s16", 2},
             {".f16", 2},   {".bf16", 2},   {".b32", 4},    {".u32", 4},        {".s32", 4},    {".f32", 4},
             {".f16x2", 4}, {".bf16x2", 4}, {".tf32", 4},   {".b64", 8},        {".u64", 8},    {".s64", 8},
             {".f64", 8},   {".b128", 16},  {".texref", 8}, {".samplerref", 8}, {".surfref", 8}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (tok_is(t, T[i].n)) return T[i].s;
    return 0;
}

static int is_space_qual(const tok *t) {
    return tok_is(t, ".global") || tok_is(t, ".const") || tok_is(t, ".local") || tok_is(t, ".shared");
}

/* One declaration's layout: [.align N] [quals] .type [.ptr [space] [.align N]] name [ '[' N ']' ]...
 * up to (not including) the token that ends it, which is returned in *end. */
static int decl(ptx *x, tok *end, uint32_t *size_out, uint32_t *align_out) {
    tok t;
    uint32_t align = 0, ts = 0;
    int ptr = 0, named = 0;
    uint64_t count = 1;
    while (next(x, &t) == 1) {
        if (!named && tok_is(&t, ".align")) {
            tok a;
            long long v;
            if (next(x, &a) != 1 || (v = num(&a)) <= 0 || v > 4096 || (v & (v - 1))) return -1;
            if (!ts && !ptr) align = (uint32_t)v; /* after .ptr: the pointee's alignment */
        } else if (!named && tok_is(&t, ".ptr")) {
            if (!ts) return -1;
            ptr = 1;
        } else if (!named && (is_space_qual(&t) || tok_is(&t, ".v2") || tok_is(&t, ".v4"))) {
            if (tok_is(&t, ".v2")) count *= 2;
            if (tok_is(&t, ".v4")) count *= 4;
        } else if (!named && type_size(&t)) {
            if (ts) return -1;
            ts = type_size(&t);
        } else if (!named && t.p[0] != '.' && word_char(t.p[0])) {
            if (!ts) return -1;
            named = 1;
        } else if (named && tok_is(&t, "[")) {
            tok d, c;
            if (next(x, &d) != 1) return -1;
            if (tok_is(&d, "]")) {
                count = 0; /* unsized: dynamic */
                continue;
            }
            long long v = num(&d);
            if (v < 0 || next(x, &c) != 1 || !tok_is(&c, "]")) return -1;
            count *= (uint64_t)v;
            if (count > 0xffffffffULL) return -1;
        } else if (named) {
            *end = t;
            uint64_t size = count * ts;
            if (size > 0xffffffffULL) return -1;
            *size_out = (uint32_t)size;
            *align_out = align ? align : ts;
            return 0;
        } else {
            return -1;
        }
    }
    return -1;
}

/* Up to three comma-separated numbers after a directive such as .maxntid. */
static int dims(ptx *x, uint32_t d[3], tok *after) {
    d[0] = d[1] = d[2] = 1;
    for (int i = 0; i < 3; i++) {
        tok t;
        long long v;
        if (next(x, &t) != 1 || (v = num(&t)) < 0) return -1;
        d[i] = (uint32_t)v;
        if (next(x, after) != 1) return -1;
        if (!tok_is(after, ",")) return 0;
    }
    return next(x, after) == 1 ? 0 : -1;
}

/* Parse `.entry` after its keyword: name, parameters, directives, body; a kernel when it has a body. */
static int entry(ptx *x, kcd_image *im, int is_extern, char *why, size_t cap) {
    tok name, t;
    if (next(x, &name) != 1 || !word_char(name.p[0]) || name.p[0] == '.') return WHY(".entry without a name"), -1;
    if (next(x, &t) != 1) return WHY(".entry %.*s: cut short", (int)name.n, name.p), -1;
    kcd_kp *v = NULL;
    uint32_t n = 0, end = 0;
    if (tok_is(&t, "(")) {
        tok pt;
        if (next(x, &pt) != 1) goto bad;
        while (!tok_is(&pt, ")")) {
            uint32_t size, align;
            tok stop;
            if (!tok_is(&pt, ".param") || decl(x, &stop, &size, &align)) goto bad;
            if (n >= KCD_MAX_PARAMS) goto bad;
            kcd_kp *nv = realloc(v, (n + 1) * sizeof *v);
            if (!nv) goto bad;
            v = nv;
            uint32_t off = (end + align - 1) / align * align;
            if (off < end || (uint64_t)off + size > KCD_MAX_PARAM_BYTES) goto bad;
            v[n].ord = n, v[n].off = off, v[n].size = size, n++;
            end = off + size;
            if (tok_is(&stop, ",")) {
                if (next(x, &pt) != 1) goto bad;
            } else if (tok_is(&stop, ")")) {
                break;
            } else {
                goto bad;
            }
        }
        if (next(x, &t) != 1) goto bad;
    }
    uint32_t maxntid[3] = {0, 0, 0}, reqntid[3] = {0, 0, 0}, cluster[3] = {0, 0, 0};
    for (;;) { /* performance directives, up to the body or a ';' */
        if (tok_is(&t, "{") || tok_is(&t, ";")) break;
        if (tok_is(&t, ".maxntid") || tok_is(&t, ".reqntid") || tok_is(&t, ".reqnctapercluster")) {
            uint32_t *d = tok_is(&t, ".maxntid") ? maxntid : tok_is(&t, ".reqntid") ? reqntid : cluster;
            if (dims(x, d, &t)) goto bad;
            continue;
        }
        if (tok_is(&t, ".pragma")) { /* .pragma "..." ; */
            tok s, semi;
            if (next(x, &s) != 1 || s.p[0] != '"' || next(x, &semi) != 1 || !tok_is(&semi, ";")) goto bad;
        }
        if (next(x, &t) != 1) goto bad;
    }
    if (tok_is(&t, ";") || is_extern) { /* a declaration: not a kernel of this image */
        free(v);
        if (tok_is(&t, "{")) return WHY(".extern .entry %.*s has a body", (int)name.n, name.p), -1;
        return 0;
    }
    uint32_t shared = 0;
    int depth = 1, ext = 0;
    while (depth > 0) { /* the body: braces and the static .shared declarations */
        if (next(x, &t) != 1) goto bad;
        if (tok_is(&t, "{")) depth++;
        else if (tok_is(&t, "}")) depth--;
        else if (tok_is(&t, ";")) ext = 0;
        else if (tok_is(&t, ".extern")) ext = 1;
        else if (tok_is(&t, ".shared")) {
            uint32_t size, align;
            tok stop;
            if (decl(x, &stop, &size, &align) || !tok_is(&stop, ";")) goto bad;
            if (!ext) {
                uint64_t off = ((uint64_t)shared + align - 1) / align * align + size;
                if (off > 0xffffffffULL) goto bad;
                shared = (uint32_t)off;
            }
            ext = 0;
        }
    }
    for (size_t i = 0; i < im->nkernels; i++)
        if (strlen(im->k[i].name) == name.n && !memcmp(im->k[i].name, name.p, name.n)) {
            free(v);
            return WHY(".entry %.*s defined twice", (int)name.n, name.p), -1;
        }
    kcd_kinfo *k = kcd_image_add_kernel(im, name.p, name.n);
    if (!k) goto bad;
    if (maxntid[0]) {
        uint64_t prod = (uint64_t)maxntid[0] * maxntid[1] * maxntid[2];
        if (prod < k->max_threads) k->max_threads = (uint32_t)prod;
    }
    if (reqntid[0]) {
        uint64_t prod = (uint64_t)reqntid[0] * reqntid[1] * reqntid[2];
        if (prod < k->max_threads) k->max_threads = (uint32_t)prod;
        memcpy(k->reqntid, reqntid, sizeof reqntid);
    }
    memcpy(k->cluster, cluster, sizeof cluster);
    k->static_shared = shared;
    int r = kcd_image_set_params(k, v, n, 0, why, cap);
    free(v);
    return r;
bad:
    free(v);
    return WHY(".entry %.*s: a malformed declaration", (int)name.n, name.p), -1;
}

CUresult kcd_ptx_read(const char *s, size_t len, kcd_image *im, char *why, size_t cap) {
    const char *nul = memchr(s, 0, len);
    size_t n = nul ? (size_t)(nul - s) : len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
            return WHY("not PTX text (byte 0x%02x at %zu)", c, i), CUDA_ERROR_INVALID_PTX;
    }
    ptx x = {s, n, 0};
    tok t, v;
    if (next(&x, &t) != 1 || !tok_is(&t, ".version") || next(&x, &v) != 1)
        return WHY("PTX does not begin with .version"), CUDA_ERROR_INVALID_PTX;
    int maj = 0, min = 0, dot = 0;
    for (size_t i = 0; i < v.n; i++) {
        if (v.p[i] == '.' && !dot) dot = 1;
        else if (v.p[i] >= '0' && v.p[i] <= '9' && (dot ? min : maj) < 100)
            *(dot ? &min : &maj) = (dot ? min : maj) * 10 + v.p[i] - '0';
        else return WHY("bad .version '%.*s'", (int)v.n, v.p), CUDA_ERROR_INVALID_PTX;
    }
    if (!dot) return WHY("bad .version '%.*s'", (int)v.n, v.p), CUDA_ERROR_INVALID_PTX;
    if (next(&x, &t) != 1 || !tok_is(&t, ".target") || next(&x, &v) != 1 || v.n < 5 || memcmp(v.p, "sm_", 3))
        return WHY("PTX without a .target sm_XY after .version"), CUDA_ERROR_INVALID_PTX;
    int arch = 0;
    size_t i = 3;
    while (i < v.n && v.p[i] >= '0' && v.p[i] <= '9' && arch < 1000) arch = arch * 10 + v.p[i++] - '0';
    char variant = i + 1 == v.n && (v.p[i] == 'a' || v.p[i] == 'f') ? v.p[i++] : 0;
    if (i != v.n || arch < 10) return WHY("bad .target '%.*s'", (int)v.n, v.p), CUDA_ERROR_INVALID_PTX;
    im->is_ptx = 1, im->arch = arch, im->variant = variant, im->virt_arch = arch;
    im->ptx_major = maj, im->ptx_minor = min, im->bytes = len;
    snprintf(im->target, sizeof im->target, "compute_%d%s", arch, variant == 'a' ? "a" : variant == 'f' ? "f" : "");
    int depth = 0, is_extern = 0, r;
    while ((r = next(&x, &t)) == 1) {
        if (tok_is(&t, "{")) depth++;
        else if (tok_is(&t, "}")) {
            if (--depth < 0) return WHY("unbalanced braces"), CUDA_ERROR_INVALID_PTX;
        } else if (tok_is(&t, ";")) is_extern = 0;
        else if (depth == 0 && tok_is(&t, ".extern")) is_extern = 1;
        else if (depth == 0 && tok_is(&t, ".entry")) {
            if (entry(&x, im, is_extern, why, cap)) return CUDA_ERROR_INVALID_PTX;
            is_extern = 0;
        }
    }
    if (r < 0) return WHY("an unterminated comment or string"), CUDA_ERROR_INVALID_PTX;
    if (depth) return WHY("unbalanced braces"), CUDA_ERROR_INVALID_PTX;
    return CUDA_SUCCESS;
}
