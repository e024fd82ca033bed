//===- KilnOps.cpp - verification, type inference and folding -------------===//
//
// Result types follow from operands and attributes (numpy broadcasting for
// binary ops, batch broadcasting for matmul, axes for reductions, perm for
// transpose); the inference functions are also the verifiers, so each error is
// emitted once, at the op's location. Folders stay trivial: identities and
// constants only. Heavier simplification belongs to the graph passes.
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

std::optional<SmallVector<int64_t>>
kiln::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t r = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (l != r && l != 1 && r != 1)
      return std::nullopt;
    result[i] = l == 1 ? r : l;
  }
  return result;
}

SmallVector<int64_t> kiln::reducedShape(ArrayRef<int64_t> shape,
                                        ArrayRef<int64_t> axes, bool keepDims) {
  SmallVector<int64_t> result;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(dim);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

bool kiln::isNarrowType(Type t) {
  if (auto f = dyn_cast<FloatType>(t))
    return f.getWidth() < 16;
  return t.isInteger(2) || t.isInteger(4);
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Constant evaluation
//===----------------------------------------------------------------------===//

/// Largest result a folder evaluates element by element: shape arithmetic
/// and small tables, not weights (those are left to the graph passes).
constexpr int64_t kMaxFoldElements = 1 << 16;

/// Evaluates `fn` elementwise over constant operands broadcast (numpy
/// style) to `resultTy`. `fn` gets one element attribute per operand and
/// returns the result element, or null to give up.
static OpFoldResult
foldElementwise(Type resultType, ArrayRef<Attribute> operands,
                function_ref<Attribute(ArrayRef<Attribute>)> fn) {
  auto resultTy = dyn_cast<RankedTensorType>(resultType);
  if (!resultTy || !resultTy.hasStaticShape() ||
      resultTy.getNumElements() > kMaxFoldElements)
    return {};
  SmallVector<DenseElementsAttr> dense;
  for (Attribute a : operands) {
    auto d = dyn_cast_if_present<DenseElementsAttr>(a);
    if (!d)
      return {};
    dense.push_back(d);
  }
  ArrayRef<int64_t> shape = resultTy.getShape();
  int64_t rank = shape.size(), count = resultTy.getNumElements();
  SmallVector<Attribute> result;
  result.reserve(count);
  SmallVector<Attribute> args(dense.size());
  for (int64_t flat = 0; flat < count; ++flat) {
    for (auto [k, d] : llvm::enumerate(dense)) {
      if (d.isSplat()) {
        args[k] = d.getSplatValue<Attribute>();
        continue;
      }
      // Broadcast: the operand's trailing dims align with the result's.
      ArrayRef<int64_t> os = d.getType().getShape();
      int64_t index = 0, stride = 1, rest = flat;
      SmallVector<int64_t> coords(rank);
      for (int64_t i = rank - 1; i >= 0; --i) {
        coords[i] = rest % shape[i];
        rest /= shape[i];
      }
      for (int64_t i = os.size() - 1; i >= 0; --i) {
        int64_t c = os[i] == 1 ? 0 : coords[i + rank - os.size()];
        index += c * stride;
        stride *= os[i];
      }
      args[k] = d.getValues<Attribute>()[index];
    }
    Attribute r = fn(args);
    if (!r)
      return {};
    result.push_back(r);
  }
  return DenseElementsAttr::get(resultTy, result);
}

/// The float or integer payload of an element attribute.
static std::optional<APFloat> asFloat(Attribute a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValue();
  return std::nullopt;
}
static std::optional<APInt> asInt(Attribute a) {
  if (auto i = dyn_cast<IntegerAttr>(a))
    return i.getValue();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// kiln.constant
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  if (!isa<DenseElementsAttr, DenseResourceElementsAttr>(getValue()))
    return emitOpError("expects a dense or dense_resource value, got ")
           << getValue();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

/// Result type of a broadcasting binary op.
static LogicalResult inferBroadcastType(std::optional<Location> loc, Value lhs,
                                        Value rhs,
                                        SmallVectorImpl<Type> &types) {
  auto lhsTy = cast<RankedTensorType>(lhs.getType());
  auto rhsTy = cast<RankedTensorType>(rhs.getType());
  if (lhsTy.getElementType() != rhsTy.getElementType())
    return emitOptionalError(
        loc, "expects operands of equal element type, got ",
        lhsTy.getElementType(), " and ", rhsTy.getElementType());
  auto shape = broadcastShapes(lhsTy.getShape(), rhsTy.getShape());
  if (!shape)
    return emitOptionalError(loc, "expects broadcast-compatible shapes, got ",
                             shapeString(lhsTy.getShape()), " and ",
                             shapeString(rhsTy.getShape()));
  types.push_back(RankedTensorType::get(*shape, lhsTy.getElementType()));
  return success();
}

#define KILN_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferBroadcastType(loc, adaptor.getLhs(), adaptor.getRhs(), types); \
  }
KILN_BINARY_INFER(AddOp)
KILN_BINARY_INFER(SubOp)
KILN_BINARY_INFER(MulOp)
KILN_BINARY_INFER(DivOp)
KILN_BINARY_INFER(MaxOp)
KILN_BINARY_INFER(MinOp)
KILN_BINARY_INFER(PowOp)
KILN_BINARY_INFER(RemOp)
KILN_BINARY_INFER(AndOp)
KILN_BINARY_INFER(OrOp)
KILN_BINARY_INFER(XorOp)
#undef KILN_BINARY_INFER

LogicalResult CmpOp::inferReturnTypes(MLIRContext *ctx,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  SmallVector<Type> same;
  if (failed(inferBroadcastType(loc, adaptor.getLhs(), adaptor.getRhs(), same)))
    return failure();
  types.push_back(RankedTensorType::get(
      cast<RankedTensorType>(same[0]).getShape(), IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "expects at least one operand, found none");
  llvm::append_range(types, adaptor.getInputs().getTypes());
  return success();
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<Type> values;
  if (failed(
          inferBroadcastType(loc, adaptor.getLhs(), adaptor.getRhs(), values)))
    return failure();
  auto valueTy = cast<RankedTensorType>(values[0]);
  auto condTy = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto shape = broadcastShapes(condTy.getShape(), valueTy.getShape());
  if (!shape)
    return emitOptionalError(
        loc, "expects the condition to broadcast with the values, got ",
        shapeString(condTy.getShape()), " and ",
        shapeString(valueTy.getShape()));
  types.push_back(RankedTensorType::get(*shape, valueTy.getElementType()));
  return success();
}

/// True when `value` is a constant whose every element equals `scalar`. For
/// floats the sign of zero matters: x + (-0.0) = x for every x, but
/// x + (+0.0) turns -0.0 into +0.0.
static bool isSplatOf(Attribute value, double scalar) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(value);
  if (!dense || !dense.isSplat())
    return false;
  Type elt = dense.getElementType();
  if (isa<FloatType>(elt)) {
    APFloat v = dense.getSplatValue<APFloat>();
    return v.convertToDouble() == scalar &&
           v.isNegative() == std::signbit(scalar);
  }
  if (elt.isInteger(1))
    return false;
  if (isa<IntegerType>(elt))
    return dense.getSplatValue<APInt>().getSExtValue() ==
           static_cast<int64_t>(scalar);
  return false;
}

/// `x op c` where c is the identity element folds to x when no broadcast
/// changes x's type. `identity` is the float identity; integers use its
/// value (so -0.0 means 0).
static OpFoldResult foldRightIdentity(Operation *op, Value lhs, Attribute rhs,
                                      double identity) {
  if (lhs.getType() != op->getResult(0).getType())
    return {};
  bool isFloat = isa<FloatType>(getElementTypeOrSelf(lhs.getType()));
  double wanted = isFloat ? identity : std::fabs(identity);
  if (isSplatOf(rhs, wanted))
    return lhs;
  return {};
}

/// Folds two constants of the result's type elementwise.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldConstants(Operation *op, ArrayRef<Attribute> operands,
                                  FloatFn floatFn, IntFn intFn) {
  Type resultTy = op->getResult(0).getType();
  for (Attribute a : operands) {
    auto typed = dyn_cast_if_present<DenseElementsAttr>(a);
    if (!typed || (!typed.isSplat() && typed.getType() != resultTy))
      return {};
  }
  if (operands[0] && operands[1] &&
      cast<DenseElementsAttr>(operands[0]).getType() !=
          cast<DenseElementsAttr>(operands[1]).getType())
    return {};
  Type elt = mlir::getElementTypeOrSelf(resultTy);
  Attribute folded;
  if (isa<FloatType>(elt))
    folded = constFoldBinaryOp<FloatAttr, APFloat, void>(operands, floatFn);
  else
    folded = constFoldBinaryOp<IntegerAttr, APInt, void>(
        operands, [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
          return intFn(a, b);
        });
  auto dense = dyn_cast_if_present<DenseElementsAttr>(folded);
  if (!dense)
    return {};
  if (dense.getType() != resultTy) {
    if (!dense.isSplat())
      return {};
    return DenseElementsAttr::get(cast<ShapedType>(resultTy),
                                  dense.getSplatValue<Attribute>());
  }
  return dense;
}

/// Binary folding when the operands' shapes differ (broadcasting).
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBroadcastConstants(Operation *op,
                                           ArrayRef<Attribute> operands,
                                           FloatFn floatFn, IntFn intFn) {
  Type resultTy = op->getResult(0).getType();
  return foldElementwise(resultTy, operands,
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           Type elt = getElementTypeOrSelf(resultTy);
                           if (auto x = asFloat(a[0]))
                             if (auto y = asFloat(a[1]))
                               return FloatAttr::get(elt, floatFn(*x, *y));
                           auto x = asInt(a[0]), y = asInt(a[1]);
                           if (!x || !y)
                             return {};
                           std::optional<APInt> r = intFn(*x, *y);
                           return r ? IntegerAttr::get(elt, *r) : Attribute();
                         });
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), -0.0))
    return r;
  if (auto r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), -0.0))
    return r;
  auto floatFn = [](const APFloat &a, const APFloat &b) { return a + b; };
  auto intFn = [](const APInt &a, const APInt &b) -> std::optional<APInt> {
    return a + b;
  };
  if (auto r = foldConstants(*this, adaptor.getOperands(), floatFn, intFn))
    return r;
  return foldBroadcastConstants(*this, adaptor.getOperands(), floatFn, intFn);
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0.0))
    return r;
  auto floatFn = [](const APFloat &a, const APFloat &b) { return a - b; };
  auto intFn = [](const APInt &a, const APInt &b) -> std::optional<APInt> {
    return a - b;
  };
  if (auto r = foldConstants(*this, adaptor.getOperands(), floatFn, intFn))
    return r;
  return foldBroadcastConstants(*this, adaptor.getOperands(), floatFn, intFn);
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  if (auto r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 1.0))
    return r;
  auto floatFn = [](const APFloat &a, const APFloat &b) { return a * b; };
  auto intFn = [](const APInt &a, const APInt &b) -> std::optional<APInt> {
    return a * b;
  };
  if (auto r = foldConstants(*this, adaptor.getOperands(), floatFn, intFn))
    return r;
  return foldBroadcastConstants(*this, adaptor.getOperands(), floatFn, intFn);
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  auto floatFn = [](const APFloat &a, const APFloat &b) { return a / b; };
  auto intFn = [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
    // Division by zero and INT_MIN / -1 are left to run time.
    if (b.isZero() || (!isUnsigned && a.isMinSignedValue() && b.isAllOnes()))
      return std::nullopt;
    return isUnsigned ? a.udiv(b) : a.sdiv(b);
  };
  if (auto r = foldConstants(*this, adaptor.getOperands(), floatFn, intFn))
    return r;
  return foldBroadcastConstants(*this, adaptor.getOperands(), floatFn, intFn);
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return llvm::maximum(a, b); },
      [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umax(a, b)
                          : llvm::APIntOps::smax(a, b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) { return llvm::minimum(a, b); },
      [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return isUnsigned ? llvm::APIntOps::umin(a, b)
                          : llvm::APIntOps::smin(a, b);
      });
}

