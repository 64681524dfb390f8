/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_image.c — the second level of the entry format (src/entry/image.c, [Note: two levels] in
 * kcache/entry.h): image references, image objects, a graph entry's IMAGES references and unit
 * records, and kc_entry_peek_version.
 *
 * The one idea: every reader here is as strict as the entry decoder, so each test builds the one
 * defect it is about into bytes that are otherwise right — the container's checksums recomputed by
 * re-encoding, an image's XXH3-128 made right where only its SHA-256 or its NUL is wrong — so that a
 * refusal can only come from the check under test (the error message is checked too).  What is
 * pinned: kc_image_ref_make's digests are XXH3-128 (canonical, big-endian: XXH128_canonical_t) and
 * SHA-256 (OpenSSL's) of the bytes; tests/golden/image_v4.kce and unit_v4.kce are fixed inputs'
 * fixed bytes (regenerate only with a format change: KCACHE_REGEN_GOLDEN=1).  No NVRTC, no GPU.
 */
#include "helpers.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include "common/internal.h"
#include "entry/entry_internal.h" /* kc_unit_entry_names_ */
#include "fuzz/harness.h"         /* fz_fix_entry: a container's checksums made right */
#include "kcache.h"

#define GOLDEN_TIME 1700000000123456789ull

/* The image every test uses: 300 bytes of a cubin-like pattern. */
static void image_bytes(uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 131 + 7);
    memcpy(b,
           "\x7f"
           "ELF",
           4);
}

static const char ptx_text[] = ".version 8.0\n.target sm_80\n.entry k()\n{\n ret;\n}\n"; /* with its NUL */

static kc_image_ref cubin_ref(uint8_t *bytes, size_t n) {
    image_bytes(bytes, n);
    kc_image_ref r;
    assert_int_equal(kc_image_ref_make(&r, "sm_90", 0, bytes, n), KC_OK);
    return r;
}

/* Encode `e`, free it, decode the bytes as "<key>.<variant>" (what a store read does). */
static kc_entry *through_bytes(kc_entry *e, const kc_key *key, const char *variant) {
    void *bytes;
    size_t len;
    kc_entry_set_created_at(e, GOLDEN_TIME);
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    kc_entry_free(e);
    kc_entry *d = NULL;
    int rc = kc_entry_decode_as(&d, bytes, len, key, variant);
    if (rc) fail_msg("decode_as: %s", kc_error_last()->message);
    kc_free(bytes);
    return d;
}

/* An entry "<key>.<variant>" holding `section` as section `type`, through its bytes: every
 * container checksum right, whatever the section holds. */
static kc_entry *entry_holding(const kc_key *key, const char *variant, kc_section_type type, const void *section,
                               size_t len) {
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, key, variant), KC_OK);
    assert_int_equal(kc_entry_set_section(e, type, section, len), KC_OK);
    return through_bytes(e, key, variant);
}

/* A reference as the format writes it: id[16] sha256[32] target:str is_ptx:u8 len:u64. */
static void put_ref(kc_buf *b, const uint8_t id[16], const uint8_t sha[32], const char *target, size_t tlen,
                    uint8_t is_ptx, uint64_t len) {
    kc_buf_put(b, id, 16);
    kc_buf_put(b, sha, 32);
    kc_buf_put_u32(b, (uint32_t)tlen);
    kc_buf_put(b, target, tlen);
    kc_buf_put_u8(b, is_ptx);
    kc_buf_put_u64(b, len);
}
static void put_ref_of(kc_buf *b, const kc_image_ref *r) {
    put_ref(b, r->id.bytes, r->sha256, r->target, strlen(r->target), (uint8_t)r->is_ptx, r->len);
}

static void expect_msg(const char *needle) {
    const char *m = kc_error_last()->message;
    if (!strstr(m, needle)) fail_msg("the error '%s' does not say '%s'", m, needle);
}

/* ---- kc_image_ref_make ---- */

static void test_ref_digests(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(b, sizeof b));
    assert_memory_equal(r.id.bytes, c.digest, 16);
    uint8_t sha[32];
    unsigned n = 0;
    assert_int_equal(EVP_Digest(b, sizeof b, sha, &n, EVP_sha256(), NULL), 1);
    assert_int_equal(n, 32);
    assert_memory_equal(r.sha256, sha, 32);
    assert_string_equal(r.target, "sm_90");
    assert_int_equal(r.is_ptx, 0);
    assert_int_equal(r.len, sizeof b);
    /* A known answer, apart from both libraries: SHA-256("abc"). */
    static const uint8_t abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                    0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                    0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    assert_int_equal(kc_image_ref_make(&r, "sm_80", 0, "abc", 3), KC_OK);
    assert_memory_equal(r.sha256, abc, 32);
    /* PTX: its NUL is part of the bytes digested; any non-zero kind is PTX (1). */
    assert_int_equal(kc_image_ref_make(&r, "compute_80", 5, ptx_text, sizeof ptx_text), KC_OK);
    assert_int_equal(r.is_ptx, 1);
    assert_int_equal(r.len, sizeof ptx_text);
    XXH128_canonicalFromHash(&c, XXH3_128bits(ptx_text, sizeof ptx_text));
    assert_memory_equal(r.id.bytes, c.digest, 16);
}

static void test_ref_make_refuses(void **state) {
    (void)state;
    kc_image_ref r;
    assert_int_equal(kc_image_ref_make(&r, "SM_90", 0, "x", 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, "", 0, "x", 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, "sm_90/../x", 0, "x", 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, "sm_90", 0, "x", 0), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, "sm_90", 0, "x", (size_t)KC_SECTION_MAX_RAW + 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, "compute_80", 1, "PTX", 3), KC_EINVAL); /* no NUL */
    assert_int_equal(kc_image_ref_make(&r, "sm_90", 0, NULL, 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(&r, NULL, 0, "x", 1), KC_EINVAL);
    assert_int_equal(kc_image_ref_make(NULL, "sm_90", 0, "x", 1), KC_EINVAL);
}

