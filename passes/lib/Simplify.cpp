//===- Simplify.cpp - kiln-simplify ---------------------------------------===//
//
// Runs the four graph clean-up passes as one dynamic pipeline, again and
// again, until a round leaves the function's fingerprint unchanged. Running
// them through runPipeline keeps each one visible to --print-ir-after-all,
// --time-passes and statistics, like any other pass.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

namespace kiln {
#define GEN_PASS_DEF_SIMPLIFY
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct Simplify : kiln::impl::SimplifyBase<Simplify> {
  using SimplifyBase::SimplifyBase;

  LogicalResult initialize(MLIRContext *) override {
    round = OpPassManager(func::FuncOp::getOperationName());
    // Patterns first: they remove identities and move constants together.
    round.addPass(kiln::createCanonicalize());
    // Then evaluate what became all-constant, up to the size limit.
    round.addPass(kiln::createFoldConstants(
        kiln::FoldConstantsOptions{maxElements.getValue()}));
    // Merge duplicates, now that folding made equal constants explicit.
    round.addPass(kiln::createCommonSubexpressionElimination());
    // Finally drop whatever the three above disconnected.
    round.addPass(kiln::createDeadCodeElimination());
    return success();
  }

  void runOnOperation() override {
    for (unsigned i = 0; i < maxIterations; ++i) {
      OperationFingerPrint before(getOperation());
      ++numRounds;
      if (failed(runPipeline(round, getOperation())))
        return signalPassFailure();
      if (OperationFingerPrint(getOperation()) == before)
        return;
    }
  }

  OpPassManager round{func::FuncOp::getOperationName()};
};
} // namespace
