//===- VectorizeElementwise.cpp - kiln-vectorize-elementwise --------------===//
//
// Elementwise loop nests (single ops and the nests that kernel fusion made)
// as vector code rather than scalar loops left to LLVM's loop vectorizer:
// tile every loop by one but the innermost, tile that by the vector width,
// peel it so every tile has a static shape, and vectorize the tiles with
// linalg::vectorize. Only contiguous or broadcast reads qualify: a
// transposed operand would become a gather per lane.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_VECTORIZEELEMENTWISE
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kTileAttr = "kiln.vector_tile";

/// Marks the accumulating op of each f32 reduction (sum, product, max, min
/// into an output) `reassoc`, so LLVM's loop vectorizer may split the
/// accumulator into vector lanes: a strict left-to-right fold stays one
/// scalar add per element (softmax and layer norm rows). Only the order of
/// the fold changes; the ops and their operands do not.
void allowReassociation(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0)
    return;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    if (!acc.getType().isF32())
      continue;
    Operation *combiner =
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
            .getDefiningOp();
    if (!combiner || combiner->getBlock() != &body ||
        !isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp>(combiner) ||
        !llvm::is_contained(combiner->getOperands(), acc))
      continue;
    auto fm = cast<arith::ArithFastMathInterface>(combiner);
    arith::FastMathFlags flags =
        fm.getFastMathFlagsAttr().getValue() | arith::FastMathFlags::reassoc;
    combiner->setAttr(fm.getFastMathAttrName(),
                      arith::FastMathFlagsAttr::get(op.getContext(), flags));
  }
}

/// What a nest becomes: all-parallel nests, and reductions whose innermost
/// loop is parallel (a bias gradient's sum over the rows of [64, 1024]),
/// are tiled along the innermost loop, every other loop by one, so each
/// tile adds one vector into the output; row reductions (the innermost loop
/// a reduction, whatever the others are: the sum over N, H, W of an NCHW
/// bias gradient) keep the whole row in one tile and vectorize to a
/// vector.multi_reduction. Tiling the outer loops by one keeps the order in
/// which each output element accumulates.
enum class NestKind { None, Elementwise, RowReduction };

/// Longest row reduced as one vector; longer rows stay scalar loops.
constexpr int64_t kMaxReductionRow = 1024;

/// An f32 generic on static tensors whose reads are contiguous along the
/// innermost loop or independent of it, and whose writes are the identity
/// without the reduction loops, or the identity.
NestKind classifyNest(linalg::GenericOp op, int64_t minWidth) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.hasDynamicShape())
    return NestKind::None;
  unsigned inner = op.getNumLoops() - 1;
  NestKind kind;
  if (op.getIteratorTypesArray()[inner] == utils::IteratorType::parallel)
    kind = NestKind::Elementwise;
  else if (op.getStaticLoopRanges()[inner] <= kMaxReductionRow)
    kind = NestKind::RowReduction;
  else
    return NestKind::None;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return NestKind::None;
  if (op.getStaticLoopRanges()[inner] < minWidth)
    return NestKind::None;
  SmallVector<AffineExpr> kept;
  for (auto [i, iter] : llvm::enumerate(op.getIteratorTypesArray()))
    if (iter == utils::IteratorType::parallel)
      kept.push_back(getAffineDimExpr(i, op.getContext()));
  AffineMap outputMap =
      AffineMap::get(op.getNumLoops(), 0, kept, op.getContext());
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (op.isDpsInit(&operand)) {
      // A reduction's output, or an elementwise one beside it (the
      // masked gradient that a bias gradient sums, written once per
      // element).
      if (map != outputMap && !map.isIdentity())
        return NestKind::None;
      continue;
    }
    // The innermost loop may appear only as the operand's last index.
    for (unsigned i = 0; i < map.getNumResults(); ++i) {
      bool last = i + 1 == map.getNumResults();
      AffineExpr e = map.getResult(i);
      if (e.isFunctionOfDim(inner) &&
          (!last || e != getAffineDimExpr(inner, op.getContext())))
        return NestKind::None;
    }
  }
  return kind;
}

