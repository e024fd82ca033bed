//===- Scheduler.h - a topological order that keeps memory low -*- C++ -*-===//
//
// The scheduler's algorithm, free of IR: given a dataflow graph whose nodes
// read and produce values of known sizes, choose a topological order with a
// small peak of live bytes. A greedy list scheduler picks, among the ready
// nodes, the one that leaves the fewest bytes live (frees the most, allocates
// the least), ties going to the original order; the original order itself is
// kept unless a candidate order strictly lowers the peak, so graphs where
// order does not matter (chains) are left alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_SCHEDULER_H
#define KILN_PASSES_SCHEDULER_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct ScheduleNode {
  std::vector<unsigned> operands; ///< value ids read (duplicates allowed)
  std::vector<unsigned> results;  ///< value ids produced
  std::vector<unsigned> after;    ///< nodes that must run first (other than
                                  ///< the producers of the operands)
};

struct ScheduleGraph {
  /// Bytes each value occupies while live, indexed by value id. A value no
  /// node produces (a graph input) is never counted; give 0 to values that
  /// take no planned memory (constants, values written to caller buffers).
  std::vector<uint64_t> valueBytes;
  /// For a value that is a view of another (a reshape, which bufferizes to
  /// an alias), the id of that value, else -1; may be shorter than
  /// valueBytes. A view takes no bytes of its own and keeps the value it
  /// views live until its own last reader.
  std::vector<int> viewOf;
  /// Nodes in their original order, which must be a topological order.
  std::vector<ScheduleNode> nodes;
};

struct ScheduleResult {
  std::vector<unsigned> order; ///< node indices, in the chosen order
  uint64_t peakBytes = 0;      ///< peak live bytes of `order`
  uint64_t originalPeakBytes = 0;
  std::string strategy; ///< "original" or the heuristic that won
};

/// Peak bytes live at one step when the nodes run in `order`. A value is
/// live from the step of its producer to the step of its last reader (or
/// only at its producer's step when nothing reads it).
uint64_t peakLiveBytes(const ScheduleGraph &graph,
                       const std::vector<unsigned> &order);

/// Bytes live at each step of `order` (the same model as peakLiveBytes: at
/// step i, the results of order[i] and every value produced earlier and read
/// at step i or later); peakLiveBytes is the largest entry.
std::vector<uint64_t> liveBytesPerStep(const ScheduleGraph &graph,
                                       const std::vector<unsigned> &order);

/// True if `order` is a permutation of the nodes that respects every
/// dependence (for tests and assertions).
bool isTopologicalOrder(const ScheduleGraph &graph,
                        const std::vector<unsigned> &order);

/// Chooses the order. Deterministic: equal graphs give equal orders.
ScheduleResult scheduleForMemory(const ScheduleGraph &graph);

} // namespace kiln

#endif // KILN_PASSES_SCHEDULER_H
