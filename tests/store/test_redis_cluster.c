/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_cluster.c (label redis) — the redis back end's cluster mode against a real Redis
 * Cluster of 3 masters and 3 replicas on loopback (tests/servers/redis_cluster.sh, started once
 * for the file and stopped at its end, also on failure).  Checked: keys written through
 * "redis+cluster://" spread over all three masters (each holds some, together all), read back by
 * get, get_many (one MGET per slot, answers in order) and get_first (the first present of names in
 * several slots); a slot moved to another master after the map was read (CLUSTER SETSLOT and
 * MIGRATE) is followed through MOVED; a slot mid-migration is followed through ASK (a key already
 * moved is read, a new key is written, on the importing node); a master killed in the middle of
 * lookups (kill-master: SIGKILL, a replica promoted) costs misses only — every answer is the value
 * written or a failure, never another value — and every key hits again once the replica serves.
 * Exits 77 when redis-server is missing.
 */
#include "kcache.h"
#include "helpers.h"
#include "kcache/sys/store.h"

#include "store/redis_cluster.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NKEYS 300

static char dir[64], url[512], script[1024];
static int ports[6];

static void stop_cluster(void) {
    if (!dir[0]) return;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "bash %s stop %s >/dev/null 2>&1; rm -rf %s", script, dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "stopping the cluster failed\n");
    dir[0] = '\0';
}

static void start_cluster(void) {
    snprintf(script, sizeof script, "%s/../servers/redis_cluster.sh", KC_GOLDEN_DIR);
    snprintf(dir, sizeof dir, "/tmp/kct-cluster-XXXXXX");
    if (!mkdtemp(dir)) exit(1);
    atexit(stop_cluster);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "bash %s start %s >/dev/null", script, dir);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        fprintf(stderr, "redis-server not installed: skipped\n");
        exit(KC_SKIP_CODE);
    }
    if (rc != 0) {
        fprintf(stderr, "the cluster did not start\n");
        exit(1);
    }
    char p[600];
    snprintf(p, sizeof p, "%s/url", dir);
    FILE *f = fopen(p, "r");
    if (!f || !fgets(url, sizeof url, f)) exit(1);
    fclose(f);
    url[strcspn(url, "\n")] = '\0';
    snprintf(p, sizeof p, "%s/ports", dir);
    f = fopen(p, "r");
    for (int i = 0; i < 6; i++)
        if (!f || fscanf(f, "%d", &ports[i]) != 1) exit(1);
    fclose(f);
}

