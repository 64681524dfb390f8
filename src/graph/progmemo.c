/* SPDX-License-Identifier: Apache-2.0 */
/*
 * progmemo.c — kc_program values (kcache/program.h) and the cache handle's memo of them.
 *
 * The one idea: a program is one allocation (the struct, its arrays, its strings, its image), so
 * a copy is one build from another's fields and kc_program_free is one free.  The memo is the
 * handle's attachment (kc_cache_attached_): a bounded LRU of finished programs, each under its
 * unit key and the exact name expressions asked, in order — a warm repeat in this process is
 * answered from it without a read of the directory, and only with what was recorded under
 * exactly that key and those names (plain names are not in the unit key: [Note: recorded names]
 * in unitstore.c, so the names are compared too).
 *
 * Callers: cachecompile.c.  Must not: answer a key it did not record, hand out its own copy (each
 * caller gets its own), or grow past its bounds.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../cache/internal.h"
#include "../common/internal.h"
#include "graph_internal.h"

#define MEMO_MAX_PROGRAMS 64
#define MEMO_MAX_BYTES ((size_t)64 << 20)

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* The bytes of a program made of `p`'s fields, and whether the sum overflowed. */
static int prog_size(const kc_program_parts *p, size_t *out) {
    size_t n = align8(sizeof(kc_program)), s = 0, np = 0;
    for (size_t i = 0; i < p->n; i++) {
        np += p->nparams[i];
        s += strlen(p->names[i]) + strlen(p->lowered[i]) + 2;
    }
    if (p->n > KC_PROGRAM_NAMES_MAX || np > (size_t)KC_PROGRAM_NAMES_MAX * 4096 || p->len > SIZE_MAX / 2) return 0;
    n += align8(p->n * (3 * sizeof(char *) + sizeof(size_t))) + align8(np * sizeof(kc_param_info));
    n += s + p->len + 1 + strlen(p->target) + 1 + strlen(p->log) + 1;
    *out = n;
    return 1;
}

static char *put_str(char **at, const char *s) {
    size_t n = strlen(s) + 1;
    char *d = *at;
    memcpy(d, s, n);
    *at += n;
    return d;
}

kc_program *kc_program_make_(const kc_program_parts *p) {
    size_t total;
    if (!prog_size(p, &total)) return NULL;
    unsigned char *blk = kc_calloc(1, total);
    if (!blk) return NULL;
    kc_program *g = (kc_program *)blk;
    const char **names = (const char **)(blk + align8(sizeof *g)), **lowered = names + p->n;
    const kc_param_info **params = (const kc_param_info **)(lowered + p->n);
    size_t *nparams = (size_t *)(params + p->n);
    kc_param_info *pi = (kc_param_info *)(blk + align8(sizeof *g) +
                                          align8(p->n * (3 * sizeof(char *) + sizeof(size_t))));
    size_t np = 0;
    for (size_t i = 0; i < p->n; i++) np += p->nparams[i];
    char *at = (char *)(pi + np);
    unsigned char *img = (unsigned char *)at;
    memcpy(img, p->image, p->len);
    img[p->len] = 0, at += p->len + 1;
    for (size_t i = 0; i < p->n; i++) {
        names[i] = put_str(&at, p->names[i]), lowered[i] = put_str(&at, p->lowered[i]);
        params[i] = pi, nparams[i] = p->nparams[i];
        if (p->nparams[i]) memcpy(pi, p->params[i], p->nparams[i] * sizeof *pi);
        pi += p->nparams[i];
    }
    g->size = sizeof *g, g->image = img, g->len = p->len, g->is_ptx = p->is_ptx;
    g->target = put_str(&at, p->target), g->log = put_str(&at, p->log);
    g->nnames = p->n, g->names = names, g->lowered_names = lowered, g->params = params, g->nparams = nparams;
    snprintf(g->key, sizeof g->key, "%s", p->key);
    g->outcome = p->outcome, g->compile_seconds = p->seconds;
    return g;
}

