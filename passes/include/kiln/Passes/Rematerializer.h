//===- Rematerializer.h - recompute values to lower peak memory -*- C++ -*-===//
//
// The rematerializer's algorithm, free of IR: given a scheduled dataflow
// graph (the scheduler's ScheduleGraph, its nodes in schedule order) and the
// cost of running each node again, choose values to compute a second time
// just before their late readers instead of keeping them live across the
// step where the most bytes are live, until that peak fits a budget or no
// recomputation lowers it any more. The liveness model is the scheduler's
// (liveBytesPerStep), so the two agree on what a peak is.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_REMATERIALIZER_H
#define KILN_PASSES_REMATERIALIZER_H

#include "kiln/Passes/Scheduler.h"

#include <cstdint>
#include <vector>

namespace kiln {

/// The cost of a node that must never run twice.
inline constexpr uint64_t kNotRecomputable = ~uint64_t(0);

struct RematOptions {
  /// Peak live bytes to reach (the graph's own estimate of the arena).
  uint64_t budget = 0;
  /// Longest chain of producers cloned to recompute one value: an operand of
  /// a recomputed node that is no longer live where the copy runs is itself
  /// recomputed, up to this depth, else kept live longer.
  unsigned maxDepth = 8;
  /// Most rounds (each recomputes one value, or a few from one input).
  unsigned maxRounds = 1000;
  /// Most values tried first in a round, the largest ones: each try is
  /// simulated over the whole graph.
  unsigned maxTries = 32;
};

struct RematResult {
  /// The nodes of the input graph first, with the same indices (their
  /// operands may now read copies), then one node per copy; values are
  /// numbered likewise, the copies' results after the input's values.
  ScheduleGraph graph;
  /// Per node of `graph`: the input node it computes (itself for an input
  /// node; copies of copies name the input node).
  std::vector<unsigned> origin;
  /// The new schedule, over every node of `graph`.
  std::vector<unsigned> order;
  /// The value (of `graph`) recomputed in each round, in the order chosen.
  std::vector<unsigned> recomputed;
  uint64_t peakBefore = 0;    ///< peak live bytes of the input schedule
  uint64_t peakAfter = 0;     ///< peak live bytes of `order`
  uint64_t recomputeCost = 0; ///< sum of the costs of the copies
  bool fits = false;          ///< peakAfter <= budget
};

/// Recomputes values of `graph`, whose nodes must be in a topological order
/// (the schedule), until the peak of live bytes is at most
/// `options.budget`. `cost[n]` is the work of running node n again, or
/// kNotRecomputable; only nodes with one result are recomputed.
///
/// Each round takes the first step where the peak is reached and tries
/// every value computed before it by a recomputable node, live across it
/// and not read at it: its readers after the peak read a copy made just
/// before the first of them (with the chain of copies its operands need),
/// so the value dies at its last earlier reader. The round keeps the try
/// with the lowest (peak, number of steps at the peak, cost, value id), if
/// that is lower in its first two keys than before; otherwise the peak
/// cannot be lowered this way and the algorithm stops. Deterministic.
RematResult rematerialize(const ScheduleGraph &graph,
                          const std::vector<uint64_t> &cost,
                          const RematOptions &options);

} // namespace kiln

#endif // KILN_PASSES_REMATERIALIZER_H
