//===- KilnGradients.cpp - vector-Jacobian products of the core ops -------===//
//
// One rule per differentiable op, each a small function over core ops,
// attached to its op as an external model of GradientOpInterface. A rule gets
// the gradient `g` of the loss with respect to the op's result and returns
// the gradient with respect to each operand, of that operand's exact type:
// where the forward op broadcast an operand, the rule sums over the stretched
// axes (`unbroadcast`). Ops whose derivative is zero almost everywhere (floor,
// sign, ...) declare their operands non-differentiable instead of building
// zeros. Rules never check whether an operand's gradient is needed: the pass
// only asks for ops on a path from the parameters to the loss, and DCE removes
// what nobody reads.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnGradientInterface.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace kiln;

#include "kiln/IR/KilnGradientInterface.cpp.inc"

namespace {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A rank-0 constant of element type `elt`.
Value scalar(OpBuilder &b, Location loc, Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr = isa<FloatType>(elt)
                       ? Attribute(b.getFloatAttr(elt, value))
                       : Attribute(b.getIntegerAttr(elt, int64_t(value)));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, attr));
}

/// A splat of `type` (zeros by default): a constant, or a scalar constant
/// broadcast when `type` has symbolic sizes (decision 0027).
Value splat(OpBuilder &b, Location loc, RankedTensorType type,
            double value = 0.0) {
  Type elt = type.getElementType();
  if (hasSymbolicDims(type))
    return BroadcastOp::create(b, loc, type, scalar(b, loc, elt, value));
  Attribute attr = isa<FloatType>(elt)
                       ? Attribute(b.getFloatAttr(elt, value))
                       : Attribute(b.getIntegerAttr(elt, int64_t(value)));
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, attr));
}

Value scalarLike(OpBuilder &b, Location loc, Value like, double value) {
  return scalar(b, loc, typeOf(like).getElementType(), value);
}

/// The sizes of `v` reshaped to the bound shape `shape`, as expressions:
/// the axes are split into groups whose bound sizes multiply to the same
/// count (as a reshape's reassociation), and a group's symbolic sizes go to
/// its one target axis that is not 1. nullopt when that is ambiguous (a
/// symbolic size split over several axes): the rule then builds a static
/// type, and the gradient pass reports the mismatch at the op.
std::optional<SmallVector<DimExpr>> reshapedDims(Value v,
                                                 ArrayRef<int64_t> shape) {
  SmallVector<DimExpr> from = dimExprs(v.getType()), to;
  ArrayRef<int64_t> bounds = typeOf(v).getShape();
  if (!hasSymbolicDims(v.getType())) {
    for (int64_t size : shape)
      to.push_back(DimExpr::constant(size));
    return to;
  }
  size_t i = 0, j = 0;
  while (i < from.size() || j < shape.size()) {
    size_t i0 = i, j0 = j;
    int64_t countFrom = 1, countTo = 1;
    if (i < from.size())
      countFrom *= bounds[i++];
    if (j < shape.size())
      countTo *= shape[j++];
    while (countFrom != countTo) {
      if (countFrom < countTo && i < from.size())
        countFrom *= bounds[i++];
      else if (countTo < countFrom && j < shape.size())
        countTo *= shape[j++];
      else
        return std::nullopt;
    }
    DimExpr product = DimExpr::constant(1);
    bool symbolic = false;
    for (size_t a = i0; a < i; ++a) {
      product = product * from[a];
      symbolic |= !from[a].getConstant().has_value();
    }
    SmallVector<size_t> wide;
    for (size_t a = j0; a < j; ++a)
      if (shape[a] != 1)
        wide.push_back(a);
    if (symbolic && wide.size() != 1)
      return std::nullopt;
    for (size_t a = j0; a < j; ++a)
      to.push_back(symbolic && a == wide.front() ? product
                                                 : DimExpr::constant(shape[a]));
  }
  return to;
}

/// `v` reshaped to `type` (of `v`'s element type).
Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  type = withElementType(type, typeOf(v).getElementType());
  if (type == v.getType())
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  Type elt = typeOf(v).getElementType();
  std::optional<SmallVector<DimExpr>> sizes = reshapedDims(v, shape);
  return reshapeTo(b, loc, v,
                   sizes ? symbolicTensorType(shape, *sizes, elt)
                         : RankedTensorType::get(shape, elt));
}

/// Undoes numpy broadcasting: sums `grad` (of the broadcast shape) over the
/// axes where `target` was stretched or missing, then reshapes to `target`.
/// Sizes compare as expressions: only a constant 1 was stretched.
Value unbroadcast(OpBuilder &b, Location loc, Value grad,
                  RankedTensorType target) {
  RankedTensorType gradTy = typeOf(grad);
  SmallVector<DimExpr> from = dimExprs(gradTy), to = dimExprs(target);
  if (from == to)
    return grad;
  int64_t offset = gradTy.getRank() - target.getRank();
  DimExpr one = DimExpr::constant(1);
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < gradTy.getRank(); ++d)
    if (d < offset || (to[d - offset] == one && from[d] != one))
      axes.push_back(d);
  Value v = grad;
  if (!axes.empty())
    v = ReduceSumOp::create(b, loc, v, axes, /*keepdims=*/true);
  return reshapeTo(b, loc, v, target);
}

/// `grad` of a reduction's result brought back to the input's rank (the
/// reduced axes as size 1), ready to broadcast against the input.
Value keepDims(OpBuilder &b, Location loc, Value grad, Value input,
               ArrayRef<int64_t> axes) {
  SmallVector<DimExpr> sizes = dimExprs(input.getType());
  for (int64_t axis : axes)
    sizes[axis] = DimExpr::constant(1);
  return reshapeTo(
      b, loc, grad,
      symbolicTensorType(reducedShape(typeOf(input).getShape(), axes, true),
                         sizes, typeOf(grad).getElementType()));
}

Value broadcastTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  if (v.getType() == type)
    return v;
  return BroadcastOp::create(b, loc, type, v);
}

Value add(OpBuilder &b, Location loc, Value l, Value r) {
  return AddOp::create(b, loc, l, r);
}
Value sub(OpBuilder &b, Location loc, Value l, Value r) {
  return SubOp::create(b, loc, l, r);
}
Value mul(OpBuilder &b, Location loc, Value l, Value r) {
  return MulOp::create(b, loc, l, r);
}
Value div(OpBuilder &b, Location loc, Value l, Value r) {
  return DivOp::create(b, loc, l, r);
}
Value neg(OpBuilder &b, Location loc, Value v) {
  return NegOp::create(b, loc, v);
}
/// `g` where `cond` holds, zero elsewhere (broadcasting like kiln.select).
Value maskWhere(OpBuilder &b, Location loc, Value cond, Value g) {
  return SelectOp::create(b, loc, cond, g, scalarLike(b, loc, g, 0.0));
}
Value maskWhereNot(OpBuilder &b, Location loc, Value cond, Value g) {
  return SelectOp::create(b, loc, cond, scalarLike(b, loc, g, 0.0), g);
}
Value cmp(OpBuilder &b, Location loc, CmpPredicate p, Value l, Value r) {
  return CmpOp::create(b, loc, p, l, r);
}
/// Swaps the trailing two dimensions (matmul's transposed operand).
Value transposeLastTwo(OpBuilder &b, Location loc, Value v) {
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(b, loc, v, perm);
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(typeOf(v).getElementType());
}

