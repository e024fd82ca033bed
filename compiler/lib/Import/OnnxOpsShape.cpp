//===- OnnxOpsShape.cpp - shape, indexing and data movement ops -----------===//
//
// Kiln compiles static shapes, so every shape an op produces must be known at
// import: Shape and Size become constants, and ops whose result shape depends
// on an input's values (Reshape-like shape inputs, Slice bounds, Split sizes,
// Expand and Tile, ConstantOfShape, Range, OneHot's depth) take those inputs
// as compile-time constants. Shape arithmetic in models (Shape -> Gather ->
// Concat -> Reshape) therefore has to reach the consumer as constants: each
// handler here folds its result when its data inputs are constants too, and
// otherwise builds core ops (slice, concat, gather, broadcast, reshape,
// transpose, compare and select).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/Support/Format.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

/// Folded results above this many elements stay ops (unless they are
/// splats): the values would only bloat the IR, and shape arithmetic is tiny.
/// Equal to the importer's default threshold for inline initializers.
constexpr int64_t kMaxFoldedElements = 1024;

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

Value constant(NodeImporter &n, DenseElementsAttr value) {
  return ConstantOp::create(n.b, n.loc, value.getType(), value);
}

/// The value of `v` when a result of type `result` computed from it should
/// be folded: `v` is known at compile time and small, or a splat. Large
/// initializers (resource blobs) are not read back for this.
DenseElementsAttr foldInput(Value v, RankedTensorType result) {
  if (tensorType(v).getNumElements() > kMaxFoldedElements ||
      result.getNumElements() > kMaxFoldedElements) {
    auto c = v.getDefiningOp<ConstantOp>();
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    return dense && dense.isSplat() ? dense : nullptr;
  }
  return NodeImporter::constantValueOf(v);
}

