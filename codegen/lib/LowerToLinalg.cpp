//===- LowerToLinalg.cpp - kiln-lower-to-linalg ---------------------------===//
//
// Lowers the kiln dialect to structured ops on tensors. Everything stays in
// value semantics; bufferization decides storage afterwards. Broadcasting is
// expressed in indexing maps (a broadcast dimension reads index 0), so no
// broadcast tensor is ever materialized.
//
//===----------------------------------------------------------------------===//

#include "FuseKernels.h"
#include "NarrowTypes.h"
#include "RunTimeSizes.h"

#include "kiln/Codegen/Passes.h"
#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

namespace kiln {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// True if `v`'s element type is an unsigned integer. Decisions that depend
/// on signedness read the kiln op's own types; the lowered values are
/// signless (arith only knows signless integers).
bool isUnsignedValue(Value v) {
  return getElementTypeOrSelf(v.getType()).isUnsignedInteger();
}

/// The lowered (signless) type of a kiln tensor type.
RankedTensorType lowered(const TypeConverter *converter, Type t) {
  return cast<RankedTensorType>(converter->convertType(t));
}

/// The type converter, with the run-time sizes of the function it lowers.
struct KilnTypeConverter : TypeConverter {
  const RunTimeSizes *sizes = nullptr;
};

/// The run-time values of the dynamic sizes of a tensor whose sizes are
/// `exprs` (none when they are all constants).
SmallVector<Value> dynamicSizes(const TypeConverter *converter, OpBuilder &b,
                                Location loc, ArrayRef<DimExpr> exprs) {
  return static_cast<const KilnTypeConverter *>(converter)->sizes->dynamic(
      b, loc, exprs);
}

/// The run-time value of one size (an index).
Value sizeValue(const TypeConverter *converter, OpBuilder &b, Location loc,
                const DimExpr &size) {
  return static_cast<const KilnTypeConverter *>(converter)->sizes->get(b, loc,
                                                                       size);
}

/// The same for the lowered form of the kiln tensor type `kilnType`.
SmallVector<Value> dynamicSizes(const TypeConverter *converter, OpBuilder &b,
                                Location loc, Type kilnType) {
  return dynamicSizes(converter, b, loc, dimExprs(kilnType));
}

/// The sizes `exprs` as tensor ops take them: constants as attributes,
/// symbolic sizes as their run-time values.
SmallVector<OpFoldResult> mixedSizes(const TypeConverter *converter,
                                     OpBuilder &b, Location loc,
                                     ArrayRef<DimExpr> exprs) {
  return static_cast<const KilnTypeConverter *>(converter)->sizes->mixed(b, loc,
                                                                         exprs);
}

SmallVector<OpFoldResult> mixedSizes(const TypeConverter *converter,
                                     OpBuilder &b, Location loc,
                                     Type kilnType) {
  return mixedSizes(converter, b, loc, dimExprs(kilnType));
}

/// The map that reads an operand of `shape` inside loops over `resultShape`:
/// leading dimensions the operand lacks are dropped, and dimensions of size 1
/// that the result stretches read index 0.
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> resultShape, unsigned numLoops,
                       unsigned firstLoop = 0) {
  SmallVector<AffineExpr> exprs;
  size_t offset = resultShape.size() - shape.size();
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (dim == 1 && resultShape[i + offset] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(firstLoop + i + offset, ctx));
  }
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

/// A linalg.generic computing `body` elementwise over broadcast operands.
/// `dynamicSizes` are the run-time values of resultTy's dynamic sizes.
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultTy,
                       ValueRange operands, BodyFn body,
                       ValueRange dynamicSizes = {}) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultTy.getRank();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(ctx,
                                cast<RankedTensorType>(v.getType()).getShape(),
                                resultTy.getShape(), rank));
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = tensor::EmptyOp::create(b, loc, resultTy.getShape(),
                                       resultTy.getElementType(), dynamicSizes);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultTy}, operands, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc, body(nb, nloc, args.drop_back()));
      });
  return generic.getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

//===----------------------------------------------------------------------===//
// Elementwise ops: one pattern, the scalar body comes from the op kind.
//===----------------------------------------------------------------------===//

/// The scalar computation of an elementwise op. Integers arrive signless;
/// `isUnsigned` says whether the op's original element type was unsigned.
template <typename Op>
Value scalarBody(OpBuilder &b, Location loc, ValueRange args, bool isUnsigned);

#define KILN_FLOAT_INT_BINARY(OP, FOP, SOP, UOP)                               \
  template <>                                                                  \
  Value scalarBody<OP>(OpBuilder & b, Location loc, ValueRange args,           \
                       bool isUnsigned) {                                      \
    if (isa<FloatType>(args[0].getType()))                                     \
      return FOP::create(b, loc, args[0], args[1]);                            \
    if (isUnsigned)                                                            \
      return UOP::create(b, loc, args[0], args[1]);                            \
    return SOP::create(b, loc, args[0], args[1]);                              \
  }
KILN_FLOAT_INT_BINARY(AddOp, arith::AddFOp, arith::AddIOp, arith::AddIOp)
KILN_FLOAT_INT_BINARY(SubOp, arith::SubFOp, arith::SubIOp, arith::SubIOp)
KILN_FLOAT_INT_BINARY(MulOp, arith::MulFOp, arith::MulIOp, arith::MulIOp)
KILN_FLOAT_INT_BINARY(DivOp, arith::DivFOp, arith::DivSIOp, arith::DivUIOp)
KILN_FLOAT_INT_BINARY(MaxOp, arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp)
KILN_FLOAT_INT_BINARY(MinOp, arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp)
KILN_FLOAT_INT_BINARY(PowOp, math::PowFOp, math::IPowIOp, math::IPowIOp)
KILN_FLOAT_INT_BINARY(RemOp, arith::RemFOp, arith::RemSIOp, arith::RemUIOp)
#undef KILN_FLOAT_INT_BINARY

#define KILN_INT_BINARY(OP, IOP)                                               \
  template <>                                                                  \
  Value scalarBody<OP>(OpBuilder & b, Location loc, ValueRange args,           \
                       bool isUnsigned) {                                      \
    return IOP::create(b, loc, args[0], args[1]);                              \
  }
KILN_INT_BINARY(AndOp, arith::AndIOp)
KILN_INT_BINARY(OrOp, arith::OrIOp)
KILN_INT_BINARY(XorOp, arith::XOrIOp)
#undef KILN_INT_BINARY

template <>
Value scalarBody<NotOp>(OpBuilder &b, Location loc, ValueRange args,
                        bool isUnsigned) {
  Type t = args[0].getType();
  Value ones = arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(t, APInt::getAllOnes(t.getIntOrFloatBitWidth())));
  return arith::XOrIOp::create(b, loc, args[0], ones);
}

template <>
Value scalarBody<SignOp>(OpBuilder &b, Location loc, ValueRange args,
                         bool isUnsigned) {
  // x > 0 ? 1 : (x < 0 ? -1 : x): zero keeps its sign bit and NaN stays NaN.
  Value x = args[0];
  Type t = x.getType();
  Value zero = scalarConstant(b, loc, t, 0), one = scalarConstant(b, loc, t, 1),
        minusOne = scalarConstant(b, loc, t, -1);
  if (isUnsigned)
    return arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero), one,
        zero);
  Value pos, neg;
  if (isa<FloatType>(t)) {
    pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
    neg = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
  } else {
    pos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero);
    neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  }
  return arith::SelectOp::create(
      b, loc, pos, one, arith::SelectOp::create(b, loc, neg, minusOne, x));
}

template <>
Value scalarBody<AbsOp>(OpBuilder &b, Location loc, ValueRange args,
                        bool isUnsigned) {
  if (isa<FloatType>(args[0].getType()))
    return math::AbsFOp::create(b, loc, args[0]);
  if (isUnsigned)
    return args[0];
  return math::AbsIOp::create(b, loc, args[0]);
}

// Selection and broadcasting are elementwise ops too: the broadcasting is
// in the indexing maps, the body picks or copies.
template <>
Value scalarBody<SelectOp>(OpBuilder &b, Location loc, ValueRange args,
                           bool isUnsigned) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

template <>
Value scalarBody<BroadcastOp>(OpBuilder &b, Location loc, ValueRange args,
                              bool isUnsigned) {
  return args[0];
}

template <>
Value scalarBody<ReciprocalOp>(OpBuilder &b, Location loc, ValueRange args,
                               bool isUnsigned) {
  return arith::DivFOp::create(
      b, loc, scalarConstant(b, loc, args[0].getType(), 1.0), args[0]);
}

template <>
Value scalarBody<NegOp>(OpBuilder &b, Location loc, ValueRange args,
                        bool isUnsigned) {
  if (isa<FloatType>(args[0].getType()))
    return arith::NegFOp::create(b, loc, args[0]);
  Value zero = scalarConstant(b, loc, args[0].getType(), 0);
  return arith::SubIOp::create(b, loc, zero, args[0]);
}

template <>
Value scalarBody<ReluOp>(OpBuilder &b, Location loc, ValueRange args,
                         bool isUnsigned) {
  Value zero = scalarConstant(b, loc, args[0].getType(), 0);
  if (isa<FloatType>(args[0].getType()))
    return arith::MaximumFOp::create(b, loc, args[0], zero);
  if (isUnsigned)
    return args[0];
  return arith::MaxSIOp::create(b, loc, args[0], zero);
}

#define KILN_MATH_UNARY(OP, MOP)                                               \
  template <>                                                                  \
  Value scalarBody<OP>(OpBuilder & b, Location loc, ValueRange args,           \
                       bool isUnsigned) {                                      \
    return MOP::create(b, loc, args[0]);                                       \
  }
KILN_MATH_UNARY(ExpOp, math::ExpOp)
KILN_MATH_UNARY(LogOp, math::LogOp)
KILN_MATH_UNARY(TanhOp, math::TanhOp)
KILN_MATH_UNARY(SqrtOp, math::SqrtOp)
KILN_MATH_UNARY(FloorOp, math::FloorOp)
KILN_MATH_UNARY(CeilOp, math::CeilOp)
KILN_MATH_UNARY(RoundOp, math::RoundEvenOp)
KILN_MATH_UNARY(SinOp, math::SinOp)
KILN_MATH_UNARY(CosOp, math::CosOp)
KILN_MATH_UNARY(TanOp, math::TanOp)
KILN_MATH_UNARY(AsinOp, math::AsinOp)
KILN_MATH_UNARY(AcosOp, math::AcosOp)
KILN_MATH_UNARY(AtanOp, math::AtanOp)
KILN_MATH_UNARY(SinhOp, math::SinhOp)
KILN_MATH_UNARY(CoshOp, math::CoshOp)
KILN_MATH_UNARY(AsinhOp, math::AsinhOp)
KILN_MATH_UNARY(AcoshOp, math::AcoshOp)
KILN_MATH_UNARY(AtanhOp, math::AtanhOp)
KILN_MATH_UNARY(ErfOp, math::ErfOp)
#undef KILN_MATH_UNARY

template <>
Value scalarBody<SigmoidOp>(OpBuilder &b, Location loc, ValueRange args,
                            bool isUnsigned) {
  // 1 / (1 + e^-x): saturates to 0 and 1 without producing NaN.
  Type t = args[0].getType();
  Value one = scalarConstant(b, loc, t, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, args[0]));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

