/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_limits.c — the site's limits with Dynamo's meaning (issue 19): the seed's example
 * (limits 2 and 32: 16 owner sets × 2 sizes are 32 entries without fallback, the 17th set
 * falls back on the accumulated limit, one owner set with many shapes after 2); the defaults
 * reach the accumulated limit (256), max_compiles no longer stops them at 64; a model
 * re-created 64 times whose compiles are disk hits (KC_SITE_INSERT_CACHED) never falls back;
 * and a recompile is only a second entry for an owner set: the first call and a new owner
 * set are neither counted nor logged as recompiles.
 */
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static kc_site *site(const char *name, uint32_t limit, uint32_t acc, uint32_t maxc) {
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.cache_size_limit = limit;
    o.accumulated_cache_size_limit = acc;
    o.max_compiles = maxc;
    o.static_shapes = 1;
    kc_site *s;
    assert_int_equal(kc_site_new(&s, NULL, name, &o), KC_OK);
    return s;
}

/* Look up; on a miss insert (flags as given).  Returns the result; the answer into *a. */
static kc_site_result step(kc_site *s, const kc_call *c, unsigned flags, kc_site_answer *a) {
    assert_int_equal(kc_site_lookup(s, c, a), KC_OK);
    if (a->result == KC_SITE_MISS)
        assert_int_equal(kc_site_insert_ext(s, c, NULL, a->dynamic, NULL, NULL, flags), KC_OK);
    return a->result;
}

static void test_seed_example(void **state) {
    (void)state;
    kc_site *s = site("seed", 2, 32, 0);
    kc_site_answer a;
    for (int rep = 0; rep < 2; rep++)
        for (uintptr_t o = 1; o <= 16; o++)
            for (int b = 0; b < 2; b++) {
                kc_tensor_meta in = t2(b ? 64 : 32, 128);
                kc_call c = {&in, 1, &o, 1, 0, NULL};
                assert_int_equal(step(s, &c, 0, &a), rep ? KC_SITE_HIT : KC_SITE_MISS);
            }
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.entries, 32);
    assert_int_equal(st.fallbacks, 0);
    uintptr_t o17 = 17;
    kc_tensor_meta in = t2(32, 128);
    kc_call c = {&in, 1, &o17, 1, 0, NULL};
    assert_int_equal(step(s, &c, 0, &a), KC_SITE_FALLBACK);
    assert_non_null(strstr(a.reason, "accumulated_cache_size_limit (32)"));
    kc_site_free(s);

    /* A very dynamic function: one owner set, many shapes — falls back after 2. */
    s = site("dynamic-fn", 2, 32, 0);
    uintptr_t o = 1;
    for (int i = 0; i < 6; i++) {
        kc_tensor_meta t = t2(8 + i, 4);
        kc_call ci = {&t, 1, &o, 1, 0, NULL};
        assert_int_equal(step(s, &ci, 0, &a), i < 2 ? KC_SITE_MISS : KC_SITE_FALLBACK);
        if (i >= 2) assert_non_null(strstr(a.reason, "cache_size_limit (2) reached for these owners"));
    }
    kc_site_free(s);
}

static void test_defaults_reach_the_accumulated_limit(void **state) {
    (void)state;
    kc_site *s = site("defaults", 0, 0, 0); /* 8, 256, max_compiles = 256 */
    kc_site_answer a;
    for (uintptr_t o = 1; o <= 300; o++) {
        kc_tensor_meta in = t2(16, 16);
        kc_call c = {&in, 1, &o, 1, 0, NULL};
        kc_site_result r = step(s, &c, 0, &a);
        if (o <= 256) {
            assert_int_equal(r, KC_SITE_MISS); /* the 65th instance no longer falls back on max_compiles */
        } else {
            assert_int_equal(r, KC_SITE_FALLBACK);
            assert_non_null(strstr(a.reason, "accumulated_cache_size_limit (256)"));
        }
    }
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.entries, 256);
    kc_site_free(s);
}