//===----------------------------------------------------------------------===//
// The rules. Each returns the operand gradients in operand order (null: none).
//===----------------------------------------------------------------------===//

using Grads = SmallVectorImpl<Value>;

// Elementwise binary ops broadcast, so every operand gradient is unbroadcast.
LogicalResult vjp(AddOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(unbroadcast(b, loc, g, typeOf(op.getLhs())));
  out.push_back(unbroadcast(b, loc, g, typeOf(op.getRhs())));
  return success();
}

LogicalResult vjp(SubOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(unbroadcast(b, loc, g, typeOf(op.getLhs())));
  out.push_back(unbroadcast(b, loc, neg(b, loc, g), typeOf(op.getRhs())));
  return success();
}

LogicalResult vjp(MulOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  out.push_back(unbroadcast(b, loc, mul(b, loc, g, r), typeOf(l)));
  out.push_back(unbroadcast(b, loc, mul(b, loc, g, l), typeOf(r)));
  return success();
}

// d(l/r) = g/r for l, -g*(l/r)/r for r (reusing the forward result).
LogicalResult vjp(DivOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  out.push_back(unbroadcast(b, loc, div(b, loc, g, r), typeOf(l)));
  Value dr = neg(b, loc, div(b, loc, mul(b, loc, g, op.getResult()), r));
  out.push_back(unbroadcast(b, loc, dr, typeOf(r)));
  return success();
}

// Ties go to the lhs, as a subgradient.
LogicalResult vjp(MaxOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  Value lhsWins = cmp(b, loc, CmpPredicate::ge, l, r);
  out.push_back(unbroadcast(b, loc, maskWhere(b, loc, lhsWins, g), typeOf(l)));
  out.push_back(
      unbroadcast(b, loc, maskWhereNot(b, loc, lhsWins, g), typeOf(r)));
  return success();
}

LogicalResult vjp(MinOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  Value lhsWins = cmp(b, loc, CmpPredicate::le, l, r);
  out.push_back(unbroadcast(b, loc, maskWhere(b, loc, lhsWins, g), typeOf(l)));
  out.push_back(
      unbroadcast(b, loc, maskWhereNot(b, loc, lhsWins, g), typeOf(r)));
  return success();
}

// d(l^r) = g*r*l^(r-1) for l; g*l^r*ln(l) for r, taken as 0 where l <= 0
// (the real power is only differentiable in r for positive bases).
LogicalResult vjp(PowOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs(), y = op.getResult();
  Value rMinus1 = sub(b, loc, r, scalarLike(b, loc, r, 1.0));
  Value dl = mul(b, loc, g, mul(b, loc, r, PowOp::create(b, loc, l, rMinus1)));
  out.push_back(unbroadcast(b, loc, dl, typeOf(l)));
  Value positive = cmp(b, loc, CmpPredicate::gt, l, scalarLike(b, loc, l, 0.0));
  Value ylog = mul(b, loc, y, LogOp::create(b, loc, l));
  Value dr = mul(b, loc, g, maskWhere(b, loc, positive, ylog));
  out.push_back(unbroadcast(b, loc, dr, typeOf(r)));
  return success();
}

// rem(l, r) = l - trunc(l/r) * r: dl = g, dr = -g * trunc(l/r), where
// trunc(l/r) = (l - rem) / r reuses the forward result.
LogicalResult vjp(RemOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  out.push_back(unbroadcast(b, loc, g, typeOf(l)));
  Value quotient = div(b, loc, sub(b, loc, l, op.getResult()), r);
  out.push_back(
      unbroadcast(b, loc, neg(b, loc, mul(b, loc, g, quotient)), typeOf(r)));
  return success();
}

LogicalResult vjp(NegOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(neg(b, op.getLoc(), g));
  return success();
}

// The mask is taken from the result, relu(x) > 0 (the same as x > 0, NaN
// included): the result is usually kept for the next layer anyway, so the
// backward kernel recomputes the comparison from it instead of reading a
// mask the forward kernel stored (kiln-fuse moves it there).
LogicalResult vjp(ReluOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value positive = cmp(b, loc, CmpPredicate::gt, y, scalarLike(b, loc, y, 0.0));
  out.push_back(maskWhere(b, loc, positive, g));
  return success();
}

LogicalResult vjp(ExpOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(mul(b, op.getLoc(), g, op.getResult()));
  return success();
}

LogicalResult vjp(LogOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(div(b, op.getLoc(), g, op.getInput()));
  return success();
}

// d sqrt(x) = g / (2 sqrt(x)).
LogicalResult vjp(SqrtOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  out.push_back(div(b, loc, g, add(b, loc, y, y)));
  return success();
}

// d tanh(x) = g * (1 - tanh(x)^2).
LogicalResult vjp(TanhOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value one = scalarLike(b, loc, y, 1.0);
  Value slope = sub(b, loc, one, mul(b, loc, y, y));
  out.push_back(mul(b, loc, g, slope));
  return success();
}

// d sigmoid(x) = g * s * (1 - s).
LogicalResult vjp(SigmoidOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value slope = mul(b, loc, y, sub(b, loc, scalarLike(b, loc, y, 1.0), y));
  out.push_back(mul(b, loc, g, slope));
  return success();
}

// d erf(x) = g * 2/sqrt(pi) * e^(-x^2) (the core of gelu).
LogicalResult vjp(ErfOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value bell = ExpOp::create(b, loc, neg(b, loc, mul(b, loc, x, x)));
  Value k = scalarLike(b, loc, x, 2.0 / std::sqrt(M_PI));
  out.push_back(mul(b, loc, g, mul(b, loc, bell, k)));
  return success();
}

// d (1/x) = -g * (1/x)^2.
LogicalResult vjp(ReciprocalOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  out.push_back(neg(b, loc, mul(b, loc, g, mul(b, loc, y, y))));
  return success();
}

// d |x| = g * sign(x) (0 at 0, a subgradient).
LogicalResult vjp(AbsOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(mul(b, loc, g, SignOp::create(b, loc, op.getInput())));
  return success();
}

LogicalResult vjp(SinOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(mul(b, loc, g, CosOp::create(b, loc, op.getInput())));
  return success();
}

LogicalResult vjp(CosOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(
      neg(b, loc, mul(b, loc, g, SinOp::create(b, loc, op.getInput()))));
  return success();
}

// d tan(x) = g * (1 + tan(x)^2).
LogicalResult vjp(TanOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value one = scalarLike(b, loc, y, 1.0);
  Value slope = add(b, loc, one, mul(b, loc, y, y));
  out.push_back(mul(b, loc, g, slope));
  return success();
}

LogicalResult vjp(SinhOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(mul(b, loc, g, CoshOp::create(b, loc, op.getInput())));
  return success();
}

LogicalResult vjp(CoshOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(mul(b, loc, g, SinhOp::create(b, loc, op.getInput())));
  return success();
}

/// g / sqrt(sign * (x^2 + c)) for the inverse trig and hyperbolic functions.
Value overSqrt(OpBuilder &b, Location loc, Value g, Value x, double xxSign,
               double c) {
  Value xx = mul(b, loc, x, x);
  if (xxSign < 0)
    xx = neg(b, loc, xx);
  Value inner = add(b, loc, xx, scalarLike(b, loc, x, c));
  return div(b, loc, g, SqrtOp::create(b, loc, inner));
}

