/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_conn.c — kcache's own connection to a Redis node (redis_conn.h).
 *
 * The one idea: every byte that goes to or comes from a server does so on a non-blocking socket
 * under the caller's deadline, so that a server that accepts and never answers, a half-open
 * connection or a slow handshake costs at most the deadline.  The connect tries each address
 * the name resolves to (IPv4 and IPv6) under the connect deadline; writes use send(MSG_NOSIGNAL)
 * (a peer that closed raises no SIGPIPE in the caller's process); hiredis is used only to parse
 * replies (its redisReader) and, in redis_io.c, to format commands — no redisContext.  A TLS
 * connection (tls.c) runs its handshake, reads and writes through the same waits.
 *
 * A node (host, port) keeps a few idle connections under a lock; one that has anything to read
 * while idle (the server closed it, or sent a reply nobody asked for) is discarded when taken.
 *
 * Name resolution (getaddrinfo) is not under the deadline: a host name is resolved by the system
 * resolver, whose own timeouts apply (an address literal resolves without a lookup).
 *
 * Must not: block past a deadline, raise SIGPIPE, or hand out a connection with bytes pending.
 */
#include "redis_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/internal.h"
#include "redis_io.h"
#include "tls.h"
#include "redis_lib.h"

/* One address: a non-blocking connect, finished (or not) by `deadline`. */
static int connect_one(const struct addrinfo *ai, uint64_t deadline, int *fd_out, int *err) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) return *err = errno, KC_EIO;
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = KC_OK;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) rc = KC_EIO, *err = errno;
        else if ((rc = kc_redis_wait_fd(fd, POLLOUT, deadline)) == KC_EIO) *err = errno;
        else if (rc == KC_OK) {
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr)
                rc = KC_EIO, *err = soerr ? soerr : errno;
        }
    }
    if (rc) close(fd);
    else *fd_out = fd;
    return rc;
}

static int connect_tcp(const char *host, int port, const char *who, uint64_t deadline, int *fd_out) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, ps, &hints, &res);
    if (g != 0)
        return kc_err(KC_EIO, "redis %s: connect: cannot resolve '%s': %s", who, host,
                      g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    int rc = KC_EIO, err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        rc = connect_one(ai, deadline, fd_out, &err);
        if (rc != KC_EIO) break; /* connected, or out of time */
    }
    freeaddrinfo(res);
    if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: connect timed out (the connect timeout or the deadline)", who);
    if (rc) return kc_err(rc, "redis %s: connect: %s", who, strerror(err ? err : ECONNREFUSED));
    return KC_OK;
}

int kc_redis_conn_open(kc_redis_conn **out, const char *host, int port, kc_tls *tls, const char *who,
                       uint64_t connect_deadline, uint64_t deadline) {
    *out = NULL;
    if (!kc_hiredis_load()) return KC_EUNAVAILABLE;
    kc_redis_conn *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "out of memory");
    c->fd = -1;
    c->reader = kc_hiredis()->reader_create();
    if (!c->reader) {
        free(c);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    int rc = connect_tcp(host, port, who, connect_deadline < deadline ? connect_deadline : deadline, &c->fd);
    if (!rc && tls) rc = kc_tls_handshake(tls, c->fd, host, deadline, who, &c->ssl);
    if (rc) {
        kc_redis_conn_close(c);
        return rc;
    }
    *out = c;
    return KC_OK;
}

int kc_redis_conn_write(kc_redis_conn *c, const char *p, size_t n, uint64_t deadline, const char *who) {
    if (c->ssl) return kc_tls_write(c->ssl, c->fd, p, n, deadline, who);
    while (n) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w, n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return kc_err(KC_EIO, "redis %s: write: %s", who, strerror(errno));
        int rc = kc_redis_wait_fd(c->fd, POLLOUT, deadline);
        if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no progress sending within the deadline", who);
        if (rc) return kc_err(rc, "redis %s: poll: %s", who, strerror(errno));
    }
    return KC_OK;
}

/* A plaintext connection's first read failed (or brought a TLS record): most likely a TLS-only port. */
#define TLS_HINT " (a TLS port? use rediss://)"

int kc_redis_conn_read(kc_redis_conn *c, char *buf, size_t cap, size_t *got, uint64_t deadline, const char *who) {
    if (c->ssl) return kc_tls_read(c->ssl, c->fd, buf, cap, got, deadline, who);
    for (;;) {
        int rc = kc_redis_wait_fd(c->fd, POLLIN, deadline);
        if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no reply within the deadline", who);
        if (rc) return kc_err(rc, "redis %s: poll: %s", who, strerror(errno));
        ssize_t n = recv(c->fd, buf, cap, 0);
        const char *hint = c->read ? "" : TLS_HINT;
        if (n == 0) return kc_err(KC_EIO, "redis %s: read: the server closed the connection%s", who, hint);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
            return kc_err(KC_EIO, "redis %s: read: %s%s", who, strerror(errno), hint);
        }
        if (!c->read && (buf[0] == 0x15 || buf[0] == 0x16)) /* a TLS alert or handshake record */
            return kc_err(KC_EIO, "redis %s: read: the server answered in TLS" TLS_HINT, who);
        c->read = 1;
        *got = (size_t)n;
        return KC_OK;
    }
}

int kc_redis_conn_idle_clean(kc_redis_conn *c) {
    struct pollfd p = {c->fd, POLLIN, 0};
    return poll(&p, 1, 0) == 0 && c->reader->pos >= c->reader->len && (!c->ssl || kc_tls_pending(c->ssl) == 0);
}

void kc_redis_conn_close(kc_redis_conn *c) {
    if (!c) return;
    if (c->ssl) kc_tls_close(c->ssl);
    if (c->fd >= 0) close(c->fd);
    if (c->reader) kc_hiredis()->reader_free(c->reader);
    free(c);
}

void kc_redis_node_init(kc_redis_node *n, const char *host, int port) {
    memset(n, 0, sizeof *n);
    snprintf(n->host, sizeof n->host, "%s", host);
    n->port = port;
    pthread_mutex_init(&n->mu, NULL);
}

kc_redis_conn *kc_redis_node_take(kc_redis_node *n) {
    for (;;) {
        pthread_mutex_lock(&n->mu);
        kc_redis_conn *c = n->nidle ? n->idle[--n->nidle] : NULL;
        pthread_mutex_unlock(&n->mu);
        if (!c || kc_redis_conn_idle_clean(c)) return c;
        kc_redis_conn_close(c);
    }
}

void kc_redis_node_give(kc_redis_node *n, kc_redis_conn *c) {
    pthread_mutex_lock(&n->mu);
    if (n->nidle < KC_REDIS_MAX_IDLE) n->idle[n->nidle++] = c, c = NULL;
    pthread_mutex_unlock(&n->mu);
    kc_redis_conn_close(c);
}

void kc_redis_node_destroy(kc_redis_node *n) {
    for (int i = 0; i < n->nidle; i++) kc_redis_conn_close(n->idle[i]);
    n->nidle = 0;
    pthread_mutex_destroy(&n->mu);
}
