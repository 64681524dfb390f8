/* SPDX-License-Identifier: Apache-2.0 */
/*
 * params.c — a kernel's parameter table, read from a cubin's `.nv.info.<kernel>` section or
 * from a PTX image's `.entry <kernel>(...)` list (the interface and its rules: params.h).
 *
 * The one idea: read strictly and cross-check, so that a table that comes out is the one the
 * driver will use, and anything else is KC_ECORRUPT naming what did not fit.
 *
 *   cubin  `.nv.info.<kernel>` (sh_type SHT_LOPROC) is a sequence of attributes, each
 *          u8 format, u8 attribute, then by format (as CUDA 12-13 write them, checked on
 *          sm_80…sm_120 cubins):
 *            0x01 NVAL, 0x02 BVAL, 0x03 HVAL: a u16 field (the value; unused by NVAL, its low
 *                 byte by BVAL) — every one of them 4 bytes in all;
 *            0x04 SVAL: u16 size, then size bytes.
 *          The walk must end exactly at the section's end.  Read here:
 *            0x17 KPARAM_INFO (SVAL, 12 bytes): u32 index, u16 ordinal, u16 offset, u32 flags
 *                 whose bits 18..31 are the size in bytes; one per parameter, in any order;
 *            0x45 KPARAM_INFO_V2 (SVAL, 12 bytes): u32 index, u16 ordinal, u16 offset, u16 size,
 *                 u16 flags — what ptxas writes instead of 0x17 when the parameters pass 4 KiB
 *                 (CUDA 12.1+'s large kernel parameters); read the same way;
 *            0x19 CBANK_PARAM_SIZE (HVAL): the parameter bytes in all;
 *            0x0a PARAM_CBANK (SVAL, 8 bytes): u32 symbol, u16 bank offset, u16 size.
 *          Cross-checks: ordinals 0..n-1 each once; offsets increasing with the ordinal and
 *          not overlapping; no size 0; the end of the last parameter equal to 0x19 and to
 *          0x0a's size where they are present (both at most once); n and the bytes within
 *          KC_PARAMS_MAX and KC_PARAMS_MAX_BYTES.  The kernel must be one defined function symbol
 *          marked STO_CUDA_ENTRY (a device function has a `.nv.info.<name>` too, with no
 *          parameters in it), and when the section says whose it is (SHF_INFO_LINK), its
 *          sh_info must be the section of the kernel's code.
 *   PTX    the text up to its first NUL (what the driver reads), with // and block comments
 *          and "strings" skipped; the one `.entry <kernel>` (exact name), then
 *            '(' [ param { ',' param } ] ')'   or no list at all (followed by '{' or a directive)
 *            param = .param { type | .align N | .ptr [space] [.align N] } name [ '[' K ']' ]
 *          with exactly one type; an .align after .ptr is the pointee's and does not lay the
 *          parameter out.  Each parameter is placed at the next multiple of its alignment (the
 *          declared one, else its element's size) in declaration order — the PTX ABI.
 *
 * Callers: src/graph/ (the launch-ABI check), tests, the fuzz target.  Must not: load
 * anything, read outside the bytes given, or return a table it could not read whole.
 */
#include "params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/internal.h"
#include "elf.h"

#define EM_CUDA 190
#define SHT_LOPROC 0x70000000u
#define SHF_INFO_LINK 0x40u  /* sh_info holds a section index: for .nv.info.<k>, the kernel's code */
#define STO_CUDA_ENTRY 0x10u /* st_other of a kernel (a __global__ function), not a device function */

#define EIFMT_NVAL 0x01
#define EIFMT_BVAL 0x02
#define EIFMT_HVAL 0x03
#define EIFMT_SVAL 0x04
#define EIATTR_PARAM_CBANK 0x0a
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_KPARAM_INFO_V2 0x45
#define KPARAM_INFO_SIZE 12
#define PARAM_CBANK_SIZE 8

void kc_params_free(kc_params *p) {
    if (!p) return;
    kc_free(p->v);
    p->v = NULL;
    p->n = 0;
    p->total = 0;
}

/* ---- cubin ---- */

/* One pass over the attributes: frames every record and counts the parameter records; when
 * `v` is given, stores each at its ordinal (v has n slots, all size 0 on entry). */
