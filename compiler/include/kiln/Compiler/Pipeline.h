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
/// tensors), before code generation; with `fuse`, ends by grouping ops into
/// kiln.fused kernels.
void buildGraphPipeline(mlir::OpPassManager &pm, bool fuse = true);

/// Appends the gradient of the result named `loss` with respect to the
/// arguments named in `wrt` (default: those marked kiln.parameter); runs on
/// the imported module, before buildGraphPipeline.
void buildGradientPipeline(mlir::OpPassManager &pm, llvm::StringRef loss,
                           llvm::ArrayRef<std::string> wrt);

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