template <typename Op> struct ElementwiseLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool isUnsigned = isUnsignedValue(op->getOperand(0));
    Value result = buildElementwise(
        rewriter, op.getLoc(), lowered(this->getTypeConverter(), op.getType()),
        adaptor.getOperands(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return scalarBody<Op>(b, l, args, isUnsigned);
        },
        dynamicSizes(this->getTypeConverter(), rewriter, op.getLoc(),
                     op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Matmul
//===----------------------------------------------------------------------===//

struct MatMulLowering : OpConversionPattern<MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MatMulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    Type elt = resultTy.getElementType();
    // 16-bit floats accumulate in f32 and round once at the end.
    bool widen = elt.isF16() || elt.isBF16();
    Type acc = widen ? Type(rewriter.getF32Type()) : elt;
    auto accTy = RankedTensorType::get(resultTy.getShape(), acc);
    Value zero = scalarConstant(rewriter, loc, acc, 0);
    SmallVector<Value> sizes =
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType());
    Value empty =
        tensor::EmptyOp::create(rewriter, loc, resultTy.getShape(), acc, sizes);
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    auto narrow = [&](Value v) -> Value {
      if (!widen)
        return v;
      return buildElementwise(
          rewriter, loc, resultTy, ValueRange{v},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            return arith::TruncFOp::create(b, l, elt, args[0]);
          },
          sizes);
    };

    bool tl = op.getTransposeLhs(), tr = op.getTransposeRhs();
    if (resultTy.getRank() == 2 && !widen && !tl && !tr) {
      rewriter.replaceOp(op, linalg::MatmulOp::create(rewriter, loc, resultTy,
                                                      ValueRange{lhs, rhs},
                                                      ValueRange{init})
                                 .getResult(0));
      return success();
    }

    // Batched, widened or transposed: loops (batch..., m, n, k).
    MLIRContext *ctx = rewriter.getContext();
    unsigned batch = resultTy.getRank() - 2, numLoops = batch + 3;
    ArrayRef<int64_t> batchShape = resultTy.getShape().drop_back(2);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto operandMap = [&](Value v, AffineExpr row, AffineExpr col) {
      ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
      AffineMap bmap =
          broadcastMap(ctx, shape.drop_back(2), batchShape, numLoops);
      SmallVector<AffineExpr> exprs(bmap.getResults());
      exprs.push_back(row);
      exprs.push_back(col);
      return AffineMap::get(numLoops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < batch + 2; ++i)
      outExprs.push_back(d(i));
    SmallVector<AffineMap> maps = {
        // A transposed operand reads (col, row): the same loops, swapped.
        tl ? operandMap(lhs, d(batch + 2), d(batch))
           : operandMap(lhs, d(batch), d(batch + 2)),
        tr ? operandMap(rhs, d(batch + 1), d(batch + 2))
           : operandMap(rhs, d(batch + 2), d(batch + 1)),
        AffineMap::get(numLoops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops - 1,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(elt);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{accTy}, ValueRange{lhs, rhs}, ValueRange{init},
        maps, iterators, [&](OpBuilder &b, Location l, ValueRange args) {
          Value prod, sum;
          if (isFloat) {
            Value a = args[0], c = args[1];
            if (widen) {
              a = arith::ExtFOp::create(b, l, acc, a);
              c = arith::ExtFOp::create(b, l, acc, c);
            }
            prod = arith::MulFOp::create(b, l, a, c);
            sum = arith::AddFOp::create(b, l, args[2], prod);
          } else {
            prod = arith::MulIOp::create(b, l, args[0], args[1]);
            sum = arith::AddIOp::create(b, l, args[2], prod);
          }
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(op, narrow(generic.getResult(0)));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// The reassociation that expands a reduction's result back to keepdims
/// form: each kept dimension grouped with the size-1 dimensions around it.
SmallVector<ReassociationIndices> keepDimsGroups(unsigned rank,
                                                 ArrayRef<int64_t> axes) {
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices current;
  for (unsigned i = 0; i < rank; ++i) {
    current.push_back(i);
    if (!llvm::is_contained(axes, static_cast<int64_t>(i))) {
      groups.push_back(current);
      current.clear();
    }
  }
  if (!current.empty() && !groups.empty())
    groups.back().append(current.begin(), current.end());
  return groups;
}

/// The value a reduction starts from: its combiner's identity.
TypedAttr reduceIdentity(Builder &b, ReduceKind kind, Type elt,
                         bool isUnsigned = false) {
  if (auto ft = dyn_cast<FloatType>(elt)) {
    const llvm::fltSemantics &sem = ft.getFloatSemantics();
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      return b.getFloatAttr(ft, 0.0);
    case ReduceKind::Prod:
      return b.getFloatAttr(ft, 1.0);
    case ReduceKind::Max:
      return b.getFloatAttr(ft, APFloat::getInf(sem, /*Negative=*/true));
    case ReduceKind::Min:
      return b.getFloatAttr(ft, APFloat::getInf(sem, /*Negative=*/false));
    }
  }
  unsigned width = elt.getIntOrFloatBitWidth();
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return b.getIntegerAttr(elt, APInt::getZero(width));
  case ReduceKind::Prod:
    return b.getIntegerAttr(elt, APInt(width, 1));
  case ReduceKind::Max:
    return b.getIntegerAttr(elt, isUnsigned ? APInt::getZero(width)
                                            : APInt::getSignedMinValue(width));
  case ReduceKind::Min:
    return b.getIntegerAttr(elt, isUnsigned ? APInt::getAllOnes(width)
                                            : APInt::getSignedMaxValue(width));
  }
  llvm_unreachable("unknown reduction");
}

Value reduceCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                    Value x, bool isUnsigned = false) {
  bool isFloat = isa<FloatType>(x.getType());
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return isFloat ? Value(arith::AddFOp::create(b, loc, acc, x))
                   : Value(arith::AddIOp::create(b, loc, acc, x));
  case ReduceKind::Prod:
    return isFloat ? Value(arith::MulFOp::create(b, loc, acc, x))
                   : Value(arith::MulIOp::create(b, loc, acc, x));
  case ReduceKind::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, acc, x);
    return isUnsigned ? Value(arith::MaxUIOp::create(b, loc, acc, x))
                      : Value(arith::MaxSIOp::create(b, loc, acc, x));
  case ReduceKind::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, acc, x);
    return isUnsigned ? Value(arith::MinUIOp::create(b, loc, acc, x))
                      : Value(arith::MinSIOp::create(b, loc, acc, x));
  }
  llvm_unreachable("unknown reduction");
}

template <typename Op, ReduceKind Kind>
struct ReduceLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    auto inputTy = cast<RankedTensorType>(input.getType());
    Type elt = inputTy.getElementType();
    ArrayRef<int64_t> axes = op.getAxes();
    unsigned rank = inputTy.getRank();
    // Sums and products of 16-bit floats accumulate in f32: f16 overflows
    // at 65504, and a mean's element count may not even be representable.
    bool widen = (elt.isF16() || elt.isBF16()) && Kind != ReduceKind::Max &&
                 Kind != ReduceKind::Min;
    Type acc = widen ? Type(rewriter.getF32Type()) : elt;
    bool isUnsigned = isUnsignedValue(op.getInput());

    SmallVector<int64_t> outShape =
        reducedShape(inputTy.getShape(), axes, /*keepDims=*/false);
    auto accTy = RankedTensorType::get(outShape, acc);
    // The sizes kept and the element count reduced, as expressions.
    SmallVector<DimExpr> keptSizes;
    DimExpr count = DimExpr::constant(1);
    for (auto [i, e] : llvm::enumerate(dimExprs(op.getInput().getType()))) {
      if (llvm::is_contained(axes, static_cast<int64_t>(i)))
        count = count * e;
      else
        keptSizes.push_back(e);
    }
    SmallVector<Value> sizes =
        dynamicSizes(this->getTypeConverter(), rewriter, loc, keptSizes);
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned i = 0; i < rank; ++i) {
      bool reduced = llvm::is_contained(axes, static_cast<int64_t>(i));
      iterators.push_back(reduced ? utils::IteratorType::reduction
                                  : utils::IteratorType::parallel);
      if (!reduced)
        outExprs.push_back(getAffineDimExpr(i, ctx));
    }
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   AffineMap::get(rank, 0, outExprs, ctx)};
    Value identity = arith::ConstantOp::create(
        rewriter, loc, reduceIdentity(rewriter, Kind, acc, isUnsigned));
    Value empty = tensor::EmptyOp::create(rewriter, loc, outShape, acc, sizes);
    Value init =
        linalg::FillOp::create(rewriter, loc, identity, empty).getResult(0);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{accTy}, ValueRange{input},
            ValueRange{init}, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value x = args[0];
              if (widen)
                x = arith::ExtFOp::create(b, l, acc, x);
              linalg::YieldOp::create(
                  b, l, reduceCombine(b, l, Kind, args[1], x, isUnsigned));
            })
            .getResult(0);

    if (Kind == ReduceKind::Mean || widen) {
      // A symbolic count is the run-time value, converted once.
      Value runTimeCount;
      if (Kind == ReduceKind::Mean && !count.getConstant()) {
        Value n = sizeValue(this->getTypeConverter(), rewriter, loc, count);
        n = arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(), n);
        runTimeCount = arith::SIToFPOp::create(rewriter, loc, acc, n);
      }
      result = buildElementwise(
          rewriter, loc, RankedTensorType::get(outShape, elt),
          ValueRange{result},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value v = args[0];
            if (Kind == ReduceKind::Mean) {
              Value n = runTimeCount
                            ? runTimeCount
                            : scalarConstant(
                                  b, l, acc,
                                  static_cast<double>(*count.getConstant()));
              v = arith::DivFOp::create(b, l, v, n);
            }
            if (widen)
              v = arith::TruncFOp::create(b, l, elt, v);
            return v;
          },
          sizes);
    }

    if (op.getKeepdims() && !axes.empty())
      result = tensor::ExpandShapeOp::create(
          rewriter, loc, lowered(this->getTypeConverter(), op.getType()),
          result, keepDimsGroups(rank, axes));
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Shape ops and constants
//===----------------------------------------------------------------------===//

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // Through a 1-D (or 0-D) tensor: both steps are views after bufferization.
    Location loc = op.getLoc();
    Value v = adaptor.getInput();
    auto inputTy = cast<RankedTensorType>(v.getType());
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    auto all = [](int64_t rank) {
      ReassociationIndices group;
      for (int64_t i = 0; i < rank; ++i)
        group.push_back(i);
      return SmallVector<ReassociationIndices>{group};
    };
    bool scalarIn = inputTy.getRank() == 0, scalarOut = resultTy.getRank() == 0;
    if (scalarIn || scalarOut) {
      // One step: 0-D <-> all-ones shape with an empty reassociation.
      if (scalarIn)
        v = tensor::ExpandShapeOp::create(rewriter, loc, resultTy, v,
                                          ArrayRef<ReassociationIndices>{});
      else
        v = tensor::CollapseShapeOp::create(rewriter, loc, resultTy, v,
                                            ArrayRef<ReassociationIndices>{});
      rewriter.replaceOp(op, v);
      return success();
    }
    if (inputTy.getRank() != 1)
      v = tensor::CollapseShapeOp::create(rewriter, loc, v,
                                          all(inputTy.getRank()));
    if (resultTy.getRank() != 1)
      v = tensor::ExpandShapeOp::create(
          rewriter, loc, resultTy, v, all(resultTy.getRank()),
          mixedSizes(getTypeConverter(), rewriter, loc, op.getType()));
    rewriter.replaceOp(op, v);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    Value init = tensor::EmptyOp::create(
        rewriter, op.getLoc(), resultTy.getShape(), resultTy.getElementType(),
        dynamicSizes(getTypeConverter(), rewriter, op.getLoc(), op.getType()));
    auto transpose = linalg::TransposeOp::create(
        rewriter, op.getLoc(), adaptor.getInput(), init, op.getPerm());
    rewriter.replaceOp(op, transpose.getResult()[0]);
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = lowered(getTypeConverter(), op.getType());
    Attribute value = op.getValue();
    if (isNarrowType(op.getType().getElementType())) {
      // Narrow constants are never resources (the importer keeps them
      // dense), so their values can be re-encoded one byte each.
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (!dense)
        return rewriter.notifyMatchFailure(op, "narrow constant is not dense");
      value = narrowToStorage(dense);
    } else if (type != op.getType()) {
      // Unsigned constants keep their bits under the signless type.
      if (auto dense = dyn_cast<DenseElementsAttr>(value))
        value = DenseElementsAttr::getFromRawBuffer(type, dense.getRawData());
      else if (auto res = dyn_cast<DenseResourceElementsAttr>(value))
        value = DenseResourceElementsAttr::get(type, res.getRawHandle());
    }
    auto typed = dyn_cast<TypedAttr>(value);
    if (!typed)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, typed);
    return success();
  }
};

