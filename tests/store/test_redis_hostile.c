/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_hostile.c (label redis) — the redis backend against a fake server that
 * misbehaves: a thread here listens on a free loopback port and answers every command
 * with one scripted hostile reply.  Each case holds the deadline and a bounded memory
 * cost (an array header of two billion elements, then silence or a stream of small
 * elements; a bulk over the cap; nesting without end), and a connection that received
 * more than one reply is never used again (the next command would read the stale one); a
 * slow but live server does not hold kc_cache_close past KCACHE_REMOTE_CLOSE_MS.  get_many's
 * MGET answered with an array too short or too long, elements of the wrong types (numbers,
 * statuses, errors, arrays), not an array, a bulk over the cap, or two billion elements is a
 * clean error within the deadline, with every out[i] NULL and the breaker open, while the
 * same fake's well-formed answer is taken; the reply scanner's total cap, checked alone.
 * The fake answers the ECHO each command is sent with ([Note: replies in step]) after its reply.
 * Needs no redis-server; the fake stops by itself after a few seconds.
 */
#include "kcache.h"
#include "helpers.h"
#include "conformance.h"

#include "store/redis_reply.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

enum mode { HUGE_SILENT, HUGE_STREAM, BULK_STREAM, DEEP_STREAM, EXTRA_REPLY, SLOW, SCRIPT };

#define SLOW_MS 300 /* SLOW answers every command this late: inside the deadline, so no breaker opens */

typedef struct fake {
    enum mode mode;
    int lfd, port;
    volatile int stop;
    int commands;       /* commands seen (EXTRA_REPLY, SCRIPT) */
    const char *script; /* SCRIPT: the reply to every command… */
    int stream;         /* …followed by 'x's until the client goes away */
    pthread_t th;
} fake;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double ms_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e6; }

/* Fill `buf` with `n` bytes of the endless tail of a hostile reply. */
static size_t stream_chunk(enum mode m, char *buf, size_t cap) {
    const char *unit = m == HUGE_STREAM ? ":1\r\n" : m == DEEP_STREAM ? "*1\r\n" : "xxxxxxxx";
    size_t ul = strlen(unit), n = 0;
    while (n + ul <= cap) memcpy(buf + n, unit, ul), n += ul;
    return n;
}

/* The reply to the ECHO a client sends after each command ([Note: replies in step] in
 * src/store/redis_io.c), appended to `r` in out; r itself when the request holds no ECHO. */
static const char *with_echo(const char *req, size_t len, const char *r, char *out, size_t cap) {
    const char *e = NULL; /* the request may hold NULs (a SET's value): searched by length */
    for (size_t i = 0; !e && i + 9 <= len; i++)
        if (memcmp(req + i, "\r\nECHO\r\n$", 9) == 0) e = req + i;
    if (!e || !r) return r;
    e += 9;
    long n = strtol(e, (char **)&e, 10);
    if (n <= 0 || n > 64 || strncmp(e, "\r\n", 2) != 0) return r;
    snprintf(out, cap, "%s$%ld\r\n%.*s\r\n", r, n, (int)n, e + 2);
    return out;
}

