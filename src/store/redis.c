/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redis.c — the remote backend: entries in Redis under "kcache:v1:<key>.<variant>".
 *
 * The one idea: an outage costs a bounded delay, never an error and never a hang.  Every
 * command runs on a non-blocking socket under one deadline that covers connect, request
 * and the whole reply (a server that accepts and never answers, or drips bytes, costs at
 * most the deadline); a reply's shape is checked as it is read (redis_reply.c: a bounded
 * element count, no bulk over the value cap), so a hostile header never makes hiredis
 * allocate or free more than a few objects.  Any failure opens a
 * circuit breaker: for a back-off window (doubling per consecutive failure, with jitter
 * so that a fleet does not retry in step) every call answers KC_EUNAVAILABLE at once;
 * then one call goes through as a probe, and its success closes the breaker.
 *
 * A graph's images come in one round trip: get_many is one MGET of up to KC_IMAGES_MAX keys
 * under the same breaker and deadline as a GET, its reply held to exactly the names asked
 * (one value or nil each, each under the value cap, all together under the format's cap on
 * one entry) before hiredis sees it.
 *
 * Connections are pooled (a few idle ones under a lock); a pooled connection that the
 * server closed meanwhile is retried once on a fresh one before anything counts as failed;
 * one that saw more than one reply, an unexpected reply type, or bytes while idle is
 * closed, never pooled (its next reply would answer the wrong command).
 *
 * The connection is kcache's own (redis_conn.c: connect, write and read under the deadline;
 * hiredis only formats commands and parses replies); rediss:// runs it over TLS (tls.c, the
 * context made at the first connect), and the URL, its query parameters and the password file
 * are redis_url.c's.  A command goes to a node (host, port, pool: node_exchange); this
 * single-server back end has one, b->node.
 *
 * Reached only through its backend table (the tiers), whose `state` slot is
 * kc_store_redis_state; it is registered as the schemes "redis" and "rediss" (registry.c).
 * The breaker is breaker.c's.
 *
 * Must not: interpret values (the core validates them), or block past a deadline.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "../common/crypto.h"
#include "../common/internal.h"
#include "redis_conn.h"
#include "redis_io.h"
#include "redis_reply.h"
#include "redis_url.h"
#include "kcache/entry.h"
#include "kcache/sys/store.h"
#include "breaker.h"
#include "name.h"
#include "redis_admin.h"
#include "redis_cluster_be.h"
#include "registry.h"
#include "tls.h"
#include "redis_lib.h"

#define PREFIX "kcache:v1:"

typedef struct rb {
    kc_store_backend be;
    kc_redis_url u; /* what the URL says; u.shown names the remote in every message */
    kc_remote_limits cfg;
    kc_redis_node node;     /* the server and its pool of idle connections (redis_conn.c) */
    pthread_mutex_t tls_mu; /* guards tls */
    kc_tls *tls;            /* rediss://: the TLS client context (tls.c), made at the first connect */
    kc_brk brk;             /* its own circuit breaker (breaker.c) */
    kc_redis_cluster *cl;   /* redis+cluster://: the cluster mode (redis_cluster_be.c); NULL */
} rb;

/* ---- one command under a deadline ---- */

/* A setup command's reply: "+OK" and nothing after it. */
static int expect_ok(redisReply *r, const char *what, int extra) {
    if (r->type == REDIS_REPLY_ERROR) return kc_err(KC_EIO, "redis %s: %.*s", what, (int)r->len, r->str);
    if (r->type != REDIS_REPLY_STATUS || extra) return kc_err(KC_EIO, "redis %s: unexpected reply", what);
    return KC_OK;
}

static int setup_command(rb *b, kc_redis_conn *c, uint64_t deadline, int argc, const char **argv, const size_t *lens) {
    redisReply *r = NULL;
    int extra = 0;
    kc_redis_link link = {c, b->u.shown, b->cfg.max_value, deadline};
    kc_redis_cmd cmd = {argc, argv, lens, NULL};
    int rc = kc_redis_send_recv(&link, &cmd, &r, &extra);
    if (!rc) rc = expect_ok(r, argv[0], extra);
    if (r) kc_hiredis_free_reply(r);
    return rc;
}

/* rediss://: the TLS context, made at the first connect (a host without libssl, or a CA file that
 * cannot be read, is then a failure like an unreachable server: an error, the breaker, misses). */
