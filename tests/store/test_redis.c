/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis.c (label redis) — the remote tier against a real redis-server started here on
 * a free loopback port: the backend conformance suite; two cache directories (two hosts)
 * sharing one Redis; Redis frozen (SIGSTOP), killed and restarted mid-run — lookups never
 * fail, each costs at most about one deadline, and the breaker closes again; an entry
 * altered in Redis with its checksums recomputed is refused by its MAC and never used;
 * a listener that accepts and never answers holds to the deadline; get_many: present, absent,
 * empty and repeated names in order in one MGET (counted by the server's commandstats), its
 * limits (KC_IMAGES_MAX names, names checked before sending, the value cap), a dead server
 * (an error, the breaker open, then closed again), every allocation failing in turn; and the
 * tiers fetching a graph's images through it in one round trip, the MAC checked on each.
 * Skipped (77) without redis-server.
 */
#include "kcache.h"
#include "helpers.h"
#include "conformance.h"
#include "redis_server.h"

#include "common/internal.h"
#include "store/local.h"
#include "store/name.h"
#include "store/tiers.h"

static const char MAC_KEY[] = "a fleet secret of 32 bytes......";

static double ms_since(uint64_t t0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)t0) / 1e6;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static kc_cache *open_remote(const char *dir, const char *url, unsigned deadline_ms, int with_key) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = url;
    o.remote_config.deadline_ms = deadline_ms;
    o.remote_config.connect_ms = deadline_ms < 100 ? deadline_ms : 100;
    o.remote_config.backoff_ms = 100;
    o.remote_config.backoff_max_ms = 400;
    if (with_key) o.hmac_key = MAC_KEY, o.hmac_key_len = sizeof MAC_KEY - 1;
    kc_cache *c;
    int rc = kc_cache_open(&c, &o);
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

static kc_graph_desc *softmax(uint64_t globals) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    kc_graph_set_globals(d, globals);
    return d;
}

static uint64_t stat_of(kc_cache *c, kc_stat id) {
    kc_stats s;
    assert_int_equal(kc_cache_stats(c, &s), KC_OK);
    return s.v[id];
}

static void test_conformance(void **state) {
    (void)state;
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, r.url, NULL), KC_OK);
    kcc_conformance(b);
    /* Values over the cap are refused on the way out. */
    kc_redis_config cfg = {0, 0, 0, 0, 1000, 0};
    kc_store_backend *small;
    assert_int_equal(kc_store_redis_open(&small, r.url, &cfg), KC_OK);
    uint8_t *v = kcc_value(2000, 3);
    assert_int_equal(small->put(small, KCC_NAME(0), v, 2000), KC_EINVAL);
    assert_int_equal(b->put(b, KCC_NAME(0), v, 2000), KC_OK);
    void *d;
    size_t len;
    assert_int_equal(small->get(small, KCC_NAME(0), &d, &len), KC_EIO); /* and on the way in */
    free(v);
    small->free(small);
    /* Bad URLs are clear errors. */
    kc_store_backend *x;
    assert_int_equal(kc_store_redis_open(&x, "http://h:1", NULL), KC_EINVAL);
    assert_int_equal(kc_store_redis_open(&x, "redis://h:99999", NULL), KC_EINVAL);
    assert_int_equal(kc_store_redis_open(&x, "redis://:pw@h:1/x", NULL), KC_EINVAL);
    assert_int_equal(kc_store_redis_open(&x, "redis://:secret@h:7/2", NULL), KC_OK);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(x, &st), KC_OK);
    assert_string_equal(st.url, "redis://:***@h:7/2"); /* the password is never shown */
    x->free(x);
    b->free(b);
    kct_redis_stop(&r, SIGTERM);
}

