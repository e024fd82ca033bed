//===- OnnxOpsIndex.cpp - GatherND, CumSum, Scatter*, TopK ----------------===//
//
// Indexing ops that read or write data at run-time positions. GatherND and
// CumSum decompose into core ops (gather, mul, reduce_sum, slice, concat,
// add); ScatterElements/ScatterND and TopK need a core op each
// (kiln.scatter, kiln.topk) because their decompositions would be wrong for
// duplicates or quadratic in size.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// Checks that input `i` holds int32 or int64 values (`what` names them) and
/// returns them as i64.
FailureOr<Value> indicesAsI64(NodeImporter &n, size_t i,
                              StringRef what = "indices") {
  auto t = n.inputType(i);
  Type elt = t.getElementType();
  if (!elt.isSignlessInteger(32) && !elt.isSignlessInteger(64)) {
    n.error() << what << " must be int32 or int64, found " << elt;
    return failure();
  }
  if (elt.isSignlessInteger(64))
    return n.input(i);
  auto i64Ty = RankedTensorType::get(t.getShape(), n.b.getI64Type());
  return Value(CastOp::create(n.b, n.loc, i64Ty, n.input(i)));
}

/// `idx` (i64) with negative entries wrapped by `dims` (which broadcasts
/// against it) and the rest clamped to [0, dims - 1], so later reads and
/// writes never leave the data. ONNX makes out-of-range indices an error;
/// kiln clamps them rather than checking at run time.
FailureOr<Value> normalizeIndices(NodeImporter &n, Value idx, Value dims) {
  Type i64 = n.b.getI64Type();
  Value zero = n.scalar(i64, 0.0);
  Value one = n.scalar(i64, 1.0);
  Value negative = CmpOp::create(n.b, n.loc, CmpPredicate::lt, idx, zero);
  KILN_TRY(wrapped, n.binary<AddOp>(idx, dims));
  Value positive = SelectOp::create(n.b, n.loc, negative, wrapped, idx);
  KILN_TRY(last, n.binary<SubOp>(dims, one));
  KILN_TRY(upper, n.binary<MinOp>(positive, last));
  return n.binary<MaxOp>(upper, zero);
}

//===----------------------------------------------------------------------===//
// GatherND
//===----------------------------------------------------------------------===//

