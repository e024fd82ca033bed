//===- DeadCodeElimination.cpp - kiln-dce ---------------------------------===//
//
// Erases side-effect-free ops with unused results. Walking each block
// backwards means an op whose only user was just erased is seen after that
// user, so chains disappear in one sweep.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_DEADCODEELIMINATION
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct DeadCodeElimination
    : kiln::impl::DeadCodeEliminationBase<DeadCodeElimination> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      for (Operation &op :
           llvm::make_early_inc_range(llvm::reverse(block.getOperations()))) {
        if (op.use_empty() && isOpTriviallyDead(&op)) {
          op.erase();
          ++numErased;
        }
      }
    }
  }
};
} // namespace
