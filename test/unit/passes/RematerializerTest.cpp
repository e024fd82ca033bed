//===- RematerializerTest.cpp - recomputing values to lower the peak ------===//
//
// Hand-counted peaks for the basic decisions (recompute, refuse an expensive
// producer, leave a met budget alone, recompute a chain, follow a view), and
// a randomized sweep over DAGs checking what must always hold: a
// topological order, a peak that never rises and matches the simulation,
// only recomputable nodes copied, every original node still computing the
// same value (checked by evaluating both graphs symbolically), and
// determinism.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Rematerializer.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

using namespace kiln;

namespace {

/// The value of every value id when each node computes a hash of its
/// origin and its operands' values and inputs are their own ids.
std::vector<uint64_t> evaluate(const ScheduleGraph &g, const std::vector<unsigned> &origin,
                               const std::vector<unsigned> &order) {
  std::vector<uint64_t> value(g.valueBytes.size());
  for (unsigned v = 0; v < value.size(); ++v)
    value[v] = v;
  for (unsigned n : order) {
    uint64_t h = 1469598103934665603ull ^ origin[n];
    for (unsigned o : g.nodes[n].operands)
      h = (h ^ value[o]) * 1099511628211ull;
    for (unsigned i = 0; i < g.nodes[n].results.size(); ++i)
      value[g.nodes[n].results[i]] = h + i;
  }
  return value;
}

std::vector<unsigned> identity(size_t n) {
  std::vector<unsigned> order(n);
  for (unsigned i = 0; i < n; ++i)
    order[i] = i;
  return order;
}

/// The example of the pass description: e = exp(x) is read right away and
/// again at the end; three 512-byte values are live at the tanh.
ScheduleGraph exampleGraph() {
  ScheduleGraph g;
  // v0 x (input), v1 e, v2 r, v3 a, v4 b, v5 c (returned: 0 bytes)
  g.valueBytes = {0, 512, 4, 512, 512, 0};
  g.nodes = {{{0}, {1}, {}},     // n0 e = exp x
             {{1}, {2}, {}},     // n1 r = reduce_sum e
             {{0, 2}, {3}, {}},  // n2 a = mul x, r
             {{3}, {4}, {}},     // n3 b = tanh a
             {{4, 1}, {5}, {}}}; // n4 c = mul b, e
  return g;
}

TEST(Rematerializer, RecomputesAValueLiveAcrossThePeak) {
  ScheduleGraph g = exampleGraph();
  RematOptions options;
  options.budget = 1024;
  RematResult r = rematerialize(g, {512, kNotRecomputable, 128, 512, 128}, options);
  EXPECT_EQ(r.peakBefore, 1536u);
  EXPECT_EQ(r.peakAfter, 1024u);
  EXPECT_TRUE(r.fits);
  ASSERT_EQ(r.recomputed, (std::vector<unsigned>{1}));
  ASSERT_EQ(r.graph.nodes.size(), 6u);
  EXPECT_EQ(r.origin[5], 0u); // a copy of the exp
  EXPECT_EQ(r.order, (std::vector<unsigned>{0, 1, 2, 3, 5, 4}));
  EXPECT_EQ(r.graph.nodes[5].operands, (std::vector<unsigned>{0}));
  EXPECT_EQ(r.graph.nodes[4].operands, (std::vector<unsigned>{4, 6}));
  EXPECT_EQ(r.recomputeCost, 512u);
  EXPECT_EQ(peakLiveBytes(r.graph, r.order), 1024u);
}

TEST(Rematerializer, NeverCopiesAnExpensiveProducer) {
  ScheduleGraph g = exampleGraph();
  RematOptions options;
  options.budget = 1024;
  RematResult r = rematerialize(g, std::vector<uint64_t>(5, kNotRecomputable), options);
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.peakAfter, 1536u);
  EXPECT_EQ(r.order, identity(5));
}

TEST(Rematerializer, AMetBudgetChangesNothing) {
  ScheduleGraph g = exampleGraph();
  RematOptions options;
  options.budget = 1536;
  RematResult r = rematerialize(g, std::vector<uint64_t>(5, 1), options);
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.graph.nodes.size(), 5u);
  EXPECT_EQ(r.order, identity(5));
}

TEST(Rematerializer, BudgetZeroLowersThePeakAsFarAsItCan) {
  ScheduleGraph g = exampleGraph();
  RematOptions options; // budget 0
  RematResult r = rematerialize(g, std::vector<uint64_t>(5, 1), options);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.peakAfter, 1024u); // a and b are live together at the tanh
}

