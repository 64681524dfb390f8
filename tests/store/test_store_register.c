/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store_register.c — a remote back end registered by a test (kc_store_register, kcache/sys/store.h)
 * serving lookups through the tiers, with no change outside this file: "mem://<name>", an in-memory
 * store defined here, shared by every cache of this process that names it.  Covered: the registry's
 * rules (a duplicate scheme, a bad table, an unknown scheme); a put then a get from a fresh cache whose
 * local directory is empty hits in mem and back-fills local; with two mem tiers a hit in the second
 * back-fills the first; a read-only tier is never written; a failing tier opens only its own breaker;
 * the URL attributes reach the back end; per-tier counters agree with the outcomes and sum to the
 * remote_* counters; kc_options of versions 2 and 3 still open a remote.
 */
#include "kcache.h"
#include "kcache/sys/store.h"
#include "helpers.h"

#include <pthread.h>
#include <time.h>

#define SLOTS 32

/* ---- the in-memory back end ---- */

typedef struct mstore {
    char name[32];
    char keys[SLOTS][128];
    void *data[SLOTS];
    size_t len[SLOTS];
    int n;
    int fail;                /* every call answers this when non-zero */
    int calls, puts;         /* calls that reached it; puts made */
    kc_remote_limits limits; /* what its last open was given */
} mstore;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static mstore stores[16];
static int nstores;

static mstore *store_named(const char *name) {
    for (int i = 0; i < nstores; i++)
        if (strcmp(stores[i].name, name) == 0) return &stores[i];
    if (nstores == 16) return NULL;
    mstore *s = &stores[nstores++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    return s;
}

static int slot(mstore *s, const char *k) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->keys[i], k) == 0) return i;
    return -1;
}

