/* fuzz_program.c — libFuzzer target: launch-program decoding, binding and argument packing
 * (the walk is harness.h's fz_program, shared with fuzz_sections). */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_program(data, size);
    return 0;
}