typedef struct nvinfo {
    size_t count;
    int has_cbank_size, has_param_cbank;
    uint32_t cbank_size, param_cbank_size;
} nvinfo;

static int nvinfo_walk(const uint8_t *d, size_t len, const char *sym, kc_param *v, size_t n, nvinfo *ni) {
    memset(ni, 0, sizeof *ni);
    size_t i = 0;
    while (i < len) {
        if (len - i < 4)
            return kc_err(KC_ECORRUPT, "parameter table of %s: an attribute cut short at byte %zu", sym, i);
        uint8_t fmt = d[i], attr = d[i + 1];
        uint16_t val = kc_rd_u16(d + i + 2);
        const uint8_t *pay = d + i + 4;
        size_t size = 0;
        if (fmt == EIFMT_SVAL) {
            size = val;
            if (size > len - i - 4)
                return kc_err(KC_ECORRUPT, "parameter table of %s: attribute 0x%02x at byte %zu runs past the section",
                              sym, attr, i);
        } else if (fmt != EIFMT_NVAL && fmt != EIFMT_BVAL && fmt != EIFMT_HVAL) {
            return kc_err(KC_ECORRUPT, "parameter table of %s: unknown attribute format 0x%02x at byte %zu", sym, fmt,
                          i);
        }
        if (attr == EIATTR_KPARAM_INFO || attr == EIATTR_KPARAM_INFO_V2) {
            if (fmt != EIFMT_SVAL || size != KPARAM_INFO_SIZE)
                return kc_err(KC_ECORRUPT,
                              "parameter table of %s: a parameter record of format %u and %zu bytes "
                              "(expected %u and %u)",
                              sym, fmt, size, EIFMT_SVAL, KPARAM_INFO_SIZE);
            if (++ni->count > KC_PARAMS_MAX)
                return kc_err(KC_ECORRUPT, "parameter table of %s: more than %u parameters", sym, KC_PARAMS_MAX);
            if (v) {
                uint32_t ordinal = kc_rd_u16(pay + 4), offset = kc_rd_u16(pay + 6);
                uint32_t psize = attr == EIATTR_KPARAM_INFO ? (kc_rd_u32(pay + 8) >> 18) & 0x3fff : kc_rd_u16(pay + 8);
                if (ordinal >= n)
                    return kc_err(KC_ECORRUPT, "parameter table of %s: ordinal %u of %zu parameters", sym, ordinal, n);
                if (v[ordinal].size)
                    return kc_err(KC_ECORRUPT, "parameter table of %s: ordinal %u appears twice", sym, ordinal);
                if (psize == 0)
                    return kc_err(KC_ECORRUPT, "parameter table of %s: parameter %u has size 0", sym, ordinal);
                v[ordinal].offset = offset;
                v[ordinal].size = psize;
                v[ordinal].align = 0;
                v[ordinal].cls = KC_PARAM_ANY;
            }
        } else if (attr == EIATTR_CBANK_PARAM_SIZE) {
            if (fmt != EIFMT_HVAL)
                return kc_err(KC_ECORRUPT, "parameter table of %s: its parameter size has format %u (expected %u)", sym,
                              fmt, EIFMT_HVAL);
            if (ni->has_cbank_size++)
                return kc_err(KC_ECORRUPT, "parameter table of %s: its parameter size appears twice", sym);
            ni->cbank_size = val;
        } else if (attr == EIATTR_PARAM_CBANK) {
            if (fmt != EIFMT_SVAL || size != PARAM_CBANK_SIZE)
                return kc_err(KC_ECORRUPT,
                              "parameter table of %s: a parameter bank record of format %u and %zu bytes "
                              "(expected %u and %u)",
                              sym, fmt, size, EIFMT_SVAL, PARAM_CBANK_SIZE);
            if (ni->has_param_cbank++)
                return kc_err(KC_ECORRUPT, "parameter table of %s: its parameter bank appears twice", sym);
            ni->param_cbank_size = kc_rd_u16(pay + 6);
        }
        i += 4 + size;
    }
    return KC_OK;
}