static void test_two_hosts_share_one_redis(void **state) {
    (void)state;
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char *da = kct_tmpdir("hostA"), *db = kct_tmpdir("hostB");
    kc_cache *a = open_remote(da, r.url, 500, 0), *b = open_remote(db, r.url, 500, 0);
    kc_graph_desc *d = softmax(0x51);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(a, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_cache_remote_flush(a), KC_OK);
    /* Every object A stored (graph entry, image, unit record: [Note: two levels]) went remote once. */
    assert_int_equal(kct_count_graphs(da), 1);
    assert_int_equal(stat_of(a, KC_STAT_REMOTE_PUTS), kct_count_files(da, ".kce"));
    assert_int_equal(kc_graph_compile(b, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE); /* the second host compiles nothing */
    assert_int_equal(stat_of(b, KC_STAT_COMPILES), 0);
    assert_int_equal(stat_of(b, KC_STAT_REMOTE_HITS), 1);
    assert_int_equal(kc_graph_compile(b, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK); /* the remote hit was written to local */
    /* The same bytes on both hosts. */
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/v1/%.2s/%s.sm_90.kce", da, info.key, info.key);
    snprintf(pb, sizeof pb, "%s/v1/%.2s/%s.sm_90.kce", db, info.key, info.key);
    size_t la, lb;
    uint8_t *ba = kct_read(pa, &la), *bb = kct_read(pb, &lb);
    assert_non_null(ba);
    assert_non_null(bb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba), free(bb);
    kc_graph_desc_free(d);
    kc_cache_close(a), kc_cache_close(b);
    kct_redis_stop(&r, SIGTERM);
    kct_rmtree(da), kct_rmtree(db);
    free(da), free(db);
}

/* 30 lookups of absent keys: all misses, none slower than the deadline plus slack. */
static void lookups_stay_bounded(kc_cache *c, unsigned deadline_ms, int round) {
    double worst = 0;
    for (int i = 0; i < 30; i++) {
        kc_key k = kct_key("outage", round * 100 + i);
        kc_entry *e;
        uint64_t t0 = now_ns();
        assert_int_equal(kc_cache_get(c, &k, "sm_90", &e), KC_MISS);
        double ms = ms_since(t0);
        if (ms > worst) worst = ms;
        usleep(20000);
    }
    if (worst > deadline_ms + 250) fail_msg("a lookup took %.0f ms with a %u ms deadline", worst, deadline_ms);
}

static void test_outage_costs_a_bounded_delay(void **state) {
    (void)state;
    enum { DEADLINE = 200 };
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char *da = kct_tmpdir("outage");
    kc_cache *c = open_remote(da, r.url, DEADLINE, 0);
    /* Frozen: connections are accepted by the kernel, never answered. */
    kill(r.pid, SIGSTOP);
    lookups_stay_bounded(c, DEADLINE, 0);
    assert_true(stat_of(c, KC_STAT_REMOTE_TIMEOUTS) >= 1);
    assert_true(stat_of(c, KC_STAT_REMOTE_SKIPPED) >= 1); /* most lookups skipped it: the breaker */
    /* A graph still compiles and is stored locally while the remote is out. */
    kc_graph_desc *d = softmax(0x52);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    kill(r.pid, SIGCONT);
    /* Killed: connections are refused. */
    int port = r.port;
    kct_redis_stop(&r, SIGKILL);
    lookups_stay_bounded(c, DEADLINE, 1);
    assert_true(stat_of(c, KC_STAT_REMOTE_ERRORS) >= 1);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    /* Restarted on the same port: after a window the breaker closes and the remote is used. */
    assert_int_equal(kct_redis_start(&r, port), 0);
    kc_remote_state st;
    int closed = 0;
    for (int i = 0; i < 100 && !closed; i++) { /* up to 5 s; the window is at most 400 ms */
        usleep(50000);
        closed = kc_cache_remote_ping(c) == KC_OK;
    }
    assert_true(closed);
    assert_int_equal(kc_cache_remote_state(c, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_CLOSED);
    kc_graph_desc *d2 = softmax(0x53);
    uint64_t puts = stat_of(c, KC_STAT_REMOTE_PUTS);
    size_t objects = kct_count_files(da, ".kce");
    assert_int_equal(kc_graph_compile(c, d2, "sm_90", &info), KC_OK);
    kc_cache_remote_flush(c);
    /* d2's graph entry (its one new object) and, ahead of it, the image and unit record it shares with d
     * that were stored while the remote was out: offered again so the remote never holds d2 without them. */
    assert_int_equal(kct_count_files(da, ".kce") - objects, 1);
    assert_int_equal(stat_of(c, KC_STAT_REMOTE_PUTS), puts + 3);
    char *db = kct_tmpdir("outage2");
    kc_cache *c2 = open_remote(db, r.url, DEADLINE, 0);
    assert_int_equal(kc_graph_compile(c2, d2, "sm_90", &info), KC_OK);
    /* d2 shares d's image and unit record, stored while the remote was out (their remote writes
     * dropped): another host can use d2 only if they reached the remote with it. */
    assert_int_equal(info.source, KC_FROM_REMOTE);
    kc_cache_close(c2);
    kc_graph_desc_free(d);
    kc_graph_desc_free(d2);
    kc_cache_close(c);
    kct_redis_stop(&r, SIGTERM);
    kct_rmtree(da), kct_rmtree(db);
    free(da), free(db);
}

static redisContext *raw(int port) {
    redisContext *x = redisConnect("127.0.0.1", port);
    assert_non_null(x);
    assert_int_equal(x->err, 0);
    return x;
}

static void test_altered_entry_is_refused_by_its_mac(void **state) {
    (void)state;
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char *da = kct_tmpdir("macA"), *db = kct_tmpdir("macB");
    kc_cache *a = open_remote(da, r.url, 500, 1);
    kc_graph_desc *d = softmax(0x54);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(a, d, "sm_90", &info), KC_OK);
    kc_cache_remote_flush(a);
    redisContext *x = raw(r.port);
    redisReply *rep = redisCommand(x, "GET kcache:v1:%s.sm_90", info.key);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_int_equal(kc_entry_mac_check(rep->str, rep->len, MAC_KEY, sizeof MAC_KEY - 1), KC_OK);
    /* The attacker's entry: same key and variant, other kernels, every checksum valid. */
    kc_entry *genuine, *forged;
    assert_int_equal(kc_entry_decode(&genuine, rep->str, rep->len), KC_OK);
    freeReplyObject(rep);
    assert_int_equal(kc_entry_new(&forged, kc_entry_key(genuine), "sm_90"), KC_OK);
    for (int t = KC_SECTION_FORWARD; t <= KC_SECTION_RUNTIME_META; t++) {
        const void *s;
        size_t n;
        if (kc_entry_section(genuine, (kc_section_type)t, &s, &n) != KC_OK) continue;
        uint8_t *copy = malloc(n + 1);
        memcpy(copy, s, n);
        if (t == KC_SECTION_KERNELS && n > 200) copy[n - 100] ^= 0x40; /* a bit of the cubin */
        assert_int_equal(kc_entry_set_section(forged, (kc_section_type)t, copy, n), KC_OK);
        free(copy);
    }
    void *fb;
    size_t fl;
    assert_int_equal(kc_entry_encode(forged, &fb, &fl), KC_OK);
    kc_entry *check;
    assert_int_equal(kc_entry_decode(&check, fb, fl), KC_OK); /* valid to every checksum */
    kc_entry_free(check);
    /* Three forgeries: no MAC; a MAC under another key; the genuine MAC bytes appended. */
    static const char WRONG[] = "not the fleet's key, 32 bytes...";
    for (int f = 0; f < 3; f++) {
        void *v = malloc(fl);
        memcpy(v, fb, fl);
        size_t vl = fl;
        if (f == 1) assert_int_equal(kc_entry_seal(&v, &vl, WRONG, sizeof WRONG - 1), KC_OK);
        if (f == 2) {
            assert_int_equal(kc_entry_seal(&v, &vl, WRONG, sizeof WRONG - 1), KC_OK);
            redisReply *g = redisCommand(x, "GET kcache:v1:%s.sm_90", info.key);
            if (f == 2 && g->type == REDIS_REPLY_STRING && g->len > 32)
                memcpy((uint8_t *)v + vl - 32, g->str + g->len - 32, 32);
            freeReplyObject(g);
        }
        rep = redisCommand(x, "SET kcache:v1:%s.sm_90 %b", info.key, v, vl);
        freeReplyObject(rep);
        kct_rmtree(db);
        kc_cache *b = open_remote(db, r.url, 500, 1);
        uint64_t rejected = stat_of(b, KC_STAT_MAC_REJECTED);
        assert_int_equal(kc_graph_compile(b, d, "sm_90", &info), KC_OK);
        assert_int_equal(info.source, KC_FROM_COMPILE); /* refused, so compiled here: never the forgery */
        assert_int_equal(stat_of(b, KC_STAT_MAC_REJECTED), rejected + 1);
        kc_entry *mine;
        assert_int_equal(kc_cache_peek(b, kc_entry_key(genuine), "sm_90", &mine), KC_OK);
        const void *s1, *s2;
        size_t n1, n2;
        kc_entry_section(mine, KC_SECTION_KERNELS, &s1, &n1);
        kc_entry_section(genuine, KC_SECTION_KERNELS, &s2, &n2);
        assert_int_equal(n1, n2);
        assert_memory_equal(s1, s2, n1);
        kc_entry_free(mine);
        kc_cache_remote_flush(b); /* b republished its genuine compile over the forgery */
        kc_cache_close(b);
        free(v);
    }
    free(fb);
    kc_entry_free(genuine);
    kc_entry_free(forged);
    redisFree(x);
    kc_graph_desc_free(d);
    kc_cache_close(a);
    kct_redis_stop(&r, SIGTERM);
    kct_rmtree(da), kct_rmtree(db);
    free(da), free(db);
}

static void test_silent_listener_holds_the_deadline(void **state) {
    (void)state;
    enum { DEADLINE = 150 };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 16), 0); /* accepts (the kernel completes handshakes), never answers */
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", ntohs(sa.sin_port));
    char *da = kct_tmpdir("silent");
    kc_cache *c = open_remote(da, url, DEADLINE, 0);
    kc_key k = kct_key("silent", 1);
    kc_entry *e;
    uint64_t t0 = now_ns();
    assert_int_equal(kc_cache_get(c, &k, "sm_90", &e), KC_MISS);
    double ms = ms_since(t0);
    if (ms < DEADLINE - 20 || ms > DEADLINE + 250) fail_msg("first lookup took %.0f ms, deadline %d ms", ms, DEADLINE);
    assert_int_equal(stat_of(c, KC_STAT_REMOTE_TIMEOUTS), 1);
    t0 = now_ns();
    assert_int_equal(kc_cache_get(c, &k, "sm_90", &e), KC_MISS); /* the breaker is open: no wait */
    assert_true(ms_since(t0) < DEADLINE / 2);
    assert_int_equal(stat_of(c, KC_STAT_REMOTE_SKIPPED), 1);
    kc_remote_state st;
    assert_int_equal(kc_cache_remote_state(c, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_OPEN);
    /* A put goes local at once; its remote write is dropped (counted), and close does not hang. */
    kc_graph_desc *d = softmax(0x55);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    t0 = now_ns();
    kc_cache_remote_flush(c);
    assert_true(ms_since(t0) < DEADLINE + 250);
    assert_true(stat_of(c, KC_STAT_REMOTE_DROPPED) + stat_of(c, KC_STAT_REMOTE_TIMEOUTS) >= 2);
    kc_graph_desc_free(d);
    kc_cache_close(c);
    close(fd);
    kct_rmtree(da);
    free(da);
}

/* ---- get_many ---- */

/* Calls of `cmd` ("mget") since the last CONFIG RESETSTAT, and in *data those of every command
 * but CONFIG and INFO (the test's own), from the server's INFO commandstats. */
static long calls_of(redisContext *x, const char *cmd, long *data) {
    redisReply *r = redisCommand(x, "INFO commandstats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long mine = 0;
    *data = 0;
    for (const char *p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
        char name[64];
        long calls;
        if (sscanf(p, "cmdstat_%63[^:]:calls=%ld", name, &calls) != 2) continue;
        name[strcspn(name, "|")] = '\0'; /* Redis 7 names subcommands "config|resetstat" */
        if (strcmp(name, cmd) == 0) mine = calls;
        /* not counted: this test's own, and the ECHO each command carries in its round trip ([Note: replies in step]) */
        if (strcmp(name, "config") != 0 && strcmp(name, "info") != 0 && strcmp(name, "echo") != 0) *data += calls;
    }
    freeReplyObject(r);
    return mine;
}

static void reset_stats(redisContext *x) {
    redisReply *r = redisCommand(x, "CONFIG RESETSTAT");
    assert_non_null(r);
    freeReplyObject(r);
}

/* The store name of label i's object of `variant`. */
static void many_name(int i, const char *variant, char out[KC_NAME_MAX + 1]) {
    kc_key k = kct_key("many", i);
    kc_store_name(&k, variant, out);
}

static char junk; /* what out[] holds before a call: every slot must be overwritten */

static void fill_junk(void **out, size_t *lens, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = &junk, lens[i] = 12345;
}

static void assert_all_null(void **out, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (out[i]) fail_msg("out[%zu] is not NULL after a failed get_many", i);
}

static void test_get_many_in_one_round_trip(void **state) {
    (void)state;
    enum { N = 6 };
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, r.url, NULL), KC_OK);
    assert_int_equal(b->version, KC_STORE_BACKEND_VERSION); /* 4: get_many (3), provenance (4) */
    assert_non_null(b->get_many);
    char names[N][KC_NAME_MAX + 1];
    const char *np[KC_IMAGES_MAX + 1];
    uint8_t *vals[N];
    size_t sizes[N];
    int present[N];
    for (int i = 0; i < N; i++) {
        many_name(i, i % 2 ? "unit" : "img", names[i]);
        sizes[i] = i == 3 ? 0 : 100 + 37 * (size_t)i; /* 3: an empty value, present */
        vals[i] = kcc_value(sizes[i] ? sizes[i] : 1, (uint8_t)i);
        present[i] = i != 1 && i != 4; /* 1, 4: absent */
        if (present[i]) assert_int_equal(b->put(b, names[i], vals[i], sizes[i]), KC_OK);
    }
    redisContext *x = raw(r.port);
    reset_stats(x);
    long data;
    void *out[KC_IMAGES_MAX + 1];
    size_t lens[KC_IMAGES_MAX + 1];
    for (int i = 0; i < N; i++) np[i] = names[i];
    fill_junk(out, lens, N);
    assert_int_equal(b->get_many(b, np, N, out, lens), KC_OK);
    for (int i = 0; i < N; i++) {
        if (!present[i]) {
            if (out[i]) fail_msg("absent name %d came back with %zu bytes", i, lens[i]);
            continue;
        }
        if (!out[i]) fail_msg("present name %d came back absent", i);
        assert_int_equal(lens[i], sizes[i]);
        if (sizes[i]) assert_memory_equal(out[i], vals[i], sizes[i]);
        free(out[i]);
    }
    assert_int_equal(calls_of(x, "mget", &data), 1); /* one round trip: one MGET ... */
    assert_int_equal(data, 1);                       /* ... and nothing else (no GET per name) */
    /* KC_IMAGES_MAX names, repeats included, still one command; values in order. */
    for (int i = 0; i < KC_IMAGES_MAX; i++) np[i] = names[(i * 5) % N];
    fill_junk(out, lens, KC_IMAGES_MAX);
    assert_int_equal(b->get_many(b, np, KC_IMAGES_MAX, out, lens), KC_OK);
    for (int i = 0; i < KC_IMAGES_MAX; i++) {
        int j = (i * 5) % N;
        assert_true((out[i] != NULL) == present[j]);
        if (out[i]) assert_int_equal(lens[i], sizes[j]);
        if (out[i] && sizes[j]) assert_memory_equal(out[i], vals[j], sizes[j]);
        free(out[i]);
    }
    assert_int_equal(calls_of(x, "mget", &data), 2);
    /* One more name, or one bad name among good ones: KC_EINVAL, and nothing is sent. */
    np[KC_IMAGES_MAX] = names[0];
    fill_junk(out, lens, KC_IMAGES_MAX + 1);
    assert_int_equal(b->get_many(b, np, KC_IMAGES_MAX + 1, out, lens), KC_EINVAL);
    assert_all_null(out, KC_IMAGES_MAX + 1);
    static const char *const bad[] = {"../../etc/passwd", "0123456789ABCDEF0123456789abcdef.img",
                                      "0123456789abcdef0123456789abcdef.img kcache:v1:x", NULL};
    for (int k = 0; k < 4; k++) {
        const char *two[] = {names[0], bad[k]};
        fill_junk(out, lens, 2);
        assert_int_equal(b->get_many(b, two, 2, out, lens), KC_EINVAL);
        assert_all_null(out, 2);
    }
    assert_int_equal(calls_of(x, "mget", &data), 2);
    assert_int_equal(data, 2);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_CLOSED); /* a caller's mistake is not the server's */
    /* A value over the cap fails the whole call, as get does (KC_EIO); nothing comes back. */
    uint8_t *big = kcc_value(2000, 9);
    assert_int_equal(b->put(b, names[4], big, 2000), KC_OK);
    kc_redis_config cfg = {0, 0, 0, 0, 1000, 0};
    kc_store_backend *small;
    assert_int_equal(kc_store_redis_open(&small, r.url, &cfg), KC_OK);
    for (int i = 0; i < N; i++) np[i] = names[i];
    fill_junk(out, lens, N);
    assert_int_equal(small->get_many(small, np, N, out, lens), KC_EIO);
    assert_all_null(out, N);
    fill_junk(out, lens, 4);
    assert_int_equal(small->get_many(small, np, 4, out, lens), KC_EUNAVAILABLE); /* its breaker opened */
    assert_all_null(out, 4);
    small->free(small);
    free(big);
    for (int i = 0; i < N; i++) free(vals[i]);
    redisFree(x);
    b->free(b);
    kct_redis_stop(&r, SIGTERM);
}