LogicalResult vjp(AsinOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(overSqrt(b, op.getLoc(), g, op.getInput(), -1.0, 1.0));
  return success();
}

LogicalResult vjp(AcosOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  out.push_back(neg(b, loc, overSqrt(b, loc, g, op.getInput(), -1.0, 1.0)));
  return success();
}

LogicalResult vjp(AsinhOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(overSqrt(b, op.getLoc(), g, op.getInput(), 1.0, 1.0));
  return success();
}

LogicalResult vjp(AcoshOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(overSqrt(b, op.getLoc(), g, op.getInput(), 1.0, -1.0));
  return success();
}

// d atan(x) = g / (1 + x^2); d atanh(x) = g / (1 - x^2).
LogicalResult vjp(AtanOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value one = scalarLike(b, loc, x, 1.0);
  Value d = add(b, loc, one, mul(b, loc, x, x));
  out.push_back(div(b, loc, g, d));
  return success();
}

LogicalResult vjp(AtanhOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value one = scalarLike(b, loc, x, 1.0);
  Value d = sub(b, loc, one, mul(b, loc, x, x));
  out.push_back(div(b, loc, g, d));
  return success();
}

// [..., M, K] x [..., K, N]: dl = g x r^T, dr = l^T x g, each summed over the
// batch dimensions its operand was broadcast along.
LogicalResult vjp(MatMulOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value l = op.getLhs(), r = op.getRhs();
  Value dl = MatMulOp::create(b, loc, g, transposeLastTwo(b, loc, r));
  out.push_back(unbroadcast(b, loc, dl, typeOf(l)));
  Value dr = MatMulOp::create(b, loc, transposeLastTwo(b, loc, l), g);
  out.push_back(unbroadcast(b, loc, dr, typeOf(r)));
  return success();
}

// Every input element contributed once: the result's gradient, stretched back.
LogicalResult vjp(ReduceSumOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value k = keepDims(b, loc, g, x, op.getAxes());
  out.push_back(broadcastTo(b, loc, k, typeOf(x)));
  return success();
}

LogicalResult vjp(ReduceMeanOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  SmallVector<DimExpr> sizes = dimExprs(x.getType());
  DimExpr count = DimExpr::constant(1);
  for (int64_t axis : op.getAxes())
    count = count * sizes[axis];
  Value k = keepDims(b, loc, g, x, op.getAxes());
  std::optional<int64_t> known = count.getConstant();
  if (known && *known > 1) {
    k = mul(b, loc, k, scalarLike(b, loc, x, 1.0 / double(*known)));
  } else if (!known) {
    // A count over symbolic sizes is known at run time only.
    MLIRContext *ctx = b.getContext();
    Value n = SizesOp::create(
        b, loc, RankedTensorType::get({}, b.getI64Type()),
        ArrayAttr::get(ctx, {StringAttr::get(ctx, count.str())}));
    k = div(
        b, loc, k,
        CastOp::create(
            b, loc, RankedTensorType::get({}, typeOf(x).getElementType()), n));
  }
  out.push_back(broadcastTo(b, loc, k, typeOf(x)));
  return success();
}

/// Max and min: the gradient goes to the elements equal to the result, split
/// evenly among ties (as TensorFlow does).
LogicalResult extremumVjp(Operation *op, Value x, Value y,
                          ArrayRef<int64_t> axes, OpBuilder &b, Value g,
                          Grads &out) {
  Location loc = op->getLoc();
  Value hit = cmp(b, loc, CmpPredicate::eq, x, keepDims(b, loc, y, x, axes));
  Value one = scalarLike(b, loc, x, 1.0);
  Value zero = scalarLike(b, loc, x, 0.0);
  Value ones = SelectOp::create(b, loc, hit, one, zero);
  Value count = ReduceSumOp::create(b, loc, ones, axes, /*keepdims=*/true);
  Value share = div(b, loc, keepDims(b, loc, g, x, axes), count);
  out.push_back(mul(b, loc, ones, share));
  return success();
}

LogicalResult vjp(ReduceMaxOp op, OpBuilder &b, Value g, Grads &out) {
  return extremumVjp(op, op.getInput(), op.getResult(), op.getAxes(), b, g,
                     out);
}

LogicalResult vjp(ReduceMinOp op, OpBuilder &b, Value g, Grads &out) {
  return extremumVjp(op, op.getInput(), op.getResult(), op.getAxes(), b, g,
                     out);
}

// d prod = g * prod / x (inputs holding zeros give inf or NaN: documented).
LogicalResult vjp(ReduceProdOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  Value gy = keepDims(b, loc, mul(b, loc, g, op.getResult()), x, op.getAxes());
  out.push_back(broadcastTo(b, loc, div(b, loc, gy, x), typeOf(x)));
  return success();
}

LogicalResult vjp(ReshapeOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(reshapeTo(b, op.getLoc(), g, typeOf(op.getInput())));
  return success();
}

LogicalResult vjp(TransposeOp op, OpBuilder &b, Value g, Grads &out) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  out.push_back(TransposeOp::create(b, op.getLoc(), g, inverse));
  return success();
}

LogicalResult vjp(BroadcastOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(unbroadcast(b, op.getLoc(), g, typeOf(op.getInput())));
  return success();
}

// Float to float only; casts from or to integers carry no gradient.
LogicalResult vjp(CastOp op, OpBuilder &b, Value g, Grads &out) {
  out.push_back(CastOp::create(b, op.getLoc(), op.getInput().getType(), g));
  return success();
}

// Each input's gradient is its window of g along the axis.
LogicalResult vjp(ConcatOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  int64_t axis = op.getAxis(), rank = typeOf(g).getRank();
  DimExpr offset = DimExpr::constant(0);
  for (Value in : op.getInputs()) {
    SmallVector<int64_t> starts(rank, 0), strides(rank, 1);
    std::optional<int64_t> start = offset.getConstant();
    if (!start)
      return op.emitOpError("has no gradient rule for a concatenation after "
                            "an input of symbolic size ")
             << offset.str() << " along its axis (decision 0027)";
    starts[axis] = *start;
    offset = offset + dimExprs(in.getType())[axis];
    out.push_back(SliceOp::create(b, loc, in.getType(), g, starts, strides));
  }
  return success();
}

/// Concatenates `parts` along `axis`, skipping empty ones.
Value concat(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t axis) {
  SmallVector<Value> kept;
  for (Value p : parts)
    if (typeOf(p).getDimSize(axis) != 0)
      kept.push_back(p);
  if (kept.size() == 1)
    return kept.front();
  return ConcatOp::create(b, loc, kept, axis);
}

/// `v` with dimension `axis` replaced by `size` (the others keep their
/// expressions).
RankedTensorType withDim(Value v, int64_t axis, int64_t size) {
  SmallVector<int64_t> shape(typeOf(v).getShape());
  SmallVector<DimExpr> sizes = dimExprs(v.getType());
  shape[axis] = size;
  sizes[axis] = DimExpr::constant(size);
  return symbolicTensorType(shape, sizes, typeOf(v).getElementType());
}

