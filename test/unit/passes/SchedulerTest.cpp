//===- SchedulerTest.cpp - the memory-aware list scheduler ----------------===//
//
// Every order is checked with isTopologicalOrder and its peak against a hand
// count; a randomized sweep checks that the schedule is a valid order, never
// worse than the original and deterministic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Scheduler.h"

#include <gtest/gtest.h>

#include <random>

using namespace kiln;

namespace {

TEST(Scheduler, EmptyGraph) {
  ScheduleResult r = scheduleForMemory({});
  EXPECT_TRUE(r.order.empty());
  EXPECT_EQ(r.peakBytes, 0u);
}

TEST(Scheduler, ChainIsLeftAlone) {
  // v0 (input) -> n0 -> v1 -> n1 -> v2 -> n2 -> v3
  ScheduleGraph g;
  g.valueBytes = {100, 100, 100, 100};
  g.nodes = {{{0}, {1}, {}}, {{1}, {2}, {}}, {{2}, {3}, {}}};
  ScheduleResult r = scheduleForMemory(g);
  EXPECT_EQ(r.order, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(r.strategy, "original");
  EXPECT_EQ(r.peakBytes, 200u);
}

TEST(Scheduler, FinishesOneBranchBeforeTheNext) {
  // Two big temporaries (v2, v3) each reduced to a small value (v4, v5):
  // interleaved they are live together.
  ScheduleGraph g;
  g.valueBytes = {0, 0, 1000, 1000, 4, 4, 4};
  g.nodes = {{{0}, {2}, {}},     // n0: big a
             {{1}, {3}, {}},     // n1: big b
             {{2}, {4}, {}},     // n2: reduce a
             {{3}, {5}, {}},     // n3: reduce b
             {{4, 5}, {6}, {}}}; // n4: combine
  EXPECT_EQ(peakLiveBytes(g, {0, 1, 2, 3, 4}), 2004u);
  ScheduleResult r = scheduleForMemory(g);
  ASSERT_TRUE(isTopologicalOrder(g, r.order));
  EXPECT_EQ(r.originalPeakBytes, 2004u);
  EXPECT_EQ(r.peakBytes, 1008u);
  EXPECT_EQ(r.order, (std::vector<unsigned>{0, 2, 1, 3, 4}));
}

TEST(Scheduler, ExplicitOrderingEdgesAreKept) {
  // The same graph, but n1 must run before n2 (a side effect): the branch
  // of n1 now goes first, so each big value still dies before the next.
  ScheduleGraph g;
  g.valueBytes = {0, 0, 1000, 1000, 4, 4, 4};
  g.nodes = {{{0}, {2}, {}}, {{1}, {3}, {}}, {{2}, {4}, {1}}, {{3}, {5}, {}}, {{4, 5}, {6}, {}}};
  ScheduleResult r = scheduleForMemory(g);
  ASSERT_TRUE(isTopologicalOrder(g, r.order));
  EXPECT_EQ(r.order, (std::vector<unsigned>{1, 3, 0, 2, 4}));
  EXPECT_EQ(r.peakBytes, 1008u);
}

TEST(Scheduler, UnreadResultsDieAtTheirProducer) {
  ScheduleGraph g;
  g.valueBytes = {0, 500, 10};
  g.nodes = {{{0}, {1}, {}}, {{0}, {2}, {}}};
  EXPECT_EQ(peakLiveBytes(g, {0, 1}), 500u);
}

TEST(Scheduler, ViewsKeepTheirSourceLive) {
  // n0 makes v1 (1000 bytes), n1 views it as v2, n2 makes v3 (10 bytes),
  // n3 reads v2: v1 is live through n3 although no node reads v1 after n1,
  // and the view itself takes nothing.
  ScheduleGraph g;
  g.valueBytes = {0, 1000, 1000, 10, 10};
  g.viewOf = {-1, -1, 1};
  g.nodes = {{{0}, {1}, {}}, {{1}, {2}, {}}, {{0}, {3}, {}}, {{2, 3}, {4}, {}}};
  EXPECT_EQ(peakLiveBytes(g, {0, 1, 2, 3}), 1020u);
  // Without the view relation v1 would die at n1 and v2 count 1000 again.
  ScheduleGraph plain = g;
  plain.viewOf.clear();
  EXPECT_EQ(peakLiveBytes(plain, {0, 1, 2, 3}), 2000u);
}

TEST(Scheduler, IsTopologicalOrderRejectsBadOrders) {
  ScheduleGraph g;
  g.valueBytes = {0, 1, 1};
  g.nodes = {{{0}, {1}, {}}, {{1}, {2}, {}}};
  EXPECT_TRUE(isTopologicalOrder(g, {0, 1}));
  EXPECT_FALSE(isTopologicalOrder(g, {1, 0}));
  EXPECT_FALSE(isTopologicalOrder(g, {0}));
  EXPECT_FALSE(isTopologicalOrder(g, {0, 0}));
}

TEST(Scheduler, RandomGraphsNeverGetWorse) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    ScheduleGraph g;
    unsigned numInputs = 1 + rng() % 3, numNodes = 2 + rng() % 30;
    for (unsigned i = 0; i < numInputs; ++i)
      g.valueBytes.push_back(0);
    for (unsigned n = 0; n < numNodes; ++n) {
      ScheduleNode node;
      unsigned numOperands = 1 + rng() % 3;
      for (unsigned k = 0; k < numOperands; ++k)
        node.operands.push_back(rng() % g.valueBytes.size());
      node.results.push_back(g.valueBytes.size());
      g.valueBytes.push_back(1 + rng() % 1000);
      g.nodes.push_back(node);
    }
    ScheduleResult r = scheduleForMemory(g);
    ASSERT_TRUE(isTopologicalOrder(g, r.order));
    EXPECT_LE(r.peakBytes, r.originalPeakBytes);
    EXPECT_EQ(r.peakBytes, peakLiveBytes(g, r.order));
    EXPECT_EQ(scheduleForMemory(g).order, r.order);
  }
}

} // namespace
