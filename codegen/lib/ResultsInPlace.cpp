//===- ResultsInPlace.cpp - kiln-results-in-place -------------------------===//
//
// A result that is a reshape of the buffer its producer writes (a
// convolution computed as a matmul over [N, G, Mg, H*W], returned as
// [N, M, H, W]) bufferizes to a view of an intermediate buffer, and
// buffer-results-to-out-params then copies the view into the caller's
// buffer. Giving that buffer the result's shape from the start, seen
// through the inverse reshapes, makes the returned value the buffer itself
// once the reshapes fold, so the producer writes the caller's buffer.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_RESULTSINPLACE
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

struct ResultsInPlace : kiln::impl::ResultsInPlaceBase<ResultsInPlace> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
    if (!ret)
      return;
    IRRewriter rewriter(&getContext());
    for (Value result : ret.getOperands()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !type.hasStaticShape())
        continue;
      // Back from the result to the tensor.empty whose buffer it will be:
      // through reshapes (noted, outermost first), the tied output of
      // destination-style ops, loop results and inserted-into tensors.
      SmallVector<Operation *> reshapes;
      OpOperand *use = nullptr;
      Value v = result;
      while (Operation *def = v.getDefiningOp()) {
        if (isa<tensor::EmptyOp>(def))
          break;
        use = nullptr;
        if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) {
          reshapes.push_back(def);
          use = &def->getOpOperand(0);
        } else if (auto loop = dyn_cast<scf::ForOp>(def)) {
          use = &loop.getInitsMutable()[cast<OpResult>(v).getResultNumber()];
        } else if (auto dps = dyn_cast<DestinationStyleOpInterface>(def)) {
          use = dps.getTiedOpOperand(cast<OpResult>(v));
        }
        if (!use)
          break;
        v = use->get();
      }
      auto empty = v.getDefiningOp<tensor::EmptyOp>();
      if (!empty || !use || reshapes.empty())
        continue;
      // A fresh empty of the result's shape, reshaped back by the inverse
      // of each reshape, outermost first.
      rewriter.setInsertionPoint(use->getOwner());
      Location loc = empty.getLoc();
      Value fresh = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                            type.getElementType());
      for (Operation *op : reshapes) {
        if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
          fresh = tensor::ExpandShapeOp::create(
              rewriter, loc, collapse.getSrcType(), fresh,
              collapse.getReassociationIndices());
        else
          fresh = tensor::CollapseShapeOp::create(
              rewriter, loc, cast<tensor::ExpandShapeOp>(op).getSrcType(),
              fresh, cast<tensor::ExpandShapeOp>(op).getReassociationIndices());
      }
      if (fresh.getType() != empty.getType())
        continue; // left unused; canonicalization removes it
      use->set(fresh);
      ++numResults;
    }
  }
};

} // namespace
