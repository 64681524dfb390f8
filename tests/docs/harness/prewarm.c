/* SPDX-License-Identifier: Apache-2.0 */
/* The README's prewarm-from-C block.  What its text says the caller has: an open `cache`. */
#include <kcache.h>
#include <stdio.h>

static void readme_block(kc_cache *cache) {
@BLOCK@
}

int main(void) {
    (void)readme_block;
    return 0;
}