static int tls_context(rb *b, kc_tls **out) {
    *out = NULL;
    if (!b->u.tls) return KC_OK;
    pthread_mutex_lock(&b->tls_mu);
    int rc = b->tls ? KC_OK : kc_tls_new(&b->tls, &b->u.tls_opts, b->u.shown);
    *out = b->tls;
    pthread_mutex_unlock(&b->tls_mu);
    return rc;
}

/* A fresh connection to node `n`, authenticated and on the URL's database. */
static int connect_new(rb *b, kc_redis_node *n, uint64_t deadline, kc_redis_conn **out) {
    kc_tls *tls;
    int rc = tls_context(b, &tls); /* before the connect timeout starts: the first one loads libssl */
    uint64_t cdl = kc_mono_ns() + (uint64_t)b->cfg.connect_ms * 1000000ull;
    if (!rc) rc = kc_redis_conn_open(out, n->host, n->port, tls, b->u.shown, cdl, deadline);
    if (rc) return rc;
    if (b->u.password[0]) {
        const char *argv[] = {"AUTH", b->u.user[0] ? b->u.user : b->u.password, b->u.password};
        size_t lens[] = {4, strlen(argv[1]), strlen(b->u.password)};
        rc = setup_command(b, *out, deadline, b->u.user[0] ? 3 : 2, argv, lens);
    }
    if (!rc && b->u.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", b->u.db);
        const char *argv[] = {"SELECT", db};
        size_t lens[] = {6, strlen(db)};
        rc = setup_command(b, *out, deadline, 2, argv, lens);
    }
    if (rc) kc_redis_conn_close(*out), *out = NULL;
    return rc;
}

/*
 * Run one command through the breaker; *out is the reply, of the shape `ex` asks for (an
 * error reply is KC_EIO, and *refused, when given, says so).  An error reply (NOPERM, NOSCRIPT,
 * OOM, WRONGTYPE…) fails the command but not the breaker: the server answered and the connection
 * is in step; only a transport failure, a timeout or nonsense counts against the remote.  A
 * connection goes back to the pool only after a reply of the
 * expected shape with nothing after it: a reply of another shape is an error (and a failure
 * for the breaker, as a server that answers nonsense is no better than one that does not
 * answer), and bytes after the reply (kept by the first reply, which is this command's) mean
 * the connection and the commands on it are out of step; either way it is closed.  node_exchange: that without
 * the breaker, by a deadline given, ASKING first when asked, an error reply KC_OK (redis_cluster_be.c's router).
 */
static int node_exchange(void *bv, kc_redis_node *n, int asking, uint64_t deadline, const kc_redis_cmd *cmd,
                         redisReply **out) {
    rb *b = bv;
    int rc = KC_OK;
    const char **argv = cmd->argv, *ask[] = {"ASKING"};
    const kc_reply_expect *ex = cmd->ex;
    const size_t ask_len[] = {6};
    for (int attempt = 0; attempt < 2; attempt++) {
        kc_redis_conn *c = attempt == 0 ? kc_redis_node_take(n) : NULL;
        int pooled = c != NULL, extra = 0;
        if (!c && (rc = connect_new(b, n, deadline, &c))) break;
        kc_redis_link link = {c, b->u.shown, b->cfg.max_value, deadline};
        rc = asking ? setup_command(b, c, deadline, 1, ask, ask_len) : KC_OK;
        if (rc == KC_OK) rc = kc_redis_send_recv(&link, cmd, out, &extra);
        if (rc == KC_OK && (*out)->type == REDIS_REPLY_ERROR) {
            if (extra) kc_redis_conn_close(c);
            else kc_redis_node_give(n, c); /* the connection is fine; the command was refused */
            break;
        }
        if (rc == KC_OK && !kc_reply_shape_ok(*out, ex)) {
            if (ex->elements && (*out)->type == REDIS_REPLY_ARRAY)
                rc = kc_err(KC_EIO, "redis %s: %s: a reply of %zu elements, not %zu strings or nils", b->u.shown,
                            argv[0], (size_t)(*out)->elements, ex->elements);
            else rc = kc_err(KC_EIO, "redis %s: %s: unexpected reply type %d", b->u.shown, argv[0], (*out)->type);
            kc_hiredis_free_reply(*out);
            *out = NULL;
            kc_redis_conn_close(c);
            break;
        }
        if (rc == KC_OK) {
            /* The first reply is this command's; anything after it is the server's mistake. */
            if (extra) kc_log(KC_LOG_REMOTE, "%s: %s: more than one reply; connection closed", b->u.shown, argv[0]);
            if (extra) kc_redis_conn_close(c);
            else kc_redis_node_give(n, c);
            break;
        }
        kc_redis_conn_close(c);
        if (!pooled || rc != KC_EIO) break; /* a stale pooled connection gets one fresh retry */
    }
    return rc;
}

