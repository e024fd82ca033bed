//===- OnnxOpsSymbolic.cpp - shape arithmetic over symbolic sizes ---------===//
//
// Exporters compute the target shapes of Reshape and Expand from the input's
// Shape: Shape -> Gather -> Unsqueeze -> Concat, Shape -> Slice, a size
// times a constant. With a symbolic dimension (kilnc --dim NAME=LO..HI)
// those values are sizes over the symbols, not numbers; this file computes
// them as kiln::DimExpr elements (decision 0027, step 2). The results are
// placeholders that only size-reading inputs accept (ShapeValues).
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::import;

std::optional<SmallVector<DimExpr>> NodeImporter::symbolicInts(size_t i) const {
  if (!shapeValues || !hasInput(i))
    return std::nullopt;
  auto it = shapeValues->elements.find(inputs[i]);
  if (it == shapeValues->elements.end())
    return std::nullopt;
  return it->second;
}

std::optional<SmallVector<DimExpr>> NodeImporter::intsAsExprs(size_t i) const {
  if (auto symbolic = symbolicInts(i))
    return symbolic;
  DenseElementsAttr value = constantValue(i);
  if (!value || !isa<IntegerType>(value.getElementType()) ||
      value.getNumElements() > 64)
    return std::nullopt;
  SmallVector<DimExpr> elements;
  for (const APInt &v : value.getValues<APInt>())
    elements.push_back(DimExpr::constant(v.getSExtValue()));
  return elements;
}

Value NodeImporter::sizesValue(ArrayRef<DimExpr> elements,
                               ArrayRef<int64_t> shape, Type elt) {
  bool symbolic = llvm::any_of(
      elements, [](const DimExpr &e) { return !e.getConstant().has_value(); });
  SmallVector<APInt> values;
  unsigned width = elt.getIntOrFloatBitWidth();
  for (const DimExpr &e : elements) {
    std::map<std::string, int64_t> sizes;
    if (shapeValues)
      sizes = shapeValues->upper;
    values.push_back(APInt(width, e.evaluate(sizes).value_or(0),
                           /*isSigned=*/true, /*implicitTrunc=*/true));
  }
  auto type = RankedTensorType::get(shape, elt);
  Value v = ConstantOp::create(
      b, loc, type, cast<ElementsAttr>(DenseElementsAttr::get(type, values)));
  if (symbolic && shapeValues)
    shapeValues->elements[v] = SmallVector<DimExpr>(elements);
  return v;
}

namespace {

/// A rank-0 or rank-1 list of sizes.
struct Sizes {
  SmallVector<int64_t> shape;
  SmallVector<DimExpr> elements;
};

FailureOr<Sizes> sizesInput(NodeImporter &n, size_t i) {
  std::optional<SmallVector<DimExpr>> elements = n.intsAsExprs(i);
  auto type = n.hasInput(i) ? n.inputType(i) : RankedTensorType();
  if (!elements || !type || type.getRank() > 1) {
    n.error() << "input " << i
              << " must be a small integer list known at compile time to "
                 "compute on symbolic sizes";
    return failure();
  }
  return Sizes{SmallVector<int64_t>(type.getShape()), *elements};
}

/// The element pairs of a binary op on two lists of sizes, one of which may
/// be a single element.
FailureOr<SmallVector<std::pair<DimExpr, DimExpr>>>
elementPairs(NodeImporter &n, const Sizes &a, const Sizes &b) {
  size_t count = std::max(a.elements.size(), b.elements.size());
  if ((a.elements.size() != count && a.elements.size() != 1) ||
      (b.elements.size() != count && b.elements.size() != 1)) {
    n.error() << "operands of " << a.elements.size() << " and "
              << b.elements.size() << " elements do not broadcast";
    return failure();
  }
  SmallVector<std::pair<DimExpr, DimExpr>> pairs;
  for (size_t i = 0; i < count; ++i)
    pairs.emplace_back(a.elements[a.elements.size() == 1 ? 0 : i],
                       b.elements[b.elements.size() == 1 ? 0 : i]);
  return pairs;
}

/// Elementwise Add, Sub, Mul, Div and Mod on sizes.
FailureOr<SmallVector<DimExpr>> arithmetic(NodeImporter &n, StringRef op,
                                           const Sizes &a, const Sizes &b) {
  KILN_TRY(pairs, elementPairs(n, a, b));
  SmallVector<DimExpr> result;
  for (const auto &[x, y] : pairs) {
    if (op == "Add") {
      result.push_back(x + y);
    } else if (op == "Sub") {
      result.push_back(x - y);
    } else if (op == "Mul") {
      result.push_back(x * y);
    } else {
      // Sizes are not negative, so truncating division is floor division.
      std::optional<int64_t> divisor = y.getConstant();
      std::optional<DimExpr> exact = x.divideExactly(y);
      if (op == "Div" && exact) {
        result.push_back(*exact);
        continue;
      }
      if (!divisor || *divisor <= 0) {
        n.error() << "cannot divide the size " << x.str() << " by " << y.str()
                  << " (a positive constant or an exact divisor "
                  << "is needed)";
        return failure();
      }
      DimExpr q = x.floorDiv(*divisor);
      result.push_back(op == "Div" ? q : x - q * DimExpr::constant(*divisor));
    }
    if (!result.back().isValid()) {
      n.error() << "size arithmetic overflows";
      return failure();
    }
  }
  return result;
}

/// ONNX Slice's clamping of one bound to [0, size] (or [-1, size - 1] for a
/// negative step).
int64_t clampBound(int64_t v, int64_t size, bool negativeStep) {
  if (v < 0)
    v += size;
  return negativeStep ? std::clamp<int64_t>(v, -1, size - 1)
                      : std::clamp<int64_t>(v, 0, size);
}

} // namespace

