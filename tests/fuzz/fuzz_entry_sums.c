/* fuzz_entry_sums.c — libFuzzer target: an entry whose checksums the harness makes right
 * (harness.h fz_fix_entry) before decoding, so mutations reach the section table, the codecs,
 * META and, through fz_consume, the KERNELS, program, WRAPPERS and PARAMS parsers (PARAMS as
 * the loader reads it: kc_abi_decode, kc_abi_check_program).  fuzz_entry keeps
 * fuzzing the checksums themselves.  Invariant: kc_entry_check_stored takes every entry a decode
 * takes ([Note: checked, not inflated]). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    fz_fix_entry(p, size);
    kc_entry *e = NULL;
    int rc = kc_entry_decode(&e, p, size);
    if (size >= 96) { /* the check without inflating takes all a decode takes (under the header's own name) */
        kc_key key;
        char variant[33];
        memcpy(key.bytes, p + 16, 16);
        memcpy(variant, p + 32, 32);
        variant[32] = '\0';
        int crc = kc_entry_check_stored(p, size, &key, variant, -1, NULL);
        if (rc == KC_OK && crc != KC_OK) abort();
    }
    if (getenv("KCACHE_FUZZ_VERBOSE")) fprintf(stderr, "decode: %d %s\n", rc, rc ? kc_error_last()->message : "ok");
    if (rc == KC_OK) {
        fz_consume(e);
        kc_entry_free(e);
    }
    free(p);
    return 0;
}