/// A transfer_read that broadcasts along a vector dim (a 0 in its
/// permutation map: a row's max or mean read along the row) is lowered by
/// convert-vector-to-scf to one load and insert per lane, a loop that
/// spills the vector; read the element(s) once and broadcast instead.
struct ReadThenBroadcast : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    if (read.getMask())
      return failure();
    VectorType type = read.getVectorType();
    SmallVector<int64_t> shape(type.getShape());
    bool broadcasts = false;
    for (auto [i, e] : llvm::enumerate(read.getPermutationMap().getResults())) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (c && c.getValue() == 0 && shape[i] != 1) {
        shape[i] = 1;
        broadcasts = true;
      }
    }
    if (!broadcasts || type.isScalable())
      return failure();
    Value narrow = vector::TransferReadOp::create(
        rewriter, read.getLoc(), VectorType::get(shape, type.getElementType()),
        read.getBase(), read.getIndices(), read.getPermutationMapAttr(),
        read.getPadding(), Value(), read.getInBoundsAttr());
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(read, type, narrow);
    return success();
  }
};

/// Side of the blocks a 2-D transpose is done in on AVX-512: one vector,
/// transposed by vector.transpose's 16x16 shuffle lowering.
constexpr int64_t kTransposeBlock = 16;

/// Transposes the `block` x `block` matrix whose rows are `rows` (a power of
/// two of 1-D vectors) in registers: for each bit b of the indices, the
/// elements whose row and column differ in that bit trade places, two
/// two-input shuffles per pair of rows (W log2 W shuffles in all: unpacks,
/// shufps and lane permutes on x86). After every bit, element (i, c) is at
/// (c, i).
static void transposeRows(OpBuilder &b, Location loc,
                          MutableArrayRef<Value> rows) {
  int64_t block = rows.size();
  for (int64_t bit = 1; bit < block; bit <<= 1) {
    SmallVector<int64_t> low, high;
    for (int64_t c = 0; c < block; ++c) {
      bool set = c & bit;
      low.push_back(set ? block + c - bit : c);
      high.push_back(set ? block + c : c + bit);
    }
    for (int64_t i = 0; i < block; ++i) {
      if (i & bit)
        continue;
      Value top = rows[i], bottom = rows[i | bit];
      rows[i] = vector::ShuffleOp::create(b, loc, top, bottom, low);
      rows[i | bit] = vector::ShuffleOp::create(b, loc, top, bottom, high);
    }
  }
}

