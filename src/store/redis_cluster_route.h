/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster_route.h — a command to a Redis Cluster: routed to its slot's master, MOVED
 * and ASK followed, the slot map read and refreshed, a several-key read split by slot
 * (redis_cluster_route.c).  The connections are the back end's: it lends its node objects, each
 * with its own pool and breaker, through kc_cluster_io.  Only store/redis.c (and the tests) use it.
 */
#ifndef KC_STORE_REDIS_CLUSTER_ROUTE_H
#define KC_STORE_REDIS_CLUSTER_ROUTE_H

#include <pthread.h>

#include "redis_cluster.h"
#include "redis_io.h"

#define KC_CLUSTER_MAX_KNOWN 512 /* nodes ever met (seeds, masters, redirection targets) */
#define KC_CLUSTER_MAX_HOPS 5    /* redirections one command follows (then: an error) */
#define KC_CLUSTER_MAX_SEEDS 16

/** What the back end lends the router: its nodes (a server, its pool, its breaker). */
typedef struct kc_cluster_io {
    void *ctx;
    /** A node object for host:port (NULL: out of memory). */
    void *(*node_new)(void *ctx, const char *host, int port);
    void (*node_free)(void *ctx, void *node);
    /** The node's breaker: may a command go now (KC_OK), and how it ended. */
    int (*enter)(void *ctx, void *node);
    void (*leave)(void *ctx, void *node, int failed);
    /**
     * One command to the node before `deadline` (`asking`: ASKING first, on the same connection).
     * KC_OK with *out — which may be an error reply, for the router to judge — or a failure
     * (no connection, a timeout, a reply of the wrong shape, out of step).
     */
    int (*exchange)(void *ctx, void *node, int asking, uint64_t deadline, const kc_redis_cmd *cmd, redisReply **out);
} kc_cluster_io;

typedef struct kc_cluster_known {
    kc_cluster_node addr;
    void *node;
} kc_cluster_known;

typedef struct kc_cluster {
    kc_cluster_io io;
    const char *who; /* the remote as messages show it; borrowed */
    unsigned refresh_ms;
    pthread_mutex_t mu; /* everything below */
    int nknown, nseeds;
    kc_cluster_known known[KC_CLUSTER_MAX_KNOWN]; /* append-only: an index stays valid */
    int16_t slot[KC_CLUSTER_SLOTS];               /* index into known[], -1: ask a seed */
    int loaded;                                   /* a map was read at least once */
    int refreshing;
    uint64_t refreshed_ns; /* when the last refresh began */
    unsigned long long refreshes, moved, asked;
} kc_cluster;

/**
 * Set up a router over `nseeds` seed nodes (1..KC_CLUSTER_MAX_SEEDS), reading the map at most once
 * per `refresh_ms` (0: 1000).  Nothing is sent yet: the map is read at first use.
 */
int kc_cluster_init(kc_cluster *cl, const kc_cluster_io *io, const kc_cluster_node *seeds, int nseeds,
                    unsigned refresh_ms, const char *who);
void kc_cluster_destroy(kc_cluster *cl);

/**
 * Run one command whose keys all lie in `slot`, before `deadline` — redirections and a refresh
 * of the map count against the same deadline, at most KC_CLUSTER_MAX_HOPS of them.  KC_OK with
 * *out (never an error reply: an error reply other than MOVED/ASK is KC_EIO with its text), or the
 * failure of the last node tried.
 */
int kc_cluster_command(kc_cluster *cl, unsigned slot, uint64_t deadline, const kc_redis_cmd *cmd, redisReply **out);

/** Called with each key's answer (an MGET element: a string or nil), in any order; non-zero stops. */
typedef int (*kc_cluster_take)(void *ctx, size_t i, const redisReply *value);

/**
 * GET of `n` keys (n <= KC_CLUSTER_PLAN_MAX): one MGET per slot, its reply held to the group's size
 * and `max_total` bytes (at most `all_total` over all groups), each key's answer given to take().
 * A failure of any group fails the whole call.
 */
int kc_cluster_mget(kc_cluster *cl, const char *const *keys, size_t n, uint64_t deadline, uint64_t all_total,
                    kc_cluster_take take, void *ctx);

/** The router's counts (map reads, MOVED and ASK followed), for the tests. */
void kc_cluster_counts(kc_cluster *cl, unsigned long long *refreshes, unsigned long long *moved,
                       unsigned long long *asked);

/** Call f on every known node that is a master in the current map (for SCAN, the state); the seeds while
 *  no map was read. */
void kc_cluster_each_master(kc_cluster *cl, void (*f)(void *ctx, void *node), void *ctx);

#endif
