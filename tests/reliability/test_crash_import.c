/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crash_import.c — crash consistency of an import's batched write ([Note: batched puts] in
 * store/local.c): every temporary written, one sync, the images renamed, one sync, the unit
 * records and graph entries renamed, one sync.  A child imports bundle B and is SIGKILLed at its
 * nth system call of the store (kc_fs_crash_at: every open, write, read, sync, rename and unlink),
 * n = 1, 2, … until an import completes — so at every step of the path, in two cases: over a cache
 * holding bundle A (the same graph and unit keys, other images) and into an empty one.  After each
 * kill: each graph entry and unit record holds A's bytes (or is absent, from empty) or B's, whole;
 * the images of what it holds are there, whole (no referrer lands before its images); verify finds
 * nothing corrupt.  After the import that completes: everything is B's and no temporary is left;
 * the temporaries the kills left are collected by a gc once stale.
 */
#include <signal.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"
#include "store/two_level.h"

#define G 3 /* graphs per bundle, each with its unit record and image */

typedef struct bundle_objs {
    char path[4200];
    kc_key img[G];
    uint64_t graph_sum[G], unit_sum[G], img_sum[G];
} bundle_objs;

static uint64_t file_sum(const char *dir, const kc_key *key, const char *variant) {
    char p[4200];
    tl_path(dir, key, variant, p, sizeof p);
    FILE *f = fopen(p, "rb");
    if (!f) return 0;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    uint64_t s = XXH3_64bits(buf, n);
    return s ? s : 1;
}

/* A bundle of G graphs, units and images; `seed` makes its images (and so its objects' bytes). */
static void make_bundle(bundle_objs *b, int seed, const char *out) {
    char *d;
    kc_cache *c;
    assert_int_equal(kct_open_cache("crashimp-src", &d, &c), KC_OK);
    for (int i = 0; i < G; i++) {
        kc_image_ref ref;
        tl_image(c, seed + i, 3000 + 100 * (size_t)i, "sm_90", &ref);
        kc_key gk = kct_key("graph", i), uk = kct_key("unit", i);
        tl_unit(c, &uk, &ref);
        tl_graph(c, &gk, &ref, 1);
        b->img[i] = ref.id;
        b->graph_sum[i] = file_sum(d, &gk, "sm_90");
        b->unit_sum[i] = file_sum(d, &uk, KC_VARIANT_UNIT);
        b->img_sum[i] = file_sum(d, &ref.id, KC_VARIANT_IMAGE);
    }
    snprintf(b->path, sizeof b->path, "%s", out);
    assert_int_equal(kc_bundle_export(c, b->path, NULL, NULL), KC_OK);
    kct_close_cache(d, c);
}

static kc_cache *open_dir(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) return NULL;
    return c;
}

static int backdate_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    if (flag == FTW_F && strstr(p + ftw->base, ".tmp.")) {
        time_t old = time(NULL) - 7200;
        struct timespec ts[2] = {{old, 0}, {old, 0}};
        utimensat(AT_FDCWD, p, ts, 0);
    }
    return 0;
}

/* What the directory holds for referrer `i` of kind `variant`: 0 (absent), A's or B's; fails on
 * anything else, or when the images of what it holds are not there, whole. */
static int check_referrer(const char *dir, const kc_key *key, const char *variant, uint64_t a_sum, uint64_t b_sum,
                          const bundle_objs *A, const bundle_objs *B, int i, long step) {
    uint64_t s = file_sum(dir, key, variant);
    if (s == 0) {
        if (a_sum) fail_msg("step %ld: %s %d was lost", step, variant, i);
        return 0;
    }
    if (s != a_sum && s != b_sum) fail_msg("step %ld: %s %d holds bytes of neither bundle (torn?)", step, variant, i);
    const bundle_objs *from = s == b_sum ? B : A;
    if (file_sum(dir, &from->img[i], KC_VARIANT_IMAGE) != from->img_sum[i])
        fail_msg("step %ld: %s %d is %s's, and its image is not there whole", step, variant, i, from == B ? "B" : "A");
    return from == B ? 2 : 1;
}

