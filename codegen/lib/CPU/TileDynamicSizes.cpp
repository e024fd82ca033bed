//===- TileDynamicSizes.cpp - kiln-tile-dynamic-sizes ---------------------===//
//
// The CPU schedules (matmul register tiles, vectorized elementwise nests,
// convolutions as matmuls) work on static shapes. An op over run-time sizes
// (decision 0027) is split here, loop by loop, into pieces of static
// extent, so that the schedules take them as they would a static model's
// ops. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ScheduleUtils.h"
#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_TILEDYNAMICSIZES
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// The m, n and k loops of an f32 contraction; nothing for other ops.
std::optional<std::array<unsigned, 3>> contractionLoops(linalg::LinalgOp op) {
  if (!linalg::isaContractionOpInterface(op))
    return std::nullopt;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return std::nullopt;
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
    return std::nullopt;
  return std::array<unsigned, 3>{dims->m.back(), dims->n.back(),
                                 dims->k.back()};
}

/// Tiles `op` by one on `loop` (the tiles tileUsingSCF makes are then all
/// whole) and returns the op in the tile.
FailureOr<linalg::LinalgOp> tileByOne(RewriterBase &rewriter,
                                      linalg::LinalgOp op, unsigned loop) {
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions options;
  options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
  SmallVector<OpFoldResult> sizes(op.getNumLoops(), rewriter.getIndexAttr(0));
  sizes[loop] = rewriter.getIndexAttr(1);
  options.setTileSizes(sizes);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled) || tiled->tiledOps.size() != 1)
    return failure();
  rewriter.replaceOp(op, tiled->replacements);
  return cast<linalg::LinalgOp>(tiled->tiledOps.front());
}

/// For each operand of `op`, the dim that `loop` indexes (as a plain loop
/// index), if any; failure when an operand reads it through an expression
/// (a convolution window), which slices cannot follow.
FailureOr<SmallVector<std::optional<unsigned>>> loopDims(linalg::LinalgOp op,
                                                         unsigned loop) {
  SmallVector<std::optional<unsigned>> dims;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    std::optional<unsigned> dim;
    for (unsigned r = 0; r < map.getNumResults(); ++r) {
      AffineExpr e = map.getResult(r);
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() == loop)
        dim = r;
      else if (!isa<AffineDimExpr>(e) && e.isFunctionOfDim(loop))
        return failure();
    }
    dims.push_back(dim);
  }
  return dims;
}

/// Splits loop `loop` of `op`, whose extent is known at run time only,
/// into pieces of static extent: whole tiles of chunks[0] in a loop, then
/// whole tiles of chunks[1] over what is left, and so on; then the 1 to
/// chunk - 1 left through an scf.index_switch on that count, one case (and
/// one piece) per count. Each piece is a copy of `op` on
/// slices of its operands (and, when `loop` indexes its output, writing a
/// slice of it; else accumulating into all of it: a reduction). Returns
/// the pieces. `op` has one result.
SmallVector<linalg::LinalgOp>
splitLoop(RewriterBase &rewriter, linalg::LinalgOp op, unsigned loop,
          ArrayRef<int64_t> chunks, ArrayRef<std::optional<unsigned>> dims) {
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  unsigned initIndex = op.getDpsInitOperand(0)->getOperandNumber();
  std::optional<unsigned> initDim = dims[initIndex];
  // The extent: the size of an operand dim the loop indexes.
  Value extent;
  for (OpOperand &operand : op->getOpOperands())
    if (std::optional<unsigned> dim = dims[operand.getOperandNumber()]) {
      extent = tensor::DimOp::create(rewriter, loc, operand.get(), *dim);
      break;
    }
  SmallVector<linalg::LinalgOp> pieces;
  // The part of `v` from `offset`, `count` long, along its dim `dim`.
  struct SliceParams {
    SmallVector<OpFoldResult> offsets, sizes, strides;
  };
  auto along = [&](OpBuilder &b, Value v, unsigned dim, Value offset,
                   int64_t count) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SliceParams r{SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
                  tensor::getMixedSizes(b, loc, v),
                  SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
    r.offsets[dim] = offset;
    r.sizes[dim] = b.getIndexAttr(count);
    return r;
  };
  // A copy of `op` over [offset, offset + count) of the loop, updating
  // `acc` (the output so far); returns the updated output.
  auto piece = [&](OpBuilder &b, Value offset, int64_t count,
                   Value acc) -> Value {
    IRMapping mapping;
    Value target;
    for (OpOperand &operand : op->getOpOperands()) {
      bool isInit = operand.getOperandNumber() == initIndex;
      Value v = isInit ? acc : operand.get();
      std::optional<unsigned> dim = dims[operand.getOperandNumber()];
      if (dim) {
        SliceParams r = along(b, v, *dim, offset, count);
        v = tensor::ExtractSliceOp::create(b, loc, v, r.offsets, r.sizes,
                                           r.strides);
      }
      if (isInit)
        target = v;
      mapping.map(operand.get(), v);
    }
    Operation *copy = b.clone(*op.getOperation(), mapping);
    copy->getResult(0).setType(target.getType());
    pieces.push_back(cast<linalg::LinalgOp>(copy));
    if (!initDim)
      return copy->getResult(0);
    SliceParams r = along(b, acc, *initDim, offset, count);
    return tensor::InsertSliceOp::create(b, loc, copy->getResult(0), acc,
                                         r.offsets, r.sizes, r.strides);
  };
  Value acc = op.getDpsInitOperand(0)->get();
  Value offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value left = extent;
  for (int64_t chunk : chunks) {
    Value step = arith::ConstantIndexOp::create(rewriter, loc, chunk);
    Value whole = arith::MulIOp::create(
        rewriter, loc, arith::DivUIOp::create(rewriter, loc, left, step), step);
    Value end = arith::AddIOp::create(rewriter, loc, offset, whole);
    auto tiles = scf::ForOp::create(
        rewriter, loc, offset, end, step, ValueRange{acc},
        [&](OpBuilder &b, Location, Value i, ValueRange carried) {
          scf::YieldOp::create(b, loc, piece(b, i, chunk, carried.front()));
        });
    acc = tiles.getResult(0);
    offset = end;
    left = arith::SubIOp::create(rewriter, loc, left, whole);
  }
  // The last 1 to chunk - 1: one case per count, each yielding the whole
  // updated output (so that bufferization writes in place); none left: the
  // default. A last chunk of one leaves nothing.
  if (chunks.back() == 1) {
    rewriter.replaceOp(op, acc);
    return pieces;
  }
  SmallVector<int64_t> counts;
  for (int64_t count = 1; count < chunks.back(); ++count)
    counts.push_back(count);
  auto tail = scf::IndexSwitchOp::create(rewriter, loc, acc.getType(), left,
                                         counts, counts.size());
  for (auto [i, count] : llvm::enumerate(counts)) {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(
        rewriter.createBlock(&tail.getCaseRegions()[i]));
    scf::YieldOp::create(rewriter, loc, piece(rewriter, offset, count, acc));
  }
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(
        rewriter.createBlock(&tail.getDefaultRegion()));
    scf::YieldOp::create(rewriter, loc, acc);
  }
  acc = tail.getResult(0);
  rewriter.replaceOp(op, acc);
  return pieces;
}

