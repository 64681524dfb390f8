/* SPDX-License-Identifier: Apache-2.0 */
/*
 * double_image.c — the driver double's image reader: a cubin's ELF (or PTX text, through
 * double_ptx.c) turned into
 * what the driver knows after a load (target, kernels, each kernel's parameter table, static
 * shared memory, launch bounds, registers), and the rules for which device runs which image.
 *
 * The one idea: this is written from the formats, independently of src/compile/ (a double
 * that shared the code under test would prove nothing), and it trusts no byte: every offset,
 * size, count and string is checked against the image's length before it is read, and
 * whatever does not add up is CUDA_ERROR_INVALID_IMAGE (cubin) or CUDA_ERROR_INVALID_PTX.
 *
 * What the cubins say, found by experiment with CUDA 13.0 (NVRTC through kc_compile_kernel
 * for sm_75 … sm_121, sm_90a, sm_100a/f, sm_103a/f, sm_110f, sm_120a/f; nvcc -cubin agrees):
 *  - e_ident[EI_OSABI] is 0x41 and e_ident[EI_ABIVERSION] 8; the SM is (e_flags >> 8) & 0xff
 *    (0x6005a04 → 90, 0x6006702 → 103).  Older toolkits wrote ABI version 7 with the SM in
 *    e_flags & 0xff (and OSABI 0x33); both are read, any other version is refused.
 *  - The `a`/`f` suffix is not in e_flags.  `a` is in .nv.compat (attribute 9, 2-byte value
 *    1; 0 for plain and `f`) and in the .note.nv.tkinfo note's command line ("-arch sm_90a");
 *    `f` is ONLY in that command line: sm_100 and sm_100f cubins are byte-identical but for
 *    it.  So the variant is read from the note's "-arch sm_XY[a|f]" when its number matches
 *    e_flags, and .nv.compat's `a` is honoured even without a note (the stricter reading wins).
 *  - Kernels are STT_FUNC symbols (st_other 0x10, STO_CUDA_ENTRY) whose section is
 *    `.text.<name>`; non-entry device functions are local symbols with other section names.
 *  - `.nv.info.<name>` holds attributes as u8 format, u8 attribute, then: formats 1-3 a 2-byte
 *    value (4 bytes in all; format 1's is padding), format 4 a u16 size and that many bytes.
 *    EIATTR_KPARAM_INFO (0x17): u32 index, u16 ordinal, u16 offset, u32 bits with the size
 *    in (bits >> 18) & 0x3fff; EIATTR_CBANK_PARAM_SIZE (0x19): the buffer's total;
 *    EIATTR_MAX_THREADS (0x05) and EIATTR_REQNTID (0x10): three u32; 0x3d: the cluster dims.
 *  - Registers: sm_75 … sm_89 cubins keep them in `.text.<name>`'s sh_info >> 24; from sm_90
 *    that byte is 0 and `.nv.info` has EIATTR_REGCOUNT (0x2f: u32 symbol index, u32 count).
 *  - Static shared memory is `.nv.shared.<name>`'s size; from sm_90 (cubins that carry a
 *    `.nv.shared.reserved.0` section) that section starts with the 1 KiB the driver reserves
 *    per block, which `ptxas -v` does not count ("256 bytes smem" for a 1280-byte section),
 *    so the double takes it off.
 * PTX text is read by double_ptx.c.
 *
 * Who calls it: the double's load paths (double_module.c) and kcd_image_check.  Must not:
 * read a byte outside [image, image + len), or keep a pointer into the image after returning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define WHY(...) ((void)(why && cap ? snprintf(why, cap, __VA_ARGS__) : 0))

#define EM_CUDA 190
#define SHT_SYMTAB 2
#define SHT_STRTAB 3
#define SHT_NOTE 7
#define SHT_NOBITS 8
#define STT_FUNC 2
#define EIATTR_MAX_THREADS 0x05
#define EIATTR_REQNTID 0x10
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define EIATTR_REGCOUNT 0x2f
#define EIATTR_CTA_PER_CLUSTER 0x3d
#define NVCOMPAT_ARCH_SPECIFIC 9
#define RESERVED_SMEM 1024u

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }
/* [off, off + n) lies inside [0, len) */
static int fits(size_t len, uint64_t off, uint64_t n) { return off <= len && n <= len - off; }

