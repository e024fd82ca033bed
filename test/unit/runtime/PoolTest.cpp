// Tests of the runtime's thread pool (runtime/src/pool.c): every index of
// every job is run exactly once, by ranges that partition [0, n), for several
// pool sizes and job sizes; jobs back to back (workers spinning) and after an
// idle gap (workers asleep) both complete.
#include "pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

struct Coverage {
  std::vector<std::atomic<int>> hits;
  std::atomic<int> calls{0};
  std::atomic<int> bad_range{0};
  explicit Coverage(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void count(void *data, int64_t begin, int64_t end) {
  auto *c = static_cast<Coverage *>(data);
  c->calls.fetch_add(1);
  if (begin < 0 || end > static_cast<int64_t>(c->hits.size()) || begin >= end)
    c->bad_range.fetch_add(1);
  for (int64_t i = begin; i < end && i >= 0 && i < static_cast<int64_t>(c->hits.size()); ++i)
    c->hits[static_cast<size_t>(i)].fetch_add(1);
}

struct PoolDeleter {
  void operator()(kiln_pool_t *p) const { kiln_pool_destroy(p); }
};
using Pool = std::unique_ptr<kiln_pool_t, PoolDeleter>;

void expect_each_once(kiln_pool_t *pool, int64_t n) {
  Coverage c(n);
  kiln_pool_parallel_for(pool, count, &c, n);
  EXPECT_EQ(c.bad_range.load(), 0) << "n " << n;
  size_t threads = kiln_pool_num_threads(pool);
  int64_t parts = n < static_cast<int64_t>(threads) ? n : static_cast<int64_t>(threads);
  EXPECT_EQ(c.calls.load(), parts) << "n " << n;
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(c.hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n;
}

TEST(PoolTest, EveryIndexOnce) {
  for (size_t threads : {2u, 3u, 4u, 7u}) {
    Pool pool(kiln_pool_create(threads));
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(kiln_pool_num_threads(pool.get()), threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 64, 1000, 4099})
      expect_each_once(pool.get(), n);
  }
}

// Many short jobs in a row, as a model's loops come: no job is lost or run
// twice while the workers spin between them.
TEST(PoolTest, BackToBack) {
  Pool pool(kiln_pool_create(3));
  ASSERT_NE(pool, nullptr);
  for (int job = 0; job < 20000; ++job) {
    Coverage c(5);
    kiln_pool_parallel_for(pool.get(), count, &c, 5);
    for (int i = 0; i < 5; ++i)
      ASSERT_EQ(c.hits[i].load(), 1) << "job " << job;
  }
}

// After an idle gap the workers sleep; the next job wakes them.
TEST(PoolTest, AfterSleep) {
  Pool pool(kiln_pool_create(4));
  ASSERT_NE(pool, nullptr);
  for (int round = 0; round < 5; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    expect_each_once(pool.get(), 100);
  }
}

// One holder at a time; the others are told so and never block.
TEST(PoolTest, AcquireIsExclusive) {
  Pool pool(kiln_pool_create(2));
  ASSERT_NE(pool, nullptr);
  ASSERT_TRUE(kiln_pool_try_acquire(pool.get()));
  EXPECT_FALSE(kiln_pool_try_acquire(pool.get()));
  kiln_pool_release(pool.get());
  EXPECT_TRUE(kiln_pool_try_acquire(pool.get()));
  kiln_pool_release(pool.get());
}

TEST(PoolTest, NeedsTwoThreads) {
  EXPECT_EQ(kiln_pool_create(0), nullptr);
  EXPECT_EQ(kiln_pool_create(1), nullptr);
  EXPECT_GE(kiln_num_cores(), 1u);
}

} // namespace
