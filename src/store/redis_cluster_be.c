/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster_be.c — the redis back end's cluster mode: its servers under the router.
 *
 * The one idea: a cluster is many servers, and each keeps what the single-server back end keeps
 * for its one — a pool (redis.c's, lent through kc_redis_lender) and a breaker of its own.  The
 * breaker is per node, not per tier: a master that dies costs its own slots one back-off window
 * (and a fresh map, read by the router, sends them to the promoted replica, whose breaker is
 * closed), while the other masters' slots go on hitting; one breaker for the tier would turn one
 * dead master into misses for every key for up to backoff-max-ms.  The tier's state shows the
 * breaker open only when every master's is.  A command's slot is its first key's; a several-key
 * read goes by slot (one MGET per slot; get_first's script once per slot, in the keys' order).
 *
 * Callers: store/redis.c only.  Must not: send a command over keys of several slots (CROSSSLOT),
 * or hold a lock across a network exchange.
 */
#include "redis_cluster_be.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/internal.h"
#include "breaker.h"
#include "redis_lib.h"

struct kc_redis_cluster {
    kc_cluster cl;
    kc_redis_lender lend;
    const char *shown;
    kc_remote_limits cfg;
};

/* A router node: a server (its pool) and its own breaker. */
typedef struct cnode {
    kc_redis_node server;
    kc_brk brk;
    char shown[400]; /* "<the tier's URL> node host:port", for the breaker's messages */
} cnode;

static void *n_new(void *ctx, const char *host, int port) {
    kc_redis_cluster *c = ctx;
    cnode *n = kc_calloc(1, sizeof *n);
    if (!n) return NULL;
    kc_redis_node_init(&n->server, host, port);
    int v6 = strchr(host, ':') != NULL;
    snprintf(n->shown, sizeof n->shown, "%s node %s%s%s:%d", c->shown, v6 ? "[" : "", host, v6 ? "]" : "", port);
    kc_brk_init(&n->brk, c->cfg.backoff_ms, c->cfg.backoff_max_ms, n->shown);
    return n;
}

static void n_free(void *ctx, void *node) {
    (void)ctx;
    cnode *n = node;
    kc_redis_node_destroy(&n->server);
    kc_brk_destroy(&n->brk);
    free(n);
}

static int n_enter(void *ctx, void *node) { return (void)ctx, kc_brk_enter(&((cnode *)node)->brk); }
static void n_leave(void *ctx, void *node, int failed) { (void)ctx, kc_brk_exit(&((cnode *)node)->brk, failed); }

static int n_exchange(void *ctx, void *node, int asking, uint64_t deadline, const kc_redis_cmd *cmd, redisReply **out) {
    kc_redis_cluster *c = ctx;
    return c->lend.exchange(c->lend.b, &((cnode *)node)->server, asking, deadline, cmd, out);
}

kc_redis_node *kc_redis_cluster_server(void *node) { return &((cnode *)node)->server; }

int kc_redis_cluster_new(kc_redis_cluster **out, const kc_redis_lender *l, const kc_cluster_node *seeds, int nseeds,
                         const kc_remote_limits *cfg, const char *shown) {
    *out = NULL;
    kc_redis_cluster *c = kc_calloc(1, sizeof *c);
    if (!c) return kc_err(KC_ENOMEM, "out of memory");
    c->lend = *l;
    c->shown = shown;
    c->cfg = *cfg;
    kc_cluster_io io = {c, n_new, n_free, n_enter, n_leave, n_exchange};
    int rc = kc_cluster_init(&c->cl, &io, seeds, nseeds, 0, shown);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return KC_OK;
}

void kc_redis_cluster_free(kc_redis_cluster *c) {
    if (!c) return;
    kc_cluster_destroy(&c->cl);
    free(c);
}

int kc_redis_cluster_url(const char *url, char *single, size_t cap, kc_cluster_node *seeds, int *nseeds) {
    *nseeds = 0;
    char shown[1400];
    kc_redis_url_redact(url, shown, sizeof shown);
    const char *sep = strstr(url, "+cluster://"); /* redis+cluster:// -> redis://, rediss+cluster:// -> rediss:// */
    if (!sep || sep - url > 8) return kc_err(KC_EINVAL, "remote URL '%s': not a <scheme>+cluster:// URL", shown);
    int sl = (int)(sep - url);
    sep += 8; /* at "://" */
    const char *p = sep + 3, *at = strrchr(p, '@'), *hosts = at ? at + 1 : p;
    size_t hl = strcspn(hosts, "/?");
    int rc = kc_cluster_seeds_parse(hosts, hl, seeds, KC_CLUSTER_MAX_SEEDS, nseeds, shown);
    if (rc) return rc;
    const char *first = hosts, *comma = memchr(hosts, ',', hl);
    size_t fl = comma ? (size_t)(comma - hosts) : hl;
    int n = snprintf(single, cap, "%.*s://%.*s%.*s%s", sl, url, (int)(hosts - p), p, (int)fl, first, hosts + hl);
    if (n < 0 || (size_t)n >= cap) return kc_err(KC_EINVAL, "remote URL '%s': too long", shown);
    return KC_OK;
}

int kc_redis_cluster_url_done(kc_redis_url *u, const char *url) {
    char shown[sizeof u->shown];
    kc_redis_url_redact(url, shown, sizeof shown);
    snprintf(u->shown, sizeof u->shown, "%s", shown);
    if (u->db) return kc_err(KC_EINVAL, "remote URL '%s': a Redis Cluster has only database 0", shown);
    return KC_OK;
}

kc_cluster *kc_redis_cluster_router(kc_redis_cluster *c) { return &c->cl; }

static uint64_t deadline_of(const kc_redis_cluster *c) {
    return kc_mono_ns() + (uint64_t)c->cfg.deadline_ms * 1000000ull;
}

int kc_redis_cluster_command(kc_redis_cluster *c, const kc_redis_cmd *cmd, redisReply **out) {
    int k = strcmp(cmd->argv[0], "EVAL") == 0 ? 3 : 1;
    if (cmd->argc <= k) return kc_err(KC_EINVAL, "redis %s: %s without a key", c->shown, cmd->argv[0]);
    unsigned slot = kc_cluster_slot(cmd->argv[k], cmd->lens[k]);
    return kc_cluster_command(&c->cl, slot, deadline_of(c), cmd, out);
}

#define KEY_MAX 256 /* a prefixed name: "kcache:v1:" + a store name (KC_NAME_MAX) */

/* The n names with `prefix` in keys[] (n <= KC_CLUSTER_PLAN_MAX); KC_EINVAL for one too long. */
static int prefixed(const char *prefix, const char *const *names, size_t n, char (*keys)[KEY_MAX], const char **kp) {
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(keys[i], KEY_MAX, "%s%s", prefix, names[i]);
        if (w < 0 || w >= KEY_MAX) return kc_err(KC_EINVAL, "redis: a name too long");
        kp[i] = keys[i];
    }
    return KC_OK;
}

