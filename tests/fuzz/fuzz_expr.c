/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_expr.c — libFuzzer target: launch expressions (checked arithmetic: no UB, no crash). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    static const char *names[] = {"M", "N", "K"};
    static const int64_t vals[] = {INT64_MAX, -3, 0};
    int64_t v;
    kc_expr_eval(s, names, vals, 3, &v);
    free(s);
    return 0;
}
