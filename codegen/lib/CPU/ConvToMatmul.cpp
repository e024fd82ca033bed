//===- ConvToMatmul.cpp - convolutions as matmuls for the CPU -------------===//
//
// Step 0 of kiln-schedule-matmul (MatmulSchedule.cpp): every f32
// convolution generic of kiln-lower-to-linalg becomes either row-wise vector
// code (depthwise convolutions and max poolings, DepthwiseSchedule.cpp) or a
// contraction the matmul schedule tiles:
//   - positions x channels, for small images (convToPositionRows);
//   - a matmul over shifted rows of the padded input, for stride-1
//     convolutions whose rows waste little (convToShiftedRows);
//   - an im2col copy and a grouped matmul, a block of output rows at a time
//     when the copy is large (convToIm2col).
// docs/decisions/0007-cpu-matmul.md has the reasons and the numbers.
//
//===----------------------------------------------------------------------===//

#include "ConvToMatmul.h"
#include "DepthwiseSchedule.h"
#include "FuseEpilogues.h"
#include "PackWeights.h"
#include "ScheduleUtils.h"

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// Most extra arithmetic (percent) a convolution may do as shifted rows:
/// a 3x3 convolution over 14x14 computes 14x16 columns (14 %), over 7x7
/// 7x9 (29 %, left to im2col).
constexpr int64_t kMaxShiftedWaste = 15;
/// The same for depthwise convolutions over rows narrower than the row FMAs'
/// vectors, whose alternative wastes more (a 7x7 image computes 7x9).
constexpr int64_t kMaxShiftedWasteNarrowDepthwise = 50;
/// Largest image (output positions) a convolution computes as positions x
/// channels (convToPositionRows). Measured, one core, 3x3 convolutions at
/// stride 1: 512 channels over 7x7 took 2.06-2.20 ms as im2col and 1.50 ms
/// as positions x channels; 256 over 14x14 1.37-1.44 ms as shifted rows
/// and 1.53-1.60 ms as positions x channels.
constexpr int64_t kMaxPositionRows = 64;
/// Convolutions with a long reduction into few channels (at least
/// kDeepReduction products per output, at least twice the output
/// channels) that cannot be shifted rows (1x1, strided, or dilated past
/// kMaxShiftedWaste) take positions x channels up to this many positions:
/// the transposed copy of the input is small next to the products, and the
/// packed filter is the matmul's right-hand side, as in a Linear layer,
/// instead of reading the input unpacked or through im2col. One core,
/// interleaved, minimum of 3x10 runs: 1x1 2048->512 over 28x28
/// (FCN-ResNet50's layer4) 50-60 -> 27-33 ms, 1x1 1024->256 over 14x14
/// (ResNet-50's layer3) 1.65-1.91 -> 1.51-1.77 ms, 3x3 512->512 dilated by
/// 4 over 28x28 83-109 -> 59-78 ms. MobileNetV2's 1x1 projections (576->96)
/// were 1.3-1.7x slower this way, hence the depth; 3x3 convolutions that
/// can be shifted rows stay so (256 channels over 14x14: 1.37-1.44 ms
/// against 1.53-1.60 ms, above).
constexpr int64_t kMaxPositionRowsDeep = 1024;
constexpr int64_t kDeepReduction = 1024;

/// An f32 convolution generic of kiln-lower-to-linalg: loops (n, g, mg,
/// o_1..o_k, cg, w_1..w_k), input [N, G, Cg, D...] read at o*s + w*d, filter
/// [G, Mg, Cg, W...], output [N, G, Mg, O...], body out + in * filter.
struct ConvMatch {
  unsigned k, cgLoop; // spatial dims; the cg loop (3 + k)
  AffineMap inMap;
  Value input, filter, init;
  RankedTensorType inTy, fTy, outTy;
  /// Per spatial dim, when its input index is exactly o*s + w*d: s and d;
  /// 0 and 0 otherwise.
  SmallVector<int64_t> strides, dilations;
};

/// A generic that may be a max pooling (kiln::vectorizeDepthwiseConv
/// decides): six loops, two of them reductions, and a max in the body.
static bool isMaxPoolCandidate(linalg::GenericOp op) {
  return op.getNumLoops() == 6 && op.getNumReductionLoops() == 2 &&
         !op.getRegion().front().getOps<arith::MaximumFOp>().empty();
}

/// Whether `v` is a view of a tensor slice with a step other than 1, seen
/// through reshapes.
static bool readsStridedView(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def))
      return llvm::any_of(slice.getStaticStrides(),
                          [](int64_t s) { return s != 1; });
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

static std::optional<ConvMatch> matchF32Conv(linalg::GenericOp conv) {
  if (!conv.hasPureTensorSemantics() || conv.getNumDpsInputs() != 2 ||
      conv.getNumDpsInits() != 1 || conv.hasDynamicShape())
    return std::nullopt;
  unsigned numLoops = conv.getNumLoops();
  if (numLoops < 6 || numLoops % 2)
    return std::nullopt;
  unsigned k = (numLoops - 4) / 2;
  for (Value v : conv->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return std::nullopt;
  SmallVector<utils::IteratorType> iters = conv.getIteratorTypesArray();
  for (unsigned i = 0; i < numLoops; ++i)
    if ((i < 3 + k) != (iters[i] == utils::IteratorType::parallel))
      return std::nullopt;
  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  unsigned cgLoop = 3 + k;
  SmallVector<AffineExpr> fExprs = {d(1), d(2), d(cgLoop)},
                          oExprs = {d(0), d(1), d(2)};
  for (unsigned i = 0; i < k; ++i) {
    fExprs.push_back(d(cgLoop + 1 + i));
    oExprs.push_back(d(3 + i));
  }
  SmallVector<AffineMap> maps = conv.getIndexingMapsArray();
  AffineMap inMap = maps[0];
  if (maps[1] != AffineMap::get(numLoops, 0, fExprs, ctx) ||
      maps[2] != AffineMap::get(numLoops, 0, oExprs, ctx) ||
      inMap.getNumResults() != 3 + k || inMap.getResult(0) != d(0) ||
      inMap.getResult(1) != d(1) || inMap.getResult(2) != d(cgLoop) ||
      inMap.isFunctionOfDim(2))
    return std::nullopt;
  // Body: out + in * filter.
  if (!kiln::isMultiplyAccumulate(conv))
    return std::nullopt;
  Value input = conv.getDpsInputs()[0], filter = conv.getDpsInputs()[1];
  Value init = conv.getDpsInits()[0];
  SmallVector<int64_t> strides(k, 0), dilations(k, 0);
  for (unsigned i = 0; i < k; ++i)
    if (auto window = kiln::linearWindow(inMap, 3 + i, 3 + i, cgLoop + 1 + i))
      std::tie(strides[i], dilations[i]) = *window;
  return ConvMatch{k,
                   cgLoop,
                   inMap,
                   input,
                   filter,
                   init,
                   cast<RankedTensorType>(input.getType()),
                   cast<RankedTensorType>(filter.getType()),
                   cast<RankedTensorType>(init.getType()),
                   strides,
                   dilations};
}

/// The results of `op`, an all-parallel generic copying or transforming
/// data, with its first `loops` loops tiled by one and marked parallel when
/// its results are large enough to be worth splitting among threads: every
/// iteration writes its own part of them.
static SmallVector<Value> splitAmongThreads(RewriterBase &rewriter,
                                            linalg::GenericOp op,
                                            unsigned loops) {
  SmallVector<Value> results(op->getResults());
  int64_t bytes = 0;
  for (Value v : results)
    bytes += 4 * cast<ShapedType>(v.getType()).getNumElements();
  if (bytes < kiln::kMinParallelWork)
    return results;
  SmallVector<OpFoldResult> sizes(op.getNumLoops(), rewriter.getIndexAttr(0));
  for (unsigned i = 0; i < loops; ++i)
    sizes[i] = rewriter.getIndexAttr(1);
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  options.setTileSizes(sizes);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return results;
  rewriter.replaceOp(op, tiled->replacements);
  for (LoopLikeOpInterface loop : tiled->loops)
    loop->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
  return tiled->replacements;
}

/// The im2col copy: a generic over `colShape` (identity-indexed) reading
/// `input` through `colIn`, into a new tensor or `into`. A large copy into
/// a new tensor runs one iteration of its first three loops (batch, group,
/// and input channel or output row) per parallel iteration: the iterations
/// write disjoint parts of the columns.
static Value copyColumns(RewriterBase &rewriter, Location loc, Value input,
                         AffineMap colIn, ArrayRef<int64_t> colShape,
                         Value into = {}) {
  Type f32 = cast<RankedTensorType>(input.getType()).getElementType();
  unsigned colLoops = colShape.size();
  Value colEmpty =
      into ? into : tensor::EmptyOp::create(rewriter, loc, colShape, f32);
  auto copy = linalg::GenericOp::create(
      rewriter, loc, TypeRange{colEmpty.getType()}, ValueRange{input},
      ValueRange{colEmpty},
      ArrayRef<AffineMap>{colIn, rewriter.getMultiDimIdentityMap(colLoops)},
      SmallVector<utils::IteratorType>(colLoops, utils::IteratorType::parallel),
      [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, args[0]);
      });
  if (into)
    return copy.getResult(0);
  return splitAmongThreads(rewriter, copy, 3)[0];
}

