//===- Canonicalize.cpp - kiln-canonicalize -------------------------------===//
//
// Runs the kiln ops' folders and canonicalization patterns, plus the
// algebraic patterns below, with MLIR's greedy driver. The extra patterns
// either remove work (integer x * 0, convolution taps that read padding) or
// move the per-channel affine tail of an inference batch normalization into
// the preceding conv or matmul's constant weights. Every pattern keeps each
// replaced value's type: a broadcast that would widen an operand makes the
// pattern decline. A value a pattern creates is created where every user sees
// it: new ops go before the matched op, and an op that comes to use them moves
// down to them (e2e/large-weight-rewrites.test has weights too big to fold away
// first).
//
//===----------------------------------------------------------------------===//

#include "kiln/IR/KilnOps.h"
#include "kiln/IR/SymbolicDims.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_CANONICALIZE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

/// True when broadcasting `v` with `other` leaves `v`'s shape as it is.
bool broadcastKeepsShape(Value v, Value other) {
  auto shape =
      broadcastShapes(tensorType(v).getShape(), tensorType(other).getShape());
  return shape && ArrayRef<int64_t>(*shape) == tensorType(v).getShape();
}

/// A conv or matmul, possibly followed by adds of constants: the values the
/// batch-normalization patterns move constants towards.
bool isLinearChain(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op)
    return false;
  if (isa<ConvOp, MatMulOp>(op))
    return isa<FloatType>(tensorType(v).getElementType());
  if (auto add = dyn_cast<AddOp>(op))
    return (isConstant(add.getRhs()) && isLinearChain(add.getLhs())) ||
           (isConstant(add.getLhs()) && isLinearChain(add.getRhs()));
  return false;
}

/// Splits a commutative binary op into (non-constant, constant) operands.
template <typename OpTy>
std::optional<std::pair<Value, Value>> valueAndConstant(OpTy op) {
  if (isConstant(op.getRhs()) && !isConstant(op.getLhs()))
    return std::make_pair(op.getLhs(), op.getRhs());
  if (isConstant(op.getLhs()) && !isConstant(op.getRhs()))
    return std::make_pair(op.getRhs(), op.getLhs());
  return std::nullopt;
}

/// x * 0 -> 0 for integers (for floats NaN * 0, inf * 0 and -x * 0 differ).
struct IntegerMulByZero : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto resultTy = op.getType();
    if (!isa<IntegerType>(resultTy.getElementType()) ||
        hasSymbolicDims(resultTy))
      return failure();
    for (Value v : {op.getLhs(), op.getRhs()}) {
      DenseElementsAttr c;
      if (!matchPattern(v, m_Constant(&c)) || !c.isSplat() ||
          !c.getSplatValue<APInt>().isZero())
        continue;
      rewriter.replaceOpWithNewOp<ConstantOp>(
          op, resultTy,
          DenseElementsAttr::get(resultTy, c.getSplatValue<Attribute>()));
      return success();
    }
    return failure();
  }
};

/// y - c -> y + (-c) when y is a conv/matmul chain, so the constant can join
/// the other constant adds.
struct SubConstantToAdd : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SubOp op,
                                PatternRewriter &rewriter) const override {
    if (!isConstant(op.getRhs()) || !isLinearChain(op.getLhs()))
      return failure();
    Value negated = NegOp::create(rewriter, op.getLoc(), op.getRhs());
    rewriter.replaceOpWithNewOp<AddOp>(op, op.getType(), op.getLhs(), negated);
    return success();
  }
};

/// (y + c1) + c2 -> y + (c1 + c2) when y is a conv/matmul chain.
struct MergeConstantAdds : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto outer = valueAndConstant(op);
    if (!outer)
      return failure();
    auto inner = outer->first.getDefiningOp<AddOp>();
    if (!inner || !inner->hasOneUse())
      return failure();
    auto in = valueAndConstant(inner);
    if (!in || !isLinearChain(in->first))
      return failure();
    Value sum = AddOp::create(rewriter, op.getLoc(), in->second, outer->second);
    auto replacement = AddOp::create(rewriter, op.getLoc(), in->first, sum);
    if (replacement.getType() != op.getType()) {
      rewriter.eraseOp(replacement);
      rewriter.eraseOp(sum.getDefiningOp());
      return failure();
    }
    rewriter.replaceOp(op, replacement.getResult());
    return success();
  }
};

