/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_entry.c — the entry format: round trips, the golden file that pins format v3 (a small
 * graph entry with its IMAGES references and ORIGIN, tests/golden/entry_v4.kce; images and unit records have
 * theirs in test_image.c), an entry of the older format v2 (tests/golden/entry_v2.kce, kept as it
 * was written) that is corrupt to decode, images attached in memory that are never encoded, and a
 * decoder that rejects every damaged input (each byte flipped, every truncation, trailing bytes,
 * random noise) without crashing or reading out of bounds (run it under ASan to see the latter);
 * the rules a checksum cannot enforce hold with every checksum right (trailing bytes, the header's
 * variant and length, the name's promise, a caller's buffer).  Hand-built layouts (decompression
 * bombs, sizes over the cap, gaps, a type twice) are test_entry_layout.c's.
 *
 * Regenerate tests/golden/entry_v4.kce (only with a format change): KCACHE_REGEN_GOLDEN=1.
 * entry_v2.kce and entry_v3_old.kce are never regenerated: they are what older kcaches wrote.
 */
#include "helpers.h"

#include <xxhash.h>
#include <zstd.h>

#include "common/internal.h"
#include "kcache.h"

static kc_entry *make_entry(const char *variant, size_t big) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, "00112233445566778899aabbccddeeff"), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, variant), KC_OK);
    kc_digest d;
    for (int i = 0; i < 16; i++) d.bytes[i] = (uint8_t)(i * 7);
    assert_int_equal(kc_entry_add_digest(e, "graph", &d), KC_OK);
    d.bytes[0] ^= 1;
    assert_int_equal(kc_entry_add_digest(e, "inputs[0].sizes", &d), KC_OK);
    assert_int_equal(kc_entry_set_toolchain(e, "nvrtc 13.0"), KC_OK);
    kc_entry_set_created_at(e, 1700000000123456789ull);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, "forward-program", 15), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_RUNTIME_META, "", 0), KC_OK);
    /* A graph entry's references to its images (v3): one cubin's, one PTX's. */
    kc_image_ref refs[2];
    assert_int_equal(kc_image_ref_make(&refs[0], variant, 0, "cubin-bytes", 11), KC_OK);
    assert_int_equal(kc_image_ref_make(&refs[1], "compute_80", 1, "ptx-text", 9), KC_OK);
    assert_int_equal(kc_entry_set_images(e, refs, 2), KC_OK);
    assert_int_equal(kc_entry_set_origin(e, "compile_us", "123456"), KC_OK); /* v4 */
    if (big) {
        uint8_t *b = malloc(big);
        for (size_t i = 0; i < big; i++) b[i] = (uint8_t)(i % 251 < 200 ? 'A' + i % 7 : i * 31);
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, b, big), KC_OK);
        free(b);
    } else {
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "cubin-bytes", 11), KC_OK);
    }
    return e;
}

static void assert_same_entry(const kc_entry *a, const kc_entry *b) {
    assert_memory_equal(kc_entry_key(a)->bytes, kc_entry_key(b)->bytes, 16);
    assert_string_equal(kc_entry_variant(a), kc_entry_variant(b));
    assert_string_equal(kc_entry_toolchain(a), kc_entry_toolchain(b));
    assert_int_equal(kc_entry_created_at(a), kc_entry_created_at(b));
    assert_int_equal(kc_entry_digest_count(a), kc_entry_digest_count(b));
    for (size_t i = 0; i < kc_entry_digest_count(a); i++) {
        const char *n1, *n2;
        kc_digest d1, d2;
        kc_entry_digest_at(a, i, &n1, &d1);
        kc_entry_digest_at(b, i, &n2, &d2);
        assert_string_equal(n1, n2);
        assert_memory_equal(d1.bytes, d2.bytes, 16);
    }
    for (int t = KC_SECTION_FORWARD; t <= KC_SECTION_ORIGIN; t++) {
        const void *p1, *p2;
        size_t l1, l2;
        int r1 = kc_entry_section(a, (kc_section_type)t, &p1, &l1);
        int r2 = kc_entry_section(b, (kc_section_type)t, &p2, &l2);
        assert_int_equal(r1, r2);
        if (r1 == KC_OK) {
            assert_int_equal(l1, l2);
            if (l1) assert_memory_equal(p1, p2, l1);
        }
    }
}

