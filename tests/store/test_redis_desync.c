/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_desync.c (label redis) — a remote whose replies are out of step with its commands
 * is a failure, never a success ([Note: replies in step] in src/store/redis_io.c): against a
 * fake server that speaks RESP but sends one reply too many to every EXISTS (with its reply, or
 * a moment later), publishing objects the server lacks is never answered "already there" (a
 * stale reply taken for EXISTS's), an EXISTS whose extra reply comes with it fails, and published
 * (remote_puts) never counts more than the objects that arrived; the same fake without the extra
 * reply gets every object, each counted once.
 * Needs no redis-server: the fake is a thread here on a free loopback port.
 */
#include "kcache.h"
#include "helpers.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

enum { MAXCL = 16, MAXKEYS = 256, OBJECTS = 20 };

/* Every EXISTS answered once (a well-behaved server), or with one reply too many: with its reply,
 * or on the server's next poll round (after the replies of the commands sent with it). */
enum extra { EXTRA_NONE, EXTRA_AT_ONCE, EXTRA_LATER };

typedef struct fake {
    int lfd, port;
    enum extra extra;
    int stop; /* atomics */
    pthread_mutex_t mu;
    char *keys[MAXKEYS]; /* distinct keys SET */
    int nkeys, sets;
    pthread_t th;
} fake;

typedef struct client {
    int fd;
    char *buf;
    size_t len, cap;
    int owe; /* an extra reply owed (late mode) */
} client;

static int has_key(fake *f, const char *k) {
    for (int i = 0; i < f->nkeys; i++)
        if (strcmp(f->keys[i], k) == 0) return 1;
    return 0;
}

/* One whole command at the front of c->buf: its argc (argv pointing into a copy), bytes used; 0 if incomplete. */
static size_t parse(const client *c, char **argv, size_t *lens, int *argc) {
    const char *p = c->buf, *end = c->buf + c->len;
    if (p >= end || *p != '*') return 0;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return 0;
    int n = atoi(p + 1);
    p = nl + 1;
    for (int i = 0; i < n; i++) {
        if (p >= end || *p != '$' || !(nl = memchr(p, '\n', (size_t)(end - p)))) return 0;
        size_t l = (size_t)atol(p + 1);
        p = nl + 1;
        if ((size_t)(end - p) < l + 2) return 0;
        if (i < 8) {
            argv[i] = malloc(l + 1);
            memcpy(argv[i], p, l);
            argv[i][l] = 0;
            lens[i] = l;
        }
        p += l + 2;
    }
    *argc = n < 8 ? n : 8;
    return (size_t)(p - c->buf);
}

static void answer(fake *f, client *c, char **argv, const size_t *lens, int argc) {
    char out[160];
    const char *cmd = argc ? argv[0] : "";
    if (!strcasecmp(cmd, "ECHO") && argc == 2 && lens[1] < 100) {
        snprintf(out, sizeof out, "$%zu\r\n%s\r\n", lens[1], argv[1]);
    } else if (!strcasecmp(cmd, "EXISTS") && argc == 2) {
        pthread_mutex_lock(&f->mu);
        int has = has_key(f, argv[1]);
        pthread_mutex_unlock(&f->mu);
        snprintf(out, sizeof out, ":%d\r\n%s", has, f->extra == EXTRA_AT_ONCE ? ":1\r\n" : ""); /* one reply too many */
        c->owe = f->extra == EXTRA_LATER;
    } else if (!strcasecmp(cmd, "SET") && argc >= 3) {
        pthread_mutex_lock(&f->mu);
        f->sets++;
        if (!has_key(f, argv[1]) && f->nkeys < MAXKEYS) f->keys[f->nkeys++] = strdup(argv[1]);
        pthread_mutex_unlock(&f->mu);
        snprintf(out, sizeof out, "+OK\r\n");
    } else if (!strcasecmp(cmd, "GET") || !strcasecmp(cmd, "EVAL")) {
        snprintf(out, sizeof out, "$-1\r\n");
    } else if (!strcasecmp(cmd, "MGET")) {
        size_t n = 0;
        n += (size_t)snprintf(out, sizeof out, "*%d\r\n", argc - 1);
        for (int i = 1; i < argc && n + 6 < sizeof out; i++) n += (size_t)snprintf(out + n, sizeof out - n, "$-1\r\n");
    } else if (!strcasecmp(cmd, "PING")) {
        snprintf(out, sizeof out, "+PONG\r\n");
    } else if (!strcasecmp(cmd, "DEL")) {
        snprintf(out, sizeof out, ":0\r\n");
    } else {
        snprintf(out, sizeof out, "+OK\r\n");
    }
    send(c->fd, out, strlen(out), MSG_NOSIGNAL);
}

static void *fake_main(void *arg) {
    fake *f = arg;
    client cl[MAXCL];
    int ncl = 0;
    while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE)) {
        struct pollfd p[MAXCL + 1];
        p[0] = (struct pollfd){f->lfd, POLLIN, 0};
        for (int i = 0; i < ncl; i++) p[1 + i] = (struct pollfd){cl[i].fd, POLLIN, 0};
        poll(p, (nfds_t)(1 + ncl), 2);
        for (int i = 0; i < ncl; i++) /* late: the extra reply a poll round after the reply */
            if (cl[i].fd >= 0 && cl[i].owe) send(cl[i].fd, ":1\r\n", 4, MSG_NOSIGNAL), cl[i].owe = 0;
        if ((p[0].revents & POLLIN) && ncl < MAXCL) {
            int fd = accept(f->lfd, NULL, NULL);
            if (fd >= 0) cl[ncl++] = (client){fd, NULL, 0, 0, 0};
        }
        for (int i = 0; i < ncl; i++) {
            client *c = &cl[i];
            if (c->fd < 0 || !(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char tmp[65536];
            ssize_t n = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                close(c->fd), c->fd = -1;
                continue;
            }
            if (n < 0) continue;
            if (c->len + (size_t)n > c->cap) {
                c->cap = (c->len + (size_t)n) * 2;
                c->buf = realloc(c->buf, c->cap);
            }
            memcpy(c->buf + c->len, tmp, (size_t)n);
            c->len += (size_t)n;
            for (;;) {
                char *argv[8];
                size_t lens[8];
                int argc = 0;
                size_t used = parse(c, argv, lens, &argc);
                if (!used) break;
                answer(f, c, argv, lens, argc);
                for (int k = 0; k < argc; k++) free(argv[k]);
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
            }
        }
    }
    for (int i = 0; i < ncl; i++) {
        if (cl[i].fd >= 0) close(cl[i].fd);
        free(cl[i].buf);
    }
    return NULL;
}

