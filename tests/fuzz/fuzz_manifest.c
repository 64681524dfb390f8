/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_manifest.c — libFuzzer target: manifest parsing, and --arch lists (the input's first
 * line, when it has several).  The custom mutator (mutate_json.h) keeps the manifest well formed
 * and changes one value, member or type at a time, with its keys and targets as tokens: a member
 * doubled or renamed reaches the strict reader's "appears twice" and the manifest's "unknown
 * field", a number beyond a double its range check, another type each "must be". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"
#include "mutate_json.h"

static const char *const tokens[] = {
    "graphs",     "archs",      "sm_80",       "sm_86",         "sm_90",  "sm_90a", "sm_100",  "sm_120",
    "compute_80", "compute_90", "sm_",         "compute_",      "native", "all",    "k.json",  "../k.json",
    "/abs.json",  "",           "sm_80,sm_90", "sm_9999999999", "arches", "name",   "x\n\x1b", "graphs ",
};

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    return fz_json_mutate(data, size, max, seed, tokens, sizeof tokens / sizeof *tokens);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kc_manifest *m;
    if (kc_manifest_parse(&m, (const char *)data, size, "/nonexistent", "fuzz.json") != KC_OK) return 0;
    size_t total = 0;
    for (size_t i = 0; i < kc_manifest_graph_count(m); i++) total += strlen(kc_manifest_graph(m, i));
    for (size_t i = 0; i < kc_manifest_arch_count(m); i++) total += strlen(kc_manifest_arch(m, i));
    const uint8_t *nl = memchr(data, '\n', size);
    if (nl) { /* the first line as an --arch list */
        size_t n = (size_t)(nl - data);
        char *list = malloc(n + 1);
        memcpy(list, data, n);
        list[n] = '\0';
        kc_manifest_set_archs(m, list);
        free(list);
    }
    kc_manifest_free(m);
    return total == (size_t)-1; /* keep the walk */
}