OpFoldResult RemOp::fold(FoldAdaptor adaptor) {
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &b) {
        APFloat r = a;
        r.mod(b); // C fmod: the sign of the dividend
        return r;
      },
      [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero() ||
            (!isUnsigned && a.isMinSignedValue() && b.isAllOnes()))
          return std::nullopt;
        return isUnsigned ? a.urem(b) : a.srem(b);
      });
}

OpFoldResult PowOp::fold(FoldAdaptor) { return {}; }

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &) { return a; },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a & b;
      });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &) { return a; },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a | b;
      });
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldBroadcastConstants(
      *this, adaptor.getOperands(),
      [](const APFloat &a, const APFloat &) { return a; },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return a ^ b;
      });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  return foldElementwise(getType(), adaptor.getOperands(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           auto x = asInt(a[0]);
                           return x ? IntegerAttr::get(
                                          getElementTypeOrSelf(getType()), ~*x)
                                    : Attribute();
                         });
}

OpFoldResult CmpOp::fold(FoldAdaptor adaptor) {
  CmpPredicate pred = getPredicate();
  bool isUnsigned =
      getElementTypeOrSelf(getLhs().getType()).isUnsignedInteger();
  Type i1 = IntegerType::get(getContext(), 1);
  return foldElementwise(getType(), adaptor.getOperands(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           bool r;
                           if (auto fx = asFloat(a[0])) {
                             auto fy = asFloat(a[1]);
                             if (!fy)
                               return {};
                             APFloat::cmpResult c = fx->compare(*fy);
                             bool eq = c == APFloat::cmpEqual,
                                  lt = c == APFloat::cmpLessThan,
                                  gt = c == APFloat::cmpGreaterThan;
                             switch (pred) {
                             case CmpPredicate::eq:
                               r = eq;
                               break;
                             case CmpPredicate::ne:
                               r = !eq;
                               break; // true for NaN (unordered)
                             case CmpPredicate::lt:
                               r = lt;
                               break;
                             case CmpPredicate::le:
                               r = lt || eq;
                               break;
                             case CmpPredicate::gt:
                               r = gt;
                               break;
                             case CmpPredicate::ge:
                               r = gt || eq;
                               break;
                             }
                           } else {
                             auto x = asInt(a[0]), y = asInt(a[1]);
                             if (!x || !y)
                               return {};
                             switch (pred) {
                             case CmpPredicate::eq:
                               r = *x == *y;
                               break;
                             case CmpPredicate::ne:
                               r = *x != *y;
                               break;
                             case CmpPredicate::lt:
                               r = isUnsigned ? x->ult(*y) : x->slt(*y);
                               break;
                             case CmpPredicate::le:
                               r = isUnsigned ? x->ule(*y) : x->sle(*y);
                               break;
                             case CmpPredicate::gt:
                               r = isUnsigned ? x->ugt(*y) : x->sgt(*y);
                               break;
                             case CmpPredicate::ge:
                               r = isUnsigned ? x->uge(*y) : x->sge(*y);
                               break;
                             }
                           }
                           return IntegerAttr::get(i1, r ? 1 : 0);
                         });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldElementwise(getType(), adaptor.getOperands(),
                         [](ArrayRef<Attribute> a) -> Attribute {
                           auto c = asInt(a[0]);
                           return c ? (c->isZero() ? a[2] : a[1]) : Attribute();
                         });
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

// Unary ops infer their type through SameOperandsAndResultType (generated).

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  // -(-x) = x
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && isa<FloatType>(dense.getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(), [](const APFloat &a) { return -a; });
  Type elt = getElementTypeOrSelf(getType());
  return foldElementwise(getType(), adaptor.getOperands(),
                         [&](ArrayRef<Attribute> a) -> Attribute {
                           auto x = asInt(a[0]);
                           return x ? IntegerAttr::get(elt, -*x) : Attribute();
                         });
}