/// (y + c1) * c2 -> y * c2 + c1 * c2 when y is a conv/matmul chain and c1
/// does not widen y.
struct DistributeMulOverAdd : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto outer = valueAndConstant(op);
    if (!outer)
      return failure();
    auto add = outer->first.getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse())
      return failure();
    auto in = valueAndConstant(add);
    if (!in || !isLinearChain(in->first) ||
        !broadcastKeepsShape(in->first, in->second))
      return failure();
    Value c2 = outer->second;
    Value scaled = MulOp::create(rewriter, op.getLoc(), in->first, c2);
    Value shift = MulOp::create(rewriter, op.getLoc(), in->second, c2);
    auto replacement = AddOp::create(rewriter, op.getLoc(), scaled, shift);
    if (replacement.getType() != op.getType()) {
      rewriter.eraseOp(replacement);
      rewriter.eraseOp(shift.getDefiningOp());
      rewriter.eraseOp(scaled.getDefiningOp());
      return failure();
    }
    rewriter.replaceOp(op, replacement.getResult());
    return success();
  }
};

/// The shape `c` would have as a per-axis factor of a rank-`rank` tensor
/// whose broadcast with `c` keeps its shape and that varies only along
/// `axis`: [1, .., n, .., 1]. Nullopt when c varies along another axis.
std::optional<SmallVector<int64_t>> perAxisShape(RankedTensorType c,
                                                 int64_t rank, int64_t axis) {
  if (c.getRank() > rank)
    return std::nullopt;
  SmallVector<int64_t> shape(rank, 1);
  int64_t offset = rank - c.getRank();
  for (int64_t d = 0; d < c.getRank(); ++d) {
    if (c.getDimSize(d) == 1)
      continue;
    if (d + offset != axis)
      return std::nullopt;
    shape[axis] = c.getDimSize(d);
  }
  return shape;
}

/// conv(x, W) * c -> conv(x, W * c') for a constant filter and a constant c
/// that varies only along the output channels.
struct FoldScaleIntoConv : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto vc = valueAndConstant(op);
    if (!vc)
      return failure();
    auto conv = vc->first.getDefiningOp<ConvOp>();
    if (!conv || !conv->hasOneUse() || !isConstant(conv.getFilter()) ||
        !isa<FloatType>(conv.getType().getElementType()) ||
        !broadcastKeepsShape(conv.getResult(), vc->second))
      return failure();
    auto filterTy = conv.getFilter().getType();
    auto shape = perAxisShape(tensorType(vc->second), conv.getType().getRank(),
                              /*axis=*/1);
    if (!shape)
      return failure();
    // Output channel m of the result is filter row m: c' = c as [M,1,..,1].
    SmallVector<int64_t> factorShape(filterTy.getRank(), 1);
    factorShape[0] = (*shape)[1];
    auto factorTy =
        RankedTensorType::get(factorShape, filterTy.getElementType());
    Value factor =
        ReshapeOp::create(rewriter, op.getLoc(), factorTy, vc->second);
    Value filter =
        MulOp::create(rewriter, op.getLoc(), conv.getFilter(), factor);
    if (tensorType(filter) != filterTy) {
      rewriter.eraseOp(filter.getDefiningOp());
      rewriter.eraseOp(factor.getDefiningOp());
      return failure();
    }
    // The new filter is built where the scale is known (before `op`, which
    // may be far after the conv, with the scale computed in between); the
    // conv, whose one user is `op`, moves down to just after it.
    rewriter.modifyOpInPlace(conv,
                             [&] { conv.getFilterMutable().assign(filter); });
    rewriter.moveOpBefore(conv, op);
    rewriter.replaceOp(op, conv.getResult());
    return success();
  }
};