/// u = f(x) dies early; v = g(u) is read early and late, across a big
/// temporary that is reduced before the late reader. Recomputing v late
/// needs u, which is dead by then: the chain u, v is copied.
ScheduleGraph chainGraph() {
  ScheduleGraph g;
  // v0 x, v1 u, v2 v, v3 w, v4 big, v5 s, v6 y (returned)
  g.valueBytes = {0, 400, 400, 400, 1000, 4, 0};
  g.nodes = {{{0}, {1}, {}},     // n0 u = f(x)
             {{1}, {2}, {}},     // n1 v = g(u)
             {{2}, {3}, {}},     // n2 w = h(v)
             {{3}, {4}, {}},     // n3 big = m(w)
             {{4}, {5}, {}},     // n4 s = reduce(big)
             {{5, 2}, {6}, {}}}; // n5 y = k(s, v)
  return g;
}

const std::vector<uint64_t> kChainCost = {1, 1, kNotRecomputable, kNotRecomputable, kNotRecomputable, kNotRecomputable};

TEST(Rematerializer, RecomputesADeadOperandToo) {
  ScheduleGraph g = chainGraph();
  RematOptions options;
  options.budget = 1400;
  RematResult r = rematerialize(g, kChainCost, options);
  // Before, at n3: v + w + big = 1800. After, v dies at n2 and comes back
  // from x after the reduction: the peak is w + big = 1400 at n3.
  EXPECT_EQ(r.peakBefore, 1800u);
  EXPECT_EQ(r.peakAfter, 1400u);
  EXPECT_TRUE(r.fits);
  ASSERT_EQ(r.graph.nodes.size(), 8u);
  EXPECT_EQ(r.origin[6], 0u); // u again
  EXPECT_EQ(r.origin[7], 1u); // then v from it
  EXPECT_EQ(r.order, (std::vector<unsigned>{0, 1, 2, 3, 4, 6, 7, 5}));
  EXPECT_EQ(r.recomputeCost, 2u);
}

TEST(Rematerializer, MaxDepthKeepsADeadOperandLiveInstead) {
  ScheduleGraph g = chainGraph();
  RematOptions options;
  options.budget = 1400;
  options.maxDepth = 1; // only v itself may be copied
  RematResult r = rematerialize(g, kChainCost, options);
  // Copying v alone would keep u live across the peak: no gain, no change.
  EXPECT_TRUE(r.recomputed.empty());
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(r.peakAfter, 1800u);
}

TEST(Rematerializer, ValuesFromOneKeptInputAreRecomputedTogether) {
  // a = f(m) and b = g(m) of a matmul result m are read only at the end,
  // across a big temporary. Recomputing a alone keeps m live instead of a:
  // no gain. Recomputing a and b together from m pays.
  ScheduleGraph g;
  // v0 x, v1 m, v2 a, v3 b, v4 big, v5 s, v6 y (returned)
  g.valueBytes = {0, 400, 400, 400, 1000, 4, 0};
  g.nodes = {{{0}, {1}, {}},        // n0 m = matmul(x)
             {{1}, {2}, {}},        // n1 a = f(m)
             {{1}, {3}, {}},        // n2 b = g(m)
             {{0}, {4}, {}},        // n3 big = h(x)
             {{4}, {5}, {}},        // n4 s = reduce(big)
             {{5, 2, 3}, {6}, {}}}; // n5 y = k(s, a, b)
  RematOptions options;
  options.budget = 1404;
  RematResult r =
      rematerialize(g, {kNotRecomputable, 1, 1, kNotRecomputable, kNotRecomputable, kNotRecomputable}, options);
  EXPECT_EQ(r.peakBefore, 1804u);
  EXPECT_EQ(r.peakAfter, 1404u); // m + big + s
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.recomputed, (std::vector<unsigned>{2, 3}));
  ASSERT_EQ(r.graph.nodes.size(), 8u);
  EXPECT_EQ(r.origin[6], 1u);
  EXPECT_EQ(r.origin[7], 2u);
  EXPECT_EQ(r.order, (std::vector<unsigned>{0, 1, 2, 3, 4, 6, 7, 5}));
}

