/*
 * pool.c - the runtime's thread pool (pool.h).
 *
 * One job at a time: the caller writes the job, sets `pending` to the number
 * of workers and bumps `generation`; each worker runs its range, if any, and
 * decrements `pending`; the caller runs range 0 and spins until `pending` is
 * 0. Every worker thus sees every generation, and the caller never reuses
 * the job fields while a worker may read them. Workers wait for the next
 * generation spinning for KILN_POOL_SPIN_NS, then sleep on `wake`; the
 * caller signals only when one sleeps (`sleeping`, checked after the bump:
 * with sequentially consistent accesses on both sides, either the caller
 * sees the sleeper or the sleeper sees the new generation). No OpenMP and
 * no environment variable: the thread count is the API's.
 */
#define _POSIX_C_SOURCE 200809L

#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* How long an idle worker spins before it sleeps: longer than most gaps
 * between two parallel loops of one run (waking a sleeping thread took
 * about 110 us on this project's 2-vCPU VM, spinning threads start in under
 * a microsecond), far shorter than a human notices. */
#define KILN_POOL_SPIN_NS 1000000

struct kiln_pool {
  size_t num_threads; /* workers + the caller */
  pthread_t *threads; /* num_threads - 1 workers */
  size_t started;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  atomic_uint generation;
  atomic_uint sleeping;
  atomic_int stop;
  atomic_flag busy;
  atomic_size_t pending;
  /* The job: written by the caller before `generation` is bumped. */
  kiln_parallel_body_t body;
  void *data;
  int64_t n;
  size_t parts;
  struct kiln_pool_worker {
    struct kiln_pool *pool;
    size_t index; /* 1.. num_threads - 1; the caller is 0 */
  } *workers;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

size_t kiln_num_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (size_t)n : 1;
}

/* Range `part` of `parts` over [0, n): contiguous, in order, sizes differ by
 * at most one. */
static void run_part(kiln_pool_t *pool, size_t part) {
  int64_t parts = (int64_t)pool->parts, p = (int64_t)part;
  int64_t q = pool->n / parts, r = pool->n % parts;
  int64_t begin = p * q + (p < r ? p : r);
  int64_t end = begin + q + (p < r ? 1 : 0);
  pool->body(pool->data, begin, end);
}

/* Waits until generation differs from `seen`; returns the new one. */
static unsigned wait_for_job(kiln_pool_t *pool, unsigned seen) {
  unsigned g;
  int64_t deadline = 0;
  for (unsigned spins = 0;; ++spins) {
    g = atomic_load_explicit(&pool->generation, memory_order_acquire);
    if (g != seen)
      return g;
    cpu_relax();
    if ((spins & 255) != 255)
      continue;
    int64_t t = now_ns();
    if (deadline == 0)
      deadline = t + KILN_POOL_SPIN_NS;
    else if (t > deadline)
      break;
  }
  pthread_mutex_lock(&pool->mutex);
  atomic_fetch_add(&pool->sleeping, 1);
  while ((g = atomic_load(&pool->generation)) == seen)
    pthread_cond_wait(&pool->wake, &pool->mutex);
  atomic_fetch_sub(&pool->sleeping, 1);
  pthread_mutex_unlock(&pool->mutex);
  return g;
}

static void *worker_main(void *arg) {
  struct kiln_pool_worker *self = arg;
  kiln_pool_t *pool = self->pool;
  unsigned seen = 0;
  for (;;) {
    seen = wait_for_job(pool, seen);
    if (atomic_load(&pool->stop))
      return NULL;
    if (self->index < pool->parts)
      run_part(pool, self->index);
    atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
  }
}

/* Publishes the job (or the stop) in the fields and wakes the workers. */
static void start_generation(kiln_pool_t *pool) {
  atomic_store_explicit(&pool->pending, pool->started, memory_order_relaxed);
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleeping) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
}

static void wait_for_workers(kiln_pool_t *pool) {
  for (unsigned spins = 1; atomic_load_explicit(&pool->pending, memory_order_acquire) != 0; ++spins) {
    cpu_relax();
    /* A worker that had gone to sleep needs a core to wake up on. */
    if ((spins & 4095) == 0)
      sched_yield();
  }
}

kiln_pool_t *kiln_pool_create(size_t num_threads) {
  if (num_threads < 2)
    return NULL;
  kiln_pool_t *pool = calloc(1, sizeof *pool);
  if (pool == NULL)
    return NULL;
  pool->num_threads = num_threads;
  pool->threads = calloc(num_threads - 1, sizeof *pool->threads);
  pool->workers = calloc(num_threads - 1, sizeof *pool->workers);
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->sleeping, 0);
  atomic_init(&pool->stop, 0);
  atomic_init(&pool->pending, 0);
  atomic_flag_clear(&pool->busy);
  if (pool->threads == NULL || pool->workers == NULL || pthread_mutex_init(&pool->mutex, NULL) != 0) {
    free(pool->threads);
    free(pool->workers);
    free(pool);
    return NULL;
  }
  if (pthread_cond_init(&pool->wake, NULL) != 0) {
    pthread_mutex_destroy(&pool->mutex);
    free(pool->threads);
    free(pool->workers);
    free(pool);
    return NULL;
  }
  for (size_t i = 0; i + 1 < num_threads; ++i) {
    pool->workers[i].pool = pool;
    pool->workers[i].index = i + 1;
    if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->workers[i]) != 0) {
      kiln_pool_destroy(pool);
      return NULL;
    }
    pool->started = i + 1;
  }
  return pool;
}

void kiln_pool_destroy(kiln_pool_t *pool) {
  if (pool == NULL)
    return;
  atomic_store(&pool->stop, 1);
  start_generation(pool);
  for (size_t i = 0; i < pool->started; ++i)
    pthread_join(pool->threads[i], NULL);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->mutex);
  free(pool->threads);
  free(pool->workers);
  free(pool);
}

size_t kiln_pool_num_threads(const kiln_pool_t *pool) { return pool ? pool->num_threads : 1; }

int kiln_pool_try_acquire(kiln_pool_t *pool) { return !atomic_flag_test_and_set(&pool->busy); }

void kiln_pool_release(kiln_pool_t *pool) { atomic_flag_clear(&pool->busy); }

void kiln_pool_parallel_for(void *ctx, kiln_parallel_body_t body, void *data, int64_t n) {
  kiln_pool_t *pool = ctx;
  if (n <= 0)
    return;
  size_t parts = pool->num_threads < (uint64_t)n ? pool->num_threads : (size_t)n;
  if (parts < 2) {
    body(data, 0, n);
    return;
  }
  pool->body = body;
  pool->data = data;
  pool->n = n;
  pool->parts = parts;
  start_generation(pool);
  run_part(pool, 0);
  wait_for_workers(pool);
}