struct TileDynamicSizes : kiln::impl::TileDynamicSizesBase<TileDynamicSizes> {
  using Base::Base;

  /// The chunks the loop `loop` of `op` is split into: an f32
  /// contraction's rows (m) in cache then register tiles; its columns (n)
  /// and reduction (k), and any other op's innermost loop, in register
  /// width then single steps. Empty: the loop is tiled by one instead.
  SmallVector<int64_t> chunksFor(linalg::LinalgOp op, unsigned loop) const {
    std::optional<std::array<unsigned, 3>> mnk = contractionLoops(op);
    if (mnk && loop == (*mnk)[0])
      return {cacheM, tileM};
    if (mnk && (loop == (*mnk)[1] || loop == (*mnk)[2]))
      return {tileN, 1};
    if (!mnk && loop == op.getNumLoops() - 1)
      return {tileN, 1};
    return {};
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<linalg::LinalgOp> worklist;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.hasDynamicShape() &&
          isa<TilingInterface>(op.getOperation()))
        worklist.push_back(op);
    });
    bool changed = !worklist.empty();
    IRRewriter rewriter(&getContext());
    while (!worklist.empty()) {
      linalg::LinalgOp op = worklist.pop_back_val();
      // Outer loops first: the pieces of one loop are split on the next.
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
      // A dynamic parallel loop, else a dynamic reduction that splits.
      auto dynamic = [&](unsigned l) {
        return ShapedType::isDynamic(ranges[l]);
      };
      unsigned loop = 0;
      while (loop < ranges.size() &&
             (!dynamic(loop) || iters[loop] != utils::IteratorType::parallel))
        ++loop;
      if (loop == ranges.size() && !op.hasIndexSemantics()) {
        loop = 0;
        while (loop < ranges.size() &&
               (!dynamic(loop) || chunksFor(op, loop).empty()))
          ++loop;
      }
      if (loop == ranges.size())
        continue;
      ++numTiled;
      SmallVector<int64_t> chunks = chunksFor(op, loop);
      FailureOr<SmallVector<std::optional<unsigned>>> dims = loopDims(op, loop);
      // A body that reads its loop indices (linalg.index) would see a
      // piece's own indices: tileUsingSCF offsets them, the pieces do not.
      if (!chunks.empty() && succeeded(dims) && op->getNumResults() == 1 &&
          !op.hasIndexSemantics()) {
        llvm::append_range(worklist,
                           splitLoop(rewriter, op, loop, chunks, *dims));
        ++numSplit;
        continue;
      }
      FailureOr<linalg::LinalgOp> tile = tileByOne(rewriter, op, loop);
      if (failed(tile)) {
        op->emitOpError("could not be tiled over its run-time sizes");
        return signalPassFailure();
      }
      worklist.push_back(*tile);
    }
    // Slices of constant sizes to static tile types.
    if (changed && failed(kiln::canonicalizeFunction(func)))
      signalPassFailure();
  }
};

} // namespace