static void test_ref_equal(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref a = cubin_ref(b, sizeof b), x;
    assert_true(kc_image_ref_equal(&a, &a));
    for (int f = 0; f < 5; f++) {
        x = a;
        switch (f) {
        case 0: x.id.bytes[15] ^= 1; break;
        case 1: x.sha256[31] ^= 1; break;
        case 2: snprintf(x.target, sizeof x.target, "sm_90a"); break;
        case 3: x.is_ptx = 1; break;
        case 4: x.len++; break;
        }
        if (kc_image_ref_equal(&a, &x)) fail_msg("field %d differs, yet the references are equal", f);
    }
}

/* ---- image objects ---- */

static void test_image_round_trip(void **state) {
    (void)state;
    uint8_t b[300];
    for (int is_ptx = 0; is_ptx <= 1; is_ptx++) {
        kc_image_ref r;
        const void *src = is_ptx ? (const void *)ptx_text : b;
        size_t n = is_ptx ? sizeof ptx_text : sizeof b;
        if (is_ptx) assert_int_equal(kc_image_ref_make(&r, "compute_80", 1, ptx_text, sizeof ptx_text), KC_OK);
        else r = cubin_ref(b, sizeof b);
        kc_entry *e;
        assert_int_equal(kc_image_entry_new(&e, &r, src), KC_OK);
        assert_memory_equal(kc_entry_key(e)->bytes, r.id.bytes, 16);
        assert_string_equal(kc_entry_variant(e), KC_VARIANT_IMAGE);
        /* Another name than its own is refused by the one identity check. */
        void *bytes;
        size_t len;
        assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
        kc_key other = r.id;
        other.bytes[0] ^= 1;
        kc_entry *d = (kc_entry *)0x1;
        assert_int_equal(kc_entry_decode_as(&d, bytes, len, &other, KC_VARIANT_IMAGE), KC_ECORRUPT);
        assert_null(d);
        assert_int_equal(kc_entry_decode_as(&d, bytes, len, &r.id, "sm_90"), KC_ECORRUPT);
        kc_free(bytes);
        e = through_bytes(e, &r.id, KC_VARIANT_IMAGE);
        kc_image_ref got;
        const void *p;
        size_t plen;
        for (int full = 0; full <= 1; full++) {
            memset(&got, 0xab, sizeof got);
            assert_int_equal(kc_image_entry_read(e, &r, full, &got, &p, &plen), KC_OK);
            assert_true(kc_image_ref_equal(&got, &r));
            assert_int_equal(plen, n);
            assert_memory_equal(p, src, n);
        }
        assert_int_equal(kc_image_entry_read(e, NULL, 1, NULL, NULL, NULL), KC_OK); /* every output optional */
        kc_entry_free(e);
    }
}

/* The IMAGE section of a good cubin image; `*ref` its reference. */
static void good_image_section(kc_buf *s, kc_image_ref *ref, uint8_t *b, size_t n) {
    *ref = cubin_ref(b, n);
    put_ref_of(s, ref);
    kc_buf_put(s, b, n);
}

/* Read an image entry "<key>.<variant>" holding `section`: the reader's answer. */
static int read_image(const kc_key *key, const char *variant, const kc_buf *section, const kc_image_ref *want,
                      int full) {
    kc_entry *e = entry_holding(key, variant, KC_SECTION_IMAGE, section->data, section->len);
    kc_image_ref got;
    const void *p = (const void *)0x1;
    size_t len = 7;
    memset(&got, 0xab, sizeof got);
    int rc = kc_image_entry_read(e, want, full, &got, &p, &len);
    if (rc != KC_OK) { /* nothing is handed out on a refusal */
        assert_ptr_equal(p, (const void *)0x1);
        assert_int_equal(len, 7);
    }
    kc_entry_free(e);
    return rc;
}

static void test_image_of_another_kind_is_refused(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r;
    kc_buf s = {0};
    good_image_section(&s, &r, b, sizeof b);
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 1), KC_OK); /* the control */
    assert_int_equal(read_image(&r.id, "sm_90", &s, NULL, 1), KC_ECORRUPT);    /* a graph entry's variant */
    expect_msg("not an image");
    assert_int_equal(read_image(&r.id, KC_VARIANT_UNIT, &s, NULL, 1), KC_ECORRUPT);
    /* An "img" entry without an IMAGE section (an IMAGES one instead). */
    kc_entry *e = entry_holding(&r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGES, s.data, s.len);
    assert_int_equal(kc_image_entry_read(e, NULL, 0, NULL, NULL, NULL), KC_ECORRUPT);
    kc_entry_free(e);
    /* Under a key that is not its reference's id (the bytes' digest is right). */
    kc_key other = r.id;
    other.bytes[7] ^= 0x10;
    assert_int_equal(read_image(&other, KC_VARIANT_IMAGE, &s, NULL, 0), KC_ECORRUPT);
    expect_msg("XXH3-128");
    /* Under its true name, with its bytes, but a reference whose id is another's. */
    s.data[3] ^= 0x40; /* ref.id[3] */
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 0), KC_ECORRUPT);
    expect_msg("XXH3-128");
    s.data[3] ^= 0x40;
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 0), KC_OK);
    kc_buf_free(&s);
}

/* A byte flipped in the image bytes, the entry re-encoded so its container checksums pass: only
 * the image's own XXH3-128 catches it, full or not. */
