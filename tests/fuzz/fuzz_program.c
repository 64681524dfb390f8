/* fuzz_program.c — libFuzzer target: launch-program decoding, binding and argument packing
 * (the walk is harness.h's fz_program, shared with the entry targets).  Input: one FORWARD or
 * BACKWARD section's bytes (grammar in src/graph/program.c); the seeds (corpus/program/) are
 * those of real entries, written by tools/fuzz_seeds.sh. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_program(data, size);
    return 0;
}
