/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tiers.c — the tiers (src/store/tiers.c) over any backend table: the real local
 * directory first, and an in-memory remote written here (which can fail, block, lack
 * get_first, or be a version-1 table), so that every remote outcome is reached without a
 * Redis: local first and write-back of a remote hit; the identity check (kc_entry_decode_as)
 * refusing another key or variant from every tier; the MAC checked before decoding; every
 * remote failure counted as today (timeouts, skips, errors, drops, puts); a read-only
 * remote never written; the bounded queue dropping what does not fit; publish; ping and
 * state through the table.
 */
#include "kcache.h"
#include "helpers.h"

#include <pthread.h>

#include "common/internal.h"
#include "store/local.h"
#include "store/tiers.h"

static const char MAC_KEY[] = "a fleet secret of 32 bytes......";

/* ---- counters: the tiers' sink ---- */

static int64_t counts[KC_STAT_COUNT];
static void sink(void *ctx, int shard, kc_stat id, int64_t n) {
    (void)ctx;
    (void)shard;
    __atomic_add_fetch(&counts[id], n, __ATOMIC_RELAXED);
}
static int64_t counted(kc_stat id) { return __atomic_load_n(&counts[id], __ATOMIC_RELAXED); }

/* ---- an in-memory remote ---- */

typedef struct mem {
    kc_store_backend be;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char names[16][KC_NAME_MAX + 1];
    void *data[16];
    size_t len[16];
    int n;
    int fail;          /* every call answers this when non-zero */
    int gate;          /* puts wait while set */
    int in_put;        /* a put is waiting at the gate */
    unsigned delay_ms; /* every put takes this long (a slow but live remote) */
    int puts, gets, exists_calls;
    char last_exists[KC_NAME_MAX + 16];
} mem;

static int find(mem *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0) return i;
    return -1;
}

static int m_get(kc_store_backend *b, const char *name, void **out, size_t *len) {
    mem *m = b->ctx;
    pthread_mutex_lock(&m->mu);
    m->gets++;
    int i = find(m, name), rc = m->fail ? m->fail : i < 0 ? KC_MISS : KC_OK;
    if (rc == KC_OK) {
        *out = malloc(m->len[i]);
        memcpy(*out, m->data[i], m->len[i]);
        *len = m->len[i];
    }
    pthread_mutex_unlock(&m->mu);
    return rc == KC_OK || rc == KC_MISS ? rc : kc_err(rc, "mem: failing with %s", kc_status_str(rc));
}

static int m_get_first(kc_store_backend *b, const char *const *names, size_t n, size_t *which, void **out,
                       size_t *len) {
    for (size_t i = 0; i < n; i++) {
        int rc = m_get(b, names[i], out, len);
        if (rc != KC_MISS) {
            *which = i;
            return rc;
        }
    }
    return KC_MISS;
}

static int m_put(kc_store_backend *b, const char *name, const void *data, size_t len) {
    mem *m = b->ctx;
    if (m->delay_ms) usleep(m->delay_ms * 1000u);
    pthread_mutex_lock(&m->mu);
    m->in_put = 1;
    pthread_cond_broadcast(&m->cv);
    while (m->gate) pthread_cond_wait(&m->cv, &m->mu);
    m->in_put = 0;
    int rc = m->fail;
    if (!rc) {
        int i = find(m, name);
        if (i < 0) {
            i = m->n++;
            snprintf(m->names[i], sizeof m->names[i], "%s", name);
        } else {
            free(m->data[i]);
        }
        m->data[i] = malloc(len);
        memcpy(m->data[i], data, len);
        m->len[i] = len;
        m->puts++;
    }
    pthread_mutex_unlock(&m->mu);
    return rc ? kc_err(rc, "mem: failing with %s", kc_status_str(rc)) : KC_OK;
}

static int m_exists(kc_store_backend *b, const char *name) {
    mem *m = b->ctx;
    pthread_mutex_lock(&m->mu);
    m->exists_calls++;
    snprintf(m->last_exists, sizeof m->last_exists, "%s", name);
    int rc = m->fail ? m->fail : find(m, name) >= 0;
    pthread_mutex_unlock(&m->mu);
    return rc < 0 ? kc_err(rc, "mem: failing with %s", kc_status_str(rc)) : rc;
}