/// A static f32 transpose of the two innermost dims (attention's K^T copy,
/// a trained weight's W^T for the backward matmul, a 7x7 image's positions
/// x channels product back to channels x positions) whose sides are at
/// least one block: loops over `block` x `block` blocks, each read as rows,
/// transposed in registers and written as rows, instead of element by
/// element (which reads down a column: a page apart in a 1024-wide matrix,
/// and every read in the same L1 set). A block of 16 goes through
/// vector.transpose (lowered by Shuffle16x16 on AVX-512); smaller blocks
/// (one AVX2 or SSE register) through transposeRows' shuffles. The rows
/// and columns past the last whole block (49 = 3 x 16 + 1) stay
/// linalg.transpose ops on slices, element by element. The loops over
/// blocks are parallel when the transpose moves enough data.
LogicalResult transposeInBlocks(RewriterBase &rewriter, linalg::TransposeOp op,
                                int64_t block) {
  ArrayRef<int64_t> perm = op.getPermutation();
  int64_t rank = perm.size();
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  if (rank < 2 || !inType.hasStaticShape() ||
      !inType.getElementType().isF32() || !op.hasPureTensorSemantics() ||
      perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return failure();
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return failure();
  ArrayRef<int64_t> shape = inType.getShape();
  // The input's rows and columns that whole blocks cover.
  int64_t rows = shape[rank - 2] - shape[rank - 2] % block;
  int64_t columns = shape[rank - 1] - shape[rank - 1] % block;
  if (rows == 0 || columns == 0)
    return failure();

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  // Loops over the output's blocks; the input block is at the same
  // indices with the last two swapped.
  SmallVector<int64_t> outShape(shape);
  std::swap(outShape[rank - 1], outShape[rank - 2]);
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t i = 0; i < rank; ++i) {
    lbs.push_back(index(0));
    ubs.push_back(index(outShape[i]));
    steps.push_back(index(i + 2 < rank ? 1 : block));
  }
  ubs[rank - 2] = index(columns);
  ubs[rank - 1] = index(rows);
  auto vecType = VectorType::get({block, block}, inType.getElementType());
  auto rowType = VectorType::get({block}, inType.getElementType());
  Value input = op.getInput();
  Value padding =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(0));
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, lbs, ubs, steps, ValueRange{op.getInit()},
      [&](OpBuilder &b, Location l, ValueRange ivs,
          ValueRange args) -> scf::ValueVector {
        SmallVector<Value> outIndices(ivs.begin(), ivs.end());
        SmallVector<Value> inIndices = outIndices;
        std::swap(inIndices[rank - 1], inIndices[rank - 2]);
        if (block != kTransposeBlock) {
          auto offset = [&](Value base, int64_t r) -> Value {
            return r == 0 ? base
                          : arith::AddIOp::create(
                                b, l, base,
                                arith::ConstantIndexOp::create(b, l, r));
          };
          SmallVector<Value> rows;
          for (int64_t r = 0; r < block; ++r) {
            SmallVector<Value> at = inIndices;
            at[rank - 2] = offset(inIndices[rank - 2], r);
            rows.push_back(vector::TransferReadOp::create(
                b, l, rowType, input, at, padding, ArrayRef<bool>{true}));
          }
          transposeRows(b, l, rows);
          Value out = args[0];
          for (int64_t r = 0; r < block; ++r) {
            SmallVector<Value> at = outIndices;
            at[rank - 2] = offset(outIndices[rank - 2], r);
            out = vector::TransferWriteOp::create(b, l, rows[r], out, at,
                                                  ArrayRef<bool>{true})
                      .getResult();
          }
          return {out};
        }
        Value rows =
            vector::TransferReadOp::create(b, l, vecType, input, inIndices,
                                           padding, ArrayRef<bool>{true, true});
        Value columns =
            vector::TransposeOp::create(b, l, rows, ArrayRef<int64_t>{1, 0});
        return {vector::TransferWriteOp::create(b, l, columns, args[0],
                                                outIndices,
                                                ArrayRef<bool>{true, true})
                    .getResult()};
      });
  int64_t bytes = 8 * inType.getNumElements();
  if (bytes >= kiln::kMinParallelWork)
    for (scf::ForOp loop : nest.loops)
      loop->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());

  // What whole blocks leave: input[..., rows:, :] and input[..., :rows,
  // columns:], each transposed into its place in the output.
  Value result = nest.results[0];
  auto transposeRest = [&](int64_t row0, int64_t numRows, int64_t column0,
                           int64_t numColumns) {
    if (numRows == 0 || numColumns == 0)
      return;
    SmallVector<OpFoldResult> inOffsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> inSizes, outSizes,
        ones(rank, rewriter.getIndexAttr(1));
    for (int64_t i = 0; i + 2 < rank; ++i)
      inSizes.push_back(rewriter.getIndexAttr(shape[i]));
    outSizes = inSizes;
    inSizes.push_back(rewriter.getIndexAttr(numRows));
    inSizes.push_back(rewriter.getIndexAttr(numColumns));
    outSizes.push_back(rewriter.getIndexAttr(numColumns));
    outSizes.push_back(rewriter.getIndexAttr(numRows));
    SmallVector<OpFoldResult> outOffsets = inOffsets;
    inOffsets[rank - 2] = outOffsets[rank - 1] = rewriter.getIndexAttr(row0);
    inOffsets[rank - 1] = outOffsets[rank - 2] = rewriter.getIndexAttr(column0);
    Value in = tensor::ExtractSliceOp::create(rewriter, loc, input, inOffsets,
                                              inSizes, ones);
    Value out = tensor::ExtractSliceOp::create(rewriter, loc, result,
                                               outOffsets, outSizes, ones);
    Value transposed =
        linalg::TransposeOp::create(rewriter, loc, in, out, perm)->getResult(0);
    result = tensor::InsertSliceOp::create(rewriter, loc, transposed, result,
                                           outOffsets, outSizes, ones);
  };
  transposeRest(rows, shape[rank - 2] - rows, 0, shape[rank - 1]);
  transposeRest(0, rows, columns, shape[rank - 1] - columns);
  rewriter.replaceOp(op, result);
  return success();
}

