//===- MatmulSchedule.cpp - kiln-schedule-matmul --------------------------===//
//
// Tiles f32 contractions on tensors (linalg.matmul, and the batched matmul
// linalg.generic that kiln-lower-to-linalg emits) for the cache and then for
// registers, peels every tiled loop so that all tiles have static shapes, and
// vectorizes the register tiles down to vector.fma with the accumulators
// hoisted out of the reduction loop. What is not a full register tile after
// peeling (the remainder rows and columns) is still vectorized with its own
// static, smaller shape; nothing is left to the scalar path.
//
// The steps, each a plain upstream utility:
//   0. f32 convolution generics -> im2col copy + grouped matmul generic
//      (a block of output rows at a time when the copy is large),
//      stride-1 ones -> a matmul over shifted rows of the padded input
//      (ConvToMatmul.cpp), depthwise ones and max poolings -> row-wise
//      vector code (DepthwiseSchedule.cpp);
//   0b. constant right-hand sides reordered into panels of tile-n columns
//      (PackWeights.cpp);
//   0c. elementwise epilogues moved onto the contraction and tiled with it
//      by the output cache tile (FuseEpilogues.cpp);
//   1. scf::tileUsingSCF with the cache tile; loops peeled
//      (scf::peelForLoopAndSimplifyBounds) and canonicalized, so each tile is
//      a static op;
//   2. the same with the register tile (m x n), odd remainder widths split
//      into powers of two, then k tiled by one;
//   3. linalg::vectorize on every register tile (unit batch loops dropped
//      first), reduction -> vector.contract, transfer permutations lowered;
//   4. loop-invariant accumulator reads/writes hoisted out of the k loops
//      (on tensors: after bufferization they hide behind subviews);
//   5. vector.contract -> vector.outerproduct -> vector.fma; a register
//      tile whose k fits one cache tile starts from its fill constant.
// docs/decisions/0007-cpu-matmul.md has the reasons and the numbers.
//
//===----------------------------------------------------------------------===//

#include "MatmulSchedule.h"
#include "ConvToMatmul.h"
#include "FuseEpilogues.h"
#include "PackWeights.h"
#include "ScheduleUtils.h"

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

#include "llvm/MC/MCSubtargetInfo.h"