void kcd_image_free(kcd_image *im) {
    if (!im) return;
    for (size_t i = 0; i < im->nkernels; i++) {
        free(im->k[i].name);
        free(im->k[i].poff);
        free(im->k[i].psize);
    }
    free(im->k);
    memset(im, 0, sizeof *im);
}

const kcd_kinfo *kcd_image_kernel(const kcd_image *im, const char *name) {
    for (size_t i = 0; name && i < im->nkernels; i++)
        if (!strcmp(im->k[i].name, name)) return &im->k[i];
    return NULL;
}

kcd_kinfo *kcd_image_add_kernel(kcd_image *im, const char *name, size_t n) {
    kcd_kinfo *v = realloc(im->k, (im->nkernels + 1) * sizeof *v);
    if (!v) return NULL;
    im->k = v;
    kcd_kinfo *k = &v[im->nkernels];
    memset(k, 0, sizeof *k);
    if (!(k->name = malloc(n + 1))) return NULL;
    memcpy(k->name, name, n);
    k->name[n] = '\0';
    k->max_threads = 1024;
    im->nkernels++;
    return k;
}

static int kp_cmp(const void *a, const void *b) {
    const kcd_kp *x = a, *y = b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}
int kcd_image_set_params(kcd_kinfo *k, kcd_kp *v, uint32_t n, uint32_t total, char *why, size_t cap) {
    if (n) qsort(v, n, sizeof *v, kp_cmp);
    uint32_t end = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (v[i].ord != i) return WHY("kernel %s: parameter ordinals are not 0..%u", k->name, n - 1), -1;
        if (v[i].off < end) return WHY("kernel %s: parameter %u overlaps the one before", k->name, i), -1;
        end = v[i].off + v[i].size;
    }
    if (end > KCD_MAX_PARAM_BYTES || total > KCD_MAX_PARAM_BYTES)
        return WHY("kernel %s: %u bytes of parameters (the most is %u)", k->name, end > total ? end : total,
                   KCD_MAX_PARAM_BYTES),
               -1;
    if (total && total < end) return WHY("kernel %s: parameter size %u < the table's end %u", k->name, total, end), -1;
    k->ptotal = total ? total : end;
    k->nparams = n;
    if (n) {
        k->poff = malloc(n * sizeof *k->poff);
        k->psize = malloc(n * sizeof *k->psize);
        if (!k->poff || !k->psize) return WHY("out of memory"), -1;
        for (uint32_t i = 0; i < n; i++) k->poff[i] = v[i].off, k->psize[i] = v[i].size;
    }
    return 0;
}

/* ================================ cubin ================================ */

typedef struct sec {
    const char *name;
    uint32_t type, link, info;
    uint64_t off, size, entsize;
} sec;

typedef struct elf {
    const uint8_t *p;
    size_t len;
    unsigned n;
    sec *s;
} elf;

static const sec *sec_named(const elf *e, const char *prefix, const char *name) {
    size_t pl = strlen(prefix);
    for (unsigned i = 0; i < e->n; i++)
        if (!strncmp(e->s[i].name, prefix, pl) && !strcmp(e->s[i].name + pl, name)) return &e->s[i];
    return NULL;
}

/* A NUL-terminated string at `off` inside a string-table section, or NULL. */
static const char *str_at(const elf *e, const sec *t, uint64_t off) {
    if (off >= t->size) return NULL;
    const char *s = (const char *)e->p + t->off + off;
    return memchr(s, 0, t->size - off) ? s : NULL;
}

