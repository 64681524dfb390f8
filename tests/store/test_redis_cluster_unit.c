/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_cluster_unit.c (label redis) — Redis Cluster's addressing without a server
 * (store/redis_cluster.c): a key's slot against Redis's published values and hash-tag rules; the
 * slot map read from CLUSTER SLOTS replies (a real three-master reply with replicas and Redis 7's
 * metadata, the empty and "?" endpoints) and refused when hostile (overlapping ranges, slots out of
 * range or reversed, a bad host or port, wrong types, too many ranges, a reply that is not an
 * array); MOVED and ASK parsed exactly (IPv6, an empty host) and anything else not a redirect;
 * the plan that splits a several-key read by slot, grouped by node, answers put back in order.
 * Replies are parsed from RESP text by hiredis's reader, as the back end gets them.
 */
#include "kcache.h"
#include "helpers.h"

#include "kcache/sys/store.h"
#include "store/redis_cluster.h"

#include <stdlib.h>
#include <string.h>

static redisReply *resp(const char *text) {
    redisReader *rd = redisReaderCreate();
    assert_non_null(rd);
    assert_int_equal(redisReaderFeed(rd, text, strlen(text)), REDIS_OK);
    void *r = NULL;
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    return r;
}

static unsigned slot_s(const char *k) { return kc_cluster_slot(k, strlen(k)); }

static void test_slot(void **st) {
    (void)st;
    assert_int_equal(slot_s("123456789"), 0x31C3u); /* the CRC16-XMODEM check value, mod 16384 */
    assert_int_equal(slot_s("foo"), 12182);
    assert_int_equal(slot_s("bar"), 5061);
    assert_int_equal(slot_s("hello"), 866);
    assert_int_equal(slot_s("{user1000}.following"), slot_s("user1000"));
    assert_int_equal(slot_s("{user1000}.followers"), slot_s("user1000"));
    assert_int_equal(slot_s("foo{}{bar}"), kc_cluster_slot("foo{}{bar}", 10)); /* empty tag: the whole key */
    assert_int_not_equal(slot_s("foo{}{bar}"), slot_s("bar"));
    assert_int_equal(slot_s("foo{{bar}}zap"), slot_s("{bar"));
    assert_int_equal(slot_s("foo{bar}{zap}"), slot_s("bar"));
    assert_int_equal(slot_s("{"), kc_cluster_slot("{", 1) & 16383u);
    assert_true(slot_s("") < 16384);
}

/* Redis 7's reply for three masters, a replica each, with the (empty) metadata map. */
static const char THREE[] = "*3\r\n"
                            "*4\r\n:0\r\n:5460\r\n"
                            "*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$3\r\nid1\r\n*0\r\n"
                            "*4\r\n$9\r\n127.0.0.1\r\n:7004\r\n$3\r\nid4\r\n*0\r\n"
                            "*4\r\n:5461\r\n:10922\r\n"
                            "*4\r\n$9\r\n127.0.0.1\r\n:7002\r\n$3\r\nid2\r\n*0\r\n"
                            "*4\r\n$9\r\n127.0.0.1\r\n:7005\r\n$3\r\nid5\r\n*0\r\n"
                            "*3\r\n:10923\r\n:16383\r\n"
                            "*3\r\n$0\r\n\r\n:7003\r\n$3\r\nid3\r\n";

