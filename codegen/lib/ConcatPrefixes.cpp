//===- ConcatPrefixes.cpp - kiln-share-concat-prefixes --------------------===//
//
// A concat whose leading inputs are exactly another concat's inputs (a
// DenseNet block concatenates every earlier feature map again at each
// layer) is built in the other concat's buffer: one buffer of the largest
// concat's shape, each feature map inserted once, and each concat of the
// chain a prefix view of it. A block of n layers then copies each feature
// map once instead of up to n times, and its code has n copy loops instead
// of n^2/2.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_SHARECONCATPREFIXES
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// A concat as kiln-lower-to-linalg writes it: static inputs inserted one
/// after another along `axis` into a static tensor.empty, covering it.
struct Concat {
  tensor::EmptyOp empty;
  SmallVector<tensor::InsertSliceOp> inserts;
  int64_t axis;

  Value result() { return inserts.back().getResult(); }
  RankedTensorType type() { return empty.getType(); }
};

/// The concat whose last insert is `last`, or nothing where the chain of
/// inserts back to its tensor.empty is not one.
std::optional<Concat> concatEndingAt(tensor::InsertSliceOp last) {
  Concat c;
  c.axis = -1;
  for (tensor::InsertSliceOp op = last; op;
       op = op.getDest().getDefiningOp<tensor::InsertSliceOp>()) {
    c.inserts.push_back(op);
    if (op != last && !op.getResult().hasOneUse())
      return std::nullopt;
    if (auto empty = op.getDest().getDefiningOp<tensor::EmptyOp>())
      c.empty = empty;
  }
  std::reverse(c.inserts.begin(), c.inserts.end());
  if (!c.empty || !c.type().hasStaticShape() ||
      !c.inserts.front().getDest().hasOneUse() ||
      c.inserts.front().getDest() != c.empty.getResult())
    return std::nullopt;
  ArrayRef<int64_t> shape = c.type().getShape();
  int64_t rank = shape.size(), next = 0;
  for (tensor::InsertSliceOp op : c.inserts) {
    if (op->getBlock() != c.empty->getBlock() ||
        !op.getSourceType().hasStaticShape() ||
        op.getSourceType().getRank() != rank ||
        !llvm::all_of(op.getStaticStrides(),
                      [](int64_t s) { return s == 1; }) ||
        ShapedType::isDynamicShape(op.getStaticOffsets()))
      return std::nullopt;
    ArrayRef<int64_t> offsets = op.getStaticOffsets();
    ArrayRef<int64_t> sizes = op.getSourceType().getShape();
    for (int64_t d = 0; d < rank; ++d) {
      if (sizes[d] == shape[d] && offsets[d] == 0 && d != c.axis)
        continue;
      // The first axis where an input does not cover the result is the
      // concat's; every other one must be covered.
      if (c.axis != -1 && d != c.axis)
        return std::nullopt;
      c.axis = d;
    }
    if (c.axis == -1 || offsets[c.axis] != next)
      return std::nullopt;
    next += sizes[c.axis];
  }
  if (c.axis == -1 || next != shape[c.axis])
    return std::nullopt;
  return c;
}

/// Whether `big` starts with all of `small`'s inputs, in order, along the
/// same axis of the same other sizes.
bool extends(Concat &big, Concat &small) {
  if (big.axis != small.axis || big.inserts.size() <= small.inserts.size() ||
      big.type().getElementType() != small.type().getElementType())
    return false;
  for (int64_t d = 0, e = big.type().getRank(); d < e; ++d)
    if (d != big.axis && big.type().getDimSize(d) != small.type().getDimSize(d))
      return false;
  for (auto [a, b] : llvm::zip(small.inserts, big.inserts))
    if (a.getSource() != b.getSource())
      return false;
  return true;
}

/// Whether everything that reads `value`, or a view or destination-passing
/// result of it, is an op before `point` in `point`'s block: writing
/// `value`'s buffer at `point` then keeps it in place.
bool readOnlyBefore(Value value, Operation *point) {
  SmallVector<Value> work = {value};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *top =
          point->getBlock()->findAncestorOpInBlock(*use.getOwner());
      if (!top || !top->isBeforeInBlock(point))
        return false;
      Operation *user = use.getOwner();
      if (isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
              tensor::CollapseShapeOp, tensor::CastOp>(user))
        llvm::append_range(work, user->getResults());
      else if (auto dps = dyn_cast<DestinationStyleOpInterface>(user);
               dps && dps.isDpsInit(&use))
        work.push_back(dps.getTiedOpResult(&use));
    }
  }
  return true;
}

