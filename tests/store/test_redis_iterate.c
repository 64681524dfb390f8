/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_iterate.c (label redis) — the redis backend's iterate (SCAN MATCH "kcache:v1:*", each
 * key's size by one EVAL of STRLEN per round), what `kcache purge` walks a remote with.  Against a
 * real redis-server: several hundred entries (more than one SCAN round) are each seen with their
 * size, a lease key ("kcache:v1:lease:…") and another application's keys never, and a callback's
 * non-zero return stops the walk and is returned.  Against a fake server that answers SCAN with a
 * scripted hostile reply: a cursor that comes back, a cursor that never ends, a cursor that is not a
 * number, more keys than a reply may hold, a key that is not a string, a reply that is not an array,
 * sizes that do not fit the keys — each a clean KC_EIO within a bounded time, never a hang or a crash;
 * keys that are not entry names (a path, an over-long name) are skipped.
 */
#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

#include "kcache/sys/store.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

/* ---- a real redis-server ---- */

#define N_ENTRIES 300

typedef struct walk {
    int seen[N_ENTRIES];
    int other, stop_at, visits;
} walk;

static int count_cb(const kc_store_item *it, void *ctx) {
    walk *w = ctx;
    w->visits++;
    unsigned i;
    if (strlen(it->name) == 32 + 6 && sscanf(it->name + 28, "%4x", &i) == 1 && i < N_ENTRIES &&
        strcmp(it->name + 32, ".sm_90") == 0 && it->bytes == i + 1u)
        w->seen[i]++;
    else w->other++;
    return w->stop_at && w->visits == w->stop_at ? 7 : 0;
}

static void test_walks_every_entry_once_and_nothing_else(void **state) {
    (void)state;
    kct_redis srv;
    if (kct_redis_start(&srv, 0) != 0) fail_msg("redis-server did not start");
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, srv.url, NULL), KC_OK);
    assert_non_null(b->iterate);
    char name[64], val[N_ENTRIES + 1];
    memset(val, 'v', sizeof val);
    for (int i = 0; i < N_ENTRIES; i++) {
        snprintf(name, sizeof name, "0123456789abcdef0123456789ab%04x.sm_90", i);
        assert_int_equal(b->put(b, name, val, (size_t)i + 1), KC_OK);
    }
    redisContext *c = redisConnect("127.0.0.1", srv.port);
    assert_true(c && !c->err);
    const char *foreign[] = {"kcache:v1:lease:0123456789abcdef0123456789abcdef.sm_90", "otherapp:x",
                             "kcache:v1:../../etc/passwd", "kcache:v2:0123456789abcdef0123456789abcdef.sm_90"};
    for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++)
        freeReplyObject(redisCommand(c, "SET %s x", foreign[i]));
    redisFree(c);
    walk w = {0};
    assert_int_equal(b->iterate(b, count_cb, &w), KC_OK);
    for (int i = 0; i < N_ENTRIES; i++) assert_int_equal(w.seen[i], 1);
    assert_int_equal(w.other, 0);
    walk s = {.stop_at = 5};
    assert_int_equal(b->iterate(b, count_cb, &s), 7); /* the callback's return stops the walk */
    assert_int_equal(s.visits, 5);
    b->free(b);
    kct_redis_stop(&srv, SIGTERM);
}

/* ---- a fake server answering SCAN with a scripted reply ---- */

enum mode { REPEAT, ENDLESS, BAD_CURSOR, TOO_MANY, NOT_STRING, NOT_ARRAY, BAD_SIZES, ODD_NAMES };

typedef struct fake {
    enum mode mode;
    int lfd, port;
    volatile int stop;
    long scans;
    pthread_t th;
} fake;

static char big[64 * 1024];

/* The reply to one request (a SCAN or an EVAL), followed by the ECHO's ([Note: replies in step]). */
static size_t answer(fake *f, const char *req, size_t len, char *out, size_t cap) {
    const char *r = "";
    char tmp[256];
    if (memmem(req, len, "SCAN", 4)) {
        f->scans++;
        switch (f->mode) {
        case REPEAT: r = "*2\r\n$1\r\n5\r\n*0\r\n"; break;
        case ENDLESS:
            snprintf(tmp, sizeof tmp, "*2\r\n$%d\r\n%ld\r\n*0\r\n", (int)snprintf(NULL, 0, "%ld", f->scans), f->scans),
                r = tmp;
            break;
        case BAD_CURSOR: r = "*2\r\n$2\r\n-1\r\n*0\r\n"; break;
        case TOO_MANY: r = big; break;
        case NOT_STRING: r = "*2\r\n$1\r\n0\r\n*1\r\n:5\r\n"; break;
        case NOT_ARRAY: r = "$1\r\n0\r\n"; break;
        case BAD_SIZES:
        case ODD_NAMES:
            r = "*2\r\n$1\r\n0\r\n*3\r\n$48\r\nkcache:v1:0123456789abcdef0123456789abcdef.sm_90\r\n"
                "$26\r\nkcache:v1:../../etc/passwd\r\n$12\r\nkcache:v1:ab\r\n";
            break;
        }
    } else r = f->mode == BAD_SIZES ? "*2\r\n:1\r\n:2\r\n" : "*1\r\n:42\r\n"; /* the EVAL of sizes: one key */
    const char *e = NULL;                                                     /* the ECHO after the command */
    for (size_t i = 0; !e && i + 9 <= len; i++)
        if (memcmp(req + i, "\r\nECHO\r\n$", 9) == 0) e = req + i + 9;
    long n = e ? strtol(e, (char **)&e, 10) : 0;
    size_t rl = strlen(r);
    if (rl + 128 > cap) return 0;
    memcpy(out, r, rl);
    if (n > 0 && n <= 64) rl += (size_t)snprintf(out + rl, cap - rl, "$%ld\r\n%.*s\r\n", n, (int)n, e + 2);
    return rl;
}