/* A command to the back end's server (a single-server remote's one node; a cluster: its slot's master). */
static int command_ref(rb *b, const kc_redis_cmd *cmd, redisReply **out, int *refused);
int kc_redis_command_(void *bv, const kc_redis_cmd *cmd, redisReply **out, int *refused) {
    return command_ref(bv, cmd, out, refused);
}
const char *kc_redis_shown_(const void *bv) { return ((const rb *)bv)->u.shown; }

static int command_ref(rb *b, const kc_redis_cmd *cmd, redisReply **out, int *refused) {
    *out = NULL;
    if (refused) *refused = 0;
    if (b->cl) return kc_redis_cluster_command(b->cl, cmd, out);
    int rc = kc_brk_enter(&b->brk), answered = 0;
    if (rc) return rc;
    rc = node_exchange(b, &b->node, 0, kc_mono_ns() + (uint64_t)b->cfg.deadline_ms * 1000000ull, cmd, out);
    if (rc == KC_OK && (*out)->type == REDIS_REPLY_ERROR) {
        /* WRONGTYPE: the key holds a hash, a list…: nothing kcache wrote, a corrupt entry (purge --corrupt) */
        int wrong = (*out)->len >= 9 && memcmp((*out)->str, "WRONGTYPE", 9) == 0;
        rc = kc_err(wrong ? KC_ECORRUPT : KC_EIO, "redis %s: %s: %.*s", b->u.shown, cmd->argv[0], (int)(*out)->len,
                    (*out)->str);
        kc_hiredis_free_reply(*out), *out = NULL;
        answered = 1;
    }
    kc_brk_exit(&b->brk, rc != KC_OK && rc != KC_ENOMEM && !answered); /* out of memory: not the server's */
    if (refused) *refused = answered;
    return rc;
}

static int command_as(rb *b, int argc, const char **argv, const size_t *lens, const kc_reply_expect *ex,
                      redisReply **out) {
    kc_redis_cmd cmd = {argc, argv, lens, ex};
    return command_ref(b, &cmd, out, NULL);
}

/* A command whose reply is one of `types`, each value under the value cap. */
static int command(rb *b, int argc, const char **argv, const size_t *lens, unsigned types, redisReply **out) {
    kc_reply_expect ex = {types, 0, 0, 0};
    return command_as(b, argc, argv, lens, &ex, out);
}

static void key_of(const char *name, char *out, size_t cap) { snprintf(out, cap, PREFIX "%s", name); }

/* A one-key command ("GET", "EXISTS", "DEL") on a stored name. */
static int key_command(rb *b, const char *cmd, const char *name, unsigned types, redisReply **out) {
    char k[KC_NAME_MAX + 16];
    key_of(name, k, sizeof k);
    const char *argv[] = {cmd, k};
    size_t lens[] = {strlen(cmd), strlen(k)};
    return command(b, 2, argv, lens, types, out);
}

static int take_string(rb *b, redisReply *r, void **out, size_t *out_len) {
    if ((uint64_t)r->len > b->cfg.max_value)
        return kc_err(KC_EIO, "redis %s: value of %zu bytes is over the cap", b->u.shown, (size_t)r->len);
    void *d = kc_malloc(r->len ? (size_t)r->len : 1);
    if (!d) return kc_err(KC_ENOMEM, "out of memory");
    memcpy(d, r->str, (size_t)r->len);
    *out = d;
    *out_len = (size_t)r->len;
    return KC_OK;
}

/* A value put at its name: out[i] (a cluster's MGET and get_first answers, redis_cluster_be.c). */
typedef struct many_out {
    rb *b;
    void **out;
    size_t *out_len;
} many_out;