/// A constant of `type` whose element at each multi-index `i` is element
/// `source(i)` (a row-major linear index) of `input`: the compile-time form of
/// every data movement op here.
DenseElementsAttr
remapElements(DenseElementsAttr input, RankedTensorType type,
              llvm::function_ref<int64_t(ArrayRef<int64_t>)> source) {
  if (input.isSplat())
    return input.resizeSplat(type);
  SmallVector<Attribute> elements(input.getValues<Attribute>());
  SmallVector<Attribute> result;
  int64_t count = type.getNumElements();
  result.reserve(count);
  SmallVector<int64_t> index(type.getRank(), 0);
  for (int64_t i = 0; i < count; ++i) {
    result.push_back(elements[source(index)]);
    for (int64_t d = type.getRank() - 1; d >= 0; --d) {
      if (++index[d] < type.getDimSize(d))
        break;
      index[d] = 0;
    }
  }
  return DenseElementsAttr::get(type, result);
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Reshape that folds a constant input at import (ReshapeOp's folder).
Value reshapeOrFold(NodeImporter &n, Value v, ArrayRef<int64_t> shape) {
  auto type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  return n.b.createOrFold<ReshapeOp>(
      n.loc, RankedTensorType::get(shape, type.getElementType()), v);
}

/// The strided window `x[starts[d] + i * steps[d]]` of the given sizes, folded
/// when `x` is a constant. Dims of size 0 start at 0 (nothing is read).
Value sliceOrFold(NodeImporter &n, Value x, ArrayRef<int64_t> starts,
                  ArrayRef<int64_t> sizes, ArrayRef<int64_t> steps) {
  auto inTy = tensorType(x);
  SmallVector<int64_t> begin(starts);
  for (auto [d, size] : llvm::enumerate(sizes))
    if (size == 0)
      begin[d] = 0;
  bool identity = inTy.getShape() == sizes &&
                  llvm::all_of(begin, [](int64_t s) { return s == 0; }) &&
                  llvm::all_of(steps, [](int64_t s) { return s == 1; });
  if (identity)
    return x;
  auto type = RankedTensorType::get(sizes, inTy.getElementType());
  if (DenseElementsAttr value = foldInput(x, type)) {
    SmallVector<int64_t> strides = rowMajorStrides(inTy.getShape());
    return constant(n, remapElements(value, type, [&](ArrayRef<int64_t> i) {
                      int64_t linear = 0;
                      for (size_t d = 0; d < i.size(); ++d)
                        linear += (begin[d] + i[d] * steps[d]) * strides[d];
                      return linear;
                    }));
  }
  return SliceOp::create(n.b, n.loc, type, x, n.b.getDenseI64ArrayAttr(begin),
                         n.b.getDenseI64ArrayAttr(steps));
}

/// numpy broadcast of `x` to `shape` (which it must broadcast to), folded
/// when `x` is a constant.
Value broadcastOrFold(NodeImporter &n, Value x, ArrayRef<int64_t> shape) {
  auto inTy = tensorType(x);
  if (inTy.getShape() == shape)
    return x;
  auto type = RankedTensorType::get(shape, inTy.getElementType());
  if (DenseElementsAttr value = foldInput(x, type)) {
    SmallVector<int64_t> strides = rowMajorStrides(inTy.getShape());
    int64_t offset = type.getRank() - inTy.getRank();
    return constant(n, remapElements(value, type, [&](ArrayRef<int64_t> i) {
                      int64_t linear = 0;
                      for (int64_t d = 0; d < inTy.getRank(); ++d)
                        if (inTy.getDimSize(d) != 1)
                          linear += i[d + offset] * strides[d];
                      return linear;
                    }));
  }
  return BroadcastOp::create(n.b, n.loc, type, x);
}

/// Reads a string attribute (the importer has typed accessors for numbers
/// only).
FailureOr<std::optional<std::string>> getString(NodeImporter &n,
                                                StringRef name) {
  const onnx::AttributeProto *a = n.getAttribute(name);
  if (!a)
    return std::optional<std::string>();
  if (a->type() != onnx::AttributeProto::STRING) {
    n.error() << "attribute '" << name << "' must be a string";
    return failure();
  }
  return std::optional<std::string>(a->s());
}

/// A constant integer list input of an opset-1 op, which types such inputs
/// like its data (Split's sizes, Tile's count and axis): floats truncate.
FailureOr<SmallVector<int64_t>> legacyConstantInts(NodeImporter &n, size_t i,
                                                   StringRef what) {
  KILN_TRY(value, n.constantInput(i, what));
  if (!isa<FloatType>(value.getElementType()))
    return n.constantInts(i, what);
  SmallVector<int64_t> result;
  for (const APFloat &v : value.getValues<APFloat>())
    result.push_back(static_cast<int64_t>(v.convertToDouble()));
  return result;
}

/// Normalizes `axes` against `rank` and checks none repeats.
LogicalResult normalizeAxes(NodeImporter &n, SmallVectorImpl<int64_t> &axes,
                            int64_t rank) {
  for (int64_t &a : axes) {
    KILN_TRY(axis, n.normalizeAxis(a, rank));
    a = axis;
  }
  SmallVector<int64_t> sorted(axes.begin(), axes.end());
  llvm::sort(sorted);
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    n.error() << "axes repeat a dimension";
    return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and Size: constants
//===----------------------------------------------------------------------===//

LogicalResult importShape(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  ArrayRef<int64_t> shape = n.inputType(0).getShape();
  int64_t rank = shape.size(), start = 0, end = rank;
  if (n.opset >= 15) {
    // start and end clamp to [0, rank] after adding rank to negative values.
    KILN_TRY(startAttr, n.getInt("start"));
    KILN_TRY(endAttr, n.getInt("end"));
    auto clampIndex = [&](int64_t i) {
      if (i < 0)
        i += rank;
      return std::clamp<int64_t>(i, 0, rank);
    };
    start = clampIndex(startAttr.value_or(0));
    end = endAttr ? clampIndex(*endAttr) : rank;
  }
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(shape[d]);
  if (hasSymbolicDims(n.inputType(0))) {
    SmallVector<DimExpr> sizes = dimExprs(n.inputType(0));
    n.setResult(0, n.sizesValue(ArrayRef<DimExpr>(sizes).slice(
                                    start, std::max<int64_t>(end - start, 0)),
                                {std::max<int64_t>(end - start, 0)},
                                n.b.getI64Type()));
    return success();
  }
  n.setResult(0, i64Constant(n, dims, {static_cast<int64_t>(dims.size())}));
  return success();
}

LogicalResult importSize(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  n.setResult(0, i64Constant(n, {n.inputType(0).getNumElements()}, {}));
  return success();
}

//===----------------------------------------------------------------------===//
// Squeeze and Unsqueeze: reshapes
//===----------------------------------------------------------------------===//

LogicalResult importSqueeze(NodeImporter &n) {
  bool axesFromInput = n.opset >= 13;
  if (failed(n.expectInputs(1, axesFromInput ? 2 : 1)))
    return failure();
  auto inTy = n.inputType(0);
  int64_t rank = inTy.getRank();
  std::optional<SmallVector<int64_t>> axes;
  if (axesFromInput) {
    if (n.hasInput(1)) {
      KILN_TRY(list, n.constantInts(1, "axes"));
      axes = list;
    }
  } else {
    KILN_TRY(list, n.getInts("axes"));
    axes = list;
  }
  SmallVector<bool> drop(rank, false);
  if (axes) {
    if (failed(normalizeAxes(n, *axes, rank)))
      return failure();
    for (int64_t a : *axes) {
      if (inTy.getDimSize(a) != 1 ||
          dimExprs(inTy)[a] != DimExpr::constant(1)) {
        n.error() << "cannot squeeze axis " << a << " of " << inTy
                  << ": expected size 1, found " << inTy.getDimSize(a);
        return failure();
      }
      drop[a] = true;
    }
  } else {
    if (hasSymbolicDims(inTy)) {
      n.error() << "squeezes every dimension of size 1 of "
                << dimsString(dimExprs(inTy))
                << ", which depends on the symbolic sizes; give the axes";
      return failure();
    }
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = inTy.getDimSize(d) == 1;
  }
  SmallVector<int64_t> shape;
  SmallVector<DimExpr> inSizes = dimExprs(inTy), sizes;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d]) {
      shape.push_back(inTy.getDimSize(d));
      sizes.push_back(inSizes[d]);
    }
  if (hasSymbolicDims(inTy)) {
    n.setResult(0, n.reshape(n.input(0), shape, sizes));
    return success();
  }
  n.setResult(0, reshapeOrFold(n, n.input(0), shape));
  return success();
}

LogicalResult importUnsqueeze(NodeImporter &n) {
  bool axesFromInput = n.opset >= 13;
  if (failed(n.expectInputs(axesFromInput ? 2 : 1, axesFromInput ? 2 : 1)))
    return failure();
  SmallVector<int64_t> axes;
  if (axesFromInput) {
    KILN_TRY(list, n.constantInts(1, "axes"));
    axes = list;
  } else {
    KILN_TRY(list, n.getInts("axes"));
    if (!list) {
      n.error() << "attribute 'axes' is required";
      return failure();
    }
    axes = *list;
  }
  auto inTy = n.inputType(0);
  // Axes index the result, whose rank counts the new dims.
  int64_t rank = inTy.getRank() + static_cast<int64_t>(axes.size());
  if (failed(normalizeAxes(n, axes, rank)))
    return failure();
  SmallVector<int64_t> shape;
  SmallVector<DimExpr> inSizes = dimExprs(inTy), sizes;
  ArrayRef<int64_t> rest = inTy.getShape();
  for (int64_t d = 0; d < rank; ++d) {
    if (llvm::is_contained(axes, d)) {
      shape.push_back(1);
      sizes.push_back(DimExpr::constant(1));
    } else {
      sizes.push_back(inSizes[inTy.getRank() - rest.size()]);
      shape.push_back(rest.front());
      rest = rest.drop_front();
    }
  }
  if (hasSymbolicDims(inTy)) {
    n.setResult(0, n.reshape(n.input(0), shape, sizes));
    return success();
  }
  n.setResult(0, reshapeOrFold(n, n.input(0), shape));
  return success();
}

//===----------------------------------------------------------------------===//
// Concat, Split, Slice
//===----------------------------------------------------------------------===//

LogicalResult importConcat(NodeImporter &n) {
  if (n.numInputs() == 0) {
    n.error() << "expects at least 1 input, found 0";
    return failure();
  }
  KILN_TRY(axisAttr, n.getInt("axis"));
  // Opsets 1 to 3 default the axis to 1; it is required since.
  if (!axisAttr && n.opset < 4)
    axisAttr = 1;
  if (!axisAttr) {
    n.error() << "attribute 'axis' is required";
    return failure();
  }
  auto first = n.inputType(0);
  KILN_TRY(axis, n.normalizeAxis(*axisAttr, first.getRank()));
  SmallVector<Value> inputs;
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    if (!n.hasInput(i)) {
      n.error() << "input " << i << " is required but empty";
      return failure();
    }
    auto t = n.inputType(i);
    if (t.getElementType() != first.getElementType()) {
      n.error() << "inputs have different element types, "
                << first.getElementType() << " and " << t.getElementType()
                << " (input " << i << ")";
      return failure();
    }
    bool compatible = t.getRank() == first.getRank();
    SmallVector<DimExpr> firstSizes = dimExprs(first), tSizes = dimExprs(t);
    for (int64_t d = 0; compatible && d < t.getRank(); ++d)
      compatible = d == axis || (t.getDimSize(d) == first.getDimSize(d) &&
                                 tSizes[d] == firstSizes[d]);
    if (!compatible) {
      n.error() << "input " << i << " of type " << t
                << " does not match input 0 of type " << first
                << " in every dimension but the axis " << axis;
      return failure();
    }
    shape[axis] += t.getDimSize(axis);
    inputs.push_back(n.input(i));
  }
  if (inputs.size() == 1) {
    n.setResult(0, inputs[0]);
    return success();
  }
  if (anySymbolicDims(ValueRange(inputs).getTypes())) {
    n.setResult(0, ConcatOp::create(n.b, n.loc, inputs, axis));
    return success();
  }
  // Shape arithmetic (Concat of Shape slices) must stay constant for the
  // Reshape that consumes it.
  auto type = RankedTensorType::get(shape, first.getElementType());
  SmallVector<DenseElementsAttr> values;
  if (type.getNumElements() <= kMaxFoldedElements)
    for (Value v : inputs)
      values.push_back(foldInput(v, type));
  if (!values.empty() &&
      llvm::all_of(values, [](DenseElementsAttr v) { return bool(v); })) {
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    SmallVector<SmallVector<Attribute>> elements;
    for (DenseElementsAttr v : values)
      elements.emplace_back(v.getValues<Attribute>());
    SmallVector<Attribute> result;
    for (int64_t o = 0; o < outer; ++o)
      for (auto &e : elements) {
        int64_t block = outer ? static_cast<int64_t>(e.size()) / outer : 0;
        llvm::append_range(result,
                           ArrayRef<Attribute>(e).slice(o * block, block));
      }
    n.setResult(0, constant(n, DenseElementsAttr::get(type, result)));
    return success();
  }
  n.setResult(0, ConcatOp::create(n.b, n.loc, inputs, axis));
  return success();
}

