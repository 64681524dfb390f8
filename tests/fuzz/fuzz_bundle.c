/* fuzz_bundle.c — libFuzzer target: bundle import (dry run) of arbitrary bytes into a scratch cache. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kcache.h"

static kc_cache *cache;
static char path[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!cache) {
        char tmpl[] = "/tmp/kcfuzz-bundle-XXXXXX";
        char *d = mkdtemp(tmpl);
        kc_options o = KC_OPTIONS_INIT;
        o.dir = d;
        o.flags = KC_OPEN_NO_ENV;
        if (!d || kc_cache_open(&cache, &o) != KC_OK) abort();
        snprintf(path, sizeof path, "%s/in.kcb", d);
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    kc_bundle_report r;
    kc_bundle_import(cache, path, 1, &r);
    return 0;
}