static void test_get_many_dead_server(void **state) {
    (void)state;
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    kc_redis_config cfg = {100, 300, 100, 400, 0, 0};
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, r.url, &cfg), KC_OK);
    char names[3][KC_NAME_MAX + 1];
    const char *np[3];
    for (int i = 0; i < 3; i++) many_name(10 + i, "img", names[i]), np[i] = names[i];
    uint8_t *v = kcc_value(500, 5);
    assert_int_equal(b->put(b, names[1], v, 500), KC_OK); /* a pooled connection to a server about to die */
    int port = r.port;
    kct_redis_stop(&r, SIGKILL);
    void *out[3];
    size_t lens[3];
    fill_junk(out, lens, 3);
    int rc = b->get_many(b, np, 3, out, lens);
    if (rc != KC_EIO && rc != KC_ETIMEOUT) fail_msg("get_many of a dead server answered %d", rc);
    assert_all_null(out, 3);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_OPEN);
    assert_int_equal(st.failures, 1);
    uint64_t t0 = now_ns();
    fill_junk(out, lens, 3);
    assert_int_equal(b->get_many(b, np, 3, out, lens), KC_EUNAVAILABLE); /* skipped at once */
    assert_true(ms_since(t0) < 50);
    assert_all_null(out, 3);
    /* Back on the same port: after its window the breaker lets a call through and closes. */
    assert_int_equal(kct_redis_start(&r, port), 0);
    rc = KC_EUNAVAILABLE;
    for (int i = 0; i < 100 && rc == KC_EUNAVAILABLE; i++) { /* the window is at most 500 ms */
        usleep(20000);
        rc = b->get_many(b, np, 3, out, lens);
    }
    assert_int_equal(rc, KC_OK);
    assert_all_null(out, 3); /* a fresh server holds nothing */
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_CLOSED);
    free(v);
    b->free(b);
    kct_redis_stop(&r, SIGTERM);
}