LogicalResult importSplit(NodeImporter &n) {
  // Opset 1 takes the sizes from an input or the attribute, opsets 2 to 12
  // from the attribute, later ones from the input.
  bool splitFromInput = n.opset >= 13 || (n.opset < 2 && n.hasInput(1));
  if (failed(n.expectInputs(1, splitFromInput || n.opset < 2 ? 2 : 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto inTy = n.inputType(0);
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(0), inTy.getRank()));
  int64_t dim = inTy.getDimSize(axis);
  std::optional<int64_t> numOutputs;
  if (n.opset >= 18) {
    KILN_TRY(num, n.getInt("num_outputs"));
    numOutputs = num;
  }
  std::optional<SmallVector<int64_t>> split;
  if (splitFromInput && n.opset < 2) {
    KILN_TRY(list, legacyConstantInts(n, 1, "split"));
    split = list;
  } else if (splitFromInput) {
    if (n.hasInput(1)) {
      KILN_TRY(list, n.constantInts(1, "split"));
      split = list;
    }
  } else {
    KILN_TRY(list, n.getInts("split"));
    split = list;
  }
  int64_t outputs = n.numOutputs();
  if (split && numOutputs) {
    n.error() << "expects either the split input or the num_outputs "
                 "attribute, found both";
    return failure();
  }
  if (numOutputs && *numOutputs != outputs) {
    n.error() << "num_outputs is " << *numOutputs << " but the node has "
              << outputs << " outputs";
    return failure();
  }
  if (split) {
    if (static_cast<int64_t>(split->size()) != outputs) {
      n.error() << "split has " << split->size() << " entries but the node has "
                << outputs << " outputs";
      return failure();
    }
    int64_t total = 0;
    for (int64_t s : *split) {
      if (s < 0) {
        n.error() << "split sizes must not be negative, found " << s;
        return failure();
      }
      total += s;
    }
    if (total != dim) {
      n.error() << "split sizes add up to " << total << " but axis " << axis
                << " has size " << dim;
      return failure();
    }
  } else {
    // Equal parts; with num_outputs (opset 18) the last part may be smaller.
    int64_t part = outputs ? (dim + outputs - 1) / outputs : 0;
    if (outputs == 0 || (!numOutputs && dim % outputs != 0) ||
        part * (outputs - 1) > dim) {
      n.error() << "axis " << axis << " of size " << dim
                << " cannot be split into " << outputs << " equal parts";
      return failure();
    }
    split.emplace(outputs, part);
    split->back() = dim - part * (outputs - 1);
  }
  SmallVector<int64_t> starts(inTy.getRank(), 0), steps(inTy.getRank(), 1);
  SmallVector<int64_t> sizes(inTy.getShape());
  SmallVector<DimExpr> symbolic = dimExprs(inTy);
  if (hasSymbolicDims(inTy) && !symbolic[axis].getConstant()) {
    n.error() << "splits axis " << axis << " of size " << symbolic[axis].str()
              << ", a symbolic dimension; pin it with --dim NAME=N";
    return failure();
  }
  for (auto [i, size] : llvm::enumerate(*split)) {
    sizes[axis] = size;
    if (hasSymbolicDims(inTy)) {
      // The other axes keep their symbolic sizes.
      symbolic[axis] = DimExpr::constant(size);
      n.setResult(i,
                  SliceOp::create(n.b, n.loc,
                                  symbolicTensorType(sizes, symbolic,
                                                     inTy.getElementType()),
                                  n.input(0), n.b.getDenseI64ArrayAttr(starts),
                                  n.b.getDenseI64ArrayAttr(steps)));
    } else {
      n.setResult(i, sliceOrFold(n, n.input(0), starts, sizes, steps));
    }
    starts[axis] += size;
  }
  return success();
}

/// Slice's optional axes and steps inputs (opset 10 on), when present.
LogicalResult sliceAxesAndSteps(NodeImporter &n, SmallVector<int64_t> &axes,
                                SmallVector<int64_t> &steps) {
  if (n.hasInput(3)) {
    KILN_TRY(a, n.constantInts(3, "axes"));
    axes = a;
  }
  if (n.hasInput(4)) {
    KILN_TRY(st, n.constantInts(4, "steps"));
    steps = st;
  }
  return success();
}

/// Slice when the input's sizes or the bounds depend on symbolic
/// dimensions (positions sliced to the sequence length, `x[:, 1:]` over a
/// symbolic axis). Each sliced axis steps by 1 from a constant start; its
/// size is an expression: `end - start` for a symbolic end on a static axis
/// (the end's upper bound must fit the axis), `size - start` (or `size -
/// start - k` for an end of -k) on a symbolic axis.
LogicalResult importSliceSymbolic(NodeImporter &n) {
  auto inTy = n.inputType(0);
  int64_t rank = inTy.getRank();
  std::optional<SmallVector<DimExpr>> starts = n.intsAsExprs(1),
                                      ends = n.intsAsExprs(2);
  SmallVector<int64_t> axes, steps;
  if (failed(sliceAxesAndSteps(n, axes, steps)))
    return failure();
  if (!starts || !ends) {
    n.error() << "starts and ends must be constants or sizes computed from "
                 "an input's shape";
    return failure();
  }
  size_t count = starts->size();
  if (axes.empty())
    for (size_t i = 0; i < count; ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(count, 1);
  if (ends->size() != count || axes.size() != count || steps.size() != count) {
    n.error() << "starts, ends, axes and steps must have equal lengths";
    return failure();
  }
  if (failed(normalizeAxes(n, axes, rank)))
    return failure();
  SmallVector<DimExpr> sizes = dimExprs(inTy);
  SmallVector<int64_t> begin(rank, 0), strides(rank, 1);
  const std::map<std::string, int64_t> &upper = n.shapeValues->upper;
  // Axes cut to a constant end that their symbolic size may or may not
  // reach (x[:200] of a size computed from data): each a kiln.slice_to that
  // computes its size at run time (decision 0031), after the rest.
  SmallVector<std::pair<int64_t, std::pair<int64_t, int64_t>>> cutToEnd;
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes[i];
    DimExpr size = sizes[axis], end = (*ends)[i];
    std::optional<int64_t> start = (*starts)[i].getConstant();
    std::optional<int64_t> dim = size.getConstant(),
                           endValue = end.getConstant();
    if (!start || steps[i] != 1 || *start < 0 ||
        (dim && endValue && *endValue < 0)) {
      n.error() << "slices axis " << axis << " of " << dimsString(sizes)
                << " with a start or step kiln cannot take over symbolic "
                   "sizes yet (a constant start >= 0 and step 1)";
      return failure();
    }
    DimExpr taken;
    if (dim && endValue) {
      // A static axis with constant bounds: the usual clamping.
      int64_t b = std::min(*start, *dim);
      int64_t e = std::clamp<int64_t>(*endValue, 0, *dim);
      taken = DimExpr::constant(std::max<int64_t>(e - b, 0));
    } else if (dim) {
      // A symbolic end on a static axis.
      std::optional<int64_t> bound = end.evaluate(upper);
      if (!bound || *bound > *dim) {
        n.error() << "the slice end " << end.str() << " can exceed axis "
                  << axis << " of size " << *dim << " within the --dim ranges";
        return failure();
      }
      std::optional<int64_t> least = n.shapeValues->lowest(end);
      if (!least || *least < *start) {
        n.error() << "the slice end " << end.str() << " can be below its "
                  << "start " << *start << " within the --dim ranges";
        return failure();
      }
      taken = end - DimExpr::constant(*start);
    } else if (endValue && *endValue < 0) {
      taken = size + DimExpr::constant(*endValue - *start);
    } else if ((endValue &&
                *endValue >= size.evaluate(upper).value_or(
                                 std::numeric_limits<int64_t>::max())) ||
               end == size) {
      taken = size - DimExpr::constant(*start);
    } else if (endValue && *endValue >= *start &&
               llvm::any_of(size.symbols(), [&](const std::string &s) {
                 return llvm::is_contained(n.shapeValues->computed, s);
               })) {
      cutToEnd.push_back({axis, {*start, *endValue}});
      continue;
    } else {
      n.error() << "slices axis " << axis << " of symbolic size " << size.str()
                << " to " << end.str()
                << ", which kiln cannot take over the --dim ranges yet";
      return failure();
    }
    begin[axis] = *start;
    sizes[axis] = taken;
  }
  SmallVector<int64_t> shape;
  for (const DimExpr &e : sizes) {
    std::optional<int64_t> bound = e.evaluate(upper);
    if (!bound || *bound < 0) {
      n.error() << "the slice's size " << e.str()
                << " has no upper bound over the --dim ranges";
      return failure();
    }
    shape.push_back(*bound);
  }
  auto type = symbolicTensorType(shape, sizes, inTy.getElementType());
  Value result = n.input(0);
  if (type != inTy)
    result = SliceOp::create(n.b, n.loc, type, n.input(0),
                             n.b.getDenseI64ArrayAttr(begin),
                             n.b.getDenseI64ArrayAttr(strides));
  for (auto [axis, range] : cutToEnd) {
    auto [start, end] = range;
    int64_t bound = std::max<int64_t>(std::min(shape[axis], end) - start, 0);
    llvm::StringRef base =
        !n.node.name().empty() ? n.node.name() : n.node.output(0);
    std::string count = n.shapeValues->newComputedSymbol(
        base.str() + "." + std::to_string(axis), bound);
    shape[axis] = bound;
    sizes[axis] = DimExpr::symbol(count);
    auto cutTy = symbolicTensorType(shape, sizes, inTy.getElementType());
    result = SliceToOp::create(n.b, n.loc, cutTy, result, axis, start, end,
                               StringRef(count));
  }
  n.setResult(0, result);
  return success();
}

LogicalResult importSlice(NodeImporter &n) {
  bool fromInputs = n.opset >= 10;
  if (failed(n.expectInputs(fromInputs ? 3 : 1, fromInputs ? 5 : 1)))
    return failure();
  if (fromInputs && (hasSymbolicDims(n.inputType(0)) || n.symbolicInts(1) ||
                     n.symbolicInts(2)))
    return importSliceSymbolic(n);
  auto inTy = n.inputType(0);
  int64_t rank = inTy.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  if (fromInputs) {
    KILN_TRY(s, n.constantInts(1, "starts"));
    KILN_TRY(e, n.constantInts(2, "ends"));
    starts = s;
    ends = e;
    if (failed(sliceAxesAndSteps(n, axes, steps)))
      return failure();
  } else {
    KILN_TRY(s, n.getInts("starts"));
    KILN_TRY(e, n.getInts("ends"));
    KILN_TRY(a, n.getInts("axes"));
    if (!s || !e) {
      n.error() << "attributes 'starts' and 'ends' are required";
      return failure();
    }
    starts = *s;
    ends = *e;
    if (a)
      axes = *a;
  }
  size_t count = starts.size();
  if (axes.empty() && !(fromInputs && n.hasInput(3)))
    for (size_t i = 0; i < count; ++i)
      axes.push_back(i);
  if (steps.empty() && !(fromInputs && n.hasInput(4)))
    steps.assign(count, 1);
  if (ends.size() != count || axes.size() != count || steps.size() != count) {
    n.error() << "starts, ends, axes and steps must have equal lengths, found "
              << count << ", " << ends.size() << ", " << axes.size() << " and "
              << steps.size();
    return failure();
  }
  if (failed(normalizeAxes(n, axes, rank)))
    return failure();
  SmallVector<int64_t> begin(rank, 0), sizes(inTy.getShape()), strides(rank, 1);
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes[i], dim = inTy.getDimSize(axis), step = steps[i];
    if (step == 0) {
      n.error() << "steps must not be 0 (axis " << axis << ")";
      return failure();
    }
    // ONNX: negative bounds count from the end, then clamp to the axis
    // ([0, dim] forward, [-1, dim - 1] backward, where -1 is "before 0").
    int64_t start = starts[i], end = ends[i];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? 1 + (end - start - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? 1 + (start - end - 1) / -step : 0;
    }
    if (dim == 0)
      size = 0;
    begin[axis] = start;
    sizes[axis] = size;
    strides[axis] = step;
  }
  n.setResult(0, sliceOrFold(n, n.input(0), begin, sizes, strides));
  return success();
}