static void test_flipped_image_byte_fails_xxh3(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r;
    kc_buf s = {0};
    good_image_section(&s, &r, b, sizeof b);
    size_t at0 = s.len - sizeof b;
    const size_t at[] = {0, 1, 150, sizeof b - 1};
    for (size_t i = 0; i < 4; i++)
        for (int full = 0; full <= 1; full++) {
            s.data[at0 + at[i]] ^= 0x20;
            if (read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, full) != KC_ECORRUPT)
                fail_msg("image byte %zu flipped was read (full %d)", at[i], full);
            expect_msg("XXH3-128 differs");
            s.data[at0 + at[i]] ^= 0x20;
        }
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 1), KC_OK);
    kc_buf_free(&s);
}

/* A forged reference: the right XXH3-128 (name and bytes agree) but a wrong SHA-256.  A read that
 * checks only the name takes it; full = 1 refuses it. */
static void test_forged_sha256_is_caught_only_by_a_full_read(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r;
    kc_buf s = {0};
    good_image_section(&s, &r, b, sizeof b);
    s.data[16 + 5] ^= 1; /* ref.sha256[5] */
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 0), KC_OK);
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 1), KC_ECORRUPT);
    expect_msg("SHA-256");
    /* A graph's reference (the true one) does not match the forged one either. */
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, &r, 0), KC_ECORRUPT);
    kc_buf_free(&s);
}

/* `want` must be the reference found: each field that differs is a refusal. */
static void test_want_must_match(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r;
    kc_buf s = {0};
    good_image_section(&s, &r, b, sizeof b);
    assert_int_equal(read_image(&r.id, KC_VARIANT_IMAGE, &s, &r, 1), KC_OK);
    for (int f = 0; f < 5; f++) {
        kc_image_ref w = r;
        switch (f) {
        case 0: snprintf(w.target, sizeof w.target, "sm_90a"); break;
        case 1: w.is_ptx = 1; break;
        case 2: w.len--; break;
        case 3: w.sha256[0] ^= 1; break;
        case 4: w.id.bytes[0] ^= 1; break;
        }
        for (int full = 0; full <= 1; full++) {
            if (read_image(&r.id, KC_VARIANT_IMAGE, &s, &w, full) != KC_ECORRUPT)
                fail_msg("a wanted reference differing in field %d was taken (full %d)", f, full);
            expect_msg("not the image the graph refers to");
        }
    }
    kc_buf_free(&s);
}

/* Hand-built IMAGE sections whose digests are right, each with one defect. */
static void test_malformed_image_sections(void **state) {
    (void)state;
    static const uint8_t zero[32];
    uint8_t b[300];
    kc_image_ref r;
    /* PTX without its NUL, named by its bytes' true XXH3-128: the NUL check alone refuses it
     * (the same bytes as a cubin read, which shows the section is otherwise right). */
    for (int is_ptx = 1; is_ptx >= 0; is_ptx--) {
        assert_int_equal(kc_image_ref_make(&r, "compute_80", 0, "PTX", 3), KC_OK);
        kc_buf s = {0};
        put_ref(&s, r.id.bytes, r.sha256, "compute_80", 10, (uint8_t)is_ptx, 3);
        kc_buf_put(&s, "PTX", 3);
        int rc = read_image(&r.id, KC_VARIANT_IMAGE, &s, NULL, 1);
        if (is_ptx) {
            assert_int_equal(rc, KC_ECORRUPT);
            expect_msg("NUL");
        } else {
            assert_int_equal(rc, KC_OK);
        }
        kc_buf_free(&s);
    }
    kc_buf s = {0};
    good_image_section(&s, &r, b, sizeof b);
    for (int c = 0; c < 8; c++) {
        kc_buf t = {0};
        switch (c) {
        case 0:
            kc_buf_put(&t, s.data, s.len);
            kc_buf_put_u8(&t, 0);
            break; /* a trailing byte */
        case 1:
            put_ref(&t, r.id.bytes, r.sha256, "sm_90", 5, 0, (uint64_t)KC_SECTION_MAX_RAW + 1);
            kc_buf_put(&t, b, sizeof b);
            break;                                                          /* len over the cap */
        case 2: put_ref(&t, r.id.bytes, r.sha256, "sm_90", 5, 0, 0); break; /* len 0 */
        case 3:
            put_ref(&t, r.id.bytes, r.sha256, "sm_90", 5, 0, sizeof b + 1);
            kc_buf_put(&t, b, sizeof b);
            break; /* len past the bytes */
        case 4:
            put_ref(&t, r.id.bytes, r.sha256, "sm_90", 5, 2, sizeof b);
            kc_buf_put(&t, b, sizeof b);
            break; /* kind 2 */
        case 5:
            put_ref(&t, r.id.bytes, r.sha256, "", 0, 0, sizeof b);
            kc_buf_put(&t, b, sizeof b);
            break;
        case 6:
            put_ref(&t, r.id.bytes, r.sha256, "SM_90", 5, 0, sizeof b);
            kc_buf_put(&t, b, sizeof b);
            break;
        case 7:
            put_ref(&t, r.id.bytes, zero, "a_target_name_of_32_chars_long_x", 32, 0, sizeof b);
            kc_buf_put(&t, b, sizeof b);
            break; /* target over 31 */
        }
        int rc = read_image(&r.id, KC_VARIANT_IMAGE, &t, NULL, 0);
        if (rc != KC_ECORRUPT) fail_msg("case %d: got %d", c, rc);
        kc_buf_free(&t);
    }
    /* Every strict prefix of the good section. */
    for (size_t n = 0; n < s.len; n += n < 80 ? 1 : 37) {
        kc_buf t = {0};
        kc_buf_put(&t, s.data, n);
        if (read_image(&r.id, KC_VARIANT_IMAGE, &t, NULL, 0) != KC_ECORRUPT) fail_msg("cut at %zu was read", n);
        kc_buf_free(&t);
    }
    kc_buf_free(&s);
}

/* ---- a graph entry's IMAGES ---- */

