/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.h — a small fixed thread pool with a parallel-for, for compiling the kernels of a
 * graph (and the graphs of a manifest) at once.
 *
 * The one idea: callers submit a batch of N independent tasks and wait for that batch;
 * batches from many threads may interleave.  A pool of 0 threads runs tasks inline.
 */
#ifndef KC_POOL_H
#define KC_POOL_H

#include <stddef.h>

typedef struct kc_pool kc_pool;

/** A pool of `threads` workers (0: the number of online CPUs). */
int kc_pool_new(kc_pool **out, int threads);
/** Wait for queued work, stop and free; accepts NULL. */
void kc_pool_free(kc_pool *p);
/** Run fn(ctx, i) for i in [0, n) on the pool and wait for all of them. */
int kc_pool_for(kc_pool *p, size_t n, void (*fn)(void *ctx, size_t i), void *ctx);
/** The number of workers. */
int kc_pool_size(const kc_pool *p);

#endif