//===----------------------------------------------------------------------===//
// Gather, Expand, Tile
//===----------------------------------------------------------------------===//

LogicalResult importGather(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto dataTy = n.inputType(0), indicesTy = n.inputType(1);
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(0), dataTy.getRank()));
  Type indexElt = indicesTy.getElementType();
  if (!indexElt.isInteger(32) && !indexElt.isInteger(64)) {
    n.error() << "indices must be i32 or i64, found " << indexElt;
    return failure();
  }
  int64_t dim = dataTy.getDimSize(axis);
  // Constant indices are checked against the axis, which must then be
  // static; data indices are wrapped at run time.
  if (!dimExprs(dataTy)[axis].getConstant() && n.constantValue(1)) {
    n.error() << "gathers along axis " << axis << " of size "
              << dimExprs(dataTy)[axis].str()
              << ", a symbolic dimension; pin it with --dim NAME=N";
    return failure();
  }
  SmallVector<int64_t> shape(dataTy.getShape().take_front(axis));
  llvm::append_range(shape, indicesTy.getShape());
  llvm::append_range(shape, dataTy.getShape().drop_front(axis + 1));
  auto type = RankedTensorType::get(shape, dataTy.getElementType());

  // Constant indices are checked here (ONNX makes out-of-range an error; at
  // run time the core op clamps).
  DenseElementsAttr indices = indicesTy.getNumElements() <= kMaxFoldedElements
                                  ? n.constantValue(1)
                                  : nullptr;
  SmallVector<int64_t> positions;
  if (indices) {
    for (const APInt &v : indices.getValues<APInt>()) {
      int64_t p = v.getSExtValue();
      if (p < -dim || p >= dim) {
        n.error() << "index " << p << " is out of range for axis " << axis
                  << " of size " << dim;
        return failure();
      }
      positions.push_back(p < 0 ? p + dim : p);
    }
  }
  if (DenseElementsAttr data =
          indices ? foldInput(n.input(0), type) : nullptr) {
    SmallVector<int64_t> strides = rowMajorStrides(dataTy.getShape());
    SmallVector<int64_t> indexStrides = rowMajorStrides(indicesTy.getShape());
    int64_t indexRank = indicesTy.getRank();
    n.setResult(0,
                constant(n, remapElements(data, type, [&](ArrayRef<int64_t> i) {
                           int64_t linear = 0, k = 0;
                           for (int64_t d = 0; d < indexRank; ++d)
                             k += i[axis + d] * indexStrides[d];
                           for (int64_t d = 0; d < dataTy.getRank(); ++d) {
                             int64_t coord = d < axis    ? i[d]
                                             : d == axis ? positions[k]
                                                         : i[d - 1 + indexRank];
                             linear += coord * strides[d];
                           }
                           return linear;
                         })));
    return success();
  }
  if (dim == 0 && indicesTy.getNumElements() > 0) {
    n.error() << "cannot gather from axis " << axis << " of size 0";
    return failure();
  }
  n.setResult(0, GatherOp::create(n.b, n.loc, n.input(0), n.input(1), axis));
  return success();
}

