/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster_route.c — where a cluster command goes, and what happens when the cluster
 * says "not here".
 *
 * The one idea: the slot map is a cache of the cluster's truth, and a node's answer corrects it.
 * A command goes to the master its slot maps to (a seed while the map is unknown); a MOVED moves
 * that one slot at once and asks for a fresh map, an ASK sends this one command, after ASKING, to
 * the node named, and a node that cannot be reached (its breaker open, a refused connection, a
 * timeout: a master that died) asks for a fresh map too, then the command goes where the new map
 * says if that is another node.  A fresh map is read at most once per refresh_ms, by one thread
 * (the others go on with the map they have), from the first master or seed that answers; so a
 * fleet in a failover sends a bounded number of CLUSTER SLOTS.  All of it — redirections, the map
 * read, the retry — counts against the command's one deadline and at most KC_CLUSTER_MAX_HOPS
 * hops, so a cluster that keeps redirecting costs an error, never a loop.  Each node keeps its own
 * breaker (the back end's): a dead master costs its own slots a back-off, never the others'.
 *
 * Callers: store/redis.c (its cluster mode); tests/store/test_redis_cluster_route.c.
 * Must not: hold the lock across a network exchange, forget a node while a command may use it
 * (nodes are only added, freed at destroy), or follow a redirection to a host the map check
 * (redis_cluster.c) would refuse.
 */
#include "redis_cluster_route.h"

#include <stdlib.h>
#include <string.h>

#include "../common/internal.h"
#include "redis_lib.h"

/* A node's failure for its breaker: out of memory here is not the server's (as redis.c counts it). */
#define FAILED(rc) ((rc) != KC_OK && (rc) != KC_ENOMEM)


int kc_cluster_init(kc_cluster *cl, const kc_cluster_io *io, const kc_cluster_node *seeds, int nseeds,
                    unsigned refresh_ms, const char *who) {
    memset(cl, 0, sizeof *cl);
    cl->io = *io;
    cl->who = who;
    cl->refresh_ms = refresh_ms ? refresh_ms : 1000;
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++) cl->slot[s] = -1;
    if (nseeds < 1 || nseeds > KC_CLUSTER_MAX_SEEDS)
        return kc_err(KC_EINVAL, "redis %s: %d seed nodes (1 to %d)", who, nseeds, KC_CLUSTER_MAX_SEEDS);
    pthread_mutex_init(&cl->mu, NULL);
    for (int i = 0; i < nseeds; i++) {
        void *n = io->node_new(io->ctx, seeds[i].host, seeds[i].port);
        if (!n) {
            kc_cluster_destroy(cl);
            return kc_err(KC_ENOMEM, "out of memory");
        }
        cl->known[i].addr = seeds[i];
        cl->known[i].node = n;
        cl->nknown = cl->nseeds = i + 1;
    }
    return KC_OK;
}

void kc_cluster_destroy(kc_cluster *cl) {
    for (int i = 0; i < cl->nknown; i++) cl->io.node_free(cl->io.ctx, cl->known[i].node);
    cl->nknown = 0;
    pthread_mutex_destroy(&cl->mu);
}

/* The index of host:port among the known nodes (under the lock); -1 when it is not known. */
static int find_known(const kc_cluster *cl, const char *host, int port) {
    for (int i = 0; i < cl->nknown; i++)
        if (cl->known[i].addr.port == port && strcmp(cl->known[i].addr.host, host) == 0) return i;
    return -1;
}

/* The index of host:port among the known nodes, added if new (under the lock); -1 when full or out of memory. */
static int known_index(kc_cluster *cl, const char *host, int port) {
    int found = find_known(cl, host, port);
    if (found >= 0) return found;
    if (cl->nknown >= KC_CLUSTER_MAX_KNOWN) return -1;
    void *n = cl->io.node_new(cl->io.ctx, host, port);
    if (!n) return -1;
    kc_cluster_known *k = &cl->known[cl->nknown];
    snprintf(k->addr.host, sizeof k->addr.host, "%s", host);
    k->addr.port = port;
    k->node = n;
    return cl->nknown++;
}