static int m_get(kc_store_backend *b, const char *name, void **out, size_t *len) {
    mstore *s = b->ctx;
    pthread_mutex_lock(&mu);
    s->calls++;
    int i = slot(s, name), rc = s->fail ? s->fail : i < 0 ? KC_MISS : KC_OK;
    if (rc == KC_OK) {
        *out = malloc(s->len[i]);
        memcpy(*out, s->data[i], s->len[i]);
        *len = s->len[i];
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int m_put(kc_store_backend *b, const char *name, const void *data, size_t len) {
    mstore *s = b->ctx;
    pthread_mutex_lock(&mu);
    s->calls++;
    int rc = s->fail;
    if (!rc) {
        int i = slot(s, name);
        if (i < 0 && s->n < SLOTS) i = s->n++, snprintf(s->keys[i], sizeof s->keys[i], "%s", name);
        if (i >= 0) {
            free(s->data[i]);
            s->data[i] = malloc(len);
            memcpy(s->data[i], data, len);
            s->len[i] = len;
            s->puts++;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static int m_exists(kc_store_backend *b, const char *name) {
    mstore *s = b->ctx;
    pthread_mutex_lock(&mu);
    s->calls++;
    int rc = s->fail ? s->fail : slot(s, name) >= 0;
    pthread_mutex_unlock(&mu);
    return rc;
}

static int m_remove(kc_store_backend *b, const char *name) {
    (void)b, (void)name;
    return KC_MISS;
}

static void m_free(kc_store_backend *b) { free(b); }

static int m_open(kc_store_backend **out, const char *url, const kc_remote_limits *limits) {
    if (strncmp(url, "mem://", 6) != 0 || !url[6]) return KC_EINVAL;
    kc_store_backend *b = calloc(1, sizeof *b);
    pthread_mutex_lock(&mu);
    mstore *s = store_named(url + 6);
    if (s) s->limits = *limits;
    pthread_mutex_unlock(&mu);
    b->version = KC_STORE_BACKEND_VERSION;
    b->name = "mem";
    b->get = m_get, b->put = m_put, b->exists = m_exists, b->remove = m_remove, b->free = m_free;
    b->ctx = s;
    *out = b;
    return KC_OK;
}

static const kc_store_scheme mem_scheme = {KC_STORE_SCHEME_VERSION, "mem", m_open, NULL};

static mstore *mem(const char *name) {
    pthread_mutex_lock(&mu);
    mstore *s = store_named(name);
    pthread_mutex_unlock(&mu);
    return s;
}

/* ---- helpers ---- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static kc_entry *entry_for(int i) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "store-register", (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_add_key_digests(e, kb), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "payload", 7), KC_OK);
    kc_key_builder_free(kb);
    return e;
}

static kc_cache *open_with(const char *dir, const char *remote) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = remote;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK)
        fail_msg("open %s: %s", remote ? remote : "(no remote)", kc_error_last()->message);
    return c;
}

static kc_tier_stats tier(kc_cache *c, size_t i) {
    kc_tier_stats s = KC_TIER_STATS_INIT;
    assert_int_equal(kc_cache_tier_stats(c, i, &s), KC_OK);
    return s;
}

/* A put of entry i through a cache with `remote` (its own directory), flushed to the remotes. */
static void put_through(const char *remote, int i) {
    char *d = kct_tmpdir("reg-put");
    kc_cache *c = open_with(d, remote);
    kc_entry *e = entry_for(i);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    kc_entry_free(e);
    kct_close_cache(d, c);
}

static int setup(void **state) {
    (void)state;
    return kc_store_register(&mem_scheme) == KC_OK ? 0 : -1;
}

/* ---- tests ---- */

static void test_registry_rules(void **state) {
    (void)state;
    assert_ptr_equal(kc_store_scheme_find("mem"), &mem_scheme);
    assert_null(kc_store_scheme_find("nope"));
    assert_int_equal(kc_store_register(&mem_scheme), KC_EINVAL); /* the first registration wins */
    assert_non_null(strstr(kc_error_last()->message, "'mem' is registered already"));
    kc_store_scheme bad = {KC_STORE_SCHEME_VERSION, "9mem", m_open, NULL};
    assert_int_equal(kc_store_register(&bad), KC_EINVAL);
    kc_store_scheme later = {99, "later", m_open, NULL};
    assert_int_equal(kc_store_register(&later), KC_EVERSION);
    kc_store_scheme noopen = {KC_STORE_SCHEME_VERSION, "noopen", NULL, NULL};
    assert_int_equal(kc_store_register(&noopen), KC_EINVAL);
    assert_int_equal(kc_store_register(NULL), KC_EINVAL);
    /* A URL no back end serves fails the open, naming its scheme (and never its password). */
    char *d = kct_tmpdir("reg-rules");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = "nope://user:secret@host";
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "nope://"));
    assert_null(strstr(kc_error_last()->message, "secret"));
    o.remote = "mem://a|bogus=1";
    assert_int_equal(kc_cache_open(&c, &o), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "bogus"));
    o.remote = "mem://a|deadline-ms=x";
    assert_int_equal(kc_cache_open(&c, &o), KC_EINVAL);
    kct_rmtree(d);
    free(d);
}

static void test_hit_backfills_local(void **state) {
    (void)state;
    put_through("mem://one", 1);
    assert_int_equal(mem("one")->puts, 1);
    char *d = kct_tmpdir("reg-fresh");
    kc_cache *c = open_with(d, "mem://one");
    assert_int_equal(kc_cache_tier_count(c), 2);
    kc_entry *e = entry_for(1), *got = NULL;
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
    kc_entry_free(got);
    kc_tier_stats l = tier(c, 0), r = tier(c, 1);
    assert_false(l.remote);
    assert_string_equal(l.url, "local");
    assert_int_equal(l.misses, 1);
    assert_true(r.remote);
    assert_string_equal(r.url, "mem://one");
    assert_int_equal(r.hits, 1);
    assert_int_equal(r.misses, 0);
    assert_int_equal(l.writes, 1); /* back-filled */
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_HITS), r.hits);
    kc_cache_close(c);
    /* Without the remote, the fresh directory now has it. */
    c = open_with(d, NULL);
    assert_int_equal(kc_cache_tier_count(c), 1);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
    kc_entry_free(got);
    kc_entry_free(e);
    kct_close_cache(d, c);
}