static redisReply *cmd_at(int port, const char *fmt, ...) {
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (!c || c->err) {
        if (c) redisFree(c);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

/* Whether the node on `port` is a live master; its DBSIZE in *keys. */
static int master_keys(int port, long long *keys) {
    redisReply *r = cmd_at(port, "ROLE");
    int master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && strcmp(r->element[0]->str, "master") == 0;
    if (r) freeReplyObject(r);
    if (!master) return 0;
    r = cmd_at(port, "DBSIZE");
    *keys = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r) freeReplyObject(r);
    return 1;
}

static void name_of(int i, char *out) { snprintf(out, 64, "%032x.v%d", (unsigned)(i * 2654435761u), i % 7); }

static void value_of(int i, char *out) { snprintf(out, 64, "value-%d", i); }

static kc_store_backend *open_be(void) {
    kc_store_backend *b = NULL;
    kc_remote_limits cfg = KC_REMOTE_LIMITS_INIT;
    cfg.deadline_ms = 2000, cfg.connect_ms = 500, cfg.backoff_ms = 100, cfg.backoff_max_ms = 400;
    assert_int_equal(kc_store_open_url(&b, url, &cfg), KC_OK);
    return b;
}

/* 1: the value written, 0: a miss or a failure, -1: another value (never allowed) */
static int get_is(kc_store_backend *b, int i) {
    char name[64], want[64];
    name_of(i, name);
    value_of(i, want);
    void *v = NULL;
    size_t n = 0;
    int rc = b->get(b, name, &v, &n);
    if (rc != KC_OK) return 0;
    int same = n == strlen(want) && memcmp(v, want, n) == 0;
    free(v);
    return same ? 1 : -1;
}

static void test_spread(void **st) {
    (void)st;
    kc_store_backend *b = open_be();
    for (int i = 0; i < NKEYS; i++) {
        char name[64], v[64];
        name_of(i, name), value_of(i, v);
        assert_int_equal(b->put(b, name, v, strlen(v)), KC_OK);
    }
    long long total = 0, keys;
    int masters = 0;
    for (int i = 0; i < 6; i++)
        if (master_keys(ports[i], &keys)) {
            printf("master %d: %lld keys\n", ports[i], keys);
            assert_true(keys > 0);
            total += keys, masters++;
        }
    assert_int_equal(masters, 3);
    assert_int_equal(total, NKEYS);
    for (int i = 0; i < NKEYS; i++) assert_int_equal(get_is(b, i), 1);
    /* get_many: 200 names over many slots, answers at their names, an absent one NULL */
    char names[201][64];
    const char *np[201];
    void *out[201];
    size_t len[201];
    for (int i = 0; i < 200; i++) name_of(i, names[i]), np[i] = names[i];
    snprintf(names[200], 64, "%032x.absent", 7u), np[200] = names[200];
    assert_int_equal(b->get_many(b, np, 201, out, len), KC_OK);
    for (int i = 0; i < 200; i++) {
        char want[64];
        value_of(i, want);
        assert_non_null(out[i]);
        assert_memory_equal(out[i], want, strlen(want));
        free(out[i]);
    }
    assert_null(out[200]);
    /* get_first: two absent names (other slots), then a present one, then another present one */
    const char *first[] = {names[200], "0000000000000000000000000000abcd.x", names[17], names[3]};
    size_t which = 99;
    void *v = NULL;
    size_t n = 0;
    assert_int_equal(b->get_first(b, first, 4, &which, &v, &n), KC_OK);
    assert_int_equal(which, 2);
    assert_memory_equal(v, "value-17", 8);
    free(v);
    assert_int_equal(b->get_first(b, first, 2, &which, &v, &n), KC_MISS);
    /* a lease (SET NX PX, released by a script) goes to its key's master like any command */
    assert_int_equal(b->lease_take(b, names[3], 5000, "host-a"), KC_OK);
    assert_int_equal(b->lease_take(b, names[3], 5000, "host-b"), KC_EBUSY);
    assert_int_equal(b->lease_release(b, names[3], "host-a"), KC_OK);
    assert_int_equal(b->lease_take(b, names[3], 5000, "host-b"), KC_OK);
    assert_int_equal(b->lease_release(b, names[3], "host-b"), KC_OK); /* no key left to change a count */
    assert_null(b->iterate);                                          /* not for a cluster yet */
    kc_remote_state s;
    assert_int_equal(kc_store_redis_state(b, &s), KC_OK);
    assert_int_equal(s.breaker, KC_BREAKER_CLOSED);
    assert_non_null(strstr(s.url, "redis+cluster://"));
    b->free(b);
}

/* The node id and port of the master serving `slot`, and of another master. */
static void masters_of(unsigned slot, int *from, char *from_id, int *to, char *to_id) {
    redisReply *r = cmd_at(ports[0], "CLUSTER SLOTS");
    assert_non_null(r);
    *from = *to = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *e = r->element[i];
            int port = (int)e->element[2]->element[1]->integer;
            const char *id = e->element[2]->element[2]->str;
            int in = slot >= (unsigned)e->element[0]->integer && slot <= (unsigned)e->element[1]->integer;
            if (pass == 0 && in) *from = port, snprintf(from_id, 48, "%s", id);
            if (pass == 1 && !*to && port != *from) *to = port, snprintf(to_id, 48, "%s", id);
        }
    freeReplyObject(r);
    assert_true(*from && *to && *to != *from);
}

static unsigned slot_of_name(const char *name) {
    char k[128];
    snprintf(k, sizeof k, "kcache:v1:%s", name);
    return kc_cluster_slot(k, strlen(k));
}

/* The end of a slot's migration, as Redis documents it: the importing master first (it takes a new
 * config epoch), then the migrating one, then the rest. */
static void setslot_all(unsigned slot, const char *id, int to, int from) {
    int order[8] = {to, from}, n = 2;
    for (int i = 0; i < 6; i++)
        if (ports[i] != to && ports[i] != from) order[n++] = ports[i];
    for (int i = 0; i < n; i++) {
        redisReply *r = cmd_at(order[i], "CLUSTER SETSLOT %u NODE %s", slot, id);
        if (r) freeReplyObject(r);
    }
}

/* Every master's replica has every write (its offset is the master's), so a failover loses nothing. */
static void replicas_caught_up(void) {
    for (int i = 0; i < 6; i++)
        for (int round = 0; round < 100; round++) {
            redisReply *r = cmd_at(ports[i], "INFO replication");
            long long mine = -1, theirs = -2;
            const char *m = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "master_repl_offset:") : NULL;
            const char *o = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "slave0:") : NULL;
            o = o ? strstr(o, "offset=") : NULL;
            int master = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:master");
            if (m) mine = atoll(m + 19);
            if (o) theirs = atoll(o + 7);
            if (r) freeReplyObject(r);
            if (!master || mine == theirs) break;
            usleep(50000);
        }
}

static void migrate(int from, int to, const char *key) {
    redisReply *r = cmd_at(from, "MIGRATE 127.0.0.1 %d %s 0 5000", to, key);
    assert_non_null(r);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("MIGRATE: %s", r->str);
    freeReplyObject(r);
}