static int read_cubin(const void *image, size_t len, const char *sym, kc_params *out) {
    int m = kc_elf_machine(image, len);
    if (m < 0) return kc_err(KC_ECORRUPT, "parameter table of %s: the image is not an ELF64 little-endian cubin", sym);
    if (m != EM_CUDA)
        return kc_err(KC_ECORRUPT, "parameter table of %s: the image is not a cubin (ELF machine %d)", sym, m);
    kc_elf_symbol_info fn;
    int rc = kc_elf_function(image, len, sym, &fn);
    if (rc < 0) return kc_err_prefix(rc, "parameter table of %s", sym);
    if (rc == 0) return kc_err(KC_ECORRUPT, "no kernel %s in the cubin's symbol table", sym);
    if (!(fn.other & STO_CUDA_ENTRY) || fn.shndx == 0)
        return kc_err(KC_ECORRUPT, "%s in the cubin is a device function, not a kernel (no parameter table)", sym);

    size_t nlen = strlen(sym);
    char *secname = kc_malloc(nlen + sizeof ".nv.info.");
    if (!secname) return kc_err(KC_ENOMEM, "out of memory");
    memcpy(secname, ".nv.info.", sizeof ".nv.info." - 1);
    memcpy(secname + sizeof ".nv.info." - 1, sym, nlen + 1);
    kc_elf_section_info sec;
    rc = kc_elf_section(image, len, secname, &sec);
    kc_free(secname);
    if (rc < 0) return kc_err_prefix(rc, "parameter table of %s", sym);
    if (rc == 0) return kc_err(KC_ECORRUPT, "no parameter table for %s (no .nv.info.%s section)", sym, sym);
    if (sec.type != SHT_LOPROC)
        return kc_err(KC_ECORRUPT, "parameter table of %s: section type 0x%x (expected 0x%x)", sym, sec.type,
                      SHT_LOPROC);
    if ((sec.flags & SHF_INFO_LINK) && sec.info != fn.shndx)
        return kc_err(KC_ECORRUPT,
                      "parameter table of %s: it belongs to section %u, the kernel's code is in section %u", sym,
                      sec.info, fn.shndx);

    nvinfo ni;
    if ((rc = nvinfo_walk(sec.data, sec.size, sym, NULL, 0, &ni))) return rc;
    kc_param *v = NULL;
    size_t n = ni.count;
    if (n) {
        v = kc_calloc(n, sizeof *v);
        if (!v) return kc_err(KC_ENOMEM, "out of memory");
        if ((rc = nvinfo_walk(sec.data, sec.size, sym, v, n, &ni))) goto fail;
    }
    /* n records, n slots, no ordinal twice or out of range: each ordinal 0..n-1 exactly once. */
    uint32_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i].offset < end) {
            rc = kc_err(KC_ECORRUPT,
                        "parameter table of %s: parameter %zu at offset %u overlaps or precedes "
                        "parameter %zu (which ends at %u)",
                        sym, i, v[i].offset, i - 1, end);
            goto fail;
        }
        end = v[i].offset + v[i].size; /* both below 2^16: no overflow */
    }
    if (end > KC_PARAMS_MAX_BYTES) {
        rc = kc_err(KC_ECORRUPT, "parameter table of %s: %u bytes of parameters (at most %u)", sym, end,
                    KC_PARAMS_MAX_BYTES);
        goto fail;
    }
    if (ni.has_cbank_size && ni.cbank_size != end) {
        rc = kc_err(KC_ECORRUPT, "parameter table of %s: the parameters end at %u but the table says %u bytes", sym,
                    end, ni.cbank_size);
        goto fail;
    }
    if (ni.has_param_cbank && ni.param_cbank_size != end) {
        rc = kc_err(KC_ECORRUPT,
                    "parameter table of %s: the parameters end at %u but the parameter bank holds %u bytes", sym, end,
                    ni.param_cbank_size);
        goto fail;
    }
    out->v = v;
    out->n = n;
    out->total = end;
    return KC_OK;
fail:
    kc_free(v);
    return rc;
}

/* ---- PTX ---- */

typedef enum tok_kind { T_END, T_DIR, T_WORD, T_PUNCT, T_STR } tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *s; /* T_DIR: with its '.'; T_PUNCT: the one character */
    size_t n;
} tok;