/// kiln.sizes: the run-time values of its expressions, as data.
struct SizesLowering : OpConversionPattern<SizesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SizesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = lowered(getTypeConverter(), op.getType());
    SmallVector<Value> elements;
    for (Attribute a : op.getSizes()) {
      std::optional<DimExpr> e =
          DimExpr::parse(cast<StringAttr>(a).getValue().str());
      if (!e)
        return rewriter.notifyMatchFailure(op, "size is not an expression");
      elements.push_back(arith::IndexCastOp::create(
          rewriter, loc, type.getElementType(),
          sizeValue(getTypeConverter(), rewriter, loc, *e)));
    }
    rewriter.replaceOpWithNewOp<tensor::FromElementsOp>(op, type, elements);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Comparison, selection, casts, broadcast
//===----------------------------------------------------------------------===//

struct CmpLowering : OpConversionPattern<CmpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CmpOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    CmpPredicate pred = op.getPredicate();
    bool isUnsigned = isUnsignedValue(op.getLhs());
    Value result = buildElementwise(
        rewriter, op.getLoc(), lowered(getTypeConverter(), op.getType()),
        adaptor.getOperands(),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          if (isa<FloatType>(args[0].getType())) {
            // Ordered, except ne: NaN != anything.
            static const arith::CmpFPredicate fp[] = {
                arith::CmpFPredicate::OEQ, arith::CmpFPredicate::UNE,
                arith::CmpFPredicate::OLT, arith::CmpFPredicate::OLE,
                arith::CmpFPredicate::OGT, arith::CmpFPredicate::OGE};
            return arith::CmpFOp::create(b, l, fp[static_cast<int>(pred)],
                                         args[0], args[1]);
          }
          static const arith::CmpIPredicate ip[] = {
              arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
              arith::CmpIPredicate::slt, arith::CmpIPredicate::sle,
              arith::CmpIPredicate::sgt, arith::CmpIPredicate::sge};
          static const arith::CmpIPredicate up[] = {
              arith::CmpIPredicate::eq,  arith::CmpIPredicate::ne,
              arith::CmpIPredicate::ult, arith::CmpIPredicate::ule,
              arith::CmpIPredicate::ugt, arith::CmpIPredicate::uge};
          return arith::CmpIOp::create(
              b, l, (isUnsigned ? up : ip)[static_cast<int>(pred)], args[0],
              args[1]);
        },
        dynamicSizes(getTypeConverter(), rewriter, op.getLoc(), op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Converts one scalar between element types with kiln.cast's semantics.
Value convertScalar(OpBuilder &b, Location loc, Value x, Type to,
                    bool fromUnsigned, bool toUnsigned) {
  Type from = x.getType();
  if (from == to)
    return x;
  auto fromFloat = dyn_cast<FloatType>(from), toFloat = dyn_cast<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (from.isInteger(1))
    return toFloat ? Value(arith::UIToFPOp::create(b, loc, to, x))
                   : Value(arith::ExtUIOp::create(b, loc, to, x));
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() == toFloat.getWidth()) // f16 <-> bf16, via f32
      return arith::TruncFOp::create(
          b, loc, to, arith::ExtFOp::create(b, loc, b.getF32Type(), x));
    return fromFloat.getWidth() < toFloat.getWidth()
               ? Value(arith::ExtFOp::create(b, loc, to, x))
               : Value(arith::TruncFOp::create(b, loc, to, x));
  }
  if (fromFloat)
    return toUnsigned ? Value(arith::FPToUIOp::create(b, loc, to, x))
                      : Value(arith::FPToSIOp::create(b, loc, to, x));
  if (toFloat)
    return fromUnsigned ? Value(arith::UIToFPOp::create(b, loc, to, x))
                        : Value(arith::SIToFPOp::create(b, loc, to, x));
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return x; // same bits, other signedness
  if (fw > tw)
    return arith::TruncIOp::create(b, loc, to, x);
  return fromUnsigned ? Value(arith::ExtUIOp::create(b, loc, to, x))
                      : Value(arith::ExtSIOp::create(b, loc, to, x));
}

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    Type to = resultTy.getElementType();
    bool fromUnsigned = isUnsignedValue(op.getInput());
    bool toUnsigned = isUnsignedValue(op.getResult());
    Type from = op.getInput().getType().getElementType();
    Type target = op.getType().getElementType();
    // Narrow floats decode through a table of their values; narrow integers
    // arrive as their value in i8 and need no decoding.
    auto narrowFrom = dyn_cast<FloatType>(from);
    if (narrowFrom && !isNarrowType(narrowFrom))
      narrowFrom = nullptr;
    Value table = narrowFrom
                      ? narrowFloatTable(rewriter, op.getLoc(), narrowFrom)
                      : Value();
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultTy, adaptor.getOperands(),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value x = args[0];
          bool xUnsigned = fromUnsigned;
          if (narrowFrom) {
            x = decodeNarrowFloat(b, l, x, table, narrowFrom);
            xUnsigned = false;
          }
          if (!isNarrowType(target))
            return convertScalar(b, l, x, to, xUnsigned, toUnsigned);
          if (auto ft = dyn_cast<FloatType>(target))
            return encodeNarrowFloat(
                b, l, convertScalar(b, l, x, b.getF64Type(), xUnsigned, false),
                ft, op.getSaturate(), op.getRoundMode());
          // Narrow integers: convert like to i32, then wrap.
          return wrapNarrowInt(
              b, l, convertScalar(b, l, x, b.getI32Type(), xUnsigned, false),
              target.getIntOrFloatBitWidth(), !toUnsigned);
        },
        dynamicSizes(getTypeConverter(), rewriter, op.getLoc(), op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Data movement: concat, slice, gather
//===----------------------------------------------------------------------===//

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    int64_t axis = op.getAxis(), rank = resultTy.getRank();
    Value result = tensor::EmptyOp::create(
        rewriter, loc, resultTy.getShape(), resultTy.getElementType(),
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    // The offset along the axis, a running sum: a symbolic input moves the
    // ones after it by its run-time size. (One sum per input, not each
    // offset's expression built anew: 90 inputs of computed sizes, as a
    // detection head's per-class picks, would take 4,000 additions.)
    OpFoldResult offset = rewriter.getIndexAttr(0);
    auto add = [&](OpFoldResult x, OpFoldResult y) -> OpFoldResult {
      std::optional<int64_t> a = getConstantIntValue(x),
                             b = getConstantIntValue(y);
      if (a && b)
        return rewriter.getIndexAttr(*a + *b);
      if (a && *a == 0)
        return y;
      if (b && *b == 0)
        return x;
      Value xv = getValueOrCreateConstantIndexOp(rewriter, loc, x);
      Value yv = getValueOrCreateConstantIndexOp(rewriter, loc, y);
      return arith::AddIOp::create(rewriter, loc, xv, yv).getResult();
    };
    size_t count = op.getInputs().size();
    for (size_t n = 0; n < count; ++n) {
      Value kilnInput = op.getInputs()[n], input = adaptor.getInputs()[n];
      auto t = cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> sizes = mixedSizes(
          getTypeConverter(), rewriter, loc, dimExprs(kilnInput.getType()));
      SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
      offsets[axis] = offset;
      if (n + 1 < count)
        offset = add(offset, sizes[axis]);
      if (t.hasStaticShape() && t.getNumElements() == 0)
        continue;
      SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A linalg.generic writing every element of `resultTy` from its indices.
/// `dynamicSizes` are the run-time values of resultTy's dynamic sizes.
Value buildFromIndices(
    OpBuilder &b, Location loc, RankedTensorType resultTy,
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)> element,
    ValueRange dynamicSizes = {}) {
  unsigned rank = resultTy.getRank();
  Value init = tensor::EmptyOp::create(b, loc, resultTy.getShape(),
                                       resultTy.getElementType(), dynamicSizes);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(rank, b.getContext())};
  return linalg::GenericOp::create(
             b, loc, TypeRange{resultTy}, ValueRange{}, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange) {
               SmallVector<Value> idx;
               for (unsigned d = 0; d < rank; ++d)
                 idx.push_back(linalg::IndexOp::create(nb, l, d));
               linalg::YieldOp::create(nb, l, element(nb, l, idx));
             })
      .getResult(0);
}

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    ArrayRef<int64_t> starts = op.getStarts(), strides = op.getStrides();
    if (llvm::all_of(strides, [](int64_t s) { return s > 0; })) {
      // A strided view after bufferization: no copy.
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, resultTy, adaptor.getInput(),
          getAsIndexOpFoldResult(rewriter.getContext(), starts),
          mixedSizes(getTypeConverter(), rewriter, loc, op.getType()),
          getAsIndexOpFoldResult(rewriter.getContext(), strides));
      return success();
    }
    Value input = adaptor.getInput();
    Value result = buildFromIndices(
        rewriter, loc, resultTy,
        [&](OpBuilder &b, Location l, ArrayRef<Value> idx) -> Value {
          SmallVector<Value> src;
          for (auto [d, i] : llvm::enumerate(idx)) {
            Value stride = arith::ConstantIndexOp::create(b, l, strides[d]);
            Value start = arith::ConstantIndexOp::create(b, l, starts[d]);
            src.push_back(arith::AddIOp::create(
                b, l, start, arith::MulIOp::create(b, l, i, stride)));
          }
          return tensor::ExtractOp::create(b, l, input, src);
        },
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    auto indicesTy = cast<RankedTensorType>(indices.getType());
    int64_t axis = op.getAxis(), indexRank = indicesTy.getRank();
    // The size indices wrap and clamp to: a symbolic one at run time.
    DimExpr dimSize = dimExprs(op.getData().getType())[axis];
    Value runTimeSize =
        dimSize.getConstant()
            ? Value()
            : sizeValue(getTypeConverter(), rewriter, loc, dimSize);
    Value result = buildFromIndices(
        rewriter, loc, lowered(getTypeConverter(), op.getType()),
        [&](OpBuilder &b, Location l, ArrayRef<Value> idx) -> Value {
          // result[pre..., j..., post...] = data[pre..., indices[j...],
          // post...]
          SmallVector<Value> j(idx.begin() + axis,
                               idx.begin() + axis + indexRank);
          Value raw = tensor::ExtractOp::create(b, l, indices, j);
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
          // Negative indices count from the end; the rest is clamped.
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value size = runTimeSize ? runTimeSize
                                   : arith::ConstantIndexOp::create(
                                         b, l, *dimSize.getConstant());
          Value last = arith::SubIOp::create(
              b, l, size, arith::ConstantIndexOp::create(b, l, 1));
          Value isNeg =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
          i = arith::SelectOp::create(b, l, isNeg,
                                      arith::AddIOp::create(b, l, i, size), i);
          i = arith::MaxSIOp::create(b, l, i, zero);
          i = arith::MinSIOp::create(b, l, i, last);
          SmallVector<Value> src(idx.begin(), idx.begin() + axis);
          src.push_back(i);
          src.append(idx.begin() + axis + indexRank, idx.end());
          return tensor::ExtractOp::create(b, l, data, src);
        },
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// kiln.scatter: one scf.for over the updates, in order, carrying the
/// result tensor (bufferization turns it into in-place stores into one copy
/// of data). Sequential, so duplicate indices combine in ONNX's order.
struct ScatterLowering : OpConversionPattern<ScatterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value data = adaptor.getData(), indices = adaptor.getIndices(),
          updates = adaptor.getUpdates();
    int64_t size = cast<RankedTensorType>(data.getType()).getDimSize(0);
    int64_t count = cast<RankedTensorType>(updates.getType()).getDimSize(0);
    ScatterReduction reduction = op.getReduction();
    bool isUnsigned = isUnsignedValue(op.getData());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value end = arith::ConstantIndexOp::create(rewriter, loc, count);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, end, one, ValueRange{data},
        [&](OpBuilder &b, Location l, Value u, ValueRange args) {
          Value acc = args[0];
          Value raw = tensor::ExtractOp::create(b, l, indices, ValueRange{u});
          Value i = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
          Value c0 = arith::ConstantIndexOp::create(b, l, 0);
          Value n = arith::ConstantIndexOp::create(b, l, size);
          Value isNeg =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, c0);
          Value wrapped = arith::AddIOp::create(b, l, i, n);
          i = arith::SelectOp::create(b, l, isNeg, wrapped, i);
          // Unsigned compare: still-negative indices are out of range too.
          Value inRange =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, i, n);
          Value update =
              tensor::ExtractOp::create(b, l, updates, ValueRange{u});
          auto ifOp = scf::IfOp::create(
              b, l, inRange,
              [&](OpBuilder &tb, Location tl) {
                Value old =
                    tensor::ExtractOp::create(tb, tl, acc, ValueRange{i});
                Value v =
                    combineScatter(tb, tl, reduction, old, update, isUnsigned);
                Value next =
                    tensor::InsertOp::create(tb, tl, v, acc, ValueRange{i});
                scf::YieldOp::create(tb, tl, next);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, acc);
              });
          scf::YieldOp::create(b, l, ifOp.getResult(0));
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }

  static Value combineScatter(OpBuilder &b, Location l, ScatterReduction r,
                              Value old, Value update, bool isUnsigned) {
    bool isFloat = isa<FloatType>(old.getType());
    switch (r) {
    case ScatterReduction::none:
      return update;
    case ScatterReduction::add:
      return isFloat ? Value(arith::AddFOp::create(b, l, old, update))
                     : Value(arith::AddIOp::create(b, l, old, update));
    case ScatterReduction::mul:
      return isFloat ? Value(arith::MulFOp::create(b, l, old, update))
                     : Value(arith::MulIOp::create(b, l, old, update));
    case ScatterReduction::max:
      if (isFloat)
        return arith::MaximumFOp::create(b, l, old, update);
      return isUnsigned ? Value(arith::MaxUIOp::create(b, l, old, update))
                        : Value(arith::MaxSIOp::create(b, l, old, update));
    case ScatterReduction::min:
      if (isFloat)
        return arith::MinimumFOp::create(b, l, old, update);
      return isUnsigned ? Value(arith::MinUIOp::create(b, l, old, update))
                        : Value(arith::MinSIOp::create(b, l, old, update));
    }
    llvm_unreachable("unknown scatter reduction");
  }
};

