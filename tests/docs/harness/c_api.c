/* SPDX-License-Identifier: Apache-2.0 */
/* The README's "The C API" block.  What its text says the caller has: the kernel's CUDA source,
 * `cuda_source`, and an image of it the caller compiled, `cubin` of `cubin_len` bytes. */
#include <kcache.h>
static void readme_block(const char *cuda_source, const void *cubin, size_t cubin_len) {
@BLOCK@
}

int main(void) {
    (void)readme_block; /* built and linked, not run: it would use the default cache directory */
    return 0;
}
