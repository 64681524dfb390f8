/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_redis.c — libFuzzer target: the Redis backend (src/store/redis.c) reading the fuzzer's
 * bytes as a server's reply.
 *
 * The backend has no reply parser to call without a socket (hiredis parses, redis.c judges the
 * reply inside each command), so this target is a fake server: a thread on 127.0.0.1 accepts,
 * reads the command, answers with the input's bytes after the first and closes.  The first byte
 * picks the command: GET, EXISTS, DEL, SET, or the several-name GET (get_first).  A fresh backend
 * per input keeps the circuit breaker and the pool out of the way; the deadlines are short, and
 * the close ends every reply at once.  Only the remote tier's code is under test, never a server.
 *
 * The custom mutator is structure-aware (RESP2, the protocol hiredis reads): it parses the reply
 * into its values (simple string, error, integer, bulk string, array, nil), changes one — its type,
 * an integer among edge values, a bulk string's bytes (a GET's value is an entry: the entry
 * mutator, mutate_entry.h, rebuilds it with fresh checksums), an array's elements (dropped,
 * doubled, nested) — and writes it again with every length right, so the mutations reach the
 * backend's judgement of each reply rather than hiredis's framing; one time in eight the bytes are
 * mutated raw (a length that lies, a reply cut short). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kcache.h"
#include "kcache/sys/store.h"
#include "mutate_entry.h" /* fz_rand, fz_entry_mutate, LLVMFuzzerMutate */

static int lfd = -1;
static char url[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *reply;
static size_t reply_len;
static int serving; /* 1 while the thread may answer the current input */

static void *server(void *arg) {
    (void)arg;
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0) continue;
        char buf[4096];
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) (void)!read(fd, buf, sizeof buf); /* the command */
        pthread_mutex_lock(&mu);
        if (serving) {
            size_t off = 0;
            while (off < reply_len) {
                ssize_t w = send(fd, reply + off, reply_len - off, MSG_NOSIGNAL);
                if (w <= 0) break;
                off += (size_t)w;
            }
        }
        pthread_mutex_unlock(&mu);
        shutdown(fd, SHUT_RDWR);
        close(fd);
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (lfd < 0) {
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t al = sizeof a;
        lfd = socket(AF_INET, SOCK_STREAM, 0);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 16) ||
            getsockname(lfd, (struct sockaddr *)&a, &al))
            abort();
        snprintf(url, sizeof url, "redis://127.0.0.1:%d", ntohs(a.sin_port));
        pthread_t t;
        if (pthread_create(&t, NULL, server, NULL)) abort();
        pthread_detach(t);
    }
    if (size < 1) return 0;
    pthread_mutex_lock(&mu);
    reply = data + 1, reply_len = size - 1, serving = 1;
    pthread_mutex_unlock(&mu);
    kc_redis_config cfg = {0};
    cfg.connect_ms = 200;
    cfg.deadline_ms = 200;
    cfg.max_value = 1 << 20;
    kc_store_backend *be;
    if (kc_store_redis_open(&be, url, &cfg) != KC_OK) abort();
    const char *names[] = {"00000000000000000000000000000000.sm_80", "00000000000000000000000000000000.sm_90"};
    void *out = NULL;
    size_t len = 0, which = 0;
    switch (data[0] % 5) {
    case 0: be->get(be, names[0], &out, &len); break;
    case 1: be->exists(be, names[0]); break;
    case 2: be->remove(be, names[0]); break;
    case 3: be->put(be, names[0], "value", 5); break;
    default:
        if (be->get_first) be->get_first(be, names, 2, &which, &out, &len);
        break;
    }
    kc_entry *e = NULL; /* what a GET gave, decoded as the tiers decode a remote's entry */
    if (out && kc_entry_decode(&e, out, len) == KC_OK) kc_entry_free(e);
    free(out);
    be->free(be);
    pthread_mutex_lock(&mu);
    serving = 0;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* ---- the structure-aware mutator ---- */

typedef struct rv {
    char type;   /* + - : $ * */
    long long n; /* integer; bulk or array length, -1 for nil */
    uint8_t *b;  /* + - $ bytes */
    size_t len;
    struct rv *kid; /* * elements */
    size_t nkid;
} rv;

static void rv_free(rv *v) {
    for (size_t i = 0; i < v->nkid; i++) rv_free(&v->kid[i]);
    free(v->kid);
    free(v->b);
    memset(v, 0, sizeof *v);
}

