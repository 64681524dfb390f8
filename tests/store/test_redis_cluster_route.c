/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_cluster_route.c (label redis) — the cluster router (store/redis_cluster_route.c)
 * against a cluster simulated in this process: three nodes that own slot ranges, answer CLUSTER
 * SLOTS from the current ownership, MOVED for a slot they do not own, ASK for a slot they are
 * migrating (and take the command after ASKING on the importing node), CROSSSLOT for an MGET over
 * several slots, and fail like a dead master.  Checked: the map read once at first use and the
 * command sent straight to the slot's master; a MOVED followed and remembered (the next command
 * goes straight there); an ASK followed with ASKING and not remembered; redirections that never
 * end cost an error after KC_CLUSTER_MAX_HOPS, not a loop; a redirection for another slot or to a
 * hostile host is an error, never followed; a dead master followed to its promoted replica through
 * a fresh map, and the refresh rate-limited (a map read a moment ago is not read again: the
 * command fails, a miss); an MGET over 3 masters split by slot with every answer back at its key.
 */
#include "kcache.h"
#include "helpers.h"

#include "common/internal.h"
#include "store/redis_cluster_route.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NN 4 /* nodes n0..n3 (n3: a replica, promoted in the failover case) */

typedef struct sim {
    int owner[KC_CLUSTER_SLOTS];     /* the node owning each slot */
    int migrating[KC_CLUSTER_SLOTS]; /* -1, or the node importing it (the owner answers ASK) */
    int dead[NN], served[NN], asked_at[NN], slots_reads, mgets[NN];
    int loop;     /* every node answers MOVED to the other one */
    int commands; /* commands other than CLUSTER SLOTS */
    int foreign;  /* nodes made for a host that is not the cluster's (127.0.0.1) */
    int slow_ms;  /* each command takes this long */
    const char *error;
} sim;

static sim S;

typedef struct fnode {
    int id;
    int failures;
} fnode;

static void *n_new(void *ctx, const char *host, int port) {
    (void)ctx;
    fnode *n = calloc(1, sizeof *n);
    n->id = strcmp(host, "127.0.0.1") == 0 ? port - 7000 : 99;
    S.foreign += n->id == 99;
    return n;
}
static void n_free(void *ctx, void *n) { (void)ctx, free(n); }
static int n_enter(void *ctx, void *n) { return (void)ctx, (void)n, KC_OK; }
static void n_leave(void *ctx, void *n, int failed) {
    (void)ctx;
    ((fnode *)n)->failures += failed;
}

static redisReply *resp(const char *text, size_t len) {
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    assert_int_equal(redisReaderFeed(rd, text, len), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    return r;
}

static redisReply *map_reply(void) {
    static char buf[1 << 16];
    char body[1 << 16];
    size_t bl = 0;
    int ranges = 0;
    for (int s = 0; s < KC_CLUSTER_SLOTS;) {
        int e = s;
        while (e + 1 < KC_CLUSTER_SLOTS && S.owner[e + 1] == S.owner[s]) e++;
        bl += (size_t)sprintf(body + bl, "*3\r\n:%d\r\n:%d\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n", s, e,
                              7000 + S.owner[s]);
        ranges++, s = e + 1;
    }
    int hl = sprintf(buf, "*%d\r\n", ranges);
    memcpy(buf + hl, body, bl);
    return resp(buf, (size_t)hl + bl);
}

static redisReply *error_reply(const char *fmt, int a, int b) {
    char t[200], e[220];
    snprintf(t, sizeof t, fmt, a, b);
    int n = snprintf(e, sizeof e, "-%s\r\n", t);
    return resp(e, (size_t)n);
}

static int n_exchange(void *ctx, void *node, int asking, uint64_t deadline, const kc_redis_cmd *cmd, redisReply **out) {
    (void)ctx, (void)deadline;
    int id = ((fnode *)node)->id;
    if (id >= NN || S.dead[id]) return kc_err(KC_EIO, "fake n%d: connection refused", id);
    if (strcmp(cmd->argv[0], "CLUSTER") == 0) {
        S.slots_reads++;
        *out = map_reply();
        return KC_OK;
    }
    S.commands++;
    if (S.slow_ms) usleep((useconds_t)S.slow_ms * 1000);
    unsigned slot = kc_cluster_slot(cmd->argv[1], cmd->lens[1]);
    for (int i = 2; i < cmd->argc; i++)
        if (kc_cluster_slot(cmd->argv[i], cmd->lens[i]) != slot) {
            *out = error_reply("CROSSSLOT Keys in request don't hash to the same slot", 0, 0);
            return KC_OK;
        }
    if (S.error) {
        *out = error_reply(S.error, (int)slot, 7000 + (id + 1) % 3);
        return KC_OK;
    }
    if (S.loop) {
        *out = error_reply("MOVED %d 127.0.0.1:%d", (int)slot, 7000 + (id == 0 ? 1 : 0));
        return KC_OK;
    }
    if (asking && S.migrating[slot] == id) S.asked_at[id]++;
    else if (S.owner[slot] != id) {
        *out = error_reply("MOVED %d 127.0.0.1:%d", (int)slot, 7000 + S.owner[slot]);
        return KC_OK;
    } else if (S.migrating[slot] >= 0) {
        *out = error_reply("ASK %d 127.0.0.1:%d", (int)slot, 7000 + S.migrating[slot]);
        return KC_OK;
    }
    S.served[id]++;
    if (strcmp(cmd->argv[0], "MGET") == 0) {
        S.mgets[id]++;
        char t[4096];
        size_t l = (size_t)sprintf(t, "*%d\r\n", cmd->argc - 1);
        for (int i = 1; i < cmd->argc; i++) l += (size_t)sprintf(t + l, "$%zu\r\n%s\r\n", cmd->lens[i], cmd->argv[i]);
        *out = resp(t, l);
    } else *out = resp("+OK\r\n", 5);
    return KC_OK;
}

static const kc_cluster_io IO = {NULL, n_new, n_free, n_enter, n_leave, n_exchange};

static void sim_reset(void) {
    memset(&S, 0, sizeof S);
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++) S.owner[s] = s * 3 / KC_CLUSTER_SLOTS, S.migrating[s] = -1;
}