static void test_get_many_allocation_failures(void **state) {
    (void)state;
    enum { N = 3 };
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, r.url, NULL), KC_OK);
    char names[N][KC_NAME_MAX + 1];
    const char *np[N];
    uint8_t *vals[N];
    for (int i = 0; i < N; i++) {
        many_name(20 + i, "img", names[i]), np[i] = names[i];
        vals[i] = kcc_value(300 + (size_t)i, (uint8_t)i);
        assert_int_equal(b->put(b, names[i], vals[i], 300 + (size_t)i), KC_OK);
    }
    /* Fail the 1st allocation, then the 2nd, …: KC_ENOMEM with nothing out (and, under ASan,
     * nothing leaked) until every one succeeds. */
    void *out[N];
    size_t lens[N];
    int rc = KC_ENOMEM, nth = 0;
    while (rc == KC_ENOMEM && nth < 50) {
        fill_junk(out, lens, N);
        kc_alloc_fail_at(++nth, false);
        rc = b->get_many(b, np, N, out, lens);
        kc_alloc_fail_at(0, false);
        if (rc == KC_ENOMEM) assert_all_null(out, N);
    }
    assert_int_equal(rc, KC_OK);
    assert_true(nth > N); /* the request's buffer and each value's copy were failed in turn */
    for (int i = 0; i < N; i++) {
        assert_int_equal(lens[i], 300 + (size_t)i);
        assert_memory_equal(out[i], vals[i], lens[i]);
        free(out[i]);
        free(vals[i]);
    }
    b->free(b);
    kct_redis_stop(&r, SIGTERM);
}

