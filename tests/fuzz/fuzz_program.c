/* fuzz_program.c — libFuzzer target: launch-program decoding, binding and argument packing. */
#include <stdint.h>
#include <string.h>

#include "graph/program.h"
#include "kcache.h"

static int resolve(void *ctx, int role, size_t i, void **ptr) {
    (void)ctx;
    *ptr = (void *)(uintptr_t)(role * 1000 + (int)i);
    return KC_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kc_program *p;
    if (kc_program_decode(data, size, &p) != KC_OK) return 0;
    int64_t syms[64];
    for (size_t i = 0; i < 64; i++) syms[i] = (int64_t)(i * 37 + 1);
    if (p->nsyms <= 64)
        for (size_t i = 0; i < p->nsteps; i++) {
            unsigned g[3], b[3], sh;
            kc_argval vals[256];
            void *args[256];
            uint64_t philox[2] = {1, 2};
            kc_program_dims(p, i, syms, g, b, &sh);
            if (p->steps[i].nargs <= 256) kc_program_args(p, i, syms, resolve, NULL, philox, vals, args);
        }
    kc_program_free(p);
    return 0;
}