/* The next attribute of an .nv.info-style section: 1 with *a filled, 0 at the end, -1 malformed. */
typedef struct attr {
    uint8_t fmt, code;
    uint16_t val;
    const uint8_t *data;
    uint16_t len;
} attr;
static int attr_next(const uint8_t *b, uint64_t n, uint64_t *off, attr *a) {
    if (*off == n) return 0;
    if (n - *off < 4) return -1;
    const uint8_t *p = b + *off;
    a->fmt = p[0], a->code = p[1], a->val = le16(p + 2), a->data = NULL, a->len = 0;
    if (a->fmt >= 1 && a->fmt <= 3) {
        *off += 4;
        return 1;
    }
    if (a->fmt != 4 || n - *off - 4 < a->val) return -1;
    a->data = p + 4, a->len = a->val;
    *off += 4 + (uint64_t)a->val;
    return 1;
}

/* The variant from .note.nv.tkinfo's "-arch sm_XY[a|f]" when its number is `sm`, else 0. */
static char note_variant(const elf *e, int sm) {
    const sec *t = sec_named(e, ".note.nv.tkinfo", "");
    if (!t || t->type != SHT_NOTE) return 0;
    const char *b = (const char *)e->p + t->off;
    static const char key[] = "-arch sm_";
    for (uint64_t i = 0; i + sizeof key - 1 < t->size; i++) {
        if (memcmp(b + i, key, sizeof key - 1)) continue;
        uint64_t j = i + sizeof key - 1;
        int v = 0, nd = 0;
        while (j < t->size && b[j] >= '0' && b[j] <= '9' && nd < 4) v = v * 10 + (b[j++] - '0'), nd++;
        if (!nd || v != sm) return 0;
        return j < t->size && (b[j] == 'a' || b[j] == 'f') ? b[j] : 0;
    }
    return 0;
}

/* .nv.compat's arch-specific flag (attribute 9 = 1). */
static int compat_arch_specific(const elf *e) {
    const sec *c = sec_named(e, ".nv.compat", "");
    if (!c || c->type == SHT_NOBITS) return 0;
    uint64_t off = 0;
    attr a;
    while (attr_next(e->p + c->off, c->size, &off, &a) == 1)
        if (a.code == NVCOMPAT_ARCH_SPECIFIC && a.fmt == 2) return a.val == 1;
    return 0;
}

/* One kernel's table and limits from its .nv.info.<name>. */
static int read_kernel_info(const elf *e, kcd_kinfo *k, char *why, size_t cap) {
    const sec *s = sec_named(e, ".nv.info.", k->name);
    if (!s) return kcd_image_set_params(k, NULL, 0, 0, why, cap); /* no attributes: no parameters */
    if (s->type == SHT_NOBITS) return WHY(".nv.info.%s has no bytes", k->name), -1;
    const uint8_t *b = e->p + s->off;
    uint64_t off = 0;
    attr a;
    uint32_t n = 0, total = 0;
    int r;
    while ((r = attr_next(b, s->size, &off, &a)) == 1) n += a.code == EIATTR_KPARAM_INFO;
    if (r < 0) return WHY(".nv.info.%s: a malformed attribute", k->name), -1;
    if (n > KCD_MAX_PARAMS) return WHY("kernel %s: %u parameters", k->name, n), -1;
    kcd_kp *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) return WHY("out of memory"), -1;
    uint32_t i = 0;
    off = 0;
    while (attr_next(b, s->size, &off, &a) == 1) {
        if (a.code == EIATTR_KPARAM_INFO) {
            if (a.fmt != 4 || a.len < 12) {
                free(v);
                return WHY("kernel %s: a parameter entry of %u bytes", k->name, a.len), -1;
            }
            uint16_t ord = le16(a.data + 4);
            for (uint32_t j = 0; j < i; j++)
                if (v[j].ord == ord) {
                    free(v);
                    return WHY("kernel %s: parameter %u described twice", k->name, ord), -1;
                }
            v[i].ord = ord, v[i].off = le16(a.data + 6), v[i].size = (le32(a.data + 8) >> 18) & 0x3fff;
            i++;
        } else if (a.code == EIATTR_CBANK_PARAM_SIZE && a.fmt == 3) {
            total = a.val;
        } else if ((a.code == EIATTR_MAX_THREADS || a.code == EIATTR_REQNTID || a.code == EIATTR_CTA_PER_CLUSTER) &&
                   a.fmt == 4) {
            if (a.len < 12) {
                free(v);
                return WHY("kernel %s: attribute 0x%02x of %u bytes", k->name, a.code, a.len), -1;
            }
            uint32_t d[3] = {le32(a.data), le32(a.data + 4), le32(a.data + 8)};
            uint64_t prod = (uint64_t)(d[0] ? d[0] : 1) * (d[1] ? d[1] : 1) * (d[2] ? d[2] : 1);
            if (a.code == EIATTR_CTA_PER_CLUSTER) {
                memcpy(k->cluster, d, sizeof d);
            } else {
                if (prod < k->max_threads) k->max_threads = (uint32_t)prod;
                if (a.code == EIATTR_REQNTID) memcpy(k->reqntid, d, sizeof d);
            }
        }
    }
    r = kcd_image_set_params(k, v, n, total, why, cap);
    free(v);
    return r;
}

