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

#include "MatmulSchedule.h"
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

/// An all-parallel f32 generic on static tensors whose reads are contiguous
/// along the innermost loop or independent of it.
bool isVectorizableNest(linalg::GenericOp op, int64_t minWidth) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops() || op.hasDynamicShape())
    return false;
  for (Value v : op->getOperands())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return false;
  unsigned inner = op.getNumLoops() - 1;
  if (op.getStaticLoopRanges()[inner] < minWidth)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (op.isDpsInit(&operand)) {
      if (!map.isIdentity())
        return false;
      continue;
    }
    // The innermost loop may appear only as the operand's last index.
    for (unsigned i = 0; i < map.getNumResults(); ++i) {
      bool last = i + 1 == map.getNumResults();
      AffineExpr e = map.getResult(i);
      if (e.isFunctionOfDim(inner) &&
          (!last || e != getAffineDimExpr(inner, op.getContext())))
        return false;
    }
  }
  return true;
}

struct VectorizeElementwise
    : kiln::impl::VectorizeElementwiseBase<VectorizeElementwise> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<linalg::GenericOp> nests;
    func.walk([&](linalg::GenericOp op) {
      if (isVectorizableNest(op, minWidth))
        nests.push_back(op);
    });
    if (nests.empty())
      return;

    // 1. Tile: ones, then the width on the innermost loop (peeled below).
    IRRewriter rewriter(ctx);
    for (linalg::GenericOp op : nests) {
      rewriter.setInsertionPoint(op);
      unsigned numLoops = op.getNumLoops();
      int64_t inner = op.getStaticLoopRanges()[numLoops - 1];
      SmallVector<OpFoldResult> sizes(numLoops - 1, rewriter.getIndexAttr(1));
      sizes.push_back(rewriter.getIndexAttr(std::min(width.getValue(), inner)));
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
      options.setTileSizes(sizes);
      FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
          rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(tiled))
        continue; // stays scalar: still correct
      rewriter.replaceOp(op, tiled->replacements);
      if (!tiled->loops.empty())
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
    if (failed(kiln::canonicalizeFunction(func)))
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
    {
      RewritePatternSet patterns(ctx);
      vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
      vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
      vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    if (failed(kiln::canonicalizeFunction(func)))
      return signalPassFailure();
  }
};

} // namespace
