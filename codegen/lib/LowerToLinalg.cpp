//===- LowerToLinalg.cpp - kiln-lower-to-linalg ---------------------------===//
//
// Lowers the kiln dialect to structured ops on tensors. Everything stays in
// value semantics; bufferization decides storage afterwards. Broadcasting is
// expressed in indexing maps (a broadcast dimension reads index 0), so no
// broadcast tensor is ever materialized.
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"
#include "kiln/IR/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
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
Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultTy,
                       ValueRange operands, BodyFn body) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultTy.getRank();
  SmallVector<AffineMap> maps;
  for (Value v : operands)
    maps.push_back(broadcastMap(
        ctx, cast<RankedTensorType>(v.getType()).getShape(),
        resultTy.getShape(), rank));
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  Value init = tensor::EmptyOp::create(b, loc, resultTy.getShape(),
                                       resultTy.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultTy}, operands, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        linalg::YieldOp::create(nb, nloc,
                                body(nb, nloc, args.drop_back()));
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

template <typename Op>
Value scalarBody(OpBuilder &b, Location loc, ValueRange args);

#define KILN_FLOAT_INT_BINARY(OP, FOP, IOP)                                    \
  template <>                                                                  \
  Value scalarBody<OP>(OpBuilder & b, Location loc, ValueRange args) {         \
    if (isa<FloatType>(args[0].getType()))                                     \
      return FOP::create(b, loc, args[0], args[1]);                            \
    return IOP::create(b, loc, args[0], args[1]);                              \
  }
KILN_FLOAT_INT_BINARY(AddOp, arith::AddFOp, arith::AddIOp)
KILN_FLOAT_INT_BINARY(SubOp, arith::SubFOp, arith::SubIOp)
KILN_FLOAT_INT_BINARY(MulOp, arith::MulFOp, arith::MulIOp)
KILN_FLOAT_INT_BINARY(DivOp, arith::DivFOp, arith::DivSIOp)
#undef KILN_FLOAT_INT_BINARY

template <>
Value scalarBody<NegOp>(OpBuilder &b, Location loc, ValueRange args) {
  if (isa<FloatType>(args[0].getType()))
    return arith::NegFOp::create(b, loc, args[0]);
  Value zero = scalarConstant(b, loc, args[0].getType(), 0);
  return arith::SubIOp::create(b, loc, zero, args[0]);
}

template <>
Value scalarBody<ReluOp>(OpBuilder &b, Location loc, ValueRange args) {
  Value zero = scalarConstant(b, loc, args[0].getType(), 0);
  if (isa<FloatType>(args[0].getType()))
    return arith::MaximumFOp::create(b, loc, args[0], zero);
  return arith::MaxSIOp::create(b, loc, args[0], zero);
}

#define KILN_MATH_UNARY(OP, MOP)                                               \
  template <>                                                                  \
  Value scalarBody<OP>(OpBuilder & b, Location loc, ValueRange args) {         \
    return MOP::create(b, loc, args[0]);                                       \
  }
KILN_MATH_UNARY(ExpOp, math::ExpOp)
KILN_MATH_UNARY(LogOp, math::LogOp)
KILN_MATH_UNARY(TanhOp, math::TanhOp)
KILN_MATH_UNARY(SqrtOp, math::SqrtOp)
#undef KILN_MATH_UNARY

template <>
Value scalarBody<SigmoidOp>(OpBuilder &b, Location loc, ValueRange args) {
  // 1 / (1 + e^-x): saturates to 0 and 1 without producing NaN.
  Type t = args[0].getType();
  Value one = scalarConstant(b, loc, t, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, args[0]));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

