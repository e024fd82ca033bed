//===- OptimizerFormulas.cpp - the update rules' shared terms -------------===//
//
// Each term is the formula in its header comment, op for op; the operand
// order is the one both callers build (constants on the right), so the
// canonical forms of the two paths agree.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/OptimizerFormulas.h"

#include "kiln/IR/KilnOps.h"

using namespace mlir;
using namespace kiln;

static Type elementTypeOf(Value x) {
  return cast<RankedTensorType>(x.getType()).getElementType();
}

Value OptimizerTerms::scalar(Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr = b.getFloatAttr(elt, value);
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, attr));
}

Value OptimizerTerms::scale(Value x, double c) {
  Value k = scalar(elementTypeOf(x), c);
  return MulOp::create(b, loc, x, k);
}

Value OptimizerTerms::regularized(Value w, Value g, double c) {
  if (c == 0.0)
    return g;
  return AddOp::create(b, loc, g, scale(w, c));
}

Value OptimizerTerms::movingAverage(Value old, Value x, double decay) {
  Value kept = scale(old, decay);
  return AddOp::create(b, loc, kept, scale(x, 1.0 - decay));
}

Value OptimizerTerms::velocity(Value v, Value g, double mu, Value gScale) {
  Value kept = scale(v, mu);
  Value added = gScale ? MulOp::create(b, loc, g, gScale).getResult() : g;
  return AddOp::create(b, loc, kept, added);
}

Value OptimizerTerms::biasCorrection(double beta, Value t) {
  Type elt = elementTypeOf(t);
  Value power = PowOp::create(b, loc, scalar(elt, beta), t);
  return SubOp::create(b, loc, scalar(elt, 1.0), power);
}
