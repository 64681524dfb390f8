/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plant_hostile.c — puts into a cache directory objects whose names are hostile, as an imported
 * bundle's could be, one of each kind ([Note: two levels] in kcache/entry.h):
 *   1. a graph entry whose kernel and symbol names carry escape sequences (OSC title, colours;
 *      the symbol also walks out of a folder: "../../"), whose toolchain string and a digest name
 *      carry ESC and a C1 CSI byte (0x9b), and which refers to
 *   2. an image (sound: its bytes are its digests'), which is also referred to by
 *   3. a unit record whose name expression and lowered name carry escape sequences and "../";
 *   4. a graph entry whose IMAGES reference names a target that walks out of a folder and clears
 *      the screen ("d/../../x\x1b[2J"): the reader refuses it, and nothing may print or write it.
 * Prints the four keys, one per line, in that order.  Used by test_hostile_names.sh to check
 * that `kcache show`/`ls`/`stats` print no control bytes and `show --extract DIR` writes only
 * inside DIR (issue 15, item 15).
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

static const char KERNEL[] = "\x1b]0;pwned\x07kern";  /* sets the terminal's title */
static const char SYMBOL[] = "\x1b[31m../../lowered"; /* colours, and out of the folder */

/* A KERNELS section of one hostile kernel running image 0. */
static size_t kernels(unsigned char *buf) {
    unsigned char *p = buf;
    u32(&p, 1);
    str(&p, KERNEL);
    str(&p, SYMBOL);
    u32(&p, 0);
    return (size_t)(p - buf);
}

static int put(kc_cache *c, kc_entry *e, const char *what) {
    int rc = kc_cache_put(c, e);
    if (rc) fprintf(stderr, "plant: %s: %s\n", what, kc_error_last()->message);
    kc_entry_free(e);
    return rc;
}

static void print_key(const kc_key *k) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(k, hex);
    puts(hex);
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
    unsigned char bytes[64] = {0x7f, 'E', 'L', 'F'}, buf[512];
    kc_image_ref ref;
    kc_entry *img, *g, *u, *b;
    kc_key gk, uk, bk;
    memset(&gk, 0xab, sizeof gk);
    memset(&uk, 0xcd, sizeof uk);
    memset(&bk, 0xef, sizeof bk);
    kc_digest d;
    memset(&d, 1, sizeof d);
    int rc = kc_image_ref_make(&ref, "sm_80", 0, bytes, sizeof bytes);
    if (!rc) rc = kc_image_entry_new(&img, &ref, bytes);
    if (!rc) rc = kc_entry_set_toolchain(img, "nvrtc \x1b[1;31mRED");
    if (!rc) rc = put(c, img, "image");

    if (!rc) rc = kc_entry_new(&g, &gk, "sm_80");
    if (!rc) rc = kc_entry_set_images(g, &ref, 1);
    if (!rc) rc = kc_entry_set_section(g, KC_SECTION_KERNELS, buf, kernels(buf));
    if (!rc) rc = kc_entry_set_toolchain(g, "nvrtc \x1b[1;31mRED");
    if (!rc)
        rc = kc_entry_add_digest(g,
                                 "digest\x1b[0m\x9b"
                                 "31m",
                                 &d);
    if (!rc) rc = put(c, g, "graph entry");

    const char *exprs[] = {KERNEL}, *lowered[] = {SYMBOL};
    if (!rc) rc = kc_unit_entry_new(&u, &uk, &ref, exprs, lowered, 1);
    if (!rc) rc = kc_entry_set_toolchain(u, "nvrtc \x1b[1;31mRED");
    if (!rc)
        rc = kc_entry_add_digest(u,
                                 "digest\x1b[0m\x9b"
                                 "31m",
                                 &d);
    if (!rc) rc = put(c, u, "unit record");

    /* IMAGES by hand: one reference whose target is "d/../../x" and a clear-screen */
    unsigned char refs[128], *p = refs;
    u32(&p, 1);
    memcpy(p, ref.id.bytes, 16), p += 16;
    memcpy(p, ref.sha256, 32), p += 32;
    str(&p, "d/../../x\x1b[2J");
    *p++ = 0; /* cubin */
    for (int i = 0; i < 8; i++) *p++ = i == 0 ? sizeof bytes : 0;
    if (!rc) rc = kc_entry_new(&b, &bk, "sm_80");
    if (!rc) rc = kc_entry_set_section(b, KC_SECTION_IMAGES, refs, (size_t)(p - refs));
    if (!rc) rc = kc_entry_set_section(b, KC_SECTION_KERNELS, buf, kernels(buf));
    if (!rc) rc = put(c, b, "graph entry with a hostile target");
    if (rc) return 1;
    print_key(&gk);
    print_key(&ref.id);
    print_key(&uk);
    print_key(&bk);
    kc_cache_close(c);
    return 0;
}
