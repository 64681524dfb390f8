/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_bounds.c — a table of contents is bounded by the bytes after it, in every bundle
 * version, through the public import alone (kc_bundle_import), with bundles built by hand from the
 * documented format (include/kcache/bundle.h) and every checksum right.
 *
 * An entry's size that runs past the content by 1 to len(toc) bytes is still within the whole
 * content (toc included): a bound against the whole content instead of the bytes after the toc
 * lets it through, and the entry's checksum then runs past the inflated buffer (v3 had no later
 * check to stop it).  Each version must refuse it from the toc — before any entry's bytes are
 * checksummed (the message never names a checksum), with or without a dry run — and write
 * nothing.  Entries that stop short of what their version puts after them are refused too.  A
 * well-formed v1 bundle of the same entry imports (the control); any byte of its header
 * checksum flipped, or its payload checksum changed, or its entry's offset moved, refuses it.  This is the test
 * of the mutant bound-bundle-toc-size (tools/mutants.txt); it reads no internal header, so it
 * holds however bundle.c bounds its records.
 */
#include <xxhash.h>
#include <zstd.h>

#include "common/internal.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("bounds", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* An encoded graph entry named <key>.sm_90 (a complete entry: it decodes). */
static uint8_t *an_entry(char name[64], size_t *len) {
    kc_key k = kct_key("bounds", 1);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_set_toolchain(e, "nvrtc test"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, "forward-program", 15), KC_OK);
    void *b;
    assert_int_equal(kc_entry_encode(e, &b, len), KC_OK);
    kc_entry_free(e);
    kc_key_to_hex(&k, name);
    strcpy(name + KC_KEY_HEX_LEN, ".sm_90");
    return b;
}

static uint64_t toc_off; /* the entry's offset in the toc (0: its place) */

/* A bundle of `version` with one entry: toc (size as given, offset toc_off), the entry, then `tail` bytes of `tail_len`. */
static void write_bundle(const char *path, uint16_t version, const char *name, const uint8_t *entry, size_t elen,
                         uint64_t size, const uint8_t *tail, size_t tail_len) {
    size_t nl = strlen(name), cap = 2 + nl + 24 + elen + tail_len, off = 0;
    uint8_t *content = malloc(cap);
    kc_wr_u16(content, (uint16_t)nl);
    memcpy(content + 2, name, nl);
    off = 2 + nl;
    kc_wr_u64(content + off, toc_off);
    kc_wr_u64(content + off + 8, size);
    kc_wr_u64(content + off + 16, XXH3_64bits(entry, elen));
    off += 24;
    memcpy(content + off, entry, elen);
    off += elen;
    if (tail_len) memcpy(content + off, tail, tail_len);
    off += tail_len;
    size_t zcap = ZSTD_compressBound(off);
    uint8_t *file = malloc(48 + zcap);
    size_t z = ZSTD_compress(file + 48, zcap, content, off, 3);
    assert_false(ZSTD_isError(z));
    memcpy(file, "\x89KCB\r\n\x1a\n", 8);
    kc_wr_u16(file + 8, version);
    kc_wr_u16(file + 10, 0);
    kc_wr_u32(file + 12, 1);
    kc_wr_u64(file + 16, off);
    kc_wr_u64(file + 24, z);
    kc_wr_u64(file + 32, XXH3_64bits(content, off));
    kc_wr_u64(file + 40, XXH3_64bits(file, 40));
    assert_int_equal(kct_write(path, file, 48 + z), 0);
    free(file);
    free(content);
}

static void test_an_entry_past_the_content_is_refused_in_every_version(void **state) {
    (void)state;
    char name[64], path[600];
    size_t elen;
    uint8_t *entry = an_entry(name, &elen);
    snprintf(path, sizeof path, "%s/b.kcb", dir);
    const size_t toc_len = 2 + strlen(name) + 24;
    /* The control: v1, the entry's own size, imports (dry run and real). */
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    write_bundle(path, 1, name, entry, elen, elen, NULL, 0);
    assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_OK);
    /* The header's checksum is checked for itself: any byte of it flipped refuses the bundle. */
    size_t blen;
    uint8_t *b = kct_read(path, &blen);
    for (size_t at = 40; at < 48; at++) {
        b[at] ^= 0x10;
        char flipped[700];
        snprintf(flipped, sizeof flipped, "%s/flipped.kcb", dir);
        assert_int_equal(kct_write(flipped, b, blen), 0);
        assert_int_equal(kc_bundle_import(cache, flipped, 1, &r), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "header checksum"));
        b[at] ^= 0x10;
    }
    /* So is the payload's: its checksum field changed (the header's checksum made right) refuses it. */
    b[32] ^= 1;
    kc_wr_u64(b + 40, XXH3_64bits(b, 40));
    char resummed[700];
    snprintf(resummed, sizeof resummed, "%s/resummed.kcb", dir);
    assert_int_equal(kct_write(resummed, b, blen), 0);
    assert_int_equal(kc_bundle_import(cache, resummed, 1, &r), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "payload checksum"));
    free(b);

    /* After the entry: v2 a coverage record's room, v3 clen 0 and a profile count (8 bytes). */
    static const uint8_t tail[8] = {0};
    for (uint16_t version = 1; version <= 3; version++) {
        size_t tail_len = version == 1 ? 0 : 8, after_toc = elen + tail_len;
        const size_t over[] = {1, 8, toc_len};
        for (size_t i = 0; i < KC_ARRAY_LEN(over); i++) {
            write_bundle(path, version, name, entry, elen, after_toc + over[i], tail, tail_len);
            for (int dry = 1; dry >= 0; dry--) {
                int rc = kc_bundle_import(cache, path, dry, &r);
                const char *msg = kc_error_last()->message;
                if (rc != KC_ECORRUPT)
                    fail_msg("v%u, entry %zu bytes past the content%s: %s (%s)", version, over[i],
                             dry ? " (dry run)" : "", kc_status_str(rc), msg);
                if (strstr(msg, "checksum"))
                    fail_msg("v%u, entry %zu bytes past the content: refused only by a checksum over bytes past it: %s",
                             version, over[i], msg);
            }
        }
    }
    /* Entries that stop short: v1 with bytes after its last entry, v2 without room for its coverage
     * record, v3 without room for its profiles record (fewer than 8 bytes after the entries). */
    static const struct {
        uint16_t version;
        size_t tail;
    } short_of[] = {{1, 1}, {1, 8}, {2, 0}, {3, 0}, {3, 4}, {3, 7}};
    for (size_t i = 0; i < KC_ARRAY_LEN(short_of); i++) {
        write_bundle(path, short_of[i].version, name, entry, elen, elen, tail, short_of[i].tail);
        int rc = kc_bundle_import(cache, path, 1, &r);
        if (rc != KC_ECORRUPT)
            fail_msg("v%u with %zu bytes after its entries: %s", short_of[i].version, short_of[i].tail,
                     kc_status_str(rc));
    }
    /* An entry whose offset is not its place (just past it, or far past the content) is refused by
     * its offset, before its bytes are read. */
    const uint64_t offs[] = {1, elen, 1ull << 40};
    for (size_t i = 0; i < KC_ARRAY_LEN(offs); i++) {
        toc_off = offs[i];
        write_bundle(path, 1, name, entry, elen, elen, NULL, 0);
        assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "out of place"));
    }
    toc_off = 0;
    assert_int_equal(kct_count_files(dir, ".sm_90"), 0);
    kc_free(entry);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_an_entry_past_the_content_is_refused_in_every_version, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