/// The window `v` of a strided slice put back in place: a tensor of `full`'s
/// shape holding `v`'s elements where the slice (`starts`, `strides`) read
/// them and zeros elsewhere. Built one axis at a time from core ops: reverse
/// for a negative stride, interleave zeros for a stride above one, then pad
/// with zeros before and after.
Value unslice(OpBuilder &b, Location loc, Value v, RankedTensorType full,
              ArrayRef<int64_t> starts, ArrayRef<int64_t> strides) {
  if (typeOf(v).getNumElements() == 0)
    return splat(b, loc, full);
  int64_t rank = full.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = typeOf(v).getDimSize(d), start = starts[d];
    int64_t stride = strides[d], length = full.getDimSize(d);
    if (stride < 0) {
      // Read backwards from `start`: reverse, and the window now starts at
      // the last element read.
      SmallVector<int64_t> revStarts(rank, 0), revStrides(rank, 1);
      revStarts[d] = size - 1;
      revStrides[d] = -1;
      v = SliceOp::create(b, loc, v.getType(), v, revStarts, revStrides);
      start += (size - 1) * stride;
      stride = -stride;
    }
    int64_t span = size;
    if (stride > 1 && size > 1) {
      // [.., n, ..] -> [.., n, 1, ..] ++ zeros [.., n, s-1, ..] -> [.., n*s,
      // ..], then drop the trailing s-1 zeros.
      SmallVector<int64_t> split(typeOf(v).getShape());
      split.insert(split.begin() + d + 1, 1);
      Value col = reshape(b, loc, v, split);
      Value gaps = splat(b, loc, withDim(col, d + 1, stride - 1));
      Value spread = ConcatOp::create(b, loc, ValueRange{col, gaps}, d + 1);
      Value flat =
          reshape(b, loc, spread, withDim(v, d, size * stride).getShape());
      span = (size - 1) * stride + 1;
      SmallVector<int64_t> zeros(rank, 0), ones(rank, 1);
      v = SliceOp::create(b, loc, withDim(v, d, span), flat, zeros, ones);
    }
    if (span != length) {
      Value before = splat(b, loc, withDim(v, d, start));
      Value after = splat(b, loc, withDim(v, d, length - start - span));
      v = concat(b, loc, {before, v, after}, d);
    }
  }
  return v;
}

/// An i64 constant of `shape` holding `values`.
Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, values));
}

/// A ramp 0, 1, ... over `size` elements (at most `bound`), as [1, size]:
/// a constant of the bound sliced to the run-time size.
Value ramp(OpBuilder &b, Location loc, const DimExpr &size, int64_t bound) {
  SmallVector<int64_t> values(bound);
  std::iota(values.begin(), values.end(), int64_t(0));
  Value all = i64Constant(b, loc, {1, bound}, values);
  if (size.getConstant())
    return all;
  return SliceOp::create(b, loc,
                         symbolicTensorType({1, bound},
                                            {DimExpr::constant(1), size},
                                            b.getI64Type()),
                         all, ArrayRef<int64_t>{0, 0}, ArrayRef<int64_t>{1, 1});
}

/// Sends each of J reads back to the position it read, as a matrix product
/// (no scatter op): `positions` [J, 1] against `columns` [1, D] (0..D-1, of
/// the same integer type) gives onehot[J, D], and onehot^T x `g` (viewed as
/// [outer, J, inner]) is [outer, D, inner]. The gradient of a gather or of
/// a window. Dense in D x J: fine for vocabularies and position tables.
Value spreadByOneHot(OpBuilder &b, Location loc, Value positions, Value columns,
                     Value g) {
  Value hit = cmp(b, loc, CmpPredicate::eq, positions, columns); // [J, D]
  Type elt = typeOf(g).getElementType();
  Value one = scalar(b, loc, elt, 1.0);
  Value zero = scalar(b, loc, elt, 0.0);
  Value oneHot = SelectOp::create(b, loc, hit, one, zero);
  return MatMulOp::create(b, loc, transposeLastTwo(b, loc, oneHot), g);
}

/// `g`, whose axis `axis` is a window read from an axis of `length`
/// elements (at most `bound`) at `start` + i * `stride`, put back along that
/// axis with zeros elsewhere, when the window or the axis is symbolic and
/// the window is not all of the axis after `start`. Padding around it would
/// have a size like `length - start - window`, which is not monotone
/// (decision 0027), so the window is spread by a matrix product instead, as
/// a gather's gradient: onehot[length, window] x g viewed as [window, rest].
Value spreadWindow(OpBuilder &b, Location loc, Value g, int64_t axis,
                   int64_t start, int64_t stride, const DimExpr &length,
                   int64_t bound) {
  RankedTensorType gTy = typeOf(g);
  int64_t rank = gTy.getRank(), windowBound = gTy.getDimSize(axis);
  DimExpr window = dimExprs(gTy)[axis];
  // The positions read, [window, 1]: start + stride * ramp.
  Value positions = transposeLastTwo(b, loc, ramp(b, loc, window, windowBound));
  Value strideValue = scalarLike(b, loc, positions, stride);
  positions = mul(b, loc, positions, strideValue);
  Value startValue = scalarLike(b, loc, positions, start);
  positions = add(b, loc, positions, startValue);
  Value columns = ramp(b, loc, length, bound);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= gTy.getDimSize(d);
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= gTy.getDimSize(d);
  Value flat = reshape(b, loc, g, {outer, windowBound, inner});
  Value spread = spreadByOneHot(b, loc, positions, columns, flat);
  SmallVector<int64_t> shape(gTy.getShape());
  shape[axis] = bound;
  return reshape(b, loc, spread, shape);
}

LogicalResult vjp(SliceOp op, OpBuilder &b, Value g, Grads &out) {
  // A slice that takes all of a symbolic axis after its start gets zeros
  // before the start (unslice's pieces); any other window where the window
  // or the axis is symbolic (a position table sliced to the sequence, the
  // first token of a symbolic sequence) is spread back by spreadWindow.
  SmallVector<DimExpr> in = dimExprs(op.getInput().getType()),
                       sliced = dimExprs(g.getType());
  SmallVector<int64_t> starts(op.getStarts()), strides(op.getStrides());
  RankedTensorType inTy = typeOf(op.getInput());
  for (auto [d, size] : llvm::enumerate(in)) {
    bool symbolic = !size.getConstant() || !sliced[d].getConstant();
    bool toEnd =
        strides[d] == 1 && sliced[d] + DimExpr::constant(starts[d]) == size;
    if (!symbolic || toEnd)
      continue;
    g = spreadWindow(b, op.getLoc(), g, d, starts[d], strides[d], size,
                     inTy.getDimSize(d));
    starts[d] = 0;
    strides[d] = 1;
  }
  out.push_back(
      unslice(b, op.getLoc(), g, typeOf(op.getInput()), starts, strides));
  return success();
}

/// `v` with `before` and `after` elements of `fill` added along `axis`.
Value padAxis(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t before,
              int64_t after, double fill = 0.0) {
  if (before == 0 && after == 0)
    return v;
  return concat(b, loc,
                {splat(b, loc, withDim(v, axis, before), fill), v,
                 splat(b, loc, withDim(v, axis, after), fill)},
                axis);
}

/// Elements [start, start + size) of `v` along `axis`.
Value sliceAxis(OpBuilder &b, Location loc, Value v, int64_t axis,
                int64_t start, int64_t size) {
  if (start == 0 && size == typeOf(v).getDimSize(axis))
    return v;
  int64_t rank = typeOf(v).getRank();
  SmallVector<int64_t> starts(rank, 0), strides(rank, 1);
  starts[axis] = start;
  return SliceOp::create(b, loc, withDim(v, axis, size), v, starts, strides);
}

SmallVector<int64_t> iotaPerm(int64_t rank) {
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  return perm;
}

