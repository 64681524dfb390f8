/* SPDX-License-Identifier: Apache-2.0 */
/* docs/fleet.md's "Back ends" block.  What its text says the program has: an open function of its
 * own back end, `my_open` (here one that opens nothing).  Run: the block registers the scheme, and
 * a second registration of it must be refused. */
#include <kcache.h>
#include <kcache/sys/store.h>
#include <stdio.h>

static int my_open(kc_store_backend **out, const char *url, const kc_remote_limits *limits) {
    (void)url, (void)limits;
    *out = NULL;
    return KC_EINVAL;
}

static int docs_block(void) {
@BLOCK@
    return kc_store_register(&mine);
}

int main(void) {
    if (docs_block() != KC_EINVAL) { /* the block registered "mine"; registering it again is refused */
        fprintf(stderr, "a second registration of a scheme was not refused\n");
        return 1;
    }
    return 0;
}
