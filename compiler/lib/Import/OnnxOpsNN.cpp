//===- OnnxOpsNN.cpp - convolution, pooling, normalization ----------------===//
//
// The normalization ops decompose into reductions and elementwise ops: a
// mean, the mean of squared deviations, a square root and a division, then
// the affine part (scale, bias) broadcast along the channel or normalized
// axes. Nothing here needs a fused kernel; the fusion passes see ordinary
// reductions. Where ONNX computes in a wider "stash" type (LayerNorm,
// GroupNorm, RMSNorm), the statistics are computed in it and the normalized
// value is cast back before the affine part, as the ops' function bodies do.
// BatchNormalization in training mode (opset 14 and later) normalizes with
// the batch's own statistics and also yields the updated running ones;
// before opset 14, training mode is refused.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include <numeric>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Fails unless input 0 (X) has a float element type and at least `minRank`
/// dimensions.
LogicalResult expectFloatInput(NodeImporter &n, int64_t minRank) {
  auto t = n.inputType(0);
  if (!isa<FloatType>(t.getElementType())) {
    n.error() << "element type " << t.getElementType() << " is not supported";
    return failure();
  }
  if (t.getRank() < minRank) {
    n.error() << "expects an input of rank " << minRank << " or more, found "
              << t;
    return failure();
  }
  return success();
}

/// `v` converted to element type `elt` (no op when it already has it).
Value castTo(NodeImporter &n, Value v, Type elt) {
  auto t = tensorType(v);
  if (t.getElementType() == elt)
    return v;
  return CastOp::create(n.b, n.loc, withElementType(t, elt), v);
}

/// Input `i`, a vector of `size` values (`what` names it), cast to `elt` and
/// reshaped to [size, 1, ..., 1] of rank `rank` so that it broadcasts along
/// dim 1 of a tensor of rank `rank + 1`.
FailureOr<Value> perChannel(NodeImporter &n, size_t i, StringRef what,
                            int64_t size, int64_t rank, Type elt) {
  auto t = n.inputType(i);
  if (t.getRank() != 1 || t.getDimSize(0) != size) {
    n.error() << what << " must have shape [" << size << "], found " << t;
    return failure();
  }
  if (!isa<FloatType>(t.getElementType())) {
    n.error() << what << " must be float, found " << t.getElementType();
    return failure();
  }
  SmallVector<int64_t> shape(rank, 1);
  shape[0] = size;
  return n.reshape(castTo(n, n.input(i), elt), shape);
}

/// The type statistics are computed in: the stash_type attribute (a float
/// ONNX data type, default FLOAT) where the op has one, else `elt` itself.
FailureOr<Type> stashType(NodeImporter &n, Type elt, bool hasStashType) {
  if (!hasStashType)
    return elt;
  KILN_TRY(attr, n.getInt("stash_type"));
  Type stash =
      elementTypeOf(n.b.getContext(), attr.value_or(onnx::TensorProto::FLOAT));
  if (!stash || !isa<FloatType>(stash)) {
    n.error() << "stash_type " << attr.value_or(onnx::TensorProto::FLOAT)
              << " is not a supported float type";
    return failure();
  }
  return stash;
}

/// x - mean(x) and the biased variance over `axes` (kept as size-1 dims).
struct Moments {
  Value centered, mean, variance;
};

Moments moments(NodeImporter &n, Value x, ArrayRef<int64_t> axes) {
  auto axesAttr = n.b.getDenseI64ArrayAttr(axes);
  Value mean = ReduceMeanOp::create(n.b, n.loc, x, axesAttr, n.b.getUnitAttr());
  Value centered = SubOp::create(n.b, n.loc, x, mean);
  Value squared = MulOp::create(n.b, n.loc, centered, centered);
  Value variance =
      ReduceMeanOp::create(n.b, n.loc, squared, axesAttr, n.b.getUnitAttr());
  return {centered, mean, variance};
}

/// sqrt(variance + epsilon).
Value stdDev(NodeImporter &n, Value variance, double epsilon) {
  Type elt = tensorType(variance).getElementType();
  Value shifted = AddOp::create(n.b, n.loc, variance, n.scalar(elt, epsilon));
  return SqrtOp::create(n.b, n.loc, shifted);
}

