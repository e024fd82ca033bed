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

//===----------------------------------------------------------------------===//
// Per-image chains: a kernel's ops whose only run-time size is the batch
//===----------------------------------------------------------------------===//

/// Whether `type` is a tensor whose only dynamic size is its first.
bool batchOnly(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || t.getRank() == 0 || !t.isDynamicDim(0))
    return false;
  for (int64_t d = 1; d < t.getRank(); ++d)
    if (t.isDynamicDim(d))
      return false;
  return true;
}

/// `type` with its first size `size`.
RankedTensorType withFirst(Type type, int64_t size) {
  auto t = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(t.getShape());
  shape[0] = size;
  return RankedTensorType::get(shape, t.getElementType());
}

/// Whether a reassociation keeps the first dimension in a group of its own.
bool firstAlone(ArrayRef<ReassociationIndices> groups) {
  return !groups.empty() && groups.front().size() == 1;
}

/// Whether `op` computes each image of a batch on its own: a linalg op
/// (not a contraction, whose rows the matmul split takes better) whose
/// only dynamic loop is parallel and is the first index of every operand
/// of run-time size, which no static operand reads; a pad that does not pad
/// the batch; a reshape that keeps it alone; a fill or an empty tensor.
bool perImage(Operation *op) {
  for (Type t : op->getResultTypes())
    if (!batchOnly(t))
      return false;
  if (auto empty = dyn_cast<tensor::EmptyOp>(op))
    return empty.getDynamicSizes().size() == 1;
  if (auto pad = dyn_cast<tensor::PadOp>(op))
    return pad.getLow().empty() && pad.getHigh().empty() &&
           pad.getStaticLow()[0] == 0 && pad.getStaticHigh()[0] == 0 &&
           batchOnly(pad.getSource().getType());
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return firstAlone(expand.getReassociationIndices()) &&
           batchOnly(expand.getSrc().getType());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return firstAlone(collapse.getReassociationIndices()) &&
           batchOnly(collapse.getSrc().getType());
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalgOp.hasIndexSemantics() || op->getNumResults() != 1 ||
      contractionLoops(linalgOp))
    return false;
  SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iters = linalgOp.getIteratorTypesArray();
  std::optional<unsigned> batch;
  for (unsigned l = 0; l < ranges.size(); ++l)
    if (ShapedType::isDynamic(ranges[l])) {
      if (batch || iters[l] != utils::IteratorType::parallel)
        return false;
      batch = l;
    }
  if (!batch)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    if (!batchOnly(operand.get().getType())) {
      if (map.isFunctionOfDim(*batch))
        return false;
      continue;
    }
    auto first = dyn_cast<AffineDimExpr>(map.getResult(0));
    if (!first || first.getPosition() != *batch)
      return false;
    for (unsigned r = 1; r < map.getNumResults(); ++r)
      if (map.getResult(r).isFunctionOfDim(*batch))
        return false;
  }
  return true;
}

/// A convolution (or pooling) generic of kiln-lower-to-linalg over more
/// output positions per image than ConvToMatmul computes as positions x
/// channels: [N, G, Mg, O...] with O... above 64.
bool largeWindowOp(Operation *op) {
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumReductionLoops() < 2 ||
      generic.getNumDpsInits() != 1)
    return false;
  auto out = cast<RankedTensorType>(generic.getDpsInits()[0].getType());
  if (out.getRank() < 4)
    return false;
  int64_t positions = 1;
  for (int64_t d = 3; d < out.getRank(); ++d)
    positions *= out.getDimSize(d);
  return positions > 64;
}

