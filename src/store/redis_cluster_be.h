/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster_be.h — the redis back end's cluster mode (redis_cluster_be.c): the router
 * (redis_cluster_route.c) over the back end's own servers, each with its own breaker, and the
 * back end's several-key reads done by slot.  Only store/redis.c uses it.
 */
#ifndef KC_STORE_REDIS_CLUSTER_BE_H
#define KC_STORE_REDIS_CLUSTER_BE_H

#include "kcache/store.h"
#include "redis_cluster_route.h"
#include "redis_conn.h"
#include "redis_url.h"

/** What redis.c lends: one exchange on one of its nodes (a kc_redis_node: a host, a port, a pool). */
typedef struct kc_redis_lender {
    void *b;
    /** One command on `node` before `deadline` (ASKING first when `asking`); an error reply is KC_OK. */
    int (*exchange)(void *b, kc_redis_node *node, int asking, uint64_t deadline, const kc_redis_cmd *cmd,
                    redisReply **out);
} kc_redis_lender;

typedef struct kc_redis_cluster kc_redis_cluster;

/**
 * A "redis+cluster://[user[:password]@]host[:port][,host[:port]...][/0][?query]" URL (or rediss+cluster://)
 * as the single-server URL of its first seed ("redis://[user[:password]@]host:port[/0][?query]", or
 * rediss://, into `single`), and its seeds.  KC_OK,
 * or KC_EINVAL saying what is wrong (the URL shown without its password).
 */
int kc_redis_cluster_url(const char *url, char *single, size_t cap, kc_cluster_node *seeds, int *nseeds);

/** After `u` was parsed from the single-server URL: database 0 only (KC_EINVAL), and u->shown the
 *  cluster URL as messages show it. */
int kc_redis_cluster_url_done(kc_redis_url *u, const char *url);

/** A cluster over `seeds` (the URL's, 1..KC_CLUSTER_MAX_SEEDS); `shown` (borrowed) names it in messages. */
int kc_redis_cluster_new(kc_redis_cluster **out, const kc_redis_lender *l, const kc_cluster_node *seeds, int nseeds,
                         const kc_remote_limits *cfg, const char *shown);
void kc_redis_cluster_free(kc_redis_cluster *c);

/** One command whose keys are in one slot: the slot of argv[1] (argv[3] for EVAL), under one deadline. */
int kc_redis_cluster_command(kc_redis_cluster *c, const kc_redis_cmd *cmd, redisReply **out);

/** GET of n names (each `prefix` + name), one MGET per slot (kc_cluster_mget), all under one deadline. */
int kc_redis_cluster_mget(kc_redis_cluster *c, const char *prefix, const char *const *names, size_t n,
                          uint64_t all_total, kc_cluster_take take, void *ctx);

/**
 * The first present of n names (n <= 64; each `prefix` + name): one EVAL of `script` (get_first's:
 * {index, value} or nil) per slot, the groups in the names' order, stopping once no group can hold an
 * earlier name.  KC_OK with *which, its value given to take(ctx, 0, value); KC_MISS; or an error.
 */
int kc_redis_cluster_first(kc_redis_cluster *c, const char *prefix, const char *const *names, size_t n,
                           const char *script, size_t *which, kc_cluster_take take, void *ctx);

/** The tier's breaker as one: open only while every master's (every seed's before a map) is open. */
void kc_redis_cluster_state(kc_redis_cluster *c, kc_remote_state *out);

/** The router (counts, each master: SCAN). */
kc_cluster *kc_redis_cluster_router(kc_redis_cluster *c);

/** The server a router node stands for (kc_cluster_each_master's node). */
kc_redis_node *kc_redis_cluster_server(void *node);

#endif