/* EIATTR_REGCOUNT for symbol `sym` in the module-wide .nv.info; 0 when absent. */
static uint32_t regcount(const elf *e, uint32_t sym) {
    const sec *s = sec_named(e, ".nv.info", "");
    if (!s || s->type == SHT_NOBITS) return 0;
    uint64_t off = 0;
    attr a;
    while (attr_next(e->p + s->off, s->size, &off, &a) == 1)
        if (a.code == EIATTR_REGCOUNT && a.fmt == 4 && a.len >= 8 && le32(a.data) == sym) return le32(a.data + 4);
    return 0;
}

static CUresult read_cubin(const uint8_t *p, size_t len, kcd_image *im, char *why, size_t cap) {
    if (len < 64 || memcmp(p,
                           "\x7f"
                           "ELF",
                           4))
        return WHY("an ELF image of %zu bytes", len), CUDA_ERROR_INVALID_IMAGE;
    if (p[4] != 2 || p[5] != 1 || p[6] != 1)
        return WHY("not a 64-bit little-endian ELF (class %u, data %u)", p[4], p[5]), CUDA_ERROR_INVALID_IMAGE;
    if (le16(p + 18) != EM_CUDA)
        return WHY("e_machine %u is not EM_CUDA (190)", le16(p + 18)), CUDA_ERROR_INVALID_IMAGE;
    if (le16(p + 16) != 2)
        return WHY("ELF type %u: not an executable cubin (link it first)", le16(p + 16)), CUDA_ERROR_INVALID_IMAGE;
    uint32_t flags = le32(p + 48);
    int abi = p[8], sm;
    if (abi == 8 && p[7] == 0x41) sm = (flags >> 8) & 0xff;
    else if (abi == 7 && p[7] == 0x33) sm = flags & 0xff;
    else return WHY("unknown CUDA ELF ABI (OSABI 0x%02x, version %d)", p[7], abi), CUDA_ERROR_INVALID_IMAGE;
    if (sm < 10) return WHY("e_flags 0x%x name no SM", flags), CUDA_ERROR_INVALID_IMAGE;
    uint64_t shoff = le64(p + 40);
    unsigned shnum = le16(p + 60), shent = le16(p + 58), shstr = le16(p + 62);
    if (le16(p + 52) != 64 || shent != 64 || shnum == 0 || shstr >= shnum || !fits(len, shoff, (uint64_t)shnum * 64))
        return WHY("section headers out of bounds (%u at %llu in %zu bytes)", shnum, (unsigned long long)shoff, len),
               CUDA_ERROR_INVALID_IMAGE;
    uint16_t phnum = le16(p + 56);
    if (phnum && (le16(p + 54) != 56 || !fits(len, le64(p + 32), (uint64_t)phnum * 56)))
        return WHY("program headers out of bounds"), CUDA_ERROR_INVALID_IMAGE;

    elf e = {p, len, shnum, calloc(shnum, sizeof(sec))};
    if (!e.s) return WHY("out of memory"), CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_ERROR_INVALID_IMAGE;
    uint32_t *name_off = calloc(shnum, sizeof *name_off);
    if (!name_off) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        WHY("out of memory");
        goto out;
    }
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *h = p + shoff + (uint64_t)i * 64;
        sec *s = &e.s[i];
        name_off[i] = le32(h);
        s->type = le32(h + 4), s->off = le64(h + 24), s->size = le64(h + 32);
        s->link = le32(h + 40), s->info = le32(h + 44), s->entsize = le64(h + 56);
        if (s->type != SHT_NOBITS && s->type != 0 && !fits(len, s->off, s->size)) {
            WHY("section %u (%llu bytes at %llu) lies outside the %zu-byte image", i, (unsigned long long)s->size,
                (unsigned long long)s->off, len);
            goto out;
        }
    }
    const sec *strs = &e.s[shstr];
    if (strs->type != SHT_STRTAB) {
        WHY("the section-name table is not a string table");
        goto out;
    }
    for (unsigned i = 0; i < shnum; i++)
        if (!(e.s[i].name = str_at(&e, strs, name_off[i]))) {
            WHY("section %u's name lies outside the name table", i);
            goto out;
        }

    char variant = note_variant(&e, sm);
    if (compat_arch_specific(&e)) variant = 'a';
    im->is_ptx = 0, im->arch = sm, im->variant = variant, im->virt_arch = sm, im->bytes = len;
    snprintf(im->target, sizeof im->target, "sm_%d%s", sm, variant == 'a' ? "a" : variant == 'f' ? "f" : "");
    const sec *cu = sec_named(&e, ".note.nv.cuinfo", "");
    if (cu && cu->type == SHT_NOTE &&
        cu->size >= 12) { /* note: namesz, descsz, type, name; desc: u16 version, u16 virtual SM */
        const uint8_t *d = p + cu->off;
        uint64_t doff = 12 + (((uint64_t)le32(d) + 3) & ~(uint64_t)3);
        if (le32(d + 4) >= 4 && fits(cu->size, doff, 4) && le16(d + doff + 2) >= 10) im->virt_arch = le16(d + doff + 2);
    }
    int reserved = sec_named(&e, ".nv.shared.reserved.0", "") != NULL;

    const sec *sym = NULL;
    for (unsigned i = 0; i < shnum; i++)
        if (e.s[i].type == SHT_SYMTAB) {
            if (sym) {
                WHY("two symbol tables");
                goto out;
            }
            sym = &e.s[i];
        }
    if (!sym) {
        rc = CUDA_SUCCESS; /* no symbols, no kernels */
        goto out;
    }
    if (sym->entsize != 24 || sym->size % 24 || sym->link >= shnum || e.s[sym->link].type != SHT_STRTAB) {
        WHY("a malformed symbol table");
        goto out;
    }
    for (uint64_t i = 0; i < sym->size / 24; i++) {
        const uint8_t *y = p + sym->off + i * 24;
        if ((y[4] & 0xf) != STT_FUNC) continue;
        const char *name = str_at(&e, &e.s[sym->link], le32(y));
        uint16_t shndx = le16(y + 6);
        if (!name) {
            WHY("symbol %llu's name lies outside its string table", (unsigned long long)i);
            goto out;
        }
        if (shndx >= shnum || strncmp(e.s[shndx].name, ".text.", 6) || strcmp(e.s[shndx].name + 6, name)) continue;
        if (!*name || kcd_image_kernel(im, name)) {
            WHY("kernel '%s' defined twice", name);
            goto out;
        }
        kcd_kinfo *k = kcd_image_add_kernel(im, name, strlen(name));
        if (!k) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            WHY("out of memory");
            goto out;
        }
        k->regs = e.s[shndx].info >> 24;
        if (!k->regs) k->regs = regcount(&e, (uint32_t)i);
        const sec *sh = sec_named(&e, ".nv.shared.", name);
        if (sh) {
            uint64_t b = sh->size;
            if (reserved) b = b > RESERVED_SMEM ? b - RESERVED_SMEM : 0;
            if (b > UINT32_MAX) {
                WHY("kernel %s: %llu bytes of shared memory", name, (unsigned long long)b);
                goto out;
            }
            k->static_shared = (uint32_t)b;
        }
        if (read_kernel_info(&e, k, why, cap)) goto out;
    }
    rc = CUDA_SUCCESS;
