/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_profiles.c — bundles carry site profiles (issue 19: "carry profiles in bundles ...
 * so a fleet starts dynamic where it must").  A cache whose site learned dimension 0 exports a
 * bundle (v4) with its profile; a fresh cache importing it has a site that proposes dimension 0
 * dynamic on its first miss; importing again changes nothing; a bundle whose profile is malformed
 * (checksums right) is refused whole, nothing written; a cache without profiles still writes v1,
 * and a v4 bundle with a coverage record reads it back.
 */
#include <dirent.h>
#include <xxhash.h>
#include <zstd.h>

#include "bundle/internal.h" /* kc_bundle_seal_put_ */
#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

/* Two calls that differ only in dimension `dim`: the site learns it dynamic and saves its profile. */
static void learn_dim(kc_cache *c, const char *site, int dim) {
    kc_site *s;
    assert_int_equal(kc_site_new(&s, c, site, NULL), KC_OK);
    kc_tensor_meta x = dim ? t2(8, 64) : t2(64, 8), y = dim ? t2(8, 32) : t2(32, 8);
    kc_call cx = {&x, 1, NULL, 0, 0, NULL}, cy = {&y, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &cx, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_site_insert(s, &cx, a.dynamic, NULL, NULL), KC_OK);
    assert_int_equal(kc_site_lookup(s, &cy, &a), KC_OK);
    assert_true(a.dynamic[0] >> dim & 1);
    kc_site_free(s);
}

static void learn_dim0(kc_cache *c, const char *site) { learn_dim(c, site, 0); }

/* What a new site of `c` proposes on its first miss for input 0. */
static uint32_t first_dynamic(kc_cache *c, const char *site) {
    kc_site *s;
    assert_int_equal(kc_site_new(&s, c, site, NULL), KC_OK);
    kc_tensor_meta x = t2(5, 5);
    kc_call cx = {&x, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &cx, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    kc_site_free(s);
    return a.dynamic[0];
}

/* A graph entry of no images, so the bundle carries an entry too. */
static kc_key put_graph(kc_cache *c) {
    kc_key k = kct_key("profiles-graph", 1);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, "f", 1), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
    return k;
}

static int bundle_version(const char *path) {
    size_t n;
    uint8_t *b = kct_read(path, &n);
    assert_non_null(b);
    int v = b[8] | b[9] << 8;
    free(b);
    return v;
}

static void test_profile_travels(void **state) {
    (void)state;
    char *da, *db;
    kc_cache *a, *b;
    assert_int_equal(kct_open_cache("bprof-a", &da, &a), 0);
    assert_int_equal(kct_open_cache("bprof-b", &db, &b), 0);
    kc_key k = put_graph(a);
    char path[4200];
    snprintf(path, sizeof path, "%s/plain.kcb", da);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(a, path, NULL, &rep), KC_OK);
    assert_int_equal(rep.profiles, 0);
    assert_int_equal(bundle_version(path), 1); /* no profiles: v1 as before */

    learn_dim0(a, "bundle.forward");
    assert_int_equal(first_dynamic(b, "bundle.forward"), 0); /* b knows nothing yet */
    snprintf(path, sizeof path, "%s/prof.kcb", da);
    assert_int_equal(kc_bundle_export(a, path, NULL, &rep), KC_OK);
    assert_int_equal(rep.profiles, 1);
    assert_int_equal(rep.graphs, 1);
    assert_int_equal(bundle_version(path), 4);

    /* A dry run writes nothing, and says it would. */
    assert_int_equal(kc_bundle_import(b, path, 1, &rep), KC_OK);
    assert_int_equal(rep.profiles, 1);
    assert_int_equal(rep.profiles_written, 1);
    char pdir[4200];
    assert_int_equal(kc_cache_profile_dir(b, pdir, sizeof pdir), KC_OK);
    assert_int_equal(kct_count_files(pdir, ".profile"), 0);

    assert_int_equal(kc_bundle_import(b, path, 0, &rep), KC_OK);
    assert_int_equal(rep.profiles, 1);
    assert_int_equal(rep.profiles_written, 1);
    assert_int_equal(rep.graphs_written, 1);
    assert_int_equal(kc_cache_exists(b, &k, "sm_90"), 1);
    /* A fresh cache that imported the bundle starts dynamic where the exporter learned to be. */
    assert_int_equal(first_dynamic(b, "bundle.forward"), 1);
    assert_int_equal(kc_bundle_import(b, path, 0, &rep), KC_OK); /* again: nothing changes */
    assert_int_equal(rep.profiles_written, 0);

    /* A union, not a replacement: c's own dimension 1 stays after importing a's dimension 0. */
    char *dc;
    kc_cache *c;
    assert_int_equal(kct_open_cache("bprof-c", &dc, &c), 0);
    learn_dim(c, "bundle.forward", 1);
    assert_int_equal(kc_bundle_import(c, path, 0, &rep), KC_OK);
    assert_int_equal(rep.profiles_written, 1);
    assert_int_equal(first_dynamic(c, "bundle.forward"), 3);
    kct_close_cache(dc, c);

    /* With a coverage record too: v4 holds both, and the coverage reads back. */
    const char *names[] = {"g"}, *targets[] = {"sm_90"};
    kc_bundle_covers cv = {"m.toml", names, &k, 1, targets, 1};
    snprintf(path, sizeof path, "%s/cov.kcb", da);
    assert_int_equal(kc_bundle_export_covering(a, path, NULL, &cv, &rep), KC_OK);
    assert_int_equal(bundle_version(path), 4);
    kc_bundle_coverage *cov;
    assert_int_equal(kc_bundle_coverage_read(path, &cov), KC_OK);
    assert_int_equal(cov->ngraphs, 1);
    assert_int_equal(cov->missing, 0);
    kc_bundle_coverage_free(cov);
    assert_int_equal(kc_bundle_import(b, path, 0, &rep), KC_OK);
    assert_int_equal(rep.profiles, 1);
    kct_close_cache(da, a);
    kct_close_cache(db, b);
}

