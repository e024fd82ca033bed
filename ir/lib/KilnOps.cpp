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
#include "kiln/IR/ConstantEvaluator.h"
#include "kiln/IR/SymbolicDims.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

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

/// `shape` reduced over `axes`, dropped or kept as `one`: the rule for
/// static sizes and for symbolic ones.
template <typename T>
static SmallVector<T> reduced(ArrayRef<T> shape, ArrayRef<int64_t> axes,
                              bool keepDims, T one) {
  SmallVector<T> result;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(dim);
    else if (keepDims)
      result.push_back(one);
  }
  return result;
}

SmallVector<int64_t> kiln::reducedShape(ArrayRef<int64_t> shape,
                                        ArrayRef<int64_t> axes, bool keepDims) {
  return reduced<int64_t>(shape, axes, keepDims, 1);
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

/// A type's shape for diagnostics: its symbolic sizes where it has them.
static std::string shapeString(RankedTensorType type) {
  return hasSymbolicDims(type) ? dimsString(dimExprs(type))
                               : shapeString(type.getShape());
}

//===----------------------------------------------------------------------===//
// Constant evaluation
//===----------------------------------------------------------------------===//

/// Largest broadcast a folder evaluates: shape arithmetic and small tables,
/// not weights (those are left to the graph passes). Operands that already
/// have the result's shape (or are splats) fold at any size.
constexpr int64_t kMaxFoldElements = 1 << 16;

/// The op's value when all its operands are dense constants, from the one
/// evaluator of op semantics (ConstantEvaluator.cpp), which
/// kiln-fold-constants uses too: a folder adds only algebra (identities,
/// x op x), never a second definition of what the op computes.
static OpFoldResult foldThroughEvaluator(Operation *op,
                                         ArrayRef<Attribute> operands) {
  Type resultTy = op->getResult(0).getType();
  // A value with symbolic sizes has no one constant (decision 0027).
  if (hasSymbolicDims(resultTy))
    return {};
  SmallVector<DenseElementsAttr> dense;
  bool sameShape = true;
  for (Attribute a : operands) {
    auto d = dyn_cast_if_present<DenseElementsAttr>(a);
    if (!d)
      return {};
    sameShape &= d.isSplat() || d.getType() == resultTy;
    dense.push_back(d);
  }
  int64_t limit =
      sameShape ? std::numeric_limits<int64_t>::max() : kMaxFoldElements;
  return evaluateConstantOp(op, dense, limit);
}

//===----------------------------------------------------------------------===//
// kiln.constant
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  if (hasSymbolicDims(getType()))
    return emitOpError("expects static sizes, got ") << getType();
  if (!isa<DenseElementsAttr, DenseResourceElementsAttr>(getValue()))
    return emitOpError("expects a dense or dense_resource value, got ")
           << getValue();
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// kiln.sizes
//===----------------------------------------------------------------------===//

LogicalResult SizesOp::verify() {
  auto type = getType();
  if (type.getRank() > 1 ||
      type.getNumElements() != static_cast<int64_t>(getSizes().size()))
    return emitOpError("expects a tensor of rank 0 or 1 with one element per "
                       "size, got ")
           << type << " for " << getSizes().size() << " sizes";
  for (Attribute size : getSizes()) {
    auto text = dyn_cast<StringAttr>(size);
    if (!text || !DimExpr::parse(text.str()))
      return emitOpError("expects size expressions, got ") << size;
  }
  return success();
}

LogicalResult NonZeroOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto type = getType();
  std::optional<DimExpr> count = DimExpr::parse(getCount().str());
  if (!count || *count != DimExpr::symbol(getCount().str()))
    return emitOpError("expects a symbol name as count, got '")
           << getCount() << "'";
  SmallVector<DimExpr> sizes = dimExprs(type);
  if (type.getRank() != 2 || type.getDimSize(0) != input.getRank() ||
      type.getDimSize(1) != input.getNumElements() ||
      sizes[0] != DimExpr::constant(input.getRank()) || sizes[1] != *count)
    return emitOpError("expects a result of sizes [")
           << input.getRank() << ", " << getCount() << "] bounded by ["
           << input.getRank() << ", " << input.getNumElements() << "], got "
           << type;
  return success();
}