static kc_cluster *open_cluster(unsigned refresh_ms) {
    kc_cluster *cl = malloc(sizeof *cl);
    kc_cluster_node seed = {"127.0.0.1", 7002};
    assert_int_equal(kc_cluster_init(cl, &IO, &seed, 1, refresh_ms, "fake"), KC_OK);
    return cl;
}

static int run_within(kc_cluster *cl, const char *key, uint64_t ms) {
    const char *argv[] = {"GET", key};
    size_t lens[] = {3, strlen(key)};
    kc_reply_expect ex = {T_STATUS, 0, 0, 0};
    kc_redis_cmd cmd = {2, argv, lens, &ex};
    redisReply *r;
    int rc = kc_cluster_command(cl, kc_cluster_slot(key, lens[1]), kc_mono_ns() + ms * 1000000ull, &cmd, &r);
    if (rc == KC_OK) freeReplyObject(r);
    return rc;
}

static int run(kc_cluster *cl, const char *key) { return run_within(cl, key, 2000); }

static void counts(kc_cluster *cl, unsigned long long *f, unsigned long long *m, unsigned long long *a) {
    kc_cluster_counts(cl, f, m, a);
}

/* "foo" is slot 12182 (n2), "bar" 5061 (n0), "hello" 866 (n0). */
static void test_routed_and_moved(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    unsigned long long f, m, a;
    assert_int_equal(run(cl, "bar"), KC_OK);
    counts(cl, &f, &m, &a);
    assert_int_equal(f, 1);
    assert_int_equal(m, 0); /* straight to n0, from the map */
    assert_int_equal(S.served[0], 1);
    S.owner[5061] = 1; /* resharded after the map was read */
    assert_int_equal(run(cl, "bar"), KC_OK);
    counts(cl, &f, &m, &a);
    assert_int_equal(m, 1);
    assert_int_equal(S.served[1], 1);
    assert_int_equal(run(cl, "bar"), KC_OK); /* remembered: no second MOVED */
    counts(cl, &f, &m, &a);
    assert_int_equal(m, 1);
    assert_int_equal(S.served[1], 2);
    kc_cluster_destroy(cl);
    free(cl);
}

static void test_ask(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    S.migrating[12182] = 0; /* n2 migrating slot 12182 to n0 */
    unsigned long long f, m, a;
    assert_int_equal(run(cl, "foo"), KC_OK);
    assert_int_equal(run(cl, "foo"), KC_OK);
    counts(cl, &f, &m, &a);
    assert_int_equal(a, 2); /* asked each time: an ASK is not remembered */
    assert_int_equal(m, 0);
    assert_int_equal(S.asked_at[0], 2);
    assert_int_equal(S.served[0], 2);
    assert_int_equal(S.served[2], 0);
    kc_cluster_destroy(cl);
    free(cl);
}

