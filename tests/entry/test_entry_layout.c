/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_entry_layout.c — hand-built entries (include/kcache/entry.h's grammar, every checksum valid)
 * whose layout the decoder must refuse from the section table: a small entry declaring a huge
 * section (a decompression bomb) is refused before anything is inflated (issue 15), as is a section
 * declaring one byte over KC_SECTION_MAX_RAW; sections with a gap between them (bytes no checksum
 * covers) or a section type twice are corrupt.  Split from test_entry.c.  The writer stores the
 * sections a compile-path hit must read (IMAGES, ORIGIN) as they are, however well they compress.
 */
#include "helpers.h"

#include <xxhash.h>
#include <zstd.h>

#include "common/internal.h"
#include "kcache.h"

/* The header checksum made right again after the header or table changed. */
static void resum_header(uint8_t *b) {
    uint32_t nsec = kc_rd_u32(b + 72);
    uint8_t tmp[88 + 16 * 40];
    memcpy(tmp, b, 88);
    memcpy(tmp + 88, b + 96, (size_t)nsec * 40);
    kc_wr_u64(b + 88, XXH3_64bits(tmp, 88 + (size_t)nsec * 40));
}


/* A hand-built entry: META (codec none, no digests) then one KERNELS section stored as given;
 * every checksum valid, whatever the sizes claim.  Returns the bytes (malloc) and their length. */
static uint8_t *hand_entry(uint32_t codec, uint64_t raw_len, const uint8_t *stored, size_t slen, size_t *len_out) {
    uint8_t meta[14] = {0};
    size_t table_end = 96 + 2 * 40, len = table_end + sizeof meta + slen;
    uint8_t *h = calloc(1, len);
    memcpy(h, "\x89KCE\r\n\x1a\n", 8);
    kc_wr_u16(h + 8, KC_ENTRY_FORMAT_VERSION);
    kc_wr_u16(h + 10, 96);
    memset(h + 16, 0xab, 16);
    memcpy(h + 32, "sm_90", 5);
    kc_wr_u64(h + 64, len);
    kc_wr_u32(h + 72, 2);
    uint8_t *d = h + 96;
    kc_wr_u32(d, KC_SECTION_META);
    kc_wr_u32(d + 4, KC_CODEC_NONE);
    kc_wr_u64(d + 8, sizeof meta);
    kc_wr_u64(d + 16, sizeof meta);
    kc_wr_u64(d + 24, table_end);
    kc_wr_u64(d + 32, XXH3_64bits(meta, sizeof meta));
    memcpy(h + table_end, meta, sizeof meta);
    d += 40;
    kc_wr_u32(d, KC_SECTION_KERNELS);
    kc_wr_u32(d + 4, codec);
    kc_wr_u64(d + 8, raw_len);
    kc_wr_u64(d + 16, slen);
    kc_wr_u64(d + 24, table_end + sizeof meta);
    kc_wr_u64(d + 32, XXH3_64bits(stored, slen));
    memcpy(h + table_end + sizeof meta, stored, slen);
    uint8_t tmp[88 + 80];
    memcpy(tmp, h, 88);
    memcpy(tmp + 88, h + 96, 80);
    kc_wr_u64(h + 88, XXH3_64bits(tmp, sizeof tmp));
    *len_out = len;
    return h;
}

/* Issue 15 item 2: an 8 KB entry whose KERNELS section is a zstd frame of 256 MiB of zeros (every
 * checksum valid) is refused from its section table, before anything is allocated or inflated. */
static void test_a_decompression_bomb_is_refused_before_inflating(void **state) {
    (void)state;
    const size_t raw = KC_SECTION_MAX_RAW;
    ZSTD_CCtx *cz = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cz, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setPledgedSrcSize(cz, raw);
    size_t cap = 1 << 20, zlen = 0;
    uint8_t *z = malloc(cap);
    static const uint8_t zeros[1 << 20];
    for (size_t done = 0; done < raw; done += sizeof zeros) {
        ZSTD_inBuffer in = {zeros, sizeof zeros, 0};
        ZSTD_EndDirective end = done + sizeof zeros == raw ? ZSTD_e_end : ZSTD_e_continue;
        size_t left;
        do {
            ZSTD_outBuffer out = {z, cap, zlen};
            left = ZSTD_compressStream2(cz, &out, &in, end);
            assert_false(ZSTD_isError(left));
            zlen = out.pos;
        } while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
    }
    ZSTD_freeCCtx(cz);
    size_t len;
    uint8_t *bomb = hand_entry(KC_CODEC_ZSTD, raw, z, zlen, &len);
    assert_true(len < 16384); /* about 8 KB */
    kc_entry *d = (kc_entry *)0x1;
    assert_int_equal(kc_entry_decode(&d, bomb, len), KC_ECORRUPT);
    assert_null(d);
    assert_non_null(strstr(kc_error_last()->message, "compression ratio"));
    free(bomb);
    /* A small section of zeros decodes whatever its ratio (the hand-built entry is well formed). */
    uint8_t *small = calloc(1, 64 << 10);
    size_t slen = ZSTD_compress(z, cap, small, 64 << 10, 1);
    free(small);
    uint8_t *ok = hand_entry(KC_CODEC_ZSTD, 64 << 10, z, slen, &len);
    assert_int_equal(kc_entry_decode(&d, ok, len), KC_OK);
    kc_entry_free(d);
    free(ok);
    free(z);
    /* A section declaring one byte over KC_SECTION_MAX_RAW (1.1 MB stored: within the ratio) is refused
     * by its size, from the table, not after a 256 MiB buffer was allocated for it. */
    size_t over_len = (KC_SECTION_MAX_RAW + 1u) / KC_SECTION_MAX_RATIO + 4096;
    uint8_t *junk = malloc(over_len);
    for (size_t i = 0; i < over_len; i++) junk[i] = (uint8_t)(i * 37 + (i >> 8));
    uint8_t *over = hand_entry(KC_CODEC_ZSTD, KC_SECTION_MAX_RAW + 1u, junk, over_len, &len);
    assert_int_equal(kc_entry_decode(&d, over, len), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "raw length over the cap"));
    free(over);
    free(junk);
}