LogicalResult ChooseOp::verify() {
  auto a = cast<RankedTensorType>(getThenValue().getType());
  auto b = cast<RankedTensorType>(getElseValue().getType());
  auto type = getType();
  if (cast<RankedTensorType>(getCondition().getType()).getNumElements() != 1)
    return emitOpError("expects a one-element condition");
  if (a.getRank() != b.getRank() || a.getRank() != type.getRank() ||
      a.getElementType() != b.getElementType() ||
      type.getElementType() != a.getElementType() ||
      getCounts().size() != static_cast<size_t>(a.getRank()))
    return emitOpError("expects values and a result of one rank and element "
                       "type and one count per axis, got ")
           << a << ", " << b << " and " << type;
  SmallVector<DimExpr> as = dimExprs(a), bs = dimExprs(b), rs = dimExprs(type);
  for (int64_t d = 0; d < a.getRank(); ++d) {
    auto count = cast<StringAttr>(getCounts()[d]).getValue();
    int64_t bound = std::max(a.getDimSize(d), b.getDimSize(d));
    bool agree = as[d] == bs[d];
    if (agree ? !count.empty() || rs[d] != as[d]
              : count.empty() || rs[d] != DimExpr::symbol(count.str()) ||
                    type.getDimSize(d) != bound)
      return emitOpError("expects axis ")
             << d << " of the result to be "
             << (agree ? as[d].str() : "its count, bounded by the larger size")
             << ", got " << type;
  }
  return success();
}

LogicalResult SliceToOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto type = getType();
  int64_t axis = static_cast<int64_t>(getAxis());
  int64_t start = static_cast<int64_t>(getStart());
  int64_t end = static_cast<int64_t>(getEnd());
  if (axis < 0 || axis >= input.getRank() ||
      type.getRank() != input.getRank() ||
      type.getElementType() != input.getElementType() || start < 0 ||
      end < start)
    return emitOpError("expects an axis of the input and 0 <= start <= end, "
                       "got axis ")
           << axis << " of " << input << ", " << start << ".." << end;
  SmallVector<DimExpr> in = dimExprs(input), out = dimExprs(type);
  int64_t bound =
      std::max<int64_t>(std::min(input.getDimSize(axis), end) - start, 0);
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (d == axis
            ? out[d] != DimExpr::symbol(getCount().str()) ||
                  type.getDimSize(d) != bound
            : out[d] != in[d] || type.getDimSize(d) != input.getDimSize(d))
      return emitOpError("expects the input's sizes with axis ")
             << axis << " the count '" << getCount() << "' bounded by " << bound
             << ", got " << type;
  return success();
}

LogicalResult NonMaxSuppressionOp::verify() {
  auto boxes = cast<RankedTensorType>(getBoxes().getType());
  auto scores = cast<RankedTensorType>(getScores().getType());
  SmallVector<DimExpr> boxSizes = dimExprs(boxes),
                       scoreSizes = dimExprs(scores);
  if (boxes.getRank() != 3 || boxes.getDimSize(2) != 4 ||
      scores.getRank() != 3 || scores.getDimSize(0) != boxes.getDimSize(0) ||
      scores.getDimSize(2) != boxes.getDimSize(1) ||
      !boxSizes[0].getConstant() || !scoreSizes[1].getConstant() ||
      boxSizes[1] != scoreSizes[2])
    return emitOpError("expects boxes [B, N, 4] and scores [B, C, N] with "
                       "static B and C, got ")
           << boxes << " and " << scores;
  for (Value v : {getMaxOutput(), getIouThreshold(), getScoreThreshold()})
    if (cast<RankedTensorType>(v.getType()).getNumElements() != 1)
      return emitOpError("expects one-element thresholds, got ") << v.getType();
  std::optional<DimExpr> count = DimExpr::parse(getCount().str());
  if (!count || *count != DimExpr::symbol(getCount().str()))
    return emitOpError("expects a symbol name as count, got '")
           << getCount() << "'";
  auto type = getType();
  int64_t all =
      boxes.getDimSize(0) * scores.getDimSize(1) * boxes.getDimSize(1);
  SmallVector<DimExpr> sizes = dimExprs(type);
  if (type.getRank() != 2 || type.getDimSize(1) != 3 ||
      type.getDimSize(0) > all || sizes[0] != *count ||
      sizes[1] != DimExpr::constant(3))
    return emitOpError("expects a result of sizes [")
           << getCount() << ", 3] bounded by [" << all << ", 3], got " << type;
  return success();
}

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
  std::optional<SmallVector<DimExpr>> dims;
  if (shape && anySymbolicDims({lhsTy, rhsTy}))
    dims = broadcastDims(dimExprs(lhsTy), dimExprs(rhsTy));
  if (!shape || (anySymbolicDims({lhsTy, rhsTy}) && !dims))
    return emitOptionalError(loc, "expects broadcast-compatible shapes, got ",
                             shapeString(lhsTy), " and ", shapeString(rhsTy));
  types.push_back(
      dims ? symbolicTensorType(*shape, *dims, lhsTy.getElementType())
           : RankedTensorType::get(*shape, lhsTy.getElementType()));
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
  types.push_back(withElementType(cast<RankedTensorType>(same[0]),
                                  IntegerType::get(ctx, 1)));
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
  bool symbolic = anySymbolicDims({condTy, valueTy});
  std::optional<SmallVector<DimExpr>> dims;
  if (shape && symbolic)
    dims = broadcastDims(dimExprs(condTy), dimExprs(valueTy));
  if (!shape || (symbolic && !dims))
    return emitOptionalError(
        loc, "expects the condition to broadcast with the values, got ",
        shapeString(condTy), " and ", shapeString(valueTy));
  types.push_back(
      dims ? symbolicTensorType(*shape, *dims, valueTy.getElementType())
           : RankedTensorType::get(*shape, valueTy.getElementType()));
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

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), -0.0))
    return r;
  if (auto r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), -0.0))
    return r;
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 0.0))
    return r;
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  if (auto r = foldRightIdentity(*this, getRhs(), adaptor.getLhs(), 1.0))
    return r;
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (auto r = foldRightIdentity(*this, getLhs(), adaptor.getRhs(), 1.0))
    return r;
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

