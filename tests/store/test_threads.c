/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_threads.c — one kc_cache handle shared by many threads (the way a tensor runtime
 * uses it): concurrent puts, gets, stats and gc on the same keys.  Every get is a miss or
 * a payload that matches its embedded digest.  Run under ThreadSanitizer in CI.
 */
#include "helpers.h"

#include <pthread.h>
#include <xxhash.h>

#include "kcache.h"

#define THREADS 8
#define ROUNDS 150
#define KEYS 12

static kc_cache *cache;
static int bad;

static void *run(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seed = (unsigned)id * 2654435761u;
    uint8_t buf[4096];
    for (int r = 0; r < ROUNDS; r++) {
        kc_key_builder *kb;
        kc_key_builder_new(&kb);
        kc_key_add_u64(kb, KC_COMP_EXTRA, "k", (uint64_t)(rand_r(&seed) % KEYS));
        kc_key key;
        kc_key_finish(kb, &key);
        kc_key_builder_free(kb);
        int op = rand_r(&seed) % 8;
        if (op < 3) {
            size_t n = 16 + (size_t)(rand_r(&seed) % 4000);
            for (size_t i = 8; i < n; i++) buf[i] = (uint8_t)rand_r(&seed);
            uint64_t d = XXH3_64bits(buf + 8, n - 8);
            memcpy(buf, &d, 8);
            kc_entry *e;
            kc_entry_new(&e, &key, "sm_80");
            kc_entry_set_section(e, KC_SECTION_FORWARD, buf, n);
            if (kc_cache_put(cache, e) != KC_OK) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
            kc_entry_free(e);
        } else if (op < 7) {
            kc_entry *e;
            int rc = kc_cache_get(cache, &key, "sm_80", &e);
            if (rc == KC_OK) {
                const void *p;
                size_t n;
                uint64_t d;
                if (kc_entry_section(e, KC_SECTION_FORWARD, &p, &n) != KC_OK || n < 16 ||
                    (memcpy(&d, p, 8), d != XXH3_64bits((const uint8_t *)p + 8, n - 8)))
                    __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
                kc_entry_free(e);
            } else if (rc != KC_MISS) {
                __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
            }
        } else if (r % 2) {
            kc_stats s;
            kc_cache_stats(cache, &s);
        } else {
            int rc = kc_cache_gc(cache, 16 * 1024, NULL);
            if (rc != KC_OK && rc != KC_EBUSY) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void test_one_handle_many_threads(void **state) {
    (void)state;
    char *dir = kct_tmpdir("threads");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.max_size = 64 * 1024;
    assert_int_equal(kc_cache_open(&cache, &o), KC_OK);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, run, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    assert_int_equal(bad, 0);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    assert_int_equal(r.corrupt, 0);
    kc_cache_close(cache);
    kct_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_handle_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
