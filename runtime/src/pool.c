/*
 * pool.c - the runtime's thread pool (pool.h).
 *
 * One job at a time. The caller writes the job (body, data, n), then
 * publishes it in `state`, one 64-bit word: the generation (high 32 bits),
 * the number of ranges (16 bits) and the next unclaimed range (low 16
 * bits). Workers and the caller claim ranges with a compare-and-swap that
 * also checks the generation, run them and count them in `done`; the
 * caller returns when all ranges are done. Which thread runs a range does
 * not matter (range i of p is always the same part of [0, n)), so when a
 * worker does not get a core (more threads than free cores) the caller
 * simply runs its ranges too instead of waiting for it. A worker of an
 * older generation can never claim, so the caller may rewrite the job as
 * soon as all ranges are done. Workers wait for the next generation
 * spinning for KILN_POOL_SPIN_NS, then sleep on `wake`; the caller signals
 * only when one sleeps (`sleeping`, checked after the publish: with
 * sequentially consistent accesses on both sides, either the caller sees
 * the sleeper or the sleeper sees the new generation). No OpenMP and no
 * environment variable: the thread count is the API's.
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

/* Ranges per job are at most this (the 16 bits of `state`). */
#define KILN_POOL_MAX_PARTS 0xFFFFu

struct kiln_pool {
  size_t num_threads; /* workers + the caller */
  pthread_t *threads; /* num_threads - 1 workers */
  size_t started;
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  _Atomic uint64_t state; /* generation << 32 | parts << 16 | next */
  atomic_uint sleeping;
  atomic_int stop;
  atomic_flag busy;
  atomic_size_t done; /* ranges of the current job finished */
  /* The job: written by the caller before it is published. */
  kiln_parallel_body_t body;
  void *data;
  int64_t n;
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

static uint32_t generation_of(uint64_t state) { return (uint32_t)(state >> 32); }

/* Claims the next range of generation `gen`: its index, and the number of
 * ranges in *parts; -1 when none is left or the generation moved on. */
static int64_t claim(kiln_pool_t *pool, uint32_t gen, int64_t *parts) {
  uint64_t s = atomic_load_explicit(&pool->state, memory_order_acquire);
  for (;;) {
    uint64_t next = s & 0xFFFFu, total = (s >> 16) & 0xFFFFu;
    if (generation_of(s) != gen || next >= total)
      return -1;
    if (atomic_compare_exchange_weak_explicit(&pool->state, &s, s + 1, memory_order_acq_rel, memory_order_acquire)) {
      *parts = (int64_t)total;
      return (int64_t)next;
    }
  }
}

/* Range `part` of `parts` over [0, n): contiguous, in order, sizes differ by
 * at most one. */
static void run_part(kiln_pool_t *pool, int64_t part, int64_t parts) {
  int64_t q = pool->n / parts, r = pool->n % parts;
  int64_t begin = part * q + (part < r ? part : r);
  int64_t end = begin + q + (part < r ? 1 : 0);
  pool->body(pool->data, begin, end);
}

/* Claims and runs ranges of generation `gen` until none is left. */
static void run_parts(kiln_pool_t *pool, uint32_t gen) {
  int64_t part, parts;
  while ((part = claim(pool, gen, &parts)) >= 0) {
    run_part(pool, part, parts);
    atomic_fetch_add_explicit(&pool->done, 1, memory_order_release);
  }
}

/* Waits until the generation differs from `seen`; returns the new one. */
static uint32_t wait_for_job(kiln_pool_t *pool, uint32_t seen) {
  uint32_t g;
  int64_t deadline = 0;
  for (unsigned spins = 0;; ++spins) {
    g = generation_of(atomic_load_explicit(&pool->state, memory_order_acquire));
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
  while ((g = generation_of(atomic_load(&pool->state))) == seen)
    pthread_cond_wait(&pool->wake, &pool->mutex);
  atomic_fetch_sub(&pool->sleeping, 1);
  pthread_mutex_unlock(&pool->mutex);
  return g;
}

static void *worker_main(void *arg) {
  kiln_pool_t *pool = arg;
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_job(pool, seen);
    if (atomic_load(&pool->stop))
      return NULL;
    run_parts(pool, seen);
  }
}

/* Publishes a job of `parts` ranges (0 for the stop) as the next generation
 * and wakes sleeping workers; returns the generation. */
static uint32_t publish(kiln_pool_t *pool, uint64_t parts) {
  atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
  uint32_t gen = generation_of(atomic_load_explicit(&pool->state, memory_order_relaxed)) + 1;
  atomic_store(&pool->state, (uint64_t)gen << 32 | parts << 16);
  if (atomic_load(&pool->sleeping) > 0) {
    pthread_mutex_lock(&pool->mutex);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
  }
  return gen;
}

kiln_pool_t *kiln_pool_create(size_t num_threads) {
  if (num_threads < 2)
    return NULL;
  kiln_pool_t *pool = calloc(1, sizeof *pool);
  if (pool == NULL)
    return NULL;
  pool->num_threads = num_threads;
  pool->threads = calloc(num_threads - 1, sizeof *pool->threads);
  atomic_init(&pool->state, 0);
  atomic_init(&pool->sleeping, 0);
  atomic_init(&pool->stop, 0);
  atomic_init(&pool->done, 0);
  atomic_flag_clear(&pool->busy);
  if (pool->threads == NULL || pthread_mutex_init(&pool->mutex, NULL) != 0) {
    free(pool->threads);
    free(pool);
    return NULL;
  }
  if (pthread_cond_init(&pool->wake, NULL) != 0) {
    pthread_mutex_destroy(&pool->mutex);
    free(pool->threads);
    free(pool);
    return NULL;
  }
  for (size_t i = 0; i + 1 < num_threads; ++i) {
    if (pthread_create(&pool->threads[i], NULL, worker_main, pool) != 0) {
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
  publish(pool, 0);
  for (size_t i = 0; i < pool->started; ++i)
    pthread_join(pool->threads[i], NULL);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->mutex);
  free(pool->threads);
  free(pool);
}

size_t kiln_pool_num_threads(const kiln_pool_t *pool) { return pool ? pool->num_threads : 1; }

int kiln_pool_try_acquire(kiln_pool_t *pool) { return !atomic_flag_test_and_set(&pool->busy); }

void kiln_pool_release(kiln_pool_t *pool) { atomic_flag_clear(&pool->busy); }

void kiln_pool_parallel_for(void *ctx, kiln_parallel_body_t body, void *data, int64_t n) {
  kiln_pool_t *pool = ctx;
  if (n <= 0)
    return;
  uint64_t parts = pool->num_threads < KILN_POOL_MAX_PARTS ? pool->num_threads : KILN_POOL_MAX_PARTS;
  if ((uint64_t)n < parts)
    parts = (uint64_t)n;
  if (parts < 2) {
    body(data, 0, n);
    return;
  }
  pool->body = body;
  pool->data = data;
  pool->n = n;
  uint32_t gen = publish(pool, parts);
  run_parts(pool, gen);
  /* Ranges claimed by workers may still run. */
  for (unsigned spins = 1; atomic_load_explicit(&pool->done, memory_order_acquire) != parts; ++spins) {
    cpu_relax();
    if ((spins & 1023) == 0)
      sched_yield();
  }
}
