/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_lease.c (label redis) — one compile per key across the fleet ([Note: leases] in
 * src/store/lease.c), against a real redis-server on a free loopback port:
 *   - 16 processes, each its own cache directory (16 hosts), look up one cold graph together:
 *     exactly one compiles (NVRTC compiles counted from each process's stats), the 15 others
 *     wait and are served its entry as remote hits; with leases off, more than one compiles;
 *   - a dead holder (the lease set as another holder's, with a short PX): the next lookup waits
 *     until Redis has expired it, takes it and compiles — within the lease;
 *   - a remote error on the lease (an ACL user who may not touch lease keys): compiled anyway.
 * The processes start together on a barrier (a pipe closed at once); nothing waits on a timer
 * racing a compile: every check is on what the processes counted.  Needs NVRTC, no GPU.
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

#define HOSTS 16

static kct_redis r;
static unsigned seed;       /* this run's: its keys are cold in any Redis */
static unsigned open_flags; /* host_run's extra kc_options flags (KC_OPEN_STRICT) */

/* What one host reports to the test. */
typedef struct host_report {
    int rc;
    int source;
    char key[KC_KEY_HEX_LEN + 1];
    uint64_t compiles, remote_hits, misses, hits, remote_failed;
    kc_lease_stats ls;
    int entry_ok;   /* the entry of the key, for the variant, is in its directory after the lookup */
    int metrics_ok; /* kc_cache_metrics says what kc_cache_lease_stats does */
} host_report;

static void kernel_src(char *out, size_t cap, const char *tag) {
    snprintf(out, cap,
             "extern \"C\" __global__ void k(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = %uu + %zuu; }\n",
             seed, strlen(tag));
}

static kc_graph_desc *graph_of(const char *src) {
    kc_graph_desc *d = NULL;
    if (kc_graph_desc_new(&d, "lease") != KC_OK) return NULL;
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "k.cu", k.source = src, k.name = "k";
    const char *sizes[] = {"N"};
    const char *grid[] = {"1", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    if (kc_graph_add_kernel(d, &k, NULL) || kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0) ||
        kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2)) {
        kc_graph_desc_free(d);
        return NULL;
    }
    return d;
}

/* NVRTC loaded and the toolkit identified before the barrier (a compile of another kernel in the host's
 * directory, without the remote), so that the hosts' lookups after it start together. */
static void warm_up(const char *dir) {
    char src[256];
    snprintf(src, sizeof src, "extern \"C\" __global__ void k(float *x, int n) { if (n) x[0] = %d; }\n", (int)getpid());
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    kc_graph_desc *d = graph_of(src);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (d && kc_cache_open(&c, &o) == KC_OK) {
        (void)kc_graph_compile(c, d, "sm_90", &info);
        kc_cache_close(c);
    }
    kc_graph_desc_free(d);
}

/* One host: its own directory, the remote `url`; waits for the barrier, then compiles `src` for sm_90. */
static host_report host_run(const char *url, const char *src, int ready, int barrier) {
    host_report h = {0};
    h.rc = KC_ERROR;
    char *dir = kct_tmpdir("leaseh");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.remote = url;
    o.flags |= open_flags;
    kc_cache *c = NULL;
    kc_graph_desc *d = graph_of(src);
    if (barrier >= 0) warm_up(dir);
    if (!d || kc_cache_open(&c, &o) != KC_OK) {
        fprintf(stderr, "host %d: %s\n", (int)getpid(), kc_error_last()->message);
        return h;
    }
    char b;
    if (barrier >= 0) { /* ready (warmed up, open); then EOF on the barrier: all start together */
        (void)!write(ready, "r", 1);
        close(ready);
        (void)!read(barrier, &b, 1);
    }
    kc_stats s0, s; /* this lookup's counts: the directory's, less the warm-up's */
    kc_cache_stats(c, &s0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    h.rc = kc_graph_compile(c, d, "sm_90", &info);
    if (h.rc) fprintf(stderr, "host %d: %s\n", (int)getpid(), kc_error_last()->message);
    h.source = info.source;
    memcpy(h.key, info.key, sizeof h.key);
    kc_cache_stats(c, &s);
    h.compiles = s.v[KC_STAT_COMPILES] - s0.v[KC_STAT_COMPILES];
    h.remote_hits = s.v[KC_STAT_REMOTE_HITS] - s0.v[KC_STAT_REMOTE_HITS];
    h.misses = s.v[KC_STAT_MISSES] - s0.v[KC_STAT_MISSES], h.hits = s.v[KC_STAT_HITS] - s0.v[KC_STAT_HITS];
    h.remote_failed = s.v[KC_STAT_REMOTE_TIMEOUTS] + s.v[KC_STAT_REMOTE_ERRORS] + s.v[KC_STAT_REMOTE_SKIPPED] -
                      s0.v[KC_STAT_REMOTE_TIMEOUTS] - s0.v[KC_STAT_REMOTE_ERRORS] - s0.v[KC_STAT_REMOTE_SKIPPED];
    h.ls = (kc_lease_stats)KC_LEASE_STATS_INIT;
    kc_cache_lease_stats(c, &h.ls);
    static char text[1 << 17];
    char want[2][96];
    snprintf(want[0], sizeof want[0], "kcache_leases_total{event=\"taken\"} %llu\n", (unsigned long long)h.ls.taken);
    snprintf(want[1], sizeof want[1], "kcache_leases_total{event=\"wait_hit\"} %llu\n",
             (unsigned long long)h.ls.wait_hits);
    h.metrics_ok = kc_cache_metrics(c, KC_METRICS_OPENMETRICS, text, sizeof text, NULL) == KC_OK &&
                   strstr(text, want[0]) && strstr(text, want[1]);
    kc_key k;
    kc_entry *e = NULL;
    h.entry_ok = kc_key_from_hex(&k, info.key) == KC_OK && kc_cache_peek(c, &k, "sm_90", &e) == KC_OK;
    kc_entry_free(e);
    kc_cache_close(c);
    kc_graph_desc_free(d);
    kct_rmtree(dir);
    free(dir);
    return h;
}

/* `n` hosts at once on `src`, KCACHE_REMOTE_LEASE_MS `lease_ms`: their reports into out[]. */
static void fleet(const char *src, const char *lease_ms, int n, host_report *out) {
    setenv("KCACHE_REMOTE_LEASE_MS", lease_ms, 1);
    /* 16 processes on a loaded 2-core machine (under a sanitizer): a command past the default 500 ms
     * deadline would be a remote error, which compiles without a lease (test_remote_error_compiles) */
    setenv("KCACHE_REMOTE_DEADLINE_MS", "20000", 1);
    setenv("KCACHE_REMOTE_CONNECT_MS", "10000", 1);
    int go[2], res[2], rdy[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(rdy), 0);
    assert_int_equal(pipe(res), 0);
    pid_t pid[HOSTS];
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            close(go[1]), close(res[0]), close(rdy[0]);
            host_report h = host_run(r.url, src, rdy[1], go[0]);
            _exit(write(res[1], &h, sizeof h) == (ssize_t)sizeof h ? 0 : 1);
        }
    }
    close(go[0]), close(res[1]), close(rdy[1]);
    char b;
    for (int i = 0; i < n; i++) assert_int_equal(read(rdy[0], &b, 1), 1); /* every host ready (or dead: EOF fails) */
    close(rdy[0]);
    close(go[1]); /* the barrier falls */
    for (int i = 0; i < n; i++) {
        size_t got = 0;
        while (got < sizeof out[i]) {
            ssize_t k = read(res[0], (char *)&out[i] + got, sizeof out[i] - got);
            assert_true(k > 0);
            got += (size_t)k;
        }
    }
    close(res[0]);
    for (int i = 0; i < n; i++) {
        int st;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    unsetenv("KCACHE_REMOTE_LEASE_MS");
    unsetenv("KCACHE_REMOTE_DEADLINE_MS");
    unsetenv("KCACHE_REMOTE_CONNECT_MS");
}

static void test_sixteen_hosts_one_compile(void **state) {
    (void)state;
    char src[256];
    kernel_src(src, sizeof src, "on");
    host_report h[HOSTS];
    fleet(src, "20000", HOSTS, h);
    uint64_t compiles = 0, remote = 0, taken = 0, waits = 0, wait_hits = 0, failed = 0;
    for (int i = 0; i < HOSTS; i++) {
        assert_int_equal(h[i].rc, KC_OK);
        assert_string_equal(h[i].key, h[0].key); /* every host looked up one key */
        assert_true(h[i].entry_ok);              /* and holds its entry after the lookup */
        assert_true(h[i].metrics_ok);
        assert_true(h[i].source == KC_FROM_COMPILE || h[i].source == KC_FROM_REMOTE);
        /* one outcome per lookup, the one the caller was told */
        assert_int_equal(h[i].misses, h[i].source == KC_FROM_COMPILE);
        assert_int_equal(h[i].remote_hits, h[i].source == KC_FROM_REMOTE);
        assert_int_equal(h[i].hits, 0);
        compiles += h[i].compiles, remote += h[i].remote_hits, failed += h[i].remote_failed;
        taken += h[i].ls.taken, waits += h[i].ls.waits, wait_hits += h[i].ls.wait_hits;
        assert_int_equal(h[i].ls.waits, h[i].ls.wait_hits + h[i].ls.wait_compiles);
    }
    fprintf(stderr,
            "leases on: %llu compiles, %llu remote hits, %llu leases, %llu waits (%llu served), %llu remote failures\n",
            (unsigned long long)compiles, (unsigned long long)remote, (unsigned long long)taken,
            (unsigned long long)waits, (unsigned long long)wait_hits, (unsigned long long)failed);
    assert_int_equal(compiles, 1);
    assert_int_equal(remote, HOSTS - 1);
    assert_int_equal(taken, 1);
    assert_int_equal(wait_hits, waits); /* no wait ended in a compile */
}

static void test_sixteen_hosts_no_leases(void **state) {
    (void)state;
    char src[256];
    kernel_src(src, sizeof src, "off!");
    host_report h[HOSTS];
    fleet(src, "0", HOSTS, h);
    uint64_t compiles = 0;
    for (int i = 0; i < HOSTS; i++) {
        assert_int_equal(h[i].rc, KC_OK);
        assert_true(h[i].entry_ok);
        assert_int_equal(h[i].ls.taken + h[i].ls.waits, 0);
        compiles += h[i].compiles;
    }
    fprintf(stderr, "leases off: %llu compiles for %d hosts\n", (unsigned long long)compiles, HOSTS);
    assert_true(compiles > 1); /* what the leases save (it could in principle be 1: then this test fails) */
}

/* A command to the test's redis-server (hiredis): its reply, or NULL. */
static redisReply *cmd(const char *fmt, ...) {
    struct timeval tv = {2, 0};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    if (!rc || rc->err) {
        if (rc) redisFree(rc);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *rep = redisvCommand(rc, fmt, ap);
    va_end(ap);
    redisFree(rc);
    return rep;
}

/* The key `src` compiles to, from a host without the remote (a compile of its own). */
static void key_of_src(const char *src, char *hex) {
    char *dir = kct_tmpdir("leasek");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_graph_desc *d = graph_of(src);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    memcpy(hex, info.key, KC_KEY_HEX_LEN + 1);
    kc_graph_desc_free(d);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

/* How many EXISTS the server has answered (a waiter polls the entry with it, only while it waits). */
static long long exists_calls(void) {
    redisReply *rep = cmd("INFO commandstats");
    long long n = -1;
    const char *p = rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "cmdstat_exists:calls=") : NULL;
    if (rep && rep->type == REDIS_REPLY_STRING) n = p ? strtoll(p + 21, NULL, 10) : 0;
    if (rep) freeReplyObject(rep);
    return n;
}

/* The dead holder's lease: expired once the waiter is seen waiting (polling), never on a timer. */
typedef struct expirer {
    char key[128];
    long long base;
    int expired;
} expirer;

static void *expire_when_waited(void *arg) {
    expirer *x = arg;
    for (int i = 0; i < 6000 && !x->expired; i++) { /* 60 s at most: then the waiter compiles past its lease */
        long long n = exists_calls();
        if (n > x->base) {
            redisReply *rep = cmd("PEXPIRE %s 1", x->key);
            x->expired = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
            if (rep) freeReplyObject(rep);
            break;
        }
        usleep(10000);
    }
    return NULL;
}

static void test_dead_holder(void **state) {
    (void)state;
    char src[256], hex[KC_KEY_HEX_LEN + 1];
    kernel_src(src, sizeof src, "dead holder");
    key_of_src(src, hex);
    /* a holder that died holding it: its lease stays until Redis expires it (here: once the waiter waits) */
    expirer x = {{0}, 0, 0};
    snprintf(x.key, sizeof x.key, "kcache:v1:lease:%s.sm_90", hex);
    redisReply *rep = cmd("SET %s dead-host:1:0 NX PX 120000", x.key);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    x.base = exists_calls();
    assert_true(x.base >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, expire_when_waited, &x), 0);
    setenv("KCACHE_REMOTE_LEASE_MS", "100000", 1);
    host_report h = host_run(r.url, src, -1, -1);
    unsetenv("KCACHE_REMOTE_LEASE_MS");
    pthread_join(th, NULL);
    assert_true(x.expired); /* the waiter was seen waiting, and the lease then ended */
    assert_int_equal(h.rc, KC_OK);
    assert_int_equal(h.source, KC_FROM_COMPILE);
    assert_int_equal(h.misses, 1);
    assert_int_equal(h.ls.waits, 1);              /* it found the dead holder's lease and waited */
    assert_int_equal(h.ls.wait_compiles, 1);      /* the lease ended without the entry: it compiled */
    assert_int_equal(h.ls.taken, 1);              /* under a lease of its own */
    assert_true(h.ls.wait_us < 100000 * 1000ull); /* within its lease: it compiled once the lease ended */
    /* and its entry reached the remote before it released its lease, which it did */
    rep = cmd("EXISTS kcache:v1:%s.sm_90", hex);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 1);
    freeReplyObject(rep);
    rep = cmd("EXISTS kcache:v1:lease:%s.sm_90", hex);
    assert_non_null(rep);
    assert_int_equal(rep->integer, 0);
    freeReplyObject(rep);
}