/// y * scale (+ bias), where both must broadcast to y's shape (they may not
/// grow it).
FailureOr<Value> affine(NodeImporter &n, Value y, Value scale, Value bias) {
  auto yTy = tensorType(y);
  for (auto [what, v] : {std::pair<const char *, Value>{"scale", scale},
                         std::pair<const char *, Value>{"bias", bias}}) {
    if (!v)
      continue;
    auto shape = broadcastShapes(yTy.getShape(), tensorType(v).getShape());
    if (!shape || ArrayRef<int64_t>(*shape) != yTy.getShape()) {
      n.error() << what << " of type " << v.getType()
                << " does not broadcast to the input's shape " << yTy;
      return failure();
    }
  }
  KILN_TRY(scaled, n.binary<MulOp>(y, scale));
  if (!bias)
    return scaled;
  return n.binary<AddOp>(scaled, bias);
}

/// The axes [from, rank).
SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  SmallVector<int64_t> axes(rank - from);
  std::iota(axes.begin(), axes.end(), from);
  return axes;
}

//===----------------------------------------------------------------------===//
// BatchNormalization, InstanceNormalization: per-channel statistics
//===----------------------------------------------------------------------===//

/// Training mode: y = (x - mean) / sqrt(var + epsilon) * scale + B with the
/// batch mean and biased variance over every axis but the channels (what a
/// gradient flows through), plus the running statistics updated with
/// `momentum` as outputs 1 and 2, in the type of the given ones.
LogicalResult importBatchNormTraining(NodeImporter &n, double epsilon,
                                      double momentum) {
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  int64_t channels = xTy.getDimSize(1), rank = xTy.getRank();
  KILN_TRY(scale, perChannel(n, 1, "scale", channels, rank - 1, elt));
  KILN_TRY(bias, perChannel(n, 2, "B", channels, rank - 1, elt));
  SmallVector<int64_t> axes = {0};
  llvm::append_range(axes, trailingAxes(2, rank));
  Moments m = moments(n, n.input(0), axes);
  Value y =
      DivOp::create(n.b, n.loc, m.centered, stdDev(n, m.variance, epsilon));
  KILN_TRY(result, affine(n, y, scale, bias));
  n.setResult(0, result);
  static const char *const kNames[] = {"input_mean", "input_var"};
  for (size_t i = 1; i < 3; ++i) {
    if (!n.outputUsed(i))
      continue;
    KILN_TRY(running, perChannel(n, 2 + i, kNames[i - 1], channels, 1, elt));
    Value batch = n.reshape(i == 1 ? m.mean : m.variance, {channels});
    Value kept = MulOp::create(n.b, n.loc, running, n.scalar(elt, momentum));
    Value added =
        MulOp::create(n.b, n.loc, batch, n.scalar(elt, 1.0 - momentum));
    Value updated = AddOp::create(n.b, n.loc, kept, added);
    n.setResult(i, castTo(n, updated, n.inputType(2 + i).getElementType()));
  }
  return success();
}

