/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_records.c — a bundle's records at scale (src/bundle/records.c) and profiles as
 * files that take room ([Note: profiles in the size] in src/store/local_profiles.c):
 *
 *   - 65,536 profiles (the cap) in one sealed entry-less bundle import (the duplicate-site check
 *     is a hash set: it was quadratic, 48 s for 64k); a site twice, as the LAST one, is refused;
 *   - the import counts their bytes in the size (kc_cache_stats' KC_STAT_BYTES, exact), and
 *     kc_site_profile_usage says how many files and bytes there are: one file per profile (a
 *     stripe lock, not a lock file per profile);
 *   - gc --max-size evicts profiles least recently used first (a profile touched since stays),
 *     and its recount agrees with what is left.
 * The import's time is printed (KCT_PROFILES=N imports N instead), never asserted.
 */
#include <sys/stat.h>
#include <time.h>
#include <xxhash.h>
#include <zstd.h>

#include "bundle/internal.h" /* kc_bundle_seal_put_, kc_prof_list */
#include "common/internal.h"
#include "kcache.h"
#include "helpers.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "brec")

/* An entry-less sealed bundle (v4, unvouched) of profiles of sites "site-<i>" (input i % 8 dim 0);
 * `dup`: the last one's site is the first one's. */
static void write_profiles(const char *path, size_t n, int dup) {
    char(*text)[96] = malloc(n * sizeof *text);
    kc_prof_list l = {0};
    l.p = malloc(n * sizeof *l.p), l.len = malloc(n * sizeof *l.len), l.n = l.cap = n;
    assert_true(text && l.p && l.len);
    for (size_t i = 0; i < n; i++) {
        size_t site = dup && i == n - 1 ? 0 : i;
        l.len[i] = (size_t)snprintf(text[i], sizeof text[i], "kcache-profile 1\nsite site-%zu\ninput %zu 1\n", site,
                                    dup && i == n - 1 ? 0 : i % 8);
        l.p[i] = (const uint8_t *)text[i];
    }
    kc_buf b = {0};
    kc_buf_put_u32(&b, 0); /* no coverage record */
    size_t at = b.len;
    kc_buf_put_u32(&b, 0);
    kc_bundle_profiles_put_(&b, &l);
    kc_wr_u32(b.data + at, (uint32_t)(b.len - at - 4));
    kc_trust none = {NULL, 0, NULL, NULL};
    assert_int_equal(kc_bundle_seal_put_(&b, &none), KC_OK);
    assert_false(b.failed);
    size_t bound = ZSTD_compressBound(b.len);
    uint8_t *f = malloc(48 + bound);
    size_t z = ZSTD_compress(f + 48, bound, b.data, b.len, 1);
    assert_false(ZSTD_isError(z));
    memcpy(f, kc_bundle_magic_, 8);
    kc_wr_u16(f + 8, 4), kc_wr_u16(f + 10, 0), kc_wr_u32(f + 12, 0);
    kc_wr_u64(f + 16, b.len), kc_wr_u64(f + 24, z), kc_wr_u64(f + 32, XXH3_64bits(b.data, b.len));
    kc_wr_u64(f + 40, XXH3_64bits(f, 40));
    assert_int_equal(kct_write(path, f, 48 + z), 0);
    free(f);
    kc_buf_free(&b);
    free(l.p), free(l.len), free(text);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The profile file of site "site-<i>" in `c`. */
static void profile_path(kc_cache *c, size_t i, char *out, size_t cap) {
    char pdir[4200], site[64];
    assert_int_equal(kc_cache_profile_dir(c, pdir, sizeof pdir), KC_OK);
    snprintf(site, sizeof site, "site-%zu", i);
    snprintf(out, cap, "%s/%016llx.profile", pdir, (unsigned long long)XXH3_64bits(site, strlen(site)));
}

static void test_many_profiles(void **state) {
    (void)state;
    size_t n = getenv("KCT_PROFILES") ? (size_t)strtoull(getenv("KCT_PROFILES"), NULL, 10) : KC_BUNDLE_MAX_PROFILES;
    char path[4200], dir[4200];
    snprintf(path, sizeof path, "%s/dup.kcb", tmp);
    write_profiles(path, n, 1);
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    kc_cache *c = kct_open_remote(dir, NULL, NULL, NULL, NULL);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    double t0 = now_s();
    assert_int_equal(kc_bundle_import(c, path, 1, &rep), KC_ECORRUPT);
    double t_dup = now_s() - t0;
    assert_non_null(strstr(kc_error_last()->message, "the profile of site 'site-0' appears twice"));

    snprintf(path, sizeof path, "%s/many.kcb", tmp);
    write_profiles(path, n, 0);
    t0 = now_s();
    assert_int_equal(kc_bundle_import(c, path, 1, &rep), KC_OK); /* a dry run: read and checked, nothing written */
    double t_dry = now_s() - t0;
    assert_int_equal(rep.profiles, n);
    assert_int_equal(rep.profiles_written, n);
    t0 = now_s();
    assert_int_equal(kc_bundle_import(c, path, 0, &rep), KC_OK);
    double t_import = now_s() - t0;
    fprintf(stderr, "# %zu profiles: refused (a site twice) in %.2f s, dry run %.2f s, import %.2f s\n", n, t_dup,
            t_dry, t_import);
    assert_int_equal(rep.profiles, n);
    assert_int_equal(rep.profiles_written, n);

    /* Counted: one file each (no lock file per profile), their bytes in the size. */
    uint64_t files, bytes;
    assert_int_equal(kc_site_profile_usage(c, &files, &bytes), KC_OK);
    assert_int_equal(files, n);
    char pdir[4200];
    assert_int_equal(kc_cache_profile_dir(c, pdir, sizeof pdir), KC_OK);
    assert_true(kct_count_files(pdir, "") <= n + 256); /* the profiles and at most 256 stripe locks */
    assert_int_equal(kct_stat(c, KC_STAT_BYTES), bytes);
    assert_int_equal(kct_stat(c, KC_STAT_ENTRIES), 0);

    /* gc to a quarter of their size: the least recently used go first; site-0 (written first) was
     * used since, so it stays, and site-1 (written next) goes. */
    char p0[4300], p1[4300];
    profile_path(c, 0, p0, sizeof p0);
    profile_path(c, 1, p1, sizeof p1);
    assert_int_equal(utimensat(AT_FDCWD, p0, NULL, 0), 0); /* used now: newer than any written */
    kc_gc_report g = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, bytes / 4, &g), KC_OK);
    assert_int_equal(g.profiles_before, n);
    assert_true(g.profiles_after < n / 4 + 1 && g.profiles_after > 0);
    assert_true(g.bytes_after <= bytes / 4);
    assert_int_equal(g.evicted, n - g.profiles_after);
    uint64_t files2, bytes2;
    assert_int_equal(kc_site_profile_usage(c, &files2, &bytes2), KC_OK);
    assert_int_equal(files2, g.profiles_after);
    assert_int_equal(bytes2, g.bytes_after);
    assert_int_equal(kct_stat(c, KC_STAT_BYTES), bytes2); /* the recount */
    assert_int_equal(access(p0, F_OK), 0);
    assert_int_not_equal(access(p1, F_OK), 0);
    kc_cache_close(c);
}

/* The size limit holds profiles too: importing past it starts the automatic cleanup. */
static void test_limit_counts_profiles(void **state) {
    (void)state;
    char path[4200], dir[4200];
    snprintf(path, sizeof path, "%s/some.kcb", tmp);
    write_profiles(path, 4096, 0);
    snprintf(dir, sizeof dir, "%s/small", tmp);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.max_size = 64 << 10; /* 64 KiB: about 1,500 profiles */
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(c, path, 0, &rep), KC_OK);
    assert_int_equal(rep.profiles_written, 4096);
    uint64_t files, bytes;
    assert_int_equal(kc_site_profile_usage(c, &files, &bytes), KC_OK);
    assert_true(files < 4096);
    assert_true(bytes <= o.max_size);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_many_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_counts_profiles, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
