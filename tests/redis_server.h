/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redis_server.h — start a real redis-server (Debian's package) on a free loopback port
 * for one test, and stop it.  Without redis-server the test exits with the skip code.
 */
#ifndef KC_TEST_REDIS_SERVER_H
#define KC_TEST_REDIS_SERVER_H

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

typedef struct kct_redis {
    pid_t pid;
    int port;
    char url[64];
} kct_redis;

/* A loopback port nobody listens on now. */
static inline int kct_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static inline int kct_redis_ping(int port) {
    struct timeval tv = {0, 200000};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    int ok = 0;
    if (c && !c->err) {
        redisReply *r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS;
        if (r) freeReplyObject(r);
    }
    if (c) redisFree(c);
    return ok;
}

/* Start on `port` (0: a free one).  Returns 0, or -1 (the reason on stderr). */
static inline int kct_redis_start(kct_redis *r, int port) {
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = port ? port : kct_free_port();
        char ps[16];
        snprintf(ps, sizeof ps, "%d", r->port);
        r->pid = fork();
        if (r->pid == 0) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, 1), dup2(null, 2);
            execlp("redis-server", "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                   "no", "--protected-mode", "yes", (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) { /* up to 10 s */
            if (kct_redis_ping(r->port)) {
                snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d/0", r->port);
                return 0;
            }
            int st;
            if (waitpid(r->pid, &st, WNOHANG) == r->pid) break; /* it exited: port taken, or no binary */
            usleep(50000);
        }
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        if (port) break;
    }
    fprintf(stderr, "could not start redis-server\n");
    return -1;
}

static inline void kct_redis_stop(kct_redis *r, int sig) {
    if (r->pid <= 0) return;
    kill(r->pid, sig);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
}

/* Whether redis-server can be run at all (else the test is skipped). */
static inline int kct_have_redis(void) { return system("redis-server --version >/dev/null 2>&1") == 0; }

#endif
