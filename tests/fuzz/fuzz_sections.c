/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_sections.c — libFuzzer target: an entry built through the public API from the fuzzer's
 * sections, encoded (so every checksum is right), decoded, and walked by fz_consume
 * (harness.h), PARAMS included (fz_params): the mutations land in the section parsers themselves.
 *
 * Input := { tag:u8 len:u16 bytes[len] }*   (len is cut to what is left)
 *   tag % 12: 2 FORWARD, 3 BACKWARD, 4 KERNELS, 5 WRAPPERS, 6 RUNTIME_META, 7 PARAMS, 8 IMAGES,
 *             9 IMAGE, 10 UNIT (the bytes, raw); 11 an ORIGIN record "name=value" (v4); 1 the META
 *             toolchain string; 0 a META digest named by the bytes.
 * The entry is a graph entry ("sm_80"); an image ("img") when an IMAGE section is among them; a
 * unit record ("unit") when a UNIT section is and no IMAGE is (fuzz_image.c goes deeper there).
 * The seeds (tests/fuzz/corpus/sections/) are real entries written in this form by
 * tools/fuzz_seeds.sh.
 *
 * Invariant checked: what the library encodes, it decodes.  Must not: abort on anything the
 * library refuses (a refusal is a correct answer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kc_key key;
    memset(&key, 0x5a, sizeof key);
    const char *variant = "sm_80";
    for (size_t at = 0, left = size; left >= 3;) { /* which kind of object the sections make */
        size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
        if (data[at] % 12 == KC_SECTION_IMAGE) variant = KC_VARIANT_IMAGE;
        else if (data[at] % 12 == KC_SECTION_UNIT && variant[0] == 's') variant = KC_VARIANT_UNIT;
        at += 3, left -= 3;
        if (len > left) len = left;
        at += len, left -= len;
    }
    kc_entry *e = NULL;
    if (kc_entry_new(&e, &key, variant) != KC_OK) abort();
    while (size >= 3) {
        unsigned tag = data[0] % 12;
        size_t len = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3, size -= 3;
        if (len > size) len = size;
        char s[256];
        snprintf(s, sizeof s, "%.*s", (int)(len < 255 ? len : 255), (const char *)data);
        if (tag == KC_SECTION_ORIGIN) { /* "name=value": a refused name or value is a correct answer */
            char *eq = strchr(s, '=');
            if (eq) *eq = 0;
            kc_entry_set_origin(e, s, eq ? eq + 1 : "");
        } else if (tag >= 2) kc_entry_set_section(e, (kc_section_type)tag, data, len);
        else if (tag == 1) kc_entry_set_toolchain(e, s);
        else {
            kc_digest d;
            memset(&d, (int)len, sizeof d);
            kc_entry_add_digest(e, s, &d);
        }
        data += len, size -= len;
    }
    void *bytes;
    size_t n;
    if (kc_entry_encode(e, &bytes, &n) == KC_OK) {
        kc_entry *back = NULL;
        if (kc_entry_decode(&back, bytes, n) != KC_OK) {
            fprintf(stderr, "an encoded entry does not decode: %s\n", kc_error_last()->message);
            abort();
        }
        fz_consume(back); /* every section's parser, PARAMS as the loader reads it (harness.h) */
        kc_entry_free(back);
        kc_free(bytes);
    }
    kc_entry_free(e);
    return 0;
}
