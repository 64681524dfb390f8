/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_provenance.c — provenance decides what may be sealed (issue 20, [Note: provenance] in
 * src/store/local.c), against a real redis-server: the laundering sequence — an entry planted in
 * Redis without a MAC, fetched by a host that has no key yet, the fleet rolling its key out and
 * flushing Redis, that host publishing with the key — publishes nothing: the fetched entry is
 * not this cache's own, so it is never sealed; a second host with the key finds nothing to load
 * and compiles its own.  An entry this host compiled before the key was set is sealed and
 * published, and a keyed host takes it.  Compile-only (NVRTC), no GPU.
 */
#include <sys/stat.h>

#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

static const char MAC_KEY[] = "a fleet secret of 32 bytes......";

static kc_cache *open_remote(const char *dir, const char *url, int with_key) {
    return kct_open_remote(dir, url, NULL, NULL, with_key ? MAC_KEY : NULL);
}

static long long redis_int(const kct_redis *r, const char *cmd) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
    assert_true(c && !c->err);
    redisReply *rep = redisCommand(c, cmd);
    assert_non_null(rep);
    long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer : rep->type == REDIS_REPLY_STATUS ? 0 : -1;
    freeReplyObject(rep);
    redisFree(c);
    return v;
}

/* The mode of the graph entry file of `info` in `dir`: 0600 own, 0400 come from elsewhere. */
static unsigned mode_of(const char *dir, const kc_graph_info *info) {
    char p[1024];
    snprintf(p, sizeof p, "%s/v1/%.2s/%s.sm_90.kce", dir, info->key, info->key);
    struct stat st;
    if (stat(p, &st) != 0) fail_msg("no %s", p);
    return (unsigned)(st.st_mode & 0777);
}

static void test_a_fetched_entry_is_never_laundered(void **state) {
    (void)state;
    if (!kct_have_redis()) skip();
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char *dp = kct_tmpdir("prov-planter"), *da = kct_tmpdir("prov-a"), *db = kct_tmpdir("prov-b");
    /* Another source for A's own graph: a graph on the planted unit would be built over its image,
     * which came from elsewhere and is refused the same way. */
    kc_graph_desc *forged = kct_graph("softmax.json", 0xf0f0), *mine = kct_graph("global_norm.json", 0x5151);
    kc_graph_info info = KC_GRAPH_INFO_INIT, ia = KC_GRAPH_INFO_INIT;
    /* 1. Planted: entries in Redis without a MAC. */
    kc_cache *p = open_remote(dp, r.url, 0);
    assert_int_equal(kc_graph_compile(p, forged, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(p), KC_OK);
    kc_cache_close(p);
    assert_true(redis_int(&r, "DBSIZE") > 0);
    /* 2. Host A, no key yet, fetches it; and compiles a graph of its own. */
    kc_cache *a = open_remote(da, r.url, 0);
    assert_int_equal(kc_graph_compile(a, forged, "sm_90", &ia), KC_OK);
    assert_int_equal(ia.source, KC_FROM_REMOTE);
    assert_int_equal(mode_of(da, &ia), 0400); /* come from elsewhere */
    kc_graph_info im = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(a, mine, "sm_90", &im), KC_OK);
    assert_int_equal(im.source, KC_FROM_COMPILE);
    assert_int_equal(mode_of(da, &im), 0600); /* its own */
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    kc_cache_close(a);
    /* 3. The fleet rolls its key out and flushes Redis. */
    assert_int_equal(redis_int(&r, "FLUSHALL"), 0);
    assert_int_equal(redis_int(&r, "DBSIZE"), 0);
    /* 4. Host A, keyed, publishes both (as `prewarm --remote` does): the fetched one is refused. */
    a = open_remote(da, r.url, 1);
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, ia.key), KC_OK);
    assert_int_equal(kc_cache_publish(a, &k, "sm_90"), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, "not published"));
    assert_int_equal(kct_stat(a, KC_STAT_PUBLISH_REFUSED), 1);
    assert_int_equal(kc_key_from_hex(&k, im.key), KC_OK);
    kc_entry *e;
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_cache_peek(a, &k, "sm_90", &e), KC_OK);
    assert_int_equal(kc_entry_images(e, &refs, &n), KC_OK);
    for (size_t i = 0; i < n; i++) /* its images first, as prewarm publishes a graph */
        assert_int_equal(kc_cache_publish(a, &refs[i].id, KC_VARIANT_IMAGE), 1);
    free(refs);
    kc_entry_free(e);
    assert_int_equal(kc_cache_publish(a, &k, "sm_90"), 1); /* its own: sealed now, published */
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    kc_cache_close(a);
    assert_int_equal(redis_int(&r, "DBSIZE"), 2); /* A's graph entry and its image */
    /* 5. Host B, keyed: nothing of the planted entry to load (it compiles), A's own is a remote hit. */
    kc_cache *b = open_remote(db, r.url, 1);
    assert_int_equal(kc_graph_compile(b, forged, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kct_stat(b, KC_STAT_REMOTE_HITS), 0);
    assert_int_equal(kc_graph_compile(b, mine, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE); /* sealed by A when it published */
    assert_int_equal(kct_stat(b, KC_STAT_MAC_REJECTED), 0);
    kc_cache_close(b);
    kc_graph_desc_free(forged), kc_graph_desc_free(mine);
    kct_redis_stop(&r, SIGTERM);
    kct_rmtree(dp), kct_rmtree(da), kct_rmtree(db);
    free(dp), free(da), free(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_fetched_entry_is_never_laundered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
