//===- PackWeights.cpp - constant matmul operands in panel order ----------===//
//
// A register tile of the matmul schedule reads, for each k, `tile-n`
// consecutive columns of B. In a row-major [K, N] weight those rows are N
// floats apart: with N = 1024 every k lands in the same L1 set (4 KiB
// stride), and a transposed weight has to be gathered. Weights are constant,
// so the reorder is free at run time: B becomes [N / panel, K, panel], one
// panel per `panel` columns, each read front to back by the k loop.
//
//===----------------------------------------------------------------------===//

#include "PackWeights.h"
#include "ScheduleUtils.h"

#include "kiln/IR/ConstantBlobs.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <tuple>

using namespace mlir;

Value kiln::throughReshapes(Value v, bool singleUse) {
  while (!singleUse || v.hasOneUse()) {
    if (auto e = v.getDefiningOp<tensor::ExpandShapeOp>())
      v = e.getSrc();
    else if (auto c = v.getDefiningOp<tensor::CollapseShapeOp>())
      v = c.getSrc();
    else
      break;
  }
  return v;
}

std::optional<kiln::ConstantFloats> kiln::constantFloats(Value v) {
  auto cst = throughReshapes(v).getDefiningOp<arith::ConstantOp>();
  if (!cst)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(cst.getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape())
    return std::nullopt;
  size_t count = type.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue())) {
    auto values = dense.getValues<float>();
    return ConstantFloats(std::vector<float>(values.begin(), values.end()));
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(cst.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != count * sizeof(float))
      return std::nullopt;
    const char *data = blob->getData().data();
    if (reinterpret_cast<uintptr_t>(data) % alignof(float) != 0) {
      std::vector<float> values(count);
      std::memcpy(values.data(), data, count * sizeof(float));
      return ConstantFloats(std::move(values));
    }
    return ConstantFloats(
        ArrayRef<float>(reinterpret_cast<const float *>(data), count));
  }
  return std::nullopt;
}

TypedAttr kiln::makeFloatConstant(ShapedType type, size_t count,
                                  function_ref<void(float *)> fill) {
  return kiln::makeConstantAttr(type, count * sizeof(float),
                                [&](MutableArrayRef<char> bytes) {
                                  // Blobs and vectors are allocated at least
                                  // 8-byte aligned.
                                  fill(reinterpret_cast<float *>(bytes.data()));
                                });
}

/// `generic` (a contraction reading B at (k, n) or (n, k) of a 2-D operand)
/// over `packedB` [panels, K, panel] instead, writing into `init` [...,
/// panels * panel] through a split of its last dimension: the n loop
/// becomes (panel, column in panel). Returns the result, collapsed back to
/// `init`'s type; `generic` itself is left in place.
static Value buildPanelGeneric(RewriterBase &rewriter,
                               linalg::GenericOp generic, unsigned nLoop,
                               unsigned kLoop, Value packedB, Value init,
                               int64_t panels, int64_t panel) {
  MLIRContext *ctx = generic.getContext();
  Location loc = generic.getLoc();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  AffineMap cMap = maps[2];
  // Loops: the n loop splits into (panel index, column in panel).
  unsigned numLoops = generic.getNumLoops();
  SmallVector<AffineExpr> remap;
  for (unsigned i = 0; i < numLoops; ++i)
    remap.push_back(d(i <= nLoop ? i : i + 1));
  AffineExpr panelDim = d(nLoop), columnDim = d(nLoop + 1);
  auto remapped = [&](AffineMap map) {
    return map.replaceDimsAndSymbols(remap, {}, numLoops + 1, 0);
  };
  AffineMap aNew = remapped(maps[0]);
  AffineExpr kNew = remap[kLoop];
  AffineMap bNew =
      AffineMap::get(numLoops + 1, 0, {panelDim, kNew, columnDim}, ctx);
  SmallVector<AffineExpr> cExprs;
  for (AffineExpr e : remapped(cMap).getResults().drop_back())
    cExprs.push_back(e);
  cExprs.push_back(panelDim);
  cExprs.push_back(columnDim);
  AffineMap cNew = AffineMap::get(numLoops + 1, 0, cExprs, ctx);
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  iterators.insert(iterators.begin() + nLoop + 1,
                   utils::IteratorType::parallel);

  auto initType = cast<RankedTensorType>(init.getType());
  SmallVector<int64_t> splitShape(initType.getShape().drop_back());
  splitShape.push_back(panels);
  splitShape.push_back(panel);
  SmallVector<ReassociationIndices> groups;
  for (int64_t i = 0; i + 1 < initType.getRank(); ++i)
    groups.push_back({i});
  groups.push_back({initType.getRank() - 1, initType.getRank()});
  auto splitType = RankedTensorType::get(splitShape, initType.getElementType());
  Value splitInit =
      tensor::ExpandShapeOp::create(rewriter, loc, splitType, init, groups);
  auto packedOp = linalg::GenericOp::create(
      rewriter, loc, TypeRange{splitType},
      ValueRange{generic.getDpsInputOperand(0)->get(), packedB},
      ValueRange{splitInit}, ArrayRef<AffineMap>{aNew, bNew, cNew}, iterators);
  rewriter.cloneRegionBefore(generic.getRegion(), packedOp.getRegion(),
                             packedOp.getRegion().begin());
  return tensor::CollapseShapeOp::create(rewriter, loc, initType,
                                         packedOp.getResult(0), groups);
}