LogicalResult importBatchNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(5, 5)) || failed(expectFloatInput(n, 2)))
    return failure();
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  // Momentum only updates running statistics (training mode);
  // consumed_inputs (opset 1) described in-place updates of them.
  KILN_TRY(momentum, n.getFloat("momentum"));
  if (n.opset < 6)
    n.ignoreAttribute("consumed_inputs");
  if (n.opset < 7) {
    // Before opset 7 the mode is an attribute, and training the default.
    KILN_TRY(isTest, n.getInt("is_test"));
    if (!isTest.value_or(0)) {
      n.error() << "training mode (is_test = 0, the default before opset 7) "
                   "is not supported";
      return failure();
    }
  }
  bool spatial = true;
  if (n.opset < 9) {
    KILN_TRY(spatialAttr, n.getInt("spatial"));
    spatial = spatialAttr.value_or(1) != 0;
  }
  if (n.opset >= 14) {
    KILN_TRY(training, n.getInt("training_mode"));
    if (training.value_or(0))
      return importBatchNormTraining(n, epsilon.value_or(1e-5f),
                                     momentum.value_or(0.9f));
  }
  for (size_t i = 1; i < n.numOutputs(); ++i)
    if (n.outputUsed(i)) {
      n.error() << "output " << i
                << " (a training statistic) is not supported; only Y is "
                   "computed in inference mode";
      return failure();
    }
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  int64_t channels = xTy.getDimSize(1), rank = xTy.getRank();
  static const char *const kNames[] = {"scale", "B", "mean", "var"};
  SmallVector<Value, 4> params;
  for (size_t i = 1; i < 5; ++i) {
    if (!spatial) {
      // spatial = 0 (opset 7): statistics per element of X[1:].
      auto t = n.inputType(i);
      if (t.getShape() != xTy.getShape().drop_front()) {
        n.error() << kNames[i - 1] << " must have the shape of X without its "
                  << "first dim when spatial = 0, found " << t;
        return failure();
      }
      params.push_back(castTo(n, n.input(i), elt));
      continue;
    }
    KILN_TRY(p, perChannel(n, i, kNames[i - 1], channels, rank - 1, elt));
    params.push_back(p);
  }
  // y = (x - mean) * (scale / sqrt(var + epsilon)) + B; the factor is
  // computed on the small per-channel vectors.
  Value factor = DivOp::create(n.b, n.loc, params[0],
                               stdDev(n, params[3], epsilon.value_or(1e-5f)));
  Value centered = SubOp::create(n.b, n.loc, n.input(0), params[2]);
  Value scaled = MulOp::create(n.b, n.loc, centered, factor);
  n.setResult(0, AddOp::create(n.b, n.loc, scaled, params[1]));
  return success();
}

LogicalResult importInstanceNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(expectFloatInput(n, 2)))
    return failure();
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  if (n.opset < 6)
    n.ignoreAttribute("consumed_inputs");
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  int64_t channels = xTy.getDimSize(1), rank = xTy.getRank();
  KILN_TRY(scale, perChannel(n, 1, "scale", channels, rank - 1, elt));
  KILN_TRY(bias, perChannel(n, 2, "B", channels, rank - 1, elt));
  Moments m = moments(n, n.input(0), trailingAxes(2, rank));
  Value y = DivOp::create(n.b, n.loc, m.centered,
                          stdDev(n, m.variance, epsilon.value_or(1e-5f)));
  KILN_TRY(result, affine(n, y, scale, bias));
  n.setResult(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormalization, RMSNormalization: statistics over the trailing axes
//===----------------------------------------------------------------------===//

LogicalResult importLayerNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) || failed(expectFloatInput(n, 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  KILN_TRY(stash, stashType(n, elt, /*hasStashType=*/true));
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(-1), xTy.getRank()));
  Moments m = moments(n, castTo(n, n.input(0), stash),
                      trailingAxes(axis, xTy.getRank()));
  Value sd = stdDev(n, m.variance, epsilon.value_or(1e-5f));
  Value y = castTo(n, DivOp::create(n.b, n.loc, m.centered, sd), elt);
  KILN_TRY(result, affine(n, y, n.input(1), n.input(2)));
  n.setResult(0, result);
  // Mean and InvStdDev keep the normalized axes as size-1 dims, in the
  // stash type.
  if (n.outputUsed(1))
    n.setResult(1, m.mean);
  if (n.outputUsed(2))
    n.setResult(2, ReciprocalOp::create(n.b, n.loc, sd));
  return success();
}

