/*
 * pool.h - the thread pool behind kiln_model_set_num_threads.
 *
 * A fixed set of worker threads that run one parallel_for at a time for the
 * thread that acquired the pool. Between jobs the workers spin for a short
 * while (a model runs its parallel loops back to back, a few microseconds
 * apart) and then sleep on a condition variable, so an idle pool costs
 * nothing. Internal to the runtime; the public contract is in
 * kiln/runtime.h.
 */
#ifndef KILN_RUNTIME_POOL_H
#define KILN_RUNTIME_POOL_H

#include "kiln/runtime.h"

#include "descriptor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_pool kiln_pool_t;

/* A pool of num_threads threads counting the caller (num_threads - 1
 * workers); NULL if a thread or the memory cannot be had. */
KILN_INTERNAL kiln_pool_t *kiln_pool_create(size_t num_threads);

/* Stops and joins the workers; the pool must not be acquired. NULL is
 * ignored. */
KILN_INTERNAL void kiln_pool_destroy(kiln_pool_t *pool);

KILN_INTERNAL size_t kiln_pool_num_threads(const kiln_pool_t *pool);

/* Takes the pool for one run: 1 on success, 0 when another thread holds it
 * (that caller then runs on its own thread). Never blocks. */
KILN_INTERNAL int kiln_pool_try_acquire(kiln_pool_t *pool);
KILN_INTERNAL void kiln_pool_release(kiln_pool_t *pool);

/* kiln_parallel_t's parallel_for with ctx = the pool, for the thread that
 * acquired it: body runs over min(n, threads) contiguous ranges of [0, n),
 * the first on the calling thread; returns when all have returned. */
KILN_INTERNAL void kiln_pool_parallel_for(void *pool, kiln_parallel_body_t body, void *data, int64_t n);

/* Online cores, at least 1. */
KILN_INTERNAL size_t kiln_num_cores(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_POOL_H */
