/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_bundle.c — libFuzzer target: bundle import (dry run) of arbitrary bytes into a scratch cache. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[256];
    kc_cache *cache = fz_scratch_cache("bundle", path, sizeof path);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    kc_bundle_import(cache, path, 1, &r);
    return 0;
}
