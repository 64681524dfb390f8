/*
 * elf.h — just enough ELF64 reading to list the function symbols of a cubin, bounds-checked
 * against the bytes given (the image may come from anywhere).
 *
 * Callers: see elf.c.
 */
#ifndef KC_ELF_H
#define KC_ELF_H

#include <stddef.h>

/** Call cb(name, ctx) for each STT_FUNC symbol; KC_ECORRUPT if the image is not valid ELF64. */
int kc_elf_functions(const void *image, size_t len, void (*cb)(const char *name, void *ctx), void *ctx);
/** 1 when `name` is a function symbol of the image, 0 when not, or an error. */
int kc_elf_has_function(const void *image, size_t len, const char *name);
/** The ELF e_machine (190 = EM_CUDA), or -1. */
int kc_elf_machine(const void *image, size_t len);

#endif