/// `parts` (equal shapes) interleaved along `axis`: element i of part r
/// lands at i * parts.size() + r.
Value interleave(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                 int64_t axis) {
  if (parts.size() == 1)
    return parts.front();
  SmallVector<int64_t> shape(typeOf(parts.front()).getShape());
  SmallVector<int64_t> unit(shape);
  unit.insert(unit.begin() + axis + 1, 1);
  SmallVector<Value> stacked;
  for (Value part : parts)
    stacked.push_back(reshape(b, loc, part, unit));
  Value v = concat(b, loc, stacked, axis + 1);
  shape[axis] *= parts.size();
  return reshape(b, loc, v, shape);
}

/// convInputGrad for strides above 1 and no dilation, without the zeros:
/// along an axis of stride s, padded input position j = i + pad receives
/// g[o] w[k] where j = o s + k, so the positions j = j' s + r (phase r)
/// get exactly the taps k = r, r + s, r + 2s, ... . Each phase is a stride-1
/// transposed convolution of g with that sub-filter (a strided slice of
/// the flipped filter), the phases are interleaved back along each axis
/// and the padding cut off: the multiply-adds of the forward convolution,
/// where spreading g by the strides multiplied them by about the product
/// of the strides (4x, and more at the borders, for a 3x3 stride-2 conv).
Value convInputGradPhases(OpBuilder &b, Location loc, Value g, Value flipped,
                          RankedTensorType inputTy, ArrayRef<int64_t> strides,
                          ArrayRef<int64_t> pads, int64_t group) {
  RankedTensorType gTy = typeOf(g), wTy = typeOf(flipped);
  int64_t k = inputTy.getRank() - 2;
  // Per axis: the padded length in phase rows, ceil((H + pads) / s).
  SmallVector<int64_t> rows(k);
  for (int64_t i = 0; i < k; ++i)
    rows[i] = llvm::divideCeil(
        inputTy.getDimSize(2 + i) + pads[i] + pads[k + i], strides[i]);
  SmallVector<int64_t> phase(k, 0);
  // One phase: the taps k = r + s t of the filter; in the flipped filter
  // W'[k'] = w[K - 1 - k'], reversed, they start at K - 1 - r - s (T - 1).
  auto phaseGrad = [&]() -> Value {
    SmallVector<int64_t> starts(k + 2, 0), steps(k + 2, 1),
        shape(wTy.getShape());
    SmallVector<int64_t> fullPads(2 * k), ones(k, 1);
    bool empty = false;
    for (int64_t i = 0; i < k; ++i) {
      int64_t taps = wTy.getDimSize(2 + i), r = phase[i], s = strides[i];
      int64_t count = r < taps ? llvm::divideCeil(taps - r, s) : 0;
      empty |= count == 0;
      starts[2 + i] = taps - 1 - r - s * std::max<int64_t>(count - 1, 0);
      steps[2 + i] = s;
      shape[2 + i] = count;
      fullPads[i] = fullPads[k + i] = count - 1;
    }
    if (empty) {
      SmallVector<int64_t> outShape = {gTy.getDimSize(0),
                                       inputTy.getDimSize(1)};
      llvm::append_range(outShape, rows);
      SmallVector<DimExpr> sizes = {dimExprs(gTy)[0],
                                    DimExpr::constant(inputTy.getDimSize(1))};
      for (int64_t r : rows)
        sizes.push_back(DimExpr::constant(r));
      return splat(b, loc,
                   symbolicTensorType(outShape, sizes, gTy.getElementType()),
                   0.0);
    }
    Value sub = flipped;
    if (llvm::any_of(llvm::seq<int64_t>(0, k), [&](int64_t i) {
          return shape[2 + i] != wTy.getDimSize(2 + i);
        }))
      sub = SliceOp::create(b, loc,
                            RankedTensorType::get(shape, wTy.getElementType()),
                            flipped, starts, steps);
    Value r = ConvOp::create(b, loc, g, sub, ones, ones, fullPads, group);
    // Row j' of the phase is output j' of the full correlation; rows past
    // its end are zero.
    for (int64_t i = 0; i < k; ++i) {
      int64_t length = typeOf(r).getDimSize(2 + i);
      r = length < rows[i] ? padAxis(b, loc, r, 2 + i, 0, rows[i] - length)
                           : sliceAxis(b, loc, r, 2 + i, 0, rows[i]);
    }
    return r;
  };
  // Phases nested axis by axis, interleaved from the innermost axis out.
  std::function<Value(int64_t)> assemble = [&](int64_t axis) -> Value {
    if (axis == k)
      return phaseGrad();
    SmallVector<Value> parts;
    for (int64_t r = 0; r < strides[axis]; ++r) {
      phase[axis] = r;
      parts.push_back(assemble(axis + 1));
    }
    return interleave(b, loc, parts, 2 + axis);
  };
  Value r = assemble(0);
  for (int64_t i = 0; i < k; ++i)
    r = sliceAxis(b, loc, r, 2 + i, pads[i], inputTy.getDimSize(2 + i));
  return r;
}

/// The gradient of a convolution's input: a transposed convolution, written
/// as a plain one. `g` [N, M, O..] is spread by the strides (zeros between
/// its elements), convolved at full padding with the filter flipped in space
/// and with its channel roles swapped per group ([M, C/G, K..] ->
/// [C, M/G, K..]); the result covers the padded input up to the last
/// element any window read, so it is extended with zeros to the padded
/// length and the padding is cut off.
Value convInputGrad(OpBuilder &b, Location loc, Value g, Value filter,
                    RankedTensorType inputTy, ArrayRef<int64_t> strides,
                    ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                    int64_t group) {
  RankedTensorType wTy = typeOf(filter);
  int64_t k = inputTy.getRank() - 2;
  bool phases = llvm::any_of(strides, [](int64_t s) { return s > 1; }) &&
                llvm::all_of(dilations, [](int64_t d) { return d == 1; });
  Value v = g;
  for (int64_t i = 0; i < k && !phases; ++i) {
    int64_t n = typeOf(v).getDimSize(2 + i);
    SmallVector<int64_t> starts(k + 2, 0), steps(k + 2, 1);
    steps[2 + i] = strides[i];
    if (strides[i] > 1 && n > 1)
      v = unslice(b, loc, v, withDim(v, 2 + i, (n - 1) * strides[i] + 1),
                  starts, steps);
  }
  // Flip the kernel in space.
  SmallVector<int64_t> flipStarts(k + 2, 0), flipSteps(k + 2, 1);
  for (int64_t i = 0; i < k; ++i) {
    flipStarts[2 + i] = wTy.getDimSize(2 + i) - 1;
    flipSteps[2 + i] = -1;
  }
  Value w = SliceOp::create(b, loc, wTy, filter, flipStarts, flipSteps);
  // [M, Cg, K..] -> [G, Mg, Cg, K..] -> [G, Cg, Mg, K..] -> [C, Mg, K..].
  int64_t m = wTy.getDimSize(0), cg = wTy.getDimSize(1), mg = m / group;
  SmallVector<int64_t> grouped = {group, mg, cg};
  llvm::append_range(grouped, wTy.getShape().drop_front(2));
  w = reshape(b, loc, w, grouped);
  SmallVector<int64_t> perm = iotaPerm(k + 3);
  std::swap(perm[1], perm[2]);
  w = TransposeOp::create(b, loc, w, perm);
  SmallVector<int64_t> swapped = {group * cg, mg};
  llvm::append_range(swapped, wTy.getShape().drop_front(2));
  w = reshape(b, loc, w, swapped);
  if (phases)
    return convInputGradPhases(b, loc, g, w, inputTy, strides, pads, group);
  SmallVector<int64_t> fullPads(2 * k), ones(k, 1);
  for (int64_t i = 0; i < k; ++i)
    fullPads[i] = fullPads[k + i] = dilations[i] * (wTy.getDimSize(2 + i) - 1);
  Value r = ConvOp::create(b, loc, v, w, ones, dilations, fullPads, group);
  for (int64_t i = 0; i < k; ++i) {
    int64_t length = typeOf(r).getDimSize(2 + i);
    int64_t padded = inputTy.getDimSize(2 + i) + pads[i] + pads[k + i];
    r = padAxis(b, loc, r, 2 + i, 0, padded - length);
    r = sliceAxis(b, loc, r, 2 + i, pads[i], inputTy.getDimSize(2 + i));
  }
  return r;
}

