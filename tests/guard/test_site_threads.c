/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_threads.c — the site under 8 threads (issue 19), asserting counts only:
 *   - limits hold at insert: 8 threads insert 8 shapes of one owner set under limit 4 — 4 go
 *     in, 4 are refused; 8 threads look up 8 shapes before any inserts — 4 MISS (compiles in
 *     flight count toward the limit), 4 FALLBACK, and 4 entries after the inserts;
 *   - single-flight: 8 threads look one call up; one misses, the 7 others wait for its compile
 *     (it inserts only once all 7 wait, counted by the site) and then hit — one compile per
 *     guard set, four rounds;
 *   - a hit's value held (kc_site_lookup_ext with a hold) by 8 threads survives
 *     kc_owner_release and kc_site_free from another thread; its release callback runs once,
 *     after the last hold is released.
 */
#include <pthread.h>
#include <sched.h>

#include "kcache.h"
#include "helpers.h"

#define NT 8

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static kc_site *site(const char *name, uint32_t limit) {
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.cache_size_limit = limit;
    o.static_shapes = 1;
    kc_site *s;
    assert_int_equal(kc_site_new(&s, NULL, name, &o), KC_OK);
    return s;
}

static kc_site *g_site;
static pthread_barrier_t g_bar;
static int g_ok, g_miss, g_hit, g_fallback, g_limited;
static const uintptr_t g_owner = 42;

static void *insert_only(void *arg) {
    kc_tensor_meta t = t2(8 + (intptr_t)arg, 4);
    kc_call c = {&t, 1, &g_owner, 1, 0, NULL};
    pthread_barrier_wait(&g_bar);
    int rc = kc_site_insert(g_site, &c, NULL, NULL, NULL);
    if (rc == KC_OK) __atomic_add_fetch(&g_ok, 1, __ATOMIC_RELAXED);
    else if (rc == KC_ELIMIT) __atomic_add_fetch(&g_limited, 1, __ATOMIC_RELAXED); /* its own status */
    return NULL;
}