static int many_take(void *ctx, size_t i, const redisReply *v) {
    many_out *m = ctx;
    return v->type == REDIS_REPLY_STRING ? take_string(m->b, (redisReply *)v, &m->out[i], &m->out_len[i]) : KC_OK;
}

/* ---- the backend ---- */

static int r_get(kc_store_backend *be, const char *name, void **out, size_t *out_len) {
    rb *b = be->ctx;
    redisReply *r;
    int rc = key_command(b, "GET", name, T_STRING | T_NIL, &r);
    if (rc) return rc;
    if (r->type == REDIS_REPLY_NIL) rc = KC_MISS;
    else if (r->type != REDIS_REPLY_STRING) rc = kc_err(KC_EIO, "redis GET: unexpected reply type %d", r->type);
    else rc = take_string(b, r, out, out_len);
    kc_hiredis_free_reply(r);
    return rc;
}

/* The first present of several keys in one round trip (a Lua script; values after it are never sent). */
static const char FIRST_SCRIPT[] = "for i, k in ipairs(KEYS) do local v = redis.call('GET', k) "
                                   "if v then return {i, v} end end return false";

static int r_get_first(kc_store_backend *be, const char *const *names, size_t n, size_t *which, void **out,
                       size_t *out_len) {
    rb *b = be->ctx;
    if (n == 0) return KC_MISS;
    if (n > 64) n = 64;
    many_out one = {b, out, out_len};
    if (b->cl) return kc_redis_cluster_first(b->cl, PREFIX, names, n, FIRST_SCRIPT, which, many_take, &one);
    const char *argv[3 + 64];
    size_t lens[3 + 64];
    char keys[64][KC_NAME_MAX + 16], nk[8];
    snprintf(nk, sizeof nk, "%zu", n);
    argv[0] = "EVAL", lens[0] = 4;
    argv[1] = FIRST_SCRIPT, lens[1] = sizeof FIRST_SCRIPT - 1;
    argv[2] = nk, lens[2] = strlen(nk);
    for (size_t i = 0; i < n; i++) {
        key_of(names[i], keys[i], sizeof keys[i]);
        argv[3 + i] = keys[i], lens[3 + i] = strlen(keys[i]);
    }
    redisReply *r;
    int rc = command(b, (int)(3 + n), argv, lens, T_ARRAY | T_NIL, &r);
    if (rc) return rc;
    if (r->type == REDIS_REPLY_NIL) rc = KC_MISS;
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_INTEGER ||
             r->element[0]->integer < 1 || (size_t)r->element[0]->integer > n ||
             r->element[1]->type != REDIS_REPLY_STRING)
        rc = kc_err(KC_EIO, "redis EVAL: unexpected reply");
    else {
        *which = (size_t)r->element[0]->integer - 1;
        rc = take_string(b, r->element[1], out, out_len);
    }
    kc_hiredis_free_reply(r);
    return rc;
}

/* One get_many's values together: at most the format's cap on one entry (what a graph entry that
 * held the same images inline could have been), and n values each under the value cap. */
static uint64_t many_cap(const rb *b, size_t n) {
    uint64_t all = (uint64_t)n * b->cfg.max_value; /* n <= KC_IMAGES_MAX, max_value <= 1 GiB: no wrap */
    return all < KC_ENTRY_MAX_BYTES ? all : KC_ENTRY_MAX_BYTES;
}

/*
 * `n` names in one MGET.  The names are checked before anything is sent; a nil is an absent
 * name (out[i] NULL); a value over the value cap fails the whole call (KC_EIO, as get's does);
 * any failure leaves every out[i] NULL.
 */