static void test_round_trip(void **state) {
    (void)state;
    const size_t sizes[] = {0, 100, 70000};
    for (size_t i = 0; i < 3; i++) {
        kc_entry *e = make_entry("sm_90a", sizes[i]), *d;
        void *bytes;
        size_t len;
        assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
        if (sizes[i] == 70000) assert_true(len < 70000); /* compressed */
        assert_int_equal(kc_entry_decode(&d, bytes, len), KC_OK);
        assert_same_entry(e, d);
        kc_entry_free(e);
        kc_entry_free(d);
        kc_free(bytes);
    }
}

static void test_golden_file(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 0);
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    const char *path = KC_GOLDEN_DIR "/entry_v4.kce";
    if (getenv("KCACHE_REGEN_GOLDEN")) assert_int_equal(kct_write(path, bytes, len), 0);
    size_t glen;
    uint8_t *golden = kct_read(path, &glen);
    assert_non_null(golden);
    assert_int_equal(glen, len);
    assert_memory_equal(golden, bytes, len);
    kc_entry *d;
    assert_int_equal(kc_entry_decode(&d, golden, glen), KC_OK);
    assert_same_entry(e, d);
    assert_int_equal(kc_entry_peek_version(golden, glen), 4);
    char v[32];
    assert_int_equal(kc_entry_origin(d, "compile_us", v, sizeof v), KC_OK);
    assert_string_equal(v, "123456");
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_entry_images(d, &refs, &n), KC_OK);
    assert_int_equal(n, 2);
    assert_string_equal(refs[1].target, "compute_80");
    free(refs);
    kc_entry_free(d);
    kc_entry_free(e);
    free(golden);
    kc_free(bytes);
}

/* ORIGIN (v4): records set, replaced and read back through an encode; names and values checked. */
static void test_origin_records(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 0), *d;
    char v[64];
    assert_int_equal(kc_entry_origin(e, "compile_us", v, sizeof v), KC_OK);
    assert_int_equal(kc_entry_set_origin(e, "compile_us", "42"), KC_OK); /* replaced, not added */
    assert_int_equal(kc_entry_set_origin(e, "host", ""), KC_OK);
    assert_int_equal(kc_entry_set_origin(e, "Host", "x"), KC_EINVAL);
    assert_int_equal(kc_entry_set_origin(e, "", "x"), KC_EINVAL);
    assert_int_equal(kc_entry_set_origin(e, "a_name_of_thirty_two_characters_", "x"), KC_EINVAL);
    char *big = malloc(KC_ORIGIN_VALUE_MAX + 2);
    memset(big, 'v', KC_ORIGIN_VALUE_MAX + 1);
    big[KC_ORIGIN_VALUE_MAX + 1] = 0;
    assert_int_equal(kc_entry_set_origin(e, "big", big), KC_EINVAL);
    big[KC_ORIGIN_VALUE_MAX] = 0;
    assert_int_equal(kc_entry_set_origin(e, "big", big), KC_OK);
    free(big);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_ORIGIN, "x", 1), KC_EINVAL); /* only through set_origin */
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    assert_int_equal(kc_entry_decode(&d, bytes, len), KC_OK);
    assert_int_equal(kc_entry_origin(d, "compile_us", v, sizeof v), KC_OK);
    assert_string_equal(v, "42");
    assert_int_equal(kc_entry_origin(d, "host", v, sizeof v), KC_OK);
    assert_string_equal(v, "");
    assert_int_equal(kc_entry_origin(d, "absent", v, sizeof v), KC_MISS);
    assert_int_equal(kc_entry_origin(d, "big", v, sizeof v), KC_EINVAL); /* no room: said, never cut */
    kc_entry_free(d);
    kc_free(bytes);
    /* At most KC_ORIGIN_MAX records. */
    for (int i = 0; i < KC_ORIGIN_MAX + 1; i++) {
        char n[16];
        snprintf(n, sizeof n, "r%d", i);
        int rc = kc_entry_set_origin(e, n, "1");
        assert_int_equal(rc, i < KC_ORIGIN_MAX - 3 ? KC_OK : KC_EINVAL); /* compile_us, host, big are there */
    }
    kc_entry_free(e);
}

