//===- MemoryPlan.h - the arena plan as data --------------------*- C++ -*-===//
//
// What kiln-plan-memory decides for one function, as a value: every
// intermediate buffer's offset, size and live range, and the arena's size,
// alignment and bounds. The pass also writes these facts as attributes on
// the function, for readers of printed IR (kiln-opt, lit tests); the
// backends take the value, delivered through a MemoryPlanSink given to the
// pass where kilnc builds its pipelines, and never parse attributes back.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_MEMORYPLAN_H
#define KILN_CODEGEN_MEMORYPLAN_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

/// One buffer of the memory plan.
struct PlannedBuffer {
  std::string name; ///< the ONNX node that produced it, or ""
  uint64_t offset = 0, size = 0;
  unsigned first = 0, last = 0; ///< live range in compute steps, inclusive
  int64_t inPlaceOf = -1;       ///< index of the buffer whose storage it took
};

/// The arena plan of one function.
struct MemoryPlan {
  uint64_t arenaBytes = 0;      ///< aligned to the plan's alignment
  uint64_t arenaAlignment = 0;  ///< the most any buffer needs
  uint64_t lowerBoundBytes = 0; ///< the most bytes live at one step
  uint64_t noReuseBytes = 0;    ///< every buffer apart, aligned
  unsigned steps = 0;           ///< compute steps (ops that are not views,
                                ///< constants, allocations or deallocations)
  unsigned peakStep = 0;        ///< where lowerBoundBytes are live
  std::vector<PlannedBuffer> buffers;
  /// With symbolic sizes (decision 0027): expressions over the symbols
  /// (kiln::DimExpr text) whose largest value is the arena a run at given
  /// sizes reaches; empty for static sizes.
  std::vector<std::string> arenaTerms;
};

/// Where kiln-plan-memory delivers its plans, one per function by name,
/// when the pass is created in code (createPlanMemoryPass). Function
/// passes may run on several threads, so it locks.
class MemoryPlanSink {
public:
  void record(llvm::StringRef function, MemoryPlan plan) {
    std::lock_guard<std::mutex> lock(mutex);
    plans[function.str()] = std::move(plan);
  }
  /// The plan of `function`, or null when the pass did not plan it.
  const MemoryPlan *lookup(llvm::StringRef function) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans.find(function.str());
    return it == plans.end() ? nullptr : &it->second;
  }

private:
  mutable std::mutex mutex;
  std::map<std::string, MemoryPlan> plans;
};

} // namespace kiln

#endif // KILN_CODEGEN_MEMORYPLAN_H