static kc_key graph_key(void) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, "00112233445566778899aabbccddeeff"), KC_OK);
    return k;
}

static void three_refs(kc_image_ref r[3]) {
    uint8_t b[300];
    r[0] = cubin_ref(b, sizeof b);
    assert_int_equal(kc_image_ref_make(&r[1], "compute_80", 1, ptx_text, sizeof ptx_text), KC_OK);
    assert_int_equal(kc_image_ref_make(&r[2], "sm_100f", 0, "tiny", 4), KC_OK);
}

static void test_images_round_trip(void **state) {
    (void)state;
    kc_key k = graph_key();
    kc_image_ref r[3];
    three_refs(r);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    kc_image_ref *got = (kc_image_ref *)0x1;
    size_t n = 9;
    assert_int_equal(kc_entry_images(e, &got, &n), KC_MISS); /* none set */
    assert_null(got);
    assert_int_equal(n, 0);
    assert_int_equal(kc_entry_set_images(e, r, 0), KC_EINVAL);
    assert_int_equal(kc_entry_set_images(e, r, KC_IMAGES_MAX + 1), KC_EINVAL);
    assert_int_equal(kc_entry_set_images(e, r, 3), KC_OK);
    e = through_bytes(e, &k, "sm_90");
    assert_int_equal(kc_entry_images(e, &got, &n), KC_OK);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++)
        if (!kc_image_ref_equal(&got[i], &r[i])) fail_msg("reference %zu came back changed", i);
    free(got);
    /* The most references a graph may hold. */
    kc_image_ref *many = malloc(KC_IMAGES_MAX * sizeof *many);
    for (size_t i = 0; i < KC_IMAGES_MAX; i++) many[i] = r[i % 3];
    assert_int_equal(kc_entry_set_images(e, many, KC_IMAGES_MAX), KC_OK);
    assert_int_equal(kc_entry_images(e, &got, &n), KC_OK);
    assert_int_equal(n, KC_IMAGES_MAX);
    assert_true(kc_image_ref_equal(&got[KC_IMAGES_MAX - 1], &r[(KC_IMAGES_MAX - 1) % 3]));
    free(got);
    free(many);
    kc_entry_free(e);
}

static int read_images(const kc_buf *section) {
    kc_key k = graph_key();
    kc_entry *e = entry_holding(&k, "sm_90", KC_SECTION_IMAGES, section->data, section->len);
    kc_image_ref *got = (kc_image_ref *)0x1;
    size_t n = 9;
    int rc = kc_entry_images(e, &got, &n);
    if (rc == KC_OK) {
        free(got);
    } else {
        assert_null(got);
        assert_int_equal(n, 0);
    }
    kc_entry_free(e);
    return rc;
}

static void test_malformed_images(void **state) {
    (void)state;
    kc_image_ref r[3];
    three_refs(r);
    const uint8_t *id = r[0].id.bytes, *sha = r[0].sha256;
    kc_buf good = {0};
    kc_buf_put_u32(&good, 2);
    put_ref_of(&good, &r[0]);
    put_ref_of(&good, &r[1]);
    assert_int_equal(read_images(&good), KC_OK); /* the control */
    for (int c = 0; c < 11; c++) {
        kc_buf t = {0};
        switch (c) {
        case 0: kc_buf_put_u32(&t, 0); break; /* no reference */
        case 1:
            kc_buf_put_u32(&t, KC_IMAGES_MAX + 1); /* too many */
            for (int i = 0; i <= KC_IMAGES_MAX; i++) put_ref_of(&t, &r[0]);
            break;
        case 2:
            kc_buf_put_u32(&t, 2);
            put_ref_of(&t, &r[0]);
            break; /* one short */
        case 3:
            kc_buf_put(&t, good.data, good.len);
            kc_buf_put_u8(&t, 0);
            break; /* a trailing byte */
        case 4:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "", 0, 0, 5);
            break; /* empty target */
        case 5:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "a_target_name_of_32_chars_long_x", 32, 0, 5);
            break;
        case 6:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "sm_9/", 5, 0, 5);
            break; /* not a variant */
        case 7:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "sm_90", 5, 2, 5);
            break; /* kind 2 */
        case 8:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "sm_90", 5, 0, 0);
            break; /* len 0 */
        case 9:
            kc_buf_put_u32(&t, 1);
            put_ref(&t, id, sha, "sm_90", 5, 0, (uint64_t)KC_SECTION_MAX_RAW + 1);
            break;
        case 10:
            kc_buf_put_u32(&t, 1);
            kc_buf_put(&t, id, 16);
            kc_buf_put(&t, sha, 32); /* huge target length */
            kc_buf_put_u32(&t, UINT32_MAX);
            kc_buf_put(&t, "sm_90", 5);
            kc_buf_put_u8(&t, 0);
            kc_buf_put_u64(&t, 5);
            break;
        }
        int rc = read_images(&t);
        if (rc != KC_ECORRUPT) fail_msg("case %d: got %d", c, rc);
        kc_buf_free(&t);
    }
    for (size_t n = 0; n < good.len; n++) {
        kc_buf t = {0};
        kc_buf_put(&t, good.data, n);
        if (read_images(&t) != KC_ECORRUPT) fail_msg("IMAGES cut at %zu was read", n);
        kc_buf_free(&t);
    }
    kc_buf_free(&good);
}

/* ---- unit records ---- */

static const char *const u_exprs[] = {"add<float>", "mul", "reduce<128, float>"};
static const char *const u_lowered[] = {"_Z3addIfEvv", "mul", "_Z6reduceILi128EfEvv"};

static kc_key unit_key(void) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, "f0e1d2c3b4a5968778695a4b3c2d1e0f"), KC_OK);
    return k;
}

