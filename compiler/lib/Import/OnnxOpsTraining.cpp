//===- OnnxOpsTraining.cpp - ai.onnx.preview.training ---------------------===//
//
// The optimizers (Momentum, Adagrad, Adam) are elementwise formulas over the
// parameters, their gradients and their moments, with a learning rate R and
// a step count T given as scalars at run time; each becomes the core ops of
// its formula, with T's cases (no momentum coefficient and no bias
// correction at T = 0) as selects. The terms shared with kilnc train's
// optimizers (moments, velocity, L2, bias correction) come from
// OptimizerFormulas.h; what is ONNX's own (T, Nesterov, where Adam adds
// epsilon, the post-update decay) is written here. Gradient differentiates the
// graph built so far with the same algorithm as kiln-generate-gradients.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/Passes/Differentiate.h"
#include "kiln/Passes/OptimizerFormulas.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// The scalars every optimizer starts with: R (learning rate) and T (the
/// update count, i64), both rank 0.
LogicalResult checkRateAndCount(NodeImporter &n) {
  RankedTensorType r = n.inputType(0), t = n.inputType(1);
  if (r.getRank() != 0 || !isa<FloatType>(r.getElementType())) {
    n.error() << "input 0 (R, the learning rate) must be a float scalar, "
                 "found "
              << r;
    return failure();
  }
  if (t.getRank() != 0 || !t.getElementType().isInteger(64)) {
    n.error() << "input 1 (T, the update count) must be an i64 scalar, found "
              << t;
    return failure();
  }
  return success();
}

/// Splits the inputs after R and T into `groups` groups of n tensors each
/// (X..., G..., V..., H...), checking every group member has the type of
/// its X.
FailureOr<SmallVector<SmallVector<Value>>>
tensorGroups(NodeImporter &n, unsigned groups, ArrayRef<StringRef> names) {
  size_t rest = n.numInputs() < 2 ? 0 : n.numInputs() - 2;
  if (n.numInputs() < 2 + groups || rest % groups != 0) {
    std::string lists;
    for (auto [i, name] : llvm::enumerate(names))
      lists += (i ? ", " : "") + name.str();
    n.error() << "expects R, T and " << groups
              << " equally long lists of tensors (" << lists << "), found "
              << n.numInputs() << " inputs";
    return failure();
  }
  size_t count = rest / groups;
  if (n.numOutputs() != (groups - 1) * count) {
    n.error() << "expects " << (groups - 1) * count << " outputs for " << count
              << " tensors to update, found " << n.numOutputs();
    return failure();
  }
  SmallVector<SmallVector<Value>> out(groups);
  for (unsigned g = 0; g < groups; ++g)
    for (size_t i = 0; i < count; ++i) {
      size_t index = 2 + g * count + i;
      if (!n.hasInput(index)) {
        n.error() << "input " << index << " (" << names[g] << i + 1
                  << ") is required but empty";
        return failure();
      }
      RankedTensorType x = n.inputType(2 + i), v = n.inputType(index);
      if (!isa<FloatType>(x.getElementType()) ||
          isNarrowType(x.getElementType())) {
        n.error() << "input " << 2 + i << " (X" << i + 1
                  << ") must hold f32 or f64, found " << x;
        return failure();
      }
      if (v != x) {
        n.error() << "input " << index << " (" << names[g] << i + 1
                  << ") must have the type of X" << i + 1 << ", " << x
                  << ", found " << v;
        return failure();
      }
      out[g].push_back(n.input(index));
    }
  return out;
}

/// Reads a float attribute that has no default.
FailureOr<double> requiredFloat(NodeImporter &n, StringRef name) {
  KILN_TRY(value, n.getFloat(name));
  if (!value) {
    n.error() << "attribute '" << name << "' is required";
    return failure();
  }
  return double(*value);
}

/// What the formulas share: R and T in X's element type, and T > 0.
struct StepScalars {
  Value rate;     ///< R, as X's element type
  Value count;    ///< T, as X's element type
  Value positive; ///< T > 0 (i1 scalar)
};

StepScalars stepScalars(NodeImporter &n, Type elt) {
  StepScalars s;
  auto scalarTy = RankedTensorType::get({}, elt);
  s.rate = n.input(0);
  if (n.inputType(0).getElementType() != elt)
    s.rate = CastOp::create(n.b, n.loc, scalarTy, s.rate);
  s.count = CastOp::create(n.b, n.loc, scalarTy, n.input(1));
  Value zero = n.scalar(n.b.getI64Type(), 0);
  s.positive = CmpOp::create(n.b, n.loc, CmpPredicate::gt, n.input(1), zero);
  return s;
}