#define KILN_FOLD_THROUGH_EVALUATOR(OP)                                        \
  OpFoldResult OP::fold(FoldAdaptor adaptor) {                                 \
    return foldThroughEvaluator(*this, adaptor.getOperands());                 \
  }
KILN_FOLD_THROUGH_EVALUATOR(MaxOp)
KILN_FOLD_THROUGH_EVALUATOR(MinOp)
KILN_FOLD_THROUGH_EVALUATOR(RemOp)
KILN_FOLD_THROUGH_EVALUATOR(AndOp)
KILN_FOLD_THROUGH_EVALUATOR(OrOp)
KILN_FOLD_THROUGH_EVALUATOR(XorOp)
KILN_FOLD_THROUGH_EVALUATOR(NotOp)
KILN_FOLD_THROUGH_EVALUATOR(CmpOp)
#undef KILN_FOLD_THROUGH_EVALUATOR

// Pow is left to kiln-fold-constants, which folds it through the same
// evaluator; canonicalization keeps a pow of constants as written.
OpFoldResult PowOp::fold(FoldAdaptor) { return {}; }

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

// Unary ops infer their type through SameOperandsAndResultType (generated).

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  // -(-x) = x
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return foldThroughEvaluator(*this, adaptor.getOperands());
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
  if (!anySymbolicDims({lhsTy, rhsTy})) {
    types.push_back(RankedTensorType::get(*batch, lhsTy.getElementType()));
    return success();
  }
  // The same rule over the symbolic sizes.
  SmallVector<DimExpr> ld = dimExprs(lhsTy), rd = dimExprs(rhsTy);
  size_t lr = ld.size(), rr = rd.size();
  DimExpr sm = tl ? ld[lr - 1] : ld[lr - 2], sk = tl ? ld[lr - 2] : ld[lr - 1];
  DimExpr skr = tr ? rd[rr - 1] : rd[rr - 2], sn = tr ? rd[rr - 2] : rd[rr - 1];
  if (sk != skr)
    return emitOptionalError(loc, "expects lhs columns to equal rhs rows, got ",
                             sk.str(), " and ", skr.str());
  auto dims = broadcastDims(ArrayRef<DimExpr>(ld).drop_back(2),
                            ArrayRef<DimExpr>(rd).drop_back(2));
  if (!dims)
    return emitOptionalError(
        loc, "expects broadcast-compatible batch dimensions, got ",
        dimsString(ArrayRef<DimExpr>(ld).drop_back(2)), " and ",
        dimsString(ArrayRef<DimExpr>(rd).drop_back(2)));
  dims->push_back(sm);
  dims->push_back(sn);
  types.push_back(symbolicTensorType(*batch, *dims, lhsTy.getElementType()));
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
  types.push_back(symbolicTensorType(
      reducedShape(inputTy.getShape(), axes, keepDims),
      reduced<DimExpr>(dimExprs(inputTy), axes, keepDims, DimExpr::constant(1)),
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
  if (anySymbolicDims({inputTy, resultTy})) {
    DimExpr in = DimExpr::constant(1), out = DimExpr::constant(1);
    for (const DimExpr &d : dimExprs(inputTy))
      in = in * d;
    for (const DimExpr &d : dimExprs(resultTy))
      out = out * d;
    if (in != out)
      return emitOpError("expects the same number of elements, got ")
             << in.str() << " in the input and " << out.str()
             << " in the result";
  }
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
  SmallVector<DimExpr> inputDims = dimExprs(inputTy), dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= inputTy.getRank() || seen[p])
      return emitOptionalError(loc, "expects perm to be a permutation of [0, ",
                               inputTy.getRank(), "), got ", shapeString(perm));
    seen[p] = true;
    shape.push_back(inputTy.getDimSize(p));
    dims.push_back(inputDims[p]);
  }
  types.push_back(symbolicTensorType(shape, dims, inputTy.getElementType()));
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
      symbolicTensorType(reducedShape(inputTy.getShape(), {axis}, keepDims),
                         reduced<DimExpr>(dimExprs(inputTy), {axis}, keepDims,
                                          DimExpr::constant(1)),
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
  if (getInput().getType().getShape() != getType().getShape() ||
      getInput().getType().getEncoding() != getType().getEncoding())
    return emitOpError("expects the result shape to equal the input's, got ")
           << shapeString(getType()) << " and "
           << shapeString(getInput().getType());
  StringRef mode = getRoundMode();
  if (mode != "up" && mode != "down" && mode != "nearest")
    return emitOpError("expects round_mode 'up', 'down' or 'nearest', got '")
           << mode << "'";
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return foldThroughEvaluator(*this, adaptor.getOperands());
}

