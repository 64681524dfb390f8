/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_admin.c — the redis back end's slots that are not lookups: a lease on a name (one compile
 * per key across the fleet, store/lease.c's [Note: leases]) and the listing of what the server holds (a
 * bounded SCAN, for `kcache purge`).
 *
 * The one idea: both run through redis.c's one command runner (kc_redis_command_: the deadline, the breaker,
 * the reply's shape, replies in step), so nothing here opens a connection or reads a byte itself; a reply
 * is hostile (a cursor that never ends, a key that is not a string) and every loop is bounded.
 *
 * Callers: redis.c (kc_store_redis_open fills the table's lease_take, lease_release and iterate slots).
 * Must not: delete another holder's lease, or list a name outside "kcache:v1:" as an entry.
 */
#include <hiredis/hiredis.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../common/internal.h"
#include "kcache/sys/store.h"
#include "name.h"
#include "redis_admin.h"
#include "redis_io.h"
#include "redis_reply.h"
#include "redis_lib.h"

#define PREFIX "kcache:v1:"

/* A command whose reply is one of `types`, each value under the value cap. */
static int command_as(void *b, int argc, const char **argv, const size_t *lens, const kc_reply_expect *ex,
                      redisReply **out) {
    kc_redis_cmd cmd = {argc, argv, lens, ex};
    return kc_redis_command_(b, &cmd, out, NULL);
}

static void key_of(const char *name, char *out, size_t cap) { snprintf(out, cap, PREFIX "%s", name); }

/* ---- leases (one compile per key across the fleet: store/lease.c) ---- */

#define LEASE_PREFIX "lease:"

/* A lease's holder token: 1 to 64 printable bytes. */
static int holder_ok(const char *h) {
    size_t n = h ? strnlen(h, 65) : 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] <= ' ' || h[i] > '~') return 0;
    return n >= 1 && n <= 64;
}

/* A lease command: as any command, but an error reply (an ACL user without the lease keys or @scripting) is
 * KC_EPERM, so that store/lease.c stops asking this remote for leases (the entries still work). */
static int lease_command(void *b, int argc, const char **argv, const size_t *lens, unsigned types, redisReply **out) {
    kc_reply_expect ex = {types, 0, 0, 0};
    kc_redis_cmd cmd = {argc, argv, lens, &ex};
    int refused = 0, rc = kc_redis_command_(b, &cmd, out, &refused);
    return rc && refused ? kc_err_prefix(KC_EPERM, "lease refused by the server") : rc;
}

/* SET kcache:v1:lease:<name> <holder> NX PX <ttl>: KC_OK taken, KC_EBUSY held by another. */
int kc_redis_lease_take_(kc_store_backend *be, const char *name, uint64_t ttl_ms, const char *holder) {
    if (kc_store_name_check(name) != KC_OK || !holder_ok(holder) || !ttl_ms)
        return kc_err(KC_EINVAL, "redis lease: a bad name, holder or time");
    char k[KC_NAME_MAX + 32], ttl[24];
    key_of(LEASE_PREFIX, k, sizeof k);
    snprintf(k + strlen(k), sizeof k - strlen(k), "%s", name);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)ttl_ms);
    const char *argv[] = {"SET", k, holder, "NX", "PX", ttl};
    size_t lens[] = {3, strlen(k), strlen(holder), 2, 2, strlen(ttl)};
    redisReply *r;
    int rc = lease_command(be->ctx, 6, argv, lens, T_STATUS | T_NIL, &r);
    if (rc) return rc;
    rc = r->type == REDIS_REPLY_NIL ? KC_EBUSY : KC_OK;
    kc_hiredis_free_reply(r);
    return rc;
}

/* ---- iterate: SCAN (for `kcache purge`, a remote gc) ---- */