/* A malformed ORIGIN is a corrupt entry, with its checksums right: a name twice, a bad name byte. */
static void patch_origin(uint8_t *b, size_t len, const char *from, const char *to) {
    uint32_t nsec = kc_rd_u32(b + 72);
    for (uint32_t i = 0; i < nsec; i++) {
        uint8_t *d = b + 96 + (size_t)i * 40;
        if (kc_rd_u32(d) != KC_SECTION_ORIGIN) continue;
        assert_int_equal(kc_rd_u32(d + 4), KC_CODEC_NONE);
        uint64_t off = kc_rd_u64(d + 24), n = kc_rd_u64(d + 16);
        assert_true(off + n <= len);
        uint8_t *hit = memmem(b + off, (size_t)n, from, strlen(from));
        assert_non_null(hit);
        memcpy(hit, to, strlen(to));
        kc_wr_u64(d + 32, XXH3_64bits(b + off, (size_t)n));
    }
    uint8_t tmp[88 + 16 * 40];
    memcpy(tmp, b, 88);
    memcpy(tmp + 88, b + 96, (size_t)nsec * 40);
    kc_wr_u64(b + 88, XXH3_64bits(tmp, 88 + (size_t)nsec * 40));
}

static void test_malformed_origin_is_corrupt(void **state) {
    (void)state;
    static const char *cases[][2] = {{"cd", "ab"}, {"cd", "cD"}};
    for (int c = 0; c < 2; c++) {
        kc_entry *e = make_entry("sm_90", 0), *d = (kc_entry *)0x1;
        assert_int_equal(kc_entry_set_origin(e, "ab", "1"), KC_OK);
        assert_int_equal(kc_entry_set_origin(e, "cd", "2"), KC_OK);
        void *bytes;
        size_t len;
        assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
        assert_int_equal(kc_entry_decode(&d, bytes, len), KC_OK); /* well formed before the patch */
        kc_entry_free(d);
        patch_origin(bytes, len, cases[c][0], cases[c][1]);
        assert_int_equal(kc_entry_decode(&d, bytes, len), KC_ECORRUPT);
        assert_null(d);
        assert_non_null(strstr(kc_error_last()->message, "ORIGIN"));
        kc_entry_free(e);
        kc_free(bytes);
    }
}

/* Entries of format v2 (images inside the graph entry) and v3 (no ORIGIN), as older kcaches wrote
 * them: every checksum right, and corrupt to decode — an older format is never read, only told
 * apart (kc_entry_peek_version) so that gc can count it stale rather than corrupt. */
static void test_older_version_is_corrupt(void **state) {
    (void)state;
    size_t l3;
    uint8_t *v3 = kct_read(KC_GOLDEN_DIR "/entry_v3_old.kce", &l3);
    assert_non_null(v3);
    assert_int_equal(kc_entry_peek_version(v3, l3), 3);
    kc_entry *d3 = (kc_entry *)0x1;
    assert_int_equal(kc_entry_decode(&d3, v3, l3), KC_ECORRUPT);
    assert_null(d3);
    assert_non_null(strstr(kc_error_last()->message, "format version 3"));
    free(v3);
    size_t glen;
    uint8_t *v2 = kct_read(KC_GOLDEN_DIR "/entry_v2.kce", &glen);
    assert_non_null(v2);
    assert_int_equal(kc_entry_peek_version(v2, glen), 2);
    kc_entry *d = (kc_entry *)0x1;
    assert_int_equal(kc_entry_decode(&d, v2, glen), KC_ECORRUPT);
    assert_null(d);
    assert_non_null(strstr(kc_error_last()->message, "format version 2"));
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, "00112233445566778899aabbccddeeff"), KC_OK);
    assert_int_equal(kc_entry_decode_as(&d, v2, glen, &k, "sm_90"), KC_ECORRUPT);
    assert_null(d);
    free(v2);
}

/* Images attached to an entry live in memory only: the encoded bytes are the same with or without
 * them, and a decoded entry has none until they are attached again. */
