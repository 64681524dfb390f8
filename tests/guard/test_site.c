/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site.c — the site cache: Dynamo's limits (16 owners × 2 sizes under 2/64 give 32
 * entries and no fallback; three static shapes under limit 2 fall back with the reason;
 * entries invalidated after every call stop compiling at the bound), readable recompile
 * reasons, owner release, backend and global-state guards, and automatic dynamic shapes
 * whose profile carries over to the next process.
 */
#include <pthread.h>
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static kc_call call_of(const kc_tensor_meta *in, size_t n, const uintptr_t *owners, size_t no) {
    kc_call c = {in, n, owners, no, 0, NULL};
    return c;
}

static kc_site *site(const char *name, uint32_t limit, uint32_t acc, uint32_t maxc, int static_shapes,
                     kc_cache *cache) {
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.cache_size_limit = limit;
    o.accumulated_cache_size_limit = acc;
    o.max_compiles = maxc;
    o.static_shapes = static_shapes;
    kc_site *s;
    assert_int_equal(kc_site_new(&s, cache, name, &o), KC_OK);
    return s;
}

/* Look up; on a miss insert (as a runtime would after compiling).  Returns the result. */
static kc_site_result step(kc_site *s, const kc_call *c, intptr_t value) {
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, c, &a), KC_OK);
    if (a.result == KC_SITE_MISS) assert_int_equal(kc_site_insert(s, c, a.dynamic, (void *)value, NULL), KC_OK);
    return a.result;
}

static void test_owners_times_sizes(void **state) {
    (void)state;
    kc_site *s = site("owners", 2, 64, 0, 1, NULL);
    for (int rep = 0; rep < 2; rep++)
        for (uintptr_t o = 1; o <= 16; o++)
            for (int sz = 0; sz < 2; sz++) {
                kc_tensor_meta in = t2(sz ? 64 : 32, 128);
                kc_call c = call_of(&in, 1, &o, 1);
                kc_site_result r = step(s, &c, (intptr_t)(o * 10 + (uintptr_t)sz));
                assert_int_equal(r, rep ? KC_SITE_HIT : KC_SITE_MISS);
            }
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.entries, 32);
    assert_int_equal(st.fallbacks, 0);
    assert_int_equal(st.hits, 32);
    kc_site_free(s);
}

static void test_third_static_shape_falls_back(void **state) {
    (void)state;
    kc_site *s = site("shapes", 2, 0, 0, 1, NULL);
    int64_t sizes[3] = {64, 32, 16};
    kc_site_answer a;
    for (int i = 0; i < 3; i++) {
        kc_tensor_meta in = t2(sizes[i], 8);
        kc_call c = call_of(&in, 1, NULL, 0);
        assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
        if (i < 2) {
            assert_int_equal(a.result, KC_SITE_MISS);
            kc_site_insert(s, &c, a.dynamic, NULL, NULL);
        }
    }
    assert_int_equal(a.result, KC_SITE_FALLBACK);
    assert_non_null(strstr(a.reason, "cache_size_limit (2)"));
    assert_non_null(strstr(a.reason, "input 0 size[0]: expected"));
    kc_site_free(s);
}

static void test_compiles_stop_at_the_bound(void **state) {
    (void)state;
    kc_site *s = site("churn", 8, 0, 10, 1, NULL);
    int compiles = 0;
    for (uintptr_t o = 1000; o < 1100; o++) {
        kc_tensor_meta in = t2(4, 4);
        kc_call c = call_of(&in, 1, &o, 1);
        kc_site_answer a;
        kc_site_lookup(s, &c, &a);
        if (a.result == KC_SITE_FALLBACK) {
            assert_non_null(strstr(a.reason, "max_compiles"));
            break;
        }
        kc_site_insert(s, &c, NULL, NULL, NULL);
        compiles++;
        assert_int_equal(kc_owner_release(o), 1); /* invalidated after every call */
    }
    assert_int_equal(compiles, 10);
    kc_site_free(s);
}

static int released;
static void on_release(void *v) {
    (void)v;
    released++;
}

static void test_reasons_owners_backend_globals(void **state) {
    (void)state;
    kc_site *s = site("reasons", 8, 0, 0, 1, NULL);
    uintptr_t owner = 77;
    kc_tensor_meta in = t2(64, 16);
    kc_call c = call_of(&in, 1, &owner, 1);
    kc_site_answer a;
    kc_site_lookup(s, &c, &a);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_string_equal(a.reason, "first call");
    kc_site_insert(s, &c, NULL, (void *)0x42, on_release);
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_HIT);
    assert_ptr_equal(a.value, (void *)0x42);
    kc_tensor_meta in32 = t2(32, 16);
    kc_call c32 = call_of(&in32, 1, &owner, 1);
    kc_site_lookup(s, &c32, &a);
    assert_string_equal(a.reason, "input 0 size[0]: expected 64, got 32");
    kc_call other = c;
    other.backend = "triton";
    kc_site_lookup(s, &other, &a);
    assert_int_equal(a.result, KC_SITE_MISS); /* never served to another backend */
    assert_non_null(strstr(a.reason, "backend"));
    other = c;
    other.globals = 1;
    kc_site_lookup(s, &other, &a);
    assert_non_null(strstr(a.reason, "global state"));
    kc_tensor_meta half = t2(64, 16);
    half.dtype = KC_DTYPE_F16;
    kc_call ch = call_of(&half, 1, &owner, 1);
    kc_site_lookup(s, &ch, &a);
    assert_non_null(strstr(a.reason, "input 0 dtype"));
    kc_site_stats st;
    kc_site_get_stats(s, &st);
    assert_int_equal(st.reasons[4], 1); /* size */
    assert_int_equal(st.reasons[8], 1); /* backend */
    assert_int_equal(st.reasons[7], 1); /* globals */
    assert_int_equal(st.reasons[1], 1); /* dtype */
    /* The owner dies: its entry goes, with its value released. */
    assert_int_equal(kc_owner_release(owner), 1);
    assert_int_equal(released, 1);
    kc_site_lookup(s, &c, &a);
    assert_int_equal(a.result, KC_SITE_MISS);
    kc_site_free(s);
}