/// matmul(x, W) * c -> matmul(x, W * c) for a constant W and a constant c
/// that varies only along the last (column) axis and has rank <= 2.
struct FoldScaleIntoMatMul : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    auto vc = valueAndConstant(op);
    if (!vc)
      return failure();
    auto matmul = vc->first.getDefiningOp<MatMulOp>();
    if (!matmul || !matmul->hasOneUse() || !isConstant(matmul.getRhs()) ||
        matmul.getTransposeRhs() ||
        !isa<FloatType>(matmul.getType().getElementType()) ||
        !broadcastKeepsShape(matmul.getResult(), vc->second))
      return failure();
    auto c = tensorType(vc->second);
    int64_t rank = matmul.getType().getRank();
    if (c.getRank() > 2 || !perAxisShape(c, rank, rank - 1))
      return failure();
    auto weightTy = matmul.getRhs().getType();
    Value weight =
        MulOp::create(rewriter, op.getLoc(), matmul.getRhs(), vc->second);
    if (tensorType(weight) != weightTy) {
      rewriter.eraseOp(weight.getDefiningOp());
      return failure();
    }
    // As in FoldScaleIntoConv: the weight is built before `op`, and the
    // matmul (used only by `op`) moves down to just after it.
    rewriter.modifyOpInPlace(matmul,
                             [&] { matmul.getRhsMutable().assign(weight); });
    rewriter.moveOpBefore(matmul, op);
    rewriter.replaceOp(op, matmul.getResult());
    return success();
  }
};

/// True for a permutation that swaps the last two dimensions only.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

/// matmul(transpose(a), b) -> matmul(a, b) {transpose_lhs}, and the same for
/// the right operand: the product reads the operand transposed, no copy.
struct TransposeIntoMatMul : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto lt = op.getLhs().getDefiningOp<TransposeOp>();
    auto rt = op.getRhs().getDefiningOp<TransposeOp>();
    // A transposed constant is left to kiln-fold-constants: a weight stored
    // in the layout the product wants keeps the plain matmul lowering.
    bool foldLhs =
        lt && swapsLastTwo(lt.getPerm()) && !isConstant(lt.getInput());
    bool foldRhs =
        rt && swapsLastTwo(rt.getPerm()) && !isConstant(rt.getInput());
    if (!foldLhs && !foldRhs)
      return failure();
    rewriter.modifyOpInPlace(op, [&] {
      if (foldLhs) {
        op.getLhsMutable().assign(lt.getInput());
        op.setTransposeLhs(!op.getTransposeLhs());
      }
      if (foldRhs) {
        op.getRhsMutable().assign(rt.getInput());
        op.setTransposeRhs(!op.getTransposeRhs());
      }
    });
    return success();
  }
};

/// matmul(x: [B..., 1, K], W: [K, N]) -> reshape(matmul(reshape(x): [B, K], W))
/// when the batch B (the product of the leading dims) is above 1: a vector
/// per batch against one shared matrix is one matrix product with B rows,
/// which the tiled schedule runs at full speed instead of streaming W once
/// per row (ViT's attention projections, exported as [197, 1, 768] x
/// [768, 2304], ran 8x slower than the MLP's products). Only the
/// one-row case is rewritten: the reshape keeps the result from fusing
/// with its bias, which costs far less than the vector products did.
struct MatVecBatchesToMatMul : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto lhsTy = dyn_cast<RankedTensorType>(op.getLhs().getType());
    auto rhsTy = dyn_cast<RankedTensorType>(op.getRhs().getType());
    auto outTy = dyn_cast<RankedTensorType>(op.getType());
    if (!lhsTy || !rhsTy || !outTy || op.getTransposeLhs() ||
        lhsTy.getRank() < 3 || rhsTy.getRank() != 2 ||
        !lhsTy.hasStaticShape() || !outTy.hasStaticShape() ||
        hasSymbolicDims(lhsTy))
      return failure();
    int64_t rank = lhsTy.getRank();
    if (lhsTy.getDimSize(rank - 2) != 1 || outTy.getRank() != rank)
      return failure();
    int64_t rows = 1;
    for (int64_t d : lhsTy.getShape().drop_back(2))
      rows *= d;
    if (rows <= 1)
      return failure();
    Location loc = op.getLoc();
    auto flatTy = RankedTensorType::get({rows, lhsTy.getDimSize(rank - 1)},
                                        lhsTy.getElementType());
    Value flat = ReshapeOp::create(rewriter, loc, flatTy, op.getLhs());
    Value product =
        MatMulOp::create(rewriter, loc, flat, op.getRhs(),
                         /*transpose_lhs=*/false, op.getTransposeRhs());
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, outTy, product);
    return success();
  }
};

