/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf.c — list the function symbols of an ELF64 little-endian image (a cubin) and find a
 * section by name.
 *
 * The one idea: the image is untrusted bytes, so it is read through one checked view
 * (elf_open): the section and program header tables, and the file range of every section
 * and segment, must lie inside the bytes given — so a cut image is KC_ECORRUPT wherever it
 * is cut, as the driver would refuse it — and every other offset and size read from the file
 * is checked before use; never a read out of bounds.
 *
 * Callers: the tests that prove a compiled cubin holds its kernels (test_nvrtc, test_graph);
 * compile/params.c (a kernel's parameter table, from `.nv.info.<kernel>`).  Must not: load
 * anything, or trust a length it has not checked.
 */
#include "elf.h"

#include <string.h>

#include "../common/internal.h"

#define SHT_SYMTAB 2
#define SHT_NOBITS 8
#define STT_FUNC 2
#define SHN_XINDEX 0xffffu
#define SH_SIZE 64  /* the fields read below lie inside an ELF64 section header */
#define PH_SIZE 56  /* ... and inside an ELF64 program header */
#define SYM_SIZE 24 /* ... and inside an ELF64 symbol */

static int in(uint64_t off, uint64_t n, size_t len) { return off <= len && n <= len - off; }

/* The section table as a checked view: shnum headers of shentsize bytes at p + shoff. */
typedef struct elf_view {
    const uint8_t *p;
    size_t len;
    uint64_t shoff;
    size_t shentsize, shnum;
} elf_view;

static const uint8_t *elf_sh(const elf_view *v, size_t i) { return v->p + v->shoff + i * v->shentsize; }

int kc_elf_machine(const void *image, size_t len) {
    const uint8_t *p = image;
    if (!p || len < 64 ||
        memcmp(p,
               "\x7f"
               "ELF",
               4) != 0 ||
        p[4] != 2 || p[5] != 1)
        return -1;
    return kc_rd_u16(p + 18);
}

/* Check the header and the section table; extended numbering (e_shnum 0) read from section 0. */
static int elf_open(const void *image, size_t len, elf_view *v) {
    const uint8_t *p = image;
    if (kc_elf_machine(image, len) < 0) return kc_err(KC_ECORRUPT, "not an ELF64 little-endian image");
    v->p = p;
    v->len = len;
    v->shoff = kc_rd_u64(p + 40);
    v->shentsize = kc_rd_u16(p + 58);
    v->shnum = kc_rd_u16(p + 60);
    if (v->shnum == 0 && v->shoff == 0) return KC_OK; /* no section table at all */
    if (v->shentsize < SH_SIZE || !in(v->shoff, v->shentsize, len))
        return kc_err(KC_ECORRUPT, "ELF section table out of bounds");
    if (v->shnum == 0) { /* more than 0xff00 sections: the count is section 0's sh_size */
        uint64_t n = kc_rd_u64(elf_sh(v, 0) + 32);
        if (n > len / v->shentsize) return kc_err(KC_ECORRUPT, "ELF section count out of bounds");
        v->shnum = (size_t)n;
    }
    if (!in(v->shoff, (uint64_t)v->shnum * v->shentsize, len))
        return kc_err(KC_ECORRUPT, "ELF section table out of bounds");
    for (size_t i = 1; i < v->shnum; i++) {
        const uint8_t *sh = elf_sh(v, i);
        uint32_t type = kc_rd_u32(sh + 4);
        if (type != 0 && type != SHT_NOBITS && !in(kc_rd_u64(sh + 24), kc_rd_u64(sh + 32), len))
            return kc_err(KC_ECORRUPT, "ELF section %zu out of bounds", i);
    }
    uint64_t phoff = kc_rd_u64(p + 32);
    size_t phentsize = kc_rd_u16(p + 54), phnum = kc_rd_u16(p + 56);
    if (phnum) {
        if (phentsize < PH_SIZE || !in(phoff, (uint64_t)phnum * phentsize, len))
            return kc_err(KC_ECORRUPT, "ELF program header table out of bounds");
        for (size_t i = 0; i < phnum; i++) {
            const uint8_t *ph = p + phoff + i * phentsize;
            if (!in(kc_rd_u64(ph + 8), kc_rd_u64(ph + 32), len))
                return kc_err(KC_ECORRUPT, "ELF segment %zu out of bounds", i);
        }
    }
    return KC_OK;
}

/* Call cb(name, raw symbol, ctx) for every symbol of every symbol table. */
static int elf_each_symbol(const elf_view *v, void (*cb)(const char *, const uint8_t *, void *), void *ctx) {
    const uint8_t *p = v->p;
    for (size_t i = 0; i < v->shnum; i++) {
        const uint8_t *sh = elf_sh(v, i);
        if (kc_rd_u32(sh + 4) != SHT_SYMTAB) continue;
        uint64_t off = kc_rd_u64(sh + 24), size = kc_rd_u64(sh + 32), entsize = kc_rd_u64(sh + 56);
        uint32_t link = kc_rd_u32(sh + 40);
        if (entsize < SYM_SIZE || link >= v->shnum || !in(off, size, v->len))
            return kc_err(KC_ECORRUPT, "ELF symbol table out of bounds");
        const uint8_t *strsh = elf_sh(v, link);
        uint64_t stroff = kc_rd_u64(strsh + 24), strsize = kc_rd_u64(strsh + 32);
        if (!in(stroff, strsize, v->len) || strsize == 0 || p[stroff + strsize - 1] != 0)
            return kc_err(KC_ECORRUPT, "ELF string table out of bounds");
        for (uint64_t s = 0; s + entsize <= size; s += entsize) {
            const uint8_t *sym = p + off + s;
            uint32_t name = kc_rd_u32(sym);
            if (name < strsize)
                cb((const char *)p + stroff + name, sym, ctx); /* NUL-terminated: the table ends in one */
        }
    }
    return KC_OK;
}

typedef struct funcs_ctx {
    void (*cb)(const char *, void *);
    void *ctx;
} funcs_ctx;

static void funcs_cb(const char *name, const uint8_t *sym, void *ctx) {
    funcs_ctx *f = ctx;
    if ((sym[4] & 0xf) == STT_FUNC) f->cb(name, f->ctx);
}

int kc_elf_functions(const void *image, size_t len, void (*cb)(const char *, void *), void *ctx) {
    elf_view v;
    int rc = elf_open(image, len, &v);
    if (rc) return rc;
    funcs_ctx f = {cb, ctx};
    return elf_each_symbol(&v, funcs_cb, &f);
}

typedef struct find_ctx {
    const char *name;
    int found;
} find_ctx;

static void find_cb(const char *name, void *ctx) {
    find_ctx *f = ctx;
    if (strcmp(name, f->name) == 0) f->found = 1;
}

int kc_elf_has_function(const void *image, size_t len, const char *name) {
    find_ctx f = {name, 0};
    int rc = kc_elf_functions(image, len, find_cb, &f);
    return rc ? rc : f.found;
}

int kc_elf_section(const void *image, size_t len, const char *name, kc_elf_section_info *out) {
    memset(out, 0, sizeof *out);
    elf_view v;
    int rc = elf_open(image, len, &v);
    if (rc) return rc;
    if (v.shnum == 0) return 0;
    size_t shstrndx = kc_rd_u16(v.p + 62);
    if (shstrndx == SHN_XINDEX) shstrndx = kc_rd_u32(elf_sh(&v, 0) + 40); /* extended: section 0's sh_link */
    if (shstrndx == 0 || shstrndx >= v.shnum) return kc_err(KC_ECORRUPT, "ELF section name table index out of bounds");
    const uint8_t *strsh = elf_sh(&v, shstrndx);
    uint64_t stroff = kc_rd_u64(strsh + 24), strsize = kc_rd_u64(strsh + 32);
    if (!in(stroff, strsize, len) || strsize == 0 || v.p[stroff + strsize - 1] != 0)
        return kc_err(KC_ECORRUPT, "ELF section name table out of bounds");
    const char *names = (const char *)v.p + stroff;
    size_t want = strlen(name);
    int found = 0;
    for (size_t i = 0; i < v.shnum; i++) {
        const uint8_t *sh = elf_sh(&v, i);
        uint32_t at = kc_rd_u32(sh);
        /* The table ends in a NUL, so the name at `at` is a string inside it. */
        if (at >= strsize || strsize - at <= want || memcmp(names + at, name, want + 1) != 0) continue;
        if (found) return kc_err(KC_ECORRUPT, "ELF section %s appears twice", name);
        uint32_t type = kc_rd_u32(sh + 4);
        uint64_t off = kc_rd_u64(sh + 24), size = kc_rd_u64(sh + 32);
        if (type != SHT_NOBITS && !in(off, size, len)) return kc_err(KC_ECORRUPT, "ELF section %s out of bounds", name);
        out->data = type == SHT_NOBITS ? NULL : v.p + off;
        out->size = type == SHT_NOBITS ? 0 : (size_t)size;
        out->type = type;
        out->flags = kc_rd_u64(sh + 8);
        out->info = kc_rd_u32(sh + 44);
        out->index = i;
        found = 1;
    }
    return found;
}

typedef struct sym_ctx {
    const char *name;
    kc_elf_symbol_info *out;
    int found;
} sym_ctx;

static void sym_cb(const char *name, const uint8_t *sym, void *ctx) {
    sym_ctx *f = ctx;
    if ((sym[4] & 0xf) != STT_FUNC || strcmp(name, f->name) != 0) return;
    if (f->found++) return;
    f->out->info = sym[4];
    f->out->other = sym[5];
    f->out->shndx = kc_rd_u16(sym + 6);
}

int kc_elf_function(const void *image, size_t len, const char *name, kc_elf_symbol_info *out) {
    memset(out, 0, sizeof *out);
    elf_view v;
    int rc = elf_open(image, len, &v);
    if (rc) return rc;
    sym_ctx f = {name, out, 0};
    if ((rc = elf_each_symbol(&v, sym_cb, &f))) return rc;
    if (f.found > 1) return kc_err(KC_ECORRUPT, "ELF function %s appears %d times", name, f.found);
    return f.found;
}
