/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cache_compile_remote.c — kc_cache_compile (kcache/program.h) with a remote tier: a unit
 * compiled on one host (cache directory) is a remote hit on another — told KC_LOOKUP_REMOTE and
 * counted as one remote hit, nothing compiled — then a memory hit in that handle and a disk hit
 * in a new one (the remote's bytes were kept locally).  Needs NVRTC and redis-server, no GPU.
 */
#include <signal.h>

#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

static kct_redis r;

static kc_cache *open_at(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = r.url;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

static kc_program *compile_in(kc_cache *c, int want) {
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "r.cu";
    k.source = "extern \"C\" __global__ void rk(float *p, int n) { if (n) p[0] = 1.0f; }\n";
    const char *names[] = {"rk"};
    kc_program *p = NULL;
    uint64_t before = kct_stat(c, kc_lookup_outcome_stat((kc_lookup_outcome)want));
    if (kc_cache_compile(c, &k, names, 1, "sm_80", &p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(p->outcome, want);
    assert_int_equal(kct_stat(c, kc_lookup_outcome_stat((kc_lookup_outcome)want)) - before, 1);
    return p;
}

static void test_remote_hit(void **state) {
    (void)state;
    char *da = kct_tmpdir("ccr-a"), *db = kct_tmpdir("ccr-b");
    kc_cache *a = open_at(da), *b = open_at(db);
    kc_program *pa = compile_in(a, KC_LOOKUP_COMPILE);
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    uint64_t units = kct_stat(b, KC_STAT_UNIT_COMPILES);
    kc_program *pb = compile_in(b, KC_LOOKUP_REMOTE);
    assert_int_equal(kct_stat(b, KC_STAT_UNIT_COMPILES), units);
    assert_string_equal(pa->key, pb->key);
    assert_int_equal(pa->len, pb->len);
    assert_memory_equal(pa->image, pb->image, pa->len);
    kc_program *pm = compile_in(b, KC_LOOKUP_MEMORY);
    kc_cache_close(b);
    kc_cache *b2 = open_at(db);
    kc_program *pd = compile_in(b2, KC_LOOKUP_DISK);
    kc_program_free(pa), kc_program_free(pb), kc_program_free(pm), kc_program_free(pd);
    kc_cache_close(a), kc_cache_close(b2);
    kct_rmtree(da), kct_rmtree(db);
    free(da), free(db);
}

int main(void) {
    if (kc_nvrtc_available() != KC_OK) {
        fprintf(stderr, "SKIP: no NVRTC: %s\n", kc_error_last()->message);
        return KC_SKIP_CODE;
    }
    if (kct_redis_start(&r, 0) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_hit),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kct_redis_stop(&r, SIGTERM);
    return rc;
}