/// kiln.topk: per row, k selection passes over the row. Pass j picks the
/// best element that comes after pass j-1's pick in the order (value, then
/// index), so no mask is materialized: O(rows * k * n) compares.
struct TopKLowering : OpConversionPattern<TopKOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputTy = cast<RankedTensorType>(input.getType());
    Type elt = inputTy.getElementType();
    int64_t k = op.getK();
    bool smallest = op.getSmallest();
    bool isUnsigned = isUnsignedValue(op.getInput());
    bool isFloat = isa<FloatType>(elt);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    // Either size may be a run-time one (a k known at run time only).
    Value cRows = tensor::DimOp::create(rewriter, loc, input, 0);
    Value cCols = tensor::DimOp::create(rewriter, loc, input, 1);
    Value cK = arith::ConstantIndexOp::create(rewriter, loc, k);
    // A k known at run time, clamped to [0, k], is the computed symbol's
    // value (decision 0031); the results are dense at that size.
    if (std::optional<StringRef> count = op.getCount()) {
      auto kTy = cast<RankedTensorType>(adaptor.getKValue().getType());
      SmallVector<Value> zeros(kTy.getRank(), c0);
      Value runK = arith::IndexCastOp::create(
          rewriter, loc, rewriter.getIndexType(),
          tensor::ExtractOp::create(rewriter, loc, adaptor.getKValue(), zeros));
      Value atLeastZero = arith::MaxSIOp::create(rewriter, loc, runK, c0);
      Value most = arith::MinSIOp::create(rewriter, loc, cK, cCols);
      runK = arith::MinSIOp::create(rewriter, loc, atLeastZero, most);
      const RunTimeSizes *sizes =
          static_cast<const KilnTypeConverter *>(getTypeConverter())->sizes;
      if (failed(sizes->define(rewriter, loc, *count, runK)))
        return rewriter.notifyMatchFailure(op, "count is no computed symbol");
      cK = sizeValue(getTypeConverter(), rewriter, loc,
                     DimExpr::symbol(count->str()));
    }
    RankedTensorType valuesTy =
        lowered(getTypeConverter(), op.getValues().getType());
    RankedTensorType positionsTy =
        lowered(getTypeConverter(), op.getIndices().getType());
    Value values =
        tensor::EmptyOp::create(rewriter, loc, valuesTy.getShape(), elt,
                                dynamicSizes(getTypeConverter(), rewriter, loc,
                                             op.getValues().getType()));
    Value positions = tensor::EmptyOp::create(
        rewriter, loc, positionsTy.getShape(), rewriter.getI64Type(),
        dynamicSizes(getTypeConverter(), rewriter, loc,
                     op.getIndices().getType()));
    Value none = arith::ConstantIndexOp::create(rewriter, loc, -1);
    Value initValue = scalarConstant(rewriter, loc, elt, 0.0);
    // `a` strictly before `b` in the selection order (ties by index aside).
    auto before = [&](OpBuilder &b, Location l, Value a, Value bv) -> Value {
      if (isFloat)
        return arith::CmpFOp::create(b, l,
                                     smallest ? arith::CmpFPredicate::OLT
                                              : arith::CmpFPredicate::OGT,
                                     a, bv);
      arith::CmpIPredicate p = smallest
                                   ? (isUnsigned ? arith::CmpIPredicate::ult
                                                 : arith::CmpIPredicate::slt)
                                   : (isUnsigned ? arith::CmpIPredicate::ugt
                                                 : arith::CmpIPredicate::sgt);
      return arith::CmpIOp::create(b, l, p, a, bv);
    };
    auto equal = [&](OpBuilder &b, Location l, Value a, Value bv) -> Value {
      if (isFloat)
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, a, bv);
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, a, bv);
    };
    auto rowLoop = scf::ForOp::create(
        rewriter, loc, c0, cRows, c1, ValueRange{values, positions},
        [&](OpBuilder &b, Location l, Value r, ValueRange rowArgs) {
          auto passLoop = scf::ForOp::create(
              b, l, c0, cK, c1,
              ValueRange{rowArgs[0], rowArgs[1], initValue, none},
              [&](OpBuilder &pb, Location pl, Value j, ValueRange passArgs) {
                Value prevV = passArgs[2], prevI = passArgs[3];
                auto scan = scf::ForOp::create(
                    pb, pl, c0, cCols, c1, ValueRange{initValue, none},
                    [&](OpBuilder &sb, Location sl, Value i, ValueRange best) {
                      Value v = tensor::ExtractOp::create(sb, sl, input,
                                                          ValueRange{r, i});
                      // Eligible: after the previous pick (or no pick yet).
                      Value first = arith::CmpIOp::create(
                          sb, sl, arith::CmpIPredicate::slt, prevI, c0);
                      Value later = before(sb, sl, prevV, v);
                      Value same = equal(sb, sl, v, prevV);
                      Value afterIndex = arith::CmpIOp::create(
                          sb, sl, arith::CmpIPredicate::sgt, i, prevI);
                      Value tie =
                          arith::AndIOp::create(sb, sl, same, afterIndex);
                      Value afterPrev =
                          arith::OrIOp::create(sb, sl, later, tie);
                      Value eligible =
                          arith::OrIOp::create(sb, sl, first, afterPrev);
                      // Better: nothing chosen yet, or strictly before it
                      // (ties keep the lower index, met first).
                      Value empty = arith::CmpIOp::create(
                          sb, sl, arith::CmpIPredicate::slt, best[1], c0);
                      Value improves = before(sb, sl, v, best[0]);
                      Value better =
                          arith::OrIOp::create(sb, sl, empty, improves);
                      Value take =
                          arith::AndIOp::create(sb, sl, eligible, better);
                      Value nv =
                          arith::SelectOp::create(sb, sl, take, v, best[0]);
                      Value ni =
                          arith::SelectOp::create(sb, sl, take, i, best[1]);
                      scf::YieldOp::create(sb, sl, ValueRange{nv, ni});
                    });
                Value bestV = scan.getResult(0);
                // Only NaN left: keep the index in range.
                Value bestI =
                    arith::MaxSIOp::create(pb, pl, scan.getResult(1), c0);
                Value bestI64 =
                    arith::IndexCastOp::create(pb, pl, pb.getI64Type(), bestI);
                Value nextValues = tensor::InsertOp::create(
                    pb, pl, bestV, passArgs[0], ValueRange{r, j});
                Value nextPositions = tensor::InsertOp::create(
                    pb, pl, bestI64, passArgs[1], ValueRange{r, j});
                scf::YieldOp::create(pb, pl,
                                     ValueRange{nextValues, nextPositions,
                                                bestV, scan.getResult(1)});
              });
          scf::YieldOp::create(
              b, l, ValueRange{passLoop.getResult(0), passLoop.getResult(1)});
        });
    rewriter.replaceOp(op, rowLoop.getResults());
    return success();
  }
};

/// kiln.non_zero: one pass counts the non-zero elements and stores the
/// count as the computed symbol's value (RunTimeSizes::define); a second
/// writes each one's index into the [rank, count] result, which is dense
/// at that size.
struct NonZeroLowering : OpConversionPattern<NonZeroOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NonZeroOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    auto inputTy = cast<RankedTensorType>(input.getType());
    int64_t rank = inputTy.getRank();
    Type elt = inputTy.getElementType();
    RankedTensorType type = lowered(getTypeConverter(), op.getType());
    const RunTimeSizes *sizes =
        static_cast<const KilnTypeConverter *>(getTypeConverter())->sizes;

    SmallVector<Value> dims;
    Value numel = arith::ConstantIndexOp::create(rewriter, loc, 1);
    for (int64_t d = 0; d < rank; ++d) {
      dims.push_back(tensor::DimOp::create(rewriter, loc, input, d));
      numel = arith::MulIOp::create(rewriter, loc, numel, dims.back());
    }
    ReassociationIndices all;
    for (int64_t d = 0; d < rank; ++d)
      all.push_back(d);
    Value flat = input;
    if (rank != 1)
      flat = tensor::CollapseShapeOp::create(
          rewriter, loc, input, SmallVector<ReassociationIndices>{all});
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    // NaN is not zero: unordered or not equal.
    auto nonZero = [&](OpBuilder &b, Location l, Value i) -> Value {
      Value v = tensor::ExtractOp::create(b, l, flat, ValueRange{i});
      if (elt.isInteger(1))
        return v;
      if (isa<FloatType>(elt))
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, v,
                                     scalarConstant(b, l, elt, 0.0));
      return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, v,
                                   scalarConstant(b, l, elt, 0.0));
    };
    auto countLoop = scf::ForOp::create(
        rewriter, loc, c0, numel, c1, ValueRange{c0},
        [&](OpBuilder &b, Location l, Value i, ValueRange args) {
          Value add = arith::SelectOp::create(b, l, nonZero(b, l, i), c1, c0);
          scf::YieldOp::create(
              b, l, ValueRange{arith::AddIOp::create(b, l, args[0], add)});
        });
    if (failed(sizes->define(rewriter, loc, op.getCount(),
                             countLoop.getResult(0))))
      return rewriter.notifyMatchFailure(op, "count is no computed symbol");
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, type.getShape(), type.getElementType(),
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    auto writeLoop = scf::ForOp::create(
        rewriter, loc, c0, numel, c1, ValueRange{empty, c0},
        [&](OpBuilder &b, Location l, Value i, ValueRange args) {
          auto branch = scf::IfOp::create(
              b, l, nonZero(b, l, i),
              [&](OpBuilder &tb, Location tl) {
                // The row-major index of element i, innermost axis first.
                Value t = args[0], rest = i;
                for (int64_t d = rank - 1; d >= 0; --d) {
                  Value coord = arith::RemUIOp::create(tb, tl, rest, dims[d]);
                  rest = arith::DivUIOp::create(tb, tl, rest, dims[d]);
                  Value row = arith::ConstantIndexOp::create(tb, tl, d);
                  t = tensor::InsertOp::create(
                      tb, tl,
                      arith::IndexCastOp::create(tb, tl, tb.getI64Type(),
                                                 coord),
                      t, ValueRange{row, args[1]});
                }
                Value next = arith::AddIOp::create(tb, tl, args[1], c1);
                scf::YieldOp::create(tb, tl, ValueRange{t, next});
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, args);
              });
          scf::YieldOp::create(b, l, branch.getResults());
        });
    rewriter.replaceOp(op, writeLoop.getResult(0));
    return success();
  }
};