typedef struct lexer {
    const char *s;
    size_t n, i;
} lexer;

static int is_word(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           c == '%';
}

/* Skip white space and comments; 0 when an unterminated comment ends the text (L->i = n), else 1. */
static int skip_blank(lexer *L) {
    const char *s = L->s;
    size_t n = L->n;
    for (;;) {
        while (L->i < n && (s[L->i] == ' ' || s[L->i] == '\t' || s[L->i] == '\n' || s[L->i] == '\r' ||
                            s[L->i] == '\f' || s[L->i] == '\v'))
            L->i++;
        if (L->i + 1 < n && s[L->i] == '/' && s[L->i + 1] == '/') {
            while (L->i < n && s[L->i] != '\n') L->i++;
            continue;
        }
        if (L->i + 1 < n && s[L->i] == '/' && s[L->i + 1] == '*') {
            size_t j = L->i + 2;
            while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/')) j++;
            if (j + 1 >= n) {
                L->i = n;
                return 0;
            }
            L->i = j + 2;
            continue;
        }
        return 1;
    }
}

static size_t word_end(const char *s, size_t j, size_t n) {
    while (j < n && is_word((unsigned char)s[j])) j++;
    return j;
}

/* The next token, white space and comments skipped.  An unterminated comment or string ends
 * the text (T_END): nothing after it can be read with certainty. */
static tok lex_next(lexer *L) {
    tok t = {T_END, NULL, 0};
    const char *s = L->s;
    size_t n = L->n;
    if (!skip_blank(L) || L->i >= n) return t;
    size_t b = L->i;
    unsigned char c = (unsigned char)s[b];
    if (c == '"') {
        size_t j = b + 1;
        while (j < n && s[j] != '"') j += (s[j] == '\\' && j + 1 < n) ? 2 : 1;
        if (j >= n) {
            L->i = n;
            return t;
        }
        L->i = j + 1;
        t.kind = T_STR;
    } else if (c == '.' && b + 1 < n && is_word((unsigned char)s[b + 1])) {
        L->i = word_end(s, b + 1, n);
        t.kind = T_DIR;
    } else if (is_word(c)) {
        L->i = word_end(s, b, n);
        t.kind = T_WORD;
    } else {
        L->i = b + 1;
        t.kind = T_PUNCT;
    }
    t.s = s + b;
    t.n = L->i - b;
    return t;
}

static int tok_is(tok t, const char *w) { return t.n == strlen(w) && memcmp(t.s, w, t.n) == 0; }
static int tok_punct(tok t, char c) { return t.kind == T_PUNCT && t.s[0] == c; }

/* A decimal count of at most `max` (no sign, no leading zero but "0"); -1 when it is not one. */
static long long tok_uint(tok t, long long max) {
    if (t.kind != T_WORD || t.n == 0 || t.n > 10 || (t.s[0] == '0' && t.n > 1)) return -1;
    long long v = 0;
    for (size_t i = 0; i < t.n; i++) {
        if (t.s[i] < '0' || t.s[i] > '9') return -1;
        v = v * 10 + (t.s[i] - '0');
    }
    return v <= max ? v : -1;
}

/* The PTX parameter types a kernel may take: name, bytes, class. */
static const struct ptx_type {
    const char *name;
    uint8_t size, cls;
} PTX_TYPES[] = {
    {".u8", 1, KC_PARAM_INT},      {".s8", 1, KC_PARAM_INT},       {".b8", 1, KC_PARAM_INT},
    {".u16", 2, KC_PARAM_INT},     {".s16", 2, KC_PARAM_INT},      {".b16", 2, KC_PARAM_INT},
    {".f16", 2, KC_PARAM_FLOAT},   {".bf16", 2, KC_PARAM_FLOAT},   {".u32", 4, KC_PARAM_INT},
    {".s32", 4, KC_PARAM_INT},     {".b32", 4, KC_PARAM_INT},      {".f32", 4, KC_PARAM_FLOAT},
    {".f16x2", 4, KC_PARAM_FLOAT}, {".bf16x2", 4, KC_PARAM_FLOAT}, {".u64", 8, KC_PARAM_INT},
    {".s64", 8, KC_PARAM_INT},     {".b64", 8, KC_PARAM_INT},      {".f64", 8, KC_PARAM_FLOAT},
    {".b128", 16, KC_PARAM_INT},
};