LogicalResult importExpand(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  auto inTy = n.inputType(0);
  if (hasSymbolicDims(inTy) || n.symbolicInts(1)) {
    // The same rule over expressions: two sizes agree only when equal.
    std::optional<SmallVector<DimExpr>> target = n.intsAsExprs(1);
    std::optional<SmallVector<DimExpr>> sizes;
    if (target)
      sizes = broadcastDims(dimExprs(inTy), *target);
    SmallVector<int64_t> bounds;
    for (const DimExpr &e : sizes ? *sizes : SmallVector<DimExpr>()) {
      std::optional<int64_t> b = e.evaluate(n.shapeValues->upper);
      if (!b || *b < 0) {
        sizes.reset();
        break;
      }
      bounds.push_back(*b);
    }
    if (!sizes) {
      n.error() << "cannot expand " << dimsString(dimExprs(inTy))
                << " to the shape "
                << (target ? dimsString(*target) : std::string("input"))
                << " over the --dim ranges";
      return failure();
    }
    auto type = symbolicTensorType(bounds, *sizes, inTy.getElementType());
    n.setResult(0, type == inTy ? n.input(0)
                                : Value(BroadcastOp::create(n.b, n.loc, type,
                                                            n.input(0))));
    return success();
  }
  KILN_TRY(shape, n.constantInts(1, "shape"));
  // The shape broadcasts with the input both ways: a 1 in it keeps the
  // input's dim.
  auto result = broadcastShapes(inTy.getShape(), shape);
  if (!result || llvm::any_of(shape, [](int64_t d) { return d < 0; })) {
    auto diag = n.error() << "cannot expand " << inTy << " to shape [";
    llvm::interleaveComma(shape, diag);
    diag << "]";
    return failure();
  }
  n.setResult(0, broadcastOrFold(n, n.input(0), *result));
  return success();
}

LogicalResult importTile(NodeImporter &n) {
  auto inTy = n.inputType(0);
  SmallVector<int64_t> repeats;
  if (n.opset < 6) {
    // Opset 1: one axis, tiled `tiles` times.
    if (failed(n.expectInputs(3, 3)))
      return failure();
    KILN_TRY(tiles, legacyConstantInts(n, 1, "tiles"));
    KILN_TRY(axisList, legacyConstantInts(n, 2, "axis"));
    if (tiles.size() != 1 || axisList.size() != 1) {
      n.error() << "tiles and axis must be scalars";
      return failure();
    }
    KILN_TRY(axis, n.normalizeAxis(axisList[0], inTy.getRank()));
    repeats.assign(inTy.getRank(), 1);
    repeats[axis] = tiles[0];
  } else {
    if (failed(n.expectInputs(2, 2)))
      return failure();
    KILN_TRY(list, n.constantInts(1, "repeats"));
    repeats = list;
  }
  if (static_cast<int64_t>(repeats.size()) != inTy.getRank()) {
    n.error() << "repeats has " << repeats.size()
              << " entries, expected one per input dimension ("
              << inTy.getRank() << ")";
    return failure();
  }
  // x[d0, d1] tiled by [r0, r1]: reshape to [1, d0, 1, d1], broadcast to
  // [r0, d0, r1, d1], reshape to [r0 * d0, r1 * d1]. Dims repeated once get
  // no extra dim.
  SmallVector<int64_t> split, broadcast, result;
  for (auto [d, r] : llvm::enumerate(repeats)) {
    if (r < 0) {
      n.error() << "repeats must not be negative, found " << r;
      return failure();
    }
    int64_t size = inTy.getDimSize(d);
    if (r != 1) {
      split.push_back(1);
      broadcast.push_back(r);
    }
    split.push_back(size);
    broadcast.push_back(size);
    result.push_back(size * r);
  }
  Value v = reshapeOrFold(n, n.input(0), split);
  v = broadcastOrFold(n, v, broadcast);
  n.setResult(0, reshapeOrFold(n, v, result));
  return success();
}

//===----------------------------------------------------------------------===//
// Constants from shapes: ConstantOfShape, Range, EyeLike
//===----------------------------------------------------------------------===//