/// GatherND: each index tuple `indices[b..., i..., :]` (k entries) selects
/// `data[b..., t_0, .., t_{k-1}, ...]`. Decomposed: the tuples become flat
/// positions into `data` reshaped to `[B * M, rest...]` (B the product of the
/// batch dims, M that of the k indexed dims) by multiplying with a constant
/// stride vector and summing over the last axis, plus a constant batch
/// offset; then one kiln.gather along axis 0.
LogicalResult importGatherND(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(batchAttr, n.getInt("batch_dims"));
  int64_t batchDims = batchAttr.value_or(0);
  auto dt = n.inputType(0), it = n.inputType(1);
  int64_t r = dt.getRank(), q = it.getRank();
  if (r < 1 || q < 1) {
    n.error() << "data and indices must have rank 1 or more, found " << dt
              << " and " << it;
    return failure();
  }
  if (batchDims < 0 || batchDims >= std::min(r, q)) {
    n.error() << "batch_dims must be in [0, " << std::min(r, q) << "), found "
              << batchDims;
    return failure();
  }
  int64_t k = it.getShape().back();
  if (k < 1 || k > r - batchDims) {
    n.error() << "the last indices dimension must be in [1, " << r - batchDims
              << "], found " << k;
    return failure();
  }
  for (int64_t d = 0; d < batchDims; ++d)
    if (it.getDimSize(d) != dt.getDimSize(d)) {
      n.error() << "batch dimension " << d << " differs: data has "
                << dt.getDimSize(d) << ", indices " << it.getDimSize(d);
      return failure();
    }
  // Indices of symbolic sizes (the positions a NonZero found) gather from
  // data of static sizes.
  if (anySymbolicDims(dt) || (anySymbolicDims(it) && batchDims > 0)) {
    n.error() << "symbolic sizes are supported in the indices only, without "
                 "batch_dims; found data "
              << dimsString(dimExprs(dt)) << " and indices "
              << dimsString(dimExprs(it));
    return failure();
  }
  ArrayRef<int64_t> indexed = dt.getShape().slice(batchDims, k);
  ArrayRef<int64_t> rest = dt.getShape().drop_front(batchDims + k);
  int64_t batch = product(dt.getShape().take_front(batchDims));
  int64_t tuples = product(indexed);
  if (tuples == 0 && it.getNumElements() > 0) {
    n.error() << "cannot gather from data " << dt << " with no elements";
    return failure();
  }
  KILN_TRY(idx, indicesAsI64(n, 1));
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * indexed[j + 1];
  Value dims = i64Constant(n, indexed, {k});
  KILN_TRY(normalized, normalizeIndices(n, idx, dims));
  Value strideVec = i64Constant(n, strides, {k});
  KILN_TRY(scaled, n.binary<MulOp>(normalized, strideVec));
  SmallVector<int64_t> positionsShape(it.getShape().drop_back());
  SmallVector<DimExpr> positionsSizes = dimExprs(it);
  positionsSizes.pop_back();
  auto positionsTy =
      symbolicTensorType(positionsShape, positionsSizes, n.b.getI64Type());
  Value positions =
      ReduceSumOp::create(n.b, n.loc, positionsTy, scaled,
                          n.b.getDenseI64ArrayAttr({q - 1}), UnitAttr());
  if (batchDims > 0 && batch > 1) {
    // positions[b..., i...] += linear(b...) * M
    int64_t perBatch = product(positionsShape) / batch;
    Value flat = n.reshape(positions, {batch, perBatch});
    SmallVector<int64_t> offsets;
    for (int64_t bi = 0; bi < batch; ++bi)
      offsets.push_back(bi * tuples);
    Value offsetVec = i64Constant(n, offsets, {batch, 1});
    KILN_TRY(shifted, n.binary<AddOp>(flat, offsetVec));
    positions = n.reshape(shifted, positionsShape);
  }
  SmallVector<int64_t> flatShape = {batch * tuples};
  llvm::append_range(flatShape, rest);
  Value flatData = n.reshape(n.input(0), flatShape);
  n.setResult(0, GatherOp::create(n.b, n.loc, flatData, positions, 0));
  return success();
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// A constant of `type` filled with zeros.
Value zeros(NodeImporter &n, RankedTensorType type) {
  Type elt = type.getElementType();
  Attribute zero = isa<FloatType>(elt) ? Attribute(n.b.getFloatAttr(elt, 0.0))
                                       : Attribute(n.b.getIntegerAttr(elt, 0));
  return ConstantOp::create(
      n.b, n.loc, type, cast<ElementsAttr>(DenseElementsAttr::get(type, zero)));
}

/// `y` moved by `s` positions along `axis` (towards higher indices, or lower
/// ones when `reverse`), the vacated positions filled with zeros.
Value shiftAlong(NodeImporter &n, Value y, int64_t axis, int64_t s,
                 bool reverse) {
  auto t = typeOf(y);
  int64_t size = t.getDimSize(axis);
  SmallVector<int64_t> keptShape(t.getShape()), padShape(t.getShape());
  keptShape[axis] = size - s;
  padShape[axis] = s;
  SmallVector<int64_t> starts(t.getRank(), 0), steps(t.getRank(), 1);
  if (reverse)
    starts[axis] = s;
  auto keptTy = RankedTensorType::get(keptShape, t.getElementType());
  Value kept =
      SliceOp::create(n.b, n.loc, keptTy, y, n.b.getDenseI64ArrayAttr(starts),
                      n.b.getDenseI64ArrayAttr(steps));
  Value pad = zeros(n, RankedTensorType::get(padShape, t.getElementType()));
  SmallVector<Value> parts =
      reverse ? SmallVector<Value>{kept, pad} : SmallVector<Value>{pad, kept};
  return ConcatOp::create(n.b, n.loc, parts, axis);
}

/// The inclusive (or exclusive) scan of `x` along `axis`.
FailureOr<Value> scanAlong(NodeImporter &n, Value x, int64_t axis,
                           bool exclusive, bool reverse) {
  int64_t size = typeOf(x).getDimSize(axis);
  Value y = x;
  if (exclusive && size > 0)
    y = shiftAlong(n, y, axis, 1, reverse);
  for (int64_t s = 1; s < size; s *= 2) {
    Value shifted = shiftAlong(n, y, axis, s, reverse);
    KILN_TRY(sum, n.binary<AddOp>(y, shifted));
    y = sum;
  }
  return y;
}

/// CumSum as a log-step (Hillis-Steele) scan: y += shift(y, 1), then 2, 4,
/// ... along the axis, ceil(log2(n)) steps of slice + concat + add. Chosen
/// over a product with a constant triangular 0/1 matrix because it is exact
/// and works the same for every numeric type, and an n x n matrix per axis
/// grows quadratically and does n / log(n) times the work. `exclusive`
/// shifts the input by one first; `reverse` shifts the other way.
///
/// The axis does not decide the result's shape, so it may be a run-time
/// value: then every axis is scanned and a select keeps the one the axis
/// names (counting negative axes from the end). A run-time axis outside
/// [-rank, rank) gives the scan along the last axis (ONNX makes it an
/// error; kiln does not check at run time).
LogicalResult importCumSum(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(exclusiveAttr, n.getInt("exclusive"));
  KILN_TRY(reverseAttr, n.getInt("reverse"));
  auto xt = n.inputType(0), at = n.inputType(1);
  Type elt = xt.getElementType();
  if (elt.isInteger(1) || !(isa<FloatType>(elt) || isa<IntegerType>(elt))) {
    n.error() << "expected a numeric input, found " << elt;
    return failure();
  }
  if (at.getNumElements() != 1 || at.getRank() > 1) {
    n.error() << "axis must be a scalar, found " << at;
    return failure();
  }
  int64_t rank = xt.getRank();
  if (rank == 0) {
    n.error() << "input must have rank 1 or more, found " << xt;
    return failure();
  }
  bool exclusive = exclusiveAttr.value_or(0) != 0;
  bool reverse = reverseAttr.value_or(0) != 0;
  if (n.constantValue(1)) {
    KILN_TRY(axisValues, n.constantInts(1, "axis"));
    KILN_TRY(axis, n.normalizeAxis(axisValues.front(), rank));
    KILN_TRY(y, scanAlong(n, n.input(0), axis, exclusive, reverse));
    n.setResult(0, y);
    return success();
  }
  KILN_TRY(axisValue, indicesAsI64(n, 1, "axis"));
  Value axis = n.reshape(axisValue, {});
  KILN_TRY(result, scanAlong(n, n.input(0), rank - 1, exclusive, reverse));
  Type i64 = n.b.getI64Type();
  for (int64_t d = rank - 2; d >= 0; --d) {
    KILN_TRY(scan, scanAlong(n, n.input(0), d, exclusive, reverse));
    Value positive = n.scalar(i64, static_cast<double>(d));
    Value negative = n.scalar(i64, static_cast<double>(d - rank));
    Value isPositive =
        CmpOp::create(n.b, n.loc, CmpPredicate::eq, axis, positive);
    Value isNegative =
        CmpOp::create(n.b, n.loc, CmpPredicate::eq, axis, negative);
    Value chosen = OrOp::create(n.b, n.loc, isPositive, isNegative);
    result = SelectOp::create(n.b, n.loc, chosen, scan, result);
  }
  n.setResult(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterElements, ScatterND
//===----------------------------------------------------------------------===//

/// `idx` (i64) with negative entries wrapped by `dims` (which broadcasts
/// against it) and entries still outside [0, dims) replaced by `sentinel`,
/// a value that makes the flat position computed from them out of range, so
/// kiln.scatter skips that update. ONNX makes such indices an error; kiln
/// does not check at run time but never writes out of bounds.
FailureOr<Value> wrapOrSentinel(NodeImporter &n, Value idx, Value dims,
                                int64_t sentinel) {
  Type i64 = n.b.getI64Type();
  Value zero = n.scalar(i64, 0.0);
  Value negative = CmpOp::create(n.b, n.loc, CmpPredicate::lt, idx, zero);
  KILN_TRY(shifted, n.binary<AddOp>(idx, dims));
  Value wrapped = SelectOp::create(n.b, n.loc, negative, shifted, idx);
  Value tooLow = CmpOp::create(n.b, n.loc, CmpPredicate::lt, wrapped, zero);
  Value tooHigh = CmpOp::create(n.b, n.loc, CmpPredicate::ge, wrapped, dims);
  Value bad = OrOp::create(n.b, n.loc, tooLow, tooHigh);
  Value replacement = n.scalar(i64, static_cast<double>(sentinel));
  return Value(SelectOp::create(n.b, n.loc, bad, replacement, wrapped));
}

/// The `reduction` attribute of ScatterElements/ScatterND (opset 16+).
FailureOr<ScatterReduction> scatterReduction(NodeImporter &n, Type elt) {
  KILN_TRY(name, n.getString("reduction", "none"));
  std::optional<ScatterReduction> r = symbolizeScatterReduction(name);
  if (!r) {
    n.error() << "reduction must be none, add, mul, max or min, found '" << name
              << "'";
    return failure();
  }
  if (*r != ScatterReduction::none && elt.isInteger(1)) {
    n.error() << "reduction " << name << " is not supported on bool data";
    return failure();
  }
  return *r;
}

/// Checks the updates input (2) has `shape` and the data's element type.
LogicalResult checkUpdates(NodeImporter &n, ArrayRef<int64_t> shape) {
  auto ut = n.inputType(2), dt = n.inputType(0);
  if (ut.getElementType() != dt.getElementType()) {
    n.error() << "updates must have the data's element type "
              << dt.getElementType() << ", found " << ut.getElementType();
    return failure();
  }
  if (ut.getShape() != shape) {
    n.error() << "updates must have shape "
              << RankedTensorType::get(shape, ut.getElementType()) << ", found "
              << ut;
    return failure();
  }
  return success();
}

/// Scatters flat `updates` into the flattened data at flat `positions` and
/// reshapes the result back.
void finishScatter(NodeImporter &n, ScatterReduction reduction, Value positions,
                   int64_t count) {
  auto dt = n.inputType(0);
  Value flatData = n.reshape(n.input(0), {dt.getNumElements()});
  Value flatPositions = n.reshape(positions, {count});
  Value flatUpdates = n.reshape(n.input(2), {count});
  Value scattered = ScatterOp::create(n.b, n.loc, flatData.getType(), reduction,
                                      flatData, flatPositions, flatUpdates);
  n.setResult(0, n.reshape(scattered, dt.getShape()));
}

/// ScatterElements (and the older Scatter): `result[.., indices[i...], ..]
/// (along axis) = updates[i...]`. Flat positions are computed like
/// GatherElements': the update's own coordinates times the data's strides,
/// with the axis coordinate read from `indices`.
LogicalResult importScatterElements(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto dt = n.inputType(0), it = n.inputType(1);
  KILN_TRY(reduction, scatterReduction(n, dt.getElementType()));
  int64_t rank = dt.getRank();
  if (rank == 0) {
    n.error() << "data must have rank 1 or more, found " << dt;
    return failure();
  }
  if (it.getRank() != rank) {
    n.error() << "indices must have the data's rank " << rank << ", found "
              << it;
    return failure();
  }
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(0), rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && it.getDimSize(d) > dt.getDimSize(d)) {
      n.error() << "indices dimension " << d << " (" << it.getDimSize(d)
                << ") exceeds the data's (" << dt.getDimSize(d) << ")";
      return failure();
    }
  if (failed(checkUpdates(n, it.getShape())))
    return failure();
  KILN_TRY(idx, indicesAsI64(n, 1));
  Type i64 = n.b.getI64Type();
  int64_t total = dt.getNumElements();
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dt.getDimSize(d + 1);
  Value dim = n.scalar(i64, static_cast<double>(dt.getDimSize(axis)));
  KILN_TRY(wrapped, wrapOrSentinel(n, idx, dim, total));
  Value axisStride = n.scalar(i64, static_cast<double>(strides[axis]));
  KILN_TRY(linear, n.binary<MulOp>(wrapped, axisStride));
  ArrayRef<int64_t> ishape = it.getShape();
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || ishape[d] == 1)
      continue;
    SmallVector<int64_t> rampShape(rank, 1), values;
    rampShape[d] = ishape[d];
    for (int64_t c = 0; c < ishape[d]; ++c)
      values.push_back(c * strides[d]);
    Value ramp = i64Constant(n, values, rampShape);
    KILN_TRY(sum, n.binary<AddOp>(linear, ramp));
    linear = sum;
  }
  finishScatter(n, reduction, linear, it.getNumElements());
  return success();
}

