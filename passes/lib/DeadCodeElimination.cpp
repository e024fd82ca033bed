//===- DeadCodeElimination.cpp - kiln-dce ---------------------------------===//
//
// Erases side-effect-free ops with unused results. Walking backwards means an
// op whose only user was just erased is seen after that user, so chains
// disappear in one sweep.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/Iterators.h"
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
    // Post-order and reversed (regions, blocks and ops back to front): every
    // user is visited, and erased if dead, before the values it reads.
    getOperation().walk<WalkOrder::PostOrder, ReverseIterator>(
        [&](Operation *op) {
          if (op != getOperation() && op->use_empty() &&
              isOpTriviallyDead(op)) {
            op->erase();
            ++numErased;
          }
        });
  }
};
} // namespace