static const struct ptx_type *ptx_type(tok t) {
    if (t.kind != T_DIR) return NULL;
    for (size_t i = 0; i < KC_ARRAY_LEN(PTX_TYPES); i++)
        if (tok_is(t, PTX_TYPES[i].name)) return &PTX_TYPES[i];
    return NULL;
}

static int ptx_space(tok t) {
    return tok_is(t, ".global") || tok_is(t, ".const") || tok_is(t, ".local") || tok_is(t, ".shared");
}

/* An alignment: a power of two, at most the parameter buffer. */
static long long ptx_align(lexer *L) {
    long long a = tok_uint(lex_next(L), KC_PARAMS_MAX_BYTES + 1);
    return a > 0 && (a & (a - 1)) == 0 ? a : -1;
}

#define PTX_BAD(...) kc_err(KC_ECORRUPT, "PTX entry " __VA_ARGS__)

/* One parameter, `.param` already read; laid out at *end, which moves past it. */
static int ptx_param(lexer *L, const char *sym, size_t idx, uint32_t *end, kc_param *out) {
    const struct ptx_type *type = NULL;
    long long align = 0;
    int ptr = 0, space = 0;
    tok t;
    for (;;) {
        t = lex_next(L);
        if (t.kind != T_DIR) break;
        const struct ptx_type *ty = ptx_type(t);
        if (ty) {
            if (type) return PTX_BAD("%s: parameter %zu has two types", sym, idx);
            type = ty;
        } else if (tok_is(t, ".align")) {
            long long a = ptx_align(L);
            if (a < 0) return PTX_BAD("%s: parameter %zu has a bad .align", sym, idx);
            if (!ptr) { /* after .ptr, the alignment of what it points to */
                if (align) return PTX_BAD("%s: parameter %zu has two alignments", sym, idx);
                align = a;
            }
        } else if (tok_is(t, ".ptr")) {
            if (ptr) return PTX_BAD("%s: parameter %zu says .ptr twice", sym, idx);
            ptr = 1;
        } else if (ptx_space(t)) {
            if (!ptr || space) return PTX_BAD("%s: parameter %zu has a state space out of place", sym, idx);
            space = 1;
        } else {
            return PTX_BAD("%s: parameter %zu has an unknown qualifier %.*s", sym, idx, (int)(t.n > 32 ? 32 : t.n),
                           t.s);
        }
    }
    if (!type) return PTX_BAD("%s: parameter %zu has no type", sym, idx);
    if (t.kind != T_WORD || (t.s[0] >= '0' && t.s[0] <= '9')) return PTX_BAD("%s: parameter %zu has no name", sym, idx);
    lexer save = *L;
    uint32_t count = 1;
    int array = 0;
    if (tok_punct(lex_next(L), '[')) {
        long long k = tok_uint(lex_next(L), KC_PARAMS_MAX_BYTES);
        if (k <= 0 || !tok_punct(lex_next(L), ']'))
            return PTX_BAD("%s: parameter %zu has a bad array length", sym, idx);
        count = (uint32_t)k;
        array = 1;
    } else {
        *L = save;
    }
    if (ptr && array) return PTX_BAD("%s: parameter %zu is a .ptr array", sym, idx);
    uint64_t a = align ? (uint64_t)align : type->size;
    uint64_t off = ((uint64_t)*end + a - 1) / a * a;
    uint64_t size = (uint64_t)type->size * count;
    if (off + size > KC_PARAMS_MAX_BYTES)
        return PTX_BAD("%s: parameters past %u bytes (at parameter %zu)", sym, KC_PARAMS_MAX_BYTES, idx);
    out->offset = (uint32_t)off;
    out->size = (uint32_t)size;
    out->align = (uint32_t)a;
    out->cls = array ? KC_PARAM_BYTES : type->cls;
    *end = (uint32_t)(off + size);
    return KC_OK;
}