static int m_remove(kc_store_backend *b, const char *name) {
    (void)b;
    (void)name;
    return KC_MISS;
}

static void m_free(kc_store_backend *b) {
    mem *m = b->ctx;
    for (int i = 0; i < m->n; i++) free(m->data[i]);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}

static int m_state(kc_store_backend *b, kc_remote_state *out) {
    (void)b;
    memset(out, 0, sizeof *out);
    snprintf(out->url, sizeof out->url, "mem://");
    return KC_OK;
}

/* A remote; `version` 1 leaves out the slots of version 2. */
static mem *mem_new(unsigned version, int with_get_first) {
    mem *m = calloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->be.version = version;
    m->be.name = "mem";
    m->be.get = m_get;
    m->be.put = m_put;
    m->be.exists = m_exists;
    m->be.remove = m_remove;
    m->be.free = m_free;
    m->be.ctx = m;
    if (with_get_first) m->be.get_first = m_get_first;
    if (version >= 2) m->be.state = m_state;
    return m;
}

static void mem_store(mem *m, const char *name, const void *data, size_t len) {
    int fail = m->fail;
    m->fail = 0;
    assert_int_equal(m_put(&m->be, name, data, len), KC_OK);
    m->puts--;
    m->fail = fail;
}

static void mem_set(mem *m, int field_fail, int gate) {
    pthread_mutex_lock(&m->mu);
    m->fail = field_fail;
    m->gate = gate;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

/* ---- fixtures ---- */

static char *dir;
static kc_local *local;

static int setup(void **state) {
    (void)state;
    memset(counts, 0, sizeof counts);
    dir = kct_tmpdir("tiers");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(dir);
    free(dir);
    return 0;
}

/* Tiers over the local directory (flags `lf`) and, when given, the remote `m` (flags `rf`). */
static kc_tiers *tiers_new(mem *m, unsigned lf, unsigned rf, const char *mac, size_t queue) {
    kc_tiers_config cfg = {queue, (const uint8_t *)mac, mac ? strlen(mac) : 0, sink, NULL, NULL};
    kc_tiers *t;
    assert_int_equal(kc_tiers_new(&t, &cfg), KC_OK);
    if (m) assert_int_equal(kc_tiers_add(t, &m->be, rf), KC_OK); /* added first, still after the local tier */
    assert_int_equal(kc_local_open(&local, dir, 0, lf & KC_TIER_READONLY ? KC_OPEN_READONLY : 0), KC_OK);
    assert_int_equal(kc_tiers_add(t, kc_local_backend(local), KC_TIER_LOCAL | lf), KC_OK);
    return t;
}

/* Encoded bytes of an entry for (label i, variant); sealed under `mac` when given. */
static void *encoded(int i, const char *variant, const char *mac, size_t *len) {
    kc_key k = kct_key("tiers", i);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, variant), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "kernel bytes", 12), KC_OK);
    void *d;
    assert_int_equal(kc_entry_encode(e, &d, len), KC_OK);
    if (mac) assert_int_equal(kc_entry_seal(&d, len, mac, strlen(mac)), KC_OK);
    kc_entry_free(e);
    return d;
}

static void name_of(int i, const char *variant, char out[KC_NAME_MAX + 1]) {
    kc_key k = kct_key("tiers", i);
    kc_store_name(&k, variant, out);
}

/* Put a fresh entry (label i, sm_90) through the tiers; its name in `n` when given. */
static int put_new(kc_tiers *t, int i, char *n) {
    size_t len;
    void *d = encoded(i, "sm_90", NULL, &len);
    char name[KC_NAME_MAX + 1];
    name_of(i, "sm_90", name);
    if (n) strcpy(n, name);
    return kc_tiers_put(t, name, 0, d, len); /* takes d */
}

/* ---- tests ---- */

