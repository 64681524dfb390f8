/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster.h — what the redis back end needs to speak to a Redis Cluster, without a
 * socket: a key's slot, the slot map read from a CLUSTER SLOTS reply, the MOVED and ASK
 * redirections, and the plan that splits a several-key read by slot (redis_cluster.c).  Only
 * store/redis.c (and its tests and fuzz target) use it.
 */
#ifndef KC_STORE_REDIS_CLUSTER_H
#define KC_STORE_REDIS_CLUSTER_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define KC_CLUSTER_SLOTS 16384
#define KC_CLUSTER_MAX_NODES 256    /* masters in one map: Redis advises at most 1,000 nodes, masters fewer */
#define KC_CLUSTER_MAX_RANGES 8192  /* slot ranges in one CLUSTER SLOTS reply (a map cut up by resharding) */
#define KC_CLUSTER_MAX_PER_RANGE 66 /* a range's values: start, end, its master and up to 63 replicas */
#define KC_CLUSTER_HOST_MAX 255     /* a host name or address, as DNS bounds a name */
#define KC_CLUSTER_PLAN_MAX 256     /* keys in one planned read (KC_IMAGES_MAX) */

/* What a CLUSTER SLOTS reply may hold, for the reply scanner (redis_reply.h) before hiredis sees it:
 * every array element of every level together, and the bulk strings' bytes together. */
#define KC_CLUSTER_REPLY_ELEMENTS 65536
#define KC_CLUSTER_REPLY_BYTES (1u << 20)

typedef struct kc_cluster_node {
    char host[KC_CLUSTER_HOST_MAX + 1];
    int port;
} kc_cluster_node;

/** The masters and which of them serves each slot (-1: none known; ask a seed, and follow MOVED). */
typedef struct kc_cluster_map {
    int nnodes;
    kc_cluster_node node[KC_CLUSTER_MAX_NODES];
    int16_t slot_node[KC_CLUSTER_SLOTS];
} kc_cluster_map;

/** The slot of a key (CRC16-XMODEM of the key, or of its first non-empty {hash tag}, mod 16384). */
unsigned kc_cluster_slot(const char *key, size_t len);

/** Whether `s` is a host name or address kcache will connect to (1 or 0): 1..255 bytes of letters,
 *  digits, '.', '-', '_' and ':' (IPv6), not starting with '-'. */
int kc_cluster_host_ok(const char *s, size_t len);

/**
 * Read a CLUSTER SLOTS reply into *out (KC_OK), or refuse it (KC_EIO, saying what is wrong, with
 * `who`, the node as messages show it): not an array, a range that is not [start, end, [host,
 * port, ...], ...] with 0 <= start <= end < 16384, ranges that overlap, a host that fails
 * kc_cluster_host_ok, a port outside 1..65535, more than KC_CLUSTER_MAX_RANGES ranges or
 * KC_CLUSTER_MAX_NODES masters.  A master's empty host is `asked_host` (the node that answered:
 * Redis's "same endpoint"); a master of host "?" (an endpoint it does not know) leaves its slots
 * unknown.  Replicas are not read.  *out is left whole either way (on refusal: no slot known).
 */
int kc_cluster_map_parse(const redisReply *r, const char *asked_host, const char *who, kc_cluster_map *out);

/** The node serving `slot` in `m`, or -1. */
int kc_cluster_map_node(const kc_cluster_map *m, unsigned slot);

enum { KC_REDIRECT_NONE = 0, KC_REDIRECT_MOVED = 1, KC_REDIRECT_ASK = 2 };

typedef struct kc_cluster_redirect {
    int kind; /* KC_REDIRECT_* */
    unsigned slot;
    kc_cluster_node to; /* host "" : the same host as the node that answered */
} kc_cluster_redirect;

/**
 * An error reply's text (without its '-'), `len` bytes: "MOVED <slot> <host>:<port>" or "ASK <slot>
 * <host>:<port>" (the host may be empty, or an IPv6 address: the port follows the last ':').  The
 * kind (KC_REDIRECT_NONE for any other error, or one that does not parse exactly: a bad slot, port
 * or host, or anything after the port).
 */
int kc_cluster_redirect_parse(const char *err, size_t len, kc_cluster_redirect *out);

/**
 * Split a read of `n` keys, whose slots are `slots`, into groups of one slot each (a cluster
 * refuses one command over several slots: CROSSSLOT), the groups of one node next to each other
 * (`m` may be NULL: by first appearance only).  order[] (n entries) lists the keys' indices group
 * after group, each group in the keys' own order; start[] (n + 1 entries) is where each group
 * begins in order[], start[groups] = n.  The caller sends group g's keys order[start[g]] ..
 * order[start[g+1] - 1] and puts the j-th answer back at order[start[g] + j].  The number of
 * groups (0 when n is 0 or over KC_CLUSTER_PLAN_MAX; O(n^2) steps, no allocation).
 */
size_t kc_cluster_plan(const unsigned *slots, size_t n, const kc_cluster_map *m, size_t *order, size_t *start);

/**
 * A URL's seed list, `len` bytes: "host[:port][,host[:port]...]" (an IPv6 address in brackets; port
 * 6379 when none), at most `cap` seeds, each host checked by kc_cluster_host_ok.  KC_OK with *n, or
 * KC_EINVAL saying what is wrong (`shown`: the URL as messages show it).
 */
int kc_cluster_seeds_parse(const char *list, size_t len, kc_cluster_node *seeds, int cap, int *n, const char *shown);

#endif