static void test_second_tier_backfills_first(void **state) {
    (void)state;
    put_through("mem://far", 2);
    char *d = kct_tmpdir("reg-two");
    kc_cache *c = open_with(d, "mem://near mem://far");
    assert_int_equal(kc_cache_tier_count(c), 3);
    kc_entry *e = entry_for(2), *got = NULL;
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
    kc_entry_free(got);
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    kc_tier_stats near = tier(c, 1), far = tier(c, 2);
    assert_int_equal(near.misses, 1);
    assert_int_equal(near.hits, 0);
    assert_int_equal(far.hits, 1);
    assert_int_equal(near.writes, 1); /* what the second had, the first has now */
    assert_int_equal(far.writes, 0);
    assert_int_equal(mem("near")->puts, 1);
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_MISSES), near.misses + far.misses);
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_HITS), near.hits + far.hits);
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_PUTS), near.writes + far.writes);
    kc_entry_free(e);
    kct_close_cache(d, c);
    /* The next fresh reader finds it one tier up. */
    d = kct_tmpdir("reg-two-again");
    c = open_with(d, "mem://near mem://far");
    e = entry_for(2);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
    kc_entry_free(got);
    assert_int_equal(tier(c, 1).hits, 1);
    assert_int_equal(tier(c, 2).hits + tier(c, 2).misses, 0); /* never asked */
    kc_entry_free(e);
    kct_close_cache(d, c);
}

static void test_readonly_tier_never_written(void **state) {
    (void)state;
    put_through("mem://ro|read-only mem://rw", 3);
    assert_int_equal(mem("ro")->puts, 0);
    assert_int_equal(mem("rw")->puts, 1);
    /* Nor back-filled: a hit in the second tier leaves a read-only first one alone. */
    char *d = kct_tmpdir("reg-ro");
    kc_cache *c = open_with(d, "mem://ro|read-only mem://rw");
    assert_true(tier(c, 1).readonly);
    assert_false(tier(c, 2).readonly);
    kc_entry *e = entry_for(3), *got = NULL;
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
    kc_entry_free(got);
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    assert_int_equal(mem("ro")->puts, 0);
    assert_int_equal(tier(c, 1).writes, 0);
    assert_int_equal(tier(c, 2).hits, 1);
    kc_entry_free(e);
    kct_close_cache(d, c);
}

static void test_failing_tier_opens_its_own_breaker(void **state) {
    (void)state;
    mem("down")->fail = KC_EIO;
    put_through("mem://up", 4);
    char *d = kct_tmpdir("reg-brk");
    kc_cache *c = open_with(d, "mem://down|backoff-ms=600000 mem://up");
    kc_entry *e = entry_for(4), *got = NULL;
    for (int round = 0; round < 2; round++) {
        assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_OK);
        kc_entry_free(got);
        assert_int_equal(kc_cache_remove(c, kc_entry_key(e), "sm_90"), KC_OK); /* read the remotes again */
    }
    kc_tier_stats down = tier(c, 1), up = tier(c, 2);
    assert_int_equal(down.errors, 1);  /* the first call failed and opened its breaker … */
    assert_int_equal(down.skipped, 1); /* … so the second was not made */
    assert_int_equal(mem("down")->calls, 1);
    assert_int_equal(down.breaker, KC_BREAKER_OPEN);
    assert_true(down.retry_in_ms > 0);
    assert_int_equal(up.breaker, KC_BREAKER_CLOSED);
    assert_int_equal(up.hits, 2);
    assert_int_equal(up.errors + up.skipped, 0);
    kc_remote_state rs;
    assert_int_equal(kc_cache_remote_state(c, &rs), KC_OK); /* the first remote's */
    assert_int_equal(rs.breaker, KC_BREAKER_OPEN);
    assert_int_equal(kc_cache_tier_state(c, 2, &rs), KC_OK);
    assert_int_equal(rs.breaker, KC_BREAKER_CLOSED);
    assert_string_equal(rs.url, "mem://up");
    assert_int_equal(kc_cache_tier_state(c, 0, &rs), KC_MISS);
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_ERRORS), down.errors + up.errors);
    assert_int_equal(kct_stat(c, KC_STAT_REMOTE_SKIPPED), down.skipped + up.skipped);
    /* A ping asks every remote, past the first that fails: each breaker says what its remote is like now. */
    int up_calls = mem("up")->calls;
    assert_int_equal(kc_cache_remote_ping(c), KC_EUNAVAILABLE);
    assert_int_equal(tier(c, 1).skipped, 2);
    assert_int_equal(mem("up")->calls, up_calls + 1);
    kc_entry_free(e);
    kct_close_cache(d, c);
    mem("down")->fail = 0;
}

