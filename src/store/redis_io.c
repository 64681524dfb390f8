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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../common/internal.h"
#include "redis_conn.h"
#include "redis_io.h"
#include "redis_lib.h"

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

/* Bytes read from the socket and not yet given to hiredis (those of the next reply). */
typedef struct inbuf {
    char buf[16384];
    size_t off, len;
} inbuf;

/* Read one reply, bounded by `max_elements`/`max_total` as it arrives; KC_OK with *out. */
static int read_reply(kc_redis_conn *c, const char *who, uint64_t max_value, uint64_t deadline, uint64_t max_elements,
                      uint64_t max_total, inbuf *in, redisReply **out) {
    kc_reply_scan s;
    kc_reply_scan_init(&s, max_elements, max_total);
    for (;;) {
        void *reply = NULL;
        if (kc_hiredis()->reader_get_reply(c->reader, &reply) != REDIS_OK)
            return kc_err(KC_EIO, "redis %s: protocol: %s", who, c->reader->errstr);
        if (reply) {
            *out = reply;
            return KC_OK;
        }
        if (s.depth == 0) /* the scan saw the whole reply but hiredis did not: disagree, give up */
            return kc_err(KC_EIO, "redis %s: protocol: reply not understood", who);
        if (in->off == in->len) {
            size_t got = 0;
            int rc = kc_redis_conn_read(c, in->buf, sizeof in->buf, &got, deadline, who);
            if (rc) return rc;
            in->off = 0, in->len = got;
        }
        size_t used = 0;
        int rc = kc_reply_scan_feed(&s, max_value, who, in->buf + in->off, in->len - in->off, &used);
        if (rc) return rc;
        if (kc_hiredis()->reader_feed(c->reader, in->buf + in->off, used) != REDIS_OK)
            return kc_err(KC_EIO, "redis %s: protocol: %s", who, c->reader->errstr);
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

/* The command, and (ex) the ECHO of the nonce after it, formatted into one buffer and sent in one write. */
static int send_cmd(const kc_redis_link *l, const kc_redis_cmd *cmd, const char *nonce) {
    const char *eargv[] = {"ECHO", nonce};
    size_t elens[] = {4, strlen(nonce)};
    char *a = NULL, *e = NULL;
    long long na = kc_hiredis()->format_argv(&a, cmd->argc, cmd->argv, cmd->lens);
    long long ne = cmd->ex ? kc_hiredis()->format_argv(&e, 2, eargv, elens) : 0;
    int rc = KC_OK;
    if (na < 0 || ne < 0 || !a || (cmd->ex && !e)) rc = kc_err(KC_ENOMEM, "out of memory");
    char *both = NULL;
    if (!rc && ne > 0 && !(both = malloc((size_t)na + (size_t)ne))) rc = kc_err(KC_ENOMEM, "out of memory");
    if (!rc && both) {
        memcpy(both, a, (size_t)na);
        memcpy(both + na, e, (size_t)ne);
    }
    if (!rc) rc = kc_redis_conn_write(l->c, both ? both : a, (size_t)(na + ne), l->deadline, l->who);
    free(both);
    if (a) kc_hiredis()->free_command(a);
    if (e) kc_hiredis()->free_command(e);
    return rc;
}

int kc_redis_send_recv(const kc_redis_link *l, const kc_redis_cmd *cmd, redisReply **out, int *extra) {
    kc_redis_conn *c = l->c;
    const char *who = l->who, **argv = cmd->argv;
    uint64_t max_value = l->max_value, deadline = l->deadline;
    const kc_reply_expect *ex = cmd->ex;
    *out = NULL;
    *extra = 0;
    char nonce[40];
    make_nonce(nonce);
    int src = send_cmd(l, cmd, nonce);
    if (src) return src;
    if (c->reader->len > c->reader->pos) { /* bytes from before this command: not its reply */
        *extra = 1;
        return kc_err(KC_EIO, "redis %s: protocol: unexpected bytes before the reply", who);
    }
    inbuf in;
    in.off = in.len = 0;
    uint64_t max_el = !ex                ? REPLY_MAX_ELEMENTS
                      : ex->elements     ? ex->elements
                      : ex->max_elements ? ex->max_elements
                                         : REPLY_MAX_ELEMENTS;
    int rc = read_reply(c, who, max_value, deadline, max_el, ex && ex->max_total ? ex->max_total : max_value, &in, out);
    if (rc == KC_OK && ex) { /* the nonce must come next: else the reply above was not this command's */
        redisReply *echo = NULL;
        rc = read_reply(c, who, max_value, deadline, 1, sizeof nonce, &in, &echo);
        int mine = rc == KC_OK && echo->type == REDIS_REPLY_STRING && echo->len == strlen(nonce) &&
                   memcmp(echo->str, nonce, echo->len) == 0;
        if (echo) kc_hiredis_free_reply(echo);
        if (rc == KC_OK && !mine) {
            *extra = 1;
            rc = kc_err(KC_EIO,
                        "redis %s: %s: replies out of step with the commands (a reply nobody asked for): "
                        "connection closed",
                        who, argv[0]);
        }
        if (rc) kc_hiredis_free_reply(*out), *out = NULL;
    }
    if (in.off < in.len) *extra = 1; /* past the replies: dropped with the connection */
    return rc;
}
