/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_read.c — phase one of an import (src/bundle/bundle_read.c) against hostile
 * bundles whose checksums are right, so that only the reader's bounds stand between them and
 * memory: every length bounded by what remains.
 *
 *   - the coverage record's reader counted a bad LAST target or graph twice and its free then
 *     freed one slot past its array: an entry-less v2 or v3 bundle whose third (last) target is
 *     `zz` crashed a dry-run import — refused now, for v2 and v3, with no trust configured, under
 *     a keyring and under a MAC key (an entry-less bundle reached it before any check);
 *   - v3's table of contents was bounded by the whole content, not the bytes after the table
 *     (`left - expect < 8` wrapped): an entry sized to the whole content made the import read
 *     past the inflated buffer (16 MiB: SIGSEGV even without ASan) — refused now, with its reason;
 *   - the same overrun for v1, v2 and v4 is refused with the same reason.
 * Under ASan (KCACHE_SANITIZE) every overrun the old code made is also reported.
 */
#include <xxhash.h>
#include <zstd.h>

#include "bundle/internal.h" /* kc_bundle_seal_put_ */
#include "common/internal.h" /* kc_buf, kc_wr_* */
#include "kcache.h"
#include "helpers.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "bread")

static void put16(kc_buf *b, uint16_t v) { kc_buf_put_u16(b, v); }
static void put8(kc_buf *b, uint8_t v) { kc_buf_put(b, &v, 1); }
static void puts_(kc_buf *b, const char *s) { kc_buf_put(b, s, strlen(s)); }

/* Write `content` as a bundle of `version` and `count` entries, every checksum right. */
static void write_bundle(const char *path, int version, uint32_t count, const uint8_t *content, size_t raw) {
    size_t bound = ZSTD_compressBound(raw);
    uint8_t *f = malloc(48 + bound);
    assert_non_null(f);
    size_t z = ZSTD_compress(f + 48, bound, content, raw, 1);
    assert_false(ZSTD_isError(z));
    static const uint8_t magic[8] = {0x89, 'K', 'C', 'B', '\r', '\n', 0x1a, '\n'};
    memcpy(f, magic, 8);
    kc_wr_u16(f + 8, (uint16_t)version);
    kc_wr_u16(f + 10, 0);
    kc_wr_u32(f + 12, count);
    kc_wr_u64(f + 16, raw);
    kc_wr_u64(f + 24, z);
    kc_wr_u64(f + 32, XXH3_64bits(content, raw));
    kc_wr_u64(f + 40, XXH3_64bits(f, 40));
    assert_int_equal(kct_write(path, f, 48 + z), 0);
    free(f);
}

/* A coverage record whose targets are sm_90, sm_80 and `last` (one graph). */
static void covers(kc_buf *b, const char *last) {
    put16(b, 6);
    puts_(b, "m.toml");
    put16(b, 3);
    const char *t[] = {"sm_90", "sm_80", last};
    for (int i = 0; i < 3; i++) put8(b, (uint8_t)strlen(t[i])), puts_(b, t[i]);
    kc_buf_put_u32(b, 1);
    uint8_t key[16] = {1};
    kc_buf_put(b, key, 16);
    put16(b, 1);
    puts_(b, "g");
}

static const char PROFILE[] = "kcache-profile 1\nsite s\ninput 0 1\n";

static void profiles(kc_buf *b) {
    kc_buf_put_u32(b, 1);
    put16(b, (uint16_t)(sizeof PROFILE - 1));
    puts_(b, PROFILE);
}

/* The caches of the three trust settings: none, a keyring, a MAC key. */
static kc_cache *open_trust(const char *dir, int which) {
    char prefix[4200], pub[4300];
    snprintf(prefix, sizeof prefix, "%s/build", tmp);
    snprintf(pub, sizeof pub, "%s.pub", prefix);
    if (which == 1 && access(pub, R_OK) != 0) assert_int_equal(kc_sign_keygen(prefix, NULL), KC_OK);
    return kct_open_remote(dir, NULL, NULL, which == 1 ? pub : NULL, which == 2 ? "0123456789abcdef-a-mac-key" : NULL);
}

static const char MAC[] = "0123456789abcdef-a-mac-key";
static const char UNCOVERED[] = "no signature or MAC covers"; /* v2, v3 under a keyring or MAC key */

/* Refused by a dry run and an import, with `why[t]` in the message, for each trust setting t
 * (none, a keyring, a MAC key); the coverage read (no trust) says why[0]. */
static void import_refused(const char *path, const char *const why[3]) {
    for (int which = 0; which < 3; which++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/cache%d", tmp, which);
        kc_cache *c = open_trust(dir, which);
        kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
        int rc = kc_bundle_import(c, path, 1, &rep);
        if (rc == KC_OK || !strstr(kc_error_last()->message, why[which]))
            fail_msg("trust %d: %d '%s' (want '%s')", which, rc, kc_error_last()->message, why[which]);
        assert_int_equal(kc_bundle_import(c, path, 0, &rep), rc);
        kc_cache_close(c);
    }
    kc_bundle_coverage *cov = (kc_bundle_coverage *)1;
    assert_int_not_equal(kc_bundle_coverage_read(path, &cov), KC_OK);
    assert_null(cov);
    if (!strstr(kc_error_last()->message, why[0])) fail_msg("coverage read: '%s'", kc_error_last()->message);
}

/* An entry-less bundle of `version` whose coverage record is `cv`: v2 (covers only), v3 (with a
 * profile), v4 (with a profile, and a seal MACed with MAC, so the MAC-key cache reads it too). */
