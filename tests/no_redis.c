/* SPDX-License-Identifier: Apache-2.0 */
/* The stand-in for a test labelled redis in a build without the redis back end (KCACHE_WITH_REDIS=OFF,
 * or no hiredis): it says so and is skipped (KC_SKIP_CODE). */
#include <stdio.h>

int main(void) {
    puts("skipped: this build has no redis back end (hiredis)");
    return KC_SKIP_CODE;
}