static void *fake_main(void *arg) {
    fake *f = arg;
    int cl[8], ncl = 0, started[8] = {0};
    const char *pending[8] = {0}; /* SLOW: the reply owed, and when */
    static char owed[8][256], sent[512];
    uint64_t due[8] = {0};
    static char chunk[65536];
    uint64_t t0 = now_ns();
    while (!f->stop && ms_since(t0) < 5000) { /* bounded: it stops by itself */
        struct pollfd p[9];
        p[0] = (struct pollfd){f->lfd, POLLIN, 0};
        for (int i = 0; i < ncl; i++) p[1 + i] = (struct pollfd){cl[i], POLLIN, 0};
        poll(p, (nfds_t)(1 + ncl), 20);
        if ((p[0].revents & POLLIN) && ncl < 8) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd >= 0) started[ncl] = 0, cl[ncl++] = fd;
        }
        for (int i = 0; i < ncl; i++) {
            if (cl[i] < 0) continue;
            if (p[1 + i].revents & (POLLIN | POLLHUP | POLLERR)) {
                char req[4096];
                ssize_t n = recv(cl[i], req, sizeof req - 1, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN)) {
                    close(cl[i]), cl[i] = -1;
                    continue;
                }
                if (n > 0) {
                    req[n] = '\0';
                    const char *r = NULL;
                    switch (f->mode) {
                    case HUGE_SILENT:
                    case HUGE_STREAM: r = "*2000000000\r\n"; break;
                    case BULK_STREAM: r = "$2000000000\r\n"; break;
                    case DEEP_STREAM: r = "*1\r\n"; break;
                    case EXTRA_REPLY:
                        f->commands++;
                        r = strstr(req, "SET") ? "+OK\r\n:1\r\n" : ":0\r\n"; /* one reply too many for SET */
                        break;
                    case SCRIPT:
                        f->commands++;
                        r = f->script;
                        break;
                    case SLOW: /* one command at a time per connection */
                        pending[i] = with_echo(req, (size_t)n,
                                               strstr(req, "SET")   ? "+OK\r\n"
                                               : strstr(req, "GET") ? "$-1\r\n"
                                                                    : ":0\r\n",
                                               owed[i], sizeof owed[i]);
                        due[i] = now_ns() + SLOW_MS * 1000000ull;
                        break;
                    }
                    r = f->mode == EXTRA_REPLY || f->mode == SCRIPT ? with_echo(req, (size_t)n, r, sent, sizeof sent)
                                                                    : r;
                    if (r) send(cl[i], r, strlen(r), MSG_NOSIGNAL);
                    started[i] = f->mode == SCRIPT
                                     ? f->stream
                                     : f->mode != HUGE_SILENT && f->mode != EXTRA_REPLY && f->mode != SLOW;
                }
            }
            if (pending[i] && now_ns() >= due[i]) {
                send(cl[i], pending[i], strlen(pending[i]), MSG_NOSIGNAL);
                pending[i] = NULL;
            }
            if (started[i]) { /* stream until the client goes away */
                size_t n = stream_chunk(f->mode, chunk, sizeof chunk);
                if (send(cl[i], chunk, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) close(cl[i]), cl[i] = -1;
            }
        }
    }
    for (int i = 0; i < ncl; i++)
        if (cl[i] >= 0) close(cl[i]);
    return NULL;
}

static void fake_start_script(fake *f, enum mode m, const char *script, int stream) {
    memset(f, 0, sizeof *f);
    f->mode = m;
    f->script = script;
    f->stream = stream;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(f->lfd, 16), 0);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
    f->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_start(fake *f, enum mode m) { fake_start_script(f, m, NULL, 0); }

static void fake_stop(fake *f) {
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static kc_store_backend *open_fake(fake *f, unsigned deadline_ms) {
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f->port);
    kc_redis_config cfg = {100, deadline_ms, 1, 1, 0, 0};
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, url, &cfg), KC_OK);
    return b;
}

/* Peak resident memory of this process, in MB. */
static long peak_rss_mb(void) {
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (fp && fgets(line, sizeof line, fp))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1) break;
    if (fp) fclose(fp);
    return kb / 1024;
}

/* One GET against a hostile reply: an error within the deadline (plus slack), little memory. */
static void hostile_get(enum mode m) {
    enum { DEADLINE = 300 };
    fake f;
    fake_start(&f, m);
    kc_store_backend *b = open_fake(&f, DEADLINE);
    long rss0 = peak_rss_mb();
    void *d = NULL;
    size_t len;
    uint64_t t0 = now_ns();
    int rc = b->get(b, KCC_NAME(0), &d, &len);
    double ms = ms_since(t0);
    b->free(b);
    double total = ms_since(t0); /* freeing included */
    fake_stop(&f);
    if (rc != KC_EIO && rc != KC_ETIMEOUT) fail_msg("mode %d: get answered %d", m, rc);
    /* Not a speed claim: the broken reader took 10-14 s; 5× the deadline keeps a loaded
     * (sanitizer) machine from flipping the verdict. */
    if (total > DEADLINE * 5)
        fail_msg("mode %d: get took %.0f ms, %.0f ms with the free (deadline %d)", m, ms, total, DEADLINE);
    long grew = peak_rss_mb() - rss0;
    if (grew > 64) fail_msg("mode %d: peak memory grew by %ld MB", m, grew);
    free(d);
}