/* ---- the tiers over redis: a graph's images in one round trip ---- */

static int64_t tcounts[KC_STAT_COUNT];
static void tsink(void *ctx, int shard, kc_stat id, int64_t n) {
    (void)ctx;
    (void)shard;
    __atomic_add_fetch(&tcounts[id], n, __ATOMIC_RELAXED);
}

/* Image i (300 bytes of a pretend cubin for sm_90): its reference, and its object's encoded bytes,
 * sealed with the fleet's MAC key when `seal`. */
static void *image_object(int i, int seal, kc_image_ref *ref, size_t *len) {
    uint8_t bytes[300];
    for (size_t j = 0; j < sizeof bytes; j++) bytes[j] = (uint8_t)(i * 31 + (int)j);
    assert_int_equal(kc_image_ref_make(ref, "sm_90", 0, bytes, sizeof bytes), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, ref, bytes), KC_OK);
    void *d;
    assert_int_equal(kc_entry_encode(e, &d, len), KC_OK);
    if (seal) assert_int_equal(kc_entry_seal(&d, len, MAC_KEY, sizeof MAC_KEY - 1), KC_OK);
    kc_entry_free(e);
    return d;
}

static void test_tiers_fetch_images_in_one_round_trip(void **state) {
    (void)state;
    enum { N = 5 }; /* 0, 3: genuine; 1: altered after sealing; 2: absent; 4: never sealed */
    memset(tcounts, 0, sizeof tcounts);
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char *dir = kct_tmpdir("tiersmany");
    kc_tiers_config tc = {0, (const uint8_t *)MAC_KEY, sizeof MAC_KEY - 1, tsink, NULL, NULL};
    kc_tiers *t;
    assert_int_equal(kc_tiers_new(&t, &tc), KC_OK);
    kc_redis_config cfg = {100, 300, 100, 400, 0, 0};
    kc_store_backend *rb;
    assert_int_equal(kc_store_redis_open(&rb, r.url, &cfg), KC_OK);
    assert_int_equal(kc_tiers_add(t, rb, 0), KC_OK);
    kc_local *local;
    assert_int_equal(kc_local_open(&local, dir, 0, 0), KC_OK);
    assert_int_equal(kc_tiers_add(t, kc_local_backend(local), KC_TIER_LOCAL), KC_OK);
    kc_image_ref refs[N];
    kc_key keys[N];
    void *objs[N];
    size_t olen[N];
    char names[N][KC_NAME_MAX + 1];
    for (int i = 0; i < N; i++) {
        objs[i] = image_object(i, i != 4, &refs[i], &olen[i]);
        keys[i] = refs[i].id;
        kc_store_name(&keys[i], KC_VARIANT_IMAGE, names[i]);
        if (i == 2) continue;
        uint8_t *v = malloc(olen[i]);
        memcpy(v, objs[i], olen[i]);
        if (i == 1) v[olen[i] / 2] ^= 0x01; /* one bit of the image, after sealing */
        assert_int_equal(rb->put(rb, names[i], v, olen[i]), KC_OK);
        free(v);
    }
    redisContext *x = raw(r.port);
    reset_stats(x);
    kc_entry *outs[N];
    void *raws[N];
    size_t rlens[N];
    assert_int_equal(kc_tiers_get_remote_many(t, keys, KC_VARIANT_IMAGE, N, outs, raws, rlens), 2);
    long data;
    assert_int_equal(calls_of(x, "mget", &data), 1); /* every name in one round trip */
    assert_int_equal(data, 1);
    for (int i = 0; i < N; i++) {
        if (i != 0 && i != 3) {
            if (outs[i] || raws[i]) fail_msg("image %d should have been refused or absent", i);
            continue;
        }
        assert_non_null(outs[i]);
        kc_image_ref got;
        const void *bytes;
        size_t blen;
        assert_int_equal(kc_image_entry_read(outs[i], &refs[i], 1, &got, &bytes, &blen), KC_OK);
        assert_int_equal(blen, 300);
        assert_int_equal(rlens[i], olen[i]); /* the bytes fetched, for the caller to keep locally */
        assert_memory_equal(raws[i], objs[i], olen[i]);
        assert_int_equal(kc_tiers_exists(t, names[i]), 0); /* not written back by the tiers */
        kc_entry_free(outs[i]);
        free(raws[i]);
    }
    assert_int_equal(tcounts[KC_STAT_MAC_REJECTED], 2); /* the altered one and the unsealed one */
    assert_int_equal(tcounts[KC_STAT_CORRUPT], 0);      /* refused by the MAC, never decoded */
    assert_int_equal(tcounts[KC_STAT_REMOTE_ERRORS], 0);
    /* The server gone: nothing found, one failure counted, then the breaker skips it. */
    kct_redis_stop(&r, SIGKILL);
    assert_int_equal(kc_tiers_get_remote_many(t, keys, KC_VARIANT_IMAGE, N, outs, raws, rlens), 0);
    for (int i = 0; i < N; i++) assert_true(!outs[i] && !raws[i]);
    assert_int_equal(tcounts[KC_STAT_REMOTE_ERRORS] + tcounts[KC_STAT_REMOTE_TIMEOUTS], 1);
    assert_int_equal(kc_tiers_get_remote_many(t, keys, KC_VARIANT_IMAGE, N, outs, raws, rlens), 0);
    assert_int_equal(tcounts[KC_STAT_REMOTE_SKIPPED], 1);
    for (int i = 0; i < N; i++) free(objs[i]);
    redisFree(x);
    kc_tiers_free(t);
    kct_rmtree(dir);
    free(dir);
}

int main(void) {
    if (!kct_have_redis()) {
        fprintf(stderr, "skipped: redis-server is not installed (tools/deps.sh installs it)\n");
        return KC_SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance),
        cmocka_unit_test(test_two_hosts_share_one_redis),
        cmocka_unit_test(test_outage_costs_a_bounded_delay),
        cmocka_unit_test(test_altered_entry_is_refused_by_its_mac),
        cmocka_unit_test(test_silent_listener_holds_the_deadline),
        cmocka_unit_test(test_get_many_in_one_round_trip),
        cmocka_unit_test(test_get_many_dead_server),
        cmocka_unit_test(test_get_many_allocation_failures),
        cmocka_unit_test(test_tiers_fetch_images_in_one_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