/* Where `slot` goes now: its master, or (unknown) a seed, turn by turn. */
static int route(kc_cluster *cl, unsigned slot, unsigned turn) {
    pthread_mutex_lock(&cl->mu);
    int i = cl->slot[slot];
    if (i < 0) i = (int)(turn % (unsigned)cl->nseeds);
    pthread_mutex_unlock(&cl->mu);
    return i;
}

static void *node_at(kc_cluster *cl, int i) {
    pthread_mutex_lock(&cl->mu);
    void *n = cl->known[i].node;
    pthread_mutex_unlock(&cl->mu);
    return n;
}

/* The map in `m` (read from node `from`) becomes the slot table. */
static void install(kc_cluster *cl, const kc_cluster_map *m) {
    pthread_mutex_lock(&cl->mu);
    int idx[KC_CLUSTER_MAX_NODES];
    for (int i = 0; i < m->nnodes; i++) idx[i] = known_index(cl, m->node[i].host, m->node[i].port);
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++) cl->slot[s] = m->slot_node[s] < 0 ? -1 : (int16_t)idx[m->slot_node[s]];
    cl->loaded = 1;
    cl->refreshes++;
    pthread_mutex_unlock(&cl->mu);
}

/* CLUSTER SLOTS from node i into m: KC_OK, or why not. */
static int read_map(kc_cluster *cl, int i, uint64_t deadline, kc_cluster_map *m) {
    void *n = node_at(cl, i);
    int rc = cl->io.enter(cl->io.ctx, n);
    if (rc) return rc;
    const char *argv[] = {"CLUSTER", "SLOTS"};
    size_t lens[] = {7, 5};
    kc_reply_expect ex = {T_ARRAY, 0, KC_CLUSTER_REPLY_BYTES, KC_CLUSTER_REPLY_ELEMENTS};
    kc_redis_cmd cmd = {2, argv, lens, &ex};
    redisReply *r = NULL;
    rc = cl->io.exchange(cl->io.ctx, n, 0, deadline, &cmd, &r);
    if (rc == KC_OK && r->type == REDIS_REPLY_ERROR)
        rc = kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: %.*s (is cluster mode on?)", cl->who, (int)r->len, r->str);
    else if (rc == KC_OK) {
        char host[KC_CLUSTER_HOST_MAX + 1];
        pthread_mutex_lock(&cl->mu);
        snprintf(host, sizeof host, "%s", cl->known[i].addr.host);
        pthread_mutex_unlock(&cl->mu);
        rc = kc_cluster_map_parse(r, host, cl->who, m);
    }
    if (r) kc_hiredis_free_reply(r);
    cl->io.leave(cl->io.ctx, n, FAILED(rc));
    return rc;
}

/*
 * Read the map again, unless another thread is at it or one was read less than refresh_ms ago
 * (`force`: the map was never read).  Tries the masters of the current map, then the seeds, while
 * the deadline lasts.  1 when a new map was installed.
 */
static int refresh(kc_cluster *cl, uint64_t deadline, int force) {
    uint64_t now = kc_mono_ns();
    pthread_mutex_lock(&cl->mu);
    int go = !cl->refreshing && (force ? !cl->loaded : now - cl->refreshed_ns >= cl->refresh_ms * 1000000ull);
    if (go) cl->refreshing = 1, cl->refreshed_ns = now;
    int cand[KC_CLUSTER_MAX_KNOWN], nc = 0;
    if (go) {
        char seen[KC_CLUSTER_MAX_KNOWN] = {0};
        for (int s = 0; s < KC_CLUSTER_SLOTS; s++)
            if (cl->slot[s] >= 0 && !seen[cl->slot[s]]) seen[cl->slot[s]] = 1, cand[nc++] = cl->slot[s];
        for (int i = 0; i < cl->nseeds; i++)
            if (!seen[i]) seen[i] = 1, cand[nc++] = i;
    }
    pthread_mutex_unlock(&cl->mu);
    if (!go) return 0;
    kc_cluster_map *m = kc_malloc(sizeof *m);
    int done = 0;
    for (int k = 0; m && k < nc && !done && kc_mono_ns() < deadline; k++)
        done = read_map(cl, cand[k], deadline, m) == 0;
    if (done) install(cl, m);
    else if (m) kc_log(KC_LOG_REMOTE, "%s: the slot map could not be read: %s", cl->who, kc_error_last()->message);
    free(m);
    pthread_mutex_lock(&cl->mu);
    cl->refreshing = 0;
    pthread_mutex_unlock(&cl->mu);
    return done;
}