namespace kiln {
#define GEN_PASS_DEF_SCHEDULEMATMUL
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

kiln::MatmulTile kiln::selectMatmulTile(const llvm::MCSubtargetInfo &sti) {
  if (sti.checkFeatures("+avx512f"))
    return {13, 32, 64, 64, 256};
  if (sti.checkFeatures("+avx"))
    return {6, 16, 48, 64, 256};
  return {4, 8, 32, 64, 64};
}

namespace {

constexpr llvm::StringLiteral kPeelAttr = "kiln.peel";
/// The fill value of a contraction whose output fill moves into its cache
/// tiles (set before cache tiling, consumed right after).
constexpr llvm::StringLiteral kFilledAttr = "kiln.filled";
/// The loops of an f32 contraction that the schedule tiles for registers:
/// the innermost m, n and k loops. Every other loop (batch dims, and the
/// outer m dims of a matmul whose rhs is broadcast over the batch) is tiled
/// by one.
struct MatmulLoops {
  unsigned numLoops, m, n, k;
};

static std::optional<MatmulLoops> matchF32Matmul(linalg::LinalgOp op) {
  // A convolution read as shifted rows (convToShiftedRows): loops (n, g, mg,
  // p, w..., cg), not a contraction by the interface (the input index is a
  // sum), but tiled the same way; its register tiles are plain matmuls.
  if (op->hasAttr(kiln::kShiftedRowsAttr) && op.hasPureTensorSemantics() &&
      !op.hasDynamicShape())
    return MatmulLoops{op.getNumLoops(), 2, 3, op.getNumLoops() - 1};
  if (!op.hasPureTensorSemantics() || !linalg::isaContractionOpInterface(op))
    return std::nullopt;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return std::nullopt;
  if (op.hasDynamicShape())
    return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  return MatmulLoops{op.getNumLoops(), dims->m.back(), dims->n.back(),
                     dims->k.back()};
}

/// Whether `op` is in `func`'s body itself: the run-time copies of operands
/// (packed or transposed) allocate a buffer, which the arena plan takes at
/// the top level only, not inside the loops kiln-tile-dynamic-sizes made.
static bool isTopLevel(linalg::LinalgOp op, func::FuncOp func) {
  return op->getParentOp() == func.getOperation();
}

/// The f32 contractions of `func` that the schedule tiles, in order.
static SmallVector<linalg::LinalgOp> collectContractions(func::FuncOp func) {
  SmallVector<linalg::LinalgOp> contractions;
  func.walk([&](linalg::LinalgOp op) {
    if (matchF32Matmul(op))
      contractions.push_back(op);
  });
  return contractions;
}

/// Whether the map of input `index` of `op` has loop `innermost` as its last
/// result and loop `want` among the others (readTransposed applies).
static bool readsAlong(linalg::LinalgOp op, unsigned index, unsigned want,
                       unsigned innermost) {
  AffineMap map = op.getMatchingIndexingMap(op.getDpsInputOperand(index));
  MLIRContext *ctx = op.getContext();
  return map.isProjectedPermutation() && map.getNumResults() >= 2 &&
         map.getResultPosition(getAffineDimExpr(want, ctx)) &&
         map.getResult(map.getNumResults() - 1) ==
             getAffineDimExpr(innermost, ctx);
}

/// Input `index` of `op` read through a transposed copy: the operand's dim
/// indexed by loop `want` and its innermost one (indexed by `innermost`)
/// trade places, so that `want` becomes the innermost. Fails, changing
/// nothing, unless readsAlong holds.
static LogicalResult readTransposed(RewriterBase &rewriter,
                                    linalg::GenericOp op, unsigned index,
                                    unsigned want, unsigned innermost) {
  if (!readsAlong(op, index, want, innermost))
    return failure();
  OpOperand *operand = op.getDpsInputOperand(index);
  AffineMap map = op.getMatchingIndexingMap(operand);
  MLIRContext *ctx = op.getContext();
  unsigned last = map.getNumResults() - 1;
  std::optional<unsigned> pos =
      map.getResultPosition(getAffineDimExpr(want, ctx));
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, last + 1));
  std::swap(perm[*pos], perm[last]);
  auto type = cast<RankedTensorType>(operand->get().getType());
  SmallVector<int64_t> shape;
  SmallVector<AffineExpr> results;
  for (int64_t p : perm) {
    shape.push_back(type.getDimSize(p));
    results.push_back(map.getResult(p));
  }
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value empty =
      tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
  Value transposed =
      linalg::TransposeOp::create(rewriter, loc, operand->get(), empty, perm)
          ->getResult(0);
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps[index] = AffineMap::get(map.getNumDims(), 0, results, ctx);
  rewriter.modifyOpInPlace(op, [&] {
    operand->set(transposed);
    op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps));
  });
  return success();
}

/// A contraction whose right-hand side is read along k in its innermost dim
/// (a matmul with transpose_rhs: attention's Q K^T) makes each register
/// tile's row of B a gather of tile-n scalars, one insert each. When the
/// right-hand side is not a constant (those are packed at compile time) and
/// the contraction has at least `minRows` rows to reuse it, it is first
/// transposed into a copy whose innermost dim is n, so that those rows are
/// contiguous vector loads.
static LogicalResult transposeRhs(RewriterBase &rewriter, linalg::GenericOp op,
                                  const MatmulLoops &l, int64_t minRows) {
  if (op.getNumDpsInputs() != 2 || op->hasAttr(kiln::kShiftedRowsAttr) ||
      op.getStaticLoopRanges()[l.m] < minRows ||
      matchPattern(op.getDpsInputs()[1], m_Constant()))
    return failure();
  return readTransposed(rewriter, op, 1, l.n, l.k);
}

/// A contraction whose left-hand side is read along m in its innermost dim
/// (a matmul with transpose_lhs: the weight gradient x^T dy of a training
/// step) has each register tile broadcast its m-tile rows' values for one k
/// from one row of A^T, and the k rows are M floats apart: at M = 1024 all
/// of a tile's 64 k rows fall in one L1 set (4 KiB apart), and each
/// broadcast comes from L2. When the left-hand side is not a constant, the
/// contraction has at least `minRows` rows (a whole register tile) and at
/// least `minColumns` columns reuse each element, it is first transposed
/// into a copy whose innermost dim is k, which a row-major A already has.
static LogicalResult transposeLhs(RewriterBase &rewriter, linalg::LinalgOp op,
                                  const MatmulLoops &l, int64_t minRows,
                                  int64_t minColumns) {
  if (op.getNumDpsInputs() != 2 || op->hasAttr(kiln::kShiftedRowsAttr) ||
      matchPattern(op.getDpsInputs()[0], m_Constant()) ||
      !readsAlong(op, 0, l.k, l.m))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims))
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t columns = 1;
  for (unsigned n : dims->n)
    columns *= ranges[n];
  if (ranges[l.m] < minRows || columns < minColumns)
    return failure();
  // A named op becomes a generic only once the copy is sure to be made.
  FailureOr<linalg::GenericOp> generic = kiln::asGeneric(rewriter, op);
  if (failed(generic))
    return failure();
  return readTransposed(rewriter, *generic, 0, l.k, l.m);
}

