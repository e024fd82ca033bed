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
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_DROPSTATECOPIES
#define GEN_PASS_DEF_RESULTSINPLACE
#define GEN_PASS_DEF_STATEINPLACE
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Follows a returned tensor back to the tensor.empty whose buffer it will
/// be: through reshapes (appended to `reshapes`, outermost first), the tied
/// outputs of destination-style ops, loop results and inserted-into
/// tensors. Returns the use of that empty, or null where the chain ends
/// anywhere else.
OpOperand *emptyDestination(Value result,
                            SmallVectorImpl<Operation *> &reshapes) {
  OpOperand *use = nullptr;
  Value v = result;
  while (Operation *def = v.getDefiningOp()) {
    if (isa<tensor::EmptyOp>(def))
      return use;
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
      return nullptr;
    v = use->get();
  }
  return nullptr;
}

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
      SmallVector<Operation *> reshapes;
      OpOperand *use = emptyDestination(result, reshapes);
      if (!use || reshapes.empty())
        continue;
      auto empty = use->get().getDefiningOp<tensor::EmptyOp>();
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

/// The state arguments (old values) and the state results of `func`, in
/// order (kiln.state marks both); empty unless they pair up.
std::pair<SmallVector<unsigned>, SmallVector<unsigned>>
statePositions(func::FuncOp func) {
  SmallVector<unsigned> args, results;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (func.getArgAttr(i, "kiln.state"))
      args.push_back(i);
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (func.getResultAttr(i, "kiln.state"))
      results.push_back(i);
  if (args.size() != results.size())
    return {};
  return {args, results};
}

/// Whether every use of `value` other than by `op` (a direct child of the
/// function body) is in an op before `op`.
bool onlyReadBefore(Value value, Operation *op) {
  for (Operation *user : value.getUsers()) {
    if (user == op)
      continue;
    Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
    if (!top || top == op || !top->isBeforeInBlock(op))
      return false;
  }
  return true;
}

/// Rewrites the all-parallel `op`, which computes result `result` from its
/// input `input` read at the same indices as it writes, to update that
/// input's tensor in place: the input becomes the result's destination and
/// the payload reads it as the output's block argument. Returns the new op.
linalg::GenericOp updateInPlace(RewriterBase &rewriter, linalg::GenericOp op,
                                unsigned input, unsigned result) {
  Value old = op.getDpsInputs()[input];
  SmallVector<Value> inputs(op.getDpsInputs());
  inputs.erase(inputs.begin() + input);
  SmallVector<Value> inits(op.getDpsInits());
  inits[result] = old;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps.erase(maps.begin() + input);
  rewriter.setInsertionPoint(op);
  auto fresh = linalg::GenericOp::create(rewriter, op.getLoc(),
                                         op.getResultTypes(), inputs, inits,
                                         maps, op.getIteratorTypesArray());
  Block &body = op.getRegion().front();
  BlockArgument in = body.getArgument(input);
  in.replaceAllUsesWith(body.getArgument(op.getNumDpsInputs() + result));
  body.eraseArgument(input);
  rewriter.inlineRegionBefore(op.getRegion(), fresh.getRegion(),
                              fresh.getRegion().begin());
  rewriter.replaceOp(op, fresh.getResults());
  return fresh;
}

struct StateInPlace : kiln::impl::StateInPlaceBase<StateInPlace> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    // A data-parallel step keeps the copy: a failed collective must leave
    // the caller's state as it was (docs/decisions/0024).
    if (func.walk([](kiln::AllReduceOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      return;
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
    if (!ret)
      return;
    auto [args, results] = statePositions(func);
    IRRewriter rewriter(&getContext());
    for (auto [arg, result] : llvm::zip(args, results)) {
      // The new value: a result of an all-parallel generic in the function
      // body that reads the old value at the indices it writes, the old
      // value's last reader, and not a result of the function itself.
      Value old = func.getArgument(arg);
      auto value = dyn_cast<OpResult>(ret.getOperand(result));
      auto op = value ? dyn_cast<linalg::GenericOp>(value.getOwner()) : nullptr;
      if (!op || op->getParentOp() != func.getOperation() ||
          !op.hasPureTensorSemantics() ||
          op.getNumParallelLoops() != op.getNumLoops() ||
          !onlyReadBefore(old, op) || value.getType() != old.getType())
        continue;
      unsigned j = value.getResultNumber();
      OpOperand *init = op.getDpsInitOperand(j);
      if (op.payloadUsesValueFromOperand(init))
        continue;
      AffineMap written = op.getMatchingIndexingMap(init);
      std::optional<unsigned> input;
      bool other = false;
      for (OpOperand *in : op.getDpsInputOperands()) {
        if (in->get() != old)
          continue;
        if (!input && op.getMatchingIndexingMap(in) == written)
          input = in->getOperandNumber();
        else
          other = true;
      }
      if (!input || other)
        continue;
      updateInPlace(rewriter, op, *input, j);
      func.setArgAttr(arg, "bufferization.writable",
                      rewriter.getBoolAttr(true));
      ++numOffered;
    }
  }
};

struct DropStateCopies : kiln::impl::DropStateCopiesBase<DropStateCopies> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    // After buffer-results-to-out-params the state results are the last
    // state-marked arguments: the first half are the old values, the
    // second half the new ones, in the same order.
    SmallVector<unsigned> marked;
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (func.getArgAttr(i, "kiln.state"))
        marked.push_back(i);
    if (marked.empty() || marked.size() % 2)
      return;
    size_t numState = marked.size() / 2;
    SmallVector<int64_t> inPlace;
    for (size_t k = 0; k < numState; ++k) {
      BlockArgument old = func.getArgument(marked[k]);
      BlockArgument fresh = func.getArgument(marked[numState + k]);
      if (!fresh.hasOneUse())
        continue;
      auto copy = dyn_cast<memref::CopyOp>(*fresh.getUsers().begin());
      if (!copy || copy.getSource() != old || copy.getTarget() != fresh ||
          copy->getParentOp() != func.getOperation())
        continue;
      copy.erase();
      inPlace.push_back(k);
      ++numInPlace;
    }
    if (!inPlace.empty())
      func->setAttr(kiln::kStateInPlaceAttr,
                    DenseI64ArrayAttr::get(&getContext(), inPlace));
  }
};

} // namespace