/// The filter gradient over a symbolic batch: the batch cannot
/// become the channels of a convolution (the lowering takes a symbolic
/// batch only), so the padded input's windows are gathered as columns,
/// one strided slice per filter tap, [N, C, K.., O..] -> [N * O.., C * K..],
/// and dFilter = g viewed as [M, N * O..] times the columns: one matmul whose
/// reduction runs over the run-time batch (batched over the groups of a
/// grouped convolution).
Value convFilterGradByColumns(OpBuilder &b, Location loc, ConvOp op, Value g) {
  Value x = op.getInput();
  RankedTensorType wTy = typeOf(op.getFilter()), gTy = typeOf(g);
  int64_t k = wTy.getRank() - 2;
  ArrayRef<int64_t> pads = op.getPads(), strides = op.getStrides(),
                    dilations = op.getDilations();
  Value padded = x;
  for (int64_t i = 0; i < k; ++i)
    padded = padAxis(b, loc, padded, 2 + i, pads[i], pads[k + i]);
  // The window of each tap: x's batch and channels, g's spatial sizes.
  SmallVector<int64_t> windowShape(typeOf(x).getShape().take_front(2));
  SmallVector<DimExpr> windowSizes = dimExprs(x.getType());
  windowSizes.resize(2);
  for (int64_t i = 0; i < k; ++i) {
    windowShape.push_back(gTy.getDimSize(2 + i));
    windowSizes.push_back(DimExpr::constant(gTy.getDimSize(2 + i)));
  }
  auto windowTy =
      symbolicTensorType(windowShape, windowSizes, gTy.getElementType());
  SmallVector<int64_t> unit(windowShape);
  unit.insert(unit.begin() + 2, 1);
  SmallVector<Value> taps;
  int64_t numTaps = 1;
  for (int64_t i = 0; i < k; ++i)
    numTaps *= wTy.getDimSize(2 + i);
  for (int64_t t = 0; t < numTaps; ++t) {
    SmallVector<int64_t> starts(k + 2, 0), steps(k + 2, 1);
    for (int64_t i = k - 1, rest = t; i >= 0; --i) {
      starts[2 + i] = rest % wTy.getDimSize(2 + i) * dilations[i];
      rest /= wTy.getDimSize(2 + i);
      steps[2 + i] = strides[i];
    }
    Value window = SliceOp::create(b, loc, windowTy, padded, starts, steps);
    taps.push_back(reshape(b, loc, window, unit));
  }
  Value cols = concat(b, loc, taps, 2); // [N, C, K.., O..]
  int64_t channels = typeOf(x).getDimSize(1), positions = 1;
  SmallVector<int64_t> merged = {windowShape[0], channels * numTaps};
  for (int64_t i = 0; i < k; ++i) {
    merged.push_back(gTy.getDimSize(2 + i));
    positions *= gTy.getDimSize(2 + i);
  }
  cols = reshape(b, loc, cols, merged);
  SmallVector<int64_t> toRows = {0};
  for (int64_t i = 0; i < k; ++i)
    toRows.push_back(2 + i);
  toRows.push_back(1);
  cols = TransposeOp::create(b, loc, cols, toRows); // [N, O.., C * K..]
  cols =
      reshape(b, loc, cols, {windowShape[0] * positions, channels * numTaps});
  SmallVector<int64_t> swapFirst = iotaPerm(k + 2);
  std::swap(swapFirst[0], swapFirst[1]);
  Value gs = TransposeOp::create(b, loc, g, swapFirst); // [M, N, O..]
  gs = reshape(b, loc, gs, {gTy.getDimSize(1), gTy.getDimSize(0) * positions});
  int64_t group = op.getGroup();
  if (group != 1) {
    // Group i's filters read its C/G channels of the columns: one batched
    // matmul over the groups, [G, M/G, N * O..] x [G, N * O.., C/G * K..].
    int64_t rows = windowShape[0] * positions;
    cols = reshape(b, loc, cols, {rows, group, channels / group * numTaps});
    cols = TransposeOp::create(b, loc, cols, ArrayRef<int64_t>{1, 0, 2});
    gs = reshape(b, loc, gs, {group, gTy.getDimSize(1) / group, rows});
  }
  Value dFilter = MatMulOp::create(b, loc, gs, cols);
  return reshape(b, loc, dFilter, wTy.getShape());
}

// dInput: a transposed convolution (convInputGrad). dFilter: a convolution
// of the input with g, batch and channels exchanged: the input viewed as
// [C/G, G*N, D..] (a batch of C/G, G groups of N channels) convolved with g
// viewed as [M, N, O..], the roles of stride and dilation swapped, gives
// [C/G, M, K'..] with K' >= K; the first K along each axis are the gradient.
LogicalResult vjp(ConvOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput(), w = op.getFilter();
  RankedTensorType xTy = typeOf(x), wTy = typeOf(w);
  int64_t k = xTy.getRank() - 2, group = op.getGroup();
  out.push_back(convInputGrad(b, loc, g, w, xTy, op.getStrides(),
                              op.getDilations(), op.getPads(), group));
  if (hasSymbolicDims(xTy)) {
    out.push_back(convFilterGradByColumns(b, loc, op, g));
    return success();
  }
  int64_t n = xTy.getDimSize(0), cg = wTy.getDimSize(1);
  SmallVector<int64_t> split = {n, group, cg};
  llvm::append_range(split, xTy.getShape().drop_front(2));
  Value xs = reshape(b, loc, x, split);
  SmallVector<int64_t> perm = iotaPerm(k + 3);
  std::swap(perm[0], perm[2]);
  xs = TransposeOp::create(b, loc, xs, perm);
  SmallVector<int64_t> batched = {cg, group * n};
  llvm::append_range(batched, xTy.getShape().drop_front(2));
  xs = reshape(b, loc, xs, batched);
  SmallVector<int64_t> swapFirst = iotaPerm(k + 2);
  std::swap(swapFirst[0], swapFirst[1]);
  Value gs = TransposeOp::create(b, loc, g, swapFirst);
  // Window positions past the filter's K would be computed and cut off
  // (K' = 4 for a 3x3 stride-2 filter: 16 products for 9); the end of the
  // input is cut instead, from its padding first, so K' = K.
  SmallVector<int64_t> pads(op.getPads());
  ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
  for (int64_t i = 0; i < k; ++i) {
    int64_t length = typeOf(xs).getDimSize(2 + i);
    int64_t outs = typeOf(g).getDimSize(2 + i);
    int64_t span = length + pads[i] + pads[k + i] - strides[i] * (outs - 1) - 1;
    int64_t extra = span / dilations[i] + 1 - wTy.getDimSize(2 + i);
    if (extra <= 0)
      continue;
    int64_t cut = extra * dilations[i];
    int64_t fromPad = std::min(cut, pads[k + i]);
    pads[k + i] -= fromPad;
    if (cut > fromPad)
      xs = sliceAxis(b, loc, xs, 2 + i, 0, length - (cut - fromPad));
  }
  Value r = ConvOp::create(b, loc, xs, gs, dilations, strides, pads, group);
  for (int64_t i = 0; i < k; ++i)
    r = sliceAxis(b, loc, r, 2 + i, 0, wTy.getDimSize(2 + i));
  out.push_back(TransposeOp::create(b, loc, r, swapFirst));
  return success();
}

