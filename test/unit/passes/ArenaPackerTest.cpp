//===- ArenaPackerTest.cpp - the memory planner's interval packer ---------===//
//
// Every packing is checked with isValidPacking (no two simultaneously live
// buffers overlap, offsets aligned) and against hand-computed sizes; a
// randomized sweep compares the arena with the live-set lower bound.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/ArenaPacker.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln;

namespace {

TEST(ArenaPacker, EmptyAndSingle) {
  PackResult empty = packArena({});
  EXPECT_EQ(empty.arenaBytes, 0u);
  EXPECT_EQ(empty.lowerBoundBytes, 0u);
  PackResult one = packArena({{100, 64, 0, 3}});
  EXPECT_EQ(one.offsets, std::vector<uint64_t>{0});
  EXPECT_EQ(one.arenaBytes, 100u);
  EXPECT_EQ(one.lowerBoundBytes, 100u);
  EXPECT_EQ(one.noReuseBytes, 100u);
}

TEST(ArenaPacker, DisjointLifetimesShareStorage) {
  // A chain: each buffer dies where the next is born... but those overlap at
  // the shared step, so only buffers two apart can share.
  std::vector<PackBuffer> chain = {{256, 64, 0, 1}, {256, 64, 1, 2}, {256, 64, 2, 3}, {256, 64, 3, 4}};
  PackResult r = packArena(chain);
  ASSERT_TRUE(isValidPacking(chain, r.offsets));
  EXPECT_EQ(r.arenaBytes, 512u);
  EXPECT_EQ(r.lowerBoundBytes, 512u);
  EXPECT_EQ(r.noReuseBytes, 1024u);
  EXPECT_EQ(r.offsets[0], r.offsets[2]);
  EXPECT_EQ(r.offsets[1], r.offsets[3]);
}

TEST(ArenaPacker, OverlappingLifetimesNeverShare) {
  std::vector<PackBuffer> all = {{10, 1, 0, 5}, {20, 1, 1, 4}, {30, 1, 2, 3}};
  PackResult r = packArena(all);
  ASSERT_TRUE(isValidPacking(all, r.offsets));
  EXPECT_EQ(r.arenaBytes, 60u);
}

TEST(ArenaPacker, AlignmentIsHonoured) {
  std::vector<PackBuffer> bufs = {{3, 1, 0, 2}, {8, 128, 0, 2}, {5, 64, 1, 1}};
  PackResult r = packArena(bufs);
  ASSERT_TRUE(isValidPacking(bufs, r.offsets));
  EXPECT_EQ(r.offsets[1] % 128, 0u);
  EXPECT_EQ(r.offsets[2] % 64, 0u);
}

TEST(ArenaPacker, BestFitReusesAHoleLeftBehind) {
  // A big buffer dies early; a smaller later one fits in its hole while a
  // long-lived buffer sits above it.
  std::vector<PackBuffer> bufs = {{1000, 1, 0, 1}, {100, 1, 0, 5}, {900, 1, 2, 3}, {50, 1, 4, 5}};
  PackResult r = packArena(bufs);
  ASSERT_TRUE(isValidPacking(bufs, r.offsets));
  EXPECT_EQ(r.arenaBytes, 1100u);
  EXPECT_EQ(r.lowerBoundBytes, 1100u);
}

TEST(ArenaPacker, ZeroSizeBuffersCostNothing) {
  std::vector<PackBuffer> bufs = {{0, 64, 0, 9}, {16, 16, 0, 9}};
  PackResult r = packArena(bufs);
  ASSERT_TRUE(isValidPacking(bufs, r.offsets));
  EXPECT_EQ(r.arenaBytes, 16u);
}

TEST(ArenaPacker, GranuleRoundsTheBounds) {
  // Three small buffers live together at 64-byte offsets cannot fit in
  // fewer than three blocks: the bound counts each rounded to the granule,
  // and so does the no-reuse total; the peak is at step 1.
  std::vector<PackBuffer> bufs = {{4, 64, 0, 1}, {40, 64, 1, 2}, {64, 64, 1, 1}};
  PackResult raw = packArena(bufs);
  EXPECT_EQ(raw.lowerBoundBytes, 108u);
  EXPECT_EQ(raw.noReuseBytes, 108u);
  PackResult r = packArena(bufs, 64);
  ASSERT_TRUE(isValidPacking(bufs, r.offsets));
  EXPECT_EQ(r.lowerBoundBytes, 192u);
  EXPECT_EQ(r.noReuseBytes, 192u);
  EXPECT_EQ(r.peakStep, 1u);
  EXPECT_LE(r.arenaBytes, r.lowerBoundBytes);
  EXPECT_EQ(r.offsets, raw.offsets);
}

TEST(ArenaPacker, Deterministic) {
  std::vector<PackBuffer> bufs = {{64, 64, 0, 2}, {64, 64, 0, 2}, {64, 64, 3, 4}};
  PackResult a = packArena(bufs), b = packArena(bufs);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.strategy, b.strategy);
}

TEST(ArenaPacker, ValidityCheckerRejectsOverlapAndMisalignment) {
  std::vector<PackBuffer> bufs = {{10, 1, 0, 1}, {10, 8, 1, 2}};
  EXPECT_FALSE(isValidPacking(bufs, {0, 8}));  // live together at step 1
  EXPECT_FALSE(isValidPacking(bufs, {0, 12})); // misaligned
  EXPECT_TRUE(isValidPacking(bufs, {0, 16}));
  EXPECT_FALSE(isValidPacking(bufs, {0})); // wrong count
}

TEST(ArenaPacker, RandomGraphsStayValidAndNearTheLowerBound) {
  // Chains with skip connections, like real networks: the arena must always
  // be valid, and on these it stays within 1.5x of the lower bound.
  std::mt19937 rng(7);
  double worst = 1.0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<PackBuffer> bufs;
    unsigned steps = 5 + rng() % 40;
    for (unsigned s = 0; s < steps; ++s) {
      uint64_t size = 64 * (1 + rng() % 64);
      unsigned last = s + 1 + (rng() % 4 == 0 ? rng() % 6 : 0);
      bufs.push_back({size, 64, s, std::min(last, steps)});
    }
    PackResult r = packArena(bufs);
    ASSERT_TRUE(isValidPacking(bufs, r.offsets)) << "trial " << trial;
    ASSERT_GE(r.arenaBytes, r.lowerBoundBytes);
    worst = std::max(worst, double(r.arenaBytes) / double(r.lowerBoundBytes));
  }
  EXPECT_LE(worst, 1.5);
}

} // namespace