static kc_entry *unit_record(const kc_image_ref *r) {
    kc_key k = unit_key();
    kc_entry *e;
    assert_int_equal(kc_unit_entry_new(&e, &k, r, u_exprs, u_lowered, 3), KC_OK);
    assert_string_equal(kc_entry_variant(e), KC_VARIANT_UNIT);
    return through_bytes(e, &k, KC_VARIANT_UNIT);
}

static void test_unit_round_trip(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b), got;
    kc_entry *e = unit_record(&r);
    memset(&got, 0, sizeof got);
    assert_int_equal(kc_unit_entry_read(e, &got, NULL, 0, NULL), KC_OK); /* just its reference */
    assert_true(kc_image_ref_equal(&got, &r));
    /* Every name, asked in another order, one of them twice. */
    const char *ask[] = {"reduce<128, float>", "add<float>", "mul", "add<float>"};
    char *low[4];
    assert_int_equal(kc_unit_entry_read(e, NULL, ask, 4, low), KC_OK);
    assert_string_equal(low[0], u_lowered[2]);
    assert_string_equal(low[1], u_lowered[0]);
    assert_string_equal(low[2], u_lowered[1]);
    assert_string_equal(low[3], u_lowered[0]);
    assert_ptr_not_equal(low[1], low[3]); /* each the caller's own */
    for (int i = 0; i < 4; i++) free(low[i]);
    kc_entry_free(e);
    /* What the writer refuses. */
    kc_key k = unit_key();
    char big[4098];
    memset(big, 'n', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *bad_expr[] = {"", big + 1, big}; /* empty, 4096 (fine), 4097 */
    e = (kc_entry *)0x1;
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, bad_expr, u_lowered, 1), KC_EINVAL);
    assert_null(e);
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, bad_expr + 1, u_lowered, 1), KC_OK);
    kc_entry_free(e);
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, bad_expr + 2, u_lowered, 1), KC_EINVAL);
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, u_exprs, bad_expr, 1), KC_EINVAL);
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, u_exprs, u_lowered, 0), KC_EINVAL);
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, u_exprs, u_lowered, KC_IMAGES_MAX + 1), KC_EINVAL);
}

/* A name the record lacks: KC_MISS, every output NULL (those found before it freed: LeakSanitizer
 * sees a leak otherwise), the reference not written. */
static void test_unit_name_absent(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b), got;
    kc_entry *e = unit_record(&r);
    const char *ask[][3] = {{"mul", "add<float>", "absent"},
                            {"absent", "mul", "add<float>"},
                            {"mu", "mul", "mul"},
                            {"add<float> ", "mul", "mul"}};
    for (int a = 0; a < 4; a++) {
        char *low[3] = {(char *)0x1, (char *)0x1, (char *)0x1};
        memset(&got, 0xab, sizeof got);
        assert_int_equal(kc_unit_entry_read(e, &got, ask[a], 3, low), KC_MISS);
        for (int i = 0; i < 3; i++) assert_null(low[i]);
        for (size_t i = 0; i < sizeof got; i++) assert_int_equal(((uint8_t *)&got)[i], 0xab);
    }
    /* Every name, in record order; out of memory part way: KC_ENOMEM, nothing kept. */
    for (long n = 1; n < 20; n++) {
        kc_image_ref ref;
        char **ex = (char **)0x1, **lo = (char **)0x1;
        size_t k = 9;
        kc_alloc_fail_at(n, false);
        int rc = kc_unit_entry_names_(e, &ref, &ex, &lo, &k);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) {
            assert_int_equal(k, 3);
            assert_true(kc_image_ref_equal(&ref, &r));
            for (size_t i = 0; i < 3; i++) {
                assert_string_equal(ex[i], u_exprs[i]);
                assert_string_equal(lo[i], u_lowered[i]);
                free(ex[i]), free(lo[i]);
            }
            free(ex), free(lo);
            break;
        }
        assert_int_equal(rc, KC_ENOMEM);
        assert_true(ex == NULL && lo == NULL && k == 0);
        assert_true(n < 19);
    }
    /* Out of memory part way: KC_ENOMEM, every output NULL. */
    for (long n = 1; n < 10; n++) {
        char *low[3] = {(char *)0x1, (char *)0x1, (char *)0x1};
        kc_alloc_fail_at(n, false);
        int rc = kc_unit_entry_read(e, NULL, u_exprs, 3, low);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) {
            for (int i = 0; i < 3; i++) free(low[i]);
            break;
        }
        assert_int_equal(rc, KC_ENOMEM);
        for (int i = 0; i < 3; i++) assert_null(low[i]);
    }
    kc_entry_free(e);
}

/* A unit record "<unit key>.unit" holding `section`, asked for its first name ("add<float>"). */
static int read_unit(const char *variant, const kc_buf *section) {
    kc_key k = unit_key();
    kc_entry *e = entry_holding(&k, variant, KC_SECTION_UNIT, section->data, section->len);
    const char *ask[] = {"add<float>"};
    char *low[1] = {(char *)0x1};
    int rc = kc_unit_entry_read(e, NULL, ask, 1, low);
    if (rc == KC_OK) {
        assert_string_equal(low[0], "_Z3addIfEvv");
        free(low[0]);
    } else {
        assert_null(low[0]);
    }
    /* Every name of it (what a compile of the same image adds to: [Note: recorded names]), read as strictly. */
    kc_image_ref ref;
    char **ex, **lo;
    size_t n;
    int all = kc_unit_entry_names_(e, &ref, &ex, &lo, &n);
    if (rc == KC_ECORRUPT) assert_int_equal(all, KC_ECORRUPT);
    if (all == KC_OK) {
        assert_true(n >= 1);
        assert_string_equal(ex[0], "add<float>");
        for (size_t i = 0; i < n; i++) free(ex[i]), free(lo[i]);
        free(ex), free(lo);
    } else {
        assert_true(ex == NULL && lo == NULL && n == 0);
    }
    kc_entry_free(e);
    return rc;
}