OpFoldResult ReluOp::fold(FoldAdaptor) {
  // relu(relu(x)) = relu(x)
  if (getInput().getDefiningOp<ReluOp>())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// kiln.matmul
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhsTy = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhsTy = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhsTy.getElementType() != rhsTy.getElementType())
    return emitOptionalError(
        loc, "expects operands of equal element type, got ",
        lhsTy.getElementType(), " and ", rhsTy.getElementType());
  if (lhsTy.getRank() < 2 || rhsTy.getRank() < 2)
    return emitOptionalError(loc, "expects operands of rank 2 or more, got ",
                             lhsTy.getRank(), " and ", rhsTy.getRank());
  ArrayRef<int64_t> l = lhsTy.getShape(), r = rhsTy.getShape();
  // Rows and columns of each operand as the product reads them.
  bool tl = adaptor.getTransposeLhs(), tr = adaptor.getTransposeRhs();
  int64_t m = tl ? l.back() : l[l.size() - 2];
  int64_t k = tl ? l[l.size() - 2] : l.back();
  int64_t kr = tr ? r.back() : r[r.size() - 2];
  int64_t n = tr ? r[r.size() - 2] : r.back();
  if (k != kr)
    return emitOptionalError(loc, "expects lhs columns to equal rhs rows, got ",
                             k, " and ", kr);
  auto batch = broadcastShapes(l.drop_back(2), r.drop_back(2));
  if (!batch)
    return emitOptionalError(
        loc, "expects broadcast-compatible batch dimensions, got ",
        shapeString(l.drop_back(2)), " and ", shapeString(r.drop_back(2)));
  batch->push_back(m);
  batch->push_back(n);
  types.push_back(RankedTensorType::get(*batch, lhsTy.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferReduceType(std::optional<Location> loc, Value input,
                                     ArrayRef<int64_t> axes, bool keepDims,
                                     SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(input.getType());
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= inputTy.getRank())
      return emitOptionalError(loc, "expects axes in [0, ", inputTy.getRank(),
                               "), got ", axis);
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, "expects strictly increasing axes, got ",
                               shapeString(axes));
  }
  types.push_back(
      RankedTensorType::get(reducedShape(inputTy.getShape(), axes, keepDims),
                            inputTy.getElementType()));
  return success();
}