/// The contraction generic every convolution layout ends in:
/// out += lhs * rhs over `iters`, each operand read with its map.
static linalg::GenericOp
multiplyAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs, Value init,
                   ArrayRef<AffineMap> maps,
                   ArrayRef<utils::IteratorType> iters) {
  return linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs}, ValueRange{init},
      maps, iters, [](OpBuilder &b, Location l, ValueRange args) {
        Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
        linalg::YieldOp::create(
            b, l, Value(arith::AddFOp::create(b, l, args[2], prod)));
      });
}

/// A zero (or other constant) filled tensor like `fill`'s, of `shape`.
static Value filledLike(RewriterBase &rewriter, Location loc,
                        linalg::FillOp fill, ArrayRef<int64_t> shape) {
  Value value = fill.getInputs()[0];
  Value empty = tensor::EmptyOp::create(rewriter, loc, shape, value.getType());
  return linalg::FillOp::create(rewriter, loc, value, ValueRange{empty})
      .getResult(0);
}

static ReassociationIndices indexRange(int64_t from, int64_t to) {
  ReassociationIndices group;
  for (int64_t i = from; i < to; ++i)
    group.push_back(i);
  return group;
}

/// `input` ([N, G, Cg, D...]) with `rows` more zero rows at the end of its
/// first spatial dim. When `input` is already the zero padding of a smaller
/// tensor (a tensor.pad, possibly under an expand_shape, used only here),
/// that pad grows instead of a second copy being made.
static Value padRows(RewriterBase &rewriter, Location loc, Value input,
                     int64_t rows) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[3] += rows;
  auto grownType = RankedTensorType::get(shape, type.getElementType());
  auto expand = input.getDefiningOp<tensor::ExpandShapeOp>();
  Value source = expand ? expand.getSrc() : input;
  auto pad = source.getDefiningOp<tensor::PadOp>();
  int64_t padDim = 3;
  if (expand) {
    padDim = -1;
    for (auto [i, group] : llvm::enumerate(expand.getReassociationIndices()))
      if (group.size() == 1 && group.front() == 3)
        padDim = i;
  }
  Value padValue = pad ? pad.getConstantPaddingValue() : Value();
  if (pad && padDim >= 0 && input.hasOneUse() && source.hasOneUse() &&
      padValue && matchPattern(padValue, m_PosZeroFloat())) {
    SmallVector<OpFoldResult> high = pad.getMixedHighPad();
    if (std::optional<int64_t> h = getConstantIntValue(high[padDim])) {
      high[padDim] = rewriter.getIndexAttr(*h + rows);
      SmallVector<int64_t> padShape(pad.getResultType().getShape());
      padShape[padDim] += rows;
      Value grown = tensor::PadOp::create(
          rewriter, loc, RankedTensorType::get(padShape, type.getElementType()),
          pad.getSource(), pad.getMixedLowPad(), high, padValue);
      if (!expand)
        return grown;
      return tensor::ExpandShapeOp::create(rewriter, loc, grownType, grown,
                                           expand.getReassociationIndices());
    }
  }
  SmallVector<OpFoldResult> low(type.getRank(), rewriter.getIndexAttr(0));
  SmallVector<OpFoldResult> high = low;
  high[3] = rewriter.getIndexAttr(rows);
  Value zero = arith::ConstantOp::create(
      rewriter, loc, rewriter.getZeroAttr(type.getElementType()));
  return tensor::PadOp::create(rewriter, loc, grownType, input, low, high,
                               zero);
}