static void test_attached_images_are_not_encoded(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 0);
    void *plain, *with;
    size_t plen, wlen;
    assert_int_equal(kc_entry_encode(e, &plain, &plen), KC_OK);
    const void *p;
    size_t n;
    assert_int_equal(kc_entry_attached_image(e, 0, &p, &n), KC_MISS);
    assert_int_equal(kc_entry_attach_image(e, 1, "ptx-text", 9), KC_OK);
    assert_int_equal(kc_entry_attached_image(e, 0, &p, &n), KC_MISS); /* only the index attached */
    assert_int_equal(kc_entry_attach_image(e, 0, "old", 3), KC_OK);
    assert_int_equal(kc_entry_attach_image(e, 0, "cubin-bytes", 11), KC_OK); /* replaces */
    assert_int_equal(kc_entry_attached_image(e, 0, &p, &n), KC_OK);
    assert_int_equal(n, 11);
    assert_memory_equal(p, "cubin-bytes", 11);
    assert_int_equal(kc_entry_attach_image(e, KC_IMAGES_MAX, "x", 1), KC_EINVAL);
    assert_int_equal(kc_entry_attach_image(e, 2, "x", 0), KC_EINVAL);
    assert_int_equal(kc_entry_attach_image(e, 2, NULL, 1), KC_EINVAL);
    assert_int_equal(kc_entry_encode(e, &with, &wlen), KC_OK);
    assert_int_equal(plen, wlen);
    assert_memory_equal(plain, with, plen);
    kc_entry *d;
    assert_int_equal(kc_entry_decode(&d, with, wlen), KC_OK);
    assert_int_equal(kc_entry_attached_image(d, 0, &p, &n), KC_MISS);
    assert_int_equal(kc_entry_attached_image(d, 1, &p, &n), KC_MISS);
    kc_entry_free(d);
    kc_entry_free(e);
    kc_free(plain);
    kc_free(with);
}

static void expect_corrupt(const uint8_t *p, size_t n, const char *what, size_t at) {
    kc_entry *d = (kc_entry *)0x1;
    int rc = kc_entry_decode(&d, p, n);
    if (rc != KC_ECORRUPT) fail_msg("%s at %zu: got %s, want KC_ECORRUPT", what, at, kc_status_str(rc));
    assert_null(d);
}

static void test_every_flipped_byte_is_rejected(void **state) {
    (void)state;
    const size_t sizes[] = {0, 300};
    const uint8_t masks[] = {0x01, 0x80, 0xff};
    size_t trials = 0;
    for (size_t s = 0; s < 2; s++) {
        kc_entry *e = make_entry("sm_80", sizes[s]);
        uint8_t *bytes;
        size_t len;
        assert_int_equal(kc_entry_encode(e, (void **)&bytes, &len), KC_OK);
        uint8_t *copy = malloc(len);
        for (size_t i = 0; i < len; i++) {
            for (size_t m = 0; m < sizeof masks; m++) {
                memcpy(copy, bytes, len);
                copy[i] ^= masks[m];
                expect_corrupt(copy, len, "flipped byte", i);
                trials++;
            }
        }
        free(copy);
        kc_free(bytes);
        kc_entry_free(e);
    }
    assert_true(trials > 1000);
}

static void test_every_truncation_is_rejected(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_80", 300);
    uint8_t *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, (void **)&bytes, &len), KC_OK);
    for (size_t n = 0; n < len; n++) {
        uint8_t *t = malloc(n ? n : 1); /* exact size, so ASan catches any overread */
        memcpy(t, bytes, n);
        expect_corrupt(t, n, "truncated", n);
        free(t);
    }
    /* Trailing bytes are rejected too. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    expect_corrupt(longer, len + 1, "padded", len);
    free(longer);
    kc_free(bytes);
    kc_entry_free(e);
}

static void test_random_noise_is_rejected(void **state) {
    (void)state;
    srand(7);
    uint8_t buf[2048];
    for (int t = 0; t < 2000; t++) {
        size_t n = (size_t)(rand() % (int)sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rand();
        if (n >= 8 && t % 2) memcpy(buf, "\x89KCE\r\n\x1a\n", 8); /* get past the magic */
        expect_corrupt(buf, n, "noise", (size_t)t);
    }
}

static void test_section_rules(void **state) {
    (void)state;
    kc_key k = {{0}};
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "Sm_90"), KC_EINVAL);
    assert_int_equal(kc_entry_new(&e, &k, "../x"), KC_EINVAL);
    assert_int_equal(kc_entry_new(&e, &k, ""), KC_EINVAL);
    assert_int_equal(kc_entry_new(&e, &k, "a_very_long_variant_name_of_32_ch"), KC_EINVAL);
    assert_int_equal(kc_entry_new(&e, &k, "compute_90"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_META, "x", 1), KC_EINVAL);
    assert_int_equal(kc_entry_set_section(e, (kc_section_type)(KC_SECTION_UNIT + 1), "x", 1), KC_EINVAL);
    assert_int_equal(kc_entry_set_section(e, (kc_section_type)0, "x", 1), KC_EINVAL);
    const void *p;
    size_t n;
    assert_int_equal(kc_entry_section(e, KC_SECTION_BACKWARD, &p, &n), KC_MISS);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_BACKWARD, "b", 1), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_BACKWARD, "bb", 2), KC_OK); /* replaces */
    assert_int_equal(kc_entry_section(e, KC_SECTION_BACKWARD, &p, &n), KC_OK);
    assert_int_equal(n, 2);
    kc_digest d = {{0}};
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(kc_entry_add_digest(e, longname, &d), KC_EINVAL);
    kc_entry_free(e);
}