#define SCAN_COUNT 128        /* keys asked per SCAN round (a hint the server may exceed a little) */
#define SCAN_MAX_KEYS 1024    /* a SCAN reply's keys at most; more is a hostile reply */
#define SCAN_MAX_ROUNDS 65536 /* rounds at most: a server whose cursor never ends cannot hold the walk */
#define SCAN_SEEN 64          /* the last cursors remembered: one seen again ends the walk */

/* The sizes of `n` keys in one round trip (a Lua script of STRLEN: one integer each; -1 for a key that is not a
 * string, which would otherwise fail the whole script with WRONGTYPE). */
static const char SIZE_SCRIPT[] = "local r = {} for i, k in ipairs(KEYS) do local v = redis.pcall('STRLEN', k) "
                                  "if type(v) ~= 'number' then v = -1 end r[i] = v end return r";

/* One SCAN round's stored names (prefix stripped, lease keys and malformed names skipped), their sizes
 * asked in one more round trip, each given to cb. */
static int scan_visit(void *b, redisReply *keys, kc_store_iter_cb cb, void *ctx) {
    const char *argv[3 + SCAN_MAX_KEYS];
    size_t lens[3 + SCAN_MAX_KEYS], n = 0;
    const char *names[SCAN_MAX_KEYS];
    char nk[8];
    if (keys->elements > SCAN_MAX_KEYS) /* the reply scanner holds it to this already */
        return kc_err(KC_EIO, "redis %s: SCAN: %zu keys in one reply", kc_redis_shown_(b), (size_t)keys->elements);
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING)
            return kc_err(KC_EIO, "redis %s: SCAN: a key that is not a string", kc_redis_shown_(b));
        const char *name = k->str + strlen(PREFIX);
        if (k->len <= strlen(PREFIX) || k->len > KC_NAME_MAX + strlen(PREFIX) ||
            memcmp(k->str, PREFIX, strlen(PREFIX)) || strlen(k->str) != (size_t)k->len ||
            kc_store_name_check(name) != KC_OK)
            continue; /* not an entry: a lease ("kcache:v1:lease:…"), another writer's key */
        names[n] = name, argv[3 + n] = k->str, lens[3 + n] = (size_t)k->len, n++;
    }
    if (n == 0) return KC_OK;
    snprintf(nk, sizeof nk, "%zu", n);
    argv[0] = "EVAL", lens[0] = 4, argv[1] = SIZE_SCRIPT, lens[1] = sizeof SIZE_SCRIPT - 1;
    argv[2] = nk, lens[2] = strlen(nk);
    kc_reply_expect ex = {T_ARRAY, 0, 0, n + 1};
    redisReply *r;
    int rc = command_as(b, (int)(3 + n), argv, lens, &ex, &r);
    if (rc) return rc;
    if (r->elements != n)
        rc = kc_err(KC_EIO, "redis %s: EVAL: %zu sizes for %zu keys", kc_redis_shown_(b), (size_t)r->elements, n);
    for (size_t i = 0; i < n && rc == KC_OK; i++) {
        redisReply *v = r->element[i];
        if (v->type != REDIS_REPLY_INTEGER || v->integer < -1) {
            rc = kc_err(KC_EIO, "redis %s: EVAL: a size that is not a number", kc_redis_shown_(b));
            break;
        }
        if (v->integer == 0) continue; /* gone since the SCAN */
        /* -1: not a string (a hash under an entry's name): listed, 0 bytes; reading it says corrupt */
        kc_store_item it = {names[i], v->integer < 0 ? 0 : (uint64_t)v->integer, 0, NULL};
        rc = cb(&it, ctx);
    }
    kc_hiredis_free_reply(r);
    return rc;
}