static void test_disk_hits_exhaust_nothing(void **state) {
    (void)state;
    /* max_compiles 4 and a model re-created 64 times, each owner released, every compile a disk hit. */
    kc_site *s = site("recreated", 0, 0, 4);
    kc_site_answer a;
    for (uintptr_t o = 1; o <= 64; o++) {
        kc_tensor_meta in = t2(16, 16);
        kc_call c = {&in, 1, &o, 1, 0, NULL};
        assert_int_equal(step(s, &c, o == 1 ? 0 : KC_SITE_INSERT_CACHED, &a), KC_SITE_MISS);
        assert_int_equal(step(s, &c, 0, &a), KC_SITE_HIT);
        assert_int_equal(kc_owner_release(o), 1);
    }
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.compiles, 1);
    kc_site_info info = KC_SITE_INFO_INIT;
    assert_int_equal(kc_site_get_info(s, &info), KC_OK);
    assert_int_equal(info.cached_inserts, 63);
    /* Real compiles still stop at the bound: a site whose entries keep being invalidated. */
    for (uintptr_t o = 100; o < 110; o++) {
        kc_tensor_meta in = t2(16, 16);
        kc_call c = {&in, 1, &o, 1, 0, NULL};
        kc_site_result r = step(s, &c, 0, &a);
        assert_int_equal(r, o < 103 ? KC_SITE_MISS : KC_SITE_FALLBACK);
        if (r == KC_SITE_FALLBACK) assert_non_null(strstr(a.reason, "max_compiles"));
        kc_owner_release(o);
    }
    /* And with the defaults, 300 re-creations answered from disk never fall back. */
    kc_site_free(s);
    s = site("recreated-defaults", 0, 0, 0);
    for (uintptr_t o = 1; o <= 300; o++) {
        kc_tensor_meta in = t2(16, 16);
        kc_call c = {&in, 1, &o, 1, 0, NULL};
        assert_int_equal(step(s, &c, KC_SITE_INSERT_CACHED, &a), KC_SITE_MISS);
        kc_owner_release(o);
    }
    kc_site_free(s);
}

/* In a child, stderr to a file: the first call, a new owner set and one recompile, logged with
 * KCACHE_LOG=recompiles; 0 when the log and the counters say exactly one recompile. */
static int recompile_child(void) {
    char path[] = "/tmp/kctest-recompiles-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || dup2(fd, 2) < 0) return 2;
    close(fd);
    kc_log_configure("recompiles");
    kc_site *s = site("recompiles", 8, 0, 0);
    kc_site_answer a;
    uintptr_t o1 = 1, o2 = 2;
    kc_tensor_meta in64 = t2(64, 8), in32 = t2(32, 8);
    kc_call first = {&in64, 1, &o1, 1, 0, NULL}, other = {&in64, 1, &o2, 1, 0, NULL},
            again = {&in32, 1, &o1, 1, 0, NULL};
    int ok = step(s, &first, 0, &a) == KC_SITE_MISS && strcmp(a.reason, "first call") == 0;
    ok &= step(s, &other, 0, &a) == KC_SITE_MISS; /* a new owner set: a compile, not a recompile */
    ok &= step(s, &again, 0, &a) == KC_SITE_MISS && strcmp(a.reason, "input 0 size[0]: expected 64, got 32") == 0;
    kc_site_info info = KC_SITE_INFO_INIT;
    ok &= kc_site_get_info(s, &info) == KC_OK && info.recompiles == 1 && info.recompile_reasons[4] == 1;
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    ok &= st.misses == 3;
    kc_site_free(s);
    fflush(stderr);
    size_t len;
    char *text = (char *)kct_read(path, &len);
    unlink(path);
    if (!text) return 3;
    text[len] = '\0';
    const char *want = "kcache[recompiles] site recompiles: recompiling: input 0 size[0]: expected 64, got 32";
    char *hit = strstr(text, want);
    ok &= hit != NULL && strstr(hit + strlen(want), "recompiling") == NULL &&
          strstr(text, "recompiling") == hit + strlen("kcache[recompiles] site recompiles: ");
    ok &= strstr(text, "first call") == NULL && strstr(text, "another set") == NULL;
    if (!ok)
        printf("counters %llu recompiles; stderr: %.600s\n", (unsigned long long)info.recompiles, text), fflush(stdout);
    free(text);
    return ok ? 0 : 1;
}

static void test_only_recompiles_are_recompiles(void **state) {
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(recompile_child());
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_defaults_reach_the_accumulated_limit),
        cmocka_unit_test(test_disk_hits_exhaust_nothing),
        cmocka_unit_test(test_only_recompiles_are_recompiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