/// kiln.slice_to: the size clamped at run time is the computed symbol's
/// value; the rest is an extract_slice.
struct SliceToLowering : OpConversionPattern<SliceToOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceToOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    int64_t axis = op.getAxis();
    Value size = tensor::DimOp::create(rewriter, loc, input, axis);
    Value end = arith::ConstantIndexOp::create(rewriter, loc, op.getEnd());
    Value start = arith::ConstantIndexOp::create(rewriter, loc, op.getStart());
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value stop = arith::MinSIOp::create(rewriter, loc, size, end);
    Value taken = arith::SubIOp::create(rewriter, loc, stop, start);
    taken = arith::MaxSIOp::create(rewriter, loc, taken, c0);
    const RunTimeSizes *sizes =
        static_cast<const KilnTypeConverter *>(getTypeConverter())->sizes;
    if (failed(sizes->define(rewriter, loc, op.getCount(), taken)))
      return rewriter.notifyMatchFailure(op, "count is no computed symbol");
    auto inputTy = cast<RankedTensorType>(input.getType());
    SmallVector<OpFoldResult> offsets, lengths, strides;
    for (int64_t d = 0; d < inputTy.getRank(); ++d) {
      offsets.push_back(rewriter.getIndexAttr(d == axis ? op.getStart() : 0));
      strides.push_back(rewriter.getIndexAttr(1));
      if (d == axis)
        lengths.push_back(sizeValue(getTypeConverter(), rewriter, loc,
                                    DimExpr::symbol(op.getCount().str())));
      else if (inputTy.isDynamicDim(d))
        lengths.push_back(
            tensor::DimOp::create(rewriter, loc, input, d).getResult());
      else
        lengths.push_back(rewriter.getIndexAttr(inputTy.getDimSize(d)));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, lowered(getTypeConverter(), op.getType()), input, offsets, lengths,
        strides);
    return success();
  }
};

/// kiln.choose: each differing size is the chosen value's (the computed
/// symbol's value), and the result a copy of the chosen value, each element
/// read in an scf.if (a result that was either buffer would hide from the
/// memory plan that the other is still read).
struct ChooseLowering : OpConversionPattern<ChooseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ChooseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = adaptor.getThenValue(), b = adaptor.getElseValue();
    RankedTensorType type = lowered(getTypeConverter(), op.getType());
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    auto condTy = cast<RankedTensorType>(adaptor.getCondition().getType());
    SmallVector<Value> zeros(condTy.getRank(), c0);
    Value cond =
        tensor::ExtractOp::create(rewriter, loc, adaptor.getCondition(), zeros);
    const RunTimeSizes *sizes =
        static_cast<const KilnTypeConverter *>(getTypeConverter())->sizes;
    for (auto [d, count] : llvm::enumerate(op.getCounts())) {
      StringRef name = cast<StringAttr>(count).getValue();
      if (name.empty())
        continue;
      Value sa = tensor::DimOp::create(rewriter, loc, a, d);
      Value sb = tensor::DimOp::create(rewriter, loc, b, d);
      Value size = arith::SelectOp::create(rewriter, loc, cond, sa, sb);
      if (failed(sizes->define(rewriter, loc, name, size)))
        return rewriter.notifyMatchFailure(op, "count is no computed symbol");
    }
    Value result = buildFromIndices(
        rewriter, loc, type,
        [&](OpBuilder &gb, Location gl, ArrayRef<Value> idx) -> Value {
          auto pick = scf::IfOp::create(
              gb, gl, cond,
              [&](OpBuilder &tb, Location tl) {
                Value v = tensor::ExtractOp::create(tb, tl, a, idx);
                scf::YieldOp::create(tb, tl, v);
              },
              [&](OpBuilder &eb, Location el) {
                Value v = tensor::ExtractOp::create(eb, el, b, idx);
                scf::YieldOp::create(eb, el, v);
              });
          return pick.getResult(0);
        },
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The positions [0, n) of row `scores[batch, cls, :]` in order of
/// descending score, ties in ascending position: a bottom-up merge sort
/// (O(n log n); a scan for each next best, as kiln.topk does, made
/// SSDlite's NMS over 27,000 boxes take seconds). `order` and `scratch` are
/// i64 tensors of at least n elements; returns (sorted, the other), each
/// written over the one given in the same place.
std::pair<Value, Value> sortByScore(OpBuilder &b, Location l, Value scores,
                                    Value batch, Value cls, Value n,
                                    Value order, Value scratch) {
  auto index = [&](OpBuilder &ib, Location il, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ib, il, v);
  };
  Value c0 = index(b, l, 0), c1 = index(b, l, 1);
  auto fill = scf::ForOp::create(
      b, l, c0, n, c1, ValueRange{order},
      [&](OpBuilder &fb, Location fl, Value i, ValueRange args) {
        Value v = arith::IndexCastOp::create(fb, fl, fb.getI64Type(), i);
        Value t = tensor::InsertOp::create(fb, fl, v, args[0], ValueRange{i});
        scf::YieldOp::create(fb, fl, t);
      });
  // Pass p merges runs of width 2^p; 62 passes cover any size, and the
  // passes past n copy nothing.
  Value last = arith::SubIOp::create(b, l, n, c1);
  auto passes = scf::ForOp::create(
      b, l, c0, index(b, l, 62), c1, ValueRange{fill.getResult(0), scratch},
      [&](OpBuilder &pb, Location pl, Value pass, ValueRange ab) {
        Value width = arith::ShLIOp::create(pb, pl, c1, pass);
        Value more =
            arith::CmpIOp::create(pb, pl, arith::CmpIPredicate::slt, width, n);
        auto step = scf::IfOp::create(
            pb, pl, more,
            [&](OpBuilder &tb, Location tl) {
              Value src = ab[0];
              Value twice = arith::AddIOp::create(tb, tl, width, width);
              auto runs = scf::ForOp::create(
                  tb, tl, c0, n, twice, ValueRange{ab[1]},
                  [&](OpBuilder &rb, Location rl, Value start,
                      ValueRange rArgs) {
                    Value midEnd = arith::AddIOp::create(rb, rl, start, width);
                    Value mid = arith::MinSIOp::create(rb, rl, midEnd, n);
                    Value runEnd = arith::AddIOp::create(rb, rl, start, twice);
                    Value end = arith::MinSIOp::create(rb, rl, runEnd, n);
                    auto merge = scf::ForOp::create(
                        rb, rl, start, end, c1,
                        ValueRange{rArgs[0], start, mid},
                        [&](OpBuilder &mb, Location ml, Value k, ValueRange m) {
                          Value i = m[1], j = m[2];
                          // Reads clamped into the row; a run's element
                          // past its end is never taken.
                          Value ii = arith::MinSIOp::create(mb, ml, i, last);
                          Value jj = arith::MinSIOp::create(mb, ml, j, last);
                          Value pi = tensor::ExtractOp::create(mb, ml, src,
                                                               ValueRange{ii});
                          Value pj = tensor::ExtractOp::create(mb, ml, src,
                                                               ValueRange{jj});
                          Type indexTy = mb.getIndexType();
                          Value xi =
                              arith::IndexCastOp::create(mb, ml, indexTy, pi);
                          Value xj =
                              arith::IndexCastOp::create(mb, ml, indexTy, pj);
                          Value si = tensor::ExtractOp::create(
                              mb, ml, scores, ValueRange{batch, cls, xi});
                          Value sj = tensor::ExtractOp::create(
                              mb, ml, scores, ValueRange{batch, cls, xj});
                          Value leftLeft = arith::CmpIOp::create(
                              mb, ml, arith::CmpIPredicate::slt, i, mid);
                          Value rightDone = arith::CmpIOp::create(
                              mb, ml, arith::CmpIPredicate::sge, j, end);
                          Value rightHigher = arith::CmpFOp::create(
                              mb, ml, arith::CmpFPredicate::OGT, sj, si);
                          Value notHigher = arith::XOrIOp::create(
                              mb, ml, rightHigher,
                              arith::ConstantIntOp::create(mb, ml, 1, 1));
                          Value leftWins = arith::OrIOp::create(
                              mb, ml, rightDone, notHigher);
                          Value takeLeft =
                              arith::AndIOp::create(mb, ml, leftLeft, leftWins);
                          Value pick =
                              arith::SelectOp::create(mb, ml, takeLeft, pi, pj);
                          Value t = tensor::InsertOp::create(mb, ml, pick, m[0],
                                                             ValueRange{k});
                          Value ni = arith::SelectOp::create(
                              mb, ml, takeLeft,
                              arith::AddIOp::create(mb, ml, i, c1), i);
                          Value nj = arith::SelectOp::create(
                              mb, ml, takeLeft, j,
                              arith::AddIOp::create(mb, ml, j, c1));
                          scf::YieldOp::create(mb, ml, ValueRange{t, ni, nj});
                        });
                    scf::YieldOp::create(rb, rl, merge.getResult(0));
                  });
              // Back into `order`: a loop's buffers stay its own (one-shot
              // bufferization refuses iteration arguments that swap).
              Value merged = runs.getResult(0);
              auto back = scf::ForOp::create(
                  tb, tl, c0, n, c1, ValueRange{src},
                  [&](OpBuilder &kb, Location kl, Value k, ValueRange kArgs) {
                    Value v = tensor::ExtractOp::create(kb, kl, merged,
                                                        ValueRange{k});
                    Value t = tensor::InsertOp::create(kb, kl, v, kArgs[0],
                                                       ValueRange{k});
                    scf::YieldOp::create(kb, kl, t);
                  });
              scf::YieldOp::create(tb, tl,
                                   ValueRange{back.getResult(0), merged});
            },
            [&](OpBuilder &eb, Location el) {
              scf::YieldOp::create(eb, el, ValueRange{ab[0], ab[1]});
            });
        scf::YieldOp::create(pb, pl, step.getResults());
      });
  return {passes.getResult(0), passes.getResult(1)};
}

