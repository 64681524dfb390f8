/*
 * plant_hostile.c — puts into a cache directory one entry whose names are hostile, as an
 * imported entry's could be: a KERNELS image target that walks out of a folder and carries a
 * terminal escape, kernel and symbol names with escape sequences (OSC title, colours), a
 * toolchain string and a digest name with ESC and a C1 CSI byte (0x9b).  Prints the key.
 * Used by test_hostile_names.sh to check that `kcache show`/`ls` print no control bytes and
 * `show --extract DIR` writes only inside DIR (issue 15, item 15).
 *   kc_plant_hostile DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"

static void u32(unsigned char **p, unsigned v) {
    for (int i = 0; i < 4; i++) *(*p)++ = (unsigned char)(v >> (8 * i));
}
static void str(unsigned char **p, const char *s) {
    u32(p, (unsigned)strlen(s));
    memcpy(*p, s, strlen(s));
    *p += strlen(s);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    kc_options o = KC_OPTIONS_INIT;
    o.dir = argv[1];
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) {
        fprintf(stderr, "%s\n", kc_error_last()->message);
        return 1;
    }
    kc_key k;
    memset(&k, 0xab, sizeof k);
    kc_entry *e;
    if (kc_entry_new(&e, &k, "sm_80")) return 1;
    unsigned char buf[512], *p = buf;
    u32(&p, 1);                                   /* one image */
    str(&p, "d/../../x\x1b[2J");                  /* its target: out of the folder, and clear-screen */
    *p++ = 0;                                     /* cubin */
    for (int i = 0; i < 8; i++) *p++ = i == 0 ? 3 : 0; /* len:u64 = 3 */
    memcpy(p, "ELF", 3), p += 3;
    u32(&p, 1);                                   /* one kernel */
    str(&p, "\x1b]0;pwned\x07kern");             /* its name: sets the terminal's title */
    str(&p, "\x1b[31mlowered");                   /* its symbol: colours */
    u32(&p, 0);
    int rc = kc_entry_set_section(e, KC_SECTION_KERNELS, buf, (size_t)(p - buf));
    if (!rc) rc = kc_entry_set_toolchain(e, "nvrtc \x1b[1;31mRED");
    kc_digest d;
    memset(&d, 1, sizeof d);
    if (!rc) rc = kc_entry_add_digest(e, "digest\x1b[0m\x9b" "31m", &d);
    if (!rc) rc = kc_cache_put(c, e);
    if (rc) {
        fprintf(stderr, "plant: %s\n", kc_error_last()->message);
        return 1;
    }
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(&k, hex);
    puts(hex);
    kc_entry_free(e);
    kc_cache_close(c);
    return 0;
}
