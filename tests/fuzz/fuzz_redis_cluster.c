/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_redis_cluster.c — libFuzzer target: what a Redis Cluster node sends that steers a client
 * (src/store/redis_cluster.c): the CLUSTER SLOTS reply (the slot map) and the MOVED/ASK errors.
 *
 * Structure-aware by generation: the first byte picks a mode, and in the structured modes the
 * rest of the input is read as choices, not as text — how many ranges, each range's start and end
 * (edge values: 0, 5460, 16383, 16384, -1, 2^63-1, or any 14 bits), its shape (too few values,
 * a master that is not an array, a host that is a number), the host (from a list of good, empty,
 * "?", IPv6, hostile names, or the input's bytes), the port (0, 1, 65535, 65536, negative), replicas
 * and Redis 7's metadata — and the reply is written as RESP with every length right, so mutations
 * reach the map's checks rather than the framing.  Raw modes hand the bytes over as they are (a
 * RESP reply; an error's text).  A reply goes the way the back end reads one: the reply scanner
 * (redis_reply.c) bounds it with the cluster's limits, then hiredis's reader builds it, then
 * kc_cluster_map_parse judges it.  Invariants checked (abort on breach): a map taken has at most
 * KC_CLUSTER_MAX_NODES masters, every slot names -1 or one of them, every master's host passes
 * kc_cluster_host_ok and its port is 1..65535; a map refused knows no slot; a redirect taken has a
 * slot < 16384, a port 1..65535 and a host that is empty or a host name, and a well-formed one
 * built here is always taken with exactly the values written; the plan over the map is a
 * permutation in groups of one slot. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcache.h"
#include "store/redis_cluster.h"
#include "store/redis_reply.h"

typedef struct in {
    const uint8_t *p;
    size_t n, i;
} in;

static unsigned take(in *s) { return s->i < s->n ? s->p[s->i++] : 0; }

typedef struct out {
    char *b;
    size_t len, cap;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->len + n + 1) * 2;
        char *b = realloc(o->b, cap);
        if (!b) abort();
        o->b = b, o->cap = cap;
    }
    memcpy(o->b + o->len, s, n);
    o->len += n;
}

static void putf(out *o, const char *fmt, long long v) {
    char t[48];
    int n = snprintf(t, sizeof t, fmt, v);
    put(o, t, (size_t)n);
}

static void bulk(out *o, const char *s, size_t n) {
    putf(o, "$%lld\r\n", (long long)n);
    put(o, s, n);
    put(o, "\r\n", 2);
}

static long long edge(in *s) {
    static const long long e[] = {0, 1, 5460, 5461, 10922, 16383, 16384, -1, 65535, 65536, 9223372036854775807LL};
    unsigned c = take(s);
    if (c < 160) return (long long)((c << 8 | take(s)) & 16383u);
    return e[c % (sizeof e / sizeof *e)];
}

/* A host: a chosen one, or up to 300 of the input's bytes. */
static void host(in *s, char *h, size_t *hl) {
    static const char *const names[] = {"127.0.0.1", "::1",          "", "?", "node-1.example", "a b", "-oProxy",
                                        "h\r\nx",    "fe80::1%eth0", "x"};
    unsigned c = take(s);
    if (c < 200) {
        const char *n = names[c % (sizeof names / sizeof *names)];
        *hl = strlen(n);
        memcpy(h, n, *hl);
        return;
    }
    size_t n = (c - 200) * 6;
    for (*hl = 0; *hl < n && s->i < s->n; (*hl)++) h[*hl] = (char)take(s);
}

static void node(in *s, out *o) {
    unsigned shape = take(s) % 8;
    if (shape == 0) { /* not an array */
        putf(o, ":%lld\r\n", edge(s));
        return;
    }
    int meta = shape >= 4, n = shape == 1 ? 1 : 2 + meta * 2;
    putf(o, "*%lld\r\n", n);
    char h[400];
    size_t hl;
    host(s, h, &hl);
    if (shape == 2) putf(o, ":%lld\r\n", (long long)hl); /* the host a number */
    else bulk(o, h, hl);
    if (n == 1) return;
    putf(o, ":%lld\r\n", edge(s));
    if (meta) {
        bulk(o, "0123456789abcdef0123456789abcdef01234567", 40);
        if (shape == 7) put(o, "*2\r\n$8\r\nhostname\r\n$1\r\nh\r\n", 26);
        else put(o, "*0\r\n", 4);
    }
}

static void slots_reply(in *s, out *o) {
    unsigned nr = take(s);
    if (nr >= 250) nr = 250 + (take(s) << 4); /* now and then thousands of ranges */
    putf(o, "*%lld\r\n", nr);
    for (unsigned r = 0; r < nr; r++) {
        unsigned shape = take(s) % 8, reps = shape >= 6 ? take(s) % 4 : 0;
        if (shape == 0) {
            putf(o, ":%lld\r\n", edge(s));
            continue;
        }
        unsigned n = shape == 1 ? 2 : 3 + reps;
        putf(o, "*%lld\r\n", n);
        putf(o, ":%lld\r\n", edge(s));
        if (shape == 2) bulk(o, "5", 1);
        else putf(o, ":%lld\r\n", edge(s));
        for (unsigned k = 2; k < n; k++) node(s, o);
    }
}