// Sum pooling is a depthwise convolution with a filter of ones; max pooling
// sends the gradient of each window to the elements equal to its maximum,
// split evenly among ties, one kernel offset at a time (a strided slice of
// the -inf padded input compared with the result, put back with unslice).
LogicalResult vjp(PoolOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value x = op.getInput(), y = op.getResult();
  RankedTensorType xTy = typeOf(x);
  ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                    dilations = op.getDilations(), pads = op.getPads();
  int64_t k = xTy.getRank() - 2, channels = xTy.getDimSize(1);
  if (op.getKind() == PoolKind::sum) {
    SmallVector<int64_t> wShape = {channels, 1};
    llvm::append_range(wShape, kernel);
    Value ones =
        splat(b, loc, RankedTensorType::get(wShape, xTy.getElementType()), 1.0);
    out.push_back(convInputGrad(b, loc, g, ones, xTy, strides, dilations, pads,
                                channels));
    return success();
  }
  Value padded = x;
  for (int64_t i = 0; i < k; ++i)
    padded = padAxis(b, loc, padded, 2 + i, pads[i], pads[k + i],
                     -std::numeric_limits<double>::infinity());
  RankedTensorType paddedTy = typeOf(padded);
  SmallVector<SmallVector<int64_t>> offsets = {{}};
  for (int64_t i = 0; i < k; ++i) {
    SmallVector<SmallVector<int64_t>> next;
    for (auto &prefix : offsets)
      for (int64_t j = 0; j < kernel[i]; ++j) {
        next.push_back(prefix);
        next.back().push_back(j * dilations[i]);
      }
    offsets = std::move(next);
  }
  SmallVector<int64_t> steps = {1, 1};
  llvm::append_range(steps, strides);
  SmallVector<Value> hits;
  SmallVector<SmallVector<int64_t>> starts;
  Value count;
  for (auto &offset : offsets) {
    SmallVector<int64_t> start = {0, 0};
    llvm::append_range(start, offset);
    Value window = SliceOp::create(b, loc, y.getType(), padded, start, steps);
    Value isMax = cmp(b, loc, CmpPredicate::eq, window, y);
    Value one = scalarLike(b, loc, y, 1.0);
    Value zero = scalarLike(b, loc, y, 0.0);
    Value hit = SelectOp::create(b, loc, isMax, one, zero);
    count = count ? add(b, loc, count, hit) : hit;
    hits.push_back(hit);
    starts.push_back(start);
  }
  Value share = div(b, loc, g, count);
  Value sum;
  for (auto [hit, start] : llvm::zip(hits, starts)) {
    Value back =
        unslice(b, loc, mul(b, loc, hit, share), paddedTy, start, steps);
    sum = sum ? add(b, loc, sum, back) : back;
  }
  for (int64_t i = 0; i < k; ++i)
    sum = sliceAxis(b, loc, sum, 2 + i, pads[i], xTy.getDimSize(2 + i));
  out.push_back(sum);
  return success();
}

// The adjoint of a gather is a scatter-add, written as a one-hot matrix
// product so that it needs no scatter op: with the data viewed as [A, D, B]
// and g as [A, J, B] (J = all indices), dData = onehot[D, J] x g. Indices are
// normalized (negative ones count from the end) and clamped as the gather
// read them. Dense in D x J: fine for the vocabularies of small models.
LogicalResult vjp(GatherOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  RankedTensorType dataTy = typeOf(op.getData());
  Value idx = op.getIndices();
  RankedTensorType idxTy = typeOf(idx);
  int64_t axis = op.getAxis(), depth = dataTy.getDimSize(axis);
  int64_t outer = 1, inner = 1, count = idxTy.getNumElements();
  for (int64_t d = 0; d < axis; ++d)
    outer *= dataTy.getDimSize(d);
  for (int64_t d = axis + 1; d < dataTy.getRank(); ++d)
    inner *= dataTy.getDimSize(d);
  Value flatIdx = reshape(b, loc, idx, {count, 1});
  Value negative =
      cmp(b, loc, CmpPredicate::lt, flatIdx, scalarLike(b, loc, idx, 0.0));
  Value wrapped = SelectOp::create(
      b, loc, negative, add(b, loc, flatIdx, scalarLike(b, loc, idx, depth)),
      flatIdx);
  Value high =
      MinOp::create(b, loc, wrapped, scalarLike(b, loc, idx, depth - 1));
  Value clamped = MaxOp::create(b, loc, high, scalarLike(b, loc, idx, 0.0));
  // iota over the axis, [1, D], of the indices' type.
  auto iotaTy = RankedTensorType::get({1, depth}, idxTy.getElementType());
  SmallVector<Attribute> iota;
  for (int64_t i = 0; i < depth; ++i)
    iota.push_back(b.getIntegerAttr(idxTy.getElementType(), i));
  Value positions =
      ConstantOp::create(b, loc, iotaTy, DenseElementsAttr::get(iotaTy, iota));
  Value gFlat = reshape(b, loc, g, {outer, count, inner});
  Value dData = spreadByOneHot(b, loc, clamped, positions, gFlat);
  out.push_back(reshape(b, loc, dData, dataTy.getShape()));
  out.push_back(Value());
  return success();
}

/// A 1-D i64 constant 0, 1, ..., n-1.
Value iota64(OpBuilder &b, Location loc, int64_t n) {
  SmallVector<int64_t> values(n);
  std::iota(values.begin(), values.end(), int64_t(0));
  return i64Constant(b, loc, {n}, values);
}