/* The seal's record: its u32 length, then an entry, ending the content.  A length alone can be
 * matched by the entry's own bytes (a time, a digest) at a shorter distance, so the record must
 * also start with the entry magic. */
static int seal_at(const uint8_t *c, size_t raw, size_t v) {
    return raw >= 4 + v && v >= 8 && kc_rd_u32(c + raw - 4 - v) == v &&
           memcmp(c + raw - v, "\x89KCE\r\n\x1a\n", 8) == 0;
}

/* Seal a v4 content again (unvouched) after an edit: the seal is its last record. */
static void reseal(uint8_t *c, size_t raw) {
    size_t v = 1;
    while (v < 4096 && !seal_at(c, raw, v)) v++;
    assert_true(v < 4096);
    kc_buf b = {0};
    kc_buf_put(&b, c, raw - 4 - v);
    kc_trust none = {NULL, 0, NULL, NULL};
    assert_int_equal(kc_bundle_seal_put_(&b, &none), KC_OK);
    assert_int_equal(b.len, raw); /* a seal of the same length */
    memcpy(c, b.data, raw);
    kc_buf_free(&b);
}

/* Rewrite a bundle's content with `edit` applied, its checksums, seal and compression made right again. */
static void rewrite(const char *path, void (*edit)(uint8_t *content, size_t len)) {
    size_t n;
    uint8_t *f = kct_read(path, &n);
    assert_non_null(f);
    uint64_t raw = 0, stored = 0;
    for (int i = 7; i >= 0; i--) raw = raw << 8 | f[16 + i], stored = stored << 8 | f[24 + i];
    uint8_t *c = malloc(raw);
    assert_int_equal(ZSTD_decompress(c, raw, f + 48, stored), raw);
    edit(c, raw);
    if (f[8] == 4) reseal(c, raw);
    size_t bound = ZSTD_compressBound(raw);
    uint8_t *out = malloc(48 + bound);
    memcpy(out, f, 48);
    size_t z = ZSTD_compress(out + 48, bound, c, raw, 3);
    assert_false(ZSTD_isError(z));
    uint64_t sum = XXH3_64bits(c, raw);
    for (int i = 0; i < 8; i++) out[24 + i] = (uint8_t)(z >> 8 * i), out[32 + i] = (uint8_t)(sum >> 8 * i);
    uint64_t hs = XXH3_64bits(out, 40);
    for (int i = 0; i < 8; i++) out[40 + i] = (uint8_t)(hs >> 8 * i);
    assert_int_equal(kct_write(path, out, 48 + z), 0);
    free(out);
    free(c);
    free(f);
}

/* A mask that is not hex ("input 0 1" -> "input 0 g"). */
static void bad_mask(uint8_t *c, size_t len) {
    uint8_t *p = memmem(c, len, "input 0 1\n", 10);
    assert_non_null(p);
    p[8] = 'g';
}