/// Rewrites a stride-1 convolution with taps wider than 1 as a matmul whose
/// right-hand side is the padded input itself, read at shifted offsets.
/// Flattening each input channel, position o reads element
/// sum_i (o_i + w_i * d_i) * S_i (S_i: the row length of dim i, a product of
/// input sizes), so with p = sum_i o_i * S_i every tap (w..., cg) reads a
/// contiguous run of the input over p:
///   tmp[n, g, mg, p] = sum_{w..., cg} filterT[g, mg, w..., cg]
///                        * in[n, g, cg, p + sum_i w_i * d_i * S_i]
/// No im2col buffer is written. p covers O_1 * S_1 positions, including the
/// columns past O_i in each row: those are computed and dropped (the result
/// is a slice of tmp), which costs at most `maxWastePercent` percent more
/// arithmetic or the convolution is left alone. The input gets zero rows at
/// the bottom so that the last row's taps stay in bounds, and the filter is
/// transposed (at compile time when it is a constant) so that cg, the k
/// loop the register tiles walk, is contiguous.
static LogicalResult convToShiftedRows(RewriterBase &rewriter,
                                       linalg::GenericOp conv,
                                       const ConvMatch &c,
                                       int64_t maxWastePercent) {
  unsigned k = c.k;
  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  ArrayRef<int64_t> dil = c.dilations;
  SmallVector<int64_t> dIn(k), dOut(k), taps(k);
  bool unitTaps = true;
  for (unsigned i = 0; i < k; ++i) {
    dIn[i] = c.inTy.getDimSize(3 + i);
    dOut[i] = c.outTy.getDimSize(3 + i);
    taps[i] = c.fTy.getDimSize(3 + i);
    unitTaps &= taps[i] == 1;
    if (c.strides[i] != 1 || dIn[i] != dOut[i] + (taps[i] - 1) * dil[i])
      return failure();
  }
  auto fill = c.init.getDefiningOp<linalg::FillOp>();
  if (unitTaps || !fill)
    return failure();
  SmallVector<int64_t> rowLen(k, 1);
  for (int i = static_cast<int>(k) - 2; i >= 0; --i)
    rowLen[i] = rowLen[i + 1] * dIn[i + 1];
  int64_t p = dOut[0] * rowLen[0], useful = 1, slack = 0;
  for (int64_t o : dOut)
    useful *= o;
  if (p * 100 > useful * (100 + maxWastePercent))
    return failure();
  for (unsigned i = 1; i < k; ++i)
    slack += (taps[i] - 1) * dil[i] * rowLen[i];
  int64_t extraRows = llvm::divideCeil(slack, rowLen[0]);

  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(conv);
  Type f32 = c.inTy.getElementType();
  int64_t n = c.outTy.getDimSize(0), g = c.outTy.getDimSize(1),
          mg = c.outTy.getDimSize(2), cg = c.fTy.getDimSize(2);
  Value in = extraRows ? padRows(rewriter, loc, c.input, extraRows) : c.input;
  int64_t flat = (dIn[0] + extraRows) * rowLen[0];
  SmallVector<ReassociationIndices> flatGroups = {{0}, {1}, {2}, {}};
  for (unsigned i = 0; i < k; ++i)
    flatGroups.back().push_back(3 + i);
  in = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, g, cg, flat}, f32), in,
      flatGroups);

  // filterT[g, mg, w..., cg] = filter[g, mg, cg, w...]
  SmallVector<int64_t> fShape = {g, mg};
  SmallVector<int64_t> perm = {0, 1};
  int64_t tapCount = 1;
  for (unsigned i = 0; i < k; ++i) {
    fShape.push_back(taps[i]);
    perm.push_back(3 + i);
    tapCount *= taps[i];
  }
  fShape.push_back(cg);
  perm.push_back(2);
  auto fType = RankedTensorType::get(fShape, f32);
  Value filterT;
  if (std::optional<kiln::ConstantFloats> values =
          kiln::constantFloats(c.filter)) {
    TypedAttr t =
        kiln::makeFloatConstant(fType, values->size(), [&](float *out) {
          for (int64_t gm = 0; gm < g * mg; ++gm)
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t tap = 0; tap < tapCount; ++tap)
                out[(gm * tapCount + tap) * cg + ci] =
                    (*values)[(gm * cg + ci) * tapCount + tap];
        });
    filterT = arith::ConstantOp::create(rewriter, loc, fType, t);
  } else {
    Value empty = tensor::EmptyOp::create(rewriter, loc, fShape, f32);
    filterT = linalg::TransposeOp::create(rewriter, loc, c.filter, empty, perm)
                  ->getResult(0);
  }

  // loops (n, g, mg, p, w..., cg)
  unsigned loops = 5 + k, cgLoop = 4 + k;
  SmallVector<AffineExpr> fExprs = {d(1), d(2)};
  AffineExpr inPos = d(3);
  for (unsigned i = 0; i < k; ++i) {
    fExprs.push_back(d(4 + i));
    inPos = inPos + d(4 + i) * (dil[i] * rowLen[i]);
  }
  fExprs.push_back(d(cgLoop));
  SmallVector<utils::IteratorType> iters(loops, utils::IteratorType::reduction);
  for (unsigned i = 0; i < 4; ++i)
    iters[i] = utils::IteratorType::parallel;
  Value tmpInit = filledLike(rewriter, loc, fill, {n, g, mg, p});
  auto mm = multiplyAccumulate(
      rewriter, loc, filterT, in, tmpInit,
      {AffineMap::get(loops, 0, fExprs, ctx),
       AffineMap::get(loops, 0, {d(0), d(1), d(cgLoop), inPos}, ctx),
       AffineMap::get(loops, 0, {d(0), d(1), d(2), d(3)}, ctx)},
      iters);
  mm->setAttr(kiln::kShiftedRowsAttr, rewriter.getUnitAttr());

  // tmp [N, G, Mg, O_1 * S_1] -> [N, G, Mg, O_1, D_2...] -> [.., O_2...]
  SmallVector<int64_t> rowsShape = {n, g, mg, dOut[0]};
  rowsShape.append(dIn.begin() + 1, dIn.end());
  Value rows = tensor::ExpandShapeOp::create(
      rewriter, loc, RankedTensorType::get(rowsShape, f32), mm.getResult(0),
      flatGroups);
  SmallVector<OpFoldResult> zeros(3 + k, rewriter.getIndexAttr(0)),
      ones(3 + k, rewriter.getIndexAttr(1)), sizes;
  for (int64_t s : c.outTy.getShape())
    sizes.push_back(rewriter.getIndexAttr(s));
  rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(conv, c.outTy, rows,
                                                      zeros, sizes, ones);
  return success();
}