/* A redirection's target, as a known node's index (-1: none to follow).  Only a node the cluster's own map
 * (or the seeds) named is followed: a redirection to any other host would send it the URL's credentials
 * (AUTH), so an unknown target is never connected to — the map is read again instead (the caller), and a
 * legitimate move is then followed through the map. */
static int target(kc_cluster *cl, int from, const kc_cluster_redirect *rd) {
    char host[KC_CLUSTER_HOST_MAX + 1];
    pthread_mutex_lock(&cl->mu);
    snprintf(host, sizeof host, "%s", rd->to.host[0] ? rd->to.host : cl->known[from].addr.host);
    int i = find_known(cl, host, rd->to.port);
    if (i >= 0 && rd->kind == KC_REDIRECT_MOVED) cl->slot[rd->slot] = (int16_t)i, cl->moved++;
    if (i >= 0 && rd->kind == KC_REDIRECT_ASK) cl->asked++;
    pthread_mutex_unlock(&cl->mu);
    return i;
}

/* An error reply: a redirection to follow (its target in *next, *asking), or the command's failure. */
static int judge_error(kc_cluster *cl, int from, unsigned slot, const kc_redis_cmd *cmd, redisReply *r, int *next,
                       int *asking) {
    kc_cluster_redirect rd;
    int kind = kc_cluster_redirect_parse(r->str, (size_t)r->len, &rd);
    if (kind != KC_REDIRECT_NONE && rd.slot == slot) {
        *next = target(cl, from, &rd); /* -1: a node the map does not name: read the map again, not followed */
        *asking = *next >= 0 && kind == KC_REDIRECT_ASK;
        if (*next < 0)
            kc_log(KC_LOG_REMOTE, "%s: %s to a node the cluster's map does not name: not followed", cl->who,
                   kind == KC_REDIRECT_ASK ? "ASK" : "MOVED");
        return KC_OK;
    }
    /* WRONGTYPE: the key holds a hash, a list…: nothing kcache wrote, a corrupt entry (purge --corrupt) */
    int wrong = r->len >= 9 && memcmp(r->str, "WRONGTYPE", 9) == 0;
    return kc_err(wrong ? KC_ECORRUPT : KC_EIO, "redis %s: %s: %.*s", cl->who, cmd->argv[0], (int)r->len, r->str);
}

int kc_cluster_command(kc_cluster *cl, unsigned slot, uint64_t deadline, const kc_redis_cmd *cmd, redisReply **out) {
    *out = NULL;
    slot &= KC_CLUSTER_SLOTS - 1;
    refresh(cl, deadline, 1); /* the first use reads the map; a failure leaves the seeds to ask */
    int ask_to = -1, rc = KC_OK;
    for (unsigned hop = 0; hop <= KC_CLUSTER_MAX_HOPS; hop++) {
        if (hop && kc_mono_ns() >= deadline)
            return kc_err(KC_ETIMEOUT, "redis %s: %s: no answer within the deadline (%u redirections)", cl->who,
                          cmd->argv[0], hop);
        int asking = ask_to >= 0, i = asking ? ask_to : route(cl, slot, hop);
        ask_to = -1;
        void *n = node_at(cl, i);
        redisReply *r = NULL;
        rc = cl->io.enter(cl->io.ctx, n);
        if (rc == KC_OK) {
            rc = cl->io.exchange(cl->io.ctx, n, asking, deadline, cmd, &r);
            int next = -1, ask = 0;
            if (rc == KC_OK && r->type == REDIS_REPLY_ERROR) {
                rc = judge_error(cl, i, slot, cmd, r, &next, &ask);
                kc_hiredis_free_reply(r), r = NULL;
                cl->io.leave(cl->io.ctx, n, 0); /* the master answered: a refusal is never its breaker's failure */
                if (rc) return rc;
                if (ask) ask_to = next;
                else refresh(cl, deadline, 0); /* MOVED (or a target not in the map): the map is stale */
                continue;
            }
            cl->io.leave(cl->io.ctx, n, FAILED(rc));
            if (rc == KC_OK) {
                *out = r;
                return KC_OK;
            }
        }
        /* The node failed or its breaker is open: a master may have died; go on only if the map moved. */
        if (!refresh(cl, deadline, 0) || route(cl, slot, hop) == i) return rc;
    }
    return kc_err(KC_EIO, "redis %s: %s: more than %d redirections (the cluster's slots keep moving)", cl->who,
                  cmd->argv[0], KC_CLUSTER_MAX_HOPS);
}