static void *fake_main(void *arg) {
    fake *f = arg;
    int cl[8], ncl = 0;
    static char req[65536], out[sizeof big + 256];
    while (!f->stop) {
        struct pollfd p[9];
        p[0] = (struct pollfd){f->lfd, POLLIN, 0};
        for (int i = 0; i < ncl; i++) p[1 + i] = (struct pollfd){cl[i], POLLIN, 0};
        poll(p, (nfds_t)(1 + ncl), 20);
        if ((p[0].revents & POLLIN) && ncl < 8) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd >= 0) cl[ncl++] = fd;
        }
        for (int i = 0; i < ncl; i++) {
            if (cl[i] < 0 || !(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = recv(cl[i], req, sizeof req, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                close(cl[i]), cl[i] = -1;
                continue;
            }
            size_t ol = n > 0 ? answer(f, req, (size_t)n, out, sizeof out) : 0;
            for (size_t off = 0; off < ol;) { /* blocking enough: the client reads while we write */
                ssize_t w = send(cl[i], out + off, ol - off, MSG_NOSIGNAL);
                if (w <= 0) break;
                off += (size_t)w;
            }
        }
    }
    for (int i = 0; i < ncl; i++)
        if (cl[i] >= 0) close(cl[i]);
    return NULL;
}

static kc_store_backend *fake_open(fake *f, enum mode m) {
    memset(f, 0, sizeof *f);
    f->mode = m;
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
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f->port);
    kc_redis_config cfg = {200, 1000, 1, 1, 0, 0};
    kc_store_backend *b;
    assert_int_equal(kc_store_redis_open(&b, url, &cfg), KC_OK);
    return b;
}

static void fake_close(fake *f, kc_store_backend *b) {
    b->free(b);
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static int names_cb(const kc_store_item *it, void *ctx) {
    int *n = ctx;
    assert_int_equal(strcmp(it->name, "0123456789abcdef0123456789abcdef.sm_90"), 0);
    assert_int_equal(it->bytes, 42);
    (*n)++;
    return 0;
}

/* One hostile walk: its status, and `*scans` the SCAN rounds the fake answered. */
static int hostile_walk(enum mode m, long *scans, int *visited) {
    fake f;
    kc_store_backend *b = fake_open(&f, m);
    *visited = 0;
    int rc = b->iterate(b, names_cb, visited);
    if (rc != KC_OK) assert_non_null(strstr(kc_error_last()->message, "redis"));
    *scans = f.scans;
    fake_close(&f, b);
    return rc;
}

static void test_hostile_scan_replies(void **state) {
    (void)state;
    long scans;
    int visited;
    assert_int_equal(hostile_walk(REPEAT, &scans, &visited), KC_EIO); /* "5", "5": the cursor came back */
    assert_true(scans == 2);
    assert_non_null(strstr(kc_error_last()->message, "came back"));
    assert_int_equal(hostile_walk(BAD_CURSOR, &scans, &visited), KC_EIO);
    assert_int_equal(hostile_walk(NOT_STRING, &scans, &visited), KC_EIO);
    assert_int_equal(hostile_walk(NOT_ARRAY, &scans, &visited), KC_EIO);
    assert_int_equal(hostile_walk(BAD_SIZES, &scans, &visited), KC_EIO); /* two sizes for one key */
    assert_int_equal(visited, 0);
    assert_int_equal(hostile_walk(ODD_NAMES, &scans, &visited), KC_OK); /* a path, a short name: skipped */
    assert_int_equal(visited, 1);
    /* 2000 keys in one reply: refused as it arrives (the reply scanner's element cap). */
    char *p = big;
    p += sprintf(p, "*2\r\n$1\r\n0\r\n*2000\r\n");
    for (int i = 0; i < 2000; i++) p += sprintf(p, "$10\r\nkcache:v1:\r\n");
    assert_int_equal(hostile_walk(TOO_MANY, &scans, &visited), KC_EIO);
}

static void test_endless_cursor_is_cut(void **state) {
    (void)state;
    long scans;
    int visited;
    assert_int_equal(hostile_walk(ENDLESS, &scans, &visited), KC_EIO); /* a new cursor every time */
    assert_non_null(strstr(kc_error_last()->message, "no end after"));
    assert_true(scans == 65536);
}

int main(void) {
    const struct CMUnitTest fake_tests[] = {
        cmocka_unit_test(test_hostile_scan_replies),
        cmocka_unit_test(test_endless_cursor_is_cut),
    };
    int rc = cmocka_run_group_tests(fake_tests, NULL, NULL);
    if (!kct_have_redis()) {
        fprintf(stderr, "skipped: redis-server is not installed (tools/deps.sh installs it)\n");
        return rc ? rc : KC_SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walks_every_entry_once_and_nothing_else),
    };
    return rc | cmocka_run_group_tests(tests, NULL, NULL);
}