/* Kill an import of B at every step; `from_a`: over A's objects, else into an empty cache. */
static void kill_at_every_step(int from_a, bundle_objs *A, bundle_objs *B) {
    char *dir = kct_tmpdir("crashimp");
    long steps = 0, temps_left = 0, mixed = 0;
    for (long n = 1;; n++) {
        assert_true(n < 5000);
        kct_rmtree(dir);
        assert_int_equal(mkdir(dir, 0700), 0);
        kc_cache *c = open_dir(dir);
        assert_non_null(c);
        if (from_a) assert_int_equal(kc_bundle_import(c, A->path, 0, NULL), KC_OK);
        kc_cache_close(c);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            kc_cache *cc = open_dir(dir);
            if (!cc) _exit(3);
            kc_fs_crash_at(n);
            int rc = kc_bundle_import(cc, B->path, 0, NULL);
            kc_fs_crash_at(0);
            kc_cache_close(cc);
            _exit(rc == KC_OK ? 0 : 2);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        int finished = WIFEXITED(st);
        if (finished && WEXITSTATUS(st) != 0) fail_msg("step %ld: the import failed (%d)", n, WEXITSTATUS(st));
        if (!finished && !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
            fail_msg("step %ld: the child died otherwise", n);
        int as_b = 0;
        for (int i = 0; i < G; i++) {
            kc_key gk = kct_key("graph", i), uk = kct_key("unit", i);
            as_b += check_referrer(dir, &gk, "sm_90", from_a ? A->graph_sum[i] : 0, B->graph_sum[i], A, B, i, n) == 2;
            as_b += check_referrer(dir, &uk, KC_VARIANT_UNIT, from_a ? A->unit_sum[i] : 0, B->unit_sum[i], A, B, i,
                                   n) == 2;
        }
        if (as_b && as_b < 2 * G) mixed++; /* killed among the referrers' renames: some old, some new */
        c = open_dir(dir);
        assert_non_null(c);
        kc_verify_report vr = KC_VERIFY_REPORT_INIT;
        assert_int_equal(kc_cache_verify(c, &vr), KC_OK);
        if (vr.corrupt) fail_msg("step %ld: %llu corrupt objects", n, (unsigned long long)vr.corrupt);
        kc_cache_close(c);
        size_t temps = kct_count_files(dir, ".tmp.");
        if (finished) {
            if (as_b != 2 * G)
                fail_msg("step %ld: the import returned success with %d of %d referrers written", n, as_b, 2 * G);
            assert_int_equal(temps, 0);
            break;
        }
        temps_left += (long)temps;
        steps++;
    }
    /* The kills' temporaries of the last round are collected once stale. */
    fprintf(stderr,
            "%s: killed at each of %ld steps; after each, every referrer old or new and whole, its images "
            "there; %ld kills fell among the referrers' renames; %ld temporary files left by kills\n",
            from_a ? "over bundle A" : "into an empty cache", steps, mixed, temps_left);
    assert_true(steps > 20);
    kct_rmtree(dir);
    free(dir);
}

static bundle_objs A, B;

static void test_kill_at_every_step_over_old_objects(void **state) {
    (void)state;
    kill_at_every_step(1, &A, &B);
}

static void test_kill_at_every_step_into_empty(void **state) {
    (void)state;
    kill_at_every_step(0, &A, &B);
}

/* A kill mid-import leaves temporaries: a gc collects them once stale, and only then. */
static void test_kill_temporaries_collected(void **state) {
    (void)state;
    char *dir = kct_tmpdir("crashimp-gc");
    size_t temps = 0;
    for (long n = 8; temps == 0 && n < 400; n++) {
        pid_t pid = fork();
        if (pid == 0) {
            kc_cache *cc = open_dir(dir);
            if (!cc) _exit(3);
            kc_fs_crash_at(n);
            kc_bundle_import(cc, B.path, 0, NULL);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        temps = kct_count_files(dir, ".tmp.");
    }
    assert_true(temps > 0);
    kc_cache *c = open_dir(dir);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, 0, &r), KC_OK);
    assert_int_equal(kct_count_files(dir, ".tmp."), temps); /* fresh: a write in flight */
    nftw(dir, backdate_cb, 16, FTW_PHYS);
    assert_int_equal(kc_cache_gc(c, 0, &r), KC_OK);
    assert_int_equal(kct_count_files(dir, ".tmp."), 0);
    assert_true(r.temp_removed >= temps);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

static int setup(void **state) {
    (void)state;
    char p[4200];
    snprintf(p, sizeof p, "/tmp/kctest-crashimp-%d-a.kcb", (int)getpid());
    make_bundle(&A, 100, p);
    snprintf(p, sizeof p, "/tmp/kctest-crashimp-%d-b.kcb", (int)getpid());
    make_bundle(&B, 200, p);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(A.path);
    unlink(B.path);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_at_every_step_over_old_objects),
        cmocka_unit_test(test_kill_at_every_step_into_empty),
        cmocka_unit_test(test_kill_temporaries_collected),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
