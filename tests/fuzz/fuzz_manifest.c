/* fuzz_manifest.c — libFuzzer target: manifest parsing, and --arch lists (the input's first
 * line, when it has several). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"

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