#define KILN_REDUCE(OP)                                                        \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *, std::optional<Location> loc, Adaptor adaptor,             \
      SmallVectorImpl<Type> &types) {                                          \
    return inferReduceType(loc, adaptor.getInput(), adaptor.getAxes(),         \
                           adaptor.getKeepdims(), types);                      \
  }                                                                            \
  OpFoldResult OP::fold(FoldAdaptor) {                                         \
    if (getAxes().empty() && getInput().getType() == getType())                \
      return getInput();                                                       \
    return {};                                                                 \
  }
KILN_REDUCE(ReduceSumOp)
KILN_REDUCE(ReduceMeanOp)
KILN_REDUCE(ReduceMaxOp)
KILN_REDUCE(ReduceMinOp)
KILN_REDUCE(ReduceProdOp)
#undef KILN_REDUCE

//===----------------------------------------------------------------------===//
// kiln.reshape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto inputTy = getInput().getType();
  auto resultTy = getType();
  if (inputTy.getElementType() != resultTy.getElementType())
    return emitOpError(
               "expects the result element type to equal the input's, got ")
           << resultTy.getElementType() << " and " << inputTy.getElementType();
  if (inputTy.getNumElements() != resultTy.getNumElements())
    return emitOpError("expects the same number of elements, got ")
           << inputTy.getNumElements() << " in the input and "
           << resultTy.getNumElements() << " in the result";
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) = reshape(x)
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// kiln.transpose
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != inputTy.getRank())
    return emitOptionalError(loc, "expects perm of size ", inputTy.getRank(),
                             " (the input rank), got ", perm.size());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= inputTy.getRank() || seen[p])
      return emitOptionalError(loc, "expects perm to be a permutation of [0, ",
                               inputTy.getRank(), "), got ", shapeString(perm));
    seen[p] = true;
    shape.push_back(inputTy.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, inputTy.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPerm();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto it) {
    return static_cast<int64_t>(it.index()) == it.value();
  });
  if (identity)
    return getInput();
  // transpose(transpose(x, p), q) = transpose(x, p o q)
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPerm(composed);
    return getResult();
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat())
    return dense.resizeSplat(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// kiln.argmax / kiln.argmin
//===----------------------------------------------------------------------===//

static LogicalResult inferArgType(MLIRContext *ctx, std::optional<Location> loc,
                                  Value input, int64_t axis, bool keepDims,
                                  SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(input.getType());
  if (axis < 0 || axis >= inputTy.getRank())
    return emitOptionalError(loc, "expects axis in [0, ", inputTy.getRank(),
                             "), got ", axis);
  types.push_back(
      RankedTensorType::get(reducedShape(inputTy.getShape(), {axis}, keepDims),
                            IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArgType(ctx, loc, adaptor.getInput(), adaptor.getAxis(),
                      adaptor.getKeepdims(), types);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  return inferArgType(ctx, loc, adaptor.getInput(), adaptor.getAxis(),
                      adaptor.getKeepdims(), types);
}

//===----------------------------------------------------------------------===//
// kiln.cast and kiln.broadcast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("expects the result shape to equal the input's, got ")
           << shapeString(getType().getShape()) << " and "
           << shapeString(getInput().getType().getShape());
  StringRef mode = getRoundMode();
  if (mode != "up" && mode != "down" && mode != "nearest")
    return emitOpError("expects round_mode 'up', 'down' or 'nearest', got '")
           << mode << "'";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  Type from = getInput().getType().getElementType();
  Type to = getType().getElementType();
  // Narrow conversions saturate and round in ways APFloat does not model;
  // they are computed at run time only.
  if (isNarrowType(from) || isNarrowType(to))
    return {};
  return foldElementwise(
      getType(), adaptor.getOperands(),
      [&](ArrayRef<Attribute> a) -> Attribute {
        if (to.isInteger(1)) {
          if (auto f = asFloat(a[0]))
            return IntegerAttr::get(to, !f->isZero());
          auto i = asInt(a[0]);
          return i ? IntegerAttr::get(to, !i->isZero()) : Attribute();
        }
        bool fromUnsigned = from.isUnsignedInteger() || from.isInteger(1);
        if (auto toFloat = dyn_cast<FloatType>(to)) {
          APFloat r(toFloat.getFloatSemantics());
          bool lost;
          if (auto f = asFloat(a[0])) {
            r = *f;
            r.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                      &lost);
          } else if (auto i = asInt(a[0])) {
            r.convertFromAPInt(*i, !fromUnsigned, APFloat::rmNearestTiesToEven);
          } else {
            return {};
          }
          return FloatAttr::get(to, r);
        }
        unsigned width = to.getIntOrFloatBitWidth();
        if (auto f = asFloat(a[0])) {
          // Out-of-range and NaN conversions are undefined: leave them to run
          // time.
          APSInt r(width, to.isUnsignedInteger());
          bool exact;
          APFloat::opStatus status =
              f->convertToInteger(r, APFloat::rmTowardZero, &exact);
          if (status != APFloat::opOK && status != APFloat::opInexact)
            return {};
          return IntegerAttr::get(to, r);
        }
        auto i = asInt(a[0]);
        if (!i)
          return {};
        return IntegerAttr::get(to, fromUnsigned ? i->zextOrTrunc(width)
                                                 : i->sextOrTrunc(width));
      });
}

LogicalResult BroadcastOp::verify() {
  auto inputTy = getInput().getType();
  auto resultTy = getType();
  if (inputTy.getElementType() != resultTy.getElementType())
    return emitOpError(
               "expects the result element type to equal the input's, got ")
           << resultTy.getElementType() << " and " << inputTy.getElementType();
  auto shape = broadcastShapes(inputTy.getShape(), resultTy.getShape());
  if (!shape || ArrayRef<int64_t>(*shape) != resultTy.getShape())
    return emitOpError(
               "expects the input shape to broadcast to the result's, got ")
           << shapeString(inputTy.getShape()) << " and "
           << shapeString(resultTy.getShape());
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat())
    return dense.resizeSplat(getType());
  return {};
}

