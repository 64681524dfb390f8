/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_params.c — libFuzzer target: a kernel's parameter table (compile/params.c) read from
 * arbitrary bytes, as a cubin and as PTX.
 *
 * Input: one byte whose low bit chooses PTX (1) or cubin (0), the kernel's name up to a NUL
 * (at most 255 bytes; without a NUL the name is "k" and the rest is the image), then the
 * image.  The seeds (corpus/params/) are real NVRTC output, so mutations land in the ELF
 * reader, the .nv.info walk and the PTX lexer.  A refusal is a correct answer; a crash, a
 * sanitizer report or a table that breaks params.h's promises (sorted, non-overlapping,
 * within the limits, total == end of the last) aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compile/params.h"
#include "kcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int is_ptx = data[0] & 1;
    data++, size--;
    char name[256] = "k";
    const uint8_t *nul = memchr(data, 0, size < sizeof name ? size : sizeof name);
    if (nul && nul > data) {
        memcpy(name, data, (size_t)(nul - data) + 1);
        size -= (size_t)(nul - data) + 1;
        data = nul + 1;
    }
    /* The image in a buffer of exactly its size, so that a read past it is caught. */
    uint8_t *img = malloc(size ? size : 1);
    if (!img) return 0;
    if (size) memcpy(img, data, size);
    kc_params p;
    if (kc_params_read(img, size, is_ptx, name, &p) == KC_OK) {
        uint32_t end = 0;
        if (p.n > KC_PARAMS_MAX || (p.n == 0) != (p.v == NULL)) abort();
        for (size_t i = 0; i < p.n; i++) {
            if (p.v[i].size == 0 || p.v[i].offset < end) abort();
            if (is_ptx && (p.v[i].align == 0 || (p.v[i].align & (p.v[i].align - 1)) || p.v[i].offset % p.v[i].align))
                abort();
            end = p.v[i].offset + p.v[i].size;
        }
        if (end != p.total || p.total > KC_PARAMS_MAX_BYTES) abort();
        kc_params_free(&p);
    } else if (p.v || p.n) {
        abort();
    }
    free(img);
    return 0;
}