/// Builds the concats `chain` (each extending the one before) in one
/// buffer of the last one's shape.
void share(RewriterBase &rewriter, MutableArrayRef<Concat> concats,
           ArrayRef<int> chain) {
  Concat &first = concats[chain.front()];
  Concat &last = concats[chain.back()];
  // The buffer: the last concat's shape, where the first one's empty was.
  rewriter.setInsertionPoint(first.empty);
  Value whole = tensor::EmptyOp::create(rewriter, first.empty.getLoc(),
                                        last.type().getShape(),
                                        last.type().getElementType());
  size_t done = 0;
  for (int index : chain) {
    Concat &c = concats[index];
    // Its new inputs go into the buffer, where its own inserts were.
    for (auto [k, op] : llvm::enumerate(c.inserts)) {
      if (k < done)
        continue;
      rewriter.setInsertionPoint(op);
      whole = tensor::InsertSliceOp::create(
          rewriter, op.getLoc(), op.getSource(), whole, op.getMixedOffsets(),
          op.getMixedSizes(), op.getMixedStrides());
    }
    done = c.inserts.size();
    // The concat itself: a prefix of the buffer along its axis.
    Value view = whole;
    if (index != chain.back()) {
      int64_t rank = c.type().getRank();
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes =
          getAsIndexOpFoldResult(rewriter.getContext(), c.type().getShape());
      view = tensor::ExtractSliceOp::create(rewriter, c.result().getLoc(),
                                            c.type(), whole, offsets, sizes,
                                            strides);
    }
    rewriter.replaceAllUsesWith(c.result(), view);
    // The concat's own inserts, last first, then its empty.
    for (tensor::InsertSliceOp op : llvm::reverse(c.inserts))
      rewriter.eraseOp(op);
    rewriter.eraseOp(c.empty);
  }
}

struct ShareConcatPrefixes
    : kiln::impl::ShareConcatPrefixesBase<ShareConcatPrefixes> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // The concats, in program order (each ends at an insert whose result is
    // not inserted into again).
    SmallVector<Concat> concats;
    func.walk([&](tensor::InsertSliceOp op) {
      if (llvm::any_of(op->getUsers(), [&](Operation *user) {
            auto next = dyn_cast<tensor::InsertSliceOp>(user);
            return next && next.getDest() == op.getResult();
          }))
        return;
      if (std::optional<Concat> c = concatEndingAt(op))
        concats.push_back(std::move(*c));
    });

    // Each concat's predecessor: the longest earlier concat it extends whose
    // readers all come before the concat's first own insert, and which no
    // other concat took already. Chains follow the links.
    SmallVector<int> previous(concats.size(), -1);
    SmallVector<bool> taken(concats.size(), false);
    for (size_t j = 0; j < concats.size(); ++j) {
      Concat &big = concats[j];
      int best = -1;
      for (size_t i = 0; i < j; ++i) {
        Concat &small = concats[i];
        if (taken[i] || small.empty->getBlock() != big.empty->getBlock() ||
            !extends(big, small))
          continue;
        Operation *first = big.inserts[small.inserts.size()];
        if (!small.inserts.back()->isBeforeInBlock(first) ||
            !readOnlyBefore(small.result(), first))
          continue;
        if (best == -1 || concats[best].inserts.size() < small.inserts.size())
          best = i;
      }
      if (best != -1) {
        previous[j] = best;
        taken[best] = true;
      }
    }

    IRRewriter rewriter(&getContext());
    for (size_t j = 0; j < concats.size(); ++j) {
      // Chains from their last concat (not taken), longer than one.
      if (taken[j] || previous[j] == -1)
        continue;
      SmallVector<int> chain;
      for (int k = j; k != -1; k = previous[k])
        chain.push_back(k);
      std::reverse(chain.begin(), chain.end());
      share(rewriter, concats, chain);
      numShared += chain.size() - 1;
    }
  }
};

} // namespace
