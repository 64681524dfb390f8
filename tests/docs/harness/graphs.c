/* SPDX-License-Identifier: Apache-2.0 */
/* The README's "Graphs" block.  What its text says the caller has: an open `cache`, the tensors
 * `x`, `gamma`, `beta` and `grad_out`, and a CUDA `stream`. */
#include <kcache.h>
static void readme_block(kc_cache *cache, kc_tensor x, kc_tensor gamma, kc_tensor beta, kc_tensor grad_out,
                         void *stream) {
@BLOCK@
}

int main(void) {
    (void)readme_block;
    return 0;
}