LogicalResult importRMSNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) || failed(expectFloatInput(n, 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  KILN_TRY(stash, stashType(n, elt, /*hasStashType=*/true));
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(-1), xTy.getRank()));
  Value x = castTo(n, n.input(0), stash);
  Value squared = MulOp::create(n.b, n.loc, x, x);
  Value meanSquare = ReduceMeanOp::create(
      n.b, n.loc, squared,
      n.b.getDenseI64ArrayAttr(trailingAxes(axis, xTy.getRank())),
      n.b.getUnitAttr());
  Value rms = stdDev(n, meanSquare, epsilon.value_or(1e-5f));
  Value y = castTo(n, DivOp::create(n.b, n.loc, x, rms), elt);
  KILN_TRY(result, affine(n, y, n.input(1), Value()));
  n.setResult(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// GroupNormalization: statistics per group of channels
//===----------------------------------------------------------------------===//

LogicalResult importGroupNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)) || failed(expectFloatInput(n, 2)))
    return failure();
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  KILN_TRY(groupsAttr, n.getInt("num_groups"));
  auto xTy = n.inputType(0);
  Type elt = xTy.getElementType();
  // Opset 21 made scale and bias per channel (opset 18: per group) and
  // added stash_type.
  bool perGroupAffine = n.opset < 21;
  KILN_TRY(stash, stashType(n, elt, /*hasStashType=*/!perGroupAffine));
  int64_t batch = xTy.getDimSize(0), channels = xTy.getDimSize(1);
  if (!groupsAttr || *groupsAttr <= 0 || channels % *groupsAttr != 0) {
    auto diag = n.error() << "num_groups must be a positive divisor of the "
                          << channels << " channels";
    if (groupsAttr)
      diag << ", found " << *groupsAttr;
    return failure();
  }
  int64_t groups = *groupsAttr;
  int64_t perGroup =
      xTy.getNumElements() / std::max<int64_t>(batch * groups, 1);
  int64_t affineSize = perGroupAffine ? groups : channels;
  int64_t affineRank = perGroupAffine ? 2 : xTy.getRank() - 1;
  KILN_TRY(scale, perChannel(n, 1, "scale", affineSize, affineRank, elt));
  KILN_TRY(bias, perChannel(n, 2, "bias", affineSize, affineRank, elt));

  // [N, C, ...] -> [N, G, C/G * ...]: each group's statistics along dim 2.
  Value grouped = n.reshape(n.input(0), {batch, groups, perGroup});
  Moments m = moments(n, castTo(n, grouped, stash), {2});
  Value sd = stdDev(n, m.variance, epsilon.value_or(1e-5f));
  Value y = castTo(n, DivOp::create(n.b, n.loc, m.centered, sd), elt);
  if (perGroupAffine) {
    KILN_TRY(result, affine(n, y, scale, bias));
    n.setResult(0, n.reshape(result, xTy.getShape()));
    return success();
  }
  KILN_TRY(result, affine(n, n.reshape(y, xTy.getShape()), scale, bias));
  n.setResult(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// LRN
//===----------------------------------------------------------------------===//

/// y = x / (bias + alpha / size * sum of x^2 over the channels
/// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta, the window
/// cut at the edges: the squares padded with zeros along the channels and
/// the window's `size` shifted slices added.
LogicalResult importLRN(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(expectFloatInput(n, 3)))
    return failure();
  KILN_TRY(sizeAttr, n.getInt("size"));
  if (!sizeAttr || *sizeAttr < 1) {
    n.error() << "expects a size attribute of at least 1";
    return failure();
  }
  KILN_TRY(alphaAttr, n.getFloat("alpha"));
  KILN_TRY(betaAttr, n.getFloat("beta"));
  KILN_TRY(biasAttr, n.getFloat("bias"));
  int64_t size = *sizeAttr;
  double alpha = alphaAttr.value_or(1e-4), beta = betaAttr.value_or(0.75),
         bias = biasAttr.value_or(1.0);
  Value x = n.input(0);
  auto t = n.inputType(0);
  Type elt = t.getElementType();
  int64_t channels = t.getDimSize(1), lo = (size - 1) / 2, hi = size - 1 - lo;
  Value squares = MulOp::create(n.b, n.loc, x, x);
  SmallVector<Value> pieces;
  auto zeros = [&](int64_t count) {
    SmallVector<int64_t> shape(t.getShape());
    shape[1] = count;
    return Value(BroadcastOp::create(
        n.b, n.loc, RankedTensorType::get(shape, elt), n.scalar(elt, 0)));
  };
  if (lo > 0)
    pieces.push_back(zeros(lo));
  pieces.push_back(squares);
  if (hi > 0)
    pieces.push_back(zeros(hi));
  Value padded = pieces.size() == 1
                     ? squares
                     : Value(ConcatOp::create(n.b, n.loc, pieces, 1));
  Value sum;
  for (int64_t k = 0; k < size; ++k) {
    SmallVector<int64_t> shape(t.getShape()), starts(t.getRank(), 0),
        strides(t.getRank(), 1);
    starts[1] = k;
    shape[1] = channels;
    Value window = SliceOp::create(
        n.b, n.loc, RankedTensorType::get(shape, elt), padded,
        n.b.getDenseI64ArrayAttr(starts), n.b.getDenseI64ArrayAttr(strides));
    sum = sum ? Value(AddOp::create(n.b, n.loc, sum, window)) : window;
  }
  Value scaled = MulOp::create(n.b, n.loc, sum, n.scalar(elt, alpha / size));
  Value base = AddOp::create(n.b, n.loc, scaled, n.scalar(elt, bias));
  Value denom = PowOp::create(n.b, n.loc, base, n.scalar(elt, beta));
  n.setResult(0, DivOp::create(n.b, n.loc, x, denom));
  return success();
}