/* A hand-built entry of META (empty, codec none) then KERNELS sections of the given payloads, each
 * `gap` bytes after the last (0: contiguous, as written); every checksum valid.  `type2` is the
 * second section's type. */
static uint8_t *hand_sections(size_t gap, uint32_t type2, size_t *len_out) {
    static const uint8_t meta[14] = {0}, p1[5] = "first", p2[6] = "second";
    const uint8_t *pay[3] = {meta, p1, p2};
    const size_t plen[3] = {sizeof meta, sizeof p1, sizeof p2};
    const uint32_t types[3] = {KC_SECTION_META, KC_SECTION_KERNELS, type2};
    size_t table_end = 96 + 3 * 40, len = table_end + plen[0] + plen[1] + plen[2] + 3 * gap, off = table_end;
    uint8_t *h = calloc(1, len);
    memcpy(h, "\x89KCE\r\n\x1a\n", 8);
    kc_wr_u16(h + 8, KC_ENTRY_FORMAT_VERSION);
    kc_wr_u16(h + 10, 96);
    memset(h + 16, 0xab, 16);
    memcpy(h + 32, "sm_90", 5);
    kc_wr_u64(h + 64, len);
    kc_wr_u32(h + 72, 3);
    for (int i = 0; i < 3; i++) {
        uint8_t *d = h + 96 + 40 * i;
        off += gap;
        kc_wr_u32(d, types[i]);
        kc_wr_u32(d + 4, KC_CODEC_NONE);
        kc_wr_u64(d + 8, plen[i]);
        kc_wr_u64(d + 16, plen[i]);
        kc_wr_u64(d + 24, off);
        kc_wr_u64(d + 32, XXH3_64bits(pay[i], plen[i]));
        memcpy(h + off, pay[i], plen[i]);
        off += plen[i];
    }
    resum_header(h);
    *len_out = len;
    return h;
}