/* Deletes the lease only while `holder` still has it (one script: no other holder's lease is ever deleted). */
static const char RELEASE_SCRIPT[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                                     "return redis.call('DEL', KEYS[1]) else return 0 end";

int kc_redis_lease_release_(kc_store_backend *be, const char *name, const char *holder) {
    if (kc_store_name_check(name) != KC_OK || !holder_ok(holder))
        return kc_err(KC_EINVAL, "redis lease: a bad name or holder");
    char k[KC_NAME_MAX + 32];
    key_of(LEASE_PREFIX, k, sizeof k);
    snprintf(k + strlen(k), sizeof k - strlen(k), "%s", name);
    const char *argv[] = {"EVAL", RELEASE_SCRIPT, "1", k, holder};
    size_t lens[] = {4, sizeof RELEASE_SCRIPT - 1, 1, strlen(k), strlen(holder)};
    redisReply *r;
    int rc = lease_command(be->ctx, 5, argv, lens, T_INTEGER, &r);
    if (rc) return rc;
    rc = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? KC_OK : KC_MISS;
    kc_hiredis_free_reply(r);
    return rc;
}

/* A SCAN cursor: decimal digits, at most 20, no wrap; 0 or 1 (bad). */
static int scan_cursor(const redisReply *c, unsigned long long *out) {
    if (c->type != REDIS_REPLY_STRING || c->len < 1 || c->len > 20) return 0;
    unsigned long long v = 0;
    for (size_t i = 0; i < (size_t)c->len; i++) {
        if (c->str[i] < '0' || c->str[i] > '9' || v > (ULLONG_MAX - 9) / 10) return 0;
        v = v * 10 + (unsigned long long)(c->str[i] - '0');
    }
    *out = v;
    return 1;
}

/*
 * Every stored entry, by SCAN MATCH "kcache:v1:*" (each name once at least; one written or removed during the
 * walk may be missed or seen, as SCAN promises).  A reply is bounded as it arrives (SCAN_MAX_KEYS keys); the walk
 * ends at cursor 0, and a hostile server cannot hold it: a cursor seen again among the last SCAN_SEEN ends it,
 * and so does the SCAN_MAX_ROUNDS-th round (KC_EIO each, saying the walk was cut).  last_used is 0 (Redis keeps no such time for us).
 */
int kc_redis_iterate_(kc_store_backend *be, kc_store_iter_cb cb, void *ctx) {
    void *b = be->ctx;
    unsigned long long cur = 0, seen[SCAN_SEEN];
    char cs[24], cnt[8];
    snprintf(cnt, sizeof cnt, "%d", SCAN_COUNT);
    for (unsigned round = 0; round < SCAN_MAX_ROUNDS; round++) {
        snprintf(cs, sizeof cs, "%llu", cur);
        const char *argv[] = {"SCAN", cs, "MATCH", PREFIX "*", "COUNT", cnt};
        size_t lens[] = {4, strlen(cs), 5, strlen(PREFIX) + 1, 5, strlen(cnt)};
        kc_reply_expect ex = {T_ARRAY, 0, 0, SCAN_MAX_KEYS + 2};
        redisReply *r;
        int rc = command_as(b, 6, argv, lens, &ex, &r);
        if (rc) return rc;
        if (r->elements != 2 || !scan_cursor(r->element[0], &cur) || r->element[1]->type != REDIS_REPLY_ARRAY)
            rc = kc_err(KC_EIO, "redis %s: SCAN: a reply that is not a cursor and a list of keys", kc_redis_shown_(b));
        else rc = scan_visit(b, r->element[1], cb, ctx);
        kc_hiredis_free_reply(r);
        if (rc || cur == 0) return rc;
        for (unsigned i = 0; i < round && i < SCAN_SEEN; i++)
            if (seen[i] == cur)
                return kc_err(KC_EIO, "redis %s: SCAN: cursor %llu came back; walk cut (run it again)",
                              kc_redis_shown_(b), cur);
        seen[round % SCAN_SEEN] = cur;
    }
    return kc_err(KC_EIO, "redis %s: SCAN: no end after %d rounds; walk cut (is it a redis server?)",
                  kc_redis_shown_(b), SCAN_MAX_ROUNDS);
}