/// Tile sizes per loop: m/n/k as given, 1 for the others, except that the
/// other reduction loops stay whole (0) while k is not tiled: the output
/// tiles, and a fill in front of them, must come before every reduction.
static SmallVector<OpFoldResult> tileSizes(OpBuilder &b, linalg::LinalgOp op,
                                           const MatmulLoops &l, int64_t m,
                                           int64_t n, int64_t k) {
  SmallVector<OpFoldResult> sizes;
  for (utils::IteratorType iter : op.getIteratorTypesArray())
    sizes.push_back(b.getIndexAttr(
        k == 0 && iter == utils::IteratorType::reduction ? 0 : 1));
  sizes[l.m] = b.getIndexAttr(m);
  sizes[l.n] = b.getIndexAttr(n);
  sizes[l.k] = b.getIndexAttr(k);
  return sizes;
}

/// The m cache tile for `m` rows: all of them when they pass `cacheM` by at
/// most a quarter (49 positions of a 7x7 image, not 48 and 1), since every
/// m tile streams the whole of B (a 7x7 stage's 9 MB weight) once more;
/// else `cacheM`.
static int64_t absorbingCacheTile(int64_t m, int64_t cacheM) {
  return m > cacheM && 4 * m <= 5 * cacheM ? m : cacheM;
}

/// The k cache tile for a reduction of `k`: the largest divisor of `k`
/// between `cacheK / 2` and `cacheK` where there is one, so that no
/// remainder tile needs a second copy of the tile's code (k = 576 is three
/// tiles of 192, not 256 + 256 + 64), else `cacheK`.
static int64_t evenCacheTile(int64_t k, int64_t cacheK) {
  if (k <= cacheK)
    return cacheK;
  for (int64_t t = cacheK; 2 * t >= cacheK && t > 0; --t)
    if (k % t == 0)
      return t;
  return cacheK;
}

/// The constant every element of `v` holds when `v` is (a slice of) a
/// tensor written whole by one transfer_write of a splat constant.
static Attribute splatContents(Value v) {
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>())
    v = slice.getSource();
  auto write = v.getDefiningOp<vector::TransferWriteOp>();
  if (!write || write.getMask() || !write.getPermutationMap().isIdentity())
    return {};
  auto type = dyn_cast<RankedTensorType>(write.getBase().getType());
  if (!type || type.getShape() != write.getVectorType().getShape() ||
      !llvm::all_of(write.getIndices(),
                    [](Value i) { return isZeroInteger(i); }))
    return {};
  Value vec = write.getVector();
  if (auto splat = vec.getDefiningOp<vector::BroadcastOp>())
    vec = splat.getSource();
  Attribute cst;
  if (!matchPattern(vec, m_Constant(&cst)))
    return {};
  if (auto dense = dyn_cast<SplatElementsAttr>(cst))
    return dense.getSplatValue<Attribute>();
  return isa<FloatAttr>(cst) ? cst : Attribute();
}

/// Whether the write covers all of its destination.
static bool writesWhole(vector::TransferWriteOp write) {
  auto type = dyn_cast<RankedTensorType>(write.getBase().getType());
  return type && !write.getMask() && write.getPermutationMap().isIdentity() &&
         type.getShape() == write.getVectorType().getShape() &&
         llvm::all_of(write.getIndices(),
                      [](Value i) { return isZeroInteger(i); });
}

/// transfer_read of a splat-filled tensor -> the splat constant.
struct ReadOfSplat : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    Attribute value = splatContents(read.getBase());
    if (!value || read.getMask() || read.hasOutOfBoundsDim())
      return failure();
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        read, SplatElementsAttr::get(read.getVectorType(), value));
    return success();
  }
};