struct VectorizeElementwise
    : kiln::impl::VectorizeElementwiseBase<VectorizeElementwise> {
  using Base::Base;

  /// Built once, for every function this pass runs on.
  FrozenRewritePatternSet canonicalization;
  /// Reductions over unit dims only, as adds.
  FrozenRewritePatternSet unitReductionPatterns;
  /// The vectorized tiles' transfers, transposes and reductions lowered.
  FrozenRewritePatternSet vectorPatterns;

  LogicalResult initialize(MLIRContext *ctx) override {
    canonicalization = kiln::canonicalizationPatterns(ctx);
    {
      RewritePatternSet patterns(ctx);
      vector::MultiDimReductionOp::getCanonicalizationPatterns(patterns, ctx);
      unitReductionPatterns = FrozenRewritePatternSet(std::move(patterns));
    }
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      patterns.add<ReadThenBroadcast>(ctx);
      // 16x16 f32 transposes as shuffles, not one extract and insert per
      // element (blocks of kTransposeBlock lanes: runOnOperation).
      if (std::min<int64_t>(width / 2, kTransposeBlock) == kTransposeBlock)
        vector::populateVectorTransposeLoweringPatterns(
            patterns, vector::VectorTransposeLowering::Shuffle16x16);
      // Row reductions: one vector.reduction per row (reassociated when
      // lowered to LLVM: convert-vector-to-llvm{reassociate-fp-reductions}).
      vector::populateVectorMultiReductionLoweringPatterns(
          patterns, vector::VectorMultiReductionLowering::InnerReduction);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
      vectorPatterns = FrozenRewritePatternSet(std::move(patterns));
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    // A transpose that keeps the innermost dim in place (attention's
    // [B, S, H, D] <-> [B, H, S, D]) copies whole rows: as a generic it is
    // vectorized like any elementwise nest instead of copied by scalars.
    {
      SmallVector<linalg::TransposeOp> transposes;
      func.walk([&](linalg::TransposeOp op) {
        ArrayRef<int64_t> perm = op.getPermutation();
        if (!perm.empty() && perm.back() == int64_t(perm.size()) - 1)
          transposes.push_back(op);
      });
      IRRewriter rewriter(ctx);
      for (linalg::TransposeOp op : transposes) {
        rewriter.setInsertionPoint(op);
        (void)linalg::generalizeNamedOp(rewriter, op);
      }
    }
    // Transposes of the two innermost dims in blocks of one vector
    // register (half the register tile's width: 16 on AVX-512, 8 on AVX2,
    // 4 on SSE).
    int64_t block = std::min<int64_t>(width / 2, kTransposeBlock);
    bool blockTransposes = block >= 4 && llvm::isPowerOf2_64(block);
    int64_t numBlocked = 0;
    if (blockTransposes) {
      SmallVector<linalg::TransposeOp> transposes;
      func.walk([&](linalg::TransposeOp op) { transposes.push_back(op); });
      IRRewriter rewriter(ctx);
      for (linalg::TransposeOp op : transposes)
        if (succeeded(transposeInBlocks(rewriter, op, block)))
          ++numBlocked;
    }
    SmallVector<std::pair<linalg::GenericOp, NestKind>> nests;
    func.walk([&](linalg::GenericOp op) {
      if (reductions)
        allowReassociation(op);
      NestKind kind = classifyNest(op, minWidth);
      if (kind == NestKind::RowReduction && !reductions)
        return;
      if (kind != NestKind::None)
        nests.push_back({op, kind});
    });
    if (nests.empty() && numBlocked == 0)
      return;

    // 1. Tile: ones, then the width on the innermost loop (peeled below);
    // a row reduction keeps its whole row (tile size 0: not tiled).
    IRRewriter rewriter(ctx);
    for (auto [op, kind] : nests) {
      rewriter.setInsertionPoint(op);
      unsigned numLoops = op.getNumLoops();
      int64_t inner = op.getStaticLoopRanges()[numLoops - 1];
      if (numLoops == 1 && kind == NestKind::RowReduction) {
        op->setAttr(kTileAttr, rewriter.getUnitAttr()); // already one row
        continue;
      }
      SmallVector<OpFoldResult> sizes(numLoops - 1, rewriter.getIndexAttr(1));
      sizes.push_back(rewriter.getIndexAttr(
          kind == NestKind::RowReduction ? 0
                                         : std::min(width.getValue(), inner)));
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
      options.setTileSizes(sizes);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue; // stays scalar: still correct
      // The outer loops (one row each; all but the innermost, which is
      // tiled by the width or, in a row reduction, not at all) are
      // parallel: they run on several threads when the nest moves enough
      // data.
      int64_t bytes = 4 * static_cast<int64_t>(op->getNumOperands());
      for (int64_t r : op.getStaticLoopRanges())
        bytes *= r;
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      rewriter.replaceOp(op, tiled->replacements);
      if (bytes >= kiln::kMinParallelWork &&
          tiled->loops.size() >= numLoops - 1)
        for (unsigned i = 0; i + 1 < numLoops; ++i)
          if (iters[i] == utils::IteratorType::parallel)
            tiled->loops[i]->setAttr(kiln::kParallelAttr,
                                     rewriter.getUnitAttr());
      if (!tiled->loops.empty() && kind == NestKind::Elementwise)
        tiled->loops.back()->setAttr(kTileAttr, rewriter.getUnitAttr());
      for (Operation *t : tiled->tiledOps)
        t->setAttr(kTileAttr, rewriter.getUnitAttr());
    }
    // 2. Peel the innermost loops, so the tiles are static.
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kTileAttr))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      loop->removeAttr(kTileAttr);
      scf::ForOp remainder;
      rewriter.setInsertionPoint(loop);
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, loop, remainder);
    }
    if (failed(kiln::canonicalizeFunction(func, canonicalization)))
      return signalPassFailure();

    // 3. Vectorize every static tile (peeling cloned the marked tile into
    // the remainder loop, so each copy has the mark).
    SmallVector<linalg::GenericOp> tiles;
    func.walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kTileAttr))
        tiles.push_back(op);
    });
    for (linalg::GenericOp op : tiles) {
      op->removeAttr(kTileAttr);
      if (op.hasDynamicShape())
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::VectorizationResult> result =
          linalg::vectorize(rewriter, op);
      if (failed(result))
        continue;
      rewriter.replaceOp(op, result->replacements);
      ++numNests;
    }
    // A tile of a reduction whose innermost loop is parallel reduces only
    // unit dims: one vector add into the output, not a reduction lowered
    // lane by lane.
    if (failed(applyPatternsGreedily(func, unitReductionPatterns)) ||
        failed(applyPatternsGreedily(func, vectorPatterns)))
      return signalPassFailure();
    if (failed(kiln::canonicalizeFunction(func, canonicalization)))
      return signalPassFailure();
  }
};

} // namespace
