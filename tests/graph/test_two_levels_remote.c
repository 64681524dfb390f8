/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_two_levels_remote.c — the two levels through a real Redis ([Note: two levels] in
 * kcache/entry.h): a host with an empty directory takes a graph from the remote with its images
 * fetched in one round trip (MGET), written locally before the graph entry; a new shape on such
 * a host takes its units from the remote and compiles nothing; a remote graph entry whose image
 * is gone from the remote is a miss (counted once), and nothing dangling is kept locally.
 * Starts its own redis-server on a free loopback port; needs NVRTC (compile-only), no GPU.
 */
#include <hiredis/hiredis.h>

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

static uint64_t stat_of(kc_cache *c, kc_stat id) {
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    return st.v[id];
}

/* How many times the server ran `cmd` (INFO commandstats). */
static long long calls_of(const char *cmd) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    assert_true(c && !c->err);
    redisReply *rep = redisCommand(c, "INFO commandstats");
    assert_true(rep && rep->type == REDIS_REPLY_STRING);
    char needle[64];
    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
    const char *p = strstr(rep->str, needle);
    long long n = p ? strtoll(p + strlen(needle), NULL, 10) : 0;
    freeReplyObject(rep);
    redisFree(c);
    return n;
}

static void redis_del(const char *key) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    assert_true(c && !c->err);
    redisReply *rep = redisCommand(c, "DEL %s", key);
    assert_true(rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
    freeReplyObject(rep);
    redisFree(c);
}

static kc_graph_desc *softmax_at(int64_t rows) {
    kc_graph_desc *d, *s;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    kc_tensor_meta in;
    memset(&in, 0, sizeof in);
    in.dtype = KC_DTYPE_F32;
    in.device = KC_DEVICE_CUDA;
    in.rank = 2;
    in.requires_grad = 1;
    in.sizes[0].value = rows;
    in.sizes[1].value = 128;
    in.strides[0].value = 128;
    in.strides[1].value = 1;
    if (kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    return s;
}

static void test_a_remote_graph_brings_its_images_in_one_round_trip(void **state) {
    (void)state;
    char *da = kct_tmpdir("tlA"), *db = kct_tmpdir("tlB"), *dc = kct_tmpdir("tlC"), *dd = kct_tmpdir("tlD");
    kc_cache *a = open_at(da);
    kc_graph_desc *s64 = softmax_at(64), *s96 = softmax_at(96);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(a, s64, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    char key64[KC_KEY_HEX_LEN + 1];
    snprintf(key64, sizeof key64, "%s", info.key);

    /* Host B, empty: the graph from the remote, its image(s) in one MGET, all kept locally. */
    kc_cache *b = open_at(db);
    long long mget0 = calls_of("mget");
    assert_int_equal(kc_graph_compile(b, s64, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    assert_int_equal(calls_of("mget") - mget0, 1);
    assert_int_equal(stat_of(b, KC_STAT_REMOTE_HITS), 1);
    assert_int_equal(stat_of(b, KC_STAT_MISSES), 0);
    assert_int_equal(kct_count_graphs(db), 1);
    assert_int_equal(kct_count_files(db, ".img.kce"), kct_count_files(da, ".img.kce"));
    assert_int_equal(kc_graph_compile(b, s64, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);

    /* Host C, empty: a new shape finds its units on the remote and compiles nothing. */
    kc_cache *c = open_at(dc);
    assert_int_equal(kc_graph_compile(c, s96, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(info.units_compiled, 0);
    assert_int_equal(stat_of(c, KC_STAT_UNIT_COMPILES), 0);
    assert_true(kct_count_files(dc, ".unit.kce") >= 1); /* kept locally: the next shape needs no remote */

    /* The image gone from the remote: host D's lookup is one miss; it compiles and keeps nothing dangling. */
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, key64), KC_OK); /* its images are the new shape's too */
    kc_entry *e;
    assert_int_equal(kc_cache_peek(a, &k, "sm_90", &e), KC_OK);
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_entry_images(e, &refs, &n), KC_OK);
    char hex[KC_KEY_HEX_LEN + 1], name[128];
    kc_key_to_hex(&refs[0].id, hex);
    snprintf(name, sizeof name, "kcache:v1:%s.img", hex);
    redis_del(name);
    free(refs);
    kc_entry_free(e);
    kc_cache *dcache = open_at(dd);
    assert_int_equal(kc_graph_compile(dcache, s96, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(stat_of(dcache, KC_STAT_MISSES), 1);
    assert_int_equal(stat_of(dcache, KC_STAT_REMOTE_HITS), 0);
    assert_int_equal(stat_of(dcache, KC_STAT_IMAGES_MISSING), 1);
    assert_int_equal(kc_graph_compile(dcache, s96, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK); /* what it stored is whole */

    kc_graph_desc_free(s64), kc_graph_desc_free(s96);
    kc_cache_close(a), kc_cache_close(b), kc_cache_close(c), kc_cache_close(dcache);
    kct_rmtree(da), kct_rmtree(db), kct_rmtree(dc), kct_rmtree(dd);
    free(da), free(db), free(dc), free(dd);
}

int main(void) {
    if (!kct_have_redis()) return KC_SKIP_CODE;
    if (kct_redis_start(&r, 0) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_remote_graph_brings_its_images_in_one_round_trip),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kct_redis_stop(&r, SIGTERM);
    return rc;
}
