//===- OnnxOps.cpp - import functions of the first ONNX ops ---------------===//
//
// Each handler checks the node against the op's definition at the model's
// opset and builds kiln ops, decomposing where the core has no single op
// (Gemm -> transpose, matmul, scale, add; Softmax -> max, sub, exp, sum,
// div). Attributes a handler does not read are reported by the caller.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/Support/MathExtras.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

namespace {

LogicalResult importIdentity(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  n.setResult(0, n.input(0));
  return success();
}

LogicalResult importDropout(NodeImporter &n) {
  // Inference: Dropout is the identity and keeps every element, so its mask
  // (SqueezeNet and VGG of the classic model zoo use it) is all true.
  // Training mode has no inference meaning and is refused.
  if (failed(n.expectInputs(1, 3)))
    return failure();
  n.ignoreAttribute("seed");
  n.ignoreAttribute("ratio");
  if (n.opset < 12)
    n.ignoreAttribute("is_test");
  if (n.hasInput(2)) {
    KILN_TRY(mode, n.constantInput(2, "training_mode"));
    if (!mode.getElementType().isInteger(1) || mode.getNumElements() != 1) {
      n.error() << "the training_mode input must be a bool scalar, found "
                << mode.getType();
      return failure();
    }
    if (mode.getSplatValue<bool>()) {
      n.error() << "training mode is not supported";
      return failure();
    }
  }
  if (n.outputUsed(1)) {
    // A bool mask from opset 10; before, ones of the input's type.
    auto inTy = n.inputType(0);
    if (n.opset >= 10) {
      auto maskTy = RankedTensorType::get(inTy.getShape(), n.b.getI1Type());
      n.setResult(
          1, ConstantOp::create(
                 n.b, n.loc, maskTy,
                 cast<ElementsAttr>(DenseElementsAttr::get(maskTy, true))));
    } else {
      n.setResult(1, BroadcastOp::create(n.b, n.loc, inTy,
                                         n.scalar(inTy.getElementType(), 1)));
    }
  }
  n.setResult(0, n.input(0));
  return success();
}

template <typename OpTy> LogicalResult importBinary(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(rhs, n.legacyBroadcastRhs(n.input(0), n.input(1)));
  KILN_TRY(v, n.binary<OpTy>(n.input(0), rhs));
  n.setResult(0, v);
  return success();
}

template <typename OpTy, bool FloatOnly>
LogicalResult importUnary(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  Type elt = n.inputType(0).getElementType();
  if ((FloatOnly && !isa<FloatType>(elt)) || elt.isInteger(1)) {
    n.error() << "element type " << elt << " is not supported";
    return failure();
  }
  n.setResult(0, OpTy::create(n.b, n.loc, n.input(0)));
  return success();
}

} // namespace

/// ONNX MatMul: numpy semantics, including 1-D operands.
FailureOr<Value> kiln::import::buildMatMul(NodeImporter &n, Value a, Value b) {
  auto at = cast<RankedTensorType>(a.getType());
  auto bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() == 0 || bt.getRank() == 0) {
    n.error() << "operands must have rank 1 or more";
    return failure();
  }
  // Check the contraction on the user's shapes, before 1-D operands are
  // reshaped, so the message shows what the model holds.
  int64_t ka = at.getShape().back();
  int64_t kb =
      bt.getRank() == 1 ? bt.getDimSize(0) : bt.getDimSize(bt.getRank() - 2);
  if (ka != kb) {
    n.error() << "operand shapes " << at << " and " << bt
              << " are not compatible for a matrix product (" << ka
              << " columns against " << kb << " rows)";
    return failure();
  }
  // 1-D lhs is a row vector, 1-D rhs a column vector; the added dim goes.
  DimExpr one = DimExpr::constant(1);
  if (at.getRank() == 1)
    a = n.reshape(a, {1, at.getDimSize(0)}, {one, dimExprs(at)[0]});
  if (bt.getRank() == 1)
    b = n.reshape(b, {bt.getDimSize(0), 1}, {dimExprs(bt)[0], one});
  KILN_TRY(c, n.matmul(a, b));
  auto ct = cast<RankedTensorType>(c.getType());
  SmallVector<int64_t> shape(ct.getShape());
  SmallVector<DimExpr> sizes = dimExprs(ct);
  if (bt.getRank() == 1) {
    shape.erase(shape.end() - 1);
    sizes.erase(sizes.end() - 1);
  }
  if (at.getRank() == 1) {
    shape.erase(shape.end() - (bt.getRank() == 1 ? 1 : 2));
    sizes.erase(sizes.end() - (bt.getRank() == 1 ? 1 : 2));
  }
  return n.reshape(c, shape, sizes);
}