/// ScatterND: `result[indices[t, :], ...] = updates[t, ...]` for each index
/// tuple t (k entries) and the slice of data it selects. The tuples become
/// flat slice numbers (times a constant stride vector, summed), the slices'
/// elements flat positions (slice number * slice size + a constant ramp).
LogicalResult importScatterND(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  auto dt = n.inputType(0), it = n.inputType(1);
  KILN_TRY(reduction, scatterReduction(n, dt.getElementType()));
  int64_t r = dt.getRank(), q = it.getRank();
  if (r < 1 || q < 1) {
    n.error() << "data and indices must have rank 1 or more, found " << dt
              << " and " << it;
    return failure();
  }
  int64_t k = it.getShape().back();
  if (k < 1 || k > r) {
    n.error() << "the last indices dimension must be in [1, " << r
              << "], found " << k;
    return failure();
  }
  SmallVector<int64_t> updatesShape(it.getShape().drop_back());
  llvm::append_range(updatesShape, dt.getShape().drop_front(k));
  if (failed(checkUpdates(n, updatesShape)))
    return failure();
  ArrayRef<int64_t> indexed = dt.getShape().take_front(k);
  int64_t slices = product(indexed);
  int64_t sliceSize = product(dt.getShape().drop_front(k));
  int64_t tuples = product(it.getShape().drop_back());
  KILN_TRY(idx, indicesAsI64(n, 1));
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * indexed[j + 1];
  Value dims = i64Constant(n, indexed, {k});
  KILN_TRY(wrapped, wrapOrSentinel(n, idx, dims, slices));
  Value strideVec = i64Constant(n, strides, {k});
  KILN_TRY(scaled, n.binary<MulOp>(wrapped, strideVec));
  Value flatScaled = n.reshape(scaled, {tuples, k});
  auto sliceTy = RankedTensorType::get({tuples, 1}, n.b.getI64Type());
  Value sliceNumbers =
      ReduceSumOp::create(n.b, n.loc, sliceTy, flatScaled,
                          n.b.getDenseI64ArrayAttr({1}), n.b.getUnitAttr());
  Value positions = sliceNumbers;
  if (sliceSize != 1) {
    Value size = n.scalar(n.b.getI64Type(), static_cast<double>(sliceSize));
    KILN_TRY(starts, n.binary<MulOp>(sliceNumbers, size));
    SmallVector<int64_t> offsets;
    for (int64_t s = 0; s < sliceSize; ++s)
      offsets.push_back(s);
    Value ramp = i64Constant(n, offsets, {1, sliceSize});
    KILN_TRY(elements, n.binary<AddOp>(starts, ramp));
    positions = elements;
  }
  finishScatter(n, reduction, positions, tuples * sliceSize);
  return success();
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

/// TopK: moves the axis last, flattens the rest into rows, takes kiln.topk
/// of the [rows, n] matrix and undoes the reshape and transpose on both
/// outputs. The outputs are always sorted (any order is allowed when
/// sorted=0).
LogicalResult importTopK(NodeImporter &n) {
  size_t numInputs = n.opset >= 10 ? 2 : 1;
  if (failed(n.expectInputs(numInputs, numInputs)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(largestAttr, n.getInt("largest"));
  KILN_TRY(sortedAttr, n.getInt("sorted"));
  (void)sortedAttr;
  auto xt = n.inputType(0);
  Type elt = xt.getElementType();
  if (elt.isInteger(1) || !(isa<FloatType>(elt) || isa<IntegerType>(elt))) {
    n.error() << "expected a numeric input, found " << elt;
    return failure();
  }
  int64_t rank = xt.getRank();
  if (rank == 0) {
    n.error() << "input must have rank 1 or more, found " << xt;
    return failure();
  }
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(-1), rank));
  int64_t size = xt.getDimSize(axis);
  int64_t k;
  // A k known only at run time chooses up to the axis' size: the results'
  // size along the axis is a computed symbol (decision 0031).
  Value kValue;
  std::string count;
  if (n.opset >= 10) {
    if (n.inputType(1).getNumElements() != 1) {
      n.error() << "k must have one element, found " << n.inputType(1);
      return failure();
    }
    if (n.constantValue(1)) {
      KILN_TRY(kValues, n.constantInts(1, "k"));
      k = kValues.front();
    } else {
      if (!n.inputType(1).getElementType().isInteger(64)) {
        n.error() << "a k known only at run time must be an int64 tensor, "
                     "found "
                  << n.inputType(1);
        return failure();
      }
      kValue = n.input(1);
      k = size;
      llvm::StringRef base =
          !n.node.name().empty() ? n.node.name() : n.node.output(0);
      count = n.shapeValues->newComputedSymbol(
          (base.empty() ? "TopK" : base.str()) + ".k", size);
    }
  } else {
    KILN_TRY(kAttr, n.getInt("k"));
    if (!kAttr) {
      n.error() << "the k attribute is required";
      return failure();
    }
    k = *kAttr;
  }
  // Over a symbolic input (a size computed from data, or --dim), only a k
  // known at run time: it is clamped to the axis' size as the run finds it.
  if (anySymbolicDims(xt) && count.empty()) {
    n.error() << "a constant k over an input of symbolic sizes "
              << dimsString(dimExprs(xt))
              << " is not supported; pass k as a tensor";
    return failure();
  }
  if (k < 0 || k > size) {
    n.error() << "k must be in [0, " << size << "] (the axis size), found "
              << k;
    return failure();
  }
  // [..., n, ...] -> [..., ..., n] -> [rows, n]
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  bool moved = axis != rank - 1;
  Value x = moved ? n.transpose(n.input(0), perm) : n.input(0);
  SmallVector<int64_t> movedShape(typeOf(x).getShape());
  SmallVector<DimExpr> movedSizes = dimExprs(typeOf(x));
  int64_t rows = product(ArrayRef<int64_t>(movedShape).drop_back());
  DimExpr rowSizes = DimExpr::constant(1);
  for (const DimExpr &e : ArrayRef<DimExpr>(movedSizes).drop_back())
    rowSizes = rowSizes * e;
  Value matrix = n.reshape(x, {rows, size}, {rowSizes, movedSizes.back()});
  auto topk =
      TopKOp::create(n.b, n.loc, matrix, kValue, k,
                     count.empty() ? StringAttr() : n.b.getStringAttr(count),
                     largestAttr.value_or(1) == 0);
  movedShape.back() = k;
  movedSizes.back() =
      count.empty() ? DimExpr::constant(k) : DimExpr::symbol(count);
  SmallVector<int64_t> inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  for (unsigned i = 0; i < 2; ++i) {
    Value out = n.reshape(topk.getResult(i), movedShape, movedSizes);
    n.setResult(i, moved ? n.transpose(out, inverse) : out);
  }
  return success();
}

/// A one-element tensor of `elt` holding `value` (an absent input's
/// default).
Value i64OrScalar(NodeImporter &n, Type elt, double value) {
  if (elt.isInteger(64))
    return i64Constant(n, {static_cast<int64_t>(value)}, {1});
  return n.reshape(n.scalar(elt, value), {1});
}

/// NonZero: the indices of the non-zero elements, [rank, count], where
/// count is a size computed from the data (decision 0031): a new symbol,
/// bounded by the input's element count.
LogicalResult importNonZero(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  auto xt = n.inputType(0);
  if (xt.getRank() == 0) {
    n.error() << "input must have rank 1 or more, found " << xt;
    return failure();
  }
  llvm::StringRef base =
      !n.node.name().empty() ? n.node.name() : n.node.output(0);
  std::string symbol = n.shapeValues->newComputedSymbol(
      (base.empty() ? "NonZero" : base.str()) + ".count", xt.getNumElements());
  RankedTensorType type = symbolicTensorType(
      {xt.getRank(), xt.getNumElements()},
      {DimExpr::constant(xt.getRank()), DimExpr::symbol(symbol)},
      n.b.getI64Type());
  n.setResult(0, NonZeroOp::create(n.b, n.loc, type, n.input(0),
                                   n.b.getStringAttr(symbol)));
  return success();
}

/// NonMaxSuppression: [count, 3] selections, count a size computed from
/// the data (decision 0031), bounded by B x C x min(N, max_output) when
/// max_output is a constant and by B x C x N otherwise.
LogicalResult importNonMaxSuppression(NodeImporter &n) {
  if (failed(n.expectInputs(2, 5)))
    return failure();
  KILN_TRY(centerAttr, n.getInt("center_point_box"));
  auto boxesTy = n.inputType(0), scoresTy = n.inputType(1);
  if (boxesTy.getRank() != 3 || boxesTy.getDimSize(2) != 4 ||
      scoresTy.getRank() != 3 ||
      scoresTy.getDimSize(0) != boxesTy.getDimSize(0) ||
      scoresTy.getDimSize(2) != boxesTy.getDimSize(1) ||
      !isa<FloatType>(boxesTy.getElementType()) ||
      scoresTy.getElementType() != boxesTy.getElementType()) {
    n.error() << "expected boxes [B, N, 4] and scores [B, C, N] of one "
                 "float type, found "
              << boxesTy << " and " << scoresTy;
    return failure();
  }
  // The number of boxes may be symbolic (what TopKs of computed sizes
  // concatenated leave); batches and classes are static.
  SmallVector<DimExpr> boxSizes = dimExprs(boxesTy),
                       scoreSizes = dimExprs(scoresTy);
  if (!boxSizes[0].getConstant() || !scoreSizes[1].getConstant() ||
      boxSizes[1] != scoreSizes[2]) {
    n.error() << "boxes and scores must have static batches and classes and "
                 "the same number of boxes, found "
              << dimsString(boxSizes) << " and " << dimsString(scoreSizes);
    return failure();
  }
  Type f = boxesTy.getElementType();
  int64_t batches = boxesTy.getDimSize(0), classes = scoresTy.getDimSize(1),
          numBoxes = boxesTy.getDimSize(1);
  // A one-element input, or its default.
  auto oneElement = [&](size_t i, Type elt, double fallback,
                        const char *what) -> FailureOr<Value> {
    if (!n.hasInput(i))
      return i64OrScalar(n, elt, fallback);
    auto t = n.inputType(i);
    if (t.getNumElements() != 1 || t.getElementType() != elt) {
      n.error() << what << " must be one " << elt << ", found " << t;
      return failure();
    }
    return n.input(i);
  };
  KILN_TRY(maxOutput,
           oneElement(2, n.b.getI64Type(), 0.0, "max_output_boxes_per_class"));
  KILN_TRY(iou, oneElement(3, f, 0.0, "iou_threshold"));
  KILN_TRY(score, oneElement(4, f, 0.0, "score_threshold"));
  int64_t perClass = numBoxes;
  if (DenseElementsAttr c = NodeImporter::constantValueOf(maxOutput))
    perClass = std::clamp<int64_t>(c.getValues<APInt>()[0].getSExtValue(), 0,
                                   numBoxes);
  int64_t bound = batches * classes * perClass;
  llvm::StringRef base =
      !n.node.name().empty() ? n.node.name() : n.node.output(0);
  std::string count = n.shapeValues->newComputedSymbol(
      (base.empty() ? "NonMaxSuppression" : base.str()) + ".count", bound);
  RankedTensorType type = symbolicTensorType(
      {bound, 3}, {DimExpr::symbol(count), DimExpr::constant(3)},
      n.b.getI64Type());
  auto nms = NonMaxSuppressionOp::create(
      n.b, n.loc, type, n.input(0), n.input(1), maxOutput, iou, score,
      StringRef(count), centerAttr.value_or(0) != 0, n.hasInput(4));
  n.setResult(0, nms);
  return success();
}

} // namespace

std::string kiln::import::ShapeValues::newComputedSymbol(llvm::StringRef base,
                                                         int64_t hi) {
  // A size expression's operators and blanks may not appear in a name, nor
  // may it start with a digit.
  std::string name;
  for (char c : base)
    name.push_back(llvm::StringRef("+-*/(), \t\n").contains(c) ? '_' : c);
  if (name.empty() || llvm::isDigit(name.front()))
    name.insert(0, "n");
  std::string unique = name;
  for (int k = 2; ranges.count(unique); ++k)
    unique = name + "_" + std::to_string(k);
  upper[unique] = hi;
  ranges[unique] = {0, hi};
  computed.push_back(unique);
  return unique;
}

void kiln::import::registerIndexHandlers(HandlerMap &handlers) {
  HandlerMap index = {
      {"GatherND", importGatherND},
      {"CumSum", importCumSum},
      {"ScatterElements", importScatterElements},
      {"Scatter", importScatterElements},
      {"ScatterND", importScatterND},
      {"TopK", importTopK},
      {"NonZero", importNonZero},
      {"NonMaxSuppression", importNonMaxSuppression},
      {"Einsum", importEinsum},
  };
  for (auto &entry : index)
    handlers[entry.getKey()] = entry.getValue();
}