static void test_huge_array_then_silence(void **state) {
    (void)state;
    hostile_get(HUGE_SILENT);
}

static void test_huge_array_then_a_stream_of_elements(void **state) {
    (void)state;
    hostile_get(HUGE_STREAM);
}

static void test_bulk_over_the_cap(void **state) {
    (void)state;
    hostile_get(BULK_STREAM);
}

static void test_endless_nesting(void **state) {
    (void)state;
    hostile_get(DEEP_STREAM);
}

static void test_extra_reply_discards_the_connection(void **state) {
    (void)state;
    fake f;
    fake_start(&f, EXTRA_REPLY);
    kc_store_backend *b = open_fake(&f, 500);
    uint8_t v[16] = {1, 2, 3};
    /* SET is answered "+OK" and then ":1": a reply nobody asked for. */
    int rc = b->put(b, KCC_NAME(0), v, sizeof v);
    assert_true(rc == KC_OK || rc == KC_EIO);
    usleep(20000);
    /* EXISTS is answered ":0" by the server; the stale ":1" must not be taken for its reply. */
    for (int i = 0; i < 20; i++) {
        rc = b->exists(b, KCC_NAME(0));
        if (rc != KC_EUNAVAILABLE) break;
        usleep(20000); /* the breaker, if the put opened it */
    }
    assert_int_equal(rc, 0);
    b->free(b);
    fake_stop(&f);
}

static kc_cache *open_slow(const char *dir, int port, const char *close_ms) {
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    setenv("KCACHE_REMOTE_CLOSE_MS", close_ms, 1);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_OPTIONS_WIN; /* the environment is read: KCACHE_REMOTE_CLOSE_MS */
    o.remote = url;
    o.remote_config.deadline_ms = 1000;
    kc_cache *c = NULL;
    int rc = kc_cache_open(&c, &o);
    unsetenv("KCACHE_REMOTE_CLOSE_MS");
    return rc == KC_OK ? c : NULL;
}

static void test_close_is_bounded_with_a_slow_remote(void **state) {
    (void)state;
    enum { PUTS = 8, CLOSE = 300 };
    fake f;
    fake_start(&f, SLOW);
    char *dir = kct_tmpdir("slowclose");
    assert_null(open_slow(dir, f.port, "abc")); /* a bad value is an error, not a guess */
    kc_cache *c = open_slow(dir, f.port, "300");
    assert_non_null(c);
    for (int i = 0; i < PUTS; i++) {
        kc_key k = kct_key("slowclose", i);
        kc_entry *e;
        assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "k", 1), KC_OK);
        assert_int_equal(kc_cache_put(c, e), KC_OK);
        kc_entry_free(e);
    }
    uint64_t t0 = now_ns();
    kc_cache_close(c); /* 8 writes × 300 ms queued: 2.4 s before; now 300 ms + the one in flight */
    double ms = ms_since(t0);
    fake_stop(&f);
    /* Waiting for every queued write took 2.4 s; the bound is ~0.6 s (margins for a loaded machine). */
    if (ms > PUTS * SLOW_MS * 3 / 4)
        fail_msg("close took %.0f ms: it waited for the queue (bound %d ms + one command)", ms, CLOSE);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_REMOTE_PUTS] + st.v[KC_STAT_REMOTE_DROPPED], PUTS); /* each counted once */
    assert_true(st.v[KC_STAT_REMOTE_DROPPED] >= 1); /* the bound acted, and what it dropped is counted */
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