int kc_redis_cluster_mget(kc_redis_cluster *c, const char *prefix, const char *const *names, size_t n,
                          uint64_t all_total, kc_cluster_take take, void *ctx) {
    if (n > KC_CLUSTER_PLAN_MAX) return kc_err(KC_EINVAL, "redis %s: MGET of %zu keys", c->shown, n);
    char(*keys)[KEY_MAX] = kc_malloc(n ? n * KEY_MAX : 1);
    const char *kp[KC_CLUSTER_PLAN_MAX];
    if (!keys) return kc_err(KC_ENOMEM, "out of memory");
    int rc = prefixed(prefix, names, n, keys, kp);
    if (!rc) rc = kc_cluster_mget(&c->cl, kp, n, deadline_of(c), all_total, take, ctx);
    free(keys);
    return rc;
}

/* One group's EVAL: KC_OK with *hit (1-based within the group, 0: none) and *r, or an error. */
static int first_of_group(kc_redis_cluster *c, const char *const *keys, size_t k, unsigned slot, uint64_t deadline,
                          const char *script, size_t *hit, redisReply **r) {
    const char *argv[3 + 64];
    size_t lens[3 + 64];
    char nk[8];
    snprintf(nk, sizeof nk, "%zu", k);
    argv[0] = "EVAL", lens[0] = 4;
    argv[1] = script, lens[1] = strlen(script);
    argv[2] = nk, lens[2] = strlen(nk);
    for (size_t j = 0; j < k; j++) argv[3 + j] = keys[j], lens[3 + j] = strlen(keys[j]);
    kc_reply_expect ex = {T_ARRAY | T_NIL, 0, 0, 0};
    kc_redis_cmd cmd = {(int)(3 + k), argv, lens, &ex};
    *hit = 0;
    int rc = kc_cluster_command(&c->cl, slot, deadline, &cmd, r);
    if (rc || (*r)->type == REDIS_REPLY_NIL) return rc;
    redisReply *x = *r;
    if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 || x->element[0]->type != REDIS_REPLY_INTEGER ||
        x->element[0]->integer < 1 || (size_t)x->element[0]->integer > k || x->element[1]->type != REDIS_REPLY_STRING) {
        kc_hiredis_free_reply(x), *r = NULL;
        return kc_err(KC_EIO, "redis %s: EVAL: unexpected reply", c->shown);
    }
    *hit = (size_t)x->element[0]->integer;
    return KC_OK;
}