/// Along one axis of a convolution (input size `in`, output size `out`,
/// stride `s`, dilation `d`, low padding `lo`), the outputs [first, last)
/// whose window reads the input, not padding, with tap `t`: those where
/// o*s + t*d - lo lies in [0, in). Empty (first == last) for a tap that
/// only reads padding.
std::pair<int64_t, int64_t> tapReach(int64_t in, int64_t out, int64_t s,
                                     int64_t d, int64_t lo, int64_t t) {
  int64_t offset = t * d - lo; // the input it reads at o = 0
  int64_t first = offset >= 0 ? 0 : llvm::divideCeil(-offset, s);
  int64_t last = offset >= in ? 0 : llvm::divideCeil(in - offset, s);
  first = std::min(first, out);
  return {first, std::clamp(last, first, out)};
}

/// A convolution's types when all are static, and its number of spatial
/// axes when its attributes agree with it.
struct StaticConv {
  RankedTensorType in, filter, out;
  int64_t k;

  static std::optional<StaticConv> of(ConvOp op) {
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto filter = dyn_cast<RankedTensorType>(op.getFilter().getType());
    auto out = dyn_cast<RankedTensorType>(op.getType());
    if (!in || !filter || !out || !in.hasStaticShape() ||
        !filter.hasStaticShape() || !out.hasStaticShape())
      return std::nullopt;
    int64_t k = filter.getRank() - 2;
    if (k <= 0 || int64_t(op.getStrides().size()) != k ||
        int64_t(op.getDilations().size()) != k ||
        int64_t(op.getPads().size()) != 2 * k)
      return std::nullopt;
    return StaticConv{in, filter, out, k};
  }
};

/// A dilated convolution whose outer taps only ever read padding (DeepLab's
/// atrous rates of 24 or 36 over a 28x28 map) loses those taps: the filter
/// is sliced to the taps some output reads inside the input, and the pads
/// shrink by the dropped reach, so the output shape is unchanged and the
/// padded copy of the input (and the arithmetic on zeros) shrinks with it.
/// An axis left with one tap has no use for its dilation and gets 1, the
/// form the 1x1 convolution schedules expect (a 1x1 filter with dilation 24
/// ran at half their speed).
struct DropDeadConvTaps : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<StaticConv> types = StaticConv::of(op);
    if (!types)
      return failure();
    RankedTensorType inTy = types->in, wTy = types->filter, outTy = types->out;
    int64_t k = types->k;
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations(),
                      pads = op.getPads();
    SmallVector<int64_t> starts(wTy.getRank(), 0), shape(wTy.getShape());
    SmallVector<int64_t> newPads(pads), newDilations(dilations);
    bool changed = false;
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = inTy.getDimSize(2 + i), taps = wTy.getDimSize(2 + i),
              out = outTy.getDimSize(2 + i), s = strides[i], d = dilations[i],
              lo = pads[i], hi = pads[k + i];
      if (s <= 0 || d <= 0 || out <= 0 || in <= 0)
        return failure();
      // Tap t is alive when some output's window reads the input with it.
      auto alive = [&](int64_t t) {
        auto [first, last] = tapReach(in, out, s, d, lo, t);
        return first < last;
      };
      int64_t a = 0, b = taps - 1;
      while (a < taps && !alive(a))
        ++a;
      while (b > a && !alive(b))
        --b;
      if (a == taps || (a == 0 && b == taps - 1))
        continue; // all dead (a zero result) or all alive: leave the axis
      int64_t newLo = lo - a * d, newHi = hi - (taps - 1 - b) * d;
      if (newLo < 0 || newHi < 0)
        continue;
      starts[2 + i] = a;
      shape[2 + i] = b - a + 1;
      newPads[i] = newLo;
      newPads[k + i] = newHi;
      changed = true;
    }
    for (int64_t i = 0; i < k; ++i) {
      if (shape[2 + i] == 1 && newDilations[i] != 1) {
        newDilations[i] = 1;
        changed = true;
      }
    }
    if (!changed)
      return failure();
    SmallVector<int64_t> ones(wTy.getRank(), 1);
    Value filter =
        SliceOp::create(rewriter, op.getLoc(),
                        RankedTensorType::get(shape, wTy.getElementType()),
                        op.getFilter(), rewriter.getDenseI64ArrayAttr(starts),
                        rewriter.getDenseI64ArrayAttr(ones));
    if (filter.getType() == wTy) {
      rewriter.eraseOp(filter.getDefiningOp());
      filter = op.getFilter();
    }
    auto conv = ConvOp::create(
        rewriter, op.getLoc(), op.getInput(), filter, op.getStridesAttr(),
        rewriter.getDenseI64ArrayAttr(newDilations),
        rewriter.getDenseI64ArrayAttr(newPads), op.getGroupAttr());
    if (conv.getType() != op.getType()) {
      rewriter.eraseOp(conv);
      if (filter != op.getFilter())
        rewriter.eraseOp(filter.getDefiningOp());
      return failure();
    }
    rewriter.replaceOp(op, conv.getResult());
    return success();
  }
};