/* A copy of `p` as a hit of it is told: outcome `o`, no log, no NVRTC time. */
static kc_program *prog_copy(const kc_program *p, int o) {
    kc_program_parts q = {p->image,  p->len,     p->is_ptx, p->target, p->nnames, p->names, p->lowered_names,
                          p->params, p->nparams, p->key,    o,         "",        0};
    return kc_program_make_(&q);
}

void kc_program_free(kc_program *p) { free(p); }

/* ---- the memo ---- */

typedef struct memo_slot {
    kc_program *p; /* NULL: free */
    size_t bytes;
    uint64_t used; /* LRU stamp */
} memo_slot;

typedef struct memo {
    kc_cache_attachment a; /* first: kc_cache_close drops it */
    pthread_mutex_t mu;
    memo_slot v[MEMO_MAX_PROGRAMS];
    size_t bytes;
    uint64_t clock;
} memo;

static void memo_drop(kc_cache_attachment *a) {
    memo *m = (memo *)a;
    for (size_t i = 0; i < MEMO_MAX_PROGRAMS; i++) free(m->v[i].p);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* The handle's memo, made on first use (NULL: out of memory); the first thread to attach one wins. */
static memo *memo_of(kc_cache *c) {
    kc_cache_attachment **slot = kc_cache_attached_(c), *had = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (had) return (memo *)had;
    memo *m = kc_calloc(1, sizeof *m);
    if (!m || pthread_mutex_init(&m->mu, NULL) != 0) return free(m), NULL;
    m->a.drop = memo_drop;
    if (__atomic_compare_exchange_n(slot, &had, &m->a, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return m;
    memo_drop(&m->a); /* another thread attached first */
    return (memo *)had;
}

/* 1 when `p` was recorded under exactly this key and these names, in this order. */
static int same(const kc_program *p, const char *key, const char *const *names, size_t n) {
    if (strcmp(p->key, key) != 0 || p->nnames != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(p->names[i], names[i]) != 0) return 0;
    return 1;
}

kc_program *kc_progmemo_get_(kc_cache *c, const char *key, const char *const *names, size_t n) {
    memo *m = memo_of(c);
    if (!m) return NULL;
    kc_program *r = NULL;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < MEMO_MAX_PROGRAMS && !r; i++)
        if (m->v[i].p && same(m->v[i].p, key, names, n)) {
            m->v[i].used = ++m->clock;
            r = prog_copy(m->v[i].p, KC_LOOKUP_MEMORY);
        }
    pthread_mutex_unlock(&m->mu);
    return r;
}

void kc_progmemo_put_(kc_cache *c, const kc_program *p) {
    memo *m = memo_of(c);
    size_t bytes = align8(sizeof *p) + p->len + 64 * p->nnames; /* about: the bound, not an account */
    if (!m || bytes > MEMO_MAX_BYTES / 4) return;
    kc_program *mine = prog_copy(p, KC_LOOKUP_MEMORY);
    if (!mine) return;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < MEMO_MAX_PROGRAMS; i++) /* one record per key and names: the latest */
        if (m->v[i].p && same(m->v[i].p, p->key, p->names, p->nnames))
            free(m->v[i].p), m->v[i].p = NULL, m->bytes -= m->v[i].bytes;
    for (;;) { /* room: a free slot, within the bytes; else the least recently used goes */
        size_t lru = MEMO_MAX_PROGRAMS, freeslot = MEMO_MAX_PROGRAMS;
        for (size_t i = 0; i < MEMO_MAX_PROGRAMS; i++) {
            if (!m->v[i].p) freeslot = freeslot < MEMO_MAX_PROGRAMS ? freeslot : i;
            else if (lru == MEMO_MAX_PROGRAMS || m->v[i].used < m->v[lru].used) lru = i;
        }
        if (freeslot < MEMO_MAX_PROGRAMS && m->bytes + bytes <= MEMO_MAX_BYTES) {
            m->v[freeslot] = (memo_slot){mine, bytes, ++m->clock};
            m->bytes += bytes;
            break;
        }
        free(m->v[lru].p), m->v[lru].p = NULL, m->bytes -= m->v[lru].bytes;
    }
    pthread_mutex_unlock(&m->mu);
}