TEST(Rematerializer, ReadersOfAViewReadACopiedView) {
  // e = f(x) is viewed by a reshape at once; the last node reads the view,
  // after a big temporary reduced to s.
  ScheduleGraph g;
  // v0 x, v1 e, v2 view of e, v3 big, v4 s, v5 out (returned)
  g.valueBytes = {0, 800, 0, 1000, 4, 0};
  g.viewOf = {-1, -1, 1, -1, -1, -1};
  g.nodes = {{{0}, {1}, {}},     // n0 e
             {{1}, {2}, {}},     // n1 reshape
             {{0}, {3}, {}},     // n2 big = m(x)
             {{3}, {4}, {}},     // n3 s = reduce(big)
             {{4, 2}, {5}, {}}}; // n4 out = k(s, view)
  RematOptions options;
  options.budget = 1004;
  RematResult r = rematerialize(g, {1, 0, kNotRecomputable, kNotRecomputable, kNotRecomputable}, options);
  EXPECT_EQ(r.peakBefore, 1804u);
  EXPECT_EQ(r.peakAfter, 1004u);
  ASSERT_EQ(r.graph.nodes.size(), 7u);
  EXPECT_EQ(r.origin[5], 0u);
  EXPECT_EQ(r.origin[6], 1u);
  // The copied reshape views the copied e, and the reader reads it.
  unsigned copiedView = r.graph.nodes[6].results.front();
  EXPECT_EQ(r.graph.viewOf[copiedView], static_cast<int>(r.graph.nodes[5].results.front()));
  EXPECT_EQ(r.graph.nodes[4].operands[1], copiedView);
  EXPECT_EQ(r.recomputeCost, 1u);
}

TEST(Rematerializer, RandomGraphsStayCorrect) {
  std::mt19937 rng(7);
  unsigned changed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    ScheduleGraph g;
    unsigned numInputs = 1 + rng() % 3;
    unsigned numNodes = 2 + rng() % 25;
    for (unsigned i = 0; i < numInputs; ++i)
      g.valueBytes.push_back(0);
    std::vector<uint64_t> cost;
    for (unsigned n = 0; n < numNodes; ++n) {
      ScheduleNode node;
      unsigned numOperands = 1 + rng() % 3;
      for (unsigned k = 0; k < numOperands; ++k)
        node.operands.push_back(rng() % g.valueBytes.size());
      node.results.push_back(g.valueBytes.size());
      g.valueBytes.push_back(rng() % 4 == 0 ? 0 : 64 * (1 + rng() % 16));
      cost.push_back(rng() % 3 == 0 ? kNotRecomputable : rng() % 100);
      g.nodes.push_back(std::move(node));
    }
    // A few views of single-operand nodes' operands.
    g.viewOf.assign(g.valueBytes.size(), -1);
    for (unsigned n = 0; n < numNodes; ++n)
      if (g.nodes[n].operands.size() == 1 && rng() % 6 == 0 && g.nodes[n].operands[0] >= numInputs) {
        g.viewOf[g.nodes[n].results[0]] = static_cast<int>(g.nodes[n].operands[0]);
        g.valueBytes[g.nodes[n].results[0]] = 0;
      }
    uint64_t peak = peakLiveBytes(g, identity(numNodes));
    RematOptions options;
    options.budget = peak / (1 + rng() % 3);
    options.maxDepth = 1 + rng() % 4;
    RematResult r = rematerialize(g, cost, options);
    changed += !r.recomputed.empty();

    ASSERT_TRUE(isTopologicalOrder(r.graph, r.order)) << "trial " << trial;
    EXPECT_EQ(r.peakBefore, peak);
    EXPECT_LE(r.peakAfter, r.peakBefore);
    EXPECT_EQ(r.peakAfter, peakLiveBytes(r.graph, r.order));
    EXPECT_EQ(r.fits, r.peakAfter <= options.budget);
    if (peak <= options.budget) {
      EXPECT_TRUE(r.recomputed.empty());
    }
    for (unsigned n = numNodes; n < r.graph.nodes.size(); ++n)
      EXPECT_NE(cost[r.origin[n]], kNotRecomputable);
    // Every original node computes what it computed before.
    std::vector<unsigned> originalOrigin = identity(numNodes);
    std::vector<uint64_t> before = evaluate(g, originalOrigin, identity(numNodes));
    std::vector<uint64_t> after = evaluate(r.graph, r.origin, r.order);
    for (unsigned v = 0; v < g.valueBytes.size(); ++v)
      ASSERT_EQ(before[v], after[v]) << "trial " << trial << " value " << v;
    // Deterministic.
    RematResult again = rematerialize(g, cost, options);
    EXPECT_EQ(again.order, r.order);
    EXPECT_EQ(again.origin, r.origin);
    EXPECT_EQ(again.recomputed, r.recomputed);
  }
  // The sweep exercises recomputation, not only the early exits.
  EXPECT_GT(changed, 30u) << changed;
}

} // namespace
