/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fill.c — test helper: put N entries (keys from their index, variant sm_90, SIZE bytes
 * of KERNELS each) into the cache at DIR and print their keys, one per line.  They are named
 * as graph entries but refer to no image (no IMAGES section: [Note: two levels] in
 * kcache/entry.h), so each is one object of SIZE-ish bytes: stand-ins for counting, listing,
 * LRU and gc, never looked up as graphs.  Tests of the two levels compile real graphs.
 *   kc_fill DIR N [SIZE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: kc_fill DIR N [SIZE]\n");
        return 2;
    }
    int n = atoi(argv[2]);
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 1000;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = argv[1];
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) {
        fprintf(stderr, "kc_fill: %s\n", kc_error_last()->message);
        return 1;
    }
    unsigned char *buf = malloc(size);
    for (int i = 0; i < n; i++) {
        kc_key_builder *kb;
        kc_key_builder_new(&kb);
        kc_key_add_u64(kb, KC_COMP_EXTRA, "fill", (uint64_t)i);
        kc_key_add_string(kb, KC_COMP_GRAPH, "source", "__global__ void k() {}");
        kc_key k;
        kc_key_finish(kb, &k);
        for (size_t j = 0; j < size; j++) buf[j] = (unsigned char)(rand() & 0xff);
        kc_entry *e;
        kc_entry_new(&e, &k, "sm_90");
        kc_entry_add_key_digests(e, kb);
        kc_entry_set_toolchain(e, "test");
        kc_entry_set_section(e, KC_SECTION_KERNELS, buf, size);
        if (kc_cache_put(c, e) != KC_OK) {
            fprintf(stderr, "kc_fill: %s\n", kc_error_last()->message);
            return 1;
        }
        char hex[KC_KEY_HEX_LEN + 1];
        kc_key_to_hex(&k, hex);
        printf("%s\n", hex);
        kc_entry_free(e);
        kc_key_builder_free(kb);
    }
    free(buf);
    kc_cache_close(c);
    return 0;
}
