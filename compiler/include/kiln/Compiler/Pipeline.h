//===- Pipeline.h - the graph pipeline ----------------------------*- C++ -*-===//
//
// The one place where Kiln's graph passes are put in order.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace kiln {

/// Graph-level simplification of an imported module (kiln dialect on
/// tensors), before code generation.
void buildGraphPipeline(mlir::OpPassManager &pm);

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