//===----------------------------------------------------------------------===//
// LpNormalization, MeanVarianceNormalization
//===----------------------------------------------------------------------===//

LogicalResult importLpNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(expectFloatInput(n, 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(pAttr, n.getInt("p"));
  int64_t p = pAttr.value_or(2);
  if (p != 1 && p != 2) {
    n.error() << "p must be 1 or 2, found " << p;
    return failure();
  }
  Value x = n.input(0);
  KILN_TRY(axis,
           n.normalizeAxis(axisAttr.value_or(-1), n.inputType(0).getRank()));
  auto axes = n.b.getDenseI64ArrayAttr({axis});
  Value norm;
  if (p == 1) {
    norm = ReduceSumOp::create(n.b, n.loc, AbsOp::create(n.b, n.loc, x), axes,
                               n.b.getUnitAttr());
  } else {
    Value squares = MulOp::create(n.b, n.loc, x, x);
    norm = SqrtOp::create(
        n.b, n.loc,
        ReduceSumOp::create(n.b, n.loc, squares, axes, n.b.getUnitAttr()));
  }
  // A zero norm gives 0, not 0/0 (ONNX specifies this since onnx/onnx#7618):
  // the norm is zero only where x is, so dividing by 1 there keeps x.
  Type elt = n.inputType(0).getElementType();
  Value isZero =
      CmpOp::create(n.b, n.loc, CmpPredicate::eq, norm, n.scalar(elt, 0));
  norm = SelectOp::create(n.b, n.loc, isZero, n.scalar(elt, 1), norm);
  n.setResult(0, DivOp::create(n.b, n.loc, x, norm));
  return success();
}

LogicalResult importMeanVarianceNormalization(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(expectFloatInput(n, 1)))
    return failure();
  KILN_TRY(axesAttr, n.getInts("axes"));
  int64_t rank = n.inputType(0).getRank();
  SmallVector<int64_t> axes = axesAttr.value_or(SmallVector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    KILN_TRY(axis, n.normalizeAxis(a, rank));
    a = axis;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    n.error() << "axes repeat a dimension";
    return failure();
  }
  // (x - mean) / (sqrt(variance) + 1e-9). ONNX's function body computes the
  // variance as E[x^2] - E[x]^2; the mean of squared deviations is the same
  // value without the cancellation (which can make it negative).
  Moments m = moments(n, n.input(0), axes);
  Type elt = n.inputType(0).getElementType();
  Value sqrt = SqrtOp::create(n.b, n.loc, m.variance);
  Value sd = AddOp::create(n.b, n.loc, sqrt, n.scalar(elt, 1e-9));
  n.setResult(0, DivOp::create(n.b, n.loc, m.centered, sd));
  return success();
}

} // namespace

void kiln::import::registerNNHandlers(HandlerMap &handlers) {
  HandlerMap nn = {
      {"BatchNormalization", importBatchNormalization},
      {"InstanceNormalization", importInstanceNormalization},
      {"LayerNormalization", importLayerNormalization},
      {"RMSNormalization", importRMSNormalization},
      {"GroupNormalization", importGroupNormalization},
      {"LRN", importLRN},
      {"LpNormalization", importLpNormalization},
      {"MeanVarianceNormalization", importMeanVarianceNormalization},
  };
  for (auto &entry : nn)
    handlers[entry.getKey()] = entry.getValue();
}
