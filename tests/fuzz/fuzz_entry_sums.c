/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_entry_sums.c — libFuzzer target: entries whose checksums are right, so mutations reach the
 * section table, the codecs, META and, through fz_consume, the KERNELS, program, WRAPPERS, PARAMS,
 * ORIGIN and second-level parsers (PARAMS as the loader reads it: kc_abi_decode,
 * kc_abi_check_program).  The custom mutator (mutate_entry.h) decodes the container, changes one
 * section's inflated bytes, a header field (any version 1-5, flags, variant, key) or the table, and
 * encodes it again with fresh lengths, offsets, zstd frames and checksums; an entry whose flags ask
 * for a MAC is sealed with FZ_MAC_KEY.  fuzz_entry keeps fuzzing the checksums themselves.
 * Invariants: kc_entry_check_stored takes every entry a decode takes ([Note: checked, not
 * inflated]); a MAC that verifies under FZ_MAC_KEY is the one kc_entry_seal makes for the bytes
 * (nothing the fuzzer wrote forges one). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mutate_entry.h"

#define FZ_MAC_KEY "fuzz-mac-key-0123456789abcdef"

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    size_t n = fz_entry_mutate(data, size, max, seed);
    if (n >= FZ_E_HDR && (data[12] & 1) && !(data[12] & 2)) { /* seal: the MAC the target checks */
        void *p = malloc(n);
        size_t len = n;
        if (p && (memcpy(p, data, n), kc_entry_seal(&p, &len, FZ_MAC_KEY, strlen(FZ_MAC_KEY))) == KC_OK && len <= max) {
            memcpy(data, p, len);
            n = len;
        }
        free(p);
        kc_error_clear();
    }
    return n;
}

/* A MAC that verifies must be the one sealing the same bytes makes (HMAC is deterministic). */
static void mac_check(const uint8_t *p, size_t size) {
    if (kc_entry_mac_check(p, size, FZ_MAC_KEY, strlen(FZ_MAC_KEY)) != KC_OK) return;
    void *again = malloc(size);
    size_t alen = size;
    if (!again) return;
    memcpy(again, p, size);
    if (kc_entry_seal(&again, &alen, FZ_MAC_KEY, strlen(FZ_MAC_KEY)) != KC_OK || alen != size ||
        memcmp(again, p, size) != 0) {
        fprintf(stderr, "fuzz_entry_sums: a MAC verified that sealing does not make\n");
        abort();
    }
    free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return 0;
    memcpy(p, data, size);
    fz_fix_entry(p, size);
    mac_check(p, size);
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
    fz_say("decode", rc);
    if (rc == KC_OK) {
        fz_consume(e);
        kc_entry_free(e);
    }
    free(p);
    return 0;
}
