//===- Pipeline.cpp - the graph pipeline ----------------------------------===//
//
// Orders the graph passes. Each step says why it sits where it does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Pipeline.h"

#include "kiln/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/Passes.h"

void kiln::buildGraphPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  // Folding first: identities (x*1, reshape of reshape, transpose pairs) and
  // constant arithmetic shrink the graph every later pass walks.
  func.addPass(mlir::createCanonicalizerPass());
  // What folding disconnected is now dead.
  func.addPass(createDeadCodeElimination());
  // Merge duplicates last, once names no longer hide that two ops agree.
  func.addPass(mlir::createCSEPass());
}

void kiln::buildGradientPipeline(mlir::OpPassManager &pm, llvm::StringRef loss,
                                 llvm::ArrayRef<std::string> wrt) {
  // Differentiate the graph as imported, before folding: the graph pipeline
  // that follows then simplifies forward and backward ops together (seed
  // multiplications by one, transpose pairs) and its DCE removes the operand
  // gradients no parameter needed.
  GenerateGradientsOptions options;
  options.loss = loss.str();
  options.wrt.assign(wrt.begin(), wrt.end());
  pm.nest<mlir::func::FuncOp>().addPass(createGenerateGradients(options));
}