// Momentum: V' = alpha V + beta' G, X' = X - R V' (standard) or
// X - R (G + alpha V') (nesterov), with beta' = beta, or 1 at T = 0.
LogicalResult importMomentum(NodeImporter &n) {
  KILN_TRY(alpha, requiredFloat(n, "alpha"));
  KILN_TRY(beta, requiredFloat(n, "beta"));
  KILN_TRY(norm, requiredFloat(n, "norm_coefficient"));
  KILN_TRY(mode, n.getString("mode", ""));
  if (mode != "standard" && mode != "nesterov") {
    n.error() << "attribute 'mode' must be 'standard' or 'nesterov', found '"
              << mode << "'";
    return failure();
  }
  if (failed(checkRateAndCount(n)))
    return failure();
  KILN_TRY(groups, tensorGroups(n, 3, {"X", "G", "V"}));
  size_t count = groups[0].size();
  for (size_t i = 0; i < count; ++i) {
    Value x = groups[0][i], g = groups[1][i], v = groups[2][i];
    Type elt = cast<RankedTensorType>(x.getType()).getElementType();
    StepScalars s = stepScalars(n, elt);
    OptimizerTerms terms{n.b, n.loc};
    Value gr = terms.regularized(x, g, norm);
    Value betaValue = n.scalar(elt, beta);
    Value one = n.scalar(elt, 1.0);
    Value betaAdjusted =
        SelectOp::create(n.b, n.loc, s.positive, betaValue, one);
    Value vNew = terms.velocity(v, gr, alpha, betaAdjusted);
    Value step = vNew;
    if (mode == "nesterov") {
      Value ahead = terms.scale(vNew, alpha);
      step = AddOp::create(n.b, n.loc, gr, ahead);
    }
    Value delta = MulOp::create(n.b, n.loc, s.rate, step);
    n.setResult(i, SubOp::create(n.b, n.loc, x, delta));
    n.setResult(count + i, vNew);
  }
  return success();
}

// Adagrad: r = R / (1 + T decay), H' = H + G^2, X' = X - r G / (sqrt(H') +
// eps).
LogicalResult importAdagrad(NodeImporter &n) {
  KILN_TRY(decay, n.getFloat("decay_factor"));
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  KILN_TRY(norm, n.getFloat("norm_coefficient"));
  if (failed(checkRateAndCount(n)))
    return failure();
  KILN_TRY(groups, tensorGroups(n, 3, {"X", "G", "H"}));
  size_t count = groups[0].size();
  for (size_t i = 0; i < count; ++i) {
    Value x = groups[0][i], g = groups[1][i], h = groups[2][i];
    Type elt = cast<RankedTensorType>(x.getType()).getElementType();
    StepScalars s = stepScalars(n, elt);
    Value decayed =
        MulOp::create(n.b, n.loc, s.count, n.scalar(elt, decay.value_or(0.0f)));
    Value denominator = AddOp::create(n.b, n.loc, n.scalar(elt, 1.0), decayed);
    Value rate = DivOp::create(n.b, n.loc, s.rate, denominator);
    Value gr =
        OptimizerTerms{n.b, n.loc}.regularized(x, g, norm.value_or(0.0f));
    Value squared = MulOp::create(n.b, n.loc, gr, gr);
    Value hNew = AddOp::create(n.b, n.loc, h, squared);
    Value root = SqrtOp::create(n.b, n.loc, hNew);
    Value scale =
        AddOp::create(n.b, n.loc, root, n.scalar(elt, epsilon.value_or(1e-6f)));
    Value scaledG = MulOp::create(n.b, n.loc, rate, gr);
    Value delta = DivOp::create(n.b, n.loc, scaledG, scale);
    n.setResult(i, SubOp::create(n.b, n.loc, x, delta));
    n.setResult(count + i, hNew);
  }
  return success();
}