LogicalResult importConstantOfShape(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  // A shape over symbolic sizes (torchvision's full_like of the scores a
  // NonZero kept): the value broadcast to it.
  std::optional<SmallVector<DimExpr>> symbolicShape = n.symbolicInts(0);
  SmallVector<int64_t> shape;
  if (symbolicShape) {
    for (const DimExpr &e : *symbolicShape) {
      std::optional<int64_t> bound = e.evaluate(n.shapeValues->upper);
      if (!bound) {
        n.error() << "the shape " << dimsString(*symbolicShape)
                  << " has no upper bound";
        return failure();
      }
      shape.push_back(*bound);
    }
  } else {
    KILN_TRY(constantShape, n.constantInts(0, "shape"));
    shape = constantShape;
  }
  for (int64_t d : shape)
    if (d < 0) {
      n.error() << "shape entries must not be negative, found " << d;
      return failure();
    }
  Attribute element = n.b.getF32FloatAttr(0.0f);
  if (const onnx::AttributeProto *a = n.getAttribute("value")) {
    if (a->type() != onnx::AttributeProto::TENSOR) {
      n.error() << "attribute 'value' must be a tensor";
      return failure();
    }
    KILN_TRY(data, n.decodeTensor(a->t(), "attribute 'value'"));
    auto dense = dyn_cast<DenseElementsAttr>(data);
    if (!dense || dense.getNumElements() != 1) {
      n.error() << "attribute 'value' must hold one element, found "
                << data.getType();
      return failure();
    }
    element = dense.getSplatValue<Attribute>();
  }
  Type elt = cast<TypedAttr>(element).getType();
  if (symbolicShape) {
    auto scalarTy = RankedTensorType::get({}, elt);
    Value scalar = constant(n, DenseElementsAttr::get(scalarTy, element));
    auto type = symbolicTensorType(shape, *symbolicShape, elt);
    n.setResult(0, BroadcastOp::create(n.b, n.loc, type, scalar));
    return success();
  }
  auto type = RankedTensorType::get(shape, elt);
  n.setResult(0, constant(n, DenseElementsAttr::get(type, element)));
  return success();
}

LogicalResult importRange(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  static const char *const kNames[] = {"start", "limit", "delta"};
  SmallVector<DenseElementsAttr, 3> values;
  Type elt = n.inputType(0).getElementType();
  if (std::optional<SmallVector<DimExpr>> limit = n.symbolicInts(1)) {
    // Range(start, a symbolic limit, 1): a constant ramp as long as the
    // limit's upper bound, sliced to the run-time length.
    std::optional<SmallVector<DimExpr>> start = n.intsAsExprs(0),
                                        delta = n.intsAsExprs(2);
    std::optional<int64_t> first =
        start && start->size() == 1 ? (*start)[0].getConstant() : std::nullopt;
    std::optional<int64_t> bound = (*limit)[0].evaluate(n.shapeValues->upper);
    std::optional<int64_t> least = n.shapeValues->lowest((*limit)[0]);
    if (!first || !delta || delta->size() != 1 ||
        (*delta)[0] != DimExpr::constant(1) || !bound || !least ||
        *bound - *first > (1 << 20) || *least < *first) {
      n.error() << "a range to the symbolic limit " << (*limit)[0].str()
                << " needs a constant integer start no larger than it over the "
                   "--dim ranges, and delta 1";
      return failure();
    }
    int64_t size = *bound - *first;
    auto rampType = RankedTensorType::get({size}, elt);
    SmallVector<APInt> ramp;
    for (int64_t i = 0; i < size; ++i)
      ramp.push_back(APInt(elt.getIntOrFloatBitWidth(), *first + i, true));
    Value full =
        constant(n, DenseElementsAttr::get(rampType, ArrayRef<APInt>(ramp)));
    DimExpr length = (*limit)[0] - DimExpr::constant(*first);
    n.setResult(0, SliceOp::create(n.b, n.loc,
                                   symbolicTensorType({size}, {length}, elt),
                                   full, n.b.getDenseI64ArrayAttr({0}),
                                   n.b.getDenseI64ArrayAttr({1})));
    return success();
  }
  for (int i = 0; i < 3; ++i) {
    KILN_TRY(v, n.constantInput(i, kNames[i]));
    if (v.getNumElements() != 1 || v.getElementType() != elt) {
      n.error() << kNames[i] << " must be a scalar of the element type of "
                << "start (" << elt << "), found " << v.getType();
      return failure();
    }
    values.push_back(v);
  }
  if (elt.isInteger(1)) {
    n.error() << "element type " << elt << " is not supported";
    return failure();
  }
  bool isFloat = isa<FloatType>(elt);
  auto get = [&](int i) {
    return isFloat ? values[i].getSplatValue<APFloat>().convertToDouble()
                   : static_cast<double>(
                         values[i].getSplatValue<APInt>().getSExtValue());
  };
  double start = get(0), limit = get(1), delta = get(2);
  if (delta == 0) {
    n.error() << "delta must not be 0";
    return failure();
  }
  // The range becomes a constant in the artifact, built element by element;
  // a hostile start/limit/delta must not make the compiler build billions.
  constexpr double kMaxRangeElements = 1 << 20;
  double count = std::ceil((limit - start) / delta);
  if (!(count <= kMaxRangeElements)) {
    std::string shown;
    llvm::raw_string_ostream(shown) << llvm::format("%.0f", count);
    n.error() << "the range has " << shown
              << " elements; a constant range holds at most "
              << static_cast<int64_t>(kMaxRangeElements);
    return failure();
  }
  int64_t size = std::max<int64_t>(static_cast<int64_t>(count), 0);
  auto type = RankedTensorType::get({size}, elt);
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < size; ++i) {
    if (isFloat)
      elements.push_back(n.b.getFloatAttr(elt, start + i * delta));
    else
      // Wrapping arithmetic: ONNX's integer ranges wrap like the type does.
      elements.push_back(n.b.getIntegerAttr(
          elt, static_cast<int64_t>(
                   static_cast<uint64_t>(
                       values[0].getSplatValue<APInt>().getSExtValue()) +
                   static_cast<uint64_t>(i) *
                       static_cast<uint64_t>(
                           values[2].getSplatValue<APInt>().getSExtValue()))));
  }
  n.setResult(0, constant(n, DenseElementsAttr::get(type, elements)));
  return success();
}