/// Runs the per-image chain that ends in `last` (ops of one kernel whose
/// results only the chain reads) once per image: an scf.for over the batch
/// whose body is the chain on one image's slices, with static shapes, so
/// that the schedules see what a batch-1 compile gives them (a convolution
/// reading its padded input as shifted rows, its bias and activation in its
/// tiles). Returns the loop; null when there is no chain of two ops or
/// more.
Operation *runPerImage(RewriterBase &rewriter, Operation *last,
                       const DenseMap<Operation *, unsigned> &kernelOf) {
  if (!perImage(last) || last->getNumResults() != 1)
    return nullptr;
  // The chain: producers of one kernel, all of whose users are in it
  // (tensor.dim of the batch aside).
  llvm::SetVector<Operation *> chain;
  chain.insert(last);
  SmallVector<Operation *> work = {last};
  unsigned kernel = kernelOf.lookup(last);
  auto onlyChainReads = [&](Operation *op) {
    for (Operation *user : op->getUsers())
      if (!chain.contains(user) && !isa<tensor::DimOp>(user))
        return false;
    return true;
  };
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands()) {
      Operation *producer = v.getDefiningOp();
      if (!producer || chain.contains(producer) ||
          producer->getBlock() != last->getBlock() ||
          kernelOf.lookup(producer) != kernel || !perImage(producer) ||
          !onlyChainReads(producer))
        continue;
      chain.insert(producer);
      work.push_back(producer);
    }
  }
  // A tensor.dim of a chain value may only serve the chain (a reshape's
  // output sizes, which the static copies do not need): it goes with it.
  SmallVector<Operation *> dims;
  for (Operation *op : chain) {
    if (op == last)
      continue;
    for (Operation *user : op->getUsers())
      if (!chain.contains(user)) {
        for (Operation *reader : user->getUsers())
          if (!chain.contains(reader))
            return nullptr;
        dims.push_back(user);
      }
  }
  // Worth it where a convolution over a large image is in the chain: per
  // image it reads its padded input as shifted rows and takes its
  // epilogue into its tiles, as a static compile does. Small images are
  // better as one positions x channels matmul over the whole batch, and
  // other chains gain nothing over tiling each op by one.
  if (chain.size() < 2 || !llvm::any_of(chain, largeWindowOp))
    return nullptr;
  // The batch's extent: of an input from outside the chain (the
  // convolution's input at least).
  Location loc = last->getLoc();
  Value outside;
  for (Operation *op : chain)
    for (Value v : op->getOperands())
      if (!chain.contains(v.getDefiningOp()) && batchOnly(v.getType()))
        outside = v;
  if (!outside)
    return nullptr;
  SmallVector<Operation *> ordered(chain.begin(), chain.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  rewriter.setInsertionPoint(last);
  Value extent = tensor::DimOp::create(rewriter, loc, outside, 0);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto resultType = cast<RankedTensorType>(last->getResult(0).getType());
  Value init =
      tensor::EmptyOp::create(rewriter, loc, resultType.getShape(),
                              resultType.getElementType(), ValueRange{extent});
  auto loop = scf::ForOp::create(
      rewriter, loc, zero, extent, one, ValueRange{init},
      [&](OpBuilder &b, Location, Value image, ValueRange carried) {
        IRMapping map;
        // One image of a value from outside the chain.
        auto imageOf = [&](Value v) -> Value {
          if (Value mapped = map.lookupOrNull(v))
            return mapped;
          if (!batchOnly(v.getType()))
            return v;
          auto type = cast<RankedTensorType>(v.getType());
          SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
              sizes, strides(type.getRank(), b.getIndexAttr(1));
          offsets[0] = image;
          for (int64_t d = 0; d < type.getRank(); ++d)
            sizes.push_back(b.getIndexAttr(d ? type.getDimSize(d) : 1));
          Value slice = tensor::ExtractSliceOp::create(
              b, loc, withFirst(type, 1), v, offsets, sizes, strides);
          map.map(v, slice);
          return slice;
        };
        for (Operation *op : ordered) {
          Value result;
          Type type = withFirst(op->getResult(0).getType(), 1);
          if (isa<tensor::EmptyOp>(op)) {
            auto t = cast<RankedTensorType>(type);
            result = tensor::EmptyOp::create(b, op->getLoc(), t.getShape(),
                                             t.getElementType());
          } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
            result = tensor::ExpandShapeOp::create(
                b, op->getLoc(), type, imageOf(expand.getSrc()),
                expand.getReassociationIndices());
          } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
            result = tensor::CollapseShapeOp::create(
                b, op->getLoc(), type, imageOf(collapse.getSrc()),
                collapse.getReassociationIndices());
          } else {
            for (Value v : op->getOperands())
              imageOf(v);
            Operation *copy = b.clone(*op, map);
            copy->getResult(0).setType(type);
            result = copy->getResult(0);
          }
          map.map(op->getResult(0), result);
        }
        Value image1 = map.lookup(last->getResult(0));
        auto type = cast<RankedTensorType>(image1.getType());
        SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0)),
            sizes, strides(type.getRank(), b.getIndexAttr(1));
        offsets[0] = image;
        for (int64_t d = 0; d < type.getRank(); ++d)
          sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
        scf::YieldOp::create(
            b, loc,
            tensor::InsertSliceOp::create(b, loc, image1, carried.front(),
                                          offsets, sizes, strides)
                .getResult());
      });
  rewriter.replaceAllUsesWith(last->getResult(0), loop.getResult(0));
  for (Operation *op : llvm::reverse(ordered)) {
    for (Operation *user : llvm::make_early_inc_range(op->getUsers()))
      if (llvm::is_contained(dims, user))
        rewriter.eraseOp(user);
    rewriter.eraseOp(op);
  }
  return loop;
}

struct TileDynamicSizes : kiln::impl::TileDynamicSizesBase<TileDynamicSizes> {
  using Base::Base;

  /// Built once, for every function this pass runs on.
  FrozenRewritePatternSet canonicalization;

  LogicalResult initialize(MLIRContext *ctx) override {
    canonicalization = kiln::canonicalizationPatterns(ctx);
    return success();
  }

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
    IRRewriter rewriter(&getContext());
    bool perImageChains = false;
    // Per-image chains first, from each kernel's last op back.
    if (!func.isExternal()) {
      DenseMap<Operation *, unsigned> kernelOf;
      unsigned kernel = 0;
      Block &body = func.getBody().front();
      for (Operation &op : body) {
        if (auto call = dyn_cast<func::CallOp>(op);
            call && call.getCallee() == kiln::kKernelProbe)
          ++kernel;
        kernelOf[&op] = kernel;
      }
      // The ops a chain takes are before its last one, so the walk goes on
      // before the loop that replaced them.
      for (Operation *op = body.empty() ? nullptr : &body.back(); op;) {
        if (Operation *loop = runPerImage(rewriter, op, kernelOf)) {
          ++numPerImage;
          perImageChains = true;
          op = loop->getPrevNode();
        } else {
          op = op->getPrevNode();
        }
      }
    }
    SmallVector<linalg::LinalgOp> worklist;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureTensorSemantics() && op.hasDynamicShape() &&
          isa<TilingInterface>(op.getOperation()))
        worklist.push_back(op);
    });
    bool changed = !worklist.empty() || perImageChains;
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
    if (changed && failed(kiln::canonicalizeFunction(func, canonicalization)))
      signalPassFailure();
  }
};

} // namespace
