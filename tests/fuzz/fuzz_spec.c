/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_spec.c — libFuzzer target: graph-spec JSON parsing (kernel files beside it exist), by
 * kc_graph_desc_load.  The custom mutator (mutate_json.h) keeps the document well formed and
 * changes one value, member or type at a time, with the spec's own keys, dtypes, argument kinds
 * and expressions as tokens, so mutations reach the spec's checks behind the JSON reader. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kcache.h"
#include "mutate_json.h"

static const char *const tokens[] = {
    "name",
    "kernels",
    "id",
    "file",
    "entry",
    "headers",
    "options",
    "include_digest",
    "inputs",
    "outputs",
    "saved",
    "dtype",
    "sizes",
    "requires_grad",
    "forward",
    "backward",
    "kernel",
    "grid",
    "block",
    "shared",
    "args",
    "scratch",
    "wrappers",
    "version",
    "params",
    "backend",
    "steps",
    "toolkit_headers",
    "zero",
    "type",
    "f32",
    "f16",
    "bf16",
    "f64",
    "i32",
    "i64",
    "u8",
    "u32",
    "u64",
    "bool",
    "k.cu",
    "softmax.cu",
    "common.cuh",
    "../k.cu",
    "k",
    "N",
    "M",
    "input:0",
    "output:0",
    "grad_out:0",
    "grad_in:0+1",
    "scratch:0",
    "scratch:0+4",
    "input:0+N-1",
    "e32:N",
    "e64:N",
    "arg:lr",
    "null",
    "u32:4000000000",
    "i32:-1",
    "f32:1.5",
    "f64:0.25",
    "bytes:01",
    "bytes:0000803f",
    "ceildiv(N, 128)",
    "min(N, 4)",
    "max(N, M)",
    "N * 4",
    "N % 0",
    "N / 0",
    "device_sm_count",
    "device_warp_size * 4",
    "-N",
    "philox",
    "cuda_graph",
    "lr",
    "seed",
    "-DX=1",
    "--use_fast_math",
    "",
};

static char dir[64], path[128];

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    return fz_json_mutate(data, size, max, seed, tokens, sizeof tokens / sizeof *tokens);
}

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
