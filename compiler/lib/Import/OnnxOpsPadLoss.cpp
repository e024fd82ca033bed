//===- OnnxOpsPadLoss.cpp - Pad and the classification losses -------------===//
//
// Pad is built from slices and concatenations (constant, edge, reflect and
// wrap modes alike), so no padding op is needed in the core. The losses
// (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) pick the target
// class with a one-hot mask made by comparing the targets with a constant
// [0, C) ramp, then reduce; class weights come from a gather.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// x[start : start + size*stride : stride] along `axis`.
Value sliceAxis(NodeImporter &n, Value x, int64_t axis, int64_t start,
                int64_t size, int64_t stride) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape(t.getShape()), starts(t.getRank(), 0),
      strides(t.getRank(), 1);
  shape[axis] = size;
  starts[axis] = start;
  strides[axis] = stride;
  return SliceOp::create(
      n.b, n.loc, RankedTensorType::get(shape, t.getElementType()), x,
      n.b.getDenseI64ArrayAttr(starts), n.b.getDenseI64ArrayAttr(strides));
}

/// `p` elements to put before (low) or after (high) `x` along `axis`.
FailureOr<Value> padPiece(NodeImporter &n, Value x, int64_t axis, int64_t p,
                          bool low, StringRef mode, Value fill) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t d = t.getDimSize(axis);
  SmallVector<int64_t> shape(t.getShape());
  shape[axis] = p;
  auto pieceTy = RankedTensorType::get(shape, t.getElementType());
  if (mode == "constant")
    return Value(BroadcastOp::create(n.b, n.loc, pieceTy, fill));
  if (d == 0) {
    n.error() << "mode '" << mode << "' cannot pad an empty dimension";
    return failure();
  }
  if (mode == "edge") {
    Value edge = sliceAxis(n, x, axis, low ? 0 : d - 1, 1, 1);
    return Value(BroadcastOp::create(n.b, n.loc, pieceTy, edge));
  }
  if (mode == "reflect") {
    if (p > d - 1) {
      n.error() << "reflect padding of " << p << " needs a dimension of more "
                << "than " << p << " elements, found " << d;
      return failure();
    }
    return low ? sliceAxis(n, x, axis, p, p, -1)
               : sliceAxis(n, x, axis, d - 2, p, -1);
  }
  if (mode == "wrap") {
    if (p > d) {
      n.error() << "wrap padding of " << p << " exceeds the dimension's " << d
                << " elements";
      return failure();
    }
    return low ? sliceAxis(n, x, axis, d - p, p, 1)
               : sliceAxis(n, x, axis, 0, p, 1);
  }
  n.error() << "mode '" << mode
            << "' is not one of constant, reflect, edge, wrap";
  return failure();
}

