/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_verify.c — kc_cache_verify over two levels (cache/verify.c; [Note: two levels] in
 * kcache/entry.h): a sound cache checks every image and reference; a graph entry whose image is
 * missing is reported dangling and left in place; an image whose bytes were changed (container
 * checksums intact) fails XXH3-128, one whose recorded SHA-256 was changed fails only the full
 * check — both quarantined, their graphs reported; an image that is not the one referred to is a
 * bad reference; an older format's object is stale, not corrupt, and stays for gc.
 */
#include "kcache.h"
#include "helpers.h"

#include <dirent.h>

#include "store/two_level.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("verify", &dir, &cache) == KC_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static size_t quarantined(void) {
    char q[1024];
    snprintf(q, sizeof q, "%s/v1/quarantine", dir);
    DIR *d = opendir(q);
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) n += de->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* Store an image whose IMAGE section was changed at `offset` after it was made: re-encoded, so
 * the container's checksums pass and only the image's own checks can fail. */
static void put_tampered_image(const kc_image_ref *ref, int seed, size_t offset) {
    uint8_t *b = malloc(ref->len);
    assert_non_null(b);
    tl_bytes(seed, b, (size_t)ref->len);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, ref, b), KC_OK);
    free(b);
    const void *sec;
    size_t len;
    assert_int_equal(kc_entry_section(e, KC_SECTION_IMAGE, &sec, &len), KC_OK);
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, sec, len);
    assert_true(offset < len);
    copy[offset] ^= 0x40;
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_IMAGE, copy, len), KC_OK);
    free(copy);
    assert_int_equal(kc_cache_put(cache, e), KC_OK);
    kc_entry_free(e);
}

static void test_sound_cache(void **state) {
    (void)state;
    kc_image_ref img[3];
    for (int i = 0; i < 3; i++) tl_image(cache, 1 + i, 2000, "sm_90", &img[i]);
    kc_key g1 = kct_key("graph", 1), g2 = kct_key("graph", 2), u = kct_key("unit", 1);
    tl_graph(cache, &g1, img, 2);
    tl_graph(cache, &g2, img + 1, 2);
    tl_unit(cache, &u, &img[2]);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.checked, 6);
    assert_int_equal(r.ok, 6);
    assert_int_equal(r.images_checked, 3);
    assert_int_equal(r.refs_checked, 5);
    assert_int_equal(r.corrupt + r.quarantined + r.stale + r.missing_refs + r.bad_refs + r.dangling, 0);
}

static void test_missing_image_is_reported_not_removed(void **state) {
    (void)state;
    kc_image_ref a, b;
    tl_image(cache, 10, 1500, "sm_90", &a);
    tl_image(cache, 11, 1500, "sm_90", &b);
    kc_key g = kct_key("graph", 10);
    kc_image_ref two[2] = {a, b};
    tl_graph(cache, &g, two, 2);
    char p[1024];
    tl_path(dir, &b.id, "img", p, sizeof p);
    assert_int_equal(unlink(p), 0);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.dangling, 1);
    assert_int_equal(r.missing_refs, 1);
    assert_int_equal(r.bad_refs, 0);
    assert_int_equal(r.refs_checked, 2);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(r.quarantined, 0);
    assert_true(tl_exists(dir, &g, "sm_90")); /* reported, not removed: gc's job */
    assert_int_equal(quarantined(), 0);
}

/* The image's bytes changed: XXH3-128 (its name) fails. */
static void test_tampered_image_bytes(void **state) {
    (void)state;
    kc_image_ref a;
    uint8_t b[3000];
    tl_bytes(20, b, sizeof b);
    assert_int_equal(kc_image_ref_make(&a, "sm_90", 0, b, sizeof b), KC_OK);
    /* ref := id[16] sha256[32] target:str(4 + len) is_ptx:u8 len:u64, then the bytes */
    size_t bytes_at = 16 + 32 + 4 + strlen(a.target) + 1 + 8;
    put_tampered_image(&a, 20, bytes_at + 1234);
    kc_key g = kct_key("graph", 20);
    tl_graph(cache, &g, &a, 1);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.quarantined, 1);
    assert_int_equal(r.images_checked, 1);
    assert_int_equal(r.dangling, 1);
    assert_int_equal(r.bad_refs, 1);
    assert_false(tl_exists(dir, &a.id, "img"));
    assert_int_equal(quarantined(), 1);
    assert_true(tl_exists(dir, &g, "sm_90"));
    /* Once quarantined, the next verify finds the image missing. */
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(r.missing_refs, 1);
    assert_int_equal(r.dangling, 1);
}

/* The image's recorded SHA-256 changed: XXH3-128 passes (what a read checks), SHA-256 fails —
 * only verify's full check catches it. */
static void test_tampered_image_sha(void **state) {
    (void)state;
    kc_image_ref a;
    uint8_t b[2000];
    tl_bytes(30, b, sizeof b);
    assert_int_equal(kc_image_ref_make(&a, "sm_90", 0, b, sizeof b), KC_OK);
    put_tampered_image(&a, 30, 16 + 5);
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &a.id, "img", &e), KC_OK);
    assert_int_equal(kc_image_entry_read(e, NULL, 0, NULL, NULL, NULL), KC_OK); /* the cheap check passes */
    kc_entry_free(e);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.quarantined, 1);
    assert_false(tl_exists(dir, &a.id, "img"));
}

/* An image that is sound but not the one referred to (the graph's reference names another
 * target for the same bytes): a bad reference, the image itself not corrupt. */
static void test_image_not_the_one_referred_to(void **state) {
    (void)state;
    kc_image_ref stored, referred;
    tl_image(cache, 40, 1000, "sm_80", &stored);
    uint8_t b[1000];
    tl_bytes(40, b, sizeof b);
    assert_int_equal(kc_image_ref_make(&referred, "sm_90", 0, b, sizeof b), KC_OK);
    assert_memory_equal(referred.id.bytes, stored.id.bytes, sizeof stored.id.bytes);
    kc_key g = kct_key("graph", 40);
    tl_graph(cache, &g, &referred, 1);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(r.bad_refs, 1);
    assert_int_equal(r.dangling, 1);
    assert_int_equal(r.missing_refs, 0);
    assert_true(tl_exists(dir, &stored.id, "img"));
}

/* An older format's objects are stale: counted, never corrupt, never quarantined, left for gc. */
static void test_older_format_is_stale(void **state) {
    (void)state;
    kc_key old_graph = kct_key("old", 1), old_image = kct_key("old", 2);
    tl_write_v2(dir, &old_graph, "sm_90");
    tl_write_v2(dir, &old_image, "img");
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.checked, 2);
    assert_int_equal(r.stale, 2);
    assert_int_equal(r.corrupt, 0);
    assert_int_equal(r.quarantined, 0);
    assert_true(tl_exists(dir, &old_graph, "sm_90"));
    assert_true(tl_exists(dir, &old_image, "img"));
    kc_gc_report g = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &g), KC_OK);
    assert_int_equal(g.stale_removed, 2);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_sound_cache),        T(test_missing_image_is_reported_not_removed), T(test_tampered_image_bytes),
        T(test_tampered_image_sha), T(test_image_not_the_one_referred_to),         T(test_older_format_is_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