/// kiln.nms: per batch and class, the candidates in order of descending
/// score (sortByScore), each kept unless a box already kept for the class
/// overlaps it by more than the threshold; the kept rows are written in
/// order into a [bound, 3] tensor whose leading rows are the result. The
/// number written is the computed symbol's value.
struct NonMaxSuppressionLowering : OpConversionPattern<NonMaxSuppressionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(NonMaxSuppressionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value boxes = adaptor.getBoxes(), scores = adaptor.getScores();
    auto boxesTy = cast<RankedTensorType>(boxes.getType());
    auto scoresTy = cast<RankedTensorType>(scores.getType());
    Type f = boxesTy.getElementType(), i64 = rewriter.getI64Type();
    int64_t numBatches = boxesTy.getDimSize(0);
    int64_t numClasses = scoresTy.getDimSize(1);
    int64_t bound = op.getType().getDimSize(0);
    bool center = op.getCenterPointBox();
    bool hasScoreThreshold = op.getHasScoreThreshold();
    auto index = [&](OpBuilder &b, Location l, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, l, v);
    };
    Value c0 = index(rewriter, loc, 0), c1 = index(rewriter, loc, 1);
    // The number of boxes, known at run time when it is symbolic.
    Value numBoxes = tensor::DimOp::create(rewriter, loc, boxes, 1);
    auto first = [&](Value t) -> Value {
      SmallVector<Value> zeros(cast<RankedTensorType>(t.getType()).getRank(),
                               c0);
      return tensor::ExtractOp::create(rewriter, loc, t, zeros);
    };
    Value maxOutput = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getIndexType(), first(adaptor.getMaxOutput()));
    Value atLeastZero = arith::MaxSIOp::create(rewriter, loc, maxOutput, c0);
    maxOutput = arith::MinSIOp::create(rewriter, loc, atLeastZero, numBoxes);
    Value iouThreshold = first(adaptor.getIouThreshold());
    Value scoreThreshold = first(adaptor.getScoreThreshold());
    Value none = index(rewriter, loc, -1);
    Value zeroF = scalarConstant(rewriter, loc, f, 0.0);
    Value rows = tensor::EmptyOp::create(rewriter, loc,
                                         ArrayRef<int64_t>{bound, 3}, i64);

    // Box i of batch b as (ymin, xmin, ymax, xmax).
    auto corners = [&](OpBuilder &b, Location l, Value batch,
                       Value i) -> std::array<Value, 4> {
      std::array<Value, 4> v;
      for (int64_t k = 0; k < 4; ++k)
        v[k] = tensor::ExtractOp::create(b, l, boxes,
                                         ValueRange{batch, i, index(b, l, k)});
      if (center) { // x_center, y_center, width, height
        Value half = scalarConstant(b, l, f, 0.5);
        Value hw = arith::MulFOp::create(b, l, v[2], half);
        Value hh = arith::MulFOp::create(b, l, v[3], half);
        return {arith::SubFOp::create(b, l, v[1], hh),
                arith::SubFOp::create(b, l, v[0], hw),
                arith::AddFOp::create(b, l, v[1], hh),
                arith::AddFOp::create(b, l, v[0], hw)};
      }
      return {arith::MinimumFOp::create(b, l, v[0], v[2]),
              arith::MinimumFOp::create(b, l, v[1], v[3]),
              arith::MaximumFOp::create(b, l, v[0], v[2]),
              arith::MaximumFOp::create(b, l, v[1], v[3])};
    };
    // Whether p and q overlap by more than the threshold (no overlap, or
    // an empty box, never suppresses).
    auto overlaps = [&](OpBuilder &b, Location l, std::array<Value, 4> p,
                        std::array<Value, 4> q) -> Value {
      auto side = [&](int lo, int hi) -> Value {
        Value end = arith::MinimumFOp::create(b, l, p[hi], q[hi]);
        Value begin = arith::MaximumFOp::create(b, l, p[lo], q[lo]);
        Value d = arith::SubFOp::create(b, l, end, begin);
        return arith::MaximumFOp::create(b, l, d, zeroF);
      };
      auto area = [&](std::array<Value, 4> r) -> Value {
        Value height = arith::SubFOp::create(b, l, r[2], r[0]);
        Value width = arith::SubFOp::create(b, l, r[3], r[1]);
        return arith::MulFOp::create(b, l, height, width);
      };
      Value height = side(0, 2);
      Value width = side(1, 3);
      Value inter = arith::MulFOp::create(b, l, height, width);
      Value ap = area(p);
      Value aq = area(q);
      Value both = arith::AddFOp::create(b, l, ap, aq);
      Value uni = arith::SubFOp::create(b, l, both, inter);
      Value iou = arith::DivFOp::create(b, l, inter, uni);
      auto positive = [&](Value v) -> Value {
        return arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, v, zeroF);
      };
      Value ok = positive(inter);
      for (Value v : {ap, aq, uni}) {
        Value more = positive(v);
        ok = arith::AndIOp::create(b, l, ok, more);
      }
      Value above = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, iou,
                                          iouThreshold);
      return arith::AndIOp::create(b, l, ok, above);
    };

    Value noneKept = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq, maxOutput, c0);
    // The sort's two buffers of the boxes' size, reused by every class.
    SmallVector<int64_t> orderShape = {boxesTy.getDimSize(1)};
    SmallVector<Value> orderSizes;
    if (boxesTy.isDynamicDim(1))
      orderSizes.push_back(sizeValue(getTypeConverter(), rewriter, loc,
                                     dimExprs(op.getBoxes().getType())[1]));
    Value order =
        tensor::EmptyOp::create(rewriter, loc, orderShape, i64, orderSizes);
    Value scratch =
        tensor::EmptyOp::create(rewriter, loc, orderShape, i64, orderSizes);
    auto batchLoop = scf::ForOp::create(
        rewriter, loc, c0, index(rewriter, loc, numBatches), c1,
        ValueRange{rows, c0, order, scratch},
        [&](OpBuilder &b, Location l, Value batch, ValueRange batchArgs) {
          auto classLoop = scf::ForOp::create(
              b, l, c0, index(b, l, numClasses), c1, batchArgs,
              [&](OpBuilder &cb, Location cl, Value cls, ValueRange classArgs) {
                Value start = classArgs[1];
                auto [sorted, other] =
                    sortByScore(cb, cl, scores, batch, cls, numBoxes,
                                classArgs[2], classArgs[3]);
                // (rows, written, previous score, previous box, kept, done)
                auto candidates = scf::ForOp::create(
                    cb, cl, c0, numBoxes, c1,
                    ValueRange{classArgs[0], classArgs[1], zeroF, none, c0,
                               noneKept},
                    [&](OpBuilder &tb, Location tl, Value position,
                        ValueRange a) {
                      auto step = scf::IfOp::create(
                          tb, tl, a[5],
                          [&](OpBuilder &db, Location dl) {
                            scf::YieldOp::create(db, dl, a);
                          },
                          [&](OpBuilder &nb, Location nl) {
                            Value bestI = arith::IndexCastOp::create(
                                nb, nl, nb.getIndexType(),
                                tensor::ExtractOp::create(
                                    nb, nl, sorted, ValueRange{position}));
                            Value bestV = tensor::ExtractOp::create(
                                nb, nl, scores, ValueRange{batch, cls, bestI});
                            Value pass = arith::CmpIOp::create(
                                nb, nl, arith::CmpIPredicate::sge, bestI, c0);
                            if (hasScoreThreshold) {
                              Value above = arith::CmpFOp::create(
                                  nb, nl, arith::CmpFPredicate::OGT, bestV,
                                  scoreThreshold);
                              pass = arith::AndIOp::create(nb, nl, pass, above);
                            }
                            auto consider = scf::IfOp::create(
                                nb, nl, pass,
                                [&](OpBuilder &pb, Location pl) {
                                  std::array<Value, 4> q =
                                      corners(pb, pl, batch, bestI);
                                  auto check = scf::ForOp::create(
                                      pb, pl, start, a[1], c1,
                                      ValueRange{arith::ConstantIntOp::create(
                                          pb, pl, 0, 1)},
                                      [&](OpBuilder &rb, Location rl, Value r,
                                          ValueRange s) {
                                        Value kept = tensor::ExtractOp::create(
                                            rb, rl, a[0],
                                            ValueRange{r, index(rb, rl, 2)});
                                        Value keptI =
                                            arith::IndexCastOp::create(
                                                rb, rl, rb.getIndexType(),
                                                kept);
                                        Value hit = overlaps(
                                            rb, rl, q,
                                            corners(rb, rl, batch, keptI));
                                        scf::YieldOp::create(
                                            rb, rl,
                                            ValueRange{arith::OrIOp::create(
                                                rb, rl, s[0], hit)});
                                      });
                                  auto keep = scf::IfOp::create(
                                      pb, pl, check.getResult(0),
                                      [&](OpBuilder &kb, Location kl) {
                                        scf::YieldOp::create(
                                            kb, kl,
                                            ValueRange{a[0], a[1], a[4]});
                                      },
                                      [&](OpBuilder &kb, Location kl) {
                                        Value t = a[0];
                                        Value fields[3] = {batch, cls, bestI};
                                        for (int64_t k = 0; k < 3; ++k)
                                          t = tensor::InsertOp::create(
                                              kb, kl,
                                              arith::IndexCastOp::create(
                                                  kb, kl, kb.getI64Type(),
                                                  fields[k]),
                                              t,
                                              ValueRange{a[1],
                                                         index(kb, kl, k)});
                                        scf::YieldOp::create(
                                            kb, kl,
                                            ValueRange{t,
                                                       arith::AddIOp::create(
                                                           kb, kl, a[1], c1),
                                                       arith::AddIOp::create(
                                                           kb, kl, a[4], c1)});
                                      });
                                  Value full = arith::CmpIOp::create(
                                      pb, pl, arith::CmpIPredicate::sge,
                                      keep.getResult(2), maxOutput);
                                  scf::YieldOp::create(
                                      pb, pl,
                                      ValueRange{keep.getResult(0),
                                                 keep.getResult(1),
                                                 keep.getResult(2), full});
                                },
                                [&](OpBuilder &pb, Location pl) {
                                  // Nothing left above the threshold.
                                  scf::YieldOp::create(
                                      pb, pl,
                                      ValueRange{a[0], a[1], a[4],
                                                 arith::ConstantIntOp::create(
                                                     pb, pl, 1, 1)});
                                });
                            scf::YieldOp::create(
                                nb, nl,
                                ValueRange{consider.getResult(0),
                                           consider.getResult(1), bestV, bestI,
                                           consider.getResult(2),
                                           consider.getResult(3)});
                          });
                      scf::YieldOp::create(tb, tl, step.getResults());
                    });
                scf::YieldOp::create(cb, cl,
                                     ValueRange{candidates.getResult(0),
                                                candidates.getResult(1), sorted,
                                                other});
              });
          scf::YieldOp::create(b, l, classLoop.getResults());
        });
    const RunTimeSizes *sizes =
        static_cast<const KilnTypeConverter *>(getTypeConverter())->sizes;
    if (failed(sizes->define(rewriter, loc, op.getCount(),
                             batchLoop.getResult(1))))
      return rewriter.notifyMatchFailure(op, "count is no computed symbol");
    Value count = sizeValue(getTypeConverter(), rewriter, loc,
                            DimExpr::symbol(op.getCount().str()));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, batchLoop.getResult(0),
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(0),
                               rewriter.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{count, rewriter.getIndexAttr(3)},
        ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1),
                               rewriter.getIndexAttr(1)});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Arg reductions
//===----------------------------------------------------------------------===//

