//===- KilnFusionInterface.h - how ops fuse ---------------------*- C++ -*-===//
//
// The fusion op interface (generated from KilnFusionInterface.td), a helper
// that answers for ops without it, and the call that attaches the core ops'
// answers.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNFUSIONINTERFACE_H
#define KILN_IR_KILNFUSIONINTERFACE_H

#include "kiln/IR/KilnOps.h"

#include "mlir/IR/OpDefinition.h"

#include "kiln/IR/KilnFusionInterface.h.inc"

namespace kiln {

/// Attaches the fusion class of every core op
/// (KilnFusion.cpp). Called once when the kiln dialect is initialized.
void attachFusionModels(mlir::MLIRContext &context);

/// The op's fusion class; `opaque` for ops without the interface.
FusionClass getFusionClass(mlir::Operation *op);

} // namespace kiln

#endif // KILN_IR_KILNFUSIONINTERFACE_H