static void test_alloc_failures_are_reported(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 5000);
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    for (long n = 1; n < 200; n++) {
        kc_alloc_fail_at(n, false);
        kc_entry *d = NULL;
        int rc = kc_entry_decode(&d, bytes, len);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) {
            assert_same_entry(e, d);
            kc_entry_free(d);
            break;
        }
        assert_int_equal(rc, KC_ENOMEM);
        assert_null(d);
    }
    kc_free(bytes);
    kc_entry_free(e);
}

/* The allocations kc_entry_decode makes for these bytes (the first n that does not fail it). */
static long decode_allocations(const void *bytes, size_t len) {
    for (long n = 1;; n++) {
        kc_alloc_fail_at(n, false);
        kc_entry *d = NULL;
        int rc = kc_entry_decode(&d, bytes, len);
        kc_alloc_fail_at(0, false);
        kc_entry_free(d);
        if (rc == KC_OK) return n - 1;
        assert_int_equal(rc, KC_ENOMEM);
        assert_true(n < 1000);
    }
}

/* A decoded META's digest names are one block, not an allocation each (a lookup decodes the
 * graph entry's META on every load): 200 digests cost what 2 do; a digest added to a decoded
 * entry is its own, and every name reads back. */
static void test_decoding_digests_allocates_once(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 0);
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    long two = decode_allocations(bytes, len);
    kc_free(bytes);
    kc_digest d = {{0}};
    char name[32];
    for (int i = 0; i < 198; i++) {
        snprintf(name, sizeof name, "inputs[%d].strides", i);
        d.bytes[0] = (uint8_t)i;
        assert_int_equal(kc_entry_add_digest(e, name, &d), KC_OK);
    }
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    long many = decode_allocations(bytes, len);
    if (many != two) fail_msg("decoding 200 digests made %ld allocations, 2 digests %ld", many, two);
    kc_entry *x;
    assert_int_equal(kc_entry_decode(&x, bytes, len), KC_OK);
    assert_same_entry(e, x);
    assert_int_equal(kc_entry_add_digest(x, "extra", &d), KC_OK);
    const char *n;
    assert_int_equal(kc_entry_digest_at(x, 200, &n, &d), KC_OK);
    assert_string_equal(n, "extra");
    assert_int_equal(kc_entry_digest_at(x, 199, &n, &d), KC_OK);
    assert_string_equal(n, "inputs[197].strides");
    kc_entry_free(x);
    kc_free(bytes);
    kc_entry_free(e);
}

/* Sections that compress past the ratio cap are stored as they are, so every entry the encoder
 * writes decodes; the cap costs only space, and only for such data. */
static void test_very_compressible_sections_round_trip(void **state) {
    (void)state;
    const size_t sizes[] = {1u << 20, (1u << 20) + 1, 5u << 20};
    for (size_t i = 0; i < 3; i++) {
        kc_entry *e = make_entry("sm_90", 0), *d;
        uint8_t *zero = calloc(1, sizes[i]);
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_BACKWARD, zero, sizes[i]), KC_OK);
        free(zero);
        void *bytes;
        size_t len;
        assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
        assert_int_equal(kc_entry_decode(&d, bytes, len), KC_OK);
        assert_same_entry(e, d);
        kc_entry_free(e);
        kc_entry_free(d);
        kc_free(bytes);
    }
}

/* The header checksum made right again after the header or table changed. */
static void resum_header(uint8_t *b) {
    uint32_t nsec = kc_rd_u32(b + 72);
    uint8_t tmp[88 + 16 * 40];
    memcpy(tmp, b, 88);
    memcpy(tmp + 88, b + 96, (size_t)nsec * 40);
    kc_wr_u64(b + 88, XXH3_64bits(tmp, 88 + (size_t)nsec * 40));
}