// Adam: V' = alpha V + (1 - alpha) G, H' = beta H + (1 - beta) G^2,
// r = R sqrt(1 - beta^T) / (1 - alpha^T) (R at T = 0),
// X' = (1 - post) (X - r V' / (sqrt(H') + eps)).
LogicalResult importAdam(NodeImporter &n) {
  KILN_TRY(alphaAttr, n.getFloat("alpha"));
  KILN_TRY(betaAttr, n.getFloat("beta"));
  KILN_TRY(epsilon, n.getFloat("epsilon"));
  KILN_TRY(norm, n.getFloat("norm_coefficient"));
  KILN_TRY(post, n.getFloat("norm_coefficient_post"));
  double alpha = alphaAttr.value_or(0.9f), beta = betaAttr.value_or(0.999f);
  if (failed(checkRateAndCount(n)))
    return failure();
  KILN_TRY(groups, tensorGroups(n, 4, {"X", "G", "V", "H"}));
  size_t count = groups[0].size();
  for (size_t i = 0; i < count; ++i) {
    Value x = groups[0][i], g = groups[1][i], v = groups[2][i],
          h = groups[3][i];
    Type elt = cast<RankedTensorType>(x.getType()).getElementType();
    StepScalars s = stepScalars(n, elt);
    OptimizerTerms terms{n.b, n.loc};
    Value gr = terms.regularized(x, g, norm.value_or(0.0f));
    Value vNew = terms.movingAverage(v, gr, alpha);
    Value hNew =
        terms.movingAverage(h, MulOp::create(n.b, n.loc, gr, gr), beta);
    Value root = SqrtOp::create(n.b, n.loc, hNew);
    Value scale =
        AddOp::create(n.b, n.loc, root, n.scalar(elt, epsilon.value_or(1e-6f)));
    // Bias correction, from T = 1 on; unlike kilnc train's Adam, epsilon
    // is added to sqrt(H') before the correction scales the rate.
    Value betaRest = terms.biasCorrection(beta, s.count);
    Value alphaRest = terms.biasCorrection(alpha, s.count);
    Value root2 = SqrtOp::create(n.b, n.loc, betaRest);
    Value corrected = MulOp::create(n.b, n.loc, s.rate, root2);
    Value correctedRate = DivOp::create(n.b, n.loc, corrected, alphaRest);
    Value rate =
        SelectOp::create(n.b, n.loc, s.positive, correctedRate, s.rate);
    Value ratio = DivOp::create(n.b, n.loc, vNew, scale);
    Value delta = MulOp::create(n.b, n.loc, rate, ratio);
    Value xNew = SubOp::create(n.b, n.loc, x, delta);
    if (post && *post != 0.0f)
      xNew = MulOp::create(n.b, n.loc, n.scalar(elt, 1.0 - *post), xNew);
    n.setResult(i, xNew);
    n.setResult(count + i, vNew);
    n.setResult(2 * count + i, hNew);
  }
  return success();
}

// Gradient: the gradients of the value named by `y` with respect to the
// values named by `xs` (the node's inputs are those xs, then the zs), seeded
// with ones: for a non-scalar y, the gradient of the sum of its elements.
LogicalResult importGradient(NodeImporter &n) {
  KILN_TRY(xsAttr, n.getStrings("xs"));
  KILN_TRY(zsAttr, n.getStrings("zs"));
  KILN_TRY(yName, n.getString("y", ""));
  if (!xsAttr || xsAttr->empty()) {
    n.error() << "attribute 'xs' is required and must name at least one value";
    return failure();
  }
  if (yName.empty()) {
    n.error() << "attribute 'y' is required";
    return failure();
  }
  size_t numZs = zsAttr ? zsAttr->size() : 0;
  if (n.numInputs() != xsAttr->size() + numZs) {
    n.error() << "expects one input per name in 'xs' and 'zs' ("
              << xsAttr->size() + numZs << "), found " << n.numInputs();
    return failure();
  }
  if (n.numOutputs() != xsAttr->size()) {
    n.error() << "expects one output per name in 'xs' (" << xsAttr->size()
              << "), found " << n.numOutputs();
    return failure();
  }
  Value y = n.lookupValue(yName);
  if (!y) {
    n.error() << "y '" << yName
              << "' is not a graph input, an initializer or the output of an "
                 "earlier node";
    return failure();
  }
  if (!isDifferentiable(y)) {
    n.error() << "y '" << yName << "' must hold floats, found " << y.getType();
    return failure();
  }
  SmallVector<Value> xs;
  for (auto [i, name] : llvm::enumerate(*xsAttr)) {
    Value x = n.lookupValue(name);
    if (!x || !n.hasInput(i) || x != n.input(i)) {
      n.error() << "input " << i << " must be the value named by xs[" << i
                << "], '" << name << "'";
      return failure();
    }
    if (!isDifferentiable(x)) {
      n.error() << "xs[" << i << "] '" << name << "' must hold floats, found "
                << x.getType();
      return failure();
    }
    xs.push_back(x);
  }
  auto yType = cast<RankedTensorType>(y.getType());
  Attribute one = n.b.getFloatAttr(yType.getElementType(), 1.0);
  Value seed =
      ConstantOp::create(n.b, n.loc, yType, DenseElementsAttr::get(yType, one));
  Block *block = n.b.getInsertionBlock();
  SmallVector<Value> gradients;
  if (failed(buildGradients(
          n.b, llvm::make_range(block->begin(), n.b.getInsertionPoint()), y,
          seed, xs, "'" + yName + "'", gradients)))
    return failure();
  for (auto [i, g] : llvm::enumerate(gradients)) {
    if (!g) {
      auto type = cast<RankedTensorType>(xs[i].getType());
      Attribute zero = n.b.getFloatAttr(type.getElementType(), 0.0);
      g = ConstantOp::create(n.b, n.loc, type,
                             DenseElementsAttr::get(type, zero));
    }
    n.setResult(i, g);
  }
  return success();
}

} // namespace

const HandlerMap &kiln::import::trainingHandlers() {
  static const HandlerMap handlers = [] {
    HandlerMap map;
    map["Momentum"] = importMomentum;
    map["Adagrad"] = importAdagrad;
    map["Adam"] = importAdam;
    map["Gradient"] = importGradient;
    return map;
  }();
  return handlers;
}
