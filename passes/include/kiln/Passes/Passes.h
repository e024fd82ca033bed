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

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
