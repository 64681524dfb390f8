/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_strict.c — strict mode (issue 20: KCACHE_STRICT, KC_OPEN_STRICT): an anomaly a lookup
 * normally swallows fails it instead — a corrupt stored entry, a graph entry whose image is gone,
 * a remote that does not answer, a graph that is not cacheable — each with its own status and a
 * reason naming strict mode; the same lookups without it succeed (a miss, a compile).
 * Compile-only (NVRTC), no GPU.
 */
#include <ftw.h>
#include <stdlib.h>

#include "kcache.h"
#include "kcache/sys/store.h"
#include "helpers.h"

static char *dir;

static kc_cache *open_cache(int strict, const char *remote) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | (strict ? KC_OPEN_STRICT : 0);
    o.remote = remote;
    if (remote && !kc_store_scheme_find("redis")) skip(); /* a build without the redis back end (KCACHE_WITH_REDIS) */
    o.remote_config.connect_ms = 50;
    o.remote_config.deadline_ms = 100;
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

static const char *victim_kind;
static char victim[1024];
static int find_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_F && strstr(p, victim_kind) && !strstr(p, "quarantine")) {
        snprintf(victim, sizeof victim, "%s", p);
        return 1;
    }
    return 0;
}

static void expect_strict_error(kc_cache *c, kc_graph_desc *d, int want) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(c, d, "sm_90", &info);
    if (rc != want) fail_msg("got %s (%s), want %s", kc_status_str(rc), kc_error_last()->message, kc_status_str(want));
    if (!strstr(kc_error_last()->message, "strict"))
        fail_msg("the reason does not name strict mode: %s", kc_error_last()->message);
}

static void test_a_corrupt_entry_and_a_missing_image(void **state) {
    (void)state;
    kc_graph_desc *d = kct_graph("softmax.json", 0x11);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_cache *c = open_cache(0, NULL);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    /* A graph entry's bytes damaged: strict fails with KC_ECORRUPT; the default recompiles. */
    victim_kind = ".sm_90.kce";
    assert_int_equal(nftw(dir, find_one, 16, FTW_PHYS), 1);
    size_t n;
    uint8_t *b = kct_read(victim, &n);
    b[n / 2] ^= 0x5a;
    assert_int_equal(kct_write(victim, b, n), 0);
    free(b);
    c = open_cache(1, NULL);
    expect_strict_error(c, d, KC_ECORRUPT);
    kc_cache_close(c);
    c = open_cache(0, NULL);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK); /* the default: a miss, compiled */
    kc_cache_close(c);
    /* Its image removed: strict fails; the default recompiles the unit. */
    victim_kind = ".img.kce";
    assert_int_equal(nftw(dir, find_one, 16, FTW_PHYS), 1);
    assert_int_equal(unlink(victim), 0);
    c = open_cache(1, NULL);
    expect_strict_error(c, d, KC_ECORRUPT);
    kc_cache_close(c);
    c = open_cache(0, NULL);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

static void test_a_dead_remote_and_a_bypass(void **state) {
    (void)state;
    kc_graph_desc *d = kct_graph("dropout.json", 0x22);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    /* Nobody listens on port 1: the remote fails; strict says so, the default compiles. */
    kc_cache *c = open_cache(1, "redis://127.0.0.1:1/0");
    expect_strict_error(c, d, KC_EIO);
    kc_cache_close(c);
    c = open_cache(0, "redis://127.0.0.1:1/0");
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    kc_graph_desc_free(d);
    /* A graph that is not cacheable (its source reads __TIME__): a bypass by default, an error when strict. */
    char cu[1100], js[1100];
    snprintf(cu, sizeof cu, "%s/t.cu", dir);
    snprintf(js, sizeof js, "%s/t.json", dir);
    const char *src = "extern \"C\" __global__ void t(float *x) { x[0] = (float)sizeof(__TIME__); }\n";
    const char *spec =
        "{\"name\": \"t\", \"kernels\": [{\"id\": \"t\", \"file\": \"t.cu\", \"entry\": \"t\"}],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [4]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [4]}],"
        " \"forward\": [{\"kernel\": \"t\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\"]}]}";
    assert_int_equal(kct_write(cu, src, strlen(src)), 0);
    assert_int_equal(kct_write(js, spec, strlen(spec)), 0);
    kc_graph_desc *t;
    assert_int_equal(kc_graph_desc_load(&t, js), KC_OK);
    c = open_cache(0, NULL);
    assert_int_equal(kc_graph_compile(c, t, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    kc_cache_close(c);
    c = open_cache(1, NULL);
    expect_strict_error(c, t, KC_EINVAL);
    kc_cache_close(c);
    kc_graph_desc_free(t);
}

KCT_TMPDIR_FIXTURE(dir, "strict")

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_corrupt_entry_and_a_missing_image, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_dead_remote_and_a_bypass, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