out:
    free(name_off);
    free(e.s);
    return rc;
}

/* ================================ the entry points ================================ */

CUresult kcd_image_read(const void *image, size_t len, kcd_image *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    if (why && cap) why[0] = '\0';
    const uint8_t *p = image;
    if (!p || !len) return WHY("no image"), CUDA_ERROR_INVALID_VALUE;
    CUresult rc;
    if (p[0] == 0x7f) rc = read_cubin(p, len, out, why, cap); /* ELF, or what is left of one */
    else if (len >= 4 && le32(p) == 0xba55ed50u)
        rc = (WHY("a fatbinary: the double reads cubins and PTX only"), CUDA_ERROR_NOT_SUPPORTED);
    else rc = kcd_ptx_read(image, len, out, why, cap);
    if (rc != CUDA_SUCCESS) kcd_image_free(out);
    return rc;
}

size_t kcd_image_claimed(const void *image) {
    const uint8_t *p = image; /* byte by byte: a short NUL-terminated text stops at its NUL */
    if (!(p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')) {
        if (p[0] == 0x50 && p[1] == 0xed && p[2] == 0x55 && p[3] == 0xba) return 4; /* a fatbinary */
        size_t n = strnlen(image, KCD_IMAGE_MAX);
        return n < KCD_IMAGE_MAX ? n + 1 : n;
    }
    if (p[4] != 2) return 64; /* the reader says what is wrong */
    uint64_t end = 64, shoff = le64(p + 40), phoff = le64(p + 32);
    unsigned shnum = le16(p + 60), phnum = le16(p + 56), phent = le16(p + 54);
    if (phnum) {
        if (phoff > KCD_IMAGE_MAX || (uint64_t)phnum * phent > KCD_IMAGE_MAX - phoff) return end;
        if (phoff + (uint64_t)phnum * phent > end) end = phoff + (uint64_t)phnum * phent;
    }
    if (!shnum || le16(p + 58) != 64 || shoff > KCD_IMAGE_MAX || (uint64_t)shnum * 64 > KCD_IMAGE_MAX - shoff)
        return end;
    if (shoff + (uint64_t)shnum * 64 > end) end = shoff + (uint64_t)shnum * 64;
    for (unsigned i = 0; i < shnum; i++) {
        const uint8_t *h = p + shoff + (uint64_t)i * 64;
        uint32_t type = le32(h + 4);
        uint64_t off = le64(h + 24), size = le64(h + 32);
        if (type == SHT_NOBITS || type == 0) continue;
        if (off > KCD_IMAGE_MAX || size > KCD_IMAGE_MAX - off) return end; /* the reader refuses it */
        if (off + size > end) end = off + size;
    }
    return (size_t)end;
}

CUresult kcd_image_fits(const kcd_image *im, int major, int minor, char *why, size_t cap) {
    int X = im->arch / 10, Y = im->arch % 10, ok;
    const char *rule;
    if (im->variant == 'a') ok = major == X && minor == Y, rule = "only on exactly";
    else if (im->variant == 'f' || !im->is_ptx)
        ok = major == X && minor >= Y, rule = "on the same major, minor at least";
    else ok = major > X || (major == X && minor >= Y), rule = "on capability at least";
    if (ok) return CUDA_SUCCESS;
    WHY("%s runs %s %d.%d; the device is %d.%d", im->target, rule, X, Y, major, minor);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
}
