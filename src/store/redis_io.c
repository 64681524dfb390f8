/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_io.c — one command to a Redis server under a deadline, its reply checked as it
 * arrives (redis_reply.c) and proven to be its own.
 *
 * [Note: replies in step] RESP replies carry no request id: a server (or a proxy) that sends one
 * reply too many — at once, or a moment later — puts every later reply on that connection one
 * command off, and an EXISTS answered by another command's ":1" says "already there" for an
 * object the remote never got, a SET answered by a stale "+OK" counts as stored.  Closing a
 * connection that shows bytes past a reply catches only the extra that arrives with the reply.
 * So every command (but the setup commands of a fresh connection) is sent with an ECHO of a
 * nonce, in the same write, and its reply is accepted only when the next reply is that nonce:
 * a stale reply in front makes the command's own reply arrive where the nonce should be, a
 * failure (KC_EIO, the connection dropped), never a success; a late extra after the nonce is
 * caught by the next command the same way, or by the pool's idle check.  The cost is a few
 * bytes each way, in the same round trip.  The remote's user must be allowed ECHO (in
 * @connection; every default user is).
 *
 * Must not: take a reply that is not proven this command's, read past the deadline, or let
 * hiredis see a reply the scanner has not bounded.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/internal.h"
#include "redis_io.h"

int kc_redis_wait_fd(int fd, short ev, uint64_t deadline) {
    for (;;) {
        uint64_t now = kc_mono_ns();
        if (now >= deadline) return KC_ETIMEOUT;
        struct pollfd p = {fd, ev, 0};
        int ms = (int)((deadline - now + 999999) / 1000000);
        int n = poll(&p, 1, ms);
        if (n > 0) return KC_OK;
        if (n < 0 && errno != EINTR) return KC_EIO;
    }
}

/*
 * hiredis writes with write(2): to a peer that closed, that raises SIGPIPE, which would
 * kill a caller that did not ignore it.  A library must not change the process's signal
 * handling, so SIGPIPE is blocked on this thread for the write and a pending one consumed.
 */
static int guarded_write(redisContext *c, int *done) {
    sigset_t pipe, old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    int rc = redisBufferWrite(c, done);
    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Bytes read from the socket and not yet given to hiredis (those of the next reply). */
typedef struct inbuf {
    char buf[16384];
    size_t off, len;
} inbuf;

/* Read one reply, bounded by `max_elements`/`max_total` as it arrives; KC_OK with *out. */
static int read_reply(redisContext *c, const char *who, uint64_t max_value, uint64_t deadline, uint64_t max_elements,
                      uint64_t max_total, inbuf *in, redisReply **out) {
    kc_reply_scan s;
    kc_reply_scan_init(&s, max_elements, max_total);
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) return kc_err(KC_EIO, "redis: protocol: %s", c->errstr);
        if (reply) {
            *out = reply;
            return KC_OK;
        }
        if (s.depth == 0) /* the scan saw the whole reply but hiredis did not: disagree, give up */
            return kc_err(KC_EIO, "redis %s: protocol: reply not understood", who);
        if (in->off == in->len) {
            int rc = kc_redis_wait_fd(c->fd, POLLIN, deadline);
            if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no reply within the deadline", who);
            if (rc) return kc_err(rc, "redis: poll: %s", strerror(errno));
            ssize_t n = recv(c->fd, in->buf, sizeof in->buf, 0);
            if (n == 0) return kc_err(KC_EIO, "redis %s: read: the server closed the connection", who);
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
                return kc_err(KC_EIO, "redis %s: read: %s", who, strerror(errno));
            }
            in->off = 0, in->len = (size_t)n;
        }
        size_t used = 0;
        int rc = kc_reply_scan_feed(&s, max_value, who, in->buf + in->off, in->len - in->off, &used);
        if (rc) return rc;
        if (redisReaderFeed(c->reader, in->buf + in->off, used) != REDIS_OK)
            return kc_err(KC_EIO, "redis: protocol: %s", c->errstr);
        in->off += used;
    }
}

/* A nonce no reply of another command can be: this process's count, mixed with the clock. */
static void make_nonce(char out[40]) {
    static uint64_t count;
    uint64_t n = __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
    snprintf(out, 40, "kcache-%016llx-%llu", (unsigned long long)(kc_mono_ns() ^ (n * 0x9E3779B97F4A7C15ull)),
             (unsigned long long)n);
}

int kc_redis_send_recv(const kc_redis_link *l, const kc_redis_cmd *cmd, redisReply **out, int *extra) {
    redisContext *c = l->c;
    const char *who = l->who, **argv = cmd->argv;
    uint64_t max_value = l->max_value, deadline = l->deadline;
    const kc_reply_expect *ex = cmd->ex;
    *out = NULL;
    *extra = 0;
    char nonce[40];
    make_nonce(nonce);
    const char *eargv[] = {"ECHO", nonce};
    size_t elens[] = {4, strlen(nonce)};
    if (redisAppendCommandArgv(c, cmd->argc, argv, cmd->lens) != REDIS_OK ||
        (ex && redisAppendCommandArgv(c, 2, eargv, elens) != REDIS_OK))
        return kc_err(KC_EIO, "redis: %s", c->errstr);
    int done = 0;
    while (!done) {
        if (guarded_write(c, &done) != REDIS_OK) return kc_err(KC_EIO, "redis: write: %s", c->errstr);
        int rc = done ? KC_OK : kc_redis_wait_fd(c->fd, POLLOUT, deadline);
        if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no progress sending within the deadline", who);
        if (rc) return kc_err(rc, "redis: poll: %s", strerror(errno));
    }
    if (c->reader->len > c->reader->pos) { /* bytes from before this command: not its reply */
        *extra = 1;
        return kc_err(KC_EIO, "redis %s: protocol: unexpected bytes before the reply", who);
    }
    inbuf in;
    in.off = in.len = 0;
    int rc = read_reply(c, who, max_value, deadline,
                        ex && ex->elements           ? ex->elements
                        : ex && (ex->types & T_MANY) ? REPLY_MAX_MANY
                                                     : REPLY_MAX_ELEMENTS,
                        ex && ex->max_total ? ex->max_total : max_value, &in, out);
    if (rc == KC_OK && ex) { /* the nonce must come next: else the reply above was not this command's */
        redisReply *echo = NULL;
        rc = read_reply(c, who, max_value, deadline, 1, sizeof nonce, &in, &echo);
        int mine = rc == KC_OK && echo->type == REDIS_REPLY_STRING && echo->len == strlen(nonce) &&
                   memcmp(echo->str, nonce, echo->len) == 0;
        if (echo) freeReplyObject(echo);
        if (rc == KC_OK && !mine) {
            *extra = 1;
            rc = kc_err(KC_EIO,
                        "redis %s: %s: replies out of step with the commands (a reply nobody asked for): "
                        "connection closed",
                        who, argv[0]);
        }
        if (rc) freeReplyObject(*out), *out = NULL;
    }
    if (in.off < in.len) *extra = 1; /* past the replies: dropped with the connection */
    return rc;
}
