//===- PrefetchPanels.cpp - kiln-prefetch-panels --------------------------===//
//
// In each register tile's k loop, a prefetch of the rows of B that the next
// k tile (or the next panel) will read, one loop's length ahead, so that a
// weight streamed from memory arrives while the tiles before compute (see
// Passes.td and docs/decisions/0014).
//
//===----------------------------------------------------------------------===//

#include "kiln/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {
#define GEN_PASS_DEF_PREFETCHPANELS
#include "kiln/Codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {

/// Bytes of one cache line: one prefetch per line of a row.
constexpr int64_t kLineBytes = 64;

/// A row read of the loop's B: the subview inside the loop that takes row
/// `iv` of `base` (defined outside it), the position of that offset, and
/// the row's length in elements.
struct RowRead {
  memref::SubViewOp rowView;
  unsigned ivPos;
  int64_t rowElems, elemBytes;
};

/// The row of B that `read` (a whole vector of at least one cache line,
/// from views at offset 0 below the row's view) takes at `iv`, if it is one.
std::optional<RowRead> matchRowRead(vector::TransferReadOp read, Value iv,
                                    scf::ForOp loop) {
  VectorType vecTy = read.getVectorType();
  if (read.getMask() || !read.getPermutationMap().isMinorIdentity() ||
      !llvm::all_of(read.getIndices(),
                    [](Value i) { return isZeroInteger(i); }))
    return std::nullopt;
  int64_t elemBytes = vecTy.getElementTypeBitWidth() / 8;
  int64_t rowElems = vecTy.getShape().back();
  if (elemBytes == 0 || rowElems * elemBytes < kLineBytes ||
      vecTy.getNumElements() != rowElems)
    return std::nullopt;
  Value src = read.getBase();
  while (auto view = src.getDefiningOp<memref::SubViewOp>()) {
    if (!loop->isAncestor(view))
      return std::nullopt;
    auto offsets = view.getMixedOffsets();
    auto at = llvm::find_if(offsets, [&](OpFoldResult o) {
      return llvm::dyn_cast_if_present<Value>(o) == iv;
    });
    if (at != offsets.end()) {
      // The row's elements are the base's innermost dim, unit stride.
      auto baseTy = cast<MemRefType>(view.getSource().getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (!loop.isDefinedOutsideOfLoop(view.getSource()) ||
          failed(baseTy.getStridesAndOffset(strides, offset)) ||
          strides.back() != 1 || view.getStaticSizes().back() != rowElems ||
          !llvm::all_of(view.getStaticStrides(),
                        [](int64_t s) { return s == 1; }))
        return std::nullopt;
      return RowRead{view, static_cast<unsigned>(at - offsets.begin()),
                     rowElems, elemBytes};
    }
    if (!llvm::all_of(view.getMixedOffsets(),
                      [](OpFoldResult o) { return isZeroInteger(o); }))
      return std::nullopt;
    src = view.getSource();
  }
  return std::nullopt;
}

struct PrefetchPanelsPass : kiln::impl::PrefetchPanelsBase<PrefetchPanelsPass> {
  using PrefetchPanelsBase::PrefetchPanelsBase;

  void runOnOperation() override {
    getOperation().walk([&](scf::ForOp loop) {
      // A register tile's k loop: its accumulators are carried vectors, and
      // its body is FMAs on rows of B, at least `minRows` of them (a
      // matrix-vector product's one row is bound by its loads already, and
      // a prefetch is one more load).
      if (loop.getNumRegionIterArgs() == 0 ||
          static_cast<int64_t>(llvm::range_size(
              loop.getBody()->getOps<vector::FMAOp>())) < minRows)
        return;
      auto lb = getConstantIntValue(loop.getLowerBound());
      auto ub = getConstantIntValue(loop.getUpperBound());
      auto step = getConstantIntValue(loop.getStep());
      if (!lb || !ub || !step || *step <= 0 || *ub - *lb < minTrips * *step)
        return;
      int64_t span = llvm::divideCeil(*ub - *lb, *step) * *step;
      Value iv = loop.getInductionVar();
      SmallVector<RowRead> rows;
      for (auto read : loop.getBody()->getOps<vector::TransferReadOp>())
        if (auto row = matchRowRead(read, iv, loop))
          rows.push_back(*row);
      for (RowRead &row : rows) {
        OpBuilder b(row.rowView);
        Location loc = row.rowView.getLoc();
        // One loop's length ahead: the same rows of the next k tile, or,
        // past the last one, of the next panel (packed panels are stored
        // one after the other). A prefetch never faults.
        Value ahead = arith::AddIOp::create(
            b, loc, iv, arith::ConstantIndexOp::create(b, loc, span));
        // Row `ahead` of the base, from column `offset + e` for each line.
        auto index = [&](OpFoldResult offset, int64_t e) -> Value {
          if (auto v = llvm::dyn_cast_if_present<Value>(offset))
            return e == 0 ? v
                          : arith::AddIOp::create(
                                b, loc, v,
                                arith::ConstantIndexOp::create(b, loc, e));
          return arith::ConstantIndexOp::create(
              b, loc, *getConstantIntValue(offset) + e);
        };
        SmallVector<OpFoldResult> offsets = row.rowView.getMixedOffsets();
        SmallVector<Value> indices;
        for (auto [pos, offset] : llvm::enumerate(offsets))
          indices.push_back(pos == row.ivPos ? ahead : index(offset, 0));
        int64_t lineElems = kLineBytes / row.elemBytes;
        for (int64_t e = 0; e < row.rowElems; e += lineElems) {
          if (e > 0)
            indices.back() = index(offsets.back(), e);
          memref::PrefetchOp::create(b, loc, row.rowView.getSource(), indices,
                                     /*isWrite=*/false, /*localityHint=*/2,
                                     /*isDataCache=*/true);
          ++numPrefetches;
        }
      }
    });
  }
};

} // namespace