static void test_bounded_and_hostile(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    S.loop = 1;
    assert_int_equal(run(cl, "bar"), KC_EIO);
    assert_non_null(strstr(kc_error_last()->message, "redirections"));
    assert_int_equal(S.commands, KC_CLUSTER_MAX_HOPS + 1); /* the first try and the hops, no more */
    /* one deadline for the whole chain: redirections of 30 ms each under a deadline of 50 ms stop at
     * the deadline, not at the hop bound */
    S.slow_ms = 30, S.commands = 0;
    assert_int_equal(run_within(cl, "bar", 50), KC_ETIMEOUT);
    assert_true(S.commands >= 1 && S.commands <= 2);
    S.slow_ms = 0;
    S.loop = 0;
    const char *bad[] = {"MOVED 1 127.0.0.1:%d", "MOVED %d bad host:%d", "ASK %d h\001:%d", "CLUSTERDOWN down %d %d"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        S.error = bad[i];
        int before = S.served[0] + S.served[1] + S.served[2], sent = S.commands;
        assert_int_equal(run(cl, "foo"), KC_EIO);
        assert_int_equal(S.served[0] + S.served[1] + S.served[2], before);
        assert_int_equal(S.commands, sent + 1); /* not followed: the error is the answer */
    }
    S.error = NULL;
    assert_int_equal(run(cl, "foo"), KC_OK);
    kc_cluster_destroy(cl);
    free(cl);
}

/* A redirection to a host the cluster's map does not name is never connected to (it would get the URL's
 * credentials): the map is read again instead, and the command fails (a miss) when the map disagrees. */
static void test_redirect_elsewhere_not_followed(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    assert_int_equal(run(cl, "foo"), KC_OK);
    int reads = S.slots_reads;
    const char *away[] = {"MOVED %d 127.0.0.2:%d", "ASK %d 127.0.0.2:%d"};
    for (size_t i = 0; i < 2; i++) {
        S.error = away[i];
        usleep(5000); /* past the map's refresh interval (1 ms here) */
        assert_int_not_equal(run(cl, "foo"), KC_OK);
        assert_int_equal(S.foreign, 0);
    }
    assert_true(S.slots_reads > reads); /* the map was read again */
    S.error = NULL;
    assert_int_equal(run(cl, "foo"), KC_OK);
    kc_cluster_destroy(cl);
    free(cl);
}

static void test_failover(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    assert_int_equal(run(cl, "bar"), KC_OK);
    S.dead[0] = 1; /* n0 dies; n3 (its replica) takes its slots */
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++)
        if (S.owner[s] == 0) S.owner[s] = 3;
    usleep(2000); /* past refresh_ms */
    assert_int_equal(run(cl, "bar"), KC_OK);
    assert_int_equal(S.served[3], 1);
    assert_int_equal(run(cl, "hello"), KC_OK); /* the whole range moved with the new map */
    assert_int_equal(S.served[3], 2);
    kc_cluster_destroy(cl);
    free(cl);
    /* rate-limited: a map read a moment ago is not read again; the command fails (a miss) */
    sim_reset();
    cl = open_cluster(60000);
    assert_int_equal(run(cl, "bar"), KC_OK);
    S.dead[0] = 1;
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++)
        if (S.owner[s] == 0) S.owner[s] = 3;
    int reads = S.slots_reads;
    assert_int_not_equal(run(cl, "bar"), KC_OK);
    assert_int_not_equal(run(cl, "bar"), KC_OK);
    assert_int_equal(S.slots_reads, reads);
    kc_cluster_destroy(cl);
    free(cl);
}

static int take(void *ctx, size_t i, const redisReply *v) {
    char **got = ctx;
    got[i] = strndup(v->str, v->len);
    return KC_OK;
}

static void test_mget(void **st) {
    (void)st;
    sim_reset();
    kc_cluster *cl = open_cluster(1);
    const char *keys[] = {"foo", "bar", "hello", "{bar}x", "k1", "k2", "k3", "k4", "k5"};
    size_t n = sizeof keys / sizeof *keys;
    char *got[16] = {0};
    assert_int_equal(kc_cluster_mget(cl, keys, n, kc_mono_ns() + 2000000000ull, 1 << 20, take, got), KC_OK);
    for (size_t i = 0; i < n; i++) assert_string_equal(got[i], keys[i]), free(got[i]);
    int total = 0, slots = 0;
    for (int i = 0; i < 3; i++) assert_true(S.mgets[i] > 0), total += S.mgets[i];
    unsigned seen[16];
    for (size_t i = 0; i < n; i++) {
        unsigned s = kc_cluster_slot(keys[i], strlen(keys[i]));
        int dup = 0;
        for (int j = 0; j < slots; j++) dup |= seen[j] == s;
        if (!dup) seen[slots++] = s;
    }
    assert_int_equal(total, slots); /* one MGET per slot, no CROSSSLOT */
    kc_cluster_destroy(cl);
    free(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routed_and_moved),
        cmocka_unit_test(test_ask),
        cmocka_unit_test(test_bounded_and_hostile),
        cmocka_unit_test(test_redirect_elsewhere_not_followed),
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_mget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