static void put_str4(kc_buf *b, const char *s, size_t n) {
    kc_buf_put_u32(b, (uint32_t)n);
    kc_buf_put(b, s, n);
}

static void test_malformed_unit_records(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    kc_buf good = {0};
    put_ref_of(&good, &r);
    kc_buf_put_u32(&good, 2);
    put_str4(&good, "add<float>", 10);
    put_str4(&good, "_Z3addIfEvv", 11);
    put_str4(&good, "mul", 3);
    put_str4(&good, "mul", 3);
    assert_int_equal(read_unit(KC_VARIANT_UNIT, &good), KC_OK); /* the control */
    /* A name twice: its first lowered name is the answer (the later one is not taken, nor leaked). */
    kc_buf dup = {0};
    put_ref_of(&dup, &r);
    kc_buf_put_u32(&dup, 3);
    put_str4(&dup, "add<float>", 10);
    put_str4(&dup, "_Z3addIfEvv", 11);
    put_str4(&dup, "mul", 3);
    put_str4(&dup, "mul", 3);
    put_str4(&dup, "add<float>", 10);
    put_str4(&dup, "_Z3addIfEvv_second", 18);
    assert_int_equal(read_unit(KC_VARIANT_UNIT, &dup), KC_OK); /* read_unit checks the answer */
    kc_buf_free(&dup);
    assert_int_equal(read_unit("sm_90", &good), KC_ECORRUPT); /* not a unit record's variant */
    assert_int_equal(read_unit(KC_VARIANT_IMAGE, &good), KC_ECORRUPT);
    char big[4097];
    memset(big, 'n', sizeof big);
    /* Each case: the first name good (so it was found and must be freed), the second bad. */
    for (int c = 0; c < 11; c++) {
        kc_buf t = {0};
        if (c == 0) {
            put_ref(&t, r.id.bytes, r.sha256, "sm_90", 5, 3, r.len); /* a malformed reference */
        } else {
            put_ref_of(&t, &r);
        }
        kc_buf_put_u32(&t, c == 1 ? 0 : c == 2 ? KC_IMAGES_MAX + 1 : c == 3 ? 3 : 2);
        put_str4(&t, "add<float>", 10);
        put_str4(&t, "_Z3addIfEvv", 11);
        switch (c) {
        case 0:
        case 1:
        case 3:
        case 10:
            put_str4(&t, "mul", 3);
            put_str4(&t, "mul", 3);
            break; /* 3: a name short */
        case 2:
            for (int i = 1; i <= KC_IMAGES_MAX; i++) {
                put_str4(&t, "m", 1);
                put_str4(&t, "m", 1);
            }
            break;
        case 4:
            put_str4(&t, "", 0);
            put_str4(&t, "mul", 3);
            break; /* empty expression */
        case 5:
            put_str4(&t, "mul", 3);
            put_str4(&t, "", 0);
            break; /* empty lowered name */
        case 6:
            put_str4(&t, big, 4097);
            put_str4(&t, "mul", 3);
            break; /* expression over 4096 */
        case 7:
            put_str4(&t, "mul", 3);
            put_str4(&t, big, 4097);
            break; /* lowered over 4096 */
        case 8:
            put_str4(&t, "m\0l", 3);
            put_str4(&t, "mul", 3);
            break; /* NUL in the expression */
        case 9:
            put_str4(&t, "mul", 3);
            put_str4(&t, "mu\0", 3);
            break; /* NUL in the lowered name */
        }
        if (c == 10) kc_buf_put_u8(&t, 0); /* bytes after its names */
        int rc = read_unit(KC_VARIANT_UNIT, &t);
        if (rc != KC_ECORRUPT) fail_msg("case %d: got %d (%s)", c, rc, kc_error_last()->message);
        kc_buf_free(&t);
    }
    for (size_t n = 0; n < good.len; n++) {
        kc_buf t = {0};
        kc_buf_put(&t, good.data, n);
        if (read_unit(KC_VARIANT_UNIT, &t) != KC_ECORRUPT) fail_msg("UNIT cut at %zu was read", n);
        kc_buf_free(&t);
    }
    /* A "unit" entry without its UNIT section. */
    kc_key k = unit_key();
    kc_entry *e = entry_holding(&k, KC_VARIANT_UNIT, KC_SECTION_IMAGES, good.data, good.len);
    assert_int_equal(kc_unit_entry_read(e, NULL, NULL, 0, NULL), KC_ECORRUPT);
    kc_entry_free(e);
    kc_buf_free(&good);
}

/* A reference's target holding a NUL ("sm\0_90": 6 bytes, of which "sm" is a valid variant) is not
 * a variant ([a-z0-9_] only, entry.h), in an image, in IMAGES and in a unit record: read as "sm" it
 * would be a second spelling of another reference (and re-encode to other bytes). */
static void test_a_target_with_a_nul_is_corrupt(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    kc_buf t = {0};
    put_ref(&t, r.id.bytes, r.sha256, "sm\0_90", 6, 0, sizeof b);
    kc_buf_put(&t, b, sizeof b);
    int rc = read_image(&r.id, KC_VARIANT_IMAGE, &t, NULL, 1);
    kc_buf_free(&t);
    if (rc != KC_ECORRUPT) fail_msg("an image whose target is \"sm\\0_90\" was read (%d)", rc);
    kc_buf_put_u32(&t, 1);
    put_ref(&t, r.id.bytes, r.sha256, "sm\0_90", 6, 0, sizeof b);
    rc = read_images(&t);
    kc_buf_free(&t);
    if (rc != KC_ECORRUPT) fail_msg("an IMAGES reference whose target is \"sm\\0_90\" was read (%d)", rc);
    put_ref(&t, r.id.bytes, r.sha256, "sm\0_90", 6, 0, sizeof b);
    kc_buf_put_u32(&t, 1);
    kc_buf_put_str(&t, "add<float>");
    kc_buf_put_str(&t, "_Z3addIfEvv");
    rc = read_unit(KC_VARIANT_UNIT, &t);
    kc_buf_free(&t);
    if (rc != KC_ECORRUPT) fail_msg("a unit record whose image's target is \"sm\\0_90\" was read (%d)", rc);
}