/* The rules a checksum cannot enforce, each with every checksum right: bytes after the last
 * section (the header's length says them), a variant field that is no variant name ("../x",
 * upper case, a '/'), a value one byte longer than the caller's buffer. */
static void test_rules_hold_with_checksums_right(void **state) {
    (void)state;
    kc_entry *e = make_entry("sm_90", 0), *d = (kc_entry *)0x1;
    uint8_t *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, (void **)&bytes, &len), KC_OK);
    for (size_t extra = 1; extra <= 9; extra += 8) {
        uint8_t *longer = calloc(1, len + extra);
        memcpy(longer, bytes, len);
        kc_wr_u64(longer + 64, len + extra);
        resum_header(longer);
        assert_int_equal(kc_entry_decode(&d, longer, len + extra), KC_ECORRUPT);
        assert_null(d);
        assert_non_null(strstr(kc_error_last()->message, "after the last section"));
        free(longer);
    }
    static const char *const bad[] = {"../x", "Sm_90", "sm/90", "sm_90.", "sm 90"};
    for (size_t i = 0; i < KC_ARRAY_LEN(bad); i++) {
        uint8_t *b = malloc(len);
        memcpy(b, bytes, len);
        memset(b + 32, 0, 32);
        memcpy(b + 32, bad[i], strlen(bad[i]));
        resum_header(b);
        if (kc_entry_decode(&d, b, len) != KC_ECORRUPT) fail_msg("variant '%s' in the header: decoded", bad[i]);
        assert_null(d);
        assert_non_null(strstr(kc_error_last()->message, "invalid variant"));
        free(b);
    }
    /* The same bytes with a valid variant decode: only the variant was wrong. */
    uint8_t *b = malloc(len);
    memcpy(b, bytes, len);
    memset(b + 32, 0, 32);
    memcpy(b + 32, "sm_80", 5);
    resum_header(b);
    assert_int_equal(kc_entry_decode(&d, b, len), KC_OK);
    assert_string_equal(kc_entry_variant(d), "sm_80");
    kc_entry_free(d);
    free(b);
    /* A header whose length is not the bytes' (the sections fill them): refused, both ways. */
    for (int delta = -1; delta <= 1; delta += 2) {
        uint8_t *c = malloc(len);
        memcpy(c, bytes, len);
        kc_wr_u64(c + 64, (uint64_t)((int64_t)len + delta));
        resum_header(c);
        assert_int_equal(kc_entry_decode(&d, c, len), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "header says"));
        free(c);
    }
    /* A stored object is the key and variant its name promises: checked without decoding too. */
    kc_key k = *kc_entry_key(e), other = k;
    other.bytes[15] ^= 1;
    assert_int_equal(kc_entry_check_stored(bytes, len, &k, "sm_90", -1, NULL), KC_OK);
    assert_int_equal(kc_entry_check_stored(bytes, len, &k, "sm_80", -1, NULL), KC_ECORRUPT);
    assert_int_equal(kc_entry_check_stored(bytes, len, &other, "sm_90", -1, NULL), KC_ECORRUPT);
    assert_int_equal(kc_entry_decode_as(&d, bytes, len, &k, "sm_80"), KC_ECORRUPT);
    assert_null(d);
    /* kc_entry_origin: "123456" needs 7 bytes; 6 is refused, never one byte written past it. */
    char out[8];
    memset(out, 'z', sizeof out);
    assert_int_equal(kc_entry_origin(e, "compile_us", out, 6), KC_EINVAL);
    assert_int_equal(out[6], 'z');
    assert_int_equal(kc_entry_origin(e, "compile_us", out, 7), KC_OK);
    assert_string_equal(out, "123456");
    kc_free(bytes);
    kc_entry_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_decoding_digests_allocates_once),
        cmocka_unit_test(test_golden_file),
        cmocka_unit_test(test_origin_records),
        cmocka_unit_test(test_malformed_origin_is_corrupt),
        cmocka_unit_test(test_older_version_is_corrupt),
        cmocka_unit_test(test_attached_images_are_not_encoded),
        cmocka_unit_test(test_every_flipped_byte_is_rejected),
        cmocka_unit_test(test_every_truncation_is_rejected),
        cmocka_unit_test(test_random_noise_is_rejected),
        cmocka_unit_test(test_section_rules),
        cmocka_unit_test(test_rules_hold_with_checksums_right),
        cmocka_unit_test(test_alloc_failures_are_reported),
        cmocka_unit_test(test_very_compressible_sections_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