static void test_automatic_dynamic_carries_over(void **state) {
    (void)state;
    char *dir;
    kc_cache *cache;
    assert_int_equal(kct_open_cache("site", &dir, &cache), 0);
    pid_t pid = fork();
    if (pid == 0) { /* the first process: sees 64 then 32 */
        kc_site *s = site("model.forward", 8, 0, 0, 0, cache);
        kc_tensor_meta a = t2(64, 16), b = t2(32, 16), c3 = t2(17, 16);
        kc_call ca = call_of(&a, 1, NULL, 0), cb = call_of(&b, 1, NULL, 0), cc = call_of(&c3, 1, NULL, 0);
        kc_site_answer ans;
        kc_site_lookup(s, &ca, &ans);
        int ok = ans.result == KC_SITE_MISS && ans.dynamic[0] == 0;
        kc_site_insert(s, &ca, ans.dynamic, NULL, NULL);
        kc_site_lookup(s, &cb, &ans); /* only size[0] changed: it becomes dynamic */
        ok &= ans.result == KC_SITE_MISS && ans.dynamic[0] == 1;
        kc_site_insert(s, &cb, ans.dynamic, NULL, NULL);
        kc_site_lookup(s, &cc, &ans); /* one dynamic entry serves every size */
        ok &= ans.result == KC_SITE_HIT;
        kc_site_free(s);
        kc_cache_close(cache);
        _exit(ok ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* The next process compiles the dimension dynamic from its first call. */
    kc_site *s = site("model.forward", 8, 0, 0, 0, cache);
    kc_tensor_meta a = t2(64, 16);
    kc_call ca = call_of(&a, 1, NULL, 0);
    kc_site_answer ans;
    kc_site_lookup(s, &ca, &ans);
    assert_int_equal(ans.result, KC_SITE_MISS);
    assert_int_equal(ans.dynamic[0], 1);
    kc_site_free(s);
    /* Another site name has its own profile. */
    s = site("other.forward", 8, 0, 0, 0, cache);
    kc_site_lookup(s, &ca, &ans);
    assert_int_equal(ans.dynamic[0], 0);
    kc_site_free(s);
    kct_close_cache(dir, cache);
}

static void test_declared_bounds_are_guarded(void **state) {
    (void)state;
    kc_site *s = site("bounded", 8, 0, 0, 0, NULL);
    assert_int_equal(kc_site_set_bounds(s, 0, 0, 1, 100), KC_OK);
    assert_int_equal(kc_site_set_bounds(s, 0, 0, 5, 1), KC_EINVAL);
    kc_tensor_meta a = t2(64, 8), b = t2(32, 8), c3 = t2(100, 8), big = t2(101, 8);
    kc_call ca = call_of(&a, 1, NULL, 0), cb = call_of(&b, 1, NULL, 0), cc = call_of(&c3, 1, NULL, 0),
            cbig = call_of(&big, 1, NULL, 0);
    assert_int_equal(step(s, &ca, 1), KC_SITE_MISS);
    assert_int_equal(step(s, &cb, 2), KC_SITE_MISS); /* dim 0 becomes dynamic */
    assert_int_equal(step(s, &cc, 3), KC_SITE_HIT);  /* inside the bounds */
    kc_site_answer ans;
    kc_site_lookup(s, &cbig, &ans);
    assert_int_equal(ans.result, KC_SITE_MISS);
    assert_non_null(strstr(ans.reason, "outside the declared bounds [1, 100]"));
    kc_site_free(s);
}

static kc_site *shared_site;
static int thread_errors;

static void *hammer(void *arg) {
    uintptr_t base = (uintptr_t)arg * 1000;
    for (int r = 0; r < 300; r++) {
        uintptr_t owner = base + (uintptr_t)(r % 5);
        kc_tensor_meta in = t2(8 + r % 3, 4);
        kc_call c = call_of(&in, 1, &owner, 1);
        kc_site_answer a;
        if (kc_site_lookup(shared_site, &c, &a) != KC_OK) __atomic_add_fetch(&thread_errors, 1, __ATOMIC_RELAXED);
        if (a.result == KC_SITE_MISS) kc_site_insert(shared_site, &c, a.dynamic, NULL, NULL);
        if (r % 7 == 0) kc_owner_release(owner);
        kc_site_stats st;
        kc_site_get_stats(shared_site, &st);
    }
    return NULL;
}

static void test_many_threads_one_site(void **state) {
    (void)state;
    shared_site = site("threads", 8, 256, 100000, 0, NULL);
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, hammer, (void *)(i + 1));
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    assert_int_equal(thread_errors, 0);
    kc_site_stats st;
    kc_site_get_stats(shared_site, &st);
    assert_int_equal(st.hits + st.misses + st.fallbacks, 1200);
    kc_site_free(shared_site);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owners_times_sizes),
        cmocka_unit_test(test_third_static_shape_falls_back),
        cmocka_unit_test(test_compiles_stop_at_the_bound),
        cmocka_unit_test(test_reasons_owners_backend_globals),
        cmocka_unit_test(test_automatic_dynamic_carries_over),
        cmocka_unit_test(test_declared_bounds_are_guarded),
        cmocka_unit_test(test_many_threads_one_site),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