/// Rewrites a convolution with few output positions per image (at most
/// `maxPositions`, and at least `minChannels` output channels per group) as
/// a matmul with the positions as rows and the output channels as columns:
///   colT[n, g, o..., cg, w...] = input[n, g, cg, o*s + w*d ...]
///   outT[n, g, p, mg] = sum_r colT[n, g, p, r] * filter[g, mg, r]
///   out = transpose(outT)
/// A 7x7 image makes 49 columns in the layout of convToIm2col: a register
/// tile of 32 plus remainders of 16 and 1, where the 1-column tile costs as
/// much as the 16-column one. Here the register tiles run along the
/// channels (whole panels of a constant filter, packed at compile time) and
/// only the last row tile is partial. The transposed column copy and the
/// final transpose are as small as the image.
static LogicalResult convToPositionRows(RewriterBase &rewriter,
                                        linalg::GenericOp conv,
                                        const ConvMatch &c,
                                        int64_t maxPositions,
                                        int64_t minChannels) {
  unsigned numLoops = conv.getNumLoops(), k = c.k, cgLoop = c.cgLoop;
  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  Type f32 = c.inTy.getElementType();
  int64_t n = c.outTy.getDimSize(0), g = c.outTy.getDimSize(1),
          mg = c.outTy.getDimSize(2), cg = c.fTy.getDimSize(2);
  int64_t p = 1, r = cg;
  SmallVector<int64_t> colShape = {n, g};
  for (unsigned i = 0; i < k; ++i) {
    colShape.push_back(c.outTy.getDimSize(3 + i));
    p *= c.outTy.getDimSize(3 + i);
  }
  colShape.push_back(cg);
  for (unsigned i = 0; i < k; ++i) {
    colShape.push_back(c.fTy.getDimSize(3 + i));
    r *= c.fTy.getDimSize(3 + i);
  }
  auto fill = c.init.getDefiningOp<linalg::FillOp>();
  if (p > maxPositions || mg < minChannels || !fill)
    return failure();

  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(conv);
  // colT loops (n, g, o..., cg, w...) -> conv loops, for reading the input.
  SmallVector<AffineExpr> toColLoops(numLoops);
  toColLoops[0] = d(0);
  toColLoops[1] = d(1);
  toColLoops[2] = getAffineConstantExpr(0, ctx); // mg: unused by the input
  toColLoops[cgLoop] = d(2 + k);
  for (unsigned i = 0; i < k; ++i) {
    toColLoops[3 + i] = d(2 + i);              // o_i
    toColLoops[cgLoop + 1 + i] = d(3 + k + i); // w_i
  }
  // A 1x1 convolution at stride 1 reads input position o for output o:
  // its columns are the input transposed, [N, G, Cg, P] -> [N, G, P, Cg],
  // which kiln-vectorize-elementwise copies in 16x16 blocks. As a generic
  // copy it went one element at a time, each read P floats after the last
  // (ResNet-50's 1x1 1024 -> 256 over 14x14: 14 % of the layer). With
  // every tap 0, the input index of spatial dim i must be o_i itself.
  bool pointwise = r == cg;
  SmallVector<AffineExpr> noTaps;
  for (unsigned i = 0; i < numLoops; ++i)
    noTaps.push_back(i > cgLoop ? getAffineConstantExpr(0, ctx) : d(i));
  AffineMap atTapZero =
      simplifyAffineMap(c.inMap.replaceDimsAndSymbols(noTaps, {}, numLoops, 0));
  for (unsigned i = 0; i < k; ++i)
    pointwise &= atTapZero.getResult(3 + i) == d(3 + i) &&
                 c.inTy.getDimSize(3 + i) == c.outTy.getDimSize(3 + i);
  Value col;
  if (pointwise) {
    Value input = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, g, cg, p}, f32), c.input,
        SmallVector<ReassociationIndices>{{0}, {1}, {2}, indexRange(3, 3 + k)});
    Value empty = tensor::EmptyOp::create(rewriter, loc,
                                          ArrayRef<int64_t>{n, g, p, cg}, f32);
    col = linalg::TransposeOp::create(rewriter, loc, input, empty,
                                      ArrayRef<int64_t>{0, 1, 3, 2})
              ->getResult(0);
  } else {
    AffineMap colIn =
        c.inMap.replaceDimsAndSymbols(toColLoops, {}, colShape.size(), 0);
    Value colFull = copyColumns(rewriter, loc, c.input, colIn, colShape);
    col = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, g, p, r}, f32), colFull,
        SmallVector<ReassociationIndices>{
            {0}, {1}, indexRange(2, 2 + k), indexRange(2 + k, 3 + 2 * k)});
  }
  // The filter as [Mg, R] when there is one group and it is a constant, so
  // that it is packed into panels like any [N, K] weight. Otherwise it is
  // transposed at run time to [G, R, Mg] (a register tile's row of it is
  // then one contiguous load, not a gather).
  Value filter2 = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({g, mg, r}, f32), c.filter,
      SmallVector<ReassociationIndices>{{0}, {1}, indexRange(2, 3 + k)});
  AffineMap fMap;
  if (g == 1 &&
      kiln::throughReshapes(c.filter).getDefiningOp<arith::ConstantOp>()) {
    filter2 = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({mg, r}, f32), filter2,
        SmallVector<ReassociationIndices>{{0, 1}, {2}});
    fMap = AffineMap::get(5, 0, {d(3), d(4)}, ctx);
  } else {
    Value empty = tensor::EmptyOp::create(rewriter, loc,
                                          ArrayRef<int64_t>{g, r, mg}, f32);
    filter2 = linalg::TransposeOp::create(rewriter, loc, filter2, empty,
                                          ArrayRef<int64_t>{0, 2, 1})
                  ->getResult(0);
    fMap = AffineMap::get(5, 0, {d(1), d(4), d(3)}, ctx);
  }
  Value initT = filledLike(rewriter, loc, fill, {n, g, p, mg});
  // loops (n, g, p, m, r)
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  auto mm = multiplyAccumulate(
      rewriter, loc, col, filter2, initT,
      {AffineMap::get(5, 0, {d(0), d(1), d(2), d(4)}, ctx), fMap,
       AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
      iters);
  Value outEmpty = tensor::EmptyOp::create(rewriter, loc,
                                           ArrayRef<int64_t>{n, g, mg, p}, f32);
  Value out =
      linalg::TransposeOp::create(rewriter, loc, mm.getResult(0), outEmpty,
                                  ArrayRef<int64_t>{0, 1, 3, 2})
          ->getResult(0);
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
      conv, c.outTy, out,
      SmallVector<ReassociationIndices>{{0}, {1}, {2}, indexRange(3, 3 + k)});
  return success();
}

/// The grouped matmul of the im2col layout: loops (n, g, m, p, r),
/// out[n, g, m, p] += filter[g, m, r] * col[n, g, r, p].
static Value groupedMatmul(OpBuilder &b, Location loc, Value filter, Value col,
                           Value init) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<utils::IteratorType> iters(4, utils::IteratorType::parallel);
  iters.push_back(utils::IteratorType::reduction);
  return multiplyAccumulate(
             b, loc, filter, col, init,
             {AffineMap::get(5, 0, {d(1), d(2), d(4)}, ctx),
              AffineMap::get(5, 0, {d(0), d(1), d(4), d(3)}, ctx),
              AffineMap::get(5, 0, {d(0), d(1), d(2), d(3)}, ctx)},
             iters)
      .getResult(0);
}

/// T x T^T of a 4x4 tile `x` (row-major), for a 1-D transform T of four
/// values into k: T applied to each column, then to each row of that; the
/// k x k values row-major. Winograd's input (T = B^T) and output (T = A^T)
/// transforms.
static SmallVector<Value> transformTile(
    OpBuilder &b, Location l, ValueRange x,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ArrayRef<Value>)>
        t) {
  SmallVector<SmallVector<Value>> rows;
  for (int64_t col = 0; col < 4; ++col) {
    SmallVector<Value> column = {x[col], x[4 + col], x[8 + col], x[12 + col]};
    SmallVector<Value> y = t(b, l, column);
    rows.resize(y.size());
    for (auto [i, v] : llvm::enumerate(y))
      rows[i].push_back(v);
  }
  SmallVector<Value> result;
  for (ArrayRef<Value> row : rows)
    llvm::append_range(result, t(b, l, row));
  return result;
}

/// Smallest convolution (output and input channels, and 2x2 output tiles
/// per image) computed by Winograd's F(2x2, 3x3): ResNet's 14x14 stage (49
/// tiles of 256 channels: 2.32-2.44 -> 1.17-1.52 ms on one core, decision
/// 0032) takes it. Its 7x7 stage (16 tiles, 512 channels) does not: as
/// positions x channels its products gained 10-15 % (2.1-2.3 -> 1.8-2.0
/// ms), bound by the transformed filters (16 MB, read for 16 rows each)
/// that made the artifact 1.8x larger there.
constexpr int64_t kMinWinogradChannels = 32;
constexpr int64_t kMinWinogradTiles = 49;