//===----------------------------------------------------------------------===//
// kiln.concat
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "expects at least one input");
  auto first = cast<RankedTensorType>(inputs[0].getType());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "expects axis in [0, ", first.getRank(),
                             "), got ", axis);
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(
          loc, "expects inputs of equal element type, got ",
          first.getElementType(), " and input ", i, " of ", t.getElementType());
    if (t.getRank() != first.getRank())
      return emitOptionalError(loc, "expects inputs of equal rank, got ",
                               first.getRank(), " and input ", i, " of rank ",
                               t.getRank());
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return emitOptionalError(
            loc,
            "expects inputs to agree on every dimension but the axis, got ",
            shapeString(first.getShape()), " and input ", i, " of ",
            shapeString(t.getShape()));
    shape[axis] += t.getDimSize(axis);
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs()[0];
  return {};
}

//===----------------------------------------------------------------------===//
// kiln.slice
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::verify() {
  auto inputTy = getInput().getType();
  auto resultTy = getType();
  int64_t rank = inputTy.getRank();
  if (resultTy.getElementType() != inputTy.getElementType())
    return emitOpError(
               "expects the result element type to equal the input's, got ")
           << resultTy.getElementType() << " and " << inputTy.getElementType();
  if (resultTy.getRank() != rank ||
      static_cast<int64_t>(getStarts().size()) != rank ||
      static_cast<int64_t>(getStrides().size()) != rank)
    return emitOpError("expects starts, strides and the result to have the "
                       "input's rank ")
           << rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t start = getStarts()[d], stride = getStrides()[d];
    int64_t size = resultTy.getDimSize(d);
    if (stride == 0)
      return emitOpError("expects nonzero strides, got 0 in dimension ") << d;
    if (size == 0)
      continue;
    int64_t last = start + (size - 1) * stride;
    if (start < 0 || start >= inputTy.getDimSize(d) || last < 0 ||
        last >= inputTy.getDimSize(d))
      return emitOpError("reads outside the input in dimension ")
             << d << ": elements " << start << " to " << last << " of "
             << inputTy.getDimSize(d);
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  for (auto [start, stride] : llvm::zip(getStarts(), getStrides()))
    if (start != 0 || stride != 1)
      return {};
  return getInput();
}