static void fake_start(fake *f, enum extra extra) {
    memset(f, 0, sizeof *f);
    f->extra = extra;
    pthread_mutex_init(&f->mu, NULL);
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

static void fake_stop(fake *f) {
    __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
    pthread_join(f->th, NULL);
    close(f->lfd);
    for (int i = 0; i < f->nkeys; i++) free(f->keys[i]);
}

static kc_key key_of(int i) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "i", (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_key_builder_free(kb);
    return k;
}

static kc_cache *open_at(const char *dir, const char *url) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = url;
    if (url) o.remote_config.deadline_ms = 500;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) fail_msg("open: %s", kc_error_last()->message);
    return c;
}

/* OBJECTS local objects published to the fake, none of which it holds: an answer "already there"
 * would be another command's reply taken for EXISTS's; remote_puts never counts more than arrived. */
static void publish_against(enum extra extra) {
    char *dir = kct_tmpdir("desync");
    kc_cache *c = open_at(dir, NULL); /* stored here only: the remote has none of them */
    for (int i = 0; i < OBJECTS; i++) {
        kc_key k = key_of(i);
        kc_entry *e;
        assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, "payload", 7), KC_OK);
        assert_int_equal(kc_cache_put(c, e), KC_OK);
        kc_entry_free(e);
    }
    kc_cache_close(c);
    fake f;
    fake_start(&f, extra);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    c = open_at(dir, url);
    int queued = 0, there = 0;
    for (int i = 0; i < OBJECTS; i++) {
        kc_key k = key_of(i);
        int rc = kc_cache_publish(c, &k, "sm_90");
        queued += rc == 1, there += rc == 0;
        assert_int_equal(kc_cache_remote_flush(c), KC_OK); /* its SET, if any, before the next EXISTS */
        usleep(3000);                                      /* a late extra reply arrives between two commands */
    }
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    kc_cache_close(c);
    fake_stop(&f);
    fprintf(stderr,
            "extra %d: publish queued %d, said already there %d; published (remote_puts) %llu, SETs %d, "
            "arrived %d, remote_errors %llu\n",
            (int)extra, queued, there, (unsigned long long)st.v[KC_STAT_REMOTE_PUTS], f.sets, f.nkeys,
            (unsigned long long)st.v[KC_STAT_REMOTE_ERRORS]);
    assert_int_equal(there, 0); /* the server never had any of them */
    assert_true(st.v[KC_STAT_REMOTE_PUTS] <= (uint64_t)f.nkeys);
    if (extra == EXTRA_NONE) { /* the fake is a sound server: everything published, counted once */
        assert_int_equal(queued, OBJECTS);
        assert_int_equal(st.v[KC_STAT_REMOTE_PUTS], OBJECTS);
        assert_int_equal(f.nkeys, OBJECTS);
        assert_int_equal(st.v[KC_STAT_REMOTE_ERRORS], 0);
    } else if (extra == EXTRA_AT_ONCE) { /* each EXISTS's extra reply stands where its ECHO's should: a failure */
        assert_int_equal(queued, 0);
        assert_true(st.v[KC_STAT_REMOTE_ERRORS] + st.v[KC_STAT_REMOTE_DROPPED] > 0);
    } /* EXTRA_LATER: a connection with a stale reply is dropped when idle, or its next command fails */
    kct_rmtree(dir);
    free(dir);
}

static void test_a_sound_server_gets_everything(void **state) {
    (void)state;
    publish_against(EXTRA_NONE);
}

static void test_extra_exists_reply_at_once(void **state) {
    (void)state;
    publish_against(EXTRA_AT_ONCE);
}

static void test_extra_exists_reply_later(void **state) {
    (void)state;
    publish_against(EXTRA_LATER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sound_server_gets_everything),
        cmocka_unit_test(test_extra_exists_reply_at_once),
        cmocka_unit_test(test_extra_exists_reply_later),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
