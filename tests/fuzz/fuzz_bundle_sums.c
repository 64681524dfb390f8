/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_bundle_sums.c — libFuzzer target: a bundle whose checksums the harness makes right,
 * imported (dry run) into a scratch cache.  fuzz_bundle keeps fuzzing the checksums themselves.
 *
 * Input := count:u32 content   (content as in bundle.h: toc entry_bytes*)
 * The harness sets every toc entry's sum that it can frame, fixes each framed entry's own
 * checksums (harness.h fz_fix_entry), compresses the content and writes a header with right
 * sizes and sums — so mutations reach the table of contents, the names and the entries; each
 * framed entry that decodes is also walked section by section as the loader would read it
 * (fz_consume: KERNELS, the launch programs, WRAPPERS, PARAMS). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[256];
    kc_cache *cache = fz_scratch_cache("bsums", path, sizeof path);
    if (size < 4) return 0;
    uint32_t count = fz_rd32(data);
    size_t raw = size - 4;
    uint8_t *c = malloc(raw ? raw : 1);
    if (!c) return 0;
    memcpy(c, data + 4, raw);
    /* Walk the toc as far as it frames: name_len:u16 name offset:u64 size:u64 sum:u64. */
    size_t at = 0, nframed = 0;
    struct {
        size_t sum_at;
        uint64_t off, len;
    } toc[64];
    for (uint32_t i = 0; i < count && nframed < 64; i++) {
        if (raw - at < 2) break;
        size_t nl = (size_t)c[at] | (size_t)c[at + 1] << 8;
        if (raw - at - 2 < nl + 24) break;
        at += 2 + nl;
        toc[nframed].off = fz_rd64(c + at);
        toc[nframed].len = fz_rd64(c + at + 8);
        toc[nframed].sum_at = at + 16;
        nframed++;
        at += 24;
    }
    for (size_t i = 0; i < nframed; i++) {
        size_t body = raw - at; /* the entries follow the toc */
        if (toc[i].off > body || toc[i].len > body - toc[i].off) continue;
        uint8_t *ent = c + at + toc[i].off;
        fz_fix_entry(ent, (size_t)toc[i].len);
        fz_wr64(c + toc[i].sum_at, XXH3_64bits(ent, (size_t)toc[i].len));
        /* The import (dry run) verifies an entry but never reads its sections; the loader does:
         * walk every one, PARAMS and the launch programs included (harness.h fz_consume). */
        kc_entry *e = NULL;
        if (kc_entry_decode(&e, ent, (size_t)toc[i].len) == KC_OK) {
            fz_consume(e);
            kc_entry_free(e);
        }
    }
    size_t cap = ZSTD_compressBound(raw);
    uint8_t *file = malloc(48 + cap);
    if (!file) {
        free(c);
        return 0;
    }
    size_t stored = ZSTD_compress(file + 48, cap, c, raw, 1);
    if (ZSTD_isError(stored)) abort();
    static const uint8_t magic[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};
    memcpy(file, magic, 8);
    file[8] = 1, file[9] = 0, file[10] = 0, file[11] = 0;
    memcpy(file + 12, data, 4);
    fz_wr64(file + 16, raw);
    fz_wr64(file + 24, stored);
    fz_wr64(file + 32, XXH3_64bits(c, raw));
    fz_wr64(file + 40, XXH3_64bits(file, 40));
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(file, 1, 48 + stored, f);
    fclose(f);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    int rc = kc_bundle_import(cache, path, 1, &r);
    if (getenv("KCACHE_FUZZ_VERBOSE")) fprintf(stderr, "import: %d %s\n", rc, rc ? kc_error_last()->message : "ok");
    free(file);
    free(c);
    return 0;
}