//===----------------------------------------------------------------------===//
// kiln.gather
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto dataTy = cast<RankedTensorType>(adaptor.getData().getType());
  auto indicesTy = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= dataTy.getRank())
    return emitOptionalError(loc, "expects axis in [0, ", dataTy.getRank(),
                             "), got ", axis);
  if (dataTy.getDimSize(axis) == 0 && indicesTy.getNumElements() > 0)
    return emitOptionalError(loc, "cannot gather from an empty axis");
  SmallVector<int64_t> shape(dataTy.getShape().take_front(axis));
  llvm::append_range(shape, indicesTy.getShape());
  llvm::append_range(shape, dataTy.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, dataTy.getElementType()));
  return success();
}

LogicalResult ScatterOp::verify() {
  auto dataTy = getData().getType(), updatesTy = getUpdates().getType();
  auto indicesTy = getIndices().getType();
  if (dataTy.getRank() != 1 || indicesTy.getRank() != 1 ||
      updatesTy.getRank() != 1)
    return emitOpError("expects 1-D data, indices and updates, got ")
           << dataTy << ", " << indicesTy << " and " << updatesTy;
  if (updatesTy.getElementType() != dataTy.getElementType())
    return emitOpError("expects updates of the data's element type ")
           << dataTy.getElementType() << ", got " << updatesTy.getElementType();
  if (indicesTy.getDimSize(0) != updatesTy.getDimSize(0))
    return emitOpError("expects one index per update, got ")
           << indicesTy.getDimSize(0) << " indices and "
           << updatesTy.getDimSize(0) << " updates";
  if (dataTy.getElementType().isInteger(1) &&
      getReduction() != ScatterReduction::none)
    return emitOpError("expects reduction none on i1 data, got ")
           << stringifyScatterReduction(getReduction());
  return success();
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(adaptor.getInput().getType());
  if (inputTy.getRank() != 2)
    return emitOptionalError(loc, "expects a 2-D input, got ", inputTy);
  int64_t k = adaptor.getK();
  if (k < 0 || k > inputTy.getDimSize(1))
    return emitOptionalError(loc, "expects k in [0, ", inputTy.getDimSize(1),
                             "], got ", k);
  SmallVector<int64_t> shape = {inputTy.getDimSize(0), k};
  types.push_back(RankedTensorType::get(shape, inputTy.getElementType()));
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.conv and kiln.pool
//===----------------------------------------------------------------------===//

/// Checks window attributes against `spatial` input dims and computes the
/// output's spatial sizes.
static LogicalResult
inferWindowShape(std::optional<Location> loc, ArrayRef<int64_t> spatial,
                 ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                 ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                 SmallVectorImpl<int64_t> &out) {
  size_t k = spatial.size();
  if (kernel.size() != k || strides.size() != k || dilations.size() != k ||
      pads.size() != 2 * k)
    return emitOptionalError(loc, "expects ", k,
                             " kernel sizes, strides and dilations and ", 2 * k,
                             " pads for ", k, " spatial dimensions");
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1)
      return emitOptionalError(
          loc, "expects positive kernel sizes, strides and dilations");
    if (pads[i] < 0 || pads[k + i] < 0)
      return emitOptionalError(loc, "expects non-negative pads");
    int64_t span = dilations[i] * (kernel[i] - 1) + 1;
    int64_t padded = spatial[i] + pads[i] + pads[k + i];
    if (padded < span)
      return emitOptionalError(loc, "expects the window (", span,
                               " elements) to fit the padded input (", padded,
                               ") in spatial dimension ", i);
    out.push_back((padded - span) / strides[i] + 1);
  }
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(adaptor.getInput().getType());
  auto filterTy = cast<RankedTensorType>(adaptor.getFilter().getType());
  if (inputTy.getElementType() != filterTy.getElementType())
    return emitOptionalError(
        loc, "expects operands of equal element type, got ",
        inputTy.getElementType(), " and ", filterTy.getElementType());
  if (inputTy.getRank() < 3 || filterTy.getRank() != inputTy.getRank())
    return emitOptionalError(loc,
                             "expects input and filter of equal rank 3 or "
                             "more, got ",
                             inputTy.getRank(), " and ", filterTy.getRank());
  int64_t group = adaptor.getGroup();
  int64_t channels = inputTy.getDimSize(1), filters = filterTy.getDimSize(0);
  if (group < 1 || channels % group || filters % group ||
      filterTy.getDimSize(1) * group != channels)
    return emitOptionalError(
        loc, "expects group ", group, " to divide ", channels,
        " input channels and ", filters, " filters, with ",
        channels / std::max<int64_t>(group, 1), " channels per filter, got ",
        filterTy.getDimSize(1));
  SmallVector<int64_t> shape = {inputTy.getDimSize(0), filters};
  if (failed(inferWindowShape(loc, inputTy.getShape().drop_front(2),
                              filterTy.getShape().drop_front(2),
                              adaptor.getStrides(), adaptor.getDilations(),
                              adaptor.getPads(), shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, inputTy.getElementType()));
  return success();
}