static void test_map_ok(void **st) {
    (void)st;
    kc_cluster_map *m = malloc(sizeof *m);
    redisReply *r = resp(THREE);
    assert_int_equal(kc_cluster_map_parse(r, "seed.example", "test", m), KC_OK);
    assert_int_equal(m->nnodes, 3);
    int a = kc_cluster_map_node(m, 0), b = kc_cluster_map_node(m, 5461), c = kc_cluster_map_node(m, 16383);
    assert_int_equal(kc_cluster_map_node(m, 5460), a);
    assert_int_equal(kc_cluster_map_node(m, 10922), b);
    assert_int_equal(m->node[a].port, 7001);
    assert_int_equal(m->node[b].port, 7002);
    assert_string_equal(m->node[c].host, "seed.example"); /* the empty endpoint: the node asked */
    assert_int_equal(m->node[c].port, 7003);
    assert_int_equal(kc_cluster_map_node(m, 16384), -1);
    freeReplyObject(r);
    /* "?": an endpoint the node does not know leaves its slots unknown; a hole is no error */
    r = resp("*2\r\n*3\r\n:0\r\n:99\r\n*2\r\n$1\r\n?\r\n:7001\r\n*3\r\n:200\r\n:200\r\n*2\r\n$3\r\n::1\r\n:7002\r\n");
    assert_int_equal(kc_cluster_map_parse(r, "h", "test", m), KC_OK);
    assert_int_equal(m->nnodes, 1);
    assert_int_equal(kc_cluster_map_node(m, 50), -1);
    assert_int_equal(kc_cluster_map_node(m, 150), -1);
    assert_string_equal(m->node[kc_cluster_map_node(m, 200)].host, "::1");
    freeReplyObject(r);
    /* an empty map (a cluster with no slots assigned yet) */
    r = resp("*0\r\n");
    assert_int_equal(kc_cluster_map_parse(r, "h", "test", m), KC_OK);
    assert_int_equal(m->nnodes, 0);
    freeReplyObject(r);
    free(m);
}

static void refused(kc_cluster_map *m, const char *text, const char *says) {
    redisReply *r = resp(text);
    assert_int_equal(kc_cluster_map_parse(r, "h", "test", m), KC_EIO);
    if (!strstr(kc_error_last()->message, says)) fail_msg("'%s' does not say '%s'", kc_error_last()->message, says);
    assert_int_equal(m->nnodes, 0);
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++) assert_int_equal(m->slot_node[s], -1);
    freeReplyObject(r);
}

#define MASTER "*2\r\n$9\r\n127.0.0.1\r\n:7001\r\n"

static void test_map_hostile(void **st) {
    (void)st;
    kc_cluster_map *m = malloc(sizeof *m);
    refused(m, "$2\r\nno\r\n", "not an array");
    refused(m, "-ERR This instance has cluster support disabled\r\n", "not an array");
    refused(m, "*2\r\n*3\r\n:0\r\n:10\r\n" MASTER "*3\r\n:10\r\n:20\r\n" MASTER, "slot 10 is in two ranges");
    refused(m, "*1\r\n*3\r\n:0\r\n:16384\r\n" MASTER, "no valid slots");
    refused(m, "*1\r\n*3\r\n:-1\r\n:5\r\n" MASTER, "no valid slots");
    refused(m, "*1\r\n*3\r\n:9\r\n:5\r\n" MASTER, "no valid slots");
    refused(m, "*1\r\n*3\r\n$1\r\n0\r\n:5\r\n" MASTER, "no valid slots");
    refused(m, "*1\r\n*2\r\n:0\r\n:5\r\n", "not [start, end");
    refused(m, "*1\r\n:5\r\n", "not [start, end");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*1\r\n$1\r\nh\r\n", "not [host, port");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n:1\r\n:7001\r\n", "not [host, port");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n$4\r\n7001\r\n", "not [host, port");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:0\r\n", "port 0 is out of range");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$1\r\nh\r\n:65536\r\n", "out of range");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$3\r\na b\r\n:1\r\n", "not a host name");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$3\r\na\001b\r\n:1\r\n", "not a host name");
    refused(m, "*1\r\n*3\r\n:0\r\n:5\r\n*2\r\n$3\r\n-oX\r\n:1\r\n", "not a host name");
    /* more ranges than the map takes */
    size_t cap = 16 + (KC_CLUSTER_MAX_RANGES + 1) * 64;
    char *big = malloc(cap), *p = big;
    p += sprintf(p, "*%d\r\n", KC_CLUSTER_MAX_RANGES + 1);
    for (int i = 0; i <= KC_CLUSTER_MAX_RANGES; i++) p += sprintf(p, "*3\r\n:%d\r\n:%d\r\n" MASTER, i, i);
    refused(m, big, "ranges (at most");
    /* more masters than the map takes: each range its own port */
    p = big;
    p += sprintf(p, "*%d\r\n", KC_CLUSTER_MAX_NODES + 1);
    for (int i = 0; i <= KC_CLUSTER_MAX_NODES; i++)
        p += sprintf(p, "*3\r\n:%d\r\n:%d\r\n*2\r\n$1\r\nh\r\n:%d\r\n", i, i, 1000 + i);
    refused(m, big, "masters");
    free(big);
    free(m);
}