int kc_cluster_mget(kc_cluster *cl, const char *const *keys, size_t n, uint64_t deadline, uint64_t all_total,
                    kc_cluster_take take, void *ctx) {
    if (n == 0) return KC_OK;
    if (n > KC_CLUSTER_PLAN_MAX) return kc_err(KC_EINVAL, "redis %s: MGET of %zu keys", cl->who, n);
    unsigned slots[KC_CLUSTER_PLAN_MAX];
    size_t order[KC_CLUSTER_PLAN_MAX], start[KC_CLUSTER_PLAN_MAX + 1], lens[KC_CLUSTER_PLAN_MAX + 1];
    const char *argv[KC_CLUSTER_PLAN_MAX + 1];
    for (size_t i = 0; i < n; i++) slots[i] = kc_cluster_slot(keys[i], strlen(keys[i]));
    size_t groups = kc_cluster_plan(slots, n, NULL, order, start);
    uint64_t used = 0;
    int rc = KC_OK;
    for (size_t g = 0; g < groups && rc == KC_OK; g++) {
        size_t k = start[g + 1] - start[g];
        argv[0] = "MGET", lens[0] = 4;
        for (size_t j = 0; j < k; j++) {
            argv[1 + j] = keys[order[start[g] + j]];
            lens[1 + j] = strlen(argv[1 + j]);
        }
        kc_reply_expect ex = {T_ARRAY, k, all_total > used ? all_total - used : 1, 0};
        kc_redis_cmd cmd = {(int)(k + 1), argv, lens, &ex};
        redisReply *r;
        rc = kc_cluster_command(cl, slots[order[start[g]]], deadline, &cmd, &r);
        for (size_t j = 0; rc == KC_OK && j < k; j++) {
            used += r->element[j]->type == REDIS_REPLY_STRING ? (uint64_t)r->element[j]->len : 0;
            rc = take(ctx, order[start[g] + j], r->element[j]);
        }
        if (r) kc_hiredis_free_reply(r);
    }
    return rc;
}

void kc_cluster_counts(kc_cluster *cl, unsigned long long *refreshes, unsigned long long *moved,
                       unsigned long long *asked) {
    pthread_mutex_lock(&cl->mu);
    *refreshes = cl->refreshes, *moved = cl->moved, *asked = cl->asked;
    pthread_mutex_unlock(&cl->mu);
}

void kc_cluster_each_master(kc_cluster *cl, void (*f)(void *ctx, void *node), void *ctx) {
    void *nodes[KC_CLUSTER_MAX_KNOWN];
    int nn = 0;
    pthread_mutex_lock(&cl->mu);
    char seen[KC_CLUSTER_MAX_KNOWN] = {0};
    for (int s = 0; s < KC_CLUSTER_SLOTS; s++)
        if (cl->slot[s] >= 0 && !seen[cl->slot[s]]) seen[cl->slot[s]] = 1, nodes[nn++] = cl->known[cl->slot[s]].node;
    for (int i = 0; nn == 0 && i < cl->nseeds; i++) nodes[i] = cl->known[i].node; /* no map yet: the seeds */
    if (nn == 0) nn = cl->nseeds;
    pthread_mutex_unlock(&cl->mu);
    for (int i = 0; i < nn; i++) f(ctx, nodes[i]);
}
