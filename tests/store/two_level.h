/* SPDX-License-Identifier: Apache-2.0 */
/*
 * two_level.h — building two-level caches by hand for the gc and verify tests
 * ([Note: two levels] in kcache/entry.h): images, graph entries that refer to them, unit
 * records, objects of an older format version, and the paths, ages and counts of their files.
 *
 * The one idea: every object is made through the public entry API and stored with
 * kc_cache_put, as the graph part would, but with any bytes in the graph's own sections, so the
 * tests of the store and the cache need no compiler and no graph.  Include after helpers.h and
 * kcache.h; for tests only.
 */
#ifndef KC_TEST_TWO_LEVEL_H
#define KC_TEST_TWO_LEVEL_H

#include <sys/stat.h>
#include <utime.h>
#include <xxhash.h>

/** Deterministic image bytes of `len` for `seed`, as incompressible as a cubin (so an object's
 *  size on disk is about its bytes). */
static inline void tl_bytes(int seed, uint8_t *out, size_t len) {
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(seed + 1);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out[i] = (uint8_t)(x >> 32);
    }
}

/** Store an image of `len` deterministic bytes for `target`; its reference in *ref. */
static inline void tl_image(kc_cache *c, int seed, size_t len, const char *target, kc_image_ref *ref) {
    uint8_t *b = malloc(len);
    assert_non_null(b);
    tl_bytes(seed, b, len);
    assert_int_equal(kc_image_ref_make(ref, target, 0, b, len), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, ref, b), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
    free(b);
}

/** Store a graph entry "<key>.sm_90" referring to `refs` (its other sections any bytes). */
static inline void tl_graph(kc_cache *c, const kc_key *key, const kc_image_ref *refs, size_t n) {
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, key, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_set_images(e, refs, n), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, "forward", 7), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "kernels", 7), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_PARAMS, "params", 6), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
}

/** Store a unit record "<key>.unit" whose unit compiled to `ref`. */
static inline void tl_unit(kc_cache *c, const kc_key *key, const kc_image_ref *ref) {
    const char *expr[] = {"kernel_a"}, *lowered[] = {"_Z8kernel_av"};
    kc_entry *e;
    assert_int_equal(kc_unit_entry_new(&e, key, ref, expr, lowered, 1), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
}

/** The file of object "<key>.<variant>" in cache directory `dir`. */
static inline void tl_path(const char *dir, const kc_key *key, const char *variant, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hex);
    snprintf(out, cap, "%s/v1/%.2s/%s.%s.kce", dir, hex, hex, variant);
}

static inline int tl_exists(const char *dir, const kc_key *key, const char *variant) {
    char p[1024];
    tl_path(dir, key, variant, p, sizeof p);
    return access(p, F_OK) == 0;
}

/** Set an object's time `seconds` into the past (its LRU time; an orphan's age). */
static inline void tl_age(const char *dir, const kc_key *key, const char *variant, long seconds) {
    char p[1024];
    tl_path(dir, key, variant, p, sizeof p);
    struct utimbuf t = {time(NULL) - seconds, time(NULL) - seconds};
    assert_int_equal(utime(p, &t), 0);
}

/**
 * Write "<key>.<variant>" as an entry of format version 2 (a whole, consistent container: its
 * header checksum recomputed after the version is changed), as an older cache left it.
 */
static inline void tl_write_v2(const char *dir, const kc_key *key, const char *variant) {
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, key, variant), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "old kernels with their images", 29), KC_OK);
    void *data;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &data, &len), KC_OK);
    kc_entry_free(e);
    uint8_t *h = data;
    h[8] = 2, h[9] = 0; /* version:u16 */
    uint32_t nsec = (uint32_t)h[72] | (uint32_t)h[73] << 8;
    uint8_t tmp[88 + 16 * 40];
    memcpy(tmp, h, 88);
    memcpy(tmp + 88, h + 96, (size_t)nsec * 40);
    uint64_t sum = XXH3_64bits(tmp, 88 + (size_t)nsec * 40);
    for (int i = 0; i < 8; i++) h[88 + i] = (uint8_t)(sum >> (8 * i));
    assert_int_equal(kc_entry_peek_version(data, len), 2);
    char p[1024];
    tl_path(dir, key, variant, p, sizeof p);
    assert_int_equal(kct_write(p, data, len), 0);
    free(data);
}

/** The number of objects (".kce" files) in the cache's shards, and their bytes. */
static inline void tl_count(const char *dir, uint64_t *files, uint64_t *bytes) {
    char v1[1024];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    *files = 0;
    *bytes = 0;
    for (int s = 0; s < 256; s++) {
        char d[1100];
        snprintf(d, sizeof d, "%s/%02x", v1, s);
        DIR *dd = opendir(d);
        if (!dd) continue;
        struct dirent *de;
        while ((de = readdir(dd)) != NULL) {
            size_t n = strlen(de->d_name);
            if (de->d_name[0] == '.' || n < 4 || strcmp(de->d_name + n - 4, ".kce") != 0) continue;
            char p[1400];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", d, de->d_name);
            if (stat(p, &st) == 0) (*files)++, *bytes += (uint64_t)st.st_size;
        }
        closedir(dd);
    }
}

/** The cache's counters hold exactly what its shards hold (a gc recounts them). */
static inline void tl_assert_counts_exact(kc_cache *c, const char *dir) {
    uint64_t files, bytes;
    tl_count(dir, &files, &bytes);
    kc_stats s;
    assert_int_equal(kc_cache_stats(c, &s), KC_OK);
    assert_int_equal(s.v[KC_STAT_ENTRIES], files);
    assert_int_equal(s.v[KC_STAT_BYTES], bytes);
}

#endif