bool kiln::import::isShapeArithmetic(StringRef opType) {
  static const llvm::StringSet<> ops = {
      "Add",    "Cast",     "Concat", "Div",       "Equal",
      "Gather", "Identity", "Mod",    "Mul",       "Reshape",
      "Slice",  "Squeeze",  "Sub",    "Unsqueeze", "Where"};
  return ops.contains(opType);
}

LogicalResult kiln::import::importShapeArithmetic(NodeImporter &n) {
  StringRef op = n.node.op_type();
  auto resultType = [&](size_t i) {
    return cast<IntegerType>(n.inputType(i).getElementType());
  };
  if (op == "Identity" || op == "Cast") {
    KILN_TRY(x, sizesInput(n, 0));
    Type elt = resultType(0);
    if (op == "Cast") {
      KILN_TRY(to, n.getInt("to"));
      elt = to ? elementTypeOf(n.b.getContext(), *to) : Type();
      if (!elt || !(elt.isInteger(64) || elt.isInteger(32))) {
        n.error() << "casts sizes over symbolic dimensions to a type other "
                     "than int32 or int64, which kiln cannot compute yet";
        return failure();
      }
      n.ignoreAttribute("saturate");
      n.ignoreAttribute("round_mode");
    }
    n.setResult(0, n.sizesValue(x.elements, x.shape, elt));
    return success();
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod") {
    if (op == "Mod") {
      KILN_TRY(fmod, n.getInt("fmod"));
      (void)fmod; // sizes are not negative: both conventions agree
    }
    KILN_TRY(a, sizesInput(n, 0));
    KILN_TRY(b, sizesInput(n, 1));
    KILN_TRY(elements, arithmetic(n, op, a, b));
    SmallVector<int64_t> shape = a.shape.size() >= b.shape.size() &&
                                         a.elements.size() >= b.elements.size()
                                     ? a.shape
                                     : b.shape;
    n.setResult(0, n.sizesValue(elements, shape, resultType(0)));
    return success();
  }
  if (op == "Equal") {
    // Decided at compile time: equal expressions are equal; a size (at
    // least 1 over the ranges) is never a constant below 1.
    KILN_TRY(a, sizesInput(n, 0));
    KILN_TRY(b, sizesInput(n, 1));
    KILN_TRY(pairs, elementPairs(n, a, b));
    SmallVector<DimExpr> result;
    for (const auto &[x, y] : pairs) {
      std::optional<int64_t> cx = x.getConstant(), cy = y.getConstant();
      bool equal;
      if (x == y)
        equal = true;
      else if ((cx && *cx < 1 && !cy) || (cy && *cy < 1 && !cx) || (cx && cy))
        equal = false;
      else {
        n.error() << "cannot tell at compile time whether the sizes " << x.str()
                  << " and " << y.str() << " are equal";
        return failure();
      }
      result.push_back(DimExpr::constant(equal));
    }
    SmallVector<int64_t> shape =
        a.elements.size() >= b.elements.size() ? a.shape : b.shape;
    n.setResult(0, n.sizesValue(result, shape, n.b.getI1Type()));
    return success();
  }
  if (op == "Where") {
    KILN_TRY(c, sizesInput(n, 0));
    KILN_TRY(a, sizesInput(n, 1));
    KILN_TRY(b, sizesInput(n, 2));
    size_t count =
        std::max({c.elements.size(), a.elements.size(), b.elements.size()});
    SmallVector<DimExpr> result;
    for (size_t i = 0; i < count; ++i) {
      auto pick = [&](const Sizes &s) -> const DimExpr * {
        if (s.elements.size() == count)
          return &s.elements[i];
        return s.elements.size() == 1 ? &s.elements[0] : nullptr;
      };
      const DimExpr *ci = pick(c), *ai = pick(a), *bi = pick(b);
      if (!ci || !ai || !bi || !ci->getConstant()) {
        n.error() << "selects among sizes with a condition or shapes kiln "
                     "cannot decide at compile time";
        return failure();
      }
      result.push_back(*ci->getConstant() ? *ai : *bi);
    }
    SmallVector<int64_t> shape = {static_cast<int64_t>(count)};
    if (c.shape.empty() && a.shape.empty() && b.shape.empty())
      shape.clear();
    n.setResult(0, n.sizesValue(result, shape, resultType(1)));
    return success();
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    // The elements stay; only the rank (0 or 1) changes.
    KILN_TRY(x, sizesInput(n, 0));
    if (op == "Unsqueeze" || op == "Squeeze") {
      if (n.opset >= 13) {
        if (n.hasInput(1))
          (void)n.constantInts(1, "axes");
      } else {
        (void)n.getInts("axes");
      }
    } else {
      (void)n.getInt("allowzero");
    }
    SmallVector<int64_t> shape;
    if (op == "Unsqueeze" ||
        (op == "Reshape" && n.inputType(1).getNumElements() == 1))
      shape = {static_cast<int64_t>(x.elements.size())};
    if (op == "Reshape" && n.inputType(1).getNumElements() > 1) {
      n.error() << "reshapes a list of sizes to rank "
                << n.inputType(1).getNumElements();
      return failure();
    }
    if (op == "Squeeze" && x.elements.size() != 1) {
      n.error() << "cannot squeeze " << x.elements.size() << " sizes";
      return failure();
    }
    if (op == "Unsqueeze" && !x.shape.empty()) {
      n.error() << "unsqueezes a list of sizes to rank 2, which kiln cannot "
                   "compute on symbolic sizes";
      return failure();
    }
    n.setResult(0, n.sizesValue(x.elements, shape, resultType(0)));
    return success();
  }
  if (op == "Concat") {
    KILN_TRY(axis, n.getInt("axis"));
    (void)axis; // lists of sizes have one axis
    SmallVector<DimExpr> elements;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      KILN_TRY(x, sizesInput(n, i));
      if (x.shape.size() != 1) {
        n.error() << "input " << i << " must be a list (rank 1)";
        return failure();
      }
      llvm::append_range(elements, x.elements);
    }
    n.setResult(0,
                n.sizesValue(elements, {static_cast<int64_t>(elements.size())},
                             resultType(0)));
    return success();
  }
  if (op == "Gather") {
    KILN_TRY(axis, n.getInt("axis"));
    KILN_TRY(data, sizesInput(n, 0));
    DenseElementsAttr indices = n.constantValue(1);
    if (axis.value_or(0) != 0 && axis.value_or(0) != -1) {
      n.error() << "axis " << *axis << " is out of range for a list of sizes";
      return failure();
    }
    if (!indices || data.shape.size() != 1) {
      n.error() << "gathers sizes over symbolic dimensions with indices not "
                   "known at compile time";
      return failure();
    }
    SmallVector<DimExpr> elements;
    int64_t size = data.elements.size();
    for (const APInt &v : indices.getValues<APInt>()) {
      int64_t p = v.getSExtValue();
      if (p < -size || p >= size) {
        n.error() << "index " << p << " is out of range for " << size
                  << " sizes";
        return failure();
      }
      elements.push_back(data.elements[p < 0 ? p + size : p]);
    }
    n.setResult(
        0, n.sizesValue(elements, indices.getType().getShape(), resultType(0)));
    return success();
  }
  // Slice of a list of sizes with constant bounds.
  KILN_TRY(data, sizesInput(n, 0));
  if (data.shape.size() != 1 || n.opset < 10) {
    n.error() << "slices sizes over symbolic dimensions in a form kiln "
                 "cannot compute yet";
    return failure();
  }
  KILN_TRY(starts, n.constantInts(1, "starts"));
  KILN_TRY(ends, n.constantInts(2, "ends"));
  SmallVector<int64_t> steps = {1};
  if (n.hasInput(3)) {
    KILN_TRY(axes, n.constantInts(3, "axes"));
    if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -1)) {
      n.error() << "slices a list of sizes along axes other than 0";
      return failure();
    }
  }
  if (n.hasInput(4)) {
    KILN_TRY(s, n.constantInts(4, "steps"));
    steps = s;
  }
  if (starts.size() != 1 || ends.size() != 1 || steps.size() != 1 ||
      steps[0] == 0) {
    n.error() << "slices a list of sizes with other than one start, end and "
                 "nonzero step";
    return failure();
  }
  int64_t size = data.elements.size(), step = steps[0];
  int64_t begin = clampBound(starts[0], size, step < 0);
  int64_t end = clampBound(ends[0], size, step < 0);
  SmallVector<DimExpr> elements;
  for (int64_t i = begin; step > 0 ? i < end : i > end; i += step)
    elements.push_back(data.elements[i]);
  n.setResult(0, n.sizesValue(elements, {static_cast<int64_t>(elements.size())},
                              resultType(0)));
  return success();
}