LogicalResult importPad(NodeImporter &n) {
  bool attrForm = n.opset < 11;
  if (failed(n.expectInputs(1, attrForm ? 1 : 4)))
    return failure();
  auto t = n.inputType(0);
  int64_t rank = t.getRank();
  Type elt = t.getElementType();
  KILN_TRY(mode, n.getString("mode", "constant"));
  SmallVector<int64_t> pads;
  Value fill;
  SmallVector<int64_t> axes;
  if (attrForm) {
    KILN_TRY(p, n.getInts(n.opset < 2 ? "paddings" : "pads"));
    KILN_TRY(value, n.getFloat("value"));
    if (!p) {
      n.error() << "expects a 'pads' attribute";
      return failure();
    }
    pads = *p;
    fill = n.scalar(elt, value.value_or(0.0f));
  } else {
    KILN_TRY(p, n.constantInts(1, "pads"));
    pads = p;
    if (n.hasInput(2)) {
      fill = n.input(2);
      auto ft = cast<RankedTensorType>(fill.getType());
      if (ft.getElementType() != elt || ft.getNumElements() != 1) {
        n.error() << "constant_value must be one element of the input's type, "
                  << "found " << ft;
        return failure();
      }
      fill = n.reshape(fill, {});
    } else {
      fill = n.scalar(elt, 0.0);
    }
    if (n.hasInput(3)) {
      KILN_TRY(a, n.constantInts(3, "axes"));
      for (int64_t axis : a) {
        KILN_TRY(norm, n.normalizeAxis(axis, rank));
        axes.push_back(norm);
      }
    }
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  if (pads.size() != 2 * axes.size()) {
    n.error() << "expects " << 2 * axes.size() << " pads, found "
              << pads.size();
    return failure();
  }
  Value x = n.input(0);
  size_t k = axes.size();
  for (size_t i = 0; i < k; ++i) {
    int64_t axis = axes[i], lo = pads[i], hi = pads[k + i];
    int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(axis);
    // Negative pads crop.
    if (lo < 0 || hi < 0) {
      int64_t start = std::max<int64_t>(-lo, 0);
      int64_t size = d - start - std::max<int64_t>(-hi, 0);
      if (size < 0) {
        n.error() << "negative pads remove more than the " << d
                  << " elements of dimension " << axis;
        return failure();
      }
      x = sliceAxis(n, x, axis, start, size, 1);
      lo = std::max<int64_t>(lo, 0);
      hi = std::max<int64_t>(hi, 0);
    }
    SmallVector<Value> parts;
    Value center = x;
    if (lo > 0) {
      KILN_TRY(piece, padPiece(n, center, axis, lo, true, mode, fill));
      parts.push_back(piece);
    }
    parts.push_back(center);
    if (hi > 0) {
      KILN_TRY(piece, padPiece(n, center, axis, hi, false, mode, fill));
      parts.push_back(piece);
    }
    if (parts.size() > 1)
      x = ConcatOp::create(n.b, n.loc, parts, axis);
  }
  n.setResult(0, x);
  return success();
}

/// A constant [1, C, 1, ...] ramp 0..C-1 of `type`, to compare targets with.
Value classRamp(NodeImporter &n, int64_t classes, int64_t rank, Type type) {
  SmallVector<int64_t> shape(rank, 1);
  shape[1] = classes;
  auto t = RankedTensorType::get(shape, type);
  SmallVector<APInt> values;
  for (int64_t c = 0; c < classes; ++c)
    values.push_back(APInt(type.getIntOrFloatBitWidth(), c, /*isSigned=*/true));
  return ConstantOp::create(
      n.b, n.loc, t, cast<ElementsAttr>(DenseElementsAttr::get(t, values)));
}

/// The negative log-likelihood of `logp` [N, C, d...] at `target` [N, d...].
FailureOr<Value> nllLoss(NodeImporter &n, Value logp, Value target,
                         Value weight, std::optional<int64_t> ignoreIndex,
                         StringRef reduction) {
  auto lt = cast<RankedTensorType>(logp.getType());
  auto tt = cast<RankedTensorType>(target.getType());
  Type elt = lt.getElementType();
  if (!isa<FloatType>(elt) || lt.getRank() < 2) {
    n.error() << "expects float scores of rank 2 or more, found " << lt;
    return failure();
  }
  // Shapes compare as expressions (a symbolic batch, decision 0027).
  SmallVector<DimExpr> expected = dimExprs(lt), targetSizes = dimExprs(tt);
  expected.erase(expected.begin() + 1);
  if (targetSizes != expected || !(tt.getElementType().isInteger(32) ||
                                   tt.getElementType().isInteger(64))) {
    n.error() << "expects integer targets of shape [N, d...] matching " << lt
              << ", found " << tt;
    return failure();
  }
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    n.error() << "reduction '" << reduction
              << "' is not one of none, sum, mean";
    return failure();
  }
  int64_t classes = lt.getDimSize(1);
  SmallVector<int64_t> withClassAxis(tt.getShape());
  withClassAxis.insert(withClassAxis.begin() + 1, 1);
  targetSizes.insert(targetSizes.begin() + 1, DimExpr::constant(1));
  Value t = n.reshape(target, withClassAxis, targetSizes);
  Value ramp = classRamp(n, classes, lt.getRank(), tt.getElementType());
  Value mask = CmpOp::create(n.b, n.loc, CmpPredicate::eq, t, ramp);
  auto maskTy = cast<RankedTensorType>(mask.getType());
  Value maskF = CastOp::create(n.b, n.loc, withElementType(maskTy, elt), mask);
  KILN_TRY(masked, n.binary<MulOp>(logp, maskF));
  Value picked = ReduceSumOp::create(n.b, n.loc, masked,
                                     n.b.getDenseI64ArrayAttr({1}), UnitAttr());
  // Per-element weights: the class weight, zero where the target is ignored.
  auto perElement = withElementType(tt, elt);
  Value w;
  if (weight) {
    auto wt = cast<RankedTensorType>(weight.getType());
    if (wt.getRank() != 1 || wt.getDimSize(0) != classes ||
        wt.getElementType() != elt) {
      n.error() << "expects class weights of shape [" << classes << "], found "
                << wt;
      return failure();
    }
    w = GatherOp::create(n.b, n.loc, weight, target, 0);
  }
  if (ignoreIndex) {
    Value ignore =
        n.scalar(tt.getElementType(), static_cast<double>(*ignoreIndex));
    Value keep = CmpOp::create(n.b, n.loc, CmpPredicate::ne, target, ignore);
    Value keepF = CastOp::create(n.b, n.loc, perElement, keep);
    if (w) {
      KILN_TRY(product, n.binary<MulOp>(w, keepF));
      w = product;
    } else {
      w = keepF;
    }
  }
  Value loss = NegOp::create(n.b, n.loc, picked);
  if (w) {
    KILN_TRY(weighted, n.binary<MulOp>(loss, w));
    loss = weighted;
  }
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < tt.getRank(); ++d)
    all.push_back(d);
  Value sum = ReduceSumOp::create(n.b, n.loc, loss,
                                  n.b.getDenseI64ArrayAttr(all), UnitAttr());
  if (reduction == "sum")
    return sum;
  if (!w)
    return Value(ReduceMeanOp::create(
        n.b, n.loc, loss, n.b.getDenseI64ArrayAttr(all), UnitAttr()));
  Value total = ReduceSumOp::create(n.b, n.loc, w,
                                    n.b.getDenseI64ArrayAttr(all), UnitAttr());
  return n.binary<DivOp>(sum, total);
}