namespace {

LogicalResult importMatMul(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)))
    return failure();
  KILN_TRY(c, buildMatMul(n, n.input(0), n.input(1)));
  n.setResult(0, c);
  return success();
}

/// Gemm: alpha * op(A) * op(B) + beta * C.
LogicalResult importGemm(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)))
    return failure();
  KILN_TRY(alpha, n.getFloat("alpha"));
  KILN_TRY(beta, n.getFloat("beta"));
  KILN_TRY(transA, n.getInt("transA"));
  KILN_TRY(transB, n.getInt("transB"));
  if (n.opset < 7)
    n.ignoreAttribute("broadcast");
  Value a = n.input(0), b = n.input(1);
  if (n.inputType(0).getRank() != 2 || n.inputType(1).getRank() != 2) {
    n.error() << "A and B must be matrices, found " << n.inputType(0) << " and "
              << n.inputType(1);
    return failure();
  }
  Type gemmElt = n.inputType(0).getElementType();
  if (!isa<FloatType>(gemmElt) &&
      (alpha.value_or(1.0f) != std::trunc(alpha.value_or(1.0f)) ||
       beta.value_or(1.0f) != std::trunc(beta.value_or(1.0f)))) {
    n.error() << "alpha and beta must be whole numbers for element type "
              << gemmElt << ", found " << alpha.value_or(1.0f) << " and "
              << beta.value_or(1.0f);
    return failure();
  }
  if (transA.value_or(0))
    a = n.transpose(a, {1, 0});
  if (transB.value_or(0))
    b = n.transpose(b, {1, 0});
  KILN_TRY(y, n.matmul(a, b));
  Type elt = cast<RankedTensorType>(y.getType()).getElementType();
  if (alpha.value_or(1.0f) != 1.0f) {
    KILN_TRY(scaled, n.binary<MulOp>(y, n.scalar(elt, *alpha)));
    y = scaled;
  }
  if (n.hasInput(2) && beta.value_or(1.0f) != 0.0f) {
    Value c = n.input(2);
    if (beta.value_or(1.0f) != 1.0f) {
      KILN_TRY(scaledC, n.binary<MulOp>(c, n.scalar(elt, *beta)));
      c = scaledC;
    }
    auto yt = cast<RankedTensorType>(y.getType());
    auto ct = cast<RankedTensorType>(c.getType());
    auto shape = broadcastShapes(yt.getShape(), ct.getShape());
    if (!shape || ArrayRef<int64_t>(*shape) != yt.getShape()) {
      n.error() << "C of shape " << ct << " does not broadcast to the result "
                << yt;
      return failure();
    }
    KILN_TRY(sum, n.binary<AddOp>(y, c));
    y = sum;
  }
  n.setResult(0, y);
  return success();
}