/* ---- kc_entry_peek_version ---- */

static void test_peek_version(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, &r, b), KC_OK);
    uint8_t *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, (void **)&bytes, &len), KC_OK);
    kc_entry_free(e);
    assert_int_equal(kc_entry_peek_version(bytes, len), KC_ENTRY_FORMAT_VERSION);
    assert_int_equal(KC_ENTRY_FORMAT_VERSION, 4);
    assert_int_equal(kc_entry_peek_version(bytes, 96), 4); /* the fixed header is all it reads */
    assert_int_equal(kc_entry_peek_version(bytes, 95), -1);
    bytes[8] = 7; /* another version: told as it is, the header checksum not consulted */
    assert_int_equal(kc_entry_peek_version(bytes, len), 7);
    bytes[0] ^= 1; /* no magic: not an entry at all */
    assert_int_equal(kc_entry_peek_version(bytes, len), -1);
    assert_int_equal(kc_entry_peek_version(NULL, 0), -1);
    memset(bytes, 0, len);
    assert_int_equal(kc_entry_peek_version(bytes, len), -1);
    kc_free(bytes);
    size_t glen;
    uint8_t *v2 = kct_read(KC_GOLDEN_DIR "/entry_v2.kce", &glen);
    assert_non_null(v2);
    assert_int_equal(kc_entry_peek_version(v2, glen), 2);
    free(v2);
}

/* ---- golden files ---- */

/* Compare `e`'s bytes with tests/golden/<name> (written first under KCACHE_REGEN_GOLDEN=1). */
static void golden(kc_entry *e, const char *name, uint8_t **out, size_t *out_len) {
    void *bytes;
    size_t len;
    kc_entry_set_created_at(e, GOLDEN_TIME);
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", KC_GOLDEN_DIR, name);
    if (getenv("KCACHE_REGEN_GOLDEN")) assert_int_equal(kct_write(path, bytes, len), 0);
    size_t glen;
    uint8_t *g = kct_read(path, &glen);
    if (!g) fail_msg("no golden file %s", path);
    if (glen != len || memcmp(g, bytes, len) != 0)
        fail_msg("%s: the encoder's bytes (%zu) are not the golden file's (%zu): a format change needs a new "
                 "version",
                 name, len, glen);
    kc_free(bytes);
    *out = g;
    *out_len = glen;
}

/* ---- kc_entry_check_stored ([Note: checked, not inflated]) ---- */

/* The encoded bytes of an image object of `n` compressible bytes (its IMAGE section is zstd). */
static void *compressible_image(kc_image_ref *r, size_t n, size_t *len) {
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)("cubin-like text "[i % 16] ^ (i / 4096));
    assert_int_equal(kc_image_ref_make(r, "sm_90", 0, b, n), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, r, b), KC_OK);
    free(b);
    kc_entry_set_created_at(e, GOLDEN_TIME);
    void *bytes;
    assert_int_equal(kc_entry_encode(e, &bytes, len), KC_OK);
    kc_entry_free(e);
    return bytes;
}

/* The stored bytes of section `type`: its offset and length (from the section table). */
static void section_at(const uint8_t *p, kc_section_type type, size_t *off, size_t *stored, uint32_t *codec) {
    uint32_t nsec = fz_rd32(p + 72);
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = p + 96 + (size_t)i * 40;
        if (fz_rd32(d) != (uint32_t)type) continue;
        *codec = fz_rd32(d + 4), *stored = (size_t)fz_rd64(d + 16), *off = (size_t)fz_rd64(d + 24);
        return;
    }
    fail_msg("no section %d", (int)type);
}