template <typename Op, bool IsMax>
struct ArgLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    auto inputTy = cast<RankedTensorType>(input.getType());
    Type elt = inputTy.getElementType(), i64 = rewriter.getI64Type();
    int64_t axis = op.getAxis();
    unsigned rank = inputTy.getRank();
    bool last = op.getSelectLastIndex();
    bool isUnsigned = isUnsignedValue(op.getInput());
    SmallVector<int64_t> outShape =
        reducedShape(inputTy.getShape(), {axis}, false);
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iterators;
    for (unsigned i = 0; i < rank; ++i) {
      iterators.push_back(static_cast<int64_t>(i) == axis
                              ? utils::IteratorType::reduction
                              : utils::IteratorType::parallel);
      if (static_cast<int64_t>(i) != axis)
        outExprs.push_back(getAffineDimExpr(i, ctx));
    }
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx),
                                   outMap, outMap};
    Value identity = arith::ConstantOp::create(
        rewriter, loc,
        reduceIdentity(rewriter, IsMax ? ReduceKind::Max : ReduceKind::Min, elt,
                       isUnsigned));
    Value valueEmpty = tensor::EmptyOp::create(rewriter, loc, outShape, elt);
    Value valueInit =
        linalg::FillOp::create(rewriter, loc, identity, valueEmpty)
            .getResult(0);
    Value zeroIndex =
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0));
    Value indexEmpty = tensor::EmptyOp::create(rewriter, loc, outShape, i64);
    Value indexInit =
        linalg::FillOp::create(rewriter, loc, zeroIndex, indexEmpty)
            .getResult(0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc,
        TypeRange{RankedTensorType::get(outShape, elt),
                  RankedTensorType::get(outShape, i64)},
        ValueRange{input}, ValueRange{valueInit, indexInit}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value i = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          Value better;
          if (isa<FloatType>(elt)) {
            auto pred = IsMax ? (last ? arith::CmpFPredicate::OGE
                                      : arith::CmpFPredicate::OGT)
                              : (last ? arith::CmpFPredicate::OLE
                                      : arith::CmpFPredicate::OLT);
            better = arith::CmpFOp::create(b, l, pred, x, best);
          } else {
            using P = arith::CmpIPredicate;
            P pred = IsMax ? (last ? (isUnsigned ? P::uge : P::sge)
                                   : (isUnsigned ? P::ugt : P::sgt))
                           : (last ? (isUnsigned ? P::ule : P::sle)
                                   : (isUnsigned ? P::ult : P::slt));
            better = arith::CmpIOp::create(b, l, pred, x, best);
          }
          // The first element always wins, so an all-(-inf) row yields 0.
          Value first = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, i,
              arith::ConstantOp::create(b, l, b.getI64IntegerAttr(0)));
          better = arith::OrIOp::create(b, l, better, first);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, x, best),
                         arith::SelectOp::create(b, l, better, i, bestIndex)});
        });
    Value result = generic.getResult(1);
    if (op.getKeepdims())
      result = tensor::ExpandShapeOp::create(
          rewriter, loc, op.getType(), result, keepDimsGroups(rank, {axis}));
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// Pads the spatial dimensions (from dim 2 on) of `input` with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> pads, TypedAttr value) {
  auto type = cast<RankedTensorType>(input.getType());
  size_t k = type.getRank() - 2;
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return input;
  SmallVector<OpFoldResult> low(2, b.getIndexAttr(0)),
      high(2, b.getIndexAttr(0));
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < k; ++i) {
    low.push_back(b.getIndexAttr(pads[i]));
    high.push_back(b.getIndexAttr(pads[k + i]));
    shape[2 + i] += pads[i] + pads[k + i];
  }
  Value pad = arith::ConstantOp::create(b, loc, value);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), input, low,
      high, pad);
}

SmallVector<ReassociationIndices> splitChannels(unsigned rank) {
  // [N, C, D...] <-> [N, G, C/G, D...]: group dims 1 and 2.
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  for (unsigned i = 3; i <= rank; ++i)
    groups.push_back({static_cast<int64_t>(i)});
  return groups;
}

struct ConvLowering : OpConversionPattern<ConvOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    Type elt = resultTy.getElementType();
    auto filterTy = cast<RankedTensorType>(adaptor.getFilter().getType());
    int64_t g = op.getGroup();
    unsigned k = resultTy.getRank() - 2;
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();

    Value input = padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(),
                             cast<TypedAttr>(rewriter.getZeroAttr(elt)));
    auto paddedTy = cast<RankedTensorType>(input.getType());
    int64_t n = paddedTy.getDimSize(0), cg = paddedTy.getDimSize(1) / g;
    int64_t mg = filterTy.getDimSize(0) / g;

    // Split channels into groups so every map is affine without division:
    // input [N, G, Cg, D...], filter [G, Mg, Cg, K...], output [N, G, Mg,
    // O...].
    SmallVector<int64_t> inShape = {n, g, cg};
    llvm::append_range(inShape, paddedTy.getShape().drop_front(2));
    input = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(inShape, elt), input,
        splitChannels(paddedTy.getRank()));
    SmallVector<int64_t> fShape = {g, mg, cg};
    llvm::append_range(fShape, filterTy.getShape().drop_front(2));
    SmallVector<ReassociationIndices> fGroups = {{0, 1}};
    for (unsigned i = 2; i <= filterTy.getRank(); ++i)
      fGroups.push_back({static_cast<int64_t>(i)});
    Value filter = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(fShape, elt), adaptor.getFilter(),
        fGroups);
    SmallVector<int64_t> oShape = {n, g, mg};
    llvm::append_range(oShape, resultTy.getShape().drop_front(2));
    auto outTy = RankedTensorType::get(oShape, elt);
    Value zero = scalarConstant(rewriter, loc, elt, 0);
    // A symbolic size can only be the batch (checkSymbolicOps), which the
    // split keeps in front.
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, oShape, elt,
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    Value init =
        linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);

    // Loops: n, g, mg, o_1..o_k (parallel); cg, k_1..k_k (reduction).
    unsigned numLoops = 3 + k + 1 + k;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    unsigned cgLoop = 3 + k;
    SmallVector<AffineExpr> inExprs = {d(0), d(1), d(cgLoop)},
                            fExprs = {d(1), d(2), d(cgLoop)},
                            oExprs = {d(0), d(1), d(2)};
    for (unsigned i = 0; i < k; ++i) {
      AffineExpr o = d(3 + i), w = d(cgLoop + 1 + i);
      inExprs.push_back(o * strides[i] + w * dilations[i]);
      fExprs.push_back(w);
      oExprs.push_back(o);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inExprs, ctx),
                                   AffineMap::get(numLoops, 0, fExprs, ctx),
                                   AffineMap::get(numLoops, 0, oExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + k,
                                               utils::IteratorType::parallel);
    iterators.append(1 + k, utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(elt);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{outTy}, ValueRange{input, filter},
            ValueRange{init}, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value prod =
                  isFloat
                      ? Value(arith::MulFOp::create(b, l, args[0], args[1]))
                      : Value(arith::MulIOp::create(b, l, args[0], args[1]));
              Value sum =
                  isFloat ? Value(arith::AddFOp::create(b, l, args[2], prod))
                          : Value(arith::AddIOp::create(b, l, args[2], prod));
              linalg::YieldOp::create(b, l, sum);
            })
            .getResult(0);
    result = tensor::CollapseShapeOp::create(rewriter, loc, resultTy, result,
                                             splitChannels(resultTy.getRank()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct PoolLowering : OpConversionPattern<PoolOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType resultTy = lowered(getTypeConverter(), op.getType());
    Type elt = resultTy.getElementType();
    unsigned k = resultTy.getRank() - 2;
    bool isMax = op.getKind() == PoolKind::max;
    bool isUnsigned = isUnsignedValue(op.getInput());
    TypedAttr identity = reduceIdentity(
        rewriter, isMax ? ReduceKind::Max : ReduceKind::Sum, elt, isUnsigned);
    Value input =
        padSpatial(rewriter, loc, adaptor.getInput(), op.getPads(), identity);
    Value start = arith::ConstantOp::create(rewriter, loc, identity);
    Value empty = tensor::EmptyOp::create(
        rewriter, loc, resultTy.getShape(), elt,
        dynamicSizes(getTypeConverter(), rewriter, loc, op.getType()));
    Value init =
        linalg::FillOp::create(rewriter, loc, start, empty).getResult(0);
    // The window operand only gives the kernel loops their extent.
    Value window = tensor::EmptyOp::create(rewriter, loc, op.getKernel(), elt);
    unsigned numLoops = 2 + 2 * k;
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> inExprs = {d(0), d(1)}, wExprs,
                            oExprs = {d(0), d(1)};
    for (unsigned i = 0; i < k; ++i) {
      inExprs.push_back(d(2 + i) * op.getStrides()[i] +
                        d(2 + k + i) * op.getDilations()[i]);
      wExprs.push_back(d(2 + k + i));
      oExprs.push_back(d(2 + i));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numLoops, 0, inExprs, ctx),
                                   AffineMap::get(numLoops, 0, wExprs, ctx),
                                   AffineMap::get(numLoops, 0, oExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(2 + k,
                                               utils::IteratorType::parallel);
    iterators.append(k, utils::IteratorType::reduction);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{resultTy}, ValueRange{input, window},
            ValueRange{init}, maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  reduceCombine(b, l, isMax ? ReduceKind::Max : ReduceKind::Sum,
                                args[2], args[0], isUnsigned));
            })
            .getResult(0);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Zero-element tensors carry no data: every use of one becomes a
/// tensor.empty, and zero-element arguments and results take the flat type
/// tensor<0xT>, which the bare-pointer calling convention accepts (a memref
/// with a zero among other dimensions makes convert-func-to-llvm skip the
/// function silently). The C signature, read before this pass, is unchanged.
void eraseZeroSizedValues(func::FuncOp func) {
  auto isEmpty = [](Type t) {
    auto rt = dyn_cast<RankedTensorType>(t);
    return rt && rt.hasStaticShape() && rt.getNumElements() == 0;
  };
  auto flat = [](Type t) {
    return RankedTensorType::get({0},
                                 cast<RankedTensorType>(t).getElementType());
  };
  OpBuilder b(func.getContext());
  auto replaceUses = [&](Value v) {
    if (v.use_empty() || v.getDefiningOp<tensor::EmptyOp>())
      return;
    auto t = cast<RankedTensorType>(v.getType());
    Value e = tensor::EmptyOp::create(b, v.getLoc(), t.getShape(),
                                      t.getElementType());
    v.replaceAllUsesWith(e);
  };
  Block &entry = func.getBody().front();
  b.setInsertionPointToStart(&entry);
  for (BlockArgument arg : entry.getArguments())
    if (isEmpty(arg.getType()))
      replaceUses(arg);
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (isEmpty(r.getType())) {
        b.setInsertionPointAfter(op);
        replaceUses(r);
      }
  });
  SmallVector<Type> inputs, results;
  for (BlockArgument arg : entry.getArguments()) {
    if (isEmpty(arg.getType()))
      arg.setType(flat(arg.getType()));
    inputs.push_back(arg.getType());
  }
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands())
      if (isEmpty(operand.get().getType())) {
        b.setInsertionPoint(ret);
        Type t = flat(operand.get().getType());
        operand.set(tensor::EmptyOp::create(
            b, ret.getLoc(), ArrayRef<int64_t>{0},
            cast<RankedTensorType>(t).getElementType()));
      }
    results.assign(ret.getOperandTypes().begin(), ret.getOperandTypes().end());
  });
  func.setFunctionType(FunctionType::get(func.getContext(), inputs, results));
}

/// A value returned twice (an ONNX graph that lists one tensor as two
/// outputs, directly or through Identity) is copied for every repeat: each
/// output needs a buffer of its own, and bufferization's out-params crash
/// on a repeated result otherwise.
static void copyRepeatedResults(func::FuncOp func) {
  func.walk([&](func::ReturnOp ret) {
    DenseSet<Value> seen;
    OpBuilder b(ret);
    for (OpOperand &operand : ret->getOpOperands()) {
      Value v = operand.get();
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (seen.insert(v).second || !type || !type.hasStaticShape())
        continue;
      Value empty = tensor::EmptyOp::create(b, ret.getLoc(), type.getShape(),
                                            type.getElementType());
      operand.set(
          linalg::CopyOp::create(b, ret.getLoc(), v, empty).getResult(0));
    }
  });
}