LogicalResult PoolOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto inputTy = cast<RankedTensorType>(adaptor.getInput().getType());
  if (inputTy.getRank() < 3)
    return emitOptionalError(loc, "expects an input of rank 3 or more, got ",
                             inputTy.getRank());
  SmallVector<int64_t> shape(inputTy.getShape().take_front(2));
  if (failed(inferWindowShape(loc, inputTy.getShape().drop_front(2),
                              adaptor.getKernel(), adaptor.getStrides(),
                              adaptor.getDilations(), adaptor.getPads(),
                              shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, inputTy.getElementType()));
  return success();
}

LogicalResult FusedOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("expects one block argument per input (")
           << getInputs().size() << "), got " << body.getNumArguments();
  for (auto [i, arg, input] : llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError("expects block argument ")
             << i << " of the type of its input, " << input.getType()
             << ", got " << arg.getType();
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("expects its body to end in kiln.yield");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("expects kiln.yield of ")
           << getNumResults() << " values (one per result), got "
           << yield.getValues().size();
  for (auto [i, value, type] :
       llvm::enumerate(yield.getValues(), getResultTypes()))
    if (value.getType() != type)
      return emitOpError("expects yielded value ")
             << i << " of the result type " << type << ", got "
             << value.getType();
  return success();
}

#include "kiln/IR/KilnEnums.cpp.inc"

#define GET_OP_CLASSES
#include "kiln/IR/KilnOps.cpp.inc"