/// A write over all of a slice of a splat-filled tensor writes over the
/// slice of what was filled instead: the fill is never read.
struct WriteOverSplat : OpRewritePattern<vector::TransferWriteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(vector::TransferWriteOp write,
                                PatternRewriter &rewriter) const override {
    auto slice = write.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !writesWhole(write))
      return failure();
    auto fill = slice.getSource().getDefiningOp<vector::TransferWriteOp>();
    if (!fill || !splatContents(fill.getResult()))
      return failure();
    rewriter.setInsertionPoint(slice);
    auto plain = tensor::ExtractSliceOp::create(
        rewriter, slice.getLoc(), slice.getType(), fill.getBase(),
        slice.getMixedOffsets(), slice.getMixedSizes(),
        slice.getMixedStrides());
    rewriter.modifyOpInPlace(
        write, [&] { write.getBaseMutable().assign(plain.getResult()); });
    return success();
  }
};

/// An insert_slice over all of a splat-filled tensor inserts into what was
/// filled instead.
struct InsertOverSplat : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert,
                                PatternRewriter &rewriter) const override {
    auto fill = insert.getDest().getDefiningOp<vector::TransferWriteOp>();
    if (!fill || !splatContents(fill.getResult()) ||
        !insert.getSourceType().hasStaticShape() ||
        insert.getSourceType().getNumElements() !=
            insert.getDestType().getNumElements() ||
        !llvm::all_of(insert.getMixedOffsets(),
                      [](OpFoldResult o) { return isZeroInteger(o); }))
      return failure();
    rewriter.modifyOpInPlace(
        insert, [&] { insert.getDestMutable().assign(fill.getBase()); });
    return success();
  }
};

struct ScheduleMatmul : kiln::impl::ScheduleMatmulBase<ScheduleMatmul> {
  using Base::Base;

  /// Built once, for every function this pass runs on.
  FrozenRewritePatternSet canonicalization;
  /// Register tiles' reads, writes and products as vector.contract.
  FrozenRewritePatternSet contractPatterns;
  /// Contractions to outer products to FMAs.
  FrozenRewritePatternSet fmaPatterns;
  /// Accumulators that start as a splat (fillRegisterTile).
  FrozenRewritePatternSet splatPatterns;

