/*
 * elf.c — list function symbols of an ELF64 little-endian image (a cubin).
 *
 * Every offset and size read from the file is checked against the image before use.
 *
 * Callers: the tests that prove a compiled cubin holds its kernels (test_nvrtc, test_graph);
 * nothing on a lookup's path reads ELF.
 */
#include "elf.h"

#include <string.h>

#include "../common/internal.h"

#define SHT_SYMTAB 2
#define STT_FUNC 2

static int in(size_t off, size_t n, size_t len) { return off <= len && n <= len - off; }

int kc_elf_machine(const void *image, size_t len) {
    const uint8_t *p = image;
    if (len < 64 || memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || p[5] != 1) return -1;
    return kc_rd_u16(p + 18);
}

int kc_elf_functions(const void *image, size_t len, void (*cb)(const char *, void *), void *ctx) {
    const uint8_t *p = image;
    if (kc_elf_machine(image, len) < 0) return kc_err(KC_ECORRUPT, "not an ELF64 little-endian image");
    uint64_t shoff = kc_rd_u64(p + 40);
    uint16_t shentsize = kc_rd_u16(p + 58), shnum = kc_rd_u16(p + 60);
    if (shentsize < 64 || !in((size_t)shoff, (size_t)shnum * shentsize, len))
        return kc_err(KC_ECORRUPT, "ELF section table out of bounds");
    for (uint16_t i = 0; i < shnum; i++) {
        const uint8_t *sh = p + shoff + (size_t)i * shentsize;
        if (kc_rd_u32(sh + 4) != SHT_SYMTAB) continue;
        uint64_t off = kc_rd_u64(sh + 24), size = kc_rd_u64(sh + 32), entsize = kc_rd_u64(sh + 56);
        uint32_t link = kc_rd_u32(sh + 40);
        if (entsize < 24 || link >= shnum || !in((size_t)off, (size_t)size, len))
            return kc_err(KC_ECORRUPT, "ELF symbol table out of bounds");
        const uint8_t *strsh = p + shoff + (size_t)link * shentsize;
        uint64_t stroff = kc_rd_u64(strsh + 24), strsize = kc_rd_u64(strsh + 32);
        if (!in((size_t)stroff, (size_t)strsize, len) || strsize == 0 || p[stroff + strsize - 1] != 0)
            return kc_err(KC_ECORRUPT, "ELF string table out of bounds");
        for (uint64_t s = 0; s + entsize <= size; s += entsize) {
            const uint8_t *sym = p + off + s;
            uint32_t name = kc_rd_u32(sym);
            if ((sym[4] & 0xf) != STT_FUNC || name >= strsize) continue;
            cb((const char *)p + stroff + name, ctx);
        }
    }
    return KC_OK;
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