/// Packs the right-hand side of `op` into [N / panel, K, panel]: at compile
/// time when it is a constant, else at run time when `minRuntimeRows` > 0
/// and the product is worth the copy (packRuntimeRhs).
static LogicalResult packRhs(RewriterBase &rewriter, linalg::LinalgOp op,
                             int64_t panel, int64_t minRuntimeRows) {
  if (panel < 1 || !op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.hasDynamicShape() ||
      !linalg::isaContractionOpInterface(op))
    return failure();
  FailureOr<linalg::ContractionDimensions> dims =
      linalg::inferContractionDims(op);
  if (failed(dims) || dims->m.empty() || dims->n.size() != 1 ||
      dims->k.size() != 1)
    return failure();
  unsigned nLoop = dims->n.front(), kLoop = dims->k.front();
  MLIRContext *ctx = op.getContext();
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap bMap = maps[1], cMap = maps[2];
  bool transposed;
  if (bMap.getNumResults() != 2)
    return failure();
  if (bMap.getResult(0) == d(kLoop) && bMap.getResult(1) == d(nLoop))
    transposed = false;
  else if (bMap.getResult(0) == d(nLoop) && bMap.getResult(1) == d(kLoop))
    transposed = true;
  else
    return failure();
  if (cMap.getNumResults() == 0 ||
      cMap.getResult(cMap.getNumResults() - 1) != d(nLoop))
    return failure();
  Value b = op.getDpsInputOperand(1)->get();
  auto bType = cast<RankedTensorType>(b.getType());
  int64_t k = bType.getDimSize(transposed ? 1 : 0);
  int64_t n = bType.getDimSize(transposed ? 0 : 1);
  bool wholePanels = n % panel == 0 && n >= 2 * panel;
  std::optional<kiln::ConstantFloats> values = kiln::constantFloats(b);
  // A constant with at least two whole panels and columns past them: the
  // whole panels are packed, the rest is a second contraction over a
  // row-major [K, rest] constant. Otherwise a partial width stays a plain
  // [K, N] (below) or as it is.
  int64_t panels = n / panel;
  bool split = !wholePanels && values && panels >= 2;
  if (!wholePanels && !split && !transposed)
    return failure();
  if (!values) {
    // At run time: only whole panels of a 2-D operand, only where each
    // element is reused by enough rows.
    int64_t rows = 1;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (unsigned m : dims->m)
      rows *= ranges[m];
    if (minRuntimeRows <= 0 || !wholePanels || rows < minRuntimeRows ||
        k * n < kiln::kMinRuntimePackElements || bType.getRank() != 2)
      return failure();
  }
  // The body must be plain f32 multiply-accumulate (already checked f32 by
  // the caller's match); generalize a named op to reuse its region.
  FailureOr<linalg::GenericOp> asGeneric = kiln::asGeneric(rewriter, op);
  if (failed(asGeneric))
    return failure();
  linalg::GenericOp generic = *asGeneric;

  auto valueAt = [&](int64_t kk, int64_t col) {
    return transposed ? (*values)[col * k + kk] : (*values)[kk * n + col];
  };
  // Columns [first, first + width) of the constant as a row-major
  // [K, width] one, and B's map read at (k, n).
  auto rowMajorColumns = [&](int64_t first, int64_t width) {
    auto type = RankedTensorType::get({k, width}, rewriter.getF32Type());
    TypedAttr attr = kiln::makeFloatConstant(type, k * width, [&](float *out) {
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < width; ++j)
          out[kk * width + j] = valueAt(kk, first + j);
    });
    return arith::ConstantOp::create(rewriter, generic.getLoc(), type, attr);
  };
  SmallVector<AffineMap> rowMajorMaps = maps;
  rowMajorMaps[1] =
      AffineMap::get(bMap.getNumDims(), 0, {d(kLoop), d(nLoop)}, ctx);

  // Columns that do not fill whole panels: a transposed weight is still
  // stored row-major [K, N], so a tile row is one contiguous load instead of
  // a gather (a Gemm weight of fewer than two panels with transB).
  if (!wholePanels && !split) {
    rewriter.setInsertionPoint(generic);
    Value plain = rowMajorColumns(0, n);
    rewriter.modifyOpInPlace(generic, [&] {
      generic.getDpsInputOperand(1)->set(plain);
      generic.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(rowMajorMaps));
    });
    return success();
  }

  // Panel order: packed[p][kk][j] = B[kk][p * panel + j].
  Location loc = generic.getLoc();
  rewriter.setInsertionPoint(generic);
  auto packedType =
      RankedTensorType::get({panels, k, panel}, rewriter.getF32Type());
  Value packedB;
  if (values) {
    TypedAttr packed = kiln::makeFloatConstant(
        packedType, panels * k * panel, [&](float *out) {
          for (int64_t p = 0; p < panels; ++p)
            for (int64_t kk = 0; kk < k; ++kk)
              for (int64_t j = 0; j < panel; ++j)
                out[(p * k + kk) * panel + j] = valueAt(kk, p * panel + j);
        });
    packedB = arith::ConstantOp::create(rewriter, loc, packedType, packed);
  } else {
    // [K, N] -> [K, panels, panel] -> [panels, K, panel] (whole rows of a
    // panel moved: vectorized as row copies), or [N, K] -> [panels, panel,
    // K] -> [panels, K, panel] (a transpose of the two innermost dims:
    // register blocks, kiln-vectorize-elementwise).
    SmallVector<int64_t> splitShape =
        transposed ? SmallVector<int64_t>{panels, panel, k}
                   : SmallVector<int64_t>{k, panels, panel};
    SmallVector<ReassociationIndices> split =
        transposed ? SmallVector<ReassociationIndices>{{0, 1}, {2}}
                   : SmallVector<ReassociationIndices>{{0}, {1, 2}};
    Value splitB = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get(splitShape, rewriter.getF32Type()),
        b, split);
    Value empty = tensor::EmptyOp::create(rewriter, loc, packedType.getShape(),
                                          rewriter.getF32Type());
    SmallVector<int64_t> perm = transposed ? SmallVector<int64_t>{0, 2, 1}
                                           : SmallVector<int64_t>{1, 0, 2};
    packedB = linalg::TransposeOp::create(rewriter, loc, splitB, empty, perm)
                  ->getResult(0);
  }

  Value init = generic.getDpsInitOperand(0)->get();
  if (!split) {
    rewriter.replaceOp(generic,
                       buildPanelGeneric(rewriter, generic, nLoop, kLoop,
                                         packedB, init, panels, panel));
    return success();
  }

  // Split at the last whole panel (a classifier's 1000 columns: 62 panels
  // of 16 and 8 more): each part writes its columns of the output through
  // an extract_slice/insert_slice pair, the second into the first's result,
  // so bufferization writes both in place. A fill as the output becomes one
  // fill per part, which each part's tiles then start from.
  int64_t whole = panels * panel, rest = n - whole;
  auto initType = cast<RankedTensorType>(init.getType());
  auto fill = init.getDefiningOp<linalg::FillOp>();
  Value dest = fill ? fill.getDpsInitOperand(0)->get() : init;
  // The output's columns [offset, offset + width): offsets, sizes, strides.
  auto columns = [&](int64_t offset, int64_t width) {
    SmallVector<OpFoldResult> offsets(initType.getRank(),
                                      rewriter.getIndexAttr(0));
    offsets.back() = rewriter.getIndexAttr(offset);
    SmallVector<OpFoldResult> sizes,
        strides(initType.getRank(), rewriter.getIndexAttr(1));
    for (int64_t size : initType.getShape().drop_back())
      sizes.push_back(rewriter.getIndexAttr(size));
    sizes.push_back(rewriter.getIndexAttr(width));
    return std::make_tuple(offsets, sizes, strides);
  };
  // A part's output: its columns of `from`, filled again when the output
  // was a fill.
  auto partInit = [&](Value from, int64_t offset, int64_t width) -> Value {
    auto [offsets, sizes, strides] = columns(offset, width);
    Value slice = tensor::ExtractSliceOp::create(rewriter, loc, from, offsets,
                                                 sizes, strides);
    if (!fill)
      return slice;
    return linalg::FillOp::create(rewriter, loc,
                                  ValueRange{fill.getDpsInputOperand(0)->get()},
                                  ValueRange{slice})
        .getResult(0);
  };
  auto insertPart = [&](Value part, Value into, int64_t offset,
                        int64_t width) -> Value {
    auto [offsets, sizes, strides] = columns(offset, width);
    return tensor::InsertSliceOp::create(rewriter, loc, part, into, offsets,
                                         sizes, strides);
  };
  // One op built per statement, so their order is the statements'.
  Value wholeInit = partInit(dest, 0, whole);
  Value wholeResult = buildPanelGeneric(rewriter, generic, nLoop, kLoop,
                                        packedB, wholeInit, panels, panel);
  Value withWhole = insertPart(wholeResult, dest, 0, whole);

  Value restB = rowMajorColumns(whole, rest);
  Value restInit = partInit(withWhole, whole, rest);
  auto restOp = linalg::GenericOp::create(
      rewriter, loc, TypeRange{restInit.getType()},
      ValueRange{generic.getDpsInputOperand(0)->get(), restB},
      ValueRange{restInit}, rowMajorMaps, generic.getIteratorTypesArray());
  rewriter.cloneRegionBefore(generic.getRegion(), restOp.getRegion(),
                             restOp.getRegion().begin());
  rewriter.replaceOp(generic,
                     insertPart(restOp.getResult(0), withWhole, whole, rest));
  return success();
}

LogicalResult kiln::packConstantRhs(RewriterBase &rewriter, linalg::LinalgOp op,
                                    int64_t panel) {
  return packRhs(rewriter, op, panel, /*minRuntimeRows=*/0);
}

LogicalResult kiln::packRuntimeRhs(RewriterBase &rewriter, linalg::LinalgOp op,
                                   int64_t panel, int64_t minRows) {
  if (minRows <= 0 || kiln::throughReshapes(op.getDpsInputs()[1])
                          .getDefiningOp<arith::ConstantOp>())
    return failure();
  return packRhs(rewriter, op, panel, minRows);
}