static void test_moved(void **st) {
    (void)st;
    kc_store_backend *b = open_be();
    assert_int_equal(get_is(b, 5), 1); /* the map is read */
    char name[64], key[128], from_id[48], to_id[48];
    name_of(5, name);
    snprintf(key, sizeof key, "kcache:v1:%s", name);
    unsigned slot = slot_of_name(name);
    int from, to;
    masters_of(slot, &from, from_id, &to, to_id);
    redisReply *r = cmd_at(to, "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id);
    freeReplyObject(r);
    r = cmd_at(from, "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id);
    freeReplyObject(r);
    migrate(from, to, key);
    setslot_all(slot, to_id, to, from);
    long long before, after;
    assert_true(master_keys(to, &before));
    assert_int_equal(get_is(b, 5), 1); /* the old master answers MOVED: followed */
    char v[64];
    value_of(5, v);
    assert_int_equal(b->put(b, name, v, strlen(v)), KC_OK); /* routed straight to the new master now */
    assert_true(master_keys(to, &after));
    assert_int_equal(after, before);
    b->free(b);
}

static void test_ask(void **st) {
    (void)st;
    kc_store_backend *b = open_be();
    assert_int_equal(get_is(b, 9), 1);
    char name[64], key[128], from_id[48], to_id[48];
    name_of(9, name);
    snprintf(key, sizeof key, "kcache:v1:%s", name);
    unsigned slot = slot_of_name(name);
    int from, to;
    masters_of(slot, &from, from_id, &to, to_id);
    redisReply *r = cmd_at(to, "CLUSTER SETSLOT %u IMPORTING %s", slot, from_id);
    freeReplyObject(r);
    r = cmd_at(from, "CLUSTER SETSLOT %u MIGRATING %s", slot, to_id);
    freeReplyObject(r);
    migrate(from, to, key); /* the key has moved; the slot is still the old master's: ASK */
    assert_int_equal(get_is(b, 9), 1);
    /* a new key in the migrating slot: the old master answers ASK, the importing one stores it */
    char other[64];
    int j = 0;
    for (int i = NKEYS; !j; i++) {
        name_of(i, other);
        if (slot_of_name(other) == slot) j = i;
        assert_true(i < NKEYS + 200000);
    }
    char v[64];
    value_of(j, v);
    assert_int_equal(b->put(b, other, v, strlen(v)), KC_OK);
    assert_int_equal(get_is(b, j), 1);
    char okey[128];
    snprintf(okey, sizeof okey, "kcache:v1:%s", other);
    r = cmd_at(to, "ASKING");
    freeReplyObject(r);
    r = cmd_at(from, "EXISTS %s", okey);
    assert_int_equal(r->integer, 0); /* not on the old master */
    freeReplyObject(r);
    setslot_all(slot, to_id, to, from); /* the migration ends */
    r = cmd_at(to, "EXISTS %s", okey);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    b->free(b);
}

typedef struct reader {
    kc_store_backend *b;
    int stop;                 /* atomic */
    long hits, misses, wrong; /* atomic */
} reader;

static void *read_loop(void *arg) {
    reader *rd = arg;
    for (int i = 0; !__atomic_load_n(&rd->stop, __ATOMIC_RELAXED); i = (i + 1) % NKEYS) {
        int got = get_is(rd->b, i);
        __atomic_add_fetch(got > 0 ? &rd->hits : got == 0 ? &rd->misses : &rd->wrong, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_failover(void **st) {
    (void)st;
    kc_store_backend *b = open_be();
    replicas_caught_up(); /* every write on a replica before a master dies */
    reader rd = {b, 0, 0, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, read_loop, &rd), 0);
    usleep(200000);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "bash %s kill-master %s", script, dir);
    assert_int_equal(system(cmd), 0);
    long hits_at_kill = __atomic_load_n(&rd.hits, __ATOMIC_RELAXED);
    /* every key hits again once the replica serves (bounded: the map's refresh, a breaker window) */
    int all = 0, last = -1;
    for (int round = 0; round < 100 && !all; round++) {
        all = 1;
        for (int i = 0; i < NKEYS && all; i++) all = get_is(b, i) == 1, last = i;
        if (!all) usleep(100000);
    }
    if (!all) {
        char name[64];
        name_of(last, name);
        fprintf(stderr, "key %d (%s, slot %u) does not hit again: %s\n", last, name, slot_of_name(name),
                kc_error_last()->message);
    }
    __atomic_store_n(&rd.stop, 1, __ATOMIC_RELAXED);
    pthread_join(th, NULL);
    printf("failover: %ld hits, %ld misses while the master died and its replica took over\n", rd.hits, rd.misses);
    assert_true(hits_at_kill > 0);
    assert_int_equal(rd.wrong, 0); /* every answer the value written, or a miss */
    assert_true(all);
    b->free(b);
}

int main(void) {
    start_cluster();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread),
        cmocka_unit_test(test_moved),
        cmocka_unit_test(test_ask),
        cmocka_unit_test(test_failover),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    stop_cluster();
    return rc;
}
