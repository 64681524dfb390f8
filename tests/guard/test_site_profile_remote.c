/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_profile_remote.c — site profiles through the remote tier, on a real redis-server
 * (issue 19: "carry profiles in ... the remote tier, so a fleet starts dynamic where it must").
 * Host A learns dimension 0 dynamic; host B, with an empty directory, starts with it (its first
 * miss proposes it); B learns dimension 1 and host C starts with both (the remote's copy is a
 * union).  A remote profile that is malformed, too big or another site's is refused (the site
 * starts empty).  With redis dead, sites are made, learn and save locally, in bounded time.
 */
#include <time.h>

#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

static kct_redis r;

static kc_cache *open_at(const char *dir, const char *url) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = url;
    o.remote_config.connect_ms = 200;
    o.remote_config.deadline_ms = 300;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

static void learn_dim(kc_cache *c, const char *site, int dim) {
    kc_site *s;
    assert_int_equal(kc_site_new(&s, c, site, NULL), KC_OK);
    kc_tensor_meta x = dim ? t2(8, 64) : t2(64, 8), y = dim ? t2(8, 32) : t2(32, 8);
    kc_call cx = {&x, 1, NULL, 0, 0, NULL}, cy = {&y, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &cx, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(kc_site_insert(s, &cx, a.dynamic, NULL, NULL), KC_OK);
    assert_int_equal(kc_site_lookup(s, &cy, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_true(a.dynamic[0] >> dim & 1);
    kc_site_free(s);
}

static uint32_t first_dynamic(kc_cache *c, const char *site) {
    kc_site *s;
    assert_int_equal(kc_site_new(&s, c, site, NULL), KC_OK);
    kc_tensor_meta x = t2(5, 5);
    kc_call cx = {&x, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &cx, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    kc_site_free(s);
    return a.dynamic[0];
}

static redisContext *rconn(void) {
    struct timeval tv = {1, 0};
    redisContext *x = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    assert_true(x && !x->err);
    return x;
}

/* The one redis key holding a profile ("kcache:v1:<hex>.profile"), into key. */
static void profile_redis_key(char *key, size_t cap) {
    redisContext *x = rconn();
    redisReply *rep = redisCommand(x, "KEYS kcache:v1:*.profile");
    assert_true(rep && rep->type == REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 1);
    snprintf(key, cap, "%s", rep->element[0]->str);
    freeReplyObject(rep);
    redisFree(x);
}

static void test_fleet_shares_profiles(void **state) {
    (void)state;
    char *da = kct_tmpdir("rprof-a"), *db = kct_tmpdir("rprof-b"), *dc = kct_tmpdir("rprof-c");
    kc_cache *a = open_at(da, r.url), *b = open_at(db, r.url), *c;
    learn_dim(a, "fleet.forward", 0);
    /* Host B: an empty directory, the remote's profile: dynamic on its first miss, and kept locally. */
    assert_int_equal(first_dynamic(b, "fleet.forward"), 1);
    char pdir[4200];
    assert_int_equal(kc_cache_profile_dir(b, pdir, sizeof pdir), KC_OK);
    assert_int_equal(kct_count_files(pdir, ".profile"), 1); /* one file: a stripe lock (".lock.xx"), none of its own */
    /* B learns dimension 1: the remote's copy becomes the union, and host C starts with both. */
    learn_dim(b, "fleet.forward", 1);
    c = open_at(dc, r.url);
    assert_int_equal(first_dynamic(c, "fleet.forward"), 3);
    assert_int_equal(first_dynamic(c, "fleet.other"), 0); /* another site: nothing */
    kc_cache_close(c);
    kct_rmtree(dc);
    kc_cache_close(a);
    kc_cache_close(b);
    kct_rmtree(da), kct_rmtree(db);
    free(da), free(db), free(dc);
}

/* Replace the remote's profile entry with one holding `text`. */
static void plant(const char *rkey, const char *text, size_t len) {
    const char *name = rkey + strlen("kcache:v1:");
    char hex[KC_KEY_HEX_LEN + 1];
    memcpy(hex, name, KC_KEY_HEX_LEN);
    hex[KC_KEY_HEX_LEN] = '\0';
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, hex), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "profile"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_RUNTIME_META, text, len), KC_OK);
    void *bytes;
    size_t blen;
    assert_int_equal(kc_entry_encode(e, &bytes, &blen), KC_OK);
    kc_entry_free(e);
    redisContext *x = rconn();
    redisReply *rep = redisCommand(x, "SET %s %b", rkey, bytes, blen);
    assert_true(rep && rep->type == REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    redisFree(x);
    free(bytes);
}

static void test_remote_profile_untrusted(void **state) {
    (void)state;
    redisContext *x = rconn();
    freeReplyObject(redisCommand(x, "FLUSHALL"));
    redisFree(x);
    char *da = kct_tmpdir("rprof-u");
    kc_cache *a = open_at(da, r.url);
    learn_dim(a, "untrusted.forward", 0);
    kc_cache_close(a);
    kct_rmtree(da);
    char rkey[256];
    profile_redis_key(rkey, sizeof rkey);
    static char big[KC_SITE_PROFILE_MAX + 100];
    int n = snprintf(big, sizeof big, "kcache-profile 1\nsite untrusted.forward\ninput 0 1\n");
    memset(big + n, '\n', sizeof big - (size_t)n);
    struct {
        const char *text;
        size_t len;
    } bad[] = {
        {"kcache-profile 1\nsite untrusted.forward\ninput 0 1ff\n", 0}, /* a mask past rank 8 */
        {"kcache-profile 1\nsite another.forward\ninput 0 1\n", 0},     /* another site's */
        {"garbage", 0},
        {big, sizeof big}, /* over the cap */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        plant(rkey, bad[i].text, bad[i].len ? bad[i].len : strlen(bad[i].text));
        char *d = kct_tmpdir("rprof-u2");
        kc_cache *c = open_at(d, r.url);
        if (first_dynamic(c, "untrusted.forward") != 0) fail_msg("bad[%zu] was taken", i);
        kc_cache_close(c);
        kct_rmtree(d);
        free(d);
    }
    /* The same planted bytes, well formed: taken (so the refusals above were the checks). */
    const char *good = "kcache-profile 1\nsite untrusted.forward\ninput 0 2\n";
    plant(rkey, good, strlen(good));
    char *d = kct_tmpdir("rprof-u3");
    kc_cache *c = open_at(d, r.url);
    assert_int_equal(first_dynamic(c, "untrusted.forward"), 2);
    kc_cache_close(c);
    kct_rmtree(d);
    free(d);
    free(da);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_dead_remote(void **state) {
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", kct_free_port()); /* nobody listens there */
    char *d = kct_tmpdir("rprof-dead");
    kc_cache *c = open_at(d, url);
    double t0 = now_s();
    learn_dim(c, "dead.forward", 0); /* sites made, lookups answered, saved locally */
    assert_int_equal(first_dynamic(c, "dead.forward"), 1);
    for (int i = 0; i < 20; i++) assert_int_equal(first_dynamic(c, "dead.other"), 0);
    assert_true(now_s() - t0 < 5.0); /* the breaker: no 20 deadlines */
    kc_cache_close(c);
    kct_rmtree(d);
    free(d);
}

static int setup(void **state) {
    (void)state;
    if (!kct_have_redis()) return -1;
    return kct_redis_start(&r, 0);
}

static int teardown(void **state) {
    (void)state;
    kct_redis_stop(&r, SIGTERM);
    return 0;
}

int main(void) {
    if (!kct_have_redis()) {
        printf("redis-server not found: skipped\n");
        return KC_SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fleet_shares_profiles),
        cmocka_unit_test(test_remote_profile_untrusted),
        cmocka_unit_test(test_dead_remote),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