/* The entry a waiter waits for arrives, and is refused (bytes that are no entry): once the waiter is seen
 * waiting, the value is planted under the entry's name. */
typedef struct planter {
    char key[128];
    long long base;
    int planted;
} planter;

static void *plant_when_waited(void *arg) {
    planter *x = arg;
    for (int i = 0; i < 6000 && !x->planted; i++) { /* 60 s at most: then the waiter compiles past its lease */
        if (exists_calls() > x->base) {
            redisReply *rep = cmd("SET %s not-an-entry", x->key);
            x->planted = rep && rep->type == REDIS_REPLY_STATUS;
            if (rep) freeReplyObject(rep);
            break;
        }
        usleep(10000);
    }
    return NULL;
}

/* Strict (KCACHE_STRICT): a remote entry refused after a lease wait is the lookup's error, as it is when the
 * lookup's own remote read refuses it — never compiled over in silence. */
static void test_strict_refused_after_wait(void **state) {
    (void)state;
    char src[256], hex[KC_KEY_HEX_LEN + 1];
    kernel_src(src, sizeof src, "strict after a wait");
    key_of_src(src, hex);
    planter x = {{0}, 0, 0};
    snprintf(x.key, sizeof x.key, "kcache:v1:%s.sm_90", hex);
    redisReply *rep = cmd("SET kcache:v1:lease:%s.sm_90 other-host:1:0 NX PX 120000", hex);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    x.base = exists_calls();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, plant_when_waited, &x), 0);
    setenv("KCACHE_REMOTE_LEASE_MS", "100000", 1);
    open_flags = KC_OPEN_STRICT;
    host_report h = host_run(r.url, src, -1, -1);
    open_flags = 0;
    unsetenv("KCACHE_REMOTE_LEASE_MS");
    pthread_join(th, NULL);
    assert_true(x.planted);
    assert_int_equal(h.ls.waits, 1);
    assert_true(h.rc == KC_ECORRUPT || h.rc == KC_EUNTRUSTED); /* refused, as the plain remote read says */
    assert_int_equal(h.compiles, 0);
    rep = cmd("DEL kcache:v1:lease:%s.sm_90", hex);
    if (rep) freeReplyObject(rep);
}

