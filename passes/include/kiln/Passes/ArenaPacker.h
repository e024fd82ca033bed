//===- ArenaPacker.h - place buffers with lifetimes in one arena ----------===//
//
// The memory planner's algorithm, free of IR: given buffers with a size, an
// alignment and a live range over the schedule's steps, assign each an
// offset so that buffers whose live ranges overlap never overlap in memory,
// and keep the arena small. Several greedy strategies are tried and the
// smallest result kept, like XLA's heap simulator.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_ARENAPACKER_H
#define KILN_PASSES_ARENAPACKER_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

struct PackBuffer {
  uint64_t size = 0;      ///< bytes
  uint64_t alignment = 1; ///< a power of two
  unsigned first = 0;     ///< first step at which the buffer is live
  unsigned last = 0;      ///< last step at which it is live (inclusive)
};

struct PackResult {
  std::vector<uint64_t> offsets; ///< one per buffer, in input order
  uint64_t arenaBytes = 0;       ///< end of the highest buffer
  uint64_t lowerBoundBytes = 0;  ///< most bytes live at one step
  uint64_t noReuseBytes = 0;     ///< sum of all sizes (every buffer alone)
  unsigned peakStep = 0;         ///< the first step where the most is live
  std::string strategy;          ///< the strategy that won
};

/// Packs `buffers`. Deterministic: equal inputs give equal offsets.
/// `granule` is the alignment every buffer has at least: the lower bound
/// and the no-reuse total count each size rounded up to it, since with
/// every offset a multiple of it no packing can place buffers closer.
PackResult packArena(const std::vector<PackBuffer> &buffers,
                     uint64_t granule = 1);

/// True if no two buffers that are live at a common step overlap in memory
/// and every offset is aligned (for tests and assertions).
bool isValidPacking(const std::vector<PackBuffer> &buffers,
                    const std::vector<uint64_t> &offsets);

} // namespace kiln

#endif // KILN_PASSES_ARENAPACKER_H