LogicalResult importEyeLike(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(kAttr, n.getInt("k"));
  KILN_TRY(dtype, n.getInt("dtype"));
  auto inTy = n.inputType(0);
  if (inTy.getRank() != 2) {
    n.error() << "expects a 2-D input, found " << inTy;
    return failure();
  }
  Type elt = inTy.getElementType();
  if (dtype) {
    elt = elementTypeOf(n.b.getContext(), *dtype);
    if (!elt) {
      n.error() << "dtype " << *dtype << " is not supported";
      return failure();
    }
  }
  auto type = RankedTensorType::get(inTy.getShape(), elt);
  auto value = [&](bool one) -> Attribute {
    if (isa<FloatType>(elt))
      return n.b.getFloatAttr(elt, one ? 1.0 : 0.0);
    return n.b.getIntegerAttr(elt, one ? 1 : 0);
  };
  SmallVector<Attribute> elements;
  int64_t k = kAttr.value_or(0);
  for (int64_t i = 0; i < inTy.getDimSize(0); ++i)
    for (int64_t j = 0; j < inTy.getDimSize(1); ++j)
      elements.push_back(value(j - i == k));
  n.setResult(0, constant(n, DenseElementsAttr::get(type, elements)));
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

template <typename OpTy> LogicalResult importArg(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(keepDims, n.getInt("keepdims"));
  std::optional<int64_t> selectLast;
  if (n.opset >= 12) {
    KILN_TRY(last, n.getInt("select_last_index"));
    selectLast = last;
  }
  auto inTy = n.inputType(0);
  if (inTy.getElementType().isInteger(1)) {
    n.error() << "element type i1 (bool) is not supported";
    return failure();
  }
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(0), inTy.getRank()));
  if (inTy.getDimSize(axis) == 0) {
    n.error() << "cannot take the index along axis " << axis << " of size 0";
    return failure();
  }
  n.setResult(0, OpTy::create(n.b, n.loc, n.input(0), axis,
                              keepDims.value_or(1) != 0,
                              selectLast.value_or(0) != 0));
  return success();
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth: reshape, transpose, reshape
//===----------------------------------------------------------------------===//

FailureOr<int64_t> blockSize(NodeImporter &n) {
  KILN_TRY(attr, n.getInt("blocksize"));
  if (!attr || *attr <= 0) {
    n.error() << "attribute 'blocksize' must be a positive int";
    return failure();
  }
  if (n.inputType(0).getRank() != 4) {
    n.error() << "expects a 4-D input (N, C, H, W), found " << n.inputType(0);
    return failure();
  }
  return *attr;
}

LogicalResult importDepthToSpace(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(b, blockSize(n));
  bool crd = false;
  if (n.opset >= 11) {
    KILN_TRY(mode, getString(n, "mode"));
    if (mode && *mode != "DCR" && *mode != "CRD") {
      n.error() << "mode must be DCR or CRD, found '" << *mode << "'";
      return failure();
    }
    crd = mode && *mode == "CRD";
  }
  ArrayRef<int64_t> s = n.inputType(0).getShape();
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  if (C % (b * b) != 0) {
    n.error() << "channels (" << C << ") must be a multiple of blocksize^2 ("
              << b * b << ")";
    return failure();
  }
  int64_t c = C / (b * b);
  // DCR: depth is (b, b, c); CRD: (c, b, b).
  Value v = crd ? n.reshape(n.input(0), {N, c, b, b, H, W})
                : n.reshape(n.input(0), {N, b, b, c, H, W});
  v = crd ? n.transpose(v, {0, 1, 4, 2, 5, 3})
          : n.transpose(v, {0, 3, 4, 1, 5, 2});
  n.setResult(0, n.reshape(v, {N, c, H * b, W * b}));
  return success();
}

LogicalResult importSpaceToDepth(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(b, blockSize(n));
  ArrayRef<int64_t> s = n.inputType(0).getShape();
  int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  if (H % b != 0 || W % b != 0) {
    n.error() << "height and width (" << H << ", " << W
              << ") must be multiples of blocksize " << b;
    return failure();
  }
  Value v = n.reshape(n.input(0), {N, C, H / b, b, W / b, b});
  v = n.transpose(v, {0, 3, 5, 1, 2, 4});
  n.setResult(0, n.reshape(v, {N, C * b * b, H / b, W / b}));
  return success();
}

//===----------------------------------------------------------------------===//
// Trilu, OneHot: compare with index constants, select
//===----------------------------------------------------------------------===//

LogicalResult importTrilu(NodeImporter &n) {
  if (failed(n.expectInputs(1, 2)))
    return failure();
  KILN_TRY(upperAttr, n.getInt("upper"));
  bool upper = upperAttr.value_or(1) != 0;
  auto inTy = n.inputType(0);
  if (inTy.getRank() < 2) {
    n.error() << "expects an input of rank 2 or more, found " << inTy;
    return failure();
  }
  int64_t rows = inTy.getDimSize(inTy.getRank() - 2);
  int64_t cols = inTy.getDimSize(inTy.getRank() - 1);
  auto maskType = RankedTensorType::get({rows, cols}, n.b.getI1Type());
  // Element (i, j) is kept when j - i >= k (upper) or j - i <= k (lower).
  Value mask;
  DenseElementsAttr k = n.constantValue(1);
  if (n.hasInput(1)) {
    auto kTy = n.inputType(1);
    if (kTy.getNumElements() != 1 || !kTy.getElementType().isInteger(64)) {
      n.error() << "k must be an i64 scalar, found " << kTy;
      return failure();
    }
  }
  if (!n.hasInput(1) || k) {
    int64_t kv = k ? k.getValues<APInt>()[0].getSExtValue() : 0;
    SmallVector<bool> keep;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        keep.push_back(upper ? j - i >= kv : j - i <= kv);
    mask = constant(n, DenseElementsAttr::get(maskType, keep));
  } else {
    // k known at run time only: compare it with the constant j - i.
    SmallVector<int64_t> diag;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        diag.push_back(j - i);
    Value offsets = i64Constant(n, diag, {rows, cols});
    Value kScalar = n.reshape(n.input(1), {});
    mask =
        CmpOp::create(n.b, n.loc, upper ? CmpPredicate::ge : CmpPredicate::le,
                      offsets, kScalar);
  }
  Value zero = n.scalar(inTy.getElementType(), 0);
  n.setResult(0, SelectOp::create(n.b, n.loc, mask, n.input(0), zero));
  return success();
}

