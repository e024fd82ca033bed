//===- Pipeline.cpp - the graph pipeline ----------------------------------===//
//
// Orders the graph passes. Each step says why it sits where it does.
//
//===----------------------------------------------------------------------===//

#include "kiln/Compiler/Pipeline.h"

#include "kiln/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

void kiln::buildGraphPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &func = pm.nest<mlir::func::FuncOp>();
  // One fixed-point loop of canonicalize, fold-constants, cse and dce
  // (kiln-simplify): identities, constant arithmetic and duplicates shrink the
  // graph every later stage walks, and each of the four exposes work for the
  // others, so they repeat until the function stops changing.
  func.addPass(createSimplify());
  // Scheduling last: the order it picks is the static schedule codegen and
  // the memory planner follow, so it must see the final graph.
  func.addPass(createSchedule());
}

void kiln::buildPrecisionPipeline(mlir::OpPassManager &pm,
                                  llvm::StringRef type) {
  // Before the graph pipeline (and after gradients and the optimizer, so
  // the backward products are narrowed too): its folding turns the casts of
  // constant weights into narrow constants, and CSE merges the casts of a
  // value two products read.
  LowerPrecisionOptions options;
  options.type = type.str();
  pm.nest<mlir::func::FuncOp>().addPass(createLowerPrecision(options));
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

void kiln::buildRematerializationPipeline(mlir::OpPassManager &pm,
                                          uint64_t budget) {
  // After the graph pipeline, never inside it: kiln-cse would merge the
  // copies back into the values they recompute, and kiln-schedule would be
  // free to hoist them next to the originals. Nothing after this pass
  // reorders or merges ops at the graph level, and the lowering's own CSE
  // runs on buffers, where two computations writing two buffers never merge.
  RematerializeOptions options;
  options.budget = budget;
  pm.nest<mlir::func::FuncOp>().addPass(createRematerialize(options));
}

void kiln::buildFusionPipeline(mlir::OpPassManager &pm) {
  // Fusion last, after scheduling and rematerialization: kernels are formed
  // greedily over the final order (a kernel sits where its last op was),
  // recomputed values join the kernels of their late readers, and nothing
  // after it reorders or rewrites the graph, so no pass has to see through
  // kiln.fused regions.
  pm.nest<mlir::func::FuncOp>().addPass(createFuse());
}

void kiln::buildOptimizerPipeline(mlir::OpPassManager &pm,
                                  const OptimizerOptions &options) {
  // Right after the gradients, still before folding: the update reads the
  // gradients as plain values, and the graph pipeline then simplifies and
  // schedules forward, backward and update as one graph (a gradient that is
  // only read by its update need never be stored).
  ApplyOptimizerOptions pass;
  pass.optimizer = options.optimizer;
  pass.lr = options.lr;
  pass.momentum = options.momentum;
  pass.beta1 = options.beta1;
  pass.beta2 = options.beta2;
  pass.epsilon = options.epsilon;
  pass.weightDecay = options.weightDecay;
  pm.nest<mlir::func::FuncOp>().addPass(createApplyOptimizer(pass));
}