LogicalResult BroadcastOp::verify() {
  auto inputTy = getInput().getType();
  auto resultTy = getType();
  if (inputTy.getElementType() != resultTy.getElementType())
    return emitOpError(
               "expects the result element type to equal the input's, got ")
           << resultTy.getElementType() << " and " << inputTy.getElementType();
  auto shape = broadcastShapes(inputTy.getShape(), resultTy.getShape());
  bool fits = shape && ArrayRef<int64_t>(*shape) == resultTy.getShape();
  if (fits && anySymbolicDims({inputTy, resultTy})) {
    SmallVector<DimExpr> resultDims = dimExprs(resultTy);
    auto dims = broadcastDims(dimExprs(inputTy), resultDims);
    fits = dims && *dims == resultDims;
  }
  if (!fits)
    return emitOpError(
               "expects the input shape to broadcast to the result's, got ")
           << shapeString(inputTy) << " and " << shapeString(resultTy);
  return success();
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // A constant has static sizes; a splat over symbolic sizes stays a
  // broadcast (decision 0027).
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
      dense && dense.isSplat() && !hasSymbolicDims(getType()))
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
  bool symbolic = anySymbolicDims(inputs.getTypes());
  SmallVector<DimExpr> firstDims = dimExprs(first), dims = firstDims;
  dims[axis] = DimExpr();
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
    if (!symbolic)
      continue;
    SmallVector<DimExpr> tDims = dimExprs(t);
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && tDims[d] != firstDims[d])
        return emitOptionalError(
            loc,
            "expects inputs to agree on every dimension but the axis, got ",
            dimsString(firstDims), " and input ", i, " of ", dimsString(tDims));
    dims[axis] = dims[axis] + tDims[axis];
  }
  types.push_back(symbolic
                      ? symbolicTensorType(shape, dims, first.getElementType())
                      : RankedTensorType::get(shape, first.getElementType()));
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
  if (!anySymbolicDims({inputTy, resultTy}))
    return success();
  // Along a symbolic dimension a slice takes what follows its start, or a
  // window of a constant size; a static dimension may give a window of a
  // symbolic size (it fits at the bounds, checked above). The importer
  // checks the lower ends of the ranges.
  SmallVector<DimExpr> in = dimExprs(inputTy), out = dimExprs(resultTy);
  for (int64_t d = 0; d < rank; ++d) {
    if (out[d].getConstant() || in[d].getConstant())
      continue;
    if (out[d] + DimExpr::constant(getStarts()[d]) != in[d] ||
        getStrides()[d] != 1)
      return emitOpError("expects a symbolic dimension to be taken from its "
                         "start to its end, got ")
             << out[d].str() << " of " << in[d].str() << " from "
             << getStarts()[d] << " in dimension " << d;
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
  SmallVector<DimExpr> dataDims = dimExprs(dataTy);
  SmallVector<DimExpr> dims(ArrayRef<DimExpr>(dataDims).take_front(axis));
  llvm::append_range(dims, dimExprs(indicesTy));
  llvm::append_range(dims, ArrayRef<DimExpr>(dataDims).drop_front(axis + 1));
  types.push_back(symbolicTensorType(shape, dims, dataTy.getElementType()));
  return success();
}