/// The axes a Softmax-family op normalizes over: opset < 13 flattens at
/// `axis` (default 1) and normalizes everything after it; later opsets use
/// the single `axis` (default -1).
FailureOr<SmallVector<int64_t>> softmaxAxes(NodeImporter &n) {
  int64_t rank = n.inputType(0).getRank();
  auto axisAttr = n.getInt("axis");
  if (failed(axisAttr))
    return failure();
  bool legacy = n.opset < 13;
  auto axis = n.normalizeAxis(axisAttr->value_or(legacy ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  SmallVector<int64_t> axes;
  for (int64_t d = *axis; d < (legacy ? rank : *axis + 1); ++d)
    axes.push_back(d);
  return axes;
}

template <bool Log> LogicalResult importSoftmax(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  if (!isa<FloatType>(n.inputType(0).getElementType())) {
    n.error() << "element type " << n.inputType(0).getElementType()
              << " is not supported";
    return failure();
  }
  KILN_TRY(axes, softmaxAxes(n));
  Value x = n.input(0);
  // Subtracting the max keeps exp in range; the result is unchanged.
  Value max = ReduceMaxOp::create(n.b, n.loc, x, n.b.getDenseI64ArrayAttr(axes),
                                  n.b.getUnitAttr());
  Value shifted = SubOp::create(n.b, n.loc, x, max);
  Value e = ExpOp::create(n.b, n.loc, shifted);
  Value sum = ReduceSumOp::create(n.b, n.loc, e, n.b.getDenseI64ArrayAttr(axes),
                                  n.b.getUnitAttr());
  if (Log)
    n.setResult(
        0, SubOp::create(n.b, n.loc, shifted, LogOp::create(n.b, n.loc, sum)));
  else
    n.setResult(0, DivOp::create(n.b, n.loc, e, sum));
  return success();
}

/// Reshape when the input's sizes or the target's depend on symbolic
/// dimensions: ONNX's rule (0 copies the input's size, -1 is what the others
/// leave) over expressions, the bounds evaluated at the symbols' upper ends.
LogicalResult importReshapeSymbolic(NodeImporter &n, bool allowZero) {
  std::optional<SmallVector<DimExpr>> target = n.intsAsExprs(1);
  if (!target) {
    n.error() << "the shape input must be a constant or sizes computed from "
                 "an input's shape";
    return failure();
  }
  auto inTy = n.inputType(0);
  SmallVector<DimExpr> inSizes = dimExprs(inTy), sizes;
  DimExpr known = DimExpr::constant(1), total = DimExpr::constant(1);
  for (const DimExpr &d : inSizes)
    total = total * d;
  int64_t inferred = -1;
  for (auto [i, e] : llvm::enumerate(*target)) {
    std::optional<int64_t> k = e.getConstant();
    if (k && *k == 0 && !allowZero) {
      if (i >= inSizes.size()) {
        n.error() << "shape entry " << i << " is 0 (copy the input dim), but "
                  << "the input has rank " << inTy.getRank();
        return failure();
      }
      sizes.push_back(inSizes[i]);
    } else if (k && *k == -1) {
      if (inferred >= 0) {
        n.error() << "the shape has more than one -1";
        return failure();
      }
      inferred = i;
      sizes.push_back(DimExpr::constant(1));
      continue;
    } else if (k && *k < -1) {
      n.error() << "shape entry " << i << " is " << *k
                << "; expected -1, 0 or a positive size";
      return failure();
    } else {
      sizes.push_back(e);
    }
    known = known * sizes.back();
  }
  if (inferred >= 0) {
    std::optional<DimExpr> rest = total.divideExactly(known);
    if (!rest) {
      n.error() << "cannot infer the -1 entry: " << total.str()
                << " elements do not divide by " << known.str();
      return failure();
    }
    sizes[inferred] = *rest;
    known = total;
  }
  if (known != total) {
    n.error() << "cannot reshape " << dimsString(inSizes) << " (" << total.str()
              << " elements) to " << dimsString(sizes) << " (" << known.str()
              << "); a size that depends on a symbolic "
              << "dimension must come from it (0, -1 or the input's Shape)";
    return failure();
  }
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (const DimExpr &e : sizes) {
    std::optional<int64_t> bound = e.evaluate(n.shapeValues->upper);
    if (!bound || *bound < 0 || llvm::MulOverflow(count, *bound, count)) {
      n.error() << "the size " << e.str()
                << " has no upper bound over the --dim ranges";
      return failure();
    }
    shape.push_back(*bound);
  }
  if (count != inTy.getNumElements()) {
    n.error() << "the sizes " << dimsString(sizes)
              << " do not reach their upper bounds together with the "
                 "input's "
              << dimsString(inSizes);
    return failure();
  }
  n.setResult(0, n.reshape(n.input(0), shape, sizes));
  return success();
}

LogicalResult importReshape(NodeImporter &n) {
  // Before opset 5 the target shape is an attribute, not an input.
  bool legacy = n.opset < 5;
  if (failed(n.expectInputs(legacy ? 1 : 2, legacy ? 1 : 2)))
    return failure();
  KILN_TRY(allowZero, n.getInt("allowzero"));
  if (!legacy && (hasSymbolicDims(n.inputType(0)) || n.symbolicInts(1)))
    return importReshapeSymbolic(n, allowZero.value_or(0) != 0);
  SmallVector<int64_t> shape;
  if (legacy) {
    KILN_TRY(attr, n.getInts("shape"));
    if (!attr) {
      n.error() << "expects a 'shape' attribute";
      return failure();
    }
    shape = *attr;
  } else {
    KILN_TRY(input, n.constantInts(1, "shape"));
    shape = input;
  }
  auto inTy = n.inputType(0);
  SmallVector<int64_t> result;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero.value_or(0)) {
      if (i >= static_cast<size_t>(inTy.getRank())) {
        n.error() << "shape entry " << i << " is 0 (copy the input dim), but "
                  << "the input has rank " << inTy.getRank();
        return failure();
      }
      d = inTy.getDimSize(i);
    } else if (d == -1) {
      if (inferred >= 0) {
        n.error() << "the shape has more than one -1";
        return failure();
      }
      inferred = i;
      result.push_back(1);
      continue;
    } else if (d < -1) {
      n.error() << "shape entry " << i << " is " << d
                << "; expected -1, 0 or a positive size";
      return failure();
    }
    result.push_back(d);
    if (llvm::MulOverflow(known, d, known)) {
      n.error() << "the shape's element count overflows 64 bits";
      return failure();
    }
  }
  int64_t total = inTy.getNumElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      n.error() << "cannot infer the -1 entry: " << total
                << " elements do not divide into the other dims";
      return failure();
    }
    result[inferred] = total / known;
    known = total;
  }
  if (known != total) {
    n.error() << "cannot reshape " << inTy << " (" << total << " elements) to "
              << known << " elements";
    return failure();
  }
  n.setResult(0, n.reshape(n.input(0), result));
  return success();
}