static void check_map(const kc_cluster_map *m, int rc, in *s) {
    if (rc != KC_OK) {
        if (m->nnodes != 0) abort();
        for (int i = 0; i < KC_CLUSTER_SLOTS; i++)
            if (m->slot_node[i] != -1) abort();
        return;
    }
    if (m->nnodes < 0 || m->nnodes > KC_CLUSTER_MAX_NODES) abort();
    for (int i = 0; i < KC_CLUSTER_SLOTS; i++)
        if (m->slot_node[i] < -1 || m->slot_node[i] >= m->nnodes) abort();
    for (int i = 0; i < m->nnodes; i++) {
        const kc_cluster_node *n = &m->node[i];
        size_t hl = strnlen(n->host, sizeof n->host);
        if (hl == sizeof n->host || !kc_cluster_host_ok(n->host, hl) || n->port < 1 || n->port > 65535) abort();
    }
    /* the plan over this map: a permutation, one slot per group */
    unsigned slots[64];
    size_t n = take(s) % 64, order[64], start[65], seen[64] = {0};
    for (size_t i = 0; i < n; i++) slots[i] = (unsigned)edge(s) & 16383u;
    size_t g = kc_cluster_plan(slots, n, m, order, start);
    if (n && (g == 0 || g > n || start[0] != 0 || start[g] != n)) abort();
    for (size_t k = 0; k < g; k++)
        for (size_t j = start[k]; j < start[k + 1]; j++) {
            if (order[j] >= n || seen[order[j]]++ || slots[order[j]] != slots[order[start[k]]]) abort();
        }
}

/* The reply through the scanner and hiredis, then the map; 1 when hiredis built it. */
static void map_of(const char *b, size_t len, in *s) {
    kc_reply_scan sc;
    kc_reply_scan_init(&sc, KC_CLUSTER_REPLY_ELEMENTS, KC_CLUSTER_REPLY_BYTES);
    size_t used = 0;
    if (kc_reply_scan_feed(&sc, 4096, "fuzz", b, len, &used) != KC_OK || sc.depth != 0) return;
    redisReader *rd = redisReaderCreate();
    if (!rd) abort();
    void *r = NULL;
    if (redisReaderFeed(rd, b, used) == REDIS_OK && redisReaderGetReply(rd, &r) == REDIS_OK && r) {
        static kc_cluster_map m;
        int rc = kc_cluster_map_parse(r, "seed.example", "fuzz", &m);
        check_map(&m, rc, s);
        freeReplyObject(r);
    }
    redisReaderFree(rd);
}

static void check_redirect(const char *e, size_t len, const kc_cluster_redirect *want) {
    kc_cluster_redirect r;
    int k = kc_cluster_redirect_parse(e, len, &r);
    if (k != r.kind) abort();
    if (k != KC_REDIRECT_NONE) {
        size_t hl = strnlen(r.to.host, sizeof r.to.host);
        if (r.slot >= KC_CLUSTER_SLOTS || r.to.port < 1 || r.to.port > 65535 || hl == sizeof r.to.host ||
            (hl && !kc_cluster_host_ok(r.to.host, hl)))
            abort();
    }
    if (want && (k != want->kind || r.slot != want->slot || r.to.port != want->to.port ||
                 strcmp(r.to.host, want->to.host) != 0))
        abort();
}

static void redirect_built(in *s) {
    out o = {0};
    unsigned kind = take(s) % 3;
    put(&o, kind == 0 ? "MOVED " : kind == 1 ? "ASK " : "TRYAGAIN ", kind == 0 ? 6 : kind == 1 ? 4 : 9);
    long long slot = edge(s), port = edge(s);
    putf(&o, "%lld ", slot);
    char h[400];
    size_t hl;
    host(s, h, &hl);
    put(&o, h, hl);
    putf(&o, ":%lld", port);
    unsigned tail = take(s) % 4;
    if (tail == 1) put(&o, " x", 2);
    kc_cluster_redirect want = {0};
    int valid = kind < 2 && slot >= 0 && slot < KC_CLUSTER_SLOTS && port >= 1 && port <= 65535 && tail != 1 &&
                (hl == 0 || kc_cluster_host_ok(h, hl));
    if (valid) {
        want.kind = kind == 0 ? KC_REDIRECT_MOVED : KC_REDIRECT_ASK;
        want.slot = (unsigned)slot, want.to.port = (int)port;
        memcpy(want.to.host, h, hl);
    }
    check_redirect(o.b, o.len, valid ? &want : NULL);
    free(o.b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    in s = {data + 1, size - 1, 0};
    switch (data[0] % 4) {
    case 0: check_redirect((const char *)data + 1, size - 1, NULL); break;
    case 1: redirect_built(&s); break;
    case 2: map_of((const char *)data + 1, size - 1, &s); break;
    default: {
        out o = {0};
        slots_reply(&s, &o);
        map_of(o.b, o.len, &s);
        free(o.b);
    }
    }
    return 0;
}