static int redirect(const char *s, kc_cluster_redirect *r) { return kc_cluster_redirect_parse(s, strlen(s), r); }

static void test_redirect(void **st) {
    (void)st;
    kc_cluster_redirect r;
    assert_int_equal(redirect("MOVED 3999 127.0.0.1:6381", &r), KC_REDIRECT_MOVED);
    assert_int_equal(r.slot, 3999);
    assert_string_equal(r.to.host, "127.0.0.1");
    assert_int_equal(r.to.port, 6381);
    assert_int_equal(redirect("ASK 16383 node-3.example:7000", &r), KC_REDIRECT_ASK);
    assert_int_equal(r.slot, 16383);
    assert_string_equal(r.to.host, "node-3.example");
    assert_int_equal(redirect("MOVED 0 ::1:7002", &r), KC_REDIRECT_MOVED); /* IPv6: the port after the last ':' */
    assert_string_equal(r.to.host, "::1");
    assert_int_equal(r.to.port, 7002);
    assert_int_equal(redirect("MOVED 12 :7002", &r), KC_REDIRECT_MOVED); /* the same host */
    assert_string_equal(r.to.host, "");
    const char *no[] = {"MOVED",
                        "MOVED ",
                        "MOVED 3999",
                        "MOVED 3999 ",
                        "MOVED 16384 h:1",
                        "MOVED -1 h:1",
                        "MOVED 3999 h",
                        "MOVED 3999 h:",
                        "MOVED 3999 h:0",
                        "MOVED 3999 h:65536",
                        "MOVED 3999 h:1 x",
                        "MOVED 3999 h:1x",
                        "MOVED x h:1",
                        "MOVED 000003999 h:1",
                        "MOVED 3999 a b:1",
                        "ASK 1 h;:1",
                        "moved 1 h:1",
                        "ERR unknown command",
                        "CROSSSLOT Keys in request don't hash to the same slot",
                        "TRYAGAIN Multiple keys request during rehashing of slot",
                        "CLUSTERDOWN The cluster is down",
                        "ASKING 1 h:1",
                        ""};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (redirect(no[i], &r) != KC_REDIRECT_NONE) fail_msg("'%s' taken as a redirect", no[i]);
    /* a NUL inside the host: not a redirect (the length, not strlen, bounds it) */
    assert_int_equal(kc_cluster_redirect_parse("MOVED 1 h\0x:1", 13, &r), KC_REDIRECT_NONE);
}