static void records_bundle(const char *path, int version, const kc_buf *cv) {
    kc_buf b = {0};
    if (version >= 3) kc_buf_put_u32(&b, (uint32_t)cv->len);
    kc_buf_put(&b, cv->data, cv->len);
    if (version == 4) kc_buf_put_u32(&b, (uint32_t)(4 + 2 + sizeof PROFILE - 1));
    if (version >= 3) profiles(&b);
    kc_trust mac = {(const uint8_t *)MAC, sizeof MAC - 1, NULL, NULL};
    if (version == 4) assert_int_equal(kc_bundle_seal_put_(&b, &mac), KC_OK);
    assert_false(b.failed);
    write_bundle(path, version, 0, b.data, b.len);
    kc_buf_free(&b);
}

/* What each trust setting says of a bundle of `version` whose records are malformed (`bad`). */
static void refused_records(const char *path, int version, const char *bad) {
    const char *legacy[3] = {bad, UNCOVERED, UNCOVERED}, *sealed[3] = {bad, "its seal", bad};
    import_refused(path, version == 4 ? sealed : legacy);
}

/* Crash 1: a bad last target (and a bad last graph), entry-less v2 and v3. */
static void test_bad_last_target(void **state) {
    (void)state;
    const char *lasts[] = {"zz", "sm_90"}; /* "sm_90" again: a target named twice, also last */
    for (int version = 2; version <= 4; version++)
        for (int l = 0; l < 2; l++) {
            kc_buf cv = {0};
            covers(&cv, lasts[l]);
            char path[4200];
            snprintf(path, sizeof path, "%s/crash1-v%d-%d.kcb", tmp, version, l);
            records_bundle(path, version, &cv);
            refused_records(path, version, "coverage record is malformed");
            kc_buf_free(&cv);
        }
}

/* Crash 1, the graphs: the last graph's name is empty. */
static void test_bad_last_graph(void **state) {
    (void)state;
    for (int version = 2; version <= 4; version++) {
        kc_buf cv = {0};
        put16(&cv, 6);
        puts_(&cv, "m.toml");
        put16(&cv, 1);
        put8(&cv, 5), puts_(&cv, "sm_90");
        kc_buf_put_u32(&cv, 2);
        uint8_t key[16] = {1};
        for (int g = 0; g < 2; g++) kc_buf_put(&cv, key, 16), put16(&cv, g ? 0 : 1), puts_(&cv, g ? "" : "g");
        for (int i = 0; i < 24; i++) put8(&cv, 0); /* room, so the count passes its bound */
        char path[4200];
        snprintf(path, sizeof path, "%s/crash1g-v%d.kcb", tmp, version);
        records_bundle(path, version, &cv);
        refused_records(path, version, "coverage record is malformed");
        kc_buf_free(&cv);
    }
}

/* Crash 2: entry 0 sized to the whole content (`total` bytes), so it runs past the bytes after
 * the table of contents; every version. */
static void overrun(int version, size_t total) {
    kc_buf b = {0};
    const char *name = "0123456789abcdef0123456789abcdef.sm_90";
    put16(&b, (uint16_t)strlen(name));
    puts_(&b, name);
    kc_buf_put_u64(&b, 0);
    kc_buf_put_u64(&b, total);
    kc_buf_put_u64(&b, 0); /* the sum of bytes nobody may read */
    assert_true(total > b.len);
    size_t fill = total - b.len;
    uint8_t *z = calloc(1, fill);
    assert_non_null(z);
    kc_buf_put(&b, z, fill);
    free(z);
    assert_false(b.failed);
    assert_int_equal(b.len, total);
    char path[4200];
    snprintf(path, sizeof path, "%s/crash2-v%d-%zu.kcb", tmp, version, total);
    write_bundle(path, version, 1, b.data, b.len);
    const char *past[3] = {"runs past", "runs past", "runs past"}, *legacy[3] = {"runs past", UNCOVERED, UNCOVERED};
    import_refused(path, version == 2 || version == 3 ? legacy : past);
    kc_buf_free(&b);
}

/* The bound is what remains after the entries before it: entry 0 takes 8 bytes, entry 1 claims all the
 * bytes after the table — each alone would fit, together they run past (a bound by the bytes after the
 * table alone, not less what entry 0 took, would let entry 1 read past the content). */
static void overrun_second(int version) {
    kc_buf b = {0};
    const char *names[2] = {"0123456789abcdef0123456789abcdef.sm_90", "fedcba9876543210fedcba9876543210.sm_90"};
    const size_t body = 4096;
    for (int i = 0; i < 2; i++) {
        put16(&b, (uint16_t)strlen(names[i]));
        puts_(&b, names[i]);
        kc_buf_put_u64(&b, i ? 8 : 0);
        kc_buf_put_u64(&b, i ? body : 8);
        kc_buf_put_u64(&b, 0);
    }
    uint8_t *z = calloc(1, body);
    assert_non_null(z);
    kc_buf_put(&b, z, body);
    free(z);
    assert_false(b.failed);
    char path[4200];
    snprintf(path, sizeof path, "%s/overrun2-v%d.kcb", tmp, version);
    write_bundle(path, version, 2, b.data, b.len);
    const char *past[3] = {"entry 1's size", "entry 1's size", "entry 1's size"};
    import_refused(path, past);
    kc_buf_free(&b);
}

static void test_toc_bounded_by_what_remains(void **state) {
    (void)state;
    for (int version = 1; version <= 4; version++) overrun(version, 4096);
    overrun(3, 16u << 20); /* a 214 KB bundle: SIGSEGV without the fix, even without ASan */
    overrun_second(1);
    overrun_second(4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bad_last_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_last_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_toc_bounded_by_what_remains, setup, teardown),
    };
    if (getenv("KCT_ONLY")) cmocka_set_test_filter(getenv("KCT_ONLY")); /* one case at a time, e.g. under ASan */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
