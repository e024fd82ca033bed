//===- KilnGradientInterface.h - vector-Jacobian products -------*- C++ -*-===//
//
// The gradient op interface (generated from KilnGradientInterface.td) and the
// call that attaches the core ops' rules to them.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNGRADIENTINTERFACE_H
#define KILN_IR_KILNGRADIENTINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "llvm/ADT/SmallVector.h"

#include "kiln/IR/KilnGradientInterface.h.inc"

namespace kiln {

/// Attaches the vector-Jacobian product of every differentiable core op
/// (KilnGradients.cpp). Called once when the kiln dialect is initialized.
void attachGradientModels(mlir::MLIRContext &context);

} // namespace kiln

#endif // KILN_IR_KILNGRADIENTINTERFACE_H