/* Issue 15 item 18: a URL the parser refuses is named in the error with its password hidden,
 * as kc_remote_state shows it; the user name stays. */
static void test_url_errors_hide_the_password(void **state) {
    (void)state;
    static const char *const bad[] = {
        "redis://:s3cretpw@host:99999",       /* bad port */
        "redis://alice:s3cretpw@host:6379/x", /* bad db */
        "redis://s3cretpw@[::1",              /* unterminated address */
        "redis://:s3cretpw@:6379",            /* no host */
        "redis+x://:s3cretpw@host",           /* scheme */
        "rediss://:s3cretpw@host?sni=",       /* a parameter without a value */
        "redis://:s3cretpw@host:6379x",       /* trailing bytes */
    };
    kc_redis_config cfg = {100, 100, 1, 1, 0, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kc_store_backend *b = NULL;
        assert_int_equal(kc_store_redis_open(&b, bad[i], &cfg), KC_EINVAL);
        const char *m = kc_error_last()->message;
        if (strstr(m, "s3cret")) fail_msg("'%s' shows the password: %s", bad[i], m);
        assert_non_null(strstr(m, "***"));
    }
    assert_int_equal(kc_store_redis_open(&(kc_store_backend *){NULL}, "redis://alice:s3cretpw@host:6379/x", &cfg),
                     KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "redis://alice:***@host"));
}

/* ---- get_many: MGET answered wrongly ---- */

/* One get_many of two names against `script`: KC_OK only for a well-formed reply (then "abc" and
 * absent), else an error within the deadline, every out[i] NULL, the breaker open (closed after an
 * error reply: the server refused the command), little memory. */
static void hostile_mget(const char *script, int stream, int well_formed) {
    enum { DEADLINE = 300 };
    fake f;
    fake_start_script(&f, SCRIPT, script, stream);
    kc_store_backend *b = open_fake(&f, DEADLINE);
    long rss0 = peak_rss_mb();
    const char *names[] = {KCC_NAME(0), KCC_NAME(1)};
    static char junk;
    void *out[2] = {&junk, &junk};
    size_t lens[2] = {7, 7};
    uint64_t t0 = now_ns();
    int rc = b->get_many(b, names, 2, out, lens);
    double ms = ms_since(t0);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    b->free(b);
    fake_stop(&f);
    assert_int_equal(f.commands, 1); /* it was asked, once */
    if (well_formed) {
        assert_int_equal(rc, KC_OK);
        assert_non_null(out[0]);
        assert_int_equal(lens[0], 3);
        assert_memory_equal(out[0], "abc", 3);
        assert_null(out[1]);
        assert_int_equal(st.breaker, KC_BREAKER_CLOSED);
        free(out[0]);
        return;
    }
    if (rc != KC_EIO && rc != KC_ETIMEOUT) fail_msg("'%.20s': get_many answered %d", script, rc);
    if (out[0] || out[1]) fail_msg("'%.20s': out[] not NULL after an error", script);
    /* nonsense counts as a failure; an error reply (the server answered, in step) fails the command only */
    assert_int_equal(st.breaker, script[0] == '-' ? KC_BREAKER_CLOSED : KC_BREAKER_OPEN);
    if (ms > DEADLINE * 5) fail_msg("'%.20s': get_many took %.0f ms (deadline %d)", script, ms, DEADLINE);
    long grew = peak_rss_mb() - rss0;
    if (grew > 64) fail_msg("'%.20s': peak memory grew by %ld MB", script, grew);
}

static void test_mget_well_formed_is_taken(void **state) {
    (void)state;
    hostile_mget("*2\r\n$3\r\nabc\r\n$-1\r\n", 0, 1); /* the fake itself is sound */
}

static void test_mget_wrong_length(void **state) {
    (void)state;
    hostile_mget("*1\r\n$3\r\nabc\r\n", 0, 0);                   /* one value short */
    hostile_mget("*3\r\n$3\r\nabc\r\n$-1\r\n$1\r\nx\r\n", 0, 0); /* one too many */
    hostile_mget("*0\r\n", 0, 0);                                /* none */
    hostile_mget("*-1\r\n", 0, 0);                               /* a nil array */
}