LogicalResult importFlatten(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(axisAttr, n.getInt("axis"));
  auto inTy = n.inputType(0);
  int64_t rank = inTy.getRank(), axis = axisAttr.value_or(1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank) {
    n.error() << "axis " << axisAttr.value_or(1) << " is out of range for rank "
              << rank;
    return failure();
  }
  int64_t outer = 1, inner = 1;
  DimExpr outerSize = DimExpr::constant(1), innerSize = DimExpr::constant(1);
  SmallVector<DimExpr> sizes = dimExprs(inTy);
  for (int64_t d = 0; d < rank; ++d) {
    (d < axis ? outer : inner) *= inTy.getDimSize(d);
    DimExpr &part = d < axis ? outerSize : innerSize;
    part = part * sizes[d];
  }
  n.setResult(0, n.reshape(n.input(0), {outer, inner}, {outerSize, innerSize}));
  return success();
}

LogicalResult importTranspose(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)))
    return failure();
  KILN_TRY(permAttr, n.getInts("perm"));
  int64_t rank = n.inputType(0).getRank();
  SmallVector<int64_t> perm;
  if (permAttr) {
    perm = *permAttr;
  } else {
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  }
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid) {
    n.error() << "perm is not a permutation of the input's " << rank
              << " dimensions";
    return failure();
  }
  n.setResult(0, n.transpose(n.input(0), perm));
  return success();
}

