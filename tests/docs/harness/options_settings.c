/* SPDX-License-Identifier: Apache-2.0 */
/* docs/guide.md's "Settings from a program" block: settings by name in kc_options (version 5).
 * Built and linked, not run: it names a cache directory of the host. */
#include <kcache.h>
static int guide_block(void) {
@BLOCK@
    kc_cache *c;
    int rc = kc_cache_open(&c, &opts);
    if (rc == KC_OK) kc_cache_close(c);
    return rc;
}

int main(void) {
    (void)guide_block;
    return 0;
}
