/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_cluster.c — Redis Cluster's addressing, without a socket.
 *
 * The one idea: a cluster tells a client where keys live in three ways — the slot of a key
 * (CRC16 of the key or of its {hash tag}, mod 16384), the slot map (CLUSTER SLOTS: ranges of
 * slots and the master serving each), and the redirections a node answers with when the client's
 * map is stale (MOVED: the slot has moved for good; ASK: this one key is mid-migration, ask
 * there once, after ASKING).  Everything a cluster node sends is hostile until checked here: a
 * map's counts, slot ranges, host names and ports are bounded and checked before a single one is
 * used, ranges may not overlap, and a redirection parses exactly or is not a redirection at all
 * (then it is an error reply like any other).  The plan splits a several-key read (MGET of a
 * graph's images, get_first's candidate names) into one command per slot, since a cluster
 * refuses a command whose keys span slots (CROSSSLOT), and says where each answer goes back.
 *
 * Callers: store/redis.c; tests/store/test_redis_cluster.c; tests/fuzz/fuzz_redis_cluster.c.
 * Must not: allocate, keep state, or read a reply the scanner (redis_reply.c) has not bounded.
 */
#include "redis_cluster.h"

#include <string.h>

#include "../common/internal.h"

/* CRC16-XMODEM (polynomial 0x1021, initial 0), as Redis Cluster's key-to-slot mapping defines it. */
static uint16_t crc16(const char *p, size_t n) {
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)((uint16_t)(unsigned char)p[i] << 8);
        for (int b = 0; b < 8; b++) crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned kc_cluster_slot(const char *key, size_t len) {
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        if (close && close > key + from) return crc16(key + from, (size_t)(close - (key + from))) & 16383u;
    }
    return crc16(key, len) & 16383u;
}

int kc_cluster_host_ok(const char *s, size_t len) {
    if (len == 0 || len > KC_CLUSTER_HOST_MAX || s[0] == '-') return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_' || c == ':';
        if (!ok) return 0;
    }
    return 1;
}

int kc_cluster_map_node(const kc_cluster_map *m, unsigned slot) {
    return slot < KC_CLUSTER_SLOTS ? m->slot_node[slot] : -1;
}

static void map_clear(kc_cluster_map *m) {
    m->nnodes = 0;
    for (int i = 0; i < KC_CLUSTER_SLOTS; i++) m->slot_node[i] = -1;
}

/* The index of (host, port) among the map's masters, added if new; -1 when the map is full. */
static int node_index(kc_cluster_map *m, const char *host, size_t hl, int port) {
    for (int i = 0; i < m->nnodes; i++)
        if (m->node[i].port == port && strlen(m->node[i].host) == hl && memcmp(m->node[i].host, host, hl) == 0)
            return i;
    if (m->nnodes >= KC_CLUSTER_MAX_NODES) return -1;
    kc_cluster_node *n = &m->node[m->nnodes];
    memcpy(n->host, host, hl);
    n->host[hl] = '\0';
    n->port = port;
    return m->nnodes++;
}

/* One slot number of a range: an integer in 0..16383, or -1. */
static long slot_of(const redisReply *v) {
    if (v->type != REDIS_REPLY_INTEGER || v->integer < 0 || v->integer >= KC_CLUSTER_SLOTS) return -1;
    return (long)v->integer;
}

/* One range [start, end, [host, port, ...], replicas...] into m; KC_OK or KC_EIO. */
static int take_range(kc_cluster_map *m, const redisReply *e, size_t i, const char *asked, const char *who) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->elements > KC_CLUSTER_MAX_PER_RANGE)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: range %zu is not [start, end, master, replicas...]", who, i);
    long lo = slot_of(e->element[0]), hi = slot_of(e->element[1]);
    if (lo < 0 || hi < lo)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: range %zu has no valid slots (0 <= start <= end < %d)", who, i,
                      KC_CLUSTER_SLOTS);
    const redisReply *mn = e->element[2];
    if (mn->type != REDIS_REPLY_ARRAY || mn->elements < 2 || mn->element[0]->type != REDIS_REPLY_STRING ||
        mn->element[1]->type != REDIS_REPLY_INTEGER)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: range %zu: its master is not [host, port, ...]", who, i);
    const char *host = mn->element[0]->str;
    size_t hl = (size_t)mn->element[0]->len;
    long long port = mn->element[1]->integer;
    if (hl == 1 && host[0] == '?') return KC_OK; /* an endpoint the node does not know: slots stay unknown */
    if (hl == 0) host = asked, hl = strlen(asked);
    if (!kc_cluster_host_ok(host, hl))
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: range %zu: a master's host is not a host name or address", who,
                      i);
    if (port < 1 || port > 65535)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: range %zu: port %lld is out of range", who, i, port);
    int ni = node_index(m, host, hl, (int)port);
    if (ni < 0) return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: more than %d masters", who, KC_CLUSTER_MAX_NODES);
    for (long s = lo; s <= hi; s++) {
        if (m->slot_node[s] >= 0) return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: slot %ld is in two ranges", who, s);
        m->slot_node[s] = (int16_t)ni;
    }
    return KC_OK;
}