static void test_decode_as_refuses_another_key_or_variant(void **state) {
    (void)state;
    size_t len;
    void *d = encoded(1, "sm_90", NULL, &len);
    kc_key mine = kct_key("tiers", 1), other = kct_key("tiers", 2);
    kc_entry *e = (kc_entry *)1;
    assert_int_equal(kc_entry_decode_as(&e, d, len, &mine, "sm_90"), KC_OK);
    assert_memory_equal(kc_entry_key(e)->bytes, mine.bytes, 16);
    kc_entry_free(e);
    assert_int_equal(kc_entry_decode_as(&e, d, len, &other, "sm_90"), KC_ECORRUPT);
    assert_null(e);
    assert_non_null(strstr(kc_error_last()->message, "another key or variant"));
    assert_int_equal(kc_entry_decode_as(&e, d, len, &mine, "sm_80"), KC_ECORRUPT);
    assert_null(e);
    assert_int_equal(kc_entry_decode_as(&e, d, len - 1, &mine, "sm_90"), KC_ECORRUPT); /* decoding first */
    assert_int_equal(kc_entry_decode_as(&e, d, len, NULL, "sm_90"), KC_EINVAL);
    free(d);
}

static void test_local_first_then_remote_written_back(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, NULL, 0);
    assert_true(kc_tiers_has_remote(t));
    kc_key k = kct_key("tiers", 3);
    char n80[KC_NAME_MAX + 1];
    name_of(3, "sm_80", n80);
    size_t len;
    void *d = encoded(3, "sm_80", NULL, &len);
    mem_store(m, n80, d, len);
    free(d);
    kc_entry *e;
    assert_int_equal(kc_tiers_get_local(t, &k, "sm_80", &e), KC_MISS);
    const char *cand[] = {"sm_90", "sm_80"};
    size_t which = 9;
    assert_int_equal(kc_tiers_get_remote(t, &k, cand, 2, &which, &e, NULL, NULL), KC_OK);
    assert_int_equal(which, 1);
    assert_string_equal(kc_entry_variant(e), "sm_80");
    kc_entry_free(e);
    assert_int_equal(counted(KC_STAT_REMOTE_HITS), 1);
    assert_int_equal(kc_tiers_exists(t, n80), 1); /* written back */
    int gets = m->gets;
    assert_int_equal(kc_tiers_get_local(t, &k, "sm_80", &e), KC_OK);
    kc_entry_free(e);
    assert_int_equal(m->gets, gets);            /* the local tier answered */
    assert_int_equal(counted(KC_STAT_HITS), 0); /* the caller counts its lookup's outcome, once it knows it */
    /* Without get_first, one name is asked. */
    m->be.get_first = NULL;
    assert_int_equal(kc_tiers_get_remote(t, &k, cand, 2, &which, &e, NULL, NULL), KC_MISS);
    assert_int_equal(counted(KC_STAT_REMOTE_MISSES), 1);
    kc_tiers_free(t);
}

static void test_another_key_or_variant_is_refused_by_every_tier(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, NULL, 0);
    kc_key k = kct_key("tiers", 4);
    char n90[KC_NAME_MAX + 1];
    name_of(4, "sm_90", n90);
    size_t len;
    void *wrong_variant = encoded(4, "sm_80", NULL, &len);
    /* Remote: refused, counted corrupt, not written back. */
    mem_store(m, n90, wrong_variant, len);
    kc_entry *e;
    const char *v = "sm_90";
    assert_int_equal(kc_tiers_get_remote(t, &k, &v, 1, NULL, &e, NULL, NULL), KC_MISS);
    assert_null(e);
    assert_int_equal(counted(KC_STAT_CORRUPT), 1);
    assert_int_equal(counted(KC_STAT_REMOTE_HITS), 0);
    assert_int_equal(kc_tiers_exists(t, n90), 0);
    /* Local: refused and quarantined. */
    assert_int_equal(kc_local_put(local, n90, wrong_variant, len), KC_OK);
    assert_int_equal(kc_tiers_get_local(t, &k, "sm_90", &e), KC_ECORRUPT);
    assert_null(e);
    assert_int_equal(kc_tiers_exists(t, n90), 0);
    char q[1024];
    snprintf(q, sizeof q, "%s/v1/quarantine", dir);
    assert_int_equal(kct_count_files(q, ".kce"), 1);
    free(wrong_variant);
    kc_tiers_free(t);
}