/* The parameter list after `.entry <sym>`. */
static int ptx_list(lexer *L, const char *sym, kc_params *out) {
    tok t = lex_next(L);
    if (!tok_punct(t, '(')) {
        if (tok_punct(t, '{') || t.kind == T_DIR) return KC_OK; /* no list: no parameters */
        return PTX_BAD("%s: neither a parameter list nor a body follows its name", sym);
    }
    lexer save = *L;
    if (tok_punct(lex_next(L), ')')) goto close;
    *L = save;
    size_t cap = 0;
    uint32_t end = 0;
    for (;;) {
        t = lex_next(L);
        if (t.kind == T_END) return PTX_BAD("%s: its parameter list is cut short", sym);
        if (!tok_is(t, ".param")) return PTX_BAD("%s: parameter %zu is not a .param", sym, out->n);
        if (out->n == KC_PARAMS_MAX) return PTX_BAD("%s: more than %u parameters", sym, KC_PARAMS_MAX);
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            kc_param *nv = kc_realloc(out->v, ncap * sizeof *nv);
            if (!nv) return kc_err(KC_ENOMEM, "out of memory");
            out->v = nv;
            cap = ncap;
        }
        int rc = ptx_param(L, sym, out->n, &end, &out->v[out->n]);
        if (rc) return rc;
        out->n++;
        out->total = end;
        t = lex_next(L);
        if (tok_punct(t, ')')) break;
        if (t.kind == T_END) return PTX_BAD("%s: its parameter list is cut short", sym);
        if (!tok_punct(t, ',')) return PTX_BAD("%s: parameter %zu is followed by neither ',' nor ')'", sym, out->n - 1);
    }
close:
    t = lex_next(L); /* a body or a directive must follow: a text cut here is not a whole entry */
    if (!tok_punct(t, '{') && !tok_punct(t, ';') && t.kind != T_DIR)
        return PTX_BAD("%s: nothing follows its parameter list", sym);
    return KC_OK;
}

static int read_ptx(const void *image, size_t len, const char *sym, kc_params *out) {
    const char *nul = memchr(image, 0, len); /* the driver reads PTX up to its first NUL */
    lexer L = {image, nul ? (size_t)(nul - (const char *)image) : len, 0};
    int found = 0;
    for (;;) {
        tok t = lex_next(&L);
        if (t.kind == T_END) break;
        if (!tok_is(t, ".entry") || t.kind != T_DIR) continue;
        t = lex_next(&L);
        if (t.kind != T_WORD || !tok_is(t, sym)) continue;
        if (found) return kc_err(KC_ECORRUPT, "PTX entry %s appears twice", sym);
        found = 1;
        int rc = ptx_list(&L, sym, out);
        if (rc) return rc;
    }
    if (!found) return kc_err(KC_ECORRUPT, "no PTX entry %s (no parameter table for %s)", sym, sym);
    return KC_OK;
}

int kc_params_is_kernel(const void *image, size_t len, int is_ptx, const char *lowered) {
    if (!image || !lowered) return 0;
    if (!is_ptx) {
        if (kc_elf_machine(image, len) != EM_CUDA)
            return kc_err(KC_ECORRUPT, "the image is not a cubin (looking for %s)", lowered);
        kc_elf_symbol_info fn;
        int rc = kc_elf_function(image, len, lowered, &fn);
        return rc <= 0 ? rc : (fn.other & STO_CUDA_ENTRY) && fn.shndx != 0;
    }
    const char *nul = memchr(image, 0, len);
    lexer L = {image, nul ? (size_t)(nul - (const char *)image) : len, 0};
    for (tok t = lex_next(&L); t.kind != T_END; t = lex_next(&L))
        if (t.kind == T_DIR && tok_is(t, ".entry") && (t = lex_next(&L)).kind == T_WORD && tok_is(t, lowered)) return 1;
    return 0;
}

int kc_params_read(const void *image, size_t len, int is_ptx, const char *lowered, kc_params *out) {
    if (!out) return kc_err(KC_EINVAL, "kc_params_read: no output");
    memset(out, 0, sizeof *out);
    if ((!image && len) || !lowered || !*lowered)
        return kc_err(KC_EINVAL, "kc_params_read: no image or no kernel name");
    if (!image) image = "";
    int rc = is_ptx ? read_ptx(image, len, lowered, out) : read_cubin(image, len, lowered, out);
    if (rc) kc_params_free(out);
    return rc;
}