/// Rewrites a 3x3 stride-1 convolution with a constant filter and one group
/// as Winograd's F(2x2, 3x3) (Lavin and Gray, 2015): each 2x2 block of
/// outputs comes from a 4x4 tile of the padded input d through
///   Y = A^T [ (G g G^T) .* (B^T d B) ] A,
/// so the products, 36 per output and input channel directly, are 16 per
/// 2x2 block: 2.25x fewer. With k = 4 xi + nu one of the 16 points of the
/// transformed tile,
///   V_k[n, c, t] = (B^T d_t B)[xi, nu]        (input transform, adds only)
///   M_k[n, m, t] = sum_c U_k[m, c] V_k[n, c, t]  (16 matmuls)
///   Y[n, m, 2 th + i, 2 tw + j] = (A^T M_t A)[i, j]  (output transform)
/// U_k = (G g G^T)[xi, nu] is computed here from the constant filter. The
/// input's padded columns are first split into even and odd ones, so the
/// input transform reads every operand contiguously along the tile column
/// (kiln-vectorize-elementwise vectorizes it); the output transform's four
/// results are interleaved into the output by strided inserts.
static LogicalResult convToWinograd(RewriterBase &rewriter,
                                    linalg::GenericOp conv,
                                    const ConvMatch &c) {
  if (c.k != 2 || c.outTy.getDimSize(1) != 1)
    return failure();
  int64_t n = c.outTy.getDimSize(0), m = c.outTy.getDimSize(2),
          cin = c.fTy.getDimSize(2), oh = c.outTy.getDimSize(3),
          ow = c.outTy.getDimSize(4);
  for (unsigned i = 0; i < 2; ++i)
    if (c.fTy.getDimSize(3 + i) != 3 || c.strides[i] != 1 ||
        c.dilations[i] != 1 ||
        c.inTy.getDimSize(3 + i) != c.outTy.getDimSize(3 + i) + 2)
      return failure();
  auto fill = c.init.getDefiningOp<linalg::FillOp>();
  // Tiles per image: an odd side gets one more, whose last row or column
  // is computed from zero padding and dropped.
  int64_t th = llvm::divideCeil(oh, 2), tw = llvm::divideCeil(ow, 2),
          t = th * tw;
  if (!fill || !matchPattern(fill.getInputs()[0], m_AnyZeroFloat()) ||
      m < kMinWinogradChannels || cin < kMinWinogradChannels ||
      t < kMinWinogradTiles)
    return failure();
  std::optional<kiln::ConstantFloats> g = kiln::constantFloats(c.filter);
  if (!g)
    return failure();

  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(conv);
  Type f32 = c.inTy.getElementType();
  int64_t hp = 2 * th + 2, half = tw + 1;
  auto parallel = [](unsigned loops) {
    return SmallVector<utils::IteratorType>(loops,
                                            utils::IteratorType::parallel);
  };
  auto empties = [&](int64_t count, ArrayRef<int64_t> shape) {
    SmallVector<Value> values;
    for (int64_t i = 0; i < count; ++i)
      values.push_back(tensor::EmptyOp::create(rewriter, loc, shape, f32));
    return values;
  };
  auto typesOf = [](ArrayRef<Value> values) {
    return llvm::to_vector(
        llvm::map_range(values, [](Value v) { return v.getType(); }));
  };

  // The padded input [N, C, Hp, Wp] split into its even and odd columns,
  // each [N, C, Hp, Wp / 2].
  Value in = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, cin, oh + 2, ow + 2}, f32),
      c.input, SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}, {4}});
  if (oh % 2 || ow % 2) {
    SmallVector<OpFoldResult> low(4, rewriter.getIndexAttr(0)), high = low;
    high[2] = rewriter.getIndexAttr(oh % 2);
    high[3] = rewriter.getIndexAttr(ow % 2);
    Value zero =
        arith::ConstantOp::create(rewriter, loc, rewriter.getZeroAttr(f32));
    in = tensor::PadOp::create(
        rewriter, loc, RankedTensorType::get({n, cin, hp, 2 * half}, f32), in,
        low, high, zero);
  }
  SmallVector<Value> halves = empties(2, {n, cin, hp, half});
  auto splitOp = linalg::GenericOp::create(
      rewriter, loc, typesOf(halves), ValueRange{in, in}, halves,
      ArrayRef<AffineMap>{
          AffineMap::get(4, 0, {d(0), d(1), d(2), d(3) * 2}, ctx),
          AffineMap::get(4, 0, {d(0), d(1), d(2), d(3) * 2 + 1}, ctx),
          rewriter.getMultiDimIdentityMap(4),
          rewriter.getMultiDimIdentityMap(4)},
      parallel(4), [](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, ValueRange{args[0], args[1]});
      });
  SmallVector<Value> split = splitAmongThreads(rewriter, splitOp, 2);

  // d[a][b], input row 2 th + a and column 2 tw + b of tile (th, tw), is
  // element (th, tw) of a view of the even (b = 0, 2) or odd (1, 3)
  // columns starting at row a and column b / 2, every other row: all 16
  // operands of the input transform are read with the identity map, so
  // linalg::vectorize takes it (rows 2 th + a in the map it did not).
  SmallVector<Value> tileReads;
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 4; ++b) {
      SmallVector<OpFoldResult> offsets = {
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(0),
          rewriter.getIndexAttr(a), rewriter.getIndexAttr(b / 2)};
      SmallVector<OpFoldResult> sizes = {
          rewriter.getIndexAttr(n), rewriter.getIndexAttr(cin),
          rewriter.getIndexAttr(th), rewriter.getIndexAttr(tw)};
      SmallVector<OpFoldResult> strides = {
          rewriter.getIndexAttr(1), rewriter.getIndexAttr(1),
          rewriter.getIndexAttr(2), rewriter.getIndexAttr(1)};
      tileReads.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get({n, cin, th, tw}, f32),
          split[b % 2], offsets, sizes, strides));
    }
  // Input transform, loops (n, c, th, tw): V = B^T d B with
  // B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
  SmallVector<AffineMap> inMaps(16, rewriter.getMultiDimIdentityMap(4));
  SmallVector<Value> vInit = empties(16, {n, cin, th, tw});
  inMaps.append(16, rewriter.getMultiDimIdentityMap(4));
  // The 1-D transform B^T x of four values.
  auto bt = [](OpBuilder &b, Location l, ArrayRef<Value> x) {
    return SmallVector<Value>{arith::SubFOp::create(b, l, x[0], x[2]),
                              arith::AddFOp::create(b, l, x[1], x[2]),
                              arith::SubFOp::create(b, l, x[2], x[1]),
                              arith::SubFOp::create(b, l, x[1], x[3])};
  };
  auto inputTransform = linalg::GenericOp::create(
      rewriter, loc, typesOf(vInit), tileReads, vInit, inMaps, parallel(4),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, transformTile(b, l, args, bt));
      });

  // U_k = (G g G^T)[xi, nu], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], as
  // 16 constant [1, M, C] filters of 16 matmuls. (One grouped matmul over
  // all 16 needs the input transform's results stacked in one tensor,
  // which bufferization copied: c64 1.64 -> 1.83 ms.)
  static constexpr double kG[4][3] = {
      {1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
  auto uType = RankedTensorType::get({1, m, cin}, f32);
  SmallVector<Value> products;
  for (int64_t k = 0; k < 16; ++k) {
    TypedAttr u = kiln::makeFloatConstant(uType, m * cin, [&](float *out) {
      for (int64_t mc = 0; mc < m * cin; ++mc) {
        double sum = 0;
        for (int64_t r = 0; r < 3; ++r)
          for (int64_t s = 0; s < 3; ++s)
            sum += kG[k / 4][r] * (*g)[mc * 9 + r * 3 + s] * kG[k % 4][s];
        out[mc] = static_cast<float>(sum);
      }
    });
    Value filter = arith::ConstantOp::create(rewriter, loc, uType, u);
    Value v = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, cin, t}, f32),
        inputTransform.getResult(k),
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
    Value col = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, 1, cin, t}, f32), v,
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
    Value init = filledLike(rewriter, loc, fill, {n, 1, m, t});
    Value product = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, m, t}, f32),
        groupedMatmul(rewriter, loc, filter, col, init),
        SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}});
    products.push_back(tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, m, th, tw}, f32), product,
        SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}}));
  }

  // Output transform, loops (n, m, th, tw): Y = A^T M A with
  // A^T = [1 1 1 0; 0 1 -1 -1], four results y[i][j].
  SmallVector<Value> yInit = empties(4, {n, m, th, tw});
  SmallVector<AffineMap> outMaps(20, rewriter.getMultiDimIdentityMap(4));
  auto at = [](OpBuilder &b, Location l, ArrayRef<Value> x) {
    Value x12 = arith::AddFOp::create(b, l, x[1], x[2]);
    Value d12 = arith::SubFOp::create(b, l, x[1], x[2]);
    return SmallVector<Value>{arith::AddFOp::create(b, l, x[0], x12),
                              arith::SubFOp::create(b, l, d12, x[3])};
  };
  auto outputTransform = linalg::GenericOp::create(
      rewriter, loc, typesOf(yInit), products, yInit, outMaps, parallel(4),
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(b, l, transformTile(b, l, args, at));
      });

  // y[i][j] to rows i, i + 2, ... and columns j, j + 2, ... of the output,
  // seen as [N, M, H/2, 2, W/2, 2]: one pass, loops (n, m, th, i, tw, j),
  // split among threads by (n, m).
  Value outEmpty = tensor::EmptyOp::create(
      rewriter, loc, ArrayRef<int64_t>{n, m, th, 2, tw, 2}, f32);
  AffineMap fromTile = AffineMap::get(6, 0, {d(0), d(1), d(2), d(4)}, ctx);
  auto interleave = linalg::GenericOp::create(
      rewriter, loc, TypeRange{outEmpty.getType()},
      ValueRange(outputTransform.getResults()), ValueRange{outEmpty},
      ArrayRef<AffineMap>{fromTile, fromTile, fromTile, fromTile,
                          rewriter.getMultiDimIdentityMap(6)},
      parallel(6), [](OpBuilder &b, Location l, ValueRange args) {
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value i0 =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                  linalg::IndexOp::create(b, l, 3), zero);
        Value j0 =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                  linalg::IndexOp::create(b, l, 5), zero);
        Value row0 = arith::SelectOp::create(b, l, j0, args[0], args[1]);
        Value row1 = arith::SelectOp::create(b, l, j0, args[2], args[3]);
        linalg::YieldOp::create(
            b, l, Value(arith::SelectOp::create(b, l, i0, row0, row1)));
      });
  Value out = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, m, 2 * th, 2 * tw}, f32),
      splitAmongThreads(rewriter, interleave, 2)[0],
      SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}, {4, 5}});
  if (oh % 2 || ow % 2)
    out = tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get({n, m, oh, ow}, f32), out,
        SmallVector<OpFoldResult>(4, rewriter.getIndexAttr(0)),
        getAsIndexOpFoldResult(ctx, ArrayRef<int64_t>{n, m, oh, ow}),
        SmallVector<OpFoldResult>(4, rewriter.getIndexAttr(1)));
  rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
      conv, c.outTy, out,
      SmallVector<ReassociationIndices>{{0, 1}, {2}, {3}, {4}});
  return success();
}