static void test_mac_is_checked_before_decoding(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, MAC_KEY, 0);
    kc_key k = kct_key("tiers", 5);
    char n[KC_NAME_MAX + 1];
    name_of(5, "sm_90", n);
    size_t len;
    void *plain = encoded(5, "sm_90", NULL, &len);
    mem_store(m, n, plain, len);
    kc_entry *e;
    const char *v = "sm_90";
    assert_int_equal(kc_tiers_get_remote(t, &k, &v, 1, NULL, &e, NULL, NULL), KC_MISS);
    assert_int_equal(counted(KC_STAT_MAC_REJECTED), 1);
    assert_int_equal(counted(KC_STAT_CORRUPT), 0);
    /* Garbage is rejected by its MAC, never reaches the decoder. */
    mem_store(m, n, "not an entry at all", 19);
    assert_int_equal(kc_tiers_get_remote(t, &k, &v, 1, NULL, &e, NULL, NULL), KC_MISS);
    assert_int_equal(counted(KC_STAT_MAC_REJECTED), 2);
    assert_int_equal(counted(KC_STAT_CORRUPT), 0);
    size_t slen;
    void *sealed = encoded(5, "sm_90", MAC_KEY, &slen);
    mem_store(m, n, sealed, slen);
    assert_int_equal(kc_tiers_get_remote(t, &k, &v, 1, NULL, &e, NULL, NULL), KC_OK);
    kc_entry_free(e);
    free(plain);
    free(sealed);
    kc_tiers_free(t);
}

static void test_remote_failures_are_counted(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, NULL, 0);
    kc_key k = kct_key("tiers", 6);
    kc_entry *e;
    const char *v = "sm_90";
    const struct {
        int rc;
        kc_stat id;
    } cases[] = {{KC_ETIMEOUT, KC_STAT_REMOTE_TIMEOUTS},
                 {KC_EUNAVAILABLE, KC_STAT_REMOTE_SKIPPED},
                 {KC_EIO, KC_STAT_REMOTE_ERRORS}};
    for (size_t i = 0; i < 3; i++) {
        mem_set(m, cases[i].rc, 0);
        assert_int_equal(kc_tiers_get_remote(t, &k, &v, 1, NULL, &e, NULL, NULL), KC_MISS);
        assert_int_equal(counted(cases[i].id), 1);
        assert_int_equal(kc_tiers_ping(t), cases[i].rc);
        assert_int_equal(counted(cases[i].id), 2);
    }
    /* Writes: an open breaker drops them, an error counts as one, a success as a put. */
    mem_set(m, KC_EUNAVAILABLE, 0);
    assert_int_equal(put_new(t, 6, NULL), KC_OK); /* the local tier's result */
    kc_tiers_flush(t);
    assert_int_equal(counted(KC_STAT_REMOTE_DROPPED), 1);
    mem_set(m, KC_EIO, 0);
    assert_int_equal(put_new(t, 6, NULL), KC_OK);
    kc_tiers_flush(t);
    assert_int_equal(counted(KC_STAT_REMOTE_ERRORS), 3);
    mem_set(m, 0, 0);
    assert_int_equal(put_new(t, 6, NULL), KC_OK);
    kc_tiers_flush(t);
    assert_int_equal(counted(KC_STAT_REMOTE_PUTS), 1);
    assert_int_equal(m->puts, 1);
    assert_int_equal(kc_tiers_ping(t), KC_OK);
    assert_string_equal(m->last_exists, "00000000000000000000000000000000.ping");
    kc_tiers_free(t);
}

static void test_readonly_remote_is_never_written(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, KC_TIER_READONLY, NULL, 0);
    char n[KC_NAME_MAX + 1];
    assert_int_equal(put_new(t, 7, n), KC_OK);
    kc_tiers_flush(t);
    assert_int_equal(m->puts, 0);
    assert_int_equal(kc_tiers_exists(t, n), 1);
    assert_int_equal(kc_tiers_publish(t, n, 0), KC_EREADONLY);
    assert_int_equal(m->exists_calls, 0);
    kc_tiers_free(t);
}