LogicalResult importNLL(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(reduction, n.getString("reduction", "mean"));
  KILN_TRY(ignore, n.getInt("ignore_index"));
  KILN_TRY(loss,
           nllLoss(n, n.input(0), n.input(1), n.input(2), ignore, reduction));
  n.setResult(0, loss);
  return success();
}

LogicalResult importSoftmaxCrossEntropy(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(reduction, n.getString("reduction", "mean"));
  KILN_TRY(ignore, n.getInt("ignore_index"));
  auto st = n.inputType(0);
  if (!isa<FloatType>(st.getElementType()) || st.getRank() < 2) {
    n.error() << "expects float scores of rank 2 or more, found " << st;
    return failure();
  }
  // log_softmax over the class axis, max-shifted.
  Value x = n.input(0);
  auto axis = n.b.getDenseI64ArrayAttr({1});
  Value max = ReduceMaxOp::create(n.b, n.loc, x, axis, n.b.getUnitAttr());
  Value shifted = SubOp::create(n.b, n.loc, x, max);
  Value sum = ReduceSumOp::create(
      n.b, n.loc, ExpOp::create(n.b, n.loc, shifted), axis, n.b.getUnitAttr());
  Value logp =
      SubOp::create(n.b, n.loc, shifted, LogOp::create(n.b, n.loc, sum));
  KILN_TRY(loss, nllLoss(n, logp, n.input(1), n.input(2), ignore, reduction));
  n.setResult(0, loss);
  n.setResult(1, logp);
  return success();
}

} // namespace

void kiln::import::registerPadLossHandlers(HandlerMap &handlers) {
  handlers["Pad"] = importPad;
  handlers["NegativeLogLikelihoodLoss"] = importNLL;
  handlers["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropy;
}
