/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_entry.c — libFuzzer target: the entry decoder on arbitrary bytes (never crash, never over-read). */
#include <stddef.h>
#include <stdint.h>

#include "kcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kc_entry *e = NULL;
    if (kc_entry_decode(&e, data, size) == KC_OK) {
        void *out;
        size_t len;
        if (kc_entry_encode(e, &out, &len) == KC_OK) kc_free(out); /* a decoded entry re-encodes */
        kc_entry_free(e);
    }
    return 0;
}