/// Column buffers larger than this (bytes) are made and used a block of
/// output rows at a time (im2colRowBlocks): resnet18's 7x7 stride-2 conv1
/// writes 7.4 MB of columns and reads them back from memory. At 2 MB its
/// first stride-2 3x3 conv (1.8 MB) was not blocked; blocking it too made
/// resnet18 1.5-5 % faster.
constexpr int64_t kMaxColumnBytes = 1 << 20;
/// The largest block of columns, so that it stays in L2 between its copy
/// and its matmul.
constexpr int64_t kColumnBlockBytes = 512 << 10;

/// A 2-D im2col convolution whose column buffer would not stay in cache,
/// computed a block of `rows` output rows at a time (a 1-D one a block of
/// `rows` output positions: wav2vec2's stride-2 feature convolutions write
/// 10 MB of columns in one row): each block's columns
/// are copied into a buffer that the next block reuses, then multiplied
/// (and the conv's elementwise epilogue applied to the block). The blocks
/// are split into `chunks` parallel chunks, each with its own buffer.
static LogicalResult im2colRowBlocks(RewriterBase &rewriter,
                                     linalg::GenericOp conv, const ConvMatch &c,
                                     AffineMap colIn, bool fuseEpilogue) {
  MLIRContext *ctx = conv.getContext();
  RankedTensorType inTy = c.inTy, fTy = c.fTy, outTy = c.outTy;
  unsigned k = c.k;
  if (k != 1 && k != 2)
    return failure();
  bool twoD = k == 2;
  Type f32 = inTy.getElementType();
  int64_t n = outTy.getDimSize(0), g = outTy.getDimSize(1),
          mg = outTy.getDimSize(2), cg = fTy.getDimSize(2),
          kh = fTy.getDimSize(3), kw = twoD ? fTy.getDimSize(4) : 1,
          oh = outTy.getDimSize(3), ow = twoD ? outTy.getDimSize(4) : 1;
  int64_t r = cg * kh * kw;
  if (4 * n * g * r * oh * ow <= kMaxColumnBytes)
    return failure();
  // Input row of output row o and tap w: o * stride + w * dilation.
  int64_t stride = c.strides[0], dilation = c.dilations[0];
  if (stride < 1)
    return failure();
  // Rows per block: the most that divide the image and keep the block's
  // columns within kColumnBlockBytes; at least two blocks per chunk. A 1-D
  // block is a run of output positions, the matmul's columns: there the
  // block is the largest multiple of 16 (the register tile's width, so no
  // block but the last has a narrow remainder tile) that fits, and the
  // positions left after the whole blocks are one block more. Divisors of
  // wav2vec2's 799 positions gave blocks of 47 = 16 + 16 + 8 + 4 + 2 + 1
  // columns, at 49 GFLOP/s against 80 for blocks of 80.
  int64_t rows = 0, tail = 0;
  if (twoD) {
    for (int64_t cand = 1; cand < oh; ++cand)
      if (oh % cand == 0 && 4 * n * g * r * cand * ow <= kColumnBlockBytes)
        rows = cand;
  } else {
    for (int64_t cand = 16; cand < oh; cand += 16)
      if (4 * n * g * r * cand <= kColumnBlockBytes)
        rows = cand;
    if (rows > 0)
      tail = oh % rows;
  }
  if (rows == 0 || rows * ow < 32)
    return failure();
  int64_t blocks = oh / rows, chunks = 1;
  for (int64_t cand : {4, 3, 2})
    if (blocks % cand == 0 && blocks / cand >= 2) {
      chunks = cand;
      break;
    }
  int64_t perChunk = blocks / chunks;

  // The epilogue, in the conv's index space, applied per block.
  linalg::GenericOp epi;
  if (fuseEpilogue) {
    FailureOr<linalg::GenericOp> moved =
        kiln::moveEpilogueOntoContraction(rewriter, conv);
    if (succeeded(moved))
      epi = *moved;
  }
  // A constant fill of the output goes into each block instead.
  Value init = c.init;
  auto fill = init.getDefiningOp<linalg::FillOp>();
  if (fill &&
      (!init.hasOneUse() || !matchPattern(fill.getInputs()[0], m_Constant())))
    fill = nullptr;
  if (fill)
    init = fill.getDpsInits()[0];

  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(epi ? epi.getOperation() : conv.getOperation());
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  // Shapes of rank 3 + k (blocks of the input and the output) and of
  // the columns (n, g, cg, w..., o...): the 1-D ones lack the w dims.
  auto spatial = [&](SmallVector<int64_t> shape, int64_t h, int64_t w) {
    shape.push_back(h);
    if (twoD)
      shape.push_back(w);
    return shape;
  };
  auto columnsOf = [&](int64_t blockRows) {
    return spatial(spatial({n, g, cg}, kh, kw), blockRows, ow);
  };
  auto ones = [&](unsigned rank) {
    return SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(1));
  };
  auto sizes = [&](ArrayRef<int64_t> shape) {
    return getAsIndexOpFoldResult(ctx, shape);
  };
  Value filter2 = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({g, mg, r}, f32), c.filter,
      SmallVector<ReassociationIndices>{{0}, {1}, indexRange(2, 3 + k)});
  unsigned rank = 3 + k;

  // One block of `blockRows` output rows from row `row0`: its columns copied
  // into `colBuf`, multiplied, the epilogue applied, and inserted into
  // `acc`. Returns the new `acc` and the columns (the buffer to reuse).
  auto emitBlock = [&](Value row0, int64_t blockRows, Value acc,
                       Value colBuf) -> std::pair<Value, Value> {
    SmallVector<int64_t> blockCol = columnsOf(blockRows);
    int64_t spanH = (blockRows - 1) * stride + (kh - 1) * dilation + 1;
    Value inRow = arith::MulIOp::create(rewriter, loc, row0, index(stride));
    // The input rows the block reads, and its columns.
    SmallVector<int64_t> inBlock =
        spatial({n, g, cg}, spanH, twoD ? inTy.getDimSize(4) : 1);
    SmallVector<OpFoldResult> inOffsets(rank, rewriter.getIndexAttr(0));
    inOffsets[3] = inRow;
    Value in = tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get(inBlock, f32), c.input, inOffsets,
        sizes(inBlock), ones(rank));
    Value cols = copyColumns(rewriter, loc, in, colIn, blockCol, colBuf);
    Value col = tensor::CollapseShapeOp::create(
        rewriter, loc, RankedTensorType::get({n, g, r, blockRows * ow}, f32),
        cols,
        SmallVector<ReassociationIndices>{
            {0}, {1}, indexRange(2, 3 + k), indexRange(3 + k, 3 + 2 * k)});
    // The block of the output.
    SmallVector<int64_t> outBlock = spatial({n, g, mg}, blockRows, ow);
    SmallVector<OpFoldResult> outOffsets(rank, rewriter.getIndexAttr(0));
    outOffsets[3] = row0;
    Value out = tensor::ExtractSliceOp::create(
        rewriter, loc, RankedTensorType::get(outBlock, f32), acc, outOffsets,
        sizes(outBlock), ones(rank));
    if (fill)
      out = linalg::FillOp::create(rewriter, loc, fill.getInputs()[0], out)
                .getResult(0);
    // [N, G, Mg, rows, ow] <-> [N, G, Mg, rows * ow]; 1-D blocks are that.
    SmallVector<ReassociationIndices> outGroups = {{0}, {1}, {2}, {3, 4}};
    Value out2 =
        twoD ? tensor::CollapseShapeOp::create(
                   rewriter, loc,
                   RankedTensorType::get({n, g, mg, blockRows * ow}, f32), out,
                   outGroups)
             : out;
    Value result = groupedMatmul(rewriter, loc, filter2, col, out2);
    if (twoD)
      result = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(outBlock, f32), result,
          outGroups);
    if (epi) {
      FailureOr<TilingResult> tile =
          cast<TilingInterface>(epi.getOperation())
              .getTiledImplementation(rewriter, outOffsets, sizes(outBlock));
      if (failed(tile))
        return {Value(), Value()};
      auto tiled = cast<linalg::GenericOp>(tile->tiledOps.front());
      Operation *initSlice = tiled.getDpsInits()[0].getDefiningOp();
      tiled.getDpsInitsMutable()[0].set(result);
      if (initSlice && initSlice->use_empty())
        rewriter.eraseOp(initSlice);
      result = tiled.getResult(0);
    }
    Value inserted = tensor::InsertSliceOp::create(
        rewriter, loc, result, acc, outOffsets, sizes(outBlock), ones(rank));
    return {inserted, cols};
  };

  SmallVector<int64_t> blockCol = columnsOf(rows);
  SmallVector<int64_t> oneBuf = blockCol, bufShape = blockCol;
  oneBuf.insert(oneBuf.begin(), 1);
  bufShape.insert(bufShape.begin(), chunks);
  unsigned bufRank = bufShape.size();
  Value buffers = tensor::EmptyOp::create(rewriter, loc, bufShape, f32);
  auto outer = scf::ForOp::create(rewriter, loc, index(0), index(chunks),
                                  index(1), ValueRange{init, buffers});
  if (2 * n * g * mg * r * oh * ow >= kiln::kMinParallelWork)
    outer->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
  rewriter.setInsertionPointToStart(outer.getBody());
  Value chunk = outer.getInductionVar();
  SmallVector<OpFoldResult> bufOffsets(bufRank, rewriter.getIndexAttr(0));
  bufOffsets[0] = chunk;
  Value mine = tensor::ExtractSliceOp::create(
      rewriter, loc, RankedTensorType::get(blockCol, f32),
      outer.getRegionIterArg(1), bufOffsets, sizes(oneBuf), ones(bufRank));
  auto inner =
      scf::ForOp::create(rewriter, loc, index(0), index(perChunk), index(1),
                         ValueRange{outer.getRegionIterArg(0), mine});
  rewriter.setInsertionPointToStart(inner.getBody());
  Value block = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, chunk, index(perChunk)),
      inner.getInductionVar());
  Value row0 = arith::MulIOp::create(rewriter, loc, block, index(rows));
  auto [acc, cols] = emitBlock(row0, rows, inner.getRegionIterArg(0),
                               inner.getRegionIterArg(1));
  if (!acc)
    return epi.emitOpError("could not be tiled by output rows");
  scf::YieldOp::create(rewriter, loc, ValueRange{acc, cols});
  rewriter.setInsertionPointAfter(inner);
  Value allBuffers = tensor::InsertSliceOp::create(
      rewriter, loc, inner.getResult(1), outer.getRegionIterArg(1), bufOffsets,
      sizes(oneBuf), ones(bufRank));
  scf::YieldOp::create(rewriter, loc,
                       ValueRange{inner.getResult(0), allBuffers});
  rewriter.setInsertionPointAfter(outer);
  Value whole = outer.getResult(0);
  if (tail > 0) {
    // The positions after the whole blocks, one block of their own.
    Value tailBuf =
        tensor::EmptyOp::create(rewriter, loc, columnsOf(tail), f32);
    whole = emitBlock(index(blocks * rows), tail, whole, tailBuf).first;
    if (!whole)
      return epi.emitOpError("could not be tiled by output rows");
  }

  if (epi) {
    rewriter.replaceOp(epi, whole);
    rewriter.eraseOp(conv);
  } else {
    rewriter.replaceOp(conv, whole);
  }
  if (fill)
    rewriter.eraseOp(fill);
  return success();
}

