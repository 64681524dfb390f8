/* fuzz_redis.c — libFuzzer target: the Redis backend (src/store/redis.c) reading the fuzzer's
 * bytes as a server's reply.
 *
 * The backend has no reply parser to call without a socket (hiredis parses, redis.c judges the
 * reply inside each command), so this target is a fake server: a thread on 127.0.0.1 accepts,
 * reads the command, answers with the input's bytes after the first and closes.  The first byte
 * picks the command: GET, EXISTS, DEL, SET, or the several-name GET (get_first).  A fresh backend
 * per input keeps the circuit breaker and the pool out of the way; the deadlines are short, and
 * the close ends every reply at once.  Only the remote tier's code is under test, never a server. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kcache.h"
#include "kcache/sys/store.h"

static int lfd = -1;
static char url[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *reply;
static size_t reply_len;
static int serving; /* 1 while the thread may answer the current input */

static void *server(void *arg) {
    (void)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;
        char buf[4096];
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) (void)!read(fd, buf, sizeof buf); /* the command */
        pthread_mutex_lock(&mu);
        if (serving) {
            size_t off = 0;
            while (off < reply_len) {
                ssize_t w = send(fd, reply + off, reply_len - off, MSG_NOSIGNAL);
                if (w <= 0) break;
                off += (size_t)w;
            }
        }
        pthread_mutex_unlock(&mu);
        shutdown(fd, SHUT_RDWR);
        close(fd);
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (lfd < 0) {
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t al = sizeof a;
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 16) ||
            getsockname(lfd, (struct sockaddr *)&a, &al))
            abort();
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", ntohs(a.sin_port));
        pthread_t t;
        if (pthread_create(&t, NULL, server, NULL)) abort();
        pthread_detach(t);
    }
    if (size < 1) return 0;
    pthread_mutex_lock(&mu);
    reply = data + 1, reply_len = size - 1, serving = 1;
    pthread_mutex_unlock(&mu);
    kc_redis_config cfg = {0};
    cfg.connect_ms = 200;
    cfg.deadline_ms = 200;
    cfg.max_value = 1 << 20;
    kc_store_backend *be;
    if (kc_store_redis_open(&be, url, &cfg) != KC_OK) abort();
    const char *names[] = {"00000000000000000000000000000000.sm_80", "00000000000000000000000000000000.sm_90"};
    void *out = NULL;
    size_t len = 0, which = 0;
    switch (data[0] % 5) {
    case 0: be->get(be, names[0], &out, &len); break;
    case 1: be->exists(be, names[0]); break;
    case 2: be->remove(be, names[0]); break;
    case 3: be->put(be, names[0], "value", 5); break;
    default:
        if (be->get_first) be->get_first(be, names, 2, &which, &out, &len);
        break;
    }
    free(out);
    be->free(be);
    pthread_mutex_lock(&mu);
    serving = 0;
    pthread_mutex_unlock(&mu);
    return 0;
}