  LogicalResult initialize(MLIRContext *ctx) override {
    canonicalization = kiln::canonicalizationPatterns(ctx);
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorReductionToContractPatterns(patterns);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::ContractionOp::getCanonicalizationPatterns(patterns, ctx);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
      contractPatterns = FrozenRewritePatternSet(std::move(patterns));
    }
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorContractLoweringPatterns(
          patterns, vector::VectorContractLowering::OuterProduct);
      vector::populateVectorOuterProductLoweringPatterns(patterns);
      fmaPatterns = FrozenRewritePatternSet(std::move(patterns));
    }
    {
      RewritePatternSet patterns(ctx);
      patterns.add<ReadOfSplat, WriteOverSplat, InsertOverSplat>(ctx);
      splatPatterns = FrozenRewritePatternSet(std::move(patterns));
    }
    return success();
  }

  /// Tiles every matching contraction of `func` that `select` accepts, and
  /// marks the new loops for peeling.
  LogicalResult tileAll(
      func::FuncOp func,
      llvm::function_ref<bool(linalg::LinalgOp, const MatmulLoops &)> select,
      int64_t m, int64_t n, int64_t k, bool markParallel = false,
      bool evenK = false, bool absorbM = false) {
    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) {
      if (auto dims = matchF32Matmul(op); dims && select(op, *dims))
        ops.push_back(op);
    });
    if (ops.empty())
      return success(); // nothing to peel or canonicalize
    IRRewriter rewriter(func.getContext());
    for (linalg::LinalgOp op : ops) {
      auto dims = *matchF32Matmul(op);
      // The loops over output tiles (all but k) are independent: each
      // iteration writes its own block of the result. Peeling copies the
      // mark into the remainder loops.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      int64_t flops = 2;
      for (int64_t r : ranges)
        flops *= r;
      rewriter.setInsertionPoint(op);
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
      int64_t kTile = evenK ? evenCacheTile(ranges[dims.k], k) : k;
      int64_t mTile = absorbM ? absorbingCacheTile(ranges[dims.m], m) : m;
      SmallVector<OpFoldResult> sizes =
          tileSizes(rewriter, op, dims, mTile, n, kTile);
      options.setTileSizes(sizes);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        return op->emitOpError("could not be tiled");
      rewriter.replaceOp(op, tiled->replacements);
      for (LoopLikeOpInterface loop : tiled->loops)
        loop->setAttr(kPeelAttr, rewriter.getUnitAttr());
      // tileUsingSCF makes one loop per non-zero tile size, in loop order.
      SmallVector<utils::IteratorType> tiledIters;
      for (auto [size, iter] : llvm::zip(sizes, iters))
        if (!isConstantIntValue(size, 0))
          tiledIters.push_back(iter);
      if (markParallel && flops >= kiln::kMinParallelWork &&
          tiled->loops.size() == tiledIters.size()) {
        for (auto [loop, iter] : llvm::zip(tiled->loops, tiledIters))
          if (iter == utils::IteratorType::parallel)
            loop->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
      }
    }
    return peelMarked(func);
  }

  /// Peels every loop marked kPeelAttr, outermost first: peeling an outer
  /// loop clones the marked loops inside it into the remainder, and those
  /// are peeled in the next round. One walk per round (rounds: the nesting
  /// depth), not one per loop, which was quadratic in the function's size.
  LogicalResult peelMarked(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    while (true) {
      SmallVector<scf::ForOp> marked;
      func.walk<WalkOrder::PreOrder>([&](scf::ForOp f) {
        if (f->hasAttr(kPeelAttr))
          marked.push_back(f);
      });
      if (marked.empty())
        break;
      // Peeling keeps the loop (now over the whole steps) and the loops
      // inside it in place, so the later ones in the list stay valid.
      for (scf::ForOp loop : marked) {
        loop->removeAttr(kPeelAttr);
        scf::ForOp remainder;
        rewriter.setInsertionPoint(loop);
        if (succeeded(
                scf::peelForLoopAndSimplifyBounds(rewriter, loop, remainder)))
          remainder->removeAttr(kPeelAttr);
      }
    }
    return kiln::canonicalizeFunction(func, canonicalization);
  }

  /// Steps 0 to 2: convolutions rewritten, weights packed, operands read
  /// transposed copied.
  void prepareContractions(func::FuncOp func) {
    MLIRContext *ctx = func.getContext();
    // 0. Depthwise convolutions to row FMAs (half a register tile wide),
    // the others to matmuls (ConvToMatmul.cpp).
    {
      kiln::ConvRewriteOptions convOptions{tileN,         im2col,
                                           shiftedRows,   maxColumnElements,
                                           fuseEpilogues, winograd};
      kiln::ConvRewriteCounts counts =
          kiln::rewriteConvolutions(func, convOptions);
      numConvs += counts.im2col;
      numPositionRows += counts.positionRows;
      numShifted += counts.shiftedRows;
      numDepthwise += counts.depthwise;
      numWinograd += counts.winograd;
    }

    // Constant right-hand sides (weights) in panel order, one panel per
    // register tile width, so the k loop reads B front to back; large
    // computed ones (a training step's weights and gradients) into the same
    // layout at run time, where at least two register tiles of rows reuse
    // each panel. Either fails without changing the op.
    if (packWeights) {
      IRRewriter rewriter(ctx);
      for (linalg::LinalgOp op : collectContractions(func)) {
        if (succeeded(kiln::packConstantRhs(rewriter, op, tileN)))
          ++numPacked;
        else if (isTopLevel(op, func) && succeeded(kiln::packRuntimeRhs(
                                             rewriter, op, tileN, 2 * tileM)))
          ++numPackedAtRunTime;
      }
    }

    // Right-hand sides read along k (not constants, packed above) copied to
    // a [k, n] layout; left-hand sides read along m to an [m, k] one.
    {
      IRRewriter rewriter(ctx);
      for (linalg::LinalgOp op : collectContractions(func))
        if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
            generic && isTopLevel(op, func) &&
            succeeded(
                transposeRhs(rewriter, generic, *matchF32Matmul(op), tileM)))
          ++numTransposedRhs;
      for (linalg::LinalgOp op : collectContractions(func))
        if (isTopLevel(op, func) &&
            succeeded(transposeLhs(rewriter, op, *matchF32Matmul(op), tileM,
                                   2 * tileN)))
          ++numTransposedLhs;
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (func.isExternal())
      return;

    // Steps 0 to 2 read the weights' values; kiln-outline-kernels runs
    // them on the whole function (prepare-only) before the kernels move
    // into functions that receive the weights as arguments.
    if (!func->hasAttr(kiln::kContractionsPreparedAttr))
      prepareContractions(func);
    if (prepareOnly) {
      func->setAttr(kiln::kContractionsPreparedAttr, UnitAttr::get(ctx));
      // The weights packed above, unpacked: nothing canonicalizes this
      // function before bufferization (its kernels move out), which would
      // otherwise turn them into globals that no one reads.
      SmallVector<Operation *> ops;
      for (Operation &op : func.getBody().front())
        ops.push_back(&op);
      for (Operation *op : llvm::reverse(ops))
        if (isOpTriviallyDead(op))
          op->erase();
      return;
    }

    // A contraction whose output starts as a constant fill fills each cache
    // tile of its output right before computing it (before its k loop),
    // instead of a memset of the whole output first: the tile is still in
    // cache when its register tiles read it.
    SmallVector<linalg::FillOp> fills;
    func.walk([&](linalg::LinalgOp op) {
      if (!matchF32Matmul(op))
        return;
      Value init = kiln::throughReshapes(op.getDpsInitOperand(0)->get(),
                                         /*singleUse=*/true);
      auto fill = init.getDefiningOp<linalg::FillOp>();
      FloatAttr value;
      if (!fill || !init.hasOneUse() ||
          !matchPattern(fill.getInputs()[0], m_Constant(&value)))
        return;
      op->setAttr(kFilledAttr, value);
      fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills)
      fill.getResult(0).replaceAllUsesWith(fill.getDpsInits()[0]);
    for (linalg::FillOp fill : fills)
      fill.erase();
    numFillsMoved += fills.size();

    // Elementwise epilogues (bias, activation, residual add) computed per
    // output cache tile, right after the tile, while it is in cache: the
    // epilogue moves onto the contraction's index space, updating its
    // output in place, and is tiled with the contraction fused in (which
    // carries its fill mark along).
    if (fuseEpilogues) {
      IRRewriter rewriter(ctx);
      for (linalg::LinalgOp op : collectContractions(func))
        if (failed(tileWithEpilogue(rewriter, op)))
          return signalPassFailure();
      if (failed(peelMarked(func)))
        return signalPassFailure();
    }

    // 1. Cache tiles (only where an operand exceeds them): the output tiles
    // first, then k inside them, so that a tile's fill goes in between.
    if (failed(tileAll(
            func,
            [&](linalg::LinalgOp op, const MatmulLoops &d) {
              // k too: its batch and panel loops (tiled by one) come here,
              // with the parallel mark. So does one that fits a cache tile
              // but has such loops (960 columns of packed weight are 30
              // panel iterations of a 49-row product): they are its only
              // parallel loops, and the register tiles would take them
              // unmarked.
              SmallVector<int64_t> r = op.getStaticLoopRanges();
              if (r[d.m] > cacheM || r[d.n] > cacheN || r[d.k] > cacheK)
                return true;
              for (auto [i, iter] : llvm::enumerate(op.getIteratorTypesArray()))
                if (iter == utils::IteratorType::parallel && i != d.m &&
                    i != d.n && r[i] > 1)
                  return true;
              return false;
            },
            cacheM, cacheN, 0, /*markParallel=*/true, /*evenK=*/false,
            /*absorbM=*/true)))
      return signalPassFailure();
    func.walk([&](linalg::LinalgOp op) {
      auto value = op->getAttrOfType<FloatAttr>(kFilledAttr);
      if (!value)
        return;
      // A contraction with one reduction loop that fits one k tile keeps
      // its mark down to the register tiles: their accumulators then start
      // as the constant, and the fill is never stored (fillRegisterTile).
      MatmulLoops d = *matchF32Matmul(op);
      if (op.getNumReductionLoops() == 1 &&
          op.getStaticLoopRanges()[d.k] <= cacheK)
        return;
      op->removeAttr(kFilledAttr);
      OpBuilder b(op);
      Value cst = arith::ConstantOp::create(b, op.getLoc(), value);
      OpOperand *init = op.getDpsInitOperand(0);
      init->set(linalg::FillOp::create(b, op.getLoc(), cst, init->get())
                    .getResult(0));
    });
    if (failed(tileAll(
            func,
            [&](linalg::LinalgOp op, const MatmulLoops &d) {
              return op.getStaticLoopRanges()[d.k] > cacheK;
            },
            0, 0, cacheK, /*markParallel=*/false, /*evenK=*/true)))
      return signalPassFailure();

    // 2. Register tiles (m x n; k comes last, after the remainder splits).
    if (failed(tileAll(
            func,
            [&](linalg::LinalgOp op, const MatmulLoops &d) {
              return !isRegisterTile(op, d, /*unitK=*/false);
            },
            tileM, tileN, 0)))
      return signalPassFailure();

    // A remainder tile of odd width (29 columns, say) would become one
    // vector<29xf32> per row, which LLVM legalizes element by element.
    // Split it into power-of-two widths (16 + 8 + 4 + 1) instead.
    for (int64_t width = tileN / 2; width >= 1; width /= 2)
      if (failed(tileAll(
              func,
              [&](linalg::LinalgOp op, const MatmulLoops &d) {
                int64_t n = op.getStaticLoopRanges()[d.n];
                return isRegisterTile(op, d, /*unitK=*/false) && n > width &&
                       !llvm::isPowerOf2_64(n);
              },
              tileM, width, 0)))
        return signalPassFailure();

    // k one at a time: each tile gets its own k loop, which carries its
    // accumulators.
    if (failed(tileAll(
            func,
            [&](linalg::LinalgOp op, const MatmulLoops &d) {
              return !isRegisterTile(op, d, /*unitK=*/true);
            },
            tileM, tileN, 1)))
      return signalPassFailure();

    // 3. Vectorize the register tiles.
    SmallVector<linalg::LinalgOp> tiles;
    func.walk([&](linalg::LinalgOp op) {
      if (auto dims = matchF32Matmul(op); dims && isRegisterTile(op, *dims))
        tiles.push_back(op);
    });
    IRRewriter rewriter(ctx);
    for (linalg::LinalgOp op : tiles) {
      fillRegisterTile(rewriter, op);
      rewriter.setInsertionPoint(op);
      // A batched tile is a matmul with unit batch loops: drop them first,
      // so that it vectorizes to the same 2-D contraction as linalg.matmul
      // (vector.contract with leading unit dims lowers to scalar code).
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
          generic && generic.getNumLoops() > 3) {
        MatmulLoops loops = *matchF32Matmul(op);
        // Slices, not reshapes: hoisting sees through extract/insert_slice.
        linalg::ControlDropUnitDims control;
        control.rankReductionStrategy = linalg::ControlDropUnitDims::
            RankReductionStrategy::ExtractInsertSlice;
        control.controlFn = [loops](Operation *) {
          SmallVector<unsigned> dims;
          for (unsigned i = 0; i < loops.numLoops; ++i)
            if (i != loops.m && i != loops.n && i != loops.k)
              dims.push_back(i);
          return dims;
        };
        FailureOr<linalg::DropUnitDimsResult> dropped =
            linalg::dropUnitDims(rewriter, generic, control);
        if (succeeded(dropped)) {
          rewriter.replaceOp(generic, dropped->replacements);
          op = cast<linalg::LinalgOp>(dropped->resultOp.getOperation());
          rewriter.setInsertionPoint(op);
        }
      }
      FailureOr<linalg::VectorizationResult> result =
          linalg::vectorize(rewriter, op);
      if (failed(result))
        continue; // stays a linalg op: scalar loops, still correct
      rewriter.replaceOp(op, result->replacements);
      ++numVectorized;
    }
    if (tiles.empty())
      return;
    if (failed(applyPatternsGreedily(func, contractPatterns)))
      return signalPassFailure();
    if (failed(kiln::canonicalizeFunction(func, canonicalization)))
      return signalPassFailure();
    {
      // Inside the loops tiling made only: the function's own top-level ops
      // may repeat on purpose (kiln-rematerialize recomputes values instead
      // of keeping them live), and merging them here would undo that.
      DominanceInfo dom(func);
      for (Operation &op : func.getBody().front())
        if (op.getNumRegions() != 0)
          eliminateCommonSubExpressions(rewriter, dom, &op);
    }

    // 4. Accumulators out of the k loops: only the loops around a
    // contraction. Hoisting the disjoint row/column slices of the peeled
    // tiles out of the outer loops too makes one-shot bufferization see
    // conflicts and copy them into allocations inside the loops.
    SmallVector<scf::ForOp> loops;
    func.walk([&](scf::ForOp loop) {
      if (llvm::any_of(loop.getBody()->getOperations(), [](Operation &op) {
            return isa<vector::ContractionOp>(op);
          }))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      hoistLoopInvariantSubsets(rewriter,
                                cast<LoopLikeOpInterface>(loop.getOperation()));

    // 5. Contractions to FMAs.
    if (failed(applyPatternsGreedily(func, fmaPatterns)))
      return signalPassFailure();
    if (failed(kiln::canonicalizeFunction(func, canonicalization)))
      return signalPassFailure();
    // Register tiles filled with a constant (fillRegisterTile): their
    // accumulators start as that constant and the fill is never stored
    // (after canonicalization has dropped the k loops' tensor arguments
    // that hoisting left).
    if (failed(applyPatternsGreedily(func, splatPatterns)))
      return signalPassFailure();
    if (failed(kiln::canonicalizeFunction(func, canonicalization)))
      return signalPassFailure();
  }

  /// Tiles the epilogue of `op` (moveEpilogueOntoContraction) by the
  /// output cache tile, with `op` and its output fill fused into each
  /// tile, and marks the loops for peeling. Does nothing when `op` has no
  /// such epilogue.
  LogicalResult tileWithEpilogue(RewriterBase &rewriter, linalg::LinalgOp op) {
    MatmulLoops dims = *matchF32Matmul(op);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    FailureOr<linalg::GenericOp> epi =
        kiln::moveEpilogueOntoContraction(rewriter, op);
    if (failed(epi))
      return success();
    ++numEpilogues;
    int64_t flops = 2;
    for (int64_t r : ranges)
      flops *= r;
    // The epilogue's dims are the contraction's output dims.
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    SmallVector<OpFoldResult> sizes;
    for (unsigned i = 0; i < outMap.getNumResults(); ++i) {
      unsigned loop = outMap.getDimPosition(i);
      sizes.push_back(rewriter.getIndexAttr(
          loop == dims.m   ? absorbingCacheTile(ranges[dims.m], cacheM)
          : loop == dims.n ? cacheN
                           : 1));
    }
    scf::SCFTilingOptions tiling;
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
    tiling.setTileSizes(sizes);
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    // Only the contraction and its fill: the epilogue's other inputs
    // (a residual computed elsewhere) are read, not recomputed per tile.
    Operation *contraction = op;
    options.setFusionControlFn(
        [contraction](tensor::ExtractSliceOp, OpResult producer,
                      bool isDestination)
            -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
          Operation *owner = producer.getOwner();
          if (owner == contraction ||
              (isDestination && isa<linalg::FillOp>(owner)))
            return scf::SCFTileAndFuseOptions::ControlFnResult{};
          return std::nullopt;
        });
    rewriter.setInsertionPoint(*epi);
    FailureOr<scf::SCFTileAndFuseResult> tiled =
        scf::tileConsumerAndFuseProducersUsingSCF(
            rewriter, cast<TilingInterface>(epi->getOperation()), options);
    if (failed(tiled))
      return epi->emitOpError("could not be tiled with its contraction");
    rewriter.replaceAllUsesWith(epi->getResult(0),
                                tiled->replacements.lookup(epi->getResult(0)));
    rewriter.eraseOp(*epi);
    for (Operation *producer : llvm::reverse(tiled->fusedProducers))
      if (producer->use_empty())
        rewriter.eraseOp(producer);
    for (auto [i, loop] : llvm::enumerate(tiled->loops)) {
      loop->setAttr(kPeelAttr, rewriter.getUnitAttr());
      if (flops >= kiln::kMinParallelWork)
        loop->setAttr(kiln::kParallelAttr, rewriter.getUnitAttr());
    }
    return success();
  }

  /// For a register tile still marked kFilledAttr: fills what its k loop
  /// (or, with one k, the tile itself) starts from, and vectorizes the fill
  /// to a splat write, which the patterns below fold into the accumulators.
  void fillRegisterTile(RewriterBase &rewriter, linalg::LinalgOp op) {
    auto value = op->getAttrOfType<FloatAttr>(kFilledAttr);
    if (!value)
      return;
    op->removeAttr(kFilledAttr);
    OpOperand *init = op.getDpsInitOperand(0);
    auto arg = dyn_cast<BlockArgument>(init->get());
    auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp())
                    : scf::ForOp();
    if (loop && arg.getArgNumber() > 0)
      init = &loop.getInitsMutable()[arg.getArgNumber() - 1];
    rewriter.setInsertionPoint(loop ? loop.getOperation() : op.getOperation());
    Value cst = arith::ConstantOp::create(rewriter, op.getLoc(), value);
    auto fill = linalg::FillOp::create(rewriter, op.getLoc(), cst, init->get());
    init->set(fill.getResult(0));
    FailureOr<linalg::VectorizationResult> result =
        linalg::vectorize(rewriter, fill);
    if (succeeded(result))
      rewriter.replaceOp(fill, result->replacements);
  }

  /// A tile the register schedule produced: unit loops but m and n (and the
  /// reduction loops unless `unitK`), m and n no larger than the register
  /// tile.
  bool isRegisterTile(linalg::LinalgOp op, const MatmulLoops &d,
                      bool unitK = true) const {
    SmallVector<int64_t> r = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    for (unsigned i = 0; i < d.numLoops; ++i)
      if (i != d.m && i != d.n && r[i] != 1 &&
          (unitK || iters[i] != utils::IteratorType::reduction))
        return false;
    return r[d.m] <= tileM && r[d.n] <= tileN;
  }
};

} // namespace