/// The kiln ops whose lowering computes with run-time sizes; any other op
/// with a symbolic operand or result is an error that names it.
LogicalResult checkSymbolicOps(func::FuncOp func) {
  WalkResult result = func.walk([](Operation *op) {
    if (!isa<KilnDialect>(op->getDialect()) ||
        (!anySymbolicDims(op->getOperandTypes()) &&
         !anySymbolicDims(op->getResultTypes())))
      return WalkResult::advance();
    if (isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, ExpOp, LogOp, TanhOp,
            SigmoidOp, SqrtOp, MaxOp, MinOp, PowOp, RemOp, AndOp, OrOp, XorOp,
            NotOp, AbsOp, SignOp, FloorOp, CeilOp, RoundOp, SinOp, CosOp, TanOp,
            AsinOp, AcosOp, AtanOp, SinhOp, CoshOp, AsinhOp, AcoshOp, AtanhOp,
            ErfOp, ReciprocalOp, CmpOp, SelectOp, CastOp, BroadcastOp, MatMulOp,
            ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp,
            ReshapeOp, TransposeOp, ConcatOp, SliceOp, GatherOp, SizesOp,
            NonZeroOp, NonMaxSuppressionOp, ChooseOp, SliceToOp, FusedOp,
            YieldOp>(op))
      return WalkResult::advance();
    // A top-k whose k is known at run time (clamped to the axis' size).
    if (auto topk = dyn_cast<TopKOp>(op); topk && topk.getCount())
      return WalkResult::advance();
    // Convolutions and pools over a symbolic batch: the channels and the
    // windows stay static.
    auto batchOnly = [](Type t) {
      return llvm::all_of(llvm::drop_begin(dimExprs(t)), [](const DimExpr &e) {
        return e.getConstant().has_value();
      });
    };
    if (isa<ConvOp, PoolOp>(op) &&
        llvm::all_of(op->getOperandTypes(), batchOnly) &&
        llvm::all_of(op->getResultTypes(), batchOnly))
      return WalkResult::advance();
    op->emitOpError("has symbolic sizes, which code generation does not "
                    "handle for this op yet (decision 0027, step 5)");
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

/// What the boundary of a function with symbolic sizes needs of one
/// argument or result: its type at the bound and its sizes.
struct BoundaryValue {
  RankedTensorType bound;
  SmallVector<DimExpr> sizes;
};

/// The symbolic arguments and results of `func` (the others stay empty),
/// with `converter`'s element types; read before conversion.
std::pair<SmallVector<std::optional<BoundaryValue>>,
          SmallVector<std::optional<BoundaryValue>>>
boundaryValues(func::FuncOp func, const TypeConverter &converter) {
  auto read = [&](TypeRange types) {
    SmallVector<std::optional<BoundaryValue>> values;
    for (Type t : types) {
      if (!hasSymbolicDims(t)) {
        values.push_back(std::nullopt);
        continue;
      }
      auto rt = cast<RankedTensorType>(t);
      values.push_back(BoundaryValue{
          RankedTensorType::get(rt.getShape(),
                                converter.convertType(rt.getElementType())),
          dimExprs(t)});
    }
    return values;
  };
  return {read(func.getArgumentTypes()), read(func.getResultTypes())};
}

/// The caller's buffers stay bare pointers to storage for the bound, so
/// the C signature does not change with the sizes: each symbolic argument
/// takes its bound type and is read at its run-time sizes through a 1-D
/// view of its leading elements, and each symbolic result is written to the
/// leading elements of a bound tensor the same way: row-major at the
/// run-time sizes, as the caller lays the data out. `prologue` is the last
/// op that computes sizes at the entry (null when none does).
void keepBoundsAtBoundary(func::FuncOp func, const RunTimeSizes &sizes,
                          Operation *prologue,
                          ArrayRef<std::optional<BoundaryValue>> arguments,
                          ArrayRef<std::optional<BoundaryValue>> results) {
  Block &entry = func.getBody().front();
  Location loc = func.getLoc();
  auto all = [](int64_t rank) {
    ReassociationIndices group;
    for (int64_t i = 0; i < rank; ++i)
      group.push_back(i);
    return SmallVector<ReassociationIndices>{group};
  };
  auto count = [&](OpBuilder &b, ArrayRef<DimExpr> exprs) {
    DimExpr n = DimExpr::constant(1);
    for (const DimExpr &e : exprs)
      n = n * e;
    return sizes.get(b, loc, n);
  };

  OpBuilder b(func.getContext());
  if (prologue)
    b.setInsertionPointAfter(prologue);
  else
    b.setInsertionPointToStart(&entry);
  for (auto [arg, boundary] :
       llvm::zip_equal(entry.getArguments(), arguments)) {
    if (!boundary)
      continue;
    RankedTensorType bound = boundary->bound;
    arg.setType(bound);
    Value flat = arg;
    if (bound.getRank() != 1)
      flat = tensor::CollapseShapeOp::create(b, loc, arg, all(bound.getRank()));
    Value leading = tensor::ExtractSliceOp::create(
        b, loc, flat, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{count(b, boundary->sizes)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    auto dynamicTy = RankedTensorType::get(loweredShape(boundary->sizes),
                                           bound.getElementType());
    Value view = leading;
    if (bound.getRank() != 1)
      view = tensor::ExpandShapeOp::create(
          b, loc, dynamicTy, leading, all(bound.getRank()),
          sizes.mixed(b, loc, boundary->sizes));
    arg.replaceAllUsesExcept(view, flat == arg ? leading.getDefiningOp()
                                               : flat.getDefiningOp());
  }

  func.walk([&](func::ReturnOp ret) {
    b.setInsertionPoint(ret);
    for (auto [operand, boundary] :
         llvm::zip_equal(ret->getOpOperands(), results)) {
      if (!boundary)
        continue;
      RankedTensorType bound = boundary->bound;
      Value flat = operand.get();
      if (bound.getRank() != 1)
        flat =
            tensor::CollapseShapeOp::create(b, loc, flat, all(bound.getRank()));
      Value dest = tensor::EmptyOp::create(
          b, loc, ArrayRef<int64_t>{bound.getNumElements()},
          bound.getElementType());
      Value full = tensor::InsertSliceOp::create(
          b, loc, flat, dest, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{count(b, boundary->sizes)},
          ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
      if (bound.getRank() != 1)
        full = tensor::ExpandShapeOp::create(b, loc, bound, full,
                                             all(bound.getRank()));
      operand.set(full);
    }
  });
  SmallVector<Type> resultTypes;
  func.walk([&](func::ReturnOp ret) {
    resultTypes.assign(ret.getOperandTypes().begin(),
                       ret.getOperandTypes().end());
  });
  func.setFunctionType(FunctionType::get(
      func.getContext(), entry.getArgumentTypes(), resultTypes));
}

struct LowerToLinalg : kiln::impl::LowerToLinalgBase<LowerToLinalg> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (func.isExternal())
      return; // a declaration, such as kiln-mark-kernels' probe

    eraseZeroSizedValues(func);
    copyRepeatedResults(func);

    // Callers' inputs are read-only: bufferization must copy, never write.
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (isa<TensorType>(func.getArgument(i).getType()))
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));

    // arith works on signless integers only: unsigned element types become
    // signless of the same width, in the signature too. Patterns read the
    // signedness (and narrow types) off the kiln ops' own types.
    // The narrow types are stored as one i8 per element (NarrowTypes.h).
    if (failed(checkSymbolicOps(func)))
      return signalPassFailure();
    RunTimeSizes sizes(func);
    KilnTypeConverter converter;
    converter.sizes = &sizes;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([ctx](IntegerType t) -> Type {
      return IntegerType::get(ctx, isNarrowType(t) ? 8 : t.getWidth());
    });
    converter.addConversion([ctx](FloatType t) -> Type {
      return isNarrowType(t) ? Type(IntegerType::get(ctx, 8)) : Type(t);
    });
    // Symbolic sizes (a #kiln.dims encoding) become dynamic sizes, whose
    // values the entry computes (RunTimeSizes).
    converter.addConversion([&converter](RankedTensorType t) -> Type {
      Type elt = converter.convertType(t.getElementType());
      if (hasSymbolicDims(t))
        return RankedTensorType::get(loweredShape(dimExprs(t)), elt);
      return RankedTensorType::get(t.getShape(), elt);
    });

    auto [arguments, results] = boundaryValues(func, converter);

    // Each kiln.fused kernel becomes a region whose ops convert in place.
    llvm::DenseSet<Operation *> cheapOps;
    openKernels(func, converter, cheapOps);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    // A data-parallel bucket stays itself; bufferization makes it calls.
    target.addLegalOp<AllReduceOp>();
    // Sizes computed from data go through the computed-dims argument.
    target.addLegalOp<memref::LoadOp, memref::StoreOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           scf::SCFDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>([&](func::ReturnOp r) {
      return converter.isLegal(r.getOperandTypes());
    });

    RewritePatternSet patterns(ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    patterns.add<ElementwiseLowering<AddOp>, ElementwiseLowering<SubOp>,
                 ElementwiseLowering<MulOp>, ElementwiseLowering<DivOp>,
                 ElementwiseLowering<NegOp>, ElementwiseLowering<ReluOp>,
                 ElementwiseLowering<ExpOp>, ElementwiseLowering<LogOp>,
                 ElementwiseLowering<TanhOp>, ElementwiseLowering<SigmoidOp>,
                 ElementwiseLowering<SqrtOp>, MatMulLowering,
                 ReduceLowering<ReduceSumOp, ReduceKind::Sum>,
                 ReduceLowering<ReduceMeanOp, ReduceKind::Mean>,
                 ReduceLowering<ReduceMaxOp, ReduceKind::Max>,
                 ReduceLowering<ReduceMinOp, ReduceKind::Min>,
                 ReduceLowering<ReduceProdOp, ReduceKind::Prod>,
                 ReshapeLowering, TransposeLowering, ConstantLowering,
                 ElementwiseLowering<MaxOp>, ElementwiseLowering<MinOp>,
                 ElementwiseLowering<PowOp>, ElementwiseLowering<RemOp>,
                 ElementwiseLowering<AndOp>, ElementwiseLowering<OrOp>,
                 ElementwiseLowering<XorOp>, ElementwiseLowering<NotOp>,
                 ElementwiseLowering<AbsOp>, ElementwiseLowering<SignOp>,
                 ElementwiseLowering<FloorOp>, ElementwiseLowering<CeilOp>,
                 ElementwiseLowering<RoundOp>, ElementwiseLowering<SinOp>,
                 ElementwiseLowering<CosOp>, ElementwiseLowering<TanOp>,
                 ElementwiseLowering<AsinOp>, ElementwiseLowering<AcosOp>,
                 ElementwiseLowering<AtanOp>, ElementwiseLowering<SinhOp>,
                 ElementwiseLowering<CoshOp>, ElementwiseLowering<AsinhOp>,
                 ElementwiseLowering<AcoshOp>, ElementwiseLowering<AtanhOp>,
                 ElementwiseLowering<ErfOp>, ElementwiseLowering<ReciprocalOp>,
                 CmpLowering, ElementwiseLowering<SelectOp>, CastLowering,
                 ElementwiseLowering<BroadcastOp>, ConcatLowering,
                 SliceLowering, GatherLowering, ArgLowering<ArgMaxOp, true>,
                 ArgLowering<ArgMinOp, false>, ConvLowering, PoolLowering,
                 ScatterLowering, TopKLowering, SizesLowering, NonZeroLowering,
                 NonMaxSuppressionLowering, ChooseLowering, SliceToLowering>(
        converter, ctx);
    CheapOpListener listener(cheapOps);
    ConversionConfig config;
    config.listener = &listener;
    if (failed(
            applyPartialConversion(func, target, std::move(patterns), config)))
      return signalPassFailure();
    // Kernels to as few loop nests as the cost rule allows.
    if (failed(fuseAndCloseKernels(func)))
      return signalPassFailure();
    if (sizes.any())
      keepBoundsAtBoundary(func, sizes, sizes.prologueEnd(), arguments,
                           results);
  }
};

} // namespace
