/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_conn.h — kcache's own connection to one Redis node: connect, write and read on a
 * non-blocking socket under a deadline (plaintext or TLS), and a node's pool of idle connections
 * (redis_conn.c).  Callers: store/redis.c and store/redis_io.c only.
 *
 * The node API (what a command is routed to): a kc_redis_node is one server (host, port) with its
 * own pool; store/redis.c's commands take a node (node_command_as), and the single-server back end
 * keeps one.  A cluster keeps one node per master and routes each command to its slot's node.
 */
#ifndef KC_STORE_REDIS_CONN_H
#define KC_STORE_REDIS_CONN_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define KC_REDIS_MAX_IDLE 8

typedef struct kc_tls kc_tls; /* a TLS client context (tls.c); NULL: plaintext */

/** One connection: its socket, the reply reader (hiredis's parser only) and its TLS session. */
typedef struct kc_redis_conn {
    int fd;
    redisReader *reader;
    void *ssl; /* an SSL *, NULL: plaintext */
    int read;  /* bytes have been read on it (a plaintext connection dropped before: a TLS port?) */
} kc_redis_conn;

/**
 * Connect to host:port (a name or an IPv4/IPv6 literal; every address getaddrinfo gives is
 * tried) within `connect_deadline`, then (tls not NULL) the TLS handshake within `deadline`.
 * `who` is the server as messages show it (never a password).  KC_OK with *out, or an error
 * that says what and where (KC_ETIMEOUT, KC_EIO, KC_ENOMEM).
 */
int kc_redis_conn_open(kc_redis_conn **out, const char *host, int port, kc_tls *tls, const char *who,
                       uint64_t connect_deadline, uint64_t deadline);

/** Write all `n` bytes before `deadline` (no SIGPIPE ever raised). */
int kc_redis_conn_write(kc_redis_conn *c, const char *p, size_t n, uint64_t deadline, const char *who);

/** Read what is there (at least one byte, at most `cap`) before `deadline`: KC_OK with *got. */
int kc_redis_conn_read(kc_redis_conn *c, char *buf, size_t cap, size_t *got, uint64_t deadline, const char *who);

/** 1 when the connection has nothing to read and nothing buffered (safe to send a command on). */
int kc_redis_conn_idle_clean(kc_redis_conn *c);

void kc_redis_conn_close(kc_redis_conn *c);

/** One server and its pool of idle connections. */
typedef struct kc_redis_node {
    char host[256];
    int port;
    pthread_mutex_t mu;
    kc_redis_conn *idle[KC_REDIS_MAX_IDLE];
    int nidle;
} kc_redis_node;

/** Set up a node for host:port (host shorter than 256 bytes); its pool starts empty. */
void kc_redis_node_init(kc_redis_node *n, const char *host, int port);
/** An idle connection that is clean (kc_redis_conn_idle_clean), or NULL; unclean ones are closed. */
kc_redis_conn *kc_redis_node_take(kc_redis_node *n);
/** Give a connection back after a reply in step; closed when the pool is full. */
void kc_redis_node_give(kc_redis_node *n, kc_redis_conn *c);
/** Close every idle connection and release the node. */
void kc_redis_node_destroy(kc_redis_node *n);

#endif