static void test_mget_wrong_types(void **state) {
    (void)state;
    hostile_mget("*2\r\n:1\r\n$3\r\nabc\r\n", 0, 0);        /* a number */
    hostile_mget("*2\r\n$3\r\nabc\r\n+OK\r\n", 0, 0);       /* a status */
    hostile_mget("*2\r\n-ERR no\r\n$-1\r\n", 0, 0);         /* an error element */
    hostile_mget("*2\r\n*0\r\n$-1\r\n", 0, 0);              /* an empty array */
    hostile_mget("*2\r\n*1\r\n$3\r\nabc\r\n$-1\r\n", 0, 0); /* a nested value */
    hostile_mget("$3\r\nabc\r\n", 0, 0);                    /* not an array */
    hostile_mget(":2\r\n", 0, 0);
    hostile_mget("-ERR unknown command 'MGET'\r\n", 0, 0);
}

static void test_mget_huge_lengths(void **state) {
    (void)state;
    hostile_mget("*2\r\n$2000000000\r\n", 1, 0);              /* a bulk over the cap, then a stream */
    hostile_mget("*2\r\n$3\r\nabc\r\n$2000000000\r\n", 1, 0); /* the second one */
    hostile_mget("*2000000000\r\n", 0, 0);                    /* two billion elements, then silence */
    hostile_mget("*2\r\n$99999999999999999999\r\n", 0, 0);    /* a length past 64 bits */
}

/* The scanner's own caps, alone: elements in all levels, each bulk, and the bulks together. */
static void test_reply_scan_caps(void **state) {
    (void)state;
    kc_reply_scan s;
    size_t used;
    static const char ok[] = "*2\r\n$4\r\nabcd\r\n$4\r\nefgh\r\n";
    kc_reply_scan_init(&s, 2, 8);
    assert_int_equal(kc_reply_scan_feed(&s, 4, "t", ok, sizeof ok - 1, &used), KC_OK);
    assert_int_equal(used, sizeof ok - 1);
    assert_int_equal(s.depth, 0); /* complete */
    kc_reply_scan_init(&s, 2, 7); /* 8 bytes together: one too many */
    assert_int_equal(kc_reply_scan_feed(&s, 4, "t", ok, sizeof ok - 1, &used), KC_EIO);
    kc_reply_scan_init(&s, 2, 8);
    assert_int_equal(kc_reply_scan_feed(&s, 3, "t", ok, sizeof ok - 1, &used), KC_EIO); /* each over 3 */
    kc_reply_scan_init(&s, 1, 8);
    assert_int_equal(kc_reply_scan_feed(&s, 4, "t", ok, sizeof ok - 1, &used), KC_EIO); /* 2 elements */
    /* Fed a byte at a time, the same verdicts. */
    kc_reply_scan_init(&s, 2, 7);
    int rc = KC_OK;
    for (size_t i = 0; i < sizeof ok - 1 && rc == KC_OK; i++) rc = kc_reply_scan_feed(&s, 4, "t", ok + i, 1, &used);
    assert_int_equal(rc, KC_EIO);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_array_then_silence),
        cmocka_unit_test(test_huge_array_then_a_stream_of_elements),
        cmocka_unit_test(test_bulk_over_the_cap),
        cmocka_unit_test(test_endless_nesting),
        cmocka_unit_test(test_extra_reply_discards_the_connection),
        cmocka_unit_test(test_close_is_bounded_with_a_slow_remote),
        cmocka_unit_test(test_url_errors_hide_the_password),
        cmocka_unit_test(test_mget_well_formed_is_taken),
        cmocka_unit_test(test_mget_wrong_length),
        cmocka_unit_test(test_mget_wrong_types),
        cmocka_unit_test(test_mget_huge_lengths),
        cmocka_unit_test(test_reply_scan_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