/* One value of [*p, end); 0 when the bytes are not RESP (then mutated raw). */
static int rv_parse(const uint8_t **p, const uint8_t *end, rv *v, int depth) {
    memset(v, 0, sizeof *v);
    const uint8_t *crlf = *p < end ? memchr(*p, '\r', (size_t)(end - *p)) : NULL;
    if (!crlf || crlf + 1 >= end || crlf[1] != '\n' || depth > 8) return 0;
    v->type = (char)**p;
    const uint8_t *line = *p + 1;
    size_t ll = (size_t)(crlf - line);
    *p = crlf + 2;
    if (v->type == '+' || v->type == '-') {
        v->b = malloc(ll + 1);
        if (!v->b) return 0;
        memcpy(v->b, line, ll);
        v->len = ll;
        return 1;
    }
    char num[32];
    if (ll == 0 || ll >= sizeof num) return 0;
    memcpy(num, line, ll);
    num[ll] = 0;
    char *e;
    v->n = strtoll(num, &e, 10);
    if (*e) return 0;
    if (v->type == ':' || v->n < 0) return v->type == ':' || v->type == '$' || v->type == '*';
    if (v->type == '$') {
        if ((unsigned long long)v->n + 2 > (size_t)(end - *p) || (*p)[v->n] != '\r') return 0;
        v->b = malloc((size_t)v->n + 1);
        if (!v->b) return 0;
        memcpy(v->b, *p, (size_t)v->n);
        v->len = (size_t)v->n;
        *p += v->n + 2;
        return 1;
    }
    if (v->type != '*' || v->n > 64) return 0;
    v->kid = calloc((size_t)v->n + 1, sizeof *v->kid);
    if (!v->kid) return 0;
    for (long long i = 0; i < v->n; i++) {
        v->nkid++;
        if (!rv_parse(p, end, &v->kid[i], depth + 1)) return 0;
    }
    return 1;
}

/* Write v with its lengths right; the new length, or 0 when it does not fit. */
static size_t rv_emit(const rv *v, uint8_t *out, size_t at, size_t max) {
    char h[48];
    int hl;
    if (v->type == '+' || v->type == '-') {
        if (at + 1 + v->len + 2 > max) return 0;
        out[at] = (uint8_t)v->type;
        if (v->len) memcpy(out + at + 1, v->b, v->len);
        memcpy(out + at + 1 + v->len, "\r\n", 2);
        return at + 1 + v->len + 2;
    }
    long long n = v->type == '$' && v->b ? (long long)v->len : v->type == '*' && v->n >= 0 ? (long long)v->nkid : v->n;
    hl = snprintf(h, sizeof h, "%c%lld\r\n", v->type, n);
    if (at + (size_t)hl > max) return 0;
    memcpy(out + at, h, (size_t)hl);
    at += (size_t)hl;
    if (v->type == '$' && v->b) {
        if (at + v->len + 2 > max) return 0;
        memcpy(out + at, v->b, v->len);
        memcpy(out + at + v->len, "\r\n", 2);
        at += v->len + 2;
    }
    for (size_t i = 0; v->type == '*' && i < v->nkid && at; i++) at = rv_emit(&v->kid[i], out, at, max);
    return at;
}

/* Every value of the tree in a flat list (for picking one). */
static size_t rv_list(rv *v, rv **all, size_t n, size_t cap) {
    if (n < cap) all[n++] = v;
    for (size_t i = 0; i < v->nkid; i++) n = rv_list(&v->kid[i], all, n, cap);
    return n;
}

static void rv_change(rv *v, uint64_t *rs, unsigned seed) {
    static const long long edge[] = {-1, 0, 1, 2, -2, 0x7fffffffffffffffll, 1 << 20, (1 << 20) + 1};
    uint32_t r = fz_rand(rs) % 8;
    if (r == 0) { /* another type, its bytes kept */
        static const char t[] = "+-:$*";
        char was = v->type;
        v->type = t[fz_rand(rs) % 5];
        if (v->type == '*' && was != '*') v->n = 0;
        if (v->type == '$' && !v->b) v->n = -1;
    } else if (r == 1 || v->type == ':' || (v->type == '$' && !v->b) || (v->type == '*' && v->n < 0)) {
        v->n = edge[fz_rand(rs) % 8]; /* an integer, a nil, a length that lies */
        if (v->type == '$' && v->n >= 0 && !v->b) v->type = ':';
        if (v->type == '*' && v->n > 0 && v->nkid == 0) v->n = 0;
    } else if (v->type == '*') { /* an element dropped, doubled or nested */
        if (r == 2 && v->nkid) rv_free(&v->kid[--v->nkid]);
        else if (v->nkid < 64) {
            rv *k = realloc(v->kid, (v->nkid + 1) * sizeof *k);
            if (!k) return;
            v->kid = k;
            rv *e = &v->kid[v->nkid++];
            memset(e, 0, sizeof *e);
            e->type = r == 3 ? '*' : '$';
            e->n = r == 3 ? 0 : -1;
        }
    } else { /* a string's bytes: an entry's structure when it is one */
        size_t cap = v->len * 2 + 256;
        uint8_t *b = realloc(v->b, cap + 1);
        if (!b) return;
        v->b = b;
        v->len = v->len >= 8 && memcmp(b, "\x89KCE", 4) == 0 ? fz_entry_mutate(b, v->len, cap, seed)
                                                             : LLVMFuzzerMutate(b, v->len, cap);
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 3;
    if (size < 2 || fz_rand(&rs) % 8 == 0) return LLVMFuzzerMutate(data, size, max);
    const uint8_t *p = data + 1;
    rv v;
    size_t out = 0;
    if (rv_parse(&p, data + size, &v, 0)) {
        rv *all[256];
        size_t n = rv_list(&v, all, 0, 256);
        rv_change(all[fz_rand(&rs) % n], &rs, seed);
        uint8_t *buf = malloc(max);
        out = buf ? rv_emit(&v, buf, 1, max) : 0;
        if (out) memcpy(data + 1, buf + 1, out - 1);
        free(buf);
    }
    rv_free(&v);
    if (fz_rand(&rs) % 4 == 0) data[0] = (uint8_t)(fz_rand(&rs) % 5); /* another command */
    return out ? out : LLVMFuzzerMutate(data, size, max);
}