/// Reduce* ops, one core op each.
template <typename OpTy, int64_t axesInputOpset, bool FloatOnly>
LogicalResult importReduce(NodeImporter &n) {
  KILN_TRY(reduction, parseReduction(n, axesInputOpset));
  Type elt = n.inputType(0).getElementType();
  if (elt.isInteger(1) || (FloatOnly && !isa<FloatType>(elt))) {
    n.error() << "element type " << elt << " is not supported";
    return failure();
  }
  if (reduction.noop) {
    n.setResult(0, n.input(0));
    return success();
  }
  n.setResult(
      0, OpTy::create(n.b, n.loc, n.input(0),
                      n.b.getDenseI64ArrayAttr(reduction.axes),
                      reduction.keepDims ? n.b.getUnitAttr() : UnitAttr()));
  return success();
}

LogicalResult importConstant(NodeImporter &n) {
  if (failed(n.expectInputs(0, 0)))
    return failure();
  auto f32 = n.b.getF32Type();
  auto i64 = n.b.getIntegerType(64);
  // ONNX requires exactly one of the value attributes.
  static const char *const kValueAttrs[] = {
      "value",      "value_float",  "value_floats",  "value_int",
      "value_ints", "value_string", "value_strings", "sparse_value"};
  std::vector<std::string> present;
  for (const onnx::AttributeProto &a : n.node.attribute())
    if (llvm::is_contained(kValueAttrs, a.name()))
      present.push_back(a.name());
  if (present.size() != 1) {
    auto diag = n.error() << "expects exactly one of the attributes value, "
                             "value_float, value_floats, value_int, value_ints";
    if (!present.empty())
      diag << ", found " << llvm::join(present, " and ");
    return failure();
  }
  for (const char *unsupported :
       {"value_string", "value_strings", "sparse_value"})
    if (present[0] == unsupported) {
      n.error() << "attribute '" << unsupported << "' is not supported";
      return failure();
    }
  if (const onnx::AttributeProto *a = n.getAttribute("value")) {
    if (a->type() != onnx::AttributeProto::TENSOR) {
      n.error() << "attribute 'value' must be a tensor";
      return failure();
    }
    KILN_TRY(data, n.decodeTensor(a->t(), "attribute 'value'"));
    n.setResult(0, ConstantOp::create(n.b, n.loc, data.getType(), data));
    return success();
  }
  Value v;
  if (auto f = n.getFloat("value_float"); failed(f)) {
    return failure();
  } else if (*f) {
    v = n.scalar(f32, **f);
  }
  if (auto fs = n.getFloats("value_floats"); failed(fs)) {
    return failure();
  } else if (*fs) {
    auto type =
        RankedTensorType::get({static_cast<int64_t>((*fs)->size())}, f32);
    v = ConstantOp::create(n.b, n.loc, type,
                           DenseElementsAttr::get(type, ArrayRef<float>(**fs)));
  }
  if (auto i = n.getInt("value_int"); failed(i)) {
    return failure();
  } else if (*i) {
    auto type = RankedTensorType::get({}, i64);
    v = ConstantOp::create(
        n.b, n.loc, type, DenseElementsAttr::get(type, ArrayRef<int64_t>(**i)));
  }
  if (auto is = n.getInts("value_ints"); failed(is)) {
    return failure();
  } else if (*is) {
    auto type =
        RankedTensorType::get({static_cast<int64_t>((*is)->size())}, i64);
    v = ConstantOp::create(
        n.b, n.loc, type,
        DenseElementsAttr::get(type, ArrayRef<int64_t>(**is)));
  }
  if (!v) {
    n.error() << "expects one of the attributes value, value_float, "
                 "value_floats, value_int, value_ints";
    return failure();
  }
  n.setResult(0, v);
  return success();
}

} // namespace

