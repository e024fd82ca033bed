//===- KilnCostInterface.h - work per element -------------------*- C++ -*-===//
//
// The cost op interface (generated from KilnCostInterface.td), the two
// questions the graph passes ask of it, and the call that attaches the core
// ops' costs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNCOSTINTERFACE_H
#define KILN_IR_KILNCOSTINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>
#include <optional>

#include "kiln/IR/KilnCostInterface.h.inc"

namespace kiln {

/// Attaches the work per element of every core op that has a bounded one
/// (KilnCost.cpp). Called once when the kiln dialect is initialized.
void attachCostModels(mlir::MLIRContext &context);

/// kiln-fuse's question: whether computing `op` again in every consumer
/// costs less than writing its result to memory and reading it back. True
/// for elementwise ops of work 1 per element (add, mul, max, compare,
/// select, cast); transcendentals, division and anything that loops are
/// not cheap.
bool isCheapToRecompute(mlir::Operation *op);

/// kiln-rematerialize's question: the work of computing `op`'s single
/// result once more (result elements times work per element; 0 for a
/// result without a static shape), or nullopt when `op` is never
/// recomputed (no cost model, effects, regions or several results).
std::optional<uint64_t> recomputeCost(mlir::Operation *op);

} // namespace kiln

#endif // KILN_IR_KILNCOSTINTERFACE_H