/* A back end's own KC_EUNAVAILABLE (an HTTP 503) answering the breaker's probe is a failure like any
 * other: the breaker opens again for its next window, then probes again, never stays half-open for good
 * (it once did: the remote was skipped for the rest of the process). */
static void test_unavailable_probe_is_a_failure(void **state) {
    (void)state;
    mem("busy")->fail = 0;
    put_through("mem://busy", 5);
    char *d = kct_tmpdir("reg-busy");
    kc_cache *c = open_with(d, "mem://busy|backoff-ms=1|backoff-max-ms=2");
    kc_entry *e = entry_for(5), *got = NULL;
    mem("busy")->fail = KC_EIO; /* the first call fails: the breaker opens for 1 ms */
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_MISS);
    int calls = mem("busy")->calls;
    mem("busy")->fail = KC_EUNAVAILABLE; /* the probe after the window answers "unavailable" */
    for (int i = 0; i < 5000 && mem("busy")->calls == calls; i++) {
        sleep_ms(1);
        assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &got), KC_MISS);
    }
    assert_int_equal(mem("busy")->calls, calls + 1); /* the probe was made */
    mem("busy")->fail = 0;                           /* the remote is back: a later probe finds the entry */
    int rc = KC_MISS;
    for (int i = 0; i < 5000 && rc == KC_MISS; i++) {
        sleep_ms(1);
        rc = kc_cache_get(c, kc_entry_key(e), "sm_90", &got);
    }
    assert_int_equal(rc, KC_OK);
    kc_entry_free(got);
    kc_entry_free(e);
    kct_close_cache(d, c);
}

static void test_attributes_reach_the_back_end(void **state) {
    (void)state;
    char *d = kct_tmpdir("reg-attr");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = "  mem://attr|ttl=5|max-value=2M|connect-ms=7\tmem://plain ";
    o.remote_config.deadline_ms = 300;
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_tier_count(c), 3);
    kc_remote_limits a = mem("attr")->limits, p = mem("plain")->limits;
    assert_int_equal(a.ttl_s, 5);
    assert_int_equal(a.max_value, 2u << 20);
    assert_int_equal(a.connect_ms, 7);
    assert_int_equal(a.deadline_ms, 300); /* the options' default, not overridden */
    assert_int_equal(p.ttl_s, 0);
    assert_int_equal(p.deadline_ms, 300);
    kc_tier_stats s = {0};
    assert_int_equal(kc_cache_tier_stats(c, 1, &s), KC_EVERSION);
    s.version = KC_TIER_STATS_VERSION;
    assert_int_equal(kc_cache_tier_stats(c, 3, &s), KC_MISS);
    kct_close_cache(d, c);
}

/* A caller compiled against kc_options version 2 or 3 (kc_redis_config, one URL) still opens its remote. */
static void test_old_options_versions(void **state) {
    (void)state;
    for (unsigned v = 2; v <= 3; v++) {
        char *d = kct_tmpdir("reg-v3");
        kc_options o;
        assert_int_equal(kc_options_init(&o, v), KC_OK);
        o.dir = d;
        o.flags = KC_OPEN_NO_ENV;
        o.remote = "mem://old";
        kc_redis_config rc = KC_REDIS_CONFIG_INIT;
        rc.ttl_s = 9;
        o.remote_config = rc;
        kc_cache *c = NULL;
        assert_int_equal(kc_cache_open(&c, &o), KC_OK);
        assert_int_equal(kc_cache_tier_count(c), 2);
        assert_int_equal(mem("old")->limits.ttl_s, 9);
        kct_close_cache(d, c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_rules),
        cmocka_unit_test(test_hit_backfills_local),
        cmocka_unit_test(test_second_tier_backfills_first),
        cmocka_unit_test(test_readonly_tier_never_written),
        cmocka_unit_test(test_failing_tier_opens_its_own_breaker),
        cmocka_unit_test(test_unavailable_probe_is_a_failure),
        cmocka_unit_test(test_attributes_reach_the_back_end),
        cmocka_unit_test(test_old_options_versions),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
