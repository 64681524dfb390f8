/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c — fixed worker threads, a FIFO of batch items, one condition per batch.
 *
 * Must not: run a task on a thread that holds the queue lock; lose a wake-up.
 *
 * Callers: compile/units.c (parallel compiles); the prewarm part runs its own workers.
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

typedef struct batch {
    void (*fn)(void *ctx, size_t i);
    void *ctx;
    size_t n, next, done;
    pthread_cond_t finished;
    struct batch *link; /* queue of batches with items left */
} batch;

struct kc_pool {
    pthread_mutex_t mu;
    pthread_cond_t work;
    batch *head, *tail;
    int stop, nthreads;
    pthread_t *threads;
};

static void *worker(void *arg) {
    kc_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stop) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break;
        batch *b = p->head;
        size_t i = b->next++;
        if (b->next == b->n) { /* last item handed out: unlink */
            p->head = b->link;
            if (!p->head) p->tail = NULL;
        }
        pthread_mutex_unlock(&p->mu);
        b->fn(b->ctx, i);
        pthread_mutex_lock(&p->mu);
        if (++b->done == b->n) pthread_cond_broadcast(&b->finished);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int kc_pool_new(kc_pool **out, int threads) {
    *out = NULL;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    kc_pool *p = kc_calloc(1, sizeof *p);
    if (!p) return kc_err(KC_ENOMEM, "thread pool: out of memory");
    p->threads = kc_calloc((size_t)threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return kc_err(KC_ENOMEM, "thread pool: out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        kc_pool_free(p);
        return kc_err(KC_ERROR, "thread pool: cannot start threads");
    }
    *out = p;
    return KC_OK;
}

void kc_pool_free(kc_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

int kc_pool_size(const kc_pool *p) { return p ? p->nthreads : 0; }

static void unlink_batch(kc_pool *p, batch *b) {
    batch **pp = &p->head, *prev = NULL;
    while (*pp && *pp != b) prev = *pp, pp = &(*pp)->link;
    if (!*pp) return;
    *pp = b->link;
    if (p->tail == b) p->tail = prev;
}

/*
 * The caller works on its own batch too, so a task that itself calls kc_pool_for (a
 * manifest's graphs, each compiling its kernels) always makes progress, even when every
 * worker is waiting inside such a call.
 */
int kc_pool_for(kc_pool *p, size_t n, void (*fn)(void *ctx, size_t i), void *ctx) {
    if (n == 0) return KC_OK;
    if (!p || n == 1) {
        for (size_t i = 0; i < n; i++) fn(ctx, i);
        return KC_OK;
    }
    batch b = {fn, ctx, n, 0, 0, PTHREAD_COND_INITIALIZER, NULL};
    pthread_mutex_lock(&p->mu);
    if (p->tail) p->tail->link = &b;
    else p->head = &b;
    p->tail = &b;
    pthread_cond_broadcast(&p->work);
    while (b.next < b.n) {
        size_t i = b.next++;
        if (b.next == b.n) unlink_batch(p, &b);
        pthread_mutex_unlock(&p->mu);
        fn(ctx, i);
        pthread_mutex_lock(&p->mu);
        b.done++;
    }
    while (b.done < b.n) pthread_cond_wait(&b.finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&b.finished);
    return KC_OK;
}