static void test_a_full_queue_drops_the_write(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, NULL, 1);
    char n[KC_NAME_MAX + 1];
    mem_set(m, 0, 1); /* the remote's puts wait */
    assert_int_equal(put_new(t, 8, NULL), KC_OK);
    pthread_mutex_lock(&m->mu);
    while (!m->in_put) pthread_cond_wait(&m->cv, &m->mu); /* the writer holds the first */
    pthread_mutex_unlock(&m->mu);
    assert_int_equal(put_new(t, 9, NULL), KC_OK); /* queued */
    assert_int_equal(put_new(t, 10, n), KC_OK);   /* no room */
    assert_int_equal(counted(KC_STAT_REMOTE_DROPPED), 1);
    assert_int_equal(kc_tiers_exists(t, n), 1); /* kept locally all the same */
    mem_set(m, 0, 0);
    kc_tiers_flush(t);
    assert_int_equal(counted(KC_STAT_REMOTE_PUTS), 2);
    assert_int_equal(m->puts, 2);
    kc_tiers_free(t);
}

static void test_close_waits_a_bounded_time_and_counts_the_rest(void **state) {
    (void)state;
    enum { PUTS = 12, DELAY = 250, CLOSE = 300 }; /* PUTS: the remote holds 16 names */
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    m->delay_ms = DELAY; /* inside any deadline: no breaker opens */
    kc_tiers_config cfg = {0, NULL, 0, sink, NULL, NULL};
    kc_tiers *t;
    assert_int_equal(kc_tiers_new(&t, &cfg), KC_OK);
    kc_tiers_set_close_ms(t, CLOSE);
    assert_int_equal(kc_tiers_add(t, &m->be, 0), KC_OK);
    assert_int_equal(kc_local_open(&local, dir, 0, 0), KC_OK);
    assert_int_equal(kc_tiers_add(t, kc_local_backend(local), KC_TIER_LOCAL), KC_OK);
    mem_set(m, 0, 1); /* all queued before the first is sent */
    for (int i = 0; i < PUTS; i++) assert_int_equal(put_new(t, 100 + i, NULL), KC_OK);
    mem_set(m, 0, 0);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    kc_tiers_free(t); /* 12 × 250 ms queued: waits 300 ms, then one put in flight at most */
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    /* Not a speed claim: waiting for every queued write would take PUTS × DELAY = 3 s; the bound
     * is ~0.55 s.  Generous margins both ways, so a loaded (sanitizer) machine cannot flip it. */
    if (ms > (PUTS * DELAY) * 2 / 3)
        fail_msg("close took %.0f ms: it waited for the queue (bound %d ms + one put)", ms, CLOSE);
    int64_t sent = counted(KC_STAT_REMOTE_PUTS), dropped = counted(KC_STAT_REMOTE_DROPPED);
    assert_int_equal(sent + dropped, PUTS); /* each write counted exactly once */
    assert_true(dropped >= 1);              /* the bound acted: the rest was dropped, and counted */
}

static void test_publish_seals_and_sends_once(void **state) {
    (void)state;
    mem *m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    kc_tiers *t = tiers_new(m, 0, 0, MAC_KEY, 0);
    char n[KC_NAME_MAX + 1];
    name_of(11, "sm_90", n);
    assert_int_equal(kc_tiers_publish(t, n, 0), KC_MISS); /* not local */
    size_t len;
    void *plain = encoded(11, "sm_90", NULL, &len); /* stored before the key was set */
    assert_int_equal(kc_local_put(local, n, plain, len), KC_OK);
    free(plain);
    assert_int_equal(kc_tiers_publish(t, n, 0), 1);
    kc_tiers_flush(t);
    assert_int_equal(m->puts, 1);
    assert_int_equal(kc_entry_mac_check(m->data[0], m->len[0], MAC_KEY, strlen(MAC_KEY)), KC_OK);
    assert_int_equal(kc_tiers_publish(t, n, 0), 0); /* the remote has it */
    mem_set(m, KC_EIO, 0);
    assert_int_equal(kc_tiers_publish(t, n, 0), KC_EIO);
    assert_int_equal(counted(KC_STAT_REMOTE_ERRORS), 1);
    kc_tiers_free(t);
}