template <typename Op>
struct ElementwiseLowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value result = buildElementwise(
        rewriter, op.getLoc(), cast<RankedTensorType>(op.getType()),
        adaptor.getOperands(), scalarBody<Op>);
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
    RankedTensorType resultTy = op.getType();
    Type elt = resultTy.getElementType();
    Value zero = scalarConstant(rewriter, loc, elt, 0);
    Value empty = tensor::EmptyOp::create(rewriter, loc, resultTy.getShape(), elt);
    Value init = linalg::FillOp::create(rewriter, loc, zero, empty).getResult(0);
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();

    if (resultTy.getRank() == 2) {
      rewriter.replaceOp(op, linalg::MatmulOp::create(rewriter, loc, resultTy,
                                                      ValueRange{lhs, rhs},
                                                      ValueRange{init})
                                 .getResult(0));
      return success();
    }

    // Batched, possibly broadcasting: loops (batch..., m, n, k).
    MLIRContext *ctx = rewriter.getContext();
    unsigned batch = resultTy.getRank() - 2, numLoops = batch + 3;
    ArrayRef<int64_t> batchShape = resultTy.getShape().drop_back(2);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    auto operandMap = [&](Value v, AffineExpr row, AffineExpr col) {
      ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
      AffineMap bmap = broadcastMap(ctx, shape.drop_back(2), batchShape, numLoops);
      SmallVector<AffineExpr> exprs(bmap.getResults());
      exprs.push_back(row);
      exprs.push_back(col);
      return AffineMap::get(numLoops, 0, exprs, ctx);
    };
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < batch + 2; ++i)
      outExprs.push_back(d(i));
    SmallVector<AffineMap> maps = {
        operandMap(lhs, d(batch), d(batch + 2)),
        operandMap(rhs, d(batch + 2), d(batch + 1)),
        AffineMap::get(numLoops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops - 1,
                                               utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    bool isFloat = isa<FloatType>(elt);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{resultTy}, ValueRange{lhs, rhs},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value prod, sum;
          if (isFloat) {
            prod = arith::MulFOp::create(b, l, args[0], args[1]);
            sum = arith::AddFOp::create(b, l, args[2], prod);
          } else {
            prod = arith::MulIOp::create(b, l, args[0], args[1]);
            sum = arith::AddIOp::create(b, l, args[2], prod);
          }
          linalg::YieldOp::create(b, l, sum);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

/// The value a reduction starts from: its combiner's identity.
TypedAttr reduceIdentity(Builder &b, ReduceKind kind, Type elt) {
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
    return b.getIntegerAttr(elt, APInt::getSignedMinValue(width));
  case ReduceKind::Min:
    return b.getIntegerAttr(elt, APInt::getSignedMaxValue(width));
  }
  llvm_unreachable("unknown reduction");
}

Value reduceCombine(OpBuilder &b, Location loc, ReduceKind kind, Value acc,
                    Value x) {
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
    return isFloat ? Value(arith::MaximumFOp::create(b, loc, acc, x))
                   : Value(arith::MaxSIOp::create(b, loc, acc, x));
  case ReduceKind::Min:
    return isFloat ? Value(arith::MinimumFOp::create(b, loc, acc, x))
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

    SmallVector<int64_t> outShape =
        reducedShape(inputTy.getShape(), axes, /*keepDims=*/false);
    auto accTy = RankedTensorType::get(outShape, acc);
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
    Value identity = arith::ConstantOp::create(rewriter, loc,
                                               reduceIdentity(rewriter, Kind, acc));
    Value empty = tensor::EmptyOp::create(rewriter, loc, outShape, acc);
    Value init = linalg::FillOp::create(rewriter, loc, identity, empty).getResult(0);
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{accTy}, ValueRange{input}, ValueRange{init},
            maps, iterators,
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value x = args[0];
              if (widen)
                x = arith::ExtFOp::create(b, l, acc, x);
              linalg::YieldOp::create(b, l,
                                      reduceCombine(b, l, Kind, args[1], x));
            })
            .getResult(0);

    if (Kind == ReduceKind::Mean || widen) {
      int64_t count = 1;
      for (int64_t axis : axes)
        count *= inputTy.getDimSize(axis);
      result = buildElementwise(
          rewriter, loc, RankedTensorType::get(outShape, elt), ValueRange{result},
          [&](OpBuilder &b, Location l, ValueRange args) -> Value {
            Value v = args[0];
            if (Kind == ReduceKind::Mean) {
              Value n = scalarConstant(b, l, acc, static_cast<double>(count));
              v = arith::DivFOp::create(b, l, v, n);
            }
            if (widen)
              v = arith::TruncFOp::create(b, l, elt, v);
            return v;
          });
    }

    if (op.getKeepdims() && !axes.empty()) {
      // Group each kept dimension with the size-1 dimensions around it.
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
      result = tensor::ExpandShapeOp::create(rewriter, loc, op.getType(),
                                             result, groups);
    }
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
    RankedTensorType resultTy = op.getType();
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
      v = tensor::CollapseShapeOp::create(rewriter, loc, v, all(inputTy.getRank()));
    if (resultTy.getRank() != 1)
      v = tensor::ExpandShapeOp::create(rewriter, loc, resultTy, v,
                                        all(resultTy.getRank()));
    rewriter.replaceOp(op, v);
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType resultTy = op.getType();
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(),
                                         resultTy.getShape(),
                                         resultTy.getElementType());
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
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, value);
    return success();
  }
};

struct LowerToLinalg : kiln::impl::LowerToLinalgBase<LowerToLinalg> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();

    // Callers' inputs are read-only: bufferization must copy, never write.
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (isa<TensorType>(func.getArgument(i).getType()))
        func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));

    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect>();
    target.addLegalOp<func::ReturnOp>();

    RewritePatternSet patterns(ctx);
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
                 ReshapeLowering, TransposeLowering, ConstantLowering>(ctx);
    if (failed(applyPartialConversion(func, target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