LogicalResult ScatterOp::verify() {
  auto dataTy = getData().getType(), updatesTy = getUpdates().getType();
  auto indicesTy = getIndices().getType();
  if (anySymbolicDims({dataTy, indicesTy, updatesTy}))
    return emitOpError("expects static sizes, got ")
           << dataTy << ", " << indicesTy << " and " << updatesTy;
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
  SmallVector<DimExpr> inputDims = dimExprs(inputTy);
  if (!inputDims[1].getConstant() && !adaptor.getCount())
    return emitOptionalError(loc, "expects a static axis to choose from, got ",
                             inputDims[1].str(), " (or k known at run time)");
  SmallVector<int64_t> shape = {inputTy.getDimSize(0), k};
  SmallVector<DimExpr> dims = {inputDims[0], DimExpr::constant(k)};
  // A k known at run time: the bound k, the size the computed symbol.
  if (adaptor.getKValue() || adaptor.getCount()) {
    if (!adaptor.getKValue() || !adaptor.getCount())
      return emitOptionalError(loc, "expects k_value and count together");
    auto kTy = cast<RankedTensorType>(adaptor.getKValue().getType());
    std::optional<DimExpr> count = DimExpr::parse(adaptor.getCount()->str());
    if (kTy.getNumElements() != 1 || !count ||
        *count != DimExpr::symbol(adaptor.getCount()->str()))
      return emitOptionalError(loc, "expects a one-element k_value and a "
                                    "symbol name as count");
    dims[1] = *count;
  }
  types.push_back(symbolicTensorType(shape, dims, inputTy.getElementType()));
  types.push_back(symbolicTensorType(shape, dims, IntegerType::get(ctx, 64)));
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

/// The window rule of inferWindowShape (checked there on the bounds) over
/// the symbolic sizes of `input`: batch and channels copied from `leading`.
static SmallVector<DimExpr>
windowDims(ArrayRef<DimExpr> leading, ArrayRef<DimExpr> spatial,
           ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
           ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  SmallVector<DimExpr> dims(leading);
  size_t k = spatial.size();
  for (size_t i = 0; i < k; ++i) {
    int64_t span = dilations[i] * (kernel[i] - 1) + 1;
    DimExpr padded = spatial[i] + DimExpr::constant(pads[i] + pads[k + i]);
    dims.push_back((padded - DimExpr::constant(span)).floorDiv(strides[i]) +
                   DimExpr::constant(1));
  }
  return dims;
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
  if (!anySymbolicDims({inputTy, filterTy})) {
    types.push_back(RankedTensorType::get(shape, inputTy.getElementType()));
    return success();
  }
  SmallVector<DimExpr> inputDims = dimExprs(inputTy);
  if (hasSymbolicDims(filterTy) || !inputDims[1].getConstant())
    return emitOptionalError(
        loc, "expects static channels and filter sizes, got input ",
        shapeString(inputTy), " and filter ", shapeString(filterTy));
  SmallVector<DimExpr> dims =
      windowDims({inputDims[0], DimExpr::constant(filters)},
                 ArrayRef<DimExpr>(inputDims).drop_front(2),
                 filterTy.getShape().drop_front(2), adaptor.getStrides(),
                 adaptor.getDilations(), adaptor.getPads());
  types.push_back(symbolicTensorType(shape, dims, inputTy.getElementType()));
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
  SmallVector<DimExpr> inputDims = dimExprs(inputTy);
  types.push_back(
      symbolicTensorType(shape,
                         windowDims(ArrayRef<DimExpr>(inputDims).take_front(2),
                                    ArrayRef<DimExpr>(inputDims).drop_front(2),
                                    adaptor.getKernel(), adaptor.getStrides(),
                                    adaptor.getDilations(), adaptor.getPads()),
                         inputTy.getElementType()));
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

SmallVector<StringRef> kiln::computedSizesOf(Operation *op) {
  SmallVector<StringRef> names;
  if (auto nonZero = dyn_cast<NonZeroOp>(op))
    names.push_back(nonZero.getCount());
  else if (auto nms = dyn_cast<NonMaxSuppressionOp>(op))
    names.push_back(nms.getCount());
  else if (auto topk = dyn_cast<TopKOp>(op); topk && topk.getCount())
    names.push_back(*topk.getCount());
  else if (auto slice = dyn_cast<SliceToOp>(op))
    names.push_back(slice.getCount());
  else if (auto choose = dyn_cast<ChooseOp>(op))
    for (Attribute count : choose.getCounts())
      if (!cast<StringAttr>(count).getValue().empty())
        names.push_back(cast<StringAttr>(count).getValue());
  return names;
}
