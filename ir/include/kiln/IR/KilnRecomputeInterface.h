//===- KilnRecomputeInterface.h - ops cheap to compute again ----*- C++ -*-===//
//
// The recompute op interface (generated from KilnRecomputeInterface.td) and
// the call that attaches the core ops' costs to it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILNRECOMPUTEINTERFACE_H
#define KILN_IR_KILNRECOMPUTEINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>

#include "kiln/IR/KilnRecomputeInterface.h.inc"

namespace kiln {

/// Attaches the recompute cost of every core op that is cheap to compute
/// again (KilnRecompute.cpp). Called once when the kiln dialect is
/// initialized.
void attachRecomputeModels(mlir::MLIRContext &context);

} // namespace kiln

#endif // KILN_IR_KILNRECOMPUTEINTERFACE_H