int kc_cluster_map_parse(const redisReply *r, const char *asked_host, const char *who, kc_cluster_map *out) {
    map_clear(out);
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: the reply is not an array (is cluster mode on?)", who);
    if (r->elements > KC_CLUSTER_MAX_RANGES)
        return kc_err(KC_EIO, "redis %s: CLUSTER SLOTS: %zu ranges (at most %d)", who, (size_t)r->elements,
                      KC_CLUSTER_MAX_RANGES);
    for (size_t i = 0; i < r->elements; i++) {
        int rc = take_range(out, r->element[i], i, asked_host, who);
        if (rc) {
            map_clear(out);
            return rc;
        }
    }
    return KC_OK;
}

/* A decimal number of 1..maxd digits, all of [p, p+n), at most `max`; -1 otherwise. */
static long number(const char *p, size_t n, size_t maxd, long max) {
    if (n == 0 || n > maxd) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v <= max ? v : -1;
}

int kc_cluster_redirect_parse(const char *err, size_t len, kc_cluster_redirect *out) {
    memset(out, 0, sizeof *out);
    int kind;
    size_t off;
    if (len > 6 && memcmp(err, "MOVED ", 6) == 0) kind = KC_REDIRECT_MOVED, off = 6;
    else if (len > 4 && memcmp(err, "ASK ", 4) == 0) kind = KC_REDIRECT_ASK, off = 4;
    else return KC_REDIRECT_NONE;
    const char *p = err + off, *end = err + len;
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    if (!sp) return KC_REDIRECT_NONE;
    long slot = number(p, (size_t)(sp - p), 5, KC_CLUSTER_SLOTS - 1);
    const char *hp = sp + 1, *colon = NULL;
    for (const char *q = hp; q < end; q++)
        if (*q == ':') colon = q;
    if (slot < 0 || !colon) return KC_REDIRECT_NONE;
    long port = number(colon + 1, (size_t)(end - colon - 1), 5, 65535);
    size_t hl = (size_t)(colon - hp);
    if (port < 1 || (hl && !kc_cluster_host_ok(hp, hl))) return KC_REDIRECT_NONE;
    out->kind = kind;
    out->slot = (unsigned)slot;
    memcpy(out->to.host, hp, hl);
    out->to.host[hl] = '\0';
    out->to.port = (int)port;
    return kind;
}

size_t kc_cluster_plan(const unsigned *slots, size_t n, const kc_cluster_map *m, size_t *order, size_t *start) {
    if (n == 0 || n > KC_CLUSTER_PLAN_MAX) return 0;
    size_t first[KC_CLUSTER_PLAN_MAX]; /* the first key of each key's slot */
    int node[KC_CLUSTER_PLAN_MAX];
    for (size_t i = 0; i < n; i++) {
        size_t f = 0;
        while (slots[f] != slots[i]) f++;
        first[i] = f;
        node[i] = m ? kc_cluster_map_node(m, slots[i]) : 0;
    }
    /* Insertion sort by (node, first): stable, so each group keeps its keys' order. */
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 &&
               (node[order[j - 1]] > node[i] || (node[order[j - 1]] == node[i] && first[order[j - 1]] > first[i])))
            order[j] = order[j - 1], j--;
        order[j] = i;
    }
    size_t g = 0;
    for (size_t k = 0; k < n; k++)
        if (k == 0 || first[order[k]] != first[order[k - 1]]) start[g++] = k;
    start[g] = n;
    return g;
}

/* One seed "host[:port]" or "[v6]:port" of the list. */
static int one_seed(const char *p, size_t n, kc_cluster_node *out, const char *shown) {
    const char *hs = p, *he, *end = p + n;
    if (n && *p == '[') {
        he = memchr(p, ']', n);
        if (!he) return kc_err(KC_EINVAL, "remote URL '%s': unterminated [address]", shown);
        hs = p + 1;
        p = he + 1;
    } else {
        he = memchr(p, ':', n);
        if (!he) he = end;
        p = he;
    }
    size_t hl = (size_t)(he - hs);
    if (!kc_cluster_host_ok(hs, hl))
        return kc_err(KC_EINVAL, "remote URL '%s': a seed without a valid host (host:port, comma-separated)", shown);
    memcpy(out->host, hs, hl);
    out->host[hl] = '\0';
    out->port = 6379;
    if (p < end) {
        long v = *p == ':' ? number(p + 1, (size_t)(end - p - 1), 5, 65535) : -1;
        if (v < 1) return kc_err(KC_EINVAL, "remote URL '%s': a seed with a bad port", shown);
        out->port = (int)v;
    }
    return KC_OK;
}

int kc_cluster_seeds_parse(const char *list, size_t len, kc_cluster_node *seeds, int cap, int *n, const char *shown) {
    *n = 0;
    const char *p = list, *end = list + len;
    for (;;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *e = comma ? comma : end;
        if (*n >= cap) return kc_err(KC_EINVAL, "remote URL '%s': more than %d seed nodes", shown, cap);
        int rc = one_seed(p, (size_t)(e - p), &seeds[*n], shown);
        if (rc) return rc;
        (*n)++;
        if (!comma) return KC_OK;
        p = comma + 1;
    }
}