/// A stride-1 convolution whose taps mostly read padding (an atrous rate
/// near the map's size: DeepLab's rate 12 over a 14x14 map, where each
/// outer tap meets the input in two rows or columns) is computed tap by tap:
/// each tap is a 1x1 convolution over the input window it reads, the part
/// of the output it reaches padded with zeros around it, and the taps'
/// results are added. The arithmetic on padding (82% of it at rate 12 over
/// 14x14) and the im2col copy of a mostly zero input go; the filter's bytes
/// stay the same (each tap's slice is used once). Only where less than half
/// of the taps' reads land inside the input, so ordinary padded
/// convolutions (a 3x3 over 14x14 reads 91% inside) are left alone.
struct SplitSparseConvTaps : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  /// Taps of more than this many are left to the convolution schedules.
  static constexpr int64_t kMaxTaps = 32;

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<StaticConv> conv = StaticConv::of(op);
    if (!conv || conv->in.getEncoding() || conv->filter.getEncoding() ||
        conv->out.getEncoding() || conv->out.getNumElements() == 0 ||
        !isa<FloatType>(conv->out.getElementType()))
      return failure();
    RankedTensorType inTy = conv->in, wTy = conv->filter, outTy = conv->out;
    int64_t k = conv->k;
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations(),
                      pads = op.getPads();
    // Per axis, the outputs [first, last) each tap reads the input for.
    SmallVector<SmallVector<std::pair<int64_t, int64_t>>> reach(k);
    int64_t taps = 1;
    double inside = 1.0;
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = inTy.getDimSize(2 + i), n = wTy.getDimSize(2 + i),
              out = outTy.getDimSize(2 + i), d = dilations[i], lo = pads[i];
      if (strides[i] != 1 || d <= 0 || n <= 0)
        return failure();
      int64_t read = 0;
      for (int64_t t = 0; t < n; ++t) {
        reach[i].push_back(tapReach(in, out, 1, d, lo, t));
        read += reach[i].back().second - reach[i].back().first;
      }
      taps *= n;
      inside *= double(read) / double(n * out);
    }
    if (taps < 2 || taps > kMaxTaps || inside >= 0.5)
      return failure();

    Location loc = op.getLoc();
    Type elt = outTy.getElementType();
    int64_t rank = outTy.getRank();
    auto zeros = [&](ArrayRef<int64_t> shape) -> Value {
      auto ty = RankedTensorType::get(shape, elt);
      return ConstantOp::create(
          rewriter, loc, ty,
          DenseElementsAttr::get(ty, rewriter.getZeroAttr(elt)));
    };
    Value sum;
    SmallVector<int64_t> tap(k, 0);
    for (int64_t index = 0; index < taps; ++index) {
      int64_t rest = index;
      for (int64_t i = k - 1; i >= 0; --i) {
        tap[i] = rest % wTy.getDimSize(2 + i);
        rest /= wTy.getDimSize(2 + i);
      }
      bool dead = false;
      for (int64_t i = 0; i < k; ++i)
        dead |= reach[i][tap[i]].first == reach[i][tap[i]].second;
      if (dead)
        continue;
      // The input window this tap reads, as a 1x1 convolution's input.
      SmallVector<int64_t> inStarts(rank, 0), inShape(inTy.getShape());
      SmallVector<int64_t> wStarts(rank, 0), wShape(wTy.getShape());
      for (int64_t i = 0; i < k; ++i) {
        auto [first, last] = reach[i][tap[i]];
        inStarts[2 + i] = first + tap[i] * dilations[i] - pads[i];
        inShape[2 + i] = last - first;
        wStarts[2 + i] = tap[i];
        wShape[2 + i] = 1;
      }
      SmallVector<int64_t> ones(rank, 1);
      Value window = op.getInput();
      if (ArrayRef<int64_t>(inShape) != inTy.getShape())
        window = SliceOp::create(
            rewriter, loc,
            RankedTensorType::get(inShape, inTy.getElementType()),
            op.getInput(), rewriter.getDenseI64ArrayAttr(inStarts),
            rewriter.getDenseI64ArrayAttr(ones));
      Value filter = SliceOp::create(
          rewriter, loc, RankedTensorType::get(wShape, wTy.getElementType()),
          op.getFilter(), rewriter.getDenseI64ArrayAttr(wStarts),
          rewriter.getDenseI64ArrayAttr(ones));
      SmallVector<int64_t> unit(k, 1), none(2 * k, 0);
      Value part = ConvOp::create(
          rewriter, loc, window, filter, rewriter.getDenseI64ArrayAttr(unit),
          rewriter.getDenseI64ArrayAttr(unit),
          rewriter.getDenseI64ArrayAttr(none), op.getGroupAttr());
      // Zeros around it, axis by axis, up to the whole output.
      for (int64_t i = 0; i < k; ++i) {
        auto [first, last] = reach[i][tap[i]];
        int64_t out = outTy.getDimSize(2 + i);
        if (first == 0 && last == out)
          continue;
        SmallVector<int64_t> shape(tensorType(part).getShape());
        SmallVector<Value> pieces;
        if (first > 0) {
          shape[2 + i] = first;
          pieces.push_back(zeros(shape));
        }
        pieces.push_back(part);
        if (last < out) {
          shape[2 + i] = out - last;
          pieces.push_back(zeros(shape));
        }
        part = ConcatOp::create(rewriter, loc, pieces, 2 + i);
      }
      sum = sum ? AddOp::create(rewriter, loc, sum, part).getResult() : part;
    }
    if (!sum)
      sum = zeros(outTy.getShape());
    rewriter.replaceOp(op, sum);
    return success();
  }
};