static void bad_magic(uint8_t *c, size_t len) {
    uint8_t *p = memmem(c, len, "kcache-profile 1", 16);
    assert_non_null(p);
    p[15] = '2';
}

static void test_corrupt_profile_refused(void **state) {
    (void)state;
    void (*edits[])(uint8_t *, size_t) = {bad_mask, bad_magic};
    for (size_t i = 0; i < 2; i++) {
        char *da, *db;
        kc_cache *a, *b;
        assert_int_equal(kct_open_cache("bprof-bad-a", &da, &a), 0);
        assert_int_equal(kct_open_cache("bprof-bad-b", &db, &b), 0);
        kc_key k = put_graph(a);
        learn_dim0(a, "bundle.forward");
        char path[4200];
        snprintf(path, sizeof path, "%s/bad.kcb", da);
        kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
        assert_int_equal(kc_bundle_export(a, path, NULL, &rep), KC_OK);
        rewrite(path, edits[i]);
        assert_int_equal(kc_bundle_import(b, path, 0, &rep), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "profile"));
        /* Nothing written: neither the entry nor a profile. */
        assert_int_equal(kc_cache_exists(b, &k, "sm_90"), 0);
        char pdir[4200];
        assert_int_equal(kc_cache_profile_dir(b, pdir, sizeof pdir), KC_OK);
        assert_int_equal(kct_count_files(pdir, ".profile"), 0);
        assert_int_equal(first_dynamic(b, "bundle.forward"), 0);
        kct_close_cache(da, a);
        kct_close_cache(db, b);
    }
}

/* The one written form only: what kc_site_profile_check accepts and refuses. */
static void test_profile_check(void **state) {
    (void)state;
    char site[128];
    const char *good = "kcache-profile 1\nsite a.b\ninput 0 1\ninput 3 a\n";
    assert_int_equal(kc_site_profile_check(good, strlen(good), site, sizeof site), KC_OK);
    assert_string_equal(site, "a.b");
    const char *bad[] = {
        "kcache-profile 1\nsite a.b\ninput 3 a\ninput 0 1\n", /* out of order */
        "kcache-profile 1\nsite a.b\ninput 0 01\n",           /* a leading zero */
        "kcache-profile 1\nsite a.b\ninput 0 A\n",            /* upper case */
        "kcache-profile 1\nsite a.b\ninput 0 0\n",            /* an empty mask */
        "kcache-profile 1\nsite a.b\ninput 32 1\n",           /* no such input */
        "kcache-profile 1\nsite a.b\ninput 0 100\n",          /* past rank 8 */
        "kcache-profile 1\nsite a.b\ninput 0 1",              /* no last newline */
        "kcache-profile 1\nsite \ninput 0 1\n",               /* no name */
        "kcache-profile 1\nsite a.b\nhello\n",
        "kcache-profile 2\nsite a.b\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (kc_site_profile_check(bad[i], strlen(bad[i]), site, sizeof site) != KC_ECORRUPT)
            fail_msg("accepted bad[%zu]", i);
    char big[KC_SITE_PROFILE_MAX + 2];
    memset(big, 'x', sizeof big);
    assert_int_equal(kc_site_profile_check(big, sizeof big, NULL, 0), KC_ECORRUPT);
}

/* How many profiles a cache holds (files named "*.profile"). */
static size_t profile_files(kc_cache *c) {
    char pdir[4200];
    assert_int_equal(kc_cache_profile_dir(c, pdir, sizeof pdir), KC_OK);
    DIR *d = opendir(pdir);
    size_t n = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        size_t l = strlen(de->d_name);
        n += l > 8 && strcmp(de->d_name + l - 8, ".profile") == 0;
    }
    if (d) closedir(d);
    return n;
}