/* The local directory's own get_into, wrapped: each call counted, and whether it answered in the
 * buffer lent. */
static int (*local_get_into)(kc_store_backend *, const char *, void *, size_t, void **, size_t *);
static int into_calls, into_lent;
static int counted_get_into(kc_store_backend *b, const char *name, void *buf, size_t cap, void **out, size_t *len) {
    into_calls++;
    int rc = local_get_into(b, name, buf, cap, out, len);
    into_lent += rc == KC_OK && *out == buf;
    return rc;
}
static int never_get_into(kc_store_backend *b, const char *name, void *buf, size_t cap, void **out, size_t *len) {
    (void)b, (void)name, (void)buf, (void)cap, (void)out, (void)len;
    fail_msg("get_into called on a table of version 6");
    return KC_EIO;
}
/* A v7 get_into that says it wrote more than it was lent. */
static int lying_get_into(kc_store_backend *b, const char *name, void *buf, size_t cap, void **out, size_t *len) {
    int rc = local_get_into(b, name, buf, cap, out, len);
    if (rc == KC_OK && *out == buf) *len = cap + 1;
    return rc;
}

/* The local tier's reads, through the table's get_into (version 7), through get (a version-6 table,
 * whose slot is never read), and with a get_into that claims more than the buffer: an object small
 * enough for the tiers' stack buffer is read there, ones past it into a buffer of their own, each read
 * back whole; one corrupted is refused and quarantined (under ASan: nothing freed that was lent,
 * nothing lent leaked). */
static void test_local_reads_into_a_lent_buffer(void **state) {
    (void)state;
    static const size_t sizes[] = {12, 15000, 16300, 16400, 40000};
    uint8_t *bytes = malloc(40000);
    uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift: bytes zstd cannot shrink, so the sizes stay apart */
    for (size_t i = 0; i < 40000; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, bytes[i] = (uint8_t)(x >> 32);
    for (int how = 0; how < 3; how++) { /* 0: get_into; 1: a version-6 table; 2: a get_into that lies */
        kc_tiers *t;
        kc_tiers_config cfg = {0, NULL, 0, sink, NULL, NULL};
        assert_int_equal(kc_tiers_new(&t, &cfg), KC_OK);
        assert_int_equal(kc_local_open(&local, dir, 0, 0), KC_OK);
        kc_store_backend *lb = kc_local_backend(local);
        assert_non_null(lb->get_into);
        local_get_into = lb->get_into;
        lb->get_into = how == 0 ? counted_get_into : how == 1 ? never_get_into : lying_get_into;
        if (how == 1) lb->version = 6;
        assert_int_equal(kc_tiers_add(t, lb, KC_TIER_LOCAL), KC_OK);
        into_calls = into_lent = 0;
        int smalls = 0, lies = 0;
        int64_t errors = counted(KC_STAT_STORE_ERRORS);
        for (size_t k = 0; k < KC_ARRAY_LEN(sizes); k++) {
            int label = 40 + (int)k + 10 * how;
            kc_key key = kct_key("tiers", label);
            kc_entry *e;
            assert_int_equal(kc_entry_new(&e, &key, "sm_90"), KC_OK);
            assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, bytes, sizes[k]), KC_OK);
            void *d;
            size_t len;
            assert_int_equal(kc_entry_encode(e, &d, &len), KC_OK);
            kc_entry_free(e);
            char name[KC_NAME_MAX + 1];
            kc_store_name(&key, "sm_90", name);
            assert_int_equal(kc_tiers_put(t, name, 0, d, len), KC_OK); /* takes d */
            int small = len + 2 <= 16 * 1024;                          /* what the tiers' buffer holds */
            smalls += small;
            int lent_before = into_lent;
            for (int twice = 0; twice < 2; twice++) { /* the second read with the size remembered */
                /* a get_into that lies is caught on a read into the buffer lent: a store error, a miss */
                int rc = kc_tiers_get_local(t, &key, "sm_90", &e);
                if (how == 2 && small && rc == KC_MISS) {
                    assert_null(e);
                    lies++;
                } else {
                    assert_int_equal(rc, KC_OK);
                    const void *got;
                    size_t glen;
                    assert_int_equal(kc_entry_section(e, KC_SECTION_KERNELS, &got, &glen), KC_OK);
                    assert_int_equal(glen, sizes[k]);
                    assert_memory_equal(got, bytes, sizes[k]);
                    kc_entry_free(e);
                }
                rc = kc_tiers_check_local(t, &key, "sm_90", -1, NULL);
                if (how == 2 && small && rc == KC_MISS) lies++;
                else assert_int_equal(rc, KC_OK);
            }
            /* the reads after the first (which takes the file's stat for the LRU) go into the buffer */
            if (how == 0) assert_true(small ? into_lent - lent_before >= 2 : into_lent == lent_before);
            if (how == 2 && small) continue; /* a store error, not a corrupt entry: nothing quarantined */
            char path[4096];
            kc_local_path(local, name, path, sizeof path);
            FILE *f = fopen(path, "r+b");
            assert_non_null(f);
            assert_int_equal(fseek(f, (long)len - 3, SEEK_SET), 0);
            assert_int_equal(fputc(0x5a ^ (int)k, f), 0x5a ^ (int)k);
            fclose(f);
            assert_int_equal(kc_tiers_get_local(t, &key, "sm_90", &e), KC_ECORRUPT);
            assert_null(e);
            assert_int_equal(kc_tiers_exists(t, name), 0); /* quarantined */
        }
        assert_int_equal(smalls, 2);                       /* 12 and 15,000 bytes fit, the others do not */
        if (how == 0) assert_int_equal(into_calls, 5 * 5); /* per size: two gets, two checks, the corrupt read */
        if (how == 2) {
            assert_true(lies >= 2 * smalls);
            assert_int_equal(counted(KC_STAT_STORE_ERRORS) - errors, lies); /* each counted */
        }
        kc_tiers_free(t);
    }
    free(bytes);
}