static void test_plan(void **st) {
    (void)st;
    unsigned slots[] = {5, 9, 5, 3, 9, 5, 7};
    size_t n = sizeof slots / sizeof *slots, order[8], start[9];
    size_t g = kc_cluster_plan(slots, n, NULL, order, start);
    assert_int_equal(g, 4);
    size_t want[] = {0, 2, 5, 1, 4, 3, 6}, want_start[] = {0, 3, 5, 6, 7};
    for (size_t i = 0; i < n; i++) assert_int_equal(order[i], want[i]);
    for (size_t i = 0; i <= g; i++) assert_int_equal(start[i], want_start[i]);
    /* grouped by node: slots 3 and 9 on node 0, 5 and 7 on node 1 */
    kc_cluster_map *m = malloc(sizeof *m);
    memset(m, 0xff, sizeof m->slot_node);
    m->nnodes = 2;
    m->slot_node[3] = m->slot_node[9] = 0;
    m->slot_node[5] = m->slot_node[7] = 1;
    g = kc_cluster_plan(slots, n, m, order, start);
    assert_int_equal(g, 4);
    size_t want2[] = {1, 4, 3, 0, 2, 5, 6};
    for (size_t i = 0; i < n; i++) assert_int_equal(order[i], want2[i]);
    /* answers put back: each key's answer lands at its own index */
    int back[7];
    for (size_t k = 0; k < g; k++)
        for (size_t j = start[k]; j < start[k + 1]; j++) {
            assert_int_equal(slots[order[j]], slots[order[start[k]]]); /* one slot per group */
            back[order[j]] = (int)order[j];
        }
    for (size_t i = 0; i < n; i++) assert_int_equal(back[i], (int)i);
    free(m);
    assert_int_equal(kc_cluster_plan(slots, 0, NULL, order, start), 0);
    unsigned many[KC_CLUSTER_PLAN_MAX + 1] = {0};
    size_t o2[KC_CLUSTER_PLAN_MAX + 1], s2[KC_CLUSTER_PLAN_MAX + 2];
    assert_int_equal(kc_cluster_plan(many, KC_CLUSTER_PLAN_MAX, NULL, o2, s2), 1);
    assert_int_equal(kc_cluster_plan(many, KC_CLUSTER_PLAN_MAX + 1, NULL, o2, s2), 0);
}

static void test_seeds(void **st) {
    (void)st;
    kc_cluster_node s[4];
    int n;
    const char *l = "127.0.0.1:7001,node-2.example,[::1]:7003";
    assert_int_equal(kc_cluster_seeds_parse(l, strlen(l), s, 4, &n, "u"), KC_OK);
    assert_int_equal(n, 3);
    assert_string_equal(s[0].host, "127.0.0.1");
    assert_int_equal(s[0].port, 7001);
    assert_string_equal(s[1].host, "node-2.example");
    assert_int_equal(s[1].port, 6379);
    assert_string_equal(s[2].host, "::1");
    assert_int_equal(s[2].port, 7003);
    const char *bad[] = {"", ",", "h:1,", "h:0", "h:65536", "h:x", "[::1", "a b:1", "h:1:2", "h1,h2,h3,h4,h5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (kc_cluster_seeds_parse(bad[i], strlen(bad[i]), s, 4, &n, "u") != KC_EINVAL)
            fail_msg("seed list '%s' taken", bad[i]);
}

/* The URL: seeds, database 0 only, the password never shown; nothing connects at open. */
static void test_url(void **st) {
    (void)st;
    kc_store_backend *b = NULL;
    assert_int_equal(kc_store_open_url(&b, "redis+cluster://app:s3cret@127.0.0.1:1,[::1]:2,h3", NULL), KC_OK);
    kc_remote_state s;
    assert_int_equal(kc_store_redis_state(b, &s), KC_OK);
    assert_null(strstr(s.url, "s3cret"));
    assert_non_null(strstr(s.url, "redis+cluster://app:***@127.0.0.1:1,[::1]:2,h3"));
    b->free(b);
    assert_int_equal(kc_store_open_url(&b, "redis+cluster://h:1/0", NULL), KC_OK);
    b->free(b);
    const char *bad[] = {"redis+cluster://h:1/3", "redis+cluster://h:1,,h:2", "redis+cluster://:pw@h:0",
                         "redis+cluster://h:1,bad host:2", "redis+cluster://"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (kc_store_open_url(&b, bad[i], NULL) != KC_EINVAL) fail_msg("'%s' opened", bad[i]);
        assert_null(strstr(kc_error_last()->message, "pw@"));
    }
    assert_non_null(kc_store_open_url(&b, "redis+cluster://h:1/3", NULL) == KC_EINVAL ? kc_error_last()->message
                                                                                      : NULL);
    assert_non_null(strstr(kc_error_last()->message, "only database 0"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot),     cmocka_unit_test(test_map_ok), cmocka_unit_test(test_map_hostile),
        cmocka_unit_test(test_redirect), cmocka_unit_test(test_plan),   cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