static void test_remote_error_compiles(void **state) {
    (void)state;
    /* a user who may read and write entries (names start with hex) but not lease keys */
    redisReply *rep = cmd("ACL SETUSER nolease on >pw-lease ~kcache:v1:[0-9a-f]* +@all");
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    char url[128], src[256];
    snprintf(url, sizeof url, "redis://nolease:pw-lease@127.0.0.1:%d/0", r.port);
    kernel_src(src, sizeof src, "remote error");
    setenv("KCACHE_REMOTE_LEASE_MS", "8000", 1);
    host_report h = host_run(url, src, -1, -1);
    unsetenv("KCACHE_REMOTE_LEASE_MS");
    assert_int_equal(h.rc, KC_OK);
    assert_int_equal(h.source, KC_FROM_COMPILE);
    assert_int_equal(h.ls.taken + h.ls.waits, 0); /* no lease: the refusal was an error, not a holder */
    assert_int_equal(h.misses, 1);
}

/* How many NOPERM errors the server has answered (INFO errorstats): each refused lease command is one. */
static long long noperm_count(void) {
    redisReply *rep = cmd("INFO errorstats");
    long long n = -1;
    const char *p = rep && rep->type == REDIS_REPLY_STRING ? strstr(rep->str, "errorstat_NOPERM:count=") : NULL;
    if (rep && rep->type == REDIS_REPLY_STRING) n = p ? strtoll(p + 23, NULL, 10) : 0;
    if (rep) freeReplyObject(rep);
    return n;
}