static void test_check_stored(void **state) {
    (void)state;
    kc_image_ref r;
    size_t len;
    uint8_t *p = compressible_image(&r, 64 * 1024, &len);
    uint64_t raw = 0;
    assert_int_equal(kc_entry_check_stored(p, len, &r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, &raw), KC_OK);
    assert_int_equal(raw, kc_image_section_len(&r));
    size_t off = 0, stored = 0;
    uint32_t codec = 0;
    section_at(p, KC_SECTION_IMAGE, &off, &stored, &codec);
    assert_int_equal(codec, KC_CODEC_ZSTD); /* so that what follows is about inflating */
    assert_true(stored < raw / 4);
    /* The name's promise: another key, another variant, a section it lacks. */
    kc_key other = r.id;
    other.bytes[15] ^= 1;
    assert_int_equal(kc_entry_check_stored(p, len, &other, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, &raw), KC_ECORRUPT);
    expect_msg("another key or variant");
    assert_int_equal(raw, 0);
    assert_int_equal(kc_entry_check_stored(p, len, &r.id, "sm_90", KC_SECTION_IMAGE, NULL), KC_ECORRUPT);
    assert_int_equal(kc_entry_check_stored(p, len, &r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGES, NULL), KC_ECORRUPT);
    expect_msg("no section");
    assert_int_equal(kc_entry_check_stored(NULL, len, &r.id, KC_VARIANT_IMAGE, -1, NULL), KC_EINVAL);
    /* Any byte flipped, anywhere, is refused, as a decode refuses it; so is a truncation. */
    for (size_t at = 0; at < len; at += 53) {
        p[at] ^= 0x04;
        kc_entry *d = NULL;
        if (kc_entry_check_stored(p, len, &r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, NULL) != KC_ECORRUPT)
            fail_msg("byte %zu of %zu flipped passed the check", at, len);
        assert_int_equal(kc_entry_decode_as(&d, p, len, &r.id, KC_VARIANT_IMAGE), KC_ECORRUPT);
        p[at] ^= 0x04;
    }
    assert_int_equal(kc_entry_check_stored(p, len - 1, &r.id, KC_VARIANT_IMAGE, -1, NULL), KC_ECORRUPT);
    /* A frame that declares another size than its section's is refused without inflating it. */
    uint8_t *q = malloc(len);
    assert_non_null(q);
    memcpy(q, p, len);
    uint8_t *d0 = q + 96;
    uint32_t nsec = fz_rd32(q + 72);
    for (uint32_t i = 0; i < nsec; i++, d0 += 40)
        if (fz_rd32(d0) == KC_SECTION_IMAGE) fz_wr64(d0 + 8, fz_rd64(d0 + 8) - 1); /* raw length - 1 */
    fz_fix_entry(q, len);
    assert_int_equal(kc_entry_check_stored(q, len, &r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, NULL), KC_ECORRUPT);
    expect_msg("decompress to its length");
    /* The contract: the compressed bytes are checked, not inflated.  A zstd payload changed
     * inside with every checksum made right again (what no writer of this library produces)
     * passes the check; the full read — decode, then the image's XXH3-128 — refuses it. */
    int inflate_fails = 0;
    for (size_t at = off + 12; at < off + stored - 4; at++) { /* past the frame header */
        memcpy(q, p, len);
        q[at] ^= 0x5a;
        fz_fix_entry(q, len);
        assert_int_equal(kc_entry_check_stored(q, len, &r.id, KC_VARIANT_IMAGE, KC_SECTION_IMAGE, NULL), KC_OK);
        kc_entry *d = NULL;
        int rc = kc_entry_decode_as(&d, q, len, &r.id, KC_VARIANT_IMAGE);
        inflate_fails += rc == KC_ECORRUPT && strstr(kc_error_last()->message, "decompress") != NULL;
        if (rc == KC_OK) rc = kc_image_entry_read(d, &r, 0, NULL, NULL, NULL);
        if (rc != KC_ECORRUPT) fail_msg("payload byte %zu changed was read in full", at - off);
        kc_entry_free(d);
    }
    assert_true(inflate_fails > 0); /* some of those did not even inflate, and the check took them */
    free(q);
    kc_free(p);
}

static void test_golden_image(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, &r, b), KC_OK);
    assert_int_equal(kc_entry_set_toolchain(e, "nvrtc 13.0"), KC_OK);
    uint8_t *g;
    size_t glen;
    golden(e, "image_v4.kce", &g, &glen);
    kc_entry_free(e);
    assert_int_equal(kc_entry_peek_version(g, glen), 4);
    assert_int_equal(kc_entry_decode_as(&e, g, glen, &r.id, KC_VARIANT_IMAGE), KC_OK);
    kc_image_ref got;
    const void *p;
    size_t plen;
    assert_int_equal(kc_image_entry_read(e, &r, 1, &got, &p, &plen), KC_OK);
    assert_int_equal(plen, sizeof b);
    assert_memory_equal(p, b, sizeof b);
    assert_int_equal(kc_entry_created_at(e), GOLDEN_TIME);
    assert_string_equal(kc_entry_toolchain(e), "nvrtc 13.0");
    kc_entry_free(e);
    free(g);
}

static void test_golden_unit(void **state) {
    (void)state;
    uint8_t b[300];
    kc_image_ref r = cubin_ref(b, sizeof b);
    kc_key k = unit_key();
    kc_entry *e;
    assert_int_equal(kc_unit_entry_new(&e, &k, &r, u_exprs, u_lowered, 3), KC_OK);
    kc_digest d;
    for (int i = 0; i < 16; i++) d.bytes[i] = (uint8_t)(i * 11);
    assert_int_equal(kc_entry_add_digest(e, "unit", &d), KC_OK);
    assert_int_equal(kc_entry_set_toolchain(e, "nvrtc 13.0"), KC_OK);
    uint8_t *g;
    size_t glen;
    golden(e, "unit_v4.kce", &g, &glen);
    kc_entry_free(e);
    assert_int_equal(kc_entry_decode_as(&e, g, glen, &k, KC_VARIANT_UNIT), KC_OK);
    kc_image_ref got;
    char *low[3];
    assert_int_equal(kc_unit_entry_read(e, &got, u_exprs, 3, low), KC_OK);
    assert_true(kc_image_ref_equal(&got, &r));
    for (int i = 0; i < 3; i++) {
        assert_string_equal(low[i], u_lowered[i]);
        free(low[i]);
    }
    assert_int_equal(kc_entry_digest_count(e), 1);
    kc_entry_free(e);
    free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_digests),
        cmocka_unit_test(test_ref_make_refuses),
        cmocka_unit_test(test_ref_equal),
        cmocka_unit_test(test_image_round_trip),
        cmocka_unit_test(test_image_of_another_kind_is_refused),
        cmocka_unit_test(test_flipped_image_byte_fails_xxh3),
        cmocka_unit_test(test_forged_sha256_is_caught_only_by_a_full_read),
        cmocka_unit_test(test_want_must_match),
        cmocka_unit_test(test_malformed_image_sections),
        cmocka_unit_test(test_images_round_trip),
        cmocka_unit_test(test_malformed_images),
        cmocka_unit_test(test_unit_round_trip),
        cmocka_unit_test(test_unit_name_absent),
        cmocka_unit_test(test_malformed_unit_records),
        cmocka_unit_test(test_a_target_with_a_nul_is_corrupt),
        cmocka_unit_test(test_peek_version),
        cmocka_unit_test(test_check_stored),
        cmocka_unit_test(test_golden_image),
        cmocka_unit_test(test_golden_unit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