static void *lookup_then_insert(void *arg) {
    kc_tensor_meta t = t2(8 + (intptr_t)arg, 4);
    kc_call c = {&t, 1, &g_owner, 1, 0, NULL};
    kc_site_answer a;
    pthread_barrier_wait(&g_bar);
    int rc = kc_site_lookup(g_site, &c, &a);
    pthread_barrier_wait(&g_bar); /* every thread has its answer before anyone inserts */
    if (rc == KC_OK && a.result == KC_SITE_MISS) {
        __atomic_add_fetch(&g_miss, 1, __ATOMIC_RELAXED);
        if (kc_site_insert(g_site, &c, a.dynamic, NULL, NULL) == KC_OK) __atomic_add_fetch(&g_ok, 1, __ATOMIC_RELAXED);
    } else if (rc == KC_OK && a.result == KC_SITE_FALLBACK) {
        __atomic_add_fetch(&g_fallback, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *)) {
    pthread_t t[NT];
    pthread_barrier_init(&g_bar, NULL, NT);
    for (intptr_t i = 0; i < NT; i++) pthread_create(&t[i], NULL, fn, (void *)i);
    for (int i = 0; i < NT; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&g_bar);
}

static void test_limits_hold_at_insert(void **state) {
    (void)state;
    g_site = site("insert-limit", 4);
    g_ok = g_limited = 0;
    run_threads(insert_only);
    kc_site_stats st;
    kc_site_get_stats(g_site, &st);
    assert_int_equal(g_limited, 4); /* refused inserts say which limit, as KC_ELIMIT */
    assert_int_equal(g_ok, 4);
    assert_int_equal(st.entries, 4);
    kc_site_info info = KC_SITE_INFO_INIT;
    assert_int_equal(kc_site_get_info(g_site, &info), KC_OK);
    assert_int_equal(info.refused_inserts, 4);
    kc_site_free(g_site);

    g_site = site("lookup-limit", 4);
    g_ok = g_miss = g_fallback = 0;
    run_threads(lookup_then_insert);
    kc_site_get_stats(g_site, &st);
    assert_int_equal(g_miss, 4);
    assert_int_equal(g_fallback, 4);
    assert_int_equal(g_ok, 4);
    assert_int_equal(st.entries, 4);
    kc_site_free(g_site);
}

static int g_round;

static void *single_flight(void *arg) {
    (void)arg;
    for (int r = 0; r < 4; r++) {
        pthread_barrier_wait(&g_bar);
        kc_tensor_meta t = t2(16 + r, 4);
        kc_call c = {&t, 1, &g_owner, 1, 0, NULL};
        kc_site_answer a;
        assert_int_equal(kc_site_lookup(g_site, &c, &a), KC_OK);
        if (a.result == KC_SITE_MISS) {
            __atomic_add_fetch(&g_miss, 1, __ATOMIC_RELAXED);
            /* "Compile" until the 7 others of this round wait on it: they must not compile too. */
            for (;;) {
                kc_site_info info = KC_SITE_INFO_INIT;
                kc_site_get_info(g_site, &info);
                if (info.waits >= (uint64_t)(NT - 1) * (uint64_t)(r + 1)) break;
                sched_yield();
            }
            assert_int_equal(kc_site_insert(g_site, &c, a.dynamic, (void *)(intptr_t)(100 + r), NULL), KC_OK);
        } else if (a.result == KC_SITE_HIT && a.value == (void *)(intptr_t)(100 + r)) {
            __atomic_add_fetch(&g_hit, 1, __ATOMIC_RELAXED);
        }
        pthread_barrier_wait(&g_bar);
    }
    return NULL;
}

static void test_one_compile_per_guard_set(void **state) {
    (void)state;
    g_site = site("single-flight", 8);
    g_miss = g_hit = 0;
    g_round = 0;
    run_threads(single_flight);
    kc_site_stats st;
    kc_site_get_stats(g_site, &st);
    assert_int_equal(g_miss, 4);
    assert_int_equal(g_hit, 4 * (NT - 1));
    assert_int_equal(st.compiles, 4);
    assert_int_equal(st.misses, 4);
    assert_int_equal(st.hits, 4 * (NT - 1));
    assert_int_equal(st.hits + st.misses + st.fallbacks, 4 * NT); /* one outcome per lookup */
    kc_site_info info = KC_SITE_INFO_INIT;
    assert_int_equal(kc_site_get_info(g_site, &info), KC_OK);
    assert_int_equal(info.waits, 4 * (NT - 1));
    assert_int_equal(info.in_flight, 0);
    kc_site_free(g_site);
}

static int g_released;
static void release_value(void *v) {
    __atomic_add_fetch(&g_released, 1, __ATOMIC_RELAXED);
    free(v);
}

static void *hold_value(void *arg) {
    intptr_t i = (intptr_t)arg;
    kc_tensor_meta t = t2(4, 4);
    kc_call c = {&t, 1, &g_owner, 1, 0, NULL};
    kc_site_answer a;
    kc_site_hold *h = NULL;
    pthread_barrier_wait(&g_bar);
    int rc = kc_site_lookup_ext(g_site, &c, NULL, &a, &h);
    int ok = rc == KC_OK && a.result == KC_SITE_HIT && h != NULL;
    pthread_barrier_wait(&g_bar); /* all hold it */
    if (i == 0) {
        ok &= kc_owner_release(g_owner) == 1; /* dropped while 8 threads use the value */
        ok &= __atomic_load_n(&g_released, __ATOMIC_RELAXED) == 0;
    }
    pthread_barrier_wait(&g_bar);
    ok &= a.value && *(int *)a.value == 1234; /* still there (ASan would see a use after free) */
    pthread_barrier_wait(&g_bar);
    kc_site_hold_release(h);
    if (ok) __atomic_add_fetch(&g_ok, 1, __ATOMIC_RELAXED);
    return NULL;
}

static void test_held_values_survive_release(void **state) {
    (void)state;
    for (int round = 0; round < 2; round++) {
        g_site = site(round ? "held-free" : "held-release", 8);
        g_released = g_ok = 0;
        kc_tensor_meta t = t2(4, 4);
        kc_call c = {&t, 1, &g_owner, 1, 0, NULL};
        int *v = malloc(sizeof *v);
        *v = 1234;
        assert_int_equal(kc_site_insert(g_site, &c, NULL, v, release_value), KC_OK);
        if (round == 0) {
            run_threads(hold_value);
            assert_int_equal(g_ok, NT);
            assert_int_equal(g_released, 1); /* once, after the last hold */
            kc_site_free(g_site);
        } else { /* kc_site_free while a hold is out */
            kc_site_answer a;
            kc_site_hold *h = NULL;
            assert_int_equal(kc_site_lookup_ext(g_site, &c, NULL, &a, &h), KC_OK);
            assert_non_null(h);
            kc_site_free(g_site);
            assert_int_equal(g_released, 0);
            assert_int_equal(*(int *)a.value, 1234);
            kc_site_hold_release(h);
            assert_int_equal(g_released, 1);
        }
    }
    kc_site_hold_release(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_hold_at_insert),
        cmocka_unit_test(test_one_compile_per_guard_set),
        cmocka_unit_test(test_held_values_survive_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