/// Rewrites a convolution (see ConvMatch) as im2col + a matmul:
///   col[n, g, cg, w..., o...] = input[n, g, cg, o*s + w*d ...]
///   out[n, g, mg, p] = sum_r filter[g, mg, r] * col[n, g, r, p]
/// with r = (cg, w...) and p = (o...) collapsed, so the matmul schedule
/// applies. The copy costs Cg*W/s^2 times the input; convolutions whose
/// column buffer would pass `maxColumnElements` stay direct loops; large
/// column buffers are made a block of output rows at a time
/// (im2colRowBlocks).
static LogicalResult convToIm2col(RewriterBase &rewriter,
                                  linalg::GenericOp conv, const ConvMatch &c,
                                  int64_t maxColumnElements,
                                  bool fuseEpilogue) {
  unsigned numLoops = conv.getNumLoops(), k = c.k, cgLoop = c.cgLoop;
  MLIRContext *ctx = conv.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineMap inMap = c.inMap;
  Value input = c.input, filter = c.filter, init = c.init;
  RankedTensorType inTy = c.inTy, fTy = c.fTy, outTy = c.outTy;
  Type f32 = inTy.getElementType();
  int64_t n = outTy.getDimSize(0), g = outTy.getDimSize(1),
          mg = outTy.getDimSize(2), cg = fTy.getDimSize(2);
  int64_t p = 1, r = cg;
  SmallVector<int64_t> colShape = {n, g, cg};
  for (unsigned i = 0; i < k; ++i) {
    colShape.push_back(fTy.getDimSize(3 + i));
    r *= fTy.getDimSize(3 + i);
  }
  for (unsigned i = 0; i < k; ++i) {
    colShape.push_back(outTy.getDimSize(3 + i));
    p *= outTy.getDimSize(3 + i);
  }
  if (n * g * r * p > maxColumnElements)
    return failure();

  // A pointwise convolution: every filter tap is 1 and the input index of
  // each spatial dim is the output index (stride 1, no padding).
  bool pointwise = true;
  for (unsigned i = 0; i < k; ++i) {
    SmallVector<AffineExpr> atZeroTap;
    for (unsigned j = 0; j < numLoops; ++j)
      atZeroTap.push_back(j == cgLoop + 1 + i ? getAffineConstantExpr(0, ctx)
                                              : d(j));
    AffineExpr e = simplifyAffineExpr(
        inMap.getResult(3 + i).replaceDimsAndSymbols(atZeroTap, {}), numLoops,
        0);
    pointwise &= fTy.getDimSize(3 + i) == 1 && e == d(3 + i) &&
                 inTy.getDimSize(3 + i) == outTy.getDimSize(3 + i);
  }

  Location loc = conv.getLoc();
  rewriter.setInsertionPoint(conv);
  Value colFull;
  if (pointwise) {
    // A 1x1 convolution at stride 1 reads its input as it is: col is the
    // input itself ([N, G, Cg, O...] seen as [N, G, Cg, 1..., O...]), and
    // no copy is made.
    SmallVector<ReassociationIndices> groups = {{0}, {1}, {2}};
    for (unsigned i = 0; i < k; ++i)
      groups.back().push_back(3 + i);
    for (unsigned i = 0; i < k; ++i)
      groups.push_back({static_cast<int64_t>(3 + k + i)});
    colFull = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(colShape, f32), input, groups);
  } else {
    // col loops (n, g, cg, w..., o...) -> conv loops, for reading the input.
    SmallVector<AffineExpr> toColLoops(numLoops);
    toColLoops[0] = d(0);
    toColLoops[1] = d(1);
    toColLoops[2] = getAffineConstantExpr(0, ctx); // mg: unused by the input
    toColLoops[cgLoop] = d(2);
    for (unsigned i = 0; i < k; ++i) {
      toColLoops[3 + i] = d(3 + k + i);      // o_i
      toColLoops[cgLoop + 1 + i] = d(3 + i); // w_i
    }
    unsigned colLoops = 3 + 2 * k;
    AffineMap colIn = inMap.replaceDimsAndSymbols(toColLoops, {}, colLoops, 0);
    if (succeeded(im2colRowBlocks(rewriter, conv, c, colIn, fuseEpilogue)))
      return success();
    rewriter.setInsertionPoint(conv);
    colFull = copyColumns(rewriter, loc, input, colIn, colShape);
  }

  // [N, G, Cg, W..., O...] -> [N, G, R, P]; filter -> [G, Mg, R];
  // output [N, G, Mg, O...] <-> [N, G, Mg, P].
  Value col = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, g, r, p}, f32), colFull,
      SmallVector<ReassociationIndices>{
          {0}, {1}, indexRange(2, 3 + k), indexRange(3 + k, 3 + 2 * k)});
  Value filter2 = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({g, mg, r}, f32), filter,
      SmallVector<ReassociationIndices>{{0}, {1}, indexRange(2, 3 + k)});
  SmallVector<ReassociationIndices> outGroups = {
      {0}, {1}, {2}, indexRange(3, 3 + k)};
  Value init2 = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, g, mg, p}, f32), init,
      outGroups);
  Value result = tensor::ExpandShapeOp::create(
      rewriter, loc, outTy, groupedMatmul(rewriter, loc, filter2, col, init2),
      outGroups);
  rewriter.replaceOp(conv, result);
  return success();
}

} // namespace