int kc_redis_cluster_first(kc_redis_cluster *c, const char *prefix, const char *const *names, size_t n,
                           const char *script, size_t *which, kc_cluster_take take, void *ctx) {
    redisReply *best_r = NULL, **reply = &best_r;
    if (n > 64) n = 64;
    if (n == 0) return KC_MISS;
    char keybuf[64][KEY_MAX];
    const char *keys[64];
    int rc0 = prefixed(prefix, names, n, keybuf, keys);
    if (rc0) return rc0;
    unsigned slots[64];
    size_t order[64], start[65], best = n;
    const char *group[64];
    for (size_t i = 0; i < n; i++) slots[i] = kc_cluster_slot(keys[i], strlen(keys[i]));
    size_t groups = kc_cluster_plan(slots, n, NULL, order, start);
    uint64_t deadline = deadline_of(c);
    /* groups in order of their first key: once a group's first key is past the best hit, none can beat it */
    for (size_t g = 0; g < groups && order[start[g]] < best; g++) {
        size_t k = start[g + 1] - start[g], hit;
        for (size_t j = 0; j < k; j++) group[j] = keys[order[start[g] + j]];
        redisReply *r = NULL;
        int rc = first_of_group(c, group, k, slots[order[start[g]]], deadline, script, &hit, &r);
        if (rc) {
            if (*reply) kc_hiredis_free_reply(*reply), *reply = NULL;
            return rc;
        }
        if (hit && order[start[g] + hit - 1] < best) {
            if (*reply) kc_hiredis_free_reply(*reply);
            *reply = r, r = NULL, best = order[start[g] + hit - 1];
        }
        if (r) kc_hiredis_free_reply(r);
    }
    if (best == n) return KC_MISS;
    *which = best;
    int rc = take(ctx, 0, best_r->element[1]);
    kc_hiredis_free_reply(best_r);
    return rc;
}

typedef struct worst {
    int n, open;
    kc_remote_state s;
} worst;

static void one_state(void *ctx, void *node) {
    worst *w = ctx;
    kc_remote_state s;
    memset(&s, 0, sizeof s);
    kc_brk_state(&((cnode *)node)->brk, &s);
    int open = s.breaker != KC_BREAKER_CLOSED;
    if (w->n++ == 0 || s.failures > w->s.failures) w->s.failures = s.failures;
    if (open && (w->open == 0 || s.retry_in_ms < w->s.retry_in_ms))
        w->s.retry_in_ms = s.retry_in_ms, w->s.breaker = s.breaker;
    w->open += open;
}

void kc_redis_cluster_state(kc_redis_cluster *c, kc_remote_state *out) {
    worst w;
    memset(&w, 0, sizeof w);
    kc_cluster_each_master(&c->cl, one_state, &w);
    if (w.n && w.open == w.n) out->breaker = w.s.breaker, out->retry_in_ms = w.s.retry_in_ms;
    else out->breaker = KC_BREAKER_CLOSED, out->retry_in_ms = 0;
    out->failures = w.s.failures;
}