/* A legacy v3 bundle of no entries and one profile (covered by nothing): every checksum right. */
static void write_v3(const char *path) {
    static const char prof[] = "kcache-profile 1\nsite bundle.forward\ninput 0 1\n";
    kc_buf b = {0};
    kc_buf_put_u32(&b, 0); /* no coverage record */
    kc_buf_put_u32(&b, 1);
    kc_buf_put_u16(&b, (uint16_t)(sizeof prof - 1));
    kc_buf_put(&b, prof, sizeof prof - 1);
    uint8_t f[256];
    size_t z = ZSTD_compress(f + 48, sizeof f - 48, b.data, b.len, 1);
    assert_false(ZSTD_isError(z));
    memcpy(f, "\x89KCB\r\n\x1a\n", 8);
    kc_wr_u16(f + 8, 3), kc_wr_u16(f + 10, 0), kc_wr_u32(f + 12, 0);
    kc_wr_u64(f + 16, b.len), kc_wr_u64(f + 24, z), kc_wr_u64(f + 32, XXH3_64bits(b.data, b.len));
    kc_wr_u64(f + 40, XXH3_64bits(f, 40));
    assert_int_equal(kct_write(path, f, 48 + z), 0);
    kc_buf_free(&b);
}

/* An entry-less bundle is authenticated like any other: its profile is refused under a keyring
 * and under a MAC key unless its seal is vouched for ([Note: bundle seal]); a legacy v3 bundle's
 * profile (covered by nothing) is refused whenever trust is configured. */
static void test_unsigned_profiles_refused(void **state) {
    (void)state;
    char *d = kct_tmpdir("bprof-trust"), p[4200], q[4200];
    snprintf(p, sizeof p, "%s/build", d);
    assert_int_equal(kc_sign_keygen(p, NULL), KC_OK);
    static const char mac[] = "a-mac-key-of-sixteen-bytes-or-more";
    char dirs[6][4300];
    for (int i = 0; i < 6; i++) snprintf(dirs[i], sizeof dirs[i], "%s/c%d", d, i);
    snprintf(q, sizeof q, "%s.key", p);
    kc_cache *plain = kct_open_remote(dirs[0], NULL, NULL, NULL, NULL),
             *signer = kct_open_remote(dirs[1], NULL, q, NULL, NULL),
             *maced = kct_open_remote(dirs[2], NULL, NULL, NULL, mac);
    snprintf(q, sizeof q, "%s.pub", p);
    kc_cache *ring = kct_open_remote(dirs[3], NULL, NULL, q, NULL),
             *mac_in = kct_open_remote(dirs[4], NULL, NULL, NULL, mac);
    kc_cache *importers[2] = {ring, mac_in};
    const char *files[4] = {"unsigned.kcb", "signed.kcb", "maced.kcb", "v3.kcb"};
    kc_cache *from[3] = {plain, signer, maced};
    char path[4][4400];
    for (int i = 0; i < 4; i++) snprintf(path[i], sizeof path[i], "%s/%s", d, files[i]);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    for (int i = 0; i < 3; i++) {
        learn_dim0(from[i], "bundle.forward");
        assert_int_equal(kc_bundle_export(from[i], path[i], NULL, &rep), KC_OK);
        assert_int_equal(rep.entries, 0);
        assert_int_equal(rep.profiles, 1);
    }
    write_v3(path[3]);
    for (int k = 0; k < 2; k++) {
        kc_cache *c = importers[k];
        int have = 0;
        for (int i = 0; i < 4; i++) {
            int ok = (k == 0 && i == 1) || (k == 1 && i == 2); /* the keyring takes the signed, the MAC key the MACed */
            int rc = kc_bundle_import(c, path[i], 0, &rep);
            if (ok ? rc != KC_OK : rc != KC_EUNTRUSTED)
                fail_msg("importer %d, %s: %d %s", k, files[i], rc, kc_error_last()->message);
            if (!ok && i == 3) assert_non_null(strstr(kc_error_last()->message, "no signature or MAC covers"));
            if (!ok && i < 3) assert_non_null(strstr(kc_error_last()->message, "its seal"));
            have |= ok;
            assert_int_equal(profile_files(c), (size_t)have);
            if (ok) assert_int_equal(rep.profiles_written, 1);
        }
    }
    /* Without trust, every one is read (the v3 one too), as before. */
    kc_cache *open = kct_open_remote(dirs[5], NULL, NULL, NULL, NULL);
    for (int i = 0; i < 4; i++) assert_int_equal(kc_bundle_import(open, path[i], 0, &rep), KC_OK);
    assert_int_equal(profile_files(open), 1);
    kc_cache *all[6] = {plain, signer, maced, ring, mac_in, open};
    for (int i = 0; i < 6; i++) kc_cache_close(all[i]);
    kct_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_travels),
        cmocka_unit_test(test_corrupt_profile_refused),
        cmocka_unit_test(test_profile_check),
        cmocka_unit_test(test_unsigned_profiles_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