/* One lookup of `src` through the open cache `c`: its source, and the remote hits and failures it counted. */
static int lookup_in(kc_cache *c, const char *src, uint64_t *remote_hits, uint64_t *remote_failed) {
    kc_stats s0, s;
    kc_cache_stats(c, &s0);
    kc_graph_desc *d = graph_of(src);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_non_null(d);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_graph_desc_free(d);
    kc_cache_stats(c, &s);
    *remote_hits = s.v[KC_STAT_REMOTE_HITS] - s0.v[KC_STAT_REMOTE_HITS];
    *remote_failed = s.v[KC_STAT_REMOTE_TIMEOUTS] + s.v[KC_STAT_REMOTE_ERRORS] + s.v[KC_STAT_REMOTE_SKIPPED] -
                     s0.v[KC_STAT_REMOTE_TIMEOUTS] - s0.v[KC_STAT_REMOTE_ERRORS] - s0.v[KC_STAT_REMOTE_SKIPPED];
    return info.source;
}

/* A user the server refuses leases to (an ACL without the lease keys, or without @scripting for the release):
 * the refusal is no fault of the remote, whose breaker stays closed (the next lookup is a remote hit), and
 * leases stay off on it after the first refusal (one NOPERM for two cold keys). */
static void refused_lease(const char *acl, int variant) {
    redisReply *rep = cmd(acl);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    char src[3][256], url[128], tag[256];
    for (int j = 0; j < 3; j++) { /* keys of this test's own: cold (0, 2), published by another host (1) */
        memset(tag, 'x', sizeof tag);
        tag[100 + 10 * variant + j] = '\0';
        kernel_src(src[j], sizeof src[j], tag);
    }
    setenv("KCACHE_REMOTE_LEASE_MS", "8000", 1);
    host_report pub = host_run(r.url, src[1], -1, -1);
    assert_int_equal(pub.rc, KC_OK);
    snprintf(url, sizeof url, "redis://refused:pw-refused@127.0.0.1:%d/0", r.port);
    char *dir = kct_tmpdir("leaser");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir, o.remote = url;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    long long before = noperm_count();
    uint64_t hits, failed;
    assert_int_equal(lookup_in(c, src[0], &hits, &failed), KC_FROM_COMPILE);
    assert_int_equal(failed, 0);
    assert_int_equal(lookup_in(c, src[1], &hits, &failed), KC_FROM_REMOTE); /* the breaker is closed */
    assert_int_equal(hits, 1);
    assert_int_equal(failed, 0);
    assert_int_equal(lookup_in(c, src[2], &hits, &failed), KC_FROM_COMPILE);
    assert_int_equal(noperm_count() - before, 1); /* one refusal: no lease asked for the second cold key */
    kc_lease_stats ls = KC_LEASE_STATS_INIT;
    kc_cache_lease_stats(c, &ls);
    assert_int_equal(ls.waits, 0);
    kc_cache_close(c);
    unsetenv("KCACHE_REMOTE_LEASE_MS");
    kct_rmtree(dir);
    free(dir);
}

static void test_refused_lease_keys(void **state) {
    (void)state;
    refused_lease("ACL SETUSER refused reset on >pw-refused ~kcache:v1:[0-9a-f]* +@all", 0);
}

static void test_refused_scripting(void **state) {
    (void)state; /* the lease is taken (SET), its release (EVAL) refused */
    refused_lease("ACL SETUSER refused reset on >pw-refused ~kcache:v1:* +@all -@scripting", 1);
}

int main(void) {
    if (!kct_have_redis()) return KC_SKIP_CODE;
    seed = (unsigned)time(NULL) ^ (unsigned)getpid() << 16;
    if (kct_redis_start(&r, 0) != 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sixteen_hosts_one_compile),
        cmocka_unit_test(test_sixteen_hosts_no_leases),
        cmocka_unit_test(test_dead_holder),
        cmocka_unit_test(test_remote_error_compiles),
        cmocka_unit_test(test_strict_refused_after_wait),
        cmocka_unit_test(test_refused_lease_keys),
        cmocka_unit_test(test_refused_scripting),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    kct_redis_stop(&r, SIGTERM);
    return rc;
}
