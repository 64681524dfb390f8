/* fuzz_spec.c — libFuzzer target: graph-spec JSON parsing (kernel files beside it exist). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kcache.h"

static char dir[64], path[128];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        char tmpl[] = "/tmp/kcfuzz-spec-XXXXXX";
        if (!mkdtemp(tmpl)) abort();
        snprintf(dir, sizeof dir, "%s", tmpl);
        const char *files[] = {"k.cu", "softmax.cu", "common.cuh"};
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            FILE *f = fopen(path, "w");
            fputs("extern \"C\" __global__ void k(float *x) {}\n", f);
            fclose(f);
        }
        snprintf(path, sizeof path, "%s/spec.json", dir);
    }
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, path) == KC_OK) kc_graph_desc_free(d);
    return 0;
}
