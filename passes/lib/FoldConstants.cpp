//===- FoldConstants.cpp - kiln-fold-constants ----------------------------===//
//
// A thin wrapper around the constant evaluator (kiln/IR/ConstantEvaluator.h):
// walk the function in program order, evaluate every kiln op whose operands
// are all kiln.constant, and replace it by a kiln.constant placed where the
// op was. Program order means a chain of constant ops folds in one sweep;
// the ops left unused are erased here rather than waiting for kiln-dce.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/ConstantBlobs.h"
#include "kiln/IR/ConstantEvaluator.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"
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
/// Ops whose value is a rearrangement of their one operand's elements, as
/// many as it has.
static bool isDataMovement(Operation *op) {
  return isa<kiln::TransposeOp, kiln::ReshapeOp>(op);
}

struct FoldConstants : kiln::impl::FoldConstantsBase<FoldConstants> {
  using FoldConstantsBase::FoldConstantsBase;

  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (isa_and_nonnull<kiln::KilnDialect>(op->getDialect()) &&
          !isa<kiln::ConstantOp>(op) && op->getNumOperands() > 0 &&
          op->getNumResults() == 1 &&
          // A value with symbolic sizes is not one constant (decision 0027).
          !kiln::hasSymbolicDims(op->getResult(0).getType()))
        candidates.push_back(op);
    });
    for (Operation *op : candidates)
      foldOne(op);
  }

  void foldOne(Operation *op) {
    // The limit keeps a large weight from being stored twice (its value and
    // the folded one). A transpose or reshape that is its weight's only user
    // (a Gemm's transposed weight) replaces it instead, whatever its size.
    int64_t limit = maxElements;
    if (isDataMovement(op) && op->getOperand(0).hasOneUse())
      limit = std::max<int64_t>(
          limit,
          cast<ShapedType>(op->getOperand(0).getType()).getNumElements());
    // Likewise an op whose result is no larger than a constant operand that
    // only it reads (a convolution weight scaled by a folded BatchNorm:
    // left unfolded, the scaling would run on every call and the scaled
    // weight would take arena space).
    int64_t resultElements =
        cast<ShapedType>(op->getResult(0).getType()).getNumElements();
    for (Value v : op->getOperands())
      if (v.hasOneUse() && v.getDefiningOp<kiln::ConstantOp>() &&
          cast<ShapedType>(v.getType()).getNumElements() >= resultElements)
        limit = std::max(limit, resultElements);
    // And a slice of a constant that only slices read, no more of it in all
    // than it holds (a filter split into its taps, kiln-canonicalize's
    // SplitSparseConvTaps): once the last one folds the whole is dead.
    if (isa<kiln::SliceOp>(op) &&
        op->getOperand(0).getDefiningOp<kiln::ConstantOp>()) {
      Value whole = op->getOperand(0);
      int64_t sliced = 0;
      bool onlySlices = llvm::all_of(whole.getUsers(), [&](Operation *user) {
        auto slice = dyn_cast<kiln::SliceOp>(user);
        if (slice)
          sliced += slice.getType().getNumElements();
        return slice != nullptr;
      });
      if (onlySlices &&
          sliced <= cast<ShapedType>(whole.getType()).getNumElements())
        limit = std::max(limit, resultElements);
    }
    // Weight-sized results are computed from the operands' bytes into a
    // blob the compile can free, not through attributes MLIR keeps for the
    // context's life (kiln/IR/ConstantBlobs.h).
    if (resultElements > kiln::kBlobThresholdElements &&
        resultElements <= limit) {
      SmallVector<Attribute> values;
      for (Value v : op->getOperands()) {
        auto c = v.getDefiningOp<kiln::ConstantOp>();
        if (!c)
          return;
        values.push_back(c.getValue());
      }
      if (TypedAttr value = kiln::evaluateLargeConstantOp(op, values))
        return replaceByConstant(op, cast<ElementsAttr>(value));
    }
    SmallVector<DenseElementsAttr> operands;
    for (Value v : op->getOperands()) {
      auto c = v.getDefiningOp<kiln::ConstantOp>();
      if (!c)
        return;
      // Operands are read up to the same limit as results: a gather or slice
      // of a huge weight would otherwise copy it whole first.
      DenseElementsAttr dense = kiln::asDenseElements(c.getValue(), limit);
      if (!dense) {
        ++numTooLarge;
        return;
      }
      operands.push_back(dense);
    }
    auto resultType = cast<ShapedType>(op->getResult(0).getType());
    if (resultType.getNumElements() > limit) {
      ++numTooLarge;
      return;
    }
    DenseElementsAttr value = kiln::evaluateConstantOp(op, operands, limit);
    if (!value || value.getType() != resultType)
      return;
    replaceByConstant(op, value);
  }

  /// Replaces `op` by a kiln.constant of `value`; erases the operands it
  /// leaves unused.
  void replaceByConstant(Operation *op, ElementsAttr value) {
    auto resultType = cast<ShapedType>(op->getResult(0).getType());
    OpBuilder b(op);
    auto folded = kiln::ConstantOp::create(b, op->getLoc(), resultType, value);
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
