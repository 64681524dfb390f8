/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf.h — just enough ELF64 reading to list the function symbols of a cubin and find a section
 * by name, bounds-checked against the bytes given (the image may come from anywhere).
 *
 * Callers: see elf.c.
 */
#ifndef KC_ELF_H
#define KC_ELF_H

#include <stddef.h>
#include <stdint.h>

/** Call cb(name, ctx) for each STT_FUNC symbol; KC_ECORRUPT if the image is not valid ELF64. */
int kc_elf_functions(const void *image, size_t len, void (*cb)(const char *name, void *ctx), void *ctx);
/** 1 when `name` is a function symbol of the image, 0 when not, or an error. */
int kc_elf_has_function(const void *image, size_t len, const char *name);
/** The ELF e_machine (190 = EM_CUDA), or -1. */
int kc_elf_machine(const void *image, size_t len);

/** A function symbol found by kc_elf_function. */
typedef struct kc_elf_symbol_info {
    uint8_t info;   /**< st_info (binding and type) */
    uint8_t other;  /**< st_other (a CUDA kernel has STO_CUDA_ENTRY, 0x10) */
    uint16_t shndx; /**< st_shndx: the section of its code (0: undefined) */
} kc_elf_symbol_info;

/**
 * The function symbol named exactly `name`: 1 and `*out` filled when there is one, 0 when
 * there is none, KC_ECORRUPT when the image is malformed or two function symbols bear the name.
 */
int kc_elf_function(const void *image, size_t len, const char *name, kc_elf_symbol_info *out);

/** A section found by kc_elf_section; `data` is borrowed from the image (NULL for SHT_NOBITS). */
typedef struct kc_elf_section_info {
    const uint8_t *data;
    size_t size;    /**< bytes at `data` (0 for SHT_NOBITS) */
    uint32_t type;  /**< sh_type */
    uint64_t flags; /**< sh_flags */
    uint32_t info;  /**< sh_info */
    size_t index;   /**< the section's index in the section table */
} kc_elf_section_info;

/**
 * The section named exactly `name`: 1 and `*out` filled when there is one, 0 when there is
 * none, KC_ECORRUPT when the image, its section table or the section is malformed or two
 * sections bear the name.
 */
int kc_elf_section(const void *image, size_t len, const char *name, kc_elf_section_info *out);

#endif
