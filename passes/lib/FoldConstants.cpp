//===- FoldConstants.cpp - kiln-fold-constants ----------------------------===//
//
// A thin wrapper around the constant evaluator (kiln/IR/ConstantEvaluator.h):
// walk the function in program order, evaluate every kiln op whose operands
// are all kiln.constant, and replace it by a kiln.constant placed where the
// op was. Program order means a chain of constant ops folds in one sweep;
// the ops left unused are erased here rather than waiting for kiln-dce.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantEvaluator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_FOLDCONSTANTS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
struct FoldConstants : kiln::impl::FoldConstantsBase<FoldConstants> {
  using FoldConstantsBase::FoldConstantsBase;

  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa_and_nonnull<kiln::KilnDialect>(op->getDialect()) &&
          !isa<kiln::ConstantOp>(op) && op->getNumOperands() > 0 &&
          op->getNumResults() == 1)
        candidates.push_back(op);
    });
    for (Operation *op : candidates)
      foldOne(op);
  }

  void foldOne(Operation *op) {
    SmallVector<DenseElementsAttr> operands;
    for (Value v : op->getOperands()) {
      auto c = v.getDefiningOp<kiln::ConstantOp>();
      if (!c)
        return;
      // Operands are read up to the same limit as results: a gather or slice
      // of a huge weight would otherwise copy it whole first.
      DenseElementsAttr dense = kiln::asDenseElements(c.getValue(), maxElements);
      if (!dense) {
        ++numTooLarge;
        return;
      }
      operands.push_back(dense);
    }
    auto resultTy = cast<ShapedType>(op->getResult(0).getType());
    if (resultTy.getNumElements() > maxElements) {
      ++numTooLarge;
      return;
    }
    DenseElementsAttr value =
        kiln::evaluateConstantOp(op, operands, maxElements);
    if (!value || value.getType() != resultTy)
      return;
    OpBuilder b(op);
    auto folded = kiln::ConstantOp::create(b, op->getLoc(), resultTy, value);
    op->getResult(0).replaceAllUsesWith(folded.getResult());
    llvm::SetVector<Operation *> inputs;
    for (Value v : op->getOperands())
      inputs.insert(v.getDefiningOp());
    op->erase();
    ++numFolded;
    // Inputs that only fed this op are dead now.
    for (Operation *in : inputs)
      if (in->use_empty())
        in->erase();
  }
};
} // namespace
