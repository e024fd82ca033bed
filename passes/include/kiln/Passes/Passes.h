//===- Passes.h - graph-level passes on the kiln dialect --------*- C++ -*-===//
//
// Declarations generated from Passes.td: one create function per pass and a
// registration call for tools.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "kiln/Passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "kiln/Passes/Passes.h.inc"

/// Bytes of a value if it were a buffer of its own (a statically shaped
/// tensor of integers or floats, each element rounded up to whole bytes);
/// 0 when unknown. The one size the graph passes that weigh memory use.
inline uint64_t tensorBytes(mlir::Type type) {
  auto shaped = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape() ||
      !shaped.getElementType().isIntOrFloat())
    return 0;
  uint64_t elt = (shaped.getElementType().getIntOrFloatBitWidth() + 7) / 8;
  return elt * static_cast<uint64_t>(shaped.getNumElements());
}

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