kiln::ConvRewriteCounts
kiln::rewriteConvolutions(func::FuncOp func,
                          const ConvRewriteOptions &options) {
  ConvRewriteCounts counts;
  SmallVector<linalg::GenericOp> convs;
  // Only convolutions (and max poolings, which take the depthwise
  // path): rewriting one may erase its epilogue.
  func.walk([&](linalg::GenericOp op) {
    if (matchF32Conv(op) || isMaxPoolCandidate(op))
      convs.push_back(op);
  });
  IRRewriter rewriter(func.getContext());
  int64_t depthwiseWidth = std::max<int64_t>(1, options.tileN / 2);
  for (linalg::GenericOp op : convs) {
    // An input that is a strided view (a Slice with a step, feeding the
    // convolution directly) is copied dense first: every layout below reads
    // rows of it with vector loads, which a stride turns into single
    // elements (a 1x1 512-channel convolution over a step-2 view of 1,599
    // positions ran at 2 GFLOP/s).
    std::optional<ConvMatch> conv = matchF32Conv(op);
    if (conv && readsStridedView(conv->input)) {
      rewriter.setInsertionPoint(op);
      Value dense =
          tensor::EmptyOp::create(rewriter, op.getLoc(), conv->inTy.getShape(),
                                  conv->inTy.getElementType());
      dense = linalg::CopyOp::create(rewriter, op.getLoc(), conv->input, dense)
                  .getResult(0);
      rewriter.modifyOpInPlace(
          op, [&] { op->replaceUsesOfWith(conv->input, dense); });
      conv = matchF32Conv(op);
    }
    // Depthwise rows narrower than the row FMAs' vectors (one partial
    // chunk per row, with the padding spliced into odd-sized vectors)
    // run faster as shifted rows, even with half again as many
    // positions computed: one core, 384 channels 14x14 0.114 -> 0.056
    // ms, 960 channels 7x7 0.069 -> 0.043 ms. At 28 columns both are
    // level, and wider rows are faster as row FMAs. Faster still are
    // flat rows of whole planes (0.017 and 0.011 ms), where the padding
    // allows them.
    bool narrowDepthwise = conv && conv->outTy.getDimSize(2) == 1 &&
                           conv->fTy.getDimSize(2) == 1 &&
                           conv->outTy.getShape().back() < depthwiseWidth &&
                           !kiln::isFlatDepthwiseConv(op, depthwiseWidth);
    if (narrowDepthwise && options.shiftedRows && options.im2col &&
        succeeded(convToShiftedRows(rewriter, op, *conv,
                                    kMaxShiftedWasteNarrowDepthwise)))
      ++counts.shiftedRows;
    else if (succeeded(kiln::vectorizeDepthwiseConv(
                 rewriter, op, depthwiseWidth, options.fuseEpilogues)))
      ++counts.depthwise;
    else if (conv && options.im2col) {
      // Filter [G, Mg, Cg, W...]: Cg x W... products per output.
      int64_t reduction = conv->fTy.getNumElements() /
                          (conv->fTy.getDimSize(0) * conv->fTy.getDimSize(1));
      int64_t channels = conv->outTy.getDimSize(2);
      bool deep = reduction >= kDeepReduction && reduction >= 2 * channels;
      if (options.winograd && succeeded(convToWinograd(rewriter, op, *conv)))
        ++counts.winograd;
      else if (succeeded(convToPositionRows(rewriter, op, *conv,
                                            kMaxPositionRows, options.tileN)))
        ++counts.positionRows;
      else if (options.shiftedRows &&
               succeeded(
                   convToShiftedRows(rewriter, op, *conv, kMaxShiftedWaste)))
        ++counts.shiftedRows;
      else if (deep &&
               succeeded(convToPositionRows(
                   rewriter, op, *conv, kMaxPositionRowsDeep, options.tileN)))
        ++counts.positionRows;
      else if (succeeded(convToIm2col(rewriter, op, *conv,
                                      options.maxColumnElements,
                                      options.fuseEpilogues)))
        ++counts.im2col;
    }
  }
  return counts;
}