/* Sections in order and contiguous, each type once: a gap (bytes no checksum covers) or a second
 * section of one type is corrupt, with every checksum right.  The same layout without either decodes. */
static void test_sections_are_contiguous_and_of_distinct_types(void **state) {
    (void)state;
    kc_entry *d = NULL;
    size_t len;
    uint8_t *ok = hand_sections(0, KC_SECTION_FORWARD, &len);
    assert_int_equal(kc_entry_decode(&d, ok, len), KC_OK);
    kc_entry_free(d);
    free(ok);
    for (size_t gap = 1; gap <= 8; gap += 7) {
        uint8_t *b = hand_sections(gap, KC_SECTION_FORWARD, &len);
        d = (kc_entry *)0x1;
        if (kc_entry_decode(&d, b, len) != KC_ECORRUPT) fail_msg("sections %zu bytes apart: decoded", gap);
        assert_null(d);
        assert_non_null(strstr(kc_error_last()->message, "out of place"));
        free(b);
    }
    uint8_t *twice = hand_sections(0, KC_SECTION_KERNELS, &len);
    d = (kc_entry *)0x1;
    assert_int_equal(kc_entry_decode(&d, twice, len), KC_ECORRUPT);
    assert_null(d);
    assert_non_null(strstr(kc_error_last()->message, "twice"));
    free(twice);
}

/* The codec of the section of `type` in the encoded entry b (its table), or -1 when absent. */
static int codec_of(const uint8_t *b, uint32_t type) {
    uint32_t nsec = kc_rd_u32(b + 72);
    for (uint32_t i = 0; i < nsec; i++)
        if (kc_rd_u32(b + 96 + 40 * (size_t)i) == type) return (int)kc_rd_u32(b + 96 + 40 * (size_t)i + 4);
    return -1;
}

/* IMAGES and ORIGIN, which a compile-path hit reads on every hit ([Note: checked, not inflated] in
 * decode.c), are stored as they are even where zstd would save an eighth; another section of the
 * same bytes is still compressed; the entry decodes to the same sections. */
static void test_sections_a_hit_reads_are_stored_as_they_are(void **state) {
    (void)state;
    kc_entry *e;
    kc_key k = {{7}};
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    char rep[1200];
    for (size_t i = 0; i < sizeof rep - 1; i++) rep[i] = "abcdefgh"[i % 8];
    rep[sizeof rep - 1] = '\0';
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, rep, sizeof rep), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_IMAGES, rep, sizeof rep), KC_OK);
    assert_int_equal(kc_entry_set_origin(e, "compile_log", rep), KC_OK);
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    assert_int_equal(codec_of(bytes, KC_SECTION_KERNELS), KC_CODEC_ZSTD); /* compressing pays here */
    assert_int_equal(codec_of(bytes, KC_SECTION_IMAGES), KC_CODEC_NONE);
    assert_int_equal(codec_of(bytes, KC_SECTION_ORIGIN), KC_CODEC_NONE);
    kc_entry *d;
    assert_int_equal(kc_entry_decode(&d, bytes, len), KC_OK);
    const void *data;
    size_t n;
    assert_int_equal(kc_entry_section(d, KC_SECTION_IMAGES, &data, &n), KC_OK);
    assert_int_equal(n, sizeof rep);
    assert_memory_equal(data, rep, sizeof rep);
    char got[sizeof rep];
    assert_int_equal(kc_entry_origin(d, "compile_log", got, sizeof got), KC_OK);
    assert_string_equal(got, rep);
    kc_entry_free(d);
    kc_entry_free(e);
    free(bytes);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_decompression_bomb_is_refused_before_inflating),
        cmocka_unit_test(test_sections_are_contiguous_and_of_distinct_types),
        cmocka_unit_test(test_sections_a_hit_reads_are_stored_as_they_are),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