static int r_get_many(kc_store_backend *be, const char *const *names, size_t n, void **out, size_t *out_len) {
    rb *b = be->ctx;
    if (n && (!names || !out || !out_len)) return kc_err(KC_EINVAL, "redis get_many: NULL argument");
    for (size_t i = 0; i < n; i++) out[i] = NULL, out_len[i] = 0;
    if (n > KC_IMAGES_MAX) return kc_err(KC_EINVAL, "redis get_many: %zu names (at most %d at once)", n, KC_IMAGES_MAX);
    for (size_t i = 0; i < n; i++)
        if (kc_store_name_check(names[i]) != KC_OK) return kc_err_prefix(KC_EINVAL, "redis get_many");
    if (n == 0) return KC_OK;
    many_out mo = {b, out, out_len};
    int crc = b->cl ? kc_redis_cluster_mget(b->cl, PREFIX, names, n, many_cap(b, n), many_take, &mo) : 0;
    for (size_t i = 0; crc && i < n; i++) free(out[i]), out[i] = NULL, out_len[i] = 0;
    if (b->cl) return crc;
    /* argv, lens and the keys in one block: "MGET" and n keys */
    typedef char keybuf[KC_NAME_MAX + 16];
    size_t argc = n + 1;
    void *blk = kc_malloc(argc * (sizeof(const char *) + sizeof(size_t)) + n * sizeof(keybuf));
    if (!blk) return kc_err(KC_ENOMEM, "out of memory");
    const char **argv = blk;
    size_t *lens = (size_t *)(argv + argc);
    keybuf *keys = (keybuf *)(lens + argc);
    argv[0] = "MGET", lens[0] = 4;
    for (size_t i = 0; i < n; i++) {
        key_of(names[i], keys[i], sizeof keys[i]);
        argv[1 + i] = keys[i], lens[1 + i] = strlen(keys[i]);
    }
    kc_reply_expect ex = {T_ARRAY, n, many_cap(b, n), 0};
    redisReply *r;
    int rc = command_as(b, (int)argc, argv, lens, &ex, &r);
    free(blk);
    if (rc) return rc;
    for (size_t i = 0; i < n && rc == KC_OK; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING) rc = take_string(b, r->element[i], &out[i], &out_len[i]);
    kc_hiredis_free_reply(r);
    if (rc)
        for (size_t i = 0; i < n; i++) free(out[i]), out[i] = NULL, out_len[i] = 0;
    return rc;
}

static int r_put(kc_store_backend *be, const char *name, const void *data, size_t len) {
    rb *b = be->ctx;
    if ((uint64_t)len > b->cfg.max_value)
        return kc_err(KC_EINVAL, "redis: %zu bytes is over the value cap (%llu)", len,
                      (unsigned long long)b->cfg.max_value);
    char k[KC_NAME_MAX + 16], ttl[24];
    key_of(name, k, sizeof k);
    snprintf(ttl, sizeof ttl, "%u", b->cfg.ttl_s);
    const char *argv[] = {"SET", k, data, "EX", ttl};
    size_t lens[] = {3, strlen(k), len, 2, strlen(ttl)};
    redisReply *r;
    int rc = command(b, b->cfg.ttl_s ? 5 : 3, argv, lens, T_STATUS, &r);
    if (rc) return rc;
    kc_hiredis_free_reply(r);
    return KC_OK;
}

static int r_exists(kc_store_backend *be, const char *name) {
    redisReply *r;
    int rc = key_command(be->ctx, "EXISTS", name, T_INTEGER, &r);
    if (rc) return rc;
    rc = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : kc_err(KC_EIO, "redis EXISTS: unexpected reply");
    kc_hiredis_free_reply(r);
    return rc;
}

static int r_remove(kc_store_backend *be, const char *name) {
    redisReply *r;
    int rc = key_command(be->ctx, "DEL", name, T_INTEGER, &r);
    if (rc) return rc;
    rc = r->type != REDIS_REPLY_INTEGER ? kc_err(KC_EIO, "redis DEL: unexpected reply")
         : r->integer > 0               ? KC_OK
                                        : KC_MISS;
    kc_hiredis_free_reply(r);
    return rc;
}

static void r_free(kc_store_backend *be) {
    rb *b = be->ctx;
    kc_redis_cluster_free(b->cl);
    kc_redis_node_destroy(&b->node);
    kc_tls_free(b->tls);
    pthread_mutex_destroy(&b->tls_mu);
    kc_wipe(b->u.password, sizeof b->u.password);
    kc_brk_destroy(&b->brk);
    free(b);
}