FailureOr<Reduction> kiln::import::parseReduction(NodeImporter &n,
                                                  int64_t axesInputOpset) {
  bool axesFromInput = n.opset >= axesInputOpset;
  if (failed(n.expectInputs(1, axesFromInput ? 2 : 1)))
    return failure();
  KILN_TRY(keepDims, n.getInt("keepdims"));
  std::optional<int64_t> noopWithEmpty;
  if (axesFromInput) {
    KILN_TRY(noop, n.getInt("noop_with_empty_axes"));
    noopWithEmpty = noop;
  }
  Reduction r;
  r.keepDims = keepDims.value_or(1) != 0;
  int64_t rank = n.inputType(0).getRank();
  if (axesFromInput) {
    // An axes input with no elements is empty whatever it holds at run
    // time, so it need not be a constant.
    if (n.hasInput(1) && n.inputType(1).getNumElements() != 0) {
      KILN_TRY(list, n.constantInts(1, "axes"));
      r.axes = list;
    }
  } else {
    KILN_TRY(list, n.getInts("axes"));
    if (list)
      r.axes = *list;
  }
  if (r.axes.empty()) {
    if (noopWithEmpty.value_or(0)) {
      r.noop = true;
      return r;
    }
    for (int64_t d = 0; d < rank; ++d)
      r.axes.push_back(d);
  }
  for (int64_t &a : r.axes) {
    KILN_TRY(axis, n.normalizeAxis(a, rank));
    a = axis;
  }
  llvm::sort(r.axes);
  if (std::adjacent_find(r.axes.begin(), r.axes.end()) != r.axes.end()) {
    n.error() << "axes repeat a dimension";
    return failure();
  }
  return r;
}

void kiln::import::registerCoreHandlers(HandlerMap &handlers) {
  HandlerMap core = {
      {"Identity", importIdentity},
      {"Dropout", importDropout},
      {"Add", importBinary<AddOp>},
      {"Sub", importBinary<SubOp>},
      {"Mul", importBinary<MulOp>},
      {"Div", importBinary<DivOp>},
      {"Neg", importUnary<NegOp, false>},
      {"Relu", importUnary<ReluOp, false>},
      {"Exp", importUnary<ExpOp, true>},
      {"Log", importUnary<LogOp, true>},
      {"Tanh", importUnary<TanhOp, true>},
      {"Sigmoid", importUnary<SigmoidOp, true>},
      {"Sqrt", importUnary<SqrtOp, true>},
      {"MatMul", importMatMul},
      {"Gemm", importGemm},
      {"Softmax", importSoftmax<false>},
      {"LogSoftmax", importSoftmax<true>},
      {"Reshape", importReshape},
      {"Flatten", importFlatten},
      {"Transpose", importTranspose},
      {"ReduceSum", importReduce<ReduceSumOp, 13, false>},
      {"ReduceMean", importReduce<ReduceMeanOp, 18, true>},
      {"ReduceMax", importReduce<ReduceMaxOp, 18, false>},
      {"ReduceMin", importReduce<ReduceMinOp, 18, false>},
      {"ReduceProd", importReduce<ReduceProdOp, 18, false>},
      {"Constant", importConstant},
  };
  for (auto &entry : core)
    handlers[entry.getKey()] = entry.getValue();
}

const HandlerMap &kiln::import::opHandlers() {
  static const HandlerMap handlers = [] {
    HandlerMap map;
    registerCoreHandlers(map);
    registerElementwiseHandlers(map);
    registerShapeHandlers(map);
    registerNNHandlers(map);
    registerConvHandlers(map);
    registerPadLossHandlers(map);
    registerAttentionHandlers(map);
    registerResizeHandlers(map);
    registerIndexHandlers(map);
    registerControlHandlers(map);
    return map;
  }();
  return handlers;
}