// Scatter: the positions an update wrote no longer depend on data there.
// With `none` each position keeps only its last writer, so update u gets
// g at its position only if it was that last writer (found by scattering
// the update numbers themselves); with `add` every in-range update gets g
// at its position. Out-of-range updates were skipped and get zero. The
// reductions mul, max and min have no rule yet (an error names the op).
LogicalResult vjp(ScatterOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  ScatterReduction reduction = op.getReduction();
  if (reduction != ScatterReduction::none && reduction != ScatterReduction::add)
    return op.emitOpError("has no gradient rule for reduction '")
           << stringifyScatterReduction(reduction) << "' (only none and add)";
  RankedTensorType dataTy = typeOf(op.getData());
  RankedTensorType updTy = typeOf(op.getUpdates());
  int64_t n = dataTy.getDimSize(0), m = updTy.getDimSize(0);
  Value idx = op.getIndices();
  Value zero64 = scalarLike(b, loc, idx, 0.0);
  Value negative = cmp(b, loc, CmpPredicate::lt, idx, zero64);
  Value wrappedIdx = add(b, loc, idx, scalarLike(b, loc, idx, double(n)));
  Value normalized = SelectOp::create(b, loc, negative, wrappedIdx, idx);
  Value low = MaxOp::create(b, loc, normalized, zero64);
  Value clamped =
      MinOp::create(b, loc, low, scalarLike(b, loc, idx, double(n - 1)));
  Value atPosition = GatherOp::create(b, loc, g, clamped, 0);
  Value taken;
  Value zeros = splat(b, loc, updTy);
  if (reduction == ScatterReduction::none) {
    Value numbers = iota64(b, loc, m);
    Value nobody =
        splat(b, loc, RankedTensorType::get({n}, b.getI64Type()), -1.0);
    Value lastWriter = ScatterOp::create(
        b, loc, nobody.getType(), ScatterReduction::none, nobody, idx, numbers);
    Value writerThere = GatherOp::create(b, loc, lastWriter, clamped, 0);
    taken = cmp(b, loc, CmpPredicate::eq, writerThere, numbers);
    // data: zero where some update replaced it.
    Value cleared = ScatterOp::create(b, loc, dataTy, ScatterReduction::none, g,
                                      idx, zeros);
    out.push_back(cleared);
  } else {
    Value aboveLow = cmp(b, loc, CmpPredicate::ge, normalized, zero64);
    Value belowHigh = cmp(b, loc, CmpPredicate::lt, normalized,
                          scalarLike(b, loc, idx, double(n)));
    taken = AndOp::create(b, loc, aboveLow, belowHigh);
    out.push_back(g);
  }
  out.push_back(Value());
  out.push_back(SelectOp::create(b, loc, taken, atPosition, zeros));
  return success();
}

// TopK: each value came from one column of its row, so its gradient goes
// back there (a scatter-add over the flattened input; the columns chosen in
// a row are distinct). Only the values result carries a gradient.
LogicalResult vjp(TopKOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  RankedTensorType inTy = typeOf(op.getInput());
  int64_t rows = inTy.getDimSize(0), cols = inTy.getDimSize(1);
  int64_t k = typeOf(op.getValues()).getDimSize(1);
  auto offsetTy = RankedTensorType::get({rows, 1}, b.getI64Type());
  SmallVector<int64_t> offsets(rows);
  for (int64_t r = 0; r < rows; ++r)
    offsets[r] = r * cols;
  Value rowStart = ConstantOp::create(
      b, loc, offsetTy,
      DenseElementsAttr::get(offsetTy, ArrayRef<int64_t>(offsets)));
  Value flat = add(b, loc, op.getIndices(), rowStart);
  Value positions = reshape(b, loc, flat, {rows * k});
  Value updates = reshape(b, loc, g, {rows * k});
  auto flatTy = RankedTensorType::get({rows * cols}, inTy.getElementType());
  Value zeros = splat(b, loc, flatTy);
  Value sum = ScatterOp::create(b, loc, flatTy, ScatterReduction::add, zeros,
                                positions, updates);
  out.push_back(reshape(b, loc, sum, inTy.getShape()));
  return success();
}

// The condition selects; the gradient goes to the branch that was taken.
LogicalResult vjp(SelectOp op, OpBuilder &b, Value g, Grads &out) {
  Location loc = op.getLoc();
  Value c = op.getCondition();
  out.push_back(Value());
  out.push_back(
      unbroadcast(b, loc, maskWhere(b, loc, c, g), typeOf(op.getLhs())));
  out.push_back(
      unbroadcast(b, loc, maskWhereNot(b, loc, c, g), typeOf(op.getRhs())));
  return success();
}

//===----------------------------------------------------------------------===//
// Which operands are differentiable
//===----------------------------------------------------------------------===//

template <typename OpT> bool differentiable(OpT op, unsigned index) {
  return isFloatTensor(op->getOperand(index));
}
bool differentiable(GatherOp, unsigned index) { return index == 0; }
bool differentiable(ScatterOp op, unsigned index) {
  return index != 1 && isFloatTensor(op->getOperand(index));
}
bool differentiable(SelectOp op, unsigned index) {
  return index != 0 && isFloatTensor(op->getOperand(index));
}
bool differentiable(CastOp op, unsigned) {
  return isFloatTensor(op.getInput()) && isFloatTensor(op.getResult()) &&
         !isNarrowType(typeOf(op.getInput()).getElementType());
}

/// Whether an op's rule builds its gradients over symbolic sizes (decision
/// 0027): the rules written with the size helpers above. The scatter's and
/// top-k's index arithmetic assumes static sizes.
template <typename OpT> constexpr bool kSymbolicRule = true;
template <> constexpr bool kSymbolicRule<ScatterOp> = false;
template <> constexpr bool kSymbolicRule<TopKOp> = false;

/// The model of an op with a rule above.
template <typename OpT>
struct GradientModel
    : GradientOpInterface::ExternalModel<GradientModel<OpT>, OpT> {
  bool isDifferentiableOperand(Operation *op, unsigned index) const {
    return differentiable(cast<OpT>(op), index);
  }
  LogicalResult buildOperandGradients(Operation *op, OpBuilder &builder,
                                      Value resultGrad,
                                      SmallVectorImpl<Value> &grads) const {
    if (!kSymbolicRule<OpT> && (anySymbolicDims(op->getOperandTypes()) ||
                                anySymbolicDims(op->getResultTypes())))
      return op->emitOpError(
          "has symbolic sizes, which its gradient rule does not handle yet "
          "(decision 0027, step 8); pin the dimension with --dim NAME=N");
    return vjp(cast<OpT>(op), builder, resultGrad, grads);
  }
};

/// The model of a piecewise-constant op: its derivative is zero almost
/// everywhere, so no gradient flows through it.
template <typename OpT>
struct ZeroGradientModel
    : GradientOpInterface::ExternalModel<ZeroGradientModel<OpT>, OpT> {
  bool isDifferentiableOperand(Operation *, unsigned) const { return false; }
  LogicalResult buildOperandGradients(Operation *op, OpBuilder &, Value,
                                      SmallVectorImpl<Value> &grads) const {
    grads.append(op->getNumOperands(), Value());
    return success();
  }
};

template <typename... OpTs> void attach(MLIRContext &ctx) {
  (OpTs::template attachInterface<GradientModel<OpTs>>(ctx), ...);
}
template <typename... OpTs> void attachZero(MLIRContext &ctx) {
  (OpTs::template attachInterface<ZeroGradientModel<OpTs>>(ctx), ...);
}

} // namespace

void kiln::attachGradientModels(MLIRContext &ctx) {
  attach<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, RemOp, NegOp, ReluOp,
         ExpOp, LogOp, SqrtOp, TanhOp, SigmoidOp, ErfOp, ReciprocalOp, AbsOp,
         SinOp, CosOp, TanOp, SinhOp, CoshOp, AsinOp, AcosOp, AsinhOp, AcoshOp,
         AtanOp, AtanhOp, MatMulOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
         ReduceMinOp, ReduceProdOp, ReshapeOp, TransposeOp, BroadcastOp, CastOp,
         ConcatOp, SliceOp, GatherOp, SelectOp, ConvOp, PoolOp, ScatterOp,
         TopKOp>(ctx);
  attachZero<FloorOp, CeilOp, RoundOp, SignOp>(ctx);
}