int kc_store_redis_open(kc_store_backend **out, const char *url, const kc_remote_limits *cfg) {
    if (out) *out = NULL;
    if (!out || !url) return kc_err(KC_EINVAL, "kc_store_redis_open: NULL argument");
    rb *b = kc_calloc(1, sizeof *b);
    if (!b) return kc_err(KC_ENOMEM, "out of memory");
    kc_cluster_node seeds[KC_CLUSTER_MAX_SEEDS];
    char single[2048];
    int nseeds = 0, cluster = strstr(url, "+cluster://") != NULL, rc = KC_OK;
    if (cluster) rc = kc_redis_cluster_url(url, single, sizeof single, seeds, &nseeds);
    if (!rc) rc = kc_redis_url_parse(&b->u, cluster ? single : url);
    if (!rc && cluster) rc = kc_redis_cluster_url_done(&b->u, url);
    if (!rc && !kc_hiredis_load()) rc = kc_err_prefix(KC_EUNAVAILABLE, "redis remote %s", b->u.shown);
    kc_wipe(single, sizeof single); /* a cluster's first seed as a URL, its password with it */
    if (rc) {
        kc_wipe(b, sizeof *b); /* the URL's password, parsed before the library was found missing */
        free(b);
        return rc;
    }
    if (cfg) b->cfg = *cfg;
    if (!b->cfg.connect_ms) b->cfg.connect_ms = 100;
    if (!b->cfg.deadline_ms) b->cfg.deadline_ms = 500;
    if (!b->cfg.backoff_ms) b->cfg.backoff_ms = 1000;
    if (!b->cfg.backoff_max_ms) b->cfg.backoff_max_ms = 60000;
    if (b->cfg.backoff_max_ms < b->cfg.backoff_ms) b->cfg.backoff_max_ms = b->cfg.backoff_ms;
    if (!b->cfg.max_value) b->cfg.max_value = 64ull << 20;
    if (b->cfg.max_value > KC_ENTRY_MAX_BYTES) b->cfg.max_value = KC_ENTRY_MAX_BYTES;
    kc_brk_init(&b->brk, b->cfg.backoff_ms, b->cfg.backoff_max_ms, b->u.shown);
    kc_redis_node_init(&b->node, b->u.host, b->u.port);
    pthread_mutex_init(&b->tls_mu, NULL);
    kc_redis_lender lend = {b, node_exchange};
    if (cluster && (rc = kc_redis_cluster_new(&b->cl, &lend, seeds, nseeds, &b->cfg, b->u.shown))) {
        r_free(&b->be);
        return rc;
    }
    b->be.version = KC_STORE_BACKEND_VERSION;
    b->be.name = "redis";
    b->be.get = r_get;
    b->be.put = r_put;
    b->be.exists = r_exists;
    b->be.remove = r_remove;
    b->be.free = r_free;
    b->be.get_first = r_get_first;
    b->be.state = kc_store_redis_state;
    b->be.get_many = r_get_many;
    b->be.lease_take = kc_redis_lease_take_;
    b->be.lease_release = kc_redis_lease_release_;
    b->be.iterate = cluster ? NULL : kc_redis_iterate_; /* a cluster's SCAN would be every master's: not yet */
    b->be.ctx = b;
    *out = &b->be;
    return KC_OK;
}

int kc_store_redis_state(kc_store_backend *be, kc_remote_state *out) {
    if (!be || !out || be->free != r_free) return kc_err(KC_EINVAL, "kc_store_redis_state: not a redis backend");
    rb *b = be->ctx;
    memset(out, 0, sizeof *out);
    snprintf(out->url, sizeof out->url, "%s", b->u.shown);
    if (b->cl) kc_redis_cluster_state(b->cl, out);
    else kc_brk_state(&b->brk, out);
    return KC_OK;
}

/* The scheme "redis", registered by the library at first use (registry.c's builtins). */
const kc_store_scheme kc_store_redis_scheme = {KC_STORE_SCHEME_VERSION, "redis", kc_store_redis_open,
                                               kc_redis_url_redact};

/* The scheme "rediss": the same back end over TLS (tls.c). */
const kc_store_scheme kc_store_rediss_scheme = {KC_STORE_SCHEME_VERSION, "rediss", kc_store_redis_open,
                                                kc_redis_url_redact};
/* "redis+cluster", "rediss+cluster": the same back end in its cluster mode (redis_cluster_be.c). */
const kc_store_scheme kc_store_redis_cluster_scheme = {KC_STORE_SCHEME_VERSION, "redis+cluster", kc_store_redis_open,
                                                       kc_redis_url_redact};
const kc_store_scheme kc_store_rediss_cluster_scheme = {KC_STORE_SCHEME_VERSION, "rediss+cluster", kc_store_redis_open,
                                                        kc_redis_url_redact};
