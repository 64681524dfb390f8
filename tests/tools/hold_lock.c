/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hold_lock.c — test helper: take the compile lock of KEY.VARIANT in the cache at DIR,
 * print "locked", and sleep until killed (the SIGKILL test of single-flight).
 *   kc_hold_lock DIR KEY VARIANT
 */
#include <stdio.h>
#include <unistd.h>

#include "kcache.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: kc_hold_lock DIR KEY VARIANT\n");
        return 2;
    }
    kc_options o = KC_OPTIONS_INIT;
    o.dir = argv[1];
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    kc_key k;
    kc_lock *lk;
    if (kc_cache_open(&c, &o) != KC_OK || kc_key_from_hex(&k, argv[2]) != KC_OK ||
        kc_cache_trylock(c, &k, argv[3], &lk) != KC_OK || !lk) {
        fprintf(stderr, "kc_hold_lock: %s\n", kc_error_last()->message);
        return 1;
    }
    printf("locked\n");
    fflush(stdout);
    for (;;) pause();
}