LogicalResult importOneHot(NodeImporter &n) {
  if (failed(n.expectInputs(3, 3)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  KILN_TRY(depthValue, n.constantInput(1, "depth"));
  auto indicesTy = n.inputType(0), valuesTy = n.inputType(2);
  if (depthValue.getNumElements() != 1 ||
      depthValue.getElementType().isInteger(1)) {
    n.error() << "depth must be a numeric scalar, found "
              << depthValue.getType();
    return failure();
  }
  int64_t depth =
      isa<FloatType>(depthValue.getElementType())
          ? static_cast<int64_t>(
                depthValue.getValues<APFloat>()[0].convertToDouble())
          : depthValue.getValues<APInt>()[0].getSExtValue();
  if (depth <= 0) {
    n.error() << "depth must be positive, found " << depth;
    return failure();
  }
  if (valuesTy.getNumElements() != 2 || valuesTy.getRank() != 1) {
    n.error() << "values must hold two elements [off, on], found " << valuesTy;
    return failure();
  }
  if (indicesTy.getElementType().isInteger(1)) {
    n.error() << "indices of element type i1 are not supported";
    return failure();
  }
  int64_t rank = indicesTy.getRank();
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(-1), rank + 1));

  // Indices as i64 (floats truncate, as ONNX's cast does); negative ones
  // count from depth. Out-of-range indices match no position: all off.
  auto i64Type = n.b.getI64Type();
  Value indices = n.input(0);
  if (!indicesTy.getElementType().isInteger(64))
    indices = CastOp::create(
        n.b, n.loc, RankedTensorType::get(indicesTy.getShape(), i64Type),
        indices);
  Value zero = n.scalar(i64Type, 0);
  Value negative = CmpOp::create(n.b, n.loc, CmpPredicate::lt, indices, zero);
  Value wrapped = AddOp::create(n.b, n.loc, indices, n.scalar(i64Type, depth));
  indices = SelectOp::create(n.b, n.loc, negative, wrapped, indices);
  SmallVector<int64_t> unsqueezed(indicesTy.getShape());
  unsqueezed.insert(unsqueezed.begin() + axis, 1);
  indices = n.reshape(indices, unsqueezed);

  // Positions 0..depth-1 along the new axis.
  SmallVector<int64_t> iota, iotaShape(rank + 1 - axis, 1);
  for (int64_t i = 0; i < depth; ++i)
    iota.push_back(i);
  iotaShape[0] = depth;
  Value positions = i64Constant(n, iota, iotaShape);
  Value hot = CmpOp::create(n.b, n.loc, CmpPredicate::eq, indices, positions);

  Value values = n.input(2);
  Value off = reshapeOrFold(n, sliceOrFold(n, values, {0}, {1}, {1}), {});
  Value on = reshapeOrFold(n, sliceOrFold(n, values, {1}, {1}, {1}), {});
  n.setResult(0, SelectOp::create(n.b, n.loc, hot, on, off));
  return success();
}

/// GatherElements: out[i...] = data[i_0, .., indices[i...], .., i_{r-1}]
/// along `axis`. Built as one gather from the flattened data at linear
/// indices computed with core ops: the element's own coordinates (constant
/// ramps broadcast over the indices' shape) times the data's strides, with
/// the axis coordinate taken from `indices` (negative values wrap).
LogicalResult importGatherElements(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto dt = n.inputType(0), it = n.inputType(1);
  int64_t rank = dt.getRank();
  if (it.getRank() != rank || rank == 0) {
    n.error() << "indices must have the data's rank " << rank << ", found "
              << it;
    return failure();
  }
  if (!it.getElementType().isSignlessInteger(32) &&
      !it.getElementType().isSignlessInteger(64)) {
    n.error() << "indices must be int32 or int64, found "
              << it.getElementType();
    return failure();
  }
  KILN_TRY(axis, n.normalizeAxis(axisAttr.value_or(0), rank));
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && it.getDimSize(d) > dt.getDimSize(d)) {
      n.error() << "indices dimension " << d << " (" << it.getDimSize(d)
                << ") exceeds the data's (" << dt.getDimSize(d) << ")";
      return failure();
    }
  Type i64 = n.b.getIntegerType(64);
  ArrayRef<int64_t> ishape = it.getShape();
  // Over symbolic sizes the strides the index arithmetic uses must be
  // constants; the axis's size may be symbolic (read at run time).
  SmallVector<DimExpr> dataSizes = dimExprs(dt), indexSizes = dimExprs(it);
  bool symbolic = hasSymbolicDims(dt) || hasSymbolicDims(it);
  if (symbolic) {
    DimExpr stride = DimExpr::constant(1);
    for (int64_t d = rank - 1; d >= 0; --d) {
      bool used = d == axis || indexSizes[d] != DimExpr::constant(1);
      if (used && (!stride.getConstant() ||
                   (d != axis && !indexSizes[d].getConstant()))) {
        n.error() << "gathers elements of " << dimsString(dataSizes)
                  << " at indices " << dimsString(indexSizes)
                  << ", whose index arithmetic depends on symbolic sizes; "
                     "pin them with --dim NAME=N";
        return failure();
      }
      stride = stride * dataSizes[d];
    }
  }
  Value idx = n.input(1);
  if (!it.getElementType().isSignlessInteger(64))
    idx = CastOp::create(n.b, n.loc, withElementType(it, i64), idx);
  // Wrap negative indices along the axis.
  Value dim = n.scalar(i64, static_cast<double>(dt.getDimSize(axis)));
  if (!dataSizes[axis].getConstant())
    dim = SizesOp::create(
        n.b, n.loc, RankedTensorType::get({}, i64),
        n.b.getArrayAttr({n.b.getStringAttr(dataSizes[axis].str())}));
  Value negative =
      CmpOp::create(n.b, n.loc, CmpPredicate::lt, idx, n.scalar(i64, 0.0));
  KILN_TRY(wrapped, n.binary<AddOp>(idx, dim));
  idx = SelectOp::create(n.b, n.loc, negative, wrapped, idx);
  // linear = sum_d coord_d * stride_d, with coord_axis = idx.
  int64_t stride = 1;
  SmallVector<int64_t> strides(rank);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= dt.getDimSize(d);
  }
  KILN_TRY(linear, n.binary<MulOp>(
                       idx, n.scalar(i64, static_cast<double>(strides[axis]))));
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis || ishape[d] == 1)
      continue;
    SmallVector<int64_t> rampShape(rank, 1);
    rampShape[d] = ishape[d];
    auto rampTy = RankedTensorType::get(rampShape, i64);
    SmallVector<APInt> values;
    for (int64_t c = 0; c < ishape[d]; ++c)
      values.push_back(APInt(64, c * strides[d]));
    Value ramp = ConstantOp::create(
        n.b, n.loc, rampTy,
        cast<ElementsAttr>(DenseElementsAttr::get(rampTy, values)));
    KILN_TRY(sum, n.binary<AddOp>(linear, ramp));
    linear = sum;
  }
  DimExpr count = DimExpr::constant(1);
  for (const DimExpr &d : dataSizes)
    count = count * d;
  Value flat = n.reshape(n.input(0), {dt.getNumElements()}, {count});
  n.setResult(0, GatherOp::create(n.b, n.loc, flat, linear, 0));
  return success();
}

} // namespace

void kiln::import::registerShapeHandlers(HandlerMap &handlers) {
  HandlerMap shape = {
      {"Shape", importShape},
      {"GatherElements", importGatherElements},
      {"Size", importSize},
      {"Squeeze", importSqueeze},
      {"Unsqueeze", importUnsqueeze},
      {"Concat", importConcat},
      {"Split", importSplit},
      {"Slice", importSlice},
      {"Gather", importGather},
      {"Expand", importExpand},
      {"Tile", importTile},
      {"ConstantOfShape", importConstantOfShape},
      {"Range", importRange},
      {"EyeLike", importEyeLike},
      {"ArgMax", importArg<ArgMaxOp>},
      {"ArgMin", importArg<ArgMinOp>},
      {"DepthToSpace", importDepthToSpace},
      {"SpaceToDepth", importSpaceToDepth},
      {"Trilu", importTrilu},
      {"OneHot", importOneHot},
  };
  for (auto &entry : shape)
    handlers[entry.getKey()] = entry.getValue();
}
