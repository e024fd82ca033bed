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
  // Scheduling last: the order it picks is the static schedule codegen and
  // the memory planner follow, so it must see the final graph.
  func.addPass(createSchedule());
}