/// x ** n -> x * x ... for a float constant exponent n of 1 to 4 (a splat):
/// exporters write the tanh GELU's x ** 3 and a decomposed layer norm's
/// (x - mean) ** 2 as Pow, which code generation would otherwise lower to
/// one powf call per element (GPT-2: a twelfth of its run time). x * x is
/// what powf returns for n = 2; for 3 and 4 the product rounds twice, a
/// last-bit difference.
struct PowBySmallInteger : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op,
                                PatternRewriter &rewriter) const override {
    Value x = op.getLhs();
    DenseElementsAttr c;
    if (!isa<FloatType>(op.getType().getElementType()) ||
        tensorType(x) != op.getType() ||
        !matchPattern(op.getRhs(), m_Constant(&c)) || !c.isSplat() ||
        !isa<FloatType>(c.getElementType()))
      return failure();
    double n = c.getSplatValue<APFloat>().convertToDouble();
    if (n != 1.0 && n != 2.0 && n != 3.0 && n != 4.0)
      return failure();
    Location loc = op.getLoc();
    Value r = x;
    if (n >= 2.0)
      r = MulOp::create(rewriter, loc, x, x);
    if (n == 3.0)
      r = MulOp::create(rewriter, loc, r, x);
    if (n == 4.0)
      r = MulOp::create(rewriter, loc, r, r);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct Canonicalize : kiln::impl::CanonicalizeBase<Canonicalize> {
  LogicalResult initialize(MLIRContext *ctx) override {
    RewritePatternSet set(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(set);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      if (&op.getDialect() == ctx->getLoadedDialect<KilnDialect>())
        op.getCanonicalizationPatterns(set, ctx);
    set.add<IntegerMulByZero, SubConstantToAdd, MergeConstantAdds,
            DistributeMulOverAdd, FoldScaleIntoConv, FoldScaleIntoMatMul,
            TransposeIntoMatMul, DropDeadConvTaps, SplitSparseConvTaps,
            MatVecBatchesToMatMul, PowBySmallInteger>(ctx);
    patterns = FrozenRewritePatternSet(std::move(set));
    return success();
  }

  void runOnOperation() override {
    GreedyRewriteConfig config;
    // Regions are visited top-down so that constants are found before uses.
    config.setUseTopDownTraversal(true);
    bool changed = false;
    if (failed(
            applyPatternsGreedily(getOperation(), patterns, config, &changed)))
      return; // did not converge: the IR is still valid, just not final
    if (changed)
      ++numChanged;
  }

  FrozenRewritePatternSet patterns;
};
} // namespace