static void test_tables_by_version(void **state) {
    (void)state;
    mem *m = mem_new(1, 0); /* no peek, no state */
    kc_tiers *t = tiers_new(m, 0, 0, NULL, 0);
    kc_remote_state st;
    assert_int_equal(kc_tiers_remote_state(t, &st), KC_EINVAL);
    kc_tiers_free(t);
    m = mem_new(KC_STORE_BACKEND_VERSION, 1);
    t = tiers_new(m, 0, 0, NULL, 0);
    assert_int_equal(kc_tiers_remote_state(t, &st), KC_OK);
    assert_string_equal(st.url, "mem://");
    mem *future = mem_new(KC_STORE_BACKEND_VERSION + 1, 1);
    assert_int_equal(kc_tiers_add(t, &future->be, 0), KC_EVERSION);
    m_free(&future->be); /* refused: still ours */
    kc_tiers_free(t);
    /* No remote: nothing to ask. */
    t = tiers_new(NULL, 0, 0, NULL, 0);
    assert_false(kc_tiers_has_remote(t));
    assert_int_equal(kc_tiers_remote_state(t, &st), KC_MISS);
    assert_int_equal(kc_tiers_ping(t), KC_MISS);
    assert_int_equal(kc_tiers_publish(t, "0123456789abcdef0123456789abcdef.sm_90", 0), KC_EINVAL);
    kc_tiers_free(t);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_decode_as_refuses_another_key_or_variant),
        T(test_local_first_then_remote_written_back),
        T(test_another_key_or_variant_is_refused_by_every_tier),
        T(test_mac_is_checked_before_decoding),
        T(test_remote_failures_are_counted),
        T(test_readonly_remote_is_never_written),
        T(test_a_full_queue_drops_the_write),
        T(test_close_waits_a_bounded_time_and_counts_the_rest),
        T(test_publish_seals_and_sends_once),
        T(test_tables_by_version),
        T(test_local_reads_into_a_lent_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
